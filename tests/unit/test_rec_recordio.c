/* test_rec_recordio.c — rec: RecordIO framing and parsing. Golden bytes from REFERENCE §1,
 * escaping of magic words at aligned offsets (expected bytes derived by hand from dmlc-core's
 * rules), unaligned magic left alone, payloads made only of magic words, magic at the end, the
 * empty payload, malformed continuation flags, the legacy magic, format detection, resync. */
#include "../../src/rec/rec_internal.h"
#include "baton/rec.h"
#include "check.h"

#include <stdlib.h>

#define M 0x0a, 0x23, 0xd7, 0xce   /* the magic as it lies on disk */

static int frame_is(const void *payload, size_t n, const uint8_t *want, size_t wn)
{
    baton_buf b = {0};
    baton_err err = {0};
    int ok = baton_recordio_frame(&b, payload, n, &err) == BATON_OK && b.len == wn &&
             memcmp(b.data, want, wn) == 0;
    if (!ok) {
        fprintf(stderr, "framed %zu bytes:", b.len);
        for (size_t i = 0; i < b.len; i++) fprintf(stderr, " %02x", b.data[i]);
        fprintf(stderr, "\n");
    }
    baton_buf_free(&b);
    return ok;
}

/* frame, then read back with read_at: same payload, size = whole frame */
static int round_trip(const uint8_t *payload, size_t n)
{
    baton_buf b = {0}, scratch = {0};
    baton_err err = {0};
    baton_rec rec;
    int ok = baton_recordio_frame(&b, payload, n, &err) == BATON_OK &&
             baton_rec_read_at(BATON_FMT_RECORDIO, b.data, b.len, 100, "t.rec", &scratch, &rec,
                               &err) == BATON_OK &&
             rec.len == n && (n == 0 || memcmp(rec.data, payload, n) == 0) && rec.size == b.len &&
             rec.offset == 100 && b.len % 4 == 0;
    if (!ok) fprintf(stderr, "round trip of %zu bytes failed: %s\n", n, err.msg);
    baton_buf_free(&b);
    baton_buf_free(&scratch);
    return ok;
}

static int read_at(const uint8_t *p, size_t n, baton_rec *rec, baton_buf *scratch, baton_err *err)
{
    return baton_rec_read_at(BATON_FMT_RECORDIO, p, n, 0, "t.rec", scratch, rec, err);
}

