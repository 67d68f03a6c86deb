/* test_race_reward.c — reward functions: the built-ins on hand-made params; the three examples of
 * the DeepRacer guide typed in as Python (tests/race/) against the C built-ins at every step of
 * a recorded drive (|difference| <= 1e-12, every branch reached); the params dict's keys and types;
 * a user's C file compiled and loaded; and each bad reward (does not compile, no reward_function,
 * NaN, out of range, a Python exception, a string, a syntax error) refused with the file and the
 * line or step named. */
#include "../../src/race/race_internal.h"
#include "baton/race.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/baton-test-reward-XXXXXX";
static baton_race_track *track;   /* the recorded params point at its waypoints */

static const char *write_tmp(const char *name, const char *text)
{
    static char path[4][512];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    baton_err err = {0};
    CHECK(baton_file_write_atomic(p, text, strlen(text), &err) == BATON_OK);
    return p;
}

static void test_builtins(void)
{
    struct baton_race_params p = {0};
    p.track_width = 1.0;
    p.all_wheels_on_track = 1;
    const double d[] = {0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6};
    const double fc[] = {1.0, 1.0, 0.5, 0.5, 0.1, 0.1, 0.1, 1e-3};
    const double st[] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1e-3, 1e-3};
    for (int i = 0; i < 8; i++) {
        p.distance_from_center = d[i];
        p.steering_angle = 20;
        CHECK(baton_race_reward_follow_center_line(&p) == fc[i]);
        CHECK(race_reward_prevent_zigzag(&p) == fc[i] * 0.8);
        p.steering_angle = -15;
        CHECK(race_reward_prevent_zigzag(&p) == fc[i]);
        CHECK(race_reward_stay_inside_borders(&p) == st[i]);
    }
    p.distance_from_center = 0;
    p.all_wheels_on_track = 0;
    CHECK(race_reward_stay_inside_borders(&p) == 1e-3);
    baton_race_reward *r;
    baton_err err = {0};
    CHECK(baton_race_reward_open(NULL, &r, &err) == BATON_OK && !strcmp(race_reward_name(r), "follow_center_line"));
    baton_race_reward_free(r);
    CHECK(baton_race_reward_open("nonsense", &r, &err) == BATON_ERR_ARG && strstr(err.msg, "follow_center_line"));
}

/* A drive that weaves across the track (and off it), so every branch of the rewards is reached. */
static struct baton_race_params *record(size_t *n_out)
{
    baton_err err = {0};
    if (baton_race_track_load("../shared/tracks/reinvent_base.npy", &track, &err)) {
        CHECK_MSG(0, "%s", err.msg);
        return NULL;
    }
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.seed = 3;
    o.steer_noise_deg = 4;
    baton_race_sim *s;
    CHECK(baton_race_sim_new(track, &o, &s, &err) == BATON_OK);
    size_t n = 900;
    struct baton_race_params *p = calloc(n, sizeof *p);
    for (size_t k = 0; k < n; k++) {
        float steer, speed;
        baton_race_centerline_action(s, 0, 0.7, &steer, &speed);
        steer += (float)(22 * sin(k * 0.21));
        baton_race_sim_step(s, &steer, &speed);
        baton_race_sim_params(s, 0, &p[k]);
        if (baton_race_sim_state(s, 0)->status != BATON_RACE_IN_PROGRESS) baton_race_sim_reset(s, 0);
    }
    baton_race_sim_free(s);
    *n_out = n;
    return p;
}

static void compare(const char *py, const char *builtin, const struct baton_race_params *p, size_t n, int min_distinct)
{
    baton_race_reward *a, *b;
    baton_err err = {0};
    int rc = baton_race_reward_open(py, &a, &err);
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    if (rc) return;
    CHECK(baton_race_reward_open(builtin, &b, &err) == BATON_OK);
    double *ra = malloc(n * sizeof *ra), *rb = malloc(n * sizeof *rb), seen[16];
    int nseen = 0;
    /* the first half one call per step, the rest as one batch */
    for (size_t k = 0; k < n / 2; k++) CHECK(baton_race_reward_eval(a, &p[k], &ra[k], &err) == BATON_OK);
    CHECK_MSG(baton_race_reward_eval_batch(a, p + n / 2, n - n / 2, ra + n / 2, &err) == BATON_OK, "%s", err.msg);
    CHECK(baton_race_reward_eval_batch(b, p, n, rb, &err) == BATON_OK);
    double worst = 0;
    for (size_t k = 0; k < n; k++) {
        worst = fmax(worst, fabs(ra[k] - rb[k]));
        int known = 0;
        for (int i = 0; i < nseen; i++) known |= seen[i] == rb[k];
        if (!known && nseen < 16) seen[nseen++] = rb[k];
    }
    CHECK_MSG(worst <= 1e-12, "%s vs %s: difference %g", py, builtin, worst);
    CHECK_MSG(nseen >= min_distinct, "%s: only %d distinct rewards in the drive", builtin, nseen);
    free(ra);
    free(rb);
    baton_race_reward_free(a);
    baton_race_reward_free(b);
}

