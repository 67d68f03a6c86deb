/* decode_whole.c — the naive limit of a data path for photographs: every pixel of every file
 * decoded (libjpeg-turbo through baton_img_decode, RGB, the accurate IDCT), nothing else, on T
 * threads; what any loader that decodes whole images (DataLoader + Pillow, the pipeline's reference
 * path) cannot beat.
 *
 *   decode_whole DIR [--threads T] [--limit N] [--json]    (DIR: files under DIR/<class>/, or files)
 *
 * Contract: the files are read into memory first (the timing is the decode alone); each thread
 * decodes every T-th file into its own buffer. Prints images/s, megapixels/s and milliseconds per
 * megapixel (the figure to hold against a real photo's), with /proc/cpuinfo's model. Exit 1 when a
 * file does not decode. */
#include "baton/img.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct file {
    uint8_t *data;
    size_t len;
} file;

typedef struct job {
    file *f;
    size_t n, k, step;
    double pixels;
    int bad;
} job;

static int add(file **fs, size_t *n, size_t *cap, const char *path)
{
    baton_err err = {0};
    uint8_t *d;
    size_t len;
    if (baton_file_read_all(path, (size_t)1 << 30, &d, &len, &err)) return fprintf(stderr, "decode_whole: %s\n", err.msg), -1;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        file *g = realloc(*fs, *cap * sizeof *g);
        if (!g) return -1;
        *fs = g;
    }
    (*fs)[(*n)++] = (file){d, len};
    return 0;
}

static int scan(const char *dir, int depth, file **fs, size_t *n, size_t *cap, size_t limit)
{
    struct dirent **names;
    int k = scandir(dir, &names, NULL, alphasort);
    if (k < 0) return -1;
    int rc = 0;
    for (int i = 0; i < k; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]->d_name);
        const char *e = strrchr(names[i]->d_name, '.');
        if (names[i]->d_name[0] == '.') {
        } else if (names[i]->d_type == DT_DIR && depth < 2) {
            if (!rc) rc = scan(p, depth + 1, fs, n, cap, limit);
        } else if (!rc && *n < limit && e && (!strcasecmp(e, ".jpg") || !strcasecmp(e, ".jpeg") || !strcasecmp(e, ".png"))) {
            rc = add(fs, n, cap, p);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static void *run(void *arg)
{
    job *j = arg;
    baton_image im = {0};
    baton_err err = {0};
    uint32_t rgb[3] = {0, 0, 3};
    for (size_t i = j->k; i < j->n; i += j->step) {
        if (baton_img_decode(j->f[i].data, j->f[i].len, BATON_ENC_UNKNOWN, rgb, &im, &err)) {
            j->bad++;
            continue;
        }
        j->pixels += (double)im.h * im.w;
    }
    baton_image_free(&im);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    int threads = 2, json = 0;
    size_t limit = (size_t)-1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--limit") && i + 1 < argc) limit = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else dir = NULL, i = argc;
    }
    if (!dir || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: decode_whole DIR [--threads T] [--limit N] [--json]\n");
        return 2;
    }
    file *fs = NULL;
    size_t n = 0, cap = 0;
    if (scan(dir, 0, &fs, &n, &cap, limit) || !n) {
        fprintf(stderr, "decode_whole: no images read under %s\n", dir);
        return 1;
    }
    job jobs[64];
    pthread_t th[64];
    double t0 = baton_now();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){fs, n, (size_t)t, (size_t)threads, 0, 0};
        pthread_create(&th[t], NULL, run, &jobs[t]);
    }
    double px = 0;
    int bad = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        px += jobs[t].pixels;
        bad += jobs[t].bad;
    }
    double s = baton_now() - t0;
    char cpu[160] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    if (f) fclose(f);
    if (json)
        printf("{\"images\": %zu, \"threads\": %d, \"seconds\": %.3f, \"images_per_s\": %.1f, \"megapixels_per_s\": %.2f, "
               "\"ms_per_megapixel_per_thread\": %.3f, \"failed\": %d, \"cpu\": \"%s\"}\n",
               n, threads, s, n / s, px / 1e6 / s, s * 1e3 * threads / (px / 1e6), bad, cpu);
    else
        printf("%zu images on %d threads in %.2f s: %.0f images/s, %.1f MP/s, %.2f ms per megapixel per thread (%s)%s\n", n,
               threads, s, n / s, px / 1e6 / s, s * 1e3 * threads / (px / 1e6), cpu, bad ? ", some failed" : "");
    for (size_t i = 0; i < n; i++) free(fs[i].data);
    free(fs);
    return bad ? 1 : 0;
}
