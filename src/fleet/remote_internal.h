/* remote_internal.h — pieces shared by the fleet backends that hand instances to someone else
 * (Slurm, AWS): running a program and capturing what it prints, shell quoting, base64,
 * and checking a backend section of the job file; and the backends' own steps that only they and
 * their tests call (the Slurm batch script and status parsers, the AWS user data and resource
 * names). Not a public API (src/fleet/ and its tests only). */
#ifndef BATON_SPOT_REMOTE_INTERNAL_H
#define BATON_SPOT_REMOTE_INTERNAL_H

#include "baton/fleet_backend.h"
#include "baton/util.h"
#include "fleet_parts.h"

/* Run argv[0] (looked up on PATH) with argv, stdin from /dev/null, and capture stdout into out
 * and stderr into errout (either may be NULL: discarded; each capped at 8 MiB). *status gets
 * the exit status, or 128 + signal. Returns BATON_OK when the program ran (whatever its status),
 * BATON_ERR_NOTFOUND when it could not be started (the message names it and says how to get
 * it), BATON_ERR_IO otherwise. */
int rmt_run(const char *const *argv, baton_buf *out, baton_buf *errout, int *status, baton_err *err);

/* Append s to b as one shell word: unchanged when it holds only safe characters, else in single
 * quotes (a ' inside becomes '\''). */
int rmt_shq(baton_buf *b, const char *s);
/* Append printf-style text. */
int rmt_printf(baton_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* NUL-terminate b's text without counting the NUL (b->data is then a C string). */
int rmt_cstr(baton_buf *b);

/* Standard base64 (RFC 4648, with padding) of n bytes into b. */
int rmt_base64(baton_buf *b, const uint8_t *p, size_t n);

/* The keys of the job's `<prefix>` section (prefix "slurm." or "aws.") must each start with one
 * of the known names (a known name "x" admits "x" and, when it ends in '.', "x<anything>").
 * An unknown key fails as "FILE:LINE: KEY: unknown field (known here: ...)". */
int rmt_check_section(const baton_job *job, const char *prefix, const char *const *known, baton_err *err);
/* A section option's value, or NULL when absent. */
const char *rmt_opt(const baton_job *job, const char *key, int *line);
/* Fail with BATON_ERR_ARG and "FILE:LINE: FIELD: message" (":LINE" omitted when line is 0). */
int rmt_fail(baton_err *err, const baton_job *job, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Is s made only of characters from set (and non-empty)? */
int rmt_only(const char *s, const char *set);

/* Write text to path crash-safely, creating the parent folder; mode applied after (e.g. 0755). */
int rmt_write_file(const char *path, const void *p, size_t n, unsigned mode, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * The backends' own steps, called only inside src/fleet and by the backends' tests and fuzz
 * targets; what a caller uses is in include/baton/fleet_backend.h.
 * --------------------------------------------------------------------------------------------- */
/* Slurm (fleet_slurm.c) */
/* The batch script for one task. volume: the task's volume (absolute); bindir: prepended to
 * PATH (the folder of the baton binary; NULL: none). */
int fleet_slurm_script(const baton_job *job, const baton_slurm_opts *o, size_t task, const char *volume,
                       const char *bindir, baton_buf *out, baton_err *err);
/* The parsers behind status (exposed for tests and fuzzing): one `scontrol show job -o` line into
 * state, reason, node, restarts (a state that is not an upper-case word becomes UNKNOWN); the
 * volume's logs/slurm-runs.log (n bytes, any content) into runs, notices, crashes, stops, last_rc
 * counted since its last "submit" line. */
void fleet_slurm_parse_show(const char *line, baton_slurm_task *t);
void fleet_slurm_parse_runlog(const char *text, size_t n, baton_slurm_task *t);

/* AWS (aws_userdata.c, fleet_aws.c) */
#define BATON_AWS_USERDATA_MAX 16384   /* EC2's limit on user data before base64 */

/* The user-data script of one task (bash; at most BATON_AWS_USERDATA_MAX bytes). */
int fleet_aws_userdata(const baton_job *job, const baton_aws_opts *o, size_t task, baton_buf *out,
                       baton_err *err);

/* The names everything is created under. */
typedef struct baton_aws_names {
    char fleet_role[160], instance_role[160], policy[160], profile[160];   /* fleet_role: spot-fleet only */
} baton_aws_names;
void fleet_aws_names_of(const baton_job *job, const baton_aws_opts *o, baton_aws_names *nm);

#endif
