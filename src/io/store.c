/* store.c — a dataset folder named by a URI: open, close, accessors, and each operation's checks
 * before it goes through the store's method table (io_store_ops: local in store_local.c, HTTP
 * and S3 in store_remote.c, a fault-injecting wrapper in store_fault.c).
 *
 * Owns: the baton_store object: its parsed URI, the URL every object name is appended to, the S3
 * endpoint, region and credentials (read once at open; the secret and session token are wiped at
 * close), and a small pool of libcurl easy handles reused by the blocking calls.
 *
 * Contract: a store may be used from several threads at once. Object names are checked
 * (io_name_check) before anything else. The S3 endpoint is opts.s3_endpoint, else
 * AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (path-style: ENDPOINT/bucket/key), else AWS itself
 * (virtual-hosted: https://bucket.s3.REGION.amazonaws.com/key). Region: opts.region, else
 * AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1. Missing credentials are an error at open.
 * baton_store_uri never contains credentials. */
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <time.h>

void baton_store_opts_default(baton_store_opts *o)
{
    memset(o, 0, sizeof *o);
    o->connect_timeout_s = 10;
    o->stall_timeout_s = 30;
    o->retries = 5;
    const char *m = getenv("AWS_MAX_ATTEMPTS");   /* the AWS SDKs' knob: attempts, the first included */
    char *end;
    long n = m && *m ? strtol(m, &end, 10) : 0;
    if (n >= 1 && n <= 50 && !*end) o->retries = (int)n - 1;
}

static char *cat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *p = malloc(la + lb + lc + 1);
    if (!p) return NULL;
    memcpy(p, a, la);
    memcpy(p + la, b, lb);
    memcpy(p + la + lb, c, lc + 1);
    return p;
}

static void wipe_free(char *p)
{
    if (!p) return;
    explicit_bzero(p, strlen(p));
    free(p);
}

void baton_store_set_deadline(baton_store *s, double t)
{
    atomic_store(&s->deadline_ms, t > 0 ? (long long)(t * 1000.0) : 0);
}

void baton_store_close(baton_store *s)
{
    if (!s) return;
    if (s->ops && s->ops->close) s->ops->close(s);
    for (int i = 0; i < s->npool; i++) curl_easy_cleanup(s->pool[i]);
    pthread_mutex_destroy(&s->mu);
    free(s->uri);
    free(s->local_dir);
    free(s->base_url);
    free(s->bucket_url);
    free(s->hostport);
    free(s->bucket);
    free(s->access_key);
    wipe_free(s->secret_key);
    wipe_free(s->session_token);
    free(s);
}

