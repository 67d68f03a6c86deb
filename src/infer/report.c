/* report.c — benchmark results in and out: one JSON object per context (`infer-bench --json` prints
 * them as one array, a context per line; `plan infer --measured` reads that array back, or the JSON
 * Lines of earlier versions), the human table, and the CSV file.
 *
 * Contract: the JSON keys are a contract (scripts and docs depend on them): model, threads, batch,
 * path, cold_start_ms, exec_ms, load_ms, prepare_ms, first_ms, mean_ms, p50_ms, p90_ms, p95_ms,
 * p99_ms, min_ms, max_ms, per_s, queries, seconds, flops, gflops, peak_gflops, min_bytes, kernels; a skipped context
 * has "skipped" instead of the figures. The parser requires threads, batch, path and (unless
 * skipped) mean_ms, p50_ms, p90_ms, per_s, and names the file and line of anything wrong. */
#include "infer_internal.h"

#include <cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

char *baton_infer_stats_json(const baton_infer_stats *s)
{
    /* through cJSON and baton_json_print: strings escaped, every double read back bit-identical
     * (what `plan infer --measured` reads is exactly what was measured) */
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "model", s->model);
    cJSON_AddNumberToObject(o, "threads", s->ctx.threads);
    cJSON_AddNumberToObject(o, "batch", s->ctx.batch);
    cJSON_AddStringToObject(o, "path", baton_infer_path_name(s->ctx.path));
    if (s->skipped[0]) {
        cJSON_AddStringToObject(o, "skipped", s->skipped);
    } else {
        const struct {
            const char *key;
            double v;
        } f[] = {
            {"cold_start_ms", s->cold_start_ms}, {"exec_ms", s->exec_ms}, {"load_ms", s->load_ms},
            {"prepare_ms", s->prepare_ms},       {"first_ms", s->first_ms}, {"mean_ms", s->mean_ms},
            {"p50_ms", s->p50_ms},               {"p90_ms", s->p90_ms},     {"p95_ms", s->p95_ms},
            {"p99_ms", s->p99_ms},               {"min_ms", s->min_ms},     {"max_ms", s->max_ms},
            {"per_s", s->per_s},                 {"queries", (double)s->queries}, {"seconds", s->seconds},
            {"flops", s->flops},                 {"gflops", s->gflops},     {"peak_gflops", s->peak_gflops},
            {"min_bytes", s->min_bytes},         {"kernels", s->kernels},
        };
        for (size_t i = 0; i < sizeof f / sizeof *f; i++) cJSON_AddNumberToObject(o, f[i].key, f[i].v);
    }
    char *out = baton_json_print(o, 0);
    cJSON_Delete(o);
    return out;
}

static int num(const cJSON *j, const char *key, int required, double *v, const char *name, size_t line,
               baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!x && !required) return BATON_OK;
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: \"%s\" %s", name, line, key,
                             x ? "is not a non-negative number" : "is missing");
    *v = x->valuedouble;
    return BATON_OK;
}

int baton_infer_stats_parse(const char *name, size_t line, const char *text, baton_infer_stats *st, baton_err *err)
{
    memset(st, 0, sizeof *st);
    cJSON *j = baton_jr_value(text, strlen(text));
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: not a JSON object", name, line);
    }
    int rc = BATON_OK;
    double threads = 0, batch = 0;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "path");
    const cJSON *mo = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *sk = cJSON_GetObjectItemCaseSensitive(j, "skipped");
    if ((rc = num(j, "threads", 1, &threads, name, line, err)) || (rc = num(j, "batch", 1, &batch, name, line, err)))
        goto out;
    if (threads < 1 || batch < 1 || threads > 4096 || batch > 65536 || threads != floor(threads) ||
        batch != floor(batch)) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: threads and batch must be whole numbers >= 1", name, line);
        goto out;
    }
    st->ctx.threads = (int)threads;
    st->ctx.batch = (int)batch;
    if (!cJSON_IsString(p) || baton_infer_path_parse(p->valuestring, &st->ctx.path)) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: \"path\" must be reference, fast or gpu", name, line);
        goto out;
    }
    if (cJSON_IsString(mo)) snprintf(st->model, sizeof st->model, "%s", mo->valuestring);
    if (cJSON_IsString(sk)) {
        snprintf(st->skipped, sizeof st->skipped, "%s", sk->valuestring[0] ? sk->valuestring : "skipped");
        goto out;
    }
    struct {
        const char *key;
        int req;
        double *v;
    } f[] = {
        {"mean_ms", 1, &st->mean_ms},         {"p50_ms", 1, &st->p50_ms},     {"p90_ms", 1, &st->p90_ms},
        {"per_s", 1, &st->per_s},             {"p95_ms", 0, &st->p95_ms},     {"p99_ms", 0, &st->p99_ms},
        {"min_ms", 0, &st->min_ms},           {"max_ms", 0, &st->max_ms},     {"cold_start_ms", 0, &st->cold_start_ms},
        {"exec_ms", 0, &st->exec_ms},         {"load_ms", 0, &st->load_ms},   {"prepare_ms", 0, &st->prepare_ms},
        {"first_ms", 0, &st->first_ms},       {"seconds", 0, &st->seconds},   {"flops", 0, &st->flops},
        {"gflops", 0, &st->gflops},           {"peak_gflops", 0, &st->peak_gflops},
        {"min_bytes", 0, &st->min_bytes},     {"kernels", 0, &st->kernels},
    };
    for (size_t i = 0; i < sizeof f / sizeof *f && !rc; i++) rc = num(j, f[i].key, f[i].req, f[i].v, name, line, err);
    double q = 0;
    if (!rc) rc = num(j, "queries", 0, &q, name, line, err);
    if (!rc && (q >= 18446744073709551616.0 || q != floor(q)))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: \"queries\" is not a whole number below 2^64", name, line);
    if (!rc) st->queries = (uint64_t)q;
    if (!rc && (st->mean_ms <= 0 || st->p90_ms <= 0 || st->per_s <= 0))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: mean_ms, p90_ms and per_s must be > 0", name, line);
