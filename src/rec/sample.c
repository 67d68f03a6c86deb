/* sample.c — labelled image records, in both formats: building a payload from a baton_sample_in
 * and parsing a payload into a baton_sample view (no copy: the view points into the payload).
 *
 * RecordIO payload: MXNet's IRHeader {u32 flag, f32 label, u64 id, u64 id2} (24 bytes, LE); when
 * flag = N > 0, N f32 labels follow the header (and the header's label is 0); then the image.
 * TFRecord payload: a tf.train.Example, encoded and decoded here on the protobuf wire format:
 *   Example{features=1: Features{feature=1: map<string,Feature> entry{key=1, value=2}}}
 *   Feature{bytes_list=1{value=1 bytes*}, float_list=2{value=1 packed float},
 *           int64_list=3{value=1 int64*, packed or not}}
 * Features read/written: image/encoded, image/format, image/class/label (one or more),
 * image/height, image/width, image/channels, image/id. The encoder writes them in sorted key
 * order (deterministic bytes); the decoder accepts any order, skips unknown fields and unknown
 * features, lets the last occurrence of a key win (protobuf map semantics), and validates every
 * length. Labels stay encoded in the payload; baton_sample_label decodes label i from whichever
 * storage the parse recorded (f32 array, packed varints, or a whole Int64List body). */
#include "rec_internal.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static float f32_at(const uint8_t *p)
{
    uint32_t u = rec_le32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void put_f32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    rec_put_le32(p, u);
}

/* ------------------------------------------------------------ Int64List values, either form */
typedef struct i64_iter {
    const uint8_t *p;     /* Int64List body still to walk */
    size_t n, pos;
    const uint8_t *run;   /* current packed run */
    size_t run_n, run_pos;
} i64_iter;

/* 1 value produced, 0 end, -1 malformed. */
static int i64_next(i64_iter *it, uint64_t *v, const char **why)
{
    for (;;) {
        if (it->run_pos < it->run_n) {
            if (rec_pb_varint(it->run, it->run_n, &it->run_pos, v) != 0) {
                *why = "bad varint in a packed int64 list";
                return -1;
            }
            return 1;
        }
        rec_pb_field f;
        int rc = rec_pb_next(it->p, it->n, &it->pos, &f, why);
        if (rc <= 0) return rc;
        if (f.num != 1) continue;   /* unknown field of Int64List: skip */
        if (f.wt == PB_VARINT) {
            *v = f.v;
            return 1;
        }
        if (f.wt != PB_LEN) {
            *why = "int64 list value with a wrong wire type";
            return -1;
        }
        it->run = f.data;
        it->run_n = f.len;
        it->run_pos = 0;
    }
}

float baton_sample_label(const baton_sample *s, uint32_t i)
{
    if (i >= s->nlabels || !s->labels) return i == 0 ? s->label : 0.0f;
    if (s->labels_varint == 0) {
        if ((uint64_t)i * 4 + 4 > s->labels_len) return 0.0f;
        return f32_at(s->labels + (size_t)i * 4);
    }
    i64_iter it = {0};
    if (s->labels_varint == 1) {
        it.run = s->labels;
        it.run_n = s->labels_len;
    } else {
        it.p = s->labels;
        it.n = s->labels_len;
    }
    uint64_t v = 0;
    const char *why;
    for (uint32_t k = 0; k <= i; k++)
        if (i64_next(&it, &v, &why) != 1) return 0.0f;
    return (float)(int64_t)v;
}

