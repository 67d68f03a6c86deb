/* aws_iam.c — the aws backend's IAM documents, least privilege for the chosen API:
 *   - the trust policies: ec2.amazonaws.com assumes the instance role (and, for the Spot Fleet,
 *     spotfleet.amazonaws.com the fleet role);
 *   - the instance policy: exactly the actions the user data takes — find, create, attach and
 *     snapshot the task's volume in this region, tag only what it creates, delete only volumes and
 *     snapshots tagged with the job, read the code and seed in S3, and end its own task on success:
 *     autoscaling:UpdateAutoScalingGroup on the job's groups (Auto Scaling group), ec2:DeleteFleets
 *     on fleets tagged with the job (EC2 Fleet), ec2:CancelSpotFleetRequests (Spot Fleet); nothing
 *     else (tests/aws/validate.py compares it with the calls of every user-data scenario);
 *   - the deployer policy: what running commands.sh, `fleet status` and `fleet cancel` needs.
 *
 * Contract: builds cJSON trees from validated options; no I/O. */
#include "aws_internal.h"

#include <stdio.h>
#include <string.h>

static cJSON *strings(const char *const *v)
{
    cJSON *a = cJSON_CreateArray();
    for (; *v; v++) cJSON_AddItemToArray(a, cJSON_CreateString(*v));
    return a;
}

static cJSON *statement(const char *sid, const char *const *actions, cJSON *resource, cJSON *condition)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "Sid", sid);
    cJSON_AddStringToObject(s, "Effect", "Allow");
    cJSON_AddItemToObject(s, "Action", strings(actions));
    cJSON_AddItemToObject(s, "Resource", resource ? resource : cJSON_CreateString("*"));
    if (condition) cJSON_AddItemToObject(s, "Condition", condition);
    return s;
}

static cJSON *cond1(const char *op, const char *key, cJSON *value)
{
    cJSON *c = cJSON_CreateObject(), *inner = cJSON_CreateObject();
    cJSON_AddItemToObject(inner, key, value);
    cJSON_AddItemToObject(c, op, inner);
    return c;
}

static cJSON *policy_doc(void)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "Version", "2012-10-17");
    cJSON_AddItemToObject(d, "Statement", cJSON_CreateArray());
    return d;
}

cJSON *aws_trust(const char *service)
{
    cJSON *d = policy_doc(), *s = cJSON_CreateObject(), *p = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "Effect", "Allow");
    cJSON_AddStringToObject(p, "Service", service);
    cJSON_AddItemToObject(s, "Principal", p);
    cJSON_AddStringToObject(s, "Action", "sts:AssumeRole");
    cJSON_AddItemToArray(cJSON_GetObjectItem(d, "Statement"), s);
    return d;
}

/* s3://bucket/key -> bucket, key (key may be empty) */
static void split_s3(const char *uri, char *bucket, size_t bcap, char *key, size_t kcap)
{
    const char *b = uri + 5, *sl = strchr(b, '/');
    size_t bl = sl ? (size_t)(sl - b) : strlen(b);
    snprintf(bucket, bcap, "%.*s", (int)bl, b);
    snprintf(key, kcap, "%s", sl ? sl + 1 : "");
}

/* S3 reads of one URI: an object (GetObject on it) or a prefix (ListBucket limited to the prefix,
 * GetObject below it). */
static void s3_statements(cJSON *st, const char *uri, const char *sid)
{
    char bucket[128], key[1024], arn[1200], sidb[64];
    split_s3(uri, bucket, sizeof bucket, key, sizeof key);
    size_t kl = strlen(key);
    int prefix = kl == 0 || key[kl - 1] == '/';
    static const char *const get[] = {"s3:GetObject", NULL}, *const list[] = {"s3:ListBucket", NULL};
    snprintf(arn, sizeof arn, "arn:aws:s3:::%s/%s%s", bucket, key, prefix ? "*" : "");
    snprintf(sidb, sizeof sidb, "Read%s", sid);
    cJSON_AddItemToArray(st, statement(sidb, get, cJSON_CreateString(arn), NULL));
    if (prefix) {
        snprintf(arn, sizeof arn, "arn:aws:s3:::%s", bucket);
        char pat[1100];
        snprintf(pat, sizeof pat, "%s*", key);
        snprintf(sidb, sizeof sidb, "List%s", sid);
        cJSON_AddItemToArray(st, statement(sidb, list, cJSON_CreateString(arn),
                                           cond1("StringLike", "s3:prefix", cJSON_CreateString(pat))));
    }
}

