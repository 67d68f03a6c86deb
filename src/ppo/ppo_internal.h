/* ppo_internal.h — what the files of ppo share (src/ppo/): PPO's losses and advantages
 * (ppo_math.c), the agent — the policy and value networks with their observations and actions
 * (agent.c) —, the rollout buffer (rollout.c), a training run's state.json (ppo_state.c),
 * checkpoint tensors (ppo_ckpt.c), a trained policy driving (pilot.c) and the SIM_TRACE_LOG
 * writer (trace.c). Nothing outside src/ppo includes this (the unit tests do, to check the math
 * on hand-computed cases). */
#ifndef BATON_PPO_INTERNAL_H
#define BATON_PPO_INTERNAL_H

#include "baton/nn.h"
#include "baton/ppo.h"

#include <math.h>
#include <stdint.h>

#define PPO_PI 3.14159265358979323846

/* ---------------------------------------------------------------- a model's files (meta.c) */
/* DeepRacer's model_metadata.json and hyperparameters.json, read as the console and
 * deepracer-for-cloud write them and written back in the same format; keys left out take the
 * console's defaults, keys baton does not use are ignored. Errors name the file and the field
 * ("model_metadata.json: action_space[3].speed 5 is outside 0.1..4 m/s"). */
#define BATON_PPO_MAX_ACTIONS 256
enum { BATON_PPO_DISCRETE = 0, BATON_PPO_CONTINUOUS = 1 };

typedef struct baton_ppo_action {
    double steer_deg, speed_mps;
} baton_ppo_action;

typedef struct baton_ppo_meta {
    int action_type;          /* BATON_PPO_DISCRETE (default) or BATON_PPO_CONTINUOUS */
    size_t nactions;          /* discrete: 1..BATON_PPO_MAX_ACTIONS, in the file's order */
    baton_ppo_action actions[BATON_PPO_MAX_ACTIONS];
    double steer_low, steer_high;   /* continuous: degrees, -30..30, low < high */
    double speed_low, speed_high;   /* continuous: m/s, 0.1..4, low < high */
    int obs;                  /* BATON_PPO_OBS_CAMERA (default) or BATON_PPO_OBS_SENSOR */
    int lidar;                /* 1: "LIDAR" beside BATON_SENSOR_VECTOR: the vector ends with the
                               * front-facing LIDAR's rays (baton_race_sensor_opts_lidar) */
    char version[16];         /* as read ("5" when written fresh) */
} baton_ppo_meta;
/* The console's defaults: discrete, steering {-30, -15, 0, 15, 30} x speed {0.4, 0.8} (the guide's
 * table order), the front camera, DEEP_CONVOLUTIONAL_NETWORK_SHALLOW, clipped_ppo. */
void ppo_meta_default(baton_ppo_meta *m);
/* name is the file's name in messages; text need not be NUL-terminated. */
int ppo_meta_parse(const char *name, const char *text, size_t len, baton_ppo_meta *m, baton_err *err);
int ppo_meta_load(const char *path, baton_ppo_meta *m, baton_err *err);
char *ppo_meta_format(const baton_ppo_meta *m);   /* malloc'd JSON text; NULL when out of memory */

enum { BATON_PPO_LOSS_HUBER = 0, BATON_PPO_LOSS_MSE = 1 };
typedef struct baton_ppo_hyper {
    uint32_t batch_size;      /* 64: samples per gradient step, 1..4096 */
    double beta_entropy;      /* 0.01 */
    double discount_factor;   /* 0.999, in (0, 1] */
    int loss_type;            /* the value loss: "huber" (default) or "mean squared error" */
    double lr;                /* 0.0003, > 0 */
    uint32_t num_episodes_between_training;   /* 20, 1..10000 */
    uint32_t num_epochs;      /* 3, 1..100 */
    uint32_t stack_size;      /* 1: frames (observations) stacked, 1..16 */
    uint64_t term_cond_max_episodes;          /* stop after this many episodes (100000) */
    double term_cond_avg_score;               /* or when an iteration's mean episode reward reaches it (100000) */
    /* kept and written back; clipped PPO does not use them */
    char exploration_type[32];                /* "categorical" */
    double e_greedy_value;                    /* 0.05 */
    uint64_t epsilon_steps;                   /* 10000 */
    double sac_alpha;                         /* 0.2 */
} baton_ppo_hyper;
/* The console's defaults today (see docs/race.md). */
void ppo_hyper_default(baton_ppo_hyper *h);
int ppo_hyper_parse(const char *name, const char *text, size_t len, baton_ppo_hyper *h, baton_err *err);
int ppo_hyper_load(const char *path, baton_ppo_hyper *h, baton_err *err);
char *ppo_hyper_format(const baton_ppo_hyper *h);


