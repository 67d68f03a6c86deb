/* manifest.c — dataset.json, the description of a dataset folder: what the samples are (count,
 * classes, shape, encoding, normalisation) and each shard's size and checksums.
 *
 * Owns parsing + validation (cJSON), serialisation (pretty JSON in a fixed field order, so the
 * same manifest always gives the same bytes), crash-safe saving and loading from a folder.
 *
 * Contract: every field is type- and range-checked, and an error names the file and the field:
 *   "dataset.json: shards[3].bytes: is not a whole number in 0..2^53-1" (util.h's baton_jr reads it).
 * Integers travel through cJSON's doubles, so they must stay below 2^53 (exact there); larger
 * ones are refused, on load and on save. Shard names are plain file names (no '/', no ".."),
 * samples == Σ shards[].records, classes == len(class_names), shape is [H,W,C] all > 0 (then
 * C == channels) or all 0 (sizes vary), channels is 1..4, mean/std hold `channels` numbers with
 * std > 0. crc32c fields are 8-digit hex strings ("e3069283"). A shard's pieces (optional: older
 * datasets have none) are piece_bytes (BATON_PIECE_BYTES_MIN..MAX) and piece_crc32c, one string of
 * 8 hex digits per piece with nothing between them, which must sum to the shard's crc32c. The
 * optional "indexes" ({"file", "bytes"}: every shard's .idx in one file) needs every shard to have
 * an index, and bytes == Σ index_bytes. Unknown
 * fields are ignored, so newer writers can add some. Saving serialises, re-parses the text (the same validation a
 * reader will apply) and only then writes it with baton_file_write_atomic. */
#include "rec_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The manifest is read with baton_jr (util.h): numbers only (no numeric strings), the first
 * failure kept. These are its own kinds of field. */

/* a string at path (o's member; "" for o itself), strdup'd */
static void get_string(baton_jr *r, const cJSON *o, const char *path, char **out)
{
    const cJSON *v = baton_jr_get(r, o, path);
    if (r->rc) return;
    if (!cJSON_IsString(v)) {
        baton_jr_fail(r, path, v ? "is not a string" : "is missing");
        return;
    }
    if (!(*out = strdup(v->valuestring))) r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
}

/* The 8 hex digits at s as a number; -1 when they are not 8 hex digits. */
static int64_t hex8(const char *s)
{
    uint32_t x = 0;
    for (size_t i = 0; i < 8; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0'
              : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) return -1;
        x = x << 4 | (uint32_t)d;
    }
    return x;
}

static void get_crc(baton_jr *r, const cJSON *o, const char *path, uint32_t *out)
{
    const cJSON *v = baton_jr_get(r, o, path);
    if (r->rc) return;
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    int64_t x = s && strlen(s) == 8 ? hex8(s) : -1;
    if (!v) baton_jr_fail(r, path, "is missing");
    else if (x < 0) baton_jr_fail(r, path, "is not 8 hexadecimal digits, like \"e3069283\"");
    else *out = (uint32_t)x;
}

uint64_t baton_shard_pieces(const baton_shard_info *si)
{
    return si->piece_bytes ? si->bytes / si->piece_bytes + (si->bytes % si->piece_bytes != 0) : 0;
}

/* piece_bytes and piece_crc32c of a shard, when it has them: one CRC per piece, which together
 * must be the shard's crc32c (a list that contradicts it could never verify a byte). */
