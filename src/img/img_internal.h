/* img_internal.h — what the files of src/img share and nobody outside it sees: the per-codec
 * entry points behind the dispatch in codec.c, the pixel guard and channel conversion, and the
 * dataset-source object with the open function of each kind.
 *
 * Contract (codecs): p/n are untrusted bytes; every function validates before it trusts a length,
 * never prints, and reports failures as baton status + baton_err ("PNG: ...", "JPEG: ..."). The
 * caller (baton_img_*) prefixes nothing; the code that knows the file name does. force_c is 0
 * (keep the image's own channels: grey 1, colour 3) or 1 / 3. */
#ifndef BATON_IMG_INTERNAL_H
#define BATON_IMG_INTERNAL_H

#include "baton/img.h"

/* ---- shared by the codecs (codec.c) */
/* BATON_OK if h×w is a non-empty image within BATON_IMG_MAX_PIXELS; else FORMAT naming `what`. */
int img_check_pixels(uint64_t h, uint64_t w, const char *what, baton_err *err);
/* Convert im in place between grey (1) and RGB (3); BT.601 luma for RGB → grey, rounded. */
int img_convert_channels(baton_image *im, uint32_t c, baton_err *err);

/* ---- png.c */
int img_png_probe(const uint8_t *p, size_t n, uint32_t *h, uint32_t *w, uint32_t *c,
                  baton_err *err);
int img_png_decode(const uint8_t *p, size_t n, uint32_t force_c, baton_image *im, baton_err *err);
int img_png_encode(const baton_image *im, baton_buf *out, baton_err *err);

/* ---- jpeg.c */
int img_jpeg_probe(const uint8_t *p, size_t n, uint32_t *h, uint32_t *w, uint32_t *c,
                   baton_err *err);
int img_jpeg_decode(const uint8_t *p, size_t n, uint32_t force_c, baton_image *im,
                    baton_err *err);
int img_jpeg_encode(const baton_image *im, int quality, baton_buf *out, baton_err *err);

/* ---- sources (source.c dispatches; one file per kind fills the object) */
struct baton_src {
    const char *kind;            /* "fashion-mnist", "cifar10", "imagefolder" */
    size_t count;
    uint32_t nclasses;
    char **class_names;          /* nclasses strings, owned */
    uint32_t shape[3];
    int (*get)(baton_src *s, size_t i, baton_src_item *item, baton_err *err);
    void (*close)(baton_src *s); /* frees impl (not the common fields) */
    void *impl;
};
/* Copy n names into s->class_names. */
int img_src_set_classes(baton_src *s, const char *const *names, uint32_t n, baton_err *err);

int img_src_mnist_open(baton_src *s, const char *dir, const char *split, baton_err *err);
int img_src_cifar_open(baton_src *s, const char *dir, const char *split, baton_err *err);
int img_src_folder_open(baton_src *s, const char *dir, const char *split, baton_err *err);

#endif
