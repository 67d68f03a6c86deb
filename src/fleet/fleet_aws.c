/* fleet_aws.c — the aws fleet backend's artefacts: from a checked job (aws_check.c), every file
 * a real run needs, written into one folder, and the aws CLI commands that create the resources,
 * in order (also as commands.sh, to read or run by hand):
 *   auto-scaling-group (default): the instance role, its policy and profile; per task a launch
 *     template (aws ec2 create-launch-template --cli-input-json file://launch-template.json) and an
 *     Auto Scaling group (aws autoscaling create-auto-scaling-group --cli-input-json
 *     file://auto-scaling-group.json);
 *   ec2-fleet: the same role, EC2 Fleet's service-linked role, per task a launch template and an
 *     EC2 Fleet (aws ec2 create-fleet --cli-input-json file://ec2-fleet.json);
 *   spot-fleet: the seed's recipe: the fleet and instance roles, per task a Spot Fleet request.
 * Running them (--apply), status and cancel: aws_apply.c.
 *
 * Contract: errors name the job file and field, or the file that could not be written. Nothing
 * is sent anywhere from here. */
#include "aws_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void fleet_aws_names_of(const baton_job *job, const baton_aws_opts *o, baton_aws_names *nm)
{
    snprintf(nm->fleet_role, sizeof nm->fleet_role, "%s-%s-fleet", o->role_prefix, job->name);
    snprintf(nm->instance_role, sizeof nm->instance_role, "%s-%s-instance", o->role_prefix, job->name);
    snprintf(nm->policy, sizeof nm->policy, "%s-%s-volume", o->role_prefix, job->name);
    snprintf(nm->profile, sizeof nm->profile, "%s-%s", o->role_prefix, job->name);
}

