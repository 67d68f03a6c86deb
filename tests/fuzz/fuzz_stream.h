/* fuzz_stream.h — shared body of fuzz_recordio.c and fuzz_tfrecord.c: the input (after its first
 * byte, which picks the chunk size) is parsed twice, record by record from memory with
 * baton_rec_read_at and through the push reader fed in chunks (copied, and lent); all must agree on every record
 * and on the final status, position() must follow the records, and every payload goes through
 * baton_sample_parse. The input is also framed as one payload and must read back unchanged.
 * Any disagreement aborts (a libFuzzer crash). */
#ifndef BATON_FUZZ_STREAM_H
#define BATON_FUZZ_STREAM_H

#include "../../src/rec/rec_internal.h"
#include "baton/rec.h"

#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_RECS 4096

typedef struct fuzz_rec {
    uint64_t offset, size;
    size_t len;
    uint32_t crc;
} fuzz_rec;

static void fuzz_touch_sample(baton_rec_format fmt, const baton_rec *rec)
{
    baton_sample s;
    baton_err err;
    if (baton_sample_parse(fmt, rec->data, rec->len, "fuzz", rec->offset, &s, &err) != BATON_OK)
        return;
    volatile float sink = 0;
    for (uint32_t i = 0; i < s.nlabels && i < 16; i++) sink += baton_sample_label(&s, i);
    if (s.img_len) sink += s.img[s.img_len - 1];
    (void)sink;
}

/* The push reader fed in chunks of `chunk` bytes; lend: through feed_ref, each chunk in its own
 * allocation that is poisoned and freed once the reader has said NEED_MORE (a reader that kept a
 * pointer into it reads garbage, or the sanitizer stops it). Must agree with want[]. */
static void fuzz_push(baton_rec_format fmt, const uint8_t *data, size_t size, size_t chunk, int lend,
                      const fuzz_rec *want, size_t nwant, int complete, int want_rc)
{
    baton_err err;
    baton_rec rec;
    baton_rec_reader *r = baton_rec_reader_new(fmt, "fuzz", 0);
    if (!r) abort();
    baton_rec_reader_enable_checksum(r);
    size_t got = 0, fed = 0;
    uint8_t *lent = NULL;
    size_t lent_len = 0;
    int rc = BATON_NEED_MORE;
    for (;;) {
        while ((rc = baton_rec_reader_next(r, &rec, &err)) == BATON_OK) {
            if (got < nwant && (rec.offset != want[got].offset || rec.size != want[got].size ||
                                rec.len != want[got].len ||
                                baton_crc32c(0, rec.data, rec.len) != want[got].crc))
                abort();
            got++;
            if (baton_rec_reader_position(r) != rec.offset + rec.size) abort();
        }
        if (lent) {
            memset(lent, 0xa5, lent_len);
            free(lent);
            lent = NULL;
        }
        if (rc != BATON_NEED_MORE) break;
        if (fed == size) {
            baton_rec_reader_finish(r);
            continue;
        }
        size_t c = size - fed < chunk ? size - fed : chunk;
        if (lend) {
            if (!(lent = malloc(c))) abort();
            memcpy(lent, data + fed, c);
            lent_len = c;
            if (baton_rec_reader_feed_ref(r, lent, c, &err) != BATON_OK) abort();
        } else if (baton_rec_reader_feed(r, data + fed, c, &err) != BATON_OK) {
            abort();
        }
        fed += c;
    }
    if (complete && (got != nwant || rc != want_rc)) abort();
    if (rc == BATON_END && baton_rec_reader_checksum(r) != baton_crc32c(0, data, size)) abort();
    /* errors are sticky */
    if (rc < 0 && baton_rec_reader_next(r, &rec, &err) != rc) abort();
    baton_rec_reader_free(r);
}

static void fuzz_stream(baton_rec_format fmt, const uint8_t *data, size_t size)
{
    if (size < 1) return;
    size_t chunk = data[0] < 128 ? 1 + (size_t)(data[0] % 64) : 1 + (size_t)(data[0] - 128) * 97;
    data++;
    size--;

    /* 1. record by record from memory */
    static fuzz_rec want[FUZZ_MAX_RECS];
    size_t nwant = 0, pos = 0;
    baton_buf scratch = {0};
    baton_err err;
    baton_rec rec;
    int want_rc = BATON_END;
    while (pos < size && nwant < FUZZ_MAX_RECS) {
        int rc = baton_rec_read_at(fmt, data + pos, size - pos, pos, "fuzz", &scratch, &rec, &err);
        if (rc != BATON_OK) {
            want_rc = rc;
            break;
        }
        if (rec.size == 0 || rec.size > size - pos || rec.offset != pos) abort();
        want[nwant++] =
            (fuzz_rec){rec.offset, rec.size, rec.len, baton_crc32c(0, rec.data, rec.len)};
        fuzz_touch_sample(fmt, &rec);
        pos += rec.size;
    }
    int complete = nwant < FUZZ_MAX_RECS;

    /* 2. the push reader, fed in chunks: copied (feed), then lent (feed_ref) */
    fuzz_push(fmt, data, size, chunk, 0, want, nwant, complete, want_rc);
    fuzz_push(fmt, data, size, chunk, 1, want, nwant, complete, want_rc);

    /* 3. the input as one payload round-trips through the framing */
    if (fmt == BATON_FMT_RECORDIO) {
        rec_recordio_resync(data, size, chunk);
    }
    baton_buf framed = {0};
    if (baton_rec_frame(fmt, &framed, data, size, &err) != BATON_OK) abort();
    if (baton_rec_read_at(fmt, framed.data, framed.len, 0, "fuzz", &scratch, &rec, &err) !=
            BATON_OK ||
        rec.len != size || rec.size != framed.len || (size && memcmp(rec.data, data, size) != 0))
        abort();
    baton_buf_free(&framed);
    baton_buf_free(&scratch);
}

#endif
