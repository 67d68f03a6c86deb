/* cmd_eval.c — `baton eval --ckpt DIR --data URI [--json]`: loss, accuracy and the confusion matrix
 * of a checkpoint's model (DIR is a checkpoint folder or a folder of them: its newest that
 * verifies) on a dataset. The table's rows are true classes, its columns predicted classes, with
 * each class's accuracy (recall) at the end of its row. --json prints one object with loss,
 * accuracy, samples, step, model, kernels, classes, confusion (an array of rows) and
 * per_class_accuracy. --precision bf16 evaluates on the bfloat16 kernels (any checkpoint: they are
 * f32). */
#include "baton/train.h"
#include "cli.h"

#include <cJSON.h>

#include <stdlib.h>
#include <string.h>

int cmd_eval(int argc, char **argv)
{
    const char *ckpt = NULL, *data = NULL, *mode = NULL, *work = "eval-data", *precision = NULL;
    int batch = 256, json = 0;
    struct cli_crop cc = {0};
    struct cli_crop_out co;
    const struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, "checkpoint folder, or a folder of them (newest that verifies)"},
        {"data", CLI_STR, &data, "dataset URI"},
        {"mode", CLI_STR, &mode, "file | pipe | mount | cache (default mount for a path, else pipe)"},
        {"work-dir", CLI_STR, &work, "local copies for file/cache mode (default ./eval-data)"},
        {"batch", CLI_INT, &batch, "batch size (default 256)"},
        {"json", CLI_FLAG, &json, "one JSON object"},
        {"precision", CLI_STR, &precision,
         "f32 (default, whatever the checkpoint trained in) | bf16: convolutions and linear layers on bfloat16 "
         "kernels (CPUs with AVX512-BF16 or AMX; refused elsewhere)"},
        {"crop", CLI_STR, &cc.crop, "center | none (default: the centre crop of the size the model trained on, if it trained on crops)"},
        {"size", CLI_INT, &cc.size, "the centre crop's side (default: the training's)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("eval", "--ckpt DIR --data URI [--precision f32|bf16] [--json]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    char miss[256];
    if (cli_missing(miss, "--ckpt", ckpt, "--data", data, NULL)) {
        fprintf(stderr, "baton eval: %s (baton eval --help)\n", miss);
        return CLI_USAGE;
    }
    if (batch < 1) {
        fprintf(stderr, "baton eval: --batch must be >= 1\n");
        return CLI_USAGE;
    }
    const int prec = precision ? baton_nn_precision_parse(precision) : BATON_NN_PRECISION_F32;
    if (prec < 0) {
        fprintf(stderr, "baton eval: --precision must be f32 or bf16\n");
        return CLI_USAGE;
    }
    if (cli_crop_finish(&cc, "eval", &co)) return CLI_USAGE;
    if (co.crop == BATON_CROP_RANDOM_RESIZED || co.crop == BATON_CROP_PAD) {
        fprintf(stderr, "baton eval: --crop %s: evaluation takes the centre crop (center) or the images as they are (none)\n", cc.crop);
        return CLI_USAGE;
    }
    baton_io_mode m = BATON_MODE_MOUNT;
    if (mode && baton_io_mode_parse(mode, &m)) {
        fprintf(stderr, "baton eval: --mode '%s': expected file, pipe, mount or cache\n", mode);
        return CLI_USAGE;
    }
    baton_eval_result r;
    baton_err err = {0};
    if (baton_eval_run(ckpt, data, m, mode != NULL, work, (uint32_t)batch, (int)co.crop, co.set, co.size, prec, &r, &err))
        return cli_fail("eval", &err);
    uint32_t k = r.classes;
    if (json) {
        cJSON *j = cJSON_CreateObject(), *cm, *pc;
        cJSON_AddNumberToObject(j, "loss", r.loss);
        cJSON_AddNumberToObject(j, "accuracy", r.accuracy);
        cJSON_AddNumberToObject(j, "samples", (double)r.samples);
        cJSON_AddNumberToObject(j, "step", (double)r.step);
        cJSON_AddStringToObject(j, "model", r.model);
        cJSON_AddStringToObject(j, "kernels", r.kernels);
        cJSON_AddNumberToObject(j, "classes", k);
        if ((cm = cJSON_AddArrayToObject(j, "confusion")))
            for (uint32_t i = 0; i < k; i++) {
                cJSON *row = cJSON_CreateArray();
                for (uint32_t c = 0; c < k; c++) cJSON_AddItemToArray(row, cJSON_CreateNumber((double)r.confusion[i * k + c]));
                cJSON_AddItemToArray(cm, row);
            }
        if ((pc = cJSON_AddArrayToObject(j, "per_class_accuracy")))
            for (uint32_t i = 0; i < k; i++) {
                uint64_t row = 0;
                for (uint32_t c = 0; c < k; c++) row += r.confusion[i * k + c];
                cJSON_AddItemToArray(pc, row ? cJSON_CreateNumber((double)r.confusion[i * k + i] / (double)row)
                                             : cJSON_CreateNull());
            }
        if (cli_print_json(stdout, j)) return CLI_ERROR;
    } else {
        printf("model %s, step %llu, %llu samples: loss %.4f, accuracy %.4f%s\n", r.model, (unsigned long long)r.step,
               (unsigned long long)r.samples, r.loss, r.accuracy, prec == BATON_NN_PRECISION_BF16 ? " (bf16)" : "");
        int w = 5;
        for (uint64_t x = r.samples; x >= 10000; x /= 10) w++;
        printf("\nconfusion matrix (rows: true class, columns: predicted class)\n%-18s", "true \\ predicted");
        for (uint32_t j = 0; j < k; j++) printf(" %*u", w, j);
        printf("  %8s\n", "accuracy");
        for (uint32_t i = 0; i < k; i++) {
            uint64_t row = 0;
            printf("%2u %-15.15s", i, r.class_names[i]);
            for (uint32_t j = 0; j < k; j++) {
                printf(" %*llu", w, (unsigned long long)r.confusion[i * k + j]);
                row += r.confusion[i * k + j];
            }
            if (row) printf("  %8.4f\n", (double)r.confusion[i * k + i] / (double)row);   /* recall */
            else printf("  %8s\n", "-");
        }
    }
    baton_eval_result_free(&r);
    return CLI_OK;
}
