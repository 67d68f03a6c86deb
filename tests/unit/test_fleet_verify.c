/* test_fleet_verify.c — verify-resume's judge (src/fleet/verify_compare.c) on event logs written
 * here: a run interrupted and resumed (segments, a step redone after a kill, a torn last line, a
 * line of someone else's) is identical to its uninterrupted run; each kind of difference is named
 * at its step (samples, loss, weights, optimizer, a skipped step, ended early, ran longer, a failed
 * run), the lowest step winning; the --kinds parser; the report's times (start-ups, stops, the
 * restarts and the budget) in its table and JSON. */
#include "../../src/fleet/verify_internal.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static char dir[] = "/tmp/baton-test-verify-XXXXXX";

static void put(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
}

static char *path(const char *name)
{
    static char p[8][256];
    static int k;
    char *s = p[k++ % 8];
    snprintf(s, 256, "%s/%s", dir, name);
    return s;
}

#define B(f, d) "{\"ev\":\"batch\",\"epoch\":0,\"first\":" #f ",\"n\":4,\"digest\":\"" d "\"}\n"
#define L(s, v) "{\"ev\":\"loss\",\"step\":" #s ",\"loss\":" #v "}\n"
#define C(s, m) "{\"ev\":\"ckpt\",\"step\":" #s ",\"model\":\"" m "\",\"optim\":\"aa\"}\n"
#define R(s) "{\"ev\":\"resume\",\"step\":" #s "}\n"

/* the uninterrupted run: 6 steps, checkpoints at 3 and 6 */
static const char *ref_log = R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3")
    B(12, "a4") L(4, 0.0625) B(16, "a5") L(5, 0.03125) B(20, "a6") L(6, 0.015625) C(6, "m6");

