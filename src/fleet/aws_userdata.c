/* aws_userdata.c — the user-data script of the aws fleet backend: what each Spot instance runs,
 * once, as root, at its first boot (cloud-init). A header of shell assignments (the job's values,
 * quoted) followed by a fixed body:
 *   1. the instance's identity from the metadata service (IMDSv2 token, then instance-id, zone,
 *      type);
 *   2. the task's volume, found by its tags (baton-job, baton-task): in this zone it is attached;
 *      in another zone it is moved: snapshot, wait, new volume from the snapshot, wait, verify
 *      (state, snapshot, zone, size), attach, mount, check the .baton-volume marker, and only then
 *      delete the old volume and the snapshot; when there is none yet, a new one is created and
 *      formatted (mkfs runs on a volume this script just created, never on an existing one);
 *   3. the code (aws.code: an s3 object .tar.gz or a prefix), the seed data on a new volume;
 *   4. the command, in the volume, under `baton notice wait` (a notice sends the command's process
 *      group TERM: baton train checkpoints and exits 75); a crash is retried `retries` times;
 *   5. on exit 0, and only then, the task's capacity goes: its Auto Scaling group's desired
 *      capacity is set to 0 (the group terminates the instance), or its EC2 Fleet is deleted, or
 *      its Spot Fleet cancelled (instances terminated; the volume stays). A notice (75) leaves the
 *      group or fleet to replace the instance; a failed task leaves it running for inspection.
 * Before the command runs, any failure powers the instance off without deleting a copy of the
 * volume, so the group or fleet replaces it (a stopped instance fails its health check). Only the
 * ending of the API in use is written (EC2 allows 16 KiB of user data). tests/cli/test_aws_artifacts.sh runs this script with stub
 * aws, curl, mount, mkfs and shutdown commands through every path; the test variables
 * BATON_UD_LOG, BATON_UD_DEV, BATON_UD_MOUNT, BATON_UD_CODE_DIR and BATON_UD_PAUSE default to the
 * real places.
 *
 * Contract: the caller (fleet_aws.c) has validated every value; they are shell-quoted here. */
#include "aws_internal.h"

#include <string.h>
#include <time.h>

