/* race.h — the racing simulator (src/race/): DeepRacer tracks (.npy waypoint files and our built-in
 * designs), a batch car simulator with DeepRacer's episode rules, objects on the track (boxes and
 * bot cars: the object-avoidance and head-to-bot races), observations (the front camera and a
 * cheap sensor vector), reward functions (built-ins, the user's C compiled and loaded, the user's
 * Python run in an embedded interpreter), the racing-line lap-time limit, the centre-line driver
 * and pictures of a track. Learning to drive on it is ppo.h's; the league that ranks the drivers
 * is league.h's.
 *
 * What it offers, in the order a caller uses it: tracks; the car and the simulator (and its
 * objects); observations; rewards; the lap-time limit; the centre-line driver; pictures.
 *
 * Layering: race builds on util alone. Nothing here exits or prints; errors are values naming the
 * file and the row, field, step or line. Facts and sources: docs/race.md.
 *
 * Units: metres, seconds, m/s; angles in degrees where DeepRacer uses degrees (actions, params) and
 * radians inside (yaw). World frame: x right, y up, yaw counter-clockwise from +x. */
#ifndef BATON_RACE_H
#define BATON_RACE_H

#include "baton/race_reward.h"
#include "baton/util.h"

/* ---------------------------------------------------------------- tracks */
typedef struct baton_race_track baton_race_track;

/* NAME (a built-in: "oval", "technical") or PATH (a DeepRacer .npy waypoint file, N × 6: centre
 * x, y, inner x, y, outer x, y; a loop repeats its first row last). Checked: at least 3 rows,
 * finite values, borders that do not cross each other or themselves. */
int baton_race_track_load(const char *name_or_path, baton_race_track **out, baton_err *err);
void baton_race_track_free(baton_race_track *t);
/* The built-in track names, NULL-terminated. */
const char *const *baton_race_builtin_tracks(void);

typedef struct baton_race_track_info {
    const char *name;
    size_t rows;              /* rows of the file */
    size_t waypoints;         /* rows kept (DeepRacer drops repeated centre points) */
    int loop, ccw;
    double length_m;          /* centre line */
    double width_m;           /* mean distance inner–outer over the waypoints */
    double min_width_m, max_width_m;
    size_t turns;             /* local minima of the centre line's radius below 5 m */
    double min_radius_m;      /* the tightest turn's radius (0 turns: 0) */
    double max_radius_m;      /* the gentlest turn's apex radius */
    double xmin, ymin, xmax, ymax;   /* bounding box of the borders */
} baton_race_track_info;
void baton_race_track_get_info(const baton_race_track *t, baton_race_track_info *info);

/* The point of the centre line at distance s (metres from the first waypoint; wraps on a loop),
 * and the direction of travel there (radians). */
void baton_race_track_at(const baton_race_track *t, double s, double *x, double *y, double *yaw);

/* ---------------------------------------------------------------- the car and the simulator */
/* The car's limits, held here once: DeepRacer's speeds (an action's 0.1..4 m/s), and the
 * acceleration, braking and grip of the lap-time limit's car, which training and evaluation drive
 * so that a lap is compared with the limit like with like (docs/race.md). */
#define BATON_RACE_MIN_SPEED_MPS 0.1
#define BATON_RACE_MAX_SPEED_MPS 4.0
#define BATON_RACE_ACCEL_MPS2 3.0
#define BATON_RACE_BRAKE_MPS2 4.0
#define BATON_RACE_GRIP_MPS2 3.0

/* The 1/18-scale car (geometry from aws-deepracer's URDF; limits from DeepRacer). */
typedef struct baton_race_car {
    double wheelbase_m;       /* 0.164 (front hinges +0.0823, rear axle -0.0817 from the centre) */
    double rear_axle_m;       /* 0.0817 behind the centre */
    double track_m;           /* 0.162 (wheels at ±0.081) */
    double front_m;           /* 0.14: the point DeepRacer reports as x, y */
    double min_speed_mps;     /* 0.1 */
    double max_speed_mps;     /* 4 */
    double max_steer_deg;     /* 30 */
    double accel_mps2;        /* 0: a new speed is reached within a step (DeepRacer's command) */
    double brake_mps2;        /* 0: likewise when slowing */
    double steer_rate_dps;    /* 0: the wheels turn to a new angle within a step */
    double grip_mps2;         /* 0: no grip limit (kinematic); else the path's curvature is held to
                               * grip / v² (the car runs wide), e.g. the limit's 3 m/s² */
    int friction_circle;      /* 0: acceleration and braking whatever the cornering; 1 (with grip): both
                               * scaled by sqrt(1 - (v² |curvature| / grip)²), as the limit scales them */
} baton_race_car;
void baton_race_car_default(baton_race_car *c);
/* The default car with the limit's acceleration, braking, grip and friction circle: the car race
 * train and race eval drive. */
