/* test_img_pipeline.c — the decode pipeline end to end over mount-mode loaders on packed datasets:
 *  - every batch equals an independent computation (a second loader in the same order, parse,
 *    decode, img_augment_apply_ref), with and without augmentation, so every sample of an epoch
 *    appears exactly once and in order; RecordIO raw/JPEG/PNG, TFRecord, grey and RGB, NCHW/NHWC;
 *  - batch bytes are identical for 1 and 3 workers (crop pad 2 + flip);
 *  - resume: a fresh loader seeked to a batch's `next` cursor continues byte-identically across an
 *    epoch boundary (also from a cursor inside a batch);
 *  - BATON_END exactly once per epoch; ceil(N/B) batches (floor with drop_last), cursors;
 *  - an undecodable record and an out-of-range label (dataset.json's checksums made to match, as
 *    if packed so) are errors naming shard and offset; the error
 *    is sticky and close() returns; close() with a full queue returns; holding every batch is an
 *    error, not a hang.
 * Datasets: a generated image folder (always), and Fashion-MNIST's 10k test split when Debian's
 * dataset-fashion-mnist is installed. A watchdog alarm turns a hang into a failure. */
#include "../../src/img/augment_internal.h"
#include "../../src/rec/rec_internal.h"
#include "baton/img.h"
#include "check.h"

#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define FM "/usr/share/datasets/fashion-mnist"

static char tmp[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ---------------------------------------------------------------- datasets */

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* An image folder of n PNGs, h×w×c, in `classes` class folders. */
static void make_folder(const char *dir, int n, uint32_t h, uint32_t w, uint32_t c, int classes)
{
    baton_err err = {0};
    CHECK(mkdir(dir, 0755) == 0);
    baton_image im = {0};
    baton_buf png = {0};
    unsigned seed = 77;
    for (int k = 0; k < classes; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/class%d", dir, k);
        CHECK(mkdir(path, 0755) == 0);
    }
    for (int i = 0; i < n; i++) {
        CHECK(baton_image_resize(&im, h, w, c, &err) == BATON_OK);
        for (size_t j = 0; j < (size_t)h * w * c; j++)
            im.px[j] = (uint8_t)((j * 7 + (size_t)i * 13 + (rand_r(&seed) & 31)) & 0xff);
        png.len = 0;
        CHECK_MSG(baton_img_encode(&im, BATON_ENC_PNG, 0, &png, &err) == BATON_OK, "%s", err.msg);
        char path[512];
        snprintf(path, sizeof path, "%s/class%d/img%04d.png", dir, i % classes, i);
        CHECK(write_file(path, png.data, png.len) == 0);
    }
    baton_image_free(&im);
    baton_buf_free(&png);
}

static int pack(const char *from, const char *split, const char *out, baton_rec_format fmt,
                baton_encoding enc, double shard_mb, uint32_t h, uint32_t w)
{
    baton_pack_opts o;
    baton_pack_opts_default(&o);
    o.from = from;
    o.split = split;
    o.out_dir = out;
    o.format = fmt;
    o.encoding = enc;
    o.shard_mb = shard_mb;
    o.seed = 5;
    baton_manifest m;
    baton_err err = {0};
    int rc = baton_pack(&o, &m, &err);
    CHECK_MSG(rc == BATON_OK, "pack %s: %s", out, err.msg);
    if (rc != BATON_OK) return rc;
    if (!m.shape[0]) {
        /* image folders are packed without a fixed shape; ours all share one, so declare it */
        m.shape[0] = h;
        m.shape[1] = w;
        m.shape[2] = m.channels;
        rc = baton_manifest_save(out, &m, &err);
        CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    }
    baton_manifest_free(&m);
    return rc;
}

static void copy_dir(const char *from, const char *to)
{
    CHECK(mkdir(to, 0755) == 0);
    DIR *d = opendir(from);
    CHECK(d != NULL);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        uint8_t *p = NULL;
        size_t n = 0;
        baton_err err = {0};
        CHECK(baton_file_read_all(a, (size_t)1 << 30, &p, &n, &err) == BATON_OK);
        CHECK(write_file(b, p, n) == 0);
        free(p);
    }
    closedir(d);
}

/* ---------------------------------------------------------------- running */