static const char body[] =
    ": \"${BATON_UD_LOG:=/var/log/baton-user-data.log}\" \"${BATON_UD_DEV:=/dev}\" \"${BATON_UD_MOUNT:=$MOUNT}\"\n"
    ": \"${BATON_UD_CODE_DIR:=/opt/baton-job}\" \"${BATON_UD_PAUSE:=1}\"\n"
    "exec >>\"$BATON_UD_LOG\" 2>&1\n"
    "export AWS_DEFAULT_REGION=\"$REGION\" AWS_REGION=\"$REGION\"\n"
    "IMDS=http://169.254.169.254\n"
    "MNT=$BATON_UD_MOUNT\n"
    "stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }\n"
    "log() { echo \"baton-user-data: $(stamp) $*\"; }\n"
    "# Before the command runs, a failure leaves every copy of the volume in place and powers the\n"
    "# instance off: the group or fleet launches a replacement, perhaps in another zone.\n"
    "give_up() {\n"
    "    log \"giving up: $*\"\n"
    "    log \"no volume was deleted; powering off so that the group or fleet replaces this instance\"\n"
    "    sync\n"
    "    shutdown -h now\n"
    "    exit 1\n"
    "}\n"
    "tagspec() {   # tagspec TYPE [,{Key=..,Value=..}]: --tag-specifications for a new volume or snapshot\n"
    "    printf 'ResourceType=%s,Tags=[{Key=baton-job,Value=%s},{Key=baton-task,Value=%s}%s%s]' \\\n"
    "        \"$1\" \"$JOB\" \"$TASK\" \"$EXTRA_TAGS\" \"${2:-}\"\n"
    "}\n"
    "\n"
    "# ---- who am I (IMDSv2: a session token first, then every request carries it)\n"
    "token=$(curl -sS -f --max-time 5 --retry 3 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 21600' \\\n"
    "    \"$IMDS/latest/api/token\") || give_up \"no IMDSv2 token from $IMDS\"\n"
    "md() { curl -sS -f --max-time 5 --retry 3 -H \"X-aws-ec2-metadata-token: $token\" \"$IMDS/latest/meta-data/$1\"; }\n"
    "IID=$(md instance-id) || give_up \"no instance-id from the metadata service\"\n"
    "ZONE=$(md placement/availability-zone) || give_up \"no availability zone from the metadata service\"\n"
    "ITYPE=$(md instance-type) || give_up \"no instance type from the metadata service\"\n"
    "log \"instance $IID ($ITYPE) in $ZONE: job $JOB, task $TASK\"\n"
    "\n"
    "# ---- the task's volume, found by its tags: here, in another zone, or not yet made\n"
    "vols=$(aws ec2 describe-volumes --filters \"Name=tag:baton-job,Values=$JOB\" \"Name=tag:baton-task,Values=$TASK\" \\\n"
    "    \"Name=status,Values=creating,available,in-use\" \\\n"
    "    --query 'Volumes[].[VolumeId,AvailabilityZone,Size,CreateTime]' --output text) \\\n"
    "    || give_up \"describe-volumes failed\"\n"
    "pick=$(printf '%s\\n' \"$vols\" | awk -v z=\"$ZONE\" 'NF >= 4 && $2 == z' | sort -k4 | head -n 1)\n"
    "[ -n \"$pick\" ] || pick=$(printf '%s\\n' \"$vols\" | awk 'NF >= 4' | sort -k4 | head -n 1)\n"
    "VOL=$(echo \"$pick\" | awk '{print $1}')\n"
    "VZONE=$(echo \"$pick\" | awk '{print $2}')\n"
    "VSIZE=$(echo \"$pick\" | awk '{print $3}')\n"
    "fresh=0 OLD='' SNAP=''\n"
    "if [ -z \"$VOL\" ]; then\n"
    "    log \"no volume tagged baton-job=$JOB baton-task=$TASK yet: creating ${SIZE_GB} GiB in $ZONE\"\n"
    "    VOL=$(aws ec2 create-volume --availability-zone \"$ZONE\" --size \"$SIZE_GB\" --volume-type \"$VOLUME_TYPE\" \\\n"
    "        --tag-specifications \"$(tagspec volume)\" --query VolumeId --output text) || give_up \"create-volume failed\"\n"
    "    fresh=1\n"
    "elif [ \"$VZONE\" != \"$ZONE\" ]; then\n"
    "    # Moving zones: snapshot, wait, new volume from the snapshot, wait, verify, attach, mount,\n"
    "    # check its marker, and only then delete the old volume. Every step keeps a complete copy.\n"
    "    OLD=$VOL\n"
    "    log \"volume $OLD is in $VZONE, this instance in $ZONE: moving it through a snapshot\"\n"
    "    aws ec2 wait volume-available --volume-ids \"$OLD\" || give_up \"volume $OLD is still attached elsewhere\"\n"
    "    SNAP=$(aws ec2 create-snapshot --volume-id \"$OLD\" --description \"baton $JOB task $TASK: move to $ZONE\" \\\n"
    "        --tag-specifications \"$(tagspec snapshot)\" --query SnapshotId --output text) \\\n"
    "        || give_up \"create-snapshot of $OLD failed\"\n"
    "    if ! aws ec2 wait snapshot-completed --snapshot-ids \"$SNAP\"; then\n"
    "        give_up \"snapshot $SNAP of $OLD did not complete (both kept)\"\n"
    "    fi\n"
    "    VOL=$(aws ec2 create-volume --availability-zone \"$ZONE\" --snapshot-id \"$SNAP\" --volume-type \"$VOLUME_TYPE\" \\\n"
    "        --tag-specifications \"$(tagspec volume \",{Key=baton-moved-from,Value=$OLD}\")\" \\\n"
    "        --query VolumeId --output text) || give_up \"create-volume from $SNAP failed ($OLD and $SNAP kept)\"\n"
    "    if ! aws ec2 wait volume-available --volume-ids \"$VOL\"; then\n"
    "        aws ec2 delete-volume --volume-id \"$VOL\"\n"
    "        give_up \"the copy $VOL did not become available ($OLD and $SNAP kept)\"\n"
    "    fi\n"
    "    got=$(aws ec2 describe-volumes --volume-ids \"$VOL\" \\\n"
    "        --query 'Volumes[0].[State,SnapshotId,AvailabilityZone,Size]' --output text) || got=''\n"
    "    if [ \"$(echo $got)\" != \"available $SNAP $ZONE $VSIZE\" ]; then\n"
    "        aws ec2 delete-volume --volume-id \"$VOL\"\n"
    "        give_up \"the copy $VOL is not what was asked for ('$(echo $got)'; $OLD and $SNAP kept)\"\n"
    "    fi\n"
    "    log \"copy $VOL of $OLD is available in $ZONE (from $SNAP)\"\n"
    "fi\n"
    "\n"
    "# ---- attach and mount (the previous instance may still be letting go of the volume)\n"
    "aws ec2 wait volume-available --volume-ids \"$VOL\" || give_up \"volume $VOL is still attached elsewhere\"\n"
    "aws ec2 attach-volume --volume-id \"$VOL\" --instance-id \"$IID\" --device \"$DEVICE\" >/dev/null \\\n"
    "    || give_up \"attach-volume $VOL failed\"\n"
    "aws ec2 wait volume-in-use --volume-ids \"$VOL\" || give_up \"volume $VOL did not attach\"\n"
    "dev=''\n"
    "for _ in $(seq 1 60); do\n"
    "    for d in \"$BATON_UD_DEV/disk/by-id/nvme-Amazon_Elastic_Block_Store_${VOL/-/}\" \\\n"
    "             \"$BATON_UD_DEV/xvd${DEVICE#/dev/sd}\" \"$BATON_UD_DEV/${DEVICE#/dev/}\"; do\n"
    "        [ -e \"$d\" ] && { dev=$d; break 2; }\n"
    "    done\n"
    "    sleep \"$BATON_UD_PAUSE\"\n"
    "done\n"
    "[ -n \"$dev\" ] || give_up \"volume $VOL is attached but no block device appeared\"\n"
    "if [ $fresh = 1 ]; then\n"
    "    mkfs -t ext4 -q -L baton \"$dev\" || give_up \"mkfs on the new volume $VOL failed\"\n"
    "fi\n"
    "mkdir -p \"$MNT\" && mount \"$dev\" \"$MNT\" || give_up \"mount $dev $MNT failed\"\n"
    "want=\"job=$JOB task=$TASK\"\n"
    "if [ $fresh = 1 ]; then\n"
    "    echo \"$want\" >\"$MNT/.baton-volume\" || give_up \"cannot write to the new volume\"\n"
    "elif [ \"$(cat \"$MNT/.baton-volume\" 2>/dev/null)\" != \"$want\" ]; then\n"
    "    umount \"$MNT\"\n"
    "    give_up \"volume $VOL does not say '$want' in .baton-volume: not this task's volume\"\n"
    "fi\n"
    "mkdir -p \"$MNT/logs\" \"$MNT/.baton\"\n"
    "if [ -n \"$OLD\" ]; then\n"
    "    # the copy is attached, mounted and verified: now, and only now, the old volume goes\n"
    "    aws ec2 delete-volume --volume-id \"$OLD\" || log \"could not delete the old volume $OLD (delete it by hand)\"\n"
    "    aws ec2 delete-snapshot --snapshot-id \"$SNAP\" || log \"could not delete snapshot $SNAP (delete it by hand)\"\n"
    "    log \"volume moved: $OLD ($VZONE) -> $VOL ($ZONE)\"\n"
    "fi\n"
    "if [ -n \"$SEED\" ] && [ ! -e \"$MNT/.baton/seeded\" ]; then\n"
    "    aws s3 sync --only-show-errors \"$SEED\" \"$MNT/\" || give_up \"aws s3 sync $SEED failed\"\n"
    "    touch \"$MNT/.baton/seeded\"\n"
    "fi\n"
    "\n"
    "# ---- the code\n"
    "if [ -n \"$CODE\" ]; then\n"
    "    mkdir -p \"$BATON_UD_CODE_DIR\"\n"
    "    case $CODE in\n"
    "    */) aws s3 sync --only-show-errors \"$CODE\" \"$BATON_UD_CODE_DIR/\" || give_up \"aws s3 sync $CODE failed\" ;;\n"
    "    *) aws s3 cp --only-show-errors \"$CODE\" \"$BATON_UD_CODE_DIR.tar.gz\" \\\n"
    "           && tar -xzf \"$BATON_UD_CODE_DIR.tar.gz\" -C \"$BATON_UD_CODE_DIR\" || give_up \"fetching $CODE failed\" ;;\n"
    "    esac\n"
    "    export PATH=\"$BATON_UD_CODE_DIR/bin:$BATON_UD_CODE_DIR:$PATH\"\n"
    "fi\n"
    "\n"
    "# ---- the command, under baton's notice watcher\n"
    "export BATON_VOLUME=\"$MNT\" BATON_JOB=\"$JOB\" BATON_TASK=\"$TASK\" BATON_INSTANCE_ID=\"$IID\"\n"
    "export BATON_INSTANCE_TYPE=\"$ITYPE\" BATON_ZONE=\"$ZONE\" BATON_PROGRESS_FILE=\"$MNT/.baton/progress\"\n"
    "set_env\n"
    "cd \"$MNT\" || give_up \"cannot enter $MNT\"\n"
    "runlog=\"$MNT/logs/aws-runs.log\"\n"
    "crashes() { awk -v g=\"gen=$GEN\" 'index($0, g) && / outcome=crash /{n++} END{print n+0}' \"$runlog\" 2>/dev/null; }\n"
    "if [ \"$(crashes)\" -gt \"$RETRIES\" ]; then\n"
    "    log \"this task already failed ($(crashes) crashes, $RETRIES retries allowed): not running it again.\"\n"
    "    log \"the group or fleet is left as it is; \\`baton fleet cancel\\` ends it\"\n"
    "    exit 1\n"
    "fi\n"
    "while :; do\n"
    "    echo \"start instance=$IID zone=$ZONE gen=$GEN time=$(stamp)\" >>\"$runlog\"\n"
    "    log \"running: $COMMAND\"\n"
    "    set -m\n"
    "    # the shell in between keeps a handler (not an ignore) for TERM, so the command starts with\n"
    "    # TERM's default and the shell exits with the command's status\n"
    "    /bin/sh -c 'trap : TERM INT; eval \"$1\"' baton-task \"$COMMAND\" >>\"$MNT/logs/$IID.log\" 2>&1 &\n"
    "    job=$!\n"
    "    w=''\n"
    "    if command -v baton >/dev/null; then\n"
    "        baton notice wait --json >\"$MNT/logs/notice-$IID.json\" 2>>\"$MNT/logs/$IID.log\" &\n"
    "        w=$!\n"
    "    else\n"
    "        log \"baton is not on PATH: no notice watcher (a trainer that watches by itself still checkpoints)\"\n"
    "    fi\n"
    "    set +m\n"
    "    while kill -0 \"$job\" 2>/dev/null; do\n"
    "        if [ -n \"$w\" ] && ! kill -0 \"$w\" 2>/dev/null; then\n"
    "            if wait \"$w\"; then\n"
    "                log \"interruption notice: $(cat \"$MNT/logs/notice-$IID.json\"); asking the command to checkpoint\"\n"
    "                kill -TERM -- \"-$job\" 2>/dev/null\n"
    "            else\n"
    "                log \"the notice watcher stopped (exit $?); the command runs on\"\n"
    "            fi\n"
    "            w=''\n"
    "        fi\n"
    "        sleep \"$BATON_UD_PAUSE\"\n"
    "    done\n"
    "    wait \"$job\"\n"
    "    rc=$?\n"
    "    [ -n \"$w\" ] && kill -TERM -- \"-$w\" 2>/dev/null\n"
    "    case $rc in 0) outcome=done ;; " BATON_EXIT_STOPPED_STR ") outcome=notice ;; *) outcome=crash ;; esac\n"
    "    echo \"end instance=$IID rc=$rc outcome=$outcome gen=$GEN time=$(stamp)\" >>\"$runlog\"\n"
    "    sync\n"
    "    case $outcome in\n"
    "    done) break ;;\n"
    "    notice)\n"
    "        log \"stopped on an interruption notice after a committed checkpoint; a replacement resumes it\"\n"
    "        exit 0 ;;\n"
    "    crash)\n"
    "        n=$(crashes)\n"
    "        if [ \"$n\" -le \"$RETRIES\" ]; then\n"
    "            log \"the command crashed (exit $rc): retry $n of $RETRIES\"\n"
    "            continue\n"
    "        fi\n"
    "        log \"the command crashed (exit $rc) $n times, $RETRIES retries allowed: the task failed.\"\n"
    "        log \"the group or fleet is NOT ended (a crash is not success); \\`baton fleet cancel\\` ends it\"\n"
    "        exit 1 ;;\n"
    "    esac\n"
    "done\n"
    "\n"
    "# ---- success, and only success: this task's capacity goes (its instances terminate; the volume stays)\n"
    "log \"the command finished (exit 0)\"\n"
    "cd /\n"
    "umount \"$MNT\" || log \"umount $MNT failed (the volume was synced)\"\n";