/* ------------------------------------------------------------ RecordIO: IRHeader */
static int parse_irheader(const uint8_t *p, size_t n, const char *name, uint64_t offset,
                          baton_sample *s, baton_err *err)
{
    if (n < BATON_IRHEADER_SIZE)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: offset %llu: record of %zu bytes is shorter than the 24-byte "
                             "image header",
                             name, (unsigned long long)offset, n);
    uint32_t flag = rec_le32(p);
    s->label = f32_at(p + 4);
    s->id = rec_le64(p + 8);
    s->id2 = rec_le64(p + 16);
    size_t rest = n - BATON_IRHEADER_SIZE;
    if (flag == 0) {
        s->nlabels = 1;
        s->labels = p + 4;
        s->labels_len = 4;
    } else {
        if ((uint64_t)flag * 4 > rest)
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s: offset %llu: image header announces %u labels (%llu bytes) "
                                 "but only %zu bytes follow it",
                                 name, (unsigned long long)offset, flag,
                                 (unsigned long long)flag * 4, rest);
        s->nlabels = flag;
        s->labels = p + BATON_IRHEADER_SIZE;
        s->labels_len = (size_t)flag * 4;
        s->label = f32_at(s->labels);
    }
    s->labels_varint = 0;
    size_t extra = (size_t)flag * 4;   /* labels after the header (none when flag is 0) */
    s->img = p + BATON_IRHEADER_SIZE + extra;
    s->img_len = rest - extra;
    s->encoding = BATON_ENC_UNKNOWN;
    return BATON_OK;
}

static int build_irheader(const baton_sample_in *in, baton_buf *out, baton_err *err)
{
    size_t extra = in->nlabels > 1 ? (size_t)in->nlabels * 4 : 0;
    if (in->img_len > SIZE_MAX - BATON_IRHEADER_SIZE - extra ||
        baton_buf_reserve(out, BATON_IRHEADER_SIZE + extra + in->img_len) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory building a %zu-byte record",
                             in->img_len);
    uint8_t *o = out->data + out->len;
    rec_put_le32(o, in->nlabels > 1 ? in->nlabels : 0);
    put_f32(o + 4, in->nlabels > 1 ? 0.0f : in->labels[0]);
    rec_put_le64(o + 8, in->id);
    rec_put_le64(o + 16, in->id2);
    o += BATON_IRHEADER_SIZE;
    for (uint32_t i = 0; extra && i < in->nlabels; i++, o += 4) put_f32(o, in->labels[i]);
    if (in->img_len) memcpy(o, in->img, in->img_len);
    out->len += BATON_IRHEADER_SIZE + extra + in->img_len;
    return BATON_OK;
}

/* ------------------------------------------------------------ TFRecord: tf.train.Example */
enum { F_CHANNELS, F_LABEL, F_ENCODED, F_FORMAT, F_HEIGHT, F_ID, F_WIDTH, F_COUNT };
static const char *const feat_keys[F_COUNT] = {
    "image/channels", "image/class/label", "image/encoded", "image/format",
    "image/height",   "image/id",          "image/width",
};
static const size_t feat_klen[F_COUNT] = {14, 17, 13, 12, 12, 8, 11};  /* strlen of each key */
enum { KIND_NONE = 0, KIND_BYTES = 1, KIND_FLOAT = 2, KIND_INT64 = 3 };
static const char *const kind_names[4] = {"no value", "bytes_list", "float_list", "int64_list"};

typedef struct feat_in {
    int present;
    int kind;              /* KIND_* of the Feature's oneof (last one wins) */
    const uint8_t *list;   /* the list message body */
    size_t len;
} feat_in;

#define EX_FAIL(...) baton_err_set(err, BATON_ERR_FORMAT, __VA_ARGS__)

static int parse_feature(const uint8_t *p, size_t n, feat_in *fi, const char **why)
{
    size_t pos = 0;
    rec_pb_field f;
    int rc;
    fi->present = 1;
    fi->kind = KIND_NONE;
    fi->list = NULL;
    fi->len = 0;
    while ((rc = rec_pb_next(p, n, &pos, &f, why)) == 1) {
        if (f.num < 1 || f.num > 3) continue;
        if (f.wt != PB_LEN) {
            *why = "Feature list with a wrong wire type";
            return -1;
        }
        fi->kind = (int)f.num;
        fi->list = f.data;
        fi->len = f.len;
    }
    return rc;
}