static void get_pieces(baton_jr *r, const cJSON *o, baton_shard_info *si)
{
    const cJSON *v = baton_jr_get(r, o, "piece_crc32c");
    if (r->rc || (!v && !baton_jr_get(r, o, "piece_bytes"))) return;
    baton_jr_u64(r, o, "piece_bytes", BATON_PIECE_BYTES_MIN, BATON_PIECE_BYTES_MAX, &si->piece_bytes);
    if (r->rc) return;
    uint64_t n = baton_shard_pieces(si);
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    if (!s) {
        baton_jr_fail(r, "piece_crc32c", v ? "is not a string" : "is missing (piece_bytes is given)");
        return;
    }
    if (strlen(s) != n * 8) {
        baton_jr_fail(r, "piece_crc32c", "%zu characters, expected 8 hexadecimal digits for each of the %llu pieces",
                      strlen(s), (unsigned long long)n);
        return;
    }
    if (!(si->piece_crc32c = malloc((n ? n : 1) * sizeof *si->piece_crc32c))) {
        r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
        return;
    }
    uint32_t whole = 0;
    for (uint64_t k = 0; k < n; k++) {
        int64_t x = hex8(s + 8 * k);
        if (x < 0) {
            baton_jr_fail(r, "piece_crc32c", "piece %llu (characters %llu..%llu) is not 8 hexadecimal digits",
                          (unsigned long long)k, (unsigned long long)(8 * k), (unsigned long long)(8 * k + 7));
            return;
        }
        si->piece_crc32c[k] = (uint32_t)x;
        uint64_t end = (k + 1) * si->piece_bytes < si->bytes ? (k + 1) * si->piece_bytes : si->bytes;
        whole ^= baton_crc32c_shift((uint32_t)x, si->bytes - end);
    }
    if (n && whole != si->crc32c)
        baton_jr_fail(r, "piece_crc32c", "its pieces sum to CRC32C %08x, but crc32c says %08x", whole, si->crc32c);
}

/* A shard or index file name: a plain name inside the dataset folder. */
static void check_file_name(baton_jr *r, const char *s, const char *path)
{
    if (r->rc) return;
    if (!s[0]) baton_jr_fail(r, path, "is an empty file name");
    else if (strchr(s, '/') || strchr(s, '\\') || strstr(s, ".."))
        baton_jr_fail(r, path, "file name must not contain '/' or \"..\": %s", s);
}

static void get_floats(baton_jr *r, const cJSON *o, const char *path, uint32_t n, float *out, int positive)
{
    const cJSON *v = baton_jr_get(r, o, path);
    if (r->rc) return;
    if (!v) baton_jr_fail(r, path, "is missing");
    else if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != (int)n)
        baton_jr_fail(r, path, "expected an array of %u numbers (one per channel)", n);
    uint32_t i = 0;
    const cJSON *e, *list = r->rc ? NULL : v;
    cJSON_ArrayForEach(e, list)
    {
        char p[64];
        snprintf(p, sizeof p, "%s[%u]", path, i);
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || fabs(e->valuedouble) > 1e30) {
            baton_jr_fail(r, p, "is not a finite number");
            return;
        }
        float f = (float)e->valuedouble;   /* checked as stored: 1e-50 would become 0 */
        if (positive && !(f > 0)) {
            baton_jr_fail(r, p, "is not a number > 0");
            return;
        }
        out[i++] = f;
    }
}

static void parse_shard(baton_jr *r, const cJSON *s, size_t i, baton_shard_info *si)
{
    baton_jr_at(r, "shards[%zu]", i);
    if (!cJSON_IsObject(s)) baton_jr_fail(r, NULL, "is not an object");
    get_string(r, s, "file", &si->file);
    check_file_name(r, si->file, "file");
    baton_jr_u64(r, s, "bytes", 0, UINT64_MAX, &si->bytes);
    baton_jr_u64(r, s, "records", 0, UINT64_MAX, &si->records);
    get_crc(r, s, "crc32c", &si->crc32c);
    const cJSON *idx = baton_jr_get(r, s, "index");
    if (idx && !cJSON_IsNull(idx)) {
        get_string(r, s, "index", &si->index);
        check_file_name(r, si->index, "index");
        baton_jr_u64(r, s, "index_bytes", 0, UINT64_MAX, &si->index_bytes);
        get_crc(r, s, "index_crc32c", &si->index_crc32c);
    }
    get_pieces(r, s, si);
    if (!r->rc) baton_jr_at(r, "%s", "");
}

