#!/usr/bin/python3
"""validate.py - checks the aws backend's artefacts offline against the EC2, EC2 Auto Scaling and
IAM service models of Debian's python3-botocore: no network, no credentials.

  validate.py requests OUT COMMANDS   every aws command of COMMANDS (the dry-run output) becomes
                                      the API request the aws CLI would send (file:// arguments
                                      read, --cli-input-json files as the whole request, JSON
                                      documents parsed, Key=..,Value=.. shorthand) and is validated
                                      with botocore's ParamValidator against the operation's input
                                      shape, plus the enums botocore leaves out; the commands come
                                      in an order that works (roles, policies, profile, then per
                                      task the launch template before the group or fleet naming
                                      it); every launch template's or fleet's user data decodes to
                                      one of OUT's user-data scripts and fits EC2's 16 KiB; launch
                                      templates require IMDSv2 (hop limit 1) and tag no volume as
                                      the task's; groups and fleets keep exactly one Spot instance.
  validate.py documents OUT           the IAM documents parse, have the policy grammar, and name
                                      only actions that exist (ec2/iam/autoscaling operations of the
                                      models; s3:GetObject, s3:ListBucket, iam:PassRole;
                                      sts:AssumeRole in trust).
  validate.py calls POLICY LOG...     the aws commands the user-data script ran (the stub's
                                      calls.log of every scenario): each operation and waiter
                                      exists with the options it was given, and the IAM actions
                                      they need are exactly the instance policy's - nothing
                                      missing, nothing extra.
Prints one "ok - ..." or "FAIL - ..." line per check; exit status 1 if anything failed.
"""
import base64
import glob
import json
import os
import shlex
import sys

import botocore.session
from botocore import xform_name
from botocore.validate import ParamValidator

GLOBAL = {"region", "output", "query", "profile", "endpoint-url", "no-cli-pager", "debug"}
session = botocore.session.get_session()
models = {}
failed = 0


def ok(msg):
    print("ok - " + msg)


def bad(msg):
    global failed
    failed += 1
    print("FAIL - " + msg)


def model(service):
    if service not in models:
        models[service] = session.get_service_model(service)
    return models[service]


def operation(service, kebab):
    m = model(service)
    for name in m.operation_names:
        if xform_name(name, "-") == kebab:
            return m.operation_model(name)
    return None


def member_of(shape, kebab):
    for name in shape.members:
        if xform_name(name, "-") == kebab:
            return name, shape.members[name]
    return None, None


def shorthand(value):
    """Key=a,Value=b -> {"Key": "a", "Value": "b"} (the only shorthand the commands use)."""
    out = {}
    for part in value.split(","):
        k, _, v = part.partition("=")
        out[k] = v
    return out


def cli_value(shape, raw):
    if raw.startswith("file://"):
        with open(raw[len("file://"):]) as f:
            raw = f.read()
        if shape.type_name == "string":
            return raw
    if shape.type_name in ("structure", "list", "map"):
        if raw.lstrip().startswith(("{", "[")):
            return json.loads(raw)
        if shape.type_name == "list":
            return [shorthand(raw)]
        return shorthand(raw)
    if shape.type_name == "integer":
        return int(raw)
    if shape.type_name == "boolean":
        return raw == "true"
    return raw


def enum_errors(shape, value, path):
    errs = []
    if shape.type_name == "string" and getattr(shape, "enum", None) and isinstance(value, str):
        if value not in shape.enum:
            errs.append(f"{path}: '{value}' is not one of {shape.enum}")
    elif shape.type_name == "structure" and isinstance(value, dict):
        for k, v in value.items():
            if k in shape.members:
                errs += enum_errors(shape.members[k], v, f"{path}.{k}")
    elif shape.type_name == "list" and isinstance(value, list):
        for i, v in enumerate(value):
            errs += enum_errors(shape.member, v, f"{path}[{i}]")
    return errs


def to_request(words):
    """['aws', svc, op, --k, v, ...] -> (service, operation model, params, errors)."""
    svc, op = words[1], words[2]
    om = operation(svc, op)
    if om is None:
        return svc, None, None, [f"no operation '{op}' in the {svc} model"]
    params, errs, i = {}, [], 3
    while i < len(words):
        w = words[i]
        if not w.startswith("--"):
            errs.append(f"stray word '{w}'")
            i += 1
            continue
        k = w[2:]
        flag = i + 1 >= len(words) or words[i + 1].startswith("--")
        if k == "cli-input-json" and not flag:   # the whole request, as the API's own parameters
            raw = words[i + 1]
            if raw.startswith("file://"):
                raw = open(raw[len("file://"):]).read()
            params.update(json.loads(raw))
            i += 2
            continue
        if k in GLOBAL:
            i += 1 if flag else 2
            continue
        name, shape = member_of(om.input_shape, k)
        if name is None and k.startswith("no-"):
            name, shape = member_of(om.input_shape, k[3:])
        if name is None:
            errs.append(f"--{k} is not a parameter of {om.name}")
            i += 1 if flag else 2
            continue
        if flag:
            params[name] = not k.startswith("no-")
            i += 1
        else:
            params[name] = cli_value(shape, words[i + 1])
            i += 2
    return svc, om, params, errs


