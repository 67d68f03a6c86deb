/* inspect.c — `baton inspect`: counts, label histogram, shapes and encodings of a dataset folder,
 * a .rec (with or without its .idx) or a TFRecord file, and with verify a check of every byte.
 *
 * Contract (see img.h): one sequential pass per shard through baton_rec_file (the CRC32C of the
 * whole file is computed in the same pass), so verification reads each byte once. Problems are
 * collected, not fatal: a framing error ends that file's scan (nothing after it can be trusted
 * without an index) and is reported with its offset; everything else goes on. The return value is
 * an error only when nothing could be inspected (no such path, no dataset.json, unreadable
 * manifest); otherwise BATON_OK with rep->nerrors_total telling whether the data is sound. */
#include "img_internal.h"

#include <cJSON.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct inspector {
    baton_inspect_report *rep;
    int verify;
    const baton_manifest *m;   /* NULL for a loose file */
    /* loose file with verify: records that are no PNG/JPEG image are errors if the file holds
     * images; in a file of raw records, all payloads must have the same length */
    uint64_t loose_unknown, loose_images, loose_len_bad;
    uint64_t unknown_off[5], unknown_id[5];
    size_t loose_raw_len;
    baton_image img;
    uint64_t *offsets;         /* record offsets of the current file (verify with an index) */
    size_t noffsets, cap_offsets;
    baton_progress prog;
    int progress;
    uint64_t bytes_before;     /* bytes of files already scanned, for the progress line */
} inspector;

