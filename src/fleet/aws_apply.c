/* aws_apply.c — the aws backend talking to AWS, through the aws CLI only: the account of the
 * credentials (sts), running the generated commands (--apply), the record of what they created
 * (OUT/fleet-requests.json: the API, the region, per task its group name or fleet id and its
 * launch template, written after every step), and `fleet status` / `fleet cancel` for each API:
 *   auto-scaling-group: describe-auto-scaling-groups; delete-auto-scaling-group --force-delete
 *     (its instance terminates) for each group, then delete-launch-template;
 *   ec2-fleet: describe-fleets; delete-fleets --terminate-instances, then delete-launch-template;
 *   spot-fleet: describe-spot-fleet-requests; cancel-spot-fleet-requests --terminate-instances.
 * A record without "api" is the Spot Fleet one of older versions. Task volumes are never touched.
 *
 * Contract: errors name the command and what it printed (stderr, capped), or the record file. A
 * second --apply is refused while the record's groups or fleets still exist. */
#include "aws_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IDCHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

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

/* ------------------------------------------------------------------ the record */
typedef struct record {
    char region[32];
    int api;
    size_t n;
    struct {
        int task;
        char id[128];        /* the group's name, the EC2 Fleet's or Spot Fleet's id; "" not yet */
        char lt[128];        /* the launch template's name; "" none */
    } r[BATON_JOB_MAX_COMMANDS];
} record;

static int api_from_name(const char *s)
{
    for (int a = BATON_AWS_ASG; a <= BATON_AWS_SPOT_FLEET; a++)
        if (!strcmp(s, aws_api_name(a))) return a;
    return -1;
}

static int read_record(const char *out_dir, record *f, baton_err *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/fleet-requests.json", out_dir);
    memset(f, 0, sizeof *f);
    uint8_t *p;
    size_t len;
    int rc = baton_file_read_all(path, 1u << 20, &p, &len, err);
    if (rc) return rc == BATON_ERR_NOTFOUND ? baton_err_prefix(err, "nothing was created from %s", out_dir) : rc;
    cJSON *root = baton_jr_value((const char *)p, len);
    free(p);
    cJSON *reg = cJSON_GetObjectItem(root, "region"), *req = cJSON_GetObjectItem(root, "requests"),
          *api = cJSON_GetObjectItem(root, "api");
    f->api = cJSON_IsString(api) ? api_from_name(api->valuestring) : api ? -1 : BATON_AWS_SPOT_FLEET;
    if (!cJSON_IsString(reg) || !cJSON_IsArray(req) || f->api < 0 ||
        !rmt_only(reg->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789-") || strlen(reg->valuestring) >= sizeof f->region) {
        cJSON_Delete(root);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a baton fleet record (region, api, requests)", path);
    }
    snprintf(f->region, sizeof f->region, "%s", reg->valuestring);
    cJSON *r;
    cJSON_ArrayForEach(r, req)
    {
        cJSON *id = cJSON_GetObjectItem(r, "id"), *task = cJSON_GetObjectItem(r, "task"),
              *lt = cJSON_GetObjectItem(r, "launch_template");
        const char *ids = cJSON_IsString(id) ? id->valuestring : "", *lts = cJSON_IsString(lt) ? lt->valuestring : "";
        if (f->n == BATON_JOB_MAX_COMMANDS || !cJSON_IsNumber(task) || (id && !cJSON_IsString(id)) ||
            (lt && !cJSON_IsString(lt)) || (*ids && !rmt_only(ids, IDCHARS)) || (*lts && !rmt_only(lts, IDCHARS)) ||
            strlen(ids) >= sizeof f->r[0].id || strlen(lts) >= sizeof f->r[0].lt || (!*ids && !*lts)) {
            cJSON_Delete(root);
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: requests[%zu]: needs task and id or launch_template", path,
                                 f->n);
        }
        f->r[f->n].task = task->valueint;
        snprintf(f->r[f->n].id, sizeof f->r[0].id, "%s", ids);
        snprintf(f->r[f->n].lt, sizeof f->r[0].lt, "%s", lts);
        f->n++;
    }
    cJSON_Delete(root);
    return BATON_OK;
}