/* format, encoding, quality, samples, classes and their names */
static void parse_kind(baton_jr *r, const cJSON *root, baton_manifest *m)
{
    uint64_t v = 0;
    if (!baton_jr_u64(r, root, "baton_dataset", 0, UINT32_MAX, &v) && v != 1)
        baton_jr_fail(r, "baton_dataset", "version %llu is not supported (expected 1)", (unsigned long long)v);
    m->version = 1;
    get_string(r, root, "name", &m->name);
    get_string(r, root, "split", &m->split);
    const cJSON *f = baton_jr_get(r, root, "format");
    if (!r->rc && !f) baton_jr_fail(r, "format", "is missing");
    else if (!r->rc && (!cJSON_IsString(f) || baton_rec_format_parse(f->valuestring, &m->format) != BATON_OK))
        baton_jr_fail(r, "format", "expected \"recordio\" or \"tfrecord\"");
    f = baton_jr_get(r, root, "encoding");
    if (!r->rc && !f) baton_jr_fail(r, "encoding", "is missing");
    else if (!r->rc && cJSON_IsString(f) && !strcmp(f->valuestring, "mixed"))
        m->encoding = BATON_ENC_UNKNOWN;   /* PNG and JPEG records: each sniffed */
    else if (!r->rc && (!cJSON_IsString(f) || baton_encoding_parse(f->valuestring, &m->encoding) != BATON_OK))
        baton_jr_fail(r, "encoding", "expected \"raw\", \"png\", \"jpeg\" or \"mixed\"");
    if (!baton_jr_u64(r, root, "quality", 0, 100, &v)) m->quality = (int)v;
    baton_jr_u64(r, root, "samples", 0, UINT64_MAX, &m->samples);
    if (!baton_jr_u64(r, root, "classes", 0, UINT32_MAX, &v)) m->classes = (uint32_t)v;
    const cJSON *names = baton_jr_get(r, root, "class_names");
    if (r->rc) return;
    if (!names) baton_jr_fail(r, "class_names", "is missing");
    else if (!cJSON_IsArray(names)) baton_jr_fail(r, "class_names", "expected an array of strings");
    else if ((uint64_t)cJSON_GetArraySize(names) != m->classes)
        baton_jr_fail(r, "class_names", "%d names, but classes is %u", cJSON_GetArraySize(names), m->classes);
    if (r->rc) return;
    if (!(m->class_names = calloc(m->classes ? m->classes : 1, sizeof *m->class_names))) {
        r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
        return;
    }
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, names)
    {
        baton_jr_at(r, "class_names[%zu]", i);
        get_string(r, e, "", &m->class_names[i++]);
    }
    if (!r->rc) baton_jr_at(r, "%s", "");
}

/* channels, shape, mean and std, seed, shuffled */
static void parse_shape(baton_jr *r, const cJSON *root, baton_manifest *m)
{
    uint64_t v = 0;
    if (!baton_jr_u64(r, root, "channels", 1, 4, &v)) m->channels = (uint32_t)v;
    const cJSON *shape = baton_jr_get(r, root, "shape");
    if (!r->rc && !shape) baton_jr_fail(r, "shape", "is missing");
    else if (!r->rc && (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 3))
        baton_jr_fail(r, "shape", "expected [height, width, channels]");
    size_t i = 0;
    const cJSON *e, *list = r->rc ? NULL : shape;
    cJSON_ArrayForEach(e, list)
    {
        baton_jr_at(r, "shape[%zu]", i);
        if (!baton_jr_u64(r, e, "", 0, i == 2 ? 4 : 65535, &v)) m->shape[i++] = (uint32_t)v;
    }
    if (r->rc) return;
    baton_jr_at(r, "%s", "");
    int zeros = !m->shape[0] + !m->shape[1] + !m->shape[2];
    if (zeros != 0 && zeros != 3) baton_jr_fail(r, "shape", "expected all three sizes > 0, or all 0 when images vary");
    else if (zeros == 0 && m->shape[2] != m->channels)
        baton_jr_fail(r, "shape[2]", "%u, but channels is %u", m->shape[2], m->channels);
    get_floats(r, root, "mean", m->channels, m->mean, 0);
    get_floats(r, root, "std", m->channels, m->std, 1);
    baton_jr_u64(r, root, "seed", 0, UINT64_MAX, &m->seed);
    int b = 0;
    if (!baton_jr_bool(r, root, "shuffled", &b)) m->shuffled = b;
}

