/* fleet_backend.h — the fleet backends beyond one machine: Slurm (each task a requeueable batch
 * job) and AWS EC2 (artefacts for real Spot capacity — by default an Auto Scaling group per task
 * over a launch template, or an EC2 Fleet, or the seed's Spot Fleet — the user-data script,
 * least-privilege IAM documents, and the aws CLI commands that create them). Both read the job
 * file of fleet.h (docs/jobfile.md) and its `slurm:` / `aws:` section; docs/slurm.md and
 * docs/aws.md are the user's guides.
 *
 * What it offers, in the order a caller uses it (after baton_job_load, fleet.h):
 *   1. Slurm (src/fleet/fleet_slurm.c): baton_slurm_check reads the job's `slurm:` section into
 *      baton_slurm_opts; baton_slurm_submit creates the volumes and submits one batch script per
 *      task under the job's folder (baton_fleet_job_dir); later, on that folder,
 *      baton_slurm_present says whether it holds a submission, baton_slurm_status reads each
 *      task's state (baton_slurm_state_final: will it run again?) and baton_slurm_cancel stops it.
 *   2. AWS (src/fleet/fleet_aws.c and aws_*.c): baton_aws_check reads the `aws:`
 *      section into baton_aws_opts (baton_aws_account supplies an account id not given there);
 *      baton_aws_generate writes every artefact and returns the aws CLI commands in order
 *      (baton_aws_cmd_line prints one), baton_aws_apply runs them, baton_aws_cmds_free; later
 *      baton_aws_status and baton_aws_cancel act on the fleets they requested.
 * The steps behind these that only the backends and their tests call (the batch script, the
 * status parsers, the user-data script, the names of the AWS resources) are in
 * src/fleet/remote_internal.h.
 *
 * Slurm (src/fleet/fleet_slurm.c): `baton fleet run --backend slurm JOB` writes one batch script
 * per task and submits it with sbatch: --requeue, --signal=B:USR1@signal_before, output appended
 * across restarts, the task's volume (a folder on a file system every node sees) as its working
 * folder. The script runs the command in its own process group and forwards TERM/USR1 to it, so
 * baton's watcher checkpoints and exits 75; it requeues the job itself after a notice it was not
 * killed for (USR1 before the time limit, an EC2 notice on a cloud node) and after a crash while
 * retries last. Preemption and `scontrol requeue` requeue it through Slurm. Every start and end
 * is appended to the volume's logs/slurm-runs.log; status combines it with `scontrol show job`.
 *
 * AWS (src/fleet/fleet_aws.c and aws_*.c, docs/aws.md): see baton_aws_generate.
 *
 * Contract: errors are values naming the job file, line and field (or the program that failed);
 * nothing here exits. Only the slurm/aws CLI programs are run (no shell). */
#ifndef BATON_FLEET_BACKEND_H
#define BATON_FLEET_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "baton/fleet.h"
#include "baton/util.h"

/* ---------------------------------------------------------------------------------- Slurm */
#define BATON_SLURM_MAX_ARGS 16

typedef struct baton_slurm_opts {
    char partition[64], account[64], qos[64], time[32], mem[32], gres[128], constraint[128];
    int cpus_per_task;                 /* 0: Slurm's default */
    int ntasks_per_node;               /* with the job's nodes: ranks per node (0: 1) */
    double signal_before;              /* seconds: USR1 this long before the time limit (120) */
    char volumes[1024];                /* folder of the task volumes; "" : STATE/volumes */
    const char *sbatch_args[BATON_SLURM_MAX_ARGS];   /* extra sbatch arguments (into the job) */
    size_t nsbatch_args;
} baton_slurm_opts;

/* Check that the job asks only for what Slurm can do (no zones, instance types, allocation
 * strategy or simulated market: each refused with what to use instead) and read its `slurm:`
 * section (unknown keys are errors naming their line). */
int baton_slurm_check(const baton_job *job, baton_slurm_opts *o, baton_err *err);

typedef struct baton_slurm_task {
    size_t task;
    char job_id[32];
    char volume[1024];
    char state[32];        /* Slurm's JobState; GONE when Slurm no longer knows the job */
    char reason[64];
    char node[64];
    int restarts;          /* Slurm's count of restarts (requeues) */
    int runs;              /* from the volume's logs/slurm-runs.log since the submission: */
    int notices;           /*   runs that stopped with exit 75 (a committed checkpoint) */
    int crashes;           /*   runs that failed on their own (counted against retries) */
    int stops;             /*   runs stopped from outside without exit 75 (lost work) */
    int last_rc;           /* exit status of the last run, -1 none yet */
    int64_t ckpt_step;     /* newest checkpoint in the volume that verifies, -1 none */
} baton_slurm_task;

/* job_dir is the job's own folder (STATE/JOB, see baton_fleet_job_dir). Create the volumes
 * (JOB_DIR/volumes/task-N unless slurm.volumes; volume.seed copied into new ones), write
 * JOB_DIR/slurm/task-N.sbatch and submit each; JOB_DIR/slurm/jobs.json records the job ids
 * (written after every submission, so a failure half-way leaves a record of what is queued).
 * Refuses while an earlier submission still has jobs in the queue. *tasks (malloc'd) gets one
 * entry per task. */
int baton_slurm_submit(const baton_job *job, const baton_slurm_opts *o, const char *job_dir,
                       const char *bindir, baton_slurm_task **tasks, size_t *n, baton_err *err);
