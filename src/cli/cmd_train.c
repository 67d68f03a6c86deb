/* cmd_train.c — `baton train`: trains a model on a dataset URI with crash-safe checkpoints; with
 * the same --ckpt-dir it resumes from the newest checkpoint that verifies (with --ckpt-uri, every
 * checkpoint is also uploaded, and an empty --ckpt-dir is restored from the upload). Prints one
 * summary line at the end (step, epochs, loss, accuracy, samples/s, the last checkpoint). Watches
 * for interruption notices unless --no-notice: on one it exits 75 after a committed checkpoint. */
#include "baton/train.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_train(int argc, char **argv)
{
    baton_train_opts o;
    baton_train_opts_default(&o);
    const char *mode = NULL;
    int batch = (int)o.batch, threads = 0, quiet = 0, reference = 0, keep = 0, no_notice = 0;
    double every_sec = -1;
    const struct cli_opt opts[] = {
        {"data", CLI_STR, &o.data_uri, "training dataset URI: path, file://, http(s)://, s3://bucket/prefix"},
        {"val", CLI_STR, &o.val_uri, "validation dataset URI, evaluated after each epoch"},
        {"model", CLI_STR, &o.model, "mlp | lenet | resnet8 | resnet20 | resnet56"},
        {"epochs", CLI_U64, &o.epochs, "epochs (required)"},
        {"batch", CLI_INT, &batch, "batch size (default 128)"},
        {"lr", CLI_DBL, &o.lr, "base learning rate (default 0.1 resnet, 0.01 lenet/mlp), cosine schedule"},
        {"seed", CLI_U64, &o.seed, "data order and initialisation seed (default 0)"},
        {"mode", CLI_STR, &mode, "file | pipe | mount | cache (default mount for a path, else pipe)"},
        {"s3-endpoint", CLI_STR, &o.store.s3_endpoint, "S3 endpoint (else AWS_ENDPOINT_URL)"},
        {"ckpt-dir", CLI_STR, &o.ckpt_dir, "checkpoint folder (required); resumes from it"},
        {"ckpt-uri", CLI_STR, &o.ckpt_uri,
         "upload every checkpoint to s3://bucket/prefix (MANIFEST last); restore from it when --ckpt-dir is empty"},
        {"ckpt-every-steps", CLI_U64, &o.ckpt_every, "checkpoint every K steps in the background (0: at the end)"},
        {"ckpt-every-sec", CLI_DBL, &every_sec,
         "checkpoint every S seconds in the background (default 60 unless --ckpt-every-steps is given; 0: off)"},
        {"keep", CLI_INT, &keep, "checkpoints kept (default 3)"},
        {"log", CLI_STR, &o.log_path, "CSV log, one row per epoch (appended)"},
        {"max-steps", CLI_U64, &o.max_steps, "stop at global step K, counted across restarts"},
        {"threads", CLI_INT, &threads, "compute threads (sets OMP_NUM_THREADS)"},
        {"reference", CLI_FLAG, &reference, "use the plain C kernels instead of oneDNN"},
        {"quiet", CLI_FLAG, &quiet, "no progress line"},
        {"no-notice", CLI_FLAG, &no_notice, "ignore interruption notices (metadata service, SIGTERM)"},
        {"progress-file", CLI_STR, &o.progress_file, "keep the current step in FILE (default $BATON_PROGRESS_FILE)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("train",
                  "--data URI [--val URI] --model NAME --epochs N [--batch B] [--lr X] [--seed S] [--mode M] "
                  "--ckpt-dir DIR [--ckpt-uri s3://B/P] [--ckpt-every-steps K | --ckpt-every-sec S] [--log FILE.csv] "
                  "[--max-steps K] [--threads T] [--no-notice]",
                  opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (!o.data_uri || !o.model || !o.ckpt_dir) {
        fprintf(stderr, "baton train: --data, --model and --ckpt-dir are required\n");
        return CLI_USAGE;
    }
    if (o.epochs < 1 || batch < 1 || threads < 0 || keep < 0 || o.lr < 0 || (every_sec < 0 && every_sec != -1)) {
        fprintf(stderr, "baton train: --epochs and --batch must be >= 1; --lr, --threads, --keep, --ckpt-every-sec not negative\n");
        return CLI_USAGE;
    }
    static const char *const models[] = {"mlp", "lenet", "resnet8", "resnet20", "resnet56"};
    int known = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) known |= !strcmp(o.model, models[i]);
    if (!known) {
        fprintf(stderr, "baton train: unknown model '%s': expected mlp, lenet, resnet8, resnet20 or resnet56\n",
                o.model);
        return CLI_USAGE;
    }
    if (mode) {
        if (baton_io_mode_parse(mode, &o.mode)) {
            fprintf(stderr, "baton train: --mode '%s': expected file, pipe, mount or cache\n", mode);
            return CLI_USAGE;
        }
        o.mode_set = 1;
    }
    if (threads > 0) {
        char t[16];
        snprintf(t, sizeof t, "%d", threads);
        setenv("OMP_NUM_THREADS", t, 1);
    }
    if (every_sec >= 0) o.ckpt_every_sec = every_sec;
    else if (o.ckpt_every) o.ckpt_every_sec = 0;   /* the step count chosen replaces the default */
    o.batch = (uint32_t)batch;
    o.keep = keep;
    o.reference_kernels = reference;
    o.progress = !quiet && !getenv("BATON_NO_PROGRESS");
    o.notice = !no_notice;
    if (!o.progress_file) o.progress_file = getenv("BATON_PROGRESS_FILE");

    baton_train_result r;
    baton_err err = {0};
    int rc = baton_train_run(&o, &r, &err);
    if (rc && rc != BATON_STOPPED) return cli_fail("train", &err);
    printf("step %llu, epochs done %llu, loss %.4f, accuracy %.4f", (unsigned long long)r.step,
           (unsigned long long)r.epoch, r.loss, r.accuracy);
    if (r.has_val) printf(", val_loss %.4f, val_accuracy %.4f", r.val_loss, r.val_accuracy);
    printf(", %.0f samples/s (%s)%s%s\n", r.samples_per_s, r.kernels, r.checkpoint[0] ? ", checkpoint " : "",
           r.checkpoint);
    if (rc == BATON_STOPPED) {
        if (r.notice_deadline > 0)
            printf("stopped on a %s notice (%s), %.0f s before the deadline\n", r.notice, r.notice_source,
                   r.notice_margin_s);
        else
            printf("stopped on a %s notice (%s)\n", r.notice, r.notice_source);
        return CLI_INTERRUPTED;
    }
    return CLI_OK;
}
