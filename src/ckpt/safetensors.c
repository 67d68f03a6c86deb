/* safetensors.c — the safetensors file format: header parser/validator, header builder, whole-file
 * writer and reader, and loading a file into a model's or optimizer's named tensors.
 *
 * Format (as the reference implementation writes it):
 *
 *   offset 0        u64 little-endian N: length of the JSON header in bytes
 *   offset 8        N bytes of UTF-8 JSON, an object:
 *                     {"__metadata__": {"key": "value", ...},            (optional; strings only)
 *                      "<tensor name>": {"dtype": "F32", "shape": [d0, d1, ...],
 *                                        "data_offsets": [begin, end]}, ...}
 *                   padded with spaces so that N is a multiple of 8 (the data area is aligned)
 *   offset 8 + N    the data area: each tensor's elements, little-endian, row-major, at
 *                   [begin, end) relative to the start of the data area
 *
 * Invariants a reader checks before it trusts anything (ckpt_st_parse_header):
 *   - the file holds at least 8 bytes; 8 + N <= file size; N <= 100 MB;
 *   - the header starts with '{', is one well-formed JSON object, followed only by whitespace;
 *   - tensor names are unique; "__metadata__" is not a tensor and maps strings to strings;
 *   - dtype is one of safetensors' (BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32,
 *     F32, F64, I64, U64: models use F32 and I64, a user's own tensors any); shape entries are
 *     integers >= 0 (at most 8 dims);
 *   - prod(shape) * dtype size == end - begin, computed without overflow;
 *   - 0 <= begin <= end <= data area size; sorted by begin, the tensors neither overlap nor leave
 *     gaps, and together cover the data area exactly (end of the last == file size - 8 - N).
 * The header is read with util's checked JSON reader (baton_jr): a message names the file, the
 * tensor and its field ("m.safetensors: tensor 'fc.weight'.shape[1]: is not a whole number ...").
 * Writers here emit tensors in the caller's order with contiguous offsets, metadata first.
 * Hosts are little-endian (checked at compile time), so the data area is a plain copy. */
#include "ckpt_internal.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "baton's safetensors code assumes a little-endian host"
#endif


/* safetensors' dtypes, indexed by BATON_ST_* (ckpt.h) */
static const struct {
    const char *name;
    size_t size;
} dtypes[BATON_ST_NDTYPES] = {
    [BATON_ST_F32] = {"F32", 4},     [BATON_ST_I64] = {"I64", 8},   [BATON_ST_F64] = {"F64", 8},
    [BATON_ST_F16] = {"F16", 2},     [BATON_ST_BF16] = {"BF16", 2}, [BATON_ST_I32] = {"I32", 4},
    [BATON_ST_I16] = {"I16", 2},     [BATON_ST_I8] = {"I8", 1},     [BATON_ST_U8] = {"U8", 1},
    [BATON_ST_BOOL] = {"BOOL", 1},   [BATON_ST_U16] = {"U16", 2},   [BATON_ST_U32] = {"U32", 4},
    [BATON_ST_U64] = {"U64", 8},     [BATON_ST_F8_E4M3] = {"F8_E4M3", 1},
    [BATON_ST_F8_E5M2] = {"F8_E5M2", 1},
};

size_t baton_st_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < BATON_ST_NDTYPES ? dtypes[dtype].size : 0;
}

const char *baton_st_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < BATON_ST_NDTYPES ? dtypes[dtype].name : "?";
}

int baton_st_dtype_parse(const char *name)
{
    for (int i = 0; i < BATON_ST_NDTYPES; i++)
        if (!strcmp(name, dtypes[i].name)) return i;
    return -1;
}

void baton_st_header_free(baton_st_header *h)
{
    if (!h) return;
    for (size_t i = 0; i < h->ntensors; i++) free(h->tensors[i].name);
    free(h->tensors);
    for (size_t i = 0; i < h->nmeta; i++) {
        free(h->meta_keys[i]);
        free(h->meta_vals[i]);
    }
    free(h->meta_keys);
    free(h->meta_vals);
    memset(h, 0, sizeof *h);
}

