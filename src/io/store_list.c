/* store_list.c — listing objects of a store (see io.h) and deleting them on S3: ListObjectsV2
 * (paged, SigV4-signed) and DELETE; on local stores a walk of the folder tree (store_local.c
 * deletes).
 *
 * Owns: the ListObjectsV2 request (query string built in SigV4 canonical form: parameters sorted,
 * values percent-encoded with upper-case hex, because libcurl 7.88 signs the query as given), the
 * minimal parse of its XML answer, and the local equivalents.
 *
 * XML parse contract: the answer is at most IO_LIST_MAX_PAGE bytes and must contain a
 * <ListBucketResult> element; each <Contents> element must hold one <Key> and one <Size>; keys are
 * at most 1024 bytes after decoding the five predefined XML entities and numeric character
 * references of ASCII characters (anything else is an error naming the key's offset); sizes are
 * decimal below 2^63; every key must start with the listed prefix. Keys that are not valid object
 * names for this store (io_name_check: "a//b", a trailing '/', control characters) are skipped.
 * A truncated page must carry a non-empty <NextContinuationToken> of at most 1024 bytes. */
#include "store_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IO_LIST_MAX_PAGE ((size_t)16 << 20)
#define IO_KEY_MAX 1024

void baton_store_list_free(baton_store_obj *v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++) free(v[i].name);
    free(v);
}

static int list_add(io_objlist *l, const char *name, size_t len, uint64_t size, const char *where, baton_err *err)
{
    if (l->n >= l->max)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: more than %zu objects", where, l->max);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        baton_store_obj *q = realloc(l->v, cap * sizeof *q);
        if (!q) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", where);
        l->v = q;
        l->cap = cap;
    }
    char *s = malloc(len + 1);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", where);
    memcpy(s, name, len);
    s[len] = 0;
    l->v[l->n].name = s;
    l->v[l->n].size = size;
    l->n++;
    return BATON_OK;
}

static int cmp_obj(const void *a, const void *b)
{
    return strcmp(((const baton_store_obj *)a)->name, ((const baton_store_obj *)b)->name);
}

/* ---------------------------------------------------------------- local */

/* Walk dir (the object name so far is rel, rl bytes) adding regular files whose name starts with
 * prefix. Folders that cannot lead to a match are not entered. */
static int walk(baton_store *s, char *rel, size_t rl, const char *prefix, io_objlist *l, int depth, baton_err *err)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%.*s", s->local_dir, (int)rl, rel);
    if (n < 0 || (size_t)n >= sizeof path) return baton_err_set(err, BATON_ERR_ARG, "%s%.*s: path too long", s->uri, (int)rl, rel);
    DIR *d = opendir(path);
    if (!d) {
        if (rl == 0 || errno != ENOENT) return baton_err_set(err, BATON_ERR_IO, "%s: cannot list: %s", path, strerror(errno));
        return BATON_OK;
    }
    int rc = BATON_OK;
    struct dirent *e;
    size_t pl = strlen(prefix);
    while (rc == BATON_OK && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t el = strlen(e->d_name);
        if (rl + el + 2 > IO_KEY_MAX) continue;
        memcpy(rel + rl, e->d_name, el + 1);
        size_t nl = rl + el;
        size_t cmp = nl < pl ? nl : pl;
        if (memcmp(rel, prefix, cmp) != 0) continue;
        struct stat st;
        if (baton_path_join(path, sizeof path, s->local_dir, rel, NULL) || lstat(path, &st) != 0)
            continue;   /* too long to name here, or removed meanwhile */
        if (S_ISDIR(st.st_mode)) {
            if (depth >= 32) continue;
            rel[nl] = '/';
            rel[nl + 1] = 0;
            rc = walk(s, rel, nl + 1, prefix, l, depth + 1, err);
        } else if (S_ISREG(st.st_mode) && nl >= pl) {
            baton_err ne = {0};
            if (io_name_check(s->uri, rel, &ne) == BATON_OK) rc = list_add(l, rel, nl, (uint64_t)st.st_size, s->uri, err);
        }
    }
    closedir(d);
    return rc;
}

