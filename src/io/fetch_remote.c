/* fetch_remote.c — the remote half of the range streamer (fetch.c owns the contract): the I/O
 * thread's loop over libcurl's multi handle — each chunk's request, its answer checked before a
 * byte is used, the bytes written into the chunk's slot, retries of what was not received (with
 * If-Match on the object's first ETag), and cancelling everything on a stop or a sticky error.
 * A 200 to a Range request hands the fetcher to fetch_plain.c (plain GETs) for the rest of it. */
#include "fetch_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- remote transfers */

static int is_2xx(long st)
{
    return st >= 200 && st < 300;
}

#define SWITCH_PLAIN 1   /* chunk_check: this answer was a 200 to a Range request */

/* Headers are in: check them before the first body byte is trusted (I/O thread, no lock).
 * BATON_OK, an error code (c->verr), or SWITCH_PLAIN. */
static int chunk_check(fchunk *c)
{
    baton_fetch *f = c->f;
    fobj *o = c->obj;
    io_resp *r = &c->resp;
    c->checked = 1;
    if (c->probe) {
        uint64_t total = UINT64_MAX;
        if (r->status == 206 && r->have_cr) total = r->cr_total;
        else if (r->status == 200 && r->have_len && c->got == 0) total = r->content_length;
        if (total == UINT64_MAX)
            return baton_err_set(&c->verr, BATON_ERR_NET, "%s%s at offset %" PRIu64
                                 ": the answer does not tell the object size", f->s->uri, o->name,
                                 c->off);
        pthread_mutex_lock(&f->mu);
        int rc = fetch_probe_resolve(f, c, total, &c->verr);
        pthread_mutex_unlock(&f->mu);
        if (rc != BATON_OK) return rc;
    }
    uint64_t total;
    int rc = io_resp_check(f->s, o->name, r, 1, c->off + c->got, c->len - c->got, &total, &c->verr);
    if (rc != BATON_OK && r->status == 200) {   /* the server ignores Range: plain GETs from now on */
        fetch_plain_mark(f);
        return SWITCH_PLAIN;
    }
    if (rc != BATON_OK) return rc;
    if (r->etag[0]) {
        if (!o->etag[0]) {
            snprintf(o->etag, sizeof o->etag, "%s", r->etag);
        } else if (strcmp(o->etag, r->etag) != 0) {
            return baton_err_set(&c->verr, BATON_ERR_CORRUPT, "%s%s at offset %" PRIu64
                                 ": the object changed on the server while it was being read "
                                 "(ETag %s, then %s)", f->s->uri, o->name, c->off + c->got, o->etag,
                                 r->etag);
        }
    }
    if (total != UINT64_MAX) {
        c->total = total;
        if (o->size == UINT64_MAX) {
            o->size = total;
        } else if (o->size != total) {
            return baton_err_set(&c->verr, BATON_ERR_CORRUPT, "%s%s at offset %" PRIu64
                                 ": the object changed on the server while it was being read "
                                 "(%" PRIu64 " bytes, then %" PRIu64 ")", f->s->uri, o->name,
                                 c->off + c->got, o->size, total);
        }
    }
    return BATON_OK;
}

static size_t chunk_write(char *p, size_t size, size_t nitems, void *ud)
{
    fchunk *c = ud;
    size_t n = size * nitems;
    if (!is_2xx(c->resp.status)) {
        io_resp_keep_error(&c->resp, p, n);
        return n;
    }
    if (!c->checked) {
        int rc = chunk_check(c);
        if (rc != BATON_OK) {
            c->vfailed = rc == SWITCH_PLAIN ? SWITCH_PLAIN : -1;
            return 0;
        }
    }
    if (n > c->len - c->got) {
        baton_err_set(&c->verr, BATON_ERR_NET, "%s%s at offset %" PRIu64
                      ": server sent more bytes than asked for", c->f->s->uri, c->obj->name,
                      c->off + c->got);
        c->vfailed = -1;
        return 0;
    }
    memcpy(c->buf + c->got, p, n);
    c->crc = baton_crc32c(c->crc, c->buf + c->got, n);   /* as the bytes arrive, still in cache */
    c->got += n;
    c->got_attempt += n;
    return n;
}

/* Start the next attempt of c (under the lock, I/O thread). */
static void chunk_start(baton_fetch *f, fchunk *c)
{
    baton_err e = {0};
    if (!c->easy) {
        c->easy = curl_easy_init();
        if (!c->easy) {
            fetch_set_error_msg(f, BATON_ERR_NOMEM, "%s%s: out of memory", f->s->uri, c->obj->name);
            return;
        }
    } else {
        curl_easy_reset(c->easy);
    }
    if (c->len > 0 && !c->buf) {
        c->buf = baton_bigmem_alloc(f->chunk);   /* freed by io_fetch_free */
        if (!c->buf) {
            fetch_set_error_msg(f, BATON_ERR_NOMEM, "out of memory for a %zu-byte chunk", f->chunk);
            return;
        }
    }
    uint64_t start = c->off + c->got, end = c->off + c->len - 1;
    int rc = io_request_setup(f->s, c->easy, c->obj->url, 1, start, end,
                              c->obj->etag[0] ? c->obj->etag : NULL, &c->resp, c->errbuf, &c->hdrs, &e);
    if (rc != BATON_OK) {
        fetch_set_error(f, &e);
        return;
    }
    curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, chunk_write);
    curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
    curl_easy_setopt(c->easy, CURLOPT_BUFFERSIZE, (long)RECV_BUFFER);
    c->got_attempt = 0;
    c->checked = 0;
    c->vfailed = 0;
    if (curl_multi_add_handle(f->multi, c->easy) != CURLM_OK) {
        curl_slist_free_all(c->hdrs);
        c->hdrs = NULL;
        fetch_set_error_msg(f, BATON_ERR_NET, "%s%s: cannot start a transfer", f->s->uri, c->obj->name);
        return;
    }
    c->state = C_ACTIVE;
    f->nactive++;
    f->st.requests++;
}

