/* crc32c.c — CRC32C (Castagnoli, reflected polynomial 0x82F63B78, init and final XOR all ones),
 * and TFRecord's masking of it.
 *
 * Owns three paths and the dispatcher that picks one at run time:
 *   - the table reference path (slice-by-8, any CPU);
 *   - the SSE4.2 path: the crc32 instruction on 8-byte words, three independent streams
 *     interleaved over large buffers and joined with a precomputed "advance over N zero bytes"
 *     operator;
 *   - on CPUs with AVX-512 VPCLMULQDQ, large buffers (>= 2 KiB) are first folded 256 bytes at a
 *     time with carry-less multiplies (constants derived below from the polynomial), the rest
 *     goes through the SSE4.2 path.
 * And the CRC of a whole summed from its pieces' CRCs in any order (baton_crc32c_shift): each
 * piece's CRC advanced over the bytes that follow it, one table per power of two of that distance.
 *
 * Contract: zlib-style running CRC — baton_crc32c(0, p, n) is the CRC of p, and feeding a buffer
 * in pieces gives the same value as feeding it whole. Every path returns the same value for the
 * same bytes; tests compare them on random lengths and alignments. Tables are built once, on
 * first use, thread-safely. No allocation. */
#include "rec_internal.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define REC_CRC_X86 1
#else
#define REC_CRC_X86 0
#endif

#define CRC32C_POLY 0x82F63B78U
#define HW_LONG 8192   /* bytes per stream in the 3-way interleave for large buffers */
#define HW_SHORT 256   /* ... and for medium ones */

static uint32_t sw_tab[8][256];
static uint32_t shift_long[4][256];   /* raw CRC state advanced over HW_LONG zero bytes */
static uint32_t shift_short[4][256];  /* ... over HW_SHORT zero bytes */
static uint64_t fold_k64[2], fold_k256[2];   /* carry-less folding constants, see fold_const */
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

/* Raw (no pre/post inversion) table update; the building block of every path. */
static uint32_t sw_raw(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint64_t w = ((uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
                      (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
                      (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56) ^ crc;
        crc = sw_tab[7][w & 0xff] ^ sw_tab[6][(w >> 8) & 0xff] ^ sw_tab[5][(w >> 16) & 0xff] ^
              sw_tab[4][(w >> 24) & 0xff] ^ sw_tab[3][(w >> 32) & 0xff] ^
              sw_tab[2][(w >> 40) & 0xff] ^ sw_tab[1][(w >> 48) & 0xff] ^ sw_tab[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = sw_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

/* A 32×32 bit matrix given by its columns (col[j] = the image of bit j) as four byte-indexed
 * tables, so that applying it costs four lookups. */
static void expand_shift(uint32_t tab[4][256], const uint32_t col[32])
{
    for (int k = 0; k < 4; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                if (b & (1 << i)) v ^= col[8 * k + i];
            tab[k][b] = v;
        }
    }
}

/* The raw CRC state is linear over GF(2): advancing a state over `len` zero bytes is a 32×32
 * bit matrix. Build it column by column (state = one bit, run over zeros), then expand it. */
static void build_shift(uint32_t tab[4][256], size_t len)
{
    static const uint8_t zeros[64];
    uint32_t col[32];
    for (int j = 0; j < 32; j++) {
        uint32_t c = (uint32_t)1 << j;
        for (size_t left = len; left > 0;) {
            size_t k = left < sizeof zeros ? left : sizeof zeros;
            c = sw_raw(c, zeros, k);
            left -= k;
        }
        col[j] = c;
    }
    expand_shift(tab, col);
}

static inline uint32_t apply_shift(uint32_t tab[4][256], uint32_t crc)
{
    return tab[0][crc & 0xff] ^ tab[1][(crc >> 8) & 0xff] ^ tab[2][(crc >> 16) & 0xff] ^
           tab[3][crc >> 24];
}

/* x^e mod P, bit-reflected (bit 31 = x^0): the bitwise CRC step is exactly "multiply by x". */
static uint32_t xpow_mod(unsigned e)
{
    uint32_t r = 0x80000000U;
    while (e--) r = (r & 1) ? (r >> 1) ^ CRC32C_POLY : r >> 1;
    return r;
}

/* Folding a 16-byte block X forward over d bytes onto the block there. With the block loaded
 * little-endian, register bit b is the coefficient of x^(127-b); its low qword Q0 weighs
 * x^(8d+64) and its high qword Q1 x^(8d). Carry-less products of a reflected qword with
 * reflect32(K) << 32 land exactly in the same bit order when K = x^(8d+63) mod P (resp.
 * x^(8d-1) mod P) — the extra x is the one-bit offset of a reflected 64×64 product. So
 *   fold(X) = clmul(Q0, ka) ^ clmul(Q1, kb)  ≡  X · x^(8d)  (mod P),
 * and the CRC of the folded stream equals the CRC of the original one. */
static void fold_const(uint64_t k[2], unsigned d)
{
    k[0] = (uint64_t)xpow_mod(8 * d + 63) << 32;
    k[1] = (uint64_t)xpow_mod(8 * d - 1) << 32;
}

static void build_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        sw_tab[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++)
            sw_tab[k][i] = (sw_tab[k - 1][i] >> 8) ^ sw_tab[0][sw_tab[k - 1][i] & 0xff];
    build_shift(shift_long, HW_LONG);
    build_shift(shift_short, HW_SHORT);
    fold_const(fold_k64, 64);
    fold_const(fold_k256, 256);
}

static inline void tables_init(void) { pthread_once(&tab_once, build_tables); }

uint32_t rec_crc32c_sw(uint32_t crc, const void *p, size_t n)
{
    tables_init();
    return ~sw_raw(~crc, p, n);
}

#if REC_CRC_X86 && defined(__x86_64__)
static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);   /* x86 is little-endian, as the instruction expects */
    return v;
}

/* Three streams of `blk` bytes each, advanced together (the instruction has a latency of three
 * cycles and a throughput of one, so three independent chains keep it busy), then joined:
 * crc(A‖B) = shift(crc(A), |B|) ^ crc0(B) where crc0 starts from 0. */
__attribute__((target("sse4.2"))) static uint32_t hw_blocks(uint32_t crc, const uint8_t **pp,
                                                            size_t *np, size_t blk,
                                                            uint32_t tab[4][256])
{
    const uint8_t *p = *pp;
    size_t n = *np;
    while (n >= 3 * blk) {
        uint64_t c0 = crc, c1 = 0, c2 = 0;
        const uint8_t *end = p + blk;
        do {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + blk));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * blk));
            p += 8;
        } while (p < end);
        crc = apply_shift(tab, (uint32_t)c0) ^ (uint32_t)c1;
        crc = apply_shift(tab, crc) ^ (uint32_t)c2;
        p += 2 * blk;
        n -= 3 * blk;
    }
    *pp = p;
    *np = n;
    return crc;
}

