/* session_args.c — the checkpoint-session flags `baton train` and `baton race train` share
 * (CLI_SESSION_OPTS in cli.h), checked once and turned into baton_train_session_opts the same way
 * for both: a fixed interval given wins (--ckpt-every-steps, --ckpt-every-sec), then --ckpt-every
 * auto with --interrupt-rate, then what a fleet tells its tasks (BATON_CKPT_EVERY,
 * BATON_SPOT_MTBI_S, BATON_PROGRESS_FILE through baton_train_session_opts_env). */
#include "baton/train_session.h"
#include "cli.h"

#include <cJSON.h>
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
    c->term_grace = NAN;
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
                    : cli_given(argc, argv, "term-grace") && !(c->term_grace >= 0 && c->term_grace <= 86400)
                        ? "--term-grace must be 0..86400 seconds"
                    : cli_given(argc, argv, "deadline-margin") && !(so->deadline_margin_s >= 0 && so->deadline_margin_s <= 3600)
                        ? "--deadline-margin must be 0..3600 seconds"
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
    if (isfinite(c->term_grace)) {   /* the watcher's defaults, with this grace */
        baton_notice_opts_default(&c->nopts);
        c->nopts.sigterm_grace_s = c->term_grace;
        so->notice_opts = &c->nopts;
    }
    baton_err err = {0};
    if (baton_train_session_opts_env(so, steps || secs || c->every, &err)) return cli_fail(cmd, &err);
    return CLI_OK;
}

void cli_interruption_json(cJSON *parent, const baton_train_stop *st)
{
    if (!st->stopped) return;
    cJSON *j = cJSON_AddObjectToObject(parent, "interruption");
    if (!j) return;
    cJSON_AddStringToObject(j, "kind", st->kind);
    cJSON_AddStringToObject(j, "source", st->source);
    cJSON_AddNumberToObject(j, "notice_at", st->notice_at);
    if (st->deadline > 0) cJSON_AddNumberToObject(j, "deadline", st->deadline);
    else cJSON_AddNullToObject(j, "deadline");
    cJSON_AddNumberToObject(j, "step", (double)st->step);
    cJSON_AddNumberToObject(j, "commit_at", st->commit_at);
    cJSON_AddNumberToObject(j, "commit_s", st->commit_s);
    cJSON_AddStringToObject(j, "upload", st->upload == BATON_CKPT_UPLOAD_DONE   ? "done"
                                         : st->upload == BATON_CKPT_UPLOAD_LEFT ? "left to the next machine"
                                                                                : "none");
    if (st->upload == BATON_CKPT_UPLOAD_DONE) cJSON_AddNumberToObject(j, "upload_at", st->upload_at);
    if (st->upload != BATON_CKPT_UPLOAD_NONE) {
        cJSON_AddNumberToObject(j, "upload_s", st->upload_s);
        if (st->upload_est_s >= 0) cJSON_AddNumberToObject(j, "upload_estimate_s", st->upload_est_s);
    }
    if (st->upload == BATON_CKPT_UPLOAD_LEFT) cJSON_AddStringToObject(j, "upload_left_why", st->upload_why);
    cJSON_AddNumberToObject(j, "exit_at", st->exit_at);
    if (st->deadline > 0) cJSON_AddNumberToObject(j, "margin_s", st->margin_s);
}

void cli_interruption_print(FILE *f, const baton_train_stop *st)
{
    if (!st->stopped) return;
    char t[32], up[64] = "", dl[48] = "deadline unknown";
    baton_notice_time_format(st->notice_at, t);
    if (st->upload == BATON_CKPT_UPLOAD_DONE) snprintf(up, sizeof up, "uploaded at +%.2f s", st->upload_at - st->notice_at);
    else baton_train_stop_upload_text(st, up, sizeof up);
    if (st->deadline > 0) snprintf(dl, sizeof dl, "deadline +%.1f s", st->deadline - st->notice_at);
    fprintf(f, "interruption: %s notice at %s, %s, step %llu committed at +%.2f s, %s, exit at +%.2f s", st->kind, t, dl,
            (unsigned long long)st->step, st->commit_at - st->notice_at, up, st->exit_at - st->notice_at);
    if (st->deadline > 0) fprintf(f, ", margin %.1f s", st->margin_s);
    fprintf(f, "\n");
}