long ckpt_st_find(const baton_st_header *h, const char *name)
{
    for (size_t i = 0; i < h->ntensors; i++)
        if (strcmp(h->tensors[i].name, name) == 0) return (long)i;
    return -1;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* "[10, 64]" into out */
static void fmt_shape(char *out, size_t cap, const int64_t *shape, int ndim)
{
    size_t k = 0;
    k += (size_t)snprintf(out + k, cap - k, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap) snprintf(out + k, cap - k, "]");
}

/* One tensor's entry (r->at names it): dtype, shape and data_offsets, checked against the data
 * area. Returns r->rc. */
static int parse_tensor(baton_jr *r, const cJSON *item, baton_st_tensor *t, uint64_t data_len)
{
    const char *tn = item->string;
    char at[48];
    snprintf(at, sizeof at, "tensor '%.32s%s'", tn, strlen(tn) > 32 ? "..." : "");
    baton_jr_at(r, "%s", at);
    if (!cJSON_IsObject(item)) return baton_jr_fail(r, NULL, "is not an object");
    char dt[16];
    if (baton_jr_str(r, item, "dtype", dt, sizeof dt)) return r->rc;
    if ((t->dtype = baton_st_dtype_parse(dt)) < 0) return baton_jr_fail(r, "dtype", "\"%s\" is not a safetensors dtype", dt);
    const cJSON *sh = baton_jr_get(r, item, "shape"), *of = baton_jr_get(r, item, "data_offsets");
    if (!cJSON_IsArray(sh)) return baton_jr_fail(r, "shape", sh ? "is not a list" : "is missing");
    int nd = cJSON_GetArraySize(sh);
    if (nd > BATON_ST_MAX_DIMS) return baton_jr_fail(r, "shape", "has %d dimensions, at most %d", nd, BATON_ST_MAX_DIMS);
    t->ndim = nd;
    uint64_t numel = 1;
    int overflow = 0, i = 0;
    for (const cJSON *d = sh->child; d; d = d->next, i++) {
        uint64_t v;
        baton_jr_at(r, "%s.shape[%d]", at, i);
        if (baton_jr_u64(r, d, "", 0, UINT64_MAX, &v)) return r->rc;
        t->shape[i] = (int64_t)v;
        if (__builtin_mul_overflow(numel, v, &numel)) overflow = 1;
    }
    baton_jr_at(r, "%s", at);
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2)
        return baton_jr_fail(r, "data_offsets", of ? "is not a list [begin, end]" : "is missing");
    baton_jr_at(r, "%s.data_offsets[0]", at);
    baton_jr_u64(r, of->child, "", 0, UINT64_MAX, &t->begin);
    baton_jr_at(r, "%s.data_offsets[1]", at);
    if (baton_jr_u64(r, of->child->next, "", 0, UINT64_MAX, &t->end)) return r->rc;
    baton_jr_at(r, "%s", at);
    if (t->begin > t->end || t->end > data_len)
        return baton_jr_fail(r, "data_offsets", "[%llu, %llu] outside the data area (%llu bytes)",
                             (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)data_len);
    uint64_t need;
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)baton_st_dtype_size(t->dtype), &need)) overflow = 1;
    if (overflow || need != t->end - t->begin) {
        char sh_text[160];
        fmt_shape(sh_text, sizeof sh_text, t->shape, t->ndim);
        if (overflow)
            return baton_jr_fail(r, "shape", "%s %s overflows 64 bits", sh_text, baton_st_dtype_name(t->dtype));
        return baton_jr_fail(r, "data_offsets", "[%llu, %llu] hold %llu bytes, shape %s %s needs %llu",
                             (unsigned long long)t->begin, (unsigned long long)t->end,
                             (unsigned long long)(t->end - t->begin), sh_text, baton_st_dtype_name(t->dtype),
                             (unsigned long long)need);
    }
    t->numel = numel;
    t->name = strdup(tn);
    if (!t->name) return r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
    return BATON_OK;
}

static const baton_st_tensor *sort_base;
static int cmp_offsets(const void *a, const void *b)
{
    const baton_st_tensor *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}
static int cmp_names(const void *a, const void *b)
{
    return strcmp(sort_base[*(const size_t *)a].name, sort_base[*(const size_t *)b].name);
}

