#!/usr/bin/env bash
# test_aws_artifacts.sh — the aws backend of `baton fleet`, entirely offline (no AWS, no network):
#   - artefacts from a job file for each API — an Auto Scaling group per task (the default), an EC2
#     Fleet (aws.api / --api ec2-fleet), the seed's Spot Fleet (spot-fleet): every dry-run command,
#     turned into the API request the aws CLI would send (--cli-input-json files read as the whole
#     request), passes botocore's parameter validation against Debian's EC2, Auto Scaling and IAM
#     service models (tests/aws/validate.py), in an order that works; the requests' contents (the
#     launch template: IMDSv2 required with hop limit 1, the profile, the user data, no volume
#     tagged as the task's; the group: the job's types, 100 % Spot, the allocation strategy, 1/1/1,
#     Capacity Rebalancing; the fleet: maintain one Spot instance over every pool); the IAM
#     documents are well-formed and name only existing actions; tampered requests are caught; a
#     two-command sweep gives one launch template and group per task;
#   - the user-data script of each API, run with stub aws, curl, mount, umount, mkfs, shutdown and
#     baton on PATH (tests/aws/stub.py) through its scenarios: same zone, other zone (a verified
#     snapshot copy before the old volume goes), first launch (create + mkfs), a failed snapshot, a
#     failed snapshot request, a copy that does not verify, another task's volume, an interruption
#     notice, a crashing command (retries, then no ending), and the replacement after that; the
#     order of the calls, that no path deletes the only copy of the volume or formats one that
#     holds data, that only success ends the task's capacity (the group to desired 0, the EC2
#     Fleet deleted, the Spot Fleet cancelled); and that each API's instance policy grants exactly
#     the actions its scenarios used;
#   - --apply through a stub aws CLI for each API (an existing role is fine, a group or fleet
#     request refused while IAM settles is retried), status, cancel (groups or fleets, then the
#     launch templates), refusing a second apply while the first's groups or fleets are there;
#   - bad input: what EC2 cannot do is refused with the field (and line) named.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
ROOT=$(pwd)
PY=/usr/bin/python3
if ! $PY -c 'import botocore' 2>/dev/null; then
    echo "FAIL: python3-botocore is not installed (scripts/deps.sh installs it)" >&2
    exit 1
fi
BATON=$(cd "$(dirname "$BATON")" && pwd)/$(basename "$BATON")

# ---- a job file and its artefacts: an Auto Scaling group by default
cat >"$T/job.yaml" <<EOF
name: awsjob
backend: aws
command: sh $T/job.sh
retries: 1
instance_types: [c5.xlarge, m5.xlarge]
zones: [us-east-1a, us-east-1b]
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
validate() {   # validate OUT CMDS N WHAT: botocore accepts all N requests, and the IAM documents
    $PY tests/aws/validate.py requests "$1" "$2" >"$T/v.req" 2>&1
    local rc=$? want=$3
    check '[ $rc -eq 0 ] && [ "$(grep -c "^ok - aws .*: valid" "$T/v.req")" -eq $want ]' \
        "$4: botocore validates every request: $(grep -v "^ok" "$T/v.req" | head -5)"
    $PY tests/aws/validate.py documents "$1" >"$T/v.doc" 2>&1
    rc=$?
    check '[ $rc -eq 0 ]' "$4: IAM documents: $(grep -v "^ok" "$T/v.doc")"
}
OUT=$T/artefacts
check '"$BATON" fleet run "$T/job.yaml" --out "$OUT" >"$T/cmds" 2>"$T/run.err"' "fleet run --backend aws (dry run)"
check 'grep -q "dry run: nothing was sent" "$T/run.err" && grep -q "Auto Scaling groups" "$T/run.err"' \
    "dry run says nothing was sent, and what it made"
check '[ "$(grep -c "^aws " "$T/cmds")" -eq 6 ]' "six commands: role, policy, profile, role in profile, launch template, group"
for f in launch-template.json auto-scaling-group.json user-data.sh instance-trust-policy.json instance-policy.json \
         deployer-policy.json commands.sh; do
    check '[ -s "$OUT/$f" ]' "artefact $f"
done
check '[ ! -e "$OUT/spot_fleet_config.json" ] && [ ! -e "$OUT/fleet-trust-policy.json" ]' "no Spot Fleet artefacts by default"
check 'diff <(grep "^aws " "$OUT/commands.sh") "$T/cmds" >/dev/null' "commands.sh holds the printed commands"
check 'grep -q -- "create-launch-template --region us-east-1 --cli-input-json file://$OUT/launch-template.json" "$T/cmds" &&
       grep -q -- "autoscaling create-auto-scaling-group --region us-east-1 --cli-input-json file://$OUT/auto-scaling-group.json" "$T/cmds"' \
    "the requests go in as the APIs' own parameters (--cli-input-json)"
