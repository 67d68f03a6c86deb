/* fetch.c — ordered range streaming: one I/O thread turns the ranges a consumer queues into
 * chunk-sized requests, runs several at once, and hands the chunks over strictly in order.
 *
 * Owns: the I/O thread, its libcurl multi handle (remote stores) or file descriptors (local
 * stores), a fixed pool of chunk slots with their buffers, the queue of ranges not yet cut into
 * chunks, and the table of objects seen (URL, size, ETag). The remote transfers are in
 * fetch_remote.c (fetch_plain.c for a server that ignores Range); the state they share in
 * fetch_internal.h.
 *
 * Contract:
 *  - Ranges are delivered in the order they were added; within a range in offset order. Each
 *    delivered piece is one COMPLETE chunk (at most chunk_bytes; the last of a range may be
 *    shorter; an empty range gives one empty piece). A piece stays valid until it is released.
 *  - Memory is bounded: there are max(1, max_buffered / chunk_bytes) slots, each with one buffer of
 *    chunk_bytes allocated on first use (baton_bigmem_alloc) and reused afterwards (no allocation
 *    per chunk in steady state). A slot is busy from the moment its chunk is planned until the consumer releases the
 *    piece, so received + in-flight + held bytes never exceed max_buffered. At most `inflight`
 *    requests run at once. A consumer that holds every slot and asks for more gets BATON_ERR_ARG.
 *  - Remote: a range of unknown length (UINT64_MAX) first sends one chunk-sized request whose
 *    Content-Range tells the object size, then plans the rest. Every answer is validated
 *    (io_resp_check) before its bytes are used. After a dropped connection, a short body, a
 *    timeout, a 429 or a 5xx, only the bytes of the chunk not yet received are asked for again,
 *    with If-Match on the object's ETag (the first one seen); every answer's ETag must match it.
 *    An attempt that received bytes is retried at once and does not use up a retry; attempts
 *    without progress are retried opts.retries times with backoff 50 ms × 2^k. Every re-request
 *    counts in stats.retries.
 *  - Local: the I/O thread preads chunks from the file (through baton_sys), one at a time (page
 *    cache copies need no concurrency; `inflight` is ignored), same order and memory bound.
 *  - Each piece comes with the CRC32C of its bytes (summed by the I/O thread as they arrive) and
 *    the object size the store told with them, for readers that check what they read.
 *  - The first error is sticky: io_fetch_next returns it (naming the object and offset) from
 *    then on, and the I/O thread stops all transfers.
 *  - io_fetch_free stops the thread promptly, even in the middle of transfers. */
#include "fetch_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void baton_fetch_opts_default(baton_fetch_opts *o)
{
    o->chunk_bytes = 4u << 20;
    o->inflight = 4;
    o->max_buffered = 64u << 20;
}

static void wake_io(baton_fetch *f)
{
    if (f->multi) curl_multi_wakeup(f->multi);
    else pthread_cond_signal(&f->cv_io);
}

/* Under the lock. Keeps the first error only. */
void fetch_set_error(baton_fetch *f, const baton_err *e)
{
    if (f->failed) return;
    f->failed = 1;
    f->err = *e;
    io_scrub(f->s, &f->err);
    pthread_cond_broadcast(&f->cv_out);
}

void fetch_set_error_msg(baton_fetch *f, int code, const char *fmt, ...)
{
    baton_err e;
    e.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    fetch_set_error(f, &e);
}

/* ---------------------------------------------------------------- planning (under the lock) */

static void push_order(baton_fetch *f, int idx)
{
    f->order[(f->ohead + f->ocount) % f->nslot] = idx;
    f->ocount++;
}

static fchunk *take_slot(baton_fetch *f)
{
    if (f->nfree == 0) return NULL;
    int idx = f->freelist[--f->nfree];
    fchunk *c = &f->slots[idx];
    c->state = C_PLANNED;
    c->probe = NULL;
    c->got = 0;
    c->fails = 0;
    c->retry_at = 0;
    c->last = 0;
    c->total = UINT64_MAX;
    c->crc = 0;
    push_order(f, idx);
    return c;
}