int io_local_list(baton_store *s, const char *prefix, io_objlist *l, baton_err *err)
{
    char *rel = malloc(IO_KEY_MAX + 2);
    if (!rel) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", s->uri);
    rel[0] = 0;
    int rc = walk(s, rel, 0, prefix, l, 0, err);
    free(rel);
    return rc;
}

/* ---------------------------------------------------------------- S3 */

/* Percent-encode every byte but the RFC 3986 unreserved ones (SigV4 canonical query form). */
static int query_escape(baton_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            if (baton_buf_append(b, &c, 1) != BATON_OK) return BATON_ERR_NOMEM;
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            if (baton_buf_append(b, e, 3) != BATON_OK) return BATON_ERR_NOMEM;
        }
    }
    return BATON_OK;
}

/* Find "<tag>" in [p, end); returns a pointer just after it, or NULL. */
static const char *find_tag(const char *p, const char *end, const char *tag)
{
    size_t tl = strlen(tag);
    while (p && p + tl <= end) {
        const char *q = memchr(p, '<', (size_t)(end - p));
        if (!q || q + tl > end) return NULL;
        if (!memcmp(q, tag, tl)) return q + tl;
        p = q + 1;
    }
    return NULL;
}

/* The text of <name>...</name> inside [p, end), entity-decoded into out (at most cap - 1 bytes).
 * 1 found, 0 absent, negative error. */
static int xml_text(const char *body, const char *p, const char *end, const char *name, char *out, size_t cap,
                    const char *where, baton_err *err)
{
    char open[48], close[48];
    snprintf(open, sizeof open, "<%s>", name);
    snprintf(close, sizeof close, "</%s>", name);
    const char *a = find_tag(p, end, open);
    if (!a) return 0;
    const char *b = find_tag(a, end, close);
    if (!b) return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing at offset %zu: <%s> without </%s>", where,
                                 (size_t)(a - body), name, name);
    b -= strlen(close);
    size_t k = 0;
    for (const char *q = a; q < b; q++) {
        char c = *q;
        if (c == '&') {
            const char *semi = memchr(q, ';', (size_t)(b - q));
            size_t el = semi ? (size_t)(semi - q) : 0;
            if (el == 4 && !memcmp(q, "&amp", 4)) c = '&';
            else if (el == 3 && !memcmp(q, "&lt", 3)) c = '<';
            else if (el == 3 && !memcmp(q, "&gt", 3)) c = '>';
            else if (el == 5 && !memcmp(q, "&quot", 5)) c = '"';
            else if (el == 5 && !memcmp(q, "&apos", 5)) c = '\'';
            else if (el >= 3 && el <= 6 && q[1] == '#') {
                unsigned v = 0;
                int hexa = q[2] == 'x';
                const char *d = q + 2 + hexa;
                if (d >= semi) goto bad;
                for (; d < semi; d++) {
                    int dv = *d >= '0' && *d <= '9' ? *d - '0'
                           : hexa && *d >= 'a' && *d <= 'f' ? *d - 'a' + 10
                           : hexa && *d >= 'A' && *d <= 'F' ? *d - 'A' + 10 : -1;
                    if (dv < 0) goto bad;
                    v = v * (hexa ? 16u : 10u) + (unsigned)dv;
                }
                if (v == 0 || v > 0x7f) goto bad;
                c = (char)v;
            } else {
                goto bad;
            }
            q = semi;
        }
        if (k + 1 >= cap)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing at offset %zu: <%s> longer than %zu bytes",
                                 where, (size_t)(a - body), name, cap - 1);
        out[k++] = c;
    }
    out[k] = 0;
    return 1;
bad:
    return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing at offset %zu: <%s> holds an unsupported XML entity",
                         where, (size_t)(a - body), name);
}

static int parse_size(const char *t, uint64_t *v)
{
    size_t n = strlen(t);
    if (n == 0 || n > 19) return 0;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') return 0;
        x = x * 10 + (uint64_t)(t[i] - '0');
    }
    if (x >= (1ull << 63)) return 0;
    *v = x;
    return 1;
}

