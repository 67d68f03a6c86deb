/* infer.h — inference: an engine that serves a checkpoint (a plain C reference path and a fast
 * oneDNN path), the latency benchmark behind `baton infer-bench`, the instance catalog, the cost
 * model and the planners behind `baton plan infer|train`.
 *
 * Engine. baton_infer_open loads a checkpoint folder (or the newest verified one under a folder)
 * for a fixed batch size. Path REFERENCE runs nn's reference kernels in evaluation mode. Path FAST
 * compiles the model once into oneDNN primitives: batch norm folded into the preceding
 * convolution, ReLU and the residual add fused as post-ops (eltwise, sum), every primitive created
 * with the layouts it prefers (format_tag any), weights reordered into them once at load, all
 * activation buffers allocated once. baton_infer_run then allocates nothing. Path GPU exists only
 * in a CUDA build (none today: opening it fails with "no CUDA build"). Input is the model's input
 * (normalised float32, NCHW, batch × C × H × W); output is batch × classes logits.
 *
 * Threads: the fast path runs on oneDNN's OpenMP threads. baton_infer_set_threads sets how many for
 * engines created and run afterwards (a primitive is tuned for the thread count it was made with).
 *
 * Benchmark (src/infer/bench.c): one context = (threads, batch, path). Cold start = process start
 * → checkpoint verified and loaded → primitives ready; first = the first query once ready; then a
 * warm-up, then single-stream queries (one at a time, back to back) until both a minimum count and
 * a minimum duration are met (MLPerf's single-stream rule), or a cap on the duration. Percentiles
 * are nearest-rank (the smallest latency with at least q of the samples at or below it).
 *
 * Catalog (src/infer/catalog.c): CSV, one instance or accelerator type per row; the built-in
 * default holds the seed articles' types and today's families and is shipped as docs/catalog.csv. Configurations are
 * "TYPE" or "INSTANCE+ACCELERATOR" (price added, the accelerator's FLOPS). Cost per 100k inferences
 * (src/infer/cost.c): sequential = $/h / 3600 × latency_s × 100 000; throughput-bound =
 * $/h × 100 000 / (3600 × inferences/s).
 *
 * Layering: infer depends on ckpt, nn and util. Errors are values with messages naming the file,
 * line and field; nothing here exits. */
#ifndef BATON_INFER_H
#define BATON_INFER_H

#include <stdint.h>
#include <stdio.h>

#include "baton/nn.h"
#include "baton/util.h"

/* ---------------------------------------------------------------------------------------------
 * Engine (src/infer/engine.c; the fast path is nn's folded inference plan, src/nn/fold_dnnl.c)
 * --------------------------------------------------------------------------------------------- */
/* FAST_BF16: the fast path in bfloat16 (nn's plan with BATON_NN_PRECISION_BF16; refused where the
 * CPU lacks bfloat16) */
enum { BATON_INFER_REFERENCE = 0, BATON_INFER_FAST = 1, BATON_INFER_GPU = 2, BATON_INFER_FAST_BF16 = 3 };

const char *baton_infer_path_name(int path);              /* "reference", "fast", "gpu", "fast-bf16" */
int baton_infer_path_parse(const char *s, int *path);     /* BATON_OK / BATON_ERR_ARG */
/* Why the GPU path is unavailable ("no CUDA build"), or NULL when it is available. */
const char *baton_infer_gpu_unavailable(void);
/* OpenMP threads for the fast path from now on (n >= 1). */
void baton_infer_set_threads(int n);

