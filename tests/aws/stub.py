#!/usr/bin/python3 -S
"""stub.py - stand-ins for the programs the aws backend's user-data script calls, for
tests/cli/test_aws_artifacts.sh. Installed as symlinks named aws, curl, mount, umount, mkfs,
shutdown and baton in a folder put first on PATH; the name it is called by decides what it does.
With "apply": true in the state, `aws` plays the account that `baton fleet run --apply`, status
and cancel talk to instead (see apply_mode): roles, launch templates, Auto Scaling groups, EC2
Fleets and Spot Fleets kept in the state, as AWS would answer. What ended a task (the user data's
cancel-spot-fleet-requests, delete-fleets or update-auto-scaling-group to desired 0) is recorded as
"cancelled" in the state.

Every call is appended to $BATON_STUB_DIR/calls.log (one line, the words shell-quoted). The world
the script sees lives in $BATON_STUB_DIR/state.json, written by the test before the run:
  instance   {"id", "zone", "type", "fleet", "ec2fleet"}  what the metadata service and describe-tags say
                                                 (the Spot Fleet's and EC2 Fleet's ids of the instance)
  volumes    {id: {"zone", "size", "state", "tags", "formatted", "lineage", "snapshot"}}
  snapshots  {id: {"volume", "state", "lineage", "tags"}}
  fail       ["create-snapshot" | "snapshot-completed" | "copy-size" | "attach-volume", ...]
  notice_after  seconds after which `baton notice wait` reports a notice (absent: never)
Volume and snapshot contents are folders under $BATON_STUB_DIR/data/<id>; a snapshot copies its
volume's folder, a volume made from a snapshot copies the snapshot's, mount links the mount point
to the volume's folder. "lineage" names the data a volume or snapshot holds (the volume it came
from, first of all). Deleting the last volume or completed snapshot of a lineage, or running mkfs
on a volume that already holds a file system, is recorded in $BATON_STUB_DIR/violations.log: the
test requires that file to stay empty.

Only the exact queries the user data uses are understood; anything else fails loudly (exit 255,
and a line in violations.log), so the stub and the script cannot drift apart silently.
No network, no real devices: everything happens in files under $BATON_STUB_DIR.
"""
import json
import os
import re
import shlex
import shutil
import signal
import sys
import time

D = os.environ["BATON_STUB_DIR"]
STATE = os.path.join(D, "state.json")
DEV = os.environ.get("BATON_UD_DEV", os.path.join(D, "dev"))


def load():
    with open(STATE) as f:
        return json.load(f)


def save(st):
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1, sort_keys=True)
    os.replace(tmp, STATE)


def record(words):
    with open(os.path.join(D, "calls.log"), "a") as f:
        f.write(" ".join(shlex.quote(w) for w in words) + "\n")


def violation(msg):
    with open(os.path.join(D, "violations.log"), "a") as f:
        f.write(msg + "\n")


def die(code, msg):
    sys.stderr.write(msg + "\n")
    sys.exit(code)


def data(i):
    return os.path.join(D, "data", i)


