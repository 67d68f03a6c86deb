/* test_race_train.c — `baton race train` through the library on small problems:
 *   - a tiny problem PPO must solve: DeepRacer's straight track with three actions (steer left,
 *     straight, right, one speed) where only straight on reaches the end: after a few iterations
 *     the policy puts most of its probability on it, and the time trial drives to the end with no
 *     reset; the same with a continuous action space (the mean steering near 0);
 *   - determinism: the same seed gives the same model.safetensors and optim.safetensors bytes, the
 *     thread count aside; another seed does not;
 *   - resume: a run stopped at iteration 3 and resumed to 6 ends with the bytes of a run of 6;
 *     a resume with another seed or another action space is refused, naming the option;
 *   - the files beside the checkpoints: the model's model_metadata.json and hyperparameters.json
 *     in the console's format, the log with a row per iteration, SIM_TRACE_LOG files per iteration
 *     with DeepRacer's header and statuses;
 *   - state.json written and parsed back equal; a `baton train` checkpoint is refused by eval;
 *   - ckpt's shared loader refuses a checkpoint with an unexpected tensor or a "steps" that is not
 *     a count, naming them. */
#include "../../src/ppo/ppo_internal.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STRAIGHT "../shared/tracks/Straight_track.npy"

static char tmp[256];

static void write_file(const char *path, const char *text)
{
    baton_err err = {0};
    CHECK_MSG(baton_file_write_atomic(path, text, strlen(text), &err) == BATON_OK, "%s", err.msg);
}

static char *path_in(const char *name)
{
    static char p[256][512];
    static int k;
    char *o = p[k++ % 256];
    snprintf(o, 512, "%s/%s", tmp, name);
    return o;
}

