/* test_rec_reader.c — rec: the push reader and the file reader. The same streams (both formats,
 * multi-part RecordIO records included) fed whole, in chunks of every size 1..64, in random sizes
 * and through reserve/commit must give the same records, offsets and sizes; truncation at every
 * byte; a flipped bit anywhere; lengths past the end; sticky errors; position() + a new reader
 * with start_offset continues exactly; format detection; the whole-stream checksum; and
 * baton_rec_file on real files, including an injected read error. */
#include "baton/rec.h"
#include "check.h"

#include <errno.h>

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define MAXREC 64

typedef struct stream {
    baton_rec_format fmt;
    baton_buf bytes;
    size_t n;
    baton_buf payload[MAXREC];
    uint64_t offset[MAXREC + 1];   /* offset[n] = total length */
} stream;

static void stream_make(stream *s, baton_rec_format fmt, uint64_t seed, size_t n, size_t maxlen)
{
    static const uint8_t magic[4] = {0x0a, 0x23, 0xd7, 0xce};
    memset(s, 0, sizeof *s);
    s->fmt = fmt;
    s->n = n;
    baton_rng rng;
    baton_rng_seed(&rng, seed);
    baton_err err;
    for (size_t i = 0; i < n; i++) {
        size_t len = i == 1 ? 0 : baton_rng_below(&rng, maxlen);
        baton_buf_reserve(&s->payload[i], len + 1);
        for (size_t k = 0; k < len; k++) s->payload[i].data[k] = (uint8_t)baton_rng_next(&rng);
        /* every third record carries magic words at aligned offsets (multi-part in RecordIO) */
        for (size_t k = 0; i % 3 == 2 && k + 4 <= len; k += 4)
            if (baton_rng_below(&rng, 4) == 0) memcpy(s->payload[i].data + k, magic, 4);
        s->payload[i].len = len;
        s->offset[i] = s->bytes.len;
        baton_rec_frame(fmt, &s->bytes, s->payload[i].data, len, &err);
    }
    s->offset[n] = s->bytes.len;
}

static void stream_free(stream *s)
{
    baton_buf_free(&s->bytes);
    for (size_t i = 0; i < s->n; i++) baton_buf_free(&s->payload[i]);
}

/* Drain ready records from r, checking each against s starting at *k. Returns the rc that
 * stopped the drain (NEED_MORE, END or an error) and sets *bad on any mismatch. */
static int drain(baton_rec_reader *r, const stream *s, size_t *k, int *bad, baton_err *err)
{
    baton_rec rec;
    int rc;
    while ((rc = baton_rec_reader_next(r, &rec, err)) == BATON_OK) {
        size_t i = *k;
        if (i >= s->n || rec.len != s->payload[i].len ||
            (rec.len && memcmp(rec.data, s->payload[i].data, rec.len) != 0) ||
            rec.offset != s->offset[i] || rec.size != s->offset[i + 1] - s->offset[i] ||
            baton_rec_reader_position(r) != s->offset[i + 1]) {
            if (!*bad)
                fprintf(stderr, "record %zu: len %zu (want %zu) offset %llu (want %llu)\n", i,
                        rec.len, i < s->n ? s->payload[i].len : 0, (unsigned long long)rec.offset,
                        (unsigned long long)(i < s->n ? s->offset[i] : 0));
            *bad = 1;
        }
        (*k)++;
    }
    return rc;
}

/* Feed s from byte `from` in chunks given by sizes() (via feed, or reserve/commit when
 * use_reserve is 1, or lent with feed_ref when it is 2: each chunk in its own allocation, poisoned
 * and freed once drained, so a reader that kept a pointer into it reads garbage or trips the
 * sanitizer), then finish. Returns 1 when every record came out right, the checksum covers every
 * byte fed and the end was clean. */
