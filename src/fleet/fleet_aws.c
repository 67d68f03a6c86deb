/* fleet_aws.c — the aws fleet backend: from a job file, the artefacts of a real EC2 Spot Fleet
 * and the aws CLI commands that create it.
 *
 * Owns: the job-file checks for AWS (one region, an AMI, no local seed folder, no simulated
 * market, every task running at once), the Spot Fleet request per task (a LaunchSpecification per
 * instance type and zone, TargetCapacity 1, the allocation strategy, IamFleetRole, the instance
 * profile, base64 user data, tags, an idempotency ClientToken), the IAM documents (the trust
 * policies of the fleet and instance roles; the instance policy with only the actions the user
 * data uses, destructive ones limited to the job's tagged resources; the deployer policy for
 * running the commands), the ordered commands (create roles, policies, profile, fleet requests)
 * and running them (--apply), status and cancel.
 *
 * Contract: errors name the job file, line and field, or the aws command and what it printed.
 * Nothing is sent anywhere except by baton_aws_apply/status/cancel/account (the aws CLI). */
#include "baton/fleet_backend.h"
#include "remote_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEXDIGITS "0123456789abcdef"
#define TAGCHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/+@-"

/* ------------------------------------------------------------------ checks */
static int prefixed_hex(const char *s, const char *prefix, size_t minhex, size_t maxhex)
{
    size_t pl = strlen(prefix), n;
    if (strncmp(s, prefix, pl)) return 0;
    n = strlen(s + pl);
    return n >= minhex && n <= maxhex && rmt_only(s + pl, HEXDIGITS);
}

