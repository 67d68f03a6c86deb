/* ppo.h — learning to race (src/ppo/): a model's files (DeepRacer's model_metadata.json and
 * hyperparameters.json), clipped PPO as DeepRacer trains (race train) on race.h's simulator, a
 * trained policy driving a lap (race drive --policy) and DeepRacer's timed laps with it (race
 * eval), and a policy exported for a league.
 *
 * What it offers, in the order a caller uses it: the model's files; driving a lap; training; timed
 * laps; export.
 *
 * Layering: ppo builds on race (the simulator), nn (the networks), ckpt and train (the training
 * session's stages), notice, img (PNG frames) and util. Nothing here exits or prints; errors are
 * values naming the file and the field, step or line. Facts and sources: docs/race.md. */
#ifndef BATON_PPO_H
#define BATON_PPO_H

#include "baton/race.h"
#include "baton/train_session.h"
#include "baton/util.h"

/* ---------------------------------------------------------------- a model's files */
/* DeepRacer's model_metadata.json (the actions, the sensor, the network) and
 * hyperparameters.json, read by training (--metadata, --hyper) and kept in each checkpoint's
 * state.json: src/ppo/meta.c, docs/race.md. What the policy sees: DeepRacer's
 * FRONT_FACING_CAMERA, or baton's sensor vector (sensor "BATON_SENSOR_VECTOR" in
 * model_metadata.json, network "BATON_SENSOR_MLP"). */
enum { BATON_PPO_OBS_CAMERA = 0, BATON_PPO_OBS_SENSOR = 1 };

/* ---------------------------------------------------------------- driving a lap */
typedef struct baton_ppo_drive_opts {
    const char *policy;       /* "centerline", or a checkpoint of `race train` (a ckpt-<k> folder or a folder
                               * of them): its policy drives, on the car it was trained with */
    const char *reward;       /* reward spec (default follow_center_line) */
    const char *frames_dir;   /* write every camera frame as PNG here (NULL: none) */
    double pace;              /* centerline: share of the corner speeds the car could take, 0.85 */
    uint32_t max_steps;       /* 0: the simulator's default */
    baton_race_camera_opts camera;
    baton_race_sim_opts sim;
} baton_ppo_drive_opts;
void baton_ppo_drive_opts_default(baton_ppo_drive_opts *o);

typedef struct baton_ppo_drive_result {
    int status;               /* how the lap ended */
    uint32_t steps;
    double lap_s;             /* steps / hz when the lap was completed, else the time driven */
    double progress;
    double reward_sum;
    size_t frames;            /* PNG frames written */
    size_t n;                 /* trace: the centre point and speed after each step */
    double *x, *y, *v;
} baton_ppo_drive_result;
int baton_ppo_drive(const baton_race_track *t, const baton_ppo_drive_opts *o, baton_ppo_drive_result *r,
                    baton_err *err);
void baton_ppo_drive_result_free(baton_ppo_drive_result *r);

/* ---------------------------------------------------------------- training (src/ppo/ppo_train.c) */
/* `baton race train`: clipped PPO as DeepRacer trains (docs/race.md "Training"), on the batch
 * simulator, as a run of baton_train_session stages: crash-safe ckpt-<iteration>/ checkpoints (the
 * policy and value networks as "policy.*" and "value.*" tensors, their Adam states, and state.json
 * with the counters, the RNGs, model_metadata.json and hyperparameters.json), a bit-exact resume
 * from any of them, a clean stop after a checkpoint on an interruption notice (BATON_STOPPED).
 *
 * Each iteration drives num_episodes_between_training episodes on `envs` cars stepped as one batch
 * (an episode ends at its lap, off the track, reversed, immobilized or at max_steps), then trains
 * both networks for num_epochs passes over them in minibatches of batch_size. */
enum {
    BATON_PPO_SCALE_PROGRESS = 0,   /* each step's reward times the progress it made (per top-speed
                                        step): what a time trial pays for; the default */
    BATON_PPO_SCALE_STEP = 1,       /* the reward as returned, per step (DeepRacer's) */
};

enum { BATON_PPO_F32 = 0, BATON_PPO_BF16 = 1 };   /* the trainer's arithmetic (baton_ppo_train_opts.precision) */

