/* fleet_slurm.c — the Slurm fleet backend: each task of a job file is one requeueable batch job
 * whose working folder is the task's volume (a folder on a file system every node sees).
 *
 * Owns: the job-file checks for Slurm, the batch script, submission (sbatch), status (scontrol
 * show job + the volume's run log + its newest checkpoint) and cancel (scancel), and the record
 * JOB_DIR/slurm/jobs.json. The batch script is the whole interruption protocol on Slurm (see
 * fleet_backend.h): forward TERM/USR1 to the command's process group, log the run, requeue itself
 * after a notice it was not killed for and after a crash while retries last.
 *
 * Contract: errors are values naming the job file and field, or the Slurm command that failed
 * with what it printed. Programs are run without a shell (rmt_run). */
#include "baton/ckpt.h"
#include "baton/fleet_backend.h"
#include "remote_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SLURM_WORD "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:=+-/[]"

/* ------------------------------------------------------------------ checks */
static int market_is_default(const baton_job *j)
{
    return j->market.time_scale == 1 && j->market.seed == 0 && j->market.launch_delay == 90 &&
           j->market.notice == 120 && j->market.hazard_scale == 1 && j->market.capacity_cooldown == 3600 &&
           j->market.ninterrupts == 0;
}

static int word_opt(const baton_job *job, const char *key, char *dst, size_t cap, const char *set, baton_err *err)
{
    int line;
    const char *v = rmt_opt(job, key, &line);
    if (!v) return BATON_OK;
    if (!rmt_only(v, set) || strlen(v) >= cap)
        return rmt_fail(err, job, line, key, "'%.64s' is not a valid value (letters, digits and %s only, at most %zu)",
                        v, strchr(set, '[') ? "_.,:=+-/[]" : "the usual punctuation", cap - 1);
    snprintf(dst, cap, "%s", v);
    return BATON_OK;
}