/* Walk Example → Features → map entries and remember the Feature body of each known key. */
static int collect_features(const uint8_t *p, size_t n, feat_in feats[F_COUNT], const char **why)
{
    size_t pos = 0;
    rec_pb_field ex;
    int rc;
    while ((rc = rec_pb_next(p, n, &pos, &ex, why)) == 1) {
        if (ex.num != 1) continue;
        if (ex.wt != PB_LEN) {
            *why = "Example.features with a wrong wire type";
            return -1;
        }
        size_t fpos = 0;
        rec_pb_field fe;
        int frc;
        while ((frc = rec_pb_next(ex.data, ex.len, &fpos, &fe, why)) == 1) {
            if (fe.num != 1) continue;
            if (fe.wt != PB_LEN) {
                *why = "Features.feature with a wrong wire type";
                return -1;
            }
            const uint8_t *key = NULL, *val = NULL;
            size_t klen = 0, vlen = 0, epos = 0;
            rec_pb_field en;
            int erc;
            while ((erc = rec_pb_next(fe.data, fe.len, &epos, &en, why)) == 1) {
                if (en.num != 1 && en.num != 2) continue;
                if (en.wt != PB_LEN) {
                    *why = "feature map entry with a wrong wire type";
                    return -1;
                }
                if (en.num == 1) {
                    key = en.data;
                    klen = en.len;
                } else {
                    val = en.data;
                    vlen = en.len;
                }
            }
            if (erc < 0) return -1;
            for (int k = 0; key && k < F_COUNT; k++) {
                if (feat_klen[k] != klen || memcmp(feat_keys[k], key, klen) != 0) continue;
                if (parse_feature(val ? val : (const uint8_t *)"", vlen, &feats[k], why) < 0)
                    return -1;
            }
        }
        if (frc < 0) return -1;
    }
    return rc;
}

/* The single bytes value of a bytes_list feature. */
static int one_bytes(const feat_in *fi, const char *key, const char *name, uint64_t offset,
                     const uint8_t **out, size_t *len, baton_err *err)
{
    if (fi->kind != KIND_BYTES)
        return EX_FAIL("%s: offset %llu: feature %s holds %s, expected bytes_list", name,
                       (unsigned long long)offset, key, kind_names[fi->kind]);
    size_t pos = 0, count = 0;
    rec_pb_field f;
    int rc;
    const char *why = "";
    while ((rc = rec_pb_next(fi->list, fi->len, &pos, &f, &why)) == 1) {
        if (f.num != 1) continue;
        if (f.wt != PB_LEN)
            return EX_FAIL("%s: offset %llu: feature %s: bytes value with a wrong wire type", name,
                           (unsigned long long)offset, key);
        *out = f.data;
        *len = f.len;
        count++;
    }
    if (rc < 0)
        return EX_FAIL("%s: offset %llu: feature %s: %s", name, (unsigned long long)offset, key,
                       why);
    if (count != 1)
        return EX_FAIL("%s: offset %llu: feature %s holds %zu values, expected 1", name,
                       (unsigned long long)offset, key, count);
    return BATON_OK;
}

/* The single value of an int64_list feature, which must lie in [0, max]. */
static int one_int(const feat_in *fi, const char *key, uint64_t max, const char *name,
                   uint64_t offset, uint64_t *out, baton_err *err)
{
    if (fi->kind != KIND_INT64)
        return EX_FAIL("%s: offset %llu: feature %s holds %s, expected int64_list", name,
                       (unsigned long long)offset, key, kind_names[fi->kind]);
    i64_iter it = {.p = fi->list, .n = fi->len};
    uint64_t v = 0, count = 0, x;
    const char *why = "";
    int rc;
    while ((rc = i64_next(&it, &x, &why)) == 1) {
        v = x;
        count++;
    }
    if (rc < 0)
        return EX_FAIL("%s: offset %llu: feature %s: %s", name, (unsigned long long)offset, key,
                       why);
    if (count != 1)
        return EX_FAIL("%s: offset %llu: feature %s holds %llu values, expected 1", name,
                       (unsigned long long)offset, key, (unsigned long long)count);
    if (v > max)
        return EX_FAIL("%s: offset %llu: feature %s = %lld is out of range", name,
                       (unsigned long long)offset, key, (long long)v);
    *out = v;
    return BATON_OK;
}

