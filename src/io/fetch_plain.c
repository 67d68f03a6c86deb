/* fetch_plain.c — the range streamer's way with an HTTP server that ignores Range (a 200 with the
 * whole object where a 206 was asked for: `python3 -m http.server`, a plain static server): one
 * plain GET per object, read from its first byte, filling the fetcher's chunks in order.
 *
 * Contract (fetch.c's holds unchanged for the consumer: the same pieces, in the same order, with
 * the same CRC32C and object size; memory stays max_buffered plus one receive buffer):
 *  - The switch: fetch_remote.c's first answer of 200 to a Range request marks the store
 *    (s->no_ranges, for every later fetcher of it too) and puts that chunk back; once the ranged
 *    transfers still running have ended, every chunk goes through here. The bytes that first
 *    answer brought before it was stopped count in stats.bytes: the server sent them.
 *  - One transfer at a time. It serves the earliest chunk in delivery order when that chunk is of
 *    its object at or after the byte it has reached (bytes before a chunk's offset are read and
 *    dropped: a range inside an object costs the object up to the range's end); a chunk of another
 *    object, or one behind it, ends the transfer and a new GET starts from byte 0.
 *  - Its bytes go straight into the chunk's buffer. When the next chunk has no slot yet (the
 *    consumer holds them) the rest of the receive buffer is kept aside and the transfer is paused
 *    (CURL_WRITEFUNC_PAUSE) until a slot is free: the connection waits, nothing is dropped.
 *  - The answer is checked before its first byte is used: 200, a Content-Length (the object size,
 *    which must equal what earlier answers told), the ETag equal to the first one seen. A chunk
 *    that runs past the object's end is an error naming the object, as with ranges.
 *  - A dropped connection or short body starts the object again from byte 0 (a plain server cannot
 *    resume) with If-Match on its ETag; an attempt that got further than any before it is retried
 *    at once, others s->opts.retries times with io_backoff_s, like ranged chunks.
 * Every function runs on the I/O thread; f->mu is taken where the consumer's state is touched
 * (slots, order, planning) and never held across a libcurl call. */
#include "fetch_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { PICK_FILL, PICK_WAIT, PICK_END, PICK_ERR };

static int is_2xx(long st)
{
    return st >= 200 && st < 300;
}

/* The earliest chunk in delivery order that is not filled yet (under the lock), or NULL. */
static fchunk *first_open(baton_fetch *f)
{
    for (int k = 0; k < f->ocount; k++) {
        fchunk *x = &f->slots[f->order[(f->ohead + k) % f->nslot]];
        if (x->state == C_PLANNED || x->state == C_ACTIVE) return x;
    }
    return NULL;
}

/* Under the lock: make the next chunk the transfer's current one, or say why not. */
static int pick(baton_fetch *f, fplain *pl)
{
    if (f->failed || f->stop) return PICK_END;
    fetch_plan(f);
    fchunk *x = first_open(f);
    if (!x) return f->input_closed && !f->pending ? PICK_END : PICK_WAIT;
    if (x->state != C_PLANNED || x->obj != pl->obj || x->off < pl->pos) return PICK_END;
    fobj *o = pl->obj;
    if (x->probe && fetch_probe_resolve(f, x, o->size, &pl->verr) != BATON_OK) return PICK_ERR;
    if (x->off + x->len > o->size)
        return baton_err_set(&pl->verr, BATON_ERR_TRUNCATED, "%s%s: object is %" PRIu64
                             " bytes, the range of %zu bytes at offset %" PRIu64 " runs past its end",
                             f->s->uri, o->name, o->size, x->len, x->off), PICK_ERR;
    if (x->len > 0 && !x->buf && !(x->buf = baton_bigmem_alloc(f->chunk)))
        return baton_err_set(&pl->verr, BATON_ERR_NOMEM, "out of memory for a %zu-byte chunk", f->chunk),
               PICK_ERR;
    x->got = 0;
    x->crc = 0;
    x->total = o->size;
    x->state = C_ACTIVE;
    pl->cur = x;
    return PICK_FILL;
}

/* Under the lock: the current chunk is full. */
static void chunk_filled(baton_fetch *f, fplain *pl)
{
    pl->cur->state = C_DONE;
    pl->cur = NULL;
    pthread_cond_broadcast(&f->cv_out);
}

/* Put the bytes [p, p+n) where they belong; returns how many were taken (fewer than n when no
 * chunk is free: PICK_WAIT), setting pl->ending or pl->vfailed when the transfer must stop. */
