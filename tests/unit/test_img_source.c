/* test_img_source.c — dataset sources: spec parsing; a synthetic CIFAR-10 folder (2 records per
 * batch file: planar -> HWC conversion, labels, default and custom class names, bad sizes, bad
 * labels, missing files); an image folder of PNG and JPEG files written by our encoder (class and
 * file order, hidden files, split folders, bytes that decode back); a synthetic Fashion-MNIST
 * folder (gzip IDX written here, count mismatch, bad label); and the installed Fashion-MNIST when
 * present. */
#include "../../src/img/img_internal.h"
#include "baton/img.h"
#include "check.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static char root[64];

static void write_file(const char *rel, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char dir[512];
    baton_path_dirname(path, dir, sizeof dir);
    baton_err err;
    baton_mkdir_p(dir, &err);
    FILE *f = fopen(path, "wb");
    if (!f) {
        CHECK_MSG(0, "cannot write %s", path);
        return;
    }
    fwrite(p, 1, n, f);
    fclose(f);
}

static void write_text(const char *rel, const char *text)
{
    write_file(rel, text, strlen(text));
}

static void remove_tree(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    CHECK(system(cmd) == 0);
}

static void spec_path(char *out, size_t cap, const char *kind, const char *rel)
{
    snprintf(out, cap, "%s:%s/%s", kind, root, rel);
}

static void test_specs(void)
{
    baton_src *s = (baton_src *)1;
    baton_err err = {0};
    CHECK(img_src_open("mnist:/x", "train", &s, &err) == BATON_ERR_USAGE && s == NULL);
    CHECK(strstr(err.msg, "unknown source") != NULL);
    CHECK(img_src_open("cifar10", "train", &s, &err) == BATON_ERR_ARG);
    CHECK(img_src_open("imagefolder:", "train", &s, &err) == BATON_ERR_ARG);
    CHECK(img_src_open("", "train", &s, &err) == BATON_ERR_ARG);
    CHECK(img_src_open("cifar10:/x", "val", &s, &err) == BATON_ERR_ARG);
    CHECK(img_src_open("imagefolder:/x", "../up", &s, &err) == BATON_ERR_ARG);
    CHECK(img_src_open("cifar10:/nonexistent-dir", "train", &s, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "/nonexistent-dir") != NULL);
    CHECK(img_src_open("fashion-mnist:/nonexistent-dir", NULL, &s, &err) == BATON_ERR_NOTFOUND);
    CHECK(img_src_open("imagefolder:/nonexistent-dir", NULL, &s, &err) == BATON_ERR_NOTFOUND);
}

static void cifar_record(uint8_t *rec, uint8_t label, int seed)
{
    rec[0] = label;
    for (int p = 0; p < 1024; p++) {
        rec[1 + p] = (uint8_t)(p + seed);            /* red */
        rec[1 + 1024 + p] = (uint8_t)(p * 3 + seed); /* green */
        rec[1 + 2048 + p] = (uint8_t)(255 - p - seed);
    }
}

