/* pack.c — `baton pack`: turns an image-dataset source into record shards plus dataset.json.
 *
 * Contract:
 *  - Output is a pure function of (source, options): the record order is the identity or a
 *    permutation drawn from --seed, encoders are deterministic, the manifest has a fixed field order.
 *  - Every record is an image record (RecordIO: IRHeader + image bytes; TFRecord: tf.train.Example)
 *    whose id is the item's position in the source, so any record can be traced back.
 *  - Shards roll over at --shard-mb; each shard and its .idx are written under temporary names and
 *    renamed only after fsync (baton_shard_writer); dataset.json is written last, crash-safely, so a
 *    folder with a dataset.json always has every shard it names.
 *  - One pack at a time writes a folder: it holds DIR/.lock for the whole pack (a second fails at
 *    once, naming the first's pid), and says when it replaces a dataset that was there (whose
 *    shards it overwrites: readers of the old dataset.json meanwhile fail their size or CRC32C
 *    check, never read a mix).
 *  - Every image is decoded once (pixels are needed for the normalisation statistics anyway), so an
 *    undecodable input file is reported by name before anything is published.
 *  - Source files that are already in the requested encoding are stored as they are (no second
 *    lossy JPEG pass); everything else is encoded from pixels. An image folder packed without
 *    --encode keeps every file's bytes as they are, JPEG and PNG alike (dataset.json says "jpeg",
 *    "png" or, for both, "mixed": each record's own encoding is sniffed when decoded).
 *  - --resize HxW resizes to that size (bilinear, as before); --resize N resizes the shorter side
 *    to N keeping the aspect (the longer side floor(long·N/short), as im2rec's --resize) with the
 *    antialiased resampler (region_internal.h). Resized images are encoded again (in their file's
 *    encoding when kept, else the requested one).
 *  - --jpeg-restart (opt-in): every JPEG record, kept or encoded, is transcoded losslessly to one
 *    sequential scan with a restart marker after every MCU and Huffman tables optimised for it
 *    (img_jpeg_restart, jpeg_rect_internal.h): the same DCT coefficients, so the same pixels; the
 *    crop decoder recognises such a file from its header and decodes only the MCUs around a box.
 *    Refused when the pack writes no JPEG (raw records, --encode png). The byte cost is logged. */
#include "img_internal.h"
#include "region_internal.h"
#include "jpeg_rect_internal.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

void baton_pack_opts_default(baton_pack_opts *o)
{
    memset(o, 0, sizeof *o);
    o->split = "train";
    o->format = BATON_FMT_RECORDIO;
    o->encoding = BATON_ENC_UNKNOWN;  /* resolved by source: raw, or each file's own for imagefolder */
    o->quality = 95;
    o->shard_mb = 64;
    o->shuffle = 1;
    o->piece_bytes = BATON_PIECE_BYTES_DEFAULT;
}

typedef struct packer {
    const baton_pack_opts *o;
    baton_src *src;
    baton_manifest *m;
    baton_shard_writer *w;
    size_t shard_cap;          /* allocated entries in m->shards */
    uint64_t shard_limit;      /* bytes */
    baton_image img;           /* decoded pixels of the current item (imagefolder) */
    baton_image sized;         /* the item resized (--resize) */
    baton_buf enc, payload;
    double sum[4], sumsq[4];
    uint64_t pixels;           /* per channel */
    uint32_t seen_h, seen_w;   /* sources of unknown shape: the first image's size ... */
    int varied;                /* ... and whether any other image differed */
    int keep;                  /* an image folder without --encode: each file's bytes as they are */
    uint64_t kept[2];          /* records stored as PNG, as JPEG (keep) */
    img_scratch sc;            /* the shorter-side resize's */
    baton_buf rst;             /* the record's JPEG transcoded (--jpeg-restart) */
    uint64_t rst_n, rst_in, rst_out;  /* JPEGs transcoded, their bytes before and after */
} packer;

