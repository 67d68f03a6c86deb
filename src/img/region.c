/* region.c — decoding the part of an image a crop uses, at the size it is used: img_decode_crop
 * (the fast path: for JPEG, only the box's rows and iMCU columns, DCT-scaled) and
 * img_decode_crop_ref (the plain reference: the whole image, then the same resample).
 *
 * Contract (see region_internal.h for the interface):
 *  - JPEG (fast): the libjpeg API of libjpeg-turbo, a decompressor created for every image and
 *    destroyed after it, failed or not (libjpeg would otherwise lend one file's Huffman and
 *    quantisation tables to the next file that lacks them); its error handler lives in the scratch
 *    (s->jpeg), made on first use and freed by img_scratch_free. The header is read once; its size is checked against BATON_IMG_MAX_PIXELS
 *    and CMYK/YCCK refused before anything is decoded. The DCT scale is the smallest M/8
 *    (M = 1, 2, 4: the scales with SIMD kernels) that keeps the box at least oh × ow, else 8/8. Only the
 *    columns the resampler's taps reach, plus one pixel each side (jpeg_crop_scanline widens them to
 *    the iMCU boundary), and the rows they reach, plus one each side, are decoded
 *    (jpeg_skip_scanlines above; nothing below is read). The box is then mapped into the
 *    decoded region by the exact scale factor output_size / image_size and resampled.
 *  - JPEG with a restart marker after every MCU (`baton pack --jpeg-restart`; recognised from the
 *    header: jpeg_rect_internal.h says which files): the same region — same scale, columns, rows
 *    and libjpeg calls — is decoded from a small JPEG of only the MCUs that hold it, plus the MCU
 *    row above (below) where vertically upsampled chroma reads it (jpeg_region_rect says when;
 *    jpeg_rect.c cuts it), so the MCUs above and beside the box are never entropy-decoded; the
 *    MCUs are entropy-decoded by jpeg_mcu.c's decoder straight from the file (s->huff_off: by
 *    libjpeg's own, from a copy of their bytes). The result is byte-identical to the path above
 *    (tests/unit/test_img_rect.c). If the rectangle fails for any reason the path above decodes
 *    the file's own bytes with the box already planned (the plan runs once per image) and its
 *    result or error stands. s->rect_off turns it off.
 *  - libjpeg never prints and never exits here: fatal errors come back through setjmp/longjmp as
 *    BATON_ERR_CORRUPT (BATON_ERR_FORMAT when the decoder would need more memory than the image
 *    can justify: libjpeg's max_memory_to_use is set from the header's size, so a hostile
 *    progressive file cannot make it allocate more); warnings: "Premature end of JPEG file" is
 *    BATON_ERR_TRUNCATED and "premature end of data segment" BATON_ERR_CORRUPT, others (extraneous
 *    bytes, a lost restart marker) are accepted as jpeg.c does. More than JPEG_MAX_SCANS scans is
 *    refused (BATON_ERR_CORRUPT), as TurboJPEG's scan limit does, so a file of many empty scans
 *    cannot spin. A baseline file cut off below the box is not noticed: the rows the box uses are
 *    complete, so its pixels are right (the reference, which decodes everything, says TRUNCATED).
 *  - PNG and raw (fast and reference) and every encoding in the reference: baton_img_decode of
 *    the whole image into s->full with c channels, plan on its size, resample. */
#include "region_internal.h"
#include "img_internal.h"
#include "jpeg_rect_internal.h"

#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* jpeglib.h needs size_t and FILE before it */
#include <jpeglib.h>
#include <jerror.h>

#define JPEG_MAX_SCANS 500
#define JPEG_MEM_SLACK ((uint64_t)48 << 20)  /* tables, row buffers, the Huffman state */

typedef struct region_jpeg {
    struct jpeg_decompress_struct ci;
    struct jpeg_error_mgr jerr;
    struct jpeg_progress_mgr prog;
    jmp_buf jb;
    baton_err *err;  /* the current call's */
    int code;        /* the status a longjmp returns */
    int live;        /* ci is created */
} region_jpeg;