static void test_cifar(void)
{
    static uint8_t batch[2 * 3073];
    char name[64], spec[256];
    for (int f = 1; f <= 5; f++) {
        cifar_record(batch, (uint8_t)(2 * f - 2), 10 * f);
        cifar_record(batch + 3073, (uint8_t)(2 * f - 1), 10 * f + 1);
        snprintf(name, sizeof name, "cifar/data_batch_%d.bin", f);
        write_file(name, batch, sizeof batch);
    }
    cifar_record(batch, 9, 7);
    cifar_record(batch + 3073, 3, 8);
    write_file("cifar/test_batch.bin", batch, sizeof batch);

    baton_src *s = NULL;
    baton_err err = {0};
    baton_src_item it;
    spec_path(spec, sizeof spec, "cifar10", "cifar");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_OK);
    if (!s) return;
    CHECK(strcmp(img_src_name(s), "cifar10") == 0);
    CHECK_EQ_U(img_src_count(s), 10);
    CHECK_EQ_U(img_src_classes(s), 10);
    CHECK(strcmp(img_src_class_name(s, 0), "airplane") == 0);
    CHECK(strcmp(img_src_class_name(s, 9), "truck") == 0);
    CHECK(img_src_class_name(s, 10) == NULL);
    uint32_t shape[3];
    img_src_shape(s, shape);
    CHECK(shape[0] == 32 && shape[1] == 32 && shape[2] == 3);
    int ok = 1;
    for (size_t i = 0; i < 10; i++) {
        ok &= img_src_get(s, i, &it, &err) == BATON_OK;
        ok &= it.label == i && it.id == i && it.image && it.image->h == 32 && it.image->c == 3;
        int seed = 10 * (int)(i / 2 + 1) + (int)(i % 2);
        for (int p = 0; ok && p < 1024; p++)
            ok = it.image->px[3 * p] == (uint8_t)(p + seed) &&
                 it.image->px[3 * p + 1] == (uint8_t)(p * 3 + seed) &&
                 it.image->px[3 * p + 2] == (uint8_t)(255 - p - seed);
    }
    CHECK(ok);
    CHECK(strstr(it.path, "data_batch_5.bin") != NULL);
    CHECK(it.encoding == BATON_ENC_RAW && it.nbytes == 3072 && it.bytes == it.image->px);
    CHECK(img_src_get(s, 10, &it, &err) == BATON_ERR_ARG);
    img_src_close(s);

    /* test split, custom names */
    write_text("cifar/batches.meta.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj  \r\n\n");
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_OK);
    if (s) {
        CHECK_EQ_U(img_src_count(s), 2);
        CHECK(strcmp(img_src_class_name(s, 9), "j") == 0);
        CHECK(img_src_get(s, 0, &it, &err) == BATON_OK && it.label == 9);
        CHECK(img_src_get(s, 1, &it, &err) == BATON_OK && it.label == 3);
        CHECK(it.image->px[0] == 8);
        img_src_close(s);
    }
    write_text("cifar/batches.meta.txt", "a\nb\n");
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "batches.meta.txt: 2 class names") != NULL);
    write_text("cifar/batches.meta.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");

    /* a label above 9 is an error naming the file and record */
    cifar_record(batch + 3073, 10, 0);
    write_file("cifar/test_batch.bin", batch, sizeof batch);
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_OK);
    if (s) {
        CHECK(img_src_get(s, 0, &it, &err) == BATON_OK);
        CHECK(img_src_get(s, 1, &it, &err) == BATON_ERR_FORMAT);
        CHECK(strstr(err.msg, "test_batch.bin: record 1: label 10") != NULL);
        img_src_close(s);
    }
    /* bad size, empty file, missing file */
    write_file("cifar/test_batch.bin", batch, 3073 + 100);
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "test_batch.bin: 3173 bytes is not a whole number of 3073-byte") != NULL);
    write_file("cifar/test_batch.bin", batch, 0);
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_ERR_FORMAT);
    char path[512];
    snprintf(path, sizeof path, "%s/cifar/data_batch_3.bin", root);
    unlink(path);
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "data_batch_3.bin") != NULL);
}

static void make_image(baton_image *im, uint32_t h, uint32_t w, uint32_t c, int seed)
{
    baton_err err;
    baton_image_resize(im, h, w, c, &err);
    for (size_t i = 0; i < (size_t)h * w * c; i++) im->px[i] = (uint8_t)(i * 5 + (size_t)seed * 40);
}

static void write_image(const char *rel, baton_encoding enc, int seed, baton_image *im)
{
    baton_buf b = {0};
    baton_err err;
    make_image(im, 6 + (uint32_t)seed, 5, 3, seed);
    CHECK(baton_img_encode(im, enc, 95, &b, &err) == BATON_OK);
    write_file(rel, b.data, b.len);
    baton_buf_free(&b);
}

