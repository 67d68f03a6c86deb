/* test_rec_tfrecord.c — rec: TFRecord framing and parsing. Golden bytes for "hello" and the
 * empty record (CRCs computed here by a bitwise CRC32C and written out by hand as well), the
 * three outcomes at a record boundary (clean end, truncated, corrupted) with their offsets, and
 * a flipped bit anywhere in a record always caught. */
#include "baton/rec.h"
#include "check.h"

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffU;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78U : crc >> 1;
    }
    return ~crc;
}

static uint32_t masked(const uint8_t *p, size_t n)
{
    uint32_t c = crc_bitwise(p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8U;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int parse(const uint8_t *p, size_t n, uint64_t off, baton_rec *rec, baton_err *err)
{
    return baton_rec_read_at(BATON_FMT_TFRECORD, p, n, off, "t.tfrecord", NULL, rec, err);
}

int main(void)
{
    baton_buf b = {0};
    baton_err err = {0};
    baton_rec rec;

    /* "hello": 8-byte length, masked CRC of it, data, masked CRC of data */
    uint8_t want[21] = {5, 0, 0, 0, 0, 0, 0, 0};
    put32(want + 8, masked(want, 8));
    memcpy(want + 12, "hello", 5);
    put32(want + 17, masked((const uint8_t *)"hello", 5));
    static const uint8_t golden[21] = {0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                       0x00, 0xea, 0xb2, 0x04, 0x3e, 0x68, 0x65,
                                       0x6c, 0x6c, 0x6f, 0xbb, 0x1f, 0x1c, 0x19};
    CHECK(memcmp(want, golden, 21) == 0);
    CHECK(baton_tfrecord_frame(&b, "hello", 5, &err) == BATON_OK);
    CHECK(b.len == 21 && memcmp(b.data, golden, 21) == 0);
    CHECK(parse(b.data, b.len, 0, &rec, &err) == BATON_OK);
    CHECK(rec.len == 5 && memcmp(rec.data, "hello", 5) == 0 && rec.size == 21 &&
          rec.data == b.data + 12);

    /* the empty record: CRC of nothing is 0, masked 0xa282ead8 */
    static const uint8_t empty[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0x29, 0x03, 0x98, 0x07,
                                      0xd8, 0xea, 0x82, 0xa2};
    uint8_t ew[16] = {0};
    put32(ew + 8, masked(ew, 8));
    put32(ew + 12, masked(NULL, 0));
    CHECK(memcmp(ew, empty, 16) == 0);
    b.len = 0;
    CHECK(baton_rec_frame(BATON_FMT_TFRECORD, &b, "", 0, &err) == BATON_OK);
    CHECK(b.len == 16 && memcmp(b.data, empty, 16) == 0);
    CHECK(parse(b.data, b.len, 0, &rec, &err) == BATON_OK && rec.len == 0 && rec.size == 16);

    /* truncation at every byte of "hello": TRUNCATED naming the offset */
    int trunc = 1;
    for (size_t n = 0; n < 21; n++) {
        int rc = parse(golden, n, 777, &rec, &err);
        if (rc != BATON_ERR_TRUNCATED || !strstr(err.msg, "t.tfrecord: offset 777")) {
            trunc = 0;
            fprintf(stderr, "cut at %zu: %d %s\n", n, rc, err.msg);
        }
    }
    CHECK(trunc);

    /* every flipped bit is caught: CORRUPT for the length / data / CRC bytes */
    int flips = 1;
    uint8_t copy[21];
    for (size_t i = 0; i < 21; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(copy, golden, 21);
            copy[i] ^= (uint8_t)(1 << bit);
            int rc = parse(copy, 21, 64, &rec, &err);
            if (rc != BATON_ERR_CORRUPT || !strstr(err.msg, "offset 64")) {
                flips = 0;
                fprintf(stderr, "flip %zu.%d: %d %s\n", i, bit, rc, err.msg);
            }
        }
    }
    CHECK(flips);
    memcpy(copy, golden, 21);
    copy[13] ^= 1;
    CHECK(parse(copy, 21, 0, &rec, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "data checksum mismatch"), "%s", err.msg);
    copy[13] ^= 1;
    copy[0] ^= 1;
    CHECK(parse(copy, 21, 0, &rec, &err) == BATON_ERR_CORRUPT);
    CHECK_MSG(strstr(err.msg, "length checksum mismatch"), "%s", err.msg);

    /* a length larger than the data, with a valid length CRC: TRUNCATED, not CORRUPT */
    uint8_t big[32] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
    put32(big + 8, masked(big, 8));
    CHECK(parse(big, 32, 4096, &rec, &err) == BATON_ERR_TRUNCATED);
    CHECK_MSG(strstr(err.msg, "t.tfrecord: offset 4096") && strstr(err.msg, "65535"), "%s",
              err.msg);
    /* a length beyond our 2 GiB limit: refused as FORMAT */
    uint8_t huge[32] = {0, 0, 0, 0, 1, 0, 0, 0};
    put32(huge + 8, masked(huge, 8));
    CHECK(parse(huge, 32, 0, &rec, &err) == BATON_ERR_FORMAT);

    /* a stream of several records parsed back to back, ending cleanly */
    b.len = 0;
    const char *words[] = {"a", "", "hello world", "zz"};
    for (int i = 0; i < 4; i++)
        CHECK(baton_tfrecord_frame(&b, words[i], strlen(words[i]), &err) == 0);
    size_t pos = 0;
    int k = 0;
    while (pos < b.len && parse(b.data + pos, b.len - pos, pos, &rec, &err) == BATON_OK) {
        CHECK(rec.len == strlen(words[k]) && memcmp(rec.data, words[k], rec.len) == 0);
        CHECK(rec.offset == pos);
        pos += rec.size;
        k++;
    }
    CHECK(k == 4 && pos == b.len);
    baton_buf_free(&b);
    CHECK_DONE();
}