/* Record the failure (message from libjpeg's table) and unwind to the setjmp in crop_jpeg. */
static void fail(j_common_ptr c, int code)
{
    region_jpeg *r = c->client_data;
    char msg[JMSG_LENGTH_MAX];
    (*c->err->format_message)(c, msg);
    int mem = c->err->msg_code == JERR_OUT_OF_MEMORY || c->err->msg_code == JERR_NO_BACKING_STORE;
    r->code = mem ? BATON_ERR_FORMAT : code;
    if (mem)
        baton_err_set(r->err, r->code, "JPEG: the image needs more memory than its size allows (%s)", msg);
    else
        baton_err_set(r->err, r->code, "JPEG: %s", msg);
    longjmp(r->jb, 1);
}

static void on_error(j_common_ptr c)
{
    fail(c, BATON_ERR_CORRUPT);
}

static void on_message(j_common_ptr c, int level)
{
    if (level >= 0) return;  /* trace messages */
    c->err->num_warnings++;
    if (c->err->msg_code == JWRN_JPEG_EOF) fail(c, BATON_ERR_TRUNCATED);
    if (c->err->msg_code == JWRN_HIT_MARKER) fail(c, BATON_ERR_CORRUPT);
}

static void on_progress(j_common_ptr c)
{
    j_decompress_ptr d = (j_decompress_ptr)c;
    if (c->is_decompressor && d->input_scan_number > JPEG_MAX_SCANS) {
        region_jpeg *r = c->client_data;
        r->code = BATON_ERR_CORRUPT;
        baton_err_set(r->err, r->code, "JPEG: more than %d scans", JPEG_MAX_SCANS);
        longjmp(r->jb, 1);
    }
}

static region_jpeg *scratch_jpeg(img_scratch *s, baton_err *err)
{
    if (s->jpeg) return s->jpeg;
    region_jpeg *r = calloc(1, sizeof *r);
    if (!r) {
        baton_err_set(err, BATON_ERR_NOMEM, "JPEG: out of memory for a decompressor");
        return NULL;
    }
    r->ci.err = jpeg_std_error(&r->jerr);
    r->jerr.error_exit = on_error;
    r->jerr.emit_message = on_message;
    r->ci.client_data = r;
    r->prog.progress_monitor = on_progress;
    s->jpeg = r;
    return r;
}

/* A decompressor for one image, under the caller's setjmp (creating fails only when out of
 * memory). libjpeg keeps the quantisation and Huffman tables of the images a decompressor decoded
 * before (for abbreviated streams), so a file that uses a table it does not define would decode
 * with the previous file's: its pixels would depend on the record the worker decoded last. A
 * fresh one per image costs microseconds. */
static void jpeg_begin(region_jpeg *r)
{
    r->live = 1;
    jpeg_create_decompress(&r->ci);
    r->ci.progress = &r->prog;
}

static void jpeg_end(region_jpeg *r)
{
    if (r->live) jpeg_destroy_decompress(&r->ci);
    r->live = 0;
}

void img_region_jpeg_free(img_scratch *s)
{
    if (!s) return;
    if (s->rect) {
        jrect_free(s->rect);
        free(s->rect);
        s->rect = NULL;
    }
    region_jpeg *r = s->jpeg;
    if (!r) return;
    jpeg_end(r);
    free(r);
    s->jpeg = NULL;
}

static int box_ok(const double box[4], uint32_t h, uint32_t w)
{
    for (int i = 0; i < 4; i++)
        if (!isfinite(box[i])) return 0;
    return box[0] >= 0 && box[1] >= 0 && box[0] < box[2] && box[1] < box[3] && box[2] <= (double)w &&
           box[3] <= (double)h;
}

static int plan_box(img_crop_plan plan, void *ctx, uint32_t h, uint32_t w, double box[4], baton_err *err)
{
    int rc = plan(ctx, h, w, box, err);
    if (rc) return rc;
    if (!box_ok(box, h, w))
        return baton_err_set(err, BATON_ERR_ARG, "crop: box (%g,%g)-(%g,%g) is not inside the %ux%u image",
                             box[0], box[1], box[2], box[3], h, w);
    return BATON_OK;
}

static int check_args(uint32_t c, img_crop_plan plan, uint32_t oh, uint32_t ow, img_scratch *s,
                      baton_image *dst, baton_err *err)
{
    if (c != 1 && c != 3)
        return baton_err_set(err, BATON_ERR_ARG, "crop: %u channels requested (expected 1 or 3)", c);
    if (!plan || !s || !dst || dst == &s->full)
        return baton_err_set(err, BATON_ERR_ARG, "crop: no plan, scratch or destination");
    return img_check_pixels(oh, ow, "crop: output", err);
}