int baton_slurm_check(const baton_job *job, baton_slurm_opts *o, baton_err *err)
{
    static const char *const known[] = {"partition", "account", "qos", "time", "mem", "gres", "constraint",
                                        "cpus_per_task", "ntasks_per_node", "signal_before", "volumes", "sbatch_args.",
                                        NULL};
    memset(o, 0, sizeof *o);
    o->signal_before = 120;
    if (job->nzones)
        return rmt_fail(err, job, 0, "zones",
                        "the slurm backend has no zones: Slurm places each job on one of its nodes. Remove "
                        "'zones:' (choose nodes with slurm.partition or slurm.constraint), or use backend aws");
    if (job->ntypes)
        return rmt_fail(err, job, job->types[0].line, "instance_types",
                        "the slurm backend runs on the cluster's own nodes, not on instance types. Remove "
                        "'instance_types:' and ask for resources with slurm.cpus_per_task, slurm.mem, slurm.gres "
                        "or slurm.constraint");
    if (job->alloc_line)
        return rmt_fail(err, job, job->alloc_line, "allocation_strategy",
                        "the slurm backend has no instance pools to choose from (Slurm's scheduler decides); "
                        "remove it");
    if (!market_is_default(job))
        return rmt_fail(err, job, 0, "market",
                        "the slurm backend has no spot market to simulate; remove 'market:' (on Slurm, "
                        "interruptions are preemption, `scontrol requeue` and the time limit)");
    int rc = rmt_check_section(job, "slurm.", known, err);
    if (!rc) rc = word_opt(job, "slurm.partition", o->partition, sizeof o->partition, SLURM_WORD, err);
    if (!rc) rc = word_opt(job, "slurm.account", o->account, sizeof o->account, SLURM_WORD, err);
    if (!rc) rc = word_opt(job, "slurm.qos", o->qos, sizeof o->qos, SLURM_WORD, err);
    if (!rc) rc = word_opt(job, "slurm.time", o->time, sizeof o->time, "0123456789:-", err);
    if (!rc) rc = word_opt(job, "slurm.mem", o->mem, sizeof o->mem, "0123456789KMGTkmgt", err);
    if (!rc) rc = word_opt(job, "slurm.gres", o->gres, sizeof o->gres, SLURM_WORD, err);
    if (!rc) rc = word_opt(job, "slurm.constraint", o->constraint, sizeof o->constraint, SLURM_WORD "&|()*!", err);
    if (rc) return rc;
    int line;
    const char *v = rmt_opt(job, "slurm.cpus_per_task", &line);
    if (v) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || *end || x < 1 || x > 100000)
            return rmt_fail(err, job, line, "slurm.cpus_per_task", "expected a whole number of CPUs >= 1, got '%.32s'", v);
        o->cpus_per_task = (int)x;
    }
    v = rmt_opt(job, "slurm.ntasks_per_node", &line);
    if (v) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || *end || x < 1 || x > 4096)
            return rmt_fail(err, job, line, "slurm.ntasks_per_node", "expected a whole number of ranks >= 1, got '%.32s'", v);
        if (!job->nodes.max)
            return rmt_fail(err, job, line, "slurm.ntasks_per_node",
                            "ranks per node need 'nodes:' (a task over several ranks); without it a task is one process");
        o->ntasks_per_node = (int)x;
    }
    v = rmt_opt(job, "slurm.signal_before", &line);
    if (v && (fleet_duration_parse(v, &o->signal_before) || o->signal_before < 1 || o->signal_before > 65535))
        return rmt_fail(err, job, line, "slurm.signal_before",
                        "expected a duration from 1s to 65535s (how long before the time limit the job gets "
                        "USR1 to checkpoint), got '%.32s'", v);
    v = rmt_opt(job, "slurm.volumes", &line);
    if (v) {
        if (!*v || strlen(v) >= sizeof o->volumes || strpbrk(v, " \t\n\r%\\"))
            return rmt_fail(err, job, line, "slurm.volumes",
                            "expected a folder path without spaces, '%%' or '\\' (it goes into #SBATCH lines)");
        snprintf(o->volumes, sizeof o->volumes, "%s", v);
    }
    for (size_t i = 0; i < job->nbackend_opts; i++) {
        const baton_job_kv *kv = &job->backend_opts[i];
        if (strncmp(kv->key, "slurm.sbatch_args.", 18)) continue;
        if (o->nsbatch_args == BATON_SLURM_MAX_ARGS)
            return rmt_fail(err, job, kv->line, kv->key, "at most %d extra sbatch arguments", BATON_SLURM_MAX_ARGS);
        if (strncmp(kv->value, "--", 2) || strpbrk(kv->value, " \t\n\r"))
            return rmt_fail(err, job, kv->line, kv->key,
                            "expected one long sbatch option without spaces (e.g. --exclusive or --nice=10), got '%.64s'",
                            kv->value);
        static const char *const ours[] = {"--requeue", "--no-requeue", "--signal", "--output", "--error",
                                           "--open-mode", "--chdir", "--job-name", "--array", "--dependency", NULL};
        for (const char *const *p = ours; *p; p++) {
            size_t l = strlen(*p);
            if (!strncmp(kv->value, *p, l) && (kv->value[l] == 0 || kv->value[l] == '='))
                return rmt_fail(err, job, kv->line, kv->key,
                                "%s is set by baton (the requeue, signal, log and volume handling depend on it)", *p);
        }
        o->sbatch_args[o->nsbatch_args++] = kv->value;
    }
    for (size_t i = 0; i < job->nenv; i++) {
        const char *k = job->env[i].key;
        if (!strncmp(k, "env.", 4)) k += 4;
        if (!rmt_only(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") || (*k >= '0' && *k <= '9'))
            return rmt_fail(err, job, job->env[i].line, job->env[i].key, "not a valid environment variable name");
    }
    return BATON_OK;
}

/* ------------------------------------------------------------------ the batch script */
static const char *env_name(const baton_job_kv *kv)
{
    return strncmp(kv->key, "env.", 4) ? kv->key : kv->key + 4;
}

/* The #SBATCH lines: the name, log, requeue and signal baton depends on, then the user's. */
static int sbatch_lines(const baton_job *job, const baton_slurm_opts *o, size_t task, const char *volume, baton_buf *b)
{
    int rc = 0;
    rc |= rmt_printf(b, "#!/bin/bash\n# baton fleet, slurm backend: job %s, task %zu of %zu. Written by `baton fleet run`,\n"
                        "# which overwrites it; `sbatch` this file to resubmit the task by hand. See docs/slurm.md.\n",
                     job->name, task, job->ncommands);
    rc |= rmt_printf(b, "#SBATCH --job-name=baton-%s-%zu\n", job->name,
                     job->target_capacity < (int)job->ncommands ? task % (size_t)job->target_capacity : task);
    rc |= rmt_printf(b, "#SBATCH --output=%s/logs/slurm-%%j.log\n#SBATCH --open-mode=append\n", volume);
    rc |= rmt_printf(b, "#SBATCH --chdir=%s\n#SBATCH --requeue\n#SBATCH --signal=B:USR1@%.0f\n", volume, o->signal_before);
    if (!job->nodes.max) rc |= rmt_printf(b, "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n");
    else if (job->nodes.min == job->nodes.max) rc |= rmt_printf(b, "#SBATCH --nodes=%d\n", job->nodes.max);
    else rc |= rmt_printf(b, "#SBATCH --nodes=%d-%d\n", job->nodes.min, job->nodes.max);
    if (job->nodes.max) rc |= rmt_printf(b, "#SBATCH --ntasks-per-node=%d\n", o->ntasks_per_node ? o->ntasks_per_node : 1);
    /* fewer instances than tasks: task k shares the name of slot k % capacity, and singleton
     * runs one job of a name at a time */
    if (job->target_capacity < (int)job->ncommands) rc |= rmt_printf(b, "#SBATCH --dependency=singleton\n");
    if (o->partition[0]) rc |= rmt_printf(b, "#SBATCH --partition=%s\n", o->partition);
    if (o->account[0]) rc |= rmt_printf(b, "#SBATCH --account=%s\n", o->account);
    if (o->qos[0]) rc |= rmt_printf(b, "#SBATCH --qos=%s\n", o->qos);
    if (o->time[0]) rc |= rmt_printf(b, "#SBATCH --time=%s\n", o->time);
    if (o->mem[0]) rc |= rmt_printf(b, "#SBATCH --mem=%s\n", o->mem);
    if (o->gres[0]) rc |= rmt_printf(b, "#SBATCH --gres=%s\n", o->gres);
    if (o->constraint[0]) rc |= rmt_printf(b, "#SBATCH --constraint=%s\n", o->constraint);
    if (o->cpus_per_task) rc |= rmt_printf(b, "#SBATCH --cpus-per-task=%d\n", o->cpus_per_task);
    for (size_t i = 0; i < o->nsbatch_args; i++) rc |= rmt_printf(b, "#SBATCH %s\n", o->sbatch_args[i]);
    return rc;
}

/* The task's environment: BATON_* for the task and its volume, PATH with bindir, the job's env. */
static int task_env(const baton_job *job, const baton_slurm_opts *o, size_t task, const char *volume, const char *bindir,
                    baton_buf *b)
{
    int rc = 0;
    rc |= rmt_printf(b, "set -u\nexport BATON_JOB=%s BATON_TASK=%zu BATON_VOLUME=", job->name, task);
    rc |= rmt_shq(b, volume);
    rc |= rmt_printf(b, "\nexport BATON_INSTANCE_ID=\"slurm-$SLURM_JOB_ID\" BATON_INSTANCE_TYPE=\"slurm:${SLURM_JOB_PARTITION:-default}\""
                        " BATON_ZONE=\"${SLURMD_NODENAME:-}\"\nexport BATON_PROGRESS_FILE=\"$BATON_VOLUME/.baton/progress\"\n");
    /* the signal comes signal_before seconds ahead of the time limit: that is a TERM notice's deadline */
    rc |= rmt_printf(b, "export BATON_TERM_GRACE_S=\"${BATON_TERM_GRACE_S:-%.0f}\"\n", o->signal_before);
    if (bindir && *bindir) {
        rc |= rmt_printf(b, "export PATH=");
        rc |= rmt_shq(b, bindir);
        rc |= rmt_printf(b, ":\"$PATH\"\n");
    }
    for (size_t i = 0; i < job->nenv; i++) {
        rc |= rmt_printf(b, "export %s=", env_name(&job->env[i]));
        rc |= rmt_shq(b, job->env[i].value);
        rc |= rmt_printf(b, "\n");
    }
    return rc;
}

/* retries= and command= (with nodes: every rank of the allocation through srun). */
static int task_command(const baton_job *job, size_t task, baton_buf *b)
{
    int rc = 0;
    rc |= rmt_printf(b, "retries=%d\ncommand=", job->retries);
    if (job->nodes.max) {
        /* nodes: the command is every rank of the allocation (srun starts one per task slot, Open
         * MPI wires them up over PMIx; a rank that fails ends the step) */
        baton_buf ranks = {0};
        int r2 = rmt_printf(&ranks, "srun --mpi=pmix --kill-on-bad-exit=1 /bin/sh -c ");
        r2 |= rmt_shq(&ranks, job->commands[task]);
        r2 |= rmt_printf(&ranks, "%c", 0);
        rc |= r2 ? r2 : rmt_shq(b, (const char *)ranks.data);
        baton_buf_free(&ranks);
    } else {
        rc |= rmt_shq(b, job->commands[task]);
    }
    return rc;
}

/* The script's body after command=: run it in its own process group, forward the signals as TERM,
 * log the run's outcome and requeue the job when it checkpointed, ran out of time or crashed within
 * its retries. */
static const char script_body[] =
"runlog=\"$BATON_VOLUME/logs/slurm-runs.log\"\n"
"mkdir -p \"$BATON_VOLUME/logs\" \"$BATON_VOLUME/.baton\"\n"
"stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }\n"
"restart=${SLURM_RESTART_COUNT:-0}\n"
"echo \"start job=$SLURM_JOB_ID task=$BATON_TASK restart=$restart node=$(hostname) time=$(stamp)\" >>\"$runlog\"\n"
"echo \"baton: job $SLURM_JOB_ID task $BATON_TASK run $((restart + 1)) on $(hostname) at $(stamp)\"\n"
"\n"
"# The command runs in its own process group; TERM (requeue, preemption, scancel, the end of the\n"
"# time limit) and USR1 (--signal, before the time limit) reach all of it as TERM, which baton's\n"
"# watcher turns into a checkpoint and exit 75.\n"
"child='' cause=''\n"
"forward() { cause=$1; [ -n \"$child\" ] && kill -TERM -- \"-$child\" 2>/dev/null; }\n"
"trap 'forward term' TERM\n"
"trap 'forward int' INT\n"
"trap 'forward usr1' USR1\n"
"# The shell in between ignores TERM while the command runs (a handler, so the command itself\n"
"# starts with TERM's default) and so exits with the command's status.\n"
"set -m\n"
"/bin/sh -c 'trap : TERM INT; eval \"$1\"' baton-task \"$command\" &\n"
"child=$!\n"
"set +m\n"
"[ -n \"$cause\" ] && kill -TERM -- \"-$child\" 2>/dev/null\n"
"while :; do\n"
"    wait \"$child\"; rc=$?\n"
"    kill -0 \"$child\" 2>/dev/null || break\n"
"done\n"
"# a signal that interrupted the last wait hides the status: bash keeps it for another wait\n"
"if [ -n \"$cause\" ] && [ \"$rc\" -gt 128 ]; then\n"
"    wait \"$child\"; r=$?\n"
"    [ \"$r\" -ge 0 ] && [ \"$r\" -ne 127 ] && rc=$r\n"
"fi\n"
"\n"
"case \"$rc:$cause\" in\n"
"0:*) outcome=done ;;\n"
"*:term|*:int) outcome=stopped ;;   # Slurm requeues what it preempted or requeued; a cancel stays\n"
"" BATON_EXIT_STOPPED_STR ":*) outcome=notice ;;\n"
"*:usr1) outcome=timelimit ;;\n"
"*) outcome=crash ;;\n"
"esac\n"
"echo \"end job=$SLURM_JOB_ID task=$BATON_TASK restart=$restart rc=$rc outcome=$outcome signal=${cause:-none} time=$(stamp)\" >>\"$runlog\"\n"
"echo \"baton: job $SLURM_JOB_ID task $BATON_TASK: exit $rc ($outcome) at $(stamp)\"\n"
"requeue=0\n"
"case $outcome in\n"
"notice|timelimit) requeue=1 ;;   # checkpointed (or out of time): continue later from the volume\n"
"crash)\n"
"    crashes=$(awk '/^submit /{n=0} / outcome=crash /{n++} END{print n+0}' \"$runlog\")\n"
"    if [ \"$crashes\" -le \"$retries\" ]; then requeue=1\n"
"    else echo \"baton: task $BATON_TASK failed: $crashes crashes, $retries retries allowed\"; fi ;;\n"
"esac\n"
"if [ $requeue = 1 ]; then\n"
"    echo \"baton: requeueing job $SLURM_JOB_ID\"\n"
"    # requeueing signals every process of the job, scontrol included: it ignores TERM\n"
"    ( trap '' TERM; exec scontrol requeue \"$SLURM_JOB_ID\" ) || echo \"baton: scontrol requeue $SLURM_JOB_ID failed\"\n"
"fi\n"
"exit $rc\n";

int fleet_slurm_script(const baton_job *job, const baton_slurm_opts *o, size_t task, const char *volume,
                       const char *bindir, baton_buf *b, baton_err *err)
{
    if (task >= job->ncommands) return baton_err_set(err, BATON_ERR_ARG, "task %zu: the job has %zu", task, job->ncommands);
    if (strpbrk(volume, " \t\n\r%\\") || volume[0] != '/')
        return baton_err_set(err, BATON_ERR_ARG,
                             "%s: a task volume for Slurm must be an absolute path without spaces, '%%' or '\\' "
                             "(it goes into #SBATCH lines)", volume);
    int rc = sbatch_lines(job, o, task, volume, b);
    rc |= task_env(job, o, task, volume, bindir, b);
    rc |= task_command(job, task, b);
    rc |= rmt_printf(b, "\n%s", script_body);
    if (rc) return baton_err_set(err, BATON_ERR_NOMEM, "batch script: out of memory");
    return BATON_OK;
}

/* ------------------------------------------------------------------ state folder */
static int abs_dir(const char *path, char *out, size_t cap, baton_err *err)
{
    int rc = baton_mkdir_p(path, err);
    if (rc) return rc;
    char *r = realpath(path, NULL);
    if (!r) return baton_err_set(err, BATON_ERR_IO, "%s: %s", path, strerror(errno));
    if (strlen(r) >= cap) {
        free(r);
        return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", path);
    }
    snprintf(out, cap, "%s", r);
    free(r);
    return BATON_OK;
}

int baton_slurm_present(const char *job_dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/slurm/jobs.json", job_dir);
    return access(p, F_OK) == 0;
}

static int append_line(const char *path, const char *line, baton_err *err)
{
    FILE *f = fopen(path, "a");
    if (!f) return baton_err_set(err, BATON_ERR_IO, "%s: %s", path, strerror(errno));
    fputs(line, f);
    int bad = ferror(f);
    if (fclose(f) || bad) return baton_err_set(err, BATON_ERR_IO, "%s: write failed", path);
    return BATON_OK;
}

static void utc_stamp(char *out, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A new volume: the folder, a marker naming its job and task, the seed copied in once. An
 * existing one must carry this job's marker. */
static int prepare_volume(const baton_job *job, size_t task, const char *vol, baton_err *err)
{
    char marker[4200], want[256], logs[4200];
    snprintf(marker, sizeof marker, "%s/.baton-volume", vol);
    snprintf(want, sizeof want, "job=%s task=%zu\n", job->name, task);
    uint8_t *have = NULL;
    size_t hn;
    if (access(marker, F_OK) == 0) {
        int rc = baton_file_read_all(marker, 4096, &have, &hn, err);
        if (rc) return rc;
        int same = hn == strlen(want) && !memcmp(have, want, hn);
        free(have);
        if (!same)
            return baton_err_set(err, BATON_ERR_ARG,
                                 "%s belongs to another job or task (its .baton-volume does not say '%.*s'); "
                                 "choose another job_dir or slurm.volumes", vol, (int)strlen(want) - 1, want);
    } else {
        int rc = baton_mkdir_p(vol, err);
        if (rc) return rc;
        if (job->volume.seed[0]) {
            char src[1100];
            snprintf(src, sizeof src, "%s/.", job->volume.seed);
            const char *argv[] = {"cp", "-a", src, vol, NULL};
            baton_buf eo = {0};
            int st;
            rc = rmt_run(argv, NULL, &eo, &st, err);
            if (!rc && st)
                rc = baton_err_set(err, BATON_ERR_IO, "volume.seed: copying %s into %s failed: %.300s",
                                   job->volume.seed, vol, eo.data ? (char *)eo.data : "");
            baton_buf_free(&eo);
            if (rc) return rc;
        }
        rc = baton_file_write_atomic(marker, want, strlen(want), err);
        if (rc) return rc;
    }
    snprintf(logs, sizeof logs, "%s/logs", vol);
    return baton_mkdir_p(logs, err);
}

static int write_record(const char *path, const baton_job *job, const baton_slurm_task *t, size_t n,
                        baton_err *err)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    char when[32];
    utc_stamp(when, sizeof when);
    cJSON_AddStringToObject(root, "job", job->name);
    cJSON_AddStringToObject(root, "backend", "slurm");
    cJSON_AddStringToObject(root, "submitted", when);
    cJSON_AddStringToObject(root, "checkpoints", job->volume.checkpoints);
    cJSON_AddItemToObject(root, "tasks", arr);
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "task", (double)t[i].task);
        cJSON_AddStringToObject(o, "job_id", t[i].job_id);
        cJSON_AddStringToObject(o, "volume", t[i].volume);
        cJSON_AddItemToArray(arr, o);
    }
    char *s = baton_json_print(root, 1);
    cJSON_Delete(root);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    int rc = rmt_write_file(path, s, strlen(s), 0644, err);
    free(s);
    return rc;
}