static int shard_paths(const packer *p, size_t k, char *rec, char *idx, size_t cap, char *recname,
                       char *idxname, baton_err *err)
{
    const char *ext = p->o->format == BATON_FMT_TFRECORD ? "tfrecord" : "rec";
    snprintf(recname, 64, "%s-%05zu.%s", p->m->split, k, ext);
    snprintf(idxname, 64, "%s-%05zu.idx", p->m->split, k);
    int rc = baton_path_join(rec, cap, p->o->out_dir, recname, err);
    if (rc == BATON_OK) rc = baton_path_join(idx, cap, p->o->out_dir, idxname, err);
    return rc;
}

static int open_shard(packer *p, baton_err *err)
{
    char rec[4096], idx[4096], recname[64], idxname[64];
    int rc = shard_paths(p, p->m->nshards, rec, idx, sizeof rec, recname, idxname, err);
    if (rc) return rc;
    if (p->m->nshards == p->shard_cap) {
        size_t cap = p->shard_cap ? p->shard_cap * 2 : 8;
        baton_shard_info *s = realloc(p->m->shards, cap * sizeof *s);
        if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        p->m->shards = s;
        p->shard_cap = cap;
    }
    baton_shard_info *si = &p->m->shards[p->m->nshards];
    memset(si, 0, sizeof *si);
    si->file = strdup(recname);
    si->index = strdup(idxname);
    p->m->nshards++;  /* counted now so the manifest frees the names on any failure */
    if (!si->file || !si->index) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    p->w = baton_shard_writer_open(rec, idx, p->o->format, err);
    if (!p->w) return err->code;
    si->piece_bytes = p->o->piece_bytes;   /* 0: none, as an older pack wrote */
    return si->piece_bytes ? baton_shard_writer_set_pieces(p->w, si->piece_bytes, err) : BATON_OK;
}

static int close_shard(packer *p, baton_err *err)
{
    baton_shard_info *si = &p->m->shards[p->m->nshards - 1];
    si->bytes = baton_shard_writer_bytes(p->w);
    si->records = baton_shard_writer_records(p->w);
    si->crc32c = baton_shard_writer_crc32c(p->w);
    si->index_bytes = baton_shard_writer_idx_bytes(p->w);
    si->index_crc32c = baton_shard_writer_idx_crc32c(p->w);
    size_t n;
    const uint32_t *pc = baton_shard_writer_pieces(p->w, &n);
    if (n != baton_shard_pieces(si)) {
        baton_shard_writer_abort(p->w);
        p->w = NULL;
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: internal: %zu piece checksums for %llu pieces", si->file, n,
                             (unsigned long long)baton_shard_pieces(si));
    }
    if (n && !(si->piece_crc32c = malloc(n * sizeof *pc))) {
        baton_shard_writer_abort(p->w);
        p->w = NULL;
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    if (n) memcpy(si->piece_crc32c, pc, n * sizeof *pc);
    int rc = baton_shard_writer_commit(p->w, err);
    p->w = NULL;
    return rc;
}

/* Statistics for normalisation: per-channel sums of pixel values in [0,1]. */
static void accumulate(packer *p, const baton_image *im)
{
    size_t n = (size_t)im->h * im->w;
    uint32_t c = im->c;
    uint64_t s[4] = {0}, q[4] = {0};  /* exact integer sums per image */
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < c; k++) {
            uint32_t v = im->px[i * c + k];
            s[k] += v;
            q[k] += (uint64_t)v * v;
        }
    for (uint32_t k = 0; k < c; k++) {
        p->sum[k] += (double)s[k] / 255.0;
        p->sumsq[k] += (double)q[k] / (255.0 * 255.0);
    }
    p->pixels += n;
}

