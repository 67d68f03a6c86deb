/* uri.c — store URIs and object names.
 *
 * Owns: parsing a store URI into its kind and parts, the rules for object names, and the
 * percent-encoding of keys into URL paths.
 *
 * Contract:
 *  - "PATH" or "file:///abs/path" (also file://localhost/abs/path; %XX decoded) → LOCAL.
 *  - "http(s)://host[:port]/prefix[/]" → HTTP; the prefix is kept as written (it is already a URL
 *    path) but must not contain spaces, controls, '?', '#' or credentials ('@' in the authority).
 *  - "s3://bucket[/prefix[/]]" → S3; bucket per S3 rules (3–63 of [a-z0-9.-], starting and
 *    ending with a letter or digit); the prefix follows the object-name rules.
 *  - Prefixes are normalised to "" or "a/b/" so that key = prefix + name.
 *  - Object names: relative, printable ASCII, no empty / "." / ".." segments, no leading or
 *    trailing '/', at most 1024 bytes; anything else is BATON_ERR_ARG with the name in the message.
 * Nothing here touches the network or the file system. */
#include "store_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 1024

void io_uri_free(io_uri *u)
{
    free(u->path);
    free(u->scheme);
    free(u->authority);
    free(u->bucket);
    free(u->prefix);
    memset(u, 0, sizeof *u);
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Segment rules shared by names and S3 prefixes. */
static int segments_ok(const char *s, size_t n, const char **why)
{
    if (n == 0) {
        *why = "empty";
        return 0;
    }
    if (n > NAME_MAX_LEN) {
        *why = "longer than 1024 bytes";
        return 0;
    }
    if (s[0] == '/') {
        *why = "must be relative (leading '/')";
        return 0;
    }
    if (s[n - 1] == '/') {
        *why = "trailing '/'";
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e) {
            *why = "contains a control or non-ASCII byte";
            return 0;
        }
        if (c == '\\') {
            *why = "contains a backslash";
            return 0;
        }
    }
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != '/') j++;
        size_t len = j - i;
        if (len == 0) {
            *why = "contains an empty path segment ('//')";
            return 0;
        }
        if ((len == 1 && s[i] == '.') || (len == 2 && s[i] == '.' && s[i + 1] == '.')) {
            *why = "contains a '.' or '..' segment";
            return 0;
        }
        i = j + 1;
    }
    return 1;
}

int io_name_check(const char *store_uri, const char *name, baton_err *err)
{
    const char *why = NULL;
    if (!name) return baton_err_set(err, BATON_ERR_ARG, "%s: object name missing", store_uri);
    if (!segments_ok(name, strlen(name), &why)) {
        /* print at most 200 printable bytes of the bad name */
        char shown[256];
        size_t k = 0;
        for (const char *p = name; *p && k < 200; p++)
            shown[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
        shown[k] = 0;
        return baton_err_set(err, BATON_ERR_ARG, "%s: bad object name \"%s\": %s", store_uri, shown,
                             why);
    }
    return BATON_OK;
}

int io_escape_append(baton_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int keep = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' || *p == '/';
        if (keep) {
            if (baton_buf_append(b, p, 1) != BATON_OK) return BATON_ERR_NOMEM;
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            if (baton_buf_append(b, e, 3) != BATON_OK) return BATON_ERR_NOMEM;
        }
    }
    return BATON_OK;
}

/* Prefix "" or "a/b" or "a/b/" → "" or "a/b/". */
static char *norm_prefix(const char *p, size_t n)
{
    while (n > 0 && p[n - 1] == '/') n--;
    char *out = malloc(n + 2);
    if (!out) return NULL;
    memcpy(out, p, n);
    if (n) out[n++] = '/';
    out[n] = 0;
    return out;
}

static int parse_local(const char *s, const char *orig, io_uri *u, baton_err *err)
{
    size_t n = strlen(s);
    if (n == 0) return baton_err_set(err, BATON_ERR_ARG, "empty store path");
    char *path = malloc(n + 1);
    if (!path) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", orig);
    int decode = s != orig;  /* file:// URIs are percent-decoded, plain paths are not */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (decode && s[i] == '%') {
            int h = i + 2 < n ? hexval(s[i + 1]) : -1, l = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (h < 0 || l < 0 || (h == 0 && l == 0)) {
                free(path);
                return baton_err_set(err, BATON_ERR_ARG, "%s: bad %%-escape in file URI", orig);
            }
            path[k++] = (char)(h * 16 + l);
            i += 2;
        } else {
            path[k++] = s[i];
        }
    }
    while (k > 1 && path[k - 1] == '/') k--;
    path[k] = 0;
    u->kind = BATON_STORE_LOCAL;
    u->path = path;
    return BATON_OK;
}