void baton_race_car_racing(baton_race_car *c);

/* Episode statuses, named as DeepRacer's SIM_TRACE_LOG names them. */
enum baton_race_status {
    BATON_RACE_IN_PROGRESS = 0,
    BATON_RACE_LAP_COMPLETE,
    BATON_RACE_OFF_TRACK,       /* no wheel on the track */
    BATON_RACE_REVERSED,        /* progress fell for stuck_steps steps in a row */
    BATON_RACE_IMMOBILIZED,     /* moved <= 0.3 mm per step for stuck_steps steps in a row */
    BATON_RACE_TIME_UP,         /* max_steps reached */
    BATON_RACE_CRASHED,         /* the car's footprint touched a box or a bot car */
    BATON_RACE_NSTATUS
};
const char *baton_race_status_name(int status);   /* "in_progress", "lap_complete", ... */

/* Objects on the track (DeepRacer's object-avoidance and head-to-bot races; time trials have none).
 * Boxes (0.2 m square, 0.2 m high) stand still; bot cars (the car's footprint, 0.16 m high) drive
 * the centre line of a lane at a set speed. A lane is given as a number in [-1, 1] as
 * deepracer-for-cloud's object positions give it: +1 the inner lane's centre (towards the inner
 * border: on the left of a counter-clockwise loop), -1 the outer lane's (a quarter of the local
 * track width from the centre line, in the
 * driving direction), 0 the centre line. Positions are along the episode's direction from its
 * start line (the first waypoint of that direction), as a share of the lap. Everything random
 * (random places, lane-change intervals) comes from each environment's own RNG for objects,
 * seeded from (seed, env): a seeded scene is the same on every run. */
#define BATON_RACE_MAX_OBJECTS 16
#define BATON_RACE_MAX_BOTS 6
#define BATON_RACE_BOX_SIZE_M 0.2
#define BATON_RACE_BOX_HEIGHT_M 0.2
#define BATON_RACE_BOT_HEIGHT_M 0.16
enum { BATON_RACE_TIME_TRIAL = 0, BATON_RACE_OBJECT_AVOIDANCE = 1, BATON_RACE_HEAD_TO_BOT = 2 };
typedef struct baton_race_objects_opts {
    int boxes;                /* 0..BATON_RACE_MAX_OBJECTS boxes */
    int randomize;            /* 1: boxes and bots placed anew at each episode's start (seeded) */
    int npos;                 /* 0: boxes evenly spaced (box i at (i + 1) / (boxes + 1) of the lap,
                                 lanes alternating inner, outer); else npos explicit places: */
    double pos_progress[BATON_RACE_MAX_OBJECTS];   /* share of the lap, 0..1 */
    double pos_lane[BATON_RACE_MAX_OBJECTS];       /* -1..1 */
    double min_gap_m;         /* randomized: at least this far apart along the centre line (2.0) */
    int bots;                 /* 0..BATON_RACE_MAX_BOTS bot cars */
    double bot_speed_mps;     /* along the centre line: 0.2 (deepracer-for-cloud's default) */
    int lane_change;          /* 1: each bot changes lanes at random intervals */
    double lane_change_min_s, lane_change_max_s;   /* the interval: 3..5 s */
    double lane_change_m;     /* the change is spread over this distance along the track: 1.0 */
    double bot_gap_m;         /* bots start at least this far apart along the centre line: 2.0 */
    double start_clear_m;     /* randomized: nothing within this distance ahead of or behind the
                                 episode's start (1.0) */
} baton_race_objects_opts;
/* No objects (a time trial), DeepRacer's values for the rest. */
void baton_race_objects_opts_default(baton_race_objects_opts *o);
/* The settings of a race type: time trial (none), object avoidance (boxes at fixed places, the
 * count as given), head-to-bot (bots at bot_speed, lane changes off). */
