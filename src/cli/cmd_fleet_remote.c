/* cmd_fleet_remote.c — `baton fleet run|status|cancel` for the backends beyond one machine:
 * slurm (each task a requeueable batch job) and aws (an Auto Scaling group per task by default, or
 * an EC2 Fleet, or the seed's Spot Fleet: artefacts, --dry-run / --apply).
 * cmd_fleet.c parses the arguments once (struct cli_fleet_args) and hands over here when
 * cli_fleet_backend says they are for one of them: --backend, else the job file's `backend:`, else
 * (status, cancel) what the job's folder STATE/JOB holds (slurm/jobs.json, aws/fleet-requests.json).
 * Thin: the work is in src/fleet/fleet_slurm.c and fleet_aws.c.
 *
 *   baton fleet run JOBFILE [--backend slurm] [--state DIR] [--wait [--timeout SEC]] [--json]
 *   baton fleet run JOBFILE [--backend aws] [--out DIR] [--account ID] [--api API] [--dry-run | --apply]
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

static const char *state_of(const struct cli_fleet_args *f, const baton_job *job)
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
        char *s = baton_json_print(arr, 0);
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

static int slurm_wait(const char *state, const struct cli_fleet_args *f)
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

static int slurm_run(baton_job *job, const struct cli_fleet_args *f)
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
static void aws_out_dir(const struct cli_fleet_args *f, const char *jobdir, char *out, size_t cap)
{
    if (f->out) snprintf(out, cap, "%s", f->out);
    else snprintf(out, cap, "%s/aws", jobdir);
}

static int aws_run(baton_job *job, const struct cli_fleet_args *f)
{
    baton_aws_opts o;
    baton_err err = {0};
    if (f->apply && f->dry_run) {
        fprintf(stderr, "baton fleet: --dry-run and --apply exclude each other\n");
        return CLI_USAGE;
    }
    if (baton_aws_check_as(job, f->api, &o, &err)) return cli_fail("fleet", &err);
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
    fprintf(stderr, "baton fleet: artefacts in %s (%s: %s, user data, IAM documents, commands.sh)\n", out,
            o.api == BATON_AWS_ASG ? "Auto Scaling groups" : o.api == BATON_AWS_EC2_FLEET ? "EC2 Fleets" : "Spot Fleet",
            o.api == BATON_AWS_ASG       ? "launch-template.json, auto-scaling-group.json"
            : o.api == BATON_AWS_EC2_FLEET ? "launch-template.json, ec2-fleet.json"
                                           : "spot_fleet_config.json");
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

int cli_fleet_backend(const struct cli_fleet_args *a)
{
    baton_backend b;
    if (a->backend) {
        if (backend_from_name(a->backend, &b) == 0) return (int)b;
        fprintf(stderr, "baton fleet %s: --backend: expected local, slurm or aws, got '%s'\n", a->sub, a->backend);
        return -1;
    }
    if (!a->pos) return BATON_BACKEND_LOCAL;
    if (is_file(a->pos)) {
        baton_job job;
        baton_err err = {0};
        if (baton_job_load(a->pos, &job, &err)) {   /* the local path reports it */
            baton_job_free(&job);
            return BATON_BACKEND_LOCAL;
        }
        b = job.backend;
        if (b == BATON_BACKEND_LOCAL && strcmp(a->sub, "run"))
            b = present_in(a->state ? a->state : job.state_dir[0] ? job.state_dir : "baton-fleet", job.name);
        baton_job_free(&job);
        return (int)b;
    }
    return strcmp(a->sub, "run") ? (int)present_in(a->state ? a->state : "baton-fleet", a->pos) : BATON_BACKEND_LOCAL;
}

/* a->sub is the subcommand (run, status, cancel); backend is slurm or aws (cli_fleet_backend). */
int cli_fleet_remote(const struct cli_fleet_args *f, int backend)
{
    const char *sub = f->sub;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "fleet %s", sub);
    int rc = CLI_OK;
    baton_backend b = (baton_backend)backend;
    if (!f->pos) {
        fprintf(stderr, "baton %s: which job? (a job file, or for status and cancel a job name)\n", cmd);
        return CLI_USAGE;
    }
    baton_job job;
    int have = 0;
    baton_err err = {0};
    char name[BATON_JOB_NAME_MAX + 1], jobdir[4096];
    const char *state;
    if (is_file(f->pos) || !strcmp(sub, "run")) {
        if (baton_job_load(f->pos, &job, &err)) return cli_fail(cmd, &err);
        have = 1;
        job.backend = b;
        snprintf(name, sizeof name, "%s", job.name);
        state = state_of(f, &job);
    } else {
        snprintf(name, sizeof name, "%.*s", BATON_JOB_NAME_MAX, f->pos);
        state = state_of(f, NULL);
    }
    if (baton_fleet_job_dir(state, name, jobdir, sizeof jobdir, &err)) {
        rc = cli_fail(cmd, &err);
        goto done;
    }
    if (!strcmp(sub, "run")) {
        rc = b == BATON_BACKEND_SLURM ? slurm_run(&job, f) : aws_run(&job, f);
    } else if (!strcmp(sub, "status") && b == BATON_BACKEND_SLURM && f->wait) {
        rc = slurm_wait(jobdir, f);
    } else if (!strcmp(sub, "status") && b == BATON_BACKEND_SLURM) {
        baton_slurm_task *t;
        size_t n;
        if (baton_slurm_status(jobdir, &t, &n, &err)) rc = cli_fail(cmd, &err);
        else print_slurm(t, n, f->json), free(t);
    } else if (!strcmp(sub, "cancel") && b == BATON_BACKEND_SLURM) {
        if (baton_slurm_cancel(jobdir, &err)) rc = cli_fail(cmd, &err);
        else fprintf(stderr, "baton fleet: cancelled the queued and running Slurm jobs of %s\n", name);
    } else if (!strcmp(sub, "status") || !strcmp(sub, "cancel")) {
        char out[4200];
        aws_out_dir(f, jobdir, out, sizeof out);
        int r = !strcmp(sub, "status") ? baton_aws_status(out, f->region, stdout, &err)
                                       : baton_aws_cancel(out, f->region, stderr, &err);
        if (r) rc = cli_fail(cmd, &err);
    } else {
        fprintf(stderr, "baton fleet: unknown subcommand '%s' (run, status, cancel)\n", sub);
        rc = CLI_USAGE;
    }
done:
    if (have) baton_job_free(&job);
    return rc;
}
