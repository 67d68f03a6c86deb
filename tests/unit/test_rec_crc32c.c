/* test_rec_crc32c.c — rec: CRC32C. Published test vectors, a bitwise reference written here,
 * the table path against both hardware paths (crc32 instruction alone, and with carry-less
 * folding where the CPU has it) on random lengths and alignments, incremental (split)
 * computation against one-shot, the CRC of a whole summed from its pieces in any order, and
 * TFRecord masking. */
#include "baton/rec.h"
#include "check.h"
#include "../../src/rec/rec_internal.h"

#include <stdlib.h>

/* The slowest possible CRC32C: one bit at a time, straight from the definition. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78U : crc >> 1;
    }
    return ~crc;
}

int main(void)
{
    uint8_t zeros[32] = {0}, ones[32];
    memset(ones, 0xff, sizeof ones);
    CHECK_EQ_U(baton_crc32c(0, "123456789", 9), 0xE3069283U);
    CHECK_EQ_U(rec_crc32c_sw(0, "123456789", 9), 0xE3069283U);
    CHECK_EQ_U(rec_crc32c_hw(0, "123456789", 9), 0xE3069283U);
    CHECK_EQ_U(baton_crc32c(0, zeros, 32), 0x8a9136aaU);
    CHECK_EQ_U(rec_crc32c_sw(0, zeros, 32), 0x8a9136aaU);
    CHECK_EQ_U(rec_crc32c_hw(0, zeros, 32), 0x8a9136aaU);
    CHECK_EQ_U(baton_crc32c(0, ones, 32), 0x62a8ab43U);
    CHECK_EQ_U(rec_crc32c_sw(0, ones, 32), 0x62a8ab43U);
    CHECK_EQ_U(rec_crc32c_hw(0, ones, 32), 0x62a8ab43U);
    CHECK_EQ_U(baton_crc32c(0, NULL, 0), 0);
    CHECK_EQ_U(baton_crc32c(0x12345678, "", 0), 0x12345678);
    CHECK_EQ_U(rec_crc32c_sse42(0, "123456789", 9), 0xE3069283U);
    printf("crc32c: crc32 instruction %s, carry-less folding %s\n",
           rec_crc32c_hw_available() ? "available" : "absent",
           rec_crc32c_fold_available() ? "available" : "absent");

    /* random buffers: every path agrees with the bitwise reference, at every alignment, for
     * lengths around the interleave thresholds (3×256, 3×8192) and beyond */
    baton_rng rng;
    baton_rng_seed(&rng, 7);
    size_t big = 3 * 8192 * 3 + 77;
    uint8_t *buf = malloc(big + 16);
    for (size_t i = 0; i < big + 16; i++) buf[i] = (uint8_t)baton_rng_next(&rng);
    static const size_t lens[] = {0,    1,    7,    8,     9,     15,    16,    63,
                                  255,  256,  767,  768,   769,   1000,  1541,  2047,
                                  2048, 2049, 2111, 2303,  2304,  2367,  4096,  8191,
                                  24575, 24576, 24577, 40000, 49152 + 768, 3 * 8192 * 3 + 77};
    int agree = 1;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        for (size_t a = 0; a < 8; a++) {
            size_t n = lens[li];
            uint32_t ref = crc_bitwise(0, buf + a, n);
            uint32_t sw = rec_crc32c_sw(0, buf + a, n), hw = rec_crc32c_hw(0, buf + a, n);
            uint32_t d = baton_crc32c(0, buf + a, n), s4 = rec_crc32c_sse42(0, buf + a, n);
            if (sw != ref || hw != ref || d != ref || s4 != ref) {
                agree = 0;
                fprintf(stderr, "len %zu align %zu: ref %08x sw %08x hw %08x\n", n, a, ref, sw, hw);
            }
        }
    }
    CHECK(agree);
    for (int t = 0; t < 300; t++) {
        size_t a = baton_rng_below(&rng, 16), n = baton_rng_below(&rng, big);
        uint32_t seed = (uint32_t)baton_rng_next(&rng);
        uint32_t sw = rec_crc32c_sw(seed, buf + a, n), hw = rec_crc32c_hw(seed, buf + a, n);
        if (sw != hw || rec_crc32c_sse42(seed, buf + a, n) != sw) agree = 0;
    }
    CHECK(agree);

    /* incremental: any split gives the one-shot value, on both paths */
    uint32_t whole = baton_crc32c(0, buf, big);
    int split_ok = 1;
    for (int t = 0; t < 200; t++) {
        size_t cut1 = baton_rng_below(&rng, big + 1);
        size_t cut2 = cut1 + baton_rng_below(&rng, big - cut1 + 1);
        uint32_t c = baton_crc32c(0, buf, cut1);
        c = baton_crc32c(c, buf + cut1, cut2 - cut1);
        c = baton_crc32c(c, buf + cut2, big - cut2);
        uint32_t s = rec_crc32c_sw(rec_crc32c_sw(0, buf, cut1), buf + cut1, big - cut1);
        uint32_t h = rec_crc32c_hw(rec_crc32c_hw(0, buf, cut1), buf + cut1, big - cut1);
        if (c != whole || s != whole || h != whole) split_ok = 0;
    }
    CHECK(split_ok);
    uint32_t c = 0;
    for (size_t i = 0; i < 5000; i++) c = baton_crc32c(c, buf + i, 1);
    CHECK_EQ_U(c, crc_bitwise(0, buf, 5000));

    /* pieces in any order: cut the buffer at random places, sum the pieces' terms last piece
     * first, get the one-shot value; an empty whole and empty pieces too */
    CHECK_EQ_U(baton_crc32c_shift(0, 12345), 0);
    CHECK_EQ_U(baton_crc32c_shift(0xE3069283U, 0), 0xE3069283U);
    /* zlib's combine: crc("1234" ‖ "56789") from the two CRCs */
    CHECK_EQ_U(baton_crc32c_shift(baton_crc32c(0, "1234", 4), 5) ^ baton_crc32c(0, "56789", 5), 0xE3069283U);
    int terms_ok = 1;
    for (int t = 0; t < 50; t++) {
        size_t cuts[34];
        int nc = 2 + (int)baton_rng_below(&rng, 32);
        cuts[0] = 0;
        cuts[nc - 1] = big;
        for (int k = 1; k < nc - 1; k++) cuts[k] = baton_rng_below(&rng, big + 1);
        for (int k = 1; k < nc - 1; k++)   /* sorted: pieces [cuts[k], cuts[k+1]) tile the buffer */
            for (int j = k; j > 0 && cuts[j] < cuts[j - 1]; j--) {
                size_t tmp = cuts[j]; cuts[j] = cuts[j - 1]; cuts[j - 1] = tmp;
            }
        uint32_t x = 0;
        uint32_t far = 0;   /* pieces 1000 bytes or more from the end: summed 1000 bytes nearer, moved once */
        for (int i = nc - 2; i >= 0; i--) {   /* last piece first */
            size_t len = cuts[i + 1] - cuts[i], after = big - cuts[i + 1];
            uint32_t crc = baton_crc32c(0, buf + cuts[i], len);
            if (after >= 1000) far ^= baton_crc32c_shift(crc, after - 1000);
            else x ^= baton_crc32c_shift(crc, after);
        }
        x ^= baton_crc32c_shift(far, 1000);
        if (x != whole) terms_ok = 0;
    }
    CHECK(terms_ok);
    /* a distance past 2^30: a piece followed by a gigabyte of zeros; and shifts add, past 2^32 */
    {
        static uint8_t zero_mb[1 << 20];
        uint64_t z = (1ULL << 30) + 12345;
        uint32_t run = baton_crc32c(0, buf, 1000), zrun = 0;
        for (uint64_t left = z; left > 0;) {
            size_t k = left < sizeof zero_mb ? (size_t)left : sizeof zero_mb;
            run = baton_crc32c(run, zero_mb, k);
            zrun = baton_crc32c(zrun, zero_mb, k);
            left -= k;
        }
        CHECK_EQ_U(baton_crc32c_shift(baton_crc32c(0, buf, 1000), z) ^ zrun, run);
        uint32_t c0 = baton_crc32c(0, buf, 77);
        CHECK_EQ_U(baton_crc32c_shift(baton_crc32c_shift(c0, (1ULL << 33) + 5), (1ULL << 40) + 3),
                   baton_crc32c_shift(c0, (1ULL << 40) + (1ULL << 33) + 8));
    }
    free(buf);

    /* masking (TFRecord) */
    uint32_t x = 0xE3069283U;
    uint32_t m = ((x >> 15) | (x << 17)) + 0xa282ead8U;
    CHECK_EQ_U(rec_crc32c_mask(x), m);
    CHECK_EQ_U(rec_crc32c_unmask(m), x);
    CHECK_EQ_U(rec_crc32c_mask(0), 0xa282ead8U);
    int inv = 1;
    for (int t = 0; t < 1000; t++) {
        uint32_t v = (uint32_t)baton_rng_next(&rng);
        if (rec_crc32c_unmask(rec_crc32c_mask(v)) != v) inv = 0;
    }
    CHECK(inv);
    CHECK_DONE();
}
