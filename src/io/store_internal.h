/* store_internal.h — shared between the store and fetch files of io (not public): the store
 * object, URI parsing and object-name rules (uri.c), and the remote-request layer that the blocking
 * store calls and the fetch thread both use (remote.c): request set-up with SigV4, response-header
 * capture, body validation against the requested range, and the mapping of transport / HTTP
 * failures to baton errors whose messages name the object and never contain a secret. */
#ifndef BATON_STORE_INTERNAL_H
#define BATON_STORE_INTERNAL_H

#include "../http/http.h"
#include "baton/io.h"

#include <stdatomic.h>

#include <curl/curl.h>
#include <pthread.h>

/* ---------------------------------------------------------------- URIs and names (uri.c) */
typedef struct io_uri {
    baton_store_kind kind;
    char *path;       /* LOCAL: the folder (no trailing '/' except for "/") */
    char *scheme;     /* HTTP: "http" or "https" */
    char *authority;  /* HTTP: host[:port] */
    char *bucket;     /* S3 */
    char *prefix;     /* HTTP (raw URL path) and S3 (key prefix): "" or "a/b/" (ends with '/') */
} io_uri;

int io_uri_parse(const char *s, io_uri *u, baton_err *err);
void io_uri_free(io_uri *u);
/* Object names: relative, printable ASCII, no empty, "." or ".." segments, no leading or trailing
 * '/', at most 1024 bytes. `what` names the store in the message. */
int io_name_check(const char *store_uri, const char *name, baton_err *err);
/* Append s percent-encoded the way S3 SigV4 wants a canonical path (RFC 3986 unreserved
 * characters and '/' kept, everything else %XX with upper-case hex). */
int io_escape_append(baton_buf *b, const char *s);

/* ---------------------------------------------------------------- the store */
#define IO_HANDLE_POOL 8

typedef struct io_objlist io_objlist;

/* What a kind of store does: one table per implementation (local: store_local.c, HTTP and S3:
 * store_remote.c, a fault-injecting wrapper for tests: store_fault.c). The public calls in store.c
 * check the name and the arguments, then call through s->ops; a NULL entry is an operation the kind
 * does not have (HTTP stores are read-only and cannot be listed; only S3 has buckets), refused
 * there with a message naming the store. `list` appends to l (the caller sorts and frees). */
typedef struct io_store_ops {
    int (*get)(baton_store *s, const char *name, size_t max, baton_buf *out, baton_err *err);
    int (*get_range)(baton_store *s, const char *name, uint64_t off, uint64_t len, baton_buf *out, baton_err *err);
    int (*size)(baton_store *s, const char *name, uint64_t *size, baton_err *err);
    int (*put)(baton_store *s, const char *name, const void *p, size_t n, baton_err *err);
    int (*put_file)(baton_store *s, const char *name, const char *path, baton_err *err);
    int (*del)(baton_store *s, const char *name, baton_err *err);
    int (*list)(baton_store *s, const char *prefix, io_objlist *l, baton_err *err);
    int (*create_bucket)(baton_store *s, baton_err *err);
    void (*close)(baton_store *s);   /* what the kind holds beyond the common fields (NULL: nothing) */
} io_store_ops;

extern const io_store_ops io_store_local_ops, io_store_http_ops, io_store_s3_ops;

/* Faults a wrapped store injects (store_fault.c): deterministic, counted per operation. */
enum { IO_OP_GET, IO_OP_GET_RANGE, IO_OP_SIZE, IO_OP_PUT, IO_OP_PUT_FILE, IO_OP_DEL, IO_OP_LIST, IO_OP_N };
typedef struct io_faults {
    unsigned ops;          /* which operations fail: bit (1u << IO_OP_*) each; 0 = none */
    uint32_t fail_every;   /* of those, the calls numbered k·fail_every (1-based) fail; 1 = every call */
    int code;              /* the failure's code (0: BATON_ERR_IO) */
    double delay_s;        /* every call (failing or not) sleeps this long first: a slow store */
} io_faults;
typedef struct io_fault_state {
    baton_store *inner;
    io_faults f;
    uint64_t calls[IO_OP_N];    /* calls seen, per operation (atomic) */
    uint64_t failed[IO_OP_N];   /* calls failed, per operation (atomic) */
} io_fault_state;
/* A store that passes every call to inner (which it owns from then on: closing it closes inner)
 * after f's delay, failing the calls f names with "injected fault: OP NAME (call K)" instead.
 * Only the blocking calls go through it: its kind and URI are inner's, its local_dir NULL. */