static int parse_labels(const feat_in *fi, const char *name, uint64_t offset, baton_sample *s,
                        baton_err *err)
{
    const char *key = feat_keys[F_LABEL];
    if (fi->kind != KIND_INT64)
        return EX_FAIL("%s: offset %llu: feature %s holds %s, expected int64_list", name,
                       (unsigned long long)offset, key, kind_names[fi->kind]);
    /* count the values (checking every varint) */
    i64_iter it = {.p = fi->list, .n = fi->len};
    uint64_t count = 0, first = 0, v;
    const char *why = "";
    int rc;
    while ((rc = i64_next(&it, &v, &why)) == 1) {
        if (count == 0) first = v;
        count++;
    }
    if (rc < 0)
        return EX_FAIL("%s: offset %llu: feature %s: %s", name, (unsigned long long)offset, key,
                       why);
    if (count == 0)
        return EX_FAIL("%s: offset %llu: feature %s is empty, expected at least one label", name,
                       (unsigned long long)offset, key);
    if (count > UINT32_MAX)
        return EX_FAIL("%s: offset %llu: feature %s holds %llu labels, too many", name,
                       (unsigned long long)offset, key, (unsigned long long)count);
    s->nlabels = (uint32_t)count;
    s->label = (float)(int64_t)first;
    /* the common case: the list is exactly one packed run */
    size_t pos = 0, values = 0;
    const uint8_t *run = NULL;
    size_t run_n = 0;
    rec_pb_field f;
    while (rec_pb_next(fi->list, fi->len, &pos, &f, &why) == 1) {
        if (f.num != 1) continue;
        values++;
        if (f.wt == PB_LEN) {
            run = f.data;
            run_n = f.len;
        }
    }
    if (values == 1 && run) {
        s->labels = run;
        s->labels_len = run_n;
        s->labels_varint = 1;
    } else {
        s->labels = fi->list;      /* unpacked or split: keep the whole Int64List body */
        s->labels_len = fi->len;
        s->labels_varint = 2;
    }
    return BATON_OK;
}

static int parse_example(const uint8_t *p, size_t n, const char *name, uint64_t offset,
                         baton_sample *s, baton_err *err)
{
    feat_in feats[F_COUNT];
    memset(feats, 0, sizeof feats);
    const char *why = "";
    if (collect_features(p, n, feats, &why) < 0)
        return EX_FAIL("%s: offset %llu: malformed tf.train.Example: %s", name,
                       (unsigned long long)offset, why);
    if (!feats[F_ENCODED].present)
        return EX_FAIL("%s: offset %llu: Example has no image/encoded feature", name,
                       (unsigned long long)offset);
    if (!feats[F_LABEL].present)
        return EX_FAIL("%s: offset %llu: Example has no image/class/label feature", name,
                       (unsigned long long)offset);
    int rc = one_bytes(&feats[F_ENCODED], feat_keys[F_ENCODED], name, offset, &s->img,
                       &s->img_len, err);
    if (rc) return rc;
    if ((rc = parse_labels(&feats[F_LABEL], name, offset, s, err))) return rc;
    s->encoding = BATON_ENC_UNKNOWN;
    if (feats[F_FORMAT].present) {
        const uint8_t *fmt;
        size_t flen;
        rc = one_bytes(&feats[F_FORMAT], feat_keys[F_FORMAT], name, offset, &fmt, &flen, err);
        if (rc) return rc;
        char tmp[8];
        if (flen < sizeof tmp) {
            memcpy(tmp, fmt, flen);
            tmp[flen] = 0;
            baton_encoding e;
            if (strlen(tmp) == flen && baton_encoding_parse(tmp, &e) == BATON_OK) s->encoding = e;
        }
    }
    uint32_t *dims[3] = {&s->h, &s->w, &s->c};
    const int keys[3] = {F_HEIGHT, F_WIDTH, F_CHANNELS};
    for (int k = 0; k < 3; k++) {
        uint64_t v = 0;
        if (feats[keys[k]].present &&
            (rc = one_int(&feats[keys[k]], feat_keys[keys[k]], UINT32_MAX, name, offset, &v,
                          err)))
            return rc;
        *dims[k] = (uint32_t)v;
    }
    if (feats[F_ID].present &&
        (rc = one_int(&feats[F_ID], feat_keys[F_ID], UINT64_MAX, name, offset, &s->id, err)))
        return rc;
    if (s->encoding == BATON_ENC_RAW && s->h && s->w && s->c &&
        (uint64_t)s->h * s->w * s->c != s->img_len)
        return EX_FAIL("%s: offset %llu: raw image of %zu bytes does not match %ux%ux%u", name,
                       (unsigned long long)offset, s->img_len, s->h, s->w, s->c);
    return BATON_OK;
}