static int run_chunked(const stream *s, size_t from_rec, size_t (*size_fn)(baton_rng *, size_t),
                       size_t param, int use_reserve, uint64_t seed)
{
    baton_rng rng;
    baton_rng_seed(&rng, seed);
    uint64_t start = s->offset[from_rec];
    baton_rec_reader *r = baton_rec_reader_new(s->fmt, "t", start);
    baton_rec_reader_enable_checksum(r);
    baton_err err = {0};
    size_t k = from_rec, pos = (size_t)start;
    int bad = 0, rc = BATON_NEED_MORE, finished = 0;
    while (pos < s->bytes.len) {
        size_t c = size_fn(&rng, param);
        if (c > s->bytes.len - pos) c = s->bytes.len - pos;
        if (use_reserve == 2) {
            uint8_t *lent = malloc(c);
            memcpy(lent, s->bytes.data + pos, c);
            if (baton_rec_reader_feed_ref(r, lent, c, &err) != BATON_OK) bad = 1;
            pos += c;
            if (pos == s->bytes.len && (seed & 1)) {   /* the end announced before draining */
                baton_rec_reader_finish(r);
                finished = 1;
            }
            rc = drain(r, s, &k, &bad, &err);
            if (rc != (finished ? BATON_END : BATON_NEED_MORE)) bad = 1;
            memset(lent, 0xa5, c);
            free(lent);
            continue;
        }
        if (use_reserve) {
            uint8_t *p;
            size_t cap;
            if (baton_rec_reader_reserve(r, c, &p, &cap, &err) != BATON_OK || cap < c) bad = 1;
            else {
                memcpy(p, s->bytes.data + pos, c);
                baton_rec_reader_commit(r, c);
            }
        } else if (baton_rec_reader_feed(r, s->bytes.data + pos, c, &err) != BATON_OK) {
            bad = 1;
        }
        pos += c;
        rc = drain(r, s, &k, &bad, &err);
        if (rc != BATON_NEED_MORE) bad = 1;
    }
    baton_rec_reader_finish(r);
    rc = drain(r, s, &k, &bad, &err);
    int ok = !bad && rc == BATON_END && k == s->n &&
             baton_rec_reader_position(r) == s->bytes.len &&
             baton_rec_reader_fed(r) == s->bytes.len - start &&
             baton_rec_reader_checksum(r) == baton_crc32c(0, s->bytes.data + start, s->bytes.len - start);
    if (!ok) fprintf(stderr, "chunked(%zu): rc %d k %zu bad %d: %s\n", param, rc, k, bad, err.msg);
    baton_rec_reader_free(r);
    return ok;
}

static size_t fixed_size(baton_rng *rng, size_t c) { return c; }
static size_t random_size(baton_rng *rng, size_t max) { return 1 + baton_rng_below(rng, max); }

