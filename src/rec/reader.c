/* reader.c — baton_rec_reader, the push parser that turns a byte stream (any chunking) into
 * whole records of either format.
 *
 * Owns one growable buffer: bytes [start, end) are fed but not yet consumed; `pos` is the stream
 * offset of buf[start]. Bytes arrive by copy (_feed) or are written straight into the buffer
 * (_reserve/_commit, what baton_rec_file does with read()). _next parses in place: a whole record
 * comes back as a pointer into the buffer (zero-copy); multi-part RecordIO records are joined in
 * a scratch buffer. Both stay valid until the next call on the reader. The buffer is compacted or
 * grown only when bytes are added, and it is kept at most two-thirds full after compaction, so
 * each byte is moved O(1) times on average whatever the chunk sizes; once it has grown to fit the
 * largest record, the reader stops allocating.
 *
 * Lent bytes (_feed_ref): the caller's memory [ref_start, ref_end) follows the buffer in the
 * stream. While the buffer holds a partial record, just the bytes that record needs are moved
 * from the front of the lent region to the buffer; once the buffer is empty, records are parsed
 * straight from the lent memory; when the rest of it is an incomplete record, that tail is copied
 * to the buffer before _next says NEED_MORE — so a streamed chunk is copied only at its edges, and
 * the caller may reuse its memory after NEED_MORE (or END / an error). Any other way of adding
 * bytes first copies what is left of a lent region.
 *
 * Contract (rec.h): _next returns OK, NEED_MORE, END (clean end after _finish) or an error;
 * errors are sticky (same code and message on every later call); the optional checksum is a
 * CRC32C of every byte fed after it was enabled; _position is always a record boundary, so a new
 * reader created with that start_offset and fed from there continues exactly. With
 * BATON_FMT_UNKNOWN the format is detected from the first bytes; an empty stream of unknown format
 * is then an error ("empty file"), since nothing says what it is. */
#include "rec_internal.h"

#include <stdlib.h>
#include <string.h>

#define READER_MIN_CAP ((size_t)64 << 10)

struct baton_rec_reader {
    baton_rec_format fmt;
    char *name;
    uint8_t *buf;
    size_t cap, start, end;
    uint64_t pos;       /* stream offset of buf[start] */
    uint64_t fed;       /* bytes fed in total */
    size_t need;        /* do not re-parse before end - start reaches this */
    int finished;
    int checksum;
    uint32_t crc;
    int borrowed;       /* buf is the caller's memory (baton_rec_reader_borrow) */
    size_t crc_done;    /* borrowed: bytes of buf already in crc */
    const uint8_t *ref; /* lent by _feed_ref: ref[ref_start, ref_end) not consumed yet, after buf's */
    size_t ref_start, ref_end;   /* equal: nothing lent */
    int err_code;       /* sticky error, 0 when none */
    baton_err sticky;
    baton_buf scratch;
};

baton_rec_reader *baton_rec_reader_new(baton_rec_format fmt, const char *name,
                                       uint64_t start_offset)
{
    baton_rec_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->name = strdup(name ? name : "stream");
    if (!r->name) {
        free(r);
        return NULL;
    }
    r->pos = start_offset;
    r->fmt = fmt;
    if (fmt != BATON_FMT_UNKNOWN && fmt != BATON_FMT_RECORDIO && fmt != BATON_FMT_TFRECORD) {
        r->fmt = BATON_FMT_UNKNOWN;
        r->err_code = baton_err_set(&r->sticky, BATON_ERR_ARG, "%s: record format %d is unknown",
                                    r->name, (int)fmt);
    }
    return r;
}

void baton_rec_reader_free(baton_rec_reader *r)
{
    if (!r) return;
    if (!r->borrowed) free(r->buf);
    free(r->name);
    baton_buf_free(&r->scratch);
    free(r);
}

baton_rec_format baton_rec_reader_format(const baton_rec_reader *r) { return r->fmt; }

void baton_rec_reader_enable_checksum(baton_rec_reader *r)
{
    if (!r->checksum) r->crc = 0;
    r->checksum = 1;
}

uint32_t baton_rec_reader_checksum(const baton_rec_reader *r) { return r->crc; }
uint64_t baton_rec_reader_fed(const baton_rec_reader *r) { return r->fed; }
uint64_t baton_rec_reader_position(const baton_rec_reader *r) { return r->pos; }

static int sticky(baton_rec_reader *r, baton_err *err)
{
    if (err && err != &r->sticky) *err = r->sticky;
    return r->err_code;
}

static int fail(baton_rec_reader *r, int code, baton_err *err)
{
    r->err_code = code;
    r->sticky.code = code;
    return sticky(r, err);
}

