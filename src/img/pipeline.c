/* pipeline.c — the decode pipeline: loader records → float batches, decoded, augmented and
 * normalised by worker threads, handed over strictly in order.
 *
 * Threads and ownership:
 *  - one reader thread owns the loader. It takes a free batch slot, copies the payloads of the
 *    batch's records into the slot's arena (grown on demand while warming up, then reused), and
 *    queues the slot on the in-order queue as soon as its first UNIT records are in, offering
 *    each further full unit as it fills (so the first batch's decoding overlaps its reading: a
 *    launch costs about the larger of the two, not their sum); the batch is complete when its
 *    last record is in. At an epoch's end it queues an END marker. Before the arena of a queued
 *    batch moves (realloc), the reader holds new claims and waits for the claimed units to end.
 *    Launch first: the reader holds the loader's read-ahead (baton_loader_hold_ahead) until the
 *    first batch is decoded, so its decoding does not share the cores with the transfer of blocks
 *    not needed yet (pipe mode at the seed's scale: bench/RESULTS.md §16).
 *  - `workers` threads claim work units (UNIT consecutive samples of the oldest queued batch
 *    that has an offered, unclaimed unit), parse the record, check the label, decode with their
 *    own baton_image, and augment + normalise into the slot's rows of batch->x.
 *  - the caller's baton_pipeline_next pops the queue head once all its units are done;
 *    baton_pipeline_release puts the slot back on the free list.
 *  One mutex guards the queue, the free list and the unit counters; a worker takes it twice per
 *  unit, the reader twice per batch. The hot path allocates nothing.
 *
 * Contract:
 *  - Batches follow the aligned grid of the epoch: batch k holds positions [k·B, (k+1)·B) ∩
 *    [0, epoch size); a pipeline opened at a cursor inside a batch first finishes that batch.
 *    drop_last drops the grid's final short batch (the reader reads and discards its records).
 *  - batch->next is the loader cursor after the batch; for the epoch's last delivered batch it is
 *    {seed, epoch + 1, 0} (so a resume never redelivers the dropped tail).
 *  - next() returns BATON_END exactly once per epoch, after that epoch's batches.
 *  - Errors (loader, record parse, label, decode) are delivered in order: the batches before the
 *    failing one are still returned, then the error, which stays (sticky). Messages name the shard
 *    file and byte offset. Of several failing samples in a batch, the first one is reported.
 *  - Bytes of every batch depend only on (seed, epoch, position) and the options, never on the
 *    thread count or timing (the augmentation and crop draws are per position).
 *  - Crops (opts.crop): NONE and PAD decode the whole image, which must have the manifest's fixed
 *    shape, and pad-and-crop it; RANDOM_RESIZED and CENTER take any size: the header gives it, the
 *    box is drawn for it (crop.c), and only what the box needs is decoded, at the size it is used
 *    (region.c), resampled to size × size; then the flip and the normalisation (or, with u8, the
 *    pixels as they are). opts.reference decodes whole images at full size and resamples the box
 *    (the plain reference the tests compare with).
 *  - close() stops every thread; a reader inside baton_loader_next is waited for. */
#include "augment_internal.h"
#include "img_internal.h"
#include "region_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT 16              /* samples per work unit */

enum { Q_BATCH = 0, Q_END = 1, Q_ERR = 2 };

typedef struct slot {
    baton_batch b;           /* b.priv_ points back here */
    size_t xalloc;           /* the mapping behind b.x or b.x8 (baton_bigmem_alloc) */
    /* filled by the reader while the slot is its own */
    uint8_t *arena;
    size_t arena_len, arena_cap;
    size_t *rec_at, *rec_len;
    uint64_t *pos;           /* each sample's epoch position (a part takes every world-th) */
    uint32_t *shard;
    uint64_t *offset;
    /* under the pipeline mutex once published */
    uint32_t nunits, next_unit, done_units;
    uint32_t avail;          /* records copied and offered to the workers while the batch is read */
    int open;                /* queued before the reader finished it (its units offered as they fill) */
    int hold;                /* the reader is about to move the arena: no unit is claimed */
    int dropped;             /* queued early, then not to be delivered (discarded once its units end) */
    int err_code;
    uint32_t err_index;
    baton_err err;
    int out;                 /* handed to the caller, not yet released */
    int first;               /* the launch's first batch: the loader's read-ahead waits for it */
} slot;

typedef struct qent {
    slot *s;
    int kind;
} qent;

