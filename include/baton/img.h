/* img.h — images and image datasets: packing a dataset into record shards (`baton pack`),
 * inspecting them (`baton inspect`), the decode pipeline that turns a loader's records into
 * training batches, the input-mode benchmark (`baton bench-io`), and the image codecs (raw, PNG
 * through libpng, JPEG through libjpeg-turbo) for a caller that reads or writes single images.
 *
 * What it offers, in the order a caller uses it:
 *   1. Images and codecs (src/img/image.c, codec.c): a baton_image ({0} to start) is filled by
 *      baton_img_decode, or sized by baton_image_resize and drawn into by the caller;
 *      baton_img_encode appends it to a buffer in an encoding; baton_image_free.
 *   2. Packing (src/img/pack.c): baton_pack_opts_default, then the source spec and the output
 *      folder; baton_pack reads the source (Fashion-MNIST IDX .gz files, CIFAR-10 binary batches,
 *      an image folder with one sub-folder per class) and writes the shards and dataset.json.
 *   3. Inspection (src/img/inspect.c): baton_inspect of a dataset folder or one shard, then
 *      baton_inspect_print or baton_inspect_to_json, and baton_inspect_free.
 *   4. The decode pipeline (src/img/pipeline.c): baton_pipeline_opts_default, baton_pipeline_open
 *      on a loader (io.h) positioned where reading starts, then per batch baton_pipeline_next and
 *      baton_pipeline_release, and baton_pipeline_close.
 *   5. The input-mode benchmark (src/img/benchio.c): baton_bench_io_run, one mode at a time.
 * The codecs' other entry points (sniff, probe, bilinear resize), the IDX reader, the dataset
 * sources and the augmentation are private to src/img (src/img/img_internal.h,
 * src/img/augment_internal.h).
 *
 * Layering: img depends on io, rec and util.
 * Pixel layout everywhere: u8, H×W×C, row-major (HWC), C = 1 (grey) or 3 (RGB).
 * Buffers: a baton_image owns its pixel buffer and grows it only when a larger image arrives, so
 * decoding in a loop does not allocate. */
#ifndef BATON_IMG_H
#define BATON_IMG_H

#include "baton/io.h"

typedef struct baton_image {
    uint32_t h, w, c;
    uint8_t *px;      /* h*w*c bytes */
    size_t cap;       /* allocated bytes */
} baton_image;

/* Decoders refuse images with more pixels than this (a guard against hostile headers). */
#define BATON_IMG_MAX_PIXELS ((uint64_t)64 << 20)

int baton_image_resize(baton_image *im, uint32_t h, uint32_t w, uint32_t c, baton_err *err);
void baton_image_free(baton_image *im);

/* Decode into im (HWC u8). expect = {H, W, C} is required for RAW (n must equal H*W*C); for PNG
 * and JPEG it may be NULL, or give C (expect[2] != 0) to force grey (1) or RGB (3). Alpha is
 * dropped; 16-bit PNG is reduced to 8 bits; palettes are expanded.
 * Also (baton_img_probe, src/img/img_internal.h, and decode): enc BATON_ENC_UNKNOWN is sniffed
 * (PNG or JPEG, else FORMAT); non-zero expect[0] / expect[1] are checked against a PNG's or
 * JPEG's size (FORMAT on mismatch). */
int baton_img_decode(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3],
                     baton_image *im, baton_err *err);
/* Encode im. quality 1..100 for JPEG (ignored otherwise). Appends to out. Deterministic. */
int baton_img_encode(const baton_image *im, baton_encoding enc, int quality, baton_buf *out,
                     baton_err *err);

/* ---------------------------------------------------------------- packing */
typedef struct baton_pack_opts {
    const char *from;         /* source spec (the forms: baton_src_open, src/img/img_internal.h) */
    const char *out_dir;
    const char *split;        /* "train" (default) / "test" */
    baton_rec_format format;  /* RecordIO default */
    baton_encoding encoding;  /* RAW default (imagefolder: each file's bytes as they are) */
    int quality;              /* JPEG quality, default 95 */
    double shard_mb;          /* target shard size, default 64 */
    uint64_t seed;            /* record order: permutation of the source from seed */
    int shuffle;              /* 1 default */
    uint32_t resize_h, resize_w; /* resize every image to this size first (0 = keep); resize_w 0 with
                              * resize_h N: the shorter side to N, the aspect kept */
    int progress;             /* show a progress line */
    int jpeg_restart;         /* every JPEG record transcoded losslessly to one sequential scan with
                               * a restart marker after every MCU and optimised Huffman tables (the
                               * same pixels; crops decode only their MCUs); 0 default: bytes kept */
    uint64_t piece_bytes;     /* each shard's CRC32C per piece of this size, in dataset.json, so
                              * readers check a piece before decoding from it (default
                              * BATON_PIECE_BYTES_DEFAULT, 64 KiB; 0: none, as packs before
                              * piece checksums wrote) */
} baton_pack_opts;
void baton_pack_opts_default(baton_pack_opts *o);
/* Pack a source into OUT_DIR: shards "<split>-NNNNN.rec|.tfrecord" + ".idx", then dataset.json
 * (written last, crash-safely). Deterministic: same inputs and options → same bytes. */