/* One feature to write: a bytes value, or int64 values (the labels, rounded, or one number). */
typedef struct feat_out {
    const char *key;
    int kind;
    const uint8_t *bytes;
    size_t blen;
    const float *fl;     /* labels; NULL: the single value `one` */
    uint32_t nfl;
    int64_t one;
} feat_out;

static int64_t fo_int(const feat_out *f, uint32_t i) { return f->fl ? llroundf(f->fl[i]) : f->one; }
static uint32_t fo_count(const feat_out *f) { return f->fl ? f->nfl : 1; }

static size_t fo_packed(const feat_out *f)
{
    size_t n = 0;
    for (uint32_t i = 0; i < fo_count(f); i++) n += rec_pb_varint_size((uint64_t)fo_int(f, i));
    return n;
}

static size_t fo_list_len(const feat_out *f)
{
    size_t inner = f->kind == KIND_BYTES ? f->blen : fo_packed(f);
    return 1 + rec_pb_varint_size(inner) + inner;
}

static size_t fo_feature_len(const feat_out *f)
{
    size_t l = fo_list_len(f);
    return 1 + rec_pb_varint_size(l) + l;
}

static size_t fo_entry_len(const feat_out *f)
{
    size_t k = strlen(f->key), v = fo_feature_len(f);
    return 1 + rec_pb_varint_size(k) + k + 1 + rec_pb_varint_size(v) + v;
}

static uint8_t *put_len_tag(uint8_t *o, uint32_t field, size_t len)
{
    *o++ = (uint8_t)(field << 3 | PB_LEN);
    return o + rec_pb_put_varint(o, len);
}

static uint8_t *fo_emit(uint8_t *o, const feat_out *f)
{
    size_t klen = strlen(f->key);
    o = put_len_tag(o, 1, fo_entry_len(f));           /* Features.feature (map entry) */
    o = put_len_tag(o, 1, klen);                      /* entry.key */
    memcpy(o, f->key, klen);
    o += klen;
    o = put_len_tag(o, 2, fo_feature_len(f));         /* entry.value: Feature */
    o = put_len_tag(o, (uint32_t)f->kind, fo_list_len(f));  /* bytes_list=1 / int64_list=3 */
    if (f->kind == KIND_BYTES) {
        o = put_len_tag(o, 1, f->blen);               /* BytesList.value */
        if (f->blen) memcpy(o, f->bytes, f->blen);
        return o + f->blen;
    }
    o = put_len_tag(o, 1, fo_packed(f));              /* Int64List.value, packed */
    for (uint32_t i = 0; i < fo_count(f); i++) o += rec_pb_put_varint(o, (uint64_t)fo_int(f, i));
    return o;
}

