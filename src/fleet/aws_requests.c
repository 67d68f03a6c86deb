/* aws_requests.c — the aws backend's API requests for one task, written as the APIs' own
 * parameters (usable with the aws CLI's --cli-input-json):
 *   - CreateLaunchTemplate: the AMI, the instance profile, the user data (base64), IMDSv2 required
 *     (HttpTokens required, hop limit 1), key pair and security groups, the instances' tags (only
 *     instances: a root volume tagged baton-task would look like the task's volume);
 *   - CreateAutoScalingGroup: a MixedInstancesPolicy over the launch template with the job's
 *     instance types as overrides, 100 % Spot with the job's allocation strategy, the zones (or
 *     their subnets), min = max = desired = 1, Capacity Rebalancing, the job's tags;
 *   - CreateFleet: type maintain, capacity 1 (Spot), the allocation strategy, one override per
 *     instance type x zone (or subnet), Capacity Rebalancing that launches a replacement and
 *     terminates the old instance 2 minutes later, a ClientToken;
 *   - RequestSpotFleet: the seed's Spot Fleet (a LaunchSpecification per instance type and zone).
 * The per-task names (launch template, group) are "<role_prefix>-<job>-<task>".
 *
 * Contract: builds cJSON trees from validated options; no I/O. */
#include "aws_internal.h"

#include <stdlib.h>
#include <string.h>

const char *aws_api_name(int api)
{
    return api == BATON_AWS_EC2_FLEET ? "ec2-fleet" : api == BATON_AWS_SPOT_FLEET ? "spot-fleet" : "auto-scaling-group";
}

const char *aws_alloc_camel(baton_alloc a)
{
    return a == BATON_ALLOC_CAPACITY_OPTIMIZED ? "capacityOptimized"
         : a == BATON_ALLOC_LOWEST_PRICE       ? "lowestPrice"
                                               : "priceCapacityOptimized";
}

void aws_task_name(const baton_job *job, const baton_aws_opts *o, size_t task, char *out, size_t cap)
{
    snprintf(out, cap, "%s-%s-%zu", o->role_prefix, job->name, task);
}

cJSON *aws_tags(const baton_job *job, const baton_aws_opts *o, size_t task)
{
    char t[32];
    snprintf(t, sizeof t, "%zu", task);
    const char *k[2 + 16] = {"baton-job", "baton-task"}, *v[2 + 16] = {job->name, t};
    size_t n = 2;
    for (size_t i = 0; i < o->ntags; i++, n++) k[n] = o->tag_keys[i], v[n] = o->tag_values[i];
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "Key", k[i]);
        cJSON_AddStringToObject(x, "Value", v[i]);
        cJSON_AddItemToArray(a, x);
    }
    return a;
}

static cJSON *tag_spec(const char *type, cJSON *t)
{
    cJSON *a = cJSON_CreateArray(), *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "ResourceType", type);
    cJSON_AddItemToObject(s, "Tags", t);
    cJSON_AddItemToArray(a, s);
    return a;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* An idempotency token from the request's own text: the same request sent twice (a retry of
 * --apply) makes one fleet or launch template; a changed one is a new request. */
static void add_token(cJSON *c, const baton_job *job, size_t task)
{
    char *text = baton_json_print(c, 0), token[65];
    snprintf(token, sizeof token, "baton-%.24s-%hu-%016llx", job->name, (unsigned short)task,
             (unsigned long long)(text ? fnv1a(text) : 0));
    free(text);
    cJSON_AddStringToObject(c, "ClientToken", token);
}

