/* head-to-bot-reward.c — the head-to-bot benchmark's reward (bench/race.sh train h2b-reinvent):
 * DeepRacer's follow_center_line while the road ahead is clear; with a bot less than 2.5 m ahead
 * (or alongside) the centre line stops mattering and what pays is lateral clearance from it —
 * full reward 0.45 m or more from the bot's centre (a car's width and a margin), falling to
 * nothing as the two overlap, weighted by how near the bot is. A bot changing lanes moves its
 * centre, so the clearance follows it. */
#include "baton/race_reward.h"

#include <math.h>

double reward_function(const struct baton_race_params *p)
{
    if (p->is_crashed || !p->all_wheels_on_track) return 1e-3;
    double w = p->track_width, d = p->distance_from_center;
    double reward = d <= 0.1 * w ? 1.0 : d <= 0.25 * w ? 0.5 : d <= 0.5 * w ? 0.1 : 1e-3;
    double me = p->is_left_of_center ? d : -d, len = p->track_length;
    int near = 0;
    double clear_r = 1.0;
    for (int i = 0; i < p->num_objects; i++) {
        double gap = fmod(p->objects_distance[i] - p->projection_distance + 2.0 * len, len);
        if (gap > len - 0.5) gap -= len;               /* just behind the car: alongside */
        if (gap < -0.5 || gap > 2.5) continue;
        double them = p->objects_left_of_center[i] ? p->objects_distance_from_center[i]
                                                   : -p->objects_distance_from_center[i];
        double clear = fabs(me - them);
        double weight = gap < 1.0 ? 1.0 : (2.5 - gap) / 1.5;
        double r = 1.0 - weight * (1.0 - fmin(clear / 0.45, 1.0));
        if (r < clear_r) clear_r = r;
        near = 1;
    }
    if (near) reward = fmax(clear_r, 1e-3);
    return reward;
}