ORDERS = {
    "spot-fleet": (["CreateRole", "AttachRolePolicy", "CreateRole", "PutRolePolicy", "CreateInstanceProfile",
                    "AddRoleToInstanceProfile"], ["RequestSpotFleet"]),
    "auto-scaling-group": (["CreateRole", "PutRolePolicy", "CreateInstanceProfile", "AddRoleToInstanceProfile"],
                           ["CreateLaunchTemplate", "CreateAutoScalingGroup"]),
    "ec2-fleet": (["CreateRole", "PutRolePolicy", "CreateInstanceProfile", "AddRoleToInstanceProfile",
                   "CreateServiceLinkedRole"], ["CreateLaunchTemplate", "CreateFleet"]),
}
# AWS's Spot allocation strategies for Auto Scaling groups (botocore's model has no enum for them)
ASG_STRATEGIES = {"price-capacity-optimized", "capacity-optimized", "capacity-optimized-prioritized", "lowest-price"}


def check_requests(out, commands):
    lines = [l for l in open(commands) if l.startswith("aws ")]
    if not lines:
        bad(f"{commands}: no aws commands")
    order, templates = [], set()
    for line in lines:
        words = shlex.split(line)
        svc, om, params, errs = to_request(words)
        label = " ".join(words[:3])
        if om is not None:
            report = ParamValidator().validate(params, om.input_shape)
            if report.has_errors():
                errs.append(report.generate_report())
            errs += enum_errors(om.input_shape, params, om.name)
        if errs:
            bad(f"{label}: " + "; ".join(errs))
        else:
            ok(f"{label}: valid {svc} {om.name} request")
        order.append(om.name if om else "?")
        if om is None or errs:
            continue
        if om.name == "RequestSpotFleet":
            check_fleet(out, params["SpotFleetRequestConfig"])
        elif om.name == "CreateLaunchTemplate":
            check_launch_template(out, params)
            templates.add(params["LaunchTemplateName"])
        elif om.name == "CreateAutoScalingGroup":
            check_group(params, templates)
        elif om.name == "CreateFleet":
            check_ec2_fleet(params, templates)
        if om.name in ("CreateRole", "PutRolePolicy"):
            doc = params.get("AssumeRolePolicyDocument") or params.get("PolicyDocument")
            try:
                json.loads(doc)
                ok(f"{label}: the policy document is JSON ({len(doc)} bytes)")
            except ValueError as e:
                bad(f"{label}: the policy document does not parse: {e}")
    # roles and policies before the profile, the profile before what names it, each launch template
    # before the group or fleet that uses it
    api = ("auto-scaling-group" if "CreateAutoScalingGroup" in order else
           "ec2-fleet" if "CreateFleet" in order else "spot-fleet")
    head, per_task = ORDERS[api]
    tail = order[len(head):]
    if order[:len(head)] == head and tail and len(tail) % len(per_task) == 0 and \
            all(tail[i] == per_task[i % len(per_task)] for i in range(len(tail))):
        ok(f"order ({api}): roles, their policies, the instance profile, then per task {' then '.join(per_task)}")
    else:
        bad(f"order of the commands ({api}): {order}")


def user_data_ok(out, raw, what):
    """raw (decoded user data) is one of OUT's user-data scripts and fits EC2's 16 KiB."""
    if len(raw) > 16384:
        bad(f"{what}: user data of {len(raw)} bytes, over EC2's 16384")
        return False
    files = [open(f, "rb").read() for f in glob.glob(os.path.join(out, "user-data*.sh"))]
    if raw not in files:
        bad(f"{what}: the user data is none of the user-data scripts written beside it")
        return False
    return True