/* room for min more bytes at buf + end (compacting or growing the buffer) */
static int make_room(baton_rec_reader *r, size_t min, baton_err *err)
{
    if (min == 0) min = 1;
    if (r->cap - r->end < min) {
        size_t live = r->end - r->start;
        size_t ncap = r->cap > READER_MIN_CAP ? r->cap : READER_MIN_CAP;
        if (min > SIZE_MAX / 4 || live > SIZE_MAX / 4)
            return baton_err_set(err, BATON_ERR_NOMEM, "%s: buffer of %zu + %zu bytes too large",
                                 r->name, live, min);
        /* after compaction: room for min more, and at most two-thirds full */
        while (ncap < live + min || ncap - live < live / 2) ncap *= 2;
        if (ncap == r->cap) {
            if (live) memmove(r->buf, r->buf + r->start, live);
        } else {
            uint8_t *nb = malloc(ncap);
            if (!nb)
                return baton_err_set(err, BATON_ERR_NOMEM,
                                     "%s: out of memory growing the read buffer to %zu bytes",
                                     r->name, ncap);
            if (live) memcpy(nb, r->buf + r->start, live);
            free(r->buf);
            r->buf = nb;
            r->cap = ncap;
        }
        r->start = 0;
        r->end = live;
    }
    return BATON_OK;
}

/* move n bytes from the front of the lent region to the buffer's end (already in the CRC) */
static int take_ref(baton_rec_reader *r, size_t n, baton_err *err)
{
    if (n == 0) return BATON_OK;
    int rc = make_room(r, n, err);
    if (rc) return rc;
    memcpy(r->buf + r->end, r->ref + r->ref_start, n);
    r->end += n;
    r->ref_start += n;
    return BATON_OK;
}

/* copy what is left of a lent region before bytes are added some other way */
static int unref(baton_rec_reader *r, baton_err *err)
{
    return take_ref(r, r->ref_end - r->ref_start, err);
}

int baton_rec_reader_reserve(baton_rec_reader *r, size_t min, uint8_t **p, size_t *cap,
                             baton_err *err)
{
    if (r->finished)
        return baton_err_set(err, BATON_ERR_ARG, "%s: bytes offered after the end of input",
                             r->name);
    if (r->err_code) {   /* nothing more will be parsed: drop it */
        r->start = r->end = 0;
        r->ref_start = r->ref_end;
    }
    int rc = unref(r, err);
    if (rc == BATON_OK) rc = make_room(r, min, err);
    if (rc) return rc;
    *p = r->buf + r->end;
    *cap = r->cap - r->end;
    return BATON_OK;
}

void baton_rec_reader_commit(baton_rec_reader *r, size_t n)
{
    if (r->finished) return;
    if (n > r->cap - r->end) n = r->cap - r->end;   /* never past what was reserved */
    if (n == 0) return;
    if (r->checksum) r->crc = baton_crc32c(r->crc, r->buf + r->end, n);
    r->end += n;
    r->fed += n;
}

int baton_rec_reader_feed(baton_rec_reader *r, const void *p, size_t n, baton_err *err)
{
    if (n == 0) return BATON_OK;
    uint8_t *dst;
    size_t room;
    int rc = baton_rec_reader_reserve(r, n, &dst, &room, err);
    if (rc) return rc;
    memcpy(dst, p, n);
    baton_rec_reader_commit(r, n);
    return BATON_OK;
}

int baton_rec_reader_feed_ref(baton_rec_reader *r, const void *p, size_t n, baton_err *err)
{
    if (r->fmt == BATON_FMT_UNKNOWN || r->borrowed) return baton_rec_reader_feed(r, p, n, err);
    if (n == 0) return BATON_OK;
    if (r->finished)
        return baton_err_set(err, BATON_ERR_ARG, "%s: bytes offered after the end of input",
                             r->name);
    if (r->err_code) return BATON_OK;   /* nothing more will be parsed */
    int rc = unref(r, err);
    if (rc) return rc;
    if (r->checksum) r->crc = baton_crc32c(r->crc, p, n);
    r->fed += n;
    r->ref = p;
    r->ref_start = 0;
    r->ref_end = n;
    return BATON_OK;
}

void baton_rec_reader_finish(baton_rec_reader *r) { r->finished = 1; }

int baton_rec_reader_borrow(baton_rec_reader *r, const void *p, size_t n, baton_err *err)
{
    if (r->fed || r->finished || r->buf)
        return baton_err_set(err, BATON_ERR_ARG, "%s: borrow needs a fresh reader", r->name);
    r->buf = (uint8_t *)(uintptr_t)p;  /* never written: reserve refuses a finished reader */
    r->borrowed = 1;
    r->cap = r->end = n;
    r->start = r->crc_done = 0;
    r->fed = n;
    r->finished = 1;
    return BATON_OK;
}

