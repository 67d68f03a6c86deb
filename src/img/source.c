/* source.c — dataset sources: parsing the spec string ("fashion-mnist[:DIR]", "cifar10:DIR",
 * "imagefolder:DIR"), the common accessors, and the dispatch to one file per kind
 * (source_mnist.c, source_cifar.c, source_folder.c).
 *
 * Contract: img_src_open either returns a complete source (count > 0, class names set) or an
 * error naming the spec, directory or file; nothing is left open on failure. split is "train"
 * (the default when NULL) or "test"; imagefolder also accepts any other plain folder name.
 * img_src_get checks i against the count; the item's pointers stay valid until the next call
 * on the same source. A source is not safe to share between threads. */
#include "img_internal.h"

#include <stdlib.h>
#include <string.h>

#define FASHION_MNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

int img_src_set_classes(baton_src *s, const char *const *names, uint32_t n, baton_err *err)
{
    s->class_names = calloc(n ? n : 1, sizeof *s->class_names);
    if (!s->class_names) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for class names");
    s->nclasses = n;
    for (uint32_t k = 0; k < n; k++) {
        s->class_names[k] = strdup(names[k]);
        if (!s->class_names[k])
            return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for class names");
    }
    return BATON_OK;
}

static int plain_name(const char *s)
{
    return s[0] && s[0] != '.' && !strchr(s, '/');
}

int img_src_open(const char *spec, const char *split, baton_src **out, baton_err *err)
{
    *out = NULL;
    if (!spec || !*spec) return baton_err_set(err, BATON_ERR_ARG, "empty source spec");
    if (!split) split = "train";
    const char *colon = strchr(spec, ':');
    size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *dir = colon ? colon + 1 : NULL;
    int (*open_fn)(baton_src *, const char *, const char *, baton_err *) = NULL;
    const char *kind = NULL;
    if (klen == 13 && strncmp(spec, "fashion-mnist", klen) == 0) {
        kind = "fashion-mnist";
        open_fn = img_src_mnist_open;
        if (!dir) dir = FASHION_MNIST_DEFAULT_DIR;
    } else if (klen == 7 && strncmp(spec, "cifar10", klen) == 0) {
        kind = "cifar10";
        open_fn = img_src_cifar_open;
    } else if (klen == 11 && strncmp(spec, "imagefolder", klen) == 0) {
        kind = "imagefolder";
        open_fn = img_src_folder_open;
    } else {
        return baton_err_set(err, BATON_ERR_USAGE,
                             "unknown source '%s' (expected fashion-mnist[:DIR], cifar10:DIR or "
                             "imagefolder:DIR)", spec);
    }
    if (!dir || !*dir)
        return baton_err_set(err, BATON_ERR_ARG, "source '%s': a directory is required (%s:DIR)",
                             spec, kind);
    int folder = open_fn == img_src_folder_open;
    if (folder ? !plain_name(split) : strcmp(split, "train") != 0 && strcmp(split, "test") != 0)
        return baton_err_set(err, BATON_ERR_ARG, "source '%s': split '%s' (expected train or test)",
                             spec, split);
    baton_src *s = calloc(1, sizeof *s);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    s->kind = kind;
    int rc = open_fn(s, dir, split, err);
    if (rc == BATON_OK && (s->count == 0 || s->nclasses == 0 || !s->get))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "source '%s': no images", spec);
    if (rc != BATON_OK) {
        img_src_close(s);
        return rc;
    }
    *out = s;
    return BATON_OK;
}

void img_src_close(baton_src *s)
{
    if (!s) return;
    if (s->close) s->close(s);
    if (s->class_names)
        for (uint32_t k = 0; k < s->nclasses; k++) free(s->class_names[k]);
    free(s->class_names);
    free(s);
}

const char *img_src_name(const baton_src *s)
{
    return s->kind;
}

size_t img_src_count(const baton_src *s)
{
    return s->count;
}

uint32_t img_src_classes(const baton_src *s)
{
    return s->nclasses;
}

const char *img_src_class_name(const baton_src *s, uint32_t k)
{
    return k < s->nclasses ? s->class_names[k] : NULL;
}

void img_src_shape(const baton_src *s, uint32_t shape[3])
{
    memcpy(shape, s->shape, sizeof s->shape);
}

int img_src_get(baton_src *s, size_t i, baton_src_item *item, baton_err *err)
{
    memset(item, 0, sizeof *item);
    if (i >= s->count)
        return baton_err_set(err, BATON_ERR_ARG, "%s: item %zu out of range (%zu items)", s->kind,
                             i, s->count);
    return s->get(s, i, item, err);
}
