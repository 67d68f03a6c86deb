/* json_read.c — the one JSON reader: checked JSON from outside with a sticky error (util_json.h,
 * baton_jr), and baton_jr_value for text its caller judges. No other file calls cJSON_Parse.
 *
 * Contract: a getter on a reader that has failed writes nothing and returns the first failure; a
 * getter that fails writes nothing to its output. Lookups are case-sensitive; a path's keys are
 * split at '.', so a key holding a dot cannot be named (none of baton's files has one). Messages
 * quote at most 64 bytes of a value from the document. */
#include "baton/util_json.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXACT_MAX 9007199254740991.0   /* 2^53 - 1: above it a JSON number may have been rounded */

void baton_jr_init(baton_jr *r, const char *doc, baton_err *err)
{
    memset(r, 0, sizeof *r);
    r->doc = doc;
    r->err = err;
}

void baton_jr_at(baton_jr *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->at, sizeof r->at, fmt, ap);
    va_end(ap);
}

int baton_jr_fail(baton_jr *r, const char *path, const char *fmt, ...)
{
    if (r->rc) return r->rc;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *dot = r->at[0] && path && *path ? "." : "";
    if (r->at[0] || (path && *path))
        r->rc = baton_err_set(r->err, BATON_ERR_FORMAT, "%s: %s%s%s: %s", r->doc, r->at, dot, path ? path : "", what);
    else
        r->rc = baton_err_set(r->err, BATON_ERR_FORMAT, "%s: %s", r->doc, what);
    return r->rc;
}

/* text as one JSON value with nothing but white space after it: the value, else NULL and *stop the
 * byte where parsing stopped (len: text after the value) */
static cJSON *value(const char *text, size_t len, size_t *stop, size_t *after)
{
    const char *end = NULL;
    *stop = *after = len;
    if (!text) return NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        *stop = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        return NULL;
    }
    for (const char *q = end; q && q < text + len; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            *after = (size_t)(q - text);
            cJSON_Delete(j);
            return NULL;
        }
    return j;
}

struct cJSON *baton_jr_value(const char *text, size_t len)
{
    size_t stop, after;
    return value(text, len, &stop, &after);
}

struct cJSON *baton_jr_parse(baton_jr *r, const char *text, size_t len)
{
    if (r->rc) return NULL;
    size_t at, after;
    cJSON *j = value(text, len, &at, &after);
    if (!j && after < len) {
        baton_jr_fail(r, NULL, "text after the JSON object (at byte %zu)", after);
        return NULL;
    }
    if (!j) {
        size_t line = 1, col = 1;
        for (size_t i = 0; text && i < at; i++) {
            if (text[i] == '\n') line++, col = 1;
            else col++;
        }
        baton_jr_fail(r, NULL, "not JSON: at byte %zu (line %zu, column %zu)", at, line, col);
        return NULL;
    }
    if (!cJSON_IsObject(j)) {
        baton_jr_fail(r, NULL, "not a JSON object");
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

const cJSON *baton_jr_get(baton_jr *r, const cJSON *o, const char *path)
{
    if (r->rc) return NULL;
    char key[128];
    const char *p = path;
    while (o && *p) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof key) return NULL;
        memcpy(key, p, n);
        key[n] = 0;
        o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
        p += n + (p[n] == '.');
    }
    return o;
}

const cJSON *baton_jr_obj(baton_jr *r, const cJSON *o, const char *path)
{
    const cJSON *x = baton_jr_get(r, o, path);
    if (r->rc) return NULL;
    if (!cJSON_IsObject(x)) {
        baton_jr_fail(r, path, x ? "is not an object" : "is missing");
        return NULL;
    }
    return x;
}

/* x as an integer (a whole number up to 2^53, or as strings says: 1..20 decimal digits, white space
 * around them under BATON_JR_NUMERIC); 0 when it is not one */
static int integer(const cJSON *x, int strings, uint64_t *v)
{
    if (cJSON_IsNumber(x)) {
        double d = x->valuedouble;
        if (!(d >= 0 && d <= EXACT_MAX && d == floor(d))) return 0;
        *v = (uint64_t)d;
        return 1;
    }
    if (!cJSON_IsString(x) || strings == BATON_JR_NUMBERS) return 0;
    const int numeric = strings == BATON_JR_NUMERIC;
    const char *s = x->valuestring;
    if (numeric) while (isspace((unsigned char)*s)) s++;
    size_t n = strspn(s, "0123456789");
    const char *rest = s + n;
    if (numeric) while (isspace((unsigned char)*rest)) rest++;
    if (n < 1 || n > 20 || *rest) return 0;
    errno = 0;
    unsigned long long u = strtoull(s, NULL, 10);
    if (errno) return 0;
    *v = u;
    return 1;
}