static size_t feed(baton_fetch *f, fplain *pl, const uint8_t *p, size_t n)
{
    size_t k = 0;
    while (k < n) {
        if (!pl->cur) {
            pthread_mutex_lock(&f->mu);
            int r = pick(f, pl);
            if (r == PICK_FILL && pl->cur->len == 0) chunk_filled(f, pl);   /* a probe of an empty rest */
            pthread_mutex_unlock(&f->mu);
            if (r == PICK_WAIT) break;
            if (r == PICK_END) pl->ending = 1;
            if (r == PICK_ERR) pl->vfailed = 1;
            if (r != PICK_FILL) break;
            continue;
        }
        fchunk *c = pl->cur;
        if (pl->pos < c->off) {   /* before the range: read and dropped */
            uint64_t gap = c->off - pl->pos;
            size_t s = gap < n - k ? (size_t)gap : n - k;
            k += s;
            pl->pos += s;
            continue;
        }
        size_t m = c->len - c->got < n - k ? c->len - c->got : n - k;
        memcpy(c->buf + c->got, p + k, m);
        c->crc = baton_crc32c(c->crc, c->buf + c->got, m);
        c->got += m;
        k += m;
        pl->pos += m;
        if (c->got == c->len) {
            pthread_mutex_lock(&f->mu);
            chunk_filled(f, pl);
            pthread_mutex_unlock(&f->mu);
        }
    }
    if (pl->pos > pl->best) pl->best = pl->pos;
    return k;
}

/* The answer's headers, before its first byte is used. */
static int check(baton_fetch *f, fplain *pl)
{
    fobj *o = pl->obj;
    io_resp *r = &pl->resp;
    pl->checked = 1;
    if (r->status != 200)
        return baton_err_set(&pl->verr, BATON_ERR_NET, "%s%s: unexpected HTTP status %ld to a GET of the "
                             "whole object", f->s->uri, o->name, r->status);
    if (!r->have_len)
        return baton_err_set(&pl->verr, BATON_ERR_NET, "%s%s: the server answers neither ranges nor "
                             "with a Content-Length: the object size is not told", f->s->uri, o->name);
    if (o->size == UINT64_MAX) {
        o->size = r->content_length;
    } else if (o->size != r->content_length) {
        return baton_err_set(&pl->verr, BATON_ERR_CORRUPT, "%s%s: the object changed on the server while "
                             "it was being read (%" PRIu64 " bytes, then %" PRIu64 ")", f->s->uri, o->name,
                             o->size, r->content_length);
    }
    if (r->etag[0]) {
        if (!o->etag[0]) {
            snprintf(o->etag, sizeof o->etag, "%s", r->etag);
        } else if (strcmp(o->etag, r->etag) != 0) {
            return baton_err_set(&pl->verr, BATON_ERR_CORRUPT, "%s%s: the object changed on the server "
                                 "while it was being read (ETag %s, then %s)", f->s->uri, o->name, o->etag,
                                 r->etag);
        }
    }
    return BATON_OK;
}

/* Keep [p, p+n) aside for when a slot is free. */
static int stash(fplain *pl, const char *p, size_t n)
{
    if (n > pl->stash_cap) {
        uint8_t *b = realloc(pl->stash, n);
        if (!b) return BATON_ERR_NOMEM;
        pl->stash = b;
        pl->stash_cap = n;
    }
    memcpy(pl->stash, p, n);
    pl->stash_off = 0;
    pl->stash_len = n;
    return BATON_OK;
}

static size_t plain_write(char *p, size_t size, size_t nitems, void *ud)
{
    fplain *pl = ud;
    baton_fetch *f = pl->f;
    size_t n = size * nitems;
    if (!is_2xx(pl->resp.status)) {
        io_resp_keep_error(&pl->resp, p, n);
        return n;
    }
    if (pl->stash_off < pl->stash_len) return CURL_WRITEFUNC_PAUSE;   /* still waiting for a slot */
    pthread_mutex_lock(&f->mu);   /* counted as it arrives: the consumer may have every byte before
                                   * libcurl reports the transfer's end */
    f->st.bytes += n;
    pthread_mutex_unlock(&f->mu);
    if (!pl->checked && check(f, pl) != BATON_OK) {
        pl->vfailed = 1;
        return 0;
    }
    size_t k = feed(f, pl, (const uint8_t *)p, n);
    if (pl->vfailed || pl->ending) return 0;   /* ends the transfer (CURLE_WRITE_ERROR, expected) */
    if (k < n && stash(pl, p + k, n - k) != BATON_OK) {
        baton_err_set(&pl->verr, BATON_ERR_NOMEM, "out of memory for a receive buffer");
        pl->vfailed = 1;
        return 0;
    }
    return n;
}

/* ---------------------------------------------------------------- the transfer's life */