/* The decoded pixels [lo, hi) that a resample of [b0, b1) (decoded coordinates) to n outputs
 * reads, with one pixel of margin each side, clipped to [0, size). Mirrors resample.c's taps. */
static void tap_span(double b0, double b1, uint32_t n, uint32_t size, uint32_t *lo, uint32_t *hi)
{
    double scale = (b1 - b0) / n, support = scale > 1 ? scale : 1;
    double a = floor(b0 + 0.5 * scale - support + 0.5) - 1;
    double b = floor(b1 - 0.5 * scale + support + 0.5) + 1;
    *lo = a <= 0 ? 0 : a >= size ? size - 1 : (uint32_t)a;
    *hi = b >= size ? size : b <= *lo ? *lo + 1 : (uint32_t)b;
}

/* The smallest M/8 of 1/8, 2/8, 4/8 that keeps the box at least oh × ow, else 8/8. libjpeg-turbo
 * has SIMD inverse DCTs for 8×8, 4×4 and 2×2 only (1×1 is the DC term): its 3/8..7/8 are plain C
 * and measured slower than 8/8 (a 0.3-megapixel photo: 8/8 1.57 ms, 7/8 2.29, 6/8 1.82, 5/8 1.69,
 * 4/8 1.33, 2/8 1.19, 1/8 0.96). */
static int dct_scale(const double box[4], uint32_t oh, uint32_t ow)
{
    double bw = box[2] - box[0], bh = box[3] - box[1];
    for (int m = 1; m < 8; m *= 2)
        if (bw * m / 8 >= ow && bh * m / 8 >= oh) return m;
    return 8;
}

static void set_memory_limit(j_decompress_ptr ci)
{
    /* a whole-image coefficient buffer (progressive or multi-scan): 2 bytes per coefficient,
     * every component at full size at worst, padded to 32-pixel blocks */
    uint64_t w = ci->image_width + 32u, h = ci->image_height + 32u;
    uint64_t limit = w * h * 2u * (uint64_t)ci->num_components + JPEG_MEM_SLACK;
    ci->mem->max_memory_to_use = limit > LONG_MAX ? LONG_MAX : (long)limit;
}

/* Decode the rows [y0, y1) of the (cropped) output into s->full. */
static void read_rows(j_decompress_ptr ci, uint32_t y0, uint32_t y1, baton_image *full)
{
    if (y0 > 0 && jpeg_skip_scanlines(ci, y0) != y0) ERREXIT(ci, JERR_BAD_STATE);
    size_t stride = (size_t)full->w * full->c;
    for (uint32_t y = y0; y < y1; y++) {
        JSAMPROW row = full->px + (size_t)(y - y0) * stride;
        if (jpeg_read_scanlines(ci, &row, 1) != 1) ERREXIT(ci, JERR_BAD_STATE);
    }
}

typedef struct crop_req {
    uint32_t c, oh, ow;
    const uint32_t *expect;
    img_crop_plan plan;
    void *ctx;
    uint32_t *src_h, *src_w;
} crop_req;

/* After the header: size, colour space (refused: "CMYK", "YCCK" or NULL) and plan checks; the box
 * in image coordinates. */
static int jpeg_plan(uint32_t h, uint32_t w, const char *refused, const crop_req *q, double box[4], baton_err *err)
{
    int rc = img_check_pixels(h, w, "JPEG", err);
    if (rc) return rc;
    if (refused) return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: %s colour space is not supported", refused);
    if (q->expect && ((q->expect[0] && q->expect[0] != h) || (q->expect[1] && q->expect[1] != w)))
        return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: %ux%u image, expected %ux%u", h, w,
                             q->expect[0] ? q->expect[0] : h, q->expect[1] ? q->expect[1] : w);
    if (q->src_h) *q->src_h = h;
    if (q->src_w) *q->src_w = w;
    return plan_box(q->plan, q->ctx, h, w, box, err);
}

/* The region of the ws × hs output (the image at scale M/8) that the box needs: the box in output
 * coordinates (sb) and the pixel span the resampler's taps reach (x0..x1, y0..y1). */
typedef struct region_span {
    double sb[4];
    uint32_t x0, x1, y0, y1;
} region_span;