typedef struct record {
    char checkpoints[256];
    baton_slurm_task *t;
    size_t n;
} record;

static int read_record(const char *job_dir, record *r, baton_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/slurm/jobs.json", job_dir);
    memset(r, 0, sizeof *r);
    uint8_t *p;
    size_t len;
    int rc = baton_file_read_all(path, 16u << 20, &p, &len, err);
    if (rc) return rc;
    cJSON *root = baton_jr_value((const char *)p, len);
    free(p);
    cJSON *tasks = root ? cJSON_GetObjectItem(root, "tasks") : NULL;
    cJSON *ck = root ? cJSON_GetObjectItem(root, "checkpoints") : NULL;
    if (!cJSON_IsArray(tasks) || !cJSON_IsString(ck)) {
        cJSON_Delete(root);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a baton Slurm record (no tasks/checkpoints)", path);
    }
    snprintf(r->checkpoints, sizeof r->checkpoints, "%s", ck->valuestring);
    int n = cJSON_GetArraySize(tasks);
    r->t = calloc(n ? (size_t)n : 1, sizeof *r->t);
    if (!r->t) {
        cJSON_Delete(root);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    }
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_GetArrayItem(tasks, i);
        cJSON *task = cJSON_GetObjectItem(o, "task"), *id = cJSON_GetObjectItem(o, "job_id"),
              *vol = cJSON_GetObjectItem(o, "volume");
        if (!cJSON_IsNumber(task) || !cJSON_IsString(id) || !cJSON_IsString(vol) ||
            !rmt_only(id->valuestring, "0123456789_")) {
            free(r->t);
            cJSON_Delete(root);
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: tasks[%d]: needs task, job_id (digits) and volume", path, i);
        }
        baton_slurm_task *t = &r->t[i];
        t->task = (size_t)task->valuedouble;
        snprintf(t->job_id, sizeof t->job_id, "%s", id->valuestring);
        snprintf(t->volume, sizeof t->volume, "%s", vol->valuestring);
        t->last_rc = -1;
        t->ckpt_step = -1;
    }
    r->n = (size_t)n;
    cJSON_Delete(root);
    return BATON_OK;
}

