/* jpeg_restart.c — the lossless transcode of a JPEG to one sequential scan with a restart marker
 * after every MCU and Huffman tables optimised for the image (img_jpeg_restart), what
 * `baton pack --jpeg-restart` stores so that region.c can decode a crop's MCUs alone
 * (jpeg_rect.c). The libjpeg API: the coefficients are read (jpeg_read_coefficients) and written
 * back (jpeg_write_coefficients), never decoded to pixels, so the pixels cannot change.
 * Contract: jpeg_rect_internal.h. libjpeg never prints or exits here: its errors come back through
 * setjmp/longjmp; a stream that ends early is BATON_ERR_TRUNCATED, a corrupt one BATON_ERR_CORRUPT
 * (other warnings accepted, as jpeg.c does). The output grows a baton_buf directly, so a failure
 * half-way leaks nothing. */
#include "jpeg_rect_internal.h"

#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
/* jpeglib.h needs size_t and FILE before it */
#include <jpeglib.h>
#include <jerror.h>

#define DEST_STEP 65536

typedef struct transcode {
    struct jpeg_decompress_struct d;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr derr, cerr;
    struct jpeg_destination_mgr dest;
    baton_buf *out;
    jmp_buf jb;
    baton_err *err;
    int code;
} transcode;

static void fail(j_common_ptr c, int code)
{
    transcode *t = c->client_data;
    char msg[JMSG_LENGTH_MAX];
    (*c->err->format_message)(c, msg);
    t->code = code;
    baton_err_set(t->err, code, "JPEG: %s", msg);
    longjmp(t->jb, 1);
}

static void on_error(j_common_ptr c)
{
    fail(c, c->err->msg_code == JERR_OUT_OF_MEMORY ? BATON_ERR_NOMEM : BATON_ERR_CORRUPT);
}

static void on_message(j_common_ptr c, int level)
{
    if (level >= 0) return;
    c->err->num_warnings++;
    if (c->err->msg_code == JWRN_JPEG_EOF) fail(c, BATON_ERR_TRUNCATED);
    if (c->err->msg_code == JWRN_HIT_MARKER) fail(c, BATON_ERR_CORRUPT);
}

/* The destination: t->out, grown DEST_STEP bytes at a time. */
static void dest_init(j_compress_ptr c)
{
    transcode *t = c->client_data;
    if (baton_buf_reserve(t->out, DEST_STEP) != BATON_OK) ERREXIT(c, JERR_OUT_OF_MEMORY);
    c->dest->next_output_byte = t->out->data + t->out->len;
    c->dest->free_in_buffer = t->out->cap - t->out->len;
}

static boolean dest_empty(j_compress_ptr c)
{
    transcode *t = c->client_data;
    t->out->len = t->out->cap;  /* the whole buffer was written */
    dest_init(c);
    return TRUE;
}

static void dest_term(j_compress_ptr c)
{
    transcode *t = c->client_data;
    t->out->len = t->out->cap - c->dest->free_in_buffer;
}

static int run(transcode *t, const uint8_t *p, size_t n)
{
    jpeg_mem_src(&t->d, p, (unsigned long)n);
    jpeg_read_header(&t->d, TRUE);
    if (t->d.jpeg_color_space == JCS_CMYK || t->d.jpeg_color_space == JCS_YCCK)
        return baton_err_set(t->err, BATON_ERR_FORMAT, "JPEG: %s colour space is not supported",
                             t->d.jpeg_color_space == JCS_CMYK ? "CMYK" : "YCCK");
    jvirt_barray_ptr *coef = jpeg_read_coefficients(&t->d);
    jpeg_copy_critical_parameters(&t->d, &t->c);
    t->c.restart_interval = 1;
    t->c.restart_in_rows = 0;
    t->c.optimize_coding = TRUE;
    t->c.dest = &t->dest;
    jpeg_write_coefficients(&t->c, coef);
    jpeg_finish_compress(&t->c);
    jpeg_finish_decompress(&t->d);
    return BATON_OK;
}

int img_jpeg_restart(const uint8_t *p, size_t n, baton_buf *out, baton_err *err)
{
    if (!p || n < 3 || p[0] != 0xff || p[1] != 0xd8 || p[2] != 0xff)
        return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: no SOI marker (FF D8 FF)");
    if (n > ULONG_MAX) return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: %zu bytes is too big", n);
    transcode *t = calloc(1, sizeof *t);  /* jmp_buf and two codecs: not on a worker's stack */
    if (!t) return baton_err_set(err, BATON_ERR_NOMEM, "JPEG: out of memory for a transcoder");
    baton_err local;
    t->err = err ? err : &local;
    t->out = out;
    size_t len0 = out->len;
    t->d.err = jpeg_std_error(&t->derr);
    t->c.err = jpeg_std_error(&t->cerr);
    t->derr.error_exit = t->cerr.error_exit = on_error;
    t->derr.emit_message = t->cerr.emit_message = on_message;
    t->d.client_data = t->c.client_data = t;
    t->dest.init_destination = dest_init;
    t->dest.empty_output_buffer = dest_empty;
    t->dest.term_destination = dest_term;
    volatile int made = 0;
    int rc;
    if (setjmp(t->jb)) {
        rc = t->code;
        out->len = len0;
    } else {
        jpeg_create_decompress(&t->d);
        made = 1;
        jpeg_create_compress(&t->c);
        made = 2;
        rc = run(t, p, n);
        if (rc) out->len = len0;
    }
    if (made >= 2) jpeg_destroy_compress(&t->c);
    if (made >= 1) jpeg_destroy_decompress(&t->d);
    free(t);
    return rc;
}
