/* cmd_ckpt.c — `baton ckpt ls|verify|show DIR`:
 *   ls DIR       table of the checkpoints under DIR, newest first: step, time, bytes, ok/CORRUPT,
 *                and the damaged folders retention moved aside (.ckpt-<step>.corrupt); --json
 *   verify DIR   checks every checkpoint under DIR (or DIR itself when it is one); names each
 *                problem on stderr and exits 1 if there was any
 *   show PATH    PATH is a checkpoint folder, or a DIR (its newest checkpoint that verifies):
 *                state.json pretty-printed, then each safetensors file's tensors with dtype/shape;
 *                a folder that does not verify is shown as far as it can be read, and exits 1 */
#include "baton/ckpt.h"
#include "cli.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int is_ckpt_folder(const char *p)
{
    uint64_t step;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", p);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/') tmp[--n] = 0;
    return baton_ckpt_parse_name(base_of(tmp), &step);
}

static const char *status_word(const baton_ckpt_info *c)
{
    return c->aside ? "moved-aside" : c->status == BATON_OK ? "ok" : "corrupt";
}

static int ls_json(const char *dir, const baton_ckpt_info *v, size_t n)
{
    cJSON *j = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(j, "checkpoints");
    cJSON_AddStringToObject(j, "dir", dir);
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "step", (double)v[i].step);
        cJSON_AddStringToObject(o, "path", v[i].path);
        cJSON_AddNumberToObject(o, "mtime", (double)v[i].mtime);
        cJSON_AddNumberToObject(o, "bytes", (double)v[i].bytes);
        cJSON_AddStringToObject(o, "status", status_word(&v[i]));
        if (v[i].status != BATON_OK) cJSON_AddStringToObject(o, "reason", v[i].reason);
        cJSON_AddItemToArray(a, o);
    }
    char *out = baton_json_print(j, 0);
    cJSON_Delete(j);
    if (!out) return CLI_ERROR;
    printf("%s\n", out);
    free(out);
    return CLI_OK;
}

static int do_ls(const char *dir, int json)
{
    baton_ckpt_info *v;
    size_t n;
    baton_err err = {0};
    if (baton_ckpt_list(dir, 1 | BATON_CKPT_LIST_ASIDE, &v, &n, &err)) return cli_fail("ckpt ls", &err);
    if (json) {
        int rc = ls_json(dir, v, n);
        free(v);
        return rc;
    }
    printf("%-12s %-20s %12s  %s\n", "step", "time", "bytes", "status");
    for (size_t i = 0; i < n; i++) {
        char when[32] = "-";
        if (v[i].mtime) {
            time_t t = (time_t)v[i].mtime;
            struct tm tm;
            if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        }
        const char *word = v[i].aside ? "MOVED ASIDE" : v[i].status == BATON_OK ? "ok" : "CORRUPT";
        printf("%-12" PRIu64 " %-20s %12" PRIu64 "  %s%s%s%s%s\n", v[i].step, when, v[i].bytes, word,
               v[i].aside ? " to " : "", v[i].aside ? base_of(v[i].path) : "", v[i].status == BATON_OK ? "" : ": ",
               v[i].status == BATON_OK ? "" : v[i].reason);
    }
    if (n == 0) printf("(no checkpoints in %s)\n", dir);
    free(v);
    return CLI_OK;
}

static int do_verify(const char *dir)
{
    baton_err err = {0};
    if (is_ckpt_folder(dir)) {
        if (baton_ckpt_verify(dir, &err)) return cli_fail("ckpt verify", &err);
        printf("%s: ok\n", dir);
        return CLI_OK;
    }
    baton_ckpt_info *v;
    size_t n, bad = 0;
    if (baton_ckpt_list(dir, 1, &v, &n, &err)) return cli_fail("ckpt verify", &err);
    for (size_t i = 0; i < n; i++) {
        if (v[i].status == BATON_OK) continue;
        bad++;
        fprintf(stderr, "baton ckpt verify: %s\n", v[i].reason);
    }
    printf("%zu checkpoint(s), %zu ok, %zu bad\n", n, n - bad, bad);
    free(v);
    if (n == 0) {
        fprintf(stderr, "baton ckpt verify: %s: no checkpoints\n", dir);
        return CLI_ERROR;
    }
    return bad ? CLI_ERROR : CLI_OK;
}

