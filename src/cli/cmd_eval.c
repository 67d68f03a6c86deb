/* cmd_eval.c — `baton eval --ckpt DIR --data URI [--json]`: loss and accuracy of a checkpoint's
 * model (DIR is a checkpoint folder or a folder of them: its newest that verifies) on a dataset.
 * --json prints one object with loss, accuracy, samples, step, model and checkpoint. */
#include "baton/train.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_eval(int argc, char **argv)
{
    const char *ckpt = NULL, *data = NULL, *mode = NULL, *work = "eval-data";
    int batch = 256, json = 0;
    const struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, "checkpoint folder, or a folder of them (newest that verifies)"},
        {"data", CLI_STR, &data, "dataset URI"},
        {"mode", CLI_STR, &mode, "file | pipe | mount | cache (default mount for a path, else pipe)"},
        {"work-dir", CLI_STR, &work, "local copies for file/cache mode (default ./eval-data)"},
        {"batch", CLI_INT, &batch, "batch size (default 256)"},
        {"json", CLI_FLAG, &json, "one JSON object"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("eval", "--ckpt DIR --data URI [--json]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (!ckpt || !data) {
        fprintf(stderr, "baton eval: --ckpt and --data are required\n");
        return CLI_USAGE;
    }
    if (batch < 1) {
        fprintf(stderr, "baton eval: --batch must be >= 1\n");
        return CLI_USAGE;
    }
    baton_io_mode m = BATON_MODE_MOUNT;
    if (mode && baton_io_mode_parse(mode, &m)) {
        fprintf(stderr, "baton eval: --mode '%s': expected file, pipe, mount or cache\n", mode);
        return CLI_USAGE;
    }
    baton_eval_result r;
    baton_err err = {0};
    if (baton_eval_run(ckpt, data, m, mode != NULL, work, (uint32_t)batch, &r, &err)) return cli_fail("eval", &err);
    if (json) {
        printf("{\"loss\":%.6f,\"accuracy\":%.6f,\"samples\":%llu,\"step\":%llu,\"model\":\"%s\"}\n", r.loss,
               r.accuracy, (unsigned long long)r.samples, (unsigned long long)r.step, r.model);
    } else {
        printf("model %s, step %llu, %llu samples: loss %.4f, accuracy %.4f\n", r.model, (unsigned long long)r.step,
               (unsigned long long)r.samples, r.loss, r.accuracy);
    }
    return CLI_OK;
}
