/* cmd_infer_bench.c — `baton infer-bench --ckpt DIR [--threads LIST] [--batch LIST] [--path LIST]
 * [--runs N] [--seconds S] [--json] [--csv FILE]`: inference latency of a checkpoint, one context
 * per (path, threads, batch).
 *
 * Every context runs in a fresh process (this binary again, with OMP_NUM_THREADS set), so its cold
 * start is real: the clock starts just before the process is spawned and stops when the checkpoint
 * is verified and loaded and the fast path's primitives are ready. The child prints one JSON line;
 * this process collects them into the table, one JSON array and the CSV file. --runs N and
 * --seconds S are the minimum query count and duration (both by default: 200 queries and 1 s; one
 * given alone is the only condition). A GPU context says "no CUDA build" in a build without CUDA. */
#include "baton/infer.h"
#include "cli.h"

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_LIST 16

static int parse_list(const char *what, const char *s, int lo, int hi, int *v, int *n)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < lo || x > hi || (*end && *end != ',') || *n == MAX_LIST) {
            fprintf(stderr, "baton infer-bench: --%s '%s': expected up to %d comma-separated numbers in %d..%d\n", what,
                    s, MAX_LIST, lo, hi);
            return CLI_USAGE;
        }
        v[(*n)++] = (int)x;
        p = *end ? end + 1 : end;
    }
    if (!*n) {
        fprintf(stderr, "baton infer-bench: --%s is empty\n", what);
        return CLI_USAGE;
    }
    return 0;
}

static int parse_paths(const char *s, int *v, int *n)
{
    *n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == 4 || baton_infer_path_parse(t, &v[*n])) {
            fprintf(stderr, "baton infer-bench: --path '%s': expected reference, fast, fast-bf16 and/or gpu\n", s);
            return CLI_USAGE;
        }
        (*n)++;
    }
    return *n ? 0 : CLI_USAGE;
}

/* --precision f32 | bf16 | f32,bf16 on the paths: the fast path as fast, fast-bf16 or both (each
 * once); 0, or CLI_USAGE with the message printed. */
static int apply_precision(const char *s, int *v, int *n)
{
    const int f32 = !strcmp(s, "f32") || !strcmp(s, "f32,bf16") || !strcmp(s, "bf16,f32");
    const int bf16 = !strcmp(s, "bf16") || !strcmp(s, "f32,bf16") || !strcmp(s, "bf16,f32");
    if (!f32 && !bf16) {
        fprintf(stderr, "baton infer-bench: --precision '%s': expected f32, bf16 or f32,bf16\n", s);
        return CLI_USAGE;
    }
    int out[8], k = 0, fast = 0;
    for (int i = 0; i < *n; i++) {
        if (v[i] != BATON_INFER_FAST && v[i] != BATON_INFER_FAST_BF16) out[k++] = v[i];
        else if (!fast++) {
            if (f32) out[k++] = BATON_INFER_FAST;
            if (bf16) out[k++] = BATON_INFER_FAST_BF16;
        }
    }
    if (!fast) {
        fprintf(stderr, "baton infer-bench: --precision applies to the fast path, which --path leaves out\n");
        return CLI_USAGE;
    }
    memcpy(v, out, sizeof(int) * (size_t)k);
    *n = k;
    return 0;
}

/* Run one context in a child process; its JSON line into line. */
static int spawn_context(char **argv0, const char *ckpt, const baton_infer_ctx *c, const baton_infer_bench_opts *o,
                         char *line, size_t cap, baton_err *err)
{
    char ctx[64], t0s[64], runs[32], secs[32], maxs[32], warm[32], omp[32];
    snprintf(ctx, sizeof ctx, "%d:%d:%s", c->threads, c->batch, baton_infer_path_name(c->path));
    snprintf(runs, sizeof runs, "%llu", (unsigned long long)o->min_queries);
    snprintf(secs, sizeof secs, "%.6f", o->min_seconds);
    snprintf(maxs, sizeof maxs, "%.6f", o->max_seconds);
    snprintf(warm, sizeof warm, "%llu", (unsigned long long)o->warmup);
    snprintf(omp, sizeof omp, "OMP_NUM_THREADS=%d", c->threads);
    char *args[] = {argv0[0], "infer-bench", "--ckpt", (char *)ckpt, "--child", ctx, "--t0", t0s,
                    "--runs", runs, "--seconds", secs, "--max-seconds", maxs, "--warmup", warm,
                    o->peak ? "--peak" : NULL, NULL};
    size_t ne = 0;
    while (environ[ne]) ne++;
    char **envp = calloc(ne + 2, sizeof *envp);
    if (!envp) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "OMP_NUM_THREADS=", 16)) envp[k++] = environ[i];
    envp[k++] = omp;
    int fds[2];
    if (pipe(fds)) {
        free(envp);
        return baton_err_set(err, BATON_ERR_IO, "pipe: %s", strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    snprintf(t0s, sizeof t0s, "%.9f", baton_now());
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        return baton_err_set(err, BATON_ERR_IO, "cannot start a benchmark process: %s", strerror(rc));
    }
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fds[0], line + len, cap - 1 - len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
        if (len == cap - 1) break;
    }
    line[len] = 0;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return baton_err_set(err, BATON_ERR_IO, "context %s failed (%s %d; its message is above)", ctx,
                             WIFEXITED(status) ? "exit status" : "signal",
                             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return BATON_OK;
}