struct baton_pipeline {
    baton_loader *l;
    const baton_manifest *m;
    float mean[4], std[4];          /* what samples are normalised with (opts or dataset.json) */
    baton_pipeline_opts o;
    baton_cursor start;      /* o.start's cursor (o.start itself is the caller's) */
    uint64_t seed;
    uint32_t shape[3];       /* H, W, C of the records (0, 0, C when they vary) */
    uint32_t out[3];         /* H, W, C of a batch's samples */
    int crops;               /* RANDOM_RESIZED or CENTER: records of any size, decoded by region */
    size_t sample_floats;    /* values (or bytes, with u8) of one sample */
    baton_encoding enc;
    img_norm_lut lut;

    pthread_mutex_t mu;
    pthread_cond_t cv_reader, cv_work, cv_ready;
    slot *slots;
    uint32_t nslots;
    slot **free_list;
    uint32_t nfree;
    qent *q;
    uint32_t qcap, qhead, qlen;
    uint32_t held;           /* batches the caller holds */
    int stop;
    atomic_int stop_flag;    /* the same, for the reader's lock-free checks */
    baton_err reader_err;    /* the error a Q_ERR entry stands for */
    int sticky;
    baton_err sticky_err;
    int first_done;          /* the first batch is decoded (the reader then lets the loader read ahead) */

    pthread_t reader;
    int reader_started;
    pthread_t *workers;
    int nworkers;
    int mu_ok, cv_ok;
    int unlogged;            /* no batch events (an evaluation pipeline; baton_pipeline_set_logged) */
};

/* ---------------------------------------------------------------- queue (caller holds mu) */

static void q_push(baton_pipeline *p, slot *s, int kind)
{
    p->q[(p->qhead + p->qlen) % p->qcap] = (qent){s, kind};
    p->qlen++;
    pthread_cond_broadcast(&p->cv_ready);
}

static void q_pop(baton_pipeline *p)
{
    p->qhead = (p->qhead + 1) % p->qcap;
    p->qlen--;
    pthread_cond_signal(&p->cv_reader);
}

/* ---------------------------------------------------------------- reader */

/* Push an END or ERR marker, waiting for queue space. Returns 0 when stopped. */
static int reader_push_marker(baton_pipeline *p, int kind)
{
    pthread_mutex_lock(&p->mu);
    while (!p->stop && p->qlen >= p->qcap) pthread_cond_wait(&p->cv_reader, &p->mu);
    int ok = !p->stop;
    if (ok) q_push(p, NULL, kind);
    pthread_mutex_unlock(&p->mu);
    return ok;
}

static void reader_fail(baton_pipeline *p, const baton_err *err)
{
    pthread_mutex_lock(&p->mu);
    p->reader_err = *err;
    if (p->reader_err.code >= 0) p->reader_err.code = BATON_ERR_FORMAT;
    pthread_mutex_unlock(&p->mu);
    reader_push_marker(p, Q_ERR);
}

/* A free slot with room on the queue for it and an END marker; NULL when stopped. */
static slot *reader_take_slot(baton_pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    while (!p->stop && (p->nfree == 0 || p->qlen + 2 > p->qcap))
        pthread_cond_wait(&p->cv_reader, &p->mu);
    slot *s = p->stop ? NULL : p->free_list[--p->nfree];
    pthread_mutex_unlock(&p->mu);
    return s;
}

static int arena_grow(slot *s, size_t extra, baton_err *err)
{
    void *a = s->arena;
    if (baton_bigmem_reserve(&a, &s->arena_cap, s->arena_len, extra, 4096))
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for a batch arena (%zu + %zu bytes)", s->arena_len,
                             extra);
    s->arena = a;
    return BATON_OK;
}

/* Room for extra more bytes in s's arena. A slot already queued (open) may have units being
 * decoded from its arena: claims are held and the claimed units waited for before it moves. */
static int arena_fit(baton_pipeline *p, slot *s, size_t extra, baton_err *err)
{
    if (s->arena_cap - s->arena_len >= extra) return BATON_OK;
    if (s->open) {
        pthread_mutex_lock(&p->mu);
        s->hold = 1;
        while (!p->stop && s->done_units < s->next_unit) pthread_cond_wait(&p->cv_ready, &p->mu);
        int stopped = p->stop;
        if (stopped) s->hold = 0;
        pthread_mutex_unlock(&p->mu);
        if (stopped) return baton_err_set(err, BATON_ERR_ARG, "pipeline: stopped");
    }
    int rc = arena_grow(s, extra, err);
    if (s->open) {
        pthread_mutex_lock(&p->mu);
        s->hold = 0;
        pthread_cond_broadcast(&p->cv_work);
        pthread_mutex_unlock(&p->mu);
    }
    return rc;
}

enum { READ_DONE, READ_ENDED, READ_STOPPED, READ_FAILED };