static baton_loader *open_loader(const char *dir, uint64_t seed)
{
    baton_loader_opts o;
    baton_loader_opts_default(&o);
    o.uri = dir;
    o.mode = BATON_MODE_MOUNT;
    o.seed = seed;
    baton_loader *l = NULL;
    baton_err err = {0};
    int rc = baton_loader_open(&o, &l, &err);
    CHECK_MSG(rc == BATON_OK, "loader %s: %s", dir, err.msg);
    return l;
}

typedef struct rbatch {
    int end;                 /* an END marker, not a batch */
    uint32_t n, total;
    uint64_t epoch, first;
    baton_cursor next;
    int last;
    float *x;
    int32_t *y;
} rbatch;

typedef struct run {
    rbatch *b;
    size_t nb, cap;
    size_t sample_floats;
    int rc;                  /* what stopped the run: BATON_OK (enough), or an error */
    baton_err err;
} run;

static void run_free(run *r)
{
    for (size_t i = 0; i < r->nb; i++) {
        free(r->b[i].x);
        free(r->b[i].y);
    }
    free(r->b);
    memset(r, 0, sizeof *r);
}

static void run_add(run *r, const rbatch *b)
{
    if (r->nb == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->b = realloc(r->b, r->cap * sizeof *r->b);
    }
    r->b[r->nb++] = *b;
}

/* Run a pipeline on dir from cursor c until `ends` END markers were seen or `max_batches`
 * batches were taken. */
static run run_pipeline(const char *dir, baton_cursor c, const baton_pipeline_opts *po, int ends,
                        size_t max_batches)
{
    run r = {0};
    baton_loader *l = open_loader(dir, c.seed);
    if (!l) {
        r.rc = BATON_ERR_ARG;
        return r;
    }
    baton_err err = {0};
    CHECK_MSG(baton_loader_seek(l, &c, &err) == BATON_OK, "%s", err.msg);
    baton_pipeline *p = baton_pipeline_open(l, po, &err);
    CHECK_MSG(p != NULL, "%s", err.msg);
    if (!p) {
        baton_loader_close(l);
        r.rc = BATON_ERR_ARG;
        return r;
    }
    const baton_manifest *m = baton_loader_manifest(l);
    r.sample_floats = (size_t)m->shape[0] * m->shape[1] * m->shape[2];
    int seen_ends = 0;
    size_t batches = 0;
    while (seen_ends < ends && batches < max_batches) {
        baton_batch *b = NULL;
        int rc = baton_pipeline_next(p, &b, &err);
        if (rc == BATON_END) {
            run_add(&r, &(rbatch){.end = 1});
            seen_ends++;
            continue;
        }
        if (rc != BATON_OK) {
            r.rc = rc;
            r.err = err;
            break;
        }
        rbatch rb = {.n = b->n, .total = b->total, .epoch = b->epoch, .first = b->first, .next = b->next,
                     .last = b->last_of_epoch};
        CHECK(b->c == m->shape[2] && b->h == m->shape[0] && b->w == m->shape[1]);
        rb.x = malloc(b->n * r.sample_floats * sizeof(float));
        rb.y = malloc(b->n * sizeof(int32_t));
        memcpy(rb.x, b->x, b->n * r.sample_floats * sizeof(float));
        memcpy(rb.y, b->y, b->n * sizeof(int32_t));
        run_add(&r, &rb);
        baton_pipeline_release(p, b);
        batches++;
    }
    baton_pipeline_close(p);
    baton_loader_close(l);
    return r;
}

/* The expected floats and labels of one epoch, computed without the pipeline. Also checks that
 * the epoch's record ids are a permutation of 0..N-1. */
