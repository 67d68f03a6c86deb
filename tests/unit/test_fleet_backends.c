/* test_fleet_backends.c — the pieces of the Slurm and AWS fleet backends that need no cluster and
 * no cloud: base64 (RFC 4648 vectors), shell quoting (round trip through /bin/sh), running a
 * program (status, both output streams at once, a missing program), the Slurm checks and batch
 * script, the AWS checks, user data and artefacts for each API (the Auto Scaling group by default,
 * EC2 Fleet, the seed's Spot Fleet: contents, sizes, errors naming line and field). */
#include "../../src/fleet/remote_internal.h"
#include "baton/fleet_backend.h"
#include "check.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static baton_job job;

static int parse(const char *text, baton_err *err)
{
    baton_job_free(&job);
    return baton_job_parse("job.yaml", text, strlen(text), &job, err);
}

static int contains(const baton_buf *b, const char *s)
{
    return b->data && memmem(b->data, b->len, s, strlen(s)) != NULL;
}

static void test_base64(void)
{
    static const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        baton_buf b = {0};
        CHECK(rmt_base64(&b, (const uint8_t *)in[i], strlen(in[i])) == 0);
        CHECK_MSG(b.len == strlen(out[i]) && (!b.len || !memcmp(b.data, out[i], b.len)), "base64(%s)", in[i]);
        baton_buf_free(&b);
    }
    uint8_t all[256];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    baton_buf b = {0};
    CHECK(rmt_base64(&b, all, 256) == 0 && b.len == 344 && !memcmp(b.data, "AAECAwQFBgcICQoLDA0ODxAREhMU", 28) &&
          !memcmp(b.data + 336, "/P3+/w==", 8));
    baton_buf_free(&b);
}