static void pop_range(baton_fetch *f)
{
    frange *r = f->pending;
    f->pending = r->next;
    if (!f->pending) f->pending_tail = NULL;
    free(r);
}

/* Local objects: open and learn the size on first use. */
static int local_prepare(baton_fetch *f, fobj *o)
{
    if (o->fd >= 0) return BATON_OK;
    char path[4096];
    baton_err e = {0};
    int fd = io_local_open(f->s, o->name, path, sizeof path, &e);
    if (fd < 0) {
        fetch_set_error(f, &e);
        return fd;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fetch_set_error_msg(f, BATON_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        baton_sys.close(fd);
        return BATON_ERR_IO;
    }
    o->fd = fd;
    o->size = (uint64_t)st.st_size;
    return BATON_OK;
}

void fetch_plan(baton_fetch *f)
{
    while (!f->failed && f->pending && f->nfree > 0) {
        frange *r = f->pending;
        fobj *o = r->obj;
        if (f->multi == NULL && local_prepare(f, o) != BATON_OK) return;
        if (r->probing) return;   /* wait for the probe's answer, even if another told the size */
        if (r->end == UINT64_MAX) {
            if (o->size == UINT64_MAX) {
                /* size unknown: one chunk-sized request first; its answer tells the size */
                fchunk *c = take_slot(f);
                c->obj = o;
                c->tag = r->tag;
                c->off = r->off;
                c->len = f->chunk;
                c->probe = r;
                r->probing = 1;
                r->next_off = r->off + f->chunk;
                return;
            }
            if (r->off > o->size) {
                fetch_set_error_msg(f, BATON_ERR_TRUNCATED, "%s%s: offset %" PRIu64
                              " is past the end of the object (%" PRIu64 " bytes)",
                              f->s->uri, o->name, r->off, o->size);
                return;
            }
            r->end = o->size;
        }
        if (o->size != UINT64_MAX && r->end > o->size) {
            fetch_set_error_msg(f, BATON_ERR_TRUNCATED, "%s%s: range of %" PRIu64 " bytes at offset %"
                          PRIu64 " runs past the end of the object (%" PRIu64 " bytes)",
                          f->s->uri, o->name, r->end - r->off, r->off, o->size);
            return;
        }
        uint64_t left = r->end - r->next_off;
        size_t n = left < f->chunk ? (size_t)left : f->chunk;
        fchunk *c = take_slot(f);
        c->obj = o;
        c->tag = r->tag;
        c->off = r->next_off;
        c->len = n;
        c->total = o->size;   /* local: the file's size; remote: what an answer told, if any */
        c->last = r->next_off + n == r->end;
        if (n == 0) {                    /* an empty range: one empty piece */
            c->state = C_DONE;
            pthread_cond_broadcast(&f->cv_out);
        }
        r->next_off += n;
        if (c->last) pop_range(f);
    }
}

/* A probe's answer told the object size (under the lock). Shrinks the probe chunk to the object
 * and lets planning continue. Returns an error code when the range cannot exist. */
int fetch_probe_resolve(baton_fetch *f, fchunk *c, uint64_t total, baton_err *e)
{
    frange *r = c->probe;
    fobj *o = c->obj;
    c->probe = NULL;
    if (o->size == UINT64_MAX) o->size = total;
    if (r->off > total)
        return baton_err_set(e, BATON_ERR_TRUNCATED, "%s%s: offset %" PRIu64
                             " is past the end of the object (%" PRIu64 " bytes)",
                             f->s->uri, o->name, r->off, total);
    r->end = total;
    r->probing = 0;
    if (c->off + c->len >= total) {
        c->len = (size_t)(total - c->off);
        c->last = 1;
        pop_range(f);   /* r was the head of pending: planning stops at a probing range */
    } else {
        r->next_off = c->off + c->len;
    }
    wake_io(f);
    return BATON_OK;
}

/* ---------------------------------------------------------------- local reads */

static void local_loop(baton_fetch *f)
{
    pthread_mutex_lock(&f->mu);
    while (!f->stop) {
        fchunk *c = NULL;
        if (!f->failed) {
            fetch_plan(f);
            for (int k = 0; k < f->ocount; k++) {
                fchunk *x = &f->slots[f->order[(f->ohead + k) % f->nslot]];
                if (x->state == C_PLANNED) {
                    c = x;
                    break;
                }
            }
        }
        if (!c) {
            pthread_cond_wait(&f->cv_io, &f->mu);
            continue;
        }
        if (!c->buf) {
            c->buf = baton_bigmem_alloc(f->chunk);   /* 4 MiB: huge pages advised (first-touch faults) */
            if (!c->buf) {
                fetch_set_error_msg(f, BATON_ERR_NOMEM, "out of memory for a %zu-byte chunk", f->chunk);
                continue;
            }
        }
        c->state = C_ACTIVE;
        f->st.requests++;
        int fd = c->obj->fd;
        pthread_mutex_unlock(&f->mu);
        int e = 0;
        while (c->got < c->len) {
            ssize_t r = baton_sys.pread(fd, c->buf + c->got, c->len - c->got, (off_t)(c->off + c->got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                e = r < 0 ? errno : -1;
                break;
            }
            c->got += (size_t)r;
        }
        if (e == 0) c->crc = baton_crc32c(0, c->buf, c->got);   /* here, while the consumer works */
        pthread_mutex_lock(&f->mu);
        f->st.bytes += c->got;
        if (e == 0) {
            c->state = C_DONE;
            pthread_cond_broadcast(&f->cv_out);
        } else if (e < 0) {
            fetch_set_error_msg(f, BATON_ERR_TRUNCATED, "%s%s: file ended at offset %" PRIu64
                          " (it shrank while being read)", f->s->uri, c->obj->name, c->off + c->got);
        } else {
            fetch_set_error_msg(f, BATON_ERR_IO, "%s%s: read failed at offset %" PRIu64 ": %s", f->s->uri,
                          c->obj->name, c->off + c->got, strerror(e));
        }
    }
    pthread_mutex_unlock(&f->mu);
}

static void *io_thread(void *arg)
{
    baton_fetch *f = arg;
    if (f->multi) fetch_remote_loop(f);
    else local_loop(f);
    return NULL;
}

/* ---------------------------------------------------------------- public API */

baton_fetch *io_fetch_new(baton_store *s, const baton_fetch_opts *o, baton_err *err)
{
    baton_fetch_opts d;
    baton_fetch_opts_default(&d);
    if (o) {
        if (o->chunk_bytes) d.chunk_bytes = o->chunk_bytes;
        if (o->inflight > 0) d.inflight = o->inflight;
        if (o->max_buffered) d.max_buffered = o->max_buffered;
    }
    if (d.inflight > MAX_INFLIGHT) d.inflight = MAX_INFLIGHT;
    if (d.chunk_bytes > d.max_buffered) d.chunk_bytes = d.max_buffered;
    size_t nslot = d.max_buffered / d.chunk_bytes;
    if (nslot < 1) nslot = 1;
    if (nslot > 1 << 16) nslot = 1 << 16;
    if (io_store_faults(s)) {  /* the wrapper passes blocking calls only (store_fault.c) */
        baton_err_set(err, BATON_ERR_ARG, "%s: a fault-injecting store cannot be fetched from", s->uri);
        return NULL;
    }
    baton_fetch *f = calloc(1, sizeof *f);
    if (!f) {
        baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", s->uri);
        return NULL;
    }
    f->s = s;
    f->chunk = d.chunk_bytes;
    f->inflight = d.inflight;
    f->nslot = (int)nslot;
    f->slots = calloc(nslot, sizeof *f->slots);
    f->freelist = calloc(nslot, sizeof *f->freelist);
    f->order = calloc(nslot, sizeof *f->order);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv_out, NULL);
    pthread_cond_init(&f->cv_io, NULL);
    if (!f->slots || !f->freelist || !f->order) {
        baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", s->uri);
        io_fetch_free(f);
        return NULL;
    }
    for (int i = 0; i < f->nslot; i++) {
        f->slots[i].f = f;
        f->freelist[i] = f->nslot - 1 - i;
    }
    f->nfree = f->nslot;
    if (s->kind != BATON_STORE_LOCAL) {
        if (http_global_init(err) != BATON_OK) {
            io_fetch_free(f);
            return NULL;
        }
        f->multi = curl_multi_init();
        if (!f->multi) {
            baton_err_set(err, BATON_ERR_NOMEM, "%s: cannot create a transfer set", s->uri);
            io_fetch_free(f);
            return NULL;
        }
        curl_multi_setopt(f->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)f->inflight);
        curl_multi_setopt(f->multi, CURLMOPT_MAXCONNECTS, (long)f->inflight + 4);
    }
    if (pthread_create(&f->thread, NULL, io_thread, f) != 0) {
        baton_err_set(err, BATON_ERR_IO, "%s: cannot start the I/O thread", s->uri);
        io_fetch_free(f);
        return NULL;
    }
    f->thread_started = 1;
    return f;
}

