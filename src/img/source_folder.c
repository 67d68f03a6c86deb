/* source_folder.c — the image-folder source: ROOT/<class>/<file>.{jpg,jpeg,png}, where ROOT is
 * DIR/<split> when that folder exists, else DIR.
 *
 * Contract: classes are the non-hidden sub-folders of ROOT sorted by name (strcmp), numbered from
 * 0 in that order (an empty class folder keeps its number so labels stay stable across splits).
 * Images are the non-hidden regular files with extension .jpg, .jpeg or .png (any case) in each
 * class folder, sorted by name; other files and deeper folders are ignored. No class folder, or
 * no image at all, is BATON_ERR_FORMAT. The listing happens once at open; get reads the file into
 * a buffer the source reuses (bounded to FOLDER_MAX_FILE bytes) and sniffs its encoding: a file
 * that is neither PNG nor JPEG is BATON_ERR_FORMAT naming the file. Shape is unknown (zeros). */
#include "img_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_CAP 4096
#define FOLDER_MAX_FILE ((size_t)256 << 20)

struct entry {
    uint32_t label;
    size_t off;              /* "class/file" in names */
};

struct folder {
    char root[PATH_CAP];
    baton_buf names;         /* NUL-terminated relative paths */
    struct entry *items;
    size_t n, cap;
    baton_buf data;          /* the current file's bytes */
    char path[PATH_CAP];     /* the current file's path */
};

struct name_list {
    char **v;
    size_t n, cap;
};

static void names_free(struct name_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int names_push(struct name_list *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return BATON_ERR_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = strdup(s);
    if (!l->v[l->n]) return BATON_ERR_NOMEM;
    l->n++;
    return BATON_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int image_ext(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    return strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0 ||
           strcasecmp(dot, ".png") == 0;
}

/* Sorted names in dir: sub-folders (want_dirs) or image files. */
static int list_dir(const char *dir, int want_dirs, struct name_list *out, baton_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return baton_err_set(err, errno == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO,
                             "%s: cannot list: %s", dir, strerror(errno));
    int rc = BATON_OK;
    struct dirent *e;
    char full[PATH_CAP];
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;  /* hidden, "." and ".." */
        if (!want_dirs && !image_ext(e->d_name)) continue;
        rc = baton_path_join(full, sizeof full, dir, e->d_name, err);
        if (rc) break;
        struct stat st;
        if (stat(full, &st) != 0) continue;  /* dangling link: not an image */
        if (want_dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) continue;
        if (names_push(out, e->d_name) != BATON_OK) {
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory listing", dir);
            break;
        }
        errno = 0;
    }
    if (rc == BATON_OK && errno != 0)
        rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    closedir(d);
    if (rc == BATON_OK && out->n > 1) qsort(out->v, out->n, sizeof *out->v, cmp_str);
    return rc;
}

static int add_item(struct folder *f, uint32_t label, const char *cls, const char *file)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 256;
        struct entry *v = realloc(f->items, cap * sizeof *v);
        if (!v) return BATON_ERR_NOMEM;
        f->items = v;
        f->cap = cap;
    }
    size_t off = f->names.len;
    if (baton_buf_append(&f->names, cls, strlen(cls)) || baton_buf_append(&f->names, "/", 1) ||
        baton_buf_append(&f->names, file, strlen(file) + 1))
        return BATON_ERR_NOMEM;
    f->items[f->n].label = label;
    f->items[f->n].off = off;
    f->n++;
    return BATON_OK;
}

/* Read path into f->data, reusing its memory. */
static int read_file(struct folder *f, baton_err *err)
{
    f->data.len = 0;
    int fd = baton_open_regular(f->path, err);
    if (fd == -2) return err->code;
    if (fd < 0)
        return baton_err_set(err, errno == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO,
                             "%s: cannot open: %s", f->path, strerror(errno));
    int rc = BATON_OK;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot stat: %s", f->path, strerror(errno));
        goto done;
    }
    if ((uint64_t)st.st_size > FOLDER_MAX_FILE) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: %lld bytes, more than the %zu accepted",
                           f->path, (long long)st.st_size, FOLDER_MAX_FILE);
        goto done;
    }
    /* one byte more than the size, so a file that grew is noticed and read whole */
    if (baton_buf_reserve(&f->data, (size_t)st.st_size + 1) != BATON_OK) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", f->path);
        goto done;
    }
    for (;;) {
        if (f->data.len == f->data.cap) {
            if (f->data.len >= FOLDER_MAX_FILE) {
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: more than %zu bytes", f->path,
                                   FOLDER_MAX_FILE);
                break;
            }
            if (baton_buf_reserve(&f->data, 65536) != BATON_OK) {
                rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", f->path);
                break;
            }
        }
        ssize_t k = baton_sys.read(fd, f->data.data + f->data.len, f->data.cap - f->data.len);
        if (k < 0) {
            if (errno == EINTR) continue;
            rc = baton_err_set(err, BATON_ERR_IO, "%s: read failed: %s", f->path, strerror(errno));
            break;
        }
        if (k == 0) break;
        f->data.len += (size_t)k;
    }
