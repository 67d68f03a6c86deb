/* cmd_run.c — `baton run [JOBFILE]`, the main job. With no job file it runs the built-in demo.
 * Today the demo is the data path: pack Fashion-MNIST (both splits) into RecordIO shards, verify
 * every byte of them, then feed the training split through the decode pipeline once in each input
 * mode (file, pipe, mount, cache) and print the seed's table. The spot-training demo replaces it
 * when the training engine and the fleet supervisor land. Job files arrive with the fleet
 * supervisor. */
#include "baton/img.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static int demo_split(const char *work, const char *split, baton_err *err)
{
    char out[4096];
    if (baton_path_join(out, sizeof out, work, split, err)) return err->code;
    baton_pack_opts o;
    baton_pack_opts_default(&o);
    o.from = "fashion-mnist";
    o.split = split;
    o.out_dir = out;
    o.shard_mb = 16;
    o.progress = 1;
    baton_manifest m;
    double t0 = baton_now();
    if (baton_pack(&o, &m, err)) return err->code;
    printf("packed   %-5s %6llu images, %zu shard(s), %.2f s -> %s\n", split,
           (unsigned long long)m.samples, m.nshards, baton_now() - t0, out);
    baton_manifest_free(&m);

    baton_inspect_report rep;
    if (baton_inspect(out, 1, 1, &rep, err)) return err->code;
    for (size_t i = 0; i < rep.nerrors; i++) fprintf(stderr, "baton run: %s\n", rep.errors[i]);
    printf("verified %-5s %6llu records, %.1f MB, %llu problem(s), %.2f s (%.0f MB/s)\n", split,
           (unsigned long long)rep.records, (double)rep.bytes / 1e6,
           (unsigned long long)rep.nerrors_total, rep.seconds,
           rep.seconds > 0 ? (double)rep.bytes / 1e6 / rep.seconds : 0.0);
    int bad = rep.nerrors_total != 0;
    baton_inspect_free(&rep);
    return bad ? baton_err_set(err, BATON_ERR_CORRUPT, "%s: verification failed", out) : BATON_OK;
}

int cmd_run(int argc, char **argv)
{
    const char *work = "baton-demo";
    const struct cli_opt opts[] = {
        {"work", CLI_STR, &work, "working folder for the demo (default ./baton-demo)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("run", "[JOBFILE] [--work DIR]", opts, argc, argv, pos, 1, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos == 1) {
        fprintf(stderr, "baton run: job files are read by the fleet supervisor, which this build "
                        "does not have yet; run without a JOBFILE for the built-in demo\n");
        return CLI_USAGE;
    }
    baton_err err = {0};
    if (baton_mkdir_p(work, &err)) return cli_fail("run", &err);
    printf("baton demo: Fashion-MNIST -> RecordIO shards -> verified (work folder %s)\n", work);
    if (demo_split(work, "train", &err) || demo_split(work, "test", &err)) return cli_fail("run", &err);

    baton_bench_io_opts bo;
    memset(&bo, 0, sizeof bo);
    char data[4096], copies[4096];
    if (baton_path_join(data, sizeof data, work, "train", &err) ||
        baton_path_join(copies, sizeof copies, work, "copies", &err))
        return cli_fail("run", &err);
    bo.uri = data;
    bo.work_dir = copies;
    bo.epochs = 2;
    baton_store_opts_default(&bo.store);
    baton_fetch_opts_default(&bo.fetch);
    baton_pipeline_opts_default(&bo.pipe);
    bo.pipe.crop_pad = 2;
    bo.pipe.flip = 1;
    bo.progress = 1;
    printf("\ninput modes, 2 epochs through the decode pipeline (crop+flip+normalise, batch %u, %d workers):\n",
           bo.pipe.batch, bo.pipe.workers);
    printf("%-6s %9s %11s %9s\n", "mode", "launch_s", "samples/s", "total_s");
    for (int m = 0; m < 4; m++) {
        baton_bench_io_result r;
        if (baton_bench_io_run(&bo, (baton_io_mode)m, &r, &err)) return cli_fail("run", &err);
        printf("%-6s %9.3f %11.0f %9.2f\n", baton_io_mode_name(r.mode), r.launch_s, r.samples_per_s, r.total_s);
    }
    printf("done: inspect with `baton inspect %s/train`\n", work);
    return CLI_OK;
}