/* Check that the item's image fits the dataset (channels always; full shape when fixed). */
static int check_shape(packer *p, const baton_image *im, const char *what, baton_err *err)
{
    baton_manifest *m = p->m;
    if (m->channels == 0) m->channels = im->c;
    if (im->c != m->channels)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %u channels, expected %u like the first image",
                             what, im->c, m->channels);
    if (m->shape[0] && (im->h != m->shape[0] || im->w != m->shape[1]))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %ux%u image, expected %ux%u%s", what, im->h,
                             im->w, m->shape[0], m->shape[1],
                             m->encoding == BATON_ENC_RAW ? " (raw records need one size; use --encode png or jpeg)" : "");
    if (!m->shape[0] && m->encoding == BATON_ENC_RAW) {  /* raw needs one size: the first fixes it */
        m->shape[0] = im->h;
        m->shape[1] = im->w;
        m->shape[2] = im->c;
    }
    if (!m->shape[0]) {
        if (!p->seen_h) p->seen_h = im->h, p->seen_w = im->w;
        else if (im->h != p->seen_h || im->w != p->seen_w) p->varied = 1;
    }
    return BATON_OK;
}

static int pack_item(packer *p, size_t i, uint64_t key, baton_err *err)
{
    baton_src_item it;
    int rc = img_src_get(p->src, i, &it, err);
    if (rc) return rc;
    const baton_image *im = it.image;
    char what[4200];
    snprintf(what, sizeof what, "%s item %zu", img_src_name(p->src), i);
    if (!im) {  /* encoded file: decode to validate and measure */
        snprintf(what, sizeof what, "%s", it.path ? it.path : "image");
        uint32_t force[3] = {0, 0, p->m->channels};
        rc = baton_img_decode(it.bytes, it.nbytes, it.encoding, p->m->channels ? force : NULL,
                              &p->img, err);
        if (rc) return baton_err_prefix(err, "%s", what);
        im = &p->img;
    }
    if (p->o->resize_h && p->o->resize_w) {
        rc = img_resize_bilinear(im, p->o->resize_h, p->o->resize_w, &p->sized, err);
        if (rc) return baton_err_prefix(err, "%s", what);
        im = &p->sized;
        it.image = im;  /* resized pixels: never pass the original file through */
    } else if (p->o->resize_h) {   /* the shorter side */
        uint64_t n = p->o->resize_h, sh = im->h < im->w ? im->h : im->w, lg = im->h < im->w ? im->w : im->h;
        uint64_t nl = lg * n / sh ? lg * n / sh : 1;
        if (nl > 65500) return baton_err_set(err, BATON_ERR_FORMAT, "%s: %ux%u resized to a shorter side of %u is %llu long",
                                             what, im->h, im->w, p->o->resize_h, (unsigned long long)nl);
        const double box[4] = {0, 0, im->w, im->h};
        rc = img_resample_box(im, box, (uint32_t)(im->h < im->w ? n : nl), (uint32_t)(im->h < im->w ? nl : n), &p->sized,
                              &p->sc, err);
        if (rc) return baton_err_prefix(err, "%s", what);
        im = &p->sized;
        it.image = im;
    }
    rc = check_shape(p, im, what, err);
    if (rc) return rc;
    accumulate(p, im);

    const uint8_t *bytes;
    size_t nbytes;
    baton_encoding enc = p->keep ? (it.encoding == BATON_ENC_PNG ? BATON_ENC_PNG : BATON_ENC_JPEG) : p->m->encoding;
    if (p->keep) p->kept[enc == BATON_ENC_JPEG]++;
    if (enc == BATON_ENC_RAW) {
        bytes = im->px;
        nbytes = (size_t)im->h * im->w * im->c;
    } else if (!it.image && it.encoding == enc) {
        bytes = it.bytes;  /* pass-through: already in the requested encoding */
        nbytes = it.nbytes;
    } else {
        p->enc.len = 0;
        rc = baton_img_encode(im, enc, p->o->quality, &p->enc, err);
        if (rc) return baton_err_prefix(err, "%s", what);
        bytes = p->enc.data;
        nbytes = p->enc.len;
    }
    if (p->o->jpeg_restart && enc == BATON_ENC_JPEG) {
        p->rst.len = 0;
        rc = img_jpeg_restart(bytes, nbytes, &p->rst, err);
        if (rc) return baton_err_prefix(err, "%s: --jpeg-restart", what);
        p->rst_n++;
        p->rst_in += nbytes;
        p->rst_out += p->rst.len;
        bytes = p->rst.data;
        nbytes = p->rst.len;
    }
    float label = (float)it.label;
    baton_sample_in in = {
        .id = it.id, .labels = &label, .nlabels = 1, .img = bytes, .img_len = nbytes,
        .encoding = enc, .h = im->h, .w = im->w, .c = im->c,
    };
    p->payload.len = 0;
    rc = baton_sample_build(p->o->format, &in, &p->payload, err);
    if (rc) return baton_err_prefix(err, "%s", what);

    if (p->w && baton_shard_writer_records(p->w) > 0 &&
        baton_shard_writer_bytes(p->w) + p->payload.len + 16 > p->shard_limit) {
        rc = close_shard(p, err);
        if (rc) return rc;
    }
    if (!p->w) {
        rc = open_shard(p, err);
        if (rc) return rc;
    }
    return baton_shard_writer_add(p->w, key, p->payload.data, p->payload.len, err);
}

