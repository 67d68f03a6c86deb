/* jpeg_mcu.c — the Huffman decoder of a rectangle's MCUs (jmcu_install): in a JPEG with a restart
 * marker after every MCU, each MCU is its own interval, and libjpeg-turbo always takes its slow,
 * marker-checking Huffman path when a restart interval is set (its fast path reads ahead and backs
 * out at every marker). This decoder takes the place of libjpeg's entropy decoder for one
 * rectangle's decompression: each call decodes the next MCU of the rectangle straight from its
 * interval in the file (the restart index says where), into the coefficient blocks libjpeg's
 * coefficient controller hands it; libjpeg does everything else (dequantisation, inverse DCT,
 * upsampling, colour conversion). An entropy decoder is one of libjpeg's replaceable modules, a
 * method table (struct jpeg_entropy_decoder, jpegint.h, the same three fields since libjpeg 6b).
 *
 * Contract: jpeg_rect_internal.h. Invariants:
 *  1. The same coefficients as libjpeg's own decoder for any stream libjpeg decodes without a
 *     warning (tests/unit/test_img_rect.c compares the pixels of both, byte for byte). Anything
 *     else — a code no table has, a run past the 64th coefficient, an MCU that needs more bits
 *     than its interval holds, a marker inside it — is an error (libjpeg's error_exit, so
 *     region.c's longjmp), and region.c decodes the file the ordinary way, whose result stands.
 *  2. Reads nothing outside the file's bytes: an interval is copied, un-stuffed (FF 00 → FF, ended
 *     by any other FF), into a buffer with JMCU_PAD zero bytes after it; a block consumes at most
 *     64 × (16 + 15) bits, so the bit reader (8-byte loads) stays inside the padding until the
 *     check after the block.
 *  3. Every interval starts with the DC predictors at 0 (a restart), so MCUs decode in any order;
 *     calls with no blocks (jpeg_skip_scanlines skipping whole iMCU rows) only count the MCU.
 *  4. The decoding is built twice, plain and with BMI2 (chosen by the CPU; jmcu_baseline = 1
 *     forces the plain one): the same C, so the same coefficients. */
#include "jpeg_rect_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* jpeglib.h needs size_t and FILE before it; jpegint.h after it */
#include <jpeglib.h>
#include <jpegint.h>
#include <jerror.h>

#define INLINE static inline __attribute__((always_inline))  /* into both builds (BMI2 or not) */
#define LOOK 11                /* bits looked up at once */
#define JMCU_PAD (64 * 31 / 8 + 24)  /* a block's most bits, what acc holds, a load */

typedef struct huff {
    uint16_t look[1 << LOOK];  /* (length << 8) | symbol for codes of <= LOOK bits; 0: longer */
    int32_t fast[1 << LOOK];   /* AC: (value << 16) | (run << 8) | bits, where code and value fit
                                * in LOOK bits; 0: decode the symbol */
    int32_t maxcode[18];       /* the largest code of each length, -1 if none; [17] a sentinel */
    int32_t valoff[17];        /* symbol index = code + valoff[length] */
    uint8_t val[256];
    int nval;
} huff;

struct jmcu {
    struct jpeg_entropy_decoder pub;  /* first: libjpeg calls through it */
    huff dc[NUM_HUFF_TBLS], ac[NUM_HUFF_TBLS];
    const huff *bdc[D_MAX_BLOCKS_IN_MCU], *bac[D_MAX_BLOCKS_IN_MCU];
    int bci[D_MAX_BLOCKS_IN_MCU];     /* each block's component in the scan */
    int nblocks;
    const uint8_t *p;                 /* the file */
    const size_t *iv;                 /* its restart index */
    uint32_t mcux;                    /* MCUs per row of the file */
    uint32_t x0, x1, y1, x, y;        /* the rectangle, and the next MCU */
    uint8_t *buf;                     /* one interval, un-stuffed, then JMCU_PAD zeros */
    size_t cap;
    int (*decode)(j_decompress_ptr, struct jmcu *, size_t, JBLOCKROW *, int *);
};