/* "host[:port]" of an authority, with the scheme's default port when none is given. */
static char *host_port(const char *authority, size_t n, int https)
{
    const char *end = authority + n;
    const char *colon = NULL;
    if (n > 0 && authority[0] == '[') {
        const char *rb = memchr(authority, ']', n);
        if (rb && rb + 1 < end && rb[1] == ':') colon = rb + 1;
    } else {
        colon = memchr(authority, ':', n);
    }
    char *out = malloc(n + 8);
    if (!out) return NULL;
    if (colon)
        snprintf(out, n + 8, "%.*s", (int)n, authority);
    else
        snprintf(out, n + 8, "%.*s:%d", (int)n, authority, https ? 443 : 80);
    return out;
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int open_s3(baton_store *s, const io_uri *u, const baton_store_opts *o, baton_err *err)
{
    const char *region = o->region && *o->region ? o->region : env_nonempty("AWS_REGION");
    if (!region) region = env_nonempty("AWS_DEFAULT_REGION");
    if (!region) region = "us-east-1";
    if (strlen(region) >= 32 || strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(region))
        return baton_err_set(err, BATON_ERR_ARG, "%s: bad region \"%.40s\"", s->uri, region);
    snprintf(s->region, sizeof s->region, "%s", region);
    snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", region);

    const char *ak = env_nonempty("AWS_ACCESS_KEY_ID"), *sk = env_nonempty("AWS_SECRET_ACCESS_KEY");
    const char *tok = env_nonempty("AWS_SESSION_TOKEN");
    if (!ak || !sk)
        return baton_err_set(err, BATON_ERR_ARG,
                             "%s: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY%s",
                             s->uri, ak ? " (AWS_SECRET_ACCESS_KEY is missing)" : "");
    for (const char *p = ak; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || *p == ':')
            return baton_err_set(err, BATON_ERR_ARG, "%s: AWS_ACCESS_KEY_ID has a bad character", s->uri);
    for (const char *p = sk; *p; p++)
        if (*p < 0x20 || *p >= 0x7f)
            return baton_err_set(err, BATON_ERR_ARG, "%s: AWS_SECRET_ACCESS_KEY has a bad character",
                                 s->uri);
    if (tok)
        for (const char *p = tok; *p; p++)
            if (*p < 0x20 || *p >= 0x7f)
                return baton_err_set(err, BATON_ERR_ARG, "%s: AWS_SESSION_TOKEN has a bad character",
                                     s->uri);
    s->access_key = strdup(ak);
    s->secret_key = strdup(sk);
    if (tok) s->session_token = strdup(tok);
    s->bucket = strdup(u->bucket);
    if (!s->access_key || !s->secret_key || (tok && !s->session_token) || !s->bucket)
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", s->uri);

    const char *ep = o->s3_endpoint && *o->s3_endpoint ? o->s3_endpoint : env_nonempty("AWS_ENDPOINT_URL_S3");
    if (!ep) ep = env_nonempty("AWS_ENDPOINT_URL");
    if (ep) {
        int https = strncasecmp(ep, "https://", 8) == 0;
        if (!https && strncasecmp(ep, "http://", 7) != 0)
            return baton_err_set(err, BATON_ERR_ARG,
                                 "S3 endpoint %.200s: must start with http:// or https://", ep);
        if (strpbrk(ep, "?#@ ") != NULL)
            return baton_err_set(err, BATON_ERR_ARG,
                                 "S3 endpoint %.200s: no credentials, query or fragment allowed", ep);
        const char *auth = ep + (https ? 8 : 7);
        size_t an = strcspn(auth, "/");
        if (an == 0) return baton_err_set(err, BATON_ERR_ARG, "S3 endpoint %.200s: no host", ep);
        size_t el = strlen(ep);
        while (el > 0 && ep[el - 1] == '/') el--;
        s->hostport = host_port(auth, an, https);
        /* path-style: ENDPOINT/bucket/ + key */
        baton_buf b = {0};
        if (baton_buf_append(&b, ep, el) == BATON_OK && baton_buf_append(&b, "/", 1) == BATON_OK &&
            io_escape_append(&b, u->bucket) == BATON_OK && baton_buf_append(&b, "", 1) == BATON_OK)
            s->bucket_url = strdup((char *)b.data);
        baton_buf_free(&b);
        if (s->bucket_url) s->base_url = cat3(s->bucket_url, "/", "");
    } else {
        /* AWS itself, virtual-hosted: https://bucket.s3.REGION.amazonaws.com/ + key */
        s->aws_default = 1;
        char host[160];
        snprintf(host, sizeof host, "%s.s3.%s.amazonaws.com", u->bucket, s->region);
        s->hostport = host_port(host, strlen(host), 1);
        s->bucket_url = cat3("https://", host, "/");
        if (s->bucket_url) s->base_url = strdup(s->bucket_url);
    }
    if (s->base_url && u->prefix[0]) {
        baton_buf b = {0};
        if (baton_buf_append(&b, s->base_url, strlen(s->base_url)) == BATON_OK &&
            io_escape_append(&b, u->prefix) == BATON_OK && baton_buf_append(&b, "", 1) == BATON_OK) {
            free(s->base_url);
            s->base_url = (char *)b.data;
        } else {
            baton_buf_free(&b);
            free(s->base_url);
            s->base_url = NULL;
        }
    }
    if (!s->hostport || !s->bucket_url || !s->base_url)
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", s->uri);
    return BATON_OK;
}

int baton_store_open(const char *uri, const baton_store_opts *o, baton_store **out, baton_err *err)
{
    *out = NULL;
    baton_store_opts dflt;
    if (!o) {
        baton_store_opts_default(&dflt);
        o = &dflt;
    }
    io_uri u;
    int rc = io_uri_parse(uri, &u, err);
    if (rc != BATON_OK) return rc;
    baton_store *s = calloc(1, sizeof *s);
    if (!s) {
        io_uri_free(&u);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", uri);
    }
    pthread_mutex_init(&s->mu, NULL);
    s->kind = u.kind;
    s->opts = *o;
    if (s->opts.connect_timeout_s <= 0) s->opts.connect_timeout_s = 10;
    if (s->opts.stall_timeout_s <= 0) s->opts.stall_timeout_s = 30;
    if (s->opts.retries < 0) s->opts.retries = 0;

    switch (u.kind) {
    case BATON_STORE_LOCAL:
        s->ops = &io_store_local_ops;
        s->uri = cat3(u.path, strcmp(u.path, "/") == 0 ? "" : "/", "");
        s->local_dir = strdup(u.path);
        if (!s->uri || !s->local_dir) {
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", uri);
        } else if (!baton_is_dir(u.path)) {
            struct stat sb;
            if (stat(u.path, &sb) == 0) {   /* a shard or dataset.json named instead of its folder */
                char parent[4096];
                baton_path_dirname(u.path, parent, sizeof parent);
                rc = baton_err_set(err, BATON_ERR_ARG, "%s: a file, not a folder: a dataset URI names the folder "
                                   "that holds dataset.json and the shards (here: %s)", u.path, parent);
            } else {
                rc = baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such folder", u.path);
            }
        }
        break;
    case BATON_STORE_HTTP: {
        s->ops = &io_store_http_ops;
        rc = http_global_init(err);
        if (rc != BATON_OK) break;
        char *head = cat3(u.scheme, "://", u.authority);
        s->uri = head ? cat3(head, "/", u.prefix) : NULL;
        s->base_url = s->uri ? strdup(s->uri) : NULL;
        free(head);
        s->hostport = host_port(u.authority, strlen(u.authority), strcmp(u.scheme, "https") == 0);
        if (!s->uri || !s->base_url || !s->hostport)
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", uri);
        break;
    }
    case BATON_STORE_S3: {
        s->ops = &io_store_s3_ops;
        rc = http_global_init(err);
        if (rc != BATON_OK) break;
        char *head = cat3("s3://", u.bucket, "/");
        s->uri = head ? cat3(head, u.prefix, "") : NULL;
        free(head);
        if (!s->uri) {
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", uri);
            break;
        }
        rc = open_s3(s, &u, o, err);
        break;
    }
    }
    io_uri_free(&u);
    if (rc != BATON_OK) {
        io_scrub(s, err);
        baton_store_close(s);
        return rc;
    }
    *out = s;
    return BATON_OK;
}

baton_store_kind baton_store_kind_of(const baton_store *s)
{
    return s->kind;
}

const char *baton_store_uri(const baton_store *s)
{
    return s->uri;
}

const char *baton_store_local_dir(const baton_store *s)
{
    return s->kind == BATON_STORE_LOCAL ? s->local_dir : NULL;
}

/* Before any call: the name's rules, and the deadline (baton_store_set_deadline): no call starts
 * after it, whatever the kind (a local folder's copies cannot be cut once started, so this is
 * where they stop; remote.c also cuts a transfer under way). */
static int call_ok(baton_store *s, const char *name, baton_err *err)
{
    int rc = io_name_check(s->uri, name, err);
    if (rc != BATON_OK) return rc;
    long long d = atomic_load(&s->deadline_ms);
    if (d > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 >= d)
            return baton_err_set(err, BATON_ERR_NET, "%s%s: stopped at the deadline", s->uri, name);
    }
    return BATON_OK;
}