static void check_stream(stream *s)
{
    /* whole buffer at once, and with format detection */
    CHECK(run_chunked(s, 0, fixed_size, s->bytes.len, 0, 1));
    baton_rec_reader *r = baton_rec_reader_new(BATON_FMT_UNKNOWN, "t", 0);
    baton_err err;
    size_t k = 0;
    int bad = 0;
    baton_rec_reader_enable_checksum(r);
    CHECK(baton_rec_reader_feed(r, s->bytes.data, 5, &err) == BATON_OK);
    CHECK(baton_rec_reader_next(r, &(baton_rec){0}, &err) == BATON_NEED_MORE);
    CHECK(baton_rec_reader_feed(r, s->bytes.data + 5, s->bytes.len - 5, &err) == BATON_OK);
    baton_rec_reader_finish(r);
    CHECK(drain(r, s, &k, &bad, &err) == BATON_END && !bad && k == s->n);
    CHECK(baton_rec_reader_format(r) == s->fmt);
    CHECK_EQ_U(baton_rec_reader_checksum(r), baton_crc32c(0, s->bytes.data, s->bytes.len));
    CHECK(baton_rec_reader_next(r, &(baton_rec){0}, &err) == BATON_END);   /* END repeats */
    baton_rec_reader_free(r);

    int all = 1;
    for (size_t c = 1; c <= 64; c++) all &= run_chunked(s, 0, fixed_size, c, 0, c);
    CHECK(all);
    for (uint64_t seed = 0; seed < 40; seed++) all &= run_chunked(s, 0, random_size, 3000, 0, seed);
    CHECK(all);
    for (uint64_t seed = 0; seed < 40; seed++) all &= run_chunked(s, 0, random_size, 200, 1, seed);
    CHECK(all);
    /* lent chunks: every fixed size up to 64, random sizes small and large, one whole */
    for (size_t c = 1; c <= 64; c++) all &= run_chunked(s, 0, fixed_size, c, 2, c);
    CHECK_MSG(all, "feed_ref, fixed chunks");
    for (uint64_t seed = 0; seed < 40; seed++) all &= run_chunked(s, 0, random_size, 3000, 2, seed);
    for (uint64_t seed = 0; seed < 40; seed++) all &= run_chunked(s, 0, random_size, 200, 2, seed);
    all &= run_chunked(s, 0, fixed_size, s->bytes.len, 2, 3);
    CHECK_MSG(all, "feed_ref, random chunks");
    /* resume: from every record boundary, a new reader with that start_offset */
    for (size_t i = 0; i <= s->n; i++) all &= run_chunked(s, i, random_size, 100, (int)(i % 3), i);
    CHECK(all);
}

/* Cut the stream at every byte: records before the cut come out, then END exactly at a record
 * boundary, else TRUNCATED naming the partial record's offset. */
static void check_truncation(const stream *s, int lend)
{
    int ok = 1;
    for (size_t cut = 0; cut <= s->bytes.len; cut++) {
        baton_rec_reader *r = baton_rec_reader_new(s->fmt, "cut", 0);
        baton_err err = {0};
        size_t k = 0;
        int bad = 0;
        if (lend) {   /* in two lent pieces, the cut announced before draining the second */
            const size_t half = cut / 2;
            baton_rec_reader_feed_ref(r, s->bytes.data, half, &err);
            if (drain(r, s, &k, &bad, &err) != BATON_NEED_MORE) bad = 1;
            baton_rec_reader_feed_ref(r, s->bytes.data + half, cut - half, &err);
        } else {
            baton_rec_reader_feed(r, s->bytes.data, cut, &err);
        }
        baton_rec_reader_finish(r);
        int rc = drain(r, s, &k, &bad, &err);
        size_t whole = 0;
        while (whole < s->n && s->offset[whole + 1] <= cut) whole++;
        char want[64];
        snprintf(want, sizeof want, "cut: offset %llu", (unsigned long long)s->offset[whole]);
        int good = !bad && k == whole &&
                   (s->offset[whole] == cut ? rc == BATON_END
                                            : rc == BATON_ERR_TRUNCATED && strstr(err.msg, want));
        /* sticky: asking again gives the same answer */
        baton_err again = {0};
        if (rc < 0 && (baton_rec_reader_next(r, &(baton_rec){0}, &again) != rc ||
                       strcmp(again.msg, err.msg) != 0))
            good = 0;
        if (!good) {
            if (ok)
                fprintf(stderr, "cut %zu: rc %d k %zu whole %zu: %s\n", cut, rc, k, whole, err.msg);
            ok = 0;
        }
        baton_rec_reader_free(r);
    }
    CHECK(ok);
}

/* Flip every bit of the stream: TFRecord must report CORRUPT; RecordIO must either read
 * (payload bits are not protected) or fail cleanly with CORRUPT, TRUNCATED or FORMAT. */
