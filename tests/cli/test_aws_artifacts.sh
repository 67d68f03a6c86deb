#!/usr/bin/env bash
# test_aws_artifacts.sh — the aws backend of `baton fleet`, entirely offline (no AWS, no network):
#   - artefacts from a job file: every dry-run command, turned into the API request the aws CLI
#     would send, passes botocore's parameter validation against Debian's EC2/IAM service models
#     (tests/aws/validate.py), in the order roles -> policies -> profile -> fleet; the IAM
#     documents are well-formed and name only existing actions; a tampered request is caught;
#     a two-command sweep gives one fleet per task;
#   - the user-data script, run with stub aws, curl, mount, umount, mkfs, shutdown and baton on
#     PATH (tests/aws/stub.py) through its scenarios: same zone, other zone (a verified snapshot
#     copy before the old volume goes), first launch (create + mkfs), a failed snapshot, a failed
#     snapshot request, a copy that does not verify, another task's volume, an interruption
#     notice, a crashing command (retries, then no cancel), and the replacement after that; the
#     order of the calls, that no path deletes the only copy of the volume or formats one that
#     holds data, that only success cancels the fleet; and that the instance policy grants exactly
#     the actions all scenarios used;
#   - --apply through a stub aws CLI (an existing role is fine, a fleet request refused while IAM
#     settles is retried), status, cancel, and refusing a second apply while the fleet is active;
#   - bad input: what a Spot Fleet cannot do is refused with the field (and line) named.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
ROOT=$(pwd)
PY=/usr/bin/python3
if ! $PY -c 'import botocore' 2>/dev/null; then
    echo "FAIL: python3-botocore is not installed (scripts/deps.sh installs it)" >&2
    exit 1
fi
BATON=$(cd "$(dirname "$BATON")" && pwd)/$(basename "$BATON")

# ---- a job file and its artefacts
cat >"$T/job.yaml" <<EOF
name: awsjob
backend: aws
command: sh $T/job.sh
retries: 1
instance_types: [c5.xlarge, m5.xlarge]
zones: [us-east-1a, us-east-1b]
allocation_strategy: capacity-optimized
env:
  OMP_NUM_THREADS: 4
aws:
  account_id: "123456789012"
  image_id: ami-0123456789abcdef0
  key_name: my-key
  security_groups: [sg-0123456789abcdef0]
  code: s3://my-bucket/jobs/awsjob/code.tar.gz
  seed: s3://my-bucket/data/awsjob/
  tags: {team: ml}
EOF
OUT=$T/artefacts
check '"$BATON" fleet run "$T/job.yaml" --out "$OUT" >"$T/cmds" 2>"$T/run.err"' "fleet run --backend aws (dry run)"
check 'grep -q "dry run: nothing was sent" "$T/run.err"' "dry run says nothing was sent"
check '[ "$(grep -c "^aws " "$T/cmds")" -eq 7 ]' "seven commands: two roles, two policies, profile, role in profile, fleet"
for f in spot_fleet_config.json user-data.sh fleet-trust-policy.json instance-trust-policy.json \
         instance-policy.json deployer-policy.json commands.sh; do
    check '[ -s "$OUT/$f" ]' "artefact $f"
done
check 'diff <(grep "^aws " "$OUT/commands.sh") "$T/cmds" >/dev/null' "commands.sh holds the printed commands"
$PY tests/aws/validate.py requests "$OUT" "$T/cmds" >"$T/v1" 2>&1; rc=$?
check '[ $rc -eq 0 ] && [ "$(grep -c "^ok - aws .*: valid" "$T/v1")" -eq 7 ]' "botocore validates every request: $(grep -v "^ok" "$T/v1")"
$PY tests/aws/validate.py documents "$OUT" >"$T/v2" 2>&1; rc=$?
check '[ $rc -eq 0 ]' "IAM documents: $(grep -v "^ok" "$T/v2")"
check '$PY - "$OUT/spot_fleet_config.json" <<"EOF"
import json, sys
c = json.load(open(sys.argv[1]))
specs = c["LaunchSpecifications"]
pools = {(s["InstanceType"], s["Placement"]["AvailabilityZone"]) for s in specs}
assert pools == {(t, z) for t in ("c5.xlarge", "m5.xlarge") for z in ("us-east-1a", "us-east-1b")}, pools
assert c["TargetCapacity"] == 1 and c["AllocationStrategy"] == "capacityOptimized" and c["Type"] == "maintain"
assert c["IamFleetRole"] == "arn:aws:iam::123456789012:role/baton-awsjob-fleet"
assert all(s["IamInstanceProfile"]["Arn"] == "arn:aws:iam::123456789012:instance-profile/baton-awsjob" for s in specs)
assert all(s["SecurityGroups"] == [{"GroupId": "sg-0123456789abcdef0"}] and s["KeyName"] == "my-key" for s in specs)
EOF' "fleet config: a launch specification per type and zone, capacity 1, capacityOptimized, roles by ARN"
# the validator is not a rubber stamp
sed 's/"capacityOptimized"/"cheapest"/' "$OUT/spot_fleet_config.json" >"$T/bad.json"
sed "s#file://$OUT/spot_fleet_config.json#file://$T/bad.json#" "$T/cmds" >"$T/badcmds"
check '! $PY tests/aws/validate.py requests "$OUT" "$T/badcmds" >"$T/v3" 2>&1 && grep -q "cheapest" "$T/v3"' \
    "validation catches a bad AllocationStrategy"