static int write_record(const char *out_dir, const record *f, baton_err *err)
{
    cJSON *root = cJSON_CreateObject(), *a = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "region", f->region);
    cJSON_AddStringToObject(root, "api", aws_api_name(f->api));
    for (size_t i = 0; i < f->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "task", f->r[i].task);
        if (f->r[i].id[0]) cJSON_AddStringToObject(o, "id", f->r[i].id);
        if (f->r[i].lt[0]) cJSON_AddStringToObject(o, "launch_template", f->r[i].lt);
        cJSON_AddItemToArray(a, o);
    }
    cJSON_AddItemToObject(root, "requests", a);
    char path[PATH_MAX + 64];
    return aws_write_json(out_dir, "fleet-requests.json", root, path, sizeof path, err);
}

/* The record's entry for task (added when new). */
static size_t entry_of(record *f, int task)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->r[i].task == task) return i;
    f->r[f->n].task = task;
    f->r[f->n].id[0] = f->r[f->n].lt[0] = 0;
    return f->n++;
}

/* ------------------------------------------------------------------ describing */
/* "aws <svc> <op> --region R <flag> ID... [extra] --output json" over the record's ids. */
static int ids_call(const record *f, const char *svc, const char *op, const char *flag, const char *extra, baton_buf *out,
                    baton_buf *eo, int *st, baton_err *err)
{
    const char *argv[10 + BATON_JOB_MAX_COMMANDS] = {"aws", svc, op, "--region", f->region, flag};
    size_t k = 6;
    for (size_t i = 0; i < f->n; i++)
        if (f->r[i].id[0]) argv[k++] = f->r[i].id;
    if (extra) argv[k++] = extra;
    argv[k++] = "--output";
    argv[k++] = "json";
    argv[k] = NULL;
    return aws_call(argv, out, eo, st, err);
}

static size_t nids(const record *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) n += f->r[i].id[0] != 0;
    return n;
}