static void check_flips(const stream *s)
{
    int ok = 1;
    uint8_t *copy = malloc(s->bytes.len);
    for (size_t i = 0; i < s->bytes.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(copy, s->bytes.data, s->bytes.len);
            copy[i] ^= (uint8_t)(1 << bit);
            baton_rec_reader *r = baton_rec_reader_new(s->fmt, "flip", 0);
            baton_err err = {0};
            baton_rec rec;
            baton_rec_reader_feed(r, copy, s->bytes.len, &err);
            baton_rec_reader_finish(r);
            int rc;
            while ((rc = baton_rec_reader_next(r, &rec, &err)) == BATON_OK) {}
            if (s->fmt == BATON_FMT_TFRECORD ? rc != BATON_ERR_CORRUPT
                                             : !(rc == BATON_END || rc == BATON_ERR_CORRUPT ||
                                                 rc == BATON_ERR_TRUNCATED ||
                                                 rc == BATON_ERR_FORMAT)) {
                if (ok) fprintf(stderr, "flip %zu.%d: rc %d %s\n", i, bit, rc, err.msg);
                ok = 0;
            }
            baton_rec_reader_free(r);
        }
    }
    free(copy);
    CHECK(ok);
}

static char tmpdir[64];

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static int fail_reads;
static ssize_t failing_read(int fd, void *p, size_t n)
{
    if (fail_reads) {
        errno = EIO;
        return -1;
    }
    fail_reads = 1;   /* the first read works, the next fails */
    return read(fd, p, n);
}

