/* aws_check.c — the aws backend's reading of a job file: the `aws:` section (the API, region,
 * account, AMI, network, code and seed in S3, the volume's type, device and mount, names, tags)
 * and what EC2 cannot do (zones in two regions, a local seed folder, a simulated market, fewer
 * instances at once than tasks, more instance types than an Auto Scaling group takes, subnets for
 * some zones only), each refused with the field (and line) and what to do instead.
 *
 * Contract: fills baton_aws_opts only from validated values (the generators quote nothing
 * themselves beyond what rmt_shq does); errors name the job file, line and field. */
#include "aws_internal.h"

#include <string.h>

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

/* aws.api (or the caller's override): auto-scaling-group (default), ec2-fleet or spot-fleet. */
static int api_of(const baton_job *job, const char *override, baton_aws_opts *o, baton_err *err)
{
    int line = 0;
    const char *v = override ? override : rmt_opt(job, "aws.api", &line);
    o->api = BATON_AWS_ASG;
    if (!v) return BATON_OK;
    if (override) {
        for (int a = BATON_AWS_ASG; a <= BATON_AWS_SPOT_FLEET; a++)
            if (!strcmp(v, aws_api_name(a))) {
                o->api = a;
                return BATON_OK;
            }
        return baton_err_set(err, BATON_ERR_USAGE, "--api: expected auto-scaling-group, ec2-fleet or spot-fleet, got '%.40s'",
                             v);
    }
    for (int a = BATON_AWS_ASG; a <= BATON_AWS_SPOT_FLEET; a++)
        if (!strcmp(v, aws_api_name(a))) {
            o->api = a;
            return BATON_OK;
        }
    return rmt_fail(err, job, line, "aws.api",
                    "expected auto-scaling-group (the default), ec2-fleet or spot-fleet (the seed's legacy API), "
                    "got '%.40s'", v);
}

/* What the chosen API takes. */
static int api_limits(const baton_job *job, const baton_aws_opts *o, baton_err *err)
{
    if (o->api == BATON_AWS_ASG && job->ntypes > 20)
        return rmt_fail(err, job, job->types[20].line, "instance_types",
                        "an Auto Scaling group takes at most 20 instance types (this job lists %zu)", job->ntypes);
    if (o->api == BATON_AWS_ASG) {
        size_t with = 0;
        for (size_t z = 0; z < job->nzones; z++) with += o->subnets[z] != NULL;
        if (with && with != job->nzones)
            return rmt_fail(err, job, 0, "aws.subnets",
                            "an Auto Scaling group takes either a subnet for every zone (VPCZoneIdentifier) or none "
                            "(the default VPC's, by zone): %zu of %zu zones have one", with, job->nzones);
    }
    if (o->api == BATON_AWS_EC2_FLEET && job->ntypes * job->nzones > 300)
        return rmt_fail(err, job, 0, "instance_types",
                        "an EC2 Fleet takes at most 300 overrides (instance type x zone): %zu x %zu", job->ntypes,
                        job->nzones);
    return BATON_OK;
}


/* What EC2 cannot do for this job, refused with what to do instead. */
static int check_job(const baton_job *job, baton_err *err)
{
    if (job->nodes.max)
        return rmt_fail(err, job, job->nodes.line, "nodes",
                        "the aws backend runs each task on one instance; a task over several machines (MPI ranks) "
                        "runs on the slurm backend");
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
                        "the aws backend runs every task at once (one group or fleet of capacity 1 per task): set it "
                        "to the number of commands (%zu), or split the sweep into several job files", job->ncommands);
    if (job->volume.size_gb < 1 || job->volume.size_gb > 16384)
        return rmt_fail(err, job, 0, "volume.size_gb", "an EBS volume has 1 to 16384 GiB, not %g", job->volume.size_gb);
    if (strlen(job->name) + strlen("baton-") + strlen("-instance") > 64 && !rmt_opt(job, "aws.role_prefix", NULL))
        return rmt_fail(err, job, 0, "name", "at most %zu characters for the aws backend (IAM role names have 64)",
                        (size_t)64 - strlen("baton--instance"));
    for (size_t i = 0; i < job->nenv; i++) {
        const char *k = strncmp(job->env[i].key, "env.", 4) ? job->env[i].key : job->env[i].key + 4;
        if (!rmt_only(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") || (*k >= '0' && *k <= '9'))
            return rmt_fail(err, job, job->env[i].line, job->env[i].key, "not a valid environment variable name");
    }
    return BATON_OK;
}

/* The region (given, or from the zones, which must all be in it), the account and the AMI. */
static int check_where(const baton_job *job, baton_aws_opts *o, baton_err *err)
{
    int rc, line;
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
                            "%s is not in region %s: an Auto Scaling group or fleet lives in one region (use one job "
                            "file per region)", job->zones[z], o->region);
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
    return BATON_OK;
}

/* The lists: security groups, a subnet per zone, extra tags. */
static int check_lists(const baton_job *job, baton_aws_opts *o, baton_err *err)
{
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
    return BATON_OK;
}

/* The code and seed in S3, the volume, the names. */
static int check_files(const baton_job *job, baton_aws_opts *o, baton_err *err)
{
    int rc, line;
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
    if (o->api != BATON_AWS_SPOT_FLEET &&
        !rmt_only(o->role_prefix, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"))
        return rmt_fail(err, job, (rmt_opt(job, "aws.role_prefix", &line), line), "aws.role_prefix",
                        "letters, digits and ._- only: it names the launch templates (%s)", aws_api_name(o->api));
    return BATON_OK;
}

int baton_aws_check(const baton_job *job, baton_aws_opts *o, baton_err *err)
{
    return baton_aws_check_as(job, NULL, o, err);
}

int baton_aws_check_as(const baton_job *job, const char *api, baton_aws_opts *o, baton_err *err)
{
    static const char *const known[] = {"api", "region", "account_id", "image_id", "key_name", "security_groups.",
                                        "subnets.", "code", "seed", "volume_type", "device", "mount", "role_prefix",
                                        "tags.", NULL};
    memset(o, 0, sizeof *o);
    snprintf(o->volume_type, sizeof o->volume_type, "gp3");
    snprintf(o->device, sizeof o->device, "/dev/sdf");
    snprintf(o->mount, sizeof o->mount, "/mnt/baton");
    snprintf(o->role_prefix, sizeof o->role_prefix, "baton");
    int rc = rmt_check_section(job, "aws.", known, err);
    if (!rc) rc = api_of(job, api, o, err);
    if (!rc) rc = check_job(job, err);
    if (!rc) rc = check_where(job, o, err);
    if (!rc) rc = check_lists(job, o, err);
    if (!rc) rc = check_files(job, o, err);
    if (!rc) rc = api_limits(job, o, err);
    return rc;
}
