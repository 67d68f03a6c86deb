/* test_parse_linear.c — parsers of outside input do work linear in their input: each is timed on
 * an input of size n and on one 8 times larger (best of 5 runs each, in the thread's CPU time, so
 * that a test running beside it does not count), and the larger may take at most 24 times as long
 * (linear work takes 8; quadratic work would take 64) plus 2 ms of noise.
 * The inputs are the size classes an attacker or a careless generator would pick:
 *   - a job file (YAML) with an env: flow mapping of many keys, and a flow sequence nested deep;
 *   - the instance catalog and a latencies file (CSV) with many rows;
 *   - dataset.json (JSON) with many shards;
 *   - state.json (JSON) nested deep, and with one very long string.
 * Whether each input is accepted or refused does not matter here (the other tests judge that);
 * that each answer comes in time linear in the input does. */
#include "baton/fleet.h"
#include "baton/infer.h"
#include "baton/rec.h"
#include "baton/train.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

typedef void (*gen_fn)(baton_buf *b, size_t n);
typedef void (*parse_fn)(const char *text, size_t len);

static void put(baton_buf *b, const char *s) { baton_buf_append(b, s, strlen(s)); }

static void gen_yaml_env(baton_buf *b, size_t n)
{
    put(b, "name: j\ncommand: x\ninstance_types: [c5.large]\nzones: [us-east-1a]\nenv: {");
    char kv[64];
    for (size_t i = 0; i < n; i++) {
        snprintf(kv, sizeof kv, "%sK%zu: v%zu", i ? ", " : "", i, i);
        put(b, kv);
    }
    put(b, "}\n");
}

static void gen_yaml_deep(baton_buf *b, size_t n)
{
    put(b, "name: j\ncommand: x\nzones: ");
    for (size_t i = 0; i < n; i++) put(b, "[");
    for (size_t i = 0; i < n; i++) put(b, "]");
    put(b, "\n");
}

static void parse_job(const char *text, size_t len)
{
    baton_job j;
    baton_err err = {0};
    if (baton_job_parse("job.yaml", text, len, &j, &err) == BATON_OK) baton_job_free(&j);
}

static void gen_catalog(baton_buf *b, size_t n)
{
    put(b, "name,kind,on_demand_per_h,spot_per_h\n");
    char row[96];
    for (size_t i = 0; i < n; i++) {
        snprintf(row, sizeof row, "t%zu.large,cpu,1.%03zu,0.01\n", i, i % 1000);
        put(b, row);
    }
}

static void parse_catalog(const char *text, size_t len)
{
    baton_infer_catalog c = {0};
    baton_err err = {0};
    if (baton_infer_catalog_parse("catalog.csv", text, len, &c, &err) == BATON_OK) baton_infer_catalog_free(&c);
}

static void gen_latencies(baton_buf *b, size_t n)
{
    put(b, "configuration,mean_ms,p90_ms,batch\n");
    char row[96];
    for (size_t i = 0; i < n; i++) {
        snprintf(row, sizeof row, "c5.large,%zu.5,%zu.9,%zu\n", i % 90 + 1, i % 90 + 2, i % 8 + 1);
        put(b, row);
    }
}

static void parse_latencies(const char *text, size_t len)
{
    baton_latency_row *rows = NULL;
    size_t n = 0;
    baton_err err = {0};
    if (baton_latencies_parse("lat.csv", text, len, &rows, &n, &err) == BATON_OK) free(rows);
}