/* qsort has no context argument; a lock keeps the static base safe across threads. */
static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

static int check_layout(const char *file, baton_st_header *h, baton_err *err)
{
    size_t n = h->ntensors;
    if (n == 0) {
        if (h->data_len != 0)
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s: no tensors, but %llu bytes of data follow the header", file,
                                 (unsigned long long)h->data_len);
        return BATON_OK;
    }
    size_t *ix = malloc(n * sizeof *ix);
    if (!ix) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", file);
    int rc = BATON_OK;
    pthread_mutex_lock(&sort_lock);
    sort_base = h->tensors;
    for (size_t i = 0; i < n; i++) ix[i] = i;
    qsort(ix, n, sizeof *ix, cmp_names);
    for (size_t i = 1; i < n && rc == BATON_OK; i++)
        if (strcmp(h->tensors[ix[i]].name, h->tensors[ix[i - 1]].name) == 0)
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: tensor name '%s' appears twice", file,
                               h->tensors[ix[i]].name);
    for (size_t i = 0; i < n; i++) ix[i] = i;
    qsort(ix, n, sizeof *ix, cmp_offsets);
    pthread_mutex_unlock(&sort_lock);
    uint64_t at = 0;
    for (size_t i = 0; i < n && rc == BATON_OK; i++) {
        const baton_st_tensor *t = &h->tensors[ix[i]];
        if (t->begin < at)
            rc = baton_err_set(err, BATON_ERR_FORMAT,
                               "%s: tensor '%s': data_offsets [%llu, %llu] overlap the previous tensor (ends at %llu)",
                               file, t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                               (unsigned long long)at);
        else if (t->begin > at)
            rc = baton_err_set(err, BATON_ERR_FORMAT,
                               "%s: data area bytes [%llu, %llu) belong to no tensor (next is '%s')", file,
                               (unsigned long long)at, (unsigned long long)t->begin, t->name);
        at = t->end;
    }
    if (rc == BATON_OK && at != h->data_len)
        rc = baton_err_set(err, BATON_ERR_FORMAT,
                           "%s: tensors end at data offset %llu but the data area holds %llu bytes", file,
                           (unsigned long long)at, (unsigned long long)h->data_len);
    free(ix);
    return rc;
}

static int parse_metadata(baton_jr *r, const cJSON *md, baton_st_header *h)
{
    baton_jr_at(r, "__metadata__");
    if (!cJSON_IsObject(md)) return baton_jr_fail(r, NULL, "is not an object");
    int n = cJSON_GetArraySize(md);
    h->meta_keys = calloc((size_t)n + 1, sizeof *h->meta_keys);
    h->meta_vals = calloc((size_t)n + 1, sizeof *h->meta_vals);
    if (!h->meta_keys || !h->meta_vals) return r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
    for (const cJSON *kv = md->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv)) return baton_jr_fail(r, NULL, "'%.64s': the value is not a string", kv->string);
        h->meta_keys[h->nmeta] = strdup(kv->string);
        h->meta_vals[h->nmeta] = strdup(kv->valuestring);
        h->nmeta++;
        if (!h->meta_keys[h->nmeta - 1] || !h->meta_vals[h->nmeta - 1])
            return r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
    }
    return BATON_OK;
}

