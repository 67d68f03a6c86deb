/* test_fleet_jobfile.c — the job-file parser: a full example parses into the right values, defaults
 * and catalog look-ups apply, and every kind of bad input fails with the line and the field. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static const char *full =
    "# a sweep on two zones\n"
    "name: sweep-1\n"
    "backend: local\n"
    "commands:\n"
    "  - baton train --lr 0.1\n"
    "  - baton train --lr 0.05\n"
    "target_capacity: 2\n"
    "allocation_strategy: capacity-optimized\n"
    "retries: 3\n"
    "instance_types:\n"
    "  - c5.xlarge\n"
    "  - name: x1.custom\n"
    "    on_demand_price: 1.5\n"
    "    spot_price: {us-east-1a: 0.4, us-east-1b: 0.5}\n"
    "    speed: 2\n"
    "    interruption: \">20%\"\n"
    "zones: [us-east-1a, us-east-1b]\n"
    "volume:\n"
    "  checkpoints: out/ckpt\n"
    "  size_gb: 50\n"
    "market:\n"
    "  time_scale: 120\n"
    "  seed: 42\n"
    "  launch_delay: 2m\n"
    "  notice: 90s\n"
    "  interruptions:\n"
    "    - {after: 1h, notice: 0}\n"
    "    - after: 30m\n"
    "      task: 1\n"
    "env:\n"
    "  OMP_NUM_THREADS: 1\n"
    "aws:\n"
    "  region: us-east-1\n"
    "  security_groups: [sg-1, sg-2]\n"
    "  tags: {team: ml}\n";

static int parse(const char *text, baton_job *j, baton_err *e)
{
    memset(e, 0, sizeof *e);
    return baton_job_parse("job.yaml", text, strlen(text), j, e);
}

/* text must fail; the message must contain every fragment. */
static void bad(const char *text, const char *frag1, const char *frag2)
{
    baton_job j;
    baton_err e;
    int rc = parse(text, &j, &e);
    CHECK_MSG(rc != 0, "accepted: %s", text);
    CHECK_MSG(strstr(e.msg, frag1) != NULL, "'%s' lacks '%s'", e.msg, frag1);
    if (frag2) CHECK_MSG(strstr(e.msg, frag2) != NULL, "'%s' lacks '%s'", e.msg, frag2);
    CHECK(j.ncommands == 0 && j.commands == NULL && j.types == NULL);   /* nothing left allocated */
    baton_job_free(&j);
}

#define BASE "name: j\ncommand: run.sh\ninstance_types: [c5.xlarge]\nzones: [a]\n"

/* env: values are never kept: block and flow maps, quoted values, a value that is part of its
 * key, a value on another line (a block scalar); the redacted text still parses, keys kept. */
static void test_redact(void)
{
    static const char text[] =
        "name: sec\ninstance_types: [c5.xlarge]\nzones: [us-east-1a]\n"
        "command: \"true\"\n"
        "env:\n"
        "  API_TOKEN: fake-secret-AAAA1111\n"
        "  QUOTED: \"fake-secret-BBBB2222\"\n"
        "  XKEY: X\n"
        "  LONG: |\n"
        "    fake-secret-CCCC3333\n";
    baton_job j;
    baton_err e;
    CHECK_MSG(parse(text, &j, &e) == 0, "%s", e.msg);
    char *r = baton_job_redact_env(&j, text);
    CHECK(r && !strstr(r, "fake-secret") && strstr(r, "API_TOKEN: <redacted>") && strstr(r, "QUOTED: \"<redacted>\"") &&
          strstr(r, "XKEY: <redacted>") && strstr(r, "name: sec"));
    baton_job k;
    CHECK_MSG(r && parse(r, &k, &e) == 0, "%s", e.msg);
    if (r && !e.code) {
        CHECK(k.nenv == 4 && !strcmp(k.env[0].key, "API_TOKEN") && !strcmp(k.env[0].value, "<redacted>"));
        baton_job_free(&k);
    }
    free(r);
    baton_job_free(&j);
    static const char flow[] = "name: f\ninstance_types: [c5.xlarge]\nzones: [us-east-1a]\ncommand: \"true\"\nenv: {AB: A, KEY2: fake-secret-DDDD4444}\n";
    CHECK(parse(flow, &j, &e) == 0);
    r = baton_job_redact_env(&j, flow);
    CHECK(r && strstr(r, "{AB: <redacted>, KEY2: <redacted>}"));
    free(r);
    baton_job_free(&j);
}

