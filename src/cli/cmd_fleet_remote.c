/* cmd_fleet_remote.c — `baton fleet run|status|cancel` for the backends beyond one machine:
 * slurm (each task a requeueable batch job) and aws (Spot Fleet artefacts, --dry-run / --apply).
 * cmd_fleet.c hands over here when cli_fleet_remote_backend says the arguments are for one of
 * them: --backend, else the job file's `backend:`, else (status, cancel) what the job's folder
 * STATE/JOB holds (slurm/jobs.json, aws/fleet-requests.json). Thin: the work is in
 * src/fleet/fleet_slurm.c and fleet_aws.c.
 *
 *   baton fleet run JOBFILE [--backend slurm] [--state DIR] [--wait [--timeout SEC]] [--json]
 *   baton fleet run JOBFILE [--backend aws] [--out DIR] [--account ID] [--dry-run | --apply]
 *   baton fleet status JOB|JOBFILE [--state DIR | --out DIR] [--wait] [--json]
 *   baton fleet cancel JOB|JOBFILE [--state DIR | --out DIR]
 * The job's folder is STATE/JOB (STATE: --state, the job file's state_dir, else ./baton-fleet);
 * the aws artefacts go to STATE/JOB/aws unless --out says otherwise. */
#include "baton/fleet.h"
#include "baton/fleet_backend.h"
#include "cli.h"

#include <cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct fopts {
    const char *backend, *state, *out, *account, *region;
    int wait, json, dry_run, apply;
    double timeout, poll;
    const char *pos[1];
    int npos;
} fopts;

static int parse(const char *cmd, int argc, char **argv, fopts *f)
{
    memset(f, 0, sizeof *f);
    f->poll = 2;
    const struct cli_opt opts[] = {
        {"backend", CLI_STR, &f->backend, "local | slurm | aws (default: the job file's backend)"},
        {"state", CLI_STR, &f->state, "state folder (default: the job file's state_dir, else ./baton-fleet)"},
        {"out", CLI_STR, &f->out, "aws: folder for the generated artefacts (default STATE/aws)"},
        {"account", CLI_STR, &f->account, "aws: the 12-digit account id the roles live in"},
        {"region", CLI_STR, &f->region, "aws status/cancel: the region (default: from the artefacts)"},
        {"dry-run", CLI_FLAG, &f->dry_run, "aws: write the artefacts and print the aws commands (default)"},
        {"apply", CLI_FLAG, &f->apply, "aws: run the aws commands (needs credentials)"},
        {"wait", CLI_FLAG, &f->wait, "slurm run/status: wait until every task has finished"},
        {"timeout", CLI_DBL, &f->timeout, "with --wait: give up after SEC seconds (0: never)"},
        {"poll", CLI_DBL, &f->poll, "with --wait: seconds between looks at the queue (default 2)"},
        {"json", CLI_FLAG, &f->json, "status as JSON"},
        {NULL, 0, NULL, NULL},
    };
    int help;
    return cli_parse(cmd, "run JOBFILE | status [JOBFILE] | cancel [JOBFILE]  (slurm and aws backends)", opts, argc,
                     argv, f->pos, 1, &f->npos, &help);
}

static const char *state_of(const fopts *f, const baton_job *job)
{
    if (f->state) return f->state;
    if (job && job->state_dir[0]) return job->state_dir;
    return "baton-fleet";
}

static int backend_from_name(const char *s, baton_backend *b)
{
    if (!strcmp(s, "local")) *b = BATON_BACKEND_LOCAL;
    else if (!strcmp(s, "slurm")) *b = BATON_BACKEND_SLURM;
    else if (!strcmp(s, "aws")) *b = BATON_BACKEND_AWS;
    else return -1;
    return 0;
}