/* The ending of each API: what ends the task's capacity once the command succeeded. */
static const char end_asg[] =
    "log \"setting Auto Scaling group $GROUP to desired capacity 0 (it terminates this instance)\"\n"
    "aws autoscaling update-auto-scaling-group --auto-scaling-group-name \"$GROUP\" --min-size 0 --desired-capacity 0 \\\n"
    "    || log \"update-auto-scaling-group $GROUP failed: set its desired capacity to 0 by hand\"\n"
    "exit 0\n";
static const char end_ec2_fleet[] =
    "fid=$(aws ec2 describe-tags --filters \"Name=resource-id,Values=$IID\" \"Name=key,Values=aws:ec2:fleet-id\" \\\n"
    "    --query 'Tags[0].Value' --output text)\n"
    "if [ -n \"$fid\" ] && [ \"$fid\" != None ]; then\n"
    "    log \"deleting EC2 Fleet $fid\"\n"
    "    aws ec2 delete-fleets --fleet-ids \"$fid\" --terminate-instances || log \"delete-fleets $fid failed: delete it by hand\"\n"
    "else\n"
    "    log \"cannot find this instance's fleet (tag aws:ec2:fleet-id): delete it by hand\"\n"
    "fi\n"
    "exit 0\n";
static const char end_spot_fleet[] =
    "fid=$(aws ec2 describe-tags --filters \"Name=resource-id,Values=$IID\" \"Name=key,Values=aws:ec2spot:fleet-request-id\" \\\n"
    "    --query 'Tags[0].Value' --output text)\n"
    "if [ -n \"$fid\" ] && [ \"$fid\" != None ]; then\n"
    "    log \"cancelling spot fleet request $fid\"\n"
    "    aws ec2 cancel-spot-fleet-requests --spot-fleet-request-ids \"$fid\" --terminate-instances \\\n"
    "        || log \"cancel-spot-fleet-requests $fid failed: cancel it by hand\"\n"
    "else\n"
    "    log \"cannot find this instance's fleet request (tag aws:ec2spot:fleet-request-id): cancel it by hand\"\n"
    "fi\n"
    "exit 0\n";