static int show_tensors(const char *path)
{
    baton_st_header h;
    uint8_t *d;
    baton_err err = {0};
    if (baton_st_read_file(path, &h, &d, &err)) return cli_fail("ckpt show", &err);
    free(d);
    printf("\n%s: %zu tensors, %" PRIu64 " data bytes\n", base_of(path), h.ntensors, h.data_len);
    for (size_t i = 0; i < h.nmeta; i++) printf("  __metadata__ %s = %s\n", h.meta_keys[i], h.meta_vals[i]);
    for (size_t i = 0; i < h.ntensors; i++) {
        const baton_st_tensor *t = &h.tensors[i];
        char shape[200];
        size_t k = (size_t)snprintf(shape, sizeof shape, "[");
        for (int j = 0; j < t->ndim && k < sizeof shape; j++)
            k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", j ? ", " : "", (long long)t->shape[j]);
        if (k < sizeof shape) snprintf(shape + k, sizeof shape - k, "]");
        printf("  %-44s %s %s\n", t->name, baton_st_dtype_name(t->dtype), shape);
    }
    baton_st_header_free(&h);
    return CLI_OK;
}

static int do_show(const char *arg)
{
    baton_err err = {0};
    char ck[4096];
    int rc = CLI_OK;
    if (is_ckpt_folder(arg)) {
        snprintf(ck, sizeof ck, "%s", arg);
        if (baton_ckpt_verify(ck, &err)) rc = cli_fail("ckpt show", &err);   /* shown as far as it reads */
    } else if (baton_ckpt_latest(arg, ck, sizeof ck, NULL, &err)) {
        return cli_fail("ckpt show", &err);
    }
    printf("checkpoint %s\n", ck);
    char p[4200];
    snprintf(p, sizeof p, "%s/state.json", ck);
    uint8_t *text;
    size_t len;
    if (baton_file_read_all(p, (size_t)64 << 20, &text, &len, &err) == BATON_OK) {
        cJSON *j = baton_jr_value((const char *)text, len);
        char *pretty = j ? baton_json_print(j, 1) : NULL;
        printf("\nstate.json:\n%s\n", pretty ? pretty : (const char *)text);
        if (!j) {
            fprintf(stderr, "baton ckpt show: %s: not valid JSON\n", p);
            rc = CLI_ERROR;
        }
        free(pretty);
        cJSON_Delete(j);
        free(text);
    } else {
        rc = cli_fail("ckpt show", &err);
    }
    snprintf(p, sizeof p, "%s/model.safetensors", ck);
    if (show_tensors(p)) rc = CLI_ERROR;
    snprintf(p, sizeof p, "%s/optim.safetensors", ck);
    if (show_tensors(p)) rc = CLI_ERROR;
    return rc;
}

int cmd_ckpt(int argc, char **argv)
{
    int json = 0;
    const struct cli_opt opts[] = {{"json", CLI_FLAG, &json, "ls: one JSON object instead of the table"}, {0}};
    const char *pos[2];
    int npos, help;
    if (cli_parse("ckpt", "ls|verify|show DIR [--json]", opts, argc, argv, pos, 2, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos != 2) {
        fprintf(stderr, "baton ckpt: expected ls|verify|show and a DIR\n");
        return CLI_USAGE;
    }
    if (json && strcmp(pos[0], "ls")) {
        fprintf(stderr, "baton ckpt: --json goes with ls\n");
        return CLI_USAGE;
    }
    if (!strcmp(pos[0], "ls")) return do_ls(pos[1], json);
    if (!strcmp(pos[0], "verify")) return do_verify(pos[1]);
    if (!strcmp(pos[0], "show")) return do_show(pos[1]);
    fprintf(stderr, "baton ckpt: unknown action '%s' (ls, verify, show)\n", pos[0]);
    return CLI_USAGE;
}