/* ------------------------------------------------------------------ slurm */
static void print_slurm(const baton_slurm_task *t, size_t n, int json)
{
    if (json) {
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "task", (double)t[i].task);
            cJSON_AddStringToObject(o, "job_id", t[i].job_id);
            cJSON_AddStringToObject(o, "state", t[i].state);
            cJSON_AddStringToObject(o, "reason", t[i].reason);
            cJSON_AddStringToObject(o, "node", t[i].node);
            cJSON_AddNumberToObject(o, "restarts", t[i].restarts);
            cJSON_AddNumberToObject(o, "runs", t[i].runs);
            cJSON_AddNumberToObject(o, "notices", t[i].notices);
            cJSON_AddNumberToObject(o, "crashes", t[i].crashes);
            cJSON_AddNumberToObject(o, "stops", t[i].stops);
            cJSON_AddNumberToObject(o, "last_exit", t[i].last_rc);
            cJSON_AddNumberToObject(o, "checkpoint_step", (double)t[i].ckpt_step);
            cJSON_AddStringToObject(o, "volume", t[i].volume);
            cJSON_AddItemToArray(arr, o);
        }
        char *s = cJSON_PrintUnformatted(arr);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(arr);
        return;
    }
    printf("%-5s %-10s %-11s %-12s %8s %5s %7s %7s %9s %10s  %s\n", "task", "job", "state", "reason", "restarts",
           "runs", "notices", "crashes", "last exit", "checkpoint", "volume");
    for (size_t i = 0; i < n; i++) {
        char rcs[16] = "-", ck[24] = "-";
        if (t[i].last_rc >= 0) snprintf(rcs, sizeof rcs, "%d", t[i].last_rc);
        if (t[i].ckpt_step >= 0) snprintf(ck, sizeof ck, "%" PRId64, t[i].ckpt_step);
        printf("%-5zu %-10s %-11s %-12s %8d %5d %7d %7d %9s %10s  %s\n", t[i].task, t[i].job_id, t[i].state,
               t[i].reason[0] && strcmp(t[i].reason, "None") ? t[i].reason : "-", t[i].restarts, t[i].runs,
               t[i].notices, t[i].crashes, rcs, ck, t[i].volume);
    }
}

static int slurm_wait(const char *state, const fopts *f)
{
    baton_err err = {0};
    time_t t0 = time(NULL);
    char last[256][48];
    memset(last, 0, sizeof last);
    for (;;) {
        baton_slurm_task *t;
        size_t n, open_n = 0;
        if (baton_slurm_status(state, &t, &n, &err)) return cli_fail("fleet status", &err);
        for (size_t i = 0; i < n; i++) {
            char now[48];
            snprintf(now, sizeof now, "%s/%d", t[i].state, t[i].restarts);
            if (i < 256 && strcmp(now, last[i])) {
                fprintf(stderr, "baton fleet: task %zu: job %s %s%s%s (restarts %d, checkpoint %" PRId64 ")\n",
                        t[i].task, t[i].job_id, t[i].state, t[i].node[0] ? " on " : "", t[i].node, t[i].restarts,
                        t[i].ckpt_step);
                snprintf(last[i], sizeof last[i], "%s", now);
            }
            open_n += !baton_slurm_state_final(t[i].state);
        }
        if (!open_n) {
            int bad = 0;
            print_slurm(t, n, f->json);
            for (size_t i = 0; i < n; i++) bad += strcmp(t[i].state, "COMPLETED") != 0 &&
                                                 !(strcmp(t[i].state, "GONE") == 0 && t[i].last_rc == 0);
            free(t);
            if (bad) {
                fprintf(stderr, "baton fleet: %d of %zu task(s) did not complete (see the table and each volume's logs/)\n",
                        bad, n);
                return CLI_ERROR;
            }
            return CLI_OK;
        }
        free(t);
        if (f->timeout > 0 && difftime(time(NULL), t0) > f->timeout) {
            fprintf(stderr, "baton fleet: %zu task(s) still queued or running after %.0f s (they go on; "
                            "`baton fleet status` follows them)\n", open_n, f->timeout);
            return CLI_ERROR;
        }
        usleep((useconds_t)(f->poll * 1e6));
    }
}

static void self_dir(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = 0;
    if (l <= 0) return;
    exe[l] = 0;
    baton_path_dirname(exe, out, cap);
}

static int slurm_run(baton_job *job, const fopts *f)
{
    baton_slurm_opts o;
    baton_err err = {0};
    if (baton_slurm_check(job, &o, &err)) return cli_fail("fleet", &err);
    char bindir[PATH_MAX];
    self_dir(bindir, sizeof bindir);
    baton_slurm_task *t;
    size_t n;
    char state[4096];
    if (baton_fleet_job_dir(state_of(f, job), job->name, state, sizeof state, &err) ||
        baton_slurm_submit(job, &o, state, bindir, &t, &n, &err))
        return cli_fail("fleet", &err);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "baton fleet: task %zu submitted as Slurm job %s (volume %s)\n", t[i].task, t[i].job_id,
                t[i].volume);
    free(t);
    if (!f->wait) {
        fprintf(stderr, "baton fleet: `baton fleet status %s%s%s` follows the jobs\n", job->path,
                f->state ? " --state " : "", f->state ? f->state : "");
        return CLI_OK;
    }
    return slurm_wait(state, f);
}