static size_t expect_epoch(const char *dir, uint64_t seed, uint64_t epoch,
                           const baton_pipeline_opts *po, float **xs, int32_t **ys)
{
    baton_loader *l = open_loader(dir, seed);
    if (!l) return 0;
    baton_err err = {0};
    baton_cursor c = {seed, epoch, 0};
    CHECK(baton_loader_seek(l, &c, &err) == BATON_OK);
    const baton_manifest *m = baton_loader_manifest(l);
    CHECK(m->shape[0] && m->shape[1] && m->shape[2]);
    if (!m->shape[0] || !m->shape[1] || !m->shape[2]) {
        baton_loader_close(l);
        return 0;
    }
    size_t n = baton_loader_epoch_size(l), sf = (size_t)m->shape[0] * m->shape[1] * m->shape[2];
    *xs = malloc(n * sf * sizeof(float));
    *ys = malloc(n * sizeof(int32_t));
    uint8_t *seen = calloc(n, 1);
    baton_image im = {0};
    uint64_t dup = 0, bad = 0;
    baton_record rec;
    size_t i = 0;
    int rc;
    while ((rc = baton_loader_next(l, &rec, &err)) == BATON_OK) {
        baton_sample s;
        if (i >= n || baton_sample_parse(m->format, rec.data, rec.len, "x", rec.offset, &s, &err) ||
            baton_img_decode(s.img, s.img_len, m->encoding, m->shape, &im, &err)) {
            bad++;
            i++;
            continue;
        }
        if (s.id >= n || seen[s.id]) dup++;
        else seen[s.id] = 1;
        baton_augment a;
        img_augment_draw(seed, epoch, i, po->crop_pad, po->flip, &a);
        img_augment_apply_ref(&im, &a, m->mean, m->std, po->layout, *xs + i * sf);
        (*ys)[i] = (int32_t)s.label;
        i++;
    }
    CHECK(rc == BATON_END);
    CHECK_EQ_U(i, n);
    CHECK_EQ_U(dup, 0);
    CHECK_EQ_U(bad, 0);
    free(seen);
    baton_image_free(&im);
    baton_loader_close(l);
    return n;
}

/* Check a run's structure (batches on the grid, one END per epoch) and, for the epochs in
 * [e0, e0 + nep), its contents against expect_epoch. */
static void check_run(const char *what, const char *dir, const run *r, uint64_t seed,
                      const baton_pipeline_opts *po, uint64_t e0, int nep)
{
    uint64_t B = po->batch;
    for (int k = 0; k < nep; k++) {
        uint64_t epoch = e0 + (uint64_t)k;
        float *xs = NULL;
        int32_t *ys = NULL;
        size_t n = expect_epoch(dir, seed, epoch, po, &xs, &ys);
        uint64_t want_batches = po->drop_last ? n / B : (n + B - 1) / B;
        uint64_t got = 0, mism = 0, pos = 0, grid_bad = 0;
        size_t sf = r->sample_floats;
        for (size_t i = 0; i < r->nb; i++) {
            const rbatch *b = &r->b[i];
            if (b->end) continue;
            if (b->epoch != epoch) continue;
            if (b->first != pos || b->n != (pos + B <= n ? B : n - pos)) grid_bad++;
            if (b->first + b->n <= n) {
                if (memcmp(b->x, xs + b->first * sf, b->n * sf * sizeof(float)) != 0 ||
                    memcmp(b->y, ys + b->first, b->n * sizeof(int32_t)) != 0)
                    mism++;
            }
            uint64_t end = b->first + b->n;
            int last = got + 1 == want_batches;
            if (b->last != last) grid_bad++;
            baton_cursor want = last ? (baton_cursor){seed, epoch + 1, 0} : (baton_cursor){seed, epoch, end};
            if (memcmp(&b->next, &want, sizeof want) != 0) grid_bad++;
            pos = end;
            got++;
            /* the END marker must follow the last batch directly */
            if (last && !(i + 1 < r->nb && r->b[i + 1].end)) grid_bad++;
        }
        CHECK_MSG(got == want_batches, "%s: epoch %llu: %llu batches, expected %llu", what,
                  (unsigned long long)epoch, (unsigned long long)got, (unsigned long long)want_batches);
        CHECK_MSG(mism == 0, "%s: epoch %llu: %llu batches differ from the reference", what,
                  (unsigned long long)epoch, (unsigned long long)mism);
        CHECK_MSG(grid_bad == 0, "%s: epoch %llu: %llu grid/cursor problems", what,
                  (unsigned long long)epoch, (unsigned long long)grid_bad);
        free(xs);
        free(ys);
    }
    /* END markers: exactly one per epoch, each right after a batch (every epoch has batches) */
    uint64_t ends = 0, doubled = 0;
    for (size_t i = 0; i < r->nb; i++) {
        ends += (uint64_t)r->b[i].end;
        if (r->b[i].end && (i == 0 || r->b[i - 1].end)) doubled++;
    }
    CHECK_MSG(ends == (uint64_t)nep && doubled == 0, "%s: %llu END markers for %d epochs", what,
              (unsigned long long)ends, nep);
}