static fobj *find_obj(baton_fetch *f, const char *name)
{
    if (f->nobjs && strcmp(f->objs[f->last_obj]->name, name) == 0) return f->objs[f->last_obj];
    for (size_t i = f->nobjs; i-- > 0;) {
        if (strcmp(f->objs[i]->name, name) == 0) {
            f->last_obj = i;
            return f->objs[i];
        }
    }
    return NULL;
}

static void free_obj(fobj *o)
{
    if (!o) return;
    if (o->fd >= 0) baton_sys.close(o->fd);
    free(o->name);
    free(o->url);
    free(o);
}

int io_fetch_add(baton_fetch *f, const char *name, uint64_t off, uint64_t len, uint64_t tag,
                    baton_err *err)
{
    int rc = io_name_check(f->s->uri, name, err);
    if (rc != BATON_OK) return rc;
    if (len != UINT64_MAX && off > UINT64_MAX - 1 - len)
        return baton_err_set(err, BATON_ERR_ARG, "%s%s: range at offset %" PRIu64 " is too large",
                             f->s->uri, name, off);
    frange *r = calloc(1, sizeof *r);
    if (!r) return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", f->s->uri, name);
    r->off = off;
    r->next_off = off;
    r->end = len == UINT64_MAX ? UINT64_MAX : off + len;
    r->tag = tag;
    pthread_mutex_lock(&f->mu);
    if (f->input_closed) {
        pthread_mutex_unlock(&f->mu);
        free(r);
        return baton_err_set(err, BATON_ERR_ARG, "%s%s: fetch input already closed", f->s->uri, name);
    }
    fobj *o = find_obj(f, name);
    if (!o) {
        if (f->nobjs == f->capobjs) {
            size_t cap = f->capobjs ? f->capobjs * 2 : 16;
            fobj **p = realloc(f->objs, cap * sizeof *p);
            if (!p) goto nomem;
            f->objs = p;
            f->capobjs = cap;
        }
        o = calloc(1, sizeof *o);
        if (!o) goto nomem;
        o->fd = -1;
        o->size = UINT64_MAX;
        o->name = strdup(name);
        if (f->s->kind != BATON_STORE_LOCAL) o->url = io_object_url(f->s, name);
        if (!o->name || (f->s->kind != BATON_STORE_LOCAL && !o->url)) {
            free_obj(o);
            goto nomem;
        }
        f->last_obj = f->nobjs;
        f->objs[f->nobjs++] = o;
    }
    r->obj = o;
    if (f->pending_tail) f->pending_tail->next = r;
    else f->pending = r;
    f->pending_tail = r;
    wake_io(f);
    pthread_mutex_unlock(&f->mu);
    return BATON_OK;
nomem:
    pthread_mutex_unlock(&f->mu);
    free(r);
    return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", f->s->uri, name);
}