int main(void)
{
    test_redact();
    baton_job j;
    baton_err e;
    CHECK_MSG(parse(full, &j, &e) == 0, "%s", e.msg);
    CHECK(!strcmp(j.name, "sweep-1"));
    CHECK(j.backend == BATON_BACKEND_LOCAL);
    CHECK_EQ_U(j.ncommands, 2);
    CHECK(!strcmp(j.commands[1], "baton train --lr 0.05"));
    CHECK_EQ_U(j.target_capacity, 2);
    CHECK(j.alloc == BATON_ALLOC_CAPACITY_OPTIMIZED && j.alloc_line > 0);
    CHECK_EQ_U(j.retries, 3);
    CHECK_EQ_U(j.ntypes, 2);
    CHECK(!strcmp(j.types[0].name, "c5.xlarge") && j.types[0].from_catalog);
    CHECK(j.types[0].on_demand_price == 0.17 && j.types[0].spot_price > 0 && j.types[0].spot_price < 0.17);
    CHECK(j.types[1].on_demand_price == 1.5 && j.types[1].speed == 2 && j.types[1].bucket == BATON_BUCKET_GT20);
    CHECK(baton_job_spot_price(&j.types[1], "us-east-1b") == 0.5);
    CHECK(baton_job_spot_price(&j.types[1], "us-east-1a") == 0.4);
    CHECK(j.types[1].line == 12);
    CHECK_EQ_U(j.nzones, 2);
    CHECK(!strcmp(j.zones[1], "us-east-1b"));
    CHECK(!strcmp(j.volume.checkpoints, "out/ckpt") && j.volume.size_gb == 50);
    CHECK(j.market.time_scale == 120 && j.market.seed == 42);
    CHECK(j.market.launch_delay == 120 && j.market.notice == 90);
    CHECK_EQ_U(j.market.ninterrupts, 2);
    CHECK(j.market.interrupts[0].after == 3600 && j.market.interrupts[0].notice == 0 && j.market.interrupts[0].task == 0);
    CHECK(j.market.interrupts[1].after == 1800 && j.market.interrupts[1].notice == 90 && j.market.interrupts[1].task == 1);
    CHECK(j.market.random == 0);   /* a schedule turns the random market off unless asked */
    CHECK_EQ_U(j.nenv, 1);
    CHECK(!strcmp(j.env[0].key, "OMP_NUM_THREADS") && !strcmp(j.env[0].value, "1"));
    const baton_job_kv *kv = fleet_job_backend_opt(&j, "aws.security_groups.1");
    CHECK(kv && !strcmp(kv->value, "sg-2") && kv->line == 34);
    kv = fleet_job_backend_opt(&j, "aws.tags.team");
    CHECK(kv && !strcmp(kv->value, "ml"));
    baton_job_free(&j);

    /* defaults */
    CHECK_MSG(parse(BASE, &j, &e) == 0, "%s", e.msg);
    CHECK(j.target_capacity == 1 && j.retries == 2 && j.alloc == BATON_ALLOC_PRICE_CAPACITY_OPTIMIZED && !j.alloc_line);
    CHECK(!strcmp(j.volume.checkpoints, "ckpt") && j.market.time_scale == 1 && j.market.notice == 120);
    CHECK(j.market.random == 1 && j.market.hazard_scale == 1 && j.market.capacity_cooldown == 3600);
    baton_job_free(&j);

    /* durations and buckets */
    double d;
    CHECK(fleet_duration_parse("90", &d) == 0 && d == 90);
    CHECK(fleet_duration_parse("1.5h", &d) == 0 && d == 5400);
    CHECK(fleet_duration_parse("2d", &d) == 0 && d == 172800);
    CHECK(fleet_duration_parse("5 m", &d) != 0 && fleet_duration_parse("-1", &d) != 0 &&
          fleet_duration_parse("1w", &d) != 0 && fleet_duration_parse("", &d) != 0);
    baton_bucket b;
    CHECK(fleet_bucket_parse("10-15%", &b) == 0 && b == BATON_BUCKET_10_15);
    CHECK(fleet_bucket_parse("<5", &b) == 0 && b == BATON_BUCKET_LT5);
    CHECK(fleet_bucket_parse("25%", &b) != 0);

    /* bad input: line and field */
    bad("name: j\ncommand: x\ninstance_types: [c5.xlarge]\nzones: [a]\nretries: many\n", "job.yaml:5:", "retries");
    bad(BASE "market:\n  time_scale: fast\n", "job.yaml:6:", "market.time_scale");
    bad(BASE "market:\n  tme_scale: 3\n", "job.yaml:6:", "market.tme_scale: unknown field");
    bad(BASE "name: k\n", "job.yaml:5:", "duplicate key 'name'");
    bad("name: j\ncommand: x\ninstance_types:\n  - c5.xlarge\n  - x9.mega\nzones: [a]\n", "job.yaml:5:",
        "instance_types[1]: unknown instance type 'x9.mega'");
    bad("name: j\ncommand: x\ninstance_types:\n  - name: y\n    spot_price: cheap\nzones: [a]\n", "job.yaml:5:",
        "instance_types[0].spot_price");
    bad("name: j\ncommand: x\ninstance_types:\n  - {name: c5.xlarge, interruption: 30%}\nzones: [a]\n", "job.yaml:4:",
        "interruption");
    CHECK_MSG(parse(BASE "allocation_strategy: price-capacity-optimized\n", &j, &e) == 0, "%s", e.msg);
    CHECK(j.alloc == BATON_ALLOC_PRICE_CAPACITY_OPTIMIZED && j.alloc_line == 5 &&
          !strcmp(baton_alloc_name(j.alloc), "price-capacity-optimized"));
    baton_job_free(&j);
    CHECK(parse(BASE "allocation_strategy: lowestPrice\n", &j, &e) == 0 && j.alloc == BATON_ALLOC_LOWEST_PRICE);
    baton_job_free(&j);
    bad("name: j\ncommand: x\ninstance_types: [c5.xlarge]\nzones: [a]\nallocation_strategy: cheapest\n", "job.yaml:5:",
        "allocation_strategy");
    bad("name: j\ncommand: x\ninstance_types: [c5.xlarge]\nzones: [a]\nbackend: gcp\n", "job.yaml:5:", "backend");
    bad("name: j\ninstance_types: [c5.xlarge]\nzones: [a]\n", "job.yaml:1:", "command: missing");
    bad("name: j\ncommand: x\nzones: [a]\n", "instance_types: missing", NULL);
    bad("name: j\ncommand: x\ninstance_types: [c5.xlarge]\n", "zones: missing", NULL);
    bad("command: x\ninstance_types: [c5.xlarge]\nzones: [a]\n", "name: missing", NULL);
    bad("name: ../up\ncommand: x\ninstance_types: [c5.xlarge]\nzones: [a]\n", "job.yaml:1:", "name");
    bad(BASE "target_capacity: 3\n", "job.yaml:5:", "target_capacity: 3 instances but 1 command");
    bad(BASE "market:\n  interruptions:\n    - {after: 1m, task: 4}\n", "job.yaml:7:", "market.interruptions[0].task");
    bad(BASE "market:\n  interruptions:\n    - {notice: 1m}\n", "job.yaml:7:", "missing 'after'");
    bad(BASE "market:\n  interruptions:\n    - {after_steps: 0}\n", "job.yaml:7:", "after_steps");
    {   /* a step condition alone: after defaults to 0 */
        baton_job js;
        baton_err e2 = {0};
        const char *t = BASE "market:\n  interruptions:\n    - {after_steps: 25}\n    - {after: 1m, after_steps: 5}\n";
        CHECK_MSG(baton_job_parse("job.yaml", t, strlen(t), &js, &e2) == BATON_OK, "%s", e2.msg);
        CHECK(js.market.ninterrupts == 2 && js.market.interrupts[0].after == 0 && js.market.interrupts[0].after_steps == 25 &&
              js.market.interrupts[1].after == 60 && js.market.interrupts[1].after_steps == 5);
        baton_job_free(&js);
    }
    bad(BASE "market:\n  interruptions:\n    - {at_step: 0}\n", "job.yaml:7:", "at_step");
    bad(BASE "market:\n  interruptions:\n    - {at_step: 5, after_steps: 5}\n", "job.yaml:7:", "not both");
    {   /* a step of the task's training: after defaults to 0, no random market */
        baton_job js;
        baton_err e2 = {0};
        const char *t = BASE "market:\n  interruptions:\n    - {at_step: 281}\n    - {at_step: 610, notice: 30s}\n";
        CHECK_MSG(baton_job_parse("job.yaml", t, strlen(t), &js, &e2) == BATON_OK, "%s", e2.msg);
        CHECK(js.market.ninterrupts == 2 && js.market.interrupts[0].after == 0 && js.market.interrupts[0].at_step == 281 &&
              js.market.interrupts[0].after_steps == 0 && js.market.interrupts[1].at_step == 610 &&
              js.market.interrupts[1].notice == 30 && !js.market.random);
        baton_job_free(&js);
    }
    bad(BASE "volume:\n  checkpoints: ../x\n", "job.yaml:6:", "volume.checkpoints");
    bad(BASE "commands: [a, b]\n", "job.yaml:5:", "either 'command' or 'commands'");
    bad("name: j\ncommand: [a, b]\ninstance_types: [c5.xlarge]\nzones: [a]\n", "job.yaml:2:", "command");
    bad("name: j\ncommand: x\ninstance_types:\n  - name: c\n    on_demand_price: 1\n    spot_price: {b: 1}\nzones: [a]\n",
        "job.yaml:4:", "spot_price.b: zone not listed");
    bad("name: j\ncommand: x\ninstance_types:\n  - name: c\n    on_demand_price: 1\n    spot_price: {a: 1}\nzones: [a, b]\n",
        "job.yaml:4:", "no price for zone b");
    bad(BASE "env:\n  1BAD: x\n", "job.yaml:6:", "env.1BAD");
    bad("name: j\ncommand: x\n  bad indent: [\n", "job.yaml:", "yaml");
    bad("name: &a j\ncommand: *a\ninstance_types: [c5.xlarge]\nzones: [a]\n", "job.yaml:2:", "aliases");
    bad(BASE "---\nname: again\n", "job.yaml:5:", "second YAML document");
    bad("- a\n- b\n", "job.yaml:1:", "expected a mapping");
    bad("", "job.yaml:1:", "empty");
    bad("name: j\ncommand: \"a\\0b\"\ninstance_types: [c5.xlarge]\nzones: [a]\n", "job.yaml:2:", "NUL");
    bad(BASE "zones: [a, a]\n", "duplicate key 'zones'", NULL);
    bad("name: j\ncommand: x\ninstance_types: [c5.xlarge]\nzones: [a, a]\n", "job.yaml:4:", "listed twice");

    /* a file on disk, and a missing one */
    CHECK(baton_job_load("/nonexistent/job.yaml", &j, &e) != 0 && strstr(e.msg, "/nonexistent/job.yaml"));
    CHECK_DONE();
}