static void gen_manifest(baton_buf *b, size_t n)
{
    char head[512];
    snprintf(head, sizeof head,
             "{\"baton_dataset\": 1, \"name\": \"m\", \"split\": \"train\", \"format\": \"recordio\", "
             "\"encoding\": \"raw\", \"quality\": 0, \"samples\": %zu, \"classes\": 2, \"class_names\": [\"a\", \"b\"], "
             "\"shape\": [2, 2, 1], \"channels\": 1, \"mean\": [0.5], \"std\": [0.25], \"seed\": 1, "
             "\"shuffled\": true, \"shards\": [", n);
    put(b, head);
    char sh[256];
    for (size_t i = 0; i < n; i++) {
        snprintf(sh, sizeof sh, "%s{\"file\": \"s%zu.rec\", \"index\": \"s%zu.idx\", \"bytes\": 100, \"records\": 1, "
                 "\"crc32c\": \"00000000\", \"index_bytes\": 10, \"index_crc32c\": \"00000000\"}", i ? ", " : "", i, i);
        put(b, sh);
    }
    put(b, "]}");
}

static void parse_manifest(const char *text, size_t len)
{
    baton_manifest m;
    memset(&m, 0, sizeof m);
    baton_err err = {0};
    if (baton_manifest_parse("dataset.json", text, len, &m, &err) == BATON_OK) baton_manifest_free(&m);
}

static void gen_json_deep(baton_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++) put(b, "[");
    for (size_t i = 0; i < n; i++) put(b, "]");
}

static void gen_json_long_string(baton_buf *b, size_t n)
{
    put(b, "{\"model\": \"");
    for (size_t i = 0; i < n; i++) put(b, i % 7 ? "a" : "\\u00e9");
    put(b, "\"}");
}

static void parse_state(const char *text, size_t len)
{
    baton_train_state st;
    baton_err err = {0};
    baton_train_state_parse(text, len, &st, &err);
}

static double best_of_5(parse_fn p, const baton_buf *b)
{
    double best = 1e9;
    for (int k = 0; k < 5; k++) {
        double t0 = cpu_now();
        p((const char *)b->data, b->len);
        double t = cpu_now() - t0;
        if (t < best) best = t;
    }
    return best;
}

static void linear(const char *what, gen_fn g, parse_fn p, size_t n)
{
    baton_buf small = {0}, big = {0};
    g(&small, n);
    g(&big, 8 * n);
    double ts = best_of_5(p, &small), tb = best_of_5(p, &big);
    printf("%-32s %8zu bytes %8.3f ms, %9zu bytes %8.3f ms (x%.1f)\n", what, small.len, ts * 1e3, big.len, tb * 1e3,
           ts > 0 ? tb / ts : 0);
    CHECK_MSG(tb <= 24 * ts + 0.002, "%s: %zu bytes took %.3f ms, 8 times as many %.3f ms (more than linear)", what,
              small.len, ts * 1e3, tb * 1e3);
    baton_buf_free(&small);
    baton_buf_free(&big);
}

int main(void)
{
    linear("job file: env of many keys", gen_yaml_env, parse_job, 4000);
    linear("job file: flow sequence nested", gen_yaml_deep, parse_job, 4000);
    linear("catalog: many rows", gen_catalog, parse_catalog, 3000);
    linear("latencies: many rows", gen_latencies, parse_latencies, 3000);
    linear("dataset.json: many shards", gen_manifest, parse_manifest, 2000);
    linear("state.json: nested", gen_json_deep, parse_state, 20000);
    linear("state.json: a long string", gen_json_long_string, parse_state, 100000);
    /* the job file's nesting bound: 64 levels at most, refused with the line */
    baton_buf b = {0};
    gen_yaml_deep(&b, 100);
    baton_job j;
    baton_err err = {0};
    CHECK(baton_job_parse("deep.yaml", (const char *)b.data, b.len, &j, &err) == BATON_ERR_FORMAT &&
          strstr(err.msg, "deep.yaml:3: collections nested deeper than 64 levels"));
    baton_buf_free(&b);
    gen_yaml_deep(&b, 60);
    CHECK(baton_job_parse("deep.yaml", (const char *)b.data, b.len, &j, &err) != BATON_OK && !strstr(err.msg, "deeper"));
    baton_buf_free(&b);
    CHECK_DONE();
}