/* judge ref_log against the runs (texts, NULL-ended) */
static baton_verify_report judge(const char *const *runs, uint64_t failed)
{
    static baton_verify_report r;
    memset(&r, 0, sizeof r);
    put("ref", ref_log);
    char *paths[8];
    int n = 0;
    for (; runs[n]; n++) {
        char name[16];
        snprintf(name, sizeof name, "run%d", n);
        put(name, runs[n]);
        paths[n] = strdup(path(name));
    }
    vref *v = NULL;
    baton_err err = {0};
    CHECK(verify_ref_load(path("ref"), &v, &err) == BATON_OK);
    CHECK_EQ_U(verify_ref_steps(v), 6);
    CHECK(verify_compare(v, paths, n, failed, "run 2 failed", &r, &err) == BATON_OK);
    verify_ref_free(v);
    for (int i = 0; i < n; i++) free(paths[i]);
    return r;
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    vevent e;
#define PARSE(s) verify_parse_line(s, strlen(s), &e)
    CHECK(PARSE("{\"ev\":\"batch\",\"epoch\":2,\"first\":64,\"n\":32,\"digest\":\"00ff\"}") &&
          e.type == VEV_BATCH && e.epoch == 2 && e.first == 64 && e.n == 32 && e.digest == 255);
    CHECK(PARSE("{\"ev\":\"loss\",\"step\":3}") && e.type == VEV_LOSS && e.step == 3 && !e.has_loss);
    CHECK(!PARSE("{\"ev\":\"batch\""));
    CHECK(!PARSE("hello"));

    /* killed in step 5 after its checkpoint at 3 (step 4's batch and loss logged, step 5's batch
     * too): resumed from 3, steps 4 and 5 redone; a foreign line and a torn last line ignored */
    const char *ok[] = {R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3") B(12, "a4")
                            L(4, 0.0625) "{\"other\":1}\n" B(16, "a5") "{\"ev\":\"lo",
                        R(3) B(12, "a4") L(4, 0.0625) B(16, "a5") L(5, 0.03125) B(20, "a6") L(6, 0.015625) C(6, "m6"),
                        NULL};
    baton_verify_report r = judge(ok, 0);
    CHECK_MSG(r.cause == BATON_VERIFY_IDENTICAL, "%s at %llu: %s", baton_verify_cause_name(r.cause),
              (unsigned long long)r.step, r.what);
    CHECK_EQ_U(r.batches, 8);
    CHECK_EQ_U(r.losses, 7);
    CHECK_EQ_U(r.ckpts, 2);

    /* the loader resumed one batch late: samples at step 4 */
    const char *late[] = {R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3"),
                          R(3) B(16, "a5") L(4, 0.07) B(20, "a6") L(5, 0.03) L(6, 0.01) C(6, "mx"), NULL};
    r = judge(late, 0);
    CHECK(r.cause == BATON_VERIFY_SAMPLES && r.step == 4 && strstr(r.what, "positions 16..19"));
    /* the same batches, another loss at 5, then the weights */
    const char *loss[] = {R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3"),
                          R(3) B(12, "a4") L(4, 0.0625) B(16, "a5") L(5, 0.03125001) B(20, "a6") L(6, 0.015625) C(6, "mx"),
                          NULL};
    r = judge(loss, 0);
    CHECK(r.cause == BATON_VERIFY_LOSS && r.step == 5);
    const char *weights[] = {R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3"),
                             R(3) B(12, "a4") L(4, 0.0625) B(16, "a5") L(5, 0.03125) B(20, "a6") L(6, 0.015625) C(6, "mx"),
                             NULL};
    r = judge(weights, 0);
    CHECK(r.cause == BATON_VERIFY_WEIGHTS && r.step == 6);
    /* a step's batch missing (skipped): samples there */
    const char *skipped[] = {R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3"),
                             R(4) L(4, 0.0625) B(16, "a5") L(5, 0.03125) B(20, "a6") L(6, 0.015625) C(6, "m6"), NULL};
    r = judge(skipped, 0);
    CHECK_MSG(r.cause == BATON_VERIFY_SAMPLES && r.step == 4, "%s at %llu: %s", baton_verify_cause_name(r.cause),
              (unsigned long long)r.step, r.what);
    /* the runs stopped at step 3; a failed run there wins over "ended early" */
    const char *early[] = {R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3"), NULL};
    r = judge(early, 0);
    CHECK(r.cause == BATON_VERIFY_EARLY && r.step == 4);
    r = judge(early, 4);
    CHECK(r.cause == BATON_VERIFY_FAILED && r.step == 4 && !strcmp(r.what, "run 2 failed"));
    /* one step too many */
    const char *longer[] = {R(0) B(0, "a1") L(1, 0.5) B(4, "a2") L(2, 0.25) B(8, "a3") L(3, 0.125) C(3, "m3") B(12, "a4")
                                L(4, 0.0625) B(16, "a5") L(5, 0.03125) B(20, "a6") L(6, 0.015625) C(6, "m6") B(24, "a7")
                                    L(7, 0.01),
                            NULL};
    r = judge(longer, 0);
    CHECK(r.cause == BATON_VERIFY_LONGER && r.step == 7);

    unsigned k;
    baton_err err = {0};
    CHECK(baton_verify_kinds_parse("term,notice", &k, &err) == BATON_OK && k == (BATON_VERIFY_TERM | BATON_VERIFY_NOTICE));
    CHECK(baton_verify_kinds_parse("term,hup", &k, &err) == BATON_ERR_USAGE && strstr(err.msg, "'hup'"));
    /* the report: each run's start-up, stop and steps redone, the restarts and the budget */
    r = judge(ok, 0);
    r.ref = (baton_verify_run){0, 6, 0, 2.0, 0.5, 0, 0};
    r.runs[0] = (baton_verify_run){0, 3, 75, 1.5, 0.5, 0.25, 0};
    r.runs[1] = (baton_verify_run){3, 6, 0, 1.75, 0.5, 0, 0};
    r.nruns = 2, r.ref_s = 2.0, r.interrupted_s = 3.25, r.total_s = 5.5, r.restarts_s = 0.75;
    r.budget_s = BATON_VERIFY_BUDGET * r.ref_s + r.restarts_s;
    char *js = baton_verify_report_json(&r);
    CHECK_MSG(js && strstr(js, "\"restarts\":0.75") && strstr(js, "\"budget\":5.75") &&
                  strstr(js, "\"within_budget\":true") && strstr(js, "\"startup\":0.5") && strstr(js, "\"stop\":0.25"),
              "%s", js ? js : "(null)");
    free(js);
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    baton_verify_report_print(f, &r);
    fclose(f);
    CHECK_MSG(strstr(text, "budget: 2.5× the uninterrupted run + the restarts (1: their stops and start-ups less a step "
                           "each, 0.75 s) = 5.75 s; the check took 5.50 s (96 %): within"),
              "%s", text);
    free(text);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {
    }
    CHECK_DONE();
}
