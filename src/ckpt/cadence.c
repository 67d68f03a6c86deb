/* cadence.c — when a training loop checkpoints (ckpt.h, baton_ckpt_cadence): the policy
 * (interval.c), the progress file, the bound on uncommitted work, the collection of background
 * saves and the retry after a failed one. `baton train`'s session (src/train/session.c) and the
 * Python module's Checkpoints (src/python/ckpt.c) pace their saves through it, so the same steps
 * and times give the same decisions on both (tests/unit/test_ckpt_cadence.c and
 * tests/python/test_one_door.py replay one script, tests/unit/cadence.txt).
 *
 * Contract:
 *   - the caller saves; due() only says when, and never saves itself;
 *   - the progress file is a fixed-width number rewritten in place, so a reader never sees a torn
 *     or shorter value; a write that fails is logged (debug) and tried again next step;
 *   - with a bound, due() waits for the persist in flight before the progress file runs more than
 *     bound_steps steps ahead of the newest committed checkpoint;
 *   - a failed background save is reported once (BATON_CKPT_RETRY); what to do (a synchronous
 *     save, or the caller's own) is the caller's. */
#include "baton/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct baton_ckpt_cadence {
    baton_ckpt_policy pol;
    int pfd;                    /* progress file, -1 none */
    uint64_t bound;             /* 0: none */
    uint64_t committed;         /* step of the newest committed checkpoint (the start state: 0) */
};

int baton_ckpt_cadence_open(const baton_ckpt_policy *policy, const char *progress_file, uint64_t bound_steps,
                            baton_ckpt_cadence **out, baton_err *err)
{
    *out = NULL;
    baton_ckpt_cadence *c = calloc(1, sizeof *c);
    if (!c) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    c->pol = *policy;
    c->bound = bound_steps;
    c->pfd = -1;
    if (progress_file && *progress_file && (c->pfd = open(progress_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
        baton_log(BATON_LOG_WARN, "%s: cannot open the progress file: %s", progress_file, strerror(errno));
    *out = c;
    return BATON_OK;
}

static void progress_put(baton_ckpt_cadence *c, uint64_t step)
{
    char b[24];
    int n = snprintf(b, sizeof b, "%020" PRIu64 "\n", step);
    if (c->pfd >= 0 && pwrite(c->pfd, b, (size_t)n, 0) != n)
        baton_log(BATON_LOG_DEBUG, "progress file: %s", strerror(errno));
}

void baton_ckpt_cadence_begin(baton_ckpt_cadence *c, uint64_t step, uint64_t committed, double now)
{
    c->committed = committed;
    c->pol.saved_t = now;
    progress_put(c, step);
}

int baton_ckpt_cadence_due(baton_ckpt_cadence *c, baton_ckpt_store *store, uint64_t step, double now)
{
    int k = 0;
    uint64_t cs;
    if (store && (k = baton_ckpt_reap(store, c->bound && step - c->committed > c->bound, &cs)) > 0) c->committed = cs;
    progress_put(c, step);
    if (k < 0) return BATON_CKPT_RETRY;
    return baton_ckpt_policy_due(&c->pol, step, now) ? BATON_CKPT_DUE : BATON_CKPT_NOT_DUE;
}

void baton_ckpt_cadence_saved(baton_ckpt_cadence *c, double now, double blocked_s)
{
    baton_ckpt_policy_saved(&c->pol, now, blocked_s);
}

void baton_ckpt_cadence_committed(baton_ckpt_cadence *c, uint64_t step) { c->committed = step; }

const baton_ckpt_policy *baton_ckpt_cadence_policy(const baton_ckpt_cadence *c) { return &c->pol; }

void baton_ckpt_cadence_close(baton_ckpt_cadence *c)
{
    if (!c) return;
    if (c->pfd >= 0) close(c->pfd);
    free(c);
}
