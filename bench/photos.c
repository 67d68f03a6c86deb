/* photos.c — a folder of photo-like JPEGs for the data path's benchmarks and tests: the seed's
 * experiment (125,350 images in 500 classes, ImageNet-like sizes, ~16 GB) without real photographs,
 * which are not available offline.
 *
 *   photos --out DIR [--n 125350] [--classes 500] [--seed 1] [--min 300] [--max 800] [--quality 90]
 *          [--specials] [--cmyk FILE] [--part K/P] [--json]
 *
 * Contract:
 *  - DIR/cNNN/NNNNNNN.jpg, image i in class i mod classes; sides uniform in [min, max] each, drawn
 *    from RNG(seed, i), so the folder is a pure function of the options (the same bytes on every run
 *    with the same libjpeg-turbo). --part K/P writes only the images i with i mod P = K (and the
 *    specials with K = 0): P processes make the same folder together.
 *  - The pixels cost what a photo's cost to decode: smooth illumination, a few objects with their
 *    own colour and texture, several octaves of value noise and per-pixel sensor noise, so the
 *    entropy-coded data is dense like a photo's (~110-130 KB at ImageNet's mean size and quality 90,
 *    4:2:0 as cameras write it) rather than a flat image's few KB. bench/RESULTS.md compares the
 *    decode time per megapixel with real photos'.
 *  - --specials adds, in class c000, the odd files a real folder holds: a greyscale JPEG, a
 *    progressive JPEG, an RGB PNG, a greyscale PNG, a 1×1 JPEG and a 6000×48 JPEG. --cmyk FILE
 *    writes one CMYK JPEG there (which baton refuses, naming it).
 *  - Prints the count, bytes and mean size (or --json). Exit 1 on any error. */
#include "baton/img.h"

#include <errno.h>
#include <jpeglib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct gen_opts {
    const char *out;
    uint64_t n, seed;
    uint32_t classes, min, max;
    int quality, specials, json;
    uint64_t part, parts;
    const char *cmyk;
} gen_opts;

/* value noise: a lattice of random values, bilinearly interpolated with a smoothstep */
static float lattice(uint64_t seed, int64_t x, int64_t y)
{
    uint64_t h = seed ^ ((uint64_t)x * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)y * 0xC2B2AE3D27D4EB4FULL);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
    return (float)(h >> 40) / 16777216.0f;
}

static float vnoise(uint64_t seed, float x, float y)
{
    int64_t ix = (int64_t)floorf(x), iy = (int64_t)floorf(y);
    float fx = x - ix, fy = y - iy;
    fx = fx * fx * (3 - 2 * fx);
    fy = fy * fy * (3 - 2 * fy);
    float a = lattice(seed, ix, iy), b = lattice(seed, ix + 1, iy), c = lattice(seed, ix, iy + 1),
          d = lattice(seed, ix + 1, iy + 1);
    return (a + (b - a) * fx) + ((c + (d - c) * fx) - (a + (b - a) * fx)) * fy;
}

typedef struct blob {
    float cx, cy, rx, ry, col[3], tex;
} blob;

/* one photo-like image of h × w × c into im */
static int draw(baton_image *im, uint32_t h, uint32_t w, uint32_t c, uint64_t seed, baton_err *err)
{
    if (baton_image_resize(im, h, w, c, err)) return err->code;
    baton_rng r;
    baton_rng_seed3(&r, seed, 0x70686f74ULL, 0);
    float base[3], grad[3];
    for (int k = 0; k < 3; k++) base[k] = 40 + 160 * baton_rng_float(&r), grad[k] = 80 * (baton_rng_float(&r) - 0.5f);
    blob b[6];
    int nb = 2 + (int)baton_rng_below(&r, 5);
    for (int i = 0; i < nb; i++) {
        b[i].cx = baton_rng_float(&r) * w, b[i].cy = baton_rng_float(&r) * h;
        b[i].rx = (0.1f + 0.4f * baton_rng_float(&r)) * w, b[i].ry = (0.1f + 0.4f * baton_rng_float(&r)) * h;
        for (int k = 0; k < 3; k++) b[i].col[k] = 255 * baton_rng_float(&r);
        b[i].tex = 8 + 40 * baton_rng_float(&r);
    }
    float scale = 0.02f + 0.06f * baton_rng_float(&r);
    for (uint32_t y = 0; y < h; y++) {
        for (uint32_t x = 0; x < w; x++) {
            float v[3], t = (float)y / h;
            for (int k = 0; k < 3; k++) v[k] = base[k] + grad[k] * t;
            for (int i = 0; i < nb; i++) {
                float dx = (x - b[i].cx) / b[i].rx, dy = (y - b[i].cy) / b[i].ry, d2 = dx * dx + dy * dy;
                if (d2 < 1)
                    for (int k = 0; k < 3; k++) v[k] = v[k] * 0.3f + b[i].col[k] * 0.7f;
            }
            float n = 0, amp = 48, f = scale;
            for (int o = 0; o < 5; o++, amp *= 0.55f, f *= 2.1f) n += amp * (vnoise(seed + o, x * f, y * f) - 0.5f);
            uint64_t hsh = seed ^ ((uint64_t)y << 32 | x);
            float grain = 22 * (lattice(hsh, 7, 11) + lattice(hsh, 13, 5) - 1.0f);
            for (uint32_t k = 0; k < c; k++) {
                float p = (c == 1 ? (v[0] + v[1] + v[2]) / 3 : v[k]) + n + grain;
                im->px[((size_t)y * w + x) * c + k] = (uint8_t)(p < 0 ? 0 : p > 255 ? 255 : p);
            }
        }
    }
    return BATON_OK;
}