cJSON *aws_spot_fleet(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm, size_t task,
                      const char *userdata_b64)
{
    char arn[256];
    cJSON *c = cJSON_CreateObject(), *specs = cJSON_CreateArray();
    snprintf(arn, sizeof arn, "arn:aws:iam::%s:role/%s", o->account_id, nm->fleet_role);
    cJSON_AddStringToObject(c, "IamFleetRole", arn);
    cJSON_AddStringToObject(c, "AllocationStrategy", aws_alloc_camel(job->alloc));
    cJSON_AddNumberToObject(c, "TargetCapacity", 1);
    cJSON_AddStringToObject(c, "Type", "maintain");
    cJSON_AddStringToObject(c, "InstanceInterruptionBehavior", "terminate");
    cJSON_AddBoolToObject(c, "ReplaceUnhealthyInstances", 1);
    cJSON_AddItemToObject(c, "TagSpecifications", tag_spec("spot-fleet-request", aws_tags(job, o, task)));
    snprintf(arn, sizeof arn, "arn:aws:iam::%s:instance-profile/%s", o->account_id, nm->profile);
    for (size_t t = 0; t < job->ntypes; t++)
        for (size_t z = 0; z < job->nzones; z++) {
            cJSON *s = cJSON_CreateObject(), *prof = cJSON_CreateObject();
            cJSON_AddStringToObject(s, "ImageId", o->image_id);
            cJSON_AddStringToObject(s, "InstanceType", job->types[t].name);
            if (o->subnets[z]) {
                cJSON_AddStringToObject(s, "SubnetId", o->subnets[z]);
            } else {
                cJSON *pl = cJSON_CreateObject();
                cJSON_AddStringToObject(pl, "AvailabilityZone", job->zones[z]);
                cJSON_AddItemToObject(s, "Placement", pl);
            }
            cJSON_AddStringToObject(prof, "Arn", arn);
            cJSON_AddItemToObject(s, "IamInstanceProfile", prof);
            if (o->key_name[0]) cJSON_AddStringToObject(s, "KeyName", o->key_name);
            if (o->nsecurity_groups) {
                cJSON *g = cJSON_CreateArray();
                for (size_t i = 0; i < o->nsecurity_groups; i++) {
                    cJSON *x = cJSON_CreateObject();
                    cJSON_AddStringToObject(x, "GroupId", o->security_groups[i]);
                    cJSON_AddItemToArray(g, x);
                }
                cJSON_AddItemToObject(s, "SecurityGroups", g);
            }
            cJSON_AddStringToObject(s, "UserData", userdata_b64);
            cJSON_AddItemToObject(s, "TagSpecifications", tag_spec("instance", aws_tags(job, o, task)));
            cJSON_AddItemToArray(specs, s);
        }
    cJSON_AddItemToObject(c, "LaunchSpecifications", specs);
    add_token(c, job, task);
    return c;
}

/* ------------------------------------------------------------------ launch template */
cJSON *aws_launch_template(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm, size_t task,
                           const char *userdata_b64)
{
    char name[200], arn[256], desc[200];
    aws_task_name(job, o, task, name, sizeof name);
    snprintf(arn, sizeof arn, "arn:aws:iam::%s:instance-profile/%s", o->account_id, nm->profile);
    snprintf(desc, sizeof desc, "baton job %s, task %zu", job->name, task);
    cJSON *c = cJSON_CreateObject(), *d = cJSON_CreateObject(), *prof = cJSON_CreateObject(), *md = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "LaunchTemplateName", name);
    cJSON_AddStringToObject(c, "VersionDescription", desc);
    cJSON_AddStringToObject(d, "ImageId", o->image_id);
    cJSON_AddStringToObject(prof, "Arn", arn);
    cJSON_AddItemToObject(d, "IamInstanceProfile", prof);
    /* IMDSv2 only, and only from the instance itself (no container hop) */
    cJSON_AddStringToObject(md, "HttpTokens", "required");
    cJSON_AddNumberToObject(md, "HttpPutResponseHopLimit", 1);
    cJSON_AddStringToObject(md, "HttpEndpoint", "enabled");
    cJSON_AddItemToObject(d, "MetadataOptions", md);
    if (o->key_name[0]) cJSON_AddStringToObject(d, "KeyName", o->key_name);
    if (o->nsecurity_groups) {
        cJSON *g = cJSON_CreateArray();
        for (size_t i = 0; i < o->nsecurity_groups; i++) cJSON_AddItemToArray(g, cJSON_CreateString(o->security_groups[i]));
        cJSON_AddItemToObject(d, "SecurityGroupIds", g);
    }
    cJSON_AddStringToObject(d, "UserData", userdata_b64);
    cJSON_AddItemToObject(d, "TagSpecifications", tag_spec("instance", aws_tags(job, o, task)));
    cJSON_AddItemToObject(c, "LaunchTemplateData", d);
    cJSON_AddItemToObject(c, "TagSpecifications", tag_spec("launch-template", aws_tags(job, o, task)));
    add_token(c, job, task);
    return c;
}

static cJSON *template_spec(const baton_job *job, const baton_aws_opts *o, size_t task)
{
    char name[200];
    aws_task_name(job, o, task, name, sizeof name);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "LaunchTemplateName", name);
    cJSON_AddStringToObject(s, "Version", "$Default");
    return s;
}