/* The describe call of the record's API; *answer gets the parsed JSON (caller frees). */
static int describe(const record *f, cJSON **answer, baton_err *err)
{
    static const char *const what[][3] = {
        {"autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names"},
        {"ec2", "describe-fleets", "--fleet-ids"},
        {"ec2", "describe-spot-fleet-requests", "--spot-fleet-request-ids"},
    };
    const char *const *w = what[f->api];
    baton_buf o = {0}, e = {0};
    int st, rc = ids_call(f, w[0], w[1], w[2], NULL, &o, &e, &st, err);
    if (!rc && st) rc = baton_err_set(err, BATON_ERR_NET, "aws %s %s: exit %d: %.300s", w[0], w[1], st, text_of(&e));
    *answer = rc ? NULL : baton_jr_value(text_of(&o), o.len);
    if (!rc && !*answer) rc = baton_err_set(err, BATON_ERR_FORMAT, "aws %s %s: not JSON: '%.200s'", w[0], w[1], text_of(&o));
    baton_buf_free(&o);
    baton_buf_free(&e);
    return rc;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* One task's state, whatever the API. */
typedef struct task_view {
    int task;
    const char *id;
    char state[40], activity[48];
    double running, target;
} task_view;

static const char *const list_key[] = {"AutoScalingGroups", "Fleets", "SpotFleetRequestConfigs"};
static const char *const id_key[] = {"AutoScalingGroupName", "FleetId", "SpotFleetRequestId"};

/* Fill v from the answer's entry for id (absent: "deleted"). */
static void view_of(const record *f, const cJSON *answer, const char *id, task_view *v)
{
    const cJSON *list = cJSON_GetObjectItem(answer, list_key[f->api]), *x, *found = NULL;
    cJSON_ArrayForEach(x, list)
    {
        const char *s = str_of(x, id_key[f->api]);
        if (s && !strcmp(s, id)) found = x;
    }
    snprintf(v->state, sizeof v->state, "deleted");
    snprintf(v->activity, sizeof v->activity, "-");
    v->running = v->target = 0;
    if (!found) return;
    if (f->api == BATON_AWS_ASG) {
        v->target = num_of(found, "DesiredCapacity");
        snprintf(v->state, sizeof v->state, "%s", v->target > 0 ? "active" : "finished (desired 0)");
        const cJSON *in, *insts = cJSON_GetObjectItem(found, "Instances");
        cJSON_ArrayForEach(in, insts)
        {
            const char *ls = str_of(in, "LifecycleState");
            v->running += ls && !strcmp(ls, "InService");
            snprintf(v->activity, sizeof v->activity, "%.20s %.20s", str_of(in, "InstanceId") ? str_of(in, "InstanceId") : "?",
                     ls ? ls : "?");
        }
    } else if (f->api == BATON_AWS_EC2_FLEET) {
        snprintf(v->state, sizeof v->state, "%s", str_of(found, "FleetState") ? str_of(found, "FleetState") : "?");
        snprintf(v->activity, sizeof v->activity, "%s", str_of(found, "ActivityStatus") ? str_of(found, "ActivityStatus") : "-");
        v->running = num_of(found, "FulfilledCapacity");
        v->target = num_of(cJSON_GetObjectItem(found, "TargetCapacitySpecification"), "TotalTargetCapacity");
    } else {
        const cJSON *cfg = cJSON_GetObjectItem(found, "SpotFleetRequestConfig");
        snprintf(v->state, sizeof v->state, "%s",
                 str_of(found, "SpotFleetRequestState") ? str_of(found, "SpotFleetRequestState") : "?");
        snprintf(v->activity, sizeof v->activity, "%s", str_of(found, "ActivityStatus") ? str_of(found, "ActivityStatus") : "-");
        v->running = num_of(cfg, "FulfilledCapacity");
        v->target = num_of(cfg, "TargetCapacity");
    }
}

/* Still holding (or about to hold) an instance that would fight a new one for its volume? */
static int still_there(int api, const task_view *v)
{
    if (!strcmp(v->state, "deleted")) return 0;
    if (api == BATON_AWS_ASG) return 1;   /* a finished group still exists: its name is taken */
    return !strcmp(v->state, "active") || !strcmp(v->state, "submitted") || !strcmp(v->state, "modifying");
}

/* Refuse a new --apply while an earlier one's groups or fleets are there. */
static int check_earlier(const char *out_dir, baton_err *err)
{
    record old;
    baton_err tmp = {0};
    if (read_record(out_dir, &old, &tmp) || !nids(&old)) return BATON_OK;
    cJSON *answer;
    int rc = describe(&old, &answer, err);
    for (size_t i = 0; i < old.n && !rc; i++) {
        if (!old.r[i].id[0]) continue;
        task_view v;
        view_of(&old, answer, old.r[i].id, &v);
        if (still_there(old.api, &v))
            rc = baton_err_set(err, BATON_ERR_ARG,
                               "%s/fleet-requests.json: %s %s of this job (task %d) is still there (%s); "
                               "`baton fleet cancel` removes it before a new run", out_dir,
                               old.api == BATON_AWS_ASG ? "Auto Scaling group" : "fleet", old.r[i].id, old.r[i].task,
                               v.state);
    }
    cJSON_Delete(answer);
    return rc;
}

/* ------------------------------------------------------------------ --apply */
static int retry_delay(void)
{
    const char *s = getenv("BATON_AWS_RETRY_DELAY");
    int d = s ? atoi(s) : 5;
    return d < 0 ? 0 : d > 60 ? 60 : d;
}

static int api_of_cmds(const baton_aws_cmd *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(cmds[i].argv[1], "autoscaling")) return BATON_AWS_ASG;
        if (!strcmp(cmds[i].argv[2], "create-fleet")) return BATON_AWS_EC2_FLEET;
    }
    return BATON_AWS_SPOT_FLEET;
}