/* libjpeg writes what TurboJPEG's encoder (through baton_img_encode, 4:4:4 at quality 90 and up)
 * does not: the photos themselves at 4:2:0 with the standard Huffman tables, as cameras write them,
 * and the progressive and CMYK specials. */
static int write_libjpeg(const char *path, const baton_image *im, int progressive, int cmyk, int quality)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&ci);
    jpeg_stdio_dest(&ci, f);
    ci.image_width = im->w;
    ci.image_height = im->h;
    ci.input_components = cmyk ? 4 : (int)im->c;
    ci.in_color_space = cmyk ? JCS_CMYK : im->c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, quality, TRUE);
    if (progressive) jpeg_simple_progression(&ci);
    jpeg_start_compress(&ci, TRUE);
    unsigned char *row = malloc((size_t)im->w * 4);
    while (row && ci.next_scanline < ci.image_height) {
        const uint8_t *s = im->px + (size_t)ci.next_scanline * im->w * im->c;
        if (cmyk)
            for (uint32_t x = 0; x < im->w; x++)
                for (int k = 0; k < 4; k++) row[x * 4 + k] = k < 3 ? (uint8_t)(255 - s[x * im->c + (im->c == 3 ? k : 0)]) : 40;
        else
            memcpy(row, s, (size_t)im->w * im->c);
        JSAMPROW rp = row;
        jpeg_write_scanlines(&ci, &rp, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    free(row);
    return fclose(f) || !row ? -1 : 0;
}

static int save(const char *path, const baton_image *im, baton_encoding enc, int quality, uint64_t *bytes, baton_err *err)
{
    baton_buf b = {0};
    int rc = baton_img_encode(im, enc, quality, &b, err);
    FILE *f = rc ? NULL : fopen(path, "wb");
    if (!rc && (!f || fwrite(b.data, 1, b.len, f) != b.len)) rc = baton_err_errno(err, errno, "cannot write", path);
    if (f && fclose(f) && !rc) rc = baton_err_errno(err, errno, "cannot write", path);
    *bytes += b.len;
    baton_buf_free(&b);
    return rc;
}

static int specials(const gen_opts *o, baton_image *im, uint64_t *bytes, uint64_t *count, baton_err *err)
{
    static const struct {
        const char *name;
        uint32_t h, w, c;
        int kind;   /* 0 TurboJPEG, 1 PNG, 2 progressive */
    } sp[] = {{"grey.jpg", 333, 500, 1, 0}, {"progressive.jpg", 375, 500, 3, 2}, {"rgb.png", 240, 320, 3, 1},
              {"grey.png", 200, 150, 1, 1}, {"one.jpg", 1, 1, 3, 0}, {"wide.jpg", 48, 6000, 3, 0}};
    char path[4200];
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        snprintf(path, sizeof path, "%s/c000/%s", o->out, sp[i].name);
        if (draw(im, sp[i].h, sp[i].w, sp[i].c, o->seed * 31 + i, err)) return err->code;
        int rc = sp[i].kind == 2 ? (write_libjpeg(path, im, 1, 0, o->quality) ? baton_err_set(err, BATON_ERR_IO, "%s: cannot write", path) : 0)
                                 : save(path, im, sp[i].kind ? BATON_ENC_PNG : BATON_ENC_JPEG, o->quality, bytes, err);
        if (rc) return rc;
        (*count)++;
    }
    return BATON_OK;
}