/* ---------------------------------------------------------------- PPO's math (ppo_math.c) */
#define PPO_CLIP 0.2            /* DeepRacer's clip_likelihood_ratio_using_epsilon */
#define PPO_LAMBDA 0.95         /* DeepRacer's gae_lambda */
#define PPO_LOG_STD_MIN -5.0    /* a continuous policy's log standard deviation is held in here */
#define PPO_LOG_STD_MAX 1.0

/* Generalised advantage estimation over one episode of n steps: rewards r[0..n-1], values
 * v[0..n] where v[n] is the bootstrap (0 after a terminal step). adv[t] = sum_k (gamma
 * lambda)^k delta_{t+k}, delta_t = r_t + gamma v_{t+1} - v_t; ret = adv + v (the value targets).
 * Summed in double. */
void ppo_gae(size_t n, const float *r, const float *v, double gamma, double lambda, float *adv, float *ret);
/* (a - mean) / (std + 1e-8) in place, std the population one (numpy's np.std), as rl_coach
 * standardises an iteration's advantages. */
void ppo_normalize(size_t n, float *a);

/* One sample's loss terms (for the iteration's statistics). */
typedef struct ppo_terms {
    double loss;                /* -min(rho A, clip(rho) A) - beta H */
    double surrogate;           /* -min(rho A, clip(rho) A) */
    double entropy;             /* H */
    double ratio;               /* rho = exp(logp - logp_old) */
    double kl;                  /* (rho - 1) - log rho: an estimate of KL(old || new) */
    int clipped;                /* the clipped term was the smaller: no gradient from the surrogate */
} ppo_terms;

/* Discrete actions (a softmax over A logits z): log pi(a), and the clipped surrogate with the
 * entropy bonus for one sample with its gradient d(loss)/dz times w (1 / minibatch) into dz. */
double ppo_discrete_logp(int A, const float *z, int a);
void ppo_discrete_loss(int A, const float *z, int a, float logp_old, float adv, double eps, double beta, double w,
                       float *dz, ppo_terms *t);
/* Continuous actions, a Gaussian in D dimensions squashed by tanh: out = [mu_0..mu_{D-1},
 * log_std_0..log_std_{D-1}] (log_std held to [PPO_LOG_STD_MIN, PPO_LOG_STD_MAX], no gradient
 * outside), u the sample before the squash. log pi is the Gaussian's at u: the squash's Jacobian is
 * the same under the old and the new policy, so it cancels in rho; the entropy bonus is the
 * Gaussian's. */
double ppo_gauss_logp(int D, const float *out, const float *u);
void ppo_gauss_loss(int D, const float *out, const float *u, float logp_old, float adv, double eps, double beta,
                    double w, float *dout, ppo_terms *t);
/* The value loss for prediction v against target: BATON_PPO_LOSS_HUBER (delta 1, as
 * tf.losses.huber_loss) or BATON_PPO_LOSS_MSE ((v - target)^2); its d/dv times w into *dv. */
double ppo_value_loss(int kind, float v, float target, double w, float *dv);

/* Sampling from the policy, deterministic for the RNG's state. */
int ppo_sample_discrete(int A, const float *z, baton_rng *r, float *logp);
void ppo_sample_gauss(int D, const float *out, baton_rng *r, float *u, float *logp);
int ppo_argmax(int A, const float *z);   /* the first maximum */
double ppo_uniform(baton_rng *r);        /* [0, 1), 53 bits */
double ppo_normal(baton_rng *r);         /* Box–Muller, one draw per call */

typedef struct race_pair race_pair;   /* ppo_pair.c: a second learner thread */