int baton_store_get(baton_store *s, const char *name, size_t max, baton_buf *out, baton_err *err)
{
    int rc = call_ok(s, name, err);
    return rc ? rc : s->ops->get(s, name, max, out, err);
}

int baton_store_get_range(baton_store *s, const char *name, uint64_t off, uint64_t len,
                          baton_buf *out, baton_err *err)
{
    int rc = call_ok(s, name, err);
    if (rc != BATON_OK) return rc;
    if (len > SIZE_MAX / 2 || off > UINT64_MAX - len)
        return baton_err_set(err, BATON_ERR_ARG, "%s%s: range of %llu bytes at offset %llu is too large",
                             s->uri, name, (unsigned long long)len, (unsigned long long)off);
    if (len == 0) return BATON_OK;
    return s->ops->get_range(s, name, off, len, out, err);
}

int baton_store_size(baton_store *s, const char *name, uint64_t *size, baton_err *err)
{
    int rc = call_ok(s, name, err);
    return rc ? rc : s->ops->size(s, name, size, err);
}

static int read_only(const baton_store *s, const char *name, baton_err *err)
{
    return baton_err_set(err, BATON_ERR_ARG, "%s%s: HTTP stores are read-only", s->uri, name);
}

int baton_store_put(baton_store *s, const char *name, const void *p, size_t n, baton_err *err)
{
    int rc = call_ok(s, name, err);
    if (rc != BATON_OK) return rc;
    return s->ops->put ? s->ops->put(s, name, p, n, err) : read_only(s, name, err);
}

int baton_store_put_file(baton_store *s, const char *name, const char *path, baton_err *err)
{
    int rc = call_ok(s, name, err);
    if (rc != BATON_OK) return rc;
    return s->ops->put_file ? s->ops->put_file(s, name, path, err) : read_only(s, name, err);
}

int baton_store_delete(baton_store *s, const char *name, baton_err *err)
{
    int rc = call_ok(s, name, err);
    if (rc != BATON_OK) return rc;
    return s->ops->del ? s->ops->del(s, name, err) : read_only(s, name, err);
}

int baton_store_create_bucket(baton_store *s, baton_err *err)
{
    if (!s->ops->create_bucket)
        return baton_err_set(err, BATON_ERR_ARG, "%s: not an S3 store: no bucket to create", s->uri);
    return s->ops->create_bucket(s, err);
}
