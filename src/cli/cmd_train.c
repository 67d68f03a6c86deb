/* cmd_train.c — `baton train`: trains a model on a dataset URI with crash-safe checkpoints; with
 * the same --ckpt-dir it resumes from the newest checkpoint that verifies (with --ckpt-uri, every
 * checkpoint is also uploaded, and an empty --ckpt-dir is restored from the upload). Prints one
 * summary line at the end (step, epochs, loss, accuracy, samples/s, the last checkpoint; --json: one
 * object). Watches for interruption notices unless --no-notice: on one (or SIGTERM, or Ctrl-C) it
 * exits 75 after a committed checkpoint; a second Ctrl-C ends it at once. Usage errors exit 2,
 * naming the option and its limits; an explicit 0 is never silently a default. */
#include "baton/train.h"
#include "cli.h"

#include <cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The run's result as one JSON object (NULL when out of memory). */
static cJSON *result_json(const baton_train_result *r, int rc)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "status", rc == BATON_STOPPED ? "stopped" : "done");
    cJSON_AddNumberToObject(j, "step", (double)r->step);
    cJSON_AddNumberToObject(j, "epoch", (double)r->epoch);
    cJSON_AddNumberToObject(j, "epochs", (double)r->epochs);
    cJSON_AddNumberToObject(j, "steps_per_epoch", (double)r->steps_per_epoch);
    cJSON_AddNumberToObject(j, "steps_run", (double)r->steps_run);
    cJSON_AddBoolToObject(j, "resumed", r->resumed);
    cJSON_AddNumberToObject(j, "resumed_step", (double)r->resumed_step);
    cJSON_AddNumberToObject(j, "loss", r->loss);
    cJSON_AddNumberToObject(j, "accuracy", r->accuracy);
    if (r->has_val) {
        cJSON_AddNumberToObject(j, "val_loss", r->val_loss);
        cJSON_AddNumberToObject(j, "val_accuracy", r->val_accuracy);
    }
    cJSON_AddNumberToObject(j, "lr", r->lr);
    cJSON_AddNumberToObject(j, "seconds", r->seconds);
    cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
    cJSON_AddStringToObject(j, "kernels", r->kernels);
    cJSON_AddNumberToObject(j, "rebalances", (double)r->rebalances);
    if (r->ckpt_tau_s > 0) {
        cJSON_AddNumberToObject(j, "ckpt_tau_s", r->ckpt_tau_s);
        cJSON_AddNumberToObject(j, "ckpt_delta_s", r->ckpt_delta_s);
        cJSON_AddNumberToObject(j, "ckpt_mtbi_s", r->ckpt_mtbi_s);
    }
    if (r->world > 1) {
        cJSON_AddNumberToObject(j, "world", r->world);
        cJSON_AddNumberToObject(j, "comm_s_per_step", r->comm_s_per_step);
        cJSON_AddNumberToObject(j, "wait_s_per_step", r->wait_s_per_step);
        cJSON_AddNumberToObject(j, "overlap", r->overlap);
        cJSON_AddNumberToObject(j, "allreduce_mb", r->allreduce_mb);
    }
    cJSON_AddStringToObject(j, "checkpoint", r->checkpoint);
    if (rc == BATON_STOPPED) {
        cJSON_AddStringToObject(j, "notice", r->notice);
        cJSON_AddStringToObject(j, "notice_source", r->notice_source);
        cJSON_AddNumberToObject(j, "notice_margin_s", r->notice_margin_s);
        cli_interruption_json(j, &r->interruption);
    }
    return j;
}

static void print_text(const baton_train_result *r, int rc)
{
    printf("step %llu, epochs done %llu of %llu, loss %.4f, accuracy %.4f", (unsigned long long)r->step,
           (unsigned long long)r->epoch, (unsigned long long)r->epochs, r->loss, r->accuracy);
    if (r->has_val) printf(", val_loss %.4f, val_accuracy %.4f", r->val_loss, r->val_accuracy);
    if (r->steps_run) printf(", %.0f samples/s (%s)", r->samples_per_s, r->kernels);
    else if (rc == BATON_STOPPED) printf(", stopped before a step (at step %llu)", (unsigned long long)r->resumed_step);
    else printf(", nothing left to train (resumed at step %llu)", (unsigned long long)r->resumed_step);
    if (r->world > 1)
        printf(", %d ranks, allreduce %.2f MB/step in %.1f ms (%.0f %% behind backward)", r->world, r->allreduce_mb,
               r->comm_s_per_step * 1e3, r->overlap * 100);
    printf("%s%s\n", r->checkpoint[0] ? ", checkpoint " : "", r->checkpoint);
    if (rc == BATON_STOPPED) {
        if (r->notice_deadline > 0)
            printf("stopped on a %s notice (%s), %.0f s before the deadline\n", r->notice, r->notice_source,
                   r->notice_margin_s);
        else
            printf("stopped on a %s notice (%s)\n", r->notice, r->notice_source);
        cli_interruption_print(stdout, &r->interruption);
        /* Open MPI's mpirun, when it is the one signalled (Ctrl-C, SIGTERM), reports 1 for the job
         * it ended whatever its ranks return: say so where the user looks */
        if (r->world > 1 && getenv("OMPI_COMM_WORLD_SIZE") && !strncmp(r->notice_source, "sig", 3))
            printf("every rank committed step %llu and exits 75; if mpirun was the one signalled it reports 1 "
                   "(Open MPI's status for a job it ended): the same command resumes here\n",
                   (unsigned long long)r->step);
    }
}