static const char *user_c =
    "#include \"baton/race_reward.h\"\n"
    "double reward_function(const struct baton_race_params *p)\n"
    "{\n"
    "    return p->x + 2 * p->y + p->progress / 100 + p->steps + (p->is_left_of_center ? 1.0 : 0.0) +\n"
    "           p->num_waypoints + p->closest_waypoints[1] + (p->all_wheels_on_track ? 10.0 : 0.0);\n"
    "}\n";

static void test_c_reward(const struct baton_race_params *p, size_t n)
{
    baton_race_reward *r;
    baton_err err = {0};
    const char *path = write_tmp("mine.c", user_c);
    int rc = baton_race_reward_open(path, &r, &err);
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    if (!rc) {
        int ok = 1;
        for (size_t k = 0; k < n; k++) {
            double v;
            const struct baton_race_params *q = &p[k];
            double want = q->x + 2 * q->y + q->progress / 100 + q->steps + (q->is_left_of_center ? 1.0 : 0.0) +
                          q->num_waypoints + q->closest_waypoints[1] + (q->all_wheels_on_track ? 10.0 : 0.0);
            ok &= baton_race_reward_eval(r, q, &v, &err) == BATON_OK && v == want;
        }
        CHECK(ok);
        /* the same reward in Python sees the same dict the simulator builds */
        if (baton_race_python_available()) {
            baton_race_reward *py;
            rc = baton_race_reward_open("tests/race/params_check.py", &py, &err);
            CHECK_MSG(rc == BATON_OK, "%s", err.msg);
            for (size_t k = 0; !rc && k < n; k++) {
                double a, b;
                rc = baton_race_reward_eval(py, &p[k], &a, &err) || baton_race_reward_eval(r, &p[k], &b, &err);
                CHECK_MSG(!rc && fabs(a - b) <= 1e-12, "step %zu: %s (%.17g vs %.17g)", k, err.msg, a, b);
            }
            if (!rc) baton_race_reward_free(py);
        }
        baton_race_reward_free(r);
    }
    /* does not compile: the compiler's own message, naming the file and line */
    path = write_tmp("broken.c", "#include \"baton/race_reward.h\"\ndouble reward_function(const struct baton_race_params *p)\n"
                                 "{\n    return p->speeed;\n}\n");
    CHECK(baton_race_reward_open(path, &r, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "does not compile") && strstr(err.msg, "broken.c:4") && strstr(err.msg, "speeed"), "%s",
              err.msg);
    /* a signature other than the header's does not compile either */
    path = write_tmp("sig.c", "#include \"baton/race_reward.h\"\nfloat reward_function(void) { return 1; }\n");
    CHECK(baton_race_reward_open(path, &r, &err) == BATON_ERR_FORMAT && strstr(err.msg, "sig.c"));
    path = write_tmp("none.c", "#include \"baton/race_reward.h\"\ndouble other(const struct baton_race_params *p) { return 1; }\n");
    CHECK(baton_race_reward_open(path, &r, &err) == BATON_ERR_FORMAT && strstr(err.msg, "no reward_function"));
    CHECK(baton_race_reward_open("/nonexistent/r.c", &r, &err) != BATON_OK && strstr(err.msg, "/nonexistent/r.c"));
    /* a NaN, an infinity, a reward past 1e5: stopped, naming the step and the params */
    const char *bad[][2] = {{"nan.c", "return __builtin_nan(\"\");"}, {"inf.c", "return 1 / (p->steps - p->steps + 0.0);"},
                            {"big.c", "return 1e5 + 1;"}};
    for (int i = 0; i < 3; i++) {
        char src[512];
        snprintf(src, sizeof src, "#include \"baton/race_reward.h\"\ndouble reward_function(const struct baton_race_params *p)\n"
                 "{ (void)p; %s }\n", bad[i][1]);
        path = write_tmp(bad[i][0], src);
        rc = baton_race_reward_open(path, &r, &err);
        CHECK_MSG(rc == BATON_OK, "%s", err.msg);
        if (rc) continue;
        double v;
        CHECK(baton_race_reward_eval(r, &p[5], &v, &err) == BATON_ERR_ARG);
        char want[64];
        snprintf(want, sizeof want, "at step %d is", p[5].steps);
        CHECK_MSG(strstr(err.msg, want) && strstr(err.msg, "progress=") && strstr(err.msg, bad[i][0]), "%s", err.msg);
        baton_race_reward_free(r);
    }
    /* the header the compiler sees is include/baton/race_reward.h, byte for byte */
    uint8_t *h;
    size_t hl;
    CHECK(baton_file_read_all("include/baton/race_reward.h", 1 << 20, &h, &hl, &err) == BATON_OK);
    CHECK(hl == strlen(race_reward_header) && !memcmp(h, race_reward_header, hl));
    free(h);
}

