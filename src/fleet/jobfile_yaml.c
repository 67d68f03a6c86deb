/* jobfile_yaml.c — walking a job file's libyaml document for the parser (jobfile.c): a node's
 * value as a string, number, whole number, duration or boolean, each checked; a mapping's pairs
 * (keys plain and unique) and a list's items, each with its path ("market.interrupts[2]"); a
 * section flattened to key/value pairs with their lines; growing the job's arrays.
 *
 * Contract: every failure is BATON_ERR_FORMAT in c->err saying "FILE:LINE: FIELD: what was wrong"
 * (out of memory: BATON_ERR_NOMEM); nothing here knows the job file's fields (jobfile_internal.h). */
#include "jobfile_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ values */
int jf_fail(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return baton_err_set(c->err, BATON_ERR_FORMAT, "%s:%d: %s: %s", c->file, line_of(n),
                         *field ? field : "(top level)", msg);
}

const char *jf_kind_name(const yaml_node_t *n)
{
    return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list"
                                                                                      : "a scalar";
}

/* A scalar's text; fails on non-scalars and on embedded NULs. */
int jf_scalar(ctx *c, const yaml_node_t *n, const char *field, const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return jf_fail(c, n, field, "expected a single value, got %s", jf_kind_name(n));
    const char *s = (const char *)n->data.scalar.value;
    if (strlen(s) != n->data.scalar.length) return jf_fail(c, n, field, "contains a NUL byte");
    *out = s;
    return 0;
}

int jf_get_string(ctx *c, const yaml_node_t *n, const char *field, char *dst, size_t cap)
{
    const char *s = "";
    if (jf_scalar(c, n, field, &s)) return c->err->code;
    if (strlen(s) >= cap) return jf_fail(c, n, field, "longer than %zu characters", cap - 1);
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

int jf_get_strdup(ctx *c, const yaml_node_t *n, const char *field, char **dst)
{
    const char *s = "";
    if (jf_scalar(c, n, field, &s)) return c->err->code;
    if (!*s) return jf_fail(c, n, field, "is empty");
    free(*dst);
    *dst = strdup(s);
    if (!*dst) return baton_err_set(c->err, BATON_ERR_NOMEM, "%s: out of memory", c->file);
    return 0;
}

int jf_get_number(ctx *c, const yaml_node_t *n, const char *field, double lo, double hi,
                      const char *what, double *out)
{
    const char *s = "";
    if (jf_scalar(c, n, field, &s)) return c->err->code;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return jf_fail(c, n, field, "expected %s, got '%.64s'", what, s);
    if (v < lo || v > hi) return jf_fail(c, n, field, "%g is out of range (%g to %g)", v, lo, hi);
    *out = v;
    return 0;
}

int jf_get_int(ctx *c, const yaml_node_t *n, const char *field, long lo, long hi, long *out)
{
    const char *s = "";
    if (jf_scalar(c, n, field, &s)) return c->err->code;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) return jf_fail(c, n, field, "expected a whole number, got '%.64s'", s);
    if (v < lo || v > hi) return jf_fail(c, n, field, "%ld is out of range (%ld to %ld)", v, lo, hi);
    *out = v;
    return 0;
}

int jf_get_duration(ctx *c, const yaml_node_t *n, const char *field, double *out)
{
    const char *s = "";
    if (jf_scalar(c, n, field, &s)) return c->err->code;
    double v;
    if (fleet_duration_parse(s, &v) || v > 1e9)
        return jf_fail(c, n, field, "expected a duration (seconds, or a number with s, m, h or d), got '%.64s'", s);
    *out = v;
    return 0;
}

int jf_get_bool(ctx *c, const yaml_node_t *n, const char *field, int *out)
{
    const char *s = "";
    if (jf_scalar(c, n, field, &s)) return c->err->code;
    if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on")) *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off")) *out = 0;
    else return jf_fail(c, n, field, "expected true or false, got '%.64s'", s);
    return 0;
}

/* The first pair of the mapping whose scalar key an earlier pair has (its index, *first the
 * earlier one's), or npairs: O(n log n), not pairwise (a mapping of many keys stays linear). */
static size_t first_dup_key(ctx *c, yaml_node_pair_t *pairs, size_t npairs, size_t *first)
{
    const char **keys = calloc(npairs ? npairs : 1, sizeof *keys);
    size_t *at = malloc((npairs ? npairs : 1) * sizeof *at), nk = 0, dup = npairs;
    for (size_t k = 0; keys && at && k < npairs; k++) {
        yaml_node_t *kn = node_at(c, pairs[k].key);
        if (kn && kn->type == YAML_SCALAR_NODE) keys[nk] = (const char *)kn->data.scalar.value, at[nk++] = k;
    }
    size_t f, d = keys && at ? baton_first_duplicate(keys, nk, &f) : nk;
    if (d < nk) dup = at[d], *first = at[f];
    free(keys);
    free(at);
    return dup;
}

