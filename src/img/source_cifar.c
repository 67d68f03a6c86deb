/* source_cifar.c — the CIFAR-10 source, binary version: DIR/data_batch_1.bin .. data_batch_5.bin
 * (train) or DIR/test_batch.bin (test), class names from DIR/batches.meta.txt.
 *
 * Contract: each record is 1 label byte then 3072 pixel bytes: the 32×32 red plane, then green,
 * then blue, each row-major. A file whose size is not a whole number of 3073-byte records is
 * refused at open. Records are read lazily (pread of one record per get, through baton_sys), so
 * memory stays small; a label above 9 is an error naming the file and the record. Items are
 * decoded pixels converted to HWC RGB, shape {32, 32, 3}. batches.meta.txt holds one class name
 * per line (blank lines and trailing spaces ignored) and must give exactly 10; without it the
 * standard CIFAR-10 names are used. */
#include "img_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_CAP 4096
#define CIFAR_SIDE 32
#define CIFAR_PLANE (CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + 3 * CIFAR_PLANE)  /* 3073 */
#define CIFAR_MAX_FILES 5

static const char *const cifar_names[10] = {
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
};

struct cifar {
    int nfiles;
    int fds[CIFAR_MAX_FILES];
    uint64_t first[CIFAR_MAX_FILES + 1];   /* first record number of each file; [nfiles] = count */
    char paths[CIFAR_MAX_FILES][PATH_CAP];
    uint8_t rec[CIFAR_RECORD];
    baton_image im;
};

static void cifar_close(baton_src *s)
{
    struct cifar *c = s->impl;
    if (!c) return;
    for (int f = 0; f < c->nfiles; f++)
        if (c->fds[f] >= 0) baton_sys.close(c->fds[f]);
    baton_image_free(&c->im);
    free(c);
    s->impl = NULL;
}

static int read_record(struct cifar *c, int f, uint64_t r, baton_err *err)
{
    off_t off = (off_t)(r * CIFAR_RECORD);
    size_t got = 0;
    while (got < CIFAR_RECORD) {
        ssize_t k = baton_sys.pread(c->fds[f], c->rec + got, CIFAR_RECORD - got, off + (off_t)got);
        if (k < 0) {
            if (errno == EINTR) continue;
            return baton_err_set(err, BATON_ERR_IO, "%s: record %llu: read failed: %s",
                                 c->paths[f], (unsigned long long)r, strerror(errno));
        }
        if (k == 0)
            return baton_err_set(err, BATON_ERR_TRUNCATED,
                                 "%s: record %llu: file ends early (it shrank after opening)",
                                 c->paths[f], (unsigned long long)r);
        got += (size_t)k;
    }
    return BATON_OK;
}

static int cifar_get(baton_src *s, size_t i, baton_src_item *item, baton_err *err)
{
    struct cifar *c = s->impl;
    int f = 0;
    while (f + 1 < c->nfiles && (uint64_t)i >= c->first[f + 1]) f++;
    uint64_t r = (uint64_t)i - c->first[f];
    int rc = read_record(c, f, r, err);
    if (rc) return rc;
    if (c->rec[0] > 9)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: record %llu: label %u (expected 0..9)",
                             c->paths[f], (unsigned long long)r, c->rec[0]);
    rc = baton_image_resize(&c->im, CIFAR_SIDE, CIFAR_SIDE, 3, err);
    if (rc) return rc;
    const uint8_t *red = c->rec + 1, *green = red + CIFAR_PLANE, *blue = green + CIFAR_PLANE;
    uint8_t *px = c->im.px;
    for (size_t p = 0; p < CIFAR_PLANE; p++) {
        px[3 * p] = red[p];
        px[3 * p + 1] = green[p];
        px[3 * p + 2] = blue[p];
    }
    item->label = c->rec[0];
    item->id = i;
    item->image = &c->im;
    item->bytes = c->im.px;
    item->nbytes = 3 * CIFAR_PLANE;
    item->encoding = BATON_ENC_RAW;
    item->path = c->paths[f];
    return BATON_OK;
}

/* Class names from batches.meta.txt if present. */
static int load_names(baton_src *s, const char *dir, baton_err *err)
{
    char path[PATH_CAP];
    int rc = baton_path_join(path, sizeof path, dir, "batches.meta.txt", err);
    if (rc) return rc;
    uint8_t *text;
    size_t n;
    rc = baton_file_read_all(path, 1 << 16, &text, &n, err);
    if (rc == BATON_ERR_NOTFOUND) return img_src_set_classes(s, cifar_names, 10, err);
    if (rc) return rc;
    char *names[10];
    uint32_t k = 0, lines = 0;
    char *line = (char *)text;
    /* text is NUL-terminated by baton_file_read_all; a NUL inside ends the text */
    while (*line) {
        char *end = strchr(line, '\n');
        char *next = end ? end + 1 : line + strlen(line);
        if (end) *end = 0;
        size_t len = strlen(line);
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
            line[--len] = 0;
        while (*line == ' ' || *line == '\t') line++;
        if (*line) {
            if (k < 10) names[k] = line;
            k++;
        }
        lines++;
        line = next;
    }
    if (k != 10) {
        free(text);
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: %u class names in %u lines (expected 10, one per line)", path, k,
                             lines);
    }
    rc = img_src_set_classes(s, (const char *const *)names, 10, err);
    free(text);
    return rc;
}

int img_src_cifar_open(baton_src *s, const char *dir, const char *split, baton_err *err)
{
    struct cifar *c = calloc(1, sizeof *c);
    if (!c) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (int f = 0; f < CIFAR_MAX_FILES; f++) c->fds[f] = -1;
    s->impl = c;
    s->close = cifar_close;
    if (!baton_is_dir(dir))
        return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such directory (cifar10)", dir);
    int test = strcmp(split, "test") == 0;
    int nfiles = test ? 1 : CIFAR_MAX_FILES;
    uint64_t count = 0;
    for (int f = 0; f < nfiles; f++) {
        char name[32];
        if (test) snprintf(name, sizeof name, "test_batch.bin");
        else snprintf(name, sizeof name, "data_batch_%d.bin", f + 1);
        int rc = baton_path_join(c->paths[f], PATH_CAP, dir, name, err);
        if (rc) return rc;
        int fd = baton_open_regular(c->paths[f], err);
        if (fd == -2) return err->code;
        if (fd < 0)
            return baton_err_set(err, errno == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO,
                                 "%s: cannot open: %s", c->paths[f], strerror(errno));
        c->fds[f] = fd;
        c->nfiles = f + 1;
        struct stat st;
        if (fstat(fd, &st) != 0)
            return baton_err_set(err, BATON_ERR_IO, "%s: cannot stat: %s", c->paths[f],
                                 strerror(errno));
        if (!S_ISREG(st.st_mode))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a regular file", c->paths[f]);
        uint64_t size = (uint64_t)st.st_size;
        if (size == 0 || size % CIFAR_RECORD != 0)
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s: %llu bytes is not a whole number of %d-byte records "
                                 "(1 label byte + 3072 pixel bytes)%s",
                                 c->paths[f], (unsigned long long)size, CIFAR_RECORD,
                                 size == 0 ? "" : "; is this the binary version of CIFAR-10?");
        c->first[f] = count;
        count += size / CIFAR_RECORD;
    }
    c->first[c->nfiles] = count;
    s->count = (size_t)count;
    s->shape[0] = CIFAR_SIDE;
    s->shape[1] = CIFAR_SIDE;
    s->shape[2] = 3;
    s->get = cifar_get;
    return load_names(s, dir, err);
}
