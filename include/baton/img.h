/* img.h — images: codecs (raw, PNG through libpng, JPEG through libjpeg-turbo), image-dataset
 * sources that `baton pack` reads (Fashion-MNIST IDX .gz files, CIFAR-10 binary batches, an
 * image folder with one sub-folder per class), and packing them into record shards.
 *
 * Layering: img depends on rec and util.
 * Pixel layout everywhere: u8, H×W×C, row-major (HWC), C = 1 (grey) or 3 (RGB).
 * Buffers: a baton_image owns its pixel buffer and grows it only when a larger image arrives, so
 * decoding in a loop does not allocate. */
#ifndef BATON_IMG_H
#define BATON_IMG_H

#include "baton/rec.h"

typedef struct baton_image {
    uint32_t h, w, c;
    uint8_t *px;      /* h*w*c bytes */
    size_t cap;       /* allocated bytes */
} baton_image;

int baton_image_resize(baton_image *im, uint32_t h, uint32_t w, uint32_t c, baton_err *err);
void baton_image_free(baton_image *im);

/* Sniff the encoding from the first bytes: PNG signature, JPEG SOI marker; otherwise
 * BATON_ENC_UNKNOWN (raw bytes have no signature). */
baton_encoding baton_img_sniff(const uint8_t *p, size_t n);
/* Read only the header: dimensions and channels (C after our conversion: grey stays 1, colour
 * becomes 3). For RAW the caller's expected shape is checked against n. */
int baton_img_probe(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3],
                    uint32_t *h, uint32_t *w, uint32_t *c, baton_err *err);
/* Decode into im (HWC u8). expect = {H, W, C} is required for RAW (n must equal H*W*C); for PNG
 * and JPEG it may be NULL, or give C (expect[2] != 0) to force grey (1) or RGB (3). Alpha is
 * dropped; 16-bit PNG is reduced to 8 bits; palettes are expanded. */
int baton_img_decode(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3],
                     baton_image *im, baton_err *err);
/* Encode im. quality 1..100 for JPEG (ignored otherwise). Appends to out. Deterministic. */
int baton_img_encode(const baton_image *im, baton_encoding enc, int quality, baton_buf *out,
                     baton_err *err);

/* ---------------------------------------------------------------- IDX-ubyte (MNIST family) */
/* The IDX format: magic 0x00 0x00 type ndim, ndim big-endian u32 dims, data. We accept type 0x08
 * (u8) with 1 dim (labels) or 3 dims (images). The buffer may be gzip-compressed (as Debian ships
 * it) or plain. */
typedef struct baton_idxu {
    uint32_t ndim;
    uint32_t dims[3];
    uint8_t *data;      /* product(dims) bytes, malloc'd */
    size_t len;
} baton_idxu;
int baton_idxu_parse(const char *name, const uint8_t *buf, size_t n, baton_idxu *out,
                     baton_err *err);
int baton_idxu_load(const char *path, baton_idxu *out, baton_err *err);
void baton_idxu_free(baton_idxu *x);

/* ---------------------------------------------------------------- dataset sources */
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

int baton_src_open(const char *spec, const char *split, baton_src **out, baton_err *err);
void baton_src_close(baton_src *s);
const char *baton_src_name(const baton_src *s);         /* "fashion-mnist", "cifar10", … */
size_t baton_src_count(const baton_src *s);
uint32_t baton_src_classes(const baton_src *s);
const char *baton_src_class_name(const baton_src *s, uint32_t k);
/* Fixed shape {H,W,C} if all images share it and it is known up front; zeros otherwise. */
void baton_src_shape(const baton_src *s, uint32_t shape[3]);
/* Item i (0 <= i < count). Pointers stay valid until the next call. */
int baton_src_get(baton_src *s, size_t i, baton_src_item *item, baton_err *err);

/* ---------------------------------------------------------------- packing */
typedef struct baton_pack_opts {
    const char *from;         /* source spec */
    const char *out_dir;
    const char *split;        /* "train" (default) / "test" */
    baton_rec_format format;  /* RecordIO default */
    baton_encoding encoding;  /* RAW default (imagefolder: JPEG) */
    int quality;              /* JPEG quality, default 95 */
    double shard_mb;          /* target shard size, default 64 */
    uint64_t seed;            /* record order: permutation of the source from seed */
    int shuffle;              /* 1 default */
    int progress;             /* show a progress line */
} baton_pack_opts;
void baton_pack_opts_default(baton_pack_opts *o);
/* Pack a source into OUT_DIR: shards "<split>-NNNNN.rec|.tfrecord" + ".idx", then dataset.json
 * (written last, crash-safely). Deterministic: same inputs and options → same bytes. */
int baton_pack(const baton_pack_opts *o, baton_manifest *out_manifest, baton_err *err);

#endif