sed 's/"TargetCapacity":\t1/"TargetCapacity":\t"1"/' "$OUT/spot_fleet_config.json" >"$T/bad.json"
check '! $PY tests/aws/validate.py requests "$OUT" "$T/badcmds" >/dev/null 2>&1' "validation catches a string TargetCapacity"

# a sweep of two commands: one fleet (and user data) per task
sed 's#^command: .*#commands: ["sh '"$T"'/job.sh a", "sh '"$T"'/job.sh b"]#' "$T/job.yaml" >"$T/sweep.yaml"
check '"$BATON" fleet run "$T/sweep.yaml" --out "$T/sweep" >"$T/sweepcmds" 2>/dev/null' "sweep: artefacts"
check '[ -s "$T/sweep/spot_fleet_config-0.json" ] && [ -s "$T/sweep/spot_fleet_config-1.json" ] && [ -s "$T/sweep/user-data-1.sh" ]' \
    "sweep: a fleet config and user data per task"
$PY tests/aws/validate.py requests "$T/sweep" "$T/sweepcmds" >"$T/v4" 2>&1; rc=$?
check '[ $rc -eq 0 ] && [ "$(grep -c "request-spot-fleet: valid" "$T/v4")" -eq 2 ]' \
    "sweep: both fleet requests validate: $(grep -v "^ok" "$T/v4")"
check 'grep -q "^TASK=1$" "$T/sweep/user-data-1.sh" && grep -q "^COMMAND=.*job.sh b" "$T/sweep/user-data-1.sh"' "sweep: task 1 runs its own command"

# ---- the user-data script through its scenarios
cat >"$T/job.sh" <<'EOF'
#!/bin/sh
# the job: records where and how it ran; $BATON_STUB_DIR/job_mode says how it ends
echo "run pwd=$(pwd -P) vol=$BATON_VOLUME task=$BATON_TASK iid=$BATON_INSTANCE_ID zone=$BATON_ZONE omp=$OMP_NUM_THREADS code=$(hello)" >>"$BATON_STUB_DIR/job.log"
case $(cat "$BATON_STUB_DIR/job_mode") in
ok) echo trained >result.txt; exit 0 ;;
crash) exit 3 ;;
notice) trap 'echo term >>"$BATON_STUB_DIR/job.log"; exit 75' TERM; while :; do sleep 0.05; done ;;
esac
EOF
mkdir -p "$T/code/bin"
printf '#!/bin/sh\necho from-the-code-bundle\n' >"$T/code/bin/hello"
chmod +x "$T/code/bin/hello"
tar -czf "$T/code.tar.gz" -C "$T/code" bin

