/* cmd_bench_io.c — `baton bench-io`: each input mode through the full decode pipeline (or, with
 * --no-decode, the data path alone); prints the seed's table (launch time, samples/s, epoch times,
 * N-epoch total, and what the store sent for each epoch as a multiple of the dataset's size), one
 * JSON line per mode with --json, and an SVG chart of cumulative time against epochs. The option
 * table (bench_io_options), the runs, the printer (bench_io_print). */
#include "baton/img.h"
#include "cli.h"

#include <cJSON.h>

#include <stdlib.h>
#include <string.h>

/* One mode's result as one JSON object (NULL when out of memory). */
static cJSON *result_json(const char *name, const baton_bench_io_result *r)
{
    cJSON *j = cJSON_CreateObject(), *a;
    cJSON_AddStringToObject(j, "mode", name);
    cJSON_AddNumberToObject(j, "launch_s", r->launch_s);
    cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
    if ((a = cJSON_AddArrayToObject(j, "epoch_s")))
        for (uint64_t e = 0; e < r->epochs; e++) cJSON_AddItemToArray(a, cJSON_CreateNumber(r->epoch_s[e]));
    cJSON_AddNumberToObject(j, "total_s", r->total_s);
    cJSON_AddNumberToObject(j, "samples", (double)r->samples);
    cJSON_AddNumberToObject(j, "open_s", r->open_s);
    cJSON_AddNumberToObject(j, "bytes_read", (double)r->bytes_read);
    cJSON_AddNumberToObject(j, "retries", (double)r->retries);
    if (r->record_requests) cJSON_AddNumberToObject(j, "record_requests", (double)r->record_requests);
    cJSON_AddNumberToObject(j, "launch_cpu_s", r->launch_cpu_s);
    if ((a = cJSON_AddArrayToObject(j, "epoch_cpu_s")))
        for (uint64_t e = 0; e < r->epochs; e++) cJSON_AddItemToArray(a, cJSON_CreateNumber(r->epoch_cpu_s[e]));
    cJSON_AddNumberToObject(j, "dataset_bytes", (double)r->dataset_bytes);
    cJSON_AddNumberToObject(j, "bytes_fetched", (double)r->bytes_fetched);
    cJSON_AddNumberToObject(j, "open_fetched", (double)r->open_fetched);
    if ((a = cJSON_AddArrayToObject(j, "epoch_fetched")))
        for (uint64_t e = 0; e < r->epochs; e++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)r->epoch_fetched[e]));
    return j;
}

/* What the command prints, besides the results: where and how. */
typedef struct bench_io_out {
    const char *svg;
    int json;
    baton_io_mode modes[4];
    int nmodes;
} bench_io_out;

/* The option table and its checks → o and out. CLI_OK to run, else the exit status (help: CLI_OK
 * with *stop set). */