/* ------------------------------------------------------------------ aws */
static void aws_out_dir(const fopts *f, const char *jobdir, char *out, size_t cap)
{
    if (f->out) snprintf(out, cap, "%s", f->out);
    else snprintf(out, cap, "%s/aws", jobdir);
}

static int aws_run(baton_job *job, const fopts *f)
{
    baton_aws_opts o;
    baton_err err = {0};
    if (f->apply && f->dry_run) {
        fprintf(stderr, "baton fleet: --dry-run and --apply exclude each other\n");
        return CLI_USAGE;
    }
    if (baton_aws_check(job, &o, &err)) return cli_fail("fleet", &err);
    if (f->account) {
        if (strlen(f->account) != 12 || strspn(f->account, "0123456789") != 12) {
            fprintf(stderr, "baton fleet: --account: expected a 12-digit AWS account id, got '%s'\n", f->account);
            return CLI_USAGE;
        }
        snprintf(o.account_id, sizeof o.account_id, "%s", f->account);
    }
    if (!o.account_id[0]) {
        if (!f->apply) {
            fprintf(stderr, "baton fleet: %s: aws.account_id: needed to name the roles in the fleet request; set it "
                            "(12 digits: `aws sts get-caller-identity` shows it), pass --account, or use --apply, "
                            "which asks AWS\n", job->path);
            return CLI_ERROR;
        }
        if (baton_aws_account(o.account_id, sizeof o.account_id, &err)) return cli_fail("fleet", &err);
    }
    char out[4200], jobdir[4096];
    if (baton_fleet_job_dir(state_of(f, job), job->name, jobdir, sizeof jobdir, &err)) return cli_fail("fleet", &err);
    aws_out_dir(f, jobdir, out, sizeof out);
    baton_aws_cmd *cmds;
    size_t n;
    if (baton_aws_generate(job, &o, out, &cmds, &n, &err)) return cli_fail("fleet", &err);
    fprintf(stderr, "baton fleet: artefacts in %s (spot_fleet_config, user data, IAM documents, commands.sh)\n", out);
    int rc = CLI_OK;
    if (f->apply) {
        if (baton_aws_apply(cmds, n, out, stderr, &err)) rc = cli_fail("fleet", &err);
    } else {
        baton_buf b = {0};
        for (size_t i = 0; i < n; i++) {
            b.len = 0;
            if (baton_aws_cmd_line(&cmds[i], &b) == BATON_OK) printf("%.*s\n", (int)b.len, (const char *)b.data);
        }
        baton_buf_free(&b);
        fprintf(stderr, "baton fleet: dry run: nothing was sent to AWS; run these commands, or again with --apply\n");
    }
    baton_aws_cmds_free(cmds, n);
    return rc;
}

/* ------------------------------------------------------------------ dispatch */
static int is_value_opt(const char *a)
{
    static const char *const v[] = {"--backend", "--state", "--out", "--account", "--region", "--timeout", "--poll",
                                    "--time-scale", "--seed", "--hazard-scale", "--interrupts", "--svg", "--imds",
                                    "--events", NULL};
    for (const char *const *p = v; *p; p++)
        if (!strcmp(a, *p)) return 1;
    return 0;
}

static int is_file(const char *p)
{
    return access(p, R_OK) == 0 && !baton_is_dir(p);
}

/* What the job's folder holds: slurm, aws, or neither (local). */
static baton_backend present_in(const char *state, const char *name)
{
    char dir[4096], aws[4200];
    baton_err err = {0};
    if (baton_fleet_job_dir(state, name, dir, sizeof dir, &err)) return BATON_BACKEND_LOCAL;
    snprintf(aws, sizeof aws, "%s/aws/fleet-requests.json", dir);
    if (baton_slurm_present(dir)) return BATON_BACKEND_SLURM;
    if (access(aws, F_OK) == 0) return BATON_BACKEND_AWS;
    return BATON_BACKEND_LOCAL;
}