/* The value of "--cli-input-json file://PATH"'s key, read back from the request file. */
static int request_field(const baton_aws_cmd *c, const char *key, char *out, size_t cap)
{
    out[0] = 0;
    for (char **p = c->argv; *p; p++)
        if (!strcmp(*p, "--cli-input-json") && p[1] && !strncmp(p[1], "file://", 7)) {
            uint8_t *t;
            size_t len;
            baton_err e = {0};
            if (baton_file_read_all(p[1] + 7, 1u << 20, &t, &len, &e)) return -1;
            cJSON *j = baton_jr_value((const char *)t, len);
            free(t);
            const char *v = str_of(j, key);
            if (v && strlen(v) < cap && rmt_only(v, IDCHARS)) snprintf(out, cap, "%s", v);
            cJSON_Delete(j);
        }
    return out[0] ? 0 : -1;
}

/* Run one command: "already exists" is fine where allowed; a group or fleet request is retried
 * while IAM's new role or profile is not yet visible. */
static int run_one(const baton_aws_cmd *c, const char *line, baton_buf *o, baton_buf *e, FILE *progress, baton_err *err)
{
    for (int attempt = 1;; attempt++) {
        int st;
        if (progress) fprintf(progress, "baton fleet: %s\n", line);
        int rc = aws_call((const char *const *)c->argv, o, e, &st, err);
        if (rc || !st) return rc;
        const char *es = text_of(e);
        if (c->may_exist && (strstr(es, "EntityAlreadyExists") || strstr(es, "InstanceSessionsPerInstanceProfile") ||
                             strstr(es, "has been taken in this account"))) {
            if (progress) fprintf(progress, "baton fleet:   (already there)\n");
            return BATON_OK;
        }
        if (c->fleet_task >= 0 && attempt < 8 &&
            (strstr(es, "IAM") || strstr(es, "iam") || strstr(es, "nstance profile") || strstr(es, "InstanceProfile") ||
             strstr(es, "Role"))) {
            if (progress) fprintf(progress, "baton fleet:   IAM not ready yet (%.120s); trying again\n", es);
            sleep((unsigned)retry_delay());
            continue;
        }
        if (c->template_task >= 0 && strstr(es, "AlreadyExists"))
            return baton_err_set(err, BATON_ERR_ARG, "%s: the launch template exists (an earlier run of this job): "
                                 "`baton fleet cancel` removes it (and that run's groups or fleets): %.300s", line, es);
        return baton_err_set(err, BATON_ERR_NET, "%s: exit %d: %.400s", line, st, es);
    }
}