int baton_pack(const baton_pack_opts *o, baton_manifest *out_manifest, baton_err *err);

/* ---------------------------------------------------------------- inspection */
/* What `baton inspect` reports for a dataset folder, a .rec (with or without its .idx) or a
 * TFRecord file. Without verify: one pass over every record (framing is checked as it is read),
 * image headers probed for shapes. With verify, additionally: every image fully decoded, every
 * .idx entry checked against the record it points at, the shard sizes and CRC32C against
 * dataset.json, records per shard and the total against the manifest, shapes against the
 * manifest's shape. Problems are collected (not just the first) as one-line messages naming the
 * file and byte offset. */
#define BATON_INSPECT_MAX_SHAPES 8
#define BATON_INSPECT_MAX_ERRORS 100

typedef struct baton_inspect_shape {
    uint32_t h, w, c;
    uint64_t count;
} baton_inspect_shape;

typedef struct baton_inspect_report {
    char kind[16];              /* "dataset" / "file" */
    baton_rec_format format;
    uint64_t records, bytes, files;
    uint64_t multi_label;       /* records with more than one label */
    uint64_t *label_hist;       /* label_bins entries: count of records whose first label is k */
    uint32_t label_bins;
    uint64_t label_other;       /* labels that are negative, fractional or too large */
    uint64_t enc_count[4];      /* raw, png, jpeg, unknown */
    baton_inspect_shape shapes[BATON_INSPECT_MAX_SHAPES];
    uint32_t nshapes;
    uint64_t shape_other;       /* records whose shape did not fit the table */
    /* the size distribution (of the records whose size is known): extremes, mean megapixels, and
     * the shorter side's histogram in bins <64, <128, <256, <512, <1024, <2048, >=2048 */
    uint64_t sized;
    uint32_t min_h, max_h, min_w, max_w;
    double pixels;
    uint64_t short_side[7];
    int verified;
    char **errors;              /* up to BATON_INSPECT_MAX_ERRORS messages */
    size_t nerrors;             /* stored */
    uint64_t nerrors_total;     /* found */
    double seconds;
    baton_manifest manifest;    /* when kind is "dataset" */
    int has_manifest;
} baton_inspect_report;

int baton_inspect(const char *path, int verify, int progress, baton_inspect_report *rep,
                  baton_err *err);
/* One JSON object: records, format, bytes, labels, shapes, encodings, seconds; with verify also
 * ok and errors. malloc'd. */
char *baton_inspect_to_json(const baton_inspect_report *rep);
void baton_inspect_print(const baton_inspect_report *rep, FILE *f);
void baton_inspect_free(baton_inspect_report *rep);

/* ---------------------------------------------------------------- decode pipeline */
/* Turns a loader's records into float batches for training: a reader thread takes records from
 * the loader in epoch order and copies them into batch slots; `workers` threads decode them
 * (raw/PNG/JPEG), crop (baton_crop: pad-and-crop, or a random-resized or centre crop decoded at
 * the size it is used), flip horizontally and normalise
 * ((pixel/255 - mean[c]) / std[c], mean/std from dataset.json) straight into the batch tensor;
 * finished batches are handed over strictly in order through a bounded queue of `depth` batches.
 * Batches never span epochs: batch k of an epoch holds positions [k·batch, (k+1)·batch).
 *
 * Determinism: the augmentation of a sample is drawn from RNG(seed, epoch, position) only, so
 * the bytes of every batch are the same whatever the thread count and timing, and a pipeline
 * opened on a loader seeked to a cursor continues exactly. Buffers are allocated once at open. */
typedef enum baton_layout {
    BATON_LAYOUT_NCHW = 0,
    BATON_LAYOUT_NHWC = 1,
} baton_layout;