int io_store_faulty(baton_store *inner, const io_faults *f, baton_store **out, baton_err *err);
/* The fault state of a store io_store_faulty made (NULL for any other store). */
io_fault_state *io_store_faults(baton_store *s);

struct baton_store {
    const io_store_ops *ops;
    baton_store_kind kind;
    baton_store_opts opts;
    char *uri;          /* for messages; ends with '/' (local: the folder path + '/') */
    char *local_dir;    /* LOCAL */
    char *base_url;     /* remote: object URL = base_url + escaped name; ends with '/' */
    char *bucket_url;   /* S3: URL of the bucket itself (create) */
    char *hostport;     /* remote: "host:port" for messages */
    char *bucket;
    char region[64];
    char sigv4[96];     /* "aws:amz:REGION:s3" */
    int aws_default;    /* S3 on AWS itself (no endpoint given) */
    char *access_key, *secret_key, *session_token;
    int no_ranges;      /* remote: the server answered a Range request with 200 (atomic; fetch_plain.c) */
    atomic_llong deadline_ms; /* requests end by this wall time (unix ms; 0: no limit): baton_store_set_deadline */
    pthread_mutex_t mu; /* guards pool */
    CURL *pool[IO_HANDLE_POOL];
    int npool;
    io_fault_state *faults;   /* a fault-injecting wrapper's (store_fault.c) */
};

/* ---------------------------------------------------------------- remote requests (remote.c) */
/* What the response headers said. Reset at every status line (redirects, 100-continue). */
typedef struct io_resp {
    long status;
    int have_cr;                  /* Content-Range: bytes START-END/TOTAL */
    int cr_unsatisfied;           /* Content-Range: bytes STAR/TOTAL (416) */
    uint64_t cr_start, cr_end, cr_total; /* cr_total = UINT64_MAX when '*' */
    int have_len;
    uint64_t content_length;
    char etag[160];               /* "" when absent */
    char errbody[2048];           /* start of a non-2xx body (S3 XML error) */
    size_t errlen;
} io_resp;

/* URL of an object (malloc'd) or NULL when out of memory. name must have passed io_name_check. */
char *io_object_url(const baton_store *s, const char *name);
/* Full URI of an object for messages into out. */
void io_object_uri(const baton_store *s, const char *name, char *out, size_t cap);

/* Configure h (freshly reset) for one request: URL, timeouts, SigV4 and its headers, Range
 * ("bytes=START-" when end == UINT64_MAX, nothing when range == 0), If-Match, header capture into
 * resp. The header list is returned in *hdrs (caller frees after the transfer). errbuf has
 * CURL_ERROR_SIZE bytes. */
int io_request_setup(const baton_store *s, CURL *h, const char *url, int range, uint64_t start,
                     uint64_t end, const char *if_match, io_resp *resp, char *errbuf,
                     struct curl_slist **hdrs, baton_err *err);
/* Body data of a non-2xx answer: keep the start for the error message. */
void io_resp_keep_error(io_resp *r, const void *p, size_t n);
/* Validate a 2xx response before trusting its body, for a request of [start, start+len)
 * (len = UINT64_MAX: to the end; ranged = whether a Range header was sent). Returns BATON_OK or
 * an error naming the object and offset. On success *total is the object size when known, else
 * UINT64_MAX. */
