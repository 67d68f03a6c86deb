/* test_img_idxu.c — the IDX-ubyte parser: plain and gzip (one or several members) inputs built
 * here, every malformed-header case (magic, type, rank, truncation, trailing bytes, overflowing
 * dimensions, damaged or cut gzip), loading from a file, and — when Debian's dataset-fashion-mnist
 * is installed — the real Fashion-MNIST files. */
#include "../../src/img/img_internal.h"
#include "baton/img.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Build an IDX buffer: magic 00 00 type ndim, dims, then data bytes 0,1,2,... (extra may be
 * negative to cut the data short). */
static size_t build_idx(uint8_t *out, uint8_t type, uint8_t ndim, const uint32_t *dims, long extra)
{
    out[0] = 0;
    out[1] = 0;
    out[2] = type;
    out[3] = ndim;
    size_t n = 4, data = 1;
    for (uint8_t i = 0; i < ndim; i++) {
        put_be32(out + n, dims[i]);
        n += 4;
        data *= dims[i];
    }
    data = (size_t)((long)data + extra);
    for (size_t i = 0; i < data; i++) out[n + i] = (uint8_t)(i * 3);
    return n + data;
}

/* gzip p into out; returns the compressed size. */
static size_t gzip(const uint8_t *p, size_t n, uint8_t *out, size_t cap)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int rc = deflate(&zs, Z_FINISH);
    size_t len = cap - zs.avail_out;
    deflateEnd(&zs);
    return rc == Z_STREAM_END ? len : 0;
}

static void test_plain(void)
{
    uint8_t buf[4096];
    baton_idxu x;
    baton_err err = {0};
    uint32_t img_dims[3] = {2, 3, 4}, lab_dims[1] = {5};

    size_t n = build_idx(buf, 8, 3, img_dims, 0);
    CHECK(img_idxu_parse("imgs", buf, n, &x, &err) == BATON_OK);
    CHECK(x.ndim == 3 && x.dims[0] == 2 && x.dims[1] == 3 && x.dims[2] == 4 && x.len == 24);
    CHECK(x.data[0] == 0 && x.data[23] == (uint8_t)(23 * 3));
    img_idxu_free(&x);
    CHECK(x.data == NULL);

    n = build_idx(buf, 8, 1, lab_dims, 0);
    CHECK(img_idxu_parse("labels", buf, n, &x, &err) == BATON_OK);
    CHECK(x.ndim == 1 && x.dims[0] == 5 && x.len == 5 && x.data[4] == 12);
    img_idxu_free(&x);

    uint32_t zero[3] = {0, 28, 28};
    n = build_idx(buf, 8, 3, zero, 0);
    CHECK(img_idxu_parse("empty", buf, n, &x, &err) == BATON_OK);
    CHECK(x.len == 0 && x.dims[0] == 0);
    img_idxu_free(&x);

    /* magic */
    n = build_idx(buf, 8, 3, img_dims, 0);
    buf[0] = 1;
    CHECK(img_idxu_parse("m.idx", buf, n, &x, &err) == BATON_ERR_CORRUPT);
    CHECK(strstr(err.msg, "m.idx: bad IDX magic 0x01000803") != NULL);
    CHECK(x.data == NULL);
    /* element type */
    n = build_idx(buf, 0x0d, 3, img_dims, 0);
    CHECK(img_idxu_parse("t.idx", buf, n, &x, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "0x0d (f32)") != NULL);
    /* rank */
    uint32_t d2[2] = {3, 4};
    n = build_idx(buf, 8, 2, d2, 0);
    CHECK(img_idxu_parse("r.idx", buf, n, &x, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "2 dimensions") != NULL);
    n = build_idx(buf, 8, 0, NULL, 0);
    CHECK(img_idxu_parse("r0.idx", buf, 4, &x, &err) == BATON_ERR_FORMAT);
    /* truncated header, truncated data, trailing bytes */
    CHECK(img_idxu_parse("e", buf, 0, &x, &err) == BATON_ERR_TRUNCATED);
    CHECK(img_idxu_parse("e", NULL, 0, &x, &err) == BATON_ERR_TRUNCATED);
    CHECK(img_idxu_parse("h", buf, 3, &x, &err) == BATON_ERR_TRUNCATED);
    n = build_idx(buf, 8, 3, img_dims, 0);
    CHECK(img_idxu_parse("h", buf, 10, &x, &err) == BATON_ERR_TRUNCATED);
    n = build_idx(buf, 8, 3, img_dims, -1);
    CHECK(img_idxu_parse("short.idx", buf, n, &x, &err) == BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "2x3x4 = 24 data bytes, file has 23") != NULL);
    n = build_idx(buf, 8, 3, img_dims, 2);
    CHECK(img_idxu_parse("long.idx", buf, n, &x, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "24 data bytes, file has 26 (2 trailing bytes)") != NULL);
    /* dimensions whose product overflows, or is huge */
    buf[0] = buf[1] = 0;  /* header only (build_idx would write the data) */
    buf[2] = 8;
    buf[3] = 3;
    for (int i = 0; i < 3; i++) put_be32(buf + 4 + 4 * i, 0xffffffffu);
    n = 16;
    CHECK(img_idxu_parse("big", buf, n, &x, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "overflows") != NULL);
    put_be32(buf + 4, 60000);
    put_be32(buf + 8, 28);
    put_be32(buf + 12, 28);
    CHECK(img_idxu_parse("cut", buf, 16, &x, &err) == BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "60000x28x28 = 47040000 data bytes, file has 0") != NULL);
}

