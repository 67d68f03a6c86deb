/* main.c — the `baton` command: parses the subcommand and hands over to cmd_<name>.c.
 * Thin by contract: all logic lives in the library. Exit codes: 0 done, 1 error, 2 usage,
 * 75 stopped on an interruption notice after a committed checkpoint. stdout is line-buffered, so
 * its lines and stderr's keep their order in one file. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct cli_command commands[] = {
    {"pack", cmd_pack, "pack an image dataset into RecordIO/TFRecord shards"},
    {"inspect", cmd_inspect, "count, labels, shapes of shards; --verify checks every byte"},
    {"bench-io", cmd_bench_io, "input modes side by side: launch, samples/s, epoch time, total"},
    {"channel", cmd_channel, "serve a dataset as SageMaker-style named pipes, one per epoch"},
    {"push", cmd_push, "upload a dataset folder to s3://bucket/prefix (dataset.json last)"},
    {"train", cmd_train, "train a model with crash-safe checkpoints; resumes from --ckpt-dir"},
    {"eval", cmd_eval, "loss and accuracy of a checkpoint on a dataset"},
    {"ckpt", cmd_ckpt, "checkpoints: ls | verify | show DIR"},
    {"imds", cmd_imds, "a local EC2 metadata service that can announce interruptions"},
    {"notice", cmd_notice, "notice wait: block until an interruption notice and print it"},
    {"infer-bench", cmd_infer_bench, "inference latency: cold start, first query, P50/P90/P99, throughput"},
    {"plan", cmd_plan, "plan infer | train: cheapest catalog hardware for an SLO, training cost on spot"},
    {"fleet", cmd_fleet, "run | status | cancel a fleet of spot workers from a job file"},
    {"race", cmd_race, "track | drive | limit | train | eval | submit | leaderboard | serve | match | token: the DeepRacer-style league"},
    {"verify-resume", cmd_verify, "prove that a trainer resumes exactly: interrupted runs against an uninterrupted one"},
    {"run", cmd_run, "the main job; with no JOBFILE, the built-in demo"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: baton <command> [options]\n\ncommands:\n");
    int w = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if ((int)strlen(commands[i].name) > w) w = (int)strlen(commands[i].name);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-*s  %s\n", w, commands[i].name, commands[i].help);
    fprintf(f, "\nbaton <command> --help shows a command's options.\n\n"
               "Your own trainer: libbaton.so (C: include/baton/, pkg-config baton) and `import baton` in Python\n"
               "(Loader: this data path, any URI and mode, exact resume, any world size; Checkpoints: these\n"
               "checkpoints, saved in the background, copied to S3; Notice: these interruption notices).\n"
               "See docs/pytorch.md; examples/pytorch/train.py and examples/c/stream.c.\n");
}

/* Damerau-Levenshtein distance (optimal string alignment) of two short words, capped at 9. */
static int distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 31 || m > 31) return 9;
    int d[32][32];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int c = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + c;
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v) v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* An unknown command: the nearest one when it is close (two edits at most), else the list. */
static int unknown(const char *cmd)
{
    size_t best = 0;
    int bd = 9;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        int d = distance(cmd, commands[i].name);
        if (d < bd) bd = d, best = i;
    }
    if (bd <= 2 && bd < (int)strlen(cmd)) {
        fprintf(stderr, "baton: unknown command '%s' (did you mean '%s'? baton %s --help)\n", cmd, commands[best].name,
                commands[best].name);
        return CLI_USAGE;
    }
    fprintf(stderr, "baton: unknown command '%s'\n", cmd);
    usage(stderr);
    return CLI_USAGE;
}

int main(int argc, char **argv)
{
    /* Every command writes results to stdout and events, warnings and errors to stderr. Line-buffer
     * stdout (a terminal's default) also when it goes to a file or a pipe, so that `baton … >out 2>&1`
     * keeps the lines in the order they happened instead of stdout's lines coming last. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "help") && argc > 2) {   /* baton help CMD: CMD's options, as CMD --help */
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name)) {
                char *av[3] = {argv[2], "--help", NULL};
                return commands[i].run(2, av);
            }
        return unknown(argv[2]);
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("baton %s\n", BATON_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    return unknown(argv[1]);
}