# scenario NAME MODE STATE_JSON: a fresh world, then the user data runs once; sets S and UDRC
scenario() {
    S=$T/sc-$1
    mkdir -p "$S/bin" "$S/data" "$S/dev" "$S/mnt" "$S/s3/my-bucket/jobs/awsjob" "$S/s3/my-bucket/data/awsjob"
    for p in aws curl mount umount mkfs shutdown baton; do ln -sf "$ROOT/tests/aws/stub.py" "$S/bin/$p"; done
    cp "$T/code.tar.gz" "$S/s3/my-bucket/jobs/awsjob/code.tar.gz"
    echo "seed" >"$S/s3/my-bucket/data/awsjob/seed.txt"
    echo "$2" >"$S/job_mode"
    echo "$3" >"$S/state.json"
    : >"$S/calls.log"
    run_ud "$S"
}
run_ud() {
    PATH="$1/bin:$PATH" BATON_STUB_DIR=$1 BATON_UD_LOG=$1/ud.log BATON_UD_DEV=$1/dev BATON_UD_MOUNT=$1/mnt \
        BATON_UD_CODE_DIR=$1/codedir BATON_UD_PAUSE=0.05 timeout 60 bash "$OUT/user-data.sh" </dev/null
    UDRC=$?
}
# a volume of this task with its marker and a checkpoint: old_volume ID
old_volume() {
    mkdir -p "$S/data/$1/ckpt/ckpt-000000010"
    echo "job=awsjob task=0" >"$S/data/$1/.baton-volume"
    echo weights >"$S/data/$1/ckpt/ckpt-000000010/model.safetensors"
    mkdir -p "$S/data/$1/.baton" && touch "$S/data/$1/.baton/seeded"
}
world() {   # world ZONE VOLUMES_JSON [EXTRA_JSON]: the state.json text
    printf '{"instance": {"id": "i-0123456789abcdef0", "zone": "%s", "type": "c5.xlarge", "fleet": "sfr-11111111-2222-3333-4444-555555555555"}, "volumes": %s, "snapshots": {}%s}' \
        "$1" "$2" "${3:+, $3}"
}
VOLB='{"vol-0b": {"zone": "us-east-1b", "size": 20, "state": "available", "formatted": true, "lineage": "vol-0b", "snapshot": null, "tags": {"baton-job": "awsjob", "baton-task": "0"}}}'
VOLA='{"vol-0a": {"zone": "us-east-1a", "size": 20, "state": "in-use", "held_by": "i-0ld", "formatted": true, "lineage": "vol-0a", "snapshot": null, "tags": {"baton-job": "awsjob", "baton-task": "0"}}}'
line_of() { grep -n -m1 -E -- "$1" "$S/calls.log" | cut -d: -f1; }
before() {  # before A B: the first call matching A comes before the first matching B (both exist)
    local a b
    a=$(line_of "$1"); b=$(line_of "$2")
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]
}
called() { grep -q -E -- "$1" "$S/calls.log"; }
no_violations() { check '[ ! -s "$S/violations.log" ]' "$1: no copy lost, nothing formatted twice: $(cat "$S/violations.log" 2>/dev/null)"; }
inventory() { $PY -c 'import json,sys; s=json.load(open(sys.argv[1])); print(" ".join(sorted(s["volumes"])), "|", " ".join(sorted(s["snapshots"])))' "$S/state.json"; }

# 1. same zone: the previous instance lets go, the volume is attached as it is
S=$T/sc-same; mkdir -p "$S"; old_volume vol-0a
scenario same ok "$(world us-east-1a "$VOLA")"
check '[ $UDRC -eq 0 ]' "same zone: exit 0 ($UDRC): $(tail -n 3 "$S/ud.log")"
check 'before "api/token" "meta-data/instance-id" && before "meta-data/instance-id" "describe-volumes"' "same zone: IMDSv2 token first"
check 'before "wait volume-available --volume-ids vol-0a" "attach-volume --volume-id vol-0a" && before attach-volume "^mount " && before "^mount " "s3 cp"' \
    "same zone: wait, attach, mount, then the code"
check '! called "create-snapshot|create-volume|delete-volume|delete-snapshot|^mkfs"' "same zone: no snapshot, no new volume, no deletion, no mkfs"
check 'grep -q "run pwd=$S/data/vol-0a vol=$S/mnt task=0 iid=i-0123456789abcdef0 zone=us-east-1a omp=4 code=from-the-code-bundle" "$S/job.log"' \
    "same zone: the command ran in the volume with the job's environment and the fetched code: $(cat "$S/job.log")"
check 'before "^umount " "cancel-spot-fleet-requests --spot-fleet-request-ids sfr-11111111-2222-3333-4444-555555555555 --terminate-instances"' \
    "same zone: success unmounts, then cancels its own fleet"
check '[ -f "$S/data/vol-0a/result.txt" ] && [ -f "$S/data/vol-0a/ckpt/ckpt-000000010/model.safetensors" ]' "same zone: results on the volume, checkpoint kept"
check '! called "s3 sync"' "same zone: an existing volume is not seeded again"
no_violations "same zone"

