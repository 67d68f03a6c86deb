/* source_mnist.c — the Fashion-MNIST source: DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
 * (the .gz suffix may be absent), as Zalando publishes them and Debian's dataset-fashion-mnist
 * installs them.
 *
 * Contract: split "train" reads train-*, "test" reads t10k-*. The images file must be a rank-3
 * u8 IDX (N×rows×cols), the labels file rank-1 u8 (N); the two N must agree and every label must
 * be 0..9 (checked at open, the error names the file and index). Items are decoded pixels,
 * shape {rows, cols, 1}, copied into an image owned by the source. Classes are Fashion-MNIST's
 * ten names. */
#include "img_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_CAP 4096

static const char *const fashion_names[10] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
};

struct mnist {
    baton_idxu images, labels;
    baton_image im;
    char images_path[PATH_CAP];
};

/* DIR/base.gz if it exists, else DIR/base if that exists, else DIR/base.gz (for the message). */
static int pick_file(const char *dir, const char *base, char *out, baton_err *err)
{
    char name[256];
    snprintf(name, sizeof name, "%s.gz", base);
    int rc = baton_path_join(out, PATH_CAP, dir, name, err);
    if (rc) return rc;
    struct stat st;
    if (stat(out, &st) == 0) return BATON_OK;
    char plain[PATH_CAP];
    rc = baton_path_join(plain, sizeof plain, dir, base, err);
    if (rc) return rc;
    if (stat(plain, &st) == 0) memcpy(out, plain, strlen(plain) + 1);
    return BATON_OK;
}

static int mnist_get(baton_src *s, size_t i, baton_src_item *item, baton_err *err)
{
    struct mnist *m = s->impl;
    uint32_t rows = m->images.dims[1], cols = m->images.dims[2];
    int rc = baton_image_resize(&m->im, rows, cols, 1, err);
    if (rc) return rc;
    size_t sz = (size_t)rows * cols;
    memcpy(m->im.px, m->images.data + i * sz, sz);
    item->label = m->labels.data[i];
    item->id = i;
    item->image = &m->im;
    item->bytes = m->im.px;
    item->nbytes = sz;
    item->encoding = BATON_ENC_RAW;
    item->path = m->images_path;
    return BATON_OK;
}

static void mnist_close(baton_src *s)
{
    struct mnist *m = s->impl;
    if (!m) return;
    img_idxu_free(&m->images);
    img_idxu_free(&m->labels);
    baton_image_free(&m->im);
    free(m);
    s->impl = NULL;
}

int img_src_mnist_open(baton_src *s, const char *dir, const char *split, baton_err *err)
{
    struct mnist *m = calloc(1, sizeof *m);
    if (!m) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    s->impl = m;
    s->close = mnist_close;
    if (!baton_is_dir(dir))
        return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such directory (fashion-mnist)", dir);
    const char *prefix = strcmp(split, "test") == 0 ? "t10k" : "train";
    char base[64], labels_path[PATH_CAP];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    int rc = pick_file(dir, base, m->images_path, err);
    if (rc) return rc;
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    rc = pick_file(dir, base, labels_path, err);
    if (rc) return rc;

    rc = img_idxu_load(m->images_path, &m->images, err);
    if (rc) return rc;
    if (m->images.ndim != 3)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: bad IDX magic 0x00000801 (expected 0x00000803 for u8 images)",
                             m->images_path);
    rc = img_idxu_load(labels_path, &m->labels, err);
    if (rc) return rc;
    if (m->labels.ndim != 1)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: bad IDX magic 0x%08x (expected 0x00000801 for u8 labels)",
                             labels_path, 0x800u | m->labels.ndim);
    uint32_t n = m->images.dims[0], rows = m->images.dims[1], cols = m->images.dims[2];
    if (n != m->labels.dims[0])
        return baton_err_set(err, BATON_ERR_FORMAT, "%s has %u images but %s has %u labels",
                             m->images_path, n, labels_path, m->labels.dims[0]);
    if (n == 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: no images", m->images_path);
    rc = img_check_pixels(rows, cols, m->images_path, err);
    if (rc) return rc;
    for (uint32_t i = 0; i < n; i++)
        if (m->labels.data[i] > 9)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: label %u at index %u (expected 0..9)",
                                 labels_path, m->labels.data[i], i);
    s->count = n;
    s->shape[0] = rows;
    s->shape[1] = cols;
    s->shape[2] = 1;
    s->get = mnist_get;
    return img_src_set_classes(s, fashion_names, 10, err);
}