static void test_folder(void)
{
    baton_image ims[4] = {{0}}, dec = {0};
    /* written in an order different from the expected one */
    write_image("folder/dog/y.jpeg", BATON_ENC_JPEG, 3, &ims[3]);
    write_image("folder/cat/b.png", BATON_ENC_PNG, 1, &ims[1]);
    write_image("folder/dog/x.PNG", BATON_ENC_PNG, 2, &ims[2]);
    write_image("folder/cat/a.jpg", BATON_ENC_JPEG, 0, &ims[0]);
    write_file("folder/cat/.hidden.png", "x", 1);
    write_file("folder/cat/notes.txt", "x", 1);
    write_file("folder/.cache/z.png", "x", 1);
    write_file("folder/stray.png", "x", 1);

    char spec[256];
    spec_path(spec, sizeof spec, "imagefolder", "folder");
    baton_src *s = NULL;
    baton_err err = {0};
    baton_src_item it;
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_OK);
    if (!s) return;
    CHECK(strcmp(img_src_name(s), "imagefolder") == 0);
    CHECK_EQ_U(img_src_count(s), 4);
    CHECK_EQ_U(img_src_classes(s), 2);
    CHECK(strcmp(img_src_class_name(s, 0), "cat") == 0);
    CHECK(strcmp(img_src_class_name(s, 1), "dog") == 0);
    uint32_t shape[3] = {1, 1, 1};
    img_src_shape(s, shape);
    CHECK(shape[0] == 0 && shape[1] == 0 && shape[2] == 0);
    static const char *const names[4] = {"cat/a.jpg", "cat/b.png", "dog/x.PNG", "dog/y.jpeg"};
    static const baton_encoding encs[4] = {BATON_ENC_JPEG, BATON_ENC_PNG, BATON_ENC_PNG,
                                           BATON_ENC_JPEG};
    for (size_t i = 0; i < 4; i++) {
        CHECK(img_src_get(s, i, &it, &err) == BATON_OK);
        CHECK_EQ_U(it.label, i / 2);
        CHECK(it.image == NULL && it.bytes && it.nbytes > 0);
        CHECK(it.encoding == encs[i]);
        CHECK_MSG(strstr(it.path, names[i]) != NULL, "%s", it.path);
        CHECK(baton_img_decode(it.bytes, it.nbytes, it.encoding, NULL, &dec, &err) == BATON_OK);
        CHECK(dec.h == ims[i].h && dec.w == ims[i].w && dec.c == 3);
        if (it.encoding == BATON_ENC_PNG)
            CHECK(memcmp(dec.px, ims[i].px, (size_t)dec.h * dec.w * 3) == 0);
    }
    img_src_close(s);

    /* a .png that is not an image: named on get */
    write_file("folder/dog/z.png", "not an image", 12);
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_OK);
    if (s) {
        CHECK_EQ_U(img_src_count(s), 5);
        CHECK(img_src_get(s, 4, &it, &err) == BATON_ERR_FORMAT);
        CHECK(strstr(err.msg, "dog/z.png: neither PNG nor JPEG") != NULL);
        CHECK(img_src_get(s, 0, &it, &err) == BATON_OK);  /* still usable */
        img_src_close(s);
    }

    /* split folders: DIR/train is used when it exists */
    baton_image tmp = {0};
    write_image("split/train/one/a.png", BATON_ENC_PNG, 0, &tmp);
    write_image("split/test/one/b.png", BATON_ENC_PNG, 1, &tmp);
    write_image("split/test/two/c.png", BATON_ENC_PNG, 2, &tmp);
    spec_path(spec, sizeof spec, "imagefolder", "split");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_OK);
    if (s) {
        CHECK(img_src_count(s) == 1 && img_src_classes(s) == 1);
        img_src_close(s);
    }
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_OK);
    if (s) {
        CHECK(img_src_count(s) == 2 && img_src_classes(s) == 2);
        img_src_close(s);
    }
    /* an empty class folder keeps its label number */
    write_image("gap/a/x.png", BATON_ENC_PNG, 0, &tmp);
    write_image("gap/c/y.png", BATON_ENC_PNG, 0, &tmp);
    char gap[512];
    snprintf(gap, sizeof gap, "%s/gap/b", root);
    CHECK(mkdir(gap, 0755) == 0);
    spec_path(spec, sizeof spec, "imagefolder", "gap");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_OK);
    if (s) {
        CHECK(img_src_count(s) == 2 && img_src_classes(s) == 3);
        CHECK(img_src_get(s, 1, &it, &err) == BATON_OK && it.label == 2);
        img_src_close(s);
    }
    /* no classes, no images */
    write_file("noclass/x.png", "x", 1);
    spec_path(spec, sizeof spec, "imagefolder", "noclass");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "no class sub-folders") != NULL);
    write_file("noimg/a/readme.txt", "x", 1);
    spec_path(spec, sizeof spec, "imagefolder", "noimg");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "no .jpg/.jpeg/.png images") != NULL);

    for (int i = 0; i < 4; i++) baton_image_free(&ims[i]);
    baton_image_free(&dec);
    baton_image_free(&tmp);
}