/* "indexes": {"file": "dataset.idx", "bytes": N}, every shard's index in one file (optional). */
static void parse_indexes(baton_jr *r, const cJSON *root, baton_manifest *m)
{
    const cJSON *o = baton_jr_get(r, root, "indexes");
    if (r->rc || !o || cJSON_IsNull(o)) return;
    baton_jr_at(r, "indexes");
    if (!cJSON_IsObject(o)) baton_jr_fail(r, NULL, "is not an object");
    get_string(r, o, "file", &m->indexes);
    check_file_name(r, m->indexes, "file");
    baton_jr_u64(r, o, "bytes", 0, UINT64_MAX, &m->indexes_bytes);
    uint64_t sum = 0;
    for (size_t i = 0; !r->rc && i < m->nshards; i++) {
        if (!m->shards[i].index) {
            baton_jr_fail(r, NULL, "given, but shards[%zu] has no index", i);
            return;
        }
        sum += m->shards[i].index_bytes;
    }
    if (!r->rc && sum != m->indexes_bytes)
        baton_jr_fail(r, "bytes", "%llu, but the shards' indexes hold %llu bytes", (unsigned long long)m->indexes_bytes,
                      (unsigned long long)sum);
    if (!r->rc) baton_jr_at(r, "%s", "");
}

static void parse_shards(baton_jr *r, const cJSON *root, baton_manifest *m)
{
    const cJSON *shards = baton_jr_get(r, root, "shards");
    if (r->rc) return;
    if (!shards) baton_jr_fail(r, "shards", "is missing");
    else if (!cJSON_IsArray(shards)) baton_jr_fail(r, "shards", "expected an array of objects");
    if (r->rc) return;
    size_t ns = (size_t)cJSON_GetArraySize(shards);
    if (!(m->shards = calloc(ns ? ns : 1, sizeof *m->shards))) {
        r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
        return;
    }
    uint64_t total = 0;
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, shards)
    {
        m->nshards = i + 1;
        parse_shard(r, e, i, &m->shards[i]);
        if (r->rc) return;
        total += m->shards[i].records;   /* each < 2^53 and at most 2^31 shards: no wrap */
        i++;
    }
    const char **files = malloc((ns ? ns : 1) * sizeof *files);   /* a file named twice: O(n log n) */
    if (!files) {
        r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "%s: out of memory", r->doc);
        return;
    }
    for (size_t k = 0; k < ns; k++) files[k] = m->shards[k].file;
    size_t first, dup = baton_first_duplicate(files, ns, &first);
    free(files);
    if (dup < ns) {
        baton_jr_at(r, "shards[%zu]", dup);
        baton_jr_fail(r, "file", "\"%s\" is already shards[%zu].file", m->shards[dup].file, first);
    } else if (total != m->samples) {
        baton_jr_fail(r, "samples", "%llu, but the shards hold %llu records", (unsigned long long)m->samples,
                      (unsigned long long)total);
    }
}

int baton_manifest_parse(const char *name, const char *json, size_t n, baton_manifest *m,
                         baton_err *err)
{
    memset(m, 0, sizeof *m);
    baton_jr r;
    baton_jr_init(&r, name ? name : BATON_MANIFEST_NAME, err);
    if (n > BATON_MANIFEST_MAX_BYTES)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu bytes, more than the %u accepted",
                             r.doc, n, BATON_MANIFEST_MAX_BYTES);
    cJSON *root = baton_jr_parse(&r, json, n);
    if (root) {
        parse_kind(&r, root, m);
        parse_shape(&r, root, m);
        parse_shards(&r, root, m);
        parse_indexes(&r, root, m);
    }
    cJSON_Delete(root);
    if (r.rc) baton_manifest_free(m);
    return r.rc;
}