/* Queue s with fresh unit counters, nunits units to do (caller holds mu; room was reserved with
 * the slot). */
static void queue_slot(baton_pipeline *p, slot *s, uint32_t nunits)
{
    s->nunits = nunits;
    s->next_unit = s->done_units = 0;
    s->err_code = 0;
    s->err_index = UINT32_MAX;
    q_push(p, s, Q_BATCH);
}

/* The first n records of s are in: queue s (the first time) and offer its full units. */
static void offer_units(baton_pipeline *p, slot *s, uint32_t n)
{
    pthread_mutex_lock(&p->mu);
    if (!s->open) {
        s->open = 1;
        queue_slot(p, s, UINT32_MAX);   /* the count is known once the batch is complete */
    }
    s->avail = n;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}

/* The records of the batch [*pos, end) into s (another rank's read past, not kept): n kept, total
 * read. READ_DONE when the batch is whole; READ_ENDED when the loader ended first (fewer records
 * than its epoch size said; *pos is where); READ_STOPPED when the pipeline stops; READ_FAILED
 * with err set. */
static int read_batch(baton_pipeline *p, slot *s, uint64_t *pos, uint64_t end, uint32_t *n, uint32_t *total,
                      baton_err *err)
{
    const uint64_t bstart = *pos / p->o.batch * p->o.batch;
    *n = *total = 0;
    s->arena_len = 0;
    while (*pos < end) {
        if (atomic_load_explicit(&p->stop_flag, memory_order_relaxed)) return READ_STOPPED;
        baton_record r;
        int mine = p->o.part_world <= 1 || (*pos - bstart) % p->o.part_world == p->o.part_rank;
        int rc = mine ? baton_loader_next(p->l, &r, err) : baton_loader_skip(p->l, &r, err);
        if (rc == BATON_END) return READ_ENDED;
        if (rc == BATON_OK && r.position != *pos)
            rc = baton_err_set(err, BATON_ERR_ARG, "loader: record at position %llu, expected %llu",
                               (unsigned long long)r.position, (unsigned long long)*pos);
        if (rc == BATON_OK && mine) rc = arena_fit(p, s, r.len, err);
        if (rc != BATON_OK) return READ_FAILED;
        (*total)++;
        if (mine) {
            if (r.len) memcpy(s->arena + s->arena_len, r.data, r.len);
            s->rec_at[*n] = s->arena_len;
            s->rec_len[*n] = r.len;
            s->shard[*n] = r.shard;
            s->offset[*n] = r.offset;
            s->pos[*n] = *pos;
            s->arena_len += r.len;
            (*n)++;
            if (*n % UNIT == 0) offer_units(p, s, *n);
        }
        (*pos)++;
    }
    return READ_DONE;
}

/* Hand the slot's batch to the workers (or back to the free list when it is to be dropped), and
 * an END marker after it when the loader ended the epoch early. */
static void publish_batch(baton_pipeline *p, slot *s, int drop, int got_end)
{
    pthread_mutex_lock(&p->mu);
    if (s->open) {  /* queued already: complete it (or mark it to be discarded once its units end) */
        s->open = 0;
        s->dropped = drop;
        s->nunits = drop ? s->next_unit : (s->b.n + UNIT - 1) / UNIT;
        s->avail = s->b.n;
        pthread_cond_broadcast(&p->cv_work);
        pthread_cond_broadcast(&p->cv_ready);
    } else if (drop) {
        p->free_list[p->nfree++] = s;
    } else {
        s->avail = s->b.n;
        queue_slot(p, s, (s->b.n + UNIT - 1) / UNIT);
        pthread_cond_broadcast(&p->cv_work);
    }
    if (got_end) q_push(p, NULL, Q_END);  /* room was reserved with the slot */
    if (s->first && (drop || s->done_units == s->nunits)) p->first_done = 1;   /* nothing (more) to wait for */
    pthread_mutex_unlock(&p->mu);
}

/* A batch the reader could not finish (failed or stopped): a slot not yet queued goes back to
 * the free list; one queued early is discarded once its claimed units end. */
static void abandon_batch(baton_pipeline *p, slot *s)
{
    pthread_mutex_lock(&p->mu);
    if (s->open) {
        s->open = 0;
        s->dropped = 1;
        s->nunits = s->next_unit;
        pthread_cond_broadcast(&p->cv_ready);
    } else {
        p->free_list[p->nfree++] = s;
    }
    pthread_mutex_unlock(&p->mu);
}

/* The epoch's tail: nothing (more) to deliver; read up to the loader's END, then queue an END
 * marker. 0 to go on, -1 to stop (failed or stopped). */