typedef struct baton_infer_info {
    char model[32];
    int in_c, in_h, in_w, classes;
    int batch, path;
    double flops;            /* per image: 2 × multiply-adds of convolutions and linear layers */
    uint64_t step;           /* checkpoint step (0 when built from a model in memory) */
    char checkpoint[4096];   /* the folder loaded ("" when built from a model) */
    int nnorm;               /* channels with normalisation figures in state.json (0: none) */
    float mean[4], std[4];
    double load_ms;          /* checkpoint verified, read, loaded into a model */
    double prepare_ms;       /* fast path: folding, primitive creation, weight reorders */
    int nprims;              /* fast path: primitives run per query (after fusion) */
    size_t bytes;            /* fast path: packed weights + activation buffers + scratchpad */
    double min_bytes;        /* the bytes one query (of `batch` images) must move at least: every
                                weight once, the input and the logits (FP32) */
    int nlayers;             /* the model's layers (the reference path runs one kernel each) */
} baton_infer_info;

typedef struct baton_infer_engine baton_infer_engine;

int baton_infer_open(const char *ckpt, int path, int batch, baton_infer_engine **out, baton_err *err);
/* The same from a model in memory (weights copied or packed; m may be freed afterwards). */
int baton_infer_from_model(const baton_nn_model *m, int path, int batch, baton_infer_engine **out,
                           baton_err *err);
/* x: batch × C × H × W floats; logits: batch × classes floats (written). */
int baton_infer_run(baton_infer_engine *e, const float *x, float *logits, baton_err *err);
const baton_infer_info *baton_infer_engine_info(const baton_infer_engine *e);
void baton_infer_close(baton_infer_engine *e);

/* Model FLOPs per image (2 × multiply-adds of conv and linear layers), as the PyTorch peer counts. */
double baton_infer_model_flops(const baton_nn_model *m);
/* Peak FP32 FLOP/s of this machine on `threads` threads, measured with an FMA loop (AVX-512,
 * AVX2+FMA or scalar, whichever the CPU has) for about `seconds`; in GFLOP/s. */
double baton_infer_peak_gflops(int threads, double seconds);

/* ---------------------------------------------------------------------------------------------
 * Benchmark (src/infer/bench.c, src/infer/report.c)
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_infer_ctx {
    int threads, batch, path;
} baton_infer_ctx;

typedef struct baton_infer_bench_opts {
    uint64_t min_queries;    /* default 200 */
    double min_seconds;      /* default 1 */
    double max_seconds;      /* stop a context after this long even if min_queries is not met (30) */
    uint64_t warmup;         /* queries after the first, before timing (default 10) */
    int peak;                /* also measure the machine's peak FLOP/s on the context's threads */
} baton_infer_bench_opts;

void baton_infer_bench_opts_default(baton_infer_bench_opts *o);

typedef struct baton_infer_stats {
    baton_infer_ctx ctx;
    char model[32];
    char skipped[64];        /* non-empty: the context did not run, and why ("no CUDA build") */
    double cold_start_ms;    /* process start → ready (exec_ms + load_ms + prepare_ms + the rest) */
    double exec_ms;          /* process start → main (loader, shared libraries); 0 in-process */
    double load_ms, prepare_ms;
    double first_ms;         /* the first query once ready */
    uint64_t queries;        /* timed queries */
    double seconds;          /* their total time */
    double mean_ms, p50_ms, p90_ms, p95_ms, p99_ms, min_ms, max_ms;
    double per_s;            /* images per second: batch × queries / seconds */
    double flops;            /* per image */
    double gflops;           /* achieved: flops × batch / mean */
    double peak_gflops;      /* measured peak on ctx.threads (0: not measured) */
    double min_bytes;        /* per query: weights + input + logits (baton_infer_info; 0 unknown) */
    double kernels;          /* per query: the primitives the fast path runs, or the model's layers
                                (what a device would launch; 0 unknown) */
} baton_infer_stats;

/* Run one context: set the threads, open the checkpoint, time the first query, warm up, run the
 * timed loop. t0 is the process start on baton_now()'s clock (<= 0: now, so the cold start then
 * covers only the load); t_main when main() started (<= 0: unknown). A GPU context is reported as
 * skipped (BATON_OK) in a build without CUDA. */
int baton_infer_bench_context(const char *ckpt, const baton_infer_ctx *ctx, const baton_infer_bench_opts *o,
                              double t0, double t_main, baton_infer_stats *st, baton_err *err);