/* Read the recorded jobs back: Slurm's view (scontrol show job) and the volumes' run logs. */
int baton_slurm_status(const char *job_dir, baton_slurm_task **tasks, size_t *n, baton_err *err);
/* scancel every recorded job that Slurm still knows. */
int baton_slurm_cancel(const char *job_dir, baton_err *err);
/* 1 when a job in this state will not run again by itself (COMPLETED, FAILED, CANCELLED, ...). */
int baton_slurm_state_final(const char *state);
/* Does the job's folder hold a Slurm submission (JOB_DIR/slurm/jobs.json)? */
int baton_slurm_present(const char *job_dir);

/* ------------------------------------------------------------------------------------ AWS */
/* Which EC2 API keeps each task's one Spot instance running (aws.api in the job file):
 *   auto-scaling-group (default): a launch template and, per task, an Auto Scaling group
 *     (MixedInstancesPolicy over the job's types, 100 % Spot, min = max = desired = 1, Capacity
 *     Rebalancing); the user data sets the group's desired capacity to 0 when the task is done;
 *   ec2-fleet: the launch template and, per task, an EC2 Fleet of type maintain (capacity 1); the
 *     user data deletes it when the task is done;
 *   spot-fleet: the seed's Spot Fleet request (AWS: "a legacy API with no planned investment"). */
enum { BATON_AWS_ASG = 0, BATON_AWS_EC2_FLEET = 1, BATON_AWS_SPOT_FLEET = 2 };

typedef struct baton_aws_opts {
    int api;                        /* BATON_AWS_* */
    char region[32];
    char account_id[16];            /* 12 digits; "" : unknown (--apply asks sts) */
    char image_id[32];
    char key_name[256];
    const char *security_groups[16];
    size_t nsecurity_groups;
    const char *subnets[BATON_JOB_MAX_ZONES];   /* per zone of job->zones, NULL: none */
    char code[1024];                /* s3:// object (.tar.gz) or prefix (ending in /); "" none */
    char seed[1024];                /* s3:// prefix synced into a new volume; "" none */
    char volume_type[16];           /* gp3 */
    char device[32];                /* /dev/sdf */
    char mount[256];                /* /mnt/baton */
    char role_prefix[64];           /* names of the roles, policy and profile: <prefix>-<job>-... */
    const char *tag_keys[16], *tag_values[16];   /* extra tags on instances, volumes, snapshots */
    size_t ntags;
} baton_aws_opts;

/* Check that the job asks only for what EC2 can do (one region; a local volume.seed or a
 * simulated market are refused with what to use instead; target capacity must cover every task;
 * an Auto Scaling group takes at most 20 instance types and a subnet for every zone or none) and
 * read its `aws:` section (required: image_id; api: auto-scaling-group, ec2-fleet or spot-fleet).
 * account_id may come later. */
int baton_aws_check(const baton_job *job, baton_aws_opts *o, baton_err *err);
/* The same with the API named here instead of by aws.api (NULL: the job file's), e.g. from the
 * command line; an unknown name is BATON_ERR_USAGE. */
int baton_aws_check_as(const baton_job *job, const char *api, baton_aws_opts *o, baton_err *err);

/* Write every artefact into out_dir (needs o->account_id) and return the aws CLI commands, in
 * order. Always: user-data.sh (one per task, suffixed -N when there are several, as every
 * per-task file), instance-trust-policy.json, instance-policy.json (only the actions the user data
 * uses), deployer-policy.json (what running commands.sh, status and cancel needs), commands.sh.
 * Per API: auto-scaling-group: launch-template.json and auto-scaling-group.json per task;
 * ec2-fleet: launch-template.json and ec2-fleet.json per task; spot-fleet:
 * fleet-trust-policy.json and spot_fleet_config.json per task. The requests are the APIs' own
 * parameters (aws ... --cli-input-json file://...). Each command is also one element of *cmds
 * (argv vectors, NULL-terminated, freed with baton_aws_cmds_free). */
typedef struct baton_aws_cmd {
    char **argv;                    /* "aws", "iam", "create-role", ... NULL */
    int may_exist;                  /* an "already exists" answer counts as success */
    int fleet_task;                 /* >= 0: this creates task N's group, EC2 Fleet or Spot Fleet */
    int template_task;              /* >= 0: this creates task N's launch template */
} baton_aws_cmd;
int baton_aws_generate(const baton_job *job, const baton_aws_opts *o, const char *out_dir, baton_aws_cmd **cmds,
                       size_t *ncmds, baton_err *err);
void baton_aws_cmds_free(baton_aws_cmd *cmds, size_t n);
/* One command as a shell line (words quoted) into out. */
int baton_aws_cmd_line(const baton_aws_cmd *c, baton_buf *out);

/* Run the commands through the aws CLI, in order: "already exists" is fine for the IAM ones, a
 * group or fleet request is retried while IAM's new role is not yet visible to EC2 (a few tries).
 * What was created (the API, the groups or fleet ids, the launch templates) is recorded in
 * out_dir/fleet-requests.json after every step, so that cancel can remove a half-made job.
 * Refuses while an earlier record's groups or fleets still exist (two would fight for a volume).
 * progress: one line per command (may be NULL). */
int baton_aws_apply(const baton_aws_cmd *cmds, size_t n, const char *out_dir, FILE *progress, baton_err *err);
/* The account id of the credentials in the environment (aws sts get-caller-identity). */
int baton_aws_account(char *out, size_t cap, baton_err *err);
/* Status and cancel of what out_dir/fleet-requests.json records (aws CLI), for every API: status
 * prints one line per task (its group or fleet, state, activity, running/target); cancel deletes
 * the groups (force: their instances terminate) or the fleets (instances terminated), then the
 * launch templates. The task volumes are kept. */
int baton_aws_status(const char *out_dir, const char *region, FILE *f, baton_err *err);
int baton_aws_cancel(const char *out_dir, const char *region, FILE *progress, baton_err *err);

#endif