int io_resp_check(const baton_store *s, const char *name, const io_resp *r, int ranged,
                  uint64_t start, uint64_t len, uint64_t *total, baton_err *err);
/* Turn a failed transfer (curl code, or an HTTP status outside 2xx) into an error; *retry says
 * whether trying again may help (connection trouble, timeouts, 5xx, 429). */
int io_request_error(const baton_store *s, const char *name, uint64_t off, CURLcode cc,
                     const char *errbuf, const io_resp *r, int *retry, baton_err *err);
/* Remove any occurrence of the store's secrets from a message (defence in depth). */
void io_scrub(const baton_store *s, baton_err *err);
/* One blocking request with retries: the loop of every blocking store call (GET, ranged GET, HEAD,
 * PUT, DELETE, a listing page). Each attempt resets a pooled handle of the store, calls begin (may
 * be NULL: set range / start / end / if_match and reset the caller's per-attempt state),
 * io_request_setup, prepare (NULL: none; the method, the body callbacks), performs the request and
 * asks check (NULL: io_call_check) what came of it: BATON_OK (done), or an error code (err
 * filled) with *retry set when trying again may help. A retryable failure is tried again
 * s->opts.retries times with io_backoff_s, except that an attempt that set `progress` (it moved
 * bytes) is tried again at once without using up a retry. */
typedef struct io_call {
    const char *url;        /* what is asked */
    const char *name;       /* the object name for messages ("" for the bucket) */
    uint64_t err_off;       /* the offset io_call_check names (UINT64_MAX: none) */
    int range;              /* this attempt: a Range header [start, end] (end UINT64_MAX: to the end) */
    uint64_t start, end;
    const char *if_match;
    int progress;           /* check: this attempt moved bytes */
    io_resp resp;
    char errbuf[CURL_ERROR_SIZE];
    void (*begin)(struct io_call *c);
    void (*prepare)(struct io_call *c, CURL *h);
    int (*check)(baton_store *s, struct io_call *c, CURLcode cc, int *retry, baton_err *err);
    void *ctx;              /* the caller's */
} io_call;
int io_call_run(baton_store *s, io_call *c, baton_err *err);
/* The default check: a 2xx answer is done; anything else is io_request_error's verdict. */
int io_call_check(baton_store *s, io_call *c, CURLcode cc, int *retry, baton_err *err);
/* Backoff before retry k (0-based): 50 ms × 2^k, capped at 5 s. */
double io_backoff_s(int k);
void io_sleep_s(double s);
/* A weak ETag (W/"...") cannot be used with If-Match. */
int io_etag_strong(const char *etag);

/* ---------------------------------------------------------------- local stores (store_local.c) */
/* Open an object for reading; path of the file into path (cap bytes) for messages. */
int io_local_open(baton_store *s, const char *name, char *path, size_t cap, baton_err *err);

/* ---------------------------------------------------------------- listings (store_list.c) */
struct io_objlist {
    baton_store_obj *v;
    size_t n, cap, max;     /* more than max entries is an error */
};
/* The local store's list: a walk of its folder (objects are regular files). */
int io_local_list(baton_store *s, const char *prefix, io_objlist *l, baton_err *err);
/* S3's list (ListObjectsV2, paged) and delete. */
int io_s3_list(baton_store *s, const char *prefix, io_objlist *l, baton_err *err);
int io_s3_delete(baton_store *s, const char *name, baton_err *err);
/* Parse one ListObjectsV2 page (len bytes, not NUL-terminated) into l: keyprefix is the full key
 * prefix asked for, skip the length of the store's own prefix (removed from every key); where
 * names the store in messages. *truncated and the continuation token (tcap bytes) for the next
 * page. See store_list.c for the checks. */
int io_list_parse(const char *where, const char *body, size_t len, const char *keyprefix, size_t skip,
                  io_objlist *l, int *truncated, char *token, size_t tcap, baton_err *err);

#endif
