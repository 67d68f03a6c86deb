/* jpeg_rect_internal.h — JPEGs with a restart marker after every MCU: the lossless transcode that
 * writes them (src/img/jpeg_restart.c, what `baton pack --jpeg-restart` does to each JPEG) and the
 * index that cuts a rectangle of whole MCUs out of one as a small JPEG of its own
 * (src/img/jpeg_rect.c, what region.c's fast path decodes instead of the rows above and across a
 * crop). Private to src/img and its tests.
 *
 * Contract:
 *  - img_jpeg_restart: the same DCT coefficients, quantisation tables, sampling factors and colour
 *    space (so the same pixels under any decoder), written as one sequential (baseline, or
 *    extended-sequential when a quantisation table needs 16 bits) interleaved scan with DRI = 1
 *    and Huffman tables optimised for the image; progressive input becomes sequential. Markers
 *    other than the ones libjpeg writes for the colour space (JFIF or Adobe) are dropped.
 *    Deterministic for a given libjpeg-turbo. Errors: BATON_ERR_CORRUPT (libjpeg's message),
 *    BATON_ERR_FORMAT for CMYK/YCCK (not transcoded: baton decodes neither).
 *  - jrect_index: reads the header and indexes the restart intervals of p/n. Returns 1 only when
 *    the file is one the rectangle can be cut from: SOF0/SOF1, 8-bit, 1 component (sampled 1×1) or
 *    3, one scan holding every component (Ss 0, Se 63, no successive approximation), DRI = 1
 *    before it, exactly MCUs-per-row × MCU-rows intervals, each non-empty, the RST markers in
 *    order (RST0..RST7 repeating) and an EOI after the last. Anything else — including any
 *    malformed or hostile header — returns 0 and the caller decodes the ordinary way; 0 is never
 *    an error. Reads nothing outside p[0, n); memory grows with the MCU count, which is checked
 *    against the bytes (every interval needs at least 3) before anything is allocated.
 *  - jrect_build: after jrect_index returned 1 for p, the JPEG of the MCU rectangle
 *    [x0, x1) × [y0, y1) (MCU units, x1 <= mcux, y1 <= mcuy, non-empty): the header segments
 *    (APP0/APP14 kept for the colour space, other APPn and COM dropped) with the SOF's size made
 *    the rectangle's (ending at the image's own edge where the rectangle reaches it), the
 *    rectangle's intervals in raster order with RST markers renumbered from RST0, and EOI. Each
 *    MCU's entropy bytes are copied unchanged: every interval starts with reset DC predictors, so
 *    the rectangle decodes to exactly the pixels the whole image has there, up to the chroma
 *    upsampling at its edges. With data = 0 the header and EOI only, no entropy bytes: what
 *    jmcu_install's decoder reads the MCUs from the file itself for. Returns the length in j->out,
 *    or 0 when out of memory.
 *  - jmcu_install (src/img/jpeg_mcu.c): after jpeg_start_decompress of the rectangle
 *    [x0, x1) × [y0, y1) that jrect_build cut from p (j indexed p), makes ci's entropy decoder
 *    one that decodes each MCU straight from its interval in p — the coefficients libjpeg's own
 *    decoder gives, with a fast Huffman lookup (libjpeg-turbo takes its slow path whenever a
 *    restart interval is set). Returns 0, installing nothing, for a scan it does not take (not
 *    one sequential Huffman scan of every component, a table missing or malformed). A stream it
 *    cannot decode (an unknown code, a run past the block, an MCU longer than its interval) is
 *    libjpeg's error_exit, so the caller's longjmp; region.c then decodes the file the ordinary
 *    way. p and j must outlive the decompression; its state lives in j (j->mcu, freed by
 *    jrect_free).
 *  - A jrect is zero-initialised, reused for any number of files (buffers grow to the largest)
 *    and released with jrect_free. */
#ifndef BATON_JPEG_RECT_INTERNAL_H
#define BATON_JPEG_RECT_INTERNAL_H

#include "baton/img.h"

int img_jpeg_restart(const uint8_t *p, size_t n, baton_buf *out, baton_err *err);

typedef struct jrect {
    uint32_t h, w;             /* the image's size */
    uint32_t ncomp;            /* 1 or 3 */
    uint32_t hmax;             /* the largest horizontal sampling factor (1 for one component) */
    uint32_t mcu_w, mcu_h;     /* pixels per MCU: 8·Hmax × 8·Vmax (8 × 8 for one component) */
    uint32_t mcux, mcuy;       /* MCUs per row, MCU rows */
    uint8_t *hdr;              /* the kept header segments, SOI to the end of SOS */
    size_t hdr_len, hdr_cap;
    size_t sof_at;             /* the SOF segment's offset in hdr */
    size_t *iv;                /* iv[i]: MCU i's first entropy byte; iv[i + 1] - 2: its end (the
                                * marker after it); iv[mcux·mcuy] = the EOI's offset + 2 */
    size_t iv_cap;             /* entries */
    uint8_t *out;              /* the rectangle's JPEG */
    size_t out_cap;
    struct jmcu *mcu;          /* jpeg_mcu.c's decoder, on first use */
} jrect;

int jrect_index(jrect *j, const uint8_t *p, size_t n);
size_t jrect_build(jrect *j, const uint8_t *p, uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1, int data);
void jrect_free(jrect *j);

struct jpeg_decompress_struct;
int jmcu_install(struct jpeg_decompress_struct *ci, jrect *j, const uint8_t *p, uint32_t x0, uint32_t x1,
                 uint32_t y0, uint32_t y1);
void jmcu_free(struct jmcu *m);
/* 1: jmcu_install's decoder built for any x86-64 even where the CPU has BMI2 (tests compare the
 * two builds of the same code). */
extern int jmcu_baseline;

#endif