static void span_of(const double box[4], uint32_t h, uint32_t w, uint32_t hs, uint32_t ws, const crop_req *q,
                    region_span *g)
{
    double fx = (double)ws / w, fy = (double)hs / h;
    double sb[4] = {box[0] * fx, box[1] * fy, box[2] * fx, box[3] * fy};
    memcpy(g->sb, sb, sizeof sb);
    tap_span(sb[0], sb[2], q->ow, ws, &g->x0, &g->x1);
    tap_span(sb[1], sb[3], q->oh, hs, &g->y0, &g->y1);
}

/* The box in the coordinates of the decoded region (columns xoff.., rows g->y0..), clamped to it. */
static void region_box(const region_span *g, uint32_t xoff, uint32_t cw, double rbox[4])
{
    double rows = g->y1 - g->y0;
    double lim[4] = {cw, rows, cw, rows};
    double off[4] = {xoff, g->y0, xoff, g->y0};
    for (int i = 0; i < 4; i++) {
        double v = g->sb[i] - off[i];
        rbox[i] = v < 0 ? 0 : v > lim[i] ? lim[i] : v;
    }
}

static void set_output(j_decompress_ptr ci, int m, uint32_t c)
{
    ci->scale_num = (unsigned)m;
    ci->scale_denom = 8;
    ci->out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    ci->dct_method = JDCT_ISLOW;
    ci->do_fancy_upsampling = TRUE;
    set_memory_limit(ci);
}

/* The decoding proper, under the caller's setjmp: box → the region in s->full, rbox the box in
 * the region's coordinates. planned: the box, when the rectangle path planned it already (the
 * plan runs once per image: it may draw random numbers). Returns non-zero (err set) for a refusal
 * before decoding. */
static int jpeg_region(region_jpeg *r, const uint8_t *p, size_t n, const crop_req *q, const double *planned,
                       img_scratch *s, double rbox[4], baton_err *err)
{
    j_decompress_ptr ci = &r->ci;
    jpeg_mem_src(ci, p, (unsigned long)n);
    jpeg_read_header(ci, TRUE);
    double box[4];
    int rc;
    if (planned) {
        memcpy(box, planned, sizeof box);
        if (!box_ok(box, ci->image_height, ci->image_width)) ERREXIT(ci, JERR_BAD_STATE);
    } else {
        J_COLOR_SPACE cs = ci->jpeg_color_space;
        rc = jpeg_plan(ci->image_height, ci->image_width, cs == JCS_CMYK ? "CMYK" : cs == JCS_YCCK ? "YCCK" : NULL, q,
                       box, err);
        if (rc) return rc;
    }
    set_output(ci, dct_scale(box, q->oh, q->ow), q->c);
    jpeg_start_decompress(ci);
    uint32_t ws = ci->output_width, hs = ci->output_height;
    region_span g;
    span_of(box, ci->image_height, ci->image_width, hs, ws, q, &g);
    JDIMENSION xoff = g.x0, cw = g.x1 - g.x0;
    if (cw < ws) jpeg_crop_scanline(ci, &xoff, &cw);
    if (cw != ci->output_width || xoff + cw > ws) ERREXIT(ci, JERR_BAD_CROP_SPEC);
    rc = baton_image_resize(&s->full, g.y1 - g.y0, cw, q->c, err);
    if (rc) return rc;
    read_rows(ci, g.y0, g.y1, &s->full);
    region_box(&g, xoff, cw, rbox);
    return BATON_OK;
}

/* The rectangle path, under the caller's setjmp, for a file with a restart marker after every MCU
 * (j indexed it): the same region jpeg_region would decode — the same scale, span, iMCU-aligned
 * columns (jpeg_crop_scanline's rule) and rows — but from a JPEG of only the MCUs that hold it,
 * plus, where a component is upsampled vertically (4:2:0, 4:4:0) and the span starts on an MCU
 * row's first row (ends on its last), one MCU row above (below) where the image has it (it gives
 * the chroma upsampling of that row its context; no other row reads it; 4:4:4, 4:2:2 and grey
 * need none; no column margin is needed, since
 * jpeg_crop_scanline's edges are upsampled as image edges in both paths), decoded with the same
 * calls: s->full gets the same bytes, without entropy-decoding every MCU above and beside the box. */