/* ---------------------------------------------------------------- the agent (agent.c) */
/* The policy and value networks (DeepRacer's use_separate_networks_per_head: two networks of the
 * same shape), what they see (a frame: the sensor vector as floats, or the camera's greyscale
 * bytes; stack_size frames side by side, the oldest first) and what their outputs mean. */
typedef struct race_agent {
    baton_ppo_meta meta;
    int obs;                    /* BATON_PPO_OBS_* */
    int stack;                  /* frames per input */
    baton_race_sensor_opts sensor;
    baton_race_camera_opts camera;
    size_t frame_elems;         /* sensor: floats of one vector; camera: pixels of one frame */
    size_t frame_bytes;
    int in_c, in_h, in_w;       /* the networks' input */
    size_t in_elems;
    int nout;                   /* policy outputs: the actions' logits, or 2 means + 2 log-stds */
    int max_batch;
    baton_nn_model *pi, *vf;
    float *x;                   /* max_batch inputs */
    float *dout;                /* max_batch × nout: the policy loss's gradient of its outputs */
    float *dval;                /* max_batch: the value loss's, of the value's */
    float *xv;                  /* max_batch inputs of the value network valuing rows during a rollout */
    char kernels[16];
} race_agent;

/* Build the networks for meta and stack (seeded from seed), inputs for up to max_batch at once, on
 * kernels of kind RACE_KERNELS_*: oneDNN's f32 (the reference ones, logged, when oneDNN is
 * unavailable), the reference ones, or oneDNN's bfloat16 (an error where the CPU has none). */
enum { RACE_KERNELS_DNNL = 0, RACE_KERNELS_REFERENCE = 1, RACE_KERNELS_BF16 = 2 };
int race_agent_new(race_agent *a, const baton_ppo_meta *meta, int stack, uint64_t seed, int max_batch, int kind,
                   baton_err *err);
void race_agent_free(race_agent *a);
/* One frame of env (into dst, frame_bytes): the sensor vector, or the camera's view (cam). */
void race_agent_frame(const race_agent *a, const baton_race_sim *sim, const baton_race_camera *cam, size_t env,
                      void *dst);
/* The input of batch slot i from its frames, newest last (frames[k], k < stack). */
void race_agent_input(race_agent *a, int i, const void *const *frames);
void race_agent_input_to(const race_agent *a, float *x, int i, const void *const *frames);   /* into x's slot i */
/* The action (steering, speed) a policy output means: discrete index a, or the continuous sample u
 * (squashed by tanh into the ranges). */
void race_agent_action(const race_agent *a, int index, const float *u, float *steer, float *speed);
/* The deterministic action of batch slot i's policy output (argmax, or tanh of the mean). */
void race_agent_greedy(const race_agent *a, const float *out, float *steer, float *speed, int *index);

/* ---------------------------------------------------------------- a run's state and checkpoints */
/* state.json of `baton race train` (ppo_state.c; the writer beside the parser). */
typedef struct race_run_state {
    uint64_t iteration;         /* PPO iterations done: the checkpoint's step */
    uint64_t episodes;          /* episodes done */
    uint64_t sim_steps;         /* car steps taken (samples) */
    uint64_t ticks;             /* batch steps (the trace's clock: ticks / hz) */
    double seconds;             /* training time, summed over restarts */
    baton_rng act_rng, shuffle_rng;
    uint64_t optim_steps;
    double best_lap_s;          /* the fastest lap completed in training (0: none yet) */
    uint64_t laps;              /* laps completed in training */
    double last_reward;         /* the last iteration's mean episode reward (term_cond_avg_score) */
    /* what the run is: fixed for its life (a resume checks them); meta.obs is what it sees and
     * hyper.stack_size how many frames */
    char track[256], reward[512];
    int reward_scale;           /* BATON_PPO_SCALE_* */
    int precision;              /* BATON_PPO_F32 or BATON_PPO_BF16: the networks' kernels */
    uint64_t seed;
    uint32_t envs, max_steps;
    baton_race_car car;
    baton_race_objects_opts objects;   /* none: a time trial */
    int nopponents;             /* head-to-model: models raced against (race train --opponent), 0: none */
    char opponents[BATON_RACE_MAX_CARS - 1][1024];   /* each as given (a checkpoint folder or a folder of them) */
    baton_ppo_meta meta;
    baton_ppo_hyper hyper;
    int policy_only;            /* the folder holds the policy network alone (state.json "contents") */
} race_run_state;