/* x as a finite number: a JSON number, or (BATON_JR_NUMERIC) a string holding one, white space
 * around it allowed (DeepRacer's files: Python float()s their values) */
static int number(const baton_jr *r, const cJSON *x, double *d)
{
    if (cJSON_IsNumber(x)) {
        *d = x->valuedouble;
        return isfinite(*d);
    }
    if (r->strings != BATON_JR_NUMERIC || !cJSON_IsString(x)) return 0;
    const char *s = x->valuestring;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return 0;
    char *end;
    errno = 0;
    *d = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    return !errno && !*end && isfinite(*d);
}

int baton_jr_u64(baton_jr *r, const cJSON *o, const char *path, uint64_t lo, uint64_t hi, uint64_t *v)
{
    const cJSON *x = baton_jr_get(r, o, path);
    uint64_t u;
    if (r->rc) return r->rc;
    if (!x) return baton_jr_fail(r, path, "is missing");
    if (!integer(x, r->strings, &u))
        return baton_jr_fail(r, path, r->strings ? "is not a whole number in 0..2^53-1 (or a string of decimal digits)"
                                                 : "is not a whole number in 0..2^53-1");
    if (u < lo || u > hi)
        return baton_jr_fail(r, path, "is %llu, outside %llu..%llu", (unsigned long long)u, (unsigned long long)lo,
                             (unsigned long long)hi);
    *v = u;
    return BATON_OK;
}

int baton_jr_dbl(baton_jr *r, const cJSON *o, const char *path, double lo, double hi, double *v)
{
    const cJSON *x = baton_jr_get(r, o, path);
    if (r->rc) return r->rc;
    double d;
    if (!x) return baton_jr_fail(r, path, "is missing");
    if (!number(r, x, &d)) return baton_jr_fail(r, path, "is not a number");
    if (!(d >= lo && d <= hi)) return baton_jr_fail(r, path, "is %g, outside %g..%g", d, lo, hi);
    *v = d;
    return BATON_OK;
}

int baton_jr_str(baton_jr *r, const cJSON *o, const char *path, char *out, size_t cap)
{
    const cJSON *x = baton_jr_get(r, o, path);
    if (r->rc) return r->rc;
    if (!cJSON_IsString(x)) return baton_jr_fail(r, path, x ? "is not a string" : "is missing");
    size_t n = strlen(x->valuestring);
    if (!n) return baton_jr_fail(r, path, "is empty");
    if (n >= cap) return baton_jr_fail(r, path, "is %zu bytes long (at most %zu)", n, cap - 1);
    memcpy(out, x->valuestring, n + 1);
    return BATON_OK;
}

int baton_jr_bool(baton_jr *r, const cJSON *o, const char *path, int *v)
{
    const cJSON *x = baton_jr_get(r, o, path);
    if (r->rc) return r->rc;
    if (!cJSON_IsBool(x)) return baton_jr_fail(r, path, x ? "is not true or false" : "is missing");
    *v = cJSON_IsTrue(x);
    return BATON_OK;
}

int baton_jr_hex64(baton_jr *r, const cJSON *o, const char *path, size_t n, uint64_t *out)
{
    const cJSON *a = baton_jr_get(r, o, path);
    if (r->rc) return r->rc;
    if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) != n)
        return baton_jr_fail(r, path, a ? "is not a list of %zu hex words" : "is missing", n);
    uint64_t w[16], any = 0;
    if (n > 16) return baton_jr_fail(r, path, "is longer than 16 words");
    for (size_t i = 0; i < n; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, (int)i);
        size_t len = cJSON_IsString(x) ? strlen(x->valuestring) : 0;
        if (len < 1 || len > 16 || strspn(x->valuestring, "0123456789abcdefABCDEF") != len)
            return baton_jr_fail(r, path, "word %zu is not 1..16 hex digits", i);
        w[i] = strtoull(x->valuestring, NULL, 16);
        any |= w[i];
    }
    if (!any) return baton_jr_fail(r, path, "is all zero (not a generator's state)");
    memcpy(out, w, n * sizeof *w);
    return BATON_OK;
}