int cli_fleet_remote_backend(int argc, char **argv)
{
    const char *state = NULL, *pos = NULL;
    baton_backend b;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--backend") && i + 1 < argc) return backend_from_name(argv[i + 1], &b) ? BATON_BACKEND_LOCAL : (int)b;
        if (!strncmp(a, "--backend=", 10)) return backend_from_name(a + 10, &b) ? BATON_BACKEND_LOCAL : (int)b;
        if (!strcmp(a, "--state") && i + 1 < argc) state = argv[i + 1];
        else if (!strncmp(a, "--state=", 8)) state = a + 8;
        if (is_value_opt(a) || (!strcmp(a, "--wait") && i + 1 < argc && strspn(argv[i + 1], "0123456789.") == strlen(argv[i + 1])))
            i++;
        else if (a[0] != '-' && !pos)
            pos = a;
    }
    if (!pos) return BATON_BACKEND_LOCAL;
    if (is_file(pos)) {
        baton_job job;
        baton_err err = {0};
        if (baton_job_load(pos, &job, &err)) return BATON_BACKEND_LOCAL;   /* the local path reports it */
        b = job.backend;
        if (b == BATON_BACKEND_LOCAL && strcmp(argv[0], "run"))
            b = present_in(state ? state : job.state_dir[0] ? job.state_dir : "baton-fleet", job.name);
        baton_job_free(&job);
        return (int)b;
    }
    return strcmp(argv[0], "run") ? (int)present_in(state ? state : "baton-fleet", pos) : BATON_BACKEND_LOCAL;
}

/* argv[0] is the subcommand (run, status, cancel). */
int cli_fleet_remote(int argc, char **argv)
{
    fopts f;
    const char *sub = argv[0];
    char cmd[32];
    snprintf(cmd, sizeof cmd, "fleet %s", sub);
    int rc = parse(cmd, argc, argv, &f);
    if (rc) return rc;
    baton_backend b = BATON_BACKEND_LOCAL;
    if (f.backend && backend_from_name(f.backend, &b)) {
        fprintf(stderr, "baton %s: --backend: expected local, slurm or aws, got '%s'\n", cmd, f.backend);
        return CLI_USAGE;
    }
    if (f.npos < 1) {
        fprintf(stderr, "baton %s: which job? (a job file, or for status and cancel a job name)\n", cmd);
        return CLI_USAGE;
    }
    baton_job job;
    int have = 0;
    baton_err err = {0};
    char name[BATON_JOB_NAME_MAX + 1], jobdir[4096];
    const char *state;
    if (is_file(f.pos[0]) || !strcmp(sub, "run")) {
        if (baton_job_load(f.pos[0], &job, &err)) return cli_fail(cmd, &err);
        have = 1;
        if (f.backend) job.backend = b;
        snprintf(name, sizeof name, "%s", job.name);
        state = state_of(&f, &job);
    } else {
        snprintf(name, sizeof name, "%.*s", BATON_JOB_NAME_MAX, f.pos[0]);
        state = state_of(&f, NULL);
    }
    if (!f.backend) b = have && job.backend != BATON_BACKEND_LOCAL ? job.backend : present_in(state, name);
    if (!strcmp(sub, "run") && have && !f.backend) b = job.backend;
    if (b == BATON_BACKEND_LOCAL) {
        fprintf(stderr, "baton %s: %s is not a slurm or aws job (the local backend runs it)\n", cmd, name);
        rc = CLI_USAGE;
        goto done;
    }
    if (baton_fleet_job_dir(state, name, jobdir, sizeof jobdir, &err)) {
        rc = cli_fail(cmd, &err);
        goto done;
    }
    if (!strcmp(sub, "run")) {
        rc = b == BATON_BACKEND_SLURM ? slurm_run(&job, &f) : aws_run(&job, &f);
    } else if (!strcmp(sub, "status") && b == BATON_BACKEND_SLURM && f.wait) {
        rc = slurm_wait(jobdir, &f);
    } else if (!strcmp(sub, "status") && b == BATON_BACKEND_SLURM) {
        baton_slurm_task *t;
        size_t n;
        if (baton_slurm_status(jobdir, &t, &n, &err)) rc = cli_fail(cmd, &err);
        else print_slurm(t, n, f.json), free(t);
    } else if (!strcmp(sub, "cancel") && b == BATON_BACKEND_SLURM) {
        if (baton_slurm_cancel(jobdir, &err)) rc = cli_fail(cmd, &err);
        else fprintf(stderr, "baton fleet: cancelled the queued and running Slurm jobs of %s\n", name);
    } else if (!strcmp(sub, "status") || !strcmp(sub, "cancel")) {
        char out[4200];
        aws_out_dir(&f, jobdir, out, sizeof out);
        int r = !strcmp(sub, "status") ? baton_aws_status(out, f.region, stdout, &err)
                                       : baton_aws_cancel(out, f.region, stderr, &err);
        if (r) rc = cli_fail(cmd, &err);
    } else {
        fprintf(stderr, "baton fleet: unknown subcommand '%s' (run, status, cancel)\n", sub);
        rc = CLI_USAGE;
    }
done:
    if (have) baton_job_free(&job);
    return rc;
}
