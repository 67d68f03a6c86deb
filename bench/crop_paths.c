/* crop_paths.c — the CPU time of one random-resized crop to 224×224 (torchvision's rule), per
 * image, by each way of decoding it, on the same files and boxes:
 *   whole      every pixel decoded (baton_img_decode, RGB), no crop: what a whole-image loader pays
 *   ordinary   the crop decoder's fast path on the file as it is (rows down to the box's bottom
 *              entropy-decoded, the box's rows and iMCU columns transformed, DCT-scaled)
 *   ord-rst    the same path on the file transcoded with a restart marker after every MCU
 *              (what `baton pack --jpeg-restart` stores) — the markers' cost to it
 *   rect-lj    the crop decoder on the transcoded file: its box's MCUs alone, entropy-decoded by
 *              libjpeg's own Huffman decoder (its slow path: a restart interval is set)
 *   rectangle  the same with baton's decoder of the box's MCUs (src/img/jpeg_mcu.c): the default
 *
 *   crop_paths DIR [--rounds R] [--limit N] [--seed S] [--only WAY] [--json]   (JPEGs under DIR/<class>/)
 *
 * --only runs one way alone (for a profiler); the comparison of outputs then does not happen.
 *
 * Contract: files read and transcoded first (not timed; the byte cost is reported); then R rounds
 * over every file, the five ways alternated on each file in a rotating order, each timed with
 * CLOCK_THREAD_CPUTIME_ID on one thread, the box drawn from (seed, round, file). Prints ms per
 * image and the ratios; the rectangle's output is compared with the ordinary path's (it must be
 * the same bytes: exit 1 if not). */