/* The natural order of the zig-zag index, with 16 entries past the end so a run that overshoots
 * writes inside the block before the check after it. */
static const uint8_t natural[64 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

INLINE int extend(uint32_t v, uint32_t s)
{
    return v < (1u << (s - 1)) ? (int)v - (int)(1u << s) + 1 : (int)v;
}

/* The tables of t (libjpeg's, already checked by its own start_pass; checked again here: a count
 * over 256 symbols, a code that does not fit its length, a DC size over 15 refuse it). */
static int make_huff(huff *h, const JHUFF_TBL *t, int dc)
{
    int n = 0;
    for (int l = 1; l <= 16; l++) n += t->bits[l];
    if (n > 256) return 0;
    memset(h->look, 0, sizeof h->look);
    if (!dc) memset(h->fast, 0, sizeof h->fast);
    memcpy(h->val, t->huffval, 256);
    h->nval = n;
    int32_t code = 0;
    int k = 0;
    for (int l = 1; l <= 16; l++) {
        h->valoff[l] = k - code;
        for (int i = 0; i < t->bits[l]; i++, k++, code++) {
            uint32_t sym = t->huffval[k];
            if (code >= 1 << l) return 0;  /* more codes than the length has */
            if (dc && sym > 15) return 0;
            if (l <= LOOK) {
                int sh = LOOK - l;
                for (int e = 0; e < 1 << sh; e++) h->look[(code << sh) | e] = (uint16_t)(l << 8 | sym);
            }
        }
        h->maxcode[l] = t->bits[l] ? code - 1 : -1;
        if (code >= 1 << l) return 0;  /* the last code all ones: libjpeg refuses it too */
        code <<= 1;
    }
    h->maxcode[17] = 0x7fffffff;
    for (uint32_t i = 0; !dc && i < 1u << LOOK; i++) {
        uint32_t e = h->look[i], l = e >> 8, r = (e >> 4) & 15, s = e & 15;
        if (!e || !s || l + s > LOOK) continue;
        uint32_t v = (i >> (LOOK - l - s)) & ((1u << s) - 1);
        h->fast[i] = (int32_t)((uint32_t)extend(v, s) << 16) | (int32_t)(r << 8 | (l + s));
    }
    return 1;
}

/* The bit reader: acc holds the next cnt bits of the interval at its top (zeros below them);
 * ptr is where the bytes after them start. A refill ORs in the next 8 bytes shifted under the
 * cnt bits and leaves 56..63 bits, with a load whose address does not depend on the bits just
 * consumed (so it is off the decoding's chain of dependencies). Bits consumed so far:
 * (ptr - start) * 8 - cnt. */
typedef struct bitrd {
    uint64_t acc;
    uint32_t cnt;
    const uint8_t *ptr;
} bitrd;

INLINE void refill(bitrd *r)
{
    uint64_t v;
    memcpy(&v, r->ptr, 8);
    r->acc |= __builtin_bswap64(v) >> r->cnt;
    r->ptr += (63 - r->cnt) >> 3;
    r->cnt |= 56;
}

INLINE void consume(bitrd *r, uint32_t n)
{
    r->acc <<= n;
    r->cnt -= n;
}

/* The symbol at the reader's position (at least 16 bits in acc), its code length in *l; -1 for
 * a code no table has. */
INLINE int symbol(const huff *h, uint64_t acc, uint32_t *l)
{
    uint32_t e = h->look[acc >> (64 - LOOK)];
    if (e) {
        *l = e >> 8;
        return (int)(e & 255);
    }
    for (uint32_t n = LOOK + 1; n <= 16; n++) {
        int32_t code = (int32_t)(acc >> (64 - n));
        if (code <= h->maxcode[n]) {
            int32_t i = code + h->valoff[n];
            if (i < 0 || i >= h->nval) return -1;
            *l = n;
            return h->val[i];
        }
    }
    return -1;
}

/* One block: 0 for a code no table has or a run past the block's end. The reader is refilled
 * (56 bits or more) before every coefficient, which takes at most 16 + 15 bits. The next
 * coefficient's lookup is made from acc as shifted, before the refill: a coefficient leaves at
 * least 25 bits and the lookup reads 11, and a refill only adds bits below the ones there, so
 * the two do not wait for each other. */
INLINE int decode_block(const struct jmcu *m, int blk, bitrd *r, int *last, JCOEF *out)
{
    const huff *dc = m->bdc[blk], *ac = m->bac[blk];
    bitrd b = *r;
    uint32_t l, s;
    refill(&b);
    int sym = symbol(dc, b.acc, &l);
    if (sym < 0) return 0;
    s = (uint32_t)sym;
    consume(&b, l);
    if (s) {
        *last += extend((uint32_t)(b.acc >> (64 - s)), s);
        consume(&b, s);
    }
    out[0] = (JCOEF)*last;
    int32_t f = ac->fast[b.acc >> (64 - LOOK)];
    refill(&b);
    int k = 1;
    while (k < 64) {
        if (f) {
            k += (f >> 8) & 15;
            out[natural[k]] = (JCOEF)(f >> 16);
            consume(&b, (uint32_t)f & 255);
            f = ac->fast[b.acc >> (64 - LOOK)];
            refill(&b);
            k++;
            continue;
        }
        if ((sym = symbol(ac, b.acc, &l)) < 0) return 0;
        uint32_t run = (uint32_t)sym >> 4;
        s = (uint32_t)sym & 15;
        consume(&b, l);
        if (s) {
            k += (int)run;
            out[natural[k]] = (JCOEF)extend((uint32_t)(b.acc >> (64 - s)), s);
            consume(&b, s);
            k++;
        } else {
            if (run != 15) break;
            k += 16;
        }
        f = ac->fast[b.acc >> (64 - LOOK)];
        refill(&b);
    }
    *r = b;
    return k <= 64;
}

/* The interval of MCU i into m->buf, un-stuffed; its length in bits. */
static size_t unstuff(j_decompress_ptr ci, struct jmcu *m, size_t i)
{
    const uint8_t *a = m->p + m->iv[i];
    size_t n = m->iv[i + 1] - 2 - m->iv[i];
    if (n + JMCU_PAD > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < n + JMCU_PAD) cap *= 2;
        uint8_t *b = realloc(m->buf, cap);
        if (!b) ERREXIT(ci, JERR_OUT_OF_MEMORY);
        m->buf = b;
        m->cap = cap;
    }
    size_t o = 0, at = 0;
    while (at < n) {
        const uint8_t *f = memchr(a + at, 0xff, n - at);
        size_t run = f ? (size_t)(f - (a + at)) : n - at;
        memcpy(m->buf + o, a + at, run);
        o += run;
        at += run;
        if (!f) break;
        if (at + 1 >= n || a[at + 1] != 0) break;  /* fill bytes before the marker */
        m->buf[o++] = 0xff;
        at += 2;
    }
    memset(m->buf + o, 0, JMCU_PAD);
    return o * 8;
}