def check_fleet(out, cfg):
    """A Spot Fleet request: one user-data script for all its launch specifications."""
    specs = cfg.get("LaunchSpecifications", [])
    scripts = {base64.b64decode(s["UserData"], validate=True) for s in specs}
    if len(scripts) != 1:
        bad(f"the launch specifications of one fleet carry {len(scripts)} different user-data scripts")
        return
    raw = scripts.pop()
    if user_data_ok(out, raw, f"fleet {cfg.get('ClientToken')}"):
        ok(f"fleet {cfg['ClientToken']}: {len(specs)} launch specifications, user data = a user-data script "
           f"({len(raw)} bytes <= 16384)")


def check_launch_template(out, p):
    name, d = p["LaunchTemplateName"], p["LaunchTemplateData"]
    errs = []
    raw = base64.b64decode(d.get("UserData", ""), validate=True)
    md = d.get("MetadataOptions", {})
    if md.get("HttpTokens") != "required" or md.get("HttpPutResponseHopLimit") != 1:
        errs.append(f"IMDSv2 not required with hop limit 1: {md}")
    if "Arn" not in d.get("IamInstanceProfile", {}):
        errs.append("no instance profile")
    for t in d.get("TagSpecifications", []):
        if t["ResourceType"] != "instance" and any(x["Key"] == "baton-task" for x in t["Tags"]):
            errs.append(f"tags a {t['ResourceType']} with baton-task: it would pass for the task's volume")
    if not any(t["ResourceType"] == "instance" for t in d.get("TagSpecifications", [])):
        errs.append("the instances are not tagged")
    if errs:
        bad(f"launch template {name}: " + "; ".join(errs))
    elif user_data_ok(out, raw, f"launch template {name}"):
        ok(f"launch template {name}: IMDSv2 required (hop limit 1), instance profile, instance tags, user data = a "
           f"user-data script ({len(raw)} bytes <= 16384)")


def check_group(p, templates):
    name, mip = p["AutoScalingGroupName"], p.get("MixedInstancesPolicy", {})
    lt = mip.get("LaunchTemplate", {}).get("LaunchTemplateSpecification", {}).get("LaunchTemplateName")
    dist = mip.get("InstancesDistribution", {})
    errs = []
    if lt not in templates:
        errs.append(f"its launch template {lt} is not created before it")
    if (p.get("MinSize"), p.get("MaxSize"), p.get("DesiredCapacity")) != (1, 1, 1):
        errs.append("min = max = desired = 1 expected")
    if dist.get("OnDemandBaseCapacity") != 0 or dist.get("OnDemandPercentageAboveBaseCapacity") != 0:
        errs.append(f"not 100 % Spot: {dist}")
    if dist.get("SpotAllocationStrategy") not in ASG_STRATEGIES:
        errs.append(f"SpotAllocationStrategy '{dist.get('SpotAllocationStrategy')}' is not one of {sorted(ASG_STRATEGIES)}")
    if p.get("CapacityRebalance") is not True:
        errs.append("Capacity Rebalancing off")
    if not mip.get("LaunchTemplate", {}).get("Overrides"):
        errs.append("no instance types (overrides)")
    tags = {t["Key"]: t for t in p.get("Tags", [])}
    if not all(k in tags and tags[k].get("PropagateAtLaunch") and tags[k].get("ResourceId") == name
               for k in ("baton-job", "baton-task")):
        errs.append("not tagged baton-job and baton-task (propagated)")
    if bool(p.get("VPCZoneIdentifier")) == bool(p.get("AvailabilityZones")):
        errs.append("needs zones or subnets, not both")
    if errs:
        bad(f"auto scaling group {name}: " + "; ".join(errs))
    else:
        ok(f"auto scaling group {name}: {len(mip['LaunchTemplate']['Overrides'])} instance types over {lt}, 1/1/1, "
           f"100 % Spot ({dist['SpotAllocationStrategy']}), Capacity Rebalancing, tagged")


def check_ec2_fleet(p, templates):
    errs = []
    cap, spot = p.get("TargetCapacitySpecification", {}), p.get("SpotOptions", {})
    cfgs = p.get("LaunchTemplateConfigs", [])
    lts = {c["LaunchTemplateSpecification"].get("LaunchTemplateName") for c in cfgs}
    if p.get("Type") != "maintain":
        errs.append(f"type {p.get('Type')}, not maintain")
    if (cap.get("TotalTargetCapacity"), cap.get("SpotTargetCapacity"), cap.get("DefaultTargetCapacityType")) != (1, 1, "spot"):
        errs.append(f"capacity {cap}, not one Spot instance")
    if not lts or not lts <= templates:
        errs.append(f"launch templates {sorted(lts)} not created before it")
    if spot.get("InstanceInterruptionBehavior") != "terminate":
        errs.append("interrupted instances are not terminated")
    if not any(t["ResourceType"] == "fleet" and any(x["Key"] == "baton-job" for x in t["Tags"])
               for t in p.get("TagSpecifications", [])):
        errs.append("the fleet is not tagged baton-job (its instances' policy deletes only such fleets)")
    if errs:
        bad(f"ec2 fleet {p.get('ClientToken')}: " + "; ".join(errs))
    else:
        ok(f"ec2 fleet {p['ClientToken']}: maintain 1 Spot instance, {sum(len(c['Overrides']) for c in cfgs)} pools, "
           f"{spot['AllocationStrategy']}, tagged")