static int fill_header(packer *p, baton_err *err)
{
    const baton_pack_opts *o = p->o;
    baton_manifest *m = p->m;
    m->version = 1;
    m->name = strdup(img_src_name(p->src));
    m->split = strdup(o->split ? o->split : "train");
    m->format = o->format;
    m->encoding = o->encoding;
    p->keep = m->encoding == BATON_ENC_UNKNOWN && !strcmp(img_src_name(p->src), "imagefolder");
    if (m->encoding == BATON_ENC_UNKNOWN && !p->keep) m->encoding = BATON_ENC_RAW;
    m->quality = m->encoding == BATON_ENC_JPEG || (p->keep && o->resize_h) ? o->quality : 0;
    m->seed = o->seed;
    m->shuffled = o->shuffle;
    m->classes = img_src_classes(p->src);
    img_src_shape(p->src, m->shape);
    m->channels = m->shape[2];
    if (o->resize_h) {
        if (o->resize_h > 16384 || o->resize_w > 16384)
            return baton_err_set(err, BATON_ERR_ARG, "--resize %ux%u: sides must be 1..16384",
                                 o->resize_h, o->resize_w);
        if (m->shape[0] && o->resize_w) m->shape[0] = o->resize_h, m->shape[1] = o->resize_w;
        else if (m->shape[0] && m->shape[0] != m->shape[1]) m->shape[0] = m->shape[1] = m->shape[2] = 0;  /* found as packed */
        else if (m->shape[0]) m->shape[0] = m->shape[1] = o->resize_h;
    }
    if (!m->name || !m->split) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    if (o->jpeg_restart && !p->keep && m->encoding != BATON_ENC_JPEG)
        return baton_err_set(err, BATON_ERR_USAGE, "--jpeg-restart applies to JPEG records; these are %s (--encode jpeg, "
                             "or an image folder of JPEGs)", baton_encoding_name(m->encoding));
    m->class_names = calloc(m->classes ? m->classes : 1, sizeof *m->class_names);
    if (!m->class_names) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < m->classes; k++)
        if (!(m->class_names[k] = strdup(img_src_class_name(p->src, k))))
            return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    return BATON_OK;
}

/* Every shard's index in one file (dataset.json's "indexes"), so that a reader that needs them all
 * (the indexed order's first batch touches most shards) asks the store once, not once per shard.
 * Each part is read back from the shard's own .idx and checked against its size and CRC32C. */
static int write_indexes(const char *dir, baton_manifest *m, baton_err *err)
{
    baton_buf all = {0};
    char path[4200];
    int rc = BATON_OK;
    for (size_t i = 0; rc == BATON_OK && i < m->nshards; i++) {
        const baton_shard_info *si = &m->shards[i];
        uint8_t *b = NULL;
        size_t n = 0;
        if (!si->index) return BATON_OK;   /* not every shard has one: no such file */
        rc = baton_path_join(path, sizeof path, dir, si->index, err);
        if (rc == BATON_OK) rc = baton_file_read_all(path, (size_t)si->index_bytes, &b, &n, err);
        if (rc == BATON_OK && (n != si->index_bytes || baton_crc32c(0, b, n) != si->index_crc32c))
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: internal: the index changed while packing", path);
        if (rc == BATON_OK && baton_buf_append(&all, b, n)) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        free(b);
    }
    if (rc == BATON_OK) rc = baton_path_join(path, sizeof path, dir, BATON_INDEXES_NAME, err);
    if (rc == BATON_OK) rc = baton_file_write_atomic(path, all.data, all.len, err);
    if (rc == BATON_OK && !(m->indexes = strdup(BATON_INDEXES_NAME))) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    m->indexes_bytes = all.len;
    baton_buf_free(&all);
    return rc;
}