# 2. another zone: snapshot, copy, verify, mount, and only then delete the old volume
S=$T/sc-move; mkdir -p "$S"; old_volume vol-0b
scenario move ok "$(world us-east-1a "$VOLB")"
check '[ $UDRC -eq 0 ]' "move: exit 0 ($UDRC): $(tail -n 3 "$S/ud.log")"
check 'before "wait volume-available --volume-ids vol-0b" "create-snapshot --volume-id vol-0b" && before create-snapshot "wait snapshot-completed" && before "wait snapshot-completed" "create-volume --availability-zone us-east-1a --snapshot-id snap-"' \
    "move: old volume free, snapshot, wait for it, new volume from it in this zone"
check 'before "create-volume --availability-zone us-east-1a --snapshot-id" "describe-volumes --volume-ids vol-" && before "describe-volumes --volume-ids" "attach-volume" && before "^mount " "delete-volume --volume-id vol-0b" && before "delete-volume --volume-id vol-0b" "delete-snapshot"' \
    "move: verify the copy, attach and mount it, then delete the old volume, then the snapshot"
check 'before "delete-snapshot" "s3 cp" && before "s3 cp" "cancel-spot-fleet-requests"' "move: then the job, then the cancel"
check '! called "^mkfs|attach-volume --volume-id vol-0b"' "move: the copy is not formatted; the old volume is never attached here"
check 'inv=$(inventory); case "$inv" in "vol-"*" | ") [ "${inv%% *}" != vol-0b ] ;; *) false ;; esac' "move: one volume left (the copy), no snapshot: $(inventory)"
check 'new=$(inventory | cut -d" " -f1); [ -f "$S/data/$new/ckpt/ckpt-000000010/model.safetensors" ] && [ -f "$S/data/$new/result.txt" ]' \
    "move: the copy holds the checkpoint and the job's results"
no_violations "move"

# 3. first launch: no volume yet: create, format (this one only), mark, seed
S=$T/sc-first
scenario first ok "$(world us-east-1b "{}")"
check '[ $UDRC -eq 0 ]' "first launch: exit 0 ($UDRC): $(tail -n 3 "$S/ud.log")"
check 'before "create-volume --availability-zone us-east-1b --size 20 --volume-type gp3" "attach-volume" && before attach-volume "^mkfs -t ext4" && before "^mkfs" "^mount " && before "^mount " "s3 sync --only-show-errors s3://my-bucket/data/awsjob/"' \
    "first launch: create, attach, mkfs, mount, seed"
check 'v=$(inventory | cut -d" " -f1); [ "$(cat "$S/data/$v/.baton-volume")" = "job=awsjob task=0" ] && [ -f "$S/data/$v/seed.txt" ]' "first launch: marker written, seed copied"
check 'grep -q "baton-job,Value=awsjob},{Key=baton-task,Value=0},{Key=team,Value=ml}" "$S/calls.log"' "first launch: the volume is tagged (job, task, extra tags)"
no_violations "first launch"

# 4. the snapshot fails: nothing is deleted, nothing created from it, the instance powers off
S=$T/sc-snapfail; mkdir -p "$S"; old_volume vol-0b
scenario snapfail ok "$(world us-east-1a "$VOLB" '"fail": ["snapshot-completed"]')"
check '[ $UDRC -ne 0 ]' "snapshot failure: the script gives up"
check 'called "wait snapshot-completed" && ! called "create-volume|delete-volume|attach-volume|^mount |s3 cp"' \
    "snapshot failure: no copy from it, no deletion, no attach, no job"
check 'called "^shutdown -h now" && ! called cancel-spot-fleet-requests' "snapshot failure: powers off for a replacement; the fleet is not cancelled"
check 'inventory | grep -q "^vol-0b |" && [ -f "$S/data/vol-0b/ckpt/ckpt-000000010/model.safetensors" ]' "snapshot failure: the volume is intact: $(inventory)"
check '[ ! -e "$S/job.log" ]' "snapshot failure: the command did not run"
no_violations "snapshot failure"

# 5. the snapshot request itself is refused
S=$T/sc-snapreq; mkdir -p "$S"; old_volume vol-0b
scenario snapreq ok "$(world us-east-1a "$VOLB" '"fail": ["create-snapshot"]')"
check '[ $UDRC -ne 0 ] && called "^shutdown" && ! called "create-volume|delete-|attach-volume"' "snapshot refused: gives up, deletes nothing"
no_violations "snapshot refused"