def opts(args):
    """--name value pairs (repeated names collect into lists) and the other words."""
    o, rest, i = {}, [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            vals = []
            while i + 1 < len(args) and not args[i + 1].startswith("--"):
                vals.append(args[i + 1])
                i += 1
            o[a[2:]] = vals
        else:
            rest.append(a)
        i += 1
    return o, rest


def one(o, k):
    v = o.get(k)
    if not v:
        die(252, f"aws: error: argument --{k} is required")
    return v[0]


def new_id(st, prefix):
    st["next"] = st.get("next", 1) + 1
    return f"{prefix}-{st['next']:017x}"


def tags_of(spec):
    return dict(re.findall(r"\{Key=([^,}]*),Value=([^}]*)\}", spec))


def copies(st, lineage, skip):
    n = sum(1 for i, v in st["volumes"].items() if i != skip and v["lineage"] == lineage)
    n += sum(1 for i, s in st["snapshots"].items()
             if i != skip and s["lineage"] == lineage and s["state"] == "completed")
    return n


def ec2(st, op, o, words):
    fail = st.get("fail", [])
    query = (o.get("query") or [""])[0]
    inst = st["instance"]
    if op == "describe-volumes":
        if "volume-ids" in o:
            if query != "Volumes[0].[State,SnapshotId,AvailabilityZone,Size]":
                return bad_query(words)
            v = st["volumes"].get(o["volume-ids"][0])
            if not v:
                die(254, "An error occurred (InvalidVolume.NotFound)")
            size = v["size"] + (1 if "copy-size" in fail and v.get("snapshot") else 0)
            print(f"{v['state']}\t{v.get('snapshot') or 'None'}\t{v['zone']}\t{size}")
            return 0
        if query != "Volumes[].[VolumeId,AvailabilityZone,Size,CreateTime]":
            return bad_query(words)
        want, states = {}, None
        for flt in o.get("filters", []):
            m = re.fullmatch(r"Name=([^,]+),Values=(.*)", flt)
            if not m:
                die(252, f"bad filter {flt}")
            if m.group(1).startswith("tag:"):
                want[m.group(1)[4:]] = m.group(2)
            elif m.group(1) == "status":
                states = m.group(2).split(",")
        for i, v in sorted(st["volumes"].items(), key=lambda kv: kv[1].get("created", "")):
            if all(v["tags"].get(k) == x for k, x in want.items()) and (not states or v["state"] in states):
                print(f"{i}\t{v['zone']}\t{v['size']}\t{v.get('created', '2026-01-01T00:00:00.000Z')}")
        return 0
    if op == "create-volume":
        if query != "VolumeId":
            return bad_query(words)
        zone = one(o, "availability-zone")
        vid = new_id(st, "vol")
        v = {"zone": zone, "state": "available", "tags": tags_of(one(o, "tag-specifications")),
             "created": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()) + vid}
        if "snapshot-id" in o:
            s = st["snapshots"].get(o["snapshot-id"][0])
            if not s or s["state"] != "completed":
                die(254, "An error occurred (InvalidSnapshot.NotFound or not completed)")
            v.update(size=s["size"], formatted=True, lineage=s["lineage"], snapshot=o["snapshot-id"][0])
            shutil.copytree(data(o["snapshot-id"][0]), data(vid), symlinks=True)
        else:
            v.update(size=int(one(o, "size")), formatted=False, lineage=vid, snapshot=None)
            os.makedirs(data(vid))
        st["volumes"][vid] = v
        print(vid)
        return 0
    if op == "create-snapshot":
        if query != "SnapshotId":
            return bad_query(words)
        if "create-snapshot" in fail:
            die(254, "An error occurred (SnapshotCreationPerVolumeRateExceeded)")
        vid = one(o, "volume-id")
        v = st["volumes"].get(vid)
        if not v:
            die(254, "An error occurred (InvalidVolume.NotFound)")
        sid = new_id(st, "snap")
        st["snapshots"][sid] = {"volume": vid, "state": "pending", "lineage": v["lineage"], "size": v["size"],
                                "tags": tags_of(one(o, "tag-specifications"))}
        shutil.copytree(data(vid), data(sid), symlinks=True)
        print(sid)
        return 0
    if op == "attach-volume":
        vid, iid = one(o, "volume-id"), one(o, "instance-id")
        v = st["volumes"].get(vid)
        if "attach-volume" in fail or not v:
            die(254, "An error occurred (IncorrectState)")
        if v["zone"] != inst["zone"] or iid != inst["id"]:
            violation(f"attach-volume {vid} ({v['zone']}) to {iid} in {inst['zone']}")
            die(254, "An error occurred (InvalidVolume.ZoneMismatch)")
        if v["state"] != "available":
            die(254, "An error occurred (VolumeInUse)")
        v["state"] = "in-use"
        os.makedirs(os.path.join(DEV, "disk", "by-id"), exist_ok=True)
        with open(os.path.join(DEV, "disk", "by-id", "nvme-Amazon_Elastic_Block_Store_" + vid.replace("-", "")), "w") as f:
            f.write(vid)
        print(json.dumps({"State": "attaching", "VolumeId": vid}))
        return 0
    if op in ("delete-volume", "delete-snapshot"):
        key = "volume-id" if op == "delete-volume" else "snapshot-id"
        coll = st["volumes"] if op == "delete-volume" else st["snapshots"]
        i = one(o, key)
        x = coll.get(i)
        if not x:
            die(254, "An error occurred (NotFound)")
        if op == "delete-volume" and x["state"] == "in-use":
            die(254, "An error occurred (VolumeInUse)")
        holds_data = op == "delete-volume" or x["state"] == "completed"
        if holds_data and copies(st, x["lineage"], i) == 0:
            violation(f"{op} {i}: the only copy of {x['lineage']}")
        del coll[i]
        shutil.rmtree(data(i), ignore_errors=True)
        return 0
    if op == "describe-tags":
        if query != "Tags[0].Value":
            return bad_query(words)
        keys = {"Name=key,Values=aws:ec2spot:fleet-request-id": "fleet", "Name=key,Values=aws:ec2:fleet-id": "ec2fleet"}
        which = [keys[f] for f in o.get("filters", []) if f in keys]
        if len(which) != 1 or f"Name=resource-id,Values={inst['id']}" not in o.get("filters", []):
            return bad_query(words)
        print(inst.get(which[0], "None"))
        return 0
    if op == "cancel-spot-fleet-requests":
        st["cancelled"] = o.get("spot-fleet-request-ids", [])
        return 0
    if op == "delete-fleets":
        if "terminate-instances" not in o:
            die(252, "aws: error: delete-fleets needs --terminate-instances or --no-terminate-instances")
        st["cancelled"] = o.get("fleet-ids", [])
        return 0
    if op == "wait":
        w = words[2] if len(words) > 2 else ""
        if w == "snapshot-completed":
            for s in o.get("snapshot-ids", []):
                if s not in st["snapshots"]:
                    die(255, "Waiter SnapshotCompleted failed: not found")
                if "snapshot-completed" in fail:
                    st["snapshots"][s]["state"] = "error"
                    save(st)
                    die(255, "Waiter SnapshotCompleted failed: Waiter encountered a terminal failure state")
                st["snapshots"][s]["state"] = "completed"
            return 0
        if w in ("volume-available", "volume-in-use"):
            for v in o.get("volume-ids", []):
                x = st["volumes"].get(v)
                if not x:
                    die(255, f"Waiter Volume{'Available' if w == 'volume-available' else 'InUse'} failed: not found")
                if w == "volume-available" and x["state"] == "in-use" and x.get("held_by") not in (None, inst["id"]):
                    x["state"] = "available"      # the previous instance has gone by now
                    x.pop("held_by", None)
                if (w == "volume-available") != (x["state"] == "available"):
                    die(255, f"Waiter failed: {v} is {x['state']}")
            return 0
    return unknown(words)