static void test_shq_and_run(void)
{
    static const char *words[] = {"plain", "two words", "it's", "'", "a\"b$c`d\\e", "new\nline", "", "*?[x]", "-n"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        baton_buf cmd = {0}, out = {0}, eo = {0};
        rmt_printf(&cmd, "printf %%s ");
        rmt_shq(&cmd, words[i]);   /* the empty word quotes as '' */
        rmt_cstr(&cmd);
        const char *argv[] = {"/bin/sh", "-c", (const char *)cmd.data, NULL};
        int st;
        baton_err err = {0};
        CHECK(rmt_run(argv, &out, &eo, &st, &err) == 0 && st == 0);
        CHECK_MSG(out.len == strlen(words[i]) && (!out.len || !memcmp(out.data, words[i], out.len)),
                  "shell round trip of [%s] via [%s]", words[i], (char *)cmd.data);
        baton_buf_free(&cmd);
        baton_buf_free(&out);
        baton_buf_free(&eo);
    }
    baton_buf b = {0};
    rmt_shq(&b, "it's");
    CHECK(b.len == 9 && !memcmp(b.data, "'it'\\''s'", 9));
    baton_buf_free(&b);

    /* status, stderr, and 1 MiB on each stream at once (no pipe deadlock) */
    baton_buf out = {0}, eo = {0};
    baton_err err = {0};
    int st;
    const char *big[] = {"/bin/sh", "-c", "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2; exit 7", NULL};
    CHECK(rmt_run(big, &out, &eo, &st, &err) == 0);
    CHECK_EQ_U(st, 7);
    CHECK_EQ_U(out.len, 1048576);
    CHECK_EQ_U(eo.len, 1048576);
    const char *sig[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
    CHECK(rmt_run(sig, NULL, NULL, &st, &err) == 0 && st == 128 + 15);
    const char *none[] = {"baton-no-such-program-here", NULL};
    CHECK(rmt_run(none, &out, &eo, &st, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "baton-no-such-program-here") && strstr(err.msg, "PATH"));
    baton_buf_free(&out);
    baton_buf_free(&eo);
}

static void expect_err(const char *text, int aws, const char *want)
{
    baton_err err = {0};
    int rc = parse(text, &err);
    if (!rc) {
        if (aws) {
            baton_aws_opts o;
            rc = baton_aws_check(&job, &o, &err);
        } else {
            baton_slurm_opts o;
            rc = baton_slurm_check(&job, &o, &err);
        }
    }
    CHECK_MSG(rc != 0 && strstr(err.msg, want), "want an error with [%s], got %d [%s]", want, rc, err.msg);
}

static void test_slurm(void)
{
    baton_err err = {0};
    baton_slurm_opts o;
    const char *good = "name: s1\nbackend: slurm\ncommands: [\"baton train --lr 0.1\", \"echo it's\"]\n"
                       "target_capacity: 1\nretries: 3\nenv: {OMP_NUM_THREADS: 2}\n"
                       "slurm:\n  partition: gpu\n  time: \"2:00:00\"\n  cpus_per_task: 4\n  mem: 8G\n"
                       "  signal_before: 3m\n  sbatch_args: [--exclusive, --nice=10]\n";
    CHECK(parse(good, &err) == 0);
    CHECK_MSG(baton_slurm_check(&job, &o, &err) == 0, "%s", err.msg);
    CHECK(!strcmp(o.partition, "gpu") && !strcmp(o.time, "2:00:00") && o.cpus_per_task == 4 && o.signal_before == 180);
    CHECK(o.nsbatch_args == 2 && !strcmp(o.sbatch_args[1], "--nice=10"));
    baton_buf b = {0};
    CHECK(fleet_slurm_script(&job, &o, 1, "/vol/task-1", "/opt/baton/bin", &b, &err) == 0);
    CHECK(contains(&b, "#SBATCH --requeue\n") && contains(&b, "#SBATCH --signal=B:USR1@180\n"));
    /* the signal's lead is the deadline of the TERM notice it becomes */
    CHECK(contains(&b, "export BATON_TERM_GRACE_S=\"${BATON_TERM_GRACE_S:-180}\"\n"));
    CHECK(contains(&b, "#SBATCH --open-mode=append\n") && contains(&b, "#SBATCH --chdir=/vol/task-1\n"));
    CHECK(contains(&b, "#SBATCH --output=/vol/task-1/logs/slurm-%j.log\n"));
    CHECK(contains(&b, "#SBATCH --partition=gpu\n") && contains(&b, "#SBATCH --time=2:00:00\n") &&
          contains(&b, "#SBATCH --cpus-per-task=4\n") && contains(&b, "#SBATCH --mem=8G\n") &&
          contains(&b, "#SBATCH --exclusive\n"));
    /* one instance for two tasks: both share slot 0's name and run one at a time */
    CHECK(contains(&b, "#SBATCH --job-name=baton-s1-0\n") && contains(&b, "#SBATCH --dependency=singleton\n"));
    CHECK(contains(&b, "command='echo it'\\''s'\n") && contains(&b, "retries=3\n") &&
          contains(&b, "export OMP_NUM_THREADS=2\n") && contains(&b, "export PATH=/opt/baton/bin:\"$PATH\"\n"));
    CHECK(contains(&b, "scontrol requeue"));
    baton_buf_free(&b);
    CHECK(fleet_slurm_script(&job, &o, 0, "/vol/with space", NULL, &b, &err) == BATON_ERR_ARG);
    CHECK(fleet_slurm_script(&job, &o, 0, "relative/vol", NULL, &b, &err) == BATON_ERR_ARG);
    CHECK(fleet_slurm_script(&job, &o, 2, "/vol", NULL, &b, &err) == BATON_ERR_ARG);
    baton_buf_free(&b);

    const char *head = "name: s\nbackend: slurm\ncommand: x\n";
    char t[512];
    snprintf(t, sizeof t, "%szones: [us-east-1a]\n", head);
    expect_err(t, 0, "zones: the slurm backend has no zones");
    snprintf(t, sizeof t, "%sinstance_types: [c5.large]\n", head);
    expect_err(t, 0, "job.yaml:4: instance_types: the slurm backend runs on the cluster's own nodes");
    snprintf(t, sizeof t, "%sallocation_strategy: capacity-optimized\n", head);
    expect_err(t, 0, "allocation_strategy: the slurm backend");
    snprintf(t, sizeof t, "%smarket: {time_scale: 10}\n", head);
    expect_err(t, 0, "market: the slurm backend has no spot market");
    snprintf(t, sizeof t, "%sslurm:\n  partiton: x\n", head);
    expect_err(t, 0, "job.yaml:5: slurm.partiton: unknown field (known here: partition,");
    snprintf(t, sizeof t, "%sslurm:\n  sbatch_args: [--requeue]\n", head);
    expect_err(t, 0, "--requeue is set by baton");
    snprintf(t, sizeof t, "%sslurm:\n  sbatch_args: [\"--x y\"]\n", head);
    expect_err(t, 0, "slurm.sbatch_args.0: expected one long sbatch option");
    snprintf(t, sizeof t, "%sslurm:\n  cpus_per_task: many\n", head);
    expect_err(t, 0, "job.yaml:5: slurm.cpus_per_task: expected a whole number");
    snprintf(t, sizeof t, "%sslurm:\n  signal_before: 20h\n", head);
    expect_err(t, 0, "slurm.signal_before: expected a duration from 1s to 65535s");
    snprintf(t, sizeof t, "%sslurm:\n  partition: \"a b\"\n", head);
    expect_err(t, 0, "slurm.partition: 'a b' is not a valid value");
    snprintf(t, sizeof t, "%senv: {\"BAD-NAME\": 1}\n", head);
    expect_err(t, 0, "not a valid environment variable name");
    /* nodes: a task over several machines, its ranks started by srun --mpi=pmix */
    const char *dp = "name: dp\nbackend: slurm\ncommand: \"baton train --data '/a b' --dist mpi\"\n"
                     "nodes: {min: 2, max: 4}\nslurm:\n  ntasks_per_node: 3\n";
    CHECK(parse(dp, &err) == 0 && job.nodes.min == 2 && job.nodes.max == 4 && job.nodes.line == 4);
    CHECK_MSG(baton_slurm_check(&job, &o, &err) == 0 && o.ntasks_per_node == 3, "%s", err.msg);
    CHECK(fleet_slurm_script(&job, &o, 0, "/vol/task-0", NULL, &b, &err) == 0);
    CHECK(contains(&b, "#SBATCH --nodes=2-4\n") && contains(&b, "#SBATCH --ntasks-per-node=3\n") &&
          !contains(&b, "#SBATCH --ntasks=1\n"));
    /* the command line the script runs: sh reads it back to srun, then to the command unchanged */
    const char *cl = strstr((const char *)b.data, "\ncommand=");
    CHECK(cl != NULL);
    if (cl) {
        char line[512];
        size_t n = strcspn(cl + 9, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, cl + 9);
        baton_buf sh = {0}, out = {0};
        rmt_printf(&sh, "command=%s; set -- $command; printf '%%s|' \"$@\"", line);
        rmt_printf(&sh, "%c", 0);
        const char *argv[] = {"/bin/sh", "-c", (const char *)sh.data, NULL};
        int st = -1;
        CHECK(rmt_run(argv, &out, NULL, &st, &err) == 0 && st == 0);
        rmt_printf(&out, "%c", 0);
        CHECK_MSG(strstr((const char *)out.data, "srun|--mpi=pmix|--kill-on-bad-exit=1|/bin/sh|-c|"),
                  "%s", (const char *)out.data);
        baton_buf_free(&sh);
        baton_buf_free(&out);
        baton_buf e2 = {0};
        rmt_printf(&e2, "command=%s; eval \"set -- $command\"; printf '%%s' \"$6\"", line);
        rmt_printf(&e2, "%c", 0);
        const char *argv2[] = {"/bin/sh", "-c", (const char *)e2.data, NULL};
        CHECK(rmt_run(argv2, &out, NULL, &st, &err) == 0 && st == 0);
        rmt_printf(&out, "%c", 0);
        CHECK_MSG(!strcmp((const char *)out.data, "baton train --data '/a b' --dist mpi"), "[%s]", (const char *)out.data);
        baton_buf_free(&e2);
        baton_buf_free(&out);
    }
    baton_buf_free(&b);
    CHECK(parse("name: dp\nbackend: slurm\ncommand: x\nnodes: 3\n", &err) == 0 && job.nodes.min == 3 &&
          job.nodes.max == 3 && baton_slurm_check(&job, &o, &err) == 0);
    CHECK(fleet_slurm_script(&job, &o, 0, "/vol/task-0", NULL, &b, &err) == 0 && contains(&b, "#SBATCH --nodes=3\n") &&
          contains(&b, "#SBATCH --ntasks-per-node=1\n"));
    baton_buf_free(&b);
    snprintf(t, sizeof t, "%snodes: {min: 3, max: 2}\n", head);
    CHECK(parse(t, &err) != 0 && strstr(err.msg, "job.yaml:4: nodes: min (3) is more than max (2)"));
    snprintf(t, sizeof t, "%snodes: {most: 3}\n", head);
    CHECK(parse(t, &err) != 0 && strstr(err.msg, "nodes.most: unknown field"));
    snprintf(t, sizeof t, "%snodes: 0\n", head);
    CHECK(parse(t, &err) != 0 && strstr(err.msg, "job.yaml:4: nodes"));
    snprintf(t, sizeof t, "%sslurm:\n  ntasks_per_node: 2\n", head);
    expect_err(t, 0, "slurm.ntasks_per_node: ranks per node need 'nodes:'");
    /* the status parsers */
    baton_slurm_task tk;
    memset(&tk, 0, sizeof tk);
    fleet_slurm_parse_show("JobId=12 JobName=baton-s-0 JobState=PENDING Reason=BeginTime Dependency=(null) "
                           "Requeue=1 Restarts=3 BatchFlag=1 BatchHost=node7 NumNodes=1\n", &tk);
    CHECK(!strcmp(tk.state, "PENDING") && !strcmp(tk.reason, "BeginTime") && !strcmp(tk.node, "node7") && tk.restarts == 3);
    fleet_slurm_parse_show("JobState=<b>bad</b> Restarts=-5", &tk);
    CHECK(!strcmp(tk.state, "UNKNOWN") && tk.restarts == 0);
    const char *log = "submit time=a tasks=1\nstart job=1\nend job=1 rc=3 outcome=crash signal=none\n"
                      "submit time=b tasks=1\nstart job=2\nend job=2 task=0 rc=75 outcome=stopped signal=term\n"
                      "start job=2\nend job=2 task=0 rc=143 outcome=stopped signal=term\nstart job=2\n"
                      "end job=2 rc=2 outcome=crash signal=none\nstart job=2\nend job=2 rc=0 outcome=done signal=none";
    fleet_slurm_parse_runlog(log, strlen(log), &tk);
    CHECK_MSG(tk.runs == 4 && tk.notices == 1 && tk.stops == 1 && tk.crashes == 1 && tk.last_rc == 0,
              "runs %d notices %d stops %d crashes %d last %d", tk.runs, tk.notices, tk.stops, tk.crashes, tk.last_rc);
    fleet_slurm_parse_runlog("end rc=999 outcome=x", 20, &tk);
    CHECK(tk.last_rc == 255 && tk.stops == 1);
    CHECK(baton_slurm_state_final("COMPLETED") && baton_slurm_state_final("GONE") &&
          !baton_slurm_state_final("PENDING") && !baton_slurm_state_final("REQUEUED") && !baton_slurm_state_final("RUNNING"));
}

static const char *aws_job =
    "name: a1\nbackend: aws\ncommands: [\"baton train\", \"echo 'two'\"]\n"
    "instance_types: [c5.xlarge, m5.large]\nzones: [eu-west-1a, eu-west-1c]\n"
    "volume: {size_gb: 50}\nretries: 4\nenv: {A_B: \"x y\"}\n"
    "aws:\n  api: spot-fleet\n  account_id: \"210987654321\"\n  image_id: ami-0abcdef0123456789\n"
    "  subnets: {eu-west-1c: subnet-0123456789abcdef0}\n  tags: {cost-center: \"42\"}\n"
    "  code: s3://bkt/code/\n  volume_type: io2\n  device: /dev/sdg\n  mount: /data\n";

static cJSON *json_file(const char *dir, const char *name)
{
    char p[512];
    uint8_t *txt;
    size_t len;
    baton_err err = {0};
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (baton_file_read_all(p, 1 << 20, &txt, &len, &err)) return NULL;
    cJSON *c = cJSON_ParseWithLength((char *)txt, len);
    free(txt);
    return c;
}

/* The default API: a launch template and an Auto Scaling group per task; and EC2 Fleet. */
static void test_aws_groups(void)
{
    static const char *yaml =
        "name: g1\nbackend: aws\ncommands: [a, b]\ninstance_types: [c7i.xlarge, m7i.xlarge, c6i.xlarge]\n"
        "zones: [eu-west-1a, eu-west-1c]\nallocation_strategy: lowest-price\n"
        "aws:\n  account_id: \"210987654321\"\n  image_id: ami-0abcdef0123456789\n"
        "  subnets: {eu-west-1a: subnet-0aaaaaaaaaaaaaaaa, eu-west-1c: subnet-0cccccccccccccccc}\n";
    baton_err err = {0};
    baton_aws_opts o;
    CHECK(parse(yaml, &err) == 0);
    CHECK_MSG(baton_aws_check(&job, &o, &err) == 0, "%s", err.msg);
    CHECK(o.api == BATON_AWS_ASG);
    char dir[] = "/tmp/baton-test-aws-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    baton_aws_cmd *cmds;
    size_t n;
    CHECK_MSG(baton_aws_generate(&job, &o, dir, &cmds, &n, &err) == 0, "%s", err.msg);
    CHECK_EQ_U(n, 8);   /* role, policy, profile, role in profile; per task a launch template, a group */
    CHECK(n == 8 && cmds[4].template_task == 0 && cmds[4].fleet_task < 0 && cmds[5].fleet_task == 0 &&
          cmds[6].template_task == 1 && cmds[7].fleet_task == 1 && cmds[0].may_exist && !cmds[1].may_exist);
    baton_buf line = {0};
    CHECK(n == 8 && baton_aws_cmd_line(&cmds[7], &line) == 0 &&
          contains(&line, "aws autoscaling create-auto-scaling-group --region eu-west-1 --cli-input-json file://") &&
          contains(&line, "/auto-scaling-group-1.json"));
    baton_buf_free(&line);
    baton_aws_cmds_free(cmds, n);
    cJSON *g = json_file(dir, "auto-scaling-group-1.json");
    CHECK(g && !strcmp(cJSON_GetObjectItem(g, "AutoScalingGroupName")->valuestring, "baton-g1-1") &&
          !strcmp(cJSON_GetObjectItem(g, "VPCZoneIdentifier")->valuestring, "subnet-0aaaaaaaaaaaaaaaa,subnet-0cccccccccccccccc") &&
          !cJSON_GetObjectItem(g, "AvailabilityZones"));
    cJSON *mip = cJSON_GetObjectItem(g, "MixedInstancesPolicy");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(mip, "LaunchTemplate"), "Overrides")) == 3);
    CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(mip, "InstancesDistribution"), "SpotAllocationStrategy")->valuestring,
                  "lowest-price"));
    cJSON_Delete(g);
    cJSON *lt = json_file(dir, "launch-template-1.json");
    cJSON *md = cJSON_GetObjectItem(cJSON_GetObjectItem(lt, "LaunchTemplateData"), "MetadataOptions");
    CHECK(lt && !strcmp(cJSON_GetObjectItem(md, "HttpTokens")->valuestring, "required") &&
          cJSON_GetObjectItem(md, "HttpPutResponseHopLimit")->valueint == 1);
    cJSON_Delete(lt);
    uint8_t *txt;
    size_t len;
    char p[512];
    snprintf(p, sizeof p, "%s/user-data-1.sh", dir);
    CHECK(baton_file_read_all(p, 1 << 20, &txt, &len, &err) == 0);
    CHECK(memmem(txt, len, "\nGROUP=baton-g1-1\n", 18) && memmem(txt, len, "update-auto-scaling-group", 25) &&
          !memmem(txt, len, "cancel-spot-fleet-requests", 26));
    free(txt);
    snprintf(p, sizeof p, "%s/spot_fleet_config-0.json", dir);
    CHECK(access(p, F_OK) != 0);   /* no Spot Fleet artefacts */
    baton_remove_tree(dir);

    /* EC2 Fleet: the service-linked role, then per task a launch template and a fleet */
    CHECK(baton_aws_check_as(&job, "ec2-fleet", &o, &err) == 0 && o.api == BATON_AWS_EC2_FLEET);
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
    CHECK(mkdtemp(dir) != NULL);
    CHECK_MSG(baton_aws_generate(&job, &o, dir, &cmds, &n, &err) == 0, "%s", err.msg);
    CHECK(n == 9 && !strcmp(cmds[4].argv[2], "create-service-linked-role") && cmds[4].may_exist &&
          !strcmp(cmds[6].argv[2], "create-fleet") && cmds[6].fleet_task == 0);
    baton_aws_cmds_free(cmds, n);
    cJSON *f = json_file(dir, "ec2-fleet-0.json");
    cJSON *ov = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(f, "LaunchTemplateConfigs"), 0), "Overrides");
    CHECK(f && cJSON_GetArraySize(ov) == 6 &&
          !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(ov, 1), "SubnetId")->valuestring, "subnet-0cccccccccccccccc"));
    cJSON_Delete(f);
    baton_remove_tree(dir);
    CHECK(baton_aws_check_as(&job, "asg", &o, &err) == BATON_ERR_USAGE && strstr(err.msg, "--api"));

    /* what a group cannot take */
    const char *head = "name: a\nbackend: aws\ncommand: x\ninstance_types: [c5.large]\n";
    char t[768];
    snprintf(t, sizeof t, "%szones: [us-east-1a]\naws: {image_id: ami-0abcdef0123456789, api: fleet}\n", head);
    expect_err(t, 1, "aws.api: expected auto-scaling-group (the default), ec2-fleet or spot-fleet");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\nnodes: 2\naws: {image_id: ami-0abcdef0123456789}\n", head);
    expect_err(t, 1, "job.yaml:6: nodes: the aws backend runs each task on one instance");
    snprintf(t, sizeof t, "%szones: [us-east-1a, us-east-1b]\naws:\n  image_id: ami-0abcdef0123456789\n"
             "  subnets: {us-east-1b: subnet-0123456789abcdef0}\n", head);
    expect_err(t, 1, "aws.subnets: an Auto Scaling group takes either a subnet for every zone");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\naws: {image_id: ami-0abcdef0123456789, role_prefix: a+b}\n", head);
    expect_err(t, 1, "aws.role_prefix: letters, digits and ._- only: it names the launch templates");
    baton_buf many = {0};
    rmt_printf(&many, "name: a\nbackend: aws\ncommand: x\nzones: [us-east-1a]\naws: {image_id: ami-0abcdef0123456789}\n"
                      "instance_types:\n");
    for (int i = 0; i < 21; i++) rmt_printf(&many, "  - {name: t%d.large, on_demand_price: 1, spot_price: 0.3}\n", i);
    rmt_cstr(&many);
    expect_err((char *)many.data, 1, "an Auto Scaling group takes at most 20 instance types");
    baton_buf_free(&many);
}