int baton_race_objects_for_race(int race_type, int count, baton_race_objects_opts *o, baton_err *err);
const char *baton_race_type_name(int race_type);   /* "time-trial", "object-avoidance", "head-to-bot" */
/* A race and its settings from a YAML or JSON file (`--race-file`; src/race/objects_file.c lists
 * the keys: baton's names or deepracer-for-cloud's DR_* names); a bad file is an error naming the
 * file, the line and the key. */
int baton_race_objects_load(const char *path, int *race_type, baton_race_objects_opts *o, baton_err *err);
/* The settings within their ranges (what the simulator refuses otherwise), naming the field. */
int baton_race_objects_check(const baton_race_objects_opts *o, baton_err *err);
int baton_race_objects_any(const baton_race_objects_opts *o);   /* 1 when there is a box or a bot */

typedef struct baton_race_sim_opts {
    size_t envs;              /* cars stepped as one batch, each in its own world (default 1) */
    uint64_t seed;            /* action noise and random starts */
    double hz;                /* steps per simulated second: 15 */
    uint32_t max_steps;       /* per episode: 10000 */
    uint32_t stuck_steps;     /* window of the reversed and immobilized rules: 15 */
    double round_robin;       /* start advances this share of the lap each episode: 0.05 */
    double start_offset;      /* first start, share of the lap from the first waypoint: 0 */
    int random_start;         /* 1: each episode starts at a seeded random place instead */
    int alternate_dir;        /* 1: every other episode drives the track in reverse */
    int reverse;              /* 1: the first episode drives in reverse */
    double steer_noise_deg;   /* Gaussian noise added to each steering action (0) */
    double speed_noise_mps;   /* Gaussian noise added to each speed action (0) */
    baton_race_car car;
    baton_race_objects_opts objects;   /* none by default */
    int shared;               /* 0: every environment is a world of its own. 2..BATON_RACE_MAX_CARS:
                               * head-to-model: the envs (a multiple of it) are worlds of `shared` cars
                               * on one track each (env e: car e % shared of world e / shared), no boxes
                               * or bots; each car sees the others of its world as it sees bot cars (the
                               * LIDAR, the camera, the reward's object fields), and where two cars'
                               * footprints touch after a step, the one behind along the track (its
                               * front point's) has crashed and the one ahead is bumped and goes on
                               * (docs/race.md "Head-to-model") */
} baton_race_sim_opts;
#define BATON_RACE_MAX_CARS 4
void baton_race_sim_opts_default(baton_race_sim_opts *o);

/* One car's state after its last step. */
typedef struct baton_race_car_state {
    double x, y, yaw;         /* the car's centre (base link); yaw radians */
    double speed, steer_deg;  /* actual speed and steering angle (after the rate limits) */
    double cmd_speed, cmd_steer_deg;   /* the last action (clamped to the car's limits) */
    double fx, fy;            /* the front point: DeepRacer's x, y (params and SIM_TRACE_LOG's X, Y) */
    double wheel_x[4], wheel_y[4];     /* front left, front right, rear left, rear right */
    int wheel_on[4];
    int wheels_on;            /* how many wheels are on the track */
    double progress;          /* percent since the episode's start */
    double ndist;             /* the front point's share of the lap from the first waypoint */
    int closest[2];           /* waypoints behind and ahead */
    int nearest_waypoint;     /* the nearer of the two (SIM_TRACE_LOG's closest_waypoint) */
    uint32_t steps;           /* steps in this episode */
    uint64_t episode;         /* episodes started in this environment, 1 for the first */
    int reversed_dir;         /* this episode drives the track in reverse */
    int status;               /* enum baton_race_status */
    uint64_t total_steps;     /* since the simulator started (sim_time = total_steps / hz) */
    int crashed;              /* the last step ended touching an object (shared: hitting a car from behind) */
    uint32_t crashes;         /* crashes in this episode (SIM_TRACE_LOG's obstacle_crash_counter) */
    int bumped;               /* shared: the last step ended with a car behind touching this one */
    uint32_t bumps;           /* shared: such steps in this episode */
} baton_race_car_state;

typedef struct baton_race_sim baton_race_sim;
int baton_race_sim_new(const baton_race_track *t, const baton_race_sim_opts *o, baton_race_sim **out,
                       baton_err *err);