validate "$OUT" "$T/cmds" 6 "auto scaling group"
check '$PY - "$OUT" <<"PY"
import base64, json, sys
d = sys.argv[1]
g = json.load(open(d + "/auto-scaling-group.json"))
lt = json.load(open(d + "/launch-template.json"))
mip = g["MixedInstancesPolicy"]
assert g["AutoScalingGroupName"] == "baton-awsjob-0" == lt["LaunchTemplateName"]
assert [o["InstanceType"] for o in mip["LaunchTemplate"]["Overrides"]] == ["c5.xlarge", "m5.xlarge"]
assert mip["LaunchTemplate"]["LaunchTemplateSpecification"]["LaunchTemplateName"] == "baton-awsjob-0"
assert mip["InstancesDistribution"] == {"OnDemandBaseCapacity": 0, "OnDemandPercentageAboveBaseCapacity": 0,
                                        "SpotAllocationStrategy": "price-capacity-optimized"}, mip
assert (g["MinSize"], g["MaxSize"], g["DesiredCapacity"]) == (1, 1, 1) and g["CapacityRebalance"] is True
assert g["AvailabilityZones"] == ["us-east-1a", "us-east-1b"] and "VPCZoneIdentifier" not in g
tags = {t["Key"]: t["Value"] for t in g["Tags"] if t["PropagateAtLaunch"]}
assert tags == {"baton-job": "awsjob", "baton-task": "0", "team": "ml"}, tags
ltd = lt["LaunchTemplateData"]
assert ltd["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1, "HttpEndpoint": "enabled"}
assert ltd["IamInstanceProfile"]["Arn"] == "arn:aws:iam::123456789012:instance-profile/baton-awsjob"
assert ltd["ImageId"] == "ami-0123456789abcdef0" and ltd["KeyName"] == "my-key"
assert ltd["SecurityGroupIds"] == ["sg-0123456789abcdef0"]
assert base64.b64decode(ltd["UserData"]) == open(d + "/user-data.sh", "rb").read()
assert [t["ResourceType"] for t in ltd["TagSpecifications"]] == ["instance"]
PY' "group: the job's types over the launch template, 100 % Spot, price-capacity-optimized, 1/1/1, rebalancing; template: IMDSv2, profile, user data"
check 'grep -q "^API=auto-scaling-group$" "$OUT/user-data.sh" && grep -q "^GROUP=baton-awsjob-0$" "$OUT/user-data.sh" &&
       ! grep -q "cancel-spot-fleet-requests\|delete-fleets" "$OUT/user-data.sh"' "the user data knows its group and ends only it"
check '$PY - "$OUT/instance-policy.json" "$OUT/deployer-policy.json" <<"PY"
import json, sys
ip, dp = (json.load(open(p)) for p in sys.argv[1:])
acts = lambda d: {a for s in d["Statement"] for a in s["Action"]}
assert "autoscaling:UpdateAutoScalingGroup" in acts(ip), acts(ip)
assert not acts(ip) & {"ec2:CancelSpotFleetRequests", "ec2:DeleteFleets", "ec2:DescribeTags"}, acts(ip)
up = [s for s in ip["Statement"] if "autoscaling:UpdateAutoScalingGroup" in s["Action"]][0]
assert up["Resource"] == "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/baton-awsjob-*"
assert up["Condition"] == {"StringEquals": {"autoscaling:ResourceTag/baton-job": "awsjob"}}
assert {"autoscaling:CreateAutoScalingGroup", "ec2:CreateLaunchTemplate", "ec2:RunInstances", "iam:PassRole",
        "iam:CreateServiceLinkedRole"} <= acts(dp), acts(dp)
assert not acts(dp) & {"ec2:RequestSpotFleet", "iam:AttachRolePolicy"}, acts(dp)
PY' "instance policy: UpdateAutoScalingGroup on the job's groups only, no Spot Fleet action; deployer: what a group needs"
# the validator is not a rubber stamp
tamper() {   # tamper FILE SED-EXPR WHAT: the edited request must fail validation
    local f=$1
    sed "$2" "$OUT/$f" >"$T/bad-$f"
    sed "s#file://$OUT/$f#file://$T/bad-$f#" "$T/cmds" >"$T/badcmds"
    check '! cmp -s "$OUT/$f" "$T/bad-$f" && ! $PY tests/aws/validate.py requests "$OUT" "$T/badcmds" >"$T/v3" 2>&1' \
        "validation catches $3"
}
tamper auto-scaling-group.json 's/"MinSize":\t1/"MinSize":\t"1"/' "a string MinSize"
tamper auto-scaling-group.json 's/"price-capacity-optimized"/"cheapest"/' "an allocation strategy AWS does not have"
tamper auto-scaling-group.json 's/"MaxSize":\t1/"MaxSize":\t2/' "a group that may run two instances"
tamper auto-scaling-group.json 's/"CapacityRebalance":\ttrue/"CapacityRebalance":\tfalse/' "Capacity Rebalancing off"
tamper launch-template.json 's/"required"/"optional"/' "IMDSv1 allowed"
tamper launch-template.json 's/"ResourceType":\t"instance"/"ResourceType":\t"volume"/' \
    "a launch template that would tag a root volume as the task's"
tamper launch-template.json 's/"HttpPutResponseHopLimit":\t1/"HttpPutResponseHopLimit":\t"x"/' "a string hop limit"

# the allocation strategy of the job file reaches the group
sed 's/^retries: 1$/retries: 1\nallocation_strategy: capacity-optimized/' "$T/job.yaml" >"$T/co.yaml"
check '"$BATON" fleet run "$T/co.yaml" --out "$T/co" >/dev/null 2>&1 && grep -q "\"SpotAllocationStrategy\":.*\"capacity-optimized\"" "$T/co/auto-scaling-group.json"' \
    "allocation_strategy: capacity-optimized reaches the group"

# EC2 Fleet: --api (or aws.api: ec2-fleet)
EF=$T/ec2fleet
check '"$BATON" fleet run "$T/co.yaml" --out "$EF" --api ec2-fleet >"$T/efcmds" 2>/dev/null' "fleet run --api ec2-fleet"
check '[ "$(grep -c "^aws " "$T/efcmds")" -eq 7 ] && grep -q "^aws iam create-service-linked-role --aws-service-name ec2fleet.amazonaws.com$" "$T/efcmds" &&
       grep -q -- "aws ec2 create-fleet --region us-east-1 --cli-input-json file://$EF/ec2-fleet.json" "$T/efcmds"' \
    "ec2-fleet: the role, EC2 Fleet's service-linked role, a launch template and a create-fleet"
validate "$EF" "$T/efcmds" 7 "ec2 fleet"
check '$PY - "$EF" <<"PY"
import json, sys
f = json.load(open(sys.argv[1] + "/ec2-fleet.json"))
assert f["Type"] == "maintain" and f["ReplaceUnhealthyInstances"] is True
assert f["TargetCapacitySpecification"] == {"TotalTargetCapacity": 1, "OnDemandTargetCapacity": 0, "SpotTargetCapacity": 1,
                                            "DefaultTargetCapacityType": "spot"}
so = f["SpotOptions"]
assert so["AllocationStrategy"] == "capacity-optimized" and so["InstanceInterruptionBehavior"] == "terminate"
assert so["MaintenanceStrategies"]["CapacityRebalance"] == {"ReplacementStrategy": "launch-before-terminate", "TerminationDelay": 120}
pools = {(o["InstanceType"], o["AvailabilityZone"]) for o in f["LaunchTemplateConfigs"][0]["Overrides"]}
assert pools == {(t, z) for t in ("c5.xlarge", "m5.xlarge") for z in ("us-east-1a", "us-east-1b")}, pools
assert f["TagSpecifications"][0]["ResourceType"] == "fleet" and f["ClientToken"].startswith("baton-awsjob-0-")
PY' "ec2 fleet: maintain one Spot instance over every type x zone, capacity-optimized, rebalancing, tagged"
check 'grep -q "^API=ec2-fleet$" "$EF/user-data.sh" && grep -q "delete-fleets" "$EF/user-data.sh" && ! grep -q "update-auto-scaling-group" "$EF/user-data.sh"' \
    "ec2-fleet: the user data deletes its own fleet on success"
check 'grep -q "\"ec2:DeleteFleets\"" "$EF/instance-policy.json" && grep -q "\"ec2:DescribeTags\"" "$EF/instance-policy.json" && ! grep -q "autoscaling:" "$EF/instance-policy.json"' \
    "ec2-fleet: the instance may delete fleets tagged with the job, nothing of Auto Scaling"
sed 's/"maintain"/"instant"/' "$EF/ec2-fleet.json" >"$T/bad-ef.json"
sed "s#file://$EF/ec2-fleet.json#file://$T/bad-ef.json#" "$T/efcmds" >"$T/badcmds"
check '! $PY tests/aws/validate.py requests "$EF" "$T/badcmds" >/dev/null 2>&1' "validation catches a fleet that is not maintained"

# the seed's Spot Fleet: aws.api: spot-fleet
SF=$T/spotfleet
sed 's/^aws:$/aws:\n  api: spot-fleet/' "$T/co.yaml" >"$T/spot.yaml"
check '"$BATON" fleet run "$T/spot.yaml" --out "$SF" >"$T/sfcmds" 2>/dev/null' "fleet run with aws.api: spot-fleet"
check '[ "$(grep -c "^aws " "$T/sfcmds")" -eq 7 ] && [ -s "$SF/spot_fleet_config.json" ] && [ -s "$SF/fleet-trust-policy.json" ] && [ ! -e "$SF/launch-template.json" ]' \
    "spot-fleet: the seed's seven commands and files"
validate "$SF" "$T/sfcmds" 7 "spot fleet"
check '$PY - "$SF/spot_fleet_config.json" <<"PY"
import json, sys
c = json.load(open(sys.argv[1]))
specs = c["LaunchSpecifications"]
pools = {(s["InstanceType"], s["Placement"]["AvailabilityZone"]) for s in specs}
assert pools == {(t, z) for t in ("c5.xlarge", "m5.xlarge") for z in ("us-east-1a", "us-east-1b")}, pools
assert c["TargetCapacity"] == 1 and c["AllocationStrategy"] == "capacityOptimized" and c["Type"] == "maintain"
assert c["IamFleetRole"] == "arn:aws:iam::123456789012:role/baton-awsjob-fleet"
assert all(s["IamInstanceProfile"]["Arn"] == "arn:aws:iam::123456789012:instance-profile/baton-awsjob" for s in specs)
assert all(s["SecurityGroups"] == [{"GroupId": "sg-0123456789abcdef0"}] and s["KeyName"] == "my-key" for s in specs)
PY' "spot fleet config: a launch specification per type and zone, capacity 1, capacityOptimized, roles by ARN"
sed 's/"capacityOptimized"/"cheapest"/' "$SF/spot_fleet_config.json" >"$T/bad.json"
sed "s#file://$SF/spot_fleet_config.json#file://$T/bad.json#" "$T/sfcmds" >"$T/badcmds"
check '! $PY tests/aws/validate.py requests "$SF" "$T/badcmds" >"$T/v3" 2>&1 && grep -q "cheapest" "$T/v3"' \
    "validation catches a bad Spot Fleet AllocationStrategy"

# a sweep of two commands: a launch template and a group per task, each template first
sed 's#^command: .*#commands: ["sh '"$T"'/job.sh a", "sh '"$T"'/job.sh b"]#' "$T/job.yaml" >"$T/sweep.yaml"
check '"$BATON" fleet run "$T/sweep.yaml" --out "$T/sweep" >"$T/sweepcmds" 2>/dev/null' "sweep: artefacts"
check '[ -s "$T/sweep/launch-template-0.json" ] && [ -s "$T/sweep/auto-scaling-group-1.json" ] && [ -s "$T/sweep/user-data-1.sh" ]' \
    "sweep: a launch template, a group and user data per task"
validate "$T/sweep" "$T/sweepcmds" 8 "sweep"
check 'grep -q "^TASK=1$" "$T/sweep/user-data-1.sh" && grep -q "^COMMAND=.*job.sh b" "$T/sweep/user-data-1.sh" && grep -q "^GROUP=baton-awsjob-1$" "$T/sweep/user-data-1.sh"' \
    "sweep: task 1 runs its own command and ends its own group"

# ---- the user-data script through its scenarios, for each API
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

# scenario NAME MODE STATE_JSON: a fresh world, then the user data $UD runs once; sets S and UDRC
scenario() {
    S=$SC/sc-$1
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
        BATON_UD_CODE_DIR=$1/codedir BATON_UD_PAUSE=0.05 timeout 60 bash "$UD" </dev/null
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
    printf '{"instance": {"id": "i-0123456789abcdef0", "zone": "%s", "type": "c5.xlarge", "fleet": "sfr-11111111-2222-3333-4444-555555555555", "ec2fleet": "fleet-11111111-2222-3333-4444-555555555555"}, "volumes": %s, "snapshots": {}%s}' \
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
ENDS="update-auto-scaling-group|delete-fleets|cancel-spot-fleet-requests"   # any way of ending a task

# scenarios API USERDATA END_REGEX: the whole battery for one API's user data (its ending: END)
scenarios() {
    local api=$1 END=$3
    UD=$2
    SC=$T/ud-$api
    mkdir -p "$SC"
    # 1. same zone: the previous instance lets go, the volume is attached as it is
    S=$SC/sc-same; mkdir -p "$S"; old_volume vol-0a
    scenario same ok "$(world us-east-1a "$VOLA")"
    check '[ $UDRC -eq 0 ]' "$api same zone: exit 0 ($UDRC): $(tail -n 3 "$S/ud.log")"
    check 'before "api/token" "meta-data/instance-id" && before "meta-data/instance-id" "describe-volumes"' "$api same zone: IMDSv2 token first"
    check 'before "wait volume-available --volume-ids vol-0a" "attach-volume --volume-id vol-0a" && before attach-volume "^mount " && before "^mount " "s3 cp"' \
        "$api same zone: wait, attach, mount, then the code"
    check '! called "create-snapshot|create-volume|delete-volume|delete-snapshot|^mkfs"' "$api same zone: no snapshot, no new volume, no deletion, no mkfs"
    check 'grep -q "run pwd=$S/data/vol-0a vol=$S/mnt task=0 iid=i-0123456789abcdef0 zone=us-east-1a omp=4 code=from-the-code-bundle" "$S/job.log"' \
        "$api same zone: the command ran in the volume with the job's environment and the fetched code: $(cat "$S/job.log")"
    check 'before "^umount " "$END"' "$api same zone: success unmounts, then ends its own task ($END): $(grep -E "$ENDS" "$S/calls.log")"
    check '[ "$(grep -c -E "$ENDS" "$S/calls.log")" -eq 1 ]' "$api same zone: one ending, its own"
    check '[ -f "$S/data/vol-0a/result.txt" ] && [ -f "$S/data/vol-0a/ckpt/ckpt-000000010/model.safetensors" ]' "$api same zone: results on the volume, checkpoint kept"
    check '! called "s3 sync"' "$api same zone: an existing volume is not seeded again"
    no_violations "$api same zone"

    # 2. another zone: snapshot, copy, verify, mount, and only then delete the old volume
    S=$SC/sc-move; mkdir -p "$S"; old_volume vol-0b
    scenario move ok "$(world us-east-1a "$VOLB")"
    check '[ $UDRC -eq 0 ]' "$api move: exit 0 ($UDRC): $(tail -n 3 "$S/ud.log")"
    check 'before "wait volume-available --volume-ids vol-0b" "create-snapshot --volume-id vol-0b" && before create-snapshot "wait snapshot-completed" && before "wait snapshot-completed" "create-volume --availability-zone us-east-1a --snapshot-id snap-"' \
        "$api move: old volume free, snapshot, wait for it, new volume from it in this zone"
    check 'before "create-volume --availability-zone us-east-1a --snapshot-id" "describe-volumes --volume-ids vol-" && before "describe-volumes --volume-ids" "attach-volume" && before "^mount " "delete-volume --volume-id vol-0b" && before "delete-volume --volume-id vol-0b" "delete-snapshot"' \
        "$api move: verify the copy, attach and mount it, then delete the old volume, then the snapshot"
    check 'before "delete-snapshot" "s3 cp" && before "s3 cp" "$END"' "$api move: then the job, then the ending"
    check '! called "^mkfs|attach-volume --volume-id vol-0b"' "$api move: the copy is not formatted; the old volume is never attached here"
    check 'inv=$(inventory); case "$inv" in "vol-"*" | ") [ "${inv%% *}" != vol-0b ] ;; *) false ;; esac' "$api move: one volume left (the copy), no snapshot: $(inventory)"
    check 'new=$(inventory | cut -d" " -f1); [ -f "$S/data/$new/ckpt/ckpt-000000010/model.safetensors" ] && [ -f "$S/data/$new/result.txt" ]' \
        "$api move: the copy holds the checkpoint and the job's results"
    no_violations "$api move"

    # 3. first launch: no volume yet: create, format (this one only), mark, seed
    S=$SC/sc-first
    scenario first ok "$(world us-east-1b "{}")"
    check '[ $UDRC -eq 0 ]' "$api first launch: exit 0 ($UDRC): $(tail -n 3 "$S/ud.log")"
    check 'before "create-volume --availability-zone us-east-1b --size 20 --volume-type gp3" "attach-volume" && before attach-volume "^mkfs -t ext4" && before "^mkfs" "^mount " && before "^mount " "s3 sync --only-show-errors s3://my-bucket/data/awsjob/"' \
        "$api first launch: create, attach, mkfs, mount, seed"
    check 'v=$(inventory | cut -d" " -f1); [ "$(cat "$S/data/$v/.baton-volume")" = "job=awsjob task=0" ] && [ -f "$S/data/$v/seed.txt" ]' "$api first launch: marker written, seed copied"
    check 'grep -q "baton-job,Value=awsjob},{Key=baton-task,Value=0},{Key=team,Value=ml}" "$S/calls.log"' "$api first launch: the volume is tagged (job, task, extra tags)"
    no_violations "$api first launch"

    # 4. the snapshot fails: nothing is deleted, nothing created from it, the instance powers off
    S=$SC/sc-snapfail; mkdir -p "$S"; old_volume vol-0b
    scenario snapfail ok "$(world us-east-1a "$VOLB" '"fail": ["snapshot-completed"]')"
    check '[ $UDRC -ne 0 ]' "$api snapshot failure: the script gives up"
    check 'called "wait snapshot-completed" && ! called "create-volume|delete-volume|attach-volume|^mount |s3 cp"' \
        "$api snapshot failure: no copy from it, no deletion, no attach, no job"
    check 'called "^shutdown -h now" && ! called "$ENDS"' "$api snapshot failure: powers off for a replacement; the task is not ended"
    check 'inventory | grep -q "^vol-0b |" && [ -f "$S/data/vol-0b/ckpt/ckpt-000000010/model.safetensors" ]' "$api snapshot failure: the volume is intact: $(inventory)"
    check '[ ! -e "$S/job.log" ]' "$api snapshot failure: the command did not run"
    no_violations "$api snapshot failure"

    # 5. the snapshot request itself is refused
    S=$SC/sc-snapreq; mkdir -p "$S"; old_volume vol-0b
    scenario snapreq ok "$(world us-east-1a "$VOLB" '"fail": ["create-snapshot"]')"
    check '[ $UDRC -ne 0 ] && called "^shutdown" && ! called "create-volume|delete-|attach-volume"' "$api snapshot refused: gives up, deletes nothing"
    no_violations "$api snapshot refused"

    # 6. the copy does not verify (size): the copy is removed, the original kept
    S=$SC/sc-badcopy; mkdir -p "$S"; old_volume vol-0b
    scenario badcopy ok "$(world us-east-1a "$VOLB" '"fail": ["copy-size"]')"
    check '[ $UDRC -ne 0 ] && called "^shutdown" && ! called "attach-volume|delete-volume --volume-id vol-0b|delete-snapshot"' \
        "$api copy not verified: not attached; neither the original nor the snapshot deleted"
    check 'before "describe-volumes --volume-ids" "delete-volume --volume-id vol-"' "$api copy not verified: the bad copy is deleted after the check"
    check 'inventory | grep -q "^vol-0b | snap-"' "$api copy not verified: original and snapshot remain: $(inventory)"
    no_violations "$api copy not verified"

    # 7. a volume tagged for this task but marked for another: refused, not touched
    S=$SC/sc-marker; mkdir -p "$S"; old_volume vol-0a; echo "job=other task=3" >"$S/data/vol-0a/.baton-volume"
    scenario marker ok "$(world us-east-1a "$VOLA")"
    check '[ $UDRC -ne 0 ] && before "^mount " "^umount " && called "^shutdown" && [ ! -e "$S/job.log" ] && ! called "^mkfs|delete-"' \
        "$api another task's volume: unmounted, no job, no mkfs, no deletion"
    no_violations "$api marker"

    # 8. an interruption notice: the watcher fires, the command checkpoints (75), the task goes on
    S=$SC/sc-notice; mkdir -p "$S"; old_volume vol-0a
    scenario notice notice "$(world us-east-1a "$VOLA" '"notice_after": 0.3')"
    check '[ $UDRC -eq 0 ] && grep -q "^term$" "$S/job.log"' "$api notice: the command got TERM from the watcher and exited 75: $(tail -n 2 "$S/ud.log")"
    check 'called "^baton notice wait --json" && ! called "$ENDS"' "$api notice: the task is not ended (a replacement resumes it)"
    check 'grep -q "outcome=notice" "$S/data/vol-0a/logs/aws-runs.log"' "$api notice: the run is logged on the volume"
    no_violations "$api notice"

    # 9. a crash: retried (retries: 1), then the task fails; it is never ended by the script
    S=$SC/sc-crash; mkdir -p "$S"; old_volume vol-0a
    scenario crash crash "$(world us-east-1a "$VOLA")"
    check '[ $UDRC -ne 0 ] && [ "$(grep -c "^run " "$S/job.log")" -eq 2 ]' "$api crash: run twice (one retry), then failed: $(grep -c "^run " "$S/job.log") runs"
    check '! called "$ENDS"' "$api crash: the task is not ended (left for inspection)"
    check '[ "$(grep -c "outcome=crash" "$S/data/vol-0a/logs/aws-runs.log")" -eq 2 ]' "$api crash: both crashes logged on the volume"
    # the replacement instance sees the failed task and does not run it again
    $PY -c 'import json,sys; p=sys.argv[1]; s=json.load(open(p)); s["volumes"]["vol-0a"]["state"]="available"; json.dump(s, open(p,"w"))' "$S/state.json"
    mv "$S/job.log" "$S/job1.log"
    run_ud "$S"
    check '[ $UDRC -ne 0 ] && [ ! -e "$S/job.log" ] && ! called "$ENDS"' "$api crash: a replacement does not run a failed task again"
    no_violations "$api crash"

    # the instance policy grants exactly the actions the scenarios used, each a real operation
    $PY tests/aws/validate.py calls "$(dirname "$UD")/instance-policy.json" "$SC"/sc-*/calls.log >"$T/v5" 2>&1
    local rc=$?
    check '[ $rc -eq 0 ]' "$api least privilege: $(cat "$T/v5")"
}
if [ "${BATON_BUILD:-build}" = build-san ] && [ -x build/baton ] && [ "$BATON" != build/baton ]; then
    # The scenarios run the user data (shell) with stub tools: no code of baton's runs in them. Under
    # the sanitizers it is enough that this build writes the plain build's scripts byte for byte;
    # the plain build's pass runs every scenario on them.
    same_ud() { cmp -s <(grep -v "^GEN=" "$1") <(grep -v "^GEN=" "$2"); }   # GEN: the generation's stamp
    check 'build/baton fleet run "$T/job.yaml" --out "$T/p-asg" >/dev/null 2>&1 && same_ud "$T/p-asg/user-data.sh" "$OUT/user-data.sh" &&
           build/baton fleet run "$T/co.yaml" --out "$T/p-ef" --api ec2-fleet >/dev/null 2>&1 && same_ud "$T/p-ef/user-data.sh" "$EF/user-data.sh" &&
           build/baton fleet run "$T/spot.yaml" --out "$T/p-sf" >/dev/null 2>&1 && same_ud "$T/p-sf/user-data.sh" "$SF/user-data.sh"' \
        "under the sanitizers the three user-data scripts are the plain build's, byte for byte but the stamp (their scenarios run in its pass)"
else
    scenarios auto-scaling-group "$OUT/user-data.sh" \
        "^aws autoscaling update-auto-scaling-group --auto-scaling-group-name baton-awsjob-0 --min-size 0 --desired-capacity 0$"
    scenarios ec2-fleet "$EF/user-data.sh" \
        "^aws ec2 delete-fleets --fleet-ids fleet-11111111-2222-3333-4444-555555555555 --terminate-instances$"
    scenarios spot-fleet "$SF/user-data.sh" \
        "^aws ec2 cancel-spot-fleet-requests --spot-fleet-request-ids sfr-11111111-2222-3333-4444-555555555555 --terminate-instances$"
fi

# ---- --apply through a stub aws CLI
same_words() {   # the commands of two files, as word lists, with repeats (retries) dropped
    $PY - "$1" "$2" <<"PY"
import shlex, sys
def cmds(p):
    out = []
    for l in open(p):
        w = shlex.split(l) if l.startswith("aws ") else []
        if w[:1] == ["aws"] and w[1:3] != ["sts", "get-caller-identity"] and (not out or out[-1] != w):
            out.append(w)
    return out
sys.exit(0 if cmds(sys.argv[1]) == cmds(sys.argv[2]) else 1)
PY
}
apply_world() {   # apply_world DIR STATE_JSON: a stub account
    A=$1
    mkdir -p "$A/bin"
    ln -sf "$ROOT/tests/aws/stub.py" "$A/bin/aws"
    echo "$2" >"$A/state.json"
    : >"$A/calls.log"
}
awsrun() { PATH="$A/bin:$PATH" BATON_STUB_DIR=$A BATON_AWS_RETRY_DELAY=0 "$@"; }
sed '/account_id:/d' "$T/job.yaml" >"$T/noacct.yaml"
expect_fail 1 "aws.account_id: needed" "$BATON" fleet run "$T/noacct.yaml" --out "$T/noacct-out"

# the Auto Scaling group (default)
apply_world "$T/apply" '{"apply": true, "existing": ["baton-awsjob-instance"], "iam_lag": 1}'
awsrun "$BATON" fleet run "$T/noacct.yaml" --out "$A/out" --apply >"$A/apply.out" 2>"$A/apply.err"; rc=$?
check '[ $rc -eq 0 ]' "apply: $(tail -n 3 "$A/apply.err")"
check 'head -n1 "$A/calls.log" | grep -q "^aws sts get-caller-identity"' "apply: the account comes from sts"
check 'grep -q "(already there)" "$A/apply.err"' "apply: an existing role is fine"
check '[ "$(grep -c "create-auto-scaling-group" "$A/calls.log")" -eq 2 ] && grep -q "IAM not ready yet" "$A/apply.err"' \
    "apply: the group request is retried while IAM settles"
check 'same_words "$A/calls.log" "$A/out/commands.sh"' "apply: ran exactly commands.sh, in order"
check '$PY -c "import json,sys; r=json.load(open(sys.argv[1])); assert r[\"api\"] == \"auto-scaling-group\" and r[\"requests\"] == [{\"task\": 0, \"id\": \"baton-awsjob-0\", \"launch_template\": \"baton-awsjob-0\"}], r" "$A/out/fleet-requests.json"' \
    "apply: the group and its launch template are recorded"
check 'awsrun "$BATON" fleet status "$T/noacct.yaml" --out "$A/out" | grep -Eq "^0 +baton-awsjob-0 +active +i-0123456789abcdef0 InService +1/1"' \
    "status: the group is active, its instance in service"
expect_fail 1 "Auto Scaling group baton-awsjob-0 of this job \(task 0\) is still there" awsrun "$BATON" fleet run "$T/noacct.yaml" --out "$A/out" --apply
check 'awsrun "$BATON" fleet cancel awsjob --backend aws --out "$A/out" 2>"$A/cancel.err" &&
       grep -q "^aws autoscaling delete-auto-scaling-group --region us-east-1 --auto-scaling-group-name baton-awsjob-0 --force-delete$" "$A/calls.log" &&
       tail -n1 "$A/calls.log" | grep -q "^aws ec2 delete-launch-template --region us-east-1 --launch-template-name baton-awsjob-0$"' \
    "cancel: the group (force: its instance terminates), then its launch template: $(cat "$A/cancel.err")"
check 'awsrun "$BATON" fleet status awsjob --backend aws --out "$A/out" | grep -Eq "^0 +baton-awsjob-0 +deleted"' "status after cancel: deleted"
check 'awsrun "$BATON" fleet run "$T/noacct.yaml" --out "$A/out" --apply >/dev/null 2>&1' "apply again after cancel"
# a half-made run (the group refused): cancel removes the launch template it left
apply_world "$T/apply-half" '{"apply": true, "iam_lag": 9}'
check '! awsrun "$BATON" fleet run "$T/job.yaml" --out "$A/out" --apply >/dev/null 2>"$A/apply.err"' "apply: a group IAM never accepts fails"
check 'grep -q "\"launch_template\":.*\"baton-awsjob-0\"" "$A/out/fleet-requests.json" && ! grep -q "\"id\"" "$A/out/fleet-requests.json"' \
    "the launch template made before the failure is recorded"
check 'awsrun "$BATON" fleet status awsjob --backend aws --out "$A/out" | grep -Eq "^0 +- +not created"' "status: the group was not created"
check 'awsrun "$BATON" fleet cancel awsjob --backend aws --out "$A/out" 2>/dev/null && tail -n1 "$A/calls.log" | grep -q "delete-launch-template .*baton-awsjob-0"' \
    "cancel removes what the half-made run left"

# EC2 Fleet
apply_world "$T/apply-ef" '{"apply": true, "existing": ["ec2fleet.amazonaws.com"]}'
check 'awsrun "$BATON" fleet run "$T/co.yaml" --api ec2-fleet --out "$A/out" --apply >/dev/null 2>"$A/apply.err"' "ec2-fleet apply: $(tail -n 2 "$A/apply.err")"
check 'grep -q "create-service-linked-role" "$A/calls.log" && grep -q "(already there)" "$A/apply.err" && grep -q "the fleet says: InsufficientInstanceCapacity" "$A/apply.err"' \
    "ec2-fleet apply: an existing service-linked role is fine; the fleet's launch errors are shown"
check 'same_words "$A/calls.log" "$A/out/commands.sh"' "ec2-fleet apply: ran exactly commands.sh"
check 'awsrun "$BATON" fleet status "$T/co.yaml" --out "$A/out" | grep -Eq "^0 +fleet-00000001-[0-9a-f-]+ +active +fulfilled +1/1"' "ec2-fleet status: active"
expect_fail 1 "fleet fleet-00000001-.* is still there \(active\)" awsrun "$BATON" fleet run "$T/co.yaml" --api ec2-fleet --out "$A/out" --apply
check 'awsrun "$BATON" fleet cancel awsjob --backend aws --out "$A/out" 2>/dev/null && grep -q "^aws ec2 delete-fleets --region us-east-1 --fleet-ids fleet-00000001-[0-9a-f-]* --terminate-instances --output json$" "$A/calls.log" && tail -n1 "$A/calls.log" | grep -q delete-launch-template' \
    "ec2-fleet cancel: delete-fleets --terminate-instances, then the launch template"
check 'awsrun "$BATON" fleet status awsjob --backend aws --out "$A/out" | grep -q deleted_terminating' "ec2-fleet status after cancel"

# the seed's Spot Fleet
apply_world "$T/apply-sf" '{"apply": true, "existing": ["baton-awsjob-fleet"], "iam_lag": 1}'
awsrun "$BATON" fleet run "$T/spot.yaml" --out "$A/out" --apply >"$A/apply.out" 2>"$A/apply.err"; rc=$?
check '[ $rc -eq 0 ]' "spot-fleet apply: $(tail -n 3 "$A/apply.err")"
check '[ "$(grep -c "request-spot-fleet" "$A/calls.log")" -eq 2 ] && grep -q "IAM not ready yet" "$A/apply.err"' "spot-fleet apply: the fleet request is retried while IAM settles"
check 'same_words "$A/calls.log" "$A/out/commands.sh"' "spot-fleet apply: ran exactly commands.sh, in order"
check 'grep -q "\"id\":.*\"sfr-00000001" "$A/out/fleet-requests.json" && grep -q "\"api\":.*\"spot-fleet\"" "$A/out/fleet-requests.json"' "spot-fleet apply: the request id is recorded"
check 'awsrun "$BATON" fleet status "$T/spot.yaml" --out "$A/out" | grep -Eq "^0 +sfr-00000001-[0-9a-f-]+ +active"' "spot-fleet status: the fleet is active"
expect_fail 1 "still there" awsrun "$BATON" fleet run "$T/spot.yaml" --out "$A/out" --apply
check 'awsrun "$BATON" fleet cancel awsjob --backend aws --out "$A/out" 2>/dev/null && tail -n1 "$A/calls.log" | grep -q "cancel-spot-fleet-requests --region us-east-1 --spot-fleet-request-ids sfr-00000001.* --terminate-instances"' \
    "spot-fleet cancel: cancel-spot-fleet-requests --terminate-instances"
check 'awsrun "$BATON" fleet status awsjob --backend aws --out "$A/out" | grep -q cancelled_terminating' "spot-fleet status after cancel"
# a record of an older version (no "api"): the Spot Fleet it was
$PY -c 'import json,sys; p=sys.argv[1]; r=json.load(open(p)); del r["api"]; json.dump(r, open(p, "w"))' "$A/out/fleet-requests.json"
check 'awsrun "$BATON" fleet status awsjob --backend aws --out "$A/out" | grep -q "^task  spot fleet request"' "an older record is read as a Spot Fleet's"

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
bad_job "badjob.yaml:[0-9]+: aws.api: expected auto-scaling-group \(the default\), ec2-fleet or spot-fleet" -e '$a \ \ api: spot-fleet-v2'
bad_job "aws.subnets: an Auto Scaling group takes either a subnet for every zone .* 1 of 2 zones" -e '$a \ \ subnets: {us-east-1a: subnet-0123456789abcdef0}'
bad_job "aws.role_prefix: letters, digits and ._- only: it names the launch templates" -e '$a \ \ role_prefix: team+ml'
check '"$BATON" fleet run "$T/badjob.yaml" --out "$T/badout" --api spot-fleet >/dev/null 2>&1' "a Spot Fleet takes a role prefix a launch template does not"
printf 'name: sw\nbackend: aws\ncommands: [a, b]\ntarget_capacity: 1\ninstance_types: [c5.large]\nzones: [us-east-1a]\naws: {image_id: ami-0123456789abcdef0, account_id: "123456789012"}\n' >"$T/cap.yaml"
expect_fail 1 "target_capacity: the aws backend runs every task at once" "$BATON" fleet run "$T/cap.yaml" --out "$T/badout"
expect_fail 2 "--account: expected a 12-digit" "$BATON" fleet run "$T/job.yaml" --out "$T/badout" --account 12
expect_fail 2 "--api: expected auto-scaling-group, ec2-fleet or spot-fleet, got 'asg'" "$BATON" fleet run "$T/job.yaml" --out "$T/badout" --api asg
expect_fail 2 "--api does not apply to the aws backend's status" "$BATON" fleet status awsjob --backend aws --out "$T/badout" --api ec2-fleet
finish