static void write_gz(const char *rel, const uint8_t *p, size_t n)
{
    uLongf cap = compressBound(n) + 64;
    uint8_t *out = malloc(cap);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    write_file(rel, out, cap - zs.avail_out);
    deflateEnd(&zs);
    free(out);
}

static void write_mnist(const char *dir, uint32_t nimg, uint32_t nlab, uint8_t bad_label)
{
    static uint8_t buf[16 + 5 * 784];
    char rel[128];
    uint8_t hdr[16] = {0, 0, 8, 3, 0, 0, 0, (uint8_t)nimg, 0, 0, 0, 28, 0, 0, 0, 28};
    memcpy(buf, hdr, 16);
    for (uint32_t i = 0; i < nimg * 784; i++) buf[16 + i] = (uint8_t)(i / 784 * 50 + i % 7);
    snprintf(rel, sizeof rel, "%s/train-images-idx3-ubyte.gz", dir);
    write_gz(rel, buf, 16 + nimg * 784);
    uint8_t lab[8 + 5] = {0, 0, 8, 1, 0, 0, 0, (uint8_t)nlab, 9, 0, 4, 2, 1};
    if (bad_label) lab[8 + 1] = bad_label;
    snprintf(rel, sizeof rel, "%s/train-labels-idx1-ubyte", dir);  /* plain: no .gz */
    write_file(rel, lab, 8 + nlab);
}

static void test_mnist(void)
{
    baton_src *s = NULL;
    baton_err err = {0};
    baton_src_item it;
    char spec[256];
    write_mnist("fm", 3, 3, 0);
    spec_path(spec, sizeof spec, "fashion-mnist", "fm");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_OK);
    if (s) {
        CHECK_EQ_U(img_src_count(s), 3);
        CHECK_EQ_U(img_src_classes(s), 10);
        CHECK(strcmp(img_src_class_name(s, 0), "T-shirt/top") == 0);
        CHECK(strcmp(img_src_class_name(s, 9), "Ankle boot") == 0);
        uint32_t shape[3];
        img_src_shape(s, shape);
        CHECK(shape[0] == 28 && shape[1] == 28 && shape[2] == 1);
        CHECK(img_src_get(s, 2, &it, &err) == BATON_OK);
        CHECK(it.label == 4 && it.id == 2 && it.image && it.image->c == 1 && it.image->h == 28);
        CHECK(it.image->px[0] == 100 && it.image->px[8] == 101);
        img_src_close(s);
    }
    CHECK(img_src_open(spec, "test", &s, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "t10k-images-idx3-ubyte.gz") != NULL);
    write_mnist("fm2", 3, 2, 0);
    spec_path(spec, sizeof spec, "fashion-mnist", "fm2");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "has 3 images but") != NULL && strstr(err.msg, "has 2 labels") != NULL);
    write_mnist("fm3", 3, 3, 10);
    spec_path(spec, sizeof spec, "fashion-mnist", "fm3");
    CHECK(img_src_open(spec, "train", &s, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "label 10 at index 1") != NULL);

    if (access(FMNIST_DIR "/t10k-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("skipping installed Fashion-MNIST: not present\n");
        return;
    }
    CHECK(img_src_open("fashion-mnist", "test", &s, &err) == BATON_OK);
    if (s) {
        CHECK_EQ_U(img_src_count(s), 10000);
        CHECK(img_src_get(s, 9999, &it, &err) == BATON_OK);
        CHECK(it.label <= 9 && it.image->h == 28 && it.image->w == 28);
        img_src_close(s);
    }
    CHECK(img_src_open("fashion-mnist:" FMNIST_DIR, "train", &s, &err) == BATON_OK);
    if (s) {
        CHECK_EQ_U(img_src_count(s), 60000);
        img_src_close(s);
    }
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/baton-test-src-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    test_specs();
    test_cifar();
    test_folder();
    test_mnist();
    remove_tree(root);
    CHECK_DONE();
}
