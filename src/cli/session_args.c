/* session_args.c — the checkpoint-session flags `baton train` and `baton race train` share
 * (CLI_SESSION_OPTS in cli.h), checked once and turned into baton_train_session_opts the same way
 * for both: a fixed interval given wins (--ckpt-every-steps, --ckpt-every-sec), then --ckpt-every
 * auto with --interrupt-rate, then what a fleet tells its tasks (BATON_CKPT_EVERY,
 * BATON_SPOT_MTBI_S, BATON_PROGRESS_FILE through baton_train_session_opts_env). */
#include "baton/train_session.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void cli_session_init(struct cli_session *c, struct baton_train_session_opts *so)
{
    memset(c, 0, sizeof *c);
    c->so = so;
    c->every_steps = UINT64_MAX;
    c->every_sec = NAN;
    c->rate_pct = NAN;
    c->keep = -1;
}

int cli_session_finish(struct cli_session *c, const char *cmd, int argc, char **argv)
{
    baton_train_session_opts *so = c->so;
    int steps = c->every_steps != UINT64_MAX, secs = cli_given(argc, argv, "ckpt-every-sec");
    const char *bad = !so->ckpt_dir ? "--ckpt-dir is required"
                    : c->keep == 0 || c->keep < -1 ? "--keep must be >= 1"
                    : secs && !(c->every_sec >= 0 && isfinite(c->every_sec)) ? "--ckpt-every-sec must be >= 0"
                    : c->every && strcmp(c->every, "auto")
                        ? "--ckpt-every takes auto (use --ckpt-every-steps K or --ckpt-every-sec S for a fixed interval)"
                    : c->every && (steps || secs)
                        ? "--ckpt-every auto and a fixed --ckpt-every-steps/--ckpt-every-sec exclude each other"
                    : cli_given(argc, argv, "interrupt-rate") && !(c->rate_pct > 0 && c->rate_pct < 100)
                        ? "--interrupt-rate must be in (0, 100)"
                    : NULL;
    if (bad) {
        fprintf(stderr, "baton %s: %s\n", cmd, bad);
        return CLI_USAGE;
    }
    if (steps) so->ckpt_every = c->every_steps, so->ckpt_every_sec = 0;   /* the count replaces the default */
    if (secs) so->ckpt_every_sec = c->every_sec;
    so->ckpt_auto = c->every != NULL;
    if (isfinite(c->rate_pct)) so->mtbi_s = baton_ckpt_mtbi_hours(c->rate_pct / 100) * 3600;
    so->keep = c->keep < 0 ? 0 : c->keep;
    so->notice = !c->no_notice;
    baton_err err = {0};
    if (baton_train_session_opts_env(so, steps || secs || c->every, &err)) return cli_fail(cmd, &err);
    return CLI_OK;
}