void baton_race_sim_free(baton_race_sim *s);
/* Start env's next episode: the start advances (round robin), the direction alternates when asked.
 * Every environment starts its first episode in baton_race_sim_new. */
void baton_race_sim_reset(baton_race_sim *s, size_t env);
/* Step every environment whose episode is in progress with its action (steer_deg[e], speed[e]):
 * actions are clamped to the car's limits, noise added, the car moved, the rules applied.
 * Environments whose episode has ended are left as they are until reset. Returns how many
 * episodes ended in this step. step_ref is the plain reference (global searches, the full polygon
 * test); it produces the same states. */
size_t baton_race_sim_step(baton_race_sim *s, const float *steer_deg, const float *speed);
size_t baton_race_sim_step_ref(baton_race_sim *s, const float *steer_deg, const float *speed);
const baton_race_car_state *baton_race_sim_state(const baton_race_sim *s, size_t env);
/* The reward function's input for env's last step (pointers stay valid while the simulator lives). */
void baton_race_sim_params(const baton_race_sim *s, size_t env, struct baton_race_params *p);
/* Start env's next episode at `start` (share of the lap from the first waypoint) in the given
 * direction, standing still: for a caller that decides where every episode starts (the trainer's
 * starts are a function of its episode counter, so a resumed run starts where the run it replaces
 * would have). The episode after it follows the round-robin rule from there. */
void baton_race_sim_start(baton_race_sim *s, size_t env, double start, int reversed);
/* After a lap_complete on a loop: the same episode drives on into the next lap from where the car
 * is, at its speed (progress starts again from the start line; laps in a row, as a time trial
 * drives them). Anything else: nothing. */
void baton_race_sim_next_lap(baton_race_sim *s, size_t env);
/* The progress (percent) env's front point is past its start line, as a lap_complete's overshoot
 * within its last step (0 when it is more than half a lap away). */
double baton_race_sim_overshoot(const baton_race_sim *s, size_t env);

/* One object of an environment's scene, as it stands after the last step. */
enum { BATON_RACE_BOX = 0, BATON_RACE_BOT = 1 };
typedef struct baton_race_object {
    int kind;                 /* BATON_RACE_BOX or BATON_RACE_BOT */
    double x, y, yaw;         /* its centre; yaw radians */
    double length_m, width_m, height_m;   /* along and across its heading; height */
    double back_m;            /* its footprint runs from back_m behind (x, y) to length_m - back_m ahead */
    double speed_mps;
    double lane;              /* -1..1 (a bot changing lanes is between) */
} baton_race_object;
/* env's objects (boxes first, then bots) into out (up to cap); returns how many there are. */
size_t baton_race_sim_objects(const baton_race_sim *s, size_t env, baton_race_object *out, size_t cap);
/* Draw env's next scenes from key instead of the environment's running stream: the objects' RNG
 * is seeded again from (seed, key). For a caller that decides every episode (a trainer passing the
 * episode's number before baton_race_sim_start: a resumed run draws the scenes the run it
 * replaces would have). */
void baton_race_sim_scene_seed(baton_race_sim *s, size_t env, uint64_t key);
/* Put env's car back onto the centre line where its front point is, facing along the track,
 * standing: a time trial's reset after going off the track, reversing or stopping (on a shared
 * track as a crash reset: never onto another car). */
void baton_race_sim_reset_here(baton_race_sim *s, size_t env);
/* Put env's car back after a crash for an evaluation that goes on: onto the centre line where
 * its front point is, or as little before it as keeps it clear of every object (up to 3 m back),
 * facing along the track, standing. The crash counter goes on. */
void baton_race_sim_crash_reset(baton_race_sim *s, size_t env);
/* Shared track: take env's car off it (a car that has finished): the others no longer see or
 * touch it; it stays where it is, its episode as it ended, until a start puts it back. */
void baton_race_sim_park(baton_race_sim *s, size_t env);

/* ---------------------------------------------------------------- rewards */
/* A reward function: a built-in NAME ("follow_center_line" — the default, as in DeepRacer —,
 * "stay_inside_borders", "prevent_zigzag"), a C file (FILE.c: compiled with the system compiler,
 * loaded with dlopen) or a Python file (FILE.py: DeepRacer's reward_function(params), run in an
 * embedded CPython when baton is built with it). */