static int read_tail(baton_pipeline *p, baton_err *err)
{
    baton_record r;
    int rc;
    while ((rc = baton_loader_next(p->l, &r, err)) == BATON_OK)
        if (atomic_load_explicit(&p->stop_flag, memory_order_relaxed)) return -1;
    if (rc != BATON_END) {
        reader_fail(p, err);
        return -1;
    }
    return reader_push_marker(p, Q_END) ? 0 : -1;
}

/* After the first batch is published: wait until it is decoded (the workers have the cores to
 * themselves meanwhile), then let the loader read ahead. 0 to go on, -1 to stop. */
static int launch_done(baton_pipeline *p, baton_err *err)
{
    pthread_mutex_lock(&p->mu);
    while (!p->first_done && !p->stop) pthread_cond_wait(&p->cv_ready, &p->mu);
    int stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (stop) return -1;
    if (baton_loader_hold_ahead(p->l, 0, err) == BATON_OK) return 0;
    reader_fail(p, err);
    return -1;
}

static void *reader_main(void *arg)
{
    baton_pipeline *p = arg;
    baton_err err = {0};
    const uint64_t B = p->o.batch;
    int launching = 1;   /* the first batch: decoded before the loader reads ahead (launch time) */
    baton_loader_hold_ahead(p->l, 1, &err);   /* holding cannot fail */
    if (p->o.start && baton_loader_seek(p->l, &p->start, &err) != BATON_OK) {   /* may stream: not the caller's wait */
        reader_fail(p, &err);
        return NULL;
    }
    baton_cursor cur = baton_loader_cursor(p->l);
    uint64_t epoch = cur.epoch, pos = cur.position, size = baton_loader_epoch_size(p->l);
    while (!atomic_load_explicit(&p->stop_flag, memory_order_relaxed)) {
        int ended = pos >= size || (p->o.drop_last && (pos / B + 1) * B > size);
        if (!ended) {
            slot *s = reader_take_slot(p);
            if (!s) return NULL;
            uint64_t end = (pos / B + 1) * B < size ? (pos / B + 1) * B : size, first = pos;
            uint32_t n, total;
            s->b.epoch = epoch;   /* the workers' draws need it before the batch is complete */
            s->open = s->hold = s->dropped = 0;
            s->first = launching;
            s->avail = 0;
            int rc = read_batch(p, s, &pos, end, &n, &total, &err);
            if (rc == READ_STOPPED || rc == READ_FAILED) {
                abandon_batch(p, s);
                if (rc == READ_FAILED) reader_fail(p, &err);
                return NULL;
            }
            int got_end = rc == READ_ENDED;
            if (got_end) size = pos;
            int last = pos == size || (p->o.drop_last && (pos + B > size));
            baton_batch *b = &s->b;
            b->n = n;
            b->total = total;
            b->pos = s->pos;   /* b->epoch was set before the read: the workers may be reading it */
            b->first = first;
            b->last_of_epoch = last;
            b->next = last ? (baton_cursor){p->seed, epoch + 1, 0} : (baton_cursor){p->seed, epoch, pos};
            publish_batch(p, s, total == 0 || (p->o.drop_last && got_end && pos % B != 0), got_end);
            if (launching) {
                launching = 0;
                if (launch_done(p, &err)) return NULL;
            }
            if (!got_end) continue;
        } else if (read_tail(p, &err)) {
            return NULL;
        }
        cur = baton_loader_cursor(p->l);   /* the next epoch */
        epoch = cur.epoch;
        pos = cur.position;
        size = baton_loader_epoch_size(p->l);
    }
    return NULL;
}

/* ---------------------------------------------------------------- workers */

int img_label_ok(float lab, uint32_t classes)
{
    return lab >= 0.0f && lab == floorf(lab) && lab <= 2147483647.0f && !(classes && lab >= (float)classes);
}

/* A worker's decode buffers: the whole image (NONE, PAD), the crop's output, the region decoder's. */
typedef struct work_buf {
    baton_image im, cropped;
    img_scratch sc;
} work_buf;

/* The plan region.c calls once the header gave the image's size: the sample's box and flip. */
typedef struct plan_ctx {
    const baton_pipeline *p;
    uint64_t epoch, position;
    int flip;
} plan_ctx;

static int plan_box(void *arg, uint32_t h, uint32_t w, double box[4], baton_err *err)
{
    plan_ctx *c = arg;
    baton_crop_draw d;
    baton_crop_draw_for(&c->p->o, c->p->seed, c->epoch, c->position, h, w, &d);
    memcpy(box, d.box, sizeof d.box);
    c->flip = d.flip;
    return BATON_OK;
}

