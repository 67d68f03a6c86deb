/* test_rec_sample.c — rec: image samples. IRHeader payloads (one label, several labels, exact
 * bytes, malformed headers) and tf.train.Example payloads: the exact bytes of a tiny Example
 * derived by hand from the protobuf wire format, round trips, several labels, negative labels,
 * hand-built Examples with unpacked lists / unknown fields / other key orders, and malformed
 * protobuf (cut at every byte, overlong varints, groups, wrong kinds, bad counts). */
#include "baton/rec.h"
#include "check.h"

/* ---- a tiny protobuf writer for hand-built inputs ---- */
static void pv(baton_buf *b, uint64_t v)
{
    while (v >= 0x80) {
        uint8_t c = (uint8_t)(v | 0x80);
        baton_buf_append(b, &c, 1);
        v >>= 7;
    }
    uint8_t c = (uint8_t)v;
    baton_buf_append(b, &c, 1);
}
static void plen(baton_buf *b, uint32_t field, const void *p, size_t n)
{
    pv(b, (uint64_t)field << 3 | 2);
    pv(b, n);
    baton_buf_append(b, p, n);
}
/* map entry {key, value = Feature body} appended to a Features body */
static void pentry(baton_buf *features, const char *key, const baton_buf *feature)
{
    baton_buf e = {0};
    plen(&e, 1, key, strlen(key));
    plen(&e, 2, feature->data, feature->len);
    plen(features, 1, e.data, e.len);
    baton_buf_free(&e);
}
static void feature_bytes(baton_buf *f, const char *v, size_t n)
{
    baton_buf l = {0};
    plen(&l, 1, v, n);
    f->len = 0;
    plen(f, 1, l.data, l.len);
    baton_buf_free(&l);
}
static void feature_int(baton_buf *f, int64_t v)
{
    baton_buf l = {0}, packed = {0};
    pv(&packed, (uint64_t)v);
    plen(&l, 1, packed.data, packed.len);
    f->len = 0;
    plen(f, 3, l.data, l.len);
    baton_buf_free(&l);
    baton_buf_free(&packed);
}
static void wrap_example(baton_buf *ex, const baton_buf *features)
{
    ex->len = 0;
    plen(ex, 1, features->data, features->len);
}

static int parse_tf(const baton_buf *b, baton_sample *s, baton_err *err)
{
    return baton_sample_parse(BATON_FMT_TFRECORD, b->data, b->len, "t.tfrecord", 48, s, err);
}