char *race_state_format(const race_run_state *s);
int race_state_parse(const char *text, size_t len, race_run_state *s, baton_err *err);

/* Checkpoint tensors (ppo_ckpt.c): the policy's and value network's tensors as "policy.<name>" and
 * "value.<name>", their Adam states likewise. */
typedef struct race_ckpt_tensors {
    baton_nn_tensor *mt, *ot;
    size_t nm, no;
    char (*names)[96];
    void *shadow;               /* a copy of every tensor's bytes, taken between iterations */
    size_t shadow_bytes;
} race_ckpt_tensors;
int race_ckpt_tensors_new(race_ckpt_tensors *c, const race_agent *a, const baton_nn_optim *opi,
                          const baton_nn_optim *ovf, baton_err *err);
void race_ckpt_tensors_free(race_ckpt_tensors *c);
/* Copy the live tensors into the shadow (the state a checkpoint of this iteration holds). */
void race_ckpt_tensors_take(race_ckpt_tensors *c, const race_agent *a, const baton_nn_optim *opi,
                            const baton_nn_optim *ovf);
/* Load model.safetensors (and optim.safetensors when the optimizers are given) of folder dir into
 * the agent's networks: every tensor matched by name, dtype and shape. */
int race_ckpt_load(const char *dir, int policy_only, race_agent *a, baton_nn_optim *opi, baton_nn_optim *ovf,
                   uint64_t *optim_steps, baton_err *err);
/* The checkpoint folder spec names (itself, or the newest that verifies under it), its state. */
int race_ckpt_find(const char *spec, char *path, size_t cap, race_run_state *st, baton_err *err);
/* An agent for evaluating the checkpoint in folder path (state st): the policy only matters. */
int race_agent_from_ckpt(race_agent *a, const char *path, const race_run_state *st, int max_batch, baton_err *err);

/* A trained policy driving one car (pilot.c): the checkpoint spec names (race_ckpt_find), its
 * stacked frames, its deterministic action. observe takes env's current frame (refill: into every
 * slot of the stack, at a start or after a reset). */
typedef struct race_pilot {
    race_agent a;
    int open;
    uint8_t *hist;
} race_pilot;
int race_pilot_open(race_pilot *p, const char *ckpt, char *path, size_t cap, race_run_state *st, baton_err *err);
void race_pilot_close(race_pilot *p);
void race_pilot_observe(race_pilot *p, const baton_race_sim *sim, const baton_race_camera *cam, size_t env, int refill);
int race_pilot_act(race_pilot *p, float *steer, float *speed, int *index, baton_err *err);

/* ---------------------------------------------------------------- opponents (opponents.c) */
/* Models the learning car races against (race train --opponent): in each world of the training
 * simulator (shared: 1 + k cars, the learner's first), opponent j is env w * (1 + k) + 1 + j. */
#define RACE_OPPONENTS_MAX (BATON_RACE_MAX_CARS - 1)
#define RACE_OPPONENTS_GAP_M 1.0   /* a match's grid (baton_ppo_match_opts.gap_m's default) */
typedef struct race_opponents {
    int k, cars;                /* opponents per world; cars per world (1 + k) */
    uint32_t worlds;
    double length;              /* the track's, metres */
    int loop;
    race_agent a[RACE_OPPONENTS_MAX];
    int open[RACE_OPPONENTS_MAX];
    baton_race_camera *cam[RACE_OPPONENTS_MAX];   /* a camera opponent's */
    uint8_t *hist[RACE_OPPONENTS_MAX];   /* worlds × stack frames */
    uint32_t *slot;             /* a batch slot's world */
} race_opponents;
int race_opponents_open(race_opponents *o, const char *const *ckpts, int k, uint32_t worlds, const baton_race_track *t,
                        baton_err *err);
void race_opponents_close(race_opponents *o);
/* World w's opponents placed anew for the car's episode `episode` starting at `start` (share of the
 * lap), standing: by the episode's number, spread ahead, or a match's grid behind or ahead of it. */
