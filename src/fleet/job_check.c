/* job_check.c — what `baton fleet check` can tell about a job's commands before anything is
 * launched: that their tools exist, that the data they name exists, and that the files they name
 * are in the volume the command will run in.
 *
 * Each command is split as the shell would split plain words (wordexp, no command substitution);
 * a command with pipes, lists or redirections is not split and says so. Then:
 *   - its program: a name on PATH (or in the folder of the baton running the check, which the
 *     fleet puts first on the workers' PATH), or a path that exists and is executable;
 *   - --data URI (also --data=URI): a local path or file:// URI must be a folder holding
 *     dataset.json — relative paths are looked up in the volume seed, where the command runs;
 *     http(s):// and s3:// are not fetched here (noted, not checked);
 *   - the files a command reads: the script an interpreter runs (python3 train.py, bash x.sh) and
 *     the values of --metadata, --hyper and --reward that name a file by its extension; relative
 *     ones must be in the volume seed. (What a command writes — --log, --ckpt-dir — is not looked
 *     for.)
 * Contract: reads the file system only; the problems, one per line, into the caller's buffer. */
#include "fleet_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wordexp.h>

static void add(char *out, size_t cap, size_t *o, int *n, const char *fmt, const char *a, const char *b)
{
    if (*o + 2 >= cap) return;
    int k = snprintf(out + *o, cap - *o, fmt, a, b);
    if (k > 0) *o += (size_t)k < cap - *o ? (size_t)k : cap - *o - 1;
    (*n)++;
}

/* Is name an executable on PATH (with bin_dir first)? */
static int on_path(const char *name, const char *bin_dir)
{
    const char *p = getenv("PATH");
    char list[8192];
    snprintf(list, sizeof list, "%s%s%s", bin_dir ? bin_dir : "", bin_dir ? ":" : "", p ? p : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char f[8400];
        snprintf(f, sizeof f, "%s/%s", *d ? d : ".", name);
        if (access(f, X_OK) == 0) return 1;
    }
    return 0;
}

/* path as the command will see it: absolute, or inside the seed ("" when there is no seed) */
static int in_volume(const char *seed, const char *path, char *out, size_t cap)
{
    if (path[0] == '/') return snprintf(out, cap, "%s", path) < (int)cap;
    if (!seed[0]) return 0;
    return snprintf(out, cap, "%s/%s", seed, path) < (int)cap;
}

static int has_ext(const char *a)
{
    static const char *const ext[] = {".py", ".yaml", ".yml", ".json", ".npy", ".csv", ".txt", ".tar"};
    size_t n = strlen(a);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && !strcmp(a + n - e, ext[i])) return 1;
    }
    return 0;
}

static void check_data(const baton_job *j, const char *uri, char *out, size_t cap, size_t *o, int *n)
{
    if (!strncmp(uri, "http://", 7) || !strncmp(uri, "https://", 8) || !strncmp(uri, "s3://", 5)) return;
    const char *p = !strncmp(uri, "file://", 7) ? uri + 7 : uri;
    char where[4200], ds[4300];
    struct stat st;
    if (!in_volume(j->volume.seed, p, where, sizeof where)) {
        add(out, cap, o, n, "--data %s: a relative path, and the job has no volume.seed to find it in%s\n", uri, "");
        return;
    }
    snprintf(ds, sizeof ds, "%s/dataset.json", where);
    if (stat(where, &st) != 0)
        add(out, cap, o, n, "--data %s: %s does not exist (pack the data there, or give volume.seed)\n", uri, where);
    else if (stat(ds, &st) != 0)
        add(out, cap, o, n, "--data %s: %s holds no dataset.json (baton pack writes it)\n", uri, where);
}

int baton_job_check_commands(const baton_job *j, const char *bin_dir, char *out, size_t cap)
{
    size_t o = 0;
    int n = 0;
    out[0] = 0;
    for (size_t c = 0; c < j->ncommands; c++) {
        wordexp_t w;
        if (wordexp(j->commands[c], &w, WRDE_NOCMD) != 0) continue;   /* shell syntax: the shell decides */
        if (w.we_wordc == 0) {
            wordfree(&w);
            continue;
        }
        const char *prog = w.we_wordv[0];
        char where[4200];
        if (strchr(prog, '/')) {
            if (!in_volume(j->volume.seed, prog, where, sizeof where) || access(where, X_OK) != 0)
                add(out, cap, &o, &n, "program %s: not an executable file%s\n", prog,
                    prog[0] == '/' ? "" : " in the volume seed");
        } else if (!on_path(prog, bin_dir)) {
            add(out, cap, &o, &n, "program %s: not on PATH%s\n", prog, " (install it, or name its path)");
        }
        const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
        const int interp = !strncmp(base, "python", 6) || !strcmp(base, "bash") || !strcmp(base, "sh");
        for (size_t i = 1; i < w.we_wordc; i++) {
            const char *a = w.we_wordv[i], *file = NULL;
            if (!strcmp(a, "--data") && i + 1 < w.we_wordc) check_data(j, w.we_wordv[++i], out, cap, &o, &n);
            else if (!strncmp(a, "--data=", 7)) check_data(j, a + 7, out, cap, &o, &n);
            else if ((!strcmp(a, "--metadata") || !strcmp(a, "--hyper") || !strcmp(a, "--reward")) && i + 1 < w.we_wordc)
                file = w.we_wordv[++i];
            else if (interp && i == 1 && a[0] != '-')
                file = a;
            if (file && has_ext(file) && !strstr(file, "://") &&
                (!in_volume(j->volume.seed, file, where, sizeof where) || access(where, R_OK) != 0))
                add(out, cap, &o, &n, "%s: not in the volume seed (%s), where the command runs\n", file,
                    j->volume.seed[0] ? j->volume.seed : "the job has none");
        }
        wordfree(&w);
    }
    return n;
}