static void py_fails(const char *name, const char *src, const struct baton_race_params *p, const char *want1,
                     const char *want2)
{
    const char *path = write_tmp(name, src);
    baton_race_reward *r;
    baton_err err = {0};
    int rc = baton_race_reward_open(path, &r, &err);
    if (rc == BATON_OK) {
        double v;
        rc = baton_race_reward_eval(r, p, &v, &err);
        baton_race_reward_free(r);
    }
    CHECK_MSG(rc != BATON_OK && strstr(err.msg, name) && strstr(err.msg, want1) && (!want2 || strstr(err.msg, want2)),
              "%s: '%s' (want '%s', '%s')", name, err.msg, want1, want2 ? want2 : "");
}

static void test_python(const struct baton_race_params *p, size_t n)
{
    if (!baton_race_python_available()) {
        baton_race_reward *r;
        baton_err err = {0};
        CHECK(baton_race_reward_open("tests/race/follow_center_line.py", &r, &err) == BATON_ERR_ARG &&
              strstr(err.msg, "built without Python"));
        printf("built without Python: only its error is tested\n");
        return;
    }
    compare("tests/race/follow_center_line.py", "follow_center_line", p, n, 4);
    compare("tests/race/stay_inside_borders.py", "stay_inside_borders", p, n, 2);
    compare("tests/race/prevent_zigzag.py", "prevent_zigzag", p, n, 7);
    char step[32];
    snprintf(step, sizeof step, "step %d", p[3].steps);
    py_fails("raises.py", "import math\n\ndef reward_function(params):\n    x = params['x']\n    return 1 / (x - x)\n", &p[3],
             "raises.py line 5: ZeroDivisionError", step);
    py_fails("string.py", "def reward_function(params):\n    return '1.0'\n", &p[3], "returned str, not a number", step);
    py_fails("none.py", "def reward_function(params):\n    pass\n", &p[3], "NoneType", NULL);
    py_fails("nan.py", "def reward_function(params):\n    return float('nan')\n", &p[3], "is nan", "params:");
    py_fails("syntax.py", "def reward_function(params):\n    return (1 +\n\n", &p[3], "line", "SyntaxError");
    py_fails("nofunc.py", "def reward(params):\n    return 1.0\n", &p[3], "no function reward_function", NULL);
    py_fails("import.py", "import no_such_module_here\n", &p[3], "line 1: ModuleNotFoundError", NULL);
    py_fails("key.py", "def reward_function(params):\n    return params['speeed']\n", &p[3], "line 2: KeyError", NULL);
    /* ints, bools and numpy-style floats are numbers, as float() takes them */
    const char *path = write_tmp("int.py", "def reward_function(params):\n    return params['closest_waypoints'][1] + True\n");
    baton_race_reward *r;
    baton_err err = {0};
    double v;
    CHECK(baton_race_reward_open(path, &r, &err) == BATON_OK && baton_race_reward_eval(r, &p[3], &v, &err) == BATON_OK &&
          v == p[3].closest_waypoints[1] + 1);
    baton_race_reward_free(r);
    /* numpy where installed (the console allows it); not required. numpy keeps objects that only
     * CPython's own arenas point at (LeakSanitizer cannot see into them, and CPython documents that
     * extension modules may keep memory past the interpreter), so the case runs in a child that
     * reports through its exit status and ends with _exit, before the leak check */
    path = write_tmp("np.py", "import numpy as np\n\ndef reward_function(params):\n    return np.float64(params['speed']) * 2\n");
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int rc = 3;
        if (baton_race_reward_open(path, &r, &err) == BATON_OK)
            rc = baton_race_reward_eval(r, &p[3], &v, &err) == BATON_OK && v == 2 * p[3].speed ? 0 : 1;
        else
            rc = strstr(err.msg, "No module named 'numpy'") != NULL ? 2 : 1;
        _exit(rc);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 2);
    printf(WEXITSTATUS(status) == 0 ? "numpy: a reward that imports it runs\n"
                                    : "numpy is not installed: its reward was refused with a clear message\n");
}

int main(void)
{
    CHECK(mkdtemp(tmpdir) != NULL);
    test_builtins();
    size_t n = 0;
    struct baton_race_params *p = record(&n);
    if (p) {
        test_c_reward(p, n);
        test_python(p, n);
        /* the drive went off the track and back: the rewards saw every case */
        int off = 0;
        for (size_t k = 0; k < n; k++) off += p[k].is_offtrack;
        CHECK(off > 0);
    }
    free(p);
    baton_race_track_free(track);
    baton_remove_tree(tmpdir);
    CHECK_DONE();
}