static void test_gzip(void)
{
    uint8_t plain[4096], gz[8192], two[8192];
    baton_idxu x;
    baton_err err = {0};
    uint32_t dims[3] = {10, 7, 9};
    size_t n = build_idx(plain, 8, 3, dims, 0);
    size_t gn = gzip(plain, n, gz, sizeof gz);
    CHECK(gn > 18 && gz[0] == 0x1f && gz[1] == 0x8b);
    CHECK(img_idxu_parse("a.gz", gz, gn, &x, &err) == BATON_OK);
    CHECK(x.len == 630 && x.dims[0] == 10 && memcmp(x.data, plain + 16, 630) == 0);
    img_idxu_free(&x);

    /* two members (cat a.gz b.gz), then trailing zeros */
    size_t g1 = gzip(plain, 100, two, sizeof two);
    size_t g2 = gzip(plain + 100, n - 100, two + g1, sizeof two - g1);
    CHECK(g1 > 0 && g2 > 0);
    memset(two + g1 + g2, 0, 8);
    CHECK(img_idxu_parse("two.gz", two, g1 + g2 + 8, &x, &err) == BATON_OK);
    CHECK(x.len == 630 && memcmp(x.data, plain + 16, 630) == 0);
    img_idxu_free(&x);
    two[g1 + g2 + 3] = 'x';
    CHECK(img_idxu_parse("junk.gz", two, g1 + g2 + 8, &x, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "trailing garbage") != NULL);

    /* cut short at every length: clean errors */
    int ok = 1;
    for (size_t k = 2; k < gn; k++) {
        int rc = img_idxu_parse("cut.gz", gz, k, &x, &err);
        ok &= rc == BATON_ERR_TRUNCATED || rc == BATON_ERR_CORRUPT;
    }
    CHECK(ok);
    CHECK(img_idxu_parse("cut.gz", gz, gn - 20, &x, &err) == BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "ends early") != NULL);
    /* damage: the CRC trailer, a data byte */
    gz[gn - 6] ^= 0xff;
    CHECK(img_idxu_parse("crc.gz", gz, gn, &x, &err) == BATON_ERR_CORRUPT);
    CHECK(strstr(err.msg, "crc.gz: gzip data is corrupt") != NULL);
    gz[gn - 6] ^= 0xff;
    gz[3] = 0xe0;  /* reserved header flags */
    CHECK(img_idxu_parse("hdr.gz", gz, gn, &x, &err) == BATON_ERR_CORRUPT);

    /* a gzip of a bad IDX still names the problem */
    plain[2] = 0x0c;
    gn = gzip(plain, n, gz, sizeof gz);
    CHECK(img_idxu_parse("i32.gz", gz, gn, &x, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "i32") != NULL);

    /* a small file that inflates a lot is bounded by what it really holds */
    static uint8_t zeros[1 << 20];
    uint32_t zd[3] = {1, 1024, 1024};
    build_idx(zeros, 8, 3, zd, -(long)(1 << 20));
    static uint8_t zgz[1 << 16];
    size_t zn = gzip(zeros, 16 + (1 << 20) - 16, zgz, sizeof zgz);  /* header + zeros */
    CHECK(zn > 0 && zn < 4096);
    CHECK(img_idxu_parse("zeros.gz", zgz, zn, &x, &err) == BATON_ERR_TRUNCATED);
}

static void test_files(void)
{
    char dir[] = "/tmp/baton-test-idxu-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/l.idx", dir);
    uint8_t buf[64];
    uint32_t dims[1] = {7};
    size_t n = build_idx(buf, 8, 1, dims, 0);
    baton_err err = {0};
    CHECK(baton_file_write_atomic(path, buf, n, &err) == BATON_OK);
    baton_idxu x;
    CHECK(img_idxu_load(path, &x, &err) == BATON_OK);
    CHECK(x.ndim == 1 && x.len == 7);
    img_idxu_free(&x);
    unlink(path);
    CHECK(img_idxu_load(path, &x, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "l.idx") != NULL);
    rmdir(dir);

    if (access(FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("skipping real Fashion-MNIST: %s not installed\n", FMNIST_DIR);
        return;
    }
    CHECK(img_idxu_load(FMNIST_DIR "/train-images-idx3-ubyte.gz", &x, &err) == BATON_OK);
    CHECK(x.ndim == 3 && x.dims[0] == 60000 && x.dims[1] == 28 && x.dims[2] == 28);
    CHECK(x.len == 60000u * 784u);
    img_idxu_free(&x);
    CHECK(img_idxu_load(FMNIST_DIR "/train-labels-idx1-ubyte.gz", &x, &err) == BATON_OK);
    CHECK(x.ndim == 1 && x.dims[0] == 60000 && x.len == 60000);
    int ok = 1;
    size_t hist[10] = {0};
    for (size_t i = 0; i < x.len; i++) {
        ok &= x.data[i] <= 9;
        if (x.data[i] <= 9) hist[x.data[i]]++;
    }
    CHECK(ok);
    for (int k = 0; k < 10; k++) CHECK_EQ_U(hist[k], 6000);  /* Fashion-MNIST is balanced */
    img_idxu_free(&x);
    CHECK(img_idxu_load(FMNIST_DIR "/t10k-images-idx3-ubyte.gz", &x, &err) == BATON_OK);
    CHECK(x.dims[0] == 10000 && x.len == 10000u * 784u);
    img_idxu_free(&x);
}

int main(void)
{
    test_plain();
    test_gzip();
    test_files();
    CHECK_DONE();
}