#include "../src/img/jpeg_rect_internal.h"
#include "../src/img/region_internal.h"
#include "baton/img.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct file {
    uint8_t *data, *rst;
    size_t len, rst_len;
} file;

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
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
        } else if (!rc && *n < limit && e && (!strcasecmp(e, ".jpg") || !strcasecmp(e, ".jpeg"))) {
            baton_err err = {0};
            file f = {0};
            baton_buf b = {0};
            if (baton_file_read_all(p, (size_t)1 << 30, &f.data, &f.len, &err) ||
                img_jpeg_restart(f.data, f.len, &b, &err)) {
                fprintf(stderr, "crop_paths: %s: %s\n", p, err.msg);
                rc = -1;
            } else {
                f.rst = b.data;
                f.rst_len = b.len;
                if (*n == *cap) {
                    *cap = *cap ? *cap * 2 : 1024;
                    *fs = realloc(*fs, *cap * sizeof **fs);
                }
                (*fs)[(*n)++] = f;
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static double urand(baton_rng *r)
{
    return (double)(baton_rng_next(r) >> 11) / 9007199254740992.0;
}

/* torchvision's RandomResizedCrop.get_params: scale (0.08, 1), ratio (3/4, 4/3). */
static int plan_rrc(void *ctx, uint32_t h, uint32_t w, double box[4], baton_err *err)
{
    baton_rng *r = ctx;
    double area = (double)h * w;
    for (int t = 0; t < 10; t++) {
        double ta = area * (0.08 + 0.92 * urand(r));
        double ar = exp(log(3.0 / 4) + urand(r) * (log(4.0 / 3) - log(3.0 / 4)));
        double cw = round(sqrt(ta * ar)), ch = round(sqrt(ta / ar));
        if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
            double x = floor(urand(r) * (w - cw + 1)), y = floor(urand(r) * (h - ch + 1));
            box[0] = x, box[1] = y, box[2] = x + cw, box[3] = y + ch;
            return BATON_OK;
        }
    }
    double cw = w, ch = h, ratio = (double)w / h;
    if (ratio < 3.0 / 4) ch = round(cw / (3.0 / 4));
    else if (ratio > 4.0 / 3) cw = round(ch * (4.0 / 3));
    cw = cw < 1 ? 1 : cw, ch = ch < 1 ? 1 : ch;
    box[0] = floor((w - cw) / 2), box[1] = floor((h - ch) / 2), box[2] = box[0] + cw, box[3] = box[1] + ch;
    return BATON_OK;
}

enum { WHOLE, ORDINARY, ORD_RST, RECT_LJ, RECT, WAYS };
static const char *const way_name[WAYS] = {"whole", "ordinary", "ord-rst", "rect-lj", "rectangle"};

int main(int argc, char **argv)
{
    const char *dir = NULL;
    int rounds = 3, json = 0, only = -1;
    size_t limit = (size_t)-1;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--limit") && i + 1 < argc) limit = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = -2;
            for (int w = 0; w < WAYS; w++)
                if (!strcmp(argv[i + 1], way_name[w])) only = w;
            i++;
        }
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else dir = NULL, i = argc;
    }
    if (!dir || rounds < 1 || only == -2) {
        fprintf(stderr, "usage: crop_paths DIR [--rounds R] [--limit N] [--seed S] [--only WAY] [--json]\n");
        return 2;
    }
    file *fs = NULL;
    size_t n = 0, cap = 0;
    if (scan(dir, 0, &fs, &n, &cap, limit) || !n) {
        fprintf(stderr, "crop_paths: no JPEGs read under %s\n", dir);
        return 1;
    }
    double bytes[2] = {0, 0}, t[WAYS] = {0};
    for (size_t i = 0; i < n; i++) bytes[0] += fs[i].len, bytes[1] += fs[i].rst_len;
    img_scratch s_ord = {.rect_off = 1}, s_rect = {0}, s_lj = {.huff_off = 1};
    baton_image whole = {0}, out[WAYS] = {{0}};
    baton_err err = {0};
    uint32_t rgb[3] = {0, 0, 3};
    size_t differ = 0, rects = 0;
    for (int rd = 0; rd < rounds; rd++)
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < WAYS; k++) {
                int way = (int)((k + i + (size_t)rd) % WAYS);
                if (only >= 0 && way != only) continue;
                baton_rng r;
                baton_rng_seed3(&r, seed, (uint64_t)rd, i);
                const file *f = &fs[i];
                int rc;
                uint64_t before = s_rect.rect_decodes;
                double t0 = cpu_now();
                if (way == WHOLE) rc = baton_img_decode(f->data, f->len, BATON_ENC_JPEG, rgb, &whole, &err);
                else if (way == ORDINARY || way == ORD_RST)
                    rc = img_decode_crop(way == ORDINARY ? f->data : f->rst, way == ORDINARY ? f->len : f->rst_len,
                                         BATON_ENC_JPEG, NULL, 3, plan_rrc, &r, 224, 224, &s_ord, &out[way], NULL, NULL,
                                         &err);
                else
                    rc = img_decode_crop(f->rst, f->rst_len, BATON_ENC_JPEG, NULL, 3, plan_rrc, &r, 224, 224,
                                         way == RECT ? &s_rect : &s_lj, &out[way], NULL, NULL, &err);
                t[way] += cpu_now() - t0;
                if (rc) {
                    fprintf(stderr, "crop_paths: file %zu, %s: %s\n", i, way_name[way], err.msg);
                    return 1;
                }
                rects += s_rect.rect_decodes != before;
                if (k == WAYS - 1 && only < 0)
                    for (int w = ORD_RST; w <= RECT; w++)
                        differ += memcmp(out[ORDINARY].px, out[w].px, (size_t)224 * 224 * 3) != 0;
            }
    double per = 1e3 / ((double)n * rounds);
    if (json) {
        printf("{\"files\": %zu, \"rounds\": %d, \"bytes\": %.0f, \"bytes_restart\": %.0f, \"rectangle_crops\": %zu, "
               "\"differ\": %zu",
               n, rounds, bytes[0], bytes[1], rects, differ);
        for (int w = 0; w < WAYS; w++) printf(", \"%s_ms\": %.4f", way_name[w], t[w] * per);
        printf("}\n");
    } else {
        printf("%zu JPEGs, %.1f KB each; transcoded with a restart marker after every MCU: %+.1f%% bytes\n", n,
               bytes[0] / n / 1e3, 100.0 * (bytes[1] / bytes[0] - 1));
        printf("random-resized crop to 224x224, CPU ms per image (%d rounds, ways alternated):\n", rounds);
        for (int w = 0; w < WAYS; w++)
            if (only < 0) printf("  %-10s %.3f ms   (whole / it: %.2fx)\n", way_name[w], t[w] * per, t[WHOLE] / t[w]);
            else if (w == only) printf("  %-10s %.3f ms\n", way_name[w], t[w] * per);
        printf("rectangle path taken for %zu of %zu crops; outputs differing from the ordinary path's: %zu\n", rects,
               n * (size_t)rounds, differ);
    }
    img_scratch_free(&s_ord);
    img_scratch_free(&s_rect);
    img_scratch_free(&s_lj);
    baton_image_free(&whole);
    for (int w = 0; w < WAYS; w++) baton_image_free(&out[w]);
    for (size_t i = 0; i < n; i++) free(fs[i].data), free(fs[i].rst);
    free(fs);
    return differ ? 1 : 0;
}
