/* test_rec_borrow.c — the reader's zero-copy borrow mode gives the same records, positions,
 * errors and whole-stream CRC32C as feeding the same bytes, for both formats and for streams
 * long enough to cross several CRC windows; a reader already fed refuses to borrow. */
#include "baton/rec.h"
#include "check.h"

#include <stdlib.h>

static void compare(baton_rec_format fmt, const baton_buf *s, size_t cut)
{
    baton_err e1 = {0}, e2 = {0};
    baton_rec_reader *a = baton_rec_reader_new(fmt, "a", 0), *b = baton_rec_reader_new(fmt, "b", 0);
    baton_rec_reader_enable_checksum(a);
    baton_rec_reader_enable_checksum(b);
    CHECK(baton_rec_reader_feed(a, s->data, cut, &e1) == BATON_OK);
    baton_rec_reader_finish(a);
    CHECK(baton_rec_reader_borrow(b, s->data, cut, &e2) == BATON_OK);
    baton_rec ra, rb;
    int ca, cb, same = 1;
    uint64_t n = 0;
    do {
        ca = baton_rec_reader_next(a, &ra, &e1);
        cb = baton_rec_reader_next(b, &rb, &e2);
        if (ca != cb) same = 0;
        if (ca == BATON_OK && cb == BATON_OK &&
            (ra.len != rb.len || ra.offset != rb.offset || memcmp(ra.data, rb.data, ra.len))) same = 0;
        n++;
    } while (ca == BATON_OK && cb == BATON_OK);
    CHECK_MSG(same, "fmt %d cut %zu: records differ after %llu", fmt, cut, (unsigned long long)n);
    if (ca < 0) CHECK(!strcmp(e1.msg + 1, e2.msg + 1));  /* same message, names a/b differ */
    CHECK_EQ_U(baton_rec_reader_checksum(a), baton_rec_reader_checksum(b));
    CHECK_EQ_U(baton_rec_reader_checksum(b), baton_crc32c(0, s->data, cut));
    baton_rec_reader_free(a);
    baton_rec_reader_free(b);
}

int main(void)
{
    baton_rng r;
    baton_rng_seed(&r, 4);
    for (int f = 1; f <= 2; f++) {
        baton_buf s = {0}, p = {0};
        baton_err err;
        for (int i = 0; i < 3000; i++) {  /* ~1.5 MB: several 256 KiB CRC windows */
            p.len = 0;
            size_t n = (size_t)baton_rng_below(&r, 1000);
            baton_buf_reserve(&p, n + 4);
            for (size_t k = 0; k < n; k++) p.data[k] = (uint8_t)baton_rng_next(&r);
            if (n >= 8 && i % 7 == 0) memcpy(p.data + 4, "\x0a\x23\xd7\xce", 4);  /* magic inside */
            p.len = n;
            CHECK(baton_rec_frame((baton_rec_format)f, &s, p.data, p.len, &err) == BATON_OK);
        }
        compare((baton_rec_format)f, &s, s.len);
        compare((baton_rec_format)f, &s, s.len - 3);       /* truncated */
        compare((baton_rec_format)f, &s, s.len / 2 + 1);
        s.data[s.len / 3] ^= 0x40;                         /* corrupted somewhere */
        compare((baton_rec_format)f, &s, s.len);
        baton_rec_reader *x = baton_rec_reader_new((baton_rec_format)f, "x", 0);
        CHECK(baton_rec_reader_feed(x, s.data, 10, &err) == BATON_OK);
        CHECK(baton_rec_reader_borrow(x, s.data, s.len, &err) == BATON_ERR_ARG);
        baton_rec_reader_free(x);
        baton_buf_free(&s);
        baton_buf_free(&p);
    }
    CHECK_DONE();
}