static int run_child(const char *ckpt, const char *spec, double t0, double t_main, const baton_infer_bench_opts *o)
{
    baton_infer_ctx c = {0};
    char path[32] = "";
    if (sscanf(spec, "%d:%d:%31s", &c.threads, &c.batch, path) != 3 || baton_infer_path_parse(path, &c.path)) {
        fprintf(stderr, "baton infer-bench: --child '%s': expected THREADS:BATCH:PATH\n", spec);
        return CLI_USAGE;
    }
    baton_infer_stats st;
    baton_err err = {0};
    if (baton_infer_bench_context(ckpt, &c, o, t0, t_main, &st, &err)) return cli_fail("infer-bench", &err);
    char *js = baton_infer_stats_json(&st);
    if (!js) return CLI_ERROR;
    printf("%s\n", js);
    free(js);
    return CLI_OK;
}

/* The contexts to run: paths × thread counts × batch sizes. */
typedef struct grid {
    int thr[MAX_LIST], bat[MAX_LIST], pth[8], nt, nb, np;
} grid;

/* --threads (default: every CPU), --batch, --path and --precision into g; CLI_USAGE (said) when one
 * is wrong. */
static int parse_grid(const char *threads_s, const char *batch_s, const char *paths_s, const char *precision, grid *g)
{
    g->nt = g->nb = g->np = 0;
    if (threads_s) {
        if (parse_list("threads", threads_s, 1, 256, g->thr, &g->nt)) return CLI_USAGE;
    } else {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        g->thr[0] = nc > 0 && nc <= 256 ? (int)nc : 1;
        g->nt = 1;
    }
    if (parse_list("batch", batch_s, 1, 65536, g->bat, &g->nb) || parse_paths(paths_s, g->pth, &g->np)) return CLI_USAGE;
    if (precision && apply_precision(precision, g->pth, &g->np)) return CLI_USAGE;
    return 0;
}

/* Every context of the grid, each in its own process (a GPU path without a GPU: one skipped row
 * per batch size), with progress; st[*n] the results so far when one fails (CLI_ERROR, said). */
static int run_grid(char **argv0, const char *ckpt, const grid *g, const baton_infer_bench_opts *o,
                    baton_infer_stats *st, size_t *n)
{
    baton_err err = {0};
    baton_progress pr;
    baton_progress_start(&pr, "infer-bench contexts", (uint64_t)g->np * g->nt * g->nb);
    int rc = CLI_OK;
    for (int a = 0; a < g->np && rc == CLI_OK; a++) {
        if (g->pth[a] == BATON_INFER_GPU && baton_infer_gpu_unavailable()) {
            for (int b = 0; b < g->nb; b++) {   /* one row per batch size: the GPU's threads do not apply */
                baton_infer_ctx c = {.threads = 1, .batch = g->bat[b], .path = BATON_INFER_GPU};
                baton_infer_bench_context(ckpt, &c, o, 0, 0, &st[(*n)++], &err);
            }
            continue;
        }
        for (int t = 0; t < g->nt && rc == CLI_OK; t++)
            for (int b = 0; b < g->nb && rc == CLI_OK; b++) {
                baton_infer_ctx c = {.threads = g->thr[t], .batch = g->bat[b], .path = g->pth[a]};
                char line[4096];
                if (spawn_context(argv0, ckpt, &c, o, line, sizeof line, &err) ||
                    baton_infer_stats_parse("benchmark process", 1, line, &st[*n], &err)) {
                    rc = cli_fail("infer-bench", &err);
                    break;
                }
                (*n)++;
                baton_progress_update(&pr, *n);
            }
    }
    baton_progress_finish(&pr);
    for (size_t i = 0; i < *n; i++)   /* skipped rows carry the model name of the others */
        if (!st[i].model[0]) {
            for (size_t k = 0; k < *n; k++)
                if (st[k].model[0]) {
                    memcpy(st[i].model, st[k].model, sizeof st[i].model);
                    break;
                }
        }
    return rc;
}