static int build_example(const baton_sample_in *in, baton_buf *out, baton_err *err)
{
    for (uint32_t i = 0; i < in->nlabels; i++)
        if (!(fabsf(in->labels[i]) < 4.0e18f))
            return baton_err_set(err, BATON_ERR_ARG,
                                 "label %u (%g) cannot be stored as an int64 TFRecord label", i,
                                 (double)in->labels[i]);
    if (in->encoding == BATON_ENC_RAW &&
        (!in->h || !in->w || !in->c || (uint64_t)in->h * in->w * in->c != in->img_len))
        return baton_err_set(err, BATON_ERR_ARG,
                             "raw image of %zu bytes does not match its shape %ux%ux%u",
                             in->img_len, in->h, in->w, in->c);
    const char *fmt = in->encoding == BATON_ENC_UNKNOWN ? NULL : baton_encoding_name(in->encoding);
    feat_out fo[F_COUNT];
    size_t nf = 0;
    /* sorted by key, as listed in feat_keys */
    if (in->c)
        fo[nf++] = (feat_out){.key = feat_keys[F_CHANNELS], .kind = KIND_INT64, .one = in->c};
    fo[nf++] = (feat_out){.key = feat_keys[F_LABEL], .kind = KIND_INT64, .fl = in->labels,
                          .nfl = in->nlabels};
    fo[nf++] = (feat_out){.key = feat_keys[F_ENCODED], .kind = KIND_BYTES, .bytes = in->img,
                          .blen = in->img_len};
    if (fmt)
        fo[nf++] = (feat_out){.key = feat_keys[F_FORMAT], .kind = KIND_BYTES,
                              .bytes = (const uint8_t *)fmt, .blen = strlen(fmt)};
    if (in->h) fo[nf++] = (feat_out){.key = feat_keys[F_HEIGHT], .kind = KIND_INT64, .one = in->h};
    fo[nf++] = (feat_out){.key = feat_keys[F_ID], .kind = KIND_INT64, .one = (int64_t)in->id};
    if (in->w) fo[nf++] = (feat_out){.key = feat_keys[F_WIDTH], .kind = KIND_INT64, .one = in->w};

    size_t features = 0;
    for (size_t i = 0; i < nf; i++) {
        size_t e = fo_entry_len(&fo[i]);
        features += 1 + rec_pb_varint_size(e) + e;
    }
    size_t total = 1 + rec_pb_varint_size(features) + features;
    if (baton_buf_reserve(out, total) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory building a %zu-byte Example",
                             total);
    uint8_t *o = out->data + out->len, *start = o;
    o = put_len_tag(o, 1, features);                  /* Example.features */
    for (size_t i = 0; i < nf; i++) o = fo_emit(o, &fo[i]);
    if ((size_t)(o - start) != total)   /* the size pass and the write pass must agree */
        return baton_err_set(err, BATON_ERR_ARG, "internal error: Example size %zu != %zu",
                             (size_t)(o - start), total);
    out->len += total;
    return BATON_OK;
}

/* ------------------------------------------------------------ entry points */
int baton_sample_parse(baton_rec_format fmt, const uint8_t *p, size_t n, const char *name,
                       uint64_t offset, baton_sample *s, baton_err *err)
{
    memset(s, 0, sizeof *s);
    s->encoding = BATON_ENC_UNKNOWN;
    if (!name) name = "stream";
    if (!p) p = (const uint8_t *)"";
    switch (fmt) {
    case BATON_FMT_RECORDIO: return parse_irheader(p, n, name, offset, s, err);
    case BATON_FMT_TFRECORD: return parse_example(p, n, name, offset, s, err);
    default:
        return baton_err_set(err, BATON_ERR_ARG, "%s: offset %llu: record format unknown", name,
                             (unsigned long long)offset);
    }
}

int baton_sample_build(baton_rec_format fmt, const baton_sample_in *in, baton_buf *out,
                       baton_err *err)
{
    if (in->nlabels == 0 || !in->labels)
        return baton_err_set(err, BATON_ERR_ARG, "a sample needs at least one label");
    if (in->img_len && !in->img)
        return baton_err_set(err, BATON_ERR_ARG, "image bytes missing");
    switch (fmt) {
    case BATON_FMT_RECORDIO: return build_irheader(in, out, err);
    case BATON_FMT_TFRECORD: return build_example(in, out, err);
    default: return baton_err_set(err, BATON_ERR_ARG, "record format unknown");
    }
}