static void add_error(baton_inspect_report *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_error(baton_inspect_report *rep, const char *fmt, ...)
{
    rep->nerrors_total++;
    if (rep->nerrors >= BATON_INSPECT_MAX_ERRORS) return;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *s = strdup(msg);
    if (s) rep->errors[rep->nerrors++] = s;
}

static int grow_labels(baton_inspect_report *rep, uint32_t bins)
{
    if (bins <= rep->label_bins) return 0;
    uint64_t *h = realloc(rep->label_hist, bins * sizeof *h);
    if (!h) return -1;
    memset(h + rep->label_bins, 0, (bins - rep->label_bins) * sizeof *h);
    rep->label_hist = h;
    rep->label_bins = bins;
    return 0;
}

static void count_label(inspector *in, float label)
{
    baton_inspect_report *rep = in->rep;
    uint32_t limit = in->m ? in->m->classes : 65536;
    if (!(label >= 0) || label != (float)(uint32_t)label || (uint32_t)label >= limit) {
        rep->label_other++;
        return;
    }
    uint32_t k = (uint32_t)label;
    if (k >= rep->label_bins && grow_labels(rep, k < 16 ? 16 : k + 1 + k / 2)) {
        rep->label_other++;
        return;
    }
    rep->label_hist[k]++;
}

static const char *const side_bins[7] = {"<64", "64-127", "128-255", "256-511", "512-1023", "1024-2047", ">=2048"};

static void count_size(baton_inspect_report *rep, uint32_t h, uint32_t w)
{
    if (!h || !w) return;
    if (!rep->sized++) rep->min_h = rep->max_h = h, rep->min_w = rep->max_w = w;
    if (h < rep->min_h) rep->min_h = h;
    if (h > rep->max_h) rep->max_h = h;
    if (w < rep->min_w) rep->min_w = w;
    if (w > rep->max_w) rep->max_w = w;
    rep->pixels += (double)h * w;
    uint32_t s = h < w ? h : w, b = 0;
    while (b < 6 && s >= (64u << b)) b++;
    rep->short_side[b]++;
}

static void count_shape(baton_inspect_report *rep, uint32_t h, uint32_t w, uint32_t c)
{
    count_size(rep, h, w);
    for (uint32_t i = 0; i < rep->nshapes; i++)
        if (rep->shapes[i].h == h && rep->shapes[i].w == w && rep->shapes[i].c == c) {
            rep->shapes[i].count++;
            return;
        }
    if (rep->nshapes < BATON_INSPECT_MAX_SHAPES) {
        rep->shapes[rep->nshapes++] = (baton_inspect_shape){h, w, c, 1};
        return;
    }
    rep->shape_other++;
}

/* Examine one record's payload: labels, encoding, shape; with verify, decode the image. */
static void examine(inspector *in, const char *name, baton_rec_format fmt, const baton_rec *r)
{
    baton_inspect_report *rep = in->rep;
    baton_err err = {0};
    baton_sample s;
    if (baton_sample_parse(fmt, r->data, r->len, name, r->offset, &s, &err)) {
        add_error(rep, "%s", err.msg);
        return;
    }
    count_label(in, s.label);
    if (s.nlabels > 1) rep->multi_label++;
    if (in->verify && in->m && !img_label_ok(s.label, in->m->classes))   /* what training refuses */
        add_error(rep, "%s: offset %llu: label %g is not a class in [0, %u)", name, (unsigned long long)r->offset,
                  (double)s.label, in->m->classes);

    /* The record's encoding: TFRecord says it; in a dataset folder dataset.json says it (raw
     * pixels may begin with any bytes, so sniffing them would be a guess); a loose RecordIO file
     * is sniffed. */
    baton_encoding enc = s.encoding;
    int mixed = in->m && in->m->encoding == BATON_ENC_UNKNOWN;   /* "mixed": each record PNG or JPEG */
    if (enc == BATON_ENC_UNKNOWN) enc = in->m && !mixed ? in->m->encoding : img_sniff(s.img, s.img_len);
    rep->enc_count[enc == BATON_ENC_UNKNOWN ? 3 : enc]++;
    if (!in->m && in->verify) {
        if (enc == BATON_ENC_UNKNOWN) {
            if (in->loose_unknown < 5) {
                in->unknown_off[in->loose_unknown] = r->offset;
                in->unknown_id[in->loose_unknown] = s.id;
            }
            if (in->loose_unknown++ == 0) in->loose_raw_len = s.img_len;
            else if (s.img_len != in->loose_raw_len) in->loose_len_bad++;
        } else {
            in->loose_images++;
        }
    }
    if (in->m && (mixed ? enc != BATON_ENC_PNG && enc != BATON_ENC_JPEG : enc != in->m->encoding) && in->verify)
        add_error(rep, "%s: offset %llu: record id %llu is %s, dataset.json says %s", name,
                  (unsigned long long)r->offset, (unsigned long long)s.id,
                  enc == BATON_ENC_UNKNOWN ? "not a PNG or JPEG image" : baton_encoding_name(enc),
                  mixed ? "PNG or JPEG" : baton_encoding_name(in->m->encoding));

    uint32_t expect[3] = {s.h, s.w, s.c};
    if (in->m && in->m->shape[0]) memcpy(expect, in->m->shape, sizeof expect);
    uint32_t h = 0, w = 0, c = 0;
    int rc;
    if (enc == BATON_ENC_UNKNOWN) {
        count_shape(rep, 0, 0, 0);
        return;
    }
    if (enc == BATON_ENC_RAW && !expect[0]) {  /* a loose raw .rec: shape unknowable */
        count_shape(rep, 0, 0, 0);
        return;
    }
    if (in->verify && enc != BATON_ENC_RAW) {  /* raw: the length check of probe is the check */
        uint32_t force[3] = {expect[0], expect[1], in->m ? in->m->channels : expect[2]};
        rc = baton_img_decode(s.img, s.img_len, enc, enc == BATON_ENC_RAW ? expect :
                              force[2] ? force : NULL, &in->img, &err);
        h = in->img.h, w = in->img.w, c = in->img.c;
    } else {
        rc = img_probe(s.img, s.img_len, enc, expect, &h, &w, &c, &err);
    }
    if (rc) {
        add_error(rep, "%s: offset %llu: record id %llu: %s", name, (unsigned long long)r->offset,
                  (unsigned long long)s.id, err.msg);
        return;
    }
    count_shape(rep, h, w, c);
    if (in->verify && in->m && in->m->shape[0] &&
        (h != in->m->shape[0] || w != in->m->shape[1] || c != in->m->shape[2]))
        add_error(rep, "%s: offset %llu: record id %llu is %ux%ux%u, dataset.json says %ux%ux%u",
                  name, (unsigned long long)r->offset, (unsigned long long)s.id, h, w, c,
                  in->m->shape[0], in->m->shape[1], in->m->shape[2]);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every index entry must point at a record start of this file, one entry per record; with a
 * manifest, the index file's size and CRC32C must match too. The file is read once. */
static void check_index(inspector *in, const char *idx_path, const char *rec_name, uint64_t file_bytes,
                        const baton_shard_info *si)
{
    baton_inspect_report *rep = in->rep;
    baton_err err = {0};
    uint8_t *text;
    size_t len;
    if (baton_file_read_all(idx_path, (size_t)1 << 34, &text, &len, &err)) {
        add_error(rep, "%s", err.msg);
        return;
    }
    if (si) {
        uint32_t crc = baton_crc32c(0, text, len);
        if (len != si->index_bytes || crc != si->index_crc32c)
            add_error(rep, "%s: %zu bytes CRC32C %08x, dataset.json says %llu bytes %08x", si->index, len,
                      crc, (unsigned long long)si->index_bytes, si->index_crc32c);
    }
    baton_idx_entry *e = NULL;
    size_t n = 0;
    int rc = baton_idx_parse(idx_path, (const char *)text, len, &e, &n, &err);
    free(text);
    if (rc) {
        add_error(rep, "%s", err.msg);
        return;
    }
    if (n != in->noffsets)
        add_error(rep, "%s: %zu entries, %s holds %zu records", idx_path, n, rec_name, in->noffsets);
    uint64_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted) {
        free(e);
        add_error(rep, "%s: out of memory", idx_path);
        return;
    }
    int in_order = 1;
    for (size_t i = 0; i < n; i++) {
        sorted[i] = e[i].offset;
        if (i > 0 && sorted[i] < sorted[i - 1] && in_order) {
            in_order = 0;
            if (si)   /* a dataset's loader takes the offsets in ascending order only */
                add_error(rep, "%s: line %zu: offset %llu is out of order (after %llu)", idx_path, i + 1,
                          (unsigned long long)sorted[i], (unsigned long long)sorted[i - 1]);
        }
    }
    if (!in_order) qsort(sorted, n, sizeof *sorted, cmp_u64);  /* writers list records in order */
    size_t bad = 0, j = 0;  /* walk both ascending lists together */
    for (size_t i = 0; i < n; i++) {
        uint64_t off = sorted[i];
        if (i > 0 && off == sorted[i - 1]) {
            if (bad++ < 5) add_error(rep, "%s: offset %llu listed twice", idx_path, (unsigned long long)off);
            continue;
        }
        if (off >= file_bytes) {
            if (bad++ < 5)
                add_error(rep, "%s: offset %llu is past the end of %s (%llu bytes)", idx_path,
                          (unsigned long long)off, rec_name, (unsigned long long)file_bytes);
            continue;
        }
        while (j < in->noffsets && in->offsets[j] < off) j++;
        if ((j == in->noffsets || in->offsets[j] != off) && bad++ < 5)
            add_error(rep, "%s: offset %llu is not the start of a record in %s", idx_path,
                      (unsigned long long)off, rec_name);
    }
    if (bad > 5) add_error(rep, "%s: %zu more bad offsets", idx_path, bad - 5);
    free(sorted);
    free(e);
}

/* Scan one shard file. m_shard (dataset mode) holds what the manifest promises about it. */
static void scan_file(inspector *in, const char *path, const char *name, const char *idx_path,
                      const baton_shard_info *m_shard)
{
    baton_inspect_report *rep = in->rep;
    baton_err err = {0};
    baton_rec_format fmt = in->m ? in->m->format : BATON_FMT_UNKNOWN;
    baton_rec_file *f = baton_rec_file_open(path, fmt, in->verify, &err);
    if (!f) {
        add_error(rep, "%s", err.msg);
        return;
    }
    rep->files++;
    if (rep->format == BATON_FMT_UNKNOWN) rep->format = baton_rec_file_format(f);
    in->noffsets = 0;
    int want_offsets = in->verify && idx_path;
    baton_rec r;
    uint64_t records = 0;
    int rc;
    while ((rc = baton_rec_file_next(f, &r, &err)) == BATON_OK) {
        records++;
        examine(in, name, baton_rec_file_format(f), &r);
        if (want_offsets) {
            if (in->noffsets == in->cap_offsets) {
                size_t cap = in->cap_offsets ? in->cap_offsets * 2 : 4096;
                uint64_t *o = realloc(in->offsets, cap * sizeof *o);
                if (!o) {
                    want_offsets = 0;
                    add_error(rep, "%s: out of memory for the index check", name);
                    continue;
                }
                in->offsets = o;
                in->cap_offsets = cap;
            }
            in->offsets[in->noffsets++] = r.offset;
        }
        if (in->progress && (records & 1023) == 0)
            baton_progress_update(&in->prog, in->bytes_before + baton_rec_file_bytes(f));
    }
    if (rc != BATON_END) add_error(rep, "%s", err.msg);
    uint64_t bytes = baton_rec_file_bytes(f);
    rep->records += records;
    rep->bytes += bytes;
    in->bytes_before += bytes;
    if (m_shard && rc == BATON_END) {
        if (bytes != m_shard->bytes)
            add_error(rep, "%s: %llu bytes, dataset.json says %llu", name, (unsigned long long)bytes,
                      (unsigned long long)m_shard->bytes);
        if (records != m_shard->records)
            add_error(rep, "%s: %llu records, dataset.json says %llu", name,
                      (unsigned long long)records, (unsigned long long)m_shard->records);
        if (in->verify && baton_rec_file_checksum(f) != m_shard->crc32c)
            add_error(rep, "%s: CRC32C %08x, dataset.json says %08x", name,
                      baton_rec_file_checksum(f), m_shard->crc32c);
    }
    baton_rec_file_close(f);
    if (want_offsets && rc == BATON_END) check_index(in, idx_path, name, bytes, m_shard);
    if (!in->m && in->loose_images && in->loose_unknown) {
        for (uint64_t i = 0; i < in->loose_unknown && i < 5; i++)
            add_error(rep, "%s: offset %llu: record id %llu is not a PNG or JPEG image, unlike the "
                      "file's other %llu records", name, (unsigned long long)in->unknown_off[i],
                      (unsigned long long)in->unknown_id[i], (unsigned long long)in->loose_images);
        if (in->loose_unknown > 5)
            add_error(rep, "%s: %llu more records that are not images", name,
                      (unsigned long long)(in->loose_unknown - 5));
    } else if (!in->m && in->loose_len_bad) {
        add_error(rep, "%s: %llu raw records differ in size from the first one (%zu bytes)", name,
                  (unsigned long long)in->loose_len_bad, in->loose_raw_len);
    }
}

static uint64_t total_bytes_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* dataset.idx: each shard's part the bytes dataset.json lists for its .idx (what readers check). */
static void check_indexes(inspector *in, const char *dir)
{
    baton_err err = {0};
    uint8_t *b = NULL;
    size_t n = 0;
    if (baton_indexes_read(dir, in->m, &b, &n, &err)) add_error(in->rep, "%s", err.msg);
    free(b);
}

static int inspect_dataset(inspector *in, const char *dir, baton_err *err)
{
    baton_inspect_report *rep = in->rep;
    int rc = baton_manifest_load(dir, &rep->manifest, err);
    if (rc) return rc;
    rep->has_manifest = 1;
    in->m = &rep->manifest;
    snprintf(rep->kind, sizeof rep->kind, "dataset");
    rep->format = in->m->format;
    if (grow_labels(rep, in->m->classes ? in->m->classes : 1))
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    uint64_t total = 0;
    for (size_t i = 0; i < in->m->nshards; i++) total += in->m->shards[i].bytes;
    if (in->progress) baton_progress_start(&in->prog, in->verify ? "verify" : "inspect", total);
    for (size_t i = 0; i < in->m->nshards; i++) {
        const baton_shard_info *si = &in->m->shards[i];
        char path[4096], idx[4096];
        if (baton_path_join(path, sizeof path, dir, si->file, err)) return err->code;
        if (si->index && baton_path_join(idx, sizeof idx, dir, si->index, err)) return err->code;
        scan_file(in, path, si->file, si->index ? idx : NULL, si);
    }
    if (in->progress) baton_progress_finish(&in->prog);
    if (in->verify && in->m->indexes) check_indexes(in, dir);
    if (rep->records != in->m->samples && rep->nerrors_total == 0)
        add_error(rep, "%s: %llu records in the shards, dataset.json says %llu samples", dir,
                  (unsigned long long)rep->records, (unsigned long long)in->m->samples);
    return BATON_OK;
}

static int inspect_file(inspector *in, const char *path, baton_err *err)
{
    snprintf(in->rep->kind, sizeof in->rep->kind, "file");
    char idx[4096];
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    int has_idx = 0;
    if (dot && (!slash || dot > slash) && strlen(path) < sizeof idx - 5) {
        snprintf(idx, sizeof idx, "%.*s.idx", (int)(dot - path), path);
        struct stat st;
        has_idx = stat(idx, &st) == 0 && S_ISREG(st.st_mode) && strcmp(idx, path) != 0;
    }
    const char *name = slash ? slash + 1 : path;
    if (in->progress) baton_progress_start(&in->prog, in->verify ? "verify" : "inspect", total_bytes_of(path));
    scan_file(in, path, name, has_idx ? idx : NULL, NULL);
    if (in->progress) baton_progress_finish(&in->prog);
    if (in->rep->files == 0) {  /* could not even open it: that is the command's error */
        baton_err_set(err, BATON_ERR_FORMAT, "%s", in->rep->errors[0] ? in->rep->errors[0] : path);
        return err->code;
    }
    return BATON_OK;
}

int baton_inspect(const char *path, int verify, int progress, baton_inspect_report *rep, baton_err *err)
{
    memset(rep, 0, sizeof *rep);
    rep->errors = calloc(BATON_INSPECT_MAX_ERRORS, sizeof *rep->errors);
    if (!rep->errors) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    rep->verified = verify;
    inspector in = {.rep = rep, .verify = verify, .progress = progress};
    double t0 = baton_now();
    struct stat st;
    int rc;
    if (stat(path, &st) != 0)
        rc = baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such file or folder", path);
    else if (S_ISDIR(st.st_mode))
        rc = inspect_dataset(&in, path, err);
    else
        rc = inspect_file(&in, path, err);
    rep->seconds = baton_now() - t0;
    baton_image_free(&in.img);
    free(in.offsets);
    /* what stopped the inspection is a problem of the report too, so that its JSON says what the
     * exit status says */
    if (rc) add_error(rep, "%s", err && err->msg[0] ? err->msg : baton_status_name(rc));
    return rc;
}

static const char *enc_names[4] = {"raw", "png", "jpeg", "unknown"};

char *baton_inspect_to_json(const baton_inspect_report *rep)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", rep->kind);
    cJSON_AddStringToObject(o, "format", baton_rec_format_name(rep->format));
    cJSON_AddNumberToObject(o, "records", (double)rep->records);
    cJSON_AddNumberToObject(o, "bytes", (double)rep->bytes);
    cJSON_AddNumberToObject(o, "files", (double)rep->files);
    if (rep->has_manifest) {
        cJSON_AddStringToObject(o, "name", rep->manifest.name);
        cJSON_AddStringToObject(o, "split", rep->manifest.split);
        cJSON_AddNumberToObject(o, "classes", rep->manifest.classes);
    }
    cJSON *labels = cJSON_AddArrayToObject(o, "label_histogram");
    for (uint32_t k = 0; k < rep->label_bins; k++)
        cJSON_AddItemToArray(labels, cJSON_CreateNumber((double)rep->label_hist[k]));
    cJSON_AddNumberToObject(o, "label_other", (double)rep->label_other);
    cJSON_AddNumberToObject(o, "multi_label", (double)rep->multi_label);
    cJSON *enc = cJSON_AddObjectToObject(o, "encodings");
    for (int i = 0; i < 4; i++)
        if (rep->enc_count[i]) cJSON_AddNumberToObject(enc, enc_names[i], (double)rep->enc_count[i]);
    cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
    for (uint32_t i = 0; i < rep->nshapes; i++) {
        cJSON *s = cJSON_CreateObject();
        const baton_inspect_shape *sh = &rep->shapes[i];
        cJSON *dims = cJSON_AddArrayToObject(s, "shape");
        cJSON_AddItemToArray(dims, cJSON_CreateNumber(sh->h));
        cJSON_AddItemToArray(dims, cJSON_CreateNumber(sh->w));
        cJSON_AddItemToArray(dims, cJSON_CreateNumber(sh->c));
        cJSON_AddNumberToObject(s, "count", (double)sh->count);
        cJSON_AddItemToArray(shapes, s);
    }
    if (rep->sized) {
        cJSON *sz = cJSON_AddObjectToObject(o, "sizes");
        cJSON_AddNumberToObject(sz, "images", (double)rep->sized);
        cJSON_AddNumberToObject(sz, "min_h", rep->min_h);
        cJSON_AddNumberToObject(sz, "max_h", rep->max_h);
        cJSON_AddNumberToObject(sz, "min_w", rep->min_w);
        cJSON_AddNumberToObject(sz, "max_w", rep->max_w);
        cJSON_AddNumberToObject(sz, "mean_megapixels", rep->pixels / (double)rep->sized / 1e6);
        cJSON *hist = cJSON_AddObjectToObject(sz, "shorter_side");
        for (int b = 0; b < 7; b++) cJSON_AddNumberToObject(hist, side_bins[b], (double)rep->short_side[b]);
    }
    cJSON_AddBoolToObject(o, "verified", rep->verified);
    cJSON_AddBoolToObject(o, "ok", rep->nerrors_total == 0);
    cJSON *errs = cJSON_AddArrayToObject(o, "errors");
    for (size_t i = 0; i < rep->nerrors; i++) cJSON_AddItemToArray(errs, cJSON_CreateString(rep->errors[i]));
    cJSON_AddNumberToObject(o, "error_count", (double)rep->nerrors_total);
    cJSON_AddNumberToObject(o, "seconds", rep->seconds);
    char *s = baton_json_print(o, 0);
    cJSON_Delete(o);
    return s;
}