/* The results: one JSON array (a context per line), or the table and what cold start means. */
static void print_results(const baton_infer_stats *st, size_t n, int json)
{
    if (json) {
        printf("[\n");
        for (size_t i = 0; i < n; i++) {
            char *js = baton_infer_stats_json(&st[i]);
            printf("%s%s\n", js ? js : "null", i + 1 < n ? "," : "");
            free(js);
        }
        printf("]\n");
    } else if (n) {
        baton_infer_stats_table(stdout, st, n);
        for (size_t i = 0; i < n; i++)
            if (!st[i].skipped[0]) {
                printf("cold start = process spawn -> checkpoint verified, read, loaded -> primitives ready "
                       "(first context: %.1f ms = %.1f exec + %.1f load + %.1f prepare + rest)\n",
                       st[i].cold_start_ms, st[i].exec_ms, st[i].load_ms, st[i].prepare_ms);
                break;
            }
    }
}

/* The options' own checks; CLI_USAGE (said) when one is wrong. */
static int check_opts(const char *ckpt, double seconds, double max_seconds)
{
    if (!ckpt) {
        fprintf(stderr, "baton infer-bench: --ckpt is required\n");
        return CLI_USAGE;
    }
    if (seconds != -1 && (seconds < 0 || seconds > 86400)) {
        fprintf(stderr, "baton infer-bench: --seconds must be in 0..86400\n");
        return CLI_USAGE;
    }
    if (max_seconds <= 0) {
        fprintf(stderr, "baton infer-bench: --max-seconds must be > 0\n");
        return CLI_USAGE;
    }
    return 0;
}

int cmd_infer_bench(int argc, char **argv)
{
    const double t_main = baton_now();
    const char *ckpt = NULL, *threads_s = NULL, *batch_s = "1", *paths_s = "reference,fast,gpu", *csv = NULL;
    const char *child = NULL, *precision = NULL;
    uint64_t runs = 0, warmup = 10;
    double seconds = -1, max_seconds = 30, t0 = 0;
    int json = 0, peak = 0;
    const struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, "checkpoint folder, or a folder of them (newest that verifies)"},
        {"threads", CLI_STR, &threads_s, "thread counts, e.g. 1,2 (default: all CPUs)"},
        {"batch", CLI_STR, &batch_s, "batch sizes, e.g. 1,8,64 (default 1)"},
        {"path", CLI_STR, &paths_s,
         "reference,fast,gpu (default all three; gpu needs a CUDA build), fast-bf16 (the fast path in bfloat16)"},
        {"precision", CLI_STR, &precision,
         "f32 | bf16 | f32,bf16: the fast path's arithmetic (bf16: fast-bf16 in place of fast; both: side by side; "
         "bf16 needs AVX512-BF16 or AMX)"},
        {"runs", CLI_U64, &runs, "minimum timed queries per context (default 200)"},
        {"seconds", CLI_DBL, &seconds, "minimum timed seconds per context (default 1)"},
        {"max-seconds", CLI_DBL, &max_seconds, "stop a context after this long even below --runs (default 30)"},
        {"warmup", CLI_U64, &warmup, "untimed queries after the first (default 10)"},
        {"peak", CLI_FLAG, &peak, "also measure the peak FP32 FLOP/s on each thread count (for plan infer)"},
        {"json", CLI_FLAG, &json, "one JSON array (a context per line) instead of the table"},
        {"csv", CLI_STR, &csv, "also write the results to this CSV file"},
        /* internal (help NULL: not listed): run one context THREADS:BATCH:PATH and print its JSON line;
         * the parent's clock when it started this process */
        {"child", CLI_STR, &child, NULL},
        {"t0", CLI_DBL, &t0, NULL},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("infer-bench", "--ckpt DIR [--threads 1,2] [--batch 1,8,64] [--path reference,fast,gpu] [--precision f32,bf16] "
                  "[--runs N | --seconds S] [--json] [--csv FILE]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (check_opts(ckpt, seconds, max_seconds)) return CLI_USAGE;
    baton_infer_bench_opts o;
    baton_infer_bench_opts_default(&o);
    if (runs || seconds >= 0) {   /* one condition given alone is the only one */
        o.min_queries = runs ? runs : 1;
        o.min_seconds = seconds >= 0 ? seconds : 0;
    }
    o.max_seconds = max_seconds;
    o.warmup = warmup;
    o.peak = peak;
    if (child) return run_child(ckpt, child, t0, t_main, &o);

    grid g;
    if (parse_grid(threads_s, batch_s, paths_s, precision, &g)) return CLI_USAGE;
    baton_infer_stats st[8 * MAX_LIST * MAX_LIST];
    size_t n = 0;
    baton_err err = {0};
    int rc = run_grid(argv - 1, ckpt, &g, &o, st, &n);
    print_results(st, n, json);
    if (csv && n && baton_infer_stats_csv(csv, st, n, &err) && rc == CLI_OK) rc = cli_fail("infer-bench", &err);
    return rc;
}