def check_documents(out):
    for path in sorted(glob.glob(os.path.join(out, "*policy*.json"))):
        name = os.path.basename(path)
        try:
            doc = json.load(open(path))
        except ValueError as e:
            bad(f"{name}: not JSON: {e}")
            continue
        errs = []
        if doc.get("Version") != "2012-10-17":
            errs.append("Version is not 2012-10-17")
        st = doc.get("Statement")
        if not isinstance(st, list) or not st:
            errs.append("no Statement list")
            st = []
        trust = "trust" in name
        for i, s in enumerate(st):
            if s.get("Effect") != "Allow":
                errs.append(f"Statement[{i}].Effect")
            acts = s.get("Action")
            acts = [acts] if isinstance(acts, str) else acts or []
            if trust:
                if acts != ["sts:AssumeRole"] or "Service" not in s.get("Principal", {}):
                    errs.append(f"Statement[{i}]: a trust statement lets a service principal sts:AssumeRole")
                continue
            if "Resource" not in s:
                errs.append(f"Statement[{i}] has no Resource")
            for a in acts:
                svc, _, op = a.partition(":")
                if "*" in a:
                    errs.append(f"wildcard action {a}")
                elif svc in ("ec2", "iam", "autoscaling") and a != "iam:PassRole":
                    if op not in model(svc).operation_names:
                        errs.append(f"{a}: no such {svc} operation")
                elif a not in ("s3:GetObject", "s3:ListBucket", "iam:PassRole"):   # permission-only actions
                    errs.append(f"unexpected action {a}")
        if errs:
            bad(f"{name}: " + "; ".join(errs))
        else:
            ok(f"{name}: a well-formed policy{' (trust)' if trust else ''}, every action exists")


def needed_actions(words, errs):
    """The IAM actions one recorded aws call needs (and checks it against the models)."""
    if words[1] == "s3":
        return {"s3:GetObject"} if words[2] == "cp" else {"s3:GetObject", "s3:ListBucket"}
    if words[1] == "autoscaling":
        _, om, params, e = to_request(words)
        errs += [f"{' '.join(words[:3])}: {x}" for x in e]
        return {"autoscaling:" + om.name} if om else set()
    if words[1] != "ec2":
        errs.append("not an ec2, autoscaling or s3 command: " + " ".join(words))
        return set()
    if words[2] == "wait":
        wm = session.get_waiter_model("ec2")
        names = {xform_name(n, "-"): n for n in wm.waiter_names}
        if words[3] not in names:
            errs.append(f"no waiter {words[3]}")
            return set()
        op = wm.get_waiter(names[words[3]]).operation
        words = ["aws", "ec2", xform_name(op, "-")] + words[4:]
    _, om, params, e = to_request(words)
    errs += [f"{' '.join(words[:3])}: {x}" for x in e if "stray word" not in x]
    if om is None:
        return set()
    acts = {"ec2:" + om.name}
    if "TagSpecifications" in params:
        acts.add("ec2:CreateTags")
    return acts


def check_calls(policy, logs):
    doc = json.load(open(policy))
    granted = set()
    for s in doc["Statement"]:
        a = s["Action"]
        granted |= {a} if isinstance(a, str) else set(a)
    used, errs, n = set(), [], 0
    for log in logs:
        for line in open(log):
            words = shlex.split(line)
            if words and words[0] == "aws":
                n += 1
                used |= needed_actions(words, errs)
    if errs:
        bad("recorded aws calls: " + "; ".join(sorted(set(errs))))
    else:
        ok(f"{n} recorded aws calls: every operation, waiter and option exists in the models")
    if used - granted:
        bad(f"the user data needs actions the instance policy lacks: {sorted(used - granted)}")
    elif granted - used:
        bad(f"the instance policy grants actions no scenario used: {sorted(granted - used)}")
    else:
        ok(f"the instance policy grants exactly the {len(used)} actions the user data uses: {sorted(used)}")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "requests":
        check_requests(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "documents":
        check_documents(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "calls":
        check_calls(sys.argv[2], sys.argv[3:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