int ckpt_st_parse_header(const char *name, const uint8_t *p, size_t avail, uint64_t file_size,
                          baton_st_header *h, baton_err *err)
{
    memset(h, 0, sizeof *h);
    if (file_size < 8 || avail < 8)
        return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: %llu bytes, shorter than the 8-byte header length",
                             name, (unsigned long long)(file_size < avail ? file_size : avail));
    uint64_t n = le64(p);
    if (n > file_size - 8)
        return baton_err_set(err, BATON_ERR_TRUNCATED,
                             "%s: header length %llu at offset 0 runs past the end of the file (%llu bytes)",
                             name, (unsigned long long)n, (unsigned long long)file_size);
    if (n > BATON_ST_MAX_HEADER)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: header length %llu is over the %u-byte limit", name,
                             (unsigned long long)n, BATON_ST_MAX_HEADER);
    if ((uint64_t)avail < 8 + n)
        return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: header of %llu bytes not fully available", name,
                             (unsigned long long)n);
    if (n == 0 || p[8] != '{')
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: header at offset 8 does not start with '{'", name);
    h->header_len = n;
    h->data_start = 8 + n;
    h->data_len = file_size - 8 - n;
    baton_jr r;
    baton_jr_init(&r, name, err);
    baton_jr_at(&r, "header at offset 8");
    cJSON *root = baton_jr_parse(&r, (const char *)p + 8, (size_t)n);
    int rc = r.rc;
    if (rc) return rc;
    int cnt = cJSON_GetArraySize(root);
    h->tensors = calloc((size_t)cnt + 1, sizeof *h->tensors);
    if (!h->tensors) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
        goto out;
    }
    int seen_meta = 0;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {
            if (seen_meta++) {
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: \"__metadata__\" appears twice", name);
                goto out;
            }
            if ((rc = parse_metadata(&r, it, h)) != BATON_OK) goto out;
            continue;
        }
        if ((rc = parse_tensor(&r, it, &h->tensors[h->ntensors], h->data_len)) != BATON_OK) goto out;
        h->ntensors++;
    }
    rc = check_layout(name, h, err);
out:
    cJSON_Delete(root);
    if (rc != BATON_OK) baton_st_header_free(h);
    return rc;
}

/* ---- writing ----
 * The header is written by its own walk, not through baton_json_print: the format fixes its bytes
 * (tensors in the order given, data_offsets as exact 64-bit integers where a double would round
 * past 2^53, the length prefix and the padding to 8 bytes computed from the text as it grows), so
 * that the same tensors always give the same bytes. */

static int put(baton_buf *b, const char *s) { return baton_buf_append(b, s, strlen(s)); }

static int put_json_string(baton_buf *b, const char *s)
{
    if (baton_buf_append(b, "\"", 1)) return -1;
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        char esc[8];
        if (*q == '"' || *q == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*q;
            if (baton_buf_append(b, esc, 2)) return -1;
        } else if (*q < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *q);
            if (baton_buf_append(b, esc, 6)) return -1;
        } else if (baton_buf_append(b, q, 1)) {
            return -1;
        }
    }
    return baton_buf_append(b, "\"", 1);
}

int ckpt_st_build_header(const baton_st_entry *t, size_t n, const char *const *meta_keys,
                          const char *const *meta_vals, size_t nmeta, baton_buf *out,
                          uint64_t *data_len, baton_err *err)
{
    out->len = 0;
    int bad = baton_buf_append(out, "\0\0\0\0\0\0\0\0", 8) || put(out, "{");
    if (nmeta > 0) {
        bad = bad || put(out, "\"__metadata__\":{");
        for (size_t i = 0; i < nmeta; i++)
            bad = bad || (i && put(out, ",")) || put_json_string(out, meta_keys[i]) || put(out, ":") ||
                  put_json_string(out, meta_vals[i]);
        bad = bad || put(out, "}");
    }
    uint64_t at = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        size_t es = baton_st_dtype_size(t[i].dtype);
        if (!es || t[i].ndim < 0 || t[i].ndim > BATON_ST_MAX_DIMS || !t[i].name ||
            strcmp(t[i].name, "__metadata__") == 0)
            return baton_err_set(err, BATON_ERR_ARG, "safetensors: tensor %zu ('%s'): bad dtype, rank or name",
                                 i, t[i].name ? t[i].name : "(null)");
        uint64_t numel = 1;
        for (int d = 0; d < t[i].ndim; d++) {
            if (t[i].shape[d] < 0 || __builtin_mul_overflow(numel, (uint64_t)t[i].shape[d], &numel))
                return baton_err_set(err, BATON_ERR_ARG, "safetensors: tensor '%s': bad shape", t[i].name);
        }
        char num[64];
        bad = bad || ((nmeta > 0 || i > 0) && put(out, ",")) || put_json_string(out, t[i].name) ||
              put(out, ":{\"dtype\":\"") || put(out, baton_st_dtype_name(t[i].dtype)) ||
              put(out, "\",\"shape\":[");
        for (int d = 0; d < t[i].ndim && !bad; d++) {
            snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
            bad = put(out, num);
        }
        uint64_t end = at + numel * es;
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                 (unsigned long long)end);
        bad = bad || put(out, num);
        at = end;
    }
    bad = bad || put(out, "}");
    while (!bad && out->len % 8 != 0) bad = put(out, " ");
    if (bad) return baton_err_set(err, BATON_ERR_NOMEM, "safetensors: out of memory building the header");
    uint64_t hl = out->len - 8;
    for (int i = 0; i < 8; i++) out->data[i] = (uint8_t)(hl >> (8 * i));
    *data_len = at;
    return BATON_OK;
}