/* Note what a create command made in the record. */
static int note_created(const baton_aws_cmd *c, int api, const char *line, const baton_buf *o, const char *out_dir,
                        record *f, FILE *progress, baton_err *err)
{
    const int task = c->fleet_task >= 0 ? c->fleet_task : c->template_task;
    char id[128] = "";
    cJSON *root = baton_jr_value(text_of(o), o->len);
    if (c->template_task >= 0) {
        const char *v = str_of(cJSON_GetObjectItem(root, "LaunchTemplate"), "LaunchTemplateName");
        if (v && strlen(v) < sizeof id && rmt_only(v, IDCHARS)) snprintf(id, sizeof id, "%s", v);
    } else if (api == BATON_AWS_ASG) {
        request_field(c, "AutoScalingGroupName", id, sizeof id);   /* the call answers nothing */
    } else {
        const char *v = str_of(root, api == BATON_AWS_EC2_FLEET ? "FleetId" : "SpotFleetRequestId");
        if (v && strlen(v) < sizeof id && rmt_only(v, IDCHARS)) snprintf(id, sizeof id, "%s", v);
        const cJSON *x;   /* EC2 Fleet: launch errors so far (it goes on trying) */
        cJSON_ArrayForEach(x, cJSON_GetObjectItem(root, "Errors"))
        {
            const char *code = str_of(x, "ErrorCode"), *msg = str_of(x, "ErrorMessage");
            if (progress) fprintf(progress, "baton fleet:   the fleet says: %s: %.160s\n", code ? code : "?", msg ? msg : "");
        }
    }
    cJSON_Delete(root);
    if (!id[0])
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: no %s in the answer '%.200s'", line,
                             c->template_task >= 0 ? "LaunchTemplateName" : api == BATON_AWS_ASG ? "group name"
                             : api == BATON_AWS_EC2_FLEET                   ? "FleetId" : "SpotFleetRequestId",
                             text_of(o));
    size_t k = entry_of(f, task);
    snprintf(c->template_task >= 0 ? f->r[k].lt : f->r[k].id, sizeof f->r[k].id, "%s", id);
    for (char **p = c->argv; *p; p++)
        if (!strcmp(*p, "--region") && p[1]) snprintf(f->region, sizeof f->region, "%s", p[1]);
    if (progress)
        fprintf(progress, "baton fleet:   task %d: %s %s\n", task,
                c->template_task >= 0 ? "launch template" : api == BATON_AWS_ASG ? "Auto Scaling group"
                : api == BATON_AWS_EC2_FLEET                   ? "EC2 Fleet" : "spot fleet request", id);
    return write_record(out_dir, f, err);
}

int baton_aws_apply(const baton_aws_cmd *cmds, size_t n, const char *out_dir, FILE *progress, baton_err *err)
{
    record *f = calloc(1, sizeof *f);
    if (!f) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    f->api = api_of_cmds(cmds, n);
    baton_buf o = {0}, e = {0}, line = {0};
    int rc = check_earlier(out_dir, err);
    for (size_t i = 0; i < n && !rc; i++) {
        const baton_aws_cmd *c = &cmds[i];
        line.len = 0;
        baton_aws_cmd_line(c, &line);
        rmt_cstr(&line);
        rc = run_one(c, (const char *)line.data, &o, &e, progress, err);
        if (!rc && (c->fleet_task >= 0 || c->template_task >= 0))
            rc = note_created(c, f->api, (const char *)line.data, &o, out_dir, f, progress, err);
    }
    baton_buf_free(&o);
    baton_buf_free(&e);
    baton_buf_free(&line);
    free(f);
    return rc;
}

/* ------------------------------------------------------------------ status, cancel */
static int load(const char *out_dir, const char *region, record **f, baton_err *err)
{
    *f = calloc(1, sizeof **f);
    if (!*f) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = read_record(out_dir, *f, err);
    if (!rc && region && *region) {
        if (!rmt_only(region, "abcdefghijklmnopqrstuvwxyz0123456789-") || strlen(region) >= sizeof (*f)->region)
            rc = baton_err_set(err, BATON_ERR_USAGE, "--region: '%.40s' is not a region name", region);
        else snprintf((*f)->region, sizeof (*f)->region, "%s", region);
    }
    if (rc) {
        free(*f);
        *f = NULL;
    }
    return rc;
}