typedef struct baton_ppo_train_opts {
    /* the checkpoint folder (session.ckpt_dir, required; resumes from it), its remote copy, the
     * interval (session.ckpt_every counts iterations; --ckpt-every auto and a fleet's
     * BATON_CKPT_EVERY=auto give Daly's), retention, notices, the progress file: train_session.h,
     * as `baton train`'s. The trainer sets session.snapshot and session.ctx itself. */
    baton_train_session_opts session;
    const char *track;          /* required: a built-in name or a .npy */
    const char *reward;         /* a reward spec (baton_race_reward_open); NULL: follow_center_line */
    const char *metadata;       /* model_metadata.json; NULL: the console's defaults */
    const char *hyper;          /* hyperparameters.json; NULL: the console's defaults */
    const char *log_path;       /* per-iteration CSV; NULL: none */
    const char *trace_dir;      /* SIM_TRACE_LOG CSVs, <iteration>-iteration.csv; NULL: none */
    uint32_t trace_every;       /* trace every this many iterations (1: every one) */
    double minutes;             /* training-time budget, summed over restarts (0: none) */
    uint64_t episodes;          /* episode budget, counted over restarts (0: none) */
    int obs;                    /* BATON_PPO_OBS_*, or -1: the metadata's sensor */
    uint64_t seed;
    int reward_scale;           /* BATON_PPO_SCALE_* */
    int precision;              /* BATON_PPO_F32 (default) or BATON_PPO_BF16: the networks' convolutions and
                                 * linear layers on bfloat16 kernels (mixed precision, AVX512-BF16); a resume
                                 * keeps the run's unless precision_set */
    uint32_t envs;              /* cars per batch; 0: num_episodes_between_training */
    uint32_t max_steps;         /* a training episode's step limit; 0: 10000 (DeepRacer's) */
    baton_race_car car;         /* the car's limits in training (baton_ppo_train_opts_default: the
                                   lap-time limit's acceleration, braking and grip) */
    baton_race_objects_opts objects;   /* boxes and bots (none: a time trial); a collision ends the
                                   episode; a sensor policy's vector gains the LIDAR ("LIDAR" in its
                                   model_metadata.json) */
    int nopponents;             /* head-to-model: 1 to 3 models the car races against in training (0: none) */
    const char *opponents[BATON_RACE_MAX_CARS - 1];   /* each a checkpoint (a folder or a folder of them),
                                   driven by its policy in every car's world, placed anew each episode
                                   (spread ahead as the bots are, or a match's grid with the car last or
                                   first: opponents.c); no boxes or bots beside them; a sensor policy's
                                   vector gains the LIDAR. A resume keeps the run's unless given */
    int reference_kernels;
    int threads;                /* compute threads; 0: the calling thread's OpenMP team. With 2 or more the value
                                 * network learns on a thread of its own beside the policy's, the threads split
                                 * between them (the same bytes as one thread doing both) */
    int progress;               /* a progress line on a terminal */
    double progress_every_s;    /* plain progress lines when stderr is not a terminal (0: none) */
    /* which of the run's settings were given (a resume refuses a change to one that was) */
    int seed_set, obs_set, scale_set, envs_set, max_steps_set, objects_set, precision_set;
} baton_ppo_train_opts;

typedef struct baton_ppo_train_result {
    int resumed;
    uint64_t resumed_iteration;
    uint64_t iteration, episodes, sim_steps;   /* totals at the end */
    double seconds;             /* this process's training time */
    double total_seconds;       /* over restarts */
    double steps_per_s;         /* car steps per second through the whole loop, this process */
    double mean_reward, mean_progress;         /* the last iteration's */
    double best_lap_s;          /* the fastest lap completed in training, 0 when none */
    uint64_t laps;
    char kernels[16];
    char checkpoint[4096];
    int stopped;                /* BATON_STOPPED: an interruption notice */
    char notice[16], notice_source[32];
    double notice_margin_s;
    baton_train_stop interruption;   /* stopped: the notice's deadline, the commit, the upload, the exit */
    uint64_t rebalances;
    double ckpt_tau_s, ckpt_delta_s;   /* --ckpt-every auto (a fleet's default): the last interval and the
                                          blocking cost it rests on; 0 when not automatic */
    double ckpt_mtbi_s;         /* the hazard it was computed for (session.mtbi_s; 0: none) */
} baton_ppo_train_result;

