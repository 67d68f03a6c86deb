/* verify.c — `baton verify-resume`'s runner (fleet.h: baton_verify_resume): the command once
 * uninterrupted, then from scratch with interruptions at random steps, rerun after each until it
 * exits 0; verify_compare.c judges the two runs' event logs.
 *
 * Contract:
 *   - each process runs in its own process group, stdin from /dev/null, stdout and stderr to
 *     WORK/ref.out or WORK/run-K.out, with BATON_VERIFY_LOG=WORK/ref.jsonl or WORK/run-K.jsonl (one
 *     log per process: a process's log is one run from its resume point), and, when notices are
 *     among the kinds, AWS_EC2_METADATA_SERVICE_ENDPOINT naming a metadata emulator of its own (a
 *     fresh one per process, so a rerun does not see the last one's notice) and
 *     BATON_NOTICE_POLL_S=0.1 unless set; the uninterrupted run gets the same environment;
 *   - the checkpoint folder is emptied (its entries removed, the folder kept) before each of the
 *     two runs; the filesystem root, $HOME, the working directory and its parents are refused;
 *   - interruption points: distinct steps drawn (seeded) uniformly in 1..steps-1 of the
 *     uninterrupted run, sorted, kinds in the order given (but a notice drawn where the
 *     uninterrupted run had less than 5 polls of the watcher left trades places with the earliest
 *     other kind: a notice polled after the end tests nothing); one is delivered once the running
 *     process has reached its step and trained at least one step itself, or at once when it
 *     resumed at or past the step (an earlier process's late stop carried the run past it: after
 *     a first step, a process resumed one step before the end would finish first): SIGTERM,
 *     SIGINT or SIGKILL to the process group, or the emulator's notice;
 *   - an interruption the process goes on past (still running 1 s later, two steps further) is
 *     "ignored", and the next one is delivered to the same process; one that stops it is
 *     "stopped" whatever its exit status (a SIGTERM not handled ends it by signal: still a stop),
 *     and the command is run again; a process that exits non-zero with no interruption delivered,
 *     or runs past its time limit (3 × the uninterrupted run + 60 s by default), is a failure at
 *     the step it reached;
 *   - after its end every process's group gets SIGKILL (nothing of it lingers holding the folder's
 *     lock), and a process gets SIGKILL when the check itself ends first (PR_SET_PDEATHSIG: a
 *     Ctrl-C); the work folder is removed when the runs are identical and it was not given;
 *   - the runner wakes when a log is written (inotify on the work folder) or the process exits (its
 *     pidfd), never on a timer alone: an interruption reaches a trainer of 1 ms steps a step or so
 *     after its step is logged (a 5 ms nap instead where either is unavailable);
 *   - times: each process's start-up (its start to its first step done: the first loss or
 *     checkpoint logged after its first batch, or its second batch), its stop (the interruption
 *     that stopped it to its exit) and the steps it redid (reached by an earlier process: after a
 *     kill); the restarts (the stops, and the start-ups of the processes after the first less the
 *     uninterrupted run's mean step) are what the interruptions cost beyond training, and the
 *     budget is BATON_VERIFY_BUDGET × the uninterrupted run + the restarts. */
#include "verify_internal.h"
#include "fleet_parts.h"

#include "baton/notice.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define IGNORE_AFTER_S 1.0     /* an interruption not acted upon this long (and two steps on) is ignored: ten
                                  * polls of the notice watcher at 0.1 s, a signal at once */
#define NOTICE_ROOM_POLLS 5.0   /* polls of the notice watcher a notice's point leaves before the end */
#define STOP_GRACE_S 120.0     /* a process still running this long after a stop request is killed */

static const char *const kind_names[] = {"term", "kill", "notice", "int"};

const char *baton_verify_kind_name(int kind)
{
    for (int i = 0; i < 4; i++)
        if (kind == 1 << i) return kind_names[i];
    return "-";
}