int jf_each_pair(ctx *c, yaml_node_t *map, const char *path, pair_fn fn, void *arg)
{
    if (map->type != YAML_MAPPING_NODE)
        return jf_fail(c, map, path, "expected a mapping (key: value lines), got %s", jf_kind_name(map));
    yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    size_t npairs = (size_t)(map->data.mapping.pairs.top - pairs), first = 0;
    const size_t dup = first_dup_key(c, pairs, npairs, &first);
    for (yaml_node_pair_t *p = pairs; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = node_at(c, p->key), *vn = node_at(c, p->value);
        if (!kn || !vn) return jf_fail(c, map, path, "malformed mapping");
        const char *key = "";
        if (kn->type != YAML_SCALAR_NODE) return jf_fail(c, kn, path, "keys must be plain words");
        if (jf_scalar(c, kn, path, &key)) return c->err->code;
        if ((size_t)(p - pairs) == dup)
            return jf_fail(c, kn, path, "duplicate key '%.64s' (first on line %d)", key,
                        line_of(node_at(c, pairs[first].key)));
        char sub[512];
        snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
        int rc = fn(c, key, kn, vn, arg, sub);
        if (rc) return rc;
    }
    return 0;
}

int jf_each_item(ctx *c, yaml_node_t *seq, const char *path, const char *what, item_fn fn, void *arg)
{
    if (seq->type != YAML_SEQUENCE_NODE) return jf_fail(c, seq, path, "expected %s", what);
    int i = 0;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s[%d]", path, i++);
        yaml_node_t *e = node_at(c, *it);
        if (!e) return jf_fail(c, seq, path, "malformed list");
        int rc = fn(c, e, sub, arg);
        if (rc) return rc;
    }
    return 0;
}

int jf_unknown(ctx *c, yaml_node_t *kn, const char *path, const char *known)
{
    return jf_fail(c, kn, path, "unknown field (known here: %s)", known);
}

/* Room for element n of an array that only jf_grow() enlarges: its capacity is 0 for n = 0, else the
 * next power of two >= max(n, 8), so it doubles (an allocator that copies on every realloc, as the
 * sanitizers' does, would make one element at a time quadratic). The new element is zeroed. */
int jf_grow(void **arr, size_t n, size_t elem, baton_err *err, const char *file)
{
    if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
        void *p = realloc(*arr, (n ? 2 * n : 8) * elem);
        if (!p) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", file);
        *arr = p;
    }
    memset((char *)*arr + n * elem, 0, elem);
    return 0;
}

/* ------------------------------------------------------------------ flattened sections */
int jf_add_kv(ctx *c, baton_job_kv **arr, size_t *n, const char *key, const char *value, int line)
{
    if (jf_grow((void **)arr, *n, sizeof **arr, c->err, c->file)) return c->err->code;
    (*arr)[*n].key = strdup(key);
    (*arr)[*n].value = strdup(value);
    (*arr)[*n].line = line;
    (*n)++;
    if (!(*arr)[*n - 1].key || !(*arr)[*n - 1].value)
        return baton_err_set(c->err, BATON_ERR_NOMEM, "%s: out of memory", c->file);
    return 0;
}

int jf_flatten_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg,
                        const char *path)
{
    (void)key;
    (void)kn;
    return jf_flatten(c, vn, path, arg);
}

int jf_flatten(ctx *c, yaml_node_t *n, const char *path, flat_arg *fa)
{
    if (fa->depth > 8) return jf_fail(c, n, path, "nested too deeply");
    if (n->type == YAML_SCALAR_NODE) {
        const char *s = "";
        if (jf_scalar(c, n, path, &s)) return c->err->code;
        return jf_add_kv(c, fa->arr, fa->n, path, s, line_of(n));
    }
    fa->depth++;
    int rc = 0;
    if (n->type == YAML_MAPPING_NODE) {
        rc = jf_each_pair(c, n, path, jf_flatten_pair, fa);
    } else {
        int i = 0;
        for (yaml_node_item_t *it = n->data.sequence.items.start; !rc && it < n->data.sequence.items.top; it++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.%d", path, i++);
            yaml_node_t *e = node_at(c, *it);
            rc = e ? jf_flatten(c, e, sub, fa) : jf_fail(c, n, path, "malformed list");
        }
    }
    fa->depth--;
    return rc;
}