/* {op: {k1: v1, k2: v2}} */
static cJSON *cond2(const char *op, const char *k1, cJSON *v1, const char *k2, cJSON *v2)
{
    cJSON *c = cond1(op, k1, v1);
    cJSON_AddItemToObject(cJSON_GetObjectItem(c, op), k2, v2);
    return c;
}

static cJSON *region_is(const baton_aws_opts *o)
{
    return cond1("StringEquals", "aws:RequestedRegion", cJSON_CreateString(o->region));
}

/* The ARN pattern of the job's Auto Scaling groups. */
static void groups_arn(const baton_job *job, const baton_aws_opts *o, char *out, size_t cap)
{
    snprintf(out, cap, "arn:aws:autoscaling:%s:%s:autoScalingGroup:*:autoScalingGroupName/%s-%s-*", o->region,
             o->account_id, o->role_prefix, job->name);
}

/* The instance role's policy: exactly the actions of the user data. */
cJSON *aws_instance_policy(const baton_job *job, const baton_aws_opts *o)
{
    static const char *const describe[] = {"ec2:DescribeVolumes", "ec2:DescribeSnapshots", "ec2:DescribeTags", NULL};
    static const char *const describe_asg[] = {"ec2:DescribeVolumes", "ec2:DescribeSnapshots", NULL};
    static const char *const make[] = {"ec2:CreateVolume", "ec2:CreateSnapshot", "ec2:AttachVolume", NULL};
    static const char *const tag[] = {"ec2:CreateTags", NULL};
    static const char *const del[] = {"ec2:DeleteVolume", "ec2:DeleteSnapshot", NULL};
    static const char *const creating[] = {"CreateVolume", "CreateSnapshot", NULL};
    static const char *const cancel[] = {"ec2:CancelSpotFleetRequests", NULL};
    static const char *const delete_fleet[] = {"ec2:DeleteFleets", NULL};
    static const char *const update_group[] = {"autoscaling:UpdateAutoScalingGroup", NULL};
    cJSON *d = policy_doc(), *st = cJSON_GetObjectItem(d, "Statement");
    /* an Auto Scaling group's name is in the user data; a fleet's id is found by the instance's tag */
    if (o->api == BATON_AWS_ASG) cJSON_AddItemToArray(st, statement("FindVolumes", describe_asg, NULL, NULL));
    else cJSON_AddItemToArray(st, statement("FindVolumesAndFleet", describe, NULL, NULL));
    cJSON_AddItemToArray(st, statement("MakeAndAttachVolumes", make, NULL, region_is(o)));
    cJSON_AddItemToArray(st, statement("TagWhatItCreates", tag, NULL,
                                       cond1("StringEquals", "ec2:CreateAction", strings(creating))));
    cJSON_AddItemToArray(st, statement("DeleteOnlyThisJobsVolumesAndSnapshots", del, NULL,
                                       cond1("StringEquals", "ec2:ResourceTag/baton-job", cJSON_CreateString(job->name))));
    if (o->api == BATON_AWS_ASG) {
        char arn[400];
        groups_arn(job, o, arn, sizeof arn);
        cJSON_AddItemToArray(st, statement("EndItsGroupOnSuccess", update_group, cJSON_CreateString(arn),
                                           cond1("StringEquals", "autoscaling:ResourceTag/baton-job",
                                                 cJSON_CreateString(job->name))));
    } else if (o->api == BATON_AWS_EC2_FLEET) {
        cJSON_AddItemToArray(st, statement("DeleteItsFleetOnSuccess", delete_fleet, NULL,
                                           cond2("StringEquals", "ec2:ResourceTag/baton-job", cJSON_CreateString(job->name),
                                                 "aws:RequestedRegion", cJSON_CreateString(o->region))));
    } else {
        cJSON_AddItemToArray(st, statement("CancelTheFleetOnSuccess", cancel, NULL, region_is(o)));
    }
    if (o->code[0]) s3_statements(st, o->code, "Code");
    if (o->seed[0]) s3_statements(st, o->seed, "Seed");
    return d;
}

