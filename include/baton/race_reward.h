/* race_reward.h — the header for a user's C reward function (`baton race ... --reward reward.c`).
 *
 * A reward file defines
 *
 *     #include "baton/race_reward.h"
 *     double reward_function(const struct baton_race_params *p) { ... }
 *
 * baton compiles it with the system compiler (cc, warnings on) into a private temporary folder and
 * loads it with dlopen. struct baton_race_params mirrors the `params` dictionary that the AWS
 * DeepRacer simulator passes to a Python reward function: the same fields, names, units and
 * meanings (see docs/race.md). A reward must be finite and within [-1e5, 1e5]; anything else stops
 * the run with a message naming the step.
 *
 * This header stands alone (only <stddef.h>): it is copied next to the user's file when it is
 * compiled, so it must not include other baton headers. */
#ifndef BATON_RACE_REWARD_H
#define BATON_RACE_REWARD_H

#include <stddef.h>

struct baton_race_params {
    int all_wheels_on_track;       /* 1 when all four wheels are on the track */
    double x, y;                   /* metres: the front of the car (0.14 m ahead of its centre) */
    double heading;                /* degrees, -180..180, 0 = +x, counter-clockwise positive */
    double distance_from_center;   /* metres from the centre line */
    double projection_distance;    /* metres along the centre line from its first waypoint */
    double progress;               /* percent of the lap driven since the episode's start, 0..100 */
    int steps;                     /* steps in this episode, counting this one (15 per second) */
    double speed;                  /* m/s: the speed the action asked for (0.1..4) */
    double steering_angle;         /* degrees, -30..30, positive = left: the action's angle */
    double track_width;            /* metres between the borders where the car is */
    double track_length;           /* metres: the centre line's length */
    const double (*waypoints)[2];  /* the centre line's points (x, y); a loop repeats the first last */
    int num_waypoints;
    int closest_waypoints[2];      /* indices of the waypoints behind and ahead of the car */
    int is_left_of_center;         /* 1 when the car is left of the centre line (driving direction) */
    int is_reversed;               /* 1 when this episode drives the track in reverse */
    int is_crashed;                /* 1 when this step ended touching an object (never in time trials) */
    int is_offtrack;               /* 1 when no wheel is on the track */
    double sim_time;               /* simulated seconds since the simulator started */

    /* objects (object-avoidance and head-to-bot races: boxes first, then bot cars); time trials
     * have none: num_objects = 0 and the arrays NULL */
    int num_objects;
    int closest_objects[2];                     /* indices of the objects behind and ahead of the car
                                                   by distance along the centre line (wrapping round) */
    const double (*objects_location)[2];        /* (x, y) of each object's centre, metres */
    const int *objects_left_of_center;          /* 1 when left of the centre line (driving direction) */
    const double *objects_speed;                /* m/s (0 for a box) */
    const double *objects_heading;              /* degrees, -180..180 */
    const double *objects_distance_from_center; /* metres from the centre line */
    const double *objects_distance;             /* metres along the centre line from its first waypoint */
    int object_in_camera;                       /* 1 when the object ahead is in the camera's view */
};

/* What the user's file defines. */
double reward_function(const struct baton_race_params *p);

#endif