int baton_verify_kinds_parse(const char *s, unsigned *kinds, baton_err *err)
{
    *kinds = 0;
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (int i = 0; i < 4; i++)
            if (strlen(kind_names[i]) == n && !strncmp(p, kind_names[i], n)) *kinds |= 1u << i, found = 1;
        if (!found)
            return baton_err_set(err, BATON_ERR_USAGE, "--kinds: '%.*s' is not one of term, kill, notice, int", (int)n, p);
        p += n;
        if (*p == ',') p++;
    }
    if (!*kinds) return baton_err_set(err, BATON_ERR_USAGE, "--kinds: expected term, kill, notice or int");
    return BATON_OK;
}

const char *baton_verify_cause_name(int cause)
{
    static const char *const names[] = {"identical", "samples", "loss", "weights", "optimizer", "failed",
                                        "ended early", "ran longer"};
    return cause >= 0 && cause <= BATON_VERIFY_LONGER ? names[cause] : "?";
}

void baton_verify_opts_default(baton_verify_opts *o)
{
    memset(o, 0, sizeof *o);
    o->interruptions = 4;
    o->kinds = BATON_VERIFY_ALL_KINDS;
    o->seed = 1;
}

/* ---------------------------------------------------------------- the checkpoint folder */
/* The folder may be emptied: not the root, $HOME, the working directory or one of its parents.
 * *exists: it is there (else the command makes it). */
static int check_dir(const char *dir, char real[PATH_MAX], int *exists, baton_err *err)
{
    char cwd[PATH_MAX], rhome[PATH_MAX];
    *exists = 0;
    if (!realpath(dir, real)) {
        if (errno == ENOENT) return BATON_OK;
        return baton_err_errno(err, errno, "cannot resolve", dir);
    }
    *exists = 1;
    const char *home = getenv("HOME");
    size_t rl = strlen(real);
    int bad = !strcmp(real, "/") || (home && realpath(home, rhome) && !strcmp(real, rhome));
    if (!bad && getcwd(cwd, sizeof cwd) && !strncmp(cwd, real, rl) && (cwd[rl] == '/' || cwd[rl] == 0)) bad = 1;
    if (bad)
        return baton_err_set(err, BATON_ERR_USAGE, "--ckpt-dir %s: refusing to empty it (it is %s)", dir,
                             !strcmp(real, "/") ? "the filesystem root" : "the home folder, or holds the working directory");
    if (!baton_is_dir(real)) return baton_err_set(err, BATON_ERR_USAGE, "--ckpt-dir %s: not a folder", dir);
    return BATON_OK;
}

static int empty_dir(const char *dir, baton_err *err)
{
    char real[PATH_MAX];
    int exists, rc = check_dir(dir, real, &exists, err);
    if (rc || !exists) return rc;
    if (baton_remove_tree(real) != 0) return baton_err_errno(err, errno, "cannot empty", dir);
    if (mkdir(real, 0755) != 0) return baton_err_errno(err, errno, "cannot recreate", dir);
    return BATON_OK;
}

/* ---------------------------------------------------------------- one process */
typedef struct proc {
    pid_t pid;
    baton_imds *imds;
    char log[4200], out[4200];
    int logfd;                  /* the log, read as it grows */
    int pidfd;                  /* readable when the process has exited (-1: polled instead) */
    char buf[8192];
    size_t blen;
    vseg seg;
    double t0;
    double t_step;              /* when its first step was seen under way (0: not yet) */
    double t_done;              /* when its first step was seen done (0: not yet) */
    int resumed;                /* its resume event seen */
} proc;

typedef struct vctx {
    const baton_verify_opts *o;
    baton_verify_report *r;
    char work[4096];
    double timeout_s;
    int ino;                    /* inotify on the work folder: a log written to (-1: polled instead) */
} vctx;

static void set_env(char **envp, size_t *k, const char *entry)
{
    size_t nl = strcspn(entry, "=");
    for (size_t i = 0; i < *k; i++)
        if (!strncmp(envp[i], entry, nl) && envp[i][nl] == '=') {
            envp[i] = (char *)entry;
            return;
        }
    envp[(*k)++] = (char *)entry;
}

