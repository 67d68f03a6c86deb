/* args.c — the declarative option parser shared by all subcommands (see cli.h). */
#include "baton/nn.h"
#include "cli.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Options with help NULL are internal (one process of baton talking to another): not listed. */
static void print_help(FILE *f, const char *cmd, const char *synopsis, const struct cli_opt *opts)
{
    fprintf(f, "usage: baton %s %s\n", cmd, synopsis);
    int w = 12;
    for (const struct cli_opt *o = opts; o->name; o++)
        if (o->help && (int)strlen(o->name) > w) w = (int)strlen(o->name);
    for (const struct cli_opt *o = opts; o->name; o++)
        if (o->help) fprintf(f, "  --%-*s  %s\n", w, o->name, o->help);
}

static int set_value(const char *cmd, const struct cli_opt *o, const char *v)
{
    char *end = NULL;
    errno = 0;
    switch (o->kind) {
    case CLI_FLAG: *(int *)o->dst = 1; return 0;
    case CLI_STR: *(const char **)o->dst = v; return 0;
    case CLI_INT: {
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end || x < -2147483647L || x > 2147483647L) break;
        *(int *)o->dst = (int)x;
        return 0;
    }
    case CLI_U64: {
        if (*v == '-') break;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || end == v || *end) break;
        *(uint64_t *)o->dst = x;
        return 0;
    }
    case CLI_DBL: {
        double x = strtod(v, &end);
        if (errno || end == v || *end) break;
        *(double *)o->dst = x;
        return 0;
    }
    }
    fprintf(stderr, "baton %s: --%s: '%s' is not a valid number\n", cmd, o->name, v);
    return CLI_USAGE;
}

int cli_parse(const char *cmd, const char *synopsis, const struct cli_opt *opts, int argc,
              char **argv, const char **pos, int maxpos, int *npos, int *help_shown)
{
    *npos = 0;
    *help_shown = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(stdout, cmd, synopsis, opts);
            *help_shown = 1;
            return CLI_USAGE;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (*npos >= maxpos) {
                fprintf(stderr, "baton %s: unexpected argument '%s'\n", cmd, a);
                print_help(stderr, cmd, synopsis, opts);
                return CLI_USAGE;
            }
            pos[(*npos)++] = a;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        const struct cli_opt *o = opts;
        for (; o->name; o++)
            if (strlen(o->name) == nl && !strncmp(o->name, name, nl)) break;
        if (!o->name) {
            fprintf(stderr, "baton %s: unknown option '--%.*s'\n", cmd, (int)nl, name);
            print_help(stderr, cmd, synopsis, opts);
            return CLI_USAGE;
        }
        const char *v = NULL;
        if (o->kind == CLI_FLAG) {
            if (eq) {
                fprintf(stderr, "baton %s: --%s takes no value\n", cmd, o->name);
                return CLI_USAGE;
            }
        } else if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            fprintf(stderr, "baton %s: --%s needs a value\n", cmd, o->name);
            return CLI_USAGE;
        }
        if (set_value(cmd, o, v)) return CLI_USAGE;
    }
    return 0;
}

int cli_fail(const char *cmd, const baton_err *err)
{
    fprintf(stderr, "baton %s: %s\n", cmd, err->msg[0] ? err->msg : baton_status_name(err->code));
    return err->code == BATON_ERR_USAGE ? CLI_USAGE : CLI_ERROR;
}

int cli_print_json(FILE *f, cJSON *j)
{
    char *s = j ? baton_json_print(j, 0) : NULL;
    cJSON_Delete(j);
    if (!s) {
        fprintf(stderr, "baton: out of memory\n");
        return CLI_ERROR;
    }
    fprintf(f, "%s\n", s);
    free(s);
    return CLI_OK;
}

const char *cli_missing(char buf[256], const char *name, const void *val, ...)
{
    const char *miss[16];
    int n = 0;
    va_list ap;
    va_start(ap, val);
    while (name) {
        if (!val && n < 16) miss[n++] = name;
        name = va_arg(ap, const char *);
        if (name) val = va_arg(ap, const void *);
    }
    va_end(ap);
    if (n == 0) return NULL;
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < 256; i++)
        at += (size_t)snprintf(buf + at, 256 - at, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", miss[i]);
    if (at < 256) snprintf(buf + at, 256 - at, " %s required", n == 1 ? "is" : "are");
    return buf;
}

int cli_given(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-' && !strncmp(a + 2, name, n) && (a[2 + n] == 0 || a[2 + n] == '=')) return 1;
        if (!strcmp(a, "--")) break;
    }
    return 0;
}

void cli_set_threads(int threads)
{
    if (threads <= 0) return;
    char t[16];
    snprintf(t, sizeof t, "%d", threads);
    setenv("OMP_NUM_THREADS", t, 1);
    baton_nn_set_threads(threads);   /* the runtime read the environment before main */
}

void cli_result_file(const char *json)
{
    const char *path = getenv("BATON_RESULT_FILE");
    if (!path || !*path || !json) return;
    baton_err err = {0};
    if (baton_file_write_atomic(path, json, strlen(json), &err))
        baton_log(BATON_LOG_WARN, "result file: %s", err.msg);
}