# 6. the copy does not verify (size): the copy is removed, the original kept
S=$T/sc-badcopy; mkdir -p "$S"; old_volume vol-0b
scenario badcopy ok "$(world us-east-1a "$VOLB" '"fail": ["copy-size"]')"
check '[ $UDRC -ne 0 ] && called "^shutdown" && ! called "attach-volume|delete-volume --volume-id vol-0b|delete-snapshot"' \
    "copy not verified: not attached; neither the original nor the snapshot deleted"
check 'before "describe-volumes --volume-ids" "delete-volume --volume-id vol-"' "copy not verified: the bad copy is deleted after the check"
check 'inventory | grep -q "^vol-0b | snap-"' "copy not verified: original and snapshot remain: $(inventory)"
no_violations "copy not verified"

# 7. a volume tagged for this task but marked for another: refused, not touched
S=$T/sc-marker; mkdir -p "$S"; old_volume vol-0a; echo "job=other task=3" >"$S/data/vol-0a/.baton-volume"
scenario marker ok "$(world us-east-1a "$VOLA")"
check '[ $UDRC -ne 0 ] && before "^mount " "^umount " && called "^shutdown" && [ ! -e "$S/job.log" ] && ! called "^mkfs|delete-"' \
    "another task's volume: unmounted, no job, no mkfs, no deletion"
no_violations "marker"

# 8. an interruption notice: the watcher fires, the command checkpoints (75), the fleet stays
S=$T/sc-notice; mkdir -p "$S"; old_volume vol-0a
scenario notice notice "$(world us-east-1a "$VOLA" '"notice_after": 0.3')"
check '[ $UDRC -eq 0 ] && grep -q "^term$" "$S/job.log"' "notice: the command got TERM from the watcher and exited 75: $(tail -n 2 "$S/ud.log")"
check 'called "^baton notice wait --json" && ! called cancel-spot-fleet-requests' "notice: the fleet is not cancelled (it replaces the instance)"
check 'grep -q "outcome=notice" "$S/data/vol-0a/logs/aws-runs.log"' "notice: the run is logged on the volume"
no_violations "notice"

# 9. a crash: retried (retries: 1), then the task fails; the fleet is never cancelled
S=$T/sc-crash; mkdir -p "$S"; old_volume vol-0a
scenario crash crash "$(world us-east-1a "$VOLA")"
check '[ $UDRC -ne 0 ] && [ "$(grep -c "^run " "$S/job.log")" -eq 2 ]' "crash: run twice (one retry), then failed: $(grep -c "^run " "$S/job.log") runs"
check '! called cancel-spot-fleet-requests' "crash: the fleet is not cancelled"
check '[ "$(grep -c "outcome=crash" "$S/data/vol-0a/logs/aws-runs.log")" -eq 2 ]' "crash: both crashes logged on the volume"
# the replacement instance sees the failed task and does not run it again
$PY -c 'import json,sys; p=sys.argv[1]; s=json.load(open(p)); s["volumes"]["vol-0a"]["state"]="available"; json.dump(s, open(p,"w"))' "$S/state.json"
mv "$S/job.log" "$S/job1.log"
run_ud "$S"
check '[ $UDRC -ne 0 ] && [ ! -e "$S/job.log" ] && ! called cancel-spot-fleet-requests' "crash: a replacement does not run a failed task again"
no_violations "crash"

# the instance policy grants exactly the actions the scenarios used, each a real operation
$PY tests/aws/validate.py calls "$OUT/instance-policy.json" "$T"/sc-*/calls.log >"$T/v5" 2>&1; rc=$?
check '[ $rc -eq 0 ]' "least privilege: $(cat "$T/v5")"