int aws_write_json(const char *dir, const char *name, cJSON *doc, char *path, size_t cap, baton_err *err)
{
    char *s = doc ? baton_json_print(doc, 1) : NULL;
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

static int add_cmd(baton_aws_cmd **v, size_t *n, int may_exist, int task, int template_task, const char *const *words)
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
    nv[*n] = (baton_aws_cmd){argv, may_exist, task, template_task};
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

/* The roles, policies and profile (and, for EC2 Fleet, its service-linked role). */
static int iam_commands(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm, const char *dir,
                        baton_aws_cmd **cmds, size_t *ncmds, baton_err *err)
{
    char p_ft[PATH_MAX + 64], p_it[PATH_MAX + 64], p_ip[PATH_MAX + 64], p_dp[PATH_MAX + 64];
    const int spot = o->api == BATON_AWS_SPOT_FLEET;
    int rc = spot ? aws_write_json(dir, "fleet-trust-policy.json", aws_trust("spotfleet.amazonaws.com"), p_ft, sizeof p_ft, err)
                  : BATON_OK;
    if (!rc) rc = aws_write_json(dir, "instance-trust-policy.json", aws_trust("ec2.amazonaws.com"), p_it, sizeof p_it, err);
    if (!rc) rc = aws_write_json(dir, "instance-policy.json", aws_instance_policy(job, o), p_ip, sizeof p_ip, err);
    if (!rc) rc = aws_write_json(dir, "deployer-policy.json", aws_deployer_policy(job, o, nm), p_dp, sizeof p_dp, err);
    if (rc) return rc;
    char f_ft[PATH_MAX + 80], f_it[PATH_MAX + 80], f_ip[PATH_MAX + 80], jobtag[128];
    snprintf(f_ft, sizeof f_ft, "file://%s", p_ft);
    snprintf(f_it, sizeof f_it, "file://%s", p_it);
    snprintf(f_ip, sizeof f_ip, "file://%s", p_ip);
    snprintf(jobtag, sizeof jobtag, "Key=baton-job,Value=%s", job->name);
    const char *c1[] = {"aws", "iam", "create-role", "--role-name", nm->fleet_role, "--assume-role-policy-document", f_ft,
                        "--description", "baton: lets EC2 Spot Fleet launch and tag the job's instances", "--tags",
                        jobtag, NULL};
    const char *c2[] = {"aws", "iam", "attach-role-policy", "--role-name", nm->fleet_role, "--policy-arn",
                        "arn:aws:iam::aws:policy/service-role/AmazonEC2SpotFleetTaggingRole", NULL};
    const char *c3[] = {"aws", "iam", "create-role", "--role-name", nm->instance_role, "--assume-role-policy-document",
                        f_it, "--description", "baton: what the job's instances may do with its volume and fleet",
                        "--tags", jobtag, NULL};
    const char *c4[] = {"aws", "iam", "put-role-policy", "--role-name", nm->instance_role, "--policy-name", nm->policy,
                        "--policy-document", f_ip, NULL};
    const char *c5[] = {"aws", "iam", "create-instance-profile", "--instance-profile-name", nm->profile, NULL};
    const char *c6[] = {"aws", "iam", "add-role-to-instance-profile", "--instance-profile-name", nm->profile,
                        "--role-name", nm->instance_role, NULL};
    /* EC2 Fleet needs its service-linked role to exist before the first maintain fleet */
    const char *c7[] = {"aws", "iam", "create-service-linked-role", "--aws-service-name", "ec2fleet.amazonaws.com", NULL};
    if (spot) rc = add_cmd(cmds, ncmds, 1, -1, -1, c1);
    if (!rc && spot) rc = add_cmd(cmds, ncmds, 0, -1, -1, c2);
    if (!rc) rc = add_cmd(cmds, ncmds, 1, -1, -1, c3);
    if (!rc) rc = add_cmd(cmds, ncmds, 0, -1, -1, c4);
    if (!rc) rc = add_cmd(cmds, ncmds, 1, -1, -1, c5);
    if (!rc) rc = add_cmd(cmds, ncmds, 1, -1, -1, c6);
    if (!rc && o->api == BATON_AWS_EC2_FLEET) rc = add_cmd(cmds, ncmds, 1, -1, -1, c7);
    return rc ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : BATON_OK;
}

/* "NAME.json", or "NAME-N.json" when the job has several tasks. */
static void task_file(char *out, size_t cap, const baton_job *job, const char *name, const char *ext, size_t task)
{
    if (job->ncommands > 1) snprintf(out, cap, "%s-%zu.%s", name, task, ext);
    else snprintf(out, cap, "%s.%s", name, ext);
}

/* One task: its user data, its requests, the commands that send them. */
static int task_artefacts(const baton_job *job, const baton_aws_opts *o, const baton_aws_names *nm, const char *dir,
                          size_t task, baton_aws_cmd **cmds, size_t *ncmds, baton_err *err)
{
    baton_buf ud = {0}, b64 = {0};
    char name[96], path[PATH_MAX + 96], f1[PATH_MAX + 112], f2[PATH_MAX + 112];
    int rc = fleet_aws_userdata(job, o, task, &ud, err);
    if (!rc) {
        task_file(name, sizeof name, job, "user-data", "sh", task);
        rc = baton_path_join(path, sizeof path, dir, name, err);
        if (!rc) rc = rmt_write_file(path, ud.data, ud.len, 0755, err);
    }
    if (!rc && (rmt_base64(&b64, ud.data, ud.len) || rmt_cstr(&b64))) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    const char *u64 = b64.data ? (const char *)b64.data : "";
    if (!rc && o->api == BATON_AWS_SPOT_FLEET) {
        task_file(name, sizeof name, job, "spot_fleet_config", "json", task);
        rc = aws_write_json(dir, name, aws_spot_fleet(job, o, nm, task, u64), path, sizeof path, err);
        snprintf(f1, sizeof f1, "file://%s", path);
        const char *c[] = {"aws", "ec2", "request-spot-fleet", "--region", o->region, "--spot-fleet-request-config", f1,
                           NULL};
        if (!rc && add_cmd(cmds, ncmds, 0, (int)task, -1, c)) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    } else if (!rc) {
        task_file(name, sizeof name, job, "launch-template", "json", task);
        rc = aws_write_json(dir, name, aws_launch_template(job, o, nm, task, u64), path, sizeof path, err);
        snprintf(f1, sizeof f1, "file://%s", path);
        const int asg = o->api == BATON_AWS_ASG;
        task_file(name, sizeof name, job, asg ? "auto-scaling-group" : "ec2-fleet", "json", task);
        if (!rc) rc = aws_write_json(dir, name, asg ? aws_auto_scaling_group(job, o, task) : aws_ec2_fleet(job, o, task),
                                     path, sizeof path, err);
        snprintf(f2, sizeof f2, "file://%s", path);
        const char *lt[] = {"aws", "ec2", "create-launch-template", "--region", o->region, "--cli-input-json", f1, NULL};
        const char *group[] = {"aws", "autoscaling", "create-auto-scaling-group", "--region", o->region,
                               "--cli-input-json", f2, NULL};
        const char *fleet[] = {"aws", "ec2", "create-fleet", "--region", o->region, "--cli-input-json", f2, NULL};
        if (!rc && (add_cmd(cmds, ncmds, 0, -1, (int)task, lt) || add_cmd(cmds, ncmds, 0, (int)task, -1, asg ? group : fleet)))
            rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    baton_buf_free(&ud);
    baton_buf_free(&b64);
    return rc;
}

static int write_commands(const baton_job *job, const baton_aws_opts *o, const char *dir, const baton_aws_cmd *cmds,
                          size_t n, baton_err *err)
{
    baton_buf sh = {0};
    int rc = rmt_printf(&sh, "#!/bin/sh\n# baton fleet --backend aws (%s): the commands that create job %s's roles, "
                             "launch templates and groups or fleets, in order.\n# Written with the artefacts beside it; "
                             "`baton fleet run --apply` runs them (and tolerates roles that exist).\nset -e\n",
                        aws_api_name(o->api), job->name);
    for (size_t i = 0; i < n; i++) {
        rc |= baton_aws_cmd_line(&cmds[i], &sh);
        rc |= rmt_printf(&sh, "\n");
    }
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/commands.sh", dir);
    rc = rc ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : rmt_write_file(path, sh.data, sh.len, 0755, err);
    baton_buf_free(&sh);
    return rc;
}

int baton_aws_generate(const baton_job *job, const baton_aws_opts *o, const char *out_dir, baton_aws_cmd **cmds,
                       size_t *ncmds, baton_err *err)
{
    *cmds = NULL;
    *ncmds = 0;
    if (!o->account_id[0]) return baton_err_set(err, BATON_ERR_ARG, "aws.account_id: needed to name the roles");
    int rc = baton_mkdir_p(out_dir, err);
    if (rc) return rc;
    char dir[PATH_MAX];
    if (!realpath(out_dir, dir)) return baton_err_set(err, BATON_ERR_IO, "%s: %s", out_dir, strerror(errno));
    baton_aws_names nm;
    fleet_aws_names_of(job, o, &nm);
    rc = iam_commands(job, o, &nm, dir, cmds, ncmds, err);
    for (size_t task = 0; task < job->ncommands && !rc; task++) rc = task_artefacts(job, o, &nm, dir, task, cmds, ncmds, err);
    if (!rc) rc = write_commands(job, o, dir, *cmds, *ncmds, err);
    if (rc) {
        baton_aws_cmds_free(*cmds, *ncmds);
        *cmds = NULL;
        *ncmds = 0;
    }
    return rc;
}
