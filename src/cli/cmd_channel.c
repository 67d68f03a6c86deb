/* cmd_channel.c — `baton channel`: a dataset as SageMaker-style named pipes <dir>/<channel>_<epoch>
 * (one RecordIO record per sample), for trainers in any language. */
#include "baton/io.h"
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Ctrl-C or SIGTERM: the current pipe goes (a reader must not open a pipe nobody will write),
 * then the signal's default action. The path is copied while the flag is down, so the handler
 * only ever reads a whole one. */
static char pipe_path[4096];
static volatile sig_atomic_t pipe_set;

static void on_pipe(const char *path, void *ud)
{
    (void)ud;
    pipe_set = 0;
    if (path) {
        snprintf(pipe_path, sizeof pipe_path, "%s", path);
        pipe_set = 1;
    }
}

static void on_signal(int sig)
{
    if (pipe_set) unlink(pipe_path);   /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

int cmd_channel(int argc, char **argv)
{
    baton_loader_opts lo;
    baton_loader_opts_default(&lo);
    baton_channel_opts co = {.channel = "train", .epochs = 1};
    const char *mode = "pipe";
    int quiet = 0;
    double timeout = 0;
    const struct cli_opt opts[] = {
        {"data", CLI_STR, &lo.uri, "dataset URI: path, file://, http(s)://, s3://bucket/prefix"},
        {"fifo-dir", CLI_STR, &co.fifo_dir, "folder for the named pipes"},
        {"channel", CLI_STR, &co.channel, "channel name (default train): pipes are NAME_0, NAME_1, ..."},
        {"epochs", CLI_U64, &co.epochs, "epochs (default 1)"},
        {"mode", CLI_STR, &mode, "pipe (default) | file | mount | cache"},
        {"local-dir", CLI_STR, &lo.local_dir, "local copy for file/cache mode"},
        {"seed", CLI_U64, &lo.seed, "order seed (default 0)"},
        {"s3-endpoint", CLI_STR, &lo.store.s3_endpoint, "S3 endpoint (else AWS_ENDPOINT_URL)"},
        {"open-timeout", CLI_DBL, &timeout, "seconds to wait for a reader per epoch (default forever)"},
        {"quiet", CLI_FLAG, &quiet, "no progress line"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("channel", "--data URI --fifo-dir DIR --channel NAME [--epochs N]", opts, argc, argv, pos,
                  0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    char miss[256];
    if (cli_missing(miss, "--data", lo.uri, "--fifo-dir", co.fifo_dir, NULL)) {
        fprintf(stderr, "baton channel: %s (baton channel --help)\n", miss);
        return CLI_USAGE;
    }
    if (baton_io_mode_parse(mode, &lo.mode)) {
        fprintf(stderr, "baton channel: --mode '%s': expected pipe, file, mount or cache\n", mode);
        return CLI_USAGE;
    }
    co.open_timeout_s = timeout;
    co.progress = !quiet;
    co.on_pipe = on_pipe;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    baton_err err = {0};
    if (baton_channel_check(&co, &err)) return cli_fail("channel", &err);   /* before any download */
    baton_loader *l;
    if (baton_loader_open(&lo, &l, &err)) return cli_fail("channel", &err);
    baton_channel_stats st;
    int rc = baton_channel_run(l, &co, &st, &err);
    baton_loader_close(l);
    if (rc) return cli_fail("channel", &err);
    fprintf(stderr, "baton channel: %llu epoch(s), %llu records, %.1f MB%s\n", (unsigned long long)st.epochs,
            (unsigned long long)st.records, (double)st.bytes / 1e6,
            st.readers_gone ? " (a reader left early)" : "");
    return CLI_OK;
}
