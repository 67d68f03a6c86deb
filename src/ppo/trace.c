/* trace.c — rows of DeepRacer's SIM_TRACE_LOG, as the deepracer-analysis notebooks and
 * deepracer-utils read them (REFERENCE: the header RACE_TRACE_HEADER): one row per step with the
 * episode, the step within it, the car's front point X, Y (the params' x, y), its yaw in degrees,
 * the steering angle and speed it was asked for, the action's index (-1 in a continuous action
 * space), the reward as the reward function returned it, done and all_wheels_on_track as Python
 * writes its booleans, progress, the closest waypoint, the track's length, a timestamp in
 * simulated seconds, the episode's status, a pause duration (always 0: baton does not pause) and,
 * as newer simulators append it, obstacle_crash_counter (the episode's crashes into objects so far).
 *
 * Contract: appends one line to b; numbers in the simulator's formats (%.4f for positions and
 * progress, %.2f for steering and speed); returns BATON_ERR_NOMEM when the buffer cannot grow. */
#include "ppo_internal.h"

#include <inttypes.h>
#include <stdio.h>

int race_trace_row(baton_buf *b, uint64_t episode, uint32_t steps, const baton_race_car_state *st, int action,
                   double reward, double track_len, double tstamp)
{
    char line[512];
    int done = st->status != BATON_RACE_IN_PROGRESS;
    int n = snprintf(line, sizeof line,
                     "%" PRIu64 ",%u,%.4f,%.4f,%.4f,%.2f,%.2f,%d,%.4f,%s,%s,%.4f,%d,%.2f,%.3f,%s,0.0,%u\n", episode, steps,
                     st->fx, st->fy, st->yaw * (180.0 / PPO_PI), st->cmd_steer_deg, st->cmd_speed, action, reward,
                     done ? "True" : "False", st->wheels_on == 4 ? "True" : "False", st->progress,
                     st->nearest_waypoint, track_len, tstamp, baton_race_status_name(st->status), st->crashes);
    if (n < 0 || (size_t)n >= sizeof line) return BATON_ERR_ARG;
    return baton_buf_append(b, line, (size_t)n);
}