static int train(const char *dir, const char *meta, uint64_t episodes, uint64_t seed, baton_ppo_train_result *r)
{
    baton_ppo_train_opts o;
    baton_ppo_train_opts_default(&o);
    o.track = STRAIGHT;
    o.metadata = meta;
    o.hyper = path_in("hyper.json");
    o.session.ckpt_dir = dir;
    o.episodes = episodes;
    o.seed = seed, o.seed_set = 1;
    o.session.ckpt_every = 1, o.session.ckpt_every_sec = 0;
    o.session.keep = 100;
    baton_err err = {0};
    int rc = baton_ppo_train(&o, r, &err);
    CHECK_MSG(rc == BATON_OK, "train %s: %s", dir, err.msg);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    uint8_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    baton_err err = {0};
    int same = baton_file_read_all(a, 1 << 26, &x, &nx, &err) == BATON_OK &&
               baton_file_read_all(b, 1 << 26, &y, &ny, &err) == BATON_OK && nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

static const char *ck(const char *dir, const char *file, int step)
{
    static char p[4][600];
    static int k;
    char *o = p[k++ % 4];
    snprintf(o, 600, "%s/ckpt-%09d/%s", dir, step, file);
    return o;
}

/* the policy's probability of each action at the start of the straight */
static void start_probs(const char *dir, double *p, int n)
{
    race_run_state st;
    race_agent a;
    char path[4096];
    baton_err err = {0};
    if (race_ckpt_find(dir, path, sizeof path, &st, &err) || race_agent_from_ckpt(&a, path, &st, 1, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    baton_race_track *t = NULL;
    baton_race_sim *sim = NULL;
    baton_race_sim_opts so;
    baton_race_sim_opts_default(&so);
    so.car = st.car;
    CHECK(baton_race_track_load(STRAIGHT, &t, &err) == BATON_OK && baton_race_sim_new(t, &so, &sim, &err) == BATON_OK);
    float frame[64];
    race_agent_frame(&a, sim, NULL, 0, frame);
    const void *f[1] = {frame};
    race_agent_input(&a, 0, f);
    CHECK(baton_nn_forward(a.pi, a.x, 1, &err) == BATON_OK);
    for (int i = 0; i < n; i++) p[i] = exp(ppo_discrete_logp(n, baton_nn_logits(a.pi), i));
    baton_race_sim_free(sim);
    baton_race_track_free(t);
    race_agent_free(&a);
}

/* the time trial drives to the end of the straight with no reset; returns the share of its steps
 * that took action `want` (SIM_TRACE_LOG's action column) */
static double eval_ok(const char *dir, const char *what, int want)
{
    baton_ppo_eval_opts o;
    baton_ppo_eval_opts_default(&o);
    o.ckpt = dir;
    o.trace_path = path_in("eval.csv");
    baton_ppo_eval_result r;
    baton_err err = {0};
    CHECK_MSG(baton_ppo_eval(&o, &r, &err) == BATON_OK, "%s: %s", what, err.msg);
    CHECK_MSG(r.completed && r.nlaps == 1 && r.resets == 0 && r.best_lap_s > 0 && r.limit_s > 0,
              "%s: completed %d laps %zu resets %u best %.2f", what, r.completed, r.nlaps, r.resets, r.best_lap_s);
    CHECK(r.n > 0 && r.ratio == r.best_lap_s / r.limit_s);
    baton_ppo_eval_result_free(&r);
    FILE *f = fopen(o.trace_path, "r");
    char line[512];
    int n = 0, hit = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *c = line;
        for (int k = 0; k < 7 && c; k++) c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL;   /* to the action */
        if (!c || !strncmp(line, "episode", 7)) continue;
        n++;
        hit += atoi(c) == want;
    }
    if (f) fclose(f);
    return n ? (double)hit / n : 0;
}

static void test_straight(void)
{
    const char *meta = path_in("three.json");
    write_file(meta, "{\"action_space\": [{\"steering_angle\": -30, \"speed\": 1}, {\"steering_angle\": 0, \"speed\": 1},"
                     " {\"steering_angle\": 30, \"speed\": 1}], \"sensor\": [\"BATON_SENSOR_VECTOR\"]}");
    const char *dir = path_in("straight");
    double before[3], after[3];
    baton_ppo_train_result r;
    if (train(dir, meta, 20, 1, &r)) return;   /* one iteration: the policy has barely moved */
    start_probs(dir, before, 3);
    if (train(dir, meta, 300, 1, &r)) return;
    CHECK(r.resumed && r.resumed_iteration == 1 && r.iteration == 15 && r.episodes == 300);
    start_probs(dir, after, 3);
    CHECK_MSG(before[1] < 0.5 && after[1] > before[1] + 0.1, "P(straight) at the start %.3f after 1 iteration, %.3f after 15",
              before[1], after[1]);
    CHECK_MSG(r.mean_progress > 95 && r.laps > 0, "mean progress %.1f, laps %llu", r.mean_progress,
              (unsigned long long)r.laps);
    double straight = eval_ok(dir, "discrete", 1);
    CHECK_MSG(straight > 0.9, "the time trial went straight on in %.0f %% of its steps", 100 * straight);

    const char *cmeta = path_in("cont.json");
    write_file(cmeta, "{\"action_space\": {\"steering_angle\": {\"low\": -30, \"high\": 30}, \"speed\": {\"low\": 0.5,"
                      " \"high\": 1}}, \"action_space_type\": \"continuous\", \"sensor\": [\"BATON_SENSOR_VECTOR\"]}");
    const char *cdir = path_in("straight-cont");
    if (train(cdir, cmeta, 400, 1, &r)) return;
    CHECK_MSG(r.mean_progress > 90, "continuous: mean progress %.1f", r.mean_progress);
    eval_ok(cdir, "continuous", -1);
}

static void test_determinism_and_resume(void)
{
    const char *meta = path_in("three.json");
    baton_ppo_train_result r;
    const char *a = path_in("det-a"), *b = path_in("det-b"), *c = path_in("det-c"), *d = path_in("det-d");
    if (train(a, meta, 120, 7, &r) || train(b, meta, 120, 7, &r) || train(c, meta, 120, 8, &r)) return;
    CHECK(same_file(ck(a, "model.safetensors", 6), ck(b, "model.safetensors", 6)));
    CHECK(same_file(ck(a, "optim.safetensors", 6), ck(b, "optim.safetensors", 6)));
    CHECK(!same_file(ck(a, "model.safetensors", 6), ck(c, "model.safetensors", 6)));
    /* stopped at 3, resumed to 6 */
    if (train(d, meta, 60, 7, &r)) return;
    CHECK(r.iteration == 3 && !r.resumed);
    if (train(d, meta, 120, 7, &r)) return;
    CHECK(r.resumed && r.resumed_iteration == 3 && r.iteration == 6);
    CHECK_MSG(same_file(ck(a, "model.safetensors", 6), ck(d, "model.safetensors", 6)), "resumed run's weights differ");
    CHECK(same_file(ck(a, "optim.safetensors", 6), ck(d, "optim.safetensors", 6)));
    /* the checkpoint of iteration 3 of the uninterrupted run is the one the stopped run resumed from */
    CHECK(same_file(ck(a, "model.safetensors", 3), ck(d, "model.safetensors", 3)));

    /* a resume with other settings is refused, naming what changed */
    baton_ppo_train_opts o;
    baton_ppo_train_opts_default(&o);
    o.track = STRAIGHT, o.metadata = meta, o.hyper = path_in("hyper.json"), o.session.ckpt_dir = d, o.episodes = 140;
    o.seed = 9, o.seed_set = 1;
    baton_err err = {0};
    CHECK(baton_ppo_train(&o, &r, &err) == BATON_ERR_ARG && strstr(err.msg, "--seed"));
    o.seed = 7, o.metadata = path_in("cont.json");
    CHECK(baton_ppo_train(&o, &r, &err) == BATON_ERR_ARG && strstr(err.msg, "--metadata"));
    o.metadata = NULL, o.track = "oval";
    CHECK(baton_ppo_train(&o, &r, &err) == BATON_ERR_ARG && strstr(err.msg, "--track"));
}

/* Write a checkpoint folder at dir from src's files, with `extra` (may be NULL) as one more model
 * tensor; returns the folder's path (static) or NULL. */
static const char *rewrite_ckpt(const char *src, const char *dir, const baton_st_entry *extra)
{
    static char out[4096];
    baton_err err = {0};
    baton_st_header hm, ho;
    uint8_t *dm = NULL, *dob = NULL;
    char *state = NULL, p[4200];
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    int rc = baton_st_read_file(p, &hm, &dm, &err);
    snprintf(p, sizeof p, "%s/optim.safetensors", src);
    if (!rc) rc = baton_st_read_file(p, &ho, &dob, &err);
    if (!rc) rc = baton_ckpt_load(src, NULL, NULL, &state, &err);
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    if (rc) return NULL;
    baton_st_entry *me = calloc(hm.ntensors + 1, sizeof *me), *oe = calloc(ho.ntensors + 1, sizeof *oe);
    for (size_t i = 0; i < hm.ntensors; i++) {
        const baton_st_tensor *t = &hm.tensors[i];
        me[i] = (baton_st_entry){t->name, t->dtype, t->ndim, t->shape, dm + hm.data_start + t->begin};
    }
    for (size_t i = 0; i < ho.ntensors; i++) {
        const baton_st_tensor *t = &ho.tensors[i];
        oe[i] = (baton_st_entry){t->name, t->dtype, t->ndim, t->shape, dob + ho.data_start + t->begin};
    }
    size_t nm = hm.ntensors;
    if (extra) me[nm++] = *extra;
    uint64_t step = 0;
    const char *sl = strrchr(src, '/');
    baton_ckpt_parse_name(sl ? sl + 1 : src, &step);
    baton_ckpt_store *s = NULL;
    rc = baton_ckpt_store_open(dir, 0, &s, &err);
    if (!rc) rc = baton_ckpt_snapshot_entries(s, me, nm, oe, ho.ntensors, 6, state, step, BATON_CKPT_WAIT, &err);
    if (!rc) rc = baton_ckpt_persist_sync(s, &err);
    baton_ckpt_store_close(s);
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    snprintf(out, sizeof out, "%s/ckpt-%09llu", dir, (unsigned long long)step);
    free(me);
    free(oe);
    free(dm);
    free(dob);
    free(state);
    baton_st_header_free(&hm);
    baton_st_header_free(&ho);
    return rc ? NULL : out;
}

/* The shared loader (ckpt's baton_ckpt_load_tensors) refuses what race's own loader let through: a
 * tensor the model does not have, and an optim.safetensors "steps" that is not a count (both in
 * folders that verify: the MANIFEST is remade), naming the tensor or the field. */
static void test_ckpt_refused(void)
{
    baton_err err = {0};
    char src[4096];
    race_run_state st;
    if (race_ckpt_find(path_in("det-a"), src, sizeof src, &st, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    float x[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    baton_st_entry extra = {"policy.extra", BATON_ST_F32, 1, shape, x};
    const char *bad = rewrite_ckpt(src, path_in("refused-extra"), &extra);
    race_agent a;
    if (bad) {
        int rc = race_agent_from_ckpt(&a, bad, &st, 1, &err);
        CHECK_MSG(rc == BATON_ERR_FORMAT && strstr(err.msg, "unexpected tensor 'policy.extra'") &&
                  strstr(err.msg, "model.safetensors"), "rc %d: %s", rc, err.msg);
        if (rc == BATON_OK) race_agent_free(&a);
    }
    /* "steps": "6" made "x" in place, the MANIFEST's size and CRC32C of the file remade */
    bad = rewrite_ckpt(src, path_in("refused-steps"), NULL);
    if (!bad) return;
    char p[4200], m[4200];
    snprintf(p, sizeof p, "%s/optim.safetensors", bad);
    uint8_t *d = NULL, *mt = NULL;
    size_t n = 0, mn = 0;
    CHECK(baton_file_read_all(p, 1 << 26, &d, &n, &err) == BATON_OK);
    char *k = d ? memmem(d, n < 4096 ? n : 4096, "\"steps\":\"6\"", 11) : NULL;
    CHECK_MSG(k != NULL, "no \"steps\":\"6\" in %s", p);
    if (!k) {
        free(d);
        return;
    }
    k[9] = 'x';
    CHECK(baton_file_write_atomic(p, d, n, &err) == BATON_OK);
    snprintf(m, sizeof m, "%s/MANIFEST", bad);
    CHECK(baton_file_read_all(m, 1 << 20, &mt, &mn, &err) == BATON_OK);
    char line[128];
    snprintf(line, sizeof line, "optim.safetensors %zu %08x", n, baton_crc32c(0, d, n));
    char *at = mt ? memmem(mt, mn, "optim.safetensors ", 18) : NULL;
    CHECK(at != NULL);
    if (at) {
        memcpy(at, line, strlen(line));   /* the same length: only the CRC's hex digits change */
        CHECK(baton_file_write_atomic(m, mt, mn, &err) == BATON_OK);
    }
    CHECK_MSG(baton_ckpt_verify(bad, &err) == BATON_OK, "the remade folder verifies: %s", err.msg);
    baton_ppo_train_opts o;
    baton_ppo_train_opts_default(&o);
    o.track = STRAIGHT, o.metadata = path_in("three.json"), o.hyper = path_in("hyper.json");
    o.session.ckpt_dir = path_in("refused-steps"), o.episodes = 140, o.seed = 7, o.seed_set = 1;
    baton_ppo_train_result r;
    int rc = baton_ppo_train(&o, &r, &err);
    CHECK_MSG(rc == BATON_ERR_FORMAT && strstr(err.msg, "'steps'") && strstr(err.msg, "not a count"), "rc %d: %s", rc,
              err.msg);
    free(d);
    free(mt);
}

static void test_files(void)
{
    const char *meta = path_in("three.json"), *dir = path_in("files");
    baton_ppo_train_opts o;
    baton_ppo_train_opts_default(&o);
    o.track = STRAIGHT, o.metadata = meta, o.hyper = path_in("hyper.json"), o.session.ckpt_dir = dir, o.episodes = 60;
    o.log_path = path_in("files.csv");
    o.trace_dir = path_in("trace");
    baton_ppo_train_result r;
    baton_err err = {0};
    CHECK_MSG(baton_ppo_train(&o, &r, &err) == BATON_OK, "%s", err.msg);
    baton_ppo_meta m;
    baton_ppo_hyper h;
    char p[600];
    snprintf(p, sizeof p, "%s/model_metadata.json", dir);
    CHECK_MSG(ppo_meta_load(p, &m, &err) == BATON_OK && m.nactions == 3 && m.obs == BATON_PPO_OBS_SENSOR, "%s",
              err.msg);
    snprintf(p, sizeof p, "%s/hyperparameters.json", dir);
    CHECK(ppo_hyper_load(p, &h, &err) == BATON_OK && h.num_episodes_between_training == 20);
    uint8_t *text = NULL;
    size_t len = 0;
    CHECK(baton_file_read_all(o.log_path, 1 << 20, &text, &len, &err) == BATON_OK);
    int rows = 0;
    for (size_t i = 0; text && i < len; i++) rows += text[i] == '\n';
    CHECK_MSG(rows == 4 && text && !strncmp((char *)text, "iteration,episodes,steps,", 25), "log: %d lines", rows);
    free(text);
    for (int it = 0; it < 3; it++) {
        snprintf(p, sizeof p, "%s/%d-iteration.csv", o.trace_dir, it);
        text = NULL;
        CHECK_MSG(baton_file_read_all(p, 1 << 24, &text, &len, &err) == BATON_OK, "%s", err.msg);
        if (!text) continue;
        CHECK(!strncmp((char *)text, RACE_TRACE_HEADER, strlen(RACE_TRACE_HEADER)));
        CHECK(strstr((char *)text, ",True,") && (strstr((char *)text, ",off_track,") || strstr((char *)text, ",lap_complete,")));
        CHECK(strstr((char *)text, ",in_progress,0.0,0\n") != NULL);
        free(text);
    }
    snprintf(p, sizeof p, "%s/3-iteration.csv", o.trace_dir);
    CHECK(access(p, F_OK) != 0);
}

static void test_state(void)
{
    race_run_state s, b;
    memset(&s, 0, sizeof s);
    ppo_meta_default(&s.meta);
    ppo_hyper_default(&s.hyper);
    s.iteration = 12, s.episodes = 240, s.sim_steps = 123456789012ULL, s.ticks = 777, s.seconds = 12.5;
    baton_rng_seed(&s.act_rng, 3);
    baton_rng_seed(&s.shuffle_rng, 4);
    s.optim_steps = 999, s.best_lap_s = 7.25, s.laps = 40, s.last_reward = -3.5;
    snprintf(s.track, sizeof s.track, "oval");
    snprintf(s.reward, sizeof s.reward, "tests/race/follow_center_line.py");
    s.reward_scale = BATON_PPO_SCALE_STEP, s.seed = UINT64_MAX, s.envs = 20, s.max_steps = 10000;
    baton_race_car_default(&s.car);
    s.car.grip_mps2 = 3, s.car.friction_circle = 1;
    char *js = race_state_format(&s);
    baton_err err = {0};
    memset(&b, 0x5a, sizeof b);
    CHECK_MSG(js && race_state_parse(js, strlen(js), &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(b.iteration == 12 && b.sim_steps == s.sim_steps && b.seed == UINT64_MAX && b.seconds == 12.5);
    CHECK(!memcmp(&b.act_rng, &s.act_rng, sizeof s.act_rng) && !memcmp(&b.shuffle_rng, &s.shuffle_rng, sizeof s.act_rng));
    CHECK(!memcmp(&b.meta, &s.meta, sizeof s.meta) && !memcmp(&b.hyper, &s.hyper, sizeof s.hyper));
    CHECK(!memcmp(&b.car, &s.car, sizeof s.car) && !strcmp(b.reward, s.reward) && b.reward_scale == BATON_PPO_SCALE_STEP);
    free(js);
    const char *bad[] = {
        "{\"kind\": \"supervised\"}",
        "[]",
        "{\"kind\": \"race-ppo\", \"step\": 1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(race_state_parse(bad[i], strlen(bad[i]), &b, &err) == BATON_ERR_FORMAT && strstr(err.msg, "state.json"));
    CHECK(race_state_parse(bad[0], strlen(bad[0]), &b, &err) && strstr(err.msg, "not a race model"));
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/baton-race-train-XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    setenv("BATON_DMI_DIR", "/nonexistent/dmi", 1);
    /* a few episodes per iteration keep this short: 20 episodes, batch 64, 3 epochs (the console's) */
    write_file(path_in("hyper.json"), "{\"num_episodes_between_training\": 20}");
    test_state();
    test_straight();
    test_determinism_and_resume();
    test_ckpt_refused();
    test_files();
    baton_remove_tree(tmp);
    CHECK_DONE();
}
