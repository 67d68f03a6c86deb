/* test_ckpt_cadence.c — the checkpoint cadence (ckpt.h, baton_ckpt_cadence) through the calls
 * `baton train`'s session makes: tests/unit/cadence.txt's script of steps and fake-clock times
 * replayed, each decision as written there (tests/python/test_one_door.py replays the same script
 * through the Python module's Checkpoints); and the progress file (fixed width, rewritten in
 * place, at begin and after every step). */
#include "baton/ckpt.h"

#include <stdlib.h>
#include <unistd.h>

#include "check.h"

static void replay(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s: cannot open (run from the repository root)", path);
    if (!f) return;
    char line[256], every[32];
    baton_ckpt_cadence *c = NULL;
    int lineno = 0, decisions = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        unsigned long long step;
        double now, x;
        int want;
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "open %31s %lf", every, &x) == 2) {
            baton_ckpt_cadence_close(c);
            c = NULL;
            baton_ckpt_policy p;
            baton_err err = {0};
            CHECK_MSG(baton_ckpt_policy_parse(&p, every, x, &err) == BATON_OK, "line %d: %s", lineno, err.msg);
            CHECK(baton_ckpt_cadence_open(&p, NULL, 0, &c, &err) == BATON_OK);
        } else if (c && sscanf(line, "begin %llu %lf", &step, &now) == 2) {
            baton_ckpt_cadence_begin(c, step, 0, now);
        } else if (c && sscanf(line, "due %llu %lf %d", &step, &now, &want) == 3) {
            int got = baton_ckpt_cadence_due(c, NULL, step, now);
            CHECK_MSG(got == want, "%s:%d: due(%llu, %g) = %d, the script says %d", path, lineno, step, now, got, want);
            decisions++;
        } else if (c && sscanf(line, "saved %lf %lf", &now, &x) == 2) {
            baton_ckpt_cadence_saved(c, now, x);
        } else {
            CHECK_MSG(0, "%s:%d: not a line of the script: %s", path, lineno, line);
        }
    }
    baton_ckpt_cadence_close(c);
    fclose(f);
    CHECK_MSG(decisions >= 25, "%d decisions replayed", decisions);
}

static void progress_file(void)
{
    char dir[] = "/tmp/baton-cadence-XXXXXX", path[64], got[64] = "";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/progress", dir);
    baton_ckpt_policy p;
    baton_ckpt_policy_init(&p, 10, 0, 0, 0);
    baton_ckpt_cadence *c = NULL;
    baton_err err = {0};
    CHECK(baton_ckpt_cadence_open(&p, path, 10, &c, &err) == BATON_OK);
    baton_ckpt_cadence_begin(c, 123456, 0, 0);
    FILE *f = fopen(path, "r");
    CHECK(f && fgets(got, sizeof got, f) && !strcmp(got, "00000000000000123456\n"));
    if (f) fclose(f);
    CHECK(baton_ckpt_cadence_due(c, NULL, 7, 1) == BATON_CKPT_NOT_DUE);
    CHECK(baton_ckpt_cadence_due(c, NULL, 10, 2) == BATON_CKPT_DUE);
    f = fopen(path, "r");
    CHECK(f && fgets(got, sizeof got, f) && !strcmp(got, "00000000000000000010\n") && !fgets(got, sizeof got, f));
    if (f) fclose(f);
    const baton_ckpt_policy *q = baton_ckpt_cadence_policy(c);
    CHECK(q->every_steps == 10 && !q->automatic);
    baton_ckpt_cadence_close(c);
    baton_ckpt_cadence_close(NULL);
    /* a progress file that cannot be opened is a warning, not an error */
    snprintf(path, sizeof path, "%s/no/such/folder", dir);
    CHECK(baton_ckpt_cadence_open(&p, path, 0, &c, &err) == BATON_OK && c);
    baton_ckpt_cadence_close(c);
    snprintf(path, sizeof path, "%s/progress", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    baton_log_set_level(BATON_LOG_ERROR);
    replay("tests/unit/cadence.txt");
    progress_file();
    CHECK_DONE();
}