void io_fetch_close_input(baton_fetch *f)
{
    pthread_mutex_lock(&f->mu);
    f->input_closed = 1;
    pthread_cond_broadcast(&f->cv_out);
    pthread_mutex_unlock(&f->mu);
}

static int fetch_next(baton_fetch *f, baton_fetch_piece *p, int wait, baton_err *err);
int io_fetch_next(baton_fetch *f, baton_fetch_piece *p, baton_err *err) { return fetch_next(f, p, 1, err); }
int io_fetch_next_nowait(baton_fetch *f, baton_fetch_piece *p, baton_err *err) { return fetch_next(f, p, 0, err); }

static int fetch_next(baton_fetch *f, baton_fetch_piece *p, int wait, baton_err *err)
{
    static const uint8_t empty[1];
    memset(p, 0, sizeof *p);
    pthread_mutex_lock(&f->mu);
    for (;;) {
        if (f->failed) {
            if (err) *err = f->err;
            int code = f->err.code;
            pthread_mutex_unlock(&f->mu);
            return code;
        }
        if (f->ocount > 0) {
            int idx = f->order[f->ohead];
            fchunk *c = &f->slots[idx];
            if (c->state == C_DONE) {
                f->ohead = (f->ohead + 1) % f->nslot;
                f->ocount--;
                c->state = C_HELD;
                f->nheld++;
                p->tag = c->tag;
                p->offset = c->off;
                p->data = c->len ? c->buf : empty;
                p->len = c->len;
                p->last = c->last;
                p->object_size = c->total;
                p->crc32c = c->crc;
                p->priv_ = c;
                pthread_mutex_unlock(&f->mu);
                return BATON_OK;
            }
        } else if (!f->pending && f->input_closed) {
            pthread_mutex_unlock(&f->mu);
            return BATON_END;
        } else if (f->nheld == f->nslot) {
            pthread_mutex_unlock(&f->mu);
            return baton_err_set(err, BATON_ERR_ARG,
                                 "%s: all %d fetch buffers are held by the caller; release pieces "
                                 "before asking for more", f->s->uri, f->nslot);
        }
        if (!wait) {
            pthread_mutex_unlock(&f->mu);
            return BATON_NEED_MORE;
        }
        pthread_cond_wait(&f->cv_out, &f->mu);
    }
}