static void detach(baton_fetch *f, fplain *pl)
{
    curl_multi_remove_handle(f->multi, pl->easy);
    curl_slist_free_all(pl->hdrs);
    pl->hdrs = NULL;
    pl->active = 0;
    pl->stash_len = pl->stash_off = 0;
}

/* Under the lock: the chunk being filled goes back to be filled again. */
static void unfill(fplain *pl)
{
    if (!pl->cur) return;
    pl->cur->state = C_PLANNED;
    pl->cur->got = 0;
    pl->cur->crc = 0;
    pl->cur = NULL;
}

/* Under the lock, the whole object having passed: chunks of it that start at its end (a range to
 * the end whose size a probe was to learn, now known to be empty) are done without another GET. */
static void settle_end(baton_fetch *f, fplain *pl)
{
    fobj *o = pl->obj;
    for (;;) {
        fetch_plan(f);
        fchunk *x = first_open(f);
        if (!x || x->state != C_PLANNED || x->obj != o || x->off != o->size) return;
        if (x->probe && fetch_probe_resolve(f, x, o->size, &pl->verr) != BATON_OK) {
            fetch_set_error(f, &pl->verr);
            return;
        }
        if (x->len != 0) return;
        x->total = o->size;
        x->state = C_DONE;
        pthread_cond_broadcast(&f->cv_out);
    }
}

/* The transfer ended (libcurl said so, or it was stopped while paused: cc = CURLE_OK, ending). */
static void finish(baton_fetch *f, fplain *pl, CURLcode cc)
{
    detach(f, pl);
    pthread_mutex_lock(&f->mu);
    baton_err e = {0};
    int retry = 0;
    io_resp *r = &pl->resp;
    if (pl->vfailed) {
        unfill(pl);
        fetch_set_error(f, &pl->verr);
        pthread_mutex_unlock(&f->mu);
        return;
    }
    if (pl->ending) {
        unfill(pl);
        pthread_mutex_unlock(&f->mu);
        return;
    }
    if (cc == CURLE_OK && is_2xx(r->status)) {
        if (!pl->checked && check(f, pl) != BATON_OK) {   /* an empty body: no write came */
            fetch_set_error(f, &pl->verr);
            pthread_mutex_unlock(&f->mu);
            return;
        }
        if (pl->pos == pl->obj->size) {   /* the whole object passed; what is left is another GET's */
            settle_end(f, pl);
            unfill(pl);
            pl->fails = 0;
            pthread_mutex_unlock(&f->mu);
            return;
        }
        baton_err_set(&e, BATON_ERR_NET, "%s%s at offset %" PRIu64 ": short body (%" PRIu64 " of %" PRIu64
                      " bytes)", f->s->uri, pl->obj->name, pl->pos, pl->pos, pl->obj->size);
        retry = 1;
    } else {
        io_request_error(f->s, pl->obj->name, pl->pos, cc, pl->errbuf, r, &retry, &e);
    }
    unfill(pl);
    double now = baton_now();
    if (!retry) {
        fetch_set_error(f, &e);
    } else if (pl->best > pl->best_before) {   /* got further than ever: again at once */
        pl->fails = 0;
        pl->retry_at = now;
        f->st.retries++;
    } else if (++pl->fails > f->s->opts.retries) {
        fetch_set_error(f, &e);
    } else {
        pl->retry_at = now + io_backoff_s(pl->fails - 1);
        f->st.retries++;
    }
    pthread_mutex_unlock(&f->mu);
}

/* Start a GET of the object of the earliest open chunk. Returns the seconds to wait before
 * trying again (a backoff), or 1.0. */