static void report(const baton_train_result *r, int rc, void *ctx)
{
    if (*(const int *)ctx) cli_print_json(stdout, result_json(r, rc));
    else print_text(r, rc);
    fflush(stdout);
    char *js = NULL;
    size_t len = 0;
    FILE *m = getenv("BATON_RESULT_FILE") ? open_memstream(&js, &len) : NULL;
    if (m) {   /* the run's result where the fleet's report reads it */
        cli_print_json(m, result_json(r, rc));
        fclose(m);
        cli_result_file(js);
        free(js);
    }
}

/* The options that are not fields of baton_train_opts, as given: sentinels tell "not given" from
 * an explicit value. */
typedef struct train_args {
    const char *mode, *dist, *precision;
    uint64_t epochs, max_steps;
    double lr, progress_every, bucket_mb;
    int batch, threads, quiet, reference, json;
} train_args;

/* What is wrong with the options, in words, or NULL. */
static const char *check_args(const baton_train_opts *o, const train_args *a, int argc, char **argv, char miss[256])
{
    return cli_missing(miss, "--data", o->data_uri, "--model", o->model, "--ckpt-dir", o->session.ckpt_dir, NULL)
               ?: a->epochs == 0 ? "--epochs must be >= 1"
         : cli_given(argc, argv, "lr") && !(a->lr > 0 && isfinite(a->lr)) ? "--lr must be a positive number"
         : a->max_steps == 0 ? "--max-steps must be >= 1 (leave it out for no limit)"
         : a->threads < 0 ? "--threads must not be negative"
         : !(a->progress_every >= 0 && isfinite(a->progress_every)) ? "--progress-every must be >= 0"
         : !(a->bucket_mb > 0 && a->bucket_mb <= 1024) ? "--bucket-mb must be in (0, 1024]"
         : a->precision && baton_nn_precision_parse(a->precision) < 0 ? "--precision must be f32 or bf16"
         : a->precision && a->reference && strcmp(a->precision, "f32") ? "--precision bf16 runs on oneDNN, not with --reference"
         : a->dist && strcmp(a->dist, "auto") && strcmp(a->dist, "mpi") && strcmp(a->dist, "none")
             ? "--dist must be auto, mpi or none"
         : NULL;
}

/* The checked options into o (the crop's too); CLI_USAGE (said) for an unknown --mode. */
static int apply_args(baton_train_opts *o, const train_args *a, const struct cli_crop_out *co, int argc, char **argv)
{
    o->crop = (int)co->crop;
    o->crop_size = co->size;
    memcpy(o->scale, co->scale, sizeof o->scale);
    memcpy(o->ratio, co->ratio, sizeof o->ratio);
    if (a->mode) {
        if (baton_io_mode_parse(a->mode, &o->mode)) {
            fprintf(stderr, "baton train: --mode '%s': expected file, pipe, mount or cache\n", a->mode);
            return CLI_USAGE;
        }
        o->mode_set = 1;
    }
    cli_set_threads(a->threads);
    o->epochs = a->epochs == UINT64_MAX ? 0 : a->epochs;
    o->max_steps = a->max_steps == UINT64_MAX ? 0 : a->max_steps;
    o->lr = cli_given(argc, argv, "lr") ? a->lr : 0;
    o->batch = a->batch < 0 ? 0 : (uint32_t)a->batch;
    o->reference_kernels = a->reference;
    o->precision = a->precision ? baton_nn_precision_parse(a->precision) : BATON_NN_PRECISION_F32;
    o->precision_set = a->precision != NULL;
    o->progress = !a->quiet && !getenv("BATON_NO_PROGRESS");
    o->progress_every_s = a->quiet ? 0 : a->progress_every;
    o->dist = !a->dist || !strcmp(a->dist, "auto") ? 0 : !strcmp(a->dist, "mpi") ? 1 : -1;
    o->bucket_bytes = (size_t)(a->bucket_mb * 1e6);
    return 0;
}