void io_fetch_release(baton_fetch *f, baton_fetch_piece *p)
{
    fchunk *c = p->priv_;
    if (!c) return;
    p->priv_ = NULL;
    p->data = NULL;
    pthread_mutex_lock(&f->mu);
    if (c->state == C_HELD) {
        c->state = C_FREE;
        f->nheld--;
        f->freelist[f->nfree++] = (int)(c - f->slots);
        wake_io(f);
    }
    pthread_mutex_unlock(&f->mu);
}

void io_fetch_get_stats(const baton_fetch *f, baton_fetch_stats *st)
{
    baton_fetch *m = (baton_fetch *)f;
    pthread_mutex_lock(&m->mu);
    *st = m->st;
    pthread_mutex_unlock(&m->mu);
}

void io_fetch_add_stats(const baton_fetch *f, baton_loader_stats *st, int open)
{
    baton_fetch_stats fs;
    io_fetch_get_stats(f, &fs);
    st->fetch_retries += fs.retries;
    st->bytes_fetched += fs.bytes;
    if (open) st->open_fetched += fs.bytes;
}

void io_fetch_replace(baton_fetch **pf, baton_fetch *by, pthread_mutex_t *mu, baton_loader_stats *st, int open,
                      uint64_t *requests)
{
    baton_fetch *old = *pf;
    pthread_mutex_lock(mu);
    if (old) {
        io_fetch_add_stats(old, st, open);
        baton_fetch_stats fs;
        io_fetch_get_stats(old, &fs);
        if (requests) *requests += fs.requests;
    }
    *pf = by;
    pthread_mutex_unlock(mu);
    io_fetch_free(old);
}

void io_fetch_free(baton_fetch *f)
{
    if (!f) return;
    if (f->thread_started) {
        pthread_mutex_lock(&f->mu);
        f->stop = 1;
        wake_io(f);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->thread, NULL);
    }
    for (int i = 0; f->slots && i < f->nslot; i++) {
        fchunk *c = &f->slots[i];
        if (c->easy) curl_easy_cleanup(c->easy);
        curl_slist_free_all(c->hdrs);
        baton_bigmem_free(c->buf, f->chunk);
    }
    fetch_plain_free(f);
    if (f->multi) curl_multi_cleanup(f->multi);
    while (f->pending) pop_range(f);
    for (size_t i = 0; i < f->nobjs; i++) free_obj(f->objs[i]);
    free(f->objs);
    free(f->slots);
    free(f->freelist);
    free(f->order);
    pthread_cond_destroy(&f->cv_out);
    pthread_cond_destroy(&f->cv_io);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