/* What a sample's pixels are cut from (the crops of ImageNet-class recipes; src/img/crop.c):
 *  NONE            the image as it is: a fixed-size dataset (crop_pad pads and crops, if set);
 *  PAD             the same with crop_pad 4 when crop_pad is 0 (CIFAR's RandomCrop(32, padding=4));
 *  RANDOM_RESIZED  torchvision's RandomResizedCrop(size, scale, ratio): an area fraction uniform in
 *                  scale, an aspect ratio log-uniform in ratio, up to 10 tries, then the centre
 *                  fallback; the box decoded at the size it is used and resampled to size × size;
 *  CENTER          evaluation's Resize(size / 0.875) + CenterCrop(size), as one resample of the box.
 * RANDOM_RESIZED and CENTER take any image size (datasets whose shape varies). */
typedef enum baton_crop {
    BATON_CROP_NONE = 0,
    BATON_CROP_PAD = 1,
    BATON_CROP_RANDOM_RESIZED = 2,
    BATON_CROP_CENTER = 3,
} baton_crop;
/* "none", "pad", "random-resized", "center" (also "centre") → *c; non-zero for another name. */
int baton_crop_parse(const char *name, baton_crop *c);
const char *baton_crop_name(baton_crop c);

typedef struct baton_pipeline_opts {
    int workers;            /* decode threads; default 2 */
    uint32_t batch;         /* samples per batch; default 128 */
    uint32_t crop_pad;      /* random crop of the original size after zero padding (0 = none) */
    int flip;               /* random horizontal flip, p = 0.5 */
    baton_layout layout;    /* default NCHW */
    int drop_last;          /* drop an epoch's final short batch */
    uint32_t depth;         /* batches decoded ahead; default 4 */
    int reference;          /* use the plain reference augment/normalise path (tests) */
    const float *mean, *std;/* per channel (as many as the images have); NULL: the dataset's own from
                             * dataset.json. Evaluation passes the training data's, so that a model
                             * sees inputs normalised as in training */
    uint32_t part_rank, part_world; /* data parallelism: of each batch's samples (slots i of the
                             * batch grid) keep only those with i ≡ part_rank (mod part_world);
                             * default 0, 1 (all). Batch boundaries, cursors and the augmentation
                             * (drawn per epoch position) stay those of the whole batch, so the
                             * parts of W ranks are exactly the samples of one rank's batches */
    const baton_cursor *start;  /* NULL: the loader is positioned already; else the reader thread seeks
                             * it to this cursor first (in pipe mode a seek streams the block it
                             * lands in: this way open never waits for the network, and a failed
                             * seek is the first next()'s error) */
    baton_crop crop;        /* default NONE (a dataset of varying size needs RANDOM_RESIZED or CENTER) */
    uint32_t size;          /* RANDOM_RESIZED / CENTER: output side (default 224) */
    float scale[2];         /* RANDOM_RESIZED: area fraction range (default 0.08, 1) */
    float ratio[2];         /* RANDOM_RESIZED: aspect ratio range, w/h (default 3/4, 4/3) */
    int u8;                 /* batches of un-normalised uint8 pixels (batch->x8; x is NULL): a
                             * quarter of the bytes to copy to a GPU, normalised there */
} baton_pipeline_opts;

typedef struct baton_batch {
    uint32_t n;             /* samples in this batch (<= opts.batch); a part may hold 0 */
    uint32_t total;         /* samples of the whole batch (n without parts) */
    const uint64_t *pos;    /* n epoch positions, one per sample (first + i without parts) */
    uint32_t c, h, w;
    baton_layout layout;
    float *x;               /* n*c*h*w values (NULL with opts.u8) */
    uint8_t *x8;            /* opts.u8: n*c*h*w pixels, 0..255, in the layout (else NULL) */
    int32_t *y;             /* n labels (first label of each record) */
    uint64_t epoch;
    uint64_t first;         /* epoch position of sample 0 */
    baton_cursor next;      /* the loader cursor just after this batch: checkpoint this */
    int last_of_epoch;
    void *priv_;
} baton_batch;

typedef struct baton_pipeline baton_pipeline;
void baton_pipeline_opts_default(baton_pipeline_opts *o);

/* The box a crop takes from an image of h × w for the sample at (seed, epoch, position), as the
 * pipeline draws it (o's crop, size, scale, ratio and flip; src/img/crop.c says the rule), with the
 * random draws it used (for a check against torchvision's rule, and for a user's own logs). */
typedef struct baton_crop_draw {
    double box[4];          /* x0, y0, x1, y1 in the source's pixels (the whole image for NONE/PAD) */
    int flip;
    uint32_t tries;         /* RANDOM_RESIZED: tries drawn, 1..10 */
    int fallback;           /* RANDOM_RESIZED: no try fitted; the centre fallback */
    double u_area[10], u_ratio[10];  /* each try's two uniform draws in [0, 1) */
    uint64_t top, left;     /* the offsets drawn for the try that fitted (or the fallback's) */
} baton_crop_draw;
void baton_crop_draw_for(const baton_pipeline_opts *o, uint64_t seed, uint64_t epoch, uint64_t position, uint32_t h,
                         uint32_t w, baton_crop_draw *d);