/* Decode sample i into wb: its image at the batch's size, and the augmentation still to apply. */
static int decode_sample(baton_pipeline *p, slot *s, uint32_t i, const baton_sample *smp, work_buf *wb,
                         const baton_image **im, baton_augment *a, baton_err *err)
{
    baton_encoding enc = p->enc != BATON_ENC_UNKNOWN ? p->enc : smp->encoding;
    const uint32_t *expect = p->shape[0] ? p->shape : NULL;
    if (p->crops) {
        plan_ctx c = {p, s->b.epoch, s->pos[i], 0};
        int rc = (p->o.reference ? img_decode_crop_ref : img_decode_crop)(smp->img, smp->img_len, enc, expect, p->out[2],
                                                                          plan_box, &c, p->out[0], p->out[1], &wb->sc,
                                                                          &wb->cropped, NULL, NULL, err);
        if (rc) return rc;
        *a = (baton_augment){0, 0, c.flip};
        *im = &wb->cropped;
        return BATON_OK;
    }
    int rc = baton_img_decode(smp->img, smp->img_len, enc, p->shape, &wb->im, err);
    if (rc) return rc;
    if (wb->im.h != p->shape[0] || wb->im.w != p->shape[1] || wb->im.c != p->shape[2])
        return baton_err_set(err, BATON_ERR_FORMAT, "%ux%ux%u image, expected %ux%ux%u", wb->im.h, wb->im.w,
                             wb->im.c, p->shape[0], p->shape[1], p->shape[2]);
    uint32_t pad = p->o.crop == BATON_CROP_PAD && !p->o.crop_pad ? 4 : p->o.crop_pad;
    img_augment_draw(p->seed, s->b.epoch, s->pos[i], pad, p->o.flip, a);
    *im = &wb->im;
    return BATON_OK;
}

/* Parse, check, decode, augment sample i of slot s. */
static int do_sample(baton_pipeline *p, slot *s, uint32_t i, work_buf *wb, baton_err *err)
{
    const char *file = p->m->shards[s->shard[i]].file;
    unsigned long long off = (unsigned long long)s->offset[i];
    baton_sample smp;
    int rc = baton_sample_parse(p->m->format, s->arena + s->rec_at[i], s->rec_len[i], file,
                                s->offset[i], &smp, err);
    if (rc) return rc;
    float lab = smp.label;
    if (!img_label_ok(lab, p->m->classes))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: offset %llu: label %g is not a class in [0, %u)",
                             file, off, (double)lab, p->m->classes);
    const baton_image *im = NULL;
    baton_augment a;
    rc = decode_sample(p, s, i, &smp, wb, &im, &a, err);
    if (rc) {
        baton_err_prefix(err, "%s: offset %llu", file, off);
        return rc;
    }
    if (p->o.u8)
        img_augment_apply_u8(im, &a, p->o.layout, s->b.x8 + (size_t)i * p->sample_floats);
    else if (p->o.reference)
        img_augment_apply_ref(im, &a, p->mean, p->std, p->o.layout, s->b.x + (size_t)i * p->sample_floats);
    else
        img_augment_apply_lut(im, &a, &p->lut, p->o.layout, s->b.x + (size_t)i * p->sample_floats);
    s->b.y[i] = (int32_t)lab;
    return BATON_OK;
}

/* A unit of s may be claimed (caller holds mu): a full offered one while the reader fills s, any
 * left once it is complete; none while the reader holds s to move its arena. */
static int claimable(const slot *s)
{
    if (s->hold) return 0;
    if (s->open) return (uint64_t)(s->next_unit + 1) * UNIT <= s->avail;
    return s->next_unit < s->nunits;
}

static void *worker_main(void *arg)
{
    baton_pipeline *p = arg;
    work_buf wb = {0};
    baton_err err = {0};
    pthread_mutex_lock(&p->mu);
    for (;;) {
        slot *s = NULL;
        while (!p->stop) {
            for (uint32_t k = 0; k < p->qlen; k++) {
                qent *e = &p->q[(p->qhead + k) % p->qcap];
                if (e->kind == Q_BATCH && claimable(e->s)) {
                    s = e->s;
                    break;
                }
            }
            if (s) break;
            pthread_cond_wait(&p->cv_work, &p->mu);
        }
        if (!s) break;
        uint32_t u = s->next_unit++;
        uint32_t lo = u * UNIT, hi = lo + UNIT < s->avail ? lo + UNIT : s->avail, bad = UINT32_MAX;
        pthread_mutex_unlock(&p->mu);

        int rc = BATON_OK;
        for (uint32_t i = lo; i < hi; i++) {
            rc = do_sample(p, s, i, &wb, &err);
            if (rc) {
                bad = i;
                break;
            }
        }

        pthread_mutex_lock(&p->mu);
        if (rc && bad < s->err_index) {
            s->err_index = bad;
            s->err_code = rc < 0 ? rc : BATON_ERR_FORMAT;
            s->err = err;
        }
        if (++s->done_units == s->nunits && s->first) p->first_done = 1;
        if (s->done_units == s->nunits || s->hold) pthread_cond_broadcast(&p->cv_ready);
    }
    pthread_mutex_unlock(&p->mu);
    baton_image_free(&wb.im);
    baton_image_free(&wb.cropped);
    img_scratch_free(&wb.sc);
    return NULL;
}