int cmd_train(int argc, char **argv)
{
    baton_train_opts o;
    baton_train_opts_default(&o);
    train_args a = {.epochs = UINT64_MAX, .max_steps = UINT64_MAX, .lr = NAN, .progress_every = 30, .bucket_mb = 1,
                    .batch = (int)o.batch};
    struct cli_session cs;
    struct cli_crop cc = {0};
    struct cli_crop_out co;
    cli_session_init(&cs, &o.session);
    const struct cli_opt opts[] = {
        {"data", CLI_STR, &o.data_uri, "training dataset URI: path, file://, http(s)://, s3://bucket/prefix"},
        {"val", CLI_STR, &o.val_uri, "validation dataset URI, evaluated after each epoch"},
        {"model", CLI_STR, &o.model, "mlp | lenet | resnet8 | resnet20 | resnet56"},
        {"epochs", CLI_U64, &a.epochs, "epochs (default: the checkpoint's when resuming, else 1)"},
        {"batch", CLI_INT, &a.batch, "batch size, 1..4096 (default 128)"},
        {"lr", CLI_DBL, &a.lr, "base learning rate > 0 (default: the checkpoint's, else 0.1 resnet, 0.01 lenet/mlp), cosine"},
        {"seed", CLI_U64, &o.seed, "data order and initialisation seed (default 0)"},
        {"allow-change", CLI_FLAG, &o.allow_change, "on resume, apply a changed --epochs or --lr (or dataset size)"},
        {"mode", CLI_STR, &a.mode, "file | pipe | mount | cache (default mount for a path, else pipe)"},
        CLI_SESSION_OPTS(cs, "steps", "step"),
        {"log", CLI_STR, &o.log_path, "CSV log, one row per epoch (appended; cut back to the checkpoint on resume)"},
        {"max-steps", CLI_U64, &a.max_steps, "stop at global step K >= 1, counted across restarts (default: no limit)"},
        {"threads", CLI_INT, &a.threads, "compute threads (sets OMP_NUM_THREADS)"},
        {"reference", CLI_FLAG, &a.reference, "use the plain C kernels instead of oneDNN"},
        {"precision", CLI_STR, &a.precision,
         "f32 (default; a resume: the checkpoint's) | bf16: convolutions and linear layers in bfloat16 with f32 "
         "sums, weights/optimizer/batch norm/checkpoints f32 (CPUs with AVX512-BF16 or AMX; refused elsewhere)"},
        {"quiet", CLI_FLAG, &a.quiet, "no progress line"},
        {"progress-every", CLI_DBL, &a.progress_every,
         "when stderr is not a terminal, a progress line every S seconds (default 30; 0: none)"},
        {"json", CLI_FLAG, &a.json, "the summary as one JSON object"},
        {"dist", CLI_STR, &a.dist,
         "auto | mpi | none: data parallel over MPI ranks (auto: when started by mpirun or srun --mpi=pmix; "
         "mpi: required)"},
        {"sample-log", CLI_STR, &o.sample_log,
         "append \"epoch position rank label crc32c\" to FILE for every sample trained (an audit of the data order; the CRC is of its input floats)"},
        {"bucket-mb", CLI_DBL, &a.bucket_mb, "gradient allreduce bucket in MB, > 0 (default 1)"},
        CLI_CROP_OPTS(cc),
        {"flip", CLI_FLAG, &o.flip, "random horizontal flip (p = 0.5)"},
        {"sync-bn", CLI_FLAG, &o.sync_bn, "with ranks: batch norm statistics over the whole global batch (default: each rank's part)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("train",
                  "--data URI [--val URI] --model NAME [--epochs N] [--batch B] [--lr X] [--seed S] [--mode M] "
                  "--ckpt-dir DIR [--ckpt-uri s3://B/P] [--ckpt-every-steps K | --ckpt-every-sec S | --ckpt-every auto [--interrupt-rate PCT]] [--log FILE.csv] "
                  "[--max-steps K] [--threads T] [--precision f32|bf16] [--no-notice] [--json]",
                  opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    char miss[256];
    const char *bad = check_args(&o, &a, argc, argv, miss);
    if (bad) {
        fprintf(stderr, "baton train: %s\n", bad);
        return CLI_USAGE;
    }
    if (cli_session_finish(&cs, "train", argc, argv) || cli_crop_finish(&cc, "train", &co) ||
        apply_args(&o, &a, &co, argc, argv))
        return CLI_USAGE;

    /* rank 0 speaks for the world, from inside the run: before the other ranks may exit */
    o.report = report;
    o.report_ctx = &a.json;
    baton_train_result r;
    baton_err err = {0};
    int rc = baton_train_run(&o, &r, &err);
    if (rc && rc != BATON_STOPPED) return cli_fail("train", &err);
    return rc == BATON_STOPPED ? CLI_INTERRUPTED : CLI_OK;
}