# ---- --apply through a stub aws CLI
A=$T/apply
mkdir -p "$A/bin"
ln -sf "$ROOT/tests/aws/stub.py" "$A/bin/aws"
echo '{"apply": true, "existing": ["baton-awsjob-fleet"], "iam_lag": 1}' >"$A/state.json"
: >"$A/calls.log"
awsrun() { PATH="$A/bin:$PATH" BATON_STUB_DIR=$A BATON_AWS_RETRY_DELAY=0 "$@"; }
sed '/account_id:/d' "$T/job.yaml" >"$T/noacct.yaml"
expect_fail 1 "aws.account_id: needed" "$BATON" fleet run "$T/noacct.yaml" --out "$A/out"
awsrun "$BATON" fleet run "$T/noacct.yaml" --out "$A/out" --apply >"$A/apply.out" 2>"$A/apply.err"; rc=$?
check '[ $rc -eq 0 ]' "apply: $(tail -n 3 "$A/apply.err")"
check 'head -n1 "$A/calls.log" | grep -q "^aws sts get-caller-identity"' "apply: the account comes from sts"
check 'grep -q "(already there)" "$A/apply.err"' "apply: an existing role is fine"
check '[ "$(grep -c "request-spot-fleet" "$A/calls.log")" -eq 2 ] && grep -q "IAM not ready yet" "$A/apply.err"' "apply: the fleet request is retried while IAM settles"
same_words() {   # the commands of two files, as word lists, with repeats (retries) dropped
    $PY - "$1" "$2" <<"EOF"
import shlex, sys
def cmds(p):
    out = []
    for l in open(p):
        w = shlex.split(l) if l.startswith("aws ") else []
        if w[:1] == ["aws"] and w[1:3] != ["sts", "get-caller-identity"] and (not out or out[-1] != w):
            out.append(w)
    return out
sys.exit(0 if cmds(sys.argv[1]) == cmds(sys.argv[2]) else 1)
EOF
}
check 'same_words "$A/calls.log" "$A/out/commands.sh"' "apply: ran exactly commands.sh, in order"
check 'grep -q "\"id\":.*\"sfr-00000001" "$A/out/fleet-requests.json"' "apply: the request id is recorded"
check 'awsrun "$BATON" fleet status "$T/noacct.yaml" --out "$A/out" | grep -Eq "^0 +sfr-00000001-[0-9a-f-]+ +active"' "status: the fleet is active"
expect_fail 1 "still active" awsrun "$BATON" fleet run "$T/noacct.yaml" --out "$A/out" --apply
check 'awsrun "$BATON" fleet cancel awsjob --backend aws --out "$A/out" 2>/dev/null && tail -n1 "$A/calls.log" | grep -q "cancel-spot-fleet-requests --region us-east-1 --spot-fleet-request-ids sfr-00000001.* --terminate-instances"' \
    "cancel: cancel-spot-fleet-requests --terminate-instances"
check 'awsrun "$BATON" fleet status awsjob --backend aws --out "$A/out" | grep -q cancelled_terminating' "status after cancel"

# ---- bad input
bad_job() {   # bad_job PATTERN SED-EXPR...: the job file edited, then refused with PATTERN
    local pat=$1; shift
    sed "$@" "$T/job.yaml" >"$T/badjob.yaml"
    expect_fail 1 "$pat" "$BATON" fleet run "$T/badjob.yaml" --out "$T/badout"
}
bad_job "zones: us-west-2a is not in region us-east-1" -e 's/us-east-1b\]/us-west-2a]/'
bad_job "aws.image_id: missing" -e '/image_id/d'
bad_job "badjob.yaml:[0-9]+: aws.image_id: 'ubuntu' is not an AMI id" -e 's/ami-0123456789abcdef0/ubuntu/'
bad_job "badjob.yaml:[0-9]+: aws.instance_type: unknown field" -e 's/  key_name: my-key/  instance_type: c5.large/'
bad_job "volume.seed: the aws backend cannot copy a folder of this machine" -e '$a volume: {seed: ./data}'
bad_job "market: the aws backend runs on the real spot market" -e '$a market: {time_scale: 60}'
bad_job "aws.code: expected s3://" -e 's#s3://my-bucket/jobs/awsjob/code.tar.gz#https://example.com/code.tgz#'
bad_job "aws.subnets.us-east-1c: zone us-east-1c is not listed" -e '$a \ \ subnets: {us-east-1c: subnet-0123456789abcdef0}'
printf 'name: sw\nbackend: aws\ncommands: [a, b]\ntarget_capacity: 1\ninstance_types: [c5.large]\nzones: [us-east-1a]\naws: {image_id: ami-0123456789abcdef0, account_id: "123456789012"}\n' >"$T/cap.yaml"
expect_fail 1 "target_capacity: the aws backend runs every task at once" "$BATON" fleet run "$T/cap.yaml" --out "$T/badout"
expect_fail 2 "--account: expected a 12-digit" "$BATON" fleet run "$T/job.yaml" --out "$T/badout" --account 12
finish