/* ------------------------------------------------------------------ Slurm's view */
int baton_slurm_state_final(const char *s)
{
    static const char *const fin[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL",
                                      "DEADLINE", "NODE_FAIL", "SPECIAL_EXIT", "REVOKED", "GONE", NULL};
    for (const char *const *p = fin; *p; p++)
        if (!strcmp(s, *p)) return 1;
    return 0;
}

/* The value of " Key=" in a `scontrol show job -o` line, up to the next space. */
static void field(const char *line, const char *key, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    out[0] = 0;
    if (!p) return;
    p += strlen(pat);
    size_t n = strcspn(p, " \n");
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

void fleet_slurm_parse_show(const char *line, baton_slurm_task *t)
{
    char v[64];
    field(line, "JobState", t->state, sizeof t->state);
    field(line, "Reason", t->reason, sizeof t->reason);
    field(line, "BatchHost", t->node, sizeof t->node);
    field(line, "Restarts", v, sizeof v);
    long r = strtol(v, NULL, 10);
    t->restarts = r < 0 ? 0 : r > 1000000 ? 1000000 : (int)r;
    if (!rmt_only(t->state, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_")) snprintf(t->state, sizeof t->state, "UNKNOWN");
}

static int query_job(baton_slurm_task *t, baton_err *err)
{
    const char *argv[] = {"scontrol", "show", "job", "-o", t->job_id, NULL};
    baton_buf out = {0}, eo = {0};
    int st, rc = rmt_run(argv, &out, &eo, &st, err);
    if (!rc && st) {
        if (eo.data && strstr((char *)eo.data, "Invalid job id")) {
            snprintf(t->state, sizeof t->state, "GONE");
        } else {
            rc = baton_err_set(err, BATON_ERR_NET, "scontrol show job %s: exit %d: %.300s", t->job_id, st,
                               eo.data ? (char *)eo.data : "");
        }
    } else if (!rc) {
        fleet_slurm_parse_show(out.data ? (const char *)out.data : "", t);
    }
    baton_buf_free(&out);
    baton_buf_free(&eo);
    return rc;
}

void fleet_slurm_parse_runlog(const char *text, size_t n, baton_slurm_task *t)
{
    t->runs = t->notices = t->crashes = t->stops = 0;
    t->last_rc = -1;
    char line[1024];
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && text[e] != '\n') e++;
        size_t l = e - i < sizeof line - 1 ? e - i : sizeof line - 1;
        memcpy(line, text + i, l);
        line[l] = 0;
        i = e + 1;
        if (strlen(line) != l) continue;   /* a NUL inside: not a line of ours */
        if (!strncmp(line, "submit ", 7)) {
            t->runs = t->notices = t->crashes = t->stops = 0;
            t->last_rc = -1;
        } else if (!strncmp(line, "start ", 6)) {
            t->runs++;
        } else if (!strncmp(line, "end ", 4)) {
            char v[32];
            field(line, "rc", v, sizeof v);
            long rc = strtol(v, NULL, 10);
            t->last_rc = rc < 0 || rc > 255 ? 255 : (int)rc;
            field(line, "outcome", v, sizeof v);
            if (t->last_rc == BATON_EXIT_STOPPED) t->notices++;   /* stopped after a committed checkpoint */
            else if (!strcmp(v, "crash")) t->crashes++;
            else if (strcmp(v, "done")) t->stops++; /* stopped without one (killed, time limit) */
        }
    }
}

/* Count the runs since the last submission in the volume's run log. */
static void read_runlog(baton_slurm_task *t)
{
    char path[1200];
    uint8_t *p;
    size_t n;
    baton_err e = {0};
    snprintf(path, sizeof path, "%s/logs/slurm-runs.log", t->volume);
    if (baton_file_read_all(path, 16u << 20, &p, &n, &e)) return;
    fleet_slurm_parse_runlog((const char *)p, n, t);
    free(p);
}

static void newest_ckpt(baton_slurm_task *t, const char *checkpoints)
{
    char dir[1400], path[4096];
    uint64_t step;
    baton_err e = {0};
    if (!baton_path_join(dir, sizeof dir, t->volume, checkpoints, NULL) && baton_is_dir(dir) && baton_ckpt_latest(dir, path, sizeof path, &step, &e) == BATON_OK)
        t->ckpt_step = (int64_t)step;
}

int baton_slurm_status(const char *job_dir, baton_slurm_task **tasks, size_t *n, baton_err *err)
{
    record r;
    int rc = read_record(job_dir, &r, err);
    if (rc) return rc;
    for (size_t i = 0; i < r.n && !rc; i++) {
        rc = query_job(&r.t[i], err);
        read_runlog(&r.t[i]);
        newest_ckpt(&r.t[i], r.checkpoints);
    }
    if (rc) {
        free(r.t);
        return rc;
    }
    *tasks = r.t;
    *n = r.n;
    return BATON_OK;
}

int baton_slurm_cancel(const char *job_dir, baton_err *err)
{
    baton_slurm_task *t;
    size_t n;
    int rc = baton_slurm_status(job_dir, &t, &n, err);
    if (rc) return rc;
    const char *argv[2 + 256 + 1] = {"scancel"};
    size_t k = 1;
    for (size_t i = 0; i < n && k < 257; i++)
        if (!baton_slurm_state_final(t[i].state)) argv[k++] = t[i].job_id;
    argv[k] = NULL;
    if (k > 1) {
        baton_buf eo = {0};
        int st;
        rc = rmt_run(argv, NULL, &eo, &st, err);
        if (!rc && st)
            rc = baton_err_set(err, BATON_ERR_NET, "scancel: exit %d: %.300s", st, eo.data ? (char *)eo.data : "");
        baton_buf_free(&eo);
    }
    free(t);
    return rc;
}

/* ------------------------------------------------------------------ submission */
static int sbatch(const char *script, char *id, size_t cap, baton_err *err)
{
    const char *argv[] = {"sbatch", "--parsable", script, NULL};
    baton_buf out = {0}, eo = {0};
    int st, rc = rmt_run(argv, &out, &eo, &st, err);
    if (!rc && st)
        rc = baton_err_set(err, BATON_ERR_NET, "sbatch %s: exit %d: %.400s", script, st, eo.data ? (char *)eo.data : "");
    if (!rc) {
        const char *s = out.data ? (const char *)out.data : "";
        size_t l = strspn(s, "0123456789_");
        if (l == 0 || l >= cap) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "sbatch %s: expected a job id, got '%.100s'", script, s);
        } else {
            memcpy(id, s, l);
            id[l] = 0;
        }
    }
    baton_buf_free(&out);
    baton_buf_free(&eo);
    return rc;
}