int baton_indexes_read(const char *dir, const baton_manifest *m, uint8_t **out, size_t *n, baton_err *err)
{
    char path[4096];
    *out = NULL;
    *n = 0;
    int rc = baton_path_join(path, sizeof path, dir, m->indexes, err);
    if (rc == BATON_OK) rc = baton_file_read_all(path, (size_t)m->indexes_bytes, out, n, err);
    if (rc == BATON_OK && *n != m->indexes_bytes)
        rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: %zu bytes, dataset.json says %llu", path, *n,
                           (unsigned long long)m->indexes_bytes);
    size_t at = 0;
    for (size_t i = 0; rc == BATON_OK && i < m->nshards; at += m->shards[i++].index_bytes)
        if (baton_crc32c(0, *out + at, (size_t)m->shards[i].index_bytes) != m->shards[i].index_crc32c)
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: the part of %s (bytes %zu..) differs from dataset.json's "
                               "index_crc32c", path, m->shards[i].index, at);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int baton_manifest_load(const char *dir, baton_manifest *m, baton_err *err)
{
    memset(m, 0, sizeof *m);
    char path[4096];
    int rc = baton_path_join(path, sizeof path, dir, BATON_MANIFEST_NAME, err);
    if (rc) return rc;
    uint8_t *text;
    size_t n;
    rc = baton_file_read_all(path, BATON_MANIFEST_MAX_BYTES, &text, &n, err);
    if (rc == BATON_ERR_NOTFOUND)
        return baton_err_set(err, BATON_ERR_NOTFOUND,
                             "%s: no dataset.json (not a baton dataset folder)", dir);
    if (rc) return rc;
    rc = baton_manifest_parse(path, (const char *)text, n, m, err);
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- writing */

/* The shortest decimal text that reads back as the same float. */
static cJSON *float_item(float f)
{
    char s[48];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, (double)f);
        if (strtof(s, NULL) == f) break;
    }
    if (!isfinite(f)) snprintf(s, sizeof s, "null");
    return cJSON_CreateRaw(s);
}

static cJSON *crc_item(uint32_t crc)
{
    char s[16];
    snprintf(s, sizeof s, "%08x", crc);
    return cJSON_CreateString(s);
}

/* A shard's piece CRCs as one string, 8 hex digits each. */
static cJSON *pieces_item(const baton_shard_info *si)
{
    uint64_t n = baton_shard_pieces(si);
    char *t = malloc(n * 8 + 1);
    if (!t) return NULL;
    for (uint64_t k = 0; k < n; k++) snprintf(t + 8 * k, 9, "%08x", si->piece_crc32c[k]);
    t[n * 8] = 0;
    cJSON *item = cJSON_CreateString(t);
    free(t);
    return item;
}

/* Add item to obj; remembers failure in *ok (cJSON_AddItemToObject fails only on NULL). */
static void add(cJSON *obj, const char *key, cJSON *item, int *ok)
{
    if (!item || !cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        *ok = 0;
    }
}

static void push(cJSON *arr, cJSON *item, int *ok)
{
    if (!item || !cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        *ok = 0;
    }
}

/* Integers as exact decimal text: cJSON's own printing of doubles may round 16-digit values. */
static cJSON *num(uint64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(s);
}
static cJSON *str(const char *s) { return cJSON_CreateString(s ? s : ""); }

