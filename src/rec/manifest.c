/* manifest.c — dataset.json, the description of a dataset folder: what the samples are (count,
 * classes, shape, encoding, normalisation) and each shard's size and checksums.
 *
 * Owns parsing + validation (cJSON), serialisation (pretty JSON in a fixed field order, so the
 * same manifest always gives the same bytes), crash-safe saving and loading from a folder.
 *
 * Contract: every field is type- and range-checked, and an error names the file and the field:
 *   "dataset.json: shards[3].bytes: expected a non-negative integer".
 * Integers travel through cJSON's doubles, so they must stay below 2^53 (exact there); larger
 * ones are refused, on load and on save. Shard names are plain file names (no '/', no ".."),
 * samples == Σ shards[].records, classes == len(class_names), shape is [H,W,C] all > 0 (then
 * C == channels) or all 0 (sizes vary), channels is 1..4, mean/std hold `channels` numbers with
 * std > 0. crc32c fields are 8-digit hex strings ("e3069283"). Unknown fields are ignored, so
 * newer writers can add some. Saving serialises, re-parses the text (the same validation a
 * reader will apply) and only then writes it with baton_file_write_atomic. */
#include "rec_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_EXACT 9007199254740991.0   /* 2^53 - 1 */

typedef struct ctx {
    const char *name;
    baton_err *err;
} ctx;

static int bad(ctx *c, const char *path, const char *fmt, const char *detail)
{
    return baton_err_set(c->err, BATON_ERR_FORMAT, "%s: %s: %s%s", c->name, path, fmt,
                         detail ? detail : "");
}

static cJSON *field(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static int get_uint(ctx *c, const cJSON *v, const char *path, uint64_t max, uint64_t *out)
{
    if (!v) return bad(c, path, "missing", NULL);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble != floor(v->valuedouble))
        return bad(c, path, "expected a non-negative integer", NULL);
    if (v->valuedouble > MAX_EXACT)
        return bad(c, path, "expected a non-negative integer below 2^53", NULL);
    uint64_t x = (uint64_t)v->valuedouble;
    if (x > max)
        return baton_err_set(c->err, BATON_ERR_FORMAT,
                             "%s: %s: %llu is out of range (at most %llu)", c->name, path,
                             (unsigned long long)x, (unsigned long long)max);
    *out = x;
    return BATON_OK;
}

static int get_string(ctx *c, const cJSON *v, const char *path, char **out)
{
    if (!v) return bad(c, path, "missing", NULL);
    if (!cJSON_IsString(v) || !v->valuestring) return bad(c, path, "expected a string", NULL);
    *out = strdup(v->valuestring);
    if (!*out) return baton_err_set(c->err, BATON_ERR_NOMEM, "%s: out of memory", c->name);
    return BATON_OK;
}

static int get_crc(ctx *c, const cJSON *v, const char *path, uint32_t *out)
{
    if (!v) return bad(c, path, "missing", NULL);
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    uint32_t x = 0;
    size_t i = 0;
    for (; s && s[i] && i < 8; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0'
              : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) break;
        x = x << 4 | (uint32_t)d;
    }
    if (!s || i != 8 || s[8] != 0)
        return bad(c, path, "expected 8 hexadecimal digits, like \"e3069283\"", NULL);
    *out = x;
    return BATON_OK;
}

/* A shard or index file name: a plain name inside the dataset folder. */
static int check_file_name(ctx *c, const char *s, const char *path)
{
    if (!s[0]) return bad(c, path, "empty file name", NULL);
    if (strchr(s, '/') || strchr(s, '\\') || strstr(s, ".."))
        return bad(c, path, "file name must not contain '/' or \"..\": ", s);
    return BATON_OK;
}

static int get_floats(ctx *c, const cJSON *v, const char *path, uint32_t n, float *out,
                      int positive)
{
    char p[64];
    if (!v) return bad(c, path, "missing", NULL);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != (int)n) {
        snprintf(p, sizeof p, "expected an array of %u numbers (one per channel)", n);
        return bad(c, path, p, NULL);
    }
    uint32_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        snprintf(p, sizeof p, "%s[%u]", path, i);
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || fabs(e->valuedouble) > 1e30)
            return bad(c, p, "expected a finite number", NULL);
        float f = (float)e->valuedouble;   /* checked as stored: 1e-50 would become 0 */
        if (positive && !(f > 0)) return bad(c, p, "expected a number > 0", NULL);
        out[i++] = f;
    }
    return BATON_OK;
}