static cJSON *spot_fleet_deployer(const baton_aws_opts *o, const baton_aws_names *nm)
{
    static const char *const iam[] = {"iam:CreateRole", "iam:AttachRolePolicy", "iam:PutRolePolicy", NULL};
    static const char *const prof[] = {"iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile", NULL};
    static const char *const pass[] = {"iam:PassRole", NULL};
    static const char *const ec2[] = {"ec2:RequestSpotFleet", "ec2:DescribeSpotFleetRequests",
                                      "ec2:CancelSpotFleetRequests", "ec2:CreateTags", NULL};
    char a1[256], a2[256], a3[256];
    snprintf(a1, sizeof a1, "arn:aws:iam::%s:role/%s", o->account_id, nm->fleet_role);
    snprintf(a2, sizeof a2, "arn:aws:iam::%s:role/%s", o->account_id, nm->instance_role);
    snprintf(a3, sizeof a3, "arn:aws:iam::%s:instance-profile/%s", o->account_id, nm->profile);
    const char *roles[] = {a1, a2, NULL}, *profile[] = {a3, NULL};
    cJSON *d = policy_doc(), *st = cJSON_GetObjectItem(d, "Statement");
    cJSON_AddItemToArray(st, statement("CreateTheTwoRoles", iam, strings(roles), NULL));
    cJSON_AddItemToArray(st, statement("CreateTheInstanceProfile", prof, strings(profile), NULL));
    cJSON_AddItemToArray(st, statement("PassTheRolesToEc2AndSpotFleet", pass, strings(roles), NULL));
    cJSON_AddItemToArray(st, statement("RequestFollowAndCancelTheFleets", ec2, NULL, region_is(o)));
    return d;
}

/* Auto Scaling group and EC2 Fleet: one role, launch templates, the groups or fleets, and the
 * service-linked role the service needs the first time (created by AWS when allowed). */
cJSON *aws_deployer_policy(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm)
{
    if (o->api == BATON_AWS_SPOT_FLEET) return spot_fleet_deployer(o, nm);
    static const char *const iam[] = {"iam:CreateRole", "iam:PutRolePolicy", NULL};
    static const char *const prof[] = {"iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile", NULL};
    static const char *const pass[] = {"iam:PassRole", NULL};
    static const char *const slr[] = {"iam:CreateServiceLinkedRole", NULL};
    static const char *const lt[] = {"ec2:CreateLaunchTemplate", "ec2:DeleteLaunchTemplate", "ec2:CreateTags",
                                     "ec2:RunInstances", NULL};
    static const char *const groups[] = {"autoscaling:CreateAutoScalingGroup", "autoscaling:CreateOrUpdateTags",
                                         "autoscaling:DeleteAutoScalingGroup", NULL};
    static const char *const follow[] = {"autoscaling:DescribeAutoScalingGroups", NULL};
    static const char *const fleets[] = {"ec2:CreateFleet", "ec2:DescribeFleets", "ec2:DeleteFleets", NULL};
    static const char *const asg_service[] = {"autoscaling.amazonaws.com", NULL};
    static const char *const fleet_service[] = {"ec2fleet.amazonaws.com", "spot.amazonaws.com", NULL};
    char a1[256], a2[256];
    snprintf(a1, sizeof a1, "arn:aws:iam::%s:role/%s", o->account_id, nm->instance_role);
    snprintf(a2, sizeof a2, "arn:aws:iam::%s:instance-profile/%s", o->account_id, nm->profile);
    const char *role[] = {a1, NULL}, *profile[] = {a2, NULL};
    cJSON *d = policy_doc(), *st = cJSON_GetObjectItem(d, "Statement");
    cJSON_AddItemToArray(st, statement("CreateTheInstanceRole", iam, strings(role), NULL));
    cJSON_AddItemToArray(st, statement("CreateTheInstanceProfile", prof, strings(profile), NULL));
    cJSON_AddItemToArray(st, statement("PassTheInstanceRole", pass, strings(role), NULL));
    cJSON_AddItemToArray(st, statement("LaunchTemplatesAndTheirInstances", lt, NULL, region_is(o)));
    if (o->api == BATON_AWS_ASG) {
        char arn[400];
        groups_arn(job, o, arn, sizeof arn);
        cJSON_AddItemToArray(st, statement("CreateAndDeleteTheJobsGroups", groups, cJSON_CreateString(arn), NULL));
        cJSON_AddItemToArray(st, statement("FollowTheGroups", follow, NULL, NULL));
        cJSON_AddItemToArray(st, statement("AutoScalingsServiceLinkedRole", slr, NULL,
                                           cond1("StringEquals", "iam:AWSServiceName", strings(asg_service))));
    } else {
        cJSON_AddItemToArray(st, statement("CreateFollowAndDeleteTheFleets", fleets, NULL, region_is(o)));
        cJSON_AddItemToArray(st, statement("Ec2FleetsServiceLinkedRoles", slr, NULL,
                                           cond1("StringEquals", "iam:AWSServiceName", strings(fleet_service))));
    }
    return d;
}