#define FOLD_TARGET __attribute__((target("avx512f,vpclmulqdq,sse4.2")))

FOLD_TARGET static inline __m512i fold64x4(__m512i x, __m512i k, __m512i y)
{
    __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00), hi = _mm512_clmulepi64_epi128(x, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, y, 0x96);   /* lo ^ hi ^ y */
}

/* Large buffers on CPUs with 512-bit carry-less multiply: four 64-byte accumulators fold the
 * data 256 bytes at a time (16 products per 256 bytes, no dependency between accumulators), then
 * collapse into one 64-byte block whose CRC, taken with the crc32 instruction from a zero state,
 * is the CRC of everything folded. The incoming state is XORed into the first four bytes (what a
 * 32-bit CRC register means). Needs n >= 256; leaves n < 64 bytes for the caller. */
FOLD_TARGET static uint32_t hw_fold(uint32_t crc, const uint8_t **pp, size_t *np)
{
    const uint8_t *p = *pp;
    size_t n = *np;
    const __m512i k256 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)fold_k256[1],
                                                               (long long)fold_k256[0]));
    const __m512i k64 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)fold_k64[1],
                                                              (long long)fold_k64[0]));
    __m512i x0 = _mm512_loadu_si512((const void *)p),
            x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128)),
            x3 = _mm512_loadu_si512((const void *)(p + 192));
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
    p += 256;
    n -= 256;
    while (n >= 256) {
        x0 = fold64x4(x0, k256, _mm512_loadu_si512((const void *)p));
        x1 = fold64x4(x1, k256, _mm512_loadu_si512((const void *)(p + 64)));
        x2 = fold64x4(x2, k256, _mm512_loadu_si512((const void *)(p + 128)));
        x3 = fold64x4(x3, k256, _mm512_loadu_si512((const void *)(p + 192)));
        p += 256;
        n -= 256;
    }
    x1 = fold64x4(x0, k64, x1);
    x2 = fold64x4(x1, k64, x2);
    x3 = fold64x4(x2, k64, x3);
    while (n >= 64) {
        x3 = fold64x4(x3, k64, _mm512_loadu_si512((const void *)p));
        p += 64;
        n -= 64;
    }
    uint8_t last[64];
    _mm512_storeu_si512((void *)last, x3);
    uint64_t c = 0;
    for (int i = 0; i < 64; i += 8) c = _mm_crc32_u64(c, load64(last + i));
    *pp = p;
    *np = n;
    return (uint32_t)c;
}