/* ---------------------------------------------------------------- caller side */

/* next with a deadline (CLOCK_REALTIME; NULL: none): BATON_NEED_MORE when it passes first */
static int next_until(baton_pipeline *p, baton_batch **b, const struct timespec *deadline, baton_err *err)
{
    *b = NULL;
    pthread_mutex_lock(&p->mu);
    int rc;
    for (;;) {
        if (p->sticky) {
            if (err) *err = p->sticky_err;
            rc = p->sticky_err.code;
            break;
        }
        if (p->stop) {
            rc = baton_err_set(err, BATON_ERR_ARG, "pipeline: stopped");
            break;
        }
        if (p->qlen > 0) {
            qent e = p->q[p->qhead];
            if (e.kind == Q_END) {
                q_pop(p);
                rc = BATON_END;
                break;
            }
            if (e.kind == Q_ERR) {
                q_pop(p);
                p->sticky = 1;
                p->sticky_err = p->reader_err;
                continue;
            }
            slot *s = e.s;
            if (!s->open && s->done_units == s->nunits) {
                q_pop(p);
                if (s->dropped) {  /* queued early, then abandoned or dropped by the reader */
                    s->dropped = 0;
                    p->free_list[p->nfree++] = s;
                    pthread_cond_signal(&p->cv_reader);
                    continue;
                }
                if (s->err_code) {
                    p->sticky = 1;
                    p->sticky_err = s->err;
                    p->sticky_err.code = s->err_code;
                    p->free_list[p->nfree++] = s;
                    continue;
                }
                p->held++;
                s->out = 1;
                *b = &s->b;
                rc = BATON_OK;
                break;
            }
        } else if (p->held >= p->nslots) {
            rc = baton_err_set(err, BATON_ERR_ARG,
                               "pipeline: all %u batches are held by the caller; release one first",
                               p->nslots);
            break;
        }
        if (!deadline) {
            pthread_cond_wait(&p->cv_ready, &p->mu);
        } else if (pthread_cond_timedwait(&p->cv_ready, &p->mu, deadline) == ETIMEDOUT) {
            rc = BATON_NEED_MORE;
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* The batch handed over, to BATON_VERIFY_LOG: its epoch, first position, sample count and a digest
 * of its samples (each one's epoch position, shard and byte offset: which records it holds). */
static void log_batch(const baton_pipeline *p, const baton_batch *b)
{
    if (p->unlogged || !baton_verify_log_on()) return;
    const slot *s = b->priv_;
    uint64_t h = 0x6261746f6e626174ull ^ b->epoch;
    for (uint32_t i = 0; i < b->n; i++) {
        uint64_t v[3] = {s->pos[i], s->shard[i], s->offset[i]};
        for (int k = 0; k < 3; k++) {   /* splitmix64's finaliser over the running value */
            uint64_t z = (h ^ v[k]) + 0x9e3779b97f4a7c15ull;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            h = z ^ (z >> 31);
        }
    }
    baton_verify_log_batch(b->epoch, b->first, b->n, h);
}

void baton_pipeline_set_logged(baton_pipeline *p, int on)
{
    if (p) p->unlogged = !on;
}

int baton_pipeline_next(baton_pipeline *p, baton_batch **b, baton_err *err)
{
    int rc = next_until(p, b, NULL, err);
    if (rc == BATON_OK) log_batch(p, *b);
    return rc;
}

int baton_pipeline_next_timed(baton_pipeline *p, baton_batch **b, double timeout_s, baton_err *err)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (!(timeout_s > 0)) timeout_s = 0;
    if (timeout_s > 86400) timeout_s = 86400;
    long long ns = (long long)ts.tv_nsec + (long long)((timeout_s - floor(timeout_s)) * 1e9);
    ts.tv_sec += (time_t)floor(timeout_s) + (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    int rc = next_until(p, b, &ts, err);
    if (rc == BATON_OK) log_batch(p, *b);
    return rc;
}

void baton_pipeline_release(baton_pipeline *p, baton_batch *b)
{
    if (!p || !b) return;
    slot *s = b->priv_;
    if (s < p->slots || s >= p->slots + p->nslots) return;  /* not one of ours */
    pthread_mutex_lock(&p->mu);
    if (!s->out) {  /* released twice: ignore */
        pthread_mutex_unlock(&p->mu);
        return;
    }
    s->out = 0;
    p->held--;
    p->free_list[p->nfree++] = s;
    pthread_cond_signal(&p->cv_reader);
    pthread_mutex_unlock(&p->mu);
}

void baton_pipeline_stop(baton_pipeline *p)
{
    if (!p) return;
    if (p->mu_ok && p->cv_ok) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        atomic_store(&p->stop_flag, 1);
        pthread_cond_broadcast(&p->cv_reader);
        pthread_cond_broadcast(&p->cv_work);
        pthread_cond_broadcast(&p->cv_ready);
        pthread_mutex_unlock(&p->mu);
    }
    if (p->reader_started) pthread_join(p->reader, NULL);
    for (int i = 0; i < p->nworkers; i++) pthread_join(p->workers[i], NULL);
    p->reader_started = 0;
    p->nworkers = 0;
}

void baton_pipeline_close(baton_pipeline *p)
{
    if (!p) return;
    baton_pipeline_stop(p);
    for (uint32_t i = 0; p->slots && i < p->nslots; i++) {
        slot *s = &p->slots[i];
        baton_bigmem_free(s->b.x ? (void *)s->b.x : (void *)s->b.x8, s->xalloc);
        free(s->b.y);
        baton_bigmem_free(s->arena, s->arena_cap);
        free(s->rec_at);
        free(s->pos);
        free(s->rec_len);
        free(s->shard);
        free(s->offset);
    }
    if (p->cv_ok) {
        pthread_cond_destroy(&p->cv_reader);
        pthread_cond_destroy(&p->cv_work);
        pthread_cond_destroy(&p->cv_ready);
    }
    if (p->mu_ok) pthread_mutex_destroy(&p->mu);
    free(p->slots);
    free(p->free_list);
    free(p->q);
    free(p->workers);
    free(p);
}

/* A first guess at each batch's payload bytes (arenas grow on demand if records are larger). */
static size_t arena_guess(const baton_manifest *m, uint32_t batch)
{
    uint64_t bytes = 0;
    for (size_t s = 0; s < m->nshards; s++) bytes += m->shards[s].bytes;
    uint64_t per = m->samples ? bytes / m->samples + 64 : 4096;
    uint64_t guess = per * batch + per * batch / 4;
    return guess > ((uint64_t)256 << 20) ? ((size_t)256 << 20) : (size_t)guess;
}

/* The depth's batch slots, each with its batch buffer of xbytes and an arena of arena0 bytes,
 * all on the free list. */
static int alloc_slots(baton_pipeline *p, size_t xbytes, size_t arena0, baton_err *err)
{
    const baton_pipeline_opts *o = &p->o;
    p->nslots = o->depth;
    p->qcap = 2 * o->depth + 2;
    p->slots = calloc(p->nslots, sizeof *p->slots);
    p->free_list = calloc(p->nslots, sizeof *p->free_list);
    p->q = calloc(p->qcap, sizeof *p->q);
    p->workers = calloc((size_t)o->workers, sizeof *p->workers);
    int rc = !p->slots || !p->free_list || !p->q || !p->workers ? BATON_ERR_NOMEM : BATON_OK;
    for (uint32_t i = 0; rc == BATON_OK && i < p->nslots; i++) {
        slot *s = &p->slots[i];
        size_t xalloc = (xbytes + 63) / 64 * 64;
        void *x = baton_bigmem_alloc(xalloc);
        s->xalloc = xalloc;
        if (o->u8) s->b.x8 = x;
        else s->b.x = x;
        s->b.y = calloc(o->batch, sizeof *s->b.y);
        s->rec_at = calloc(o->batch, sizeof *s->rec_at);
        s->pos = calloc(o->batch, sizeof *s->pos);
        s->rec_len = calloc(o->batch, sizeof *s->rec_len);
        s->shard = calloc(o->batch, sizeof *s->shard);
        s->offset = calloc(o->batch, sizeof *s->offset);
        s->arena = baton_bigmem_alloc(arena0 ? arena0 : 1);   /* huge pages advised, as x */
        s->arena_cap = arena0 ? arena0 : 1;
        if (!x || !s->b.y || !s->rec_at || !s->pos || !s->rec_len || !s->shard || !s->offset || !s->arena) {
            rc = BATON_ERR_NOMEM;
            break;
        }
        /* from the kernel, not written here: every sample writes all its pixels, and a batch's
         * tail past n is never handed out, so the pages are touched by the workers that fill them
         * (no 300 MB memset before the first batch of 224-px crops), with huge pages advised: a
         * batch of 128 such crops is 77 MB, 19,000 first-touch faults at 4 KiB (0.4 CPU-s of a
         * 2,507-image epoch on a virtual machine, bench/RESULTS.md §16). The sanitizer build
         * fills them with a pattern, so a pixel a sample forgets to write shows in its tests'
         * results. */
#if defined(__SANITIZE_ADDRESS__)
        memset(x, 0xa5, xalloc ? xalloc : 64);
#endif
        s->b.c = p->out[2];
        s->b.h = p->out[0];
        s->b.w = p->out[1];
        s->b.layout = o->layout;
        s->b.priv_ = s;
        p->free_list[p->nfree++] = s;
    }
    if (rc)
        return baton_err_set(err, BATON_ERR_NOMEM, "pipeline: out of memory for %u batches of %zu bytes", p->nslots,
                             xbytes);
    return BATON_OK;
}

/* The lock, the condition variables, the workers and the reader (baton_pipeline_close undoes
 * whatever of them was made). */
static int start_threads(baton_pipeline *p, baton_err *err)
{
    if (pthread_mutex_init(&p->mu, NULL) != 0) return baton_err_set(err, BATON_ERR_NOMEM, "pipeline: cannot create a mutex");
    p->mu_ok = 1;
    if (pthread_cond_init(&p->cv_reader, NULL) != 0 || pthread_cond_init(&p->cv_work, NULL) != 0 ||
        pthread_cond_init(&p->cv_ready, NULL) != 0)   /* a failed init leaves nothing to destroy on Linux */
        return baton_err_set(err, BATON_ERR_NOMEM, "pipeline: cannot create condition variables");
    p->cv_ok = 1;
    for (int i = 0; i < p->o.workers; i++) {
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0)
            return baton_err_set(err, BATON_ERR_NOMEM, "pipeline: cannot start worker thread %d", i);
        p->nworkers++;
    }
    if (pthread_create(&p->reader, NULL, reader_main, p) != 0)
        return baton_err_set(err, BATON_ERR_NOMEM, "pipeline: cannot start the reader thread");
    p->reader_started = 1;
    return BATON_OK;
}

baton_pipeline *baton_pipeline_open(baton_loader *l, const baton_pipeline_opts *o, baton_err *err)
{
    baton_pipeline_opts def;
    if (!o) {
        baton_pipeline_opts_default(&def);
        o = &def;
    }
    if (!l) {
        baton_err_set(err, BATON_ERR_ARG, "pipeline: no loader");
        return NULL;
    }
    const baton_manifest *m = baton_loader_manifest(l);
    if (img_pipeline_check_opts(m, o, err)) return NULL;
    uint32_t out[3];
    baton_pipeline_shape(m, o->crop, o->size, out);   /* checked by img_pipeline_check_opts */
    int crops = o->crop == BATON_CROP_RANDOM_RESIZED || o->crop == BATON_CROP_CENTER;
    size_t px = (size_t)out[0] * out[1], sample, xbytes;
    if (__builtin_mul_overflow(px, (size_t)out[2], &sample) ||
        __builtin_mul_overflow(sample, (size_t)o->batch * (o->u8 ? 1 : sizeof(float)), &xbytes)) {
        baton_err_set(err, BATON_ERR_ARG, "pipeline: batch of %u %ux%ux%u images is too large",
                      o->batch, out[0], out[1], out[2]);
        return NULL;
    }

    baton_pipeline *p = calloc(1, sizeof *p);
    if (!p) {
        baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        return NULL;
    }
    p->l = l;
    p->m = m;
    p->o = *o;
    p->seed = baton_loader_cursor(l).seed;
    if (o->start) p->start = *o->start;
    memcpy(p->shape, m->shape, sizeof p->shape);
    memcpy(p->out, out, sizeof p->out);
    p->crops = crops;
    p->sample_floats = sample;
    p->enc = m->encoding;
    for (int k = 0; k < 4; k++) {
        p->mean[k] = o->mean && k < (int)out[2] ? o->mean[k] : m->mean[k];
        p->std[k] = o->std && k < (int)out[2] ? o->std[k] : m->std[k];
    }
    img_norm_lut_init(&p->lut, out[2], p->mean, p->std);
    atomic_init(&p->stop_flag, 0);

    if (alloc_slots(p, xbytes, arena_guess(m, o->batch), err) || start_threads(p, err)) {
        baton_pipeline_close(p);
        return NULL;
    }
    return p;
}