static void test_aws(void)
{
    baton_err err = {0};
    baton_aws_opts o;
    CHECK(parse(aws_job, &err) == 0);
    CHECK_MSG(baton_aws_check(&job, &o, &err) == 0, "%s", err.msg);
    CHECK(!strcmp(o.region, "eu-west-1") && !strcmp(o.account_id, "210987654321") && !strcmp(o.volume_type, "io2"));
    CHECK(o.subnets[0] == NULL && o.subnets[1] && !strcmp(o.subnets[1], "subnet-0123456789abcdef0"));
    CHECK(o.ntags == 1 && !strcmp(o.tag_keys[0], "cost-center"));
    baton_buf ud = {0};
    CHECK(fleet_aws_userdata(&job, &o, 1, &ud, &err) == 0);
    CHECK(ud.len < BATON_AWS_USERDATA_MAX && !memcmp(ud.data, "#!/bin/bash\n", 12));
    CHECK(contains(&ud, "\nJOB=a1\nTASK=1\n") && contains(&ud, "\nREGION=eu-west-1\n") && contains(&ud, "\nSIZE_GB=50\n"));
    CHECK(contains(&ud, "\nCOMMAND='echo '\\''two'\\'''\n") && contains(&ud, "\nRETRIES=4\n") &&
          contains(&ud, "export A_B='x y'\n") && contains(&ud, "\nMOUNT=/data\n") && contains(&ud, "\nDEVICE=/dev/sdg\n"));
    CHECK(contains(&ud, "EXTRA_TAGS=',{Key=cost-center,Value=42}'"));
    baton_buf_free(&ud);

    /* artefacts: two tasks, two fleets; every JSON parses; the policy's S3 part follows aws.code */
    char dir[] = "/tmp/baton-test-aws-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    baton_aws_cmd *cmds;
    size_t n;
    CHECK_MSG(baton_aws_generate(&job, &o, dir, &cmds, &n, &err) == 0, "%s", err.msg);
    CHECK_EQ_U(n, 8);
    CHECK(!strcmp(cmds[0].argv[2], "create-role") && cmds[0].may_exist && cmds[6].fleet_task == 0 && cmds[7].fleet_task == 1);
    baton_buf line = {0};
    CHECK(baton_aws_cmd_line(&cmds[7], &line) == 0 && contains(&line, "aws ec2 request-spot-fleet --region eu-west-1 "));
    baton_buf_free(&line);
    baton_aws_cmds_free(cmds, n);
    char p[512];
    uint8_t *txt;
    size_t len;
    snprintf(p, sizeof p, "%s/spot_fleet_config-1.json", dir);
    CHECK(baton_file_read_all(p, 1 << 20, &txt, &len, &err) == 0);
    cJSON *c = cJSON_Parse((char *)txt);
    free(txt);
    cJSON *specs = cJSON_GetObjectItem(c, "LaunchSpecifications");
    CHECK(cJSON_GetArraySize(specs) == 4);
    cJSON *s3 = cJSON_GetArrayItem(specs, 3);   /* m5.large in eu-west-1c: the subnet, no placement */
    CHECK(!strcmp(cJSON_GetObjectItem(s3, "SubnetId")->valuestring, "subnet-0123456789abcdef0") &&
          !cJSON_GetObjectItem(s3, "Placement"));
    CHECK(!strcmp(cJSON_GetObjectItem(c, "AllocationStrategy")->valuestring, "priceCapacityOptimized"));
    CHECK(!strcmp(cJSON_GetObjectItem(c, "IamFleetRole")->valuestring, "arn:aws:iam::210987654321:role/baton-a1-fleet"));
    cJSON *token = cJSON_GetObjectItem(c, "ClientToken");
    CHECK(cJSON_IsString(token) && strlen(token->valuestring) <= 64 && !strncmp(token->valuestring, "baton-a1-1-", 11));
    cJSON_Delete(c);
    snprintf(p, sizeof p, "%s/instance-policy.json", dir);
    CHECK(baton_file_read_all(p, 1 << 20, &txt, &len, &err) == 0);
    CHECK(strstr((char *)txt, "arn:aws:s3:::bkt/code/*") && strstr((char *)txt, "\"s3:prefix\":\t\"code/*\"") &&
          strstr((char *)txt, "\"ec2:ResourceTag/baton-job\":\t\"a1\""));
    free(txt);
    baton_remove_tree(dir);

    /* what EC2 cannot do */
    const char *head = "name: a\nbackend: aws\ncommand: x\ninstance_types: [c5.large]\n";
    char t[768];
    snprintf(t, sizeof t, "%szones: [us-east-1a, eu-west-1b]\naws: {image_id: ami-0abcdef0123456789}\n", head);
    expect_err(t, 1, "zones: eu-west-1b is not in region us-east-1");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\n", head);
    expect_err(t, 1, "aws.image_id: missing");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\naws:\n  image_id: ami-0abcdef0123456789\n  region: us-east-1\n  colour: red\n", head);
    expect_err(t, 1, "job.yaml:9: aws.colour: unknown field (known here: api, region, account_id, image_id");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\nvolume: {seed: ./data}\naws: {image_id: ami-0abcdef0123456789}\n", head);
    expect_err(t, 1, "volume.seed: the aws backend cannot copy a folder");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\nmarket: {seed: 3}\naws: {image_id: ami-0abcdef0123456789}\n", head);
    expect_err(t, 1, "market: the aws backend runs on the real spot market");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\naws:\n  image_id: ami-0abcdef0123456789\n  code: \"s3://b/x y.tgz\"\n", head);
    expect_err(t, 1, "job.yaml:8: aws.code: expected s3://");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\naws:\n  image_id: ami-0abcdef0123456789\n  device: /dev/sda\n", head);
    expect_err(t, 1, "aws.device: expected /dev/sdf");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\naws:\n  image_id: ami-0abcdef0123456789\n  tags: {aws:x: y}\n", head);
    expect_err(t, 1, "aws.tags.aws:x: tag keys");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\naws:\n  image_id: ami-0abcdef0123456789\n  account_id: \"12\"\n", head);
    expect_err(t, 1, "aws.account_id: expected the 12-digit account id");
    snprintf(t, sizeof t, "%szones: [us-east-1a]\nvolume: {size_gb: 20000}\naws: {image_id: ami-0abcdef0123456789}\n", head);
    expect_err(t, 1, "volume.size_gb: an EBS volume has 1 to 16384 GiB");

    /* user data over EC2's 16 KiB is refused, naming the task */
    char *big = malloc(20000);
    memset(big, 'x', 19999);
    big[19999] = 0;
    baton_buf yaml = {0};
    rmt_printf(&yaml, "%szones: [us-east-1a]\naws: {image_id: ami-0abcdef0123456789}\n", "name: a\nbackend: aws\ninstance_types: [c5.large]\n");
    rmt_printf(&yaml, "command: echo %s\n", big);
    rmt_cstr(&yaml);
    free(big);
    CHECK(parse((char *)yaml.data, &err) == 0 && baton_aws_check(&job, &o, &err) == 0);
    baton_buf_free(&yaml);
    CHECK(fleet_aws_userdata(&job, &o, 0, &ud, &err) == BATON_ERR_ARG && strstr(err.msg, "more than EC2's 16384"));
    baton_buf_free(&ud);
}

int main(void)
{
    /* the generated scripts spell the stopped status as text: it must be the same number */
    CHECK(atoi(BATON_EXIT_STOPPED_STR) == BATON_EXIT_STOPPED);
    test_base64();
    test_shq_and_run();
    test_slurm();
    test_aws();
    test_aws_groups();
    baton_job_free(&job);
    CHECK_DONE();
}
