/* fetch_internal.h — what the two halves of the range streamer share (fetch.c: planning, local
 * reads, the public API; fetch_remote.c: the remote transfers on libcurl's multi handle): the
 * fetcher's state, its chunk slots and objects, and the helpers both call (under f->mu where
 * fetch.c's comments say so). Nothing outside src/io includes this. */
#ifndef BATON_FETCH_INTERNAL_H
#define BATON_FETCH_INTERNAL_H

#include "io_internal.h"
#include "store_internal.h"

#define MAX_INFLIGHT 64
#define RECV_BUFFER (256 * 1024)

enum { C_FREE = 0, C_PLANNED, C_ACTIVE, C_DONE, C_HELD };

typedef struct fobj {
    char *name;
    char *url;          /* remote */
    int fd;             /* local; -1 until opened */
    uint64_t size;      /* UINT64_MAX until known (I/O thread only) */
    char etag[160];     /* first ETag seen (I/O thread only) */
} fobj;

typedef struct frange {
    struct frange *next;
    fobj *obj;
    uint64_t off, end;  /* end UINT64_MAX: to the end of the object, not known yet */
    uint64_t next_off;  /* next byte to cut a chunk at */
    uint64_t tag;
    int probing;        /* a first request is out to learn the object size */
} frange;

typedef struct fchunk fchunk;
struct fchunk {
    struct baton_fetch *f;
    int state;
    fobj *obj;
    frange *probe;      /* set while this chunk is the size probe of that range */
    uint64_t tag, off;
    size_t len, got;    /* len may shrink once a probe learns the size */
    int last;
    uint64_t total;     /* object size the answer told (UINT64_MAX: not told); the piece's object_size */
    uint32_t crc;       /* CRC32C of buf[0..got): the piece's crc32c */
    uint8_t *buf;
    /* the current attempt */
    CURL *easy;
    struct curl_slist *hdrs;
    io_resp resp;
    char errbuf[CURL_ERROR_SIZE];
    size_t got_attempt;
    int checked, vfailed;
    baton_err verr;
    int fails;
    double retry_at;
};

/* The plain-GET transfer (fetch_plain.c) for a server that ignores Range. */
typedef struct fplain {
    struct baton_fetch *f;
    CURL *easy;
    struct curl_slist *hdrs;
    io_resp resp;
    char errbuf[CURL_ERROR_SIZE];
    fobj *obj;                  /* the object it reads from byte 0 */
    uint64_t pos;               /* the object offset of the next byte it receives */
    uint64_t best, best_before; /* the furthest pos of any attempt on obj; before this one */
    fchunk *cur;                /* the chunk being filled (C_ACTIVE), or NULL */
    int active;                 /* in the multi handle */
    int checked, ending, vfailed;
    baton_err verr;
    int done;                   /* ended while its last bytes wait in the stash */
    CURLcode done_cc;
    uint8_t *stash;             /* received bytes waiting for a free slot (the transfer is paused) */
    size_t stash_off, stash_len, stash_cap;
    int fails;
    double retry_at;
} fplain;

struct baton_fetch {
    baton_store *s;
    size_t chunk;
    int inflight;
    int nslot;
    fchunk *slots;
    int *freelist, nfree;
    int *order, ohead, ocount;  /* planned, not yet delivered chunks, in delivery order */
    int nactive, nheld;
    frange *pending, *pending_tail;
    fobj **objs;
    size_t nobjs, capobjs, last_obj;
    int input_closed;
    int failed;
    baton_err err;
    int stop;
    baton_fetch_stats st;
    pthread_mutex_t mu;
    pthread_cond_t cv_out;      /* consumer waits here */
    pthread_cond_t cv_io;       /* local I/O thread waits here */
    CURLM *multi;
    fplain *plain;              /* the store ignores Range: fetch_plain.c's transfer, or NULL */
    pthread_t thread;
    int thread_started;
};

/* fetch.c */
void fetch_set_error(baton_fetch *f, const baton_err *e);
void fetch_set_error_msg(baton_fetch *f, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fetch_plan(baton_fetch *f);
int fetch_probe_resolve(baton_fetch *f, fchunk *c, uint64_t total, baton_err *e);
/* fetch_plain.c: one plain GET per object for a server that ignores Range (I/O thread, no lock held) */
int fetch_plain_on(const baton_fetch *f);
void fetch_plain_mark(baton_fetch *f);
double fetch_plain_step(baton_fetch *f);
int fetch_plain_done(baton_fetch *f, CURL *easy, CURLcode cc);
void fetch_plain_cancel(baton_fetch *f);
void fetch_plain_free(baton_fetch *f);
/* fetch_remote.c: the I/O thread's loop for remote stores */
void fetch_remote_loop(baton_fetch *f);

#endif