static int fold_state = -1;

static int fold_available(void)
{
    int s = __atomic_load_n(&fold_state, __ATOMIC_RELAXED);
    if (s < 0) {
        __builtin_cpu_init();
        s = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
            __builtin_cpu_supports("sse4.2");
        __atomic_store_n(&fold_state, s, __ATOMIC_RELAXED);
    }
    return s;
}

#define FOLD_MIN 2048   /* below this the crc32 instruction path is as fast */

__attribute__((target("sse4.2"))) static uint32_t hw_raw(uint32_t crc, const uint8_t *p, size_t n,
                                                         int use_fold)
{
    if (use_fold && n >= FOLD_MIN) {
        tables_init();
        crc = hw_fold(crc, &p, &n);
    }
    while (n > 0 && ((uintptr_t)p & 7) != 0) {
        crc = _mm_crc32_u8(crc, *p++);
        n--;
    }
    if (n >= 3 * HW_SHORT) {
        tables_init();
        crc = hw_blocks(crc, &p, &n, HW_LONG, shift_long);
        crc = hw_blocks(crc, &p, &n, HW_SHORT, shift_short);
    }
    uint64_t c = crc;
    while (n >= 8) {
        c = _mm_crc32_u64(c, load64(p));
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
    while (n > 0) {
        crc = _mm_crc32_u8(crc, *p++);
        n--;
    }
    return crc;
}
#endif

static int hw_state = -1; /* -1 unknown, 0 no, 1 yes; a benign race: every thread writes the same */

int rec_crc32c_hw_available(void)
{
    int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
    if (s < 0) {
#if REC_CRC_X86 && defined(__x86_64__)
        __builtin_cpu_init();
        s = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
        s = 0;
#endif
        __atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
    }
    return s;
}

uint32_t rec_crc32c_hw(uint32_t crc, const void *p, size_t n)
{
#if REC_CRC_X86 && defined(__x86_64__)
    if (rec_crc32c_hw_available()) return ~hw_raw(~crc, p, n, fold_available());
#endif
    return rec_crc32c_sw(crc, p, n);   /* no instruction: the reference path, same result */
}

uint32_t rec_crc32c_sse42(uint32_t crc, const void *p, size_t n)
{
#if REC_CRC_X86 && defined(__x86_64__)
    if (rec_crc32c_hw_available()) return ~hw_raw(~crc, p, n, 0);
#endif
    return rec_crc32c_sw(crc, p, n);
}

int rec_crc32c_fold_available(void)
{
#if REC_CRC_X86 && defined(__x86_64__)
    return rec_crc32c_hw_available() && fold_available();
#else
    return 0;
#endif
}

uint32_t baton_crc32c(uint32_t crc, const void *p, size_t n) { return rec_crc32c_hw(crc, p, n); }

uint32_t rec_crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8U; }

uint32_t rec_crc32c_unmask(uint32_t masked)
{
    uint32_t rot = masked - 0xa282ead8U;
    return (rot >> 17) | (rot << 15);
}

/* ---------------------------------------------------------------- pieces in any order */
/* pow_shift[i]: the raw state advanced over 2^i zero bytes; built on the first term, each table
 * the square of the one before (the distance doubled). */
static uint32_t pow_shift[64][4][256];
static pthread_once_t pow_once = PTHREAD_ONCE_INIT;

static void build_pow(void)
{
    tables_init();
    build_shift(pow_shift[0], 1);
    for (int i = 1; i < 64; i++) {
        uint32_t col[32];
        for (int j = 0; j < 32; j++) col[j] = apply_shift(pow_shift[i - 1], apply_shift(pow_shift[i - 1], (uint32_t)1 << j));
        expand_shift(pow_shift[i], col);
    }
}

/* A state advanced over n zero bytes: four lookups per bit set in n. */
static uint32_t advance(uint32_t raw, uint64_t n)
{
    pthread_once(&pow_once, build_pow);
    for (; n && raw; n &= n - 1) raw = apply_shift(pow_shift[__builtin_ctzll(n)], raw);
    return raw;
}

/* zlib's crc32_combine in CRC32C: crc(A‖B) = advance(crc(A), len B) ^ crc(B) (the pre- and
 * post-inversions cancel: advancing is linear), so by induction the CRC of a whole is the XOR over
 * its pieces of advance(crc(piece), bytes after it). */
uint32_t baton_crc32c_shift(uint32_t crc, uint64_t n) { return advance(crc, n); }
