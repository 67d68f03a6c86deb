/* cmd_inspect.c — `baton inspect PATH [--verify] [--json]`: prints the report (table or one JSON
 * object) on stdout, every problem on stderr, and exits 1 when any problem was found. */
#include "baton/img.h"
#include "cli.h"

#include <stdlib.h>

int cmd_inspect(int argc, char **argv)
{
    int verify = 0, json = 0, quiet = 0;
    const struct cli_opt opts[] = {
        {"verify", CLI_FLAG, &verify, "check every record, index entry, size, checksum, image"},
        {"json", CLI_FLAG, &json, "print one JSON object"},
        {"quiet", CLI_FLAG, &quiet, "no progress line"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("inspect", "PATH [--verify] [--json]", opts, argc, argv, pos, 1, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos != 1) {
        fprintf(stderr, "baton inspect: expected one PATH (a dataset folder, .rec or TFRecord file)\n");
        return CLI_USAGE;
    }
    baton_inspect_report rep;
    baton_err err = {0};
    if (baton_inspect(pos[0], verify, !quiet && !json, &rep, &err)) {
        int rc = cli_fail("inspect", &err);
        if (json) {
            char *s = baton_inspect_to_json(&rep);
            if (s) puts(s);
            free(s);
        }
        baton_inspect_free(&rep);
        return rc;
    }
    for (size_t i = 0; i < rep.nerrors; i++) fprintf(stderr, "baton inspect: %s\n", rep.errors[i]);
    if (rep.nerrors_total > rep.nerrors)
        fprintf(stderr, "baton inspect: … and %llu more problem(s)\n",
                (unsigned long long)(rep.nerrors_total - rep.nerrors));
    if (json) {
        char *s = baton_inspect_to_json(&rep);
        if (s) puts(s);
        free(s);
    } else {
        baton_inspect_print(&rep, stdout);
    }
    int rc = rep.nerrors_total ? CLI_ERROR : CLI_OK;
    baton_inspect_free(&rep);
    return rc;
}