int main(void)
{
    baton_buf b = {0};
    baton_err err = {0};
    baton_sample s;

    /* ---------------- RecordIO / IRHeader ---------------- */
    float one = 3.0f;
    baton_sample_in in = {.id = 7, .id2 = 9, .labels = &one, .nlabels = 1,
                          .img = (const uint8_t *)"IMG", .img_len = 3};
    CHECK(baton_sample_build(BATON_FMT_RECORDIO, &in, &b, &err) == BATON_OK);
    static const uint8_t ir1[27] = {0, 0, 0, 0, 0x00, 0x00, 0x40, 0x40, 7, 0, 0, 0, 0, 0,
                                    0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 'I', 'M', 'G'};
    CHECK(b.len == 27 && memcmp(b.data, ir1, 27) == 0);
    CHECK(baton_sample_parse(BATON_FMT_RECORDIO, b.data, b.len, "t.rec", 0, &s, &err) == BATON_OK);
    CHECK_MSG(s.nlabels == 1 && s.label == 3.0f && s.id == 7 && s.id2 == 9 && s.img_len == 3 &&
          memcmp(s.img, "IMG", 3) == 0 && s.encoding == BATON_ENC_UNKNOWN && !s.labels_varint,
              "%u %g %llu %llu %zu %d %d", s.nlabels, (double)s.label, (unsigned long long)s.id,
              (unsigned long long)s.id2, s.img_len, s.encoding, s.labels_varint);
    CHECK(baton_sample_label(&s, 0) == 3.0f);

    float many[3] = {1.5f, -2.0f, 7.0f};
    in.labels = many;
    in.nlabels = 3;
    b.len = 0;
    CHECK(baton_sample_build(BATON_FMT_RECORDIO, &in, &b, &err) == BATON_OK);
    CHECK(b.len == 24 + 12 + 3);
    CHECK(b.data[0] == 3 && b.data[4] == 0 && b.data[7] == 0);   /* flag 3, header label 0 */
    CHECK(b.data[24] == 0x00 && b.data[26] == 0xc0 && b.data[27] == 0x3f);   /* 1.5f LE */
    CHECK(baton_sample_parse(BATON_FMT_RECORDIO, b.data, b.len, "t.rec", 0, &s, &err) == BATON_OK);
    CHECK(s.nlabels == 3 && s.label == 1.5f && baton_sample_label(&s, 1) == -2.0f &&
          baton_sample_label(&s, 2) == 7.0f && s.img_len == 3 && memcmp(s.img, "IMG", 3) == 0);
    CHECK(baton_sample_label(&s, 3) == 0.0f);
    /* header too short; more labels announced than bytes present */
    CHECK(baton_sample_parse(BATON_FMT_RECORDIO, b.data, 23, "t.rec", 96, &s, &err) ==
          BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "t.rec: offset 96") && strstr(err.msg, "24-byte"), "%s", err.msg);
    CHECK(baton_sample_parse(BATON_FMT_RECORDIO, b.data, 24 + 11, "t.rec", 0, &s, &err) ==
          BATON_ERR_FORMAT);
    uint8_t hdr[24] = {0xff, 0xff, 0xff, 0xff};
    CHECK(baton_sample_parse(BATON_FMT_RECORDIO, hdr, 24, "t.rec", 0, &s, &err) ==
          BATON_ERR_FORMAT);
    uint8_t zero_hdr[24] = {0};
    CHECK(baton_sample_parse(BATON_FMT_RECORDIO, zero_hdr, 24, "t.rec", 0, &s, &err) == BATON_OK &&
          s.nlabels == 1 && s.img_len == 0 && s.label == 0.0f);
    in.nlabels = 0;
    CHECK(baton_sample_build(BATON_FMT_RECORDIO, &in, &b, &err) == BATON_ERR_ARG);

    /* ---------------- TFRecord / tf.train.Example ---------------- */
    /* The tiny Example, by hand: features sorted by key, each a map entry
     *   0a <len> {0a <klen> key 12 <flen> Feature}, Feature = 1a (int64_list) or 0a (bytes_list)
     * around a list {0a <len> packed-or-bytes}. Features body = 166 bytes → 0a a6 01. */
    static const char tiny[] =
        "\x0a\xa6\x01"
        "\x0a\x17\x0a\x0e" "image/channels" "\x12\x05\x1a\x03\x0a\x01\x01"
        "\x0a\x1a\x0a\x11" "image/class/label" "\x12\x05\x1a\x03\x0a\x01\x03"
        "\x0a\x16\x0a\x0d" "image/encoded" "\x12\x05\x0a\x03\x0a\x01" "X"
        "\x0a\x17\x0a\x0c" "image/format" "\x12\x07\x0a\x05\x0a\x03" "raw"
        "\x0a\x15\x0a\x0c" "image/height" "\x12\x05\x1a\x03\x0a\x01\x01"
        "\x0a\x11\x0a\x08" "image/id" "\x12\x05\x1a\x03\x0a\x01\x07"
        "\x0a\x14\x0a\x0b" "image/width" "\x12\x05\x1a\x03\x0a\x01\x01";
    CHECK(sizeof tiny - 1 == 169);
    float three = 3.0f;
    baton_sample_in tin = {.id = 7, .labels = &three, .nlabels = 1, .img = (const uint8_t *)"X",
                           .img_len = 1, .encoding = BATON_ENC_RAW, .h = 1, .w = 1, .c = 1};
    b.len = 0;
    CHECK(baton_sample_build(BATON_FMT_TFRECORD, &tin, &b, &err) == BATON_OK);
    CHECK_MSG(b.len == 169 && memcmp(b.data, tiny, 169) == 0, "built %zu bytes", b.len);
    CHECK(parse_tf(&b, &s, &err) == BATON_OK);
    CHECK(s.nlabels == 1 && s.label == 3.0f && s.id == 7 && s.id2 == 0 && s.img_len == 1 &&
          s.img[0] == 'X' && s.encoding == BATON_ENC_RAW && s.h == 1 && s.w == 1 && s.c == 1);
    CHECK(s.labels_varint == 1 && s.labels_len == 1 && baton_sample_label(&s, 0) == 3.0f);

    /* every cut of the tiny Example is malformed (the outer length runs past the end) */
    int cuts = 1;
    for (size_t n = 0; n < 169; n++) {
        int rc = baton_sample_parse(BATON_FMT_TFRECORD, (const uint8_t *)tiny, n, "t.tfrecord", 0,
                                    &s, &err);
        if (rc != BATON_ERR_FORMAT) cuts = 0;
    }
    CHECK(cuts);

    /* round trip: several labels (negative too), png, no shape */
    float labs[4] = {0.0f, 5.0f, -1.0f, 300.4f};
    uint8_t img[1000];
    for (int i = 0; i < 1000; i++) img[i] = (uint8_t)(i * 13);
    baton_sample_in rin = {.id = 123456789012ULL, .labels = labs, .nlabels = 4, .img = img,
                           .img_len = sizeof img, .encoding = BATON_ENC_PNG};
    b.len = 0;
    CHECK(baton_sample_build(BATON_FMT_TFRECORD, &rin, &b, &err) == BATON_OK);
    CHECK(parse_tf(&b, &s, &err) == BATON_OK);
    CHECK(s.nlabels == 4 && s.label == 0.0f && baton_sample_label(&s, 1) == 5.0f &&
          baton_sample_label(&s, 2) == -1.0f && baton_sample_label(&s, 3) == 300.0f);
    CHECK(s.id == 123456789012ULL && s.img_len == 1000 && memcmp(s.img, img, 1000) == 0 &&
          s.encoding == BATON_ENC_PNG && s.h == 0 && s.w == 0 && s.c == 0);
    /* deterministic: the same input gives the same bytes */
    baton_buf b2 = {0};
    CHECK(baton_sample_build(BATON_FMT_TFRECORD, &rin, &b2, &err) == BATON_OK);
    CHECK(b2.len == b.len && memcmp(b2.data, b.data, b.len) == 0);
    /* raw needs a matching shape; labels must fit an int64 */
    tin.h = 2;
    CHECK(baton_sample_build(BATON_FMT_TFRECORD, &tin, &b2, &err) == BATON_ERR_ARG);
    tin.h = 1;
    float nan_label = 0.0f / 0.0f;
    tin.labels = &nan_label;
    CHECK(baton_sample_build(BATON_FMT_TFRECORD, &tin, &b2, &err) == BATON_ERR_ARG);
    tin.labels = &three;

    /* hand-built Example: unknown top-level field, unknown feature (float_list), an unpacked
     * label list, key after value inside an entry, uppercase format, an unknown field in the
     * entry, and a later duplicate of image/encoded that wins */
    baton_buf feats = {0}, f = {0}, ex = {0}, tmp = {0};
    static const uint8_t floats[] = {0x0a, 0x08, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
    f.len = 0;
    plen(&f, 2, floats, sizeof floats);
    pentry(&feats, "foo", &f);
    tmp.len = 0;
    pv(&tmp, 0x08);   /* Int64List.value, unpacked: 08 05 08 07 */
    pv(&tmp, 5);
    pv(&tmp, 0x08);
    pv(&tmp, 7);
    f.len = 0;
    plen(&f, 3, tmp.data, tmp.len);
    pentry(&feats, "image/class/label", &f);
    feature_bytes(&f, "old", 3);
    pentry(&feats, "image/encoded", &f);
    feature_bytes(&f, "PNG", 3);
    pentry(&feats, "image/format", &f);
    /* entry with value before key and an unknown varint field 3 */
    feature_bytes(&f, "AB", 2);
    tmp.len = 0;
    plen(&tmp, 2, f.data, f.len);
    pv(&tmp, 3 << 3 | 0);
    pv(&tmp, 99);
    plen(&tmp, 1, "image/encoded", 13);
    plen(&feats, 1, tmp.data, tmp.len);
    wrap_example(&ex, &feats);
    pv(&ex, 2 << 3 | 0);   /* unknown Example field 2 (varint) */
    pv(&ex, 1);
    plen(&ex, 7, "zzz", 3); /* unknown Example field 7 (bytes) */
    CHECK(parse_tf(&ex, &s, &err) == BATON_OK);
    CHECK_MSG(s.nlabels == 2 && s.label == 5.0f && baton_sample_label(&s, 1) == 7.0f &&
                  s.labels_varint == 2,
              "%u %g %d %s", s.nlabels, (double)s.label, s.labels_varint, err.msg);
    CHECK(s.img_len == 2 && memcmp(s.img, "AB", 2) == 0 && s.encoding == BATON_ENC_PNG);

    /* packed list split over two runs: still all labels, in order */
    feats.len = 0;
    feature_bytes(&f, "Q", 1);
    pentry(&feats, "image/encoded", &f);
    tmp.len = 0;
    plen(&tmp, 1, "\x01\x02", 2);
    plen(&tmp, 1, "\x03", 1);
    f.len = 0;
    plen(&f, 3, tmp.data, tmp.len);
    pentry(&feats, "image/class/label", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_OK);
    CHECK(s.nlabels == 3 && baton_sample_label(&s, 0) == 1.0f &&
          baton_sample_label(&s, 1) == 2.0f && baton_sample_label(&s, 2) == 3.0f);
    /* two Features messages merge: a second one adds image/id */
    baton_buf feats2 = {0};
    feature_int(&f, 42);
    pentry(&feats2, "image/id", &f);
    plen(&ex, 1, feats2.data, feats2.len);
    CHECK(parse_tf(&ex, &s, &err) == BATON_OK && s.id == 42 && s.nlabels == 3);

    /* ---- malformed Examples ---- */
    feats.len = 0;
    feature_bytes(&f, "Q", 1);
    pentry(&feats, "image/encoded", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_ERR_FORMAT);   /* no label */
    CHECK_MSG(strstr(err.msg, "t.tfrecord: offset 48") && strstr(err.msg, "image/class/label"),
              "%s", err.msg);
    feats.len = 0;
    feature_int(&f, 1);
    pentry(&feats, "image/class/label", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_ERR_FORMAT);   /* no image */
    CHECK(strstr(err.msg, "image/encoded") != NULL);
    feature_bytes(&f, "Q", 1);
    pentry(&feats, "image/class/label", &f);              /* label as bytes_list */
    feature_bytes(&f, "Q", 1);
    pentry(&feats, "image/encoded", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "expected int64_list"), "%s", err.msg);
    /* image/encoded with two values */
    feats.len = 0;
    feature_int(&f, 1);
    pentry(&feats, "image/class/label", &f);
    tmp.len = 0;
    plen(&tmp, 1, "a", 1);
    plen(&tmp, 1, "b", 1);
    f.len = 0;
    plen(&f, 1, tmp.data, tmp.len);
    pentry(&feats, "image/encoded", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "2 values"), "%s", err.msg);
    /* negative height */
    feats.len = 0;
    feature_int(&f, 1);
    pentry(&feats, "image/class/label", &f);
    feature_bytes(&f, "Q", 1);
    pentry(&feats, "image/encoded", &f);
    feature_int(&f, -1);
    pentry(&feats, "image/height", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "image/height"), "%s", err.msg);
    /* raw image whose size does not match its shape */
    feats.len = 0;
    feature_int(&f, 1);
    pentry(&feats, "image/class/label", &f);
    feature_bytes(&f, "QQ", 2);
    pentry(&feats, "image/encoded", &f);
    feature_bytes(&f, "raw", 3);
    pentry(&feats, "image/format", &f);
    feature_int(&f, 1);
    pentry(&feats, "image/height", &f);
    pentry(&feats, "image/width", &f);
    pentry(&feats, "image/channels", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_ERR_FORMAT);
    /* empty label list */
    feats.len = 0;
    f.len = 0;
    plen(&f, 3, "", 0);
    pentry(&feats, "image/class/label", &f);
    feature_bytes(&f, "Q", 1);
    pentry(&feats, "image/encoded", &f);
    wrap_example(&ex, &feats);
    CHECK(parse_tf(&ex, &s, &err) == BATON_ERR_FORMAT);
    /* wire-level garbage */
    static const uint8_t overlong[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80,
                                       0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    static const uint8_t overflow[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x02};
    static const uint8_t group[] = {0x0b, 0x0c};
    static const uint8_t wt7[] = {0x0f};
    static const uint8_t field0[] = {0x02, 0x00};
    static const uint8_t biglen[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
    static const uint8_t feat_varint[] = {0x08, 0x01};   /* Example.features as a varint */
    const struct { const uint8_t *p; size_t n; } bad[] = {
        {overlong, sizeof overlong}, {overflow, sizeof overflow}, {group, sizeof group},
        {wt7, sizeof wt7},           {field0, sizeof field0},     {biglen, sizeof biglen},
        {feat_varint, sizeof feat_varint},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc =
            baton_sample_parse(BATON_FMT_TFRECORD, bad[i].p, bad[i].n, "t.tfrecord", 0, &s, &err);
        CHECK_MSG(rc == BATON_ERR_FORMAT, "bad[%zu]: %d", i, rc);
    }
    /* a 10-byte varint holding 2^63 + ... is fine when it fits: max uint64 */
    static const uint8_t maxv[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(baton_sample_parse(BATON_FMT_TFRECORD, maxv, sizeof maxv, "t", 0, &s, &err) ==
          BATON_ERR_FORMAT);   /* well-formed, but no image/label */
    CHECK(strstr(err.msg, "no image/encoded") != NULL);
    CHECK(baton_sample_parse(BATON_FMT_TFRECORD, NULL, 0, "t", 0, &s, &err) == BATON_ERR_FORMAT);
    CHECK(baton_sample_parse(BATON_FMT_UNKNOWN, b.data, b.len, "t", 0, &s, &err) == BATON_ERR_ARG);

    baton_buf_free(&b);
    baton_buf_free(&b2);
    baton_buf_free(&feats);
    baton_buf_free(&feats2);
    baton_buf_free(&f);
    baton_buf_free(&ex);
    baton_buf_free(&tmp);
    CHECK_DONE();
}