int io_list_parse(const char *where, const char *body, size_t len, const char *keyprefix, size_t skip,
                  io_objlist *l, int *truncated, char *token, size_t tcap, baton_err *err)
{
    const char *end = body + len;
    const char *root = find_tag(body, end, "<ListBucketResult");
    if (!root) return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing: no <ListBucketResult> in the answer", where);
    char key[IO_KEY_MAX + 1], size[32];
    size_t kpl = strlen(keyprefix);
    const char *p = root;
    int rc;
    for (;;) {
        const char *c = find_tag(p, end, "<Contents>");
        if (!c) break;
        const char *ce = find_tag(c, end, "</Contents>");
        if (!ce) return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing at offset %zu: <Contents> without </Contents>",
                                      where, (size_t)(c - body));
        if ((rc = xml_text(body, c, ce, "Key", key, sizeof key, where, err)) < 0) return rc;
        if (rc == 0) return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing at offset %zu: <Contents> without <Key>", where,
                                          (size_t)(c - body));
        if ((rc = xml_text(body, c, ce, "Size", size, sizeof size, where, err)) < 0) return rc;
        uint64_t sz;
        if (rc == 0 || !parse_size(size, &sz))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing at offset %zu: key %.200s: missing or bad <Size>", where,
                                 (size_t)(c - body), key);
        size_t kl = strlen(key);
        if (kl < kpl || memcmp(key, keyprefix, kpl) != 0)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing at offset %zu: key %.200s is outside prefix %s", where,
                                 (size_t)(c - body), key, keyprefix);
        baton_err ne = {0};
        if (kl > skip && io_name_check(where, key + skip, &ne) == BATON_OK &&
            (rc = list_add(l, key + skip, kl - skip, sz, where, err)) != BATON_OK)
            return rc;
        p = ce;
    }
    char tr[16];
    if ((rc = xml_text(body, root, end, "IsTruncated", tr, sizeof tr, where, err)) < 0) return rc;
    *truncated = rc == 1 && !strcmp(tr, "true");
    token[0] = 0;
    if (*truncated) {
        if ((rc = xml_text(body, root, end, "NextContinuationToken", token, tcap, where, err)) < 0) return rc;
        if (rc == 0 || !token[0])
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: listing: truncated page without <NextContinuationToken>",
                                 where);
    }
    return BATON_OK;
}

typedef struct sink {
    io_resp *resp;
    baton_buf *out;          /* the body of a 2xx answer; NULL: not wanted */
    baton_buf dummy;
    const char *method;      /* NULL: GET */
    long *status;
    int overflow;
} sink;

static size_t sink_write(char *p, size_t size, size_t nitems, void *ud)
{
    sink *k = ud;
    size_t n = size * nitems;
    if (k->resp->status < 200 || k->resp->status >= 300) {
        io_resp_keep_error(k->resp, p, n);
        return n;
    }
    baton_buf *out = k->out ? k->out : &k->dummy;
    if (out->len + n > IO_LIST_MAX_PAGE) {
        k->overflow = 1;
        return 0;
    }
    return baton_buf_append(out, p, n) == BATON_OK ? n : 0;
}

static void sink_begin(io_call *c)
{
    sink *k = c->ctx;
    if (k->out) k->out->len = 0;
    k->dummy.len = 0;
    k->resp = &c->resp;
}

static void sink_prepare(io_call *c, CURL *h)
{
    sink *k = c->ctx;
    if (k->method) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, k->method);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, k);
}

static int sink_check(baton_store *s, io_call *c, CURLcode cc, int *retry, baton_err *err)
{
    sink *k = c->ctx;
    *retry = 0;
    if (k->overflow)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s%s: answer larger than %zu bytes", s->uri, c->name,
                             IO_LIST_MAX_PAGE);
    *k->status = c->resp.status;
    return io_call_check(s, c, cc, retry, err);
}

/* One signed request (GET or DELETE) to url; body of a 2xx answer into out (may be NULL).
 * name is for messages. Retries like the other blocking calls. */
static int request(baton_store *s, const char *url, const char *method, const char *name, baton_buf *out, long *status,
                   baton_err *err)
{
    sink k = {.out = out, .method = method, .status = status};
    io_call *c = calloc(1, sizeof *c);
    if (!c) return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    *c = (io_call){.url = url, .name = name, .err_off = UINT64_MAX, .begin = sink_begin, .prepare = sink_prepare,
                   .check = sink_check, .ctx = &k};
    int rc = io_call_run(s, c, err);
    free(c);
    baton_buf_free(&k.dummy);
    return rc;
}