/* The MCU's blocks from its interval: 0 (err: what) when it cannot be decoded. */
INLINE int decode_blocks(j_decompress_ptr ci, struct jmcu *m, size_t i, JBLOCKROW *blocks, int *what)
{
    size_t nbits = unstuff(ci, m, i);
    bitrd r = {0, 0, m->buf};
    int last[MAX_COMPS_IN_SCAN] = {0};
    for (int b = 0; b < m->nblocks; b++) {
        if (!decode_block(m, b, &r, &last[m->bci[b]], blocks[b][0])) return *what = JWRN_HUFF_BAD_CODE, 0;
        if ((size_t)(r.ptr - m->buf) * 8 - r.cnt > nbits) return *what = JWRN_HIT_MARKER, 0;
    }
    return 1;
}

/* The same code built twice: for any x86-64, and with BMI2's shifts (one instruction each, where
 * a shift by a register's count is two: 3 % of a crop), chosen once by the CPU. */
static int mcu_plain(j_decompress_ptr ci, struct jmcu *m, size_t i, JBLOCKROW *blocks, int *what)
{
    return decode_blocks(ci, m, i, blocks, what);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("bmi2"))) static int mcu_bmi2(j_decompress_ptr ci, struct jmcu *m, size_t i,
                                                    JBLOCKROW *blocks, int *what)
{
    return decode_blocks(ci, m, i, blocks, what);
}