static int parse_shard(ctx *c, const cJSON *s, size_t i, baton_shard_info *si)
{
    char p[96];
    int rc;
#define SP(key) (snprintf(p, sizeof p, "shards[%zu].%s", i, key), p)
    if (!cJSON_IsObject(s)) {
        snprintf(p, sizeof p, "shards[%zu]", i);
        return bad(c, p, "expected an object", NULL);
    }
    if ((rc = get_string(c, field(s, "file"), SP("file"), &si->file))) return rc;
    if ((rc = check_file_name(c, si->file, SP("file")))) return rc;
    if ((rc = get_uint(c, field(s, "bytes"), SP("bytes"), UINT64_MAX, &si->bytes))) return rc;
    if ((rc = get_uint(c, field(s, "records"), SP("records"), UINT64_MAX, &si->records))) return rc;
    if ((rc = get_crc(c, field(s, "crc32c"), SP("crc32c"), &si->crc32c))) return rc;
    const cJSON *idx = field(s, "index");
    if (idx && !cJSON_IsNull(idx)) {
        if ((rc = get_string(c, idx, SP("index"), &si->index))) return rc;
        if ((rc = check_file_name(c, si->index, SP("index")))) return rc;
        if ((rc = get_uint(c, field(s, "index_bytes"), SP("index_bytes"), UINT64_MAX,
                           &si->index_bytes)))
            return rc;
        if ((rc = get_crc(c, field(s, "index_crc32c"), SP("index_crc32c"), &si->index_crc32c)))
            return rc;
    }
#undef SP
    return BATON_OK;
}

static int parse_root(ctx *c, const cJSON *root, baton_manifest *m)
{
    uint64_t v;
    int rc;
    if (!cJSON_IsObject(root))
        return baton_err_set(c->err, BATON_ERR_FORMAT, "%s: expected a JSON object", c->name);
    if ((rc = get_uint(c, field(root, "baton_dataset"), "baton_dataset", UINT32_MAX, &v)))
        return rc;
    if (v != 1)
        return baton_err_set(c->err, BATON_ERR_FORMAT,
                             "%s: baton_dataset: version %llu is not supported (expected 1)",
                             c->name, (unsigned long long)v);
    m->version = 1;
    if ((rc = get_string(c, field(root, "name"), "name", &m->name))) return rc;
    if ((rc = get_string(c, field(root, "split"), "split", &m->split))) return rc;
    const cJSON *f = field(root, "format");
    if (!f) return bad(c, "format", "missing", NULL);
    if (!cJSON_IsString(f) || baton_rec_format_parse(f->valuestring, &m->format) != BATON_OK)
        return bad(c, "format", "expected \"recordio\" or \"tfrecord\"", NULL);
    f = field(root, "encoding");
    if (!f) return bad(c, "encoding", "missing", NULL);
    if (!cJSON_IsString(f) || baton_encoding_parse(f->valuestring, &m->encoding) != BATON_OK)
        return bad(c, "encoding", "expected \"raw\", \"png\" or \"jpeg\"", NULL);
    if ((rc = get_uint(c, field(root, "quality"), "quality", 100, &v))) return rc;
    m->quality = (int)v;
    if ((rc = get_uint(c, field(root, "samples"), "samples", UINT64_MAX, &m->samples))) return rc;
    if ((rc = get_uint(c, field(root, "classes"), "classes", UINT32_MAX, &v))) return rc;
    m->classes = (uint32_t)v;

    const cJSON *names = field(root, "class_names");
    if (!names) return bad(c, "class_names", "missing", NULL);
    if (!cJSON_IsArray(names)) return bad(c, "class_names", "expected an array of strings", NULL);
    if ((uint64_t)cJSON_GetArraySize(names) != m->classes)
        return baton_err_set(c->err, BATON_ERR_FORMAT,
                             "%s: class_names: %d names, but classes is %u", c->name,
                             cJSON_GetArraySize(names), m->classes);
    m->class_names = calloc(m->classes ? m->classes : 1, sizeof *m->class_names);
    if (!m->class_names)
        return baton_err_set(c->err, BATON_ERR_NOMEM, "%s: out of memory", c->name);
    size_t i = 0;
    const cJSON *e;
    char p[64];
    cJSON_ArrayForEach(e, names)
    {
        snprintf(p, sizeof p, "class_names[%zu]", i);
        if ((rc = get_string(c, e, p, &m->class_names[i]))) return rc;
        i++;
    }

    if ((rc = get_uint(c, field(root, "channels"), "channels", 4, &v))) return rc;
    if (v < 1) return bad(c, "channels", "expected 1, 2, 3 or 4", NULL);
    m->channels = (uint32_t)v;
    const cJSON *shape = field(root, "shape");
    if (!shape) return bad(c, "shape", "missing", NULL);
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 3)
        return bad(c, "shape", "expected [height, width, channels]", NULL);
    i = 0;
    cJSON_ArrayForEach(e, shape)
    {
        snprintf(p, sizeof p, "shape[%zu]", i);
        if ((rc = get_uint(c, e, p, i == 2 ? 4 : 65535, &v))) return rc;
        m->shape[i++] = (uint32_t)v;
    }
    int zeros = !m->shape[0] + !m->shape[1] + !m->shape[2];
    if (zeros != 0 && zeros != 3)
        return bad(c, "shape", "expected all three sizes > 0, or all 0 when images vary", NULL);
    if (zeros == 0 && m->shape[2] != m->channels)
        return baton_err_set(c->err, BATON_ERR_FORMAT, "%s: shape[2]: %u, but channels is %u",
                             c->name, m->shape[2], m->channels);
    if ((rc = get_floats(c, field(root, "mean"), "mean", m->channels, m->mean, 0))) return rc;
    if ((rc = get_floats(c, field(root, "std"), "std", m->channels, m->std, 1))) return rc;
    if ((rc = get_uint(c, field(root, "seed"), "seed", UINT64_MAX, &m->seed))) return rc;
    f = field(root, "shuffled");
    if (!f) return bad(c, "shuffled", "missing", NULL);
    if (!cJSON_IsBool(f)) return bad(c, "shuffled", "expected true or false", NULL);
    m->shuffled = cJSON_IsTrue(f);

    const cJSON *shards = field(root, "shards");
    if (!shards) return bad(c, "shards", "missing", NULL);
    if (!cJSON_IsArray(shards)) return bad(c, "shards", "expected an array of objects", NULL);
    size_t ns = (size_t)cJSON_GetArraySize(shards);
    m->shards = calloc(ns ? ns : 1, sizeof *m->shards);
    if (!m->shards) return baton_err_set(c->err, BATON_ERR_NOMEM, "%s: out of memory", c->name);
    uint64_t total = 0;
    i = 0;
    cJSON_ArrayForEach(e, shards)
    {
        m->nshards = i + 1;
        if ((rc = parse_shard(c, e, i, &m->shards[i]))) return rc;
        total += m->shards[i].records;   /* each < 2^53 and at most 2^31 shards: no wrap */
        i++;
    }
    const char **files = malloc((ns ? ns : 1) * sizeof *files);   /* a file named twice: O(n log n) */
    if (!files) return baton_err_set(c->err, BATON_ERR_NOMEM, "%s: out of memory", c->name);
    for (size_t k = 0; k < ns; k++) files[k] = m->shards[k].file;
    size_t first, dup = baton_first_duplicate(files, ns, &first);
    free(files);
    if (dup < ns) {
        snprintf(p, sizeof p, "shards[%zu].file", dup);
        return baton_err_set(c->err, BATON_ERR_FORMAT, "%s: %s: \"%s\" is already shards[%zu].file", c->name, p,
                             m->shards[dup].file, first);
    }
    if (total != m->samples)
        return baton_err_set(c->err, BATON_ERR_FORMAT,
                             "%s: samples: %llu, but the shards hold %llu records", c->name,
                             (unsigned long long)m->samples, (unsigned long long)total);
    return BATON_OK;
}