static int same_batches(const run *a, size_t ia, const run *b, size_t ib, size_t count)
{
    if (ia + count > a->nb || ib + count > b->nb) return 0;
    for (size_t k = 0; k < count; k++) {
        const rbatch *x = &a->b[ia + k], *y = &b->b[ib + k];
        if (x->end != y->end) return 0;
        if (x->end) continue;
        if (x->n != y->n || x->epoch != y->epoch || x->first != y->first || x->last != y->last ||
            memcmp(&x->next, &y->next, sizeof x->next) != 0 ||
            memcmp(x->x, y->x, x->n * a->sample_floats * sizeof(float)) != 0 ||
            memcmp(x->y, y->y, x->n * sizeof(int32_t)) != 0)
            return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- tests */

static baton_pipeline_opts popts(int workers, uint32_t batch, uint32_t pad, int flip)
{
    baton_pipeline_opts o;
    baton_pipeline_opts_default(&o);
    o.workers = workers;
    o.batch = batch;
    o.crop_pad = pad;
    o.flip = flip;
    return o;
}

/* Data parallelism's parts: part r of W holds exactly the whole batch's samples r, r+W, … (the
 * same floats, augmentation included, and labels), the whole batch's size, boundaries and cursor;
 * an empty part of a short last batch still comes (the rank must join the step). */
static void test_parts(const char *dir, uint32_t batch, uint32_t world)
{
    baton_cursor c0 = {5, 0, 0};
    baton_pipeline_opts po = popts(2, batch, 2, 1);
    run full = run_pipeline(dir, c0, &po, 2, 1000);
    CHECK(full.rc == BATON_OK && full.nb > 4);
    size_t sf = full.sample_floats;
    for (uint32_t r = 0; r < world; r++) {
        po.part_rank = r;
        po.part_world = world;
        run part = run_pipeline(dir, c0, &po, 2, 1000);
        CHECK_MSG(part.rc == BATON_OK && part.nb == full.nb, "rank %u of %u: %zu batches, whole %zu", r, world,
                  part.nb, full.nb);
        for (size_t k = 0; k < part.nb && k < full.nb; k++) {
            const rbatch *a = &full.b[k], *b = &part.b[k];
            CHECK(a->end == b->end);
            if (a->end || b->end) continue;
            uint32_t want = a->n > r ? (a->n - r + world - 1) / world : 0;
            CHECK_MSG(b->n == want && b->total == a->n, "rank %u/%u batch %zu: n %u total %u, whole %u", r, world, k,
                      b->n, b->total, a->n);
            CHECK(b->epoch == a->epoch && b->first == a->first && b->last == a->last &&
                  !memcmp(&b->next, &a->next, sizeof a->next));
            for (uint32_t j = 0; j < b->n && j < want; j++) {
                uint32_t i = r + j * world;
                CHECK(!memcmp(b->x + (size_t)j * sf, a->x + (size_t)i * sf, sf * sizeof(float)) && b->y[j] == a->y[i]);
            }
        }
        run_free(&part);
    }
    run_free(&full);
}

static void test_contents(const char *dir, uint32_t batch, baton_layout layout)
{
    const uint64_t seed = 11;
    baton_cursor c0 = {seed, 0, 0};
    baton_pipeline_opts plain = popts(2, batch, 0, 0), aug = popts(2, batch, 2, 1);
    plain.layout = aug.layout = layout;
    run r = run_pipeline(dir, c0, &plain, 2, SIZE_MAX);
    CHECK_MSG(r.rc == BATON_OK, "%s", r.err.msg);
    check_run("plain", dir, &r, seed, &plain, 0, 2);
    run_free(&r);
    r = run_pipeline(dir, c0, &aug, 2, SIZE_MAX);
    CHECK_MSG(r.rc == BATON_OK, "%s", r.err.msg);
    check_run("augmented", dir, &r, seed, &aug, 0, 2);
    run_free(&r);
    aug.reference = 1;
    aug.depth = 1;
    r = run_pipeline(dir, c0, &aug, 1, SIZE_MAX);
    CHECK_MSG(r.rc == BATON_OK, "%s", r.err.msg);
    check_run("reference depth 1", dir, &r, seed, &aug, 0, 1);
    run_free(&r);
    aug.reference = 0;
    aug.drop_last = 1;
    aug.depth = 3;
    r = run_pipeline(dir, c0, &aug, 2, SIZE_MAX);
    CHECK_MSG(r.rc == BATON_OK, "%s", r.err.msg);
    check_run("drop_last", dir, &r, seed, &aug, 0, 2);
    run_free(&r);
}

static void test_determinism(const char *dir, uint32_t batch)
{
    baton_cursor c0 = {3, 0, 0};
    baton_pipeline_opts o1 = popts(1, batch, 2, 1), o3 = popts(3, batch, 2, 1);
    o3.depth = 7;
    run a = run_pipeline(dir, c0, &o1, 2, SIZE_MAX), b = run_pipeline(dir, c0, &o3, 2, SIZE_MAX);
    CHECK(a.rc == BATON_OK && b.rc == BATON_OK);
    CHECK(a.nb == b.nb && a.nb > 2);
    CHECK(same_batches(&a, 0, &b, 0, a.nb));
    /* a different seed gives different batches */
    run c = run_pipeline(dir, (baton_cursor){4, 0, 0}, &o1, 1, SIZE_MAX);
    CHECK(c.nb > 0 && !same_batches(&a, 0, &c, 0, 1));
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

static void test_resume(const char *dir, uint32_t batch)
{
    const uint64_t seed = 9;
    baton_pipeline_opts o = popts(2, batch, 2, 1);
    run full = run_pipeline(dir, (baton_cursor){seed, 0, 0}, &o, 2, SIZE_MAX);
    CHECK(full.rc == BATON_OK);
    /* epoch 0 has k0 batches, then END at index k0 */
    size_t k0 = 0;
    while (k0 < full.nb && !full.b[k0].end) k0++;
    CHECK(k0 >= 3 && k0 < full.nb);
    if (k0 < 3 || k0 >= full.nb) {
        run_free(&full);
        return;
    }
    /* resume after a middle batch, after the epoch's second-to-last, and after its last */
    size_t picks[3] = {k0 / 2, k0 - 2, k0 - 1};
    for (int t = 0; t < 3; t++) {
        size_t i = picks[t];
        baton_cursor c = full.b[i].next;
        /* after the epoch's last batch the cursor is {epoch 1, 0}: epoch 0's END is not redone */
        size_t from = t == 2 ? i + 2 : i + 1, rest = full.nb - from;
        run r = run_pipeline(dir, c, &o, t == 2 ? 1 : 2, SIZE_MAX);
        CHECK_MSG(r.rc == BATON_OK, "%s", r.err.msg);
        CHECK(t != 2 || (c.epoch == 1 && c.position == 0));
        CHECK_MSG(r.nb == rest && same_batches(&full, from, &r, 0, rest),
                  "resume after batch %zu: %zu batches (expected %zu) or bytes differ", i, r.nb, rest);
        run_free(&r);
    }
    /* from a cursor inside a batch: the first batch finishes the grid batch */
    baton_cursor mid = {seed, 0, full.b[1].first + 5};
    run r = run_pipeline(dir, mid, &o, 1, 2);
    CHECK(r.nb == 2 && !r.b[0].end && r.b[0].first == mid.position &&
          r.b[0].n == full.b[1].n - 5);
    if (r.nb == 2 && r.b[0].n == full.b[1].n - 5) {
        CHECK(memcmp(r.b[0].x, full.b[1].x + 5 * full.sample_floats,
                     r.b[0].n * full.sample_floats * sizeof(float)) == 0);
        CHECK(memcmp(&r.b[0].next, &full.b[1].next, sizeof(baton_cursor)) == 0);
        CHECK(same_batches(&full, 2, &r, 1, 1));
    }
    run_free(&r);
    run_free(&full);
}

/* dataset.json made to list shard s as it now is (its CRC32C and its pieces'): a pack whose
 * records themselves are bad, which the checksums pass and the decoder must refuse. */
static void reseal(const char *dir, baton_manifest *m, size_t s)
{
    baton_shard_info *si = &m->shards[s];
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, si->file);
    uint8_t *b = NULL;
    size_t n = 0;
    baton_err err = {0};
    CHECK(baton_file_read_all(path, 1u << 30, &b, &n, &err) == BATON_OK && n == si->bytes);
    si->crc32c = baton_crc32c(0, b, n);
    for (uint64_t k = 0; k < baton_shard_pieces(si); k++) {
        uint64_t lo = k * si->piece_bytes, hi = lo + si->piece_bytes < n ? lo + si->piece_bytes : n;
        si->piece_crc32c[k] = baton_crc32c(0, b + lo, (size_t)(hi - lo));
    }
    free(b);
    CHECK_MSG(baton_manifest_save(dir, m, &err) == BATON_OK, "%s", err.msg);
}

static void test_bad_records(const char *jpeg_dir, const char *other_dir)
{
    baton_err err = {0};
    baton_manifest m;
    /* 1: the JPEG bytes of record 3 of shard 0 no longer start with SOI */
    char bad[300], path[1400];
    snprintf(bad, sizeof bad, "%s/bad-jpeg", tmp);
    copy_dir(jpeg_dir, bad);
    CHECK(baton_manifest_load(bad, &m, &err) == BATON_OK);
    snprintf(path, sizeof path, "%s/%s", bad, m.shards[0].index);
    baton_idx_entry *e = NULL;
    size_t ne = 0;
    CHECK(rec_idx_load(path, &e, &ne, &err) == BATON_OK && ne > 3);
    uint64_t off = ne > 3 ? e[3].offset : 0;
    snprintf(path, sizeof path, "%s/%s", bad, m.shards[0].file);
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        /* RecordIO: 8 bytes of framing, the 24-byte IRHeader, then the image */
        CHECK(fseek(f, (long)(off + 8 + 24), SEEK_SET) == 0);
        CHECK(fwrite("\0\0\0\0", 1, 4, f) == 4);
        CHECK(fclose(f) == 0);
    }
    reseal(bad, &m, 0);
    char want_off[64];
    snprintf(want_off, sizeof want_off, "offset %llu", (unsigned long long)off);
    baton_pipeline_opts o = popts(2, 16, 2, 1);
    run r = run_pipeline(bad, (baton_cursor){1, 0, 0}, &o, 3, SIZE_MAX);
    CHECK(r.rc < 0);
    CHECK_MSG(strstr(r.err.msg, m.shards[0].file) && strstr(r.err.msg, want_off),
              "message: %s (want %s, %s)", r.err.msg, m.shards[0].file, want_off);
    run_free(&r);
    free(e);
    baton_manifest_free(&m);

    /* sticky, and close right after the error */
    baton_loader *l = open_loader(bad, 1);
    baton_pipeline *p = l ? baton_pipeline_open(l, &o, &err) : NULL;
    CHECK(p != NULL);
    int rc = BATON_OK, errors = 0;
    for (int i = 0; p && i < 100000 && errors < 3; i++) {
        baton_batch *b;
        rc = baton_pipeline_next(p, &b, &err);
        if (rc == BATON_OK) baton_pipeline_release(p, b);
        if (rc < 0) errors++;
    }
    CHECK(errors == 3 && rc < 0);
    baton_pipeline_close(p);
    baton_loader_close(l);

    /* 2: a label outside [0, classes) */
    snprintf(bad, sizeof bad, "%s/bad-label", tmp);
    copy_dir(other_dir, bad);
    CHECK(baton_manifest_load(bad, &m, &err) == BATON_OK);
    size_t last = m.nshards - 1;
    snprintf(path, sizeof path, "%s/%s", bad, m.shards[last].index);
    CHECK(rec_idx_load(path, &e, &ne, &err) == BATON_OK && ne > 0);
    off = ne > 0 ? e[ne - 1].offset : 0;
    snprintf(path, sizeof path, "%s/%s", bad, m.shards[last].file);
    f = fopen(path, "r+b");
    if (f) {
        float lab = 99.0f;
        CHECK(fseek(f, (long)(off + 8 + 4), SEEK_SET) == 0);
        CHECK(fwrite(&lab, 4, 1, f) == 1);
        CHECK(fclose(f) == 0);
    }
    reseal(bad, &m, last);
    snprintf(want_off, sizeof want_off, "offset %llu", (unsigned long long)off);
    r = run_pipeline(bad, (baton_cursor){1, 0, 0}, &o, 3, SIZE_MAX);
    CHECK(r.rc < 0);
    CHECK_MSG(strstr(r.err.msg, m.shards[last].file) && strstr(r.err.msg, want_off) &&
              strstr(r.err.msg, "label"),
              "message: %s", r.err.msg);
    run_free(&r);
    free(e);
    baton_manifest_free(&m);
}

static void test_lifecycle(const char *dir)
{
    baton_err err = {0};
    baton_loader *l = open_loader(dir, 2);
    if (!l) return;
    /* close while the reader waits for a free slot and nothing was consumed */
    baton_pipeline_opts o = popts(2, 4, 0, 0);
    o.depth = 2;
    baton_pipeline *p = baton_pipeline_open(l, &o, &err);
    CHECK(p != NULL);
    usleep(50 * 1000);
    baton_pipeline_close(p);
    /* holding every batch: next says so instead of waiting forever */
    CHECK(baton_loader_seek(l, &(baton_cursor){2, 0, 0}, &err) == BATON_OK);
    p = baton_pipeline_open(l, &o, &err);
    baton_batch *b1 = NULL, *b2 = NULL, *b3 = NULL;
    CHECK(baton_pipeline_next(p, &b1, &err) == BATON_OK);
    CHECK(baton_pipeline_next(p, &b2, &err) == BATON_OK);
    CHECK(baton_pipeline_next(p, &b3, &err) == BATON_ERR_ARG && b3 == NULL);
    CHECK(b1 && b2 && b2->first == b1->first + b1->n);
    baton_pipeline_release(p, b1);
    baton_pipeline_release(p, b1);  /* a second release is ignored */
    CHECK(baton_pipeline_next(p, &b3, &err) == BATON_OK && b3 && b3->first == b2->first + b2->n);
    baton_batch *b4 = NULL;
    CHECK(baton_pipeline_next(p, &b4, &err) == BATON_ERR_ARG && b4 == NULL);
    baton_pipeline_close(p);
    /* bad options */
    o.workers = 0;
    CHECK(baton_pipeline_open(l, &o, &err) == NULL && err.code == BATON_ERR_ARG);
    o.workers = 1;
    o.batch = 0;
    CHECK(baton_pipeline_open(l, &o, &err) == NULL && err.code == BATON_ERR_ARG);
    baton_loader_close(l);
}

/* Normalisation given in the options (evaluation passes the training data's statistics): every value
 * is the same pixel as with the dataset's own statistics, renormalised; a non-positive std is refused. */
static void test_given_normalisation(const char *dir)
{
    baton_err err = {0};
    baton_loader *l = open_loader(dir, 3);
    if (!l) return;
    const baton_manifest *m = baton_loader_manifest(l);
    const float mean[4] = {0.25f, 0.5f, 0.75f, 0}, sd[4] = {0.5f, 0.25f, 2.0f, 1};
    baton_pipeline_opts o = popts(2, 8, 0, 0), g = o;
    g.mean = mean;
    g.std = sd;
    baton_pipeline *p1 = baton_pipeline_open(l, &o, &err);
    baton_batch *b1 = NULL, *b2 = NULL;
    CHECK_MSG(p1 && baton_pipeline_next(p1, &b1, &err) == BATON_OK, "%s", err.msg);
    const size_t c = m->shape[2], plane = (size_t)m->shape[0] * m->shape[1], nf = b1 ? b1->n * c * plane : 0;
    float *x1 = malloc(sizeof(float) * (nf ? nf : 1));
    if (b1) memcpy(x1, b1->x, sizeof(float) * nf);
    const uint32_t n1 = b1 ? b1->n : 0;   /* the batch is the pipeline's: gone once it closes */
    if (p1) baton_pipeline_close(p1);
    CHECK(baton_loader_seek(l, &(baton_cursor){3, 0, 0}, &err) == BATON_OK);
    baton_pipeline *p2 = baton_pipeline_open(l, &g, &err);
    CHECK_MSG(p2 && baton_pipeline_next(p2, &b2, &err) == BATON_OK, "%s", err.msg);
    int ok = n1 > 0 && b2 && b2->n == n1, at = -1;
    for (size_t i = 0; ok && i < nf; i++) {
        const size_t ch = i / plane % c;   /* NCHW */
        const double v = (double)x1[i] * m->std[ch] + m->mean[ch];
        if (fabs(b2->x[i] - (v - mean[ch]) / sd[ch]) > 1e-4) ok = 0, at = (int)i;
    }
    CHECK_MSG(ok, "given normalisation, %s: value %d", dir, at);
    if (p2) baton_pipeline_close(p2);
    free(x1);
    const float zero[4] = {0, 0, 0, 0};
    g.std = zero;
    CHECK(baton_pipeline_open(l, &g, &err) == NULL && err.code == BATON_ERR_ARG);
    g.std = NULL;   /* one without the other */
    CHECK(baton_pipeline_open(l, &g, &err) == NULL && err.code == BATON_ERR_ARG);
    baton_loader_close(l);
}

int main(void)
{
    alarm(600);  /* a hang fails the test instead of stalling the suite */
    snprintf(tmp, sizeof tmp, "/tmp/baton-pipeline-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char folder[300], from[320], grey[300], grey_jpeg[300], rgb[300], tfr[300];
    snprintf(folder, sizeof folder, "%s/folder-grey", tmp);
    make_folder(folder, 203, 12, 10, 1, 4);
    snprintf(from, sizeof from, "imagefolder:%s", folder);
    snprintf(grey, sizeof grey, "%s/grey-png", tmp);
    snprintf(grey_jpeg, sizeof grey_jpeg, "%s/grey-jpeg", tmp);
    snprintf(tfr, sizeof tfr, "%s/grey-tfrecord", tmp);
    int ok = pack(from, "train", grey, BATON_FMT_RECORDIO, BATON_ENC_PNG, 0.01, 12, 10) == BATON_OK &&
             pack(from, "train", grey_jpeg, BATON_FMT_RECORDIO, BATON_ENC_JPEG, 0.004, 12, 10) == BATON_OK &&
             pack(from, "train", tfr, BATON_FMT_TFRECORD, BATON_ENC_PNG, 0.01, 12, 10) == BATON_OK;
    snprintf(folder, sizeof folder, "%s/folder-rgb", tmp);
    make_folder(folder, 61, 9, 14, 3, 3);
    snprintf(from, sizeof from, "imagefolder:%s", folder);
    snprintf(rgb, sizeof rgb, "%s/rgb-png", tmp);
    ok = ok && pack(from, "train", rgb, BATON_FMT_RECORDIO, BATON_ENC_PNG, 0.01, 9, 14) == BATON_OK;

    if (ok) {
        test_contents(grey, 16, BATON_LAYOUT_NCHW);
        test_contents(grey_jpeg, 13, BATON_LAYOUT_NCHW);
        test_contents(tfr, 32, BATON_LAYOUT_NHWC);
        test_contents(rgb, 8, BATON_LAYOUT_NCHW);
        test_contents(rgb, 7, BATON_LAYOUT_NHWC);
        test_determinism(grey_jpeg, 16);
        test_determinism(rgb, 5);
        test_resume(grey_jpeg, 16);
        test_resume(rgb, 6);
        test_parts(grey_jpeg, 16, 2);
        test_parts(rgb, 8, 3);   /* 61 records: a short last batch of 5 */
        test_parts(rgb, 12, 5);  /* 61 = 5·12 + 1: ranks 1..4 get an empty last part */
        test_bad_records(grey_jpeg, grey);
        test_lifecycle(grey);
        test_given_normalisation(grey);
        test_given_normalisation(rgb);
    }

    if (access(FM "/t10k-images-idx3-ubyte.gz", R_OK) == 0) {
        char fm[300];
        snprintf(fm, sizeof fm, "%s/fmnist-jpeg", tmp);
        if (pack("fashion-mnist:" FM, "test", fm, BATON_FMT_RECORDIO, BATON_ENC_JPEG, 2, 28, 28) == BATON_OK) {
            test_contents(fm, 128, BATON_LAYOUT_NCHW);
            test_determinism(fm, 128);
            test_resume(fm, 128);
        }
        snprintf(fm, sizeof fm, "%s/fmnist-raw", tmp);
        if (pack("fashion-mnist:" FM, "test", fm, BATON_FMT_RECORDIO, BATON_ENC_RAW, 1, 28, 28) == BATON_OK) {
            test_contents(fm, 100, BATON_LAYOUT_NHWC);
            test_resume(fm, 96);
        }
    } else {
        printf("note: %s not installed; Fashion-MNIST part skipped\n", FM);
    }

    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    CHECK_DONE();
}