static int bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return 0;
    }
    return isalnum((unsigned char)b[0]) && isalnum((unsigned char)b[n - 1]);
}

static int parse_s3(const char *orig, const char *rest, io_uri *u, baton_err *err)
{
    const char *slash = strchr(rest, '/');
    size_t bn = slash ? (size_t)(slash - rest) : strlen(rest);
    if (!bucket_ok(rest, bn))
        return baton_err_set(err, BATON_ERR_ARG,
                             "%s: bad bucket name (S3 rules: 3-63 characters of a-z 0-9 . -, "
                             "starting and ending with a letter or digit)", orig);
    const char *pre = slash ? slash + 1 : "";
    size_t pn = strlen(pre);
    while (pn > 0 && pre[pn - 1] == '/') pn--;
    if (pn > 0) {
        const char *why = NULL;
        if (!segments_ok(pre, pn, &why))
            return baton_err_set(err, BATON_ERR_ARG, "%s: bad key prefix: %s", orig, why);
    }
    u->kind = BATON_STORE_S3;
    u->bucket = dup_n(rest, bn);
    u->prefix = norm_prefix(pre, pn);
    if (!u->bucket || !u->prefix) {
        io_uri_free(u);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", orig);
    }
    return BATON_OK;
}

static int parse_http(const char *orig, const char *scheme, const char *rest, io_uri *u,
                      baton_err *err)
{
    size_t an = strcspn(rest, "/?#");
    if (an == 0) return baton_err_set(err, BATON_ERR_ARG, "%s: no host in URL", orig);
    for (size_t i = 0; i < an; i++) {
        char c = rest[i];
        if (c == '@')
            return baton_err_set(err, BATON_ERR_ARG,
                                 "%s: credentials in URLs are not supported", "http(s) store URI");
        if (!(isalnum((unsigned char)c) || c == '.' || c == '-' || c == ':' || c == '[' ||
              c == ']' || c == '_'))
            return baton_err_set(err, BATON_ERR_ARG, "%s: bad character in host", orig);
    }
    const char *path = rest + an;
    if (*path == '?' || *path == '#' || strpbrk(path, "?#"))
        return baton_err_set(err, BATON_ERR_ARG, "%s: query strings and fragments are not supported",
                             orig);
    for (const char *p = path; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c >= 0x7f || c == '\\' || c == '"' || c == '<' || c == '>')
            return baton_err_set(err, BATON_ERR_ARG, "%s: character 0x%02x in the URL path must be "
                                 "%%-escaped", orig, c);
    }
    if (*path == '/') path++;
    u->kind = BATON_STORE_HTTP;
    u->scheme = strdup(scheme);
    u->authority = dup_n(rest, an);
    u->prefix = norm_prefix(path, strlen(path));
    if (!u->scheme || !u->authority || !u->prefix) {
        io_uri_free(u);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", orig);
    }
    return BATON_OK;
}

int io_uri_parse(const char *s, io_uri *u, baton_err *err)
{
    memset(u, 0, sizeof *u);
    if (!s || !*s) return baton_err_set(err, BATON_ERR_ARG, "empty store URI");
    const char *sep = strstr(s, "://");
    int has_scheme = sep != NULL && sep > s;
    if (has_scheme) {
        for (const char *p = s; p < sep; p++)
            if (!(isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.'))
                has_scheme = 0;
    }
    if (!has_scheme) return parse_local(s, s, u, err);
    size_t sn = (size_t)(sep - s);
    const char *rest = sep + 3;
    if (sn == 4 && strncasecmp(s, "file", 4) == 0) {
        if (strncmp(rest, "localhost/", 10) == 0) rest += 9;
        if (rest[0] != '/')
            return baton_err_set(err, BATON_ERR_ARG,
                                 "%s: file URIs need an absolute path (file:///abs/path)", s);
        return parse_local(rest, s, u, err);
    }
    if (sn == 2 && strncasecmp(s, "s3", 2) == 0) return parse_s3(s, rest, u, err);
    if (sn == 4 && strncasecmp(s, "http", 4) == 0) return parse_http(s, "http", rest, u, err);
    if (sn == 5 && strncasecmp(s, "https", 5) == 0) return parse_http(s, "https", rest, u, err);
    return baton_err_set(err, BATON_ERR_ARG,
                         "%s: unsupported scheme (use a path, file://, http(s):// or s3://)", s);
}