static int parse(int argc, char **argv, gen_opts *o)
{
    *o = (gen_opts){.n = 125350, .seed = 1, .classes = 500, .min = 300, .max = 800, .quality = 90, .parts = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--specials")) o->specials = 1;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!v) return -1;
        else if (!strcmp(a, "--out")) o->out = v, i++;
        else if (!strcmp(a, "--cmyk")) o->cmyk = v, i++;
        else if (!strcmp(a, "--n")) o->n = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--classes")) o->classes = (uint32_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--min")) o->min = (uint32_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--max")) o->max = (uint32_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--quality")) o->quality = atoi(v), i++;
        else if (!strcmp(a, "--part")) {
            unsigned long long k, n;
            if (sscanf(v, "%llu/%llu", &k, &n) != 2 || !n || k >= n) return -1;
            o->part = k, o->parts = n, i++;
        }
        else return -1;
    }
    if ((!o->out && !o->cmyk) || !o->classes || o->classes > 100000 || !o->min || o->min > o->max || o->max > 8000 ||
        o->quality < 1 || o->quality > 100)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    gen_opts o;
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: photos --out DIR [--n N] [--classes C] [--seed S] [--min PX] [--max PX] [--quality Q] "
                        "[--specials] [--cmyk FILE] [--part K/P] [--json]\n");
        return 2;
    }
    baton_image im = {0};
    baton_err err = {0};
    uint64_t bytes = 0, count = 0, pixels = 0;
    if (o.cmyk) {
        if (draw(&im, 64, 80, 3, o.seed, &err) || write_libjpeg(o.cmyk, &im, 0, 1, o.quality)) {
            fprintf(stderr, "photos: %s: cannot write a CMYK JPEG\n", o.cmyk);
            baton_image_free(&im);
            return 1;
        }
        if (!o.out) {
            baton_image_free(&im);
            return 0;
        }
    }
    char path[4200];
    if (baton_mkdir_p(o.out, &err)) {
        fprintf(stderr, "photos: %s\n", err.msg);
        return 1;
    }
    for (uint32_t k = 0; k < o.classes && k < o.n; k++) {
        snprintf(path, sizeof path, "%s/c%03u", o.out, k);
        if (mkdir(path, 0755) && errno != EEXIST) {
            fprintf(stderr, "photos: cannot make %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    int rc = o.specials && o.part == 0 ? specials(&o, &im, &bytes, &count, &err) : 0;
    for (uint64_t i = o.part; !rc && i < o.n; i += o.parts) {
        baton_rng r;
        baton_rng_seed3(&r, o.seed, 0x73697a65ULL, i);
        uint32_t h = o.min + (uint32_t)baton_rng_below(&r, o.max - o.min + 1);
        uint32_t w = o.min + (uint32_t)baton_rng_below(&r, o.max - o.min + 1);
        snprintf(path, sizeof path, "%s/c%03u/%07llu.jpg", o.out, (unsigned)(i % o.classes), (unsigned long long)i);
        rc = draw(&im, h, w, 3, o.seed * 1000003 + i, &err);
        struct stat st;
        if (!rc && (write_libjpeg(path, &im, 0, 0, o.quality) || stat(path, &st)))
            rc = baton_err_set(&err, BATON_ERR_IO, "%s: cannot write", path);
        if (!rc) bytes += (uint64_t)st.st_size;
        pixels += (uint64_t)h * w;
        count++;
        if (!o.json && count % 5000 == 0) fprintf(stderr, "photos: %llu of %llu\n", (unsigned long long)i + 1, (unsigned long long)o.n);
    }
    baton_image_free(&im);
    if (rc) {
        fprintf(stderr, "photos: %s\n", err.msg);
        return 1;
    }
    if (o.json)
        printf("{\"images\": %llu, \"bytes\": %llu, \"mean_bytes\": %.0f, \"mean_megapixels\": %.4f}\n",
               (unsigned long long)count, (unsigned long long)bytes, count ? (double)bytes / count : 0.0,
               count ? (double)pixels / count / 1e6 : 0.0);
    else
        printf("%llu images, %.1f MB, %.1f KB each on average, in %s\n", (unsigned long long)count, bytes / 1e6,
               count ? bytes / 1e3 / count : 0.0, o.out);
    return 0;
}