/* Borrowed input: the CRC runs a window ahead of the parser (256 KiB at a time), so the bytes the
 * parser touches next are already in cache; at the end (or on an error) it covers everything. */
#define BORROW_CRC_WINDOW ((size_t)256 << 10)
static void borrowed_crc(baton_rec_reader *r, int all)
{
    if (!r->checksum || r->crc_done == r->end) return;
    if (!all && r->crc_done >= r->start + BORROW_CRC_WINDOW / 4) return;
    size_t upto = all || r->end - r->crc_done < BORROW_CRC_WINDOW ? r->end : r->crc_done + BORROW_CRC_WINDOW;
    r->crc = baton_crc32c(r->crc, r->buf + r->crc_done, upto - r->crc_done);
    r->crc_done = upto;
}

int rec_reader_detect(baton_rec_reader *r, baton_err *err)
{
    if (r->err_code) return sticky(r, err);
    if (r->fmt != BATON_FMT_UNKNOWN) return BATON_OK;
    size_t avail = r->end - r->start;
    baton_rec_format f;
    int rc = rec_detect_at(r->buf ? r->buf + r->start : (const uint8_t *)"", avail, r->name,
                           r->pos, &f, &r->sticky);
    if (rc == BATON_OK) {
        r->fmt = f;
        return BATON_OK;
    }
    if (rc == BATON_ERR_TRUNCATED && !r->finished) return BATON_NEED_MORE;
    return fail(r, rc, err);
}

/* one record from p[0, avail) (stream offset r->pos), the input final or not */
static int parse_at(baton_rec_reader *r, const uint8_t *p, size_t avail, int final, baton_rec *rec,
                    size_t *need)
{
    *need = 0;
    if (r->fmt == BATON_FMT_RECORDIO)
        return rec_recordio_parse(p, avail, r->pos, r->name, final, &r->scratch, rec, need, &r->sticky);
    return rec_tfrecord_parse(p, avail, r->pos, r->name, final, rec, need, &r->sticky);
}

/* _next with a lent region: the buffer (a partial record) first, completed from the lent bytes;
 * then records in place in the lent memory; its incomplete tail goes to the buffer */
static int next_lent(baton_rec_reader *r, baton_rec *rec, baton_err *err)
{
    for (;;) {
        const size_t live = r->end - r->start, lent = r->ref_end - r->ref_start;
        size_t need;
        int rc;
        if (lent == 0) return baton_rec_reader_next(r, rec, err);   /* all moved to the buffer */
        if (live == 0) {
            rc = parse_at(r, r->ref + r->ref_start, lent, r->finished, rec, &need);
            if (rc == BATON_OK) {
                r->ref_start += rec->size;
                r->pos += rec->size;
                return BATON_OK;
            }
            if (rc == BATON_NEED_MORE) {
                r->need = need;
                rc = take_ref(r, lent, &r->sticky);
                return rc ? fail(r, rc, err) : BATON_NEED_MORE;
            }
            r->ref_start = r->ref_end;
            return fail(r, rc, err);
        }
        if (live < r->need) {   /* what the partial record still needs, or all there is */
            rc = take_ref(r, r->need - live < lent ? r->need - live : lent, &r->sticky);
            if (rc) return fail(r, rc, err);
            continue;
        }
        rc = parse_at(r, r->buf + r->start, live, 0, rec, &need);   /* lent bytes follow: not final */
        if (rc == BATON_OK) {
            r->start += rec->size;
            r->pos += rec->size;
            r->need = 0;
            return BATON_OK;
        }
        if (rc != BATON_NEED_MORE) return fail(r, rc, err);
        r->need = need > live ? need : live + 1;   /* taken from the lent bytes next time round */
    }
}

int baton_rec_reader_next(baton_rec_reader *r, baton_rec *rec, baton_err *err)
{
    if (r->err_code) return sticky(r, err);
    if (r->fmt == BATON_FMT_UNKNOWN) {
        int rc = rec_reader_detect(r, err);
        if (rc != BATON_OK) return rc;
    }
    if (r->ref_start < r->ref_end) return next_lent(r, rec, err);
    size_t avail = r->end - r->start;
    if (r->borrowed) borrowed_crc(r, avail == 0);
    if (avail == 0) return r->finished ? BATON_END : BATON_NEED_MORE;
    if (!r->finished && avail < r->need) return BATON_NEED_MORE;
    size_t need = 0;
    int rc = parse_at(r, r->buf + r->start, avail, r->finished, rec, &need);
    if (rc == BATON_NEED_MORE) {
        r->need = need;
        return BATON_NEED_MORE;
    }
    if (rc < 0) {
        if (r->borrowed) borrowed_crc(r, 1);
        return fail(r, rc, err);
    }
    r->start += rec->size;
    r->pos += rec->size;
    r->need = 0;
    return BATON_OK;
}