static int s3_uri_ok(const char *s)
{
    if (strncmp(s, "s3://", 5) || strlen(s) > 900) return 0;
    const char *bucket = s + 5, *slash = strchr(bucket, '/');
    size_t bl = slash ? (size_t)(slash - bucket) : strlen(bucket);
    if (bl < 3 || bl > 63) return 0;
    for (size_t i = 0; i < bl; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789.-", bucket[i])) return 0;
    for (const char *p = bucket; *p; p++)   /* no wildcards (they would widen the IAM resource) */
        if (strchr("*?\"'\\\n\r\t $`", *p)) return 0;
    return 1;
}

/* "us-east-1a" -> "us-east-1"; 0 on success. */
static int region_of_zone(const char *zone, char *out, size_t cap)
{
    size_t n = strlen(zone);
    while (n > 0 && zone[n - 1] >= 'a' && zone[n - 1] <= 'z') n--;
    if (n == 0 || n == strlen(zone) || zone[n - 1] < '0' || zone[n - 1] > '9' || n >= cap) return -1;
    memcpy(out, zone, n);
    out[n] = 0;
    return 0;
}

static int copy_opt(const baton_job *job, const char *key, char *dst, size_t cap, baton_err *err)
{
    int line;
    const char *v = rmt_opt(job, key, &line);
    if (!v) return 0;
    if (strlen(v) >= cap) return rmt_fail(err, job, line, key, "at most %zu characters", cap - 1);
    snprintf(dst, cap, "%s", v);
    return 0;
}

int baton_aws_check(const baton_job *job, baton_aws_opts *o, baton_err *err)
{
    static const char *const known[] = {"region", "account_id", "image_id", "key_name", "security_groups.", "subnets.",
                                        "code", "seed", "volume_type", "device", "mount", "role_prefix", "tags.", NULL};
    memset(o, 0, sizeof *o);
    snprintf(o->volume_type, sizeof o->volume_type, "gp3");
    snprintf(o->device, sizeof o->device, "/dev/sdf");
    snprintf(o->mount, sizeof o->mount, "/mnt/baton");
    snprintf(o->role_prefix, sizeof o->role_prefix, "baton");
    int rc = rmt_check_section(job, "aws.", known, err), line;
    if (rc) return rc;
    if (!job->nzones || !job->ntypes)
        return rmt_fail(err, job, 0, job->nzones ? "instance_types" : "zones",
                        "the aws backend needs at least one instance type and one zone");
    if (job->market.time_scale != 1 || job->market.ninterrupts || job->market.seed || job->market.hazard_scale != 1 ||
        job->market.launch_delay != 90 || job->market.notice != 120 || job->market.capacity_cooldown != 3600)
        return rmt_fail(err, job, 0, "market",
                        "the aws backend runs on the real spot market; remove 'market:' (it configures the local "
                        "backend's simulator)");
    if (job->volume.seed[0])
        return rmt_fail(err, job, 0, "volume.seed",
                        "the aws backend cannot copy a folder of this machine into a cloud volume: upload it "
                        "(aws s3 sync %s s3://BUCKET/PREFIX/) and set aws.seed: s3://BUCKET/PREFIX/ instead",
                        job->volume.seed);
    if (job->target_capacity < (int)job->ncommands)
        return rmt_fail(err, job, 0, "target_capacity",
                        "the aws backend runs every task at once (one Spot Fleet of capacity 1 per task): set it to "
                        "the number of commands (%zu), or split the sweep into several job files", job->ncommands);
    if (job->volume.size_gb < 1 || job->volume.size_gb > 16384)
        return rmt_fail(err, job, 0, "volume.size_gb", "an EBS volume has 1 to 16384 GiB, not %g", job->volume.size_gb);
    if (strlen(job->name) + strlen("baton-") + strlen("-instance") > 64 && !rmt_opt(job, "aws.role_prefix", NULL))
        return rmt_fail(err, job, 0, "name", "at most %zu characters for the aws backend (IAM role names have 64)",
                        (size_t)64 - strlen("baton--instance"));

    /* region: given, or from the zones, which must all be in it */
    if ((rc = copy_opt(job, "aws.region", o->region, sizeof o->region, err))) return rc;
    if (o->region[0] && !rmt_only(o->region, "abcdefghijklmnopqrstuvwxyz0123456789-"))
        return rmt_fail(err, job, (rmt_opt(job, "aws.region", &line), line), "aws.region", "'%s' is not a region name", o->region);
    for (size_t z = 0; z < job->nzones; z++) {
        char r[32];
        if (region_of_zone(job->zones[z], r, sizeof r))
            return rmt_fail(err, job, 0, "zones", "'%s' is not an availability zone name like us-east-1a%s", job->zones[z],
                            o->region[0] ? "" : " (set aws.region for other kinds of zone)");
        if (!o->region[0]) snprintf(o->region, sizeof o->region, "%s", r);
        else if (strncmp(job->zones[z], o->region, strlen(o->region)))
            return rmt_fail(err, job, 0, "zones",
                            "%s is not in region %s: a Spot Fleet request lives in one region (use one job file per "
                            "region)", job->zones[z], o->region);
    }
    if ((rc = copy_opt(job, "aws.account_id", o->account_id, sizeof o->account_id, err))) return rc;
    if (o->account_id[0] && (strlen(o->account_id) != 12 || !rmt_only(o->account_id, "0123456789")))
        return rmt_fail(err, job, (rmt_opt(job, "aws.account_id", &line), line), "aws.account_id",
                        "expected the 12-digit account id, got '%s'", o->account_id);
    const char *v = rmt_opt(job, "aws.image_id", &line);
    if (!v)
        return rmt_fail(err, job, 0, "aws.image_id",
                        "missing: the AMI the instances boot (e.g. ami-0123456789abcdef0; one with the aws CLI and "
                        "baton, or give baton in aws.code)");
    if (!prefixed_hex(v, "ami-", 8, 17)) return rmt_fail(err, job, line, "aws.image_id", "'%.40s' is not an AMI id (ami-<hex>)", v);
    snprintf(o->image_id, sizeof o->image_id, "%s", v);
    v = rmt_opt(job, "aws.key_name", &line);
    if (v) {
        if (strlen(v) >= sizeof o->key_name || strpbrk(v, "\"\\\n\r"))
            return rmt_fail(err, job, line, "aws.key_name", "not a key pair name");
        snprintf(o->key_name, sizeof o->key_name, "%s", v);
    }
    for (size_t i = 0; i < job->nbackend_opts; i++) {
        const baton_job_kv *kv = &job->backend_opts[i];
        if (!strncmp(kv->key, "aws.security_groups.", 20)) {
            if (!prefixed_hex(kv->value, "sg-", 8, 17))
                return rmt_fail(err, job, kv->line, kv->key, "'%.40s' is not a security group id (sg-<hex>)", kv->value);
            if (o->nsecurity_groups == 16) return rmt_fail(err, job, kv->line, kv->key, "at most 16 security groups");
            o->security_groups[o->nsecurity_groups++] = kv->value;
        } else if (!strncmp(kv->key, "aws.subnets.", 12)) {
            const char *zone = kv->key + 12;
            size_t z = 0;
            while (z < job->nzones && strcmp(job->zones[z], zone)) z++;
            if (z == job->nzones) return rmt_fail(err, job, kv->line, kv->key, "zone %s is not listed under 'zones'", zone);
            if (!prefixed_hex(kv->value, "subnet-", 8, 17))
                return rmt_fail(err, job, kv->line, kv->key, "'%.40s' is not a subnet id (subnet-<hex>)", kv->value);
            o->subnets[z] = kv->value;
        } else if (!strncmp(kv->key, "aws.tags.", 9)) {
            const char *k = kv->key + 9;
            if (!rmt_only(k, TAGCHARS) || strlen(k) > 127 || !strncmp(k, "aws:", 4) || !strncmp(k, "baton-", 6) ||
                !rmt_only(kv->value, TAGCHARS) || strlen(kv->value) > 255)
                return rmt_fail(err, job, kv->line, kv->key,
                                "tag keys and values take letters, digits and _.:/+@- (keys not starting with aws: or "
                                "baton-)");
            if (o->ntags == 16) return rmt_fail(err, job, kv->line, kv->key, "at most 16 tags");
            o->tag_keys[o->ntags] = k;
            o->tag_values[o->ntags++] = kv->value;
        }
    }
    if ((rc = copy_opt(job, "aws.code", o->code, sizeof o->code, err))) return rc;
    if (o->code[0] && !s3_uri_ok(o->code))
        return rmt_fail(err, job, (rmt_opt(job, "aws.code", &line), line), "aws.code",
                        "expected s3://BUCKET/KEY.tar.gz or s3://BUCKET/PREFIX/ (no spaces, quotes or wildcards)");
    if ((rc = copy_opt(job, "aws.seed", o->seed, sizeof o->seed, err))) return rc;
    if (o->seed[0] && (!s3_uri_ok(o->seed) || o->seed[strlen(o->seed) - 1] != '/'))
        return rmt_fail(err, job, (rmt_opt(job, "aws.seed", &line), line), "aws.seed",
                        "expected an s3://BUCKET/PREFIX/ (ending in /) to copy into each new volume");
    if ((rc = copy_opt(job, "aws.volume_type", o->volume_type, sizeof o->volume_type, err))) return rc;
    static const char *const vt[] = {"gp2", "gp3", "io1", "io2", "st1", "sc1", "standard", NULL};
    int ok = 0;
    for (const char *const *p = vt; *p; p++) ok |= !strcmp(*p, o->volume_type);
    if (!ok)
        return rmt_fail(err, job, (rmt_opt(job, "aws.volume_type", &line), line), "aws.volume_type",
                        "expected gp3, gp2, io1, io2, st1, sc1 or standard");
    if ((rc = copy_opt(job, "aws.device", o->device, sizeof o->device, err))) return rc;
    if (!((!strncmp(o->device, "/dev/sd", 7) && strlen(o->device) == 8) ||
          (!strncmp(o->device, "/dev/xvd", 8) && strlen(o->device) == 9)) ||
        o->device[strlen(o->device) - 1] < 'f' || o->device[strlen(o->device) - 1] > 'p')
        return rmt_fail(err, job, (rmt_opt(job, "aws.device", &line), line), "aws.device",
                        "expected /dev/sdf ... /dev/sdp (or /dev/xvdf ... /dev/xvdp)");
    if ((rc = copy_opt(job, "aws.mount", o->mount, sizeof o->mount, err))) return rc;
    if (o->mount[0] != '/' || !rmt_only(o->mount, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") ||
        strstr(o->mount, ".."))
        return rmt_fail(err, job, (rmt_opt(job, "aws.mount", &line), line), "aws.mount", "expected an absolute folder path");
    if ((rc = copy_opt(job, "aws.role_prefix", o->role_prefix, sizeof o->role_prefix, err))) return rc;
    if (!rmt_only(o->role_prefix, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+=,.@_-") ||
        strlen(o->role_prefix) + strlen(job->name) + strlen("--instance") > 64)
        return rmt_fail(err, job, (rmt_opt(job, "aws.role_prefix", &line), line), "aws.role_prefix",
                        "letters, digits and +=,.@_- only, and with the job name at most 54 characters");
    for (size_t i = 0; i < job->nenv; i++) {
        const char *k = strncmp(job->env[i].key, "env.", 4) ? job->env[i].key : job->env[i].key + 4;
        if (!rmt_only(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") || (*k >= '0' && *k <= '9'))
            return rmt_fail(err, job, job->env[i].line, job->env[i].key, "not a valid environment variable name");
    }
    return BATON_OK;
}

/* ------------------------------------------------------------------ documents */
void baton_aws_names_of(const baton_job *job, const baton_aws_opts *o, baton_aws_names *nm)
{
    snprintf(nm->fleet_role, sizeof nm->fleet_role, "%s-%s-fleet", o->role_prefix, job->name);
    snprintf(nm->instance_role, sizeof nm->instance_role, "%s-%s-instance", o->role_prefix, job->name);
    snprintf(nm->policy, sizeof nm->policy, "%s-%s-volume", o->role_prefix, job->name);
    snprintf(nm->profile, sizeof nm->profile, "%s-%s", o->role_prefix, job->name);
}

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

static cJSON *trust(const char *service)
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

/* The instance role's policy: exactly the actions of the user data. */
static cJSON *instance_policy(const baton_job *job, const baton_aws_opts *o)
{
    static const char *const describe[] = {"ec2:DescribeVolumes", "ec2:DescribeSnapshots", "ec2:DescribeTags", NULL};
    static const char *const make[] = {"ec2:CreateVolume", "ec2:CreateSnapshot", "ec2:AttachVolume", NULL};
    static const char *const tag[] = {"ec2:CreateTags", NULL};
    static const char *const del[] = {"ec2:DeleteVolume", "ec2:DeleteSnapshot", NULL};
    static const char *const cancel[] = {"ec2:CancelSpotFleetRequests", NULL};
    static const char *const creating[] = {"CreateVolume", "CreateSnapshot", NULL};
    cJSON *d = policy_doc(), *st = cJSON_GetObjectItem(d, "Statement");
    cJSON_AddItemToArray(st, statement("FindVolumesAndFleet", describe, NULL, NULL));
    cJSON_AddItemToArray(st, statement("MakeAndAttachVolumes", make, NULL,
                                       cond1("StringEquals", "aws:RequestedRegion", cJSON_CreateString(o->region))));
    cJSON_AddItemToArray(st, statement("TagWhatItCreates", tag, NULL,
                                       cond1("StringEquals", "ec2:CreateAction", strings(creating))));
    cJSON_AddItemToArray(st, statement("DeleteOnlyThisJobsVolumesAndSnapshots", del, NULL,
                                       cond1("StringEquals", "ec2:ResourceTag/baton-job", cJSON_CreateString(job->name))));
    cJSON_AddItemToArray(st, statement("CancelTheFleetOnSuccess", cancel, NULL,
                                       cond1("StringEquals", "aws:RequestedRegion", cJSON_CreateString(o->region))));
    if (o->code[0]) s3_statements(st, o->code, "Code");
    if (o->seed[0]) s3_statements(st, o->seed, "Seed");
    return d;
}

static cJSON *deployer_policy(const baton_aws_opts *o, const baton_aws_names *nm)
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
    cJSON_AddItemToArray(st, statement("RequestFollowAndCancelTheFleets", ec2, NULL,
                                       cond1("StringEquals", "aws:RequestedRegion", cJSON_CreateString(o->region))));
    return d;
}

static cJSON *tags(const baton_job *job, const baton_aws_opts *o, size_t task)
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

static cJSON *fleet_config(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm, size_t task,
                           const char *userdata_b64)
{
    char arn[256];
    cJSON *c = cJSON_CreateObject(), *specs = cJSON_CreateArray();
    snprintf(arn, sizeof arn, "arn:aws:iam::%s:role/%s", o->account_id, nm->fleet_role);
    cJSON_AddStringToObject(c, "IamFleetRole", arn);
    cJSON_AddStringToObject(c, "AllocationStrategy",
                            job->alloc == BATON_ALLOC_CAPACITY_OPTIMIZED ? "capacityOptimized"
                            : job->alloc == BATON_ALLOC_LOWEST_PRICE     ? "lowestPrice"
                                                                         : "priceCapacityOptimized");
    cJSON_AddNumberToObject(c, "TargetCapacity", 1);
    cJSON_AddStringToObject(c, "Type", "maintain");
    cJSON_AddStringToObject(c, "InstanceInterruptionBehavior", "terminate");
    cJSON_AddBoolToObject(c, "ReplaceUnhealthyInstances", 1);
    cJSON_AddItemToObject(c, "TagSpecifications", tag_spec("spot-fleet-request", tags(job, o, task)));
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
            cJSON_AddItemToObject(s, "TagSpecifications", tag_spec("instance", tags(job, o, task)));
            cJSON_AddItemToArray(specs, s);
        }
    cJSON_AddItemToObject(c, "LaunchSpecifications", specs);
    /* the same request sent twice (a retry of --apply) makes one fleet */
    char *text = cJSON_PrintUnformatted(c), token[65];
    snprintf(token, sizeof token, "baton-%.24s-%hu-%016llx", job->name, (unsigned short)task,
             (unsigned long long)(text ? fnv1a(text) : 0));
    free(text);
    cJSON_AddStringToObject(c, "ClientToken", token);
    return c;
}

/* ------------------------------------------------------------------ generate */
static int write_json(const char *dir, const char *name, cJSON *doc, char *path, size_t cap, baton_err *err)
{
    char *s = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    if (baton_path_join(path, cap, dir, name, err)) {
        free(s);
        return err->code;
    }
    size_t n = strlen(s);
    s[n] = '\n';   /* cJSON_Print leaves room: replace the NUL, write n + 1 bytes */
    int rc = rmt_write_file(path, s, n + 1, 0644, err);
    free(s);
    return rc;
}

static int add_cmd(baton_aws_cmd **v, size_t *n, int may_exist, int task, const char *const *words)
{
    baton_aws_cmd *nv = realloc(*v, (*n + 1) * sizeof **v);
    if (!nv) return BATON_ERR_NOMEM;
    *v = nv;
    size_t k = 0;
    while (words[k]) k++;
    char **argv = calloc(k + 1, sizeof *argv);
    if (!argv) return BATON_ERR_NOMEM;
    for (size_t i = 0; i < k; i++)
        if (!(argv[i] = strdup(words[i]))) {
            for (size_t j = 0; j < i; j++) free(argv[j]);
            free(argv);
            return BATON_ERR_NOMEM;
        }
    nv[*n] = (baton_aws_cmd){argv, may_exist, task};
    (*n)++;
    return BATON_OK;
}

void baton_aws_cmds_free(baton_aws_cmd *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (char **p = cmds[i].argv; p && *p; p++) free(*p);
        free(cmds[i].argv);
    }
    free(cmds);
}

int baton_aws_cmd_line(const baton_aws_cmd *c, baton_buf *out)
{
    int rc = 0;
    for (char **p = c->argv; *p; p++) {
        if (p != c->argv) rc |= baton_buf_append(out, " ", 1);
        rc |= rmt_shq(out, *p);
    }
    return rc ? BATON_ERR_NOMEM : BATON_OK;
}

int baton_aws_generate(const baton_job *job, const baton_aws_opts *o, const char *out_dir, baton_aws_cmd **cmds,
                       size_t *ncmds, baton_err *err)
{
    *cmds = NULL;
    *ncmds = 0;
    if (!o->account_id[0]) return baton_err_set(err, BATON_ERR_ARG, "aws.account_id: needed to name the roles");
    int rc = baton_mkdir_p(out_dir, err);
    if (rc) return rc;
    char dir[PATH_MAX], p_ft[PATH_MAX + 64], p_it[PATH_MAX + 64], p_ip[PATH_MAX + 64], p_dp[PATH_MAX + 64];
    if (!realpath(out_dir, dir)) return baton_err_set(err, BATON_ERR_IO, "%s: %s", out_dir, strerror(errno));
    baton_aws_names nm;
    baton_aws_names_of(job, o, &nm);
    rc = write_json(dir, "fleet-trust-policy.json", trust("spotfleet.amazonaws.com"), p_ft, sizeof p_ft, err);
    if (!rc) rc = write_json(dir, "instance-trust-policy.json", trust("ec2.amazonaws.com"), p_it, sizeof p_it, err);
    if (!rc) rc = write_json(dir, "instance-policy.json", instance_policy(job, o), p_ip, sizeof p_ip, err);
    if (!rc) rc = write_json(dir, "deployer-policy.json", deployer_policy(o, &nm), p_dp, sizeof p_dp, err);
    if (rc) return rc;

    char f_ft[PATH_MAX + 80], f_it[PATH_MAX + 80], f_ip[PATH_MAX + 80];
    snprintf(f_ft, sizeof f_ft, "file://%s", p_ft);
    snprintf(f_it, sizeof f_it, "file://%s", p_it);
    snprintf(f_ip, sizeof f_ip, "file://%s", p_ip);
    const char *tagarg = "Key=baton-job,Value=";
    char jobtag[128];
    snprintf(jobtag, sizeof jobtag, "%s%s", tagarg, job->name);
    const char *c1[] = {"aws", "iam", "create-role", "--role-name", nm.fleet_role, "--assume-role-policy-document", f_ft,
                        "--description", "baton: lets EC2 Spot Fleet launch and tag the job's instances", "--tags",
                        jobtag, NULL};
    const char *c2[] = {"aws", "iam", "attach-role-policy", "--role-name", nm.fleet_role, "--policy-arn",
                        "arn:aws:iam::aws:policy/service-role/AmazonEC2SpotFleetTaggingRole", NULL};
    const char *c3[] = {"aws", "iam", "create-role", "--role-name", nm.instance_role, "--assume-role-policy-document",
                        f_it, "--description", "baton: what the job's instances may do with its volume and fleet",
                        "--tags", jobtag, NULL};
    const char *c4[] = {"aws", "iam", "put-role-policy", "--role-name", nm.instance_role, "--policy-name", nm.policy,
                        "--policy-document", f_ip, NULL};
    const char *c5[] = {"aws", "iam", "create-instance-profile", "--instance-profile-name", nm.profile, NULL};
    const char *c6[] = {"aws", "iam", "add-role-to-instance-profile", "--instance-profile-name", nm.profile,
                        "--role-name", nm.instance_role, NULL};
    rc = add_cmd(cmds, ncmds, 1, -1, c1);
    if (!rc) rc = add_cmd(cmds, ncmds, 0, -1, c2);
    if (!rc) rc = add_cmd(cmds, ncmds, 1, -1, c3);
    if (!rc) rc = add_cmd(cmds, ncmds, 0, -1, c4);
    if (!rc) rc = add_cmd(cmds, ncmds, 1, -1, c5);
    if (!rc) rc = add_cmd(cmds, ncmds, 1, -1, c6);
    if (rc) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");

    for (size_t task = 0; task < job->ncommands && !rc; task++) {
        baton_buf ud = {0}, b64 = {0};
        char name[64], path[PATH_MAX + 64], fcfg[PATH_MAX + 80];
        int many = job->ncommands > 1;
        rc = baton_aws_userdata(job, o, task, &ud, err);
        if (!rc) {
            snprintf(name, sizeof name, many ? "user-data-%zu.sh" : "user-data.sh", task);
            rc = baton_path_join(path, sizeof path, dir, name, err);
            if (!rc) rc = rmt_write_file(path, ud.data, ud.len, 0755, err);
        }
        if (!rc && (rmt_base64(&b64, ud.data, ud.len) || rmt_cstr(&b64)))
            rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        if (!rc) {
            snprintf(name, sizeof name, many ? "spot_fleet_config-%zu.json" : "spot_fleet_config.json", task);
            rc = write_json(dir, name, fleet_config(job, o, &nm, task, (const char *)b64.data), path, sizeof path, err);
        }
        baton_buf_free(&ud);
        baton_buf_free(&b64);
        if (rc) break;
        snprintf(fcfg, sizeof fcfg, "file://%s", path);
        const char *c7[] = {"aws", "ec2", "request-spot-fleet", "--region", o->region, "--spot-fleet-request-config", fcfg,
                            NULL};
        if (add_cmd(cmds, ncmds, 0, (int)task, c7)) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }

    /* commands.sh: the same commands, to read or to run by hand */
    baton_buf sh = {0};
    if (!rc) {
        rc |= rmt_printf(&sh, "#!/bin/sh\n# baton fleet --backend aws: the commands that create job %s's roles and "
                              "fleet request(s), in order.\n# Written with the artefacts beside it; `baton fleet run "
                              "--apply` runs them (and tolerates roles that exist).\nset -e\n", job->name);
        for (size_t i = 0; i < *ncmds; i++) {
            rc |= baton_aws_cmd_line(&(*cmds)[i], &sh);
            rc |= rmt_printf(&sh, "\n");
        }
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/commands.sh", dir);
        rc = rc ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : rmt_write_file(path, sh.data, sh.len, 0755, err);
    }
    baton_buf_free(&sh);
    if (rc) {
        baton_aws_cmds_free(*cmds, *ncmds);
        *cmds = NULL;
        *ncmds = 0;
    }
    return rc;
}

/* ------------------------------------------------------------------ talking to AWS (aws CLI) */
static int aws_call(const char *const *argv, baton_buf *out, baton_buf *eo, int *st, baton_err *err)
{
    out->len = eo->len = 0;
    return rmt_run(argv, out, eo, st, err);
}

static const char *text_of(const baton_buf *b)
{
    return b->data ? (const char *)b->data : "";
}

int baton_aws_account(char *out, size_t cap, baton_err *err)
{
    const char *argv[] = {"aws", "sts", "get-caller-identity", "--query", "Account", "--output", "text", NULL};
    baton_buf o = {0}, e = {0};
    int st, rc = aws_call(argv, &o, &e, &st, err);
    if (!rc && st) rc = baton_err_set(err, BATON_ERR_NET, "aws sts get-caller-identity: exit %d: %.300s", st, text_of(&e));
    if (!rc) {
        const char *s = text_of(&o);
        size_t n = strspn(s, "0123456789");
        if (n != 12 || n >= cap)
            rc = baton_err_set(err, BATON_ERR_FORMAT, "aws sts get-caller-identity: expected an account id, got '%.40s'", s);
        else snprintf(out, cap, "%.12s", s);
    }
    baton_buf_free(&o);
    baton_buf_free(&e);
    return rc;
}

typedef struct fleet_ids {
    char region[32];
    char id[BATON_JOB_MAX_COMMANDS][64];
    int task[BATON_JOB_MAX_COMMANDS];
    size_t n;
} fleet_ids;

static int read_ids(const char *out_dir, fleet_ids *f, baton_err *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/fleet-requests.json", out_dir);
    memset(f, 0, sizeof *f);
    uint8_t *p;
    size_t len;
    int rc = baton_file_read_all(path, 1u << 20, &p, &len, err);
    if (rc) return rc == BATON_ERR_NOTFOUND ? baton_err_prefix(err, "no fleet was requested from %s", out_dir) : rc;
    cJSON *root = cJSON_ParseWithLength((const char *)p, len);
    free(p);
    cJSON *reg = cJSON_GetObjectItem(root, "region"), *req = cJSON_GetObjectItem(root, "requests");
    if (!cJSON_IsString(reg) || !cJSON_IsArray(req) || !rmt_only(reg->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789-")) {
        cJSON_Delete(root);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a baton fleet record (region, requests)", path);
    }
    snprintf(f->region, sizeof f->region, "%s", reg->valuestring);
    cJSON *r;
    cJSON_ArrayForEach(r, req)
    {
        cJSON *id = cJSON_GetObjectItem(r, "id"), *task = cJSON_GetObjectItem(r, "task");
        if (f->n == BATON_JOB_MAX_COMMANDS || !cJSON_IsString(id) || !cJSON_IsNumber(task) ||
            !rmt_only(id->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789-") || strlen(id->valuestring) >= 64) {
            cJSON_Delete(root);
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: requests[%zu]: needs id (sfr-...) and task", path, f->n);
        }
        snprintf(f->id[f->n], sizeof f->id[f->n], "%s", id->valuestring);
        f->task[f->n++] = task->valueint;
    }
    cJSON_Delete(root);
    return BATON_OK;
}

static int write_ids(const char *out_dir, const fleet_ids *f, baton_err *err)
{
    cJSON *root = cJSON_CreateObject(), *a = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "region", f->region);
    for (size_t i = 0; i < f->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "task", f->task[i]);
        cJSON_AddStringToObject(o, "id", f->id[i]);
        cJSON_AddItemToArray(a, o);
    }
    cJSON_AddItemToObject(root, "requests", a);
    char path[PATH_MAX + 64];
    return write_json(out_dir, "fleet-requests.json", root, path, sizeof path, err);
}

/* argv of "aws ec2 <op> --region R --spot-fleet-request-ids ID..." + extra */
static int fleet_call(const fleet_ids *f, const char *op, const char *extra, baton_buf *out, baton_buf *eo, int *st,
                      baton_err *err)
{
    const char *argv[8 + BATON_JOB_MAX_COMMANDS] = {"aws", "ec2", op, "--region", f->region, "--spot-fleet-request-ids"};
    size_t k = 6;
    for (size_t i = 0; i < f->n; i++) argv[k++] = f->id[i];
    if (extra) argv[k++] = extra;
    argv[k++] = "--output";
    argv[k++] = "json";
    argv[k] = NULL;
    return aws_call(argv, out, eo, st, err);
}

static int retry_delay(void)
{
    const char *s = getenv("BATON_AWS_RETRY_DELAY");
    int d = s ? atoi(s) : 5;
    return d < 0 ? 0 : d > 60 ? 60 : d;
}

int baton_aws_apply(const baton_aws_cmd *cmds, size_t n, const char *out_dir, FILE *progress, baton_err *err)
{
    fleet_ids f, old;
    memset(&f, 0, sizeof f);
    baton_buf o = {0}, e = {0}, line = {0};
    int rc = BATON_OK, st;
    /* requests recorded earlier must not still be running: two fleets would fight for a volume */
    baton_err tmp = {0};
    if (read_ids(out_dir, &old, &tmp) == BATON_OK && old.n) {
        rc = fleet_call(&old, "describe-spot-fleet-requests", NULL, &o, &e, &st, err);
        if (!rc && st) {
            rc = baton_err_set(err, BATON_ERR_NET, "aws ec2 describe-spot-fleet-requests: exit %d: %.300s", st, text_of(&e));
        } else if (!rc) {
            const char *s = text_of(&o);
            if (strstr(s, "\"active\"") || strstr(s, "\"submitted\"") || strstr(s, "\"modifying\""))
                rc = baton_err_set(err, BATON_ERR_ARG,
                                   "%s/fleet-requests.json: fleet request(s) of this job are still active (%s...); "
                                   "`baton fleet cancel` them before requesting new ones", out_dir, old.id[0]);
        }
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const baton_aws_cmd *c = &cmds[i];
        line.len = 0;
        baton_aws_cmd_line(c, &line);
        rmt_cstr(&line);
        for (int attempt = 1;; attempt++) {
            if (progress) fprintf(progress, "baton fleet: %s\n", (const char *)line.data);
            rc = aws_call((const char *const *)c->argv, &o, &e, &st, err);
            if (rc || !st) break;
            const char *es = text_of(&e);
            if (c->may_exist && (strstr(es, "EntityAlreadyExists") || strstr(es, "InstanceSessionsPerInstanceProfile"))) {
                if (progress) fprintf(progress, "baton fleet:   (already there)\n");
                break;
            }
            /* a new role or profile takes seconds to be visible to EC2 */
            if (c->fleet_task >= 0 && attempt < 8 &&
                (strstr(es, "IAM") || strstr(es, "iam") || strstr(es, "nstance profile") || strstr(es, "Role"))) {
                if (progress) fprintf(progress, "baton fleet:   IAM not ready yet (%.120s); trying again\n", es);
                sleep((unsigned)retry_delay());
                continue;
            }
            rc = baton_err_set(err, BATON_ERR_NET, "%s: exit %d: %.400s", (const char *)line.data, st, es);
            break;
        }
        if (rc || c->fleet_task < 0) continue;
        cJSON *root = cJSON_Parse(text_of(&o));
        cJSON *id = cJSON_GetObjectItem(root, "SpotFleetRequestId");
        if (!cJSON_IsString(id) || !rmt_only(id->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789-") ||
            strlen(id->valuestring) >= 64) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no SpotFleetRequestId in the answer '%.200s'",
                               (const char *)line.data, text_of(&o));
        } else {
            snprintf(f.id[f.n], sizeof f.id[f.n], "%s", id->valuestring);
            f.task[f.n++] = c->fleet_task;
            for (char **p = c->argv; *p; p++)
                if (!strcmp(*p, "--region") && p[1]) snprintf(f.region, sizeof f.region, "%s", p[1]);
            if (progress) fprintf(progress, "baton fleet:   task %d: spot fleet request %s\n", c->fleet_task, id->valuestring);
            rc = write_ids(out_dir, &f, err);
        }
        cJSON_Delete(root);
    }
    baton_buf_free(&o);
    baton_buf_free(&e);
    baton_buf_free(&line);
    return rc;
}

int baton_aws_status(const char *out_dir, const char *region, FILE *out, baton_err *err)
{
    fleet_ids f;
    int rc = read_ids(out_dir, &f, err), st;
    if (rc) return rc;
    if (region && *region) snprintf(f.region, sizeof f.region, "%s", region);
    baton_buf o = {0}, e = {0};
    rc = fleet_call(&f, "describe-spot-fleet-requests", NULL, &o, &e, &st, err);
    if (!rc && st) rc = baton_err_set(err, BATON_ERR_NET, "aws ec2 describe-spot-fleet-requests: exit %d: %.300s", st, text_of(&e));
    if (!rc) {
        cJSON *root = cJSON_Parse(text_of(&o)), *cfgs = cJSON_GetObjectItem(root, "SpotFleetRequestConfigs"), *c;
        fprintf(out, "%-5s %-44s %-12s %-10s %s\n", "task", "request", "state", "activity", "fulfilled/target");
        cJSON_ArrayForEach(c, cfgs)
        {
            cJSON *id = cJSON_GetObjectItem(c, "SpotFleetRequestId"), *s = cJSON_GetObjectItem(c, "SpotFleetRequestState"),
                  *a = cJSON_GetObjectItem(c, "ActivityStatus"), *d = cJSON_GetObjectItem(c, "SpotFleetRequestConfig");
            int task = -1;
            for (size_t i = 0; i < f.n; i++)
                if (cJSON_IsString(id) && !strcmp(id->valuestring, f.id[i])) task = f.task[i];
            cJSON *ful = cJSON_GetObjectItem(d, "FulfilledCapacity"), *tc = cJSON_GetObjectItem(d, "TargetCapacity");
            fprintf(out, "%-5d %-44s %-12s %-10s %g/%g\n", task, cJSON_IsString(id) ? id->valuestring : "?",
                    cJSON_IsString(s) ? s->valuestring : "?", cJSON_IsString(a) ? a->valuestring : "-",
                    cJSON_IsNumber(ful) ? ful->valuedouble : 0, cJSON_IsNumber(tc) ? tc->valuedouble : 0);
        }
        if (!cJSON_IsArray(cfgs)) rc = baton_err_set(err, BATON_ERR_FORMAT, "describe-spot-fleet-requests: unexpected answer");
        cJSON_Delete(root);
    }
    baton_buf_free(&o);
    baton_buf_free(&e);
    return rc;
}

int baton_aws_cancel(const char *out_dir, const char *region, FILE *progress, baton_err *err)
{
    fleet_ids f;
    int rc = read_ids(out_dir, &f, err), st;
    if (rc) return rc;
    if (region && *region) snprintf(f.region, sizeof f.region, "%s", region);
    baton_buf o = {0}, e = {0};
    rc = fleet_call(&f, "cancel-spot-fleet-requests", "--terminate-instances", &o, &e, &st, err);
    if (!rc && st) rc = baton_err_set(err, BATON_ERR_NET, "aws ec2 cancel-spot-fleet-requests: exit %d: %.300s", st, text_of(&e));
    if (!rc && progress)
        for (size_t i = 0; i < f.n; i++)
            fprintf(progress, "baton fleet: cancelled %s (task %d); its volume is kept\n", f.id[i], f.task[i]);
    baton_buf_free(&o);
    baton_buf_free(&e);
    return rc;
}