void race_opponents_place(race_opponents *o, baton_race_sim *sim, uint32_t w, double start, uint64_t episode);
void race_opponents_park(race_opponents *o, baton_race_sim *sim, uint32_t w);
/* The opponents' actions in the active worlds (active[w]) into steer / speed (the simulator's envs). */
int race_opponents_act(race_opponents *o, const baton_race_sim *sim, const uint8_t *active, float *steer, float *speed,
                       baton_err *err);
/* After a step: each active world's opponents' laps and resets, and what they see now. */
void race_opponents_after(race_opponents *o, baton_race_sim *sim, const uint8_t *active);

/* ---------------------------------------------------------------- one iteration's experience (rollout.c) */
enum { RACE_GOES_ON = 0, RACE_ENDED = 1, RACE_CUT = 2 };
typedef struct race_row {
    int32_t prev;               /* the previous row of its episode, -1 at its first */
    int32_t boot;               /* the last step of a cut episode: the row holding the state after it */
    int32_t action;             /* discrete: the action's index; continuous: -1 */
    uint8_t sample;             /* 1: a step the policy took (trained on); 0: a bootstrap state */
    uint8_t end;                /* RACE_GOES_ON, RACE_ENDED (terminal: value 0 after it), RACE_CUT */
    float u[2];                 /* continuous: the sample before the squash */
    float logp, reward, value, adv, ret;
} race_row;

typedef struct race_rollout {
    size_t cap, n;              /* rows */
    race_row *rows;
    uint8_t *frames;            /* cap frames of frame_bytes */
    size_t frame_bytes, frames_len;
    uint32_t *samples;          /* rows that are samples, in the order taken */
    size_t nsamples;
    uint32_t *ep_last;          /* each episode's last sample row */
    size_t nep, ep_cap;
    uint32_t *gat;              /* an episode's rows in order (GAE) */
    float *gr, *gv, *ga, *gret;
    size_t gcap;
    uint64_t *perm;             /* the minibatch order */
    float *tmp;                 /* cap floats of scratch */
    size_t valued;              /* rows [0, valued) have their value (whole batches of the agent's max_batch) */
} race_rollout;

/* The value network's forward over whole batches of rows [from, to), on the second learner while
 * the rollout drives on (race_values_early): the same batches race_learn would run, so the same
 * values. */
typedef struct race_vjob {
    race_rollout *ro;
    race_agent *a;
    size_t from, to;
    int posted, rc;
    baton_err err;
} race_vjob;

/* What a rollout drives and how (the trainer fills it once). */
typedef struct race_collect {
    baton_race_sim *sim;
    const baton_race_camera *cam;   /* the camera's observations; NULL for the sensor's */
    baton_race_reward *reward;
    race_agent *agent;
    baton_rng *rng;             /* the actions' samples */
    uint32_t envs, episodes;    /* cars stepped as one batch, episodes per iteration */
    uint64_t first_episode;     /* the run's episode counter when the iteration starts */
    uint64_t tick0;             /* the run's batch steps when it starts */
    double hz, track_len, top_step_m;   /* top_step_m: a step's distance at top speed */
    int loop;                   /* the track is a loop (round-robin starts) */
    int reward_scale;
    double value_scale;         /* rewards are trained on times this (1 - discount): values ~ reward per step */
    baton_buf *trace;           /* SIM_TRACE_LOG rows of this iteration; NULL: none */
    int (*poll)(void *ctx, baton_err *err);   /* 1: stop now, < 0: error */
    void *poll_ctx;
    race_pair *pair;            /* the second learner, valuing rows while the cars drive; NULL: none */
    race_vjob vjob;
    race_opponents *opp;        /* models raced against; NULL: none. Then learning car e is the
                                   simulator's env e * opp->cars, its opponents the envs after it */
    /* working space, envs each */
    int32_t *last;
    uint64_t *episode;
    uint8_t *active;
    float *steer, *speed;       /* the simulator's envs (envs × cars with opponents) */
    float *before;
    double *raw, *ep_reward;
    uint32_t *slot_env, *slot_row;
    struct baton_race_params *params;
} race_collect;

typedef struct race_collect_stats {
    uint64_t episodes, laps, samples, ticks;
    double reward_sum, progress_sum, best_lap_s;
} race_collect_stats;