/* After a pack is published: the shards of the dataset it replaced that the new one does not list,
 * and temporary files of packs that were killed (NAME.tmp.PID of a process that is gone), are
 * removed — a folder holds exactly what its dataset.json says, plus whatever else the user keeps
 * there (files baton did not write are never touched). */
static int listed(const baton_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->nshards; i++)
        if (!strcmp(m->shards[i].file, name) || (m->shards[i].index && !strcmp(m->shards[i].index, name))) return 1;
    return m->indexes && !strcmp(m->indexes, name);
}

static void tidy(const char *dir, const baton_manifest *old, const baton_manifest *now)
{
    char p[4200];
    int files = 0, temps = 0;
    for (size_t i = 0; old && i < old->nshards; i++) {
        const char *names[2] = {old->shards[i].file, old->shards[i].index};
        for (int k = 0; k < 2; k++) {
            if (!names[k] || listed(now, names[k]) || baton_path_join(p, sizeof p, dir, names[k], NULL)) continue;
            files += baton_sys.unlink(p) == 0;
        }
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        const char *t = strstr(e->d_name, ".tmp.");
        char *end;
        long pid = t ? strtol(t + 5, &end, 10) : 0;
        if (!t || pid <= 0 || (*end && *end != '.') || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH)) continue;   /* its writer lives */
        temps += !baton_path_join(p, sizeof p, dir, e->d_name, NULL) && baton_sys.unlink(p) == 0;
    }
    if (d) closedir(d);
    if (files || temps)
        baton_log(BATON_LOG_INFO, "%s: removed %d file(s) of the dataset this pack replaced and %d temporary file(s) of "
                  "packs that were killed", dir, files, temps);
}

/* One pack at a time in a folder: DIR/.lock (baton_lock_acquire, as a trainer locks its checkpoint
 * folder) is held from before the first shard until dataset.json is written and the folder tidied,
 * so two packs never interleave their shards under one dataset.json. A dataset already there is
 * named (loaded into *old for the tidy): its shards are overwritten as the new ones are written. */
static int lock_out(const char *dir, int *fd, baton_manifest *old, int *had_old, baton_err *err)
{
    char lock[4200], what[4200];
    int rc = baton_path_join(lock, sizeof lock, dir, ".lock", err);
    if (rc) return rc;
    snprintf(what, sizeof what, "dataset folder %s", dir);
    if ((rc = baton_lock_acquire(lock, what, fd, err))) {
        if (rc == BATON_ERR_BUSY) {   /* say what to do about it */
            size_t l = strlen(err->msg);
            snprintf(err->msg + l, sizeof err->msg - l, ": another pack is writing there; wait for it or give this "
                     "one its own --out");
        }
        return rc;
    }
    baton_err oerr = {0};
    int lrc = baton_manifest_load(dir, old, &oerr);
    *had_old = lrc == BATON_OK;
    if (*had_old)
        baton_log(BATON_LOG_INFO, "replacing the dataset in %s (%s/%s, %llu records in %zu shard(s))", dir,
                  old->name ? old->name : "?", old->split ? old->split : "?", (unsigned long long)old->samples,
                  old->nshards);
    else if (lrc != BATON_ERR_NOTFOUND)
        baton_log(BATON_LOG_INFO, "replacing the dataset in %s (its dataset.json does not load: %s)", dir, oerr.msg);
    return BATON_OK;
}