out:
    cJSON_Delete(j);
    return rc;
}

/* A JSON array of infer-bench objects (whatever its layout: pretty-printed is fine). */
static int stats_array(const char *path, const char *text, baton_infer_stats **out, size_t *cnt, baton_err *err)
{
    cJSON *a = baton_jr_value(text, strlen(text));
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a JSON array (expected infer-bench --json output)", path);
    }
    int rc = BATON_OK, n = cJSON_GetArraySize(a);
    baton_infer_stats *v = calloc(n > 0 ? (size_t)n : 1, sizeof *v);
    if (!v) rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    char name[4200];
    snprintf(name, sizeof name, "%s: element", path);
    for (int i = 0; i < n && !rc; i++) {
        char *one = cJSON_PrintUnformatted(cJSON_GetArrayItem(a, i));
        rc = one ? baton_infer_stats_parse(name, (size_t)i + 1, one, &v[i], err)
                 : baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
        cJSON_free(one);
    }
    cJSON_Delete(a);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *cnt = (size_t)n;
    return BATON_OK;
}

int baton_infer_stats_load(const char *path, baton_infer_stats **out, size_t *n, baton_err *err)
{
    *out = NULL;
    *n = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    int rc = baton_file_read_all(path, 64u << 20, &data, &len, err);
    if (rc) return rc;
    baton_infer_stats *v = NULL;
    size_t cnt = 0, cap = 0, line = 0;
    char *s = (char *)data;
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    if (*s == '[') {   /* infer-bench --json: one array; its elements are numbered from 1 in errors */
        rc = stats_array(path, s, &v, &cnt, err);
        *s = 0;
    }
    while (*s && !rc) {
        char *e = strchr(s, '\n');
        if (e) *e = 0;
        line++;
        while (*s == ' ' || *s == '\t' || *s == '\r') s++;
        if (*s == '{') {
            if (cnt == cap) {
                cap = cap ? 2 * cap : 16;
                baton_infer_stats *nv = realloc(v, cap * sizeof *v);
                if (!nv) {
                    rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
                    break;
                }
                v = nv;
            }
            rc = baton_infer_stats_parse(path, line, s, &v[cnt], err);
            if (!rc) cnt++;
        }
        if (!e) break;
        s = e + 1;
    }
    free(data);
    if (!rc && cnt == 0)
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no measurements (expected infer-bench --json output)", path);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return BATON_OK;
}

void baton_infer_stats_table(FILE *f, const baton_infer_stats *st, size_t n)
{
    fprintf(f, "%-9s %-9s %3s %5s %9s %9s %9s %9s %9s %9s %9s %10s %7s\n", "model", "path", "thr", "batch", "cold ms",
            "first ms", "mean ms", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "images/s", "queries");
    for (size_t i = 0; i < n; i++) {
        const baton_infer_stats *s = &st[i];
        if (s->skipped[0]) {
            fprintf(f, "%-9s %-9s %3d %5d   %s\n", s->model[0] ? s->model : "-", baton_infer_path_name(s->ctx.path),
                    s->ctx.threads, s->ctx.batch, s->skipped);
            continue;
        }
        fprintf(f, "%-9s %-9s %3d %5d %9.2f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f %7llu\n", s->model,
                baton_infer_path_name(s->ctx.path), s->ctx.threads, s->ctx.batch, s->cold_start_ms, s->first_ms,
                s->mean_ms, s->p50_ms, s->p90_ms, s->p95_ms, s->p99_ms, s->per_s, (unsigned long long)s->queries);
    }
}

int baton_infer_stats_csv(const char *path, const baton_infer_stats *st, size_t n, baton_err *err)
{
    baton_buf b = {0};
    char line[1024];
    const char *hdr = "model,threads,batch,path,skipped,cold_start_ms,exec_ms,load_ms,prepare_ms,first_ms,mean_ms,"
                      "p50_ms,p90_ms,p95_ms,p99_ms,min_ms,max_ms,per_s,queries,seconds,flops,gflops,peak_gflops,min_bytes\n";
    int rc = baton_buf_append(&b, hdr, strlen(hdr));
    for (size_t i = 0; i < n && !rc; i++) {
        const baton_infer_stats *s = &st[i];
        int k;
        if (s->skipped[0])
            k = snprintf(line, sizeof line, "%s,%d,%d,%s,%s,,,,,,,,,,,,,,,,,,,\n", s->model, s->ctx.threads,
                         s->ctx.batch, baton_infer_path_name(s->ctx.path), s->skipped);
        else
            k = snprintf(line, sizeof line,
                         "%s,%d,%d,%s,,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.1f,%llu,%.3f,"
                         "%.0f,%.2f,%.1f,%.0f\n",
                         s->model, s->ctx.threads, s->ctx.batch, baton_infer_path_name(s->ctx.path), s->cold_start_ms,
                         s->exec_ms, s->load_ms, s->prepare_ms, s->first_ms, s->mean_ms, s->p50_ms, s->p90_ms,
                         s->p95_ms, s->p99_ms, s->min_ms, s->max_ms, s->per_s, (unsigned long long)s->queries,
                         s->seconds, s->flops, s->gflops, s->peak_gflops, s->min_bytes);
        rc = baton_buf_append(&b, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
    }
    if (rc) rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    else rc = baton_file_write_atomic(path, b.data, b.len, err);
    baton_buf_free(&b);
    return rc;
}