static int jpeg_region_rect(region_jpeg *r, jrect *j, const uint8_t *p, const crop_req *q, const double box[4],
                            img_scratch *s, double rbox[4], baton_err *err)
{
    j_decompress_ptr ci = &r->ci;
    uint32_t m = (uint32_t)dct_scale(box, q->oh, q->ow);
    uint32_t ws = (uint32_t)(((uint64_t)j->w * m + 7) / 8), hs = (uint32_t)(((uint64_t)j->h * m + 7) / 8);
    region_span g;
    span_of(box, j->h, j->w, hs, ws, q, &g);
    uint32_t xoff = g.x0, cw = g.x1 - g.x0;
    if (cw < ws) {  /* jpeg_crop_scanline: down to the iMCU column, which is one MCU wide here */
        uint32_t align = m * j->hmax;
        xoff = g.x0 / align * align;
        cw = g.x1 - xoff;
    }
    uint32_t smw = j->mcu_w * m / 8, smh = j->mcu_h * m / 8;  /* an MCU in output pixels */
    uint32_t mx0 = xoff / smw, mx1 = (xoff + cw + smw - 1) / smw, my0 = g.y0 / smh, my1 = (g.y1 + smh - 1) / smh;
    if (mx1 > j->mcux || my1 > j->mcuy) ERREXIT(ci, JERR_BAD_CROP_SPEC);
    uint32_t rx0 = mx0, rx1 = mx1;   /* no column margin: jpeg_crop_scanline's edges are image edges */
    /* a row margin only where a component is upsampled vertically (an MCU taller than 8 rows:
     * 4:2:0, 4:4:0), whose fancy upsampling reads the chroma row above and below: of the
     * region's rows, only its first reads the chroma row above it (output row 2k blends chroma
     * rows k and k - 1) and only its last the row below (2k + 1: k and k + 1), so the margin is
     * needed only where the span starts on the MCU row's first row or ends on its last one */
    int vctx = j->mcu_h > 8;
    int above = vctx && my0 > 0 && g.y0 == my0 * smh, below = vctx && my1 < j->mcuy && g.y1 == my1 * smh;
    uint32_t ry0 = above ? my0 - 1 : my0, ry1 = below ? my1 + 1 : my1;
    size_t len = jrect_build(j, p, rx0, rx1, ry0, ry1, s->huff_off);
    if (!len) return baton_err_set(err, BATON_ERR_NOMEM, "JPEG: out of memory for a %ux%u-MCU rectangle",
                                   ry1 - ry0, rx1 - rx0);
    jpeg_mem_src(ci, j->out, (unsigned long)len);
    jpeg_read_header(ci, TRUE);
    set_output(ci, (int)m, q->c);
    jpeg_start_decompress(ci);
    if (!s->huff_off && !jmcu_install(ci, j, p, rx0, rx1, ry0, ry1)) ERREXIT(ci, JERR_NOT_COMPILED);
    uint32_t ox = rx0 * smw, oy = ry0 * smh;
    uint32_t rw = (rx1 == j->mcux ? ws : rx1 * smw) - ox, rh = (ry1 == j->mcuy ? hs : ry1 * smh) - oy;
    if (ci->output_width != rw || ci->output_height != rh) ERREXIT(ci, JERR_BAD_CROP_SPEC);
    JDIMENSION rxoff = xoff - ox, rcw = cw;
    if (cw < ws) jpeg_crop_scanline(ci, &rxoff, &rcw);
    if (rxoff != xoff - ox || rcw != cw || ci->output_width != cw) ERREXIT(ci, JERR_BAD_CROP_SPEC);
    int rc = baton_image_resize(&s->full, g.y1 - g.y0, cw, q->c, err);
    if (rc) return rc;
    read_rows(ci, g.y0 - oy, g.y1 - oy, &s->full);
    region_box(&g, xoff, cw, rbox);
    return BATON_OK;
}

/* jpeg_region under a setjmp for libjpeg's errors, with a decompressor of its own. */
static int run_scan(region_jpeg *r, const uint8_t *p, size_t n, const crop_req *q, const double *planned,
                    img_scratch *s, double rbox[4], baton_err *err)
{
    baton_err local;
    r->err = err ? err : &local;
    r->code = BATON_OK;
    if (setjmp(r->jb)) {
        jpeg_end(r);
        return r->code;
    }
    jpeg_begin(r);
    int rc = jpeg_region(r, p, n, q, planned, s, rbox, r->err);
    jpeg_end(r);
    return rc;
}

