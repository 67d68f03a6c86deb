/* cmd_run.c — `baton run [JOBFILE]`, the main job. With no job file it runs the built-in demo.
 * Today the demo is the data path's first leg: pack Fashion-MNIST (both splits) into RecordIO
 * shards and verify every byte of them; the spot-training demo replaces it when the training
 * engine and the fleet supervisor land. Job files arrive with the fleet supervisor. */
#include "baton/img.h"
#include "cli.h"

#include <stdlib.h>

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
    printf("done: inspect with `baton inspect %s/train`\n", work);
    return CLI_OK;
}