static double start(baton_fetch *f, fplain *pl)
{
    pthread_mutex_lock(&f->mu);
    fetch_plan(f);
    fchunk *x = f->failed || f->nactive > 0 ? NULL : first_open(f);
    double now = baton_now();
    if (!x || pl->retry_at > now) {
        pthread_mutex_unlock(&f->mu);
        return x ? pl->retry_at - now : 1.0;
    }
    if (x->obj != pl->obj) {
        pl->obj = x->obj;
        pl->fails = 0;
        pl->best = 0;
    }
    pl->best_before = pl->best;
    f->st.requests++;
    pthread_mutex_unlock(&f->mu);
    baton_err e = {0};
    if (pl->easy) curl_easy_reset(pl->easy);
    else if (!(pl->easy = curl_easy_init())) goto nomem;
    fobj *o = pl->obj;
    memset(&pl->resp, 0, sizeof pl->resp);
    if (io_request_setup(f->s, pl->easy, o->url, 0, 0, 0, o->etag[0] && io_etag_strong(o->etag) ? o->etag : NULL,
                         &pl->resp, pl->errbuf, &pl->hdrs, &e) != BATON_OK) {
        pthread_mutex_lock(&f->mu);
        fetch_set_error(f, &e);
        pthread_mutex_unlock(&f->mu);
        return 1.0;
    }
    curl_easy_setopt(pl->easy, CURLOPT_WRITEFUNCTION, plain_write);
    curl_easy_setopt(pl->easy, CURLOPT_WRITEDATA, pl);
    curl_easy_setopt(pl->easy, CURLOPT_PRIVATE, NULL);
    curl_easy_setopt(pl->easy, CURLOPT_BUFFERSIZE, (long)RECV_BUFFER);
    pl->pos = 0;
    pl->cur = NULL;
    pl->checked = pl->ending = pl->vfailed = 0;
    pl->stash_len = pl->stash_off = 0;
    if (curl_multi_add_handle(f->multi, pl->easy) != CURLM_OK) {
        curl_slist_free_all(pl->hdrs);
        pl->hdrs = NULL;
        pthread_mutex_lock(&f->mu);
        fetch_set_error_msg(f, BATON_ERR_NET, "%s%s: cannot start a transfer", f->s->uri, o->name);
        pthread_mutex_unlock(&f->mu);
        return 1.0;
    }
    pl->active = 1;
    return 1.0;
nomem:
    pthread_mutex_lock(&f->mu);
    fetch_set_error_msg(f, BATON_ERR_NOMEM, "%s: out of memory", f->s->uri);
    pthread_mutex_unlock(&f->mu);
    return 1.0;
}

/* ---------------------------------------------------------------- what fetch_remote.c calls */

int fetch_plain_on(const baton_fetch *f)
{
    return __atomic_load_n(&f->s->no_ranges, __ATOMIC_ACQUIRE);
}

void fetch_plain_mark(baton_fetch *f)
{
    __atomic_store_n(&f->s->no_ranges, 1, __ATOMIC_RELEASE);
}

/* The loop's turn (no lock held): go on after a pause, end a transfer nobody needs, start the
 * next. Returns how long the loop may wait for a socket before calling again. */
double fetch_plain_step(baton_fetch *f)
{
    if (!f->plain) {
        f->plain = calloc(1, sizeof *f->plain);
        if (!f->plain) {
            pthread_mutex_lock(&f->mu);
            fetch_set_error_msg(f, BATON_ERR_NOMEM, "%s: out of memory", f->s->uri);
            pthread_mutex_unlock(&f->mu);
            return 1.0;
        }
        f->plain->f = f;
    }
    fplain *pl = f->plain;
    if (pl->active && pl->stash_off < pl->stash_len) {   /* paused: is there a slot now? */
        pl->stash_off += feed(f, pl, pl->stash + pl->stash_off, pl->stash_len - pl->stash_off);
        if (pl->ending || pl->vfailed) {
            finish(f, pl, CURLE_OK);
        } else if (pl->stash_off == pl->stash_len) {
            pl->stash_off = pl->stash_len = 0;
            if (pl->done) {   /* the transfer had ended while its last bytes waited here */
                pl->done = 0;
                finish(f, pl, pl->done_cc);
            } else {
                curl_easy_pause(pl->easy, CURLPAUSE_CONT);
            }
        }
    }
    if (pl->active) return pl->stash_off < pl->stash_len ? 0.05 : 1.0;   /* a paused one is looked at again soon */
    return start(f, pl);
}

/* libcurl reports that easy ended; 1 when it was the plain transfer (handled), else 0. */
int fetch_plain_done(baton_fetch *f, CURL *easy, CURLcode cc)
{
    fplain *pl = f->plain;
    if (!pl || !pl->active || easy != pl->easy) return 0;
    if (pl->stash_off < pl->stash_len && cc == CURLE_OK) {   /* its last bytes still wait for a slot */
        pl->done = 1;
        pl->done_cc = cc;
        return 1;
    }
    finish(f, pl, cc);
    return 1;
}

/* Stop (an error elsewhere, or the fetcher closing); no lock held. */
void fetch_plain_cancel(baton_fetch *f)
{
    fplain *pl = f->plain;
    if (!pl || !pl->active) return;
    pl->ending = 1;
    finish(f, pl, CURLE_OK);
}

void fetch_plain_free(baton_fetch *f)
{
    fplain *pl = f->plain;
    if (!pl) return;
    if (pl->easy) curl_easy_cleanup(pl->easy);
    curl_slist_free_all(pl->hdrs);
    free(pl->stash);
    free(pl);
    f->plain = NULL;
}
