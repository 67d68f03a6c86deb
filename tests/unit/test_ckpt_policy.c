/* test_ckpt_policy.c — when a save is due (ckpt.h's baton_ckpt_policy): the interval's forms and
 * their errors, every N steps, every S seconds, Daly's interval re-estimated from the measured
 * blocking cost, and a fleet worker's environment (the interval, the MTBI, the deadline margin). */
#include "baton/ckpt.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>

static void test_parse(void)
{
    baton_ckpt_policy p;
    baton_err err = {0};
    CHECK(baton_ckpt_policy_parse(&p, "100", 0, &err) == BATON_OK && p.every_steps == 100 && p.every_sec == 0 &&
          !p.automatic);
    CHECK(baton_ckpt_policy_parse(&p, "100steps", 0, &err) == BATON_OK && p.every_steps == 100);
    CHECK(baton_ckpt_policy_parse(&p, "90s", 0, &err) == BATON_OK && p.every_sec == 90 && !p.every_steps);
    CHECK(baton_ckpt_policy_parse(&p, "2.5m", 0, &err) == BATON_OK && p.every_sec == 150);
    CHECK(baton_ckpt_policy_parse(&p, "1h", 0, &err) == BATON_OK && p.every_sec == 3600);
    CHECK(baton_ckpt_policy_parse(&p, "auto", 7200, &err) == BATON_OK && p.automatic && p.mtbi_s == 7200);
    CHECK(baton_ckpt_policy_parse(&p, "off", 0, &err) == BATON_OK && !p.every_steps && !p.every_sec && !p.automatic);
    const char *bad[] = {"", "0", "-5", "1.5", "5x", "s", "nan", "1e300", "10 s", NULL};
    for (int i = 0; bad[i]; i++)
        CHECK_MSG(baton_ckpt_policy_parse(&p, bad[i], 0, &err) == BATON_ERR_USAGE && strstr(err.msg, "expected"),
                  "'%s': %s", bad[i], err.msg);
}

static void test_due(void)
{
    baton_ckpt_policy p;
    baton_ckpt_policy_init(&p, 10, 0, 0, 0);
    double t = p.saved_t;
    CHECK(!baton_ckpt_policy_due(&p, 9, t + 1e6) && baton_ckpt_policy_due(&p, 10, t) && baton_ckpt_policy_due(&p, 20, t));
    baton_ckpt_policy_init(&p, 0, 30, 0, 0);
    t = p.saved_t;
    CHECK(!baton_ckpt_policy_due(&p, 1, t + 29) && baton_ckpt_policy_due(&p, 1, t + 30));
    baton_ckpt_policy_saved(&p, t + 30, 0.5);
    CHECK(!baton_ckpt_policy_due(&p, 2, t + 59) && baton_ckpt_policy_due(&p, 2, t + 60));
    /* auto: the first save at once; then Daly's interval for δ = 2 s, M = 3600 s */
    baton_ckpt_policy_init(&p, 0, 60, 1, 3600);
    t = p.saved_t;
    CHECK(baton_ckpt_policy_due(&p, 1, t));
    baton_ckpt_policy_saved(&p, t, 2.0);
    double tau = baton_ckpt_daly_interval(2.0, 3600);
    CHECK(fabs(p.tau - tau) < 1e-9 && tau > 100 && tau < 130);
    CHECK(!baton_ckpt_policy_due(&p, 2, t + tau - 1) && baton_ckpt_policy_due(&p, 2, t + tau + 1e-6));
    baton_ckpt_policy_saved(&p, t + tau, 4.0);   /* δ is the mean: 3 s */
    CHECK(fabs(p.tau - baton_ckpt_daly_interval(3.0, 3600)) < 1e-9);
    /* auto without a hazard: every_sec; a tiny δ is floored at 1 s */
    baton_ckpt_policy_init(&p, 0, 45, 1, 0);
    baton_ckpt_policy_saved(&p, p.saved_t, 0.001);
    CHECK(p.tau == 45);
    baton_ckpt_policy_init(&p, 0, 60, 1, 10);
    baton_ckpt_policy_saved(&p, p.saved_t, 1e-6);
    CHECK(p.tau == 1);
}

static void test_env(void)
{
    baton_ckpt_policy p;
    baton_err err = {0};
    unsetenv("BATON_CKPT_EVERY");
    unsetenv("BATON_SPOT_MTBI_S");
    baton_ckpt_policy_init(&p, 0, 60, 0, 0);
    CHECK(baton_ckpt_policy_from_env(&p, &err) == 0 && p.every_sec == 60);
    setenv("BATON_CKPT_EVERY", "auto", 1);
    setenv("BATON_SPOT_MTBI_S", "1800", 1);
    CHECK(baton_ckpt_policy_from_env(&p, &err) == 1 && p.automatic && p.mtbi_s == 1800);
    setenv("BATON_CKPT_EVERY", "7", 1);
    CHECK(baton_ckpt_policy_from_env(&p, &err) == 1 && p.every_steps == 7);
    setenv("BATON_CKPT_EVERY", "soon", 1);
    CHECK(baton_ckpt_policy_from_env(&p, &err) < 0 && strstr(err.msg, "BATON_CKPT_EVERY") && strstr(err.msg, "soon"));
    unsetenv("BATON_CKPT_EVERY");
    setenv("BATON_SPOT_MTBI_S", "x", 1);
    CHECK(baton_ckpt_policy_from_env(&p, &err) < 0 && strstr(err.msg, "BATON_SPOT_MTBI_S"));
    unsetenv("BATON_SPOT_MTBI_S");
    /* the deadline margin (baton train and the Python module's Checkpoints.wait read it alike) */
    double m = -1;
    unsetenv("BATON_DEADLINE_MARGIN_S");
    CHECK(baton_ckpt_margin_from_env(&m, &err) == BATON_OK && m == 5);
    setenv("BATON_DEADLINE_MARGIN_S", "2.5", 1);
    CHECK(baton_ckpt_margin_from_env(&m, &err) == BATON_OK && m == 2.5);
    const char *bad[] = {"soon", "-1", "3601", "1s", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("BATON_DEADLINE_MARGIN_S", bad[i], 1);
        CHECK_MSG(baton_ckpt_margin_from_env(&m, &err) == BATON_ERR_USAGE && strstr(err.msg, bad[i]) &&
                      strstr(err.msg, "BATON_DEADLINE_MARGIN_S"), "%s: %s", bad[i], err.msg);
    }
    unsetenv("BATON_DEADLINE_MARGIN_S");
}

int main(void)
{
    baton_log_set_level(BATON_LOG_ERROR);
    test_parse();
    test_due();
    test_env();
    CHECK_DONE();
}