int baton_pack(const baton_pack_opts *o, baton_manifest *out, baton_err *err)
{
    memset(out, 0, sizeof *out);
    if (!o->from || !o->out_dir) return baton_err_set(err, BATON_ERR_ARG, "--from and --out are required");
    if (o->quality < 1 || o->quality > 100)
        return baton_err_set(err, BATON_ERR_USAGE, "--quality %d is outside 1..100", o->quality);
    if (!(o->shard_mb > 0) || o->shard_mb > 1 << 20)
        return baton_err_set(err, BATON_ERR_USAGE, "--shard-mb %g is outside (0, 1048576]", o->shard_mb);

    packer p = {.o = o, .m = out};
    p.shard_limit = (uint64_t)(o->shard_mb * 1048576.0);
    if (p.shard_limit < 64) p.shard_limit = 64;
    uint64_t *order = NULL;
    int rc = img_src_open(o->from, o->split ? o->split : "train", &p.src, err);
    if (rc) return rc;
    rc = fill_header(&p, err);
    if (rc == BATON_OK) rc = baton_mkdir_p(o->out_dir, err);
    int lock_fd = -1, had_old = 0;
    baton_manifest old;
    if (rc == BATON_OK) rc = lock_out(o->out_dir, &lock_fd, &old, &had_old, err);
    size_t n = img_src_count(p.src);
    if (rc == BATON_OK && n == 0) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no images", o->from);
    if (rc == BATON_OK && !(order = malloc(n * sizeof *order)))
        rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    if (rc == BATON_OK) {
        baton_rng rng;
        baton_rng_seed3(&rng, o->seed, 0x7061636bULL /* "pack" */, 0);
        if (o->shuffle) baton_rng_permutation(&rng, order, n);
        else for (size_t i = 0; i < n; i++) order[i] = i;
    }

    baton_progress prog;
    if (o->progress) baton_progress_start(&prog, "pack", n);
    for (size_t k = 0; rc == BATON_OK && k < n; k++) {
        rc = pack_item(&p, (size_t)order[k], k, err);
        if (o->progress) baton_progress_update(&prog, k + 1);
    }
    if (o->progress) baton_progress_finish(&prog);
    if (rc == BATON_OK && p.w) rc = close_shard(&p, err);
    if (p.w) baton_shard_writer_abort(p.w);

    if (rc == BATON_OK) {
        out->samples = n;
        if (p.keep)   /* the files' own encodings: one, or both */
            out->encoding = !p.kept[1] ? BATON_ENC_PNG : !p.kept[0] ? BATON_ENC_JPEG : BATON_ENC_UNKNOWN;
        if (!out->shape[0] && !p.varied) {  /* every image had the same size: say so */
            out->shape[0] = p.seen_h;
            out->shape[1] = p.seen_w;
            out->shape[2] = out->channels;
        }
        for (uint32_t k = 0; k < out->channels && k < 4; k++) {
            double mean = p.sum[k] / (double)p.pixels;
            double var = p.sumsq[k] / (double)p.pixels - mean * mean;
            out->mean[k] = (float)mean;
            out->std[k] = (float)sqrt(var > 1e-12 ? var : 1e-12);
        }
        if (p.rst_n)
            baton_log(BATON_LOG_INFO, "--jpeg-restart: %llu JPEG(s) transcoded, %.1f MB -> %.1f MB (%+.1f%%)",
                      (unsigned long long)p.rst_n, p.rst_in / 1e6, p.rst_out / 1e6,
                      100.0 * ((double)p.rst_out / (double)p.rst_in - 1));
        rc = write_indexes(o->out_dir, out, err);
        if (rc == BATON_OK) rc = baton_manifest_save(o->out_dir, out, err);
        if (rc == BATON_OK) tidy(o->out_dir, had_old ? &old : NULL, out);
    }
    if (had_old) baton_manifest_free(&old);
    baton_lock_release(lock_fd);   /* after dataset.json and the tidy: the folder is consistent */
    free(order);
    baton_image_free(&p.img);
    baton_image_free(&p.sized);
    img_scratch_free(&p.sc);
    baton_buf_free(&p.enc);
    baton_buf_free(&p.payload);
    baton_buf_free(&p.rst);
    img_src_close(p.src);
    if (rc) baton_manifest_free(out);
    return rc;
}