int race_rollout_new(race_rollout *ro, size_t cap, size_t episodes, size_t frame_bytes, uint32_t max_steps, baton_err *err);
void race_rollout_free(race_rollout *ro);
int race_collect_new(race_collect *c, uint32_t envs, int cars, baton_err *err);   /* cars: per world (1: no opponents) */
void race_collect_free(race_collect *c);
/* Drive one iteration's episodes into ro. 0 done; 1 stopped by poll (ro is to be thrown away). */
int race_rollout_collect(race_rollout *ro, race_collect *c, race_collect_stats *st, baton_err *err);
/* The stacked input of row into the agent's batch slot. */
void race_rollout_input(const race_rollout *ro, race_agent *a, int slot, uint32_t row);
void race_rollout_input_to(const race_rollout *ro, const race_agent *a, float *x, int slot, uint32_t row);

/* ---------------------------------------------------------------- a second learner thread (ppo_pair.c) */
/* The value network's half of each minibatch on a thread of its own (team: its OpenMP team's
 * size), while the caller runs the policy's; the same bytes as one thread running both. */
int race_pair_new(race_pair **p, int team, baton_err *err);
void race_pair_post(race_pair *p, void (*fn)(void *), void *arg);
void race_pair_wait(race_pair *p);
int race_pair_idle(race_pair *p);    /* 1 when no job is posted or the last one is done */
void race_pair_free(race_pair *p);

/* ---------------------------------------------------------------- learning from it (ppo_learn.c) */
typedef struct race_learn_stats {
    double policy_loss, value_loss, entropy, kl, clip_frac;
    uint64_t updates;
} race_learn_stats;
/* Values of every row, GAE per episode (lambda PPO_LAMBDA), advantages standardised, then
 * num_epochs passes of minibatches over the samples in an order drawn from shuffle: the policy's
 * clipped surrogate and entropy bonus, the value's loss, one Adam step of each network per
 * minibatch. 0 done; 1 stopped by poll between minibatches. */
int race_learn(race_rollout *ro, race_agent *a, baton_nn_optim *opi, baton_nn_optim *ovf, const baton_ppo_hyper *h,
               baton_rng *shuffle, race_pair *pair, int (*poll)(void *, baton_err *), void *poll_ctx,
               race_learn_stats *st, baton_err *err);

/* During the rollout: hand the second learner the rows' values in whole batches as they fill (when
 * it is idle), taking in what it finished; race_values_settle waits for it and returns its
 * failure, if any (after which rows [0, ro->valued) have their values). */
void race_values_early(race_rollout *ro, race_collect *c);
int race_values_settle(race_rollout *ro, race_collect *c, baton_err *err);

/* ---------------------------------------------------------------- files beside the checkpoints (ppo_files.c) */
/* The log keeps the rows of iterations <= iterations (created with its header when missing). */
int race_log_cut(const char *path, uint64_t iterations, baton_err *err);
int race_log_row(const char *path, const race_run_state *s, uint64_t steps, double mean_reward, double mean_progress,
                 uint64_t laps, const race_learn_stats *l, double seconds, double steps_per_s, baton_err *err);
/* Trace files of iterations from `from` on are removed (dir created when missing). */
int race_trace_cut(const char *dir, uint64_t from, baton_err *err);
int race_trace_write(const char *dir, uint64_t index, const baton_buf *rows, baton_err *err);
/* model_metadata.json and hyperparameters.json into dir, in the console's format. */
int race_model_files(const char *dir, const baton_ppo_meta *m, const baton_ppo_hyper *h, baton_err *err);

/* ---------------------------------------------------------------- SIM_TRACE_LOG (trace.c) */
#define RACE_TRACE_HEADER                                                                              \
    "episode,steps,X,Y,yaw,steer,throttle,action,reward,done,all_wheels_on_track,progress,closest_waypoint," \
    "track_len,tstamp,episode_status,pause_duration,obstacle_crash_counter\n"
/* One row, DeepRacer's columns and formats (done and all_wheels_on_track as Python's True/False;
 * action -1 for a continuous action space; obstacle_crash_counter: the episode's crashes so far). */
int race_trace_row(baton_buf *b, uint64_t episode, uint32_t steps, const baton_race_car_state *st, int action,
                   double reward, double track_len, double tstamp);

#endif