int baton_aws_status(const char *out_dir, const char *region, FILE *out, baton_err *err)
{
    record *f;
    int rc = load(out_dir, region, &f, err);
    if (rc) return rc;
    cJSON *answer = NULL;
    if (nids(f)) rc = describe(f, &answer, err);
    if (!rc && answer && !cJSON_IsArray(cJSON_GetObjectItem(answer, list_key[f->api])))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "aws: unexpected answer (no %s)", list_key[f->api]);
    if (!rc) {
        fprintf(out, "%-5s %-44s %-22s %-26s %s\n", "task", f->api == BATON_AWS_ASG ? "Auto Scaling group"
                                                         : f->api == BATON_AWS_EC2_FLEET ? "EC2 Fleet" : "spot fleet request",
                "state", "activity", "running/target");
        for (size_t i = 0; i < f->n; i++) {
            task_view v = {0};
            if (f->r[i].id[0]) {
                view_of(f, answer, f->r[i].id, &v);
            } else {
                snprintf(v.state, sizeof v.state, "not created");
                snprintf(v.activity, sizeof v.activity, "launch template %.16s", f->r[i].lt);
            }
            fprintf(out, "%-5d %-44s %-22s %-26s %g/%g\n", f->r[i].task, f->r[i].id[0] ? f->r[i].id : "-", v.state,
                    v.activity, v.running, v.target);
        }
    }
    cJSON_Delete(answer);
    free(f);
    return rc;
}

/* An answer that says the thing is already gone counts as done. */
static int gone(const char *es)
{
    return strstr(es, "not found") || strstr(es, "NotFound") || strstr(es, "does not exist");
}

static int cancel_one(const char *const *argv, const char *what, FILE *progress, baton_err *err)
{
    baton_buf o = {0}, e = {0};
    int st, rc = aws_call(argv, &o, &e, &st, err);
    if (!rc && st && !gone(text_of(&e)))
        rc = baton_err_set(err, BATON_ERR_NET, "aws %s %s: exit %d: %.300s", argv[1], argv[2], st, text_of(&e));
    else if (!rc && progress)
        fprintf(progress, "baton fleet: %s %s\n", st ? "already gone:" : "deleted", what);
    baton_buf_free(&o);
    baton_buf_free(&e);
    return rc;
}

int baton_aws_cancel(const char *out_dir, const char *region, FILE *progress, baton_err *err)
{
    record *f;
    int rc = load(out_dir, region, &f, err);
    if (rc) return rc;
    char what[200];
    if (f->api == BATON_AWS_ASG) {
        for (size_t i = 0; i < f->n && !rc; i++) {
            if (!f->r[i].id[0]) continue;
            const char *argv[] = {"aws", "autoscaling", "delete-auto-scaling-group", "--region", f->region,
                                  "--auto-scaling-group-name", f->r[i].id, "--force-delete", NULL};
            snprintf(what, sizeof what, "Auto Scaling group %s (task %d; its instance terminates, its volume is kept)",
                     f->r[i].id, f->r[i].task);
            rc = cancel_one(argv, what, progress, err);
        }
    } else if (nids(f)) {
        baton_buf o = {0}, e = {0};
        const int ec2 = f->api == BATON_AWS_EC2_FLEET;
        int st;
        rc = ids_call(f, "ec2", ec2 ? "delete-fleets" : "cancel-spot-fleet-requests",
                      ec2 ? "--fleet-ids" : "--spot-fleet-request-ids", "--terminate-instances", &o, &e, &st, err);
        if (!rc && st)
            rc = baton_err_set(err, BATON_ERR_NET, "aws ec2 %s: exit %d: %.300s",
                               ec2 ? "delete-fleets" : "cancel-spot-fleet-requests", st, text_of(&e));
        for (size_t i = 0; i < f->n && !rc && progress; i++)
            if (f->r[i].id[0])
                fprintf(progress, "baton fleet: cancelled %s (task %d); its volume is kept\n", f->r[i].id, f->r[i].task);
        baton_buf_free(&o);
        baton_buf_free(&e);
    }
    for (size_t i = 0; i < f->n && !rc; i++) {   /* then the launch templates the groups or fleets used */
        if (!f->r[i].lt[0]) continue;
        const char *argv[] = {"aws", "ec2", "delete-launch-template", "--region", f->region, "--launch-template-name",
                              f->r[i].lt, NULL};
        snprintf(what, sizeof what, "launch template %s", f->r[i].lt);
        rc = cancel_one(argv, what, progress, err);
    }
    free(f);
    return rc;
}