void baton_ppo_train_opts_default(baton_ppo_train_opts *o);
int baton_ppo_train(const baton_ppo_train_opts *o, baton_ppo_train_result *r, baton_err *err);

/* ---------------------------------------------------------------- timed laps (src/ppo/eval.c) */
/* `baton race eval`: DeepRacer's time trial with a trained policy (its deterministic action): the
 * car starts on the start line standing still and drives `laps` laps in a row; the clock runs from
 * the start; off the track, reversed or immobilized resets the car onto the centre line where it
 * was, standing, with a penalty added to the clock; a lap's time is from line to line (the
 * crossing interpolated within its step), penalties included. With objects (object avoidance,
 * head-to-bot), a crash is a reset clear of the object with the collision penalty. */
typedef struct baton_ppo_eval_opts {
    const char *ckpt;           /* a checkpoint folder, or a folder of them (its newest that verifies) */
    const char *track;          /* NULL: the one it was trained on */
    int laps;                   /* 3 */
    double off_track_penalty_s; /* 5 */
    uint32_t max_steps;         /* give up after this many steps in all (0: 10000 per lap) */
    baton_race_car car;         /* the car's limits (default: the lap-time limit's, as in training) */
    const char *trace_path;     /* SIM_TRACE_LOG CSV of the drive; NULL: none */
    const char *frames_dir;     /* every camera frame as PNG; NULL: none */
    baton_race_objects_opts objects;   /* boxes and bots on the track (none: a time trial) */
    double collision_penalty_s; /* 5: a crash into an object puts the car back clear of it
                                   (baton_race_sim_crash_reset) with this added to the clock */
} baton_ppo_eval_opts;

typedef struct baton_ppo_lap {
    double time_s;              /* line to line, penalties included */
    double penalty_s;
    uint32_t resets;
    uint32_t steps;
    uint32_t overtakes;         /* head-to-bot: bots passed while driving this lap (a reset's jump is not a pass) */
    uint32_t overtaken;         /* bots passed on the track by a bot: the car fell behind one while driving */
    uint32_t bots_passed;       /* bit i: bot i (0-based among the bots) was passed in this lap */
} baton_ppo_lap;

typedef struct baton_ppo_eval_result {
    int completed;              /* all laps driven (else the step limit ended it) */
    size_t nlaps;               /* laps completed */
    baton_ppo_lap *laps;       /* malloc'd */
    double best_lap_s, total_s, penalties_s;
    uint32_t resets;
    uint32_t crashes;           /* of the resets, crashes into objects */
    uint32_t overtakes;         /* head-to-bot: bots passed, over all laps */
    double limit_s, ratio;      /* the racing-line limit's lap on this track; best_lap_s / limit_s */
    char track[256];            /* the track as given (a built-in name or a path) */
    char track_name[256];       /* its name (the file's stem for a .npy) */
    uint64_t iteration;         /* the checkpoint's */
    char checkpoint[4096];
    /* the drive, step by step (what SIM_TRACE_LOG records), for pictures and for storing */
    size_t n;
    double *x, *y, *v;          /* the car's centre and speed after each step */
    uint32_t *lap_of;           /* the lap each step belongs to (0-based) */
    uint8_t *reset;             /* 1 where the car was reset after that step */
    /* the objects on the track (boxes, then bots): nobj of them, each's kind and size in obj, and
     * where each stood after every step: obj_pose[(k * nobj + i) * 3 + 0..2]
     * = x, y, yaw of object i after step k (malloc'd; NULL when nobj is 0) */
    size_t nobj;
    baton_race_object obj[BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS];
    float *obj_pose;
} baton_ppo_eval_result;

void baton_ppo_eval_opts_default(baton_ppo_eval_opts *o);
int baton_ppo_eval(const baton_ppo_eval_opts *o, baton_ppo_eval_result *r, baton_err *err);
void baton_ppo_eval_result_free(baton_ppo_eval_result *r);