int io_s3_list(baton_store *s, const char *prefix, io_objlist *l, baton_err *err)
{
    const char *store_prefix = s->uri + 5 + strlen(s->bucket) + 1;   /* "s3://" bucket "/" */
    size_t skip = strlen(store_prefix);
    char *keyprefix = malloc(skip + strlen(prefix) + 1);
    char *token = malloc(IO_KEY_MAX + 1);
    baton_buf url = {0}, body = {0};
    int rc = BATON_OK;
    if (!keyprefix || !token) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", s->uri);
        goto out;
    }
    snprintf(keyprefix, skip + strlen(prefix) + 1, "%s%s", store_prefix, prefix);
    token[0] = 0;
    for (int page = 0;; page++) {
        url.len = 0;
        /* parameters in sorted order: continuation-token < list-type < prefix */
        if (baton_buf_append(&url, s->bucket_url, strlen(s->bucket_url)) != BATON_OK ||
            baton_buf_append(&url, "?", 1) != BATON_OK ||
            (token[0] && (baton_buf_append(&url, "continuation-token=", 19) != BATON_OK ||
                          query_escape(&url, token, strlen(token)) != BATON_OK || baton_buf_append(&url, "&", 1) != BATON_OK)) ||
            baton_buf_append(&url, "list-type=2&prefix=", 19) != BATON_OK ||
            query_escape(&url, keyprefix, strlen(keyprefix)) != BATON_OK || baton_buf_append(&url, "", 1) != BATON_OK) {
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", s->uri);
            break;
        }
        long status = 0;
        if ((rc = request(s, (const char *)url.data, NULL, prefix, &body, &status, err)) != BATON_OK) {
            baton_err_prefix(err, "listing (page %d)", page + 1);
            break;
        }
        int truncated = 0;
        if ((rc = io_list_parse(s->uri, (const char *)body.data, body.len, keyprefix, skip, l, &truncated, token, IO_KEY_MAX + 1,
                             err)) != BATON_OK)
            break;
        if (!truncated) break;
    }
out:
    io_scrub(s, err);
    baton_buf_free(&url);
    baton_buf_free(&body);
    free(keyprefix);
    free(token);
    return rc;
}

/* ---------------------------------------------------------------- public */

int baton_store_list(baton_store *s, const char *prefix, size_t max, baton_store_obj **out, size_t *n, baton_err *err)
{
    *out = NULL;
    *n = 0;
    if (!prefix) prefix = "";
    size_t pl = strlen(prefix);
    if (pl > IO_KEY_MAX) return baton_err_set(err, BATON_ERR_ARG, "%s: list prefix longer than %d bytes", s->uri, IO_KEY_MAX);
    for (size_t i = 0; i < pl; i++)
        if ((unsigned char)prefix[i] <= 0x20 || (unsigned char)prefix[i] >= 0x7f)
            return baton_err_set(err, BATON_ERR_ARG, "%s: list prefix has a bad character", s->uri);
    io_objlist l = {0};
    l.max = max ? max : 1000000;
    int rc = s->ops->list ? s->ops->list(s, prefix, &l, err)
                          : baton_err_set(err, BATON_ERR_ARG, "%s: HTTP stores cannot be listed", s->uri);
    if (rc != BATON_OK) {
        baton_store_list_free(l.v, l.n);
        return rc;
    }
    if (l.n > 1) qsort(l.v, l.n, sizeof *l.v, cmp_obj);
    *out = l.v;
    *n = l.n;
    return BATON_OK;
}

int io_s3_delete(baton_store *s, const char *name, baton_err *err)
{
    char *url = io_object_url(s, name);
    if (!url) return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    long status = 0;
    int rc = request(s, url, "DELETE", name, NULL, &status, err);
    free(url);
    if (rc == BATON_ERR_NOTFOUND && status == 404) {
        /* already gone: fine, unless the bucket itself is missing */
        if (!err || !strstr(err->msg, "NoSuchBucket")) rc = BATON_OK;
    }
    if (rc != BATON_OK) baton_err_prefix(err, "cannot delete");
    return rc;
}