int baton_manifest_parse(const char *name, const char *json, size_t n, baton_manifest *m,
                         baton_err *err)
{
    memset(m, 0, sizeof *m);
    ctx c = {name ? name : BATON_MANIFEST_NAME, err};
    if (n > BATON_MANIFEST_MAX_BYTES)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu bytes, more than the %u accepted",
                             c.name, n, BATON_MANIFEST_MAX_BYTES);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, n, &end, 0);
    size_t stop = root ? (size_t)(end - json) : 0;
    if (root) {
        while (stop < n && (json[stop] == ' ' || json[stop] == '\t' || json[stop] == '\n' ||
                            json[stop] == '\r'))
            stop++;
    }
    if (!root || stop < n) {
        size_t at =
            root ? stop : (end && end >= json && end <= json + n ? (size_t)(end - json) : n);
        size_t line = 1;
        for (size_t k = 0; k < at && k < n; k++) line += json[k] == '\n';
        cJSON_Delete(root);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %zu: %s", c.name, line,
                             root ? "unexpected text after the JSON object" : "invalid JSON");
    }
    int rc = parse_root(&c, root, m);
    cJSON_Delete(root);
    if (rc) baton_manifest_free(m);
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
    add(root, "encoding", str(baton_encoding_name(m->encoding)), &ok);
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
        push(shards, s, &ok);
    }
    add(root, "shards", shards, &ok);
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
    }
    free(m->shards);
    memset(m, 0, sizeof *m);
}