char *baton_manifest_to_json(const baton_manifest *m)
{
    int ok = 1;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    uint32_t ch = m->channels > 4 ? 4 : m->channels;
    add(root, "baton_dataset", num(m->version ? (uint64_t)m->version : 1), &ok);
    add(root, "name", str(m->name), &ok);
    add(root, "split", str(m->split), &ok);
    add(root, "format", str(baton_rec_format_name(m->format)), &ok);
    add(root, "encoding", str(m->encoding == BATON_ENC_UNKNOWN ? "mixed" : baton_encoding_name(m->encoding)), &ok);
    add(root, "quality", num(m->quality > 0 ? (uint64_t)m->quality : 0), &ok);
    add(root, "samples", num(m->samples), &ok);
    add(root, "classes", num(m->classes), &ok);
    cJSON *names = cJSON_CreateArray();
    for (uint32_t k = 0; names && k < m->classes; k++)
        push(names, str(m->class_names ? m->class_names[k] : NULL), &ok);
    add(root, "class_names", names, &ok);
    cJSON *shape = cJSON_CreateArray();
    for (int k = 0; shape && k < 3; k++) push(shape, num(m->shape[k]), &ok);
    add(root, "shape", shape, &ok);
    add(root, "channels", num(m->channels), &ok);
    cJSON *mean = cJSON_CreateArray(), *sd = cJSON_CreateArray();
    for (uint32_t k = 0; mean && sd && k < ch; k++) {
        push(mean, float_item(m->mean[k]), &ok);
        push(sd, float_item(m->std[k]), &ok);
    }
    add(root, "mean", mean, &ok);
    add(root, "std", sd, &ok);
    add(root, "seed", num(m->seed), &ok);
    add(root, "shuffled", cJSON_CreateBool(m->shuffled != 0), &ok);
    cJSON *shards = cJSON_CreateArray();
    for (size_t i = 0; shards && i < m->nshards; i++) {
        const baton_shard_info *si = &m->shards[i];
        cJSON *s = cJSON_CreateObject();
        if (!s) {
            ok = 0;
            break;
        }
        add(s, "file", str(si->file), &ok);
        if (si->index) add(s, "index", str(si->index), &ok);
        add(s, "bytes", num(si->bytes), &ok);
        add(s, "records", num(si->records), &ok);
        add(s, "crc32c", crc_item(si->crc32c), &ok);
        if (si->index) {
            add(s, "index_bytes", num(si->index_bytes), &ok);
            add(s, "index_crc32c", crc_item(si->index_crc32c), &ok);
        }
        if (si->piece_bytes && si->piece_crc32c) {
            add(s, "piece_bytes", num(si->piece_bytes), &ok);
            add(s, "piece_crc32c", pieces_item(si), &ok);
        }
        push(shards, s, &ok);
    }
    add(root, "shards", shards, &ok);
    if (m->indexes) {
        cJSON *ix = cJSON_CreateObject();
        if (ix) add(ix, "file", str(m->indexes), &ok), add(ix, "bytes", num(m->indexes_bytes), &ok);
        add(root, "indexes", ix, &ok);
    }
    char *out = ok ? baton_json_print(root, 1) : NULL;
    cJSON_Delete(root);
    return out;
}

int baton_manifest_save(const char *dir, const baton_manifest *m, baton_err *err)
{
    char path[4096];
    int rc = baton_path_join(path, sizeof path, dir, BATON_MANIFEST_NAME, err);
    if (rc) return rc;
    char *json = baton_manifest_to_json(m);
    if (!json) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    size_t n = strlen(json);
    /* validate exactly what a reader will see */
    baton_manifest check;
    rc = baton_manifest_parse(path, json, n, &check, err);
    if (rc) {
        free(json);
        return baton_err_prefix(err, "refusing to save an invalid manifest");
    }
    baton_manifest_free(&check);
    /* end with a newline, like any text file */
    char *text = realloc(json, n + 2);
    if (!text) {
        free(json);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    }
    text[n] = '\n';
    text[n + 1] = 0;
    rc = baton_file_write_atomic(path, text, n + 1, err);
    free(text);
    return rc;
}

void baton_manifest_free(baton_manifest *m)
{
    if (!m) return;
    free(m->name);
    free(m->split);
    if (m->class_names)
        for (uint32_t k = 0; k < m->classes; k++) free(m->class_names[k]);
    free(m->class_names);
    for (size_t i = 0; m->shards && i < m->nshards; i++) {
        free(m->shards[i].file);
        free(m->shards[i].index);
        free(m->shards[i].piece_crc32c);
    }
    free(m->shards);
    free(m->indexes);
    memset(m, 0, sizeof *m);
}