static int assign(baton_buf *b, const char *name, const char *value)
{
    int rc = rmt_printf(b, "%s=", name);
    rc |= rmt_shq(b, value);
    rc |= rmt_printf(b, "\n");
    return rc;
}

int fleet_aws_userdata(const baton_job *job, const baton_aws_opts *o, size_t task, baton_buf *b, baton_err *err)
{
    if (task >= job->ncommands) return baton_err_set(err, BATON_ERR_ARG, "task %zu: the job has %zu", task, job->ncommands);
    char num[64];
    int rc = rmt_printf(b, "#!/bin/bash\n# baton user data: job %s, task %zu. Written by `baton fleet run --backend aws`;\n"
                           "# see docs/aws.md. Runs once, as root, at the instance's first boot.\nset -uo pipefail\n",
                        job->name, task);
    rc |= assign(b, "JOB", job->name);
    snprintf(num, sizeof num, "%zu", task);
    rc |= assign(b, "TASK", num);
    /* the generation: crashes counted against retries are those of this submission */
    snprintf(num, sizeof num, "%lld", (long long)time(NULL));
    rc |= assign(b, "GEN", num);
    rc |= assign(b, "REGION", o->region);
    rc |= assign(b, "API", aws_api_name(o->api));
    if (o->api == BATON_AWS_ASG) {
        char group[200];
        aws_task_name(job, o, task, group, sizeof group);
        rc |= assign(b, "GROUP", group);
    }
    snprintf(num, sizeof num, "%.0f", job->volume.size_gb);
    rc |= assign(b, "SIZE_GB", num);
    rc |= assign(b, "VOLUME_TYPE", o->volume_type);
    rc |= assign(b, "DEVICE", o->device);
    rc |= assign(b, "MOUNT", o->mount);
    rc |= assign(b, "CODE", o->code);
    rc |= assign(b, "SEED", o->seed);
    snprintf(num, sizeof num, "%d", job->retries);
    rc |= assign(b, "RETRIES", num);
    baton_buf t = {0};
    for (size_t i = 0; i < o->ntags; i++) rc |= rmt_printf(&t, ",{Key=%s,Value=%s}", o->tag_keys[i], o->tag_values[i]);
    rc |= rmt_cstr(&t);
    rc |= assign(b, "EXTRA_TAGS", t.data ? (const char *)t.data : "");
    baton_buf_free(&t);
    rc |= assign(b, "COMMAND", job->commands[task]);
    rc |= rmt_printf(b, "set_env() {\n");
    for (size_t i = 0; i < job->nenv; i++) {
        const char *k = strncmp(job->env[i].key, "env.", 4) ? job->env[i].key : job->env[i].key + 4;
        rc |= rmt_printf(b, "    export %s=", k);
        rc |= rmt_shq(b, job->env[i].value);
        rc |= rmt_printf(b, "\n");
    }
    rc |= rmt_printf(b, "    :\n}\n");
    rc |= baton_buf_append(b, body, sizeof body - 1);
    if (o->api == BATON_AWS_ASG) rc |= baton_buf_append(b, end_asg, sizeof end_asg - 1);
    else if (o->api == BATON_AWS_EC2_FLEET) rc |= baton_buf_append(b, end_ec2_fleet, sizeof end_ec2_fleet - 1);
    else rc |= baton_buf_append(b, end_spot_fleet, sizeof end_spot_fleet - 1);
    if (rc) return baton_err_set(err, BATON_ERR_NOMEM, "user data: out of memory");
    if (b->len > BATON_AWS_USERDATA_MAX)
        return baton_err_set(err, BATON_ERR_ARG,
                             "%s: the user data of task %zu is %zu bytes, more than EC2's %d (shorten the command "
                             "or env:, or put them in the code bundle)", job->path, task, b->len, BATON_AWS_USERDATA_MAX);
    return BATON_OK;
}