int baton_slurm_submit(const baton_job *job, const baton_slurm_opts *o, const char *job_dir,
                       const char *bindir, baton_slurm_task **tasks, size_t *ntasks, baton_err *err)
{
    char state[2048], vols[960], rec[4096];
    int rc = abs_dir(job_dir, state, sizeof state, err);
    if (rc) return rc;
    if (baton_slurm_present(state)) {
        baton_slurm_task *old;
        size_t on;
        rc = baton_slurm_status(state, &old, &on, err);
        if (rc) return baton_err_prefix(err, "%s holds an earlier submission", state);
        char live[512] = "";
        for (size_t i = 0; i < on; i++) {
            if (baton_slurm_state_final(old[i].state)) continue;
            size_t l = strlen(live);
            snprintf(live + l, sizeof live - l, "%s%s (%s)", l ? ", " : "", old[i].job_id, old[i].state);
        }
        free(old);
        if (live[0])
            return baton_err_set(err, BATON_ERR_ARG,
                                 "%s: job %s still has jobs in the Slurm queue: %s; see `baton fleet status`, or "
                                 "`baton fleet cancel` them first", state, job->name, live);
    }
    if (o->volumes[0]) rc = abs_dir(o->volumes, vols, sizeof vols, err);
    else {
        snprintf(rec, sizeof rec, "%s/volumes", state);
        rc = abs_dir(rec, vols, sizeof vols, err);
    }
    if (rc) return rc;
    baton_slurm_task *t = calloc(job->ncommands, sizeof *t);
    if (!t) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    snprintf(rec, sizeof rec, "%s/slurm/jobs.json", state);
    char when[32], line[128];
    utc_stamp(when, sizeof when);
    size_t done = 0;
    for (size_t i = 0; i < job->ncommands && !rc; i++) {
        char script[4096], logp[1200];
        baton_buf b = {0};
        t[i].task = i;
        t[i].last_rc = -1;
        t[i].ckpt_step = -1;
        snprintf(t[i].volume, sizeof t[i].volume, "%s/task-%zu", vols, i);
        snprintf(script, sizeof script, "%s/slurm/task-%zu.sbatch", state, i);
        snprintf(logp, sizeof logp, "%s/logs/slurm-runs.log", t[i].volume);
        snprintf(line, sizeof line, "submit time=%s tasks=%zu\n", when, job->ncommands);
        rc = prepare_volume(job, i, t[i].volume, err);
        if (!rc) rc = fleet_slurm_script(job, o, i, t[i].volume, bindir, &b, err);
        if (!rc) rc = rmt_write_file(script, b.data, b.len, 0755, err);
        baton_buf_free(&b);
        if (!rc) rc = append_line(logp, line, err);
        if (!rc) rc = sbatch(script, t[i].job_id, sizeof t[i].job_id, err);
        if (!rc) {
            snprintf(t[i].state, sizeof t[i].state, "PENDING");
            done = i + 1;
            rc = write_record(rec, job, t, done, err);
        }
    }
    if (rc) {
        if (done)
            baton_err_prefix(err, "tasks 0..%zu are queued (recorded in %s; `baton fleet cancel` removes them)",
                             done - 1, rec);
        free(t);
        return rc;
    }
    *tasks = t;
    *ntasks = job->ncommands;
    return BATON_OK;
}