/* ---------------------------------------------------------------- head-to-model (src/ppo/match.c) */
/* `baton race match`: two to four models on one track at once (race.h's shared simulator), each
 * car driven by its own policy (sensor or camera, any action space, either precision) with its
 * deterministic action, each seeing the others as it sees bot cars. Staggered start: car k
 * (0-based) stands gap_m × k behind the start line, standing, facing along the track, and drives
 * `laps` laps from its own place. The clock runs from the start for every car; off the track,
 * reversed or immobilized puts the car back where it was (never onto another car) with the
 * off-track penalty; a car that hits another from behind crashes: put back clear of the others with
 * the collision penalty (the car hit is bumped and goes on). A car that has driven its laps leaves
 * the track. The finish order: cars that drove every lap by total time (penalties included),
 * then the others by distance driven. An overtake: one car passing another on the track while
 * both drive (a reset's jump back is none), counted as eval counts passing bots. */
#define BATON_PPO_MATCH_MAX BATON_RACE_MAX_CARS
typedef struct baton_ppo_match_opts {
    int ncars;                          /* 2..BATON_PPO_MATCH_MAX */
    const char *ckpt[BATON_PPO_MATCH_MAX];   /* a checkpoint folder (or a folder of them: its newest that
                                           verifies), or "centerline[:PACE[:LANE]]": race's centre-line
                                           driver (0.85, 0: the centre line; it sees nobody), for tests
                                           and baselines */
    const char *name[BATON_PPO_MATCH_MAX];   /* a racer's alias; NULL: the checkpoint as given */
    const char *track;                  /* NULL: the first checkpoint's */
    int laps;                           /* 3 */
    uint64_t seed;                      /* the simulator's (action noise, when set) */
    double gap_m;                       /* the staggered start: 1.0 m between cars */
    double off_track_penalty_s;         /* 5 */
    double collision_penalty_s;         /* 5: to the car that hit another from behind */
    double steer_noise_deg, speed_noise_mps;   /* Gaussian noise on every action (0): the seed's part */
    uint32_t max_steps;                 /* 0: 10000 per lap */
    baton_race_car car;                 /* every car's limits (default: training's) */
    const char *trace_path;             /* SIM_TRACE_LOG CSV, the cars' rows one after the other, each car an
                                           "episode" (its start slot, 0-based); NULL: none */
} baton_ppo_match_opts;

typedef struct baton_ppo_match_car {
    char name[256];                     /* alias, or the checkpoint as given */
    char checkpoint[4096];              /* the checkpoint folder driven (or "centerline") */
    int slot;                           /* start slot, 0: on the line */
    int completed;                      /* drove every lap */
    size_t nlaps;
    double *lap_s;                      /* each lap's time, line to line, penalties included (malloc'd) */
    double total_s, best_lap_s, penalties_s;
    double distance_m;                  /* driven along the centre line from its start */
    uint32_t resets, crashes, bumps, overtakes, overtaken;
    int position;                       /* 1: the winner */
    /* the drive, after every step of the match while it was on the track */
    size_t n;
    double *x, *y, *v;
} baton_ppo_match_car;

typedef struct baton_ppo_match_result {
    int ncars;
    baton_ppo_match_car car[BATON_PPO_MATCH_MAX];
    char track[256], track_name[256];
    size_t steps;                       /* steps of the match */
} baton_ppo_match_result;

void baton_ppo_match_opts_default(baton_ppo_match_opts *o);
int baton_ppo_match(const baton_ppo_match_opts *o, baton_ppo_match_result *r, baton_err *err);
void baton_ppo_match_result_free(baton_ppo_match_result *r);

/* `baton race export`: the policy of the checkpoint ckpt names (a folder, or a folder of them: its
 * newest that verifies) written as a checkpoint of its own under dir — ckpt-<iteration>/ holding
 * the policy network alone, state.json "contents": "policy" — which `race eval`, `race drive` and a
 * league evaluate as the whole, and a run cannot resume from (no value network, no optimizer). It
 * is what `race submit --server` sends: a camera model's is about a sixth of its checkpoint.
 * out gets the new folder's path. */
int baton_ppo_policy_export(const char *ckpt, const char *dir, char *out, size_t cap, baton_err *err);
/* That ckpt (a folder, or a folder of them) loads as a policy that can drive — found, verified,
 * its state.json and model files read, its networks built — as evaluation will load it. */
int baton_ppo_policy_check(const char *ckpt, baton_err *err);

#endif