static int proc_start(vctx *c, proc *p, const char *name, baton_err *err)
{
    memset(p, 0, sizeof *p);
    p->logfd = p->pidfd = -1;
    snprintf(p->log, sizeof p->log, "%s/%s.jsonl", c->work, name);
    snprintf(p->out, sizeof p->out, "%s/%s.out", c->work, name);
    unlink(p->log);
    int rc = BATON_OK;
    if (c->o->kinds & BATON_VERIFY_NOTICE) {
        baton_imds_opts io;
        baton_imds_opts_default(&io);
        if ((rc = baton_imds_start(&io, &p->imds, err))) return rc;
    }
    static char e_log[4300], e_imds[256];
    snprintf(e_log, sizeof e_log, "BATON_VERIFY_LOG=%s", p->log);
    if (p->imds) snprintf(e_imds, sizeof e_imds, "AWS_EC2_METADATA_SERVICE_ENDPOINT=%s", baton_imds_url(p->imds));
    size_t n = 0, k = 0;
    while (environ[n]) n++;
    char **envp = calloc(n + 4, sizeof *envp);
    int outfd = open(p->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!envp || outfd < 0 || nullfd < 0) {
        rc = !envp ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : baton_err_errno(err, errno, "cannot open", p->out);
        goto fail;
    }
    for (; k < n; k++) envp[k] = environ[k];
    set_env(envp, &k, e_log);
    if (p->imds) {
        set_env(envp, &k, e_imds);
        const char *poll = getenv("BATON_NOTICE_POLL_S");
        if (!poll || !*poll) set_env(envp, &k, "BATON_NOTICE_POLL_S=0.1");
    }
    envp[k] = NULL;
    p->t0 = baton_now();
    pid_t pid = fork();
    if (pid < 0) {
        rc = baton_err_errno(err, errno, "fork", c->o->argv[0]);
        goto fail;
    }
    if (pid == 0) {
        setpgid(0, 0);
        fleet_reset_signals();
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* the check stopped (Ctrl-C): its command with it */
        dup2(nullfd, 0);
        dup2(outfd, 1);
        dup2(outfd, 2);
        execvpe(c->o->argv[0], c->o->argv, envp);
        dprintf(2, "baton verify-resume: cannot run %s: %s\n", c->o->argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    p->pid = pid;
    p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);   /* a zombie's too: it is reaped only by our waitpid */
fail:
    free(envp);
    if (outfd >= 0) close(outfd);
    if (nullfd >= 0) close(nullfd);
    if (rc && p->imds) baton_imds_stop(p->imds), p->imds = NULL;
    return rc;
}

/* Read what the log gained since the last call; keeps p->seg (the current step) up to date. */
static void proc_read_log(proc *p)
{
    if (p->logfd < 0 && (p->logfd = open(p->log, O_RDONLY | O_CLOEXEC)) < 0) return;
    for (;;) {
        ssize_t n = read(p->logfd, p->buf + p->blen, sizeof p->buf - 1 - p->blen);
        if (n <= 0) return;
        p->blen += (size_t)n;
        size_t at = 0;
        for (;;) {
            char *nl = memchr(p->buf + at, '\n', p->blen - at);
            if (!nl) break;
            vevent e;
            if (verify_parse_line(p->buf + at, (size_t)(nl - p->buf - at), &e)) {
                verify_seg_step(&p->seg, &e);
                if (e.type == VEV_RESUME) p->resumed = 1;
                if (p->seg.progressed && !p->t_step) p->t_step = baton_now();
                int done = e.type == VEV_LOSS || e.type == VEV_CKPT || (e.type == VEV_BATCH && p->seg.k >= 2);
                if (p->t_step && !p->t_done && done) p->t_done = baton_now();
            }
            at = (size_t)(nl - p->buf) + 1;
        }
        memmove(p->buf, p->buf + at, p->blen - at);
        p->blen -= at;
        if (p->blen == sizeof p->buf - 1) p->blen = 0;   /* a line longer than any event: drop it */
    }
}

static void proc_end(proc *p)
{
    if (p->pid > 0) kill(-p->pid, SIGKILL);   /* anything of the group still there */
    if (p->logfd >= 0) close(p->logfd);
    if (p->pidfd >= 0) close(p->pidfd);
    if (p->imds) baton_imds_stop(p->imds);
    p->logfd = p->pidfd = -1, p->imds = NULL;
}

static void deliver(proc *p, int kind)
{
    switch (kind) {
    case BATON_VERIFY_TERM: kill(-p->pid, SIGTERM); break;
    case BATON_VERIFY_INT: kill(-p->pid, SIGINT); break;
    case BATON_VERIFY_KILL: kill(-p->pid, SIGKILL); break;
    case BATON_VERIFY_NOTICE: baton_imds_interrupt(p->imds, "terminate", 120); break;
    }
}

/* Until the log may have grown or the process may have ended (at most 50 ms: the time limits are
 * checked in between): woken by inotify and the pidfd, so an interruption is delivered within a
 * step of a fast trainer's; a 5 ms nap where either is missing. */
static void proc_wait(vctx *c, proc *p)
{
    if (c->ino < 0 || p->pidfd < 0) {
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
        return;
    }
    struct pollfd fds[2] = {{.fd = c->ino, .events = POLLIN}, {.fd = p->pidfd, .events = POLLIN}};
    if (poll(fds, 2, 50) > 0 && (fds[0].revents & POLLIN)) {
        char buf[4096];
        while (read(c->ino, buf, sizeof buf) > 0) {
        }
    }
}

/* Run one process to its end, delivering the interruptions from *next on (ints NULL: none).
 * Returns its exit code (128 + signal), or -1 when it ran past the time limit (killed). */
static int proc_run(vctx *c, proc *p, int runi, int *next, baton_verify_run *rec)
{
    baton_verify_report *r = c->r;
    int active = -1, st = 0, timed_out = 0;
    double t_sent = 0, t_kill = 0;
    uint64_t at_sent = 0;
    for (;;) {
        proc_read_log(p);
        pid_t w = waitpid(p->pid, &st, WNOHANG);
        if (w == p->pid) break;
        double now = baton_now();
        uint64_t cur = p->seg.last;
        int due = next && *next < r->nints && cur >= r->ints[*next].drawn &&
                  (p->seg.progressed || (p->resumed && p->seg.resume >= r->ints[*next].drawn));
        if (active < 0 && due) {
            active = *next;
            baton_verify_int *in = &r->ints[active];
            in->at = cur, in->run = runi;
            deliver(p, in->kind);
            t_sent = now, at_sent = cur;
            if (c->o->progress)
                fprintf(stderr, "verify-resume: run %d: %s at step %" PRIu64 " (drawn %" PRIu64 ")\n", runi + 1,
                        baton_verify_kind_name(in->kind), cur, in->drawn);
        } else if (active >= 0 && now - t_sent >= IGNORE_AFTER_S && cur >= at_sent + 2 &&
                   r->ints[active].kind != BATON_VERIFY_KILL) {
            r->ints[active].outcome = BATON_VERIFY_IGNORED;
            if (c->o->progress)
                fprintf(stderr, "verify-resume: run %d: the %s was ignored (still training at step %" PRIu64 ")\n", runi + 1,
                        baton_verify_kind_name(r->ints[active].kind), cur);
            active = -1;
            ++*next;
        } else if (active >= 0 && now - t_sent > STOP_GRACE_S && !t_kill) {
            kill(-p->pid, SIGKILL);   /* asked to stop, and did not: as a kill */
            t_kill = now;
        }
        if (!timed_out && now - p->t0 > c->timeout_s) {
            kill(-p->pid, SIGKILL);
            timed_out = 1;
        }
        proc_wait(c, p);
    }
    proc_read_log(p);
    double t_end = baton_now();
    rec->seconds = t_end - p->t0;
    rec->startup_s = (p->t_done ? p->t_done : t_end) - p->t0;
    rec->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
    rec->resumed_from = p->seg.resume;
    rec->last_step = p->seg.last;
    if (active >= 0) {
        r->ints[active].outcome = rec->exit_code == 0 ? BATON_VERIFY_FINISHED : BATON_VERIFY_STOPPED;
        if (rec->exit_code != 0) rec->stop_s = t_end - t_sent;
        ++*next;
    }
    proc_end(p);
    return timed_out ? -1 : rec->exit_code;
}

/* ---------------------------------------------------------------- the check */
/* n distinct steps in 1..steps-1, sorted, kinds in turn. */
static void draw_points(const baton_verify_opts *o, uint64_t steps, baton_verify_report *r)
{
    int n = o->interruptions;
    if (n > BATON_VERIFY_MAX_INTS) n = BATON_VERIFY_MAX_INTS;
    if (steps < 2) n = 0;
    else if ((uint64_t)n > steps - 1) n = (int)(steps - 1);
    baton_rng rng;
    baton_rng_seed(&rng, o->seed);
    uint64_t pts[BATON_VERIFY_MAX_INTS];
    for (int i = 0; i < n; i++) {
        uint64_t x;
        int dup;
        do {
            x = 1 + baton_rng_below(&rng, steps - 1);
            dup = 0;
            for (int j = 0; j < i; j++) dup |= pts[j] == x;
        } while (dup);
        pts[i] = x;
    }
    for (int i = 1; i < n; i++)   /* insertion sort: a handful */
        for (int j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
            uint64_t t = pts[j];
            pts[j] = pts[j - 1], pts[j - 1] = t;
        }
    int kinds[4], nk = 0;
    for (int i = 0; i < 4; i++)
        if (o->kinds & (1u << i)) kinds[nk++] = 1 << i;
    for (int i = 0; i < n; i++)
        r->ints[i] = (baton_verify_int){kinds[i % nk], pts[i], 0, -1, BATON_VERIFY_UNREACHED};
    r->nints = n;
    /* a notice is acted on at the watcher's next poll: one drawn where the uninterrupted run had
     * less than NOTICE_ROOM_POLLS polls left trades kinds with the earliest other kind before it */
    baton_notice_opts no;   /* the child's watcher reads the variable so; unset, proc_start sets 0.1 */
    baton_notice_opts_default(&no);
    const char *e = getenv("BATON_NOTICE_POLL_S");
    double poll = e && *e && no.poll_s > 0 ? no.poll_s : 0.1;
    for (int i = n - 1; i > 0; i--) {
        if (r->ints[i].kind != BATON_VERIFY_NOTICE || (double)(steps - pts[i]) * r->step_s >= NOTICE_ROOM_POLLS * poll)
            continue;
        for (int j = 0; j < i; j++)
            if (r->ints[j].kind != BATON_VERIFY_NOTICE) {
                r->ints[i].kind = r->ints[j].kind;
                r->ints[j].kind = BATON_VERIFY_NOTICE;
                break;
            }
    }
}

static int make_work(vctx *c, int *made, baton_err *err)
{
    *made = 0;
    if (c->o->work_dir) {
        snprintf(c->work, sizeof c->work, "%s", c->o->work_dir);
        return baton_mkdir_p(c->work, err);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(c->work, sizeof c->work, "%s/baton-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(c->work)) return baton_err_errno(err, errno, "cannot create", c->work);
    *made = 1;
    return BATON_OK;
}

/* The uninterrupted run: its time, its log loaded. */
static int run_reference(vctx *c, vref **ref, baton_err *err)
{
    baton_verify_report *r = c->r;
    proc p;
    int rc = empty_dir(c->o->ckpt_dir, err);
    if (!rc) rc = proc_start(c, &p, "ref", err);
    if (rc) return rc;
    double limit = c->timeout_s;
    c->timeout_s = c->o->run_timeout_s > 0 ? c->o->run_timeout_s : 86400;
    int code = proc_run(c, &p, -1, NULL, &r->ref);
    c->timeout_s = limit;
    r->ref_s = r->ref.seconds;
    if (code != 0)
        return baton_err_set(err, BATON_ERR_ARG, "the uninterrupted run %s (exit %d; its output: %s)",
                             code < 0 ? "ran past its time limit" : code > 128 ? "was killed by a signal" : "failed",
                             r->ref.exit_code, p.out);
    if ((rc = verify_ref_load(p.log, ref, err))) return rc;
    r->steps = verify_ref_steps(*ref);
    if (r->steps == 0)
        return baton_err_set(err, BATON_ERR_ARG, "the command logged no steps to $BATON_VERIFY_LOG (%s): run a baton "
                             "trainer (baton train, baton race train, a script using baton.Loader or baton.log_step)", p.log);
    if (c->o->progress)
        fprintf(stderr, "verify-resume: uninterrupted: %" PRIu64 " steps in %.2f s\n", r->steps, r->ref_s);
    return BATON_OK;
}

/* The interrupted runs, rerun until one exits 0; *failed_step and what set on a failure. */
static int run_interrupted(vctx *c, char **logs, uint64_t *failed_step, char *what, size_t cap, baton_err *err)
{
    baton_verify_report *r = c->r;
    int rc = empty_dir(c->o->ckpt_dir, err), next = 0;
    double t0 = baton_now();
    uint64_t reached = 0;   /* the furthest step an earlier process got to */
    *failed_step = 0;
    for (r->nruns = 0; !rc && r->nruns < BATON_VERIFY_MAX_RUNS;) {
        char name[32];
        snprintf(name, sizeof name, "run-%d", r->nruns + 1);
        proc p;
        if ((rc = proc_start(c, &p, name, err))) break;
        baton_verify_run *rec = &r->runs[r->nruns];
        int before = next;
        int code = proc_run(c, &p, r->nruns, &next, rec);
        if (!(logs[r->nruns] = strdup(p.log))) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        r->nruns++;
        if (reached > rec->resumed_from)
            rec->redone = (rec->last_step < reached ? rec->last_step : reached) - rec->resumed_from;
        if (rec->last_step > reached) reached = rec->last_step;
        if (r->nruns > 1) r->restarts_s += rec->startup_s > r->step_s ? rec->startup_s - r->step_s : 0;
        r->restarts_s += rec->stop_s;
        if (c->o->progress)
            fprintf(stderr, "verify-resume: run %d: from step %" PRIu64 " to %" PRIu64 ", exit %d, %.2f s\n", r->nruns,
                    rec->resumed_from, rec->last_step, rec->exit_code, rec->seconds);
        if (rc || code == 0) break;
        int stopped = next > before && r->ints[next - 1].outcome == BATON_VERIFY_STOPPED;
        if (code < 0 || !stopped) {   /* where the runs stopped getting further */
            for (int i = 0; i < r->nruns; i++)
                if (r->runs[i].last_step + 1 > *failed_step) *failed_step = r->runs[i].last_step + 1;
            snprintf(what, cap, "run %d (from step %" PRIu64 ") %s at step %" PRIu64 " (its output: %.600s)", r->nruns,
                     rec->resumed_from, code < 0 ? "ran past its time limit" : "failed", rec->last_step, p.out);
            if (code > 0) {
                size_t l = strlen(what);
                snprintf(what + l, cap - l, "; exit %d", code);
            }
            break;
        }
    }
    r->interrupted_s = baton_now() - t0;
    return rc;
}

int baton_verify_resume(const baton_verify_opts *o, baton_verify_report *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (!o->argv || !o->argv[0]) return baton_err_set(err, BATON_ERR_USAGE, "no command given (after --)");
    if (!o->ckpt_dir || !*o->ckpt_dir) return baton_err_set(err, BATON_ERR_USAGE, "--ckpt-dir is required");
    if (o->interruptions < 1 || o->interruptions > BATON_VERIFY_MAX_INTS)
        return baton_err_set(err, BATON_ERR_USAGE, "--interruptions must be 1..%d", BATON_VERIFY_MAX_INTS);
    if (!(o->kinds & BATON_VERIFY_ALL_KINDS)) return baton_err_set(err, BATON_ERR_USAGE, "--kinds: none given");
    double t0 = baton_now();
    vctx c = {.o = o, .r = r, .ino = -1};
    char real[PATH_MAX];
    int made = 0, exists;
    int rc = check_dir(o->ckpt_dir, real, &exists, err);
    if (!rc) rc = make_work(&c, &made, err);
    if (rc) return rc;
    snprintf(r->work_dir, sizeof r->work_dir, "%s", c.work);
    if ((c.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) >= 0 && inotify_add_watch(c.ino, c.work, IN_MODIFY | IN_CREATE) < 0) {
        close(c.ino);
        c.ino = -1;
    }
    vref *ref = NULL;
    char *logs[BATON_VERIFY_MAX_RUNS] = {0};
    rc = run_reference(&c, &ref, err);
    if (!rc) {
        r->step_s = r->steps > 1 ? (r->ref.seconds - r->ref.startup_s) / (double)(r->steps - 1) : 0;
        draw_points(o, r->steps, r);
        c.timeout_s = o->run_timeout_s > 0 ? o->run_timeout_s : 3 * r->ref_s + 60;
        uint64_t failed_step;
        char what[1024];
        rc = run_interrupted(&c, logs, &failed_step, what, sizeof what, err);
        if (!rc) rc = verify_compare(ref, logs, r->nruns, failed_step, what, r, err);
    }
    verify_ref_free(ref);
    if (c.ino >= 0) close(c.ino);
    for (int i = 0; i < BATON_VERIFY_MAX_RUNS; i++) free(logs[i]);
    r->total_s = baton_now() - t0;
    r->budget_s = BATON_VERIFY_BUDGET * r->ref_s + r->restarts_s;
    r->kept = !made || rc || r->cause != BATON_VERIFY_IDENTICAL;
    if (!r->kept) baton_remove_tree(c.work);
    return rc;
}

/* ---------------------------------------------------------------- the report */
static const char *outcome_name(int o)
{
    static const char *const names[] = {"stopped", "ignored", "finished first", "not reached"};
    return o >= 0 && o <= BATON_VERIFY_UNREACHED ? names[o] : "?";
}

void baton_verify_report_print(FILE *f, const baton_verify_report *r)
{
    if (r->cause == BATON_VERIFY_IDENTICAL)
        fprintf(f, "identical: %" PRIu64 " steps; %" PRIu64 " batches, %" PRIu64 " losses, %" PRIu64
                   " checkpoints compared\n", r->steps, r->batches, r->losses, r->ckpts);
    else
        fprintf(f, "different at step %" PRIu64 ": %s: %s\n", r->step, baton_verify_cause_name(r->cause), r->what);
    fprintf(f, "%-5s %-17s %-8s %-8s %-8s %-8s %-5s %8s %8s %8s %6s\n", "run", "interruption", "drawn", "at", "from", "to",
            "exit", "seconds", "start-up", "stop", "redone");
    fprintf(f, "%-5s %-17s %-8s %-8s %-8d %-8" PRIu64 " %-5d %8.2f %8.2f %8s %6s\n", "ref", "-", "-", "-", 0,
            r->ref.last_step, r->ref.exit_code, r->ref.seconds, r->ref.startup_s, "-", "-");
    for (int i = 0; i < r->nruns; i++) {
        const baton_verify_run *u = &r->runs[i];
        int shown = 0;
        for (int k = 0; k < r->nints; k++) {
            const baton_verify_int *in = &r->ints[k];
            if (in->run != i) continue;
            char kind[32];
            snprintf(kind, sizeof kind, "%s%s", baton_verify_kind_name(in->kind),
                     in->outcome == BATON_VERIFY_STOPPED ? "" : in->outcome == BATON_VERIFY_IGNORED ? " (ignored)" : " (finished)");
            if (!shown)
                fprintf(f, "%-5d %-17s %-8" PRIu64 " %-8" PRIu64 " %-8" PRIu64 " %-8" PRIu64 " %-5d %8.2f %8.2f %8.2f %6" PRIu64 "\n",
                        i + 1, kind, in->drawn, in->at, u->resumed_from, u->last_step, u->exit_code, u->seconds,
                        u->startup_s, u->stop_s, u->redone);
            else
                fprintf(f, "%-5s %-17s %-8" PRIu64 " %-8" PRIu64 "\n", "", kind, in->drawn, in->at);
            shown = 1;
        }
        if (!shown)
            fprintf(f, "%-5d %-17s %-8s %-8s %-8" PRIu64 " %-8" PRIu64 " %-5d %8.2f %8.2f %8s %6" PRIu64 "\n", i + 1, "-", "-",
                    "-", u->resumed_from, u->last_step, u->exit_code, u->seconds, u->startup_s, "-", u->redone);
    }
    for (int k = 0; k < r->nints; k++)
        if (r->ints[k].run < 0)
            fprintf(f, "      %-17s %-8" PRIu64 " not reached (the runs ended first)\n", baton_verify_kind_name(r->ints[k].kind),
                    r->ints[k].drawn);
    fprintf(f, "time: uninterrupted %.2f s; interrupted %.2f s in %d runs; the whole check %.2f s (%.2f× the "
               "uninterrupted run; its own work beside the runs %.2f s)\n", r->ref_s, r->interrupted_s, r->nruns, r->total_s,
            r->ref_s > 0 ? r->total_s / r->ref_s : 0, r->total_s - r->ref_s - r->interrupted_s);
    fprintf(f, "budget: %.1f× the uninterrupted run + the restarts (%d: their stops and start-ups less a step each, "
               "%.2f s) = %.2f s; the check took %.2f s (%.0f %%): %s\n", BATON_VERIFY_BUDGET, r->nruns > 0 ? r->nruns - 1 : 0,
            r->restarts_s, r->budget_s, r->total_s, r->budget_s > 0 ? 100 * r->total_s / r->budget_s : 0,
            r->total_s <= r->budget_s ? "within" : "over");
    if (r->kept) fprintf(f, "logs: %s\n", r->work_dir);
}

char *baton_verify_report_json(const baton_verify_report *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "identical", r->cause == BATON_VERIFY_IDENTICAL);
    cJSON_AddStringToObject(j, "cause", baton_verify_cause_name(r->cause));
    if (r->cause != BATON_VERIFY_IDENTICAL) {
        cJSON_AddNumberToObject(j, "step", (double)r->step);
        cJSON_AddStringToObject(j, "what", r->what);
    }
    cJSON_AddNumberToObject(j, "steps", (double)r->steps);
    cJSON *cmp = cJSON_AddObjectToObject(j, "compared");
    cJSON_AddNumberToObject(cmp, "batches", (double)r->batches);
    cJSON_AddNumberToObject(cmp, "losses", (double)r->losses);
    cJSON_AddNumberToObject(cmp, "checkpoints", (double)r->ckpts);
    cJSON *runs = cJSON_AddArrayToObject(j, "runs");
    for (int i = -1; i < r->nruns; i++) {
        const baton_verify_run *u = i < 0 ? &r->ref : &r->runs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "run", i < 0 ? "uninterrupted" : "interrupted");
        cJSON_AddNumberToObject(o, "resumed_from", (double)u->resumed_from);
        cJSON_AddNumberToObject(o, "last_step", (double)u->last_step);
        cJSON_AddNumberToObject(o, "exit", u->exit_code);
        cJSON_AddNumberToObject(o, "seconds", u->seconds);
        cJSON_AddNumberToObject(o, "startup", u->startup_s);
        if (i >= 0) {
            cJSON_AddNumberToObject(o, "stop", u->stop_s);
            cJSON_AddNumberToObject(o, "redone", (double)u->redone);
        }
        cJSON_AddItemToArray(runs, o);
    }
    cJSON *ints = cJSON_AddArrayToObject(j, "interruptions");
    for (int k = 0; k < r->nints; k++) {
        const baton_verify_int *in = &r->ints[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kind", baton_verify_kind_name(in->kind));
        cJSON_AddNumberToObject(o, "drawn", (double)in->drawn);
        if (in->run >= 0) {
            cJSON_AddNumberToObject(o, "at", (double)in->at);
            cJSON_AddNumberToObject(o, "run", in->run + 1);
        }
        cJSON_AddStringToObject(o, "outcome", outcome_name(in->outcome));
        cJSON_AddItemToArray(ints, o);
    }
    cJSON *t = cJSON_AddObjectToObject(j, "seconds");
    cJSON_AddNumberToObject(t, "uninterrupted", r->ref_s);
    cJSON_AddNumberToObject(t, "interrupted", r->interrupted_s);
    cJSON_AddNumberToObject(t, "total", r->total_s);
    cJSON_AddNumberToObject(t, "ratio", r->ref_s > 0 ? r->total_s / r->ref_s : 0);
    cJSON_AddNumberToObject(t, "own", r->total_s - r->ref_s - r->interrupted_s);
    cJSON_AddNumberToObject(t, "step", r->step_s);
    cJSON_AddNumberToObject(t, "restarts", r->restarts_s);
    cJSON_AddNumberToObject(t, "budget", r->budget_s);
    cJSON_AddBoolToObject(t, "within_budget", r->total_s <= r->budget_s);
    if (r->kept) cJSON_AddStringToObject(j, "logs", r->work_dir);
    char *s = baton_json_print(j, 0);
    cJSON_Delete(j);
    return s;
}
