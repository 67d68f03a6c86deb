/* cmd_plan.c — `baton plan infer|train`: the cheapest way to serve or to train, from the catalog.
 *
 *   baton plan infer --slo-p90-ms X (--ckpt DIR | --measured FILE | --latencies FILE)
 *                    [--here TYPE] [--catalog FILE] [--threads LIST] [--batch LIST] [--all]
 *                    [--include-retired] [--svg FILE] [--json]
 *   baton plan train --samples-per-s X --dataset N --epochs E [--here TYPE] [--here-gflops G]
 *                    [--interrupt-rate PCT] [--ckpt-seconds S] [--restart-seconds S]
 *                    [--spot-discount F] [--catalog FILE] [--json]
 *
 * plan infer with --ckpt measures the fast path here, in this process (with this machine's peak
 * FLOP/s, for the projections); --measured reads `infer-bench --json` output instead; --latencies
 * takes a latencies file (anyone's measurements, e.g. the seed's). */
#include "baton/infer.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_ints(const char *what, const char *s, int lo, int hi, int *v, int *n, int cap)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < lo || x > hi || (*end && *end != ',') || *n == cap) {
            fprintf(stderr, "baton plan: --%s '%s': expected comma-separated numbers in %d..%d\n", what, s, lo, hi);
            return CLI_USAGE;
        }
        v[(*n)++] = (int)x;
        p = *end ? end + 1 : end;
    }
    return *n ? 0 : CLI_USAGE;
}