int ckpt_st_write_file(const char *path, const baton_st_entry *t, size_t n,
                        const char *const *meta_keys, const char *const *meta_vals, size_t nmeta,
                        baton_err *err)
{
    baton_buf hb = {0};
    uint64_t dl;
    int rc = ckpt_st_build_header(t, n, meta_keys, meta_vals, nmeta, &hb, &dl, err);
    if (rc) {
        baton_buf_free(&hb);
        return rc;
    }
    int fd = baton_sys.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        baton_buf_free(&hb);
        return baton_err_set(err, errno == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO, "%s: cannot create: %s",
                             path, strerror(errno));
    }
    rc = baton_write_all(fd, hb.data, hb.len, path, err);
    for (size_t i = 0; i < n && rc == BATON_OK; i++) {
        size_t bytes = baton_st_dtype_size(t[i].dtype);
        for (int d = 0; d < t[i].ndim; d++) bytes *= (size_t)t[i].shape[d];
        rc = baton_write_all(fd, t[i].data, bytes, path, err);
    }
    if (baton_sys.close(fd) != 0 && rc == BATON_OK)
        rc = baton_err_set(err, BATON_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    baton_buf_free(&hb);
    return rc;
}

int baton_st_read_file(const char *path, baton_st_header *h, uint8_t **data, baton_err *err)
{
    size_t len;
    memset(h, 0, sizeof *h);
    *data = NULL;
    int rc = baton_file_read_all(path, (size_t)1 << 40, data, &len, err);
    if (rc) return rc;
    rc = ckpt_st_parse_header(path, *data, len, len, h, err);
    if (rc) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

/* ---- loading into named tensors ---- */

int ckpt_st_load_tensors(const char *path, const baton_nn_tensor *targets, size_t n, const char *what,
                          baton_st_header *meta, baton_err *err)
{
    baton_st_header h;
    uint8_t *data;
    int rc = baton_st_read_file(path, &h, &data, err);
    if (rc) return rc;
    /* validate every pairing before writing anything */
    size_t problems = 0;
    char first[700] = "";
    for (size_t i = 0; i < n; i++) {
        long k = ckpt_st_find(&h, targets[i].name);
        char want[160], got[160];
        fmt_shape(want, sizeof want, targets[i].shape, targets[i].ndim);
        if (k < 0) {
            if (!problems++)
                snprintf(first, sizeof first, "tensor '%s' %s %s is missing", targets[i].name, want,
                         baton_st_dtype_name(targets[i].dtype));
            continue;
        }
        const baton_st_tensor *t = &h.tensors[k];
        int same = t->dtype == targets[i].dtype && t->ndim == targets[i].ndim;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == targets[i].shape[d];
        if (!same && !problems++) {
            fmt_shape(got, sizeof got, t->shape, t->ndim);
            snprintf(first, sizeof first, "tensor '%s' is %s %s in the file, %s expects %s %s", t->name, got,
                     baton_st_dtype_name(t->dtype), what, want, baton_st_dtype_name(targets[i].dtype));
        }
    }
    for (size_t k = 0; k < h.ntensors; k++) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++) found = strcmp(h.tensors[k].name, targets[i].name) == 0;
        if (!found && !problems++)
            snprintf(first, sizeof first, "unexpected tensor '%s' (not in %s)", h.tensors[k].name, what);
    }
    if (problems) {
        rc = baton_err_set(err, BATON_ERR_FORMAT,
                           "%s: a checkpoint of another model? %s%s (%zu problem%s; %s has %zu tensors, the file %zu)",
                           path, first, "", problems, problems == 1 ? "" : "s", what, n, h.ntensors);
    } else {
        for (size_t i = 0; i < n; i++) {
            const baton_st_tensor *t = &h.tensors[ckpt_st_find(&h, targets[i].name)];
            memcpy(targets[i].data, data + h.data_start + t->begin, (size_t)(t->end - t->begin));
        }
    }
    free(data);
    if (rc == BATON_OK && meta)
        *meta = h;
    else
        baton_st_header_free(&h);
    return rc;
}