def bad_query(words):
    violation("query the stub does not know: " + " ".join(words))
    die(255, "stub: unknown query")


def unknown(words):
    violation("command the stub does not know: " + " ".join(words))
    die(255, "stub: unknown command")


def s3(op, args):
    src, dst = args[0], args[1]
    root = os.path.join(D, "s3", src[len("s3://"):])
    if op == "cp":
        if not os.path.isfile(root):
            die(1, f"fatal error: An error occurred (404) when calling the HeadObject operation: {src}")
        shutil.copy(root, dst)
        return 0
    if op == "sync":
        if not os.path.isdir(root):
            return 0
        shutil.copytree(root, dst, dirs_exist_ok=True)
        return 0
    return unknown(["s3", op] + args)


def apply_mode(st, args):
    """The aws CLI as `baton fleet run --apply`, status and cancel meet it: roles that already
    exist (state "existing"), one RequestSpotFleet or CreateAutoScalingGroup refused while IAM
    settles ("iam_lag"), launch templates and groups whose names are taken until deleted."""
    o, rest = opts(args)
    svc, op = (rest + ["", ""])[:2]
    if (svc, op) == ("sts", "get-caller-identity"):
        print("123456789012")
        return 0
    if svc == "iam":
        name = (o.get("role-name") or o.get("instance-profile-name") or [""])[0]
        if op in ("create-role", "create-instance-profile") and name in st.get("existing", []):
            die(254, f"An error occurred (EntityAlreadyExists) when calling the {op} operation: {name} already exists.")
        if op in ("create-role", "attach-role-policy", "put-role-policy", "create-instance-profile",
                  "add-role-to-instance-profile"):
            print("{}")
            return 0
    if svc == "iam" and op == "create-service-linked-role":
        name = one(o, "aws-service-name")
        if name in st.get("existing", []):
            die(254, "An error occurred (InvalidInput) when calling the CreateServiceLinkedRole operation: Service role "
                     "name AWSServiceRoleForEC2Fleet has been taken in this account, please try a different suffix.")
        print("{}")
        return 0
    if (svc, op) in (("ec2", "create-launch-template"), ("autoscaling", "create-auto-scaling-group"),
                     ("ec2", "create-fleet")):
        req = json.load(open(one(o, "cli-input-json")[len("file://"):]))
        if svc == "autoscaling" and st.get("iam_lag", 0) > 0:
            st["iam_lag"] -= 1
            save(st)
            die(254, "An error occurred (ValidationError) when calling the CreateAutoScalingGroup operation: Invalid "
                     "IamInstanceProfile: baton-awsjob")
        if op == "create-launch-template":
            lts = st.setdefault("templates", {})
            name = req["LaunchTemplateName"]
            if name in lts:
                die(254, "An error occurred (InvalidLaunchTemplateName.AlreadyExistsException) when calling the "
                         f"CreateLaunchTemplate operation: Launch template name already in use: {name}")
            lts[name] = "lt-%017x" % (len(lts) + 1)
            print(json.dumps({"LaunchTemplate": {"LaunchTemplateId": lts[name], "LaunchTemplateName": name}}))
            return 0
        lt = (req.get("MixedInstancesPolicy", {}).get("LaunchTemplate", {}).get("LaunchTemplateSpecification", {})
              if op == "create-auto-scaling-group" else
              req["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]).get("LaunchTemplateName")
        if lt not in st.get("templates", {}):
            die(254, f"An error occurred (ValidationError): launch template {lt} does not exist")
        if op == "create-auto-scaling-group":
            groups = st.setdefault("groups", {})
            name = req["AutoScalingGroupName"]
            if name in groups:
                die(254, "An error occurred (AlreadyExists) when calling the CreateAutoScalingGroup operation: "
                         f"AutoScalingGroup by this name already exists - A group with the name {name} already exists")
            groups[name] = {"desired": req["DesiredCapacity"], "min": req["MinSize"]}
            return 0
        fleets = st.setdefault("fleets", {})
        fid = fleets.get(req["ClientToken"]) or "fleet-%08x-0000-4000-8000-%012x" % (len(fleets) + 1, len(fleets) + 1)
        fleets[req["ClientToken"]] = fid
        st.setdefault("states", {})[fid] = "active"
        print(json.dumps({"FleetId": fid, "Errors": [{"ErrorCode": "InsufficientInstanceCapacity",
                                                      "ErrorMessage": "no c5.xlarge in us-east-1b just now"}]}))
        return 0
    if svc == "autoscaling" and op == "describe-auto-scaling-groups":
        groups = st.get("groups", {})
        names = o.get("auto-scaling-group-names", [])
        print(json.dumps({"AutoScalingGroups": [
            {"AutoScalingGroupName": n, "DesiredCapacity": groups[n]["desired"], "MinSize": groups[n]["min"],
             "Instances": [{"InstanceId": "i-0123456789abcdef0", "LifecycleState": "InService"}] * groups[n]["desired"]}
            for n in names if n in groups]}))
        return 0
    if svc == "autoscaling" and op == "delete-auto-scaling-group":
        name = one(o, "auto-scaling-group-name")
        if "force-delete" not in o:
            die(254, "An error occurred (ResourceInUse): You cannot delete an AutoScalingGroup while there are instances")
        if name not in st.get("groups", {}):
            die(254, "An error occurred (ValidationError): AutoScalingGroup name not found - " + name)
        del st["groups"][name]
        return 0
    if svc == "ec2" and op == "delete-launch-template":
        name = one(o, "launch-template-name")
        if name not in st.get("templates", {}):
            die(254, "An error occurred (InvalidLaunchTemplateName.NotFoundException): does not exist")
        del st["templates"][name]
        return 0
    if svc == "ec2" and op in ("describe-fleets", "delete-fleets"):
        ids = o.get("fleet-ids", [])
        states = st.setdefault("states", {})
        if op == "delete-fleets":
            for i in ids:
                states[i] = "deleted_terminating" if "terminate-instances" in o else "deleted_running"
            print(json.dumps({"SuccessfulFleetDeletions": [{"FleetId": i} for i in ids]}))
            return 0
        print(json.dumps({"Fleets": [
            {"FleetId": i, "FleetState": states.get(i, "unknown"), "ActivityStatus": "fulfilled", "FulfilledCapacity": 1.0,
             "TargetCapacitySpecification": {"TotalTargetCapacity": 1}} for i in ids]}))
        return 0
    if svc == "ec2" and op == "request-spot-fleet":
        if st.get("iam_lag", 0) > 0:
            st["iam_lag"] -= 1
            save(st)
            die(254, "An error occurred (InvalidSpotFleetRequestConfig) when calling the RequestSpotFleet "
                     "operation: Parameter: SpotFleetRequestConfig.IamFleetRole is invalid.")
        token = json.load(open(one(o, "spot-fleet-request-config")[len("file://"):]))["ClientToken"]
        fleets = st.setdefault("fleets", {})
        fid = fleets.get(token) or "sfr-%08x-0000-4000-8000-%012x" % (len(fleets) + 1, len(fleets) + 1)
        fleets[token] = fid
        st.setdefault("states", {})[fid] = "active"
        print(json.dumps({"SpotFleetRequestId": fid}))
        return 0
    if svc == "ec2" and op in ("describe-spot-fleet-requests", "cancel-spot-fleet-requests"):
        ids = o.get("spot-fleet-request-ids", [])
        states = st.setdefault("states", {})
        if op == "cancel-spot-fleet-requests":
            for i in ids:
                states[i] = "cancelled_terminating" if "terminate-instances" in o else "cancelled_running"
            print(json.dumps({"SuccessfulFleetRequests": [{"SpotFleetRequestId": i} for i in ids]}))
            return 0
        print(json.dumps({"SpotFleetRequestConfigs": [
            {"SpotFleetRequestId": i, "SpotFleetRequestState": states.get(i, "unknown"), "ActivityStatus": "fulfilled",
             "SpotFleetRequestConfig": {"TargetCapacity": 1, "FulfilledCapacity": 1.0}} for i in ids]}))
        return 0
    return unknown(["aws"] + args)


def main():
    prog = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    record([prog] + args)
    st = load()
    if prog == "aws" and st.get("apply"):
        rc = apply_mode(st, args)
        save(st)
        return rc
    if prog == "aws":
        o, rest = opts(args)
        if rest[:2] == ["autoscaling", "update-auto-scaling-group"]:
            # the user data's end: the group of this task (named in its header) to desired 0
            if o.get("min-size") != ["0"] or o.get("desired-capacity") != ["0"] or "auto-scaling-group-name" not in o:
                rc = unknown(args)
            else:
                st["cancelled"] = o["auto-scaling-group-name"]
                rc = 0
        elif rest[:1] == ["ec2"] and len(rest) >= 2:
            rc = ec2(st, rest[1], o, rest)
        elif rest[:1] == ["s3"] and len(rest) >= 2:
            rc = s3(rest[1], [a for a in args[2:] if not a.startswith("--")])
        else:
            rc = unknown(args)
        save(st)
        return rc
    if prog == "curl":
        url = [a for a in args if a.startswith("http")][0]
        path = url.split("169.254.169.254", 1)[1]
        has_token = any(a.startswith("X-aws-ec2-metadata-token: ") for a in args)
        if path == "/latest/api/token":
            if "PUT" not in args:
                die(22, "curl: (22) The requested URL returned error: 405")
            print("stub-token", end="")
            return 0
        if not has_token:            # IMDSv2 required
            die(22, "curl: (22) The requested URL returned error: 401")
        i = st["instance"]
        items = {"/latest/meta-data/instance-id": i["id"], "/latest/meta-data/placement/availability-zone": i["zone"],
                 "/latest/meta-data/instance-type": i["type"]}
        if path not in items:
            die(22, "curl: (22) The requested URL returned error: 404")
        print(items[path], end="")
        return 0
    if prog in ("mount", "mkfs"):
        dev = args[-2] if prog == "mount" else args[-1]
        with open(dev) as f:
            vid = f.read().strip()
        v = st["volumes"][vid]
        if prog == "mkfs":
            if v["formatted"] or os.listdir(data(vid)):
                violation(f"mkfs on {vid}, which holds a file system")
            shutil.rmtree(data(vid))
            os.makedirs(data(vid))
            v["formatted"] = True
            save(st)
            return 0
        if not v["formatted"]:
            die(32, f"mount: {args[-1]}: wrong fs type, bad option, bad superblock on {dev}")
        mnt = args[-1]
        os.rmdir(mnt)
        os.symlink(data(vid), mnt)
        return 0
    if prog == "umount":
        mnt = args[-1]
        if os.path.islink(mnt):
            os.unlink(mnt)
            os.makedirs(mnt)
            return 0
        die(32, f"umount: {mnt}: not mounted")
    if prog == "shutdown":
        return 0
    if prog == "baton":
        if args[:2] != ["notice", "wait"]:
            return unknown(["baton"] + args)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        after = st.get("notice_after")
        if after is None:
            while True:
                time.sleep(1)
        time.sleep(after)
        print(json.dumps({"action": "terminate", "source": "imds-v2", "seconds_left": 119.0}))
        return 0
    return unknown([prog] + args)


if __name__ == "__main__":
    sys.exit(main())
