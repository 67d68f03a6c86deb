/* img_internal.h — what the files of src/img share and nobody outside it (but its tests) sees:
 * the codecs' sniff, probe and bilinear resize, the IDX reader and the dataset sources (what
 * `baton pack` reads: open, count, get, close), then the per-codec entry points behind the
 * dispatch in codec.c, the pixel guard and channel conversion, and the dataset-source object with
 * the open function of each kind.
 *
 * Contract (codecs): p/n are untrusted bytes; every function validates before it trusts a length,
 * never prints, and reports failures as baton status + baton_err ("PNG: ...", "JPEG: ..."). The
 * caller (baton_img_*) prefixes nothing; the code that knows the file name does. force_c is 0
 * (keep the image's own channels: grey 1, colour 3) or 1 / 3. */
#ifndef BATON_IMG_INTERNAL_H
#define BATON_IMG_INTERNAL_H

#include "baton/img.h"

/* ---- the codecs' other entry points (codec.c, resize.c) */
/* Sniff the encoding from the first bytes: PNG signature, JPEG SOI marker; otherwise
 * BATON_ENC_UNKNOWN (raw bytes have no signature). */
baton_encoding img_sniff(const uint8_t *p, size_t n);
/* Read only the header: dimensions and channels (C after our conversion: grey stays 1, colour
 * becomes 3). For RAW the caller's expected shape is checked against n. */
int img_probe(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3],
                    uint32_t *h, uint32_t *w, uint32_t *c, baton_err *err);
/* Bilinear resize of src into dst (h × w, same channels), half-pixel centres, edges clamped. */
int img_resize_bilinear(const baton_image *src, uint32_t h, uint32_t w, baton_image *dst,
                              baton_err *err);

/* ---- IDX-ubyte, the MNIST family (idxu.c) */
/* The IDX format: magic 0x00 0x00 type ndim, ndim big-endian u32 dims, data. We accept type 0x08
 * (u8) with 1 dim (labels) or 3 dims (images). The buffer may be gzip-compressed (as Debian ships
 * it) or plain. */
typedef struct baton_idxu {
    uint32_t ndim;
    uint32_t dims[3];
    uint8_t *data;      /* product(dims) bytes, malloc'd */
    size_t len;
} baton_idxu;
int img_idxu_parse(const char *name, const uint8_t *buf, size_t n, baton_idxu *out,
                     baton_err *err);
int img_idxu_load(const char *path, baton_idxu *out, baton_err *err);
void img_idxu_free(baton_idxu *x);

/* ---- dataset sources, what `baton pack` reads (source.c; the object is defined below) */
/* A source yields labelled images in a fixed order. spec strings as on the command line:
 *   "fashion-mnist" (default dir /usr/share/datasets/fashion-mnist) or "fashion-mnist:DIR"
 *   "cifar10:DIR"   (DIR holds data_batch_1..5.bin, test_batch.bin, batches.meta.txt)
 *   "imagefolder:DIR" (DIR/<class>/<file>.{jpg,jpeg,png}; classes sorted by name, files by name)
 * split: "train" or "test" (imagefolder: DIR/<split>/ is used when it exists, else DIR). */
typedef struct baton_src baton_src;

typedef struct baton_src_item {
    uint32_t label;
    uint64_t id;              /* position in the source order */
    /* Either decoded pixels ... */
    const baton_image *image; /* non-NULL for fashion-mnist and cifar10 */
    /* ... or the original file's encoded bytes (imagefolder). */
    const uint8_t *bytes;
    size_t nbytes;
    baton_encoding encoding;
    const char *path;         /* imagefolder: the file, for messages */
} baton_src_item;

int img_src_open(const char *spec, const char *split, baton_src **out, baton_err *err);
void img_src_close(baton_src *s);
const char *img_src_name(const baton_src *s);         /* "fashion-mnist", "cifar10", … */
size_t img_src_count(const baton_src *s);
uint32_t img_src_classes(const baton_src *s);
const char *img_src_class_name(const baton_src *s, uint32_t k);
/* Fixed shape {H,W,C} if all images share it and it is known up front; zeros otherwise. */
void img_src_shape(const baton_src *s, uint32_t shape[3]);
/* Item i (0 <= i < count). Pointers stay valid until the next call. */
int img_src_get(baton_src *s, size_t i, baton_src_item *item, baton_err *err);

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

/* crop.c: o's crop parameters with the defaults filled in (size 224, scale (0.08, 1), ratio (3/4, 4/3)). */
void img_crop_params(const baton_pipeline_opts *o, uint32_t *size, double scale[2], double ratio[2]);

/* pipeline_opts.c: the pipeline's options checked against the dataset (pipeline.c's open). */
int img_pipeline_check_opts(const baton_manifest *m, const baton_pipeline_opts *o, baton_err *err);
/* pipeline.c: a record's label is one training accepts: an integer in [0, classes) (any integer
 * >= 0 up to 2^31-1 when classes is 0). inspect --verify applies the same rule. */
int img_label_ok(float label, uint32_t classes);

#endif