static int collect(size_t n, int (*get)(const void *, size_t, baton_nn_tensor *), const void *obj,
                   baton_nn_tensor **out, baton_err *err)
{
    *out = calloc(n + 1, sizeof **out);
    if (!*out) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (get(obj, i, &(*out)[i]) != BATON_OK) {
            free(*out);
            *out = NULL;
            return baton_err_set(err, BATON_ERR_ARG, "tensor %zu not available", i);
        }
    return BATON_OK;
}
static int get_model(const void *m, size_t i, baton_nn_tensor *t) { return baton_nn_model_tensor(m, i, t); }
static int get_optim(const void *o, size_t i, baton_nn_tensor *t) { return baton_nn_optim_tensor(o, i, t); }

int baton_ckpt_load_model(const char *path, baton_nn_model *m, baton_err *err)
{
    baton_nn_tensor *ts;
    size_t n = baton_nn_model_ntensors(m);
    int rc = collect(n, get_model, m, &ts, err);
    if (rc) return rc;
    char what[96];
    snprintf(what, sizeof what, "model %s", baton_nn_model_name(m));
    rc = ckpt_st_load_tensors(path, ts, n, what, NULL, err);
    free(ts);
    return rc;
}

/* optim.safetensors' "steps" metadata: a count (absent: *steps untouched). */
static int meta_steps(const char *path, const baton_st_header *h, uint64_t *steps, baton_err *err)
{
    for (size_t i = 0; i < h->nmeta; i++) {
        if (strcmp(h->meta_keys[i], "steps") != 0) continue;
        const char *v = h->meta_vals[i];
        char *e;
        errno = 0;
        unsigned long long n = strtoull(v, &e, 10);
        if (errno || e == v || *e || !isdigit((unsigned char)v[0]))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: __metadata__ 'steps': \"%.40s\" is not a count",
                                 path, v);
        *steps = (uint64_t)n;
    }
    return BATON_OK;
}

int ckpt_load_optim(const char *path, baton_nn_optim *o, baton_err *err)
{
    baton_nn_tensor *ts;
    size_t n = baton_nn_optim_ntensors(o);
    int rc = collect(n, get_optim, o, &ts, err);
    if (rc) return rc;
    baton_st_header h;
    rc = ckpt_st_load_tensors(path, ts, n, "the optimizer", &h, err);
    free(ts);
    if (rc) return rc;
    uint64_t steps = baton_nn_optim_steps(o);
    rc = meta_steps(path, &h, &steps, err);
    if (!rc) baton_nn_optim_set_steps(o, steps);
    baton_st_header_free(&h);
    return rc;
}

int baton_ckpt_load_tensors(const char *ckpt_dir, const baton_nn_tensor *mt, size_t nm, const baton_nn_tensor *ot,
                            size_t no, uint64_t *optim_steps, baton_err *err)
{
    int rc = baton_ckpt_verify(ckpt_dir, err);
    if (rc) return rc;
    char p[4200];
    if ((rc = baton_path_join(p, sizeof p, ckpt_dir, "model.safetensors", err))) return rc;
    if ((rc = ckpt_st_load_tensors(p, mt, nm, "the model", NULL, err))) return rc;
    if (!ot) return BATON_OK;
    if ((rc = baton_path_join(p, sizeof p, ckpt_dir, "optim.safetensors", err))) return rc;
    baton_st_header h;
    if ((rc = ckpt_st_load_tensors(p, ot, no, "the optimizer", &h, err))) return rc;
    uint64_t steps = 0;
    rc = meta_steps(p, &h, &steps, err);
    if (!rc && optim_steps) *optim_steps = steps;
    baton_st_header_free(&h);
    return rc;
}