void baton_inspect_print(const baton_inspect_report *rep, FILE *f)
{
    if (rep->has_manifest)
        fprintf(f, "dataset    %s/%s: %s, %s, %u classes\n", rep->manifest.name, rep->manifest.split,
                baton_rec_format_name(rep->format),
                rep->manifest.encoding == BATON_ENC_UNKNOWN ? "mixed" : baton_encoding_name(rep->manifest.encoding),
                rep->manifest.classes);
    else
        fprintf(f, "file       %s\n", baton_rec_format_name(rep->format));
    fprintf(f, "records    %llu in %llu file(s), %.1f MB\n", (unsigned long long)rep->records,
            (unsigned long long)rep->files, (double)rep->bytes / 1e6);
    fprintf(f, "labels    ");
    for (uint32_t k = 0; k < rep->label_bins; k++)
        if (rep->label_hist[k] || (rep->has_manifest && k < rep->manifest.classes))
            fprintf(f, " %u:%llu", k, (unsigned long long)rep->label_hist[k]);
    if (rep->label_other) fprintf(f, " other:%llu", (unsigned long long)rep->label_other);
    if (rep->multi_label) fprintf(f, " (multi-label records: %llu)", (unsigned long long)rep->multi_label);
    fprintf(f, "\nshapes    ");
    for (uint32_t i = 0; i < rep->nshapes; i++) {
        const baton_inspect_shape *s = &rep->shapes[i];
        if (s->h) fprintf(f, " %ux%ux%u:%llu", s->h, s->w, s->c, (unsigned long long)s->count);
        else fprintf(f, " unknown:%llu", (unsigned long long)s->count);
    }
    if (rep->shape_other) fprintf(f, " other:%llu", (unsigned long long)rep->shape_other);
    if (rep->sized && (rep->min_h != rep->max_h || rep->min_w != rep->max_w)) {
        fprintf(f, "\nsizes      h %u..%u, w %u..%u, mean %.2f megapixels; shorter side", rep->min_h, rep->max_h,
                rep->min_w, rep->max_w, rep->pixels / (double)rep->sized / 1e6);
        for (int b = 0; b < 7; b++)
            if (rep->short_side[b]) fprintf(f, " %s:%llu", side_bins[b], (unsigned long long)rep->short_side[b]);
    }
    fprintf(f, "\nencodings ");
    for (int i = 0; i < 4; i++)
        if (rep->enc_count[i]) fprintf(f, " %s:%llu", enc_names[i], (unsigned long long)rep->enc_count[i]);
    fprintf(f, "\n");
    if (rep->verified || rep->nerrors_total) {
        if (rep->nerrors_total == 0)
            fprintf(f, "verify     ok: every record, index entry, size and checksum checked (%.2f s)\n",
                    rep->seconds);
        else
            fprintf(f, "%s %llu problem(s)\n", rep->verified ? "verify     FAILED:" : "problems  ",
                    (unsigned long long)rep->nerrors_total);
    }
}

void baton_inspect_free(baton_inspect_report *rep)
{
    for (size_t i = 0; i < rep->nerrors; i++) free(rep->errors[i]);
    free(rep->errors);
    free(rep->label_hist);
    if (rep->has_manifest) baton_manifest_free(&rep->manifest);
    memset(rep, 0, sizeof *rep);
}