static int plan_infer(int argc, char **argv)
{
    const char *ckpt = NULL, *measured = NULL, *latencies = NULL, *here = NULL, *catalog = NULL, *svg = NULL;
    const char *threads_s = NULL, *batch_s = "1";
    double slo = 0, seconds = 0.5;
    uint64_t runs = 100;
    int json = 0, no_project = 0, include_retired = 0, all = 0;
    const struct cli_opt opts[] = {
        {"slo-p90-ms", CLI_DBL, &slo, "P90 latency target in ms (0: none, the cheapest overall)"},
        {"ckpt", CLI_STR, &ckpt, "measure this checkpoint's fast path here, now"},
        {"measured", CLI_STR, &measured, "or: read `baton infer-bench --json` output"},
        {"latencies", CLI_STR, &latencies, "or: a latencies file (configuration,mean_ms[,p90_ms,per_s,batch,price_per_h,label])"},
        {"here", CLI_STR, &here, "the catalog configuration of this machine (prices the measured rows)"},
        {"catalog", CLI_STR, &catalog, "catalog CSV (default: the built-in one, docs/catalog.csv)"},
        {"threads", CLI_STR, &threads_s, "with --ckpt: thread counts (default: all CPUs)"},
        {"batch", CLI_STR, &batch_s, "with --ckpt: batch sizes (default 1)"},
        {"runs", CLI_U64, &runs, "with --ckpt: minimum queries per context (default 100)"},
        {"seconds", CLI_DBL, &seconds, "with --ckpt: minimum seconds per context (default 0.5)"},
        {"no-project", CLI_FLAG, &no_project, "do not project measurements onto other catalog hardware"},
        {"include-retired", CLI_FLAG, &include_retired,
         "also project onto and pick configurations no longer sold (e.g. Elastic Inference, as in the seed)"},
        {"all", CLI_FLAG, &all, "every row (each measured context), not one per configuration"},
        {"svg", CLI_STR, &svg, "write the Pareto chart (P90 latency against cost per 100k, log-log)"},
        {"json", CLI_FLAG, &json, "one JSON document: the rows, then the pick"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("plan infer", "--slo-p90-ms X (--ckpt DIR | --measured FILE | --latencies FILE) [--here TYPE] "
                  "[--catalog FILE] [--all] [--include-retired] [--svg FILE] [--json]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if ((ckpt != NULL) + (measured != NULL) + (latencies != NULL) != 1) {
        fprintf(stderr, "baton plan infer: give exactly one of --ckpt, --measured, --latencies\n");
        return CLI_USAGE;
    }
    if (slo < 0 || seconds < 0) {
        fprintf(stderr, "baton plan infer: --slo-p90-ms and --seconds must not be negative\n");
        return CLI_USAGE;
    }
    int thr[16], bat[16], nt = 0, nb = 0;
    if (ckpt) {
        if (threads_s) {
            if (parse_ints("threads", threads_s, 1, 256, thr, &nt, 16)) return CLI_USAGE;
        } else {
            long nc = sysconf(_SC_NPROCESSORS_ONLN);
            thr[0] = nc > 0 && nc <= 256 ? (int)nc : 1;
            nt = 1;
        }
        if (parse_ints("batch", batch_s, 1, 65536, bat, &nb, 16)) return CLI_USAGE;
    }
    baton_err err = {0};
    baton_infer_catalog cat = {0};
    if (baton_infer_catalog_load(catalog, &cat, &err)) return cli_fail("plan infer", &err);
    baton_plan_infer_opts po = {.slo_p90_ms = slo, .here = here, .project = !no_project,
                                .include_retired = include_retired, .all = all};
    baton_plan_infer plan = {0};
    int rc = CLI_OK;
    if (latencies) {
        baton_latency_row *lr = NULL;
        size_t n = 0;
        if (baton_latencies_load(latencies, &lr, &n, &err) || baton_plan_infer_file(&cat, lr, n, &po, &plan, &err))
            rc = cli_fail("plan infer", &err);
        free(lr);
    } else {
        baton_infer_stats *st = NULL;
        size_t n = 0;
        if (measured) {
            if (baton_infer_stats_load(measured, &st, &n, &err)) rc = cli_fail("plan infer", &err);
        } else {
            st = calloc((size_t)nt * nb, sizeof *st);
            baton_infer_bench_opts o;
            baton_infer_bench_opts_default(&o);
            o.min_queries = runs;
            o.min_seconds = seconds;
            o.peak = !no_project;
            baton_progress pr;
            baton_progress_start(&pr, "measuring", (uint64_t)nt * nb);
            for (int t = 0; t < nt && st && rc == CLI_OK; t++)
                for (int b = 0; b < nb && rc == CLI_OK; b++) {
                    baton_infer_ctx c = {.threads = thr[t], .batch = bat[b], .path = BATON_INFER_FAST};
                    if (baton_infer_bench_context(ckpt, &c, &o, 0, 0, &st[n], &err)) rc = cli_fail("plan infer", &err);
                    else baton_progress_update(&pr, ++n);
                }
            baton_progress_finish(&pr);
            if (!st) rc = CLI_ERROR;
        }
        if (rc == CLI_OK && baton_plan_infer_measured(&cat, st, n, &po, &plan, &err)) rc = cli_fail("plan infer", &err);
        free(st);
    }
    if (rc == CLI_OK) {
        if (json) baton_plan_infer_json(stdout, &plan, &po);
        else baton_plan_infer_table(stdout, &plan, &po);
        if (svg && baton_plan_infer_svg(svg, &plan, &po, &err)) rc = cli_fail("plan infer", &err);
    }
    baton_plan_infer_free(&plan);
    baton_infer_catalog_free(&cat);
    return rc;
}

static int plan_train(int argc, char **argv)
{
    baton_plan_train_opts o = {.interrupt_month = 0.10, .ckpt_seconds = 10, .restart_seconds = 120,
                               .spot_discount = 0.5};
    const char *catalog = NULL, *precision = "f32";
    double pct = 10;
    int json = 0;
    const struct cli_opt opts[] = {
        {"samples-per-s", CLI_DBL, &o.samples_per_s, "training throughput measured here (required)"},
        {"precision", CLI_STR, &precision, "f32 | bf16: what --samples-per-s was measured in (bf16: projected "
                                           "by the catalog's bf16 figures onto the types that have them; needs --here)"},
        {"dataset", CLI_DBL, &o.dataset, "samples per epoch (required)"},
        {"epochs", CLI_DBL, &o.epochs, "epochs (required)"},
        {"here", CLI_STR, &o.here, "catalog type of this machine (else its peak is measured)"},
        {"here-gflops", CLI_DBL, &o.here_gflops, "FP32 GFLOP/s of this machine (default: measured FMA peak)"},
        {"interrupt-rate", CLI_DBL, &pct, "percent of spot instances reclaimed per month (default 10)"},
        {"ckpt-seconds", CLI_DBL, &o.ckpt_seconds, "blocking cost of one checkpoint, seconds (default 10)"},
        {"restart-seconds", CLI_DBL, &o.restart_seconds, "replacement start + resume, seconds (default 120)"},
        {"spot-discount", CLI_DBL, &o.spot_discount, "spot = on-demand x (1 - F) where the catalog has no spot price (0.5)"},
        {"catalog", CLI_STR, &catalog, "catalog CSV (default: the built-in one)"},
        {"json", CLI_FLAG, &json, "one JSON document: the rows, then the picks"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("plan train", "--samples-per-s X --dataset N --epochs E [--here TYPE] [--precision f32|bf16] [--interrupt-rate PCT] "
                  "[--ckpt-seconds S] [--catalog FILE] [--json]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (!(o.samples_per_s > 0) || !(o.dataset > 0) || !(o.epochs > 0)) {
        fprintf(stderr, "baton plan train: --samples-per-s, --dataset and --epochs are required and must be > 0\n");
        return CLI_USAGE;
    }
    if (!(pct >= 0 && pct < 100)) {
        fprintf(stderr, "baton plan train: --interrupt-rate must be a percentage from 0 up to (not including) 100\n");
        return CLI_USAGE;
    }
    if (!(o.spot_discount >= 0 && o.spot_discount < 1) || !(o.ckpt_seconds >= 0) || !(o.restart_seconds >= 0)) {
        fprintf(stderr, "baton plan train: --spot-discount must be in [0, 1); --ckpt-seconds and --restart-seconds >= 0\n");
        return CLI_USAGE;
    }
    if (strcmp(precision, "f32") && strcmp(precision, "bf16")) {
        fprintf(stderr, "baton plan train: --precision must be f32 or bf16\n");
        return CLI_USAGE;
    }
    o.bf16 = !strcmp(precision, "bf16");
    o.interrupt_month = pct / 100;
    baton_err err = {0};
    baton_infer_catalog cat = {0};
    if (baton_infer_catalog_load(catalog, &cat, &err)) return cli_fail("plan train", &err);
    if (o.here_gflops <= 0 && !o.bf16) {
        const baton_infer_catalog_entry *h = NULL;
        if (o.here) {
            char name[100];
            snprintf(name, sizeof name, "%s", o.here);
            h = baton_infer_catalog_find(&cat, name);
        }
        if (!h || h->tflops <= 0) {
            long nc = sysconf(_SC_NPROCESSORS_ONLN);
            o.here_gflops = baton_infer_peak_gflops(nc > 0 ? (int)nc : 1, 0.3);
        }
    }
    baton_plan_train p = {0};
    int rc = CLI_OK;
    if (baton_plan_train_run(&cat, &o, &p, &err)) {
        rc = cli_fail("plan train", &err);
    } else if (json) {   /* one document: the rows (one per line), then the picks */
        baton_plan_train_json(stdout, &p);
    } else {
        baton_plan_train_table(stdout, &p, &o);
        if (o.bf16)
            printf("projected rows scale samples/s by the catalog's bf16 figures (fp16_tflops) against %s's\n", o.here);
        else if (o.here_gflops > 0 && !(o.here && baton_infer_catalog_find(&cat, o.here)))
            printf("projected rows scale samples/s by FP32 TFLOPS against this machine's %.0f GFLOP/s\n",
                   o.here_gflops);
    }
    baton_plan_train_free(&p);
    baton_infer_catalog_free(&cat);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "infer")) return plan_infer(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train")) return plan_train(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: baton plan infer|train [options]   (baton plan infer --help, baton plan train --help)\n");
        return CLI_OK;
    }
    fprintf(stderr, "usage: baton plan infer|train [options]\n");
    return CLI_USAGE;
}
