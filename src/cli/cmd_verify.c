/* cmd_verify.c — `baton verify-resume [--interruptions N] [--kinds term,kill,notice,int] [--seed S]
 * --ckpt-dir DIR [--json] [--work DIR] [--timeout SEC] -- COMMAND...`: the proof that COMMAND
 * resumes exactly (fleet.h: baton_verify_resume runs it uninterrupted, then interrupted and
 * rerun, and compares the two step by step). Prints the first difference (its step and cause) or
 * "identical", the runs as a table (or one JSON object), and the times. Exit 0 identical, 1 a
 * difference or an error, 2 usage. Progress lines go to stderr. */
#include "baton/fleet.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_verify(int argc, char **argv)
{
    baton_verify_opts o;
    baton_verify_opts_default(&o);
    const char *kinds = NULL;
    int json = 0, quiet = 0;
    const struct cli_opt opts[] = {
        {"ckpt-dir", CLI_STR, &o.ckpt_dir, "the command's checkpoint folder (required): emptied before each of the two runs"},
        {"interruptions", CLI_INT, &o.interruptions, "interruptions of the second run, at distinct random steps (default 4)"},
        {"kinds", CLI_STR, &kinds, "term,kill,notice,int: which, in turn (default all four; notice: a spot notice "
                                   "from a local metadata emulator)"},
        {"seed", CLI_U64, &o.seed, "seed of the steps drawn (default 1)"},
        {"work", CLI_STR, &o.work_dir, "keep the event logs and outputs here (default: a temporary folder, kept only "
                                       "when the runs differ)"},
        {"timeout", CLI_DBL, &o.run_timeout_s, "one process's time limit in seconds (default 3 × the uninterrupted run + 60)"},
        {"json", CLI_FLAG, &json, "the verdict, runs, interruptions and times as one JSON object"},
        {"quiet", CLI_FLAG, &quiet, "no progress lines on stderr"},
        {0},
    };
    int dash = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            dash = i;
            break;
        }
    const char *pos[1];
    int npos, help;
    if (cli_parse("verify-resume",
                  "[--interruptions N] [--kinds term,kill,notice,int] [--seed S] --ckpt-dir DIR [--json] [--work DIR] "
                  "[--timeout SEC] [--quiet] -- COMMAND...",
                  opts, dash, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    baton_err err = {0};
    if (kinds && baton_verify_kinds_parse(kinds, &o.kinds, &err)) return cli_fail("verify-resume", &err);
    if (dash + 1 >= argc) {
        fprintf(stderr, "baton verify-resume: no command: give it after --\n");
        return CLI_USAGE;
    }
    if (!o.ckpt_dir) {
        fprintf(stderr, "baton verify-resume: --ckpt-dir is required (the command's checkpoint folder)\n");
        return CLI_USAGE;
    }
    if (!(o.run_timeout_s >= 0)) {
        fprintf(stderr, "baton verify-resume: --timeout must be >= 0 seconds\n");
        return CLI_USAGE;
    }
    o.argv = argv + dash + 1;
    o.progress = !quiet;
    baton_verify_report *r = calloc(1, sizeof *r);
    if (!r) return cli_fail("verify-resume", &(baton_err){BATON_ERR_NOMEM, "out of memory"});
    int rc = baton_verify_resume(&o, r, &err);
    if (rc) {
        free(r);
        return cli_fail("verify-resume", &err);
    }
    int out = CLI_OK;
    if (json) {
        char *s = baton_verify_report_json(r);
        if (s) printf("%s\n", s);
        else out = CLI_ERROR;
        free(s);
    } else {
        baton_verify_report_print(stdout, r);
    }
    if (r->cause != BATON_VERIFY_IDENTICAL) out = CLI_ERROR;
    free(r);
    return out;
}