/* A transfer of c ended (under the lock). */
static void chunk_finish(baton_fetch *f, fchunk *c, CURLcode cc)
{
    curl_multi_remove_handle(f->multi, c->easy);
    curl_slist_free_all(c->hdrs);
    c->hdrs = NULL;
    f->nactive--;
    f->st.bytes += c->got_attempt;
    c->state = C_PLANNED;
    if (c->vfailed == SWITCH_PLAIN) {   /* planned again, for fetch_plain.c */
        c->got = 0;
        c->crc = 0;
        return;
    }
    if (c->vfailed) {
        fetch_set_error(f, &c->verr);
        return;
    }
    baton_err e = {0};
    int retry = 0;
    io_resp *r = &c->resp;
    if (cc == CURLE_OK && is_2xx(r->status)) {
        if (!c->checked) {
            pthread_mutex_unlock(&f->mu);
            int rc = chunk_check(c);
            pthread_mutex_lock(&f->mu);
            if (rc == SWITCH_PLAIN) {
                c->got = 0;
                c->crc = 0;
                return;
            }
            if (rc != BATON_OK) {
                fetch_set_error(f, &c->verr);
                return;
            }
        }
        if (c->got == c->len) {
            c->state = C_DONE;
            pthread_cond_broadcast(&f->cv_out);
            return;
        }
        baton_err_set(&e, BATON_ERR_NET, "%s%s at offset %" PRIu64 ": short body (%zu of %zu bytes)",
                      f->s->uri, c->obj->name, c->off + c->got, c->got, c->len);
        retry = 1;
    } else if (cc == CURLE_OK && r->status == 416 && c->probe && r->cr_unsatisfied && c->got == 0 &&
               c->off == r->cr_total) {
        /* a to-the-end range starting exactly at the end of the object: empty */
        if (fetch_probe_resolve(f, c, r->cr_total, &e) != BATON_OK) {
            fetch_set_error(f, &e);
            return;
        }
        c->total = r->cr_total;
        c->state = C_DONE;
        pthread_cond_broadcast(&f->cv_out);
        return;
    } else {
        io_request_error(f->s, c->obj->name, c->off + c->got, cc, c->errbuf, r, &retry, &e);
    }
    if (!retry) {
        fetch_set_error(f, &e);
        return;
    }
    double now = baton_now();
    if (c->got_attempt > 0) {
        c->fails = 0;
        c->retry_at = now;
    } else if (++c->fails > f->s->opts.retries) {
        fetch_set_error(f, &e);
        return;
    } else {
        c->retry_at = now + io_backoff_s(c->fails - 1);
    }
    f->st.retries++;
}

static void cancel_all(baton_fetch *f)
{
    for (int i = 0; i < f->nslot; i++) {
        fchunk *c = &f->slots[i];
        if (c->state == C_ACTIVE) {
            f->st.bytes += c->got_attempt;   /* received, then dropped: the store sent them */
            curl_multi_remove_handle(f->multi, c->easy);
            curl_slist_free_all(c->hdrs);
            c->hdrs = NULL;
            c->state = C_PLANNED;
            f->nactive--;
        }
    }
}

void fetch_remote_loop(baton_fetch *f)
{
    pthread_mutex_lock(&f->mu);
    while (!f->stop) {
        double now = baton_now(), wait_s = 1.0;
        if (f->failed) {
            if (f->nactive) cancel_all(f);
        } else if (!fetch_plain_on(f)) {
            fetch_plan(f);
            for (int k = 0; k < f->ocount && f->nactive < f->inflight && !f->failed; k++) {
                fchunk *c = &f->slots[f->order[(f->ohead + k) % f->nslot]];
                if (c->state != C_PLANNED) continue;
                if (c->retry_at > now) {
                    if (c->retry_at - now < wait_s) wait_s = c->retry_at - now;
                    continue;
                }
                chunk_start(f, c);
            }
        }
        int plain = !f->failed && fetch_plain_on(f), failed = f->failed;
        pthread_mutex_unlock(&f->mu);
        if (failed) fetch_plain_cancel(f);
        if (plain) {
            double w = fetch_plain_step(f);
            if (w < wait_s) wait_s = w;
        }
        int running = 0;
        curl_multi_perform(f->multi, &running);
        CURLMsg *msg;
        int left, finished = 0;
        while ((msg = curl_multi_info_read(f->multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE) continue;
            finished++;
            if (fetch_plain_done(f, msg->easy_handle, msg->data.result)) continue;
            fchunk *c = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            CURLcode cc = msg->data.result;
            pthread_mutex_lock(&f->mu);
            if (c && c->state == C_ACTIVE) chunk_finish(f, c, cc);
            pthread_mutex_unlock(&f->mu);
        }
        /* transfers that ended free a slot or need a retry: plan and start before waiting */
        if (!finished) curl_multi_poll(f->multi, NULL, 0, (int)(wait_s * 1000.0) + 1, NULL);
        pthread_mutex_lock(&f->mu);
    }
    cancel_all(f);
    pthread_mutex_unlock(&f->mu);
    fetch_plain_cancel(f);
}