static int bench_io_options(int argc, char **argv, baton_bench_io_opts *o, bench_io_out *out, int *stop)
{
    memset(o, 0, sizeof *o);
    baton_store_opts_default(&o->store);
    baton_fetch_opts_default(&o->fetch);
    baton_pipeline_opts_default(&o->pipe);
    const char *mode = "all", *layout = "nchw";
    int quiet = 0, workers = o->pipe.workers, batch = (int)o->pipe.batch, pad = 2, noflip = 0;
    int inflight = o->fetch.inflight, u8 = 0;
    struct cli_crop cc = {0};
    struct cli_crop_out co;
    double chunk_mb = (double)o->fetch.chunk_bytes / 1048576.0;
    o->epochs = 3;
    o->work_dir = "bench-io-work";
    out->svg = "bench-io.svg";
    out->json = 0;
    const struct cli_opt opts[] = {
        {"data", CLI_STR, &o->uri, "dataset URI: path, file://, http(s)://, s3://bucket/prefix"},
        {"mode", CLI_STR, &mode, "file | pipe | mount | cache | all (default all)"},
        {"epochs", CLI_U64, &o->epochs, "epochs per mode (default 3)"},
        {"mount-path", CLI_STR, &o->mount_path, "the same dataset as a (mounted) path, for mount mode"},
        {"work-dir", CLI_STR, &o->work_dir, "local copies for file/cache mode (default ./bench-io-work; removed after)"},
        {"keep-work", CLI_FLAG, &o->keep_work, "keep those copies"},
        {"workers", CLI_INT, &workers, "decode threads (default 2)"},
        {"batch", CLI_INT, &batch, "batch size (default 128)"},
        {"crop-pad", CLI_INT, &pad, "random crop padding (default 2)"},
        {"no-flip", CLI_FLAG, &noflip, "no random horizontal flip"},
        CLI_CROP_OPTS(cc),
        {"uint8", CLI_FLAG, &u8, "batches of un-normalised uint8 pixels (what a GPU normalises itself)"},
        {"reference", CLI_FLAG, &o->pipe.reference, "the pipeline's plain reference path (crops: whole images decoded at full size)"},
        {"no-decode", CLI_FLAG, &o->no_decode, "the data path alone: records read in order, not decoded"},
        {"layout", CLI_STR, &layout, "nchw (default) | nhwc"},
        {"seed", CLI_U64, &o->seed, "order and augmentation seed"},
        {"s3-endpoint", CLI_STR, &o->store.s3_endpoint, "S3 endpoint (else AWS_ENDPOINT_URL)"},
        {"inflight", CLI_INT, &inflight, "concurrent ranged requests (default 4)"},
        {"chunk-mb", CLI_DBL, &chunk_mb, "bytes per ranged request in MiB (default 4)"},
        {"svg", CLI_STR, &out->svg, "chart file (default bench-io.svg)"},
        {"json", CLI_FLAG, &out->json, "one JSON line per mode"},
        {"quiet", CLI_FLAG, &quiet, "no progress line"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    *stop = 0;
    if (cli_parse("bench-io", "--data URI [--mode MODE] [--epochs N] [--json]", opts, argc, argv, pos, 0,
                  &npos, &help)) {
        *stop = 1;
        return help ? CLI_OK : CLI_USAGE;
    }
    if (!o->uri) {
        fprintf(stderr, "baton bench-io: --data is required\n");
        return CLI_USAGE;
    }
    baton_io_mode all[4] = {BATON_MODE_FILE, BATON_MODE_PIPE, BATON_MODE_MOUNT, BATON_MODE_CACHE};
    memcpy(out->modes, all, sizeof all);
    out->nmodes = 4;
    if (strcmp(mode, "all")) {
        if (baton_io_mode_parse(mode, &out->modes[0])) {
            fprintf(stderr, "baton bench-io: --mode '%s': expected file, pipe, mount, cache or all\n", mode);
            return CLI_USAGE;
        }
        out->nmodes = 1;
    }
    if (o->epochs < 1 || o->epochs > BATON_BENCH_MAX_EPOCHS) {
        fprintf(stderr, "baton bench-io: --epochs must be 1..%d\n", BATON_BENCH_MAX_EPOCHS);
        return CLI_USAGE;
    }
    if (workers < 1 || batch < 1 || pad < 0 || inflight < 1 || !(chunk_mb > 0)) {
        fprintf(stderr, "baton bench-io: --workers, --batch, --inflight, --chunk-mb must be positive\n");
        return CLI_USAGE;
    }
    if (cli_crop_finish(&cc, "bench-io", &co)) return CLI_USAGE;
    o->pipe.crop = co.crop;
    o->pipe.size = co.size;
    memcpy(o->pipe.scale, co.scale, sizeof o->pipe.scale);
    memcpy(o->pipe.ratio, co.ratio, sizeof o->pipe.ratio);
    o->pipe.u8 = u8;
    if (co.crop == BATON_CROP_RANDOM_RESIZED || co.crop == BATON_CROP_CENTER) pad = 0;   /* the crop replaces the padding */
    o->pipe.workers = workers;
    o->pipe.batch = (uint32_t)batch;
    o->pipe.crop_pad = (uint32_t)pad;
    o->pipe.flip = !noflip;
    o->pipe.layout = strcmp(layout, "nhwc") ? BATON_LAYOUT_NCHW : BATON_LAYOUT_NHWC;
    o->fetch.inflight = inflight;
    o->fetch.chunk_bytes = (size_t)(chunk_mb * 1048576.0);
    o->progress = !quiet && !out->json;
    return CLI_OK;
}

/* One mode's row of the table. */
static void print_row(const char *name, const baton_bench_io_result *r)
{
    printf("%-6s %9.3f %11.0f %9.2f ", name, r->launch_s, r->samples_per_s, r->total_s);
    for (uint64_t e = 0; e < r->epochs; e++) printf(" %.2f", r->epoch_s[e]);
    printf("   cpu_s");
    for (uint64_t e = 0; e < r->epochs; e++) printf(" %.2f", r->epoch_cpu_s[e]);
    double ds = r->dataset_bytes ? (double)r->dataset_bytes : 1.0;
    printf("   fetched");
    for (uint64_t e = 0; e < r->epochs; e++) printf(" %.2fx", (double)r->epoch_fetched[e] / ds);
    printf(" open %.2fx\n", (double)r->open_fetched / ds);
}

/* The results: the table (or a JSON line per mode) and the chart of cumulative time. */
static int bench_io_print(const bench_io_out *out, const baton_bench_io_result *res, int n, baton_err *err)
{
    if (!out->json)
        printf("%-6s %9s %11s %9s  %s\n", "mode", "launch_s", "samples/s", "total_s",
               "epoch_s, CPU s per epoch, store bytes per epoch (x dataset; open: at launch)");
    baton_svg_series ser[4];
    double xs[4][BATON_BENCH_MAX_EPOCHS + 1], ys[4][BATON_BENCH_MAX_EPOCHS + 1];
    size_t ns = 0;
    for (int i = 0; i < n; i++) {
        const baton_bench_io_result *r = &res[i];
        const char *name = baton_io_mode_name(r->mode);
        if (r->skipped && out->json) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "mode", name);
            cJSON_AddStringToObject(j, "skipped", r->skip_reason);
            cli_print_json(stdout, j);
        } else if (r->skipped) {
            printf("%-6s skipped: %s\n", name, r->skip_reason);
        } else if (out->json) {
            cli_print_json(stdout, result_json(name, r));
        } else {
            print_row(name, r);
        }
        if (r->skipped) continue;
        xs[ns][0] = 0;
        ys[ns][0] = r->launch_s;
        for (uint64_t e = 0; e < r->epochs; e++) {
            xs[ns][e + 1] = (double)(e + 1);
            ys[ns][e + 1] = ys[ns][e] + r->epoch_s[e];
        }
        ser[ns] = (baton_svg_series){name, xs[ns], ys[ns], r->epochs + 1};
        ns++;
    }
    if (ns && baton_svg_lines(out->svg, "baton bench-io: cumulative time (launch at epoch 0)", "epochs", "seconds",
                              ser, ns, err))
        return err->code;
    if (!out->json) printf("chart: %s\n", out->svg);
    return BATON_OK;
}

int cmd_bench_io(int argc, char **argv)
{
    baton_bench_io_opts o;
    bench_io_out out;
    int stop, rc = bench_io_options(argc, argv, &o, &out, &stop);
    if (rc != CLI_OK || stop) return rc;
    baton_bench_io_result res[4];
    baton_err err = {0};
    for (int i = 0; i < out.nmodes; i++)
        if (baton_bench_io_run(&o, out.modes[i], &res[i], &err)) {
            baton_err_prefix(&err, "%s mode", baton_io_mode_name(out.modes[i]));
            return cli_fail("bench-io", &err);
        }
    if (bench_io_print(&out, res, out.nmodes, &err)) return cli_fail("bench-io", &err);
    return CLI_OK;
}