static void check_file(const stream *s, const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    write_file(path, s->bytes.data, s->bytes.len);
    baton_err err = {0};
    baton_rec_file *f = baton_rec_file_open(path, BATON_FMT_UNKNOWN, 1, &err);
    CHECK_MSG(f != NULL, "%s", err.msg);
    if (!f) return;
    CHECK(baton_rec_file_format(f) == s->fmt);
    baton_rec rec;
    size_t k = 0;
    int rc, bad = 0;
    while ((rc = baton_rec_file_next(f, &rec, &err)) == BATON_OK) {
        if (k >= s->n || rec.len != s->payload[k].len || rec.offset != s->offset[k] ||
            (rec.len && memcmp(rec.data, s->payload[k].data, rec.len)))
            bad = 1;
        k++;
    }
    CHECK_MSG(rc == BATON_END && !bad && k == s->n, "rc %d k %zu: %s", rc, k, err.msg);
    CHECK_EQ_U(baton_rec_file_checksum(f), baton_crc32c(0, s->bytes.data, s->bytes.len));
    CHECK_EQ_U(baton_rec_file_bytes(f), s->bytes.len);
    CHECK(baton_rec_file_next(f, &rec, &err) == BATON_END);
    baton_rec_file_close(f);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/baton-test-reader-XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL);

    stream rio, tfr;
    stream_make(&rio, BATON_FMT_RECORDIO, 1, 24, 300);
    stream_make(&tfr, BATON_FMT_TFRECORD, 2, 24, 300);
    check_stream(&rio);
    check_stream(&tfr);
    stream small_rio, small_tfr;
    stream_make(&small_rio, BATON_FMT_RECORDIO, 5, 6, 40);
    stream_make(&small_tfr, BATON_FMT_TFRECORD, 6, 6, 40);
    check_truncation(&small_rio, 0);
    check_truncation(&small_rio, 1);
    check_truncation(&small_tfr, 0);
    check_truncation(&small_tfr, 1);
    check_truncation(&rio, 0);
    check_truncation(&rio, 1);
    check_flips(&small_rio);
    check_flips(&small_tfr);

    /* a length field larger than what follows: TRUNCATED naming the record's offset */
    baton_err err = {0};
    baton_rec rec;
    baton_buf b = {0};
    baton_recordio_frame(&b, "hello", 5, &err);
    baton_recordio_frame(&b, "world", 5, &err);
    b.data[16 + 4] = 0xff;   /* second record claims 255 bytes */
    baton_rec_reader *r = baton_rec_reader_new(BATON_FMT_RECORDIO, "x.rec", 0);
    baton_rec_reader_feed(r, b.data, b.len, &err);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_OK);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_NEED_MORE);
    baton_rec_reader_finish(r);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_ERR_TRUNCATED);
    CHECK_MSG(strstr(err.msg, "x.rec: offset 16") && strstr(err.msg, "255"), "%s", err.msg);
    CHECK(baton_rec_reader_position(r) == 16);
    CHECK(baton_rec_reader_feed(r, "x", 1, &err) == BATON_ERR_ARG);   /* after finish */
    baton_rec_reader_free(r);

    /* bad magic mid-stream: CORRUPT with offset, sticky, position stays at the last boundary */
    b.data[16 + 4] = 5;
    b.data[16] = 0;
    r = baton_rec_reader_new(BATON_FMT_RECORDIO, "x.rec", 1000);
    baton_rec_reader_feed(r, b.data, b.len, &err);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_OK && rec.offset == 1000);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "x.rec: offset 1016: bad magic 0xced72300 (expected 0xced7230a)"),
              "%s", err.msg);
    baton_err again = {0};
    CHECK(baton_rec_reader_next(r, &rec, &again) == BATON_ERR_CORRUPT &&
          !strcmp(again.msg, err.msg));
    CHECK(baton_rec_reader_next(r, &rec, NULL) == BATON_ERR_CORRUPT);
    CHECK(baton_rec_reader_position(r) == 1016);
    baton_rec_reader_free(r);

    /* detection through the reader: legacy magic, empty stream */
    uint8_t legacy[16] = {0x0a, 0x23, 0xd7, 0x3e, 5, 0, 0, 0};
    r = baton_rec_reader_new(BATON_FMT_UNKNOWN, "old.rec", 0);
    baton_rec_reader_feed(r, legacy, 16, &err);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "legacy RecordIO magic 0x3ed7230a (old dmlc-core) is not supported"));
    baton_rec_reader_free(r);
    r = baton_rec_reader_new(BATON_FMT_RECORDIO, "old.rec", 0);
    baton_rec_reader_feed(r, legacy, 16, &err);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_ERR_FORMAT);
    baton_rec_reader_free(r);
    r = baton_rec_reader_new(BATON_FMT_UNKNOWN, "e.rec", 0);
    baton_rec_reader_finish(r);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_ERR_TRUNCATED);
    CHECK_MSG(strstr(err.msg, "e.rec: empty file"), "%s", err.msg);
    baton_rec_reader_free(r);
    r = baton_rec_reader_new(BATON_FMT_TFRECORD, "e.tfrecord", 0);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_NEED_MORE);
    baton_rec_reader_finish(r);
    CHECK(baton_rec_reader_next(r, &rec, &err) == BATON_END);   /* known format: 0 records */
    baton_rec_reader_free(r);
    baton_rec_reader_free(NULL);

    /* files */
    check_file(&rio, "a.rec");
    check_file(&tfr, "a.tfrecord");
    /* big records, larger than one read chunk, and many of them */
    stream big;
    memset(&big, 0, sizeof big);
    big.fmt = BATON_FMT_RECORDIO;
    big.n = 8;
    for (size_t i = 0; i < big.n; i++) {
        size_t len = i == 3 ? (3u << 20) + 5 : (size_t)(i * 700001 % 1500000);
        baton_buf_reserve(&big.payload[i], len + 1);
        for (size_t k = 0; k < len; k++) big.payload[i].data[k] = (uint8_t)(k * 31 + i);
        big.payload[i].len = len;
        big.offset[i] = big.bytes.len;
        baton_recordio_frame(&big.bytes, big.payload[i].data, len, &err);
    }
    big.offset[big.n] = big.bytes.len;
    check_file(&big, "big.rec");
    stream_free(&big);

    char path[128];
    snprintf(path, sizeof path, "%s/legacy.rec", tmpdir);
    write_file(path, legacy, 16);
    CHECK(baton_rec_file_open(path, BATON_FMT_UNKNOWN, 0, &err) == NULL);
    CHECK(err.code == BATON_ERR_FORMAT && strstr(err.msg, "legacy.rec"));
    snprintf(path, sizeof path, "%s/empty.rec", tmpdir);
    write_file(path, "", 0);
    CHECK(baton_rec_file_open(path, BATON_FMT_UNKNOWN, 0, &err) == NULL);
    CHECK_MSG(err.code == BATON_ERR_TRUNCATED && strstr(err.msg, "empty file"), "%s", err.msg);
    baton_rec_file *f = baton_rec_file_open(path, BATON_FMT_RECORDIO, 1, &err);
    CHECK(f && baton_rec_file_next(f, &rec, &err) == BATON_END && baton_rec_file_checksum(f) == 0);
    baton_rec_file_close(f);
    snprintf(path, sizeof path, "%s/missing.rec", tmpdir);
    CHECK(baton_rec_file_open(path, BATON_FMT_RECORDIO, 0, &err) == NULL);
    CHECK(err.code == BATON_ERR_NOTFOUND && strstr(err.msg, "missing.rec"));
    /* truncated file: TRUNCATED with the offset of the cut record */
    snprintf(path, sizeof path, "%s/cut.rec", tmpdir);
    write_file(path, rio.bytes.data, (size_t)rio.offset[5] + 3);
    f = baton_rec_file_open(path, BATON_FMT_RECORDIO, 0, &err);
    int rc, k = 0;
    while ((rc = baton_rec_file_next(f, &rec, &err)) == BATON_OK) k++;
    char want[64];
    snprintf(want, sizeof want, "offset %llu", (unsigned long long)rio.offset[5]);
    CHECK_MSG(rc == BATON_ERR_TRUNCATED && k == 5 && strstr(err.msg, want), "%d %d %s", rc, k,
              err.msg);
    baton_rec_file_close(f);
    /* a read error (EIO) after the first chunk: IO error, sticky */
    snprintf(path, sizeof path, "%s/big.rec", tmpdir);
    f = baton_rec_file_open(path, BATON_FMT_RECORDIO, 0, &err);
    baton_sys.read = failing_read;
    fail_reads = 0;
    while ((rc = baton_rec_file_next(f, &rec, &err)) == BATON_OK) {}
    CHECK_MSG(rc == BATON_ERR_IO && strstr(err.msg, "big.rec") && strstr(err.msg, "read failed"),
              "%d %s", rc, err.msg);
    CHECK(baton_rec_file_next(f, &rec, &err) == BATON_ERR_IO);
    baton_sys_reset();
    baton_rec_file_close(f);
    /* the file cut short by another process in the middle of the scan: TRUNCATED naming the file
     * (a mapped file would have killed the scan with SIGBUS at the first page past the new end) */
    f = baton_rec_file_open(path, BATON_FMT_RECORDIO, 1, &err);
    CHECK(f && baton_rec_file_next(f, &rec, &err) == BATON_OK);
    uint64_t cut_at = baton_rec_file_bytes(f) + (3u << 20);
    CHECK(truncate(path, (off_t)cut_at) == 0);
    while ((rc = baton_rec_file_next(f, &rec, &err)) == BATON_OK) {}
    CHECK_MSG(rc == BATON_ERR_TRUNCATED && strstr(err.msg, "big.rec"), "%d %s", rc, err.msg);
    baton_rec_file_close(f);

    stream_free(&rio);
    stream_free(&tfr);
    stream_free(&small_rio);
    stream_free(&small_tfr);
    baton_buf_free(&b);
    const char *names[] = {"a.rec", "a.tfrecord", "big.rec", "legacy.rec", "empty.rec", "cut.rec"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
    CHECK_DONE();
}