static int have_bmi2(void)
{
    return __builtin_cpu_supports("bmi2");
}
#else
#define mcu_bmi2 mcu_plain
static int have_bmi2(void)
{
    return 0;
}
#endif

int jmcu_baseline;

static boolean decode_mcu(j_decompress_ptr ci, JBLOCKROW *blocks)
{
    struct jmcu *m = (struct jmcu *)ci->entropy;
    if (m->y >= m->y1) ERREXIT(ci, JERR_BAD_STATE);
    size_t i = (size_t)m->y * m->mcux + m->x;
    if (++m->x == m->x1) {
        m->x = m->x0;
        m->y++;
    }
    int what = 0;
    if (blocks && !m->decode(ci, m, i, blocks, &what)) ERREXIT(ci, what);
    return TRUE;
}

static void start_pass(j_decompress_ptr ci)
{
    (void)ci;
}

int jmcu_install(struct jpeg_decompress_struct *ci, jrect *j, const uint8_t *p, uint32_t x0, uint32_t x1,
                 uint32_t y0, uint32_t y1)
{
    if (ci->progressive_mode || ci->arith_code || ci->comps_in_scan != (int)j->ncomp || ci->Ss != 0 ||
        ci->Se != 63 || ci->Ah != 0 || ci->Al != 0 || ci->blocks_in_MCU < 1 ||
        ci->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU || ci->MCUs_per_row != x1 - x0 || ci->MCU_rows_in_scan != y1 - y0)
        return 0;
    struct jmcu *m = j->mcu;
    if (!m && !(m = j->mcu = calloc(1, sizeof *m))) return 0;
    int made_dc = 0, made_ac = 0;
    for (int c = 0; c < ci->comps_in_scan; c++) {
        int d = ci->cur_comp_info[c]->dc_tbl_no, a = ci->cur_comp_info[c]->ac_tbl_no;
        if (d < 0 || d >= NUM_HUFF_TBLS || a < 0 || a >= NUM_HUFF_TBLS || !ci->dc_huff_tbl_ptrs[d] ||
            !ci->ac_huff_tbl_ptrs[a])
            return 0;
        if (!(made_dc >> d & 1) && !make_huff(&m->dc[d], ci->dc_huff_tbl_ptrs[d], 1)) return 0;
        if (!(made_ac >> a & 1) && !make_huff(&m->ac[a], ci->ac_huff_tbl_ptrs[a], 0)) return 0;
        made_dc |= 1 << d;
        made_ac |= 1 << a;
    }
    for (int b = 0; b < ci->blocks_in_MCU; b++) {
        int c = ci->MCU_membership[b];
        if (c < 0 || c >= ci->comps_in_scan) return 0;
        m->bci[b] = c;
        m->bdc[b] = &m->dc[ci->cur_comp_info[c]->dc_tbl_no];
        m->bac[b] = &m->ac[ci->cur_comp_info[c]->ac_tbl_no];
    }
    m->nblocks = ci->blocks_in_MCU;
    m->p = p;
    m->iv = j->iv;
    m->mcux = j->mcux;
    m->x0 = m->x = x0;
    m->x1 = x1;
    m->y = y0;
    m->y1 = y1;
    m->decode = !jmcu_baseline && have_bmi2() ? mcu_bmi2 : mcu_plain;
    m->pub.start_pass = start_pass;
    m->pub.decode_mcu = decode_mcu;
    m->pub.insufficient_data = FALSE;
    ci->entropy = &m->pub;
    return 1;
}

void jmcu_free(struct jmcu *m)
{
    if (!m) return;
    free(m->buf);
    free(m);
}