int main(void)
{
    static const uint8_t magic[4] = {M};

    /* golden: "hello" */
    static const uint8_t hello[] = {M, 0x05, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0};
    CHECK(frame_is("hello", 5, hello, sizeof hello));
    /* empty payload: a header and nothing else */
    static const uint8_t empty[] = {M, 0, 0, 0, 0};
    CHECK(frame_is("", 0, empty, sizeof empty));
    /* 4-byte payload, no padding */
    static const uint8_t four[] = {M, 4, 0, 0, 0, 'a', 'b', 'c', 'd'};
    CHECK(frame_is("abcd", 4, four, sizeof four));

    /* aligned magic at offset 4: part 1 "abcd" (cflag 1: 0x20000004), the magic dropped, last
     * part "efgh" (cflag 3: 0x60000004); length 12 needs no pad */
    uint8_t p1[12] = {'a', 'b', 'c', 'd', M, 'e', 'f', 'g', 'h'};
    static const uint8_t e1[] = {M, 4, 0, 0, 0x20, 'a', 'b', 'c', 'd',
                                 M, 4, 0, 0, 0x60, 'e', 'f', 'g', 'h'};
    CHECK(frame_is(p1, 12, e1, sizeof e1));
    CHECK(round_trip(p1, 12));

    /* unaligned magic (offset 1): not escaped; one part of 7 bytes + 1 pad */
    uint8_t p2[7] = {'x', M, 'y', 'z'};
    static const uint8_t e2[] = {M, 7, 0, 0, 0, 'x', M, 'y', 'z', 0};
    CHECK(frame_is(p2, 7, e2, sizeof e2));
    CHECK(round_trip(p2, 7));

    /* only magic words: parts of length 0 with cflags 1, 2, 2, 3 */
    uint8_t p3[12] = {M, M, M};
    static const uint8_t e3[] = {M, 0, 0, 0, 0x20, M, 0, 0, 0, 0x40,
                                 M, 0, 0, 0, 0x40, M, 0, 0, 0, 0x60};
    CHECK(frame_is(p3, 12, e3, sizeof e3));
    CHECK(round_trip(p3, 12));
    CHECK(frame_is(magic, 4, (const uint8_t[]){M, 0, 0, 0, 0x20, M, 0, 0, 0, 0x60}, 16));
    CHECK(round_trip(magic, 4));

    /* magic at the very end (aligned): last part is empty */
    uint8_t p4[8] = {'a', 'b', 'c', 'd', M};
    static const uint8_t e4[] = {M, 4, 0, 0, 0x20, 'a', 'b', 'c', 'd', M, 0, 0, 0, 0x60};
    CHECK(frame_is(p4, 8, e4, sizeof e4));
    CHECK(round_trip(p4, 8));

    /* magic followed by an odd tail: the single pad rounds the ORIGINAL length (9 → 12) */
    uint8_t p5[9] = {'a', 'b', 'c', 'd', M, 'e'};
    static const uint8_t e5[] = {M, 4, 0, 0, 0x20, 'a', 'b', 'c', 'd',
                                 M, 1, 0, 0, 0x60, 'e', 0, 0, 0};
    CHECK(frame_is(p5, 9, e5, sizeof e5));
    CHECK(round_trip(p5, 9));

    /* magic in the last, partial word (offset 6 of 10): unaligned, not escaped */
    uint8_t p6[10] = {'a', 'b', 'c', 'd', 'e', 'f', M};
    CHECK(frame_is(p6, 10, (const uint8_t[]){M, 10, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', M, 0, 0},
                   20));

    /* random payloads sprinkled with magic words round-trip */
    baton_rng rng;
    baton_rng_seed(&rng, 3);
    int rt = 1;
    uint8_t buf[600];
    for (int t = 0; t < 2000; t++) {
        size_t n = baton_rng_below(&rng, sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)baton_rng_next(&rng);
        for (size_t i = 0; i + 4 <= n; i++)
            if (baton_rng_below(&rng, 12) == 0) memcpy(buf + i, magic, 4);
        rt &= round_trip(buf, n);
    }
    CHECK(rt);

    /* too large for RecordIO: refused before touching the payload */
    baton_buf b = {0};
    baton_err err = {0};
    CHECK(baton_recordio_frame(&b, "", (size_t)1 << 29, &err) == BATON_ERR_ARG);
    CHECK(b.len == 0);

    /* ---- malformed streams ---- */
    baton_rec rec;
    baton_buf scratch = {0};
    /* bad magic */
    uint8_t bad[16] = {0};
    CHECK(read_at(bad, 16, &rec, &scratch, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "t.rec: offset 0: bad magic 0x00000000 (expected 0xced7230a)"), "%s",
              err.msg);
    /* legacy magic */
    uint8_t legacy[16] = {0x0a, 0x23, 0xd7, 0x3e, 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'};
    CHECK(read_at(legacy, 16, &rec, &scratch, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "legacy RecordIO magic 0x3ed7230a (old dmlc-core) is not supported"),
              "%s", err.msg);
    baton_rec_format fmt;
    CHECK(rec_detect(legacy, 16, "old.rec", &fmt, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "old.rec") && strstr(err.msg, "legacy RecordIO magic 0x3ed7230a"));
    /* cflag 2 with no first part */
    uint8_t c2[8] = {M, 0, 0, 0, 0x40};
    CHECK(read_at(c2, 8, &rec, &scratch, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "offset 0") && strstr(err.msg, "continuation flag 2"), "%s", err.msg);
    /* cflag 3 alone */
    uint8_t c3[8] = {M, 0, 0, 0, 0x60};
    CHECK(read_at(c3, 8, &rec, &scratch, &err) == BATON_ERR_CORRUPT);
    /* first part followed by a whole record (cflag 0): error names the second header */
    uint8_t c10[24] = {M, 4, 0, 0, 0x20, 'a', 'b', 'c', 'd', M, 0, 0, 0, 0};
    CHECK(read_at(c10, 24, &rec, &scratch, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "offset 12: continuation flag 0"), "%s", err.msg);
    /* first part followed by another first part */
    uint8_t c11[24] = {M, 4, 0, 0, 0x20, 'a', 'b', 'c', 'd', M, 0, 0, 0, 0x20};
    CHECK(read_at(c11, 24, &rec, &scratch, &err) == BATON_ERR_CORRUPT);
    /* middle part whose length is not a multiple of 4 */
    uint8_t odd[24] = {M, 3, 0, 0, 0x20, 'a', 'b', 'c', 0, M, 0, 0, 0, 0x60};
    CHECK(read_at(odd, 24, &rec, &scratch, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "not a multiple of 4"), "%s", err.msg);
    /* first part then garbage */
    uint8_t gar[24] = {M, 4, 0, 0, 0x20, 'a', 'b', 'c', 'd', 1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(read_at(gar, 24, &rec, &scratch, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "offset 12: bad magic 0x04030201"), "%s", err.msg);
    /* truncations: header cut, body cut, last part missing */
    CHECK(read_at(hello, 5, &rec, &scratch, &err) == BATON_ERR_TRUNCATED);
    CHECK(read_at(hello, 12, &rec, &scratch, &err) == BATON_ERR_TRUNCATED);
    CHECK_MSG(strstr(err.msg, "t.rec: offset 0") && strstr(err.msg, "truncated"), "%s", err.msg);
    CHECK(read_at(e1, 12, &rec, &scratch, &err) == BATON_ERR_TRUNCATED);
    CHECK(read_at(e1, 20, &rec, &scratch, &err) == BATON_ERR_TRUNCATED);
    CHECK(read_at(hello, 0, &rec, &scratch, &err) == BATON_ERR_TRUNCATED);
    /* a huge length in a small buffer: truncated, naming the offset, no big allocation */
    uint8_t huge[16] = {M, 0xff, 0xff, 0xff, 0x1f};
    CHECK(baton_rec_read_at(BATON_FMT_RECORDIO, huge, 16, 4096, "t.rec", &scratch, &rec, &err) ==
          BATON_ERR_TRUNCATED);
    CHECK_MSG(strstr(err.msg, "t.rec: offset 4096"), "%s", err.msg);
    /* a whole record followed by junk parses fine (only one record is read) */
    uint8_t two[32];
    memcpy(two, hello, 16);
    memset(two + 16, 0xee, 16);
    CHECK(read_at(two, 32, &rec, &scratch, &err) == BATON_OK);
    CHECK(rec.len == 5 && rec.size == 16 && memcmp(rec.data, "hello", 5) == 0);
    CHECK(rec.data == two + 8);   /* single-part: zero-copy */

    /* ---- detection ---- */
    CHECK(rec_detect(hello, 16, "a.rec", &fmt, &err) == BATON_OK &&
          fmt == BATON_FMT_RECORDIO);
    CHECK(rec_detect(hello, 4, "a.rec", &fmt, &err) == BATON_OK && fmt == BATON_FMT_RECORDIO);
    CHECK(rec_detect(hello, 0, "a.rec", &fmt, &err) == BATON_ERR_TRUNCATED);
    CHECK_MSG(strstr(err.msg, "a.rec: empty file"), "%s", err.msg);
    CHECK(rec_detect(hello, 3, "a.rec", &fmt, &err) == BATON_ERR_TRUNCATED);
    uint8_t junk[16] = "not a record!!!";
    CHECK(rec_detect(junk, 16, "a.rec", &fmt, &err) == BATON_ERR_FORMAT);
    baton_buf tf = {0};
    CHECK(baton_tfrecord_frame(&tf, "hello", 5, &err) == BATON_OK);
    CHECK(rec_detect(tf.data, tf.len, "a.tfrecord", &fmt, &err) == BATON_OK &&
          fmt == BATON_FMT_TFRECORD);
    CHECK(rec_detect(tf.data, 11, "a.tfrecord", &fmt, &err) == BATON_ERR_TRUNCATED);
    baton_buf_free(&tf);
    CHECK(!strcmp(baton_rec_format_name(BATON_FMT_RECORDIO), "recordio"));
    CHECK(!strcmp(baton_rec_format_name(BATON_FMT_TFRECORD), "tfrecord"));
    CHECK(baton_rec_format_parse("tfrecord", &fmt) == BATON_OK && fmt == BATON_FMT_TFRECORD);
    CHECK(baton_rec_format_parse("recordio", &fmt) == BATON_OK && fmt == BATON_FMT_RECORDIO);
    CHECK(baton_rec_format_parse("zip", &fmt) == BATON_ERR_ARG);
    baton_encoding enc;
    CHECK(baton_encoding_parse("jpeg", &enc) == BATON_OK && enc == BATON_ENC_JPEG);
    CHECK(baton_encoding_parse("png", &enc) == BATON_OK && enc == BATON_ENC_PNG);
    CHECK(baton_encoding_parse("raw", &enc) == BATON_OK && enc == BATON_ENC_RAW);
    CHECK(baton_encoding_parse("gif", &enc) == BATON_ERR_ARG);
    CHECK(!strcmp(baton_encoding_name(BATON_ENC_JPEG), "jpeg"));
    CHECK(!strcmp(baton_encoding_name(BATON_ENC_RAW), "raw"));
    CHECK(!strcmp(baton_encoding_name(BATON_ENC_PNG), "png"));

    /* ---- resync: a stream of three records, searched from every position ---- */
    baton_buf s = {0};
    CHECK(baton_recordio_frame(&s, "hello", 5, &err) == BATON_OK);        /* 0..16 */
    CHECK(baton_recordio_frame(&s, p1, 12, &err) == BATON_OK);            /* 16..40: 2 parts */
    CHECK(baton_recordio_frame(&s, "xyz", 3, &err) == BATON_OK);          /* 40..52 */
    int rs = 1;
    for (size_t from = 0; from <= s.len; from++) {
        size_t want = from == 0 ? 0 : from <= 16 ? 16 : from <= 40 ? 40 : s.len;
        if (rec_recordio_resync(s.data, s.len, from) != want) {
            rs = 0;
            fprintf(stderr, "resync from %zu: %zu, want %zu\n", from,
                    rec_recordio_resync(s.data, s.len, from), want);
        }
    }
    CHECK(rs);
    CHECK(rec_recordio_resync(s.data, s.len, SIZE_MAX - 1) == s.len);
    CHECK(rec_recordio_resync(s.data, 7, 0) == 7);
    baton_buf_free(&s);
    baton_buf_free(&b);
    baton_buf_free(&scratch);
    CHECK_DONE();
}