/* jpeg_region_rect likewise. */
static int run_rect(region_jpeg *r, jrect *j, const uint8_t *p, const crop_req *q, const double box[4],
                    img_scratch *s, double rbox[4], baton_err *err)
{
    r->err = err;
    r->code = BATON_OK;
    if (setjmp(r->jb)) {
        jpeg_end(r);
        return r->code;
    }
    jpeg_begin(r);
    int rc = jpeg_region_rect(r, j, p, q, box, s, rbox, err);
    jpeg_end(r);
    return rc;
}

static jrect *scratch_rect(img_scratch *s)
{
    if (!s->rect) s->rect = calloc(1, sizeof(jrect));
    return s->rect;
}

/* A file with a restart marker after every MCU takes the rectangle path; if that fails for any
 * reason (a header libjpeg refuses, corrupt data in the rectangle, out of memory) the ordinary path
 * decodes the file's own bytes with the box already planned, and its result or error stands. */
static int crop_jpeg(const uint8_t *p, size_t n, const crop_req *q, img_scratch *s, baton_image *dst,
                     baton_err *err)
{
    if (img_sniff(p, n) != BATON_ENC_JPEG)
        return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: no SOI marker (FF D8 FF)");
    if (n > ULONG_MAX) return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: %zu bytes is too big", n);
    region_jpeg *r = scratch_jpeg(s, err);
    if (!r) return err ? err->code : BATON_ERR_NOMEM;
    double box[4], rbox[4];
    const double *planned = NULL;
    jrect *j = s->rect_off ? NULL : scratch_rect(s);
    if (j && jrect_index(j, p, n)) {
        int rc = jpeg_plan(j->h, j->w, NULL, q, box, err);
        if (rc) return rc;
        planned = box;
        baton_err quiet;
        if (run_rect(r, j, p, q, box, s, rbox, &quiet) == BATON_OK) {
            s->rect_decodes++;
            return img_resample_box(&s->full, rbox, q->oh, q->ow, dst, s, err);
        }
    }
    int rc = run_scan(r, p, n, q, planned, s, rbox, err);
    if (rc) return rc;
    return img_resample_box(&s->full, rbox, q->oh, q->ow, dst, s, err);
}

/* The whole image into s->full with q->c channels, then the plan and the resample. */
static int crop_whole(const uint8_t *p, size_t n, baton_encoding enc, const crop_req *q, img_scratch *s,
                      baton_image *dst, baton_err *err)
{
    int rc;
    if (enc == BATON_ENC_RAW) {
        rc = baton_img_decode(p, n, enc, q->expect, &s->full, err);
        if (!rc) rc = img_convert_channels(&s->full, q->c, err);
    } else {
        uint32_t e[3] = {q->expect ? q->expect[0] : 0, q->expect ? q->expect[1] : 0, q->c};
        rc = baton_img_decode(p, n, enc, e, &s->full, err);
    }
    if (rc) return rc;
    if (q->src_h) *q->src_h = s->full.h;
    if (q->src_w) *q->src_w = s->full.w;
    double box[4];
    rc = plan_box(q->plan, q->ctx, s->full.h, s->full.w, box, err);
    if (rc) return rc;
    return img_resample_box(&s->full, box, q->oh, q->ow, dst, s, err);
}

int img_decode_crop(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3], uint32_t c,
                    img_crop_plan plan, void *ctx, uint32_t oh, uint32_t ow, img_scratch *s, baton_image *dst,
                    uint32_t *src_h, uint32_t *src_w, baton_err *err)
{
    int rc = check_args(c, plan, oh, ow, s, dst, err);
    if (rc) return rc;
    if (!p && n > 0) return baton_err_set(err, BATON_ERR_ARG, "image: NULL buffer of %zu bytes", n);
    if (enc == BATON_ENC_UNKNOWN) enc = img_sniff(p, n);
    crop_req q = {c, oh, ow, expect, plan, ctx, src_h, src_w};
    if (enc == BATON_ENC_JPEG) return crop_jpeg(p, n, &q, s, dst, err);
    return crop_whole(p, n, enc, &q, s, dst, err);
}

int img_decode_crop_ref(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3], uint32_t c,
                        img_crop_plan plan, void *ctx, uint32_t oh, uint32_t ow, img_scratch *s, baton_image *dst,
                        uint32_t *src_h, uint32_t *src_w, baton_err *err)
{
    int rc = check_args(c, plan, oh, ow, s, dst, err);
    if (rc) return rc;
    crop_req q = {c, oh, ow, expect, plan, ctx, src_h, src_w};
    return crop_whole(p, n, enc, &q, s, dst, err);
}