/* The loader must be positioned (baton_loader_seek) or fresh; the pipeline owns reading from it
 * until closed. With crop NONE or PAD the images must all have the manifest's fixed shape; with
 * RANDOM_RESIZED or CENTER any size (batches are size × size × the manifest's channels). */
baton_pipeline *baton_pipeline_open(baton_loader *l, const baton_pipeline_opts *o, baton_err *err);
/* The H, W, C of the images a pipeline with this crop and size (0: 224) makes from a dataset with
 * manifest m: size x size with RANDOM_RESIZED or CENTER, else the manifest's fixed shape (C: its
 * channels). -1 when its images vary in size and there is no such crop (each front end says so in
 * its own words: flags, keyword arguments). `baton train` and the Python module's Loader size their
 * model and buffers with it, as the pipeline does. */
int baton_pipeline_shape(const baton_manifest *m, baton_crop crop, uint32_t size, uint32_t out[3]);
/* The next batch: BATON_OK; BATON_END once after an epoch's last batch (then the next epoch's
 * batches follow); or an error (decode errors name the shard and offset). */
int baton_pipeline_next(baton_pipeline *p, baton_batch **b, baton_err *err);
/* The same, waiting at most timeout_s seconds: BATON_NEED_MORE (and *b NULL) when nothing was ready
 * by then (call again). For a caller that must look at something else while it waits (a Python
 * loop checking for Ctrl-C). */
int baton_pipeline_next_timed(baton_pipeline *p, baton_batch **b, double timeout_s, baton_err *err);
void baton_pipeline_release(baton_pipeline *p, baton_batch *b);
/* Whether next() logs each batch it hands over to BATON_VERIFY_LOG (util.h; on by default): an
 * evaluation pipeline turns it off, so that `baton verify-resume` sees the training batches only. */
void baton_pipeline_set_logged(baton_pipeline *p, int on);
/* Stop every thread (the loader is the caller's again); batches handed out stay valid, and next
 * returns nothing new, until close. */
void baton_pipeline_stop(baton_pipeline *p);
void baton_pipeline_close(baton_pipeline *p);

/* ---------------------------------------------------------------- input-mode benchmark */
/* One mode of `baton bench-io`: open a loader (file mode downloads here), run the decode pipeline
 * for `epochs` epochs, and time it: launch = start → first batch; epoch_s[k] = end of epoch k −
 * end of epoch k−1 (epoch 0 from the first batch); total = start → end of the last epoch. */
#define BATON_BENCH_MAX_EPOCHS 64

typedef struct baton_bench_io_opts {
    const char *uri;
    const char *mount_path;       /* mount mode reads this path (default: uri if it is a path) */
    const char *work_dir;         /* local copies for file/cache mode go to work_dir/<mode>; removed
                                     when the mode is measured (work_dir itself too when empty) */
    int keep_work;                /* keep those copies */
    uint64_t epochs;
    uint64_t seed;
    baton_store_opts store;
    baton_fetch_opts fetch;
    baton_pipeline_opts pipe;
    int no_decode;                /* the data path alone: records read in epoch order, not decoded
                                   * (samples/s and CPU seconds of the reading only) */
    int progress;
} baton_bench_io_opts;

typedef struct baton_bench_io_result {
    baton_io_mode mode;
    int skipped;
    char skip_reason[160];
    double launch_s, open_s, total_s, samples_per_s;
    double epoch_s[BATON_BENCH_MAX_EPOCHS];
    /* CPU seconds (user + system) this process spent: launch, then per epoch (the store's server,
     * when it runs on the same machine, is not counted) */
    double launch_cpu_s, epoch_cpu_s[BATON_BENCH_MAX_EPOCHS];
    uint64_t epochs, samples, bytes_read, retries, record_requests;
    /* what the store sent (baton_loader_stats): in all, during open, for each epoch's records;
     * against dataset_bytes, the shards' size */
    uint64_t bytes_fetched, open_fetched, epoch_fetched[BATON_BENCH_MAX_EPOCHS], dataset_bytes;
    uint32_t digest;              /* no_decode: CRC32C over every record read (keeps the reads) */
} baton_bench_io_result;

int baton_bench_io_run(const baton_bench_io_opts *o, baton_io_mode mode, baton_bench_io_result *r,
                       baton_err *err);

#endif