/* ------------------------------------------------------------------ Auto Scaling group */
cJSON *aws_auto_scaling_group(const baton_job *job, const baton_aws_opts *o, size_t task)
{
    char name[200];
    aws_task_name(job, o, task, name, sizeof name);
    cJSON *c = cJSON_CreateObject(), *mip = cJSON_CreateObject(), *lt = cJSON_CreateObject(), *ov = cJSON_CreateArray(),
          *dist = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "AutoScalingGroupName", name);
    cJSON_AddItemToObject(lt, "LaunchTemplateSpecification", template_spec(job, o, task));
    for (size_t t = 0; t < job->ntypes; t++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "InstanceType", job->types[t].name);
        cJSON_AddItemToArray(ov, x);
    }
    cJSON_AddItemToObject(lt, "Overrides", ov);
    cJSON_AddItemToObject(mip, "LaunchTemplate", lt);
    cJSON_AddNumberToObject(dist, "OnDemandBaseCapacity", 0);
    cJSON_AddNumberToObject(dist, "OnDemandPercentageAboveBaseCapacity", 0);   /* 100 % Spot */
    cJSON_AddStringToObject(dist, "SpotAllocationStrategy", baton_alloc_name(job->alloc));
    cJSON_AddItemToObject(mip, "InstancesDistribution", dist);
    cJSON_AddItemToObject(c, "MixedInstancesPolicy", mip);
    cJSON_AddNumberToObject(c, "MinSize", 1);
    cJSON_AddNumberToObject(c, "MaxSize", 1);
    cJSON_AddNumberToObject(c, "DesiredCapacity", 1);
    if (o->subnets[0]) {   /* a subnet for every zone (aws_check.c), or none */
        char ids[BATON_JOB_MAX_ZONES * 32] = "";
        for (size_t z = 0; z < job->nzones; z++)
            snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%s", z ? "," : "", o->subnets[z]);
        cJSON_AddStringToObject(c, "VPCZoneIdentifier", ids);
    } else {
        cJSON *az = cJSON_CreateArray();
        for (size_t z = 0; z < job->nzones; z++) cJSON_AddItemToArray(az, cJSON_CreateString(job->zones[z]));
        cJSON_AddItemToObject(c, "AvailabilityZones", az);
    }
    cJSON_AddStringToObject(c, "HealthCheckType", "EC2");
    /* a replacement on a rebalance recommendation, before the interruption notice */
    cJSON_AddBoolToObject(c, "CapacityRebalance", 1);
    cJSON *tags = aws_tags(job, o, task), *t;
    cJSON_ArrayForEach(t, tags)
    {
        cJSON_AddStringToObject(t, "ResourceId", name);
        cJSON_AddStringToObject(t, "ResourceType", "auto-scaling-group");
        cJSON_AddBoolToObject(t, "PropagateAtLaunch", 1);
    }
    cJSON_AddItemToObject(c, "Tags", tags);
    return c;
}

/* ------------------------------------------------------------------ EC2 Fleet */
cJSON *aws_ec2_fleet(const baton_job *job, const baton_aws_opts *o, size_t task)
{
    cJSON *c = cJSON_CreateObject(), *cap = cJSON_CreateObject(), *spot = cJSON_CreateObject(),
          *ms = cJSON_CreateObject(), *cr = cJSON_CreateObject(), *cfgs = cJSON_CreateArray(), *cfg = cJSON_CreateObject(),
          *ov = cJSON_CreateArray();
    cJSON_AddStringToObject(c, "Type", "maintain");
    cJSON_AddNumberToObject(cap, "TotalTargetCapacity", 1);
    cJSON_AddNumberToObject(cap, "OnDemandTargetCapacity", 0);
    cJSON_AddNumberToObject(cap, "SpotTargetCapacity", 1);
    cJSON_AddStringToObject(cap, "DefaultTargetCapacityType", "spot");
    cJSON_AddItemToObject(c, "TargetCapacitySpecification", cap);
    cJSON_AddStringToObject(spot, "AllocationStrategy", baton_alloc_name(job->alloc));
    cJSON_AddStringToObject(spot, "InstanceInterruptionBehavior", "terminate");
    /* on a rebalance recommendation: launch a replacement, terminate the old instance 2 minutes later
     * (the replacement waits for the volume it lets go) */
    cJSON_AddStringToObject(cr, "ReplacementStrategy", "launch-before-terminate");
    cJSON_AddNumberToObject(cr, "TerminationDelay", 120);
    cJSON_AddItemToObject(ms, "CapacityRebalance", cr);
    cJSON_AddItemToObject(spot, "MaintenanceStrategies", ms);
    cJSON_AddItemToObject(c, "SpotOptions", spot);
    cJSON_AddItemToObject(cfg, "LaunchTemplateSpecification", template_spec(job, o, task));
    for (size_t t = 0; t < job->ntypes; t++)
        for (size_t z = 0; z < job->nzones; z++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "InstanceType", job->types[t].name);
            if (o->subnets[z]) cJSON_AddStringToObject(x, "SubnetId", o->subnets[z]);
            else cJSON_AddStringToObject(x, "AvailabilityZone", job->zones[z]);
            cJSON_AddItemToArray(ov, x);
        }
    cJSON_AddItemToObject(cfg, "Overrides", ov);
    cJSON_AddItemToArray(cfgs, cfg);
    cJSON_AddItemToObject(c, "LaunchTemplateConfigs", cfgs);
    cJSON_AddBoolToObject(c, "ReplaceUnhealthyInstances", 1);
    cJSON_AddStringToObject(c, "ExcessCapacityTerminationPolicy", "termination");
    cJSON_AddItemToObject(c, "TagSpecifications", tag_spec("fleet", aws_tags(job, o, task)));
    add_token(c, job, task);
    return c;
}