done:
    baton_sys.close(fd);
    return rc;
}

static int folder_get(baton_src *s, size_t i, baton_src_item *item, baton_err *err)
{
    struct folder *f = s->impl;
    const char *rel = (const char *)f->names.data + f->items[i].off;
    int rc = baton_path_join(f->path, sizeof f->path, f->root, rel, err);
    if (rc) return rc;
    rc = read_file(f, err);
    if (rc) return rc;
    baton_encoding enc = img_sniff(f->data.data, f->data.len);
    if (enc == BATON_ENC_UNKNOWN) {
        const uint8_t *p = f->data.data;
        size_t n = f->data.len;
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: neither PNG nor JPEG (%zu bytes, starting %02x %02x %02x %02x)",
                             f->path, n, n > 0 ? p[0] : 0, n > 1 ? p[1] : 0, n > 2 ? p[2] : 0,
                             n > 3 ? p[3] : 0);
    }
    item->label = f->items[i].label;
    item->id = i;
    item->bytes = f->data.data;
    item->nbytes = f->data.len;
    item->encoding = enc;
    item->path = f->path;
    return BATON_OK;
}

static void folder_close(baton_src *s)
{
    struct folder *f = s->impl;
    if (!f) return;
    baton_buf_free(&f->names);
    baton_buf_free(&f->data);
    free(f->items);
    free(f);
    s->impl = NULL;
}

int img_src_folder_open(baton_src *s, const char *dir, const char *split, baton_err *err)
{
    struct folder *f = calloc(1, sizeof *f);
    if (!f) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    s->impl = f;
    s->close = folder_close;
    if (!baton_is_dir(dir))
        return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such directory (imagefolder)", dir);
    int rc = baton_path_join(f->root, sizeof f->root, dir, split, err);
    if (rc) return rc;
    if (!baton_is_dir(f->root)) snprintf(f->root, sizeof f->root, "%s", dir);

    struct name_list classes = {0}, files = {0};
    size_t empty = 0, first_empty = 0;
    rc = list_dir(f->root, 1, &classes, err);
    if (rc == BATON_OK && classes.n == 0)
        rc = baton_err_set(err, BATON_ERR_FORMAT,
                           "%s: no class sub-folders (expected %s/<class>/<image>.jpg|.jpeg|.png)",
                           f->root, f->root);
    if (rc == BATON_OK && classes.n > UINT32_MAX)
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: too many class folders", f->root);
    for (size_t k = 0; rc == BATON_OK && k < classes.n; k++) {
        char cdir[PATH_CAP];
        rc = baton_path_join(cdir, sizeof cdir, f->root, classes.v[k], err);
        if (rc) break;
        rc = list_dir(cdir, 0, &files, err);
        for (size_t j = 0; rc == BATON_OK && j < files.n; j++)
            if (add_item(f, (uint32_t)k, classes.v[k], files.v[j]) != BATON_OK)
                rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory listing", cdir);
        if (rc == BATON_OK && files.n == 0 && empty++ == 0) first_empty = k;
        names_free(&files);
    }
    if (rc == BATON_OK && f->n == 0)
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no .jpg/.jpeg/.png images in %zu class %s",
                           f->root, classes.n, classes.n == 1 ? "folder" : "folders");
    if (rc == BATON_OK && empty > 0)
        baton_log(BATON_LOG_WARN, "%s: %zu class %s without images (first: %s)", f->root, empty,
                  empty == 1 ? "folder" : "folders", classes.v[first_empty]);
    if (rc == BATON_OK)
        rc = img_src_set_classes(s, (const char *const *)classes.v, (uint32_t)classes.n, err);
    names_free(&classes);
    if (rc) return rc;
    s->count = f->n;
    s->get = folder_get;
    return BATON_OK;
}