/* Nearest-rank percentile of n ascending values (q in [0, 1]). */
double baton_infer_percentile(const double *sorted, size_t n, double q);

/* One JSON object per context, no newline (threads, batch, path, cold_start_ms, first_ms, p50_ms,
 * p90_ms, p99_ms, mean_ms, per_s and the rest of the fields). Returns a malloc'd string. */
char *baton_infer_stats_json(const baton_infer_stats *st);
/* Parse such a line; name and line number go into messages. */
int baton_infer_stats_parse(const char *name, size_t line, const char *text, baton_infer_stats *st,
                            baton_err *err);
/* Read a file of such lines (blank lines and lines not starting with '{' are skipped). *out is
 * malloc'd. */
int baton_infer_stats_load(const char *path, baton_infer_stats **out, size_t *n, baton_err *err);
/* The human table, one row per context. */
void baton_infer_stats_table(FILE *f, const baton_infer_stats *st, size_t n);
/* CSV with a header row (written crash-safely). */
int baton_infer_stats_csv(const char *path, const baton_infer_stats *st, size_t n, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Catalog (src/infer/catalog.c)
 *   CSV with a header naming its columns (any order; docs/catalog.csv and docs/infer.md list them):
 *   name, kind, on_demand_per_h required; spot_per_h, interruption, train_speed, vcpus, memory_gib,
 *   chip, chips, fp32_tflops, fp16_tflops, mem_bw_gbs, project, status, notes optional.
 *   kind: cpu (an instance whose CPUs run the model), gpu (an instance with GPUs), neuron (an
 *   instance with AWS Inferentia/Trainium chips), accelerator (attached to an instance: $/h added,
 *   its figures run the model). The chip figures (TFLOPS, memory bandwidth) are per chip. Empty
 *   numbers are unknown. '#' lines and blank lines are comments. Every malformed row is an error
 *   naming its line.
 * --------------------------------------------------------------------------------------------- */
enum { BATON_CAT_CPU = 0, BATON_CAT_GPU = 1, BATON_CAT_ACCEL = 2, BATON_CAT_NEURON = 3 };
const char *baton_infer_kind_name(int kind);   /* "cpu", "gpu", "accelerator", "neuron" */

typedef struct baton_infer_catalog_entry {
    char name[48];
    int kind;
    double on_demand;        /* $/h */
    double spot;             /* $/h, < 0 unknown */
    int vcpus;               /* 0 unknown */
    double memory_gib;       /* < 0 unknown */
    char chip[48];           /* what runs the model ("NVIDIA T4", "Intel Xeon 8488C"); "" unknown */
    int chips;               /* how many per instance (default 1) */
    double tflops;           /* FP32 per chip, < 0 unknown */
    double fp16_tflops;      /* FP16/BF16 dense per chip, < 0 unknown or none */
    double mem_bw_gbs;       /* memory bandwidth per chip, GB/s, < 0 unknown */
    int project;             /* plan infer may project measurements onto it (0: it would be invented) */
    int interruption;        /* Spot Advisor bucket: 0 <5 %, 1 5-10 %, 2 10-15 %, 3 15-20 %, 4 >20 %; -1 unknown */
    double train_speed;      /* training throughput relative to c5.xlarge; < 0 unknown */
    int retired;             /* no longer sold: kept so that older studies reproduce; never picked unless asked */
    char notes[160];
    size_t line;
    double call_us;          /* a device: the least one query costs there (copies in and out, the
                                wait), microseconds; < 0 unknown (CPUs: none, the model runs in place) */
    double launch_us;        /* a device: the cost of each kernel launched, microseconds; < 0 unknown */
} baton_infer_catalog_entry;

typedef struct baton_infer_catalog {
    baton_infer_catalog_entry *e;
    size_t n;
} baton_infer_catalog;

const char *baton_infer_catalog_builtin_csv(void);
/* The built-in catalog, parsed once (shared, read-only; empty only if the built-in text were bad). */
const baton_infer_catalog *baton_infer_catalog_builtin(void);
/* Spot Advisor interruption buckets: "<5%", "5-10%", "10-15%", "15-20%", ">20%" (parse also takes
 * them without the %, and lt5 / gt20); parse returns 0 and *b 0..4, or -1. */
const char *baton_infer_bucket_name(int b);
int baton_infer_bucket_parse(const char *s, int *b);
int baton_infer_catalog_parse(const char *name, const char *text, size_t len, baton_infer_catalog *c, baton_err *err);
/* path NULL: the built-in default. */
int baton_infer_catalog_load(const char *path, baton_infer_catalog *c, baton_err *err);
void baton_infer_catalog_free(baton_infer_catalog *c);
const baton_infer_catalog_entry *baton_infer_catalog_find(const baton_infer_catalog *c, const char *name);
/* One JSON object (type, kind, prices, train_speed, interruption, vcpus, memory_gib, chip, chips,
 * fp32_tflops, fp16_tflops, mem_bw_gbs, project, status, notes; unknown numbers null), malloc'd. */
char *baton_infer_catalog_entry_json(const baton_infer_catalog_entry *e);

/* A configuration: an instance, or an instance with an accelerator attached. */
typedef struct baton_infer_config {
    char name[100];          /* "c5.large" or "c5.large+eia1.medium" */
    int kind;                /* the instance's kind (BATON_CAT_CPU / GPU) */
    int accel;               /* 1 with an accelerator */
    double on_demand, spot;  /* summed; spot < 0 when either part is unknown */
    int vcpus;
    /* what runs the model: the accelerator's figures, else the instance's own chip(s) */
    int run_kind;            /* BATON_CAT_* of that part */
    char chip[48];
    int chips;
    double tflops, fp16_tflops, mem_bw_gbs;   /* per chip; < 0 unknown */
    double call_us, launch_us;                /* a device's floors per query and per kernel; < 0 unknown */
    int project;             /* both parts allow projection */
    char notes[160];         /* the notes of the part that forbids it ("" otherwise) */
    int retired;             /* the instance or the accelerator is retired */
} baton_infer_config;

int baton_infer_catalog_config(const baton_infer_catalog *c, const char *name, baton_infer_config *cfg, baton_err *err);
/* Every configuration the catalog describes: each instance, then each cpu instance with each
 * accelerator; retired ones only with include_retired. *out is malloc'd. */
int baton_infer_catalog_configs(const baton_infer_catalog *c, int include_retired, baton_infer_config **out, size_t *n,
                                baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Cost and the inference plan (src/infer/cost.c, src/infer/plan_infer.c)
 * --------------------------------------------------------------------------------------------- */
double baton_cost_sequential(double price_per_h, double latency_s);   /* $ per 100k inferences */
double baton_cost_throughput(double price_per_h, double per_s);       /* $ per 100k inferences */

/* A latencies file (CSV with a header row; columns by name, in any order):
 *   configuration (required)  a catalog configuration, e.g. c5.large+eia1.medium
 *   mean_ms (required)        mean latency of one query
 *   p90_ms, per_s, batch      optional (P90 defaults to the mean, per_s to batch / mean)
 *   price_per_h               optional: overrides the catalog's on-demand price
 *   label, note               optional free text (no commas) */
typedef struct baton_latency_row {
    char config[100];
    char label[64];
    double mean_ms, p90_ms, per_s, price_per_h;   /* p90_ms / price_per_h < 0: absent */
    int batch;
    size_t line;
} baton_latency_row;

int baton_latencies_parse(const char *name, const char *text, size_t len, baton_latency_row **out, size_t *n,
                          baton_err *err);
int baton_latencies_load(const char *path, baton_latency_row **out, size_t *n, baton_err *err);

enum { BATON_SRC_MEASURED = 0, BATON_SRC_PROJECTED = 1, BATON_SRC_FILE = 2 };

typedef struct baton_plan_row {
    char config[100];
    char context[64];        /* "lenet fast t=2 b=1", or the file's label */
    char basis[128];         /* where the figures come from: "measured here", "from file",
                                "15.7 TFLOPS x 3.1 % eff", "memory: 0.25 MB at 900 GB/s", ... */
    int source;              /* BATON_SRC_* */
    int p90_from_mean;       /* the P90 column is the mean (no P90 known) */
    double mean_ms, p90_ms, per_s;
    double efficiency;       /* FLOP efficiency measured here (achieved / peak) the row rests on; 0 unknown */
    double floor_ms;         /* projected: the memory-bandwidth floor (min_bytes / bandwidth); 0 none */
    int at_floor;            /* projected: the FLOP estimate was below the floor and was raised to it */
    double call_ms;          /* projected onto a device: what a real call adds (the catalog's call_us +
                                kernels x launch_us), included in mean_ms and p90_ms; 0 none */
    double price_per_h;      /* < 0: no price known (not a candidate) */
    double cost_seq, cost_thr;   /* $ per 100k; < 0 when unknown */
    int meets;               /* P90 <= SLO */
    int retired;             /* a configuration that can no longer be bought (never the pick unless
                                include_retired) */
} baton_plan_row;

/* A configuration plan infer did not project onto, and why (the catalog's notes, or what it lacks). */
typedef struct baton_plan_skip {
    char config[100];
    char reason[160];
} baton_plan_skip;

typedef struct baton_plan_infer_opts {
    double slo_p90_ms;       /* <= 0: no SLO (every row meets it) */
    const char *here;        /* catalog configuration of this machine, or NULL */
    int project;             /* project measured rows onto the other catalog configurations */
    int include_retired;     /* project onto and pick retired configurations too */
    int all;                 /* table, JSON: every row (each context), not one per configuration */
} baton_plan_infer_opts;

typedef struct baton_plan_infer {
    baton_plan_row *rows;
    size_t n;
    long pick;               /* index of the cheapest row meeting the SLO, -1 none */
    baton_plan_skip *skipped;    /* configurations not projected onto (once each) */
    size_t nskipped;
    char note[160];          /* why nothing was projected at all ("" when something was or none asked) */
} baton_plan_infer;

/* Rows from measurements here (stats: skipped contexts ignored). A measured context is projected
 * onto every current catalog configuration (retired ones too with include_retired) whose entry
 * allows it (project: yes) and has an FP32 figure: latency = model FLOPs x batch / (efficiency x
 * TFLOPS), the efficiency measured here (achieved / peak_gflops) and never above 1 — no other
 * machine is assumed to use its FLOPs better than this one did — and never below the floor the
 * chip's memory bandwidth sets for the bytes a query must move (stats.min_bytes: weights, input,
 * logits). A GPU, Neuron chip or accelerator is projected onto only with both figures known; the
 * throughput of an instance with several chips counts one replica per chip. Configurations that
 * are not projected onto are listed in p->skipped with the reason. */
int baton_plan_infer_measured(const baton_infer_catalog *c, const baton_infer_stats *st, size_t n,
                              const baton_plan_infer_opts *o, baton_plan_infer *p, baton_err *err);
/* Rows from a latencies file. */
int baton_plan_infer_file(const baton_infer_catalog *c, const baton_latency_row *r, size_t n,
                          const baton_plan_infer_opts *o, baton_plan_infer *p, baton_err *err);
void baton_plan_infer_free(baton_plan_infer *p);
/* The rows to show, as indices into p->rows (idx has room for p->n): the pick first, then by
 * throughput-bound cost per 100k (unpriced rows last, by P90); one row per configuration (its
 * cheapest meeting the SLO, else its fastest) unless all. Returns how many. */
size_t baton_plan_infer_order(const baton_plan_infer *p, int all, size_t *idx);
/* The human table (rows in that order, then what was not projected and why, then the pick). */
void baton_plan_infer_table(FILE *f, const baton_plan_infer *p, const baton_plan_infer_opts *o);
/* The same as JSON lines: one per row shown, one per configuration not projected
 * ({"config","source":"not projected","reason"}), then {"pick":...}. */
void baton_plan_infer_json(FILE *f, const baton_plan_infer *p, const baton_plan_infer_opts *o);
/* Pareto chart (log-log): P90 latency against throughput-bound cost per 100k, one point per
 * configuration (current ones only unless include_retired), measured, projected and file points
 * drawn with different markers, the Pareto front joined and only its points labelled. */
int baton_plan_infer_svg(const char *path, const baton_plan_infer *p, const baton_plan_infer_opts *o,
                         baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Training plan (src/infer/plan_train.c)
 * --------------------------------------------------------------------------------------------- */
/* The checkpoint intervals of Young and Daly and the mean time between interruptions of a monthly
 * rate are ckpt.h's (baton_ckpt_young_interval, baton_ckpt_daly_interval, baton_ckpt_mtbi_hours). */
/* Daly's expected wall time to finish `work` seconds of computation with checkpoints every tau
 * seconds, each costing delta, interruptions with mean time between them mtbi and a restart cost
 * of restart seconds: M·e^(R/M)·(e^((τ+δ)/M) − 1)·work/τ. */
double baton_daly_wall(double work, double tau, double delta, double mtbi, double restart);

typedef struct baton_plan_train_opts {
    double samples_per_s;    /* measured here (required) */
    double here_gflops;      /* the FLOP/s that produced it (peak of this machine); <= 0: none */
    const char *here;        /* catalog configuration of this machine, or NULL */
    double dataset;          /* samples per epoch */
    double epochs;
    double interrupt_month;  /* fraction of spot instances reclaimed per month */
    double ckpt_seconds;     /* δ: blocking cost of one checkpoint */
    double restart_seconds;  /* R: replacement start-up and resume */
    double spot_discount;    /* spot price = on-demand × (1 − this) when the catalog has none */
    int bf16;                /* samples_per_s was measured with --precision bf16: projected by the
                                catalog's bf16 figures (fp16_tflops) from the `here` type's, onto
                                the types that have one (the others cannot run it) */
} baton_plan_train_opts;

typedef struct baton_plan_train_row {
    char config[100];
    int source;              /* MEASURED (the --here type) or PROJECTED */
    int spot_estimated;      /* spot price derived from spot_discount */
    double samples_per_s;
    double hours;            /* uninterrupted compute */
    double od_cost;          /* on-demand: hours × price */
    double spot_price, tau_s, overhead, spot_hours, spot_cost;
    int worth_it;            /* overhead <= 100 %: checkpoints, lost work and restarts cost less than
                                the training itself (else the type is too fast for this job's size) */
} baton_plan_train_row;

typedef struct baton_plan_train {
    baton_plan_train_row *rows;
    size_t n;
    double mtbi_h, tau_young_s;
    long pick;               /* the row with the lowest spot cost among those worth it; -1: none */
    long pick_od;            /* the row with the lowest on-demand cost; -1: none */
} baton_plan_train;

int baton_plan_train_run(const baton_infer_catalog *c, const baton_plan_train_opts *o, baton_plan_train *p,
                         baton_err *err);
void baton_plan_train_free(baton_plan_train *p);
void baton_plan_train_table(FILE *f, const baton_plan_train *p, const baton_plan_train_opts *o);
char *baton_plan_train_row_json(const baton_plan_train_row *r);
/* The plan as one JSON document, a row per line: {"rows":[...],"mtbi_h":H,"pick":TYPE|null,
 * "pick_on_demand":TYPE|null} (baton_json_write_lines; mtbi_h -1: no interruptions). */
void baton_plan_train_json(FILE *f, const baton_plan_train *p);

#endif