typedef struct baton_race_reward baton_race_reward;
int baton_race_reward_open(const char *spec, baton_race_reward **out, baton_err *err);
void baton_race_reward_free(baton_race_reward *r);
/* Call it for params of `step`: a result that is NaN, infinite or outside ±1e5 is an error naming
 * the step and the params (as is a Python exception or a non-number). */
int baton_race_reward_eval(baton_race_reward *r, const struct baton_race_params *p, double *out,
                           baton_err *err);
/* n calls in a row (for Python: the interpreter's lock taken once). */
int baton_race_reward_eval_batch(baton_race_reward *r, const struct baton_race_params *p, size_t n,
                                 double *out, baton_err *err);
/* The first example of the DeepRacer guide, in C (the other two: race_internal.h). */
double baton_race_reward_follow_center_line(const struct baton_race_params *p);
int baton_race_python_available(void);   /* 1 when built with embedded CPython */

/* ---------------------------------------------------------------- the lap-time limit */
/* The fastest lap the car can physically drive: the minimum-curvature line inside the borders
 * (margin_m from each), or a blend of it with the smoothest short line where that is faster, and
 * its speed profile under these limits. */
typedef struct baton_race_limits {
    double max_speed_mps;     /* 4 (DeepRacer's top speed) */
    double lat_accel_mps2;    /* 3: the fastest laps driven on re:Invent 2018 (~7.6 s) come out just above the limit */
    double accel_mps2;        /* 3 */
    double brake_mps2;        /* 4 */
    double friction_exp;      /* 2: the friction circle (0: longitudinal and lateral independent) */
    double margin_m;          /* 0.0935: half the car's width (wheels' outer edges) off each border */
    double step_m;            /* 0.05: spacing of the resampled lines */
    double start_speed_mps;   /* 0.1: an open track starts from this speed */
} baton_race_limits;
void baton_race_limits_default(baton_race_limits *l);

typedef struct baton_race_line {
    size_t n;                 /* points; a loop does not repeat its first point */
    int loop;
    double *x, *y, *s, *kappa, *v;   /* position, distance, signed curvature (1/m), speed */
    double length_m, lap_s;
} baton_race_line;

typedef struct baton_race_limit_result {
    baton_race_line racing;   /* the racing line and its speed profile */
    baton_race_line center;   /* the centre line under the same limits */
    double lap_s, centerline_lap_s;
    double mincurv_lap_s;     /* the pure minimum-curvature line's lap */
    double blend;             /* the racing line: this share of the way to the short smooth line */
} baton_race_limit_result;
int baton_race_limit(const baton_race_track *t, const baton_race_limits *l, baton_race_limit_result *out,
                     baton_err *err);
void baton_race_limit_free(baton_race_limit_result *r);

/* ---------------------------------------------------------------- the centre-line driver */
/* The built-in controller: pure pursuit of the centre line, speed from the centre line's curvature
 * (corner speeds at the limit's lateral acceleration times pace², braking at its braking limit times
 * pace, so about `pace` of the speeds the car could take). */
void baton_race_centerline_action(const baton_race_sim *s, size_t env, double pace, float *steer_deg,
                                  float *speed);
/* The same along a lane's line (lane -1..1 as objects' lanes: +1 the inner lane's centre, a quarter
 * of the width towards the inner border; 0 the centre line, the same action as above). */
void baton_race_lane_action(const baton_race_sim *s, size_t env, double pace, double lane, float *steer_deg,
                            float *speed);

/* ---------------------------------------------------------------- pictures */
/* An SVG of the track (surface, borders, dashed centre line, start line and direction, scale bar)
 * with optional lines drawn over it; a line with v != NULL is coloured by speed. */
typedef struct baton_race_svg_line {
    const char *name;         /* legend */
    const double *x, *y, *v;  /* v may be NULL */
    size_t n;
    int closed;
} baton_race_svg_line;
int baton_race_svg(const char *path, const baton_race_track *t, const char *title,
                   const baton_race_svg_line *lines, size_t nlines, baton_err *err);
/* The same picture appended to b. Its root carries the
 * world-to-picture map: px = data-left + (x - data-x0) * data-scale, py = data-top + (data-y1 - y) * data-scale. */
void baton_race_svg_buf(baton_buf *b, const baton_race_track *t, const char *title,
                        const baton_race_svg_line *lines, size_t nlines);

/* The observations (race_obs.h: the sensor vector, the camera) are part of this header too. */
#include "baton/race_obs.h"

#endif
