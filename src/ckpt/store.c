/* store.c — checkpoint folders on disk: the commit protocol, retention, listing, verification,
 * fallback to the newest checkpoint that verifies, and loading one back.
 *
 * Layout of a checkpoint directory DIR and its invariants:
 *   DIR/ckpt-<step>/            published checkpoints; <step> decimal, zero-padded to 9 digits
 *       model.safetensors       } each listed in MANIFEST with its size and CRC32C
 *       optim.safetensors       }
 *       state.json              } a JSON object whose "step" equals <step>
 *       MANIFEST                written and fsynced after every other file (see manifest.c)
 *   DIR/.ckpt-<step>.tmp.<pid>/ a checkpoint being written; never read; removed on error and,
 *                               if a crash left one behind, by the next save
 *   DIR/.ckpt-<step>.old.<pid>/ a published ckpt-<step> moved aside while the same step is
 *                               re-committed; removed after the new one is published, renamed
 *                               back by the next save if a crash left ckpt-<step> missing
 *   DIR/.ckpt-<step>.del.<pid>/ a checkpoint retention is removing: renamed out of sight first, so
 *                               a crash in the middle of the removal never leaves a torn ckpt-<step>
 *                               behind (a run resumed at its last step saves nothing, so nothing
 *                               would clean it); removed by the next save if a crash left one
 *   DIR/.ckpt-<step>.corrupt[.N]/  a published folder that failed the full check, moved aside by
 *                               retention or by a re-commit of its step (retain.c); never read,
 *                               never removed by baton; listed by baton_ckpt_list with
 *                               BATON_CKPT_LIST_ASIDE
 *   DIR/.lock                   held (flock) by the process that has the folder open as a store
 *
 * Commit protocol (ckpt_commit_files): clean stray temporaries; mkdir the temp folder; for each
 * file create and write it (starting its write-back at once); write MANIFEST the same way; fsync
 * and close every file; fsync the temp folder; move an existing ckpt-<step> aside (to .old when it
 * verifies, to .corrupt when it does not); rename the temp folder to ckpt-<step>; fsync DIR. Any
 * failure before the rename removes the temp folder and leaves every existing checkpoint
 * untouched. Only after a successful commit does retention run (retain.c: the newest `keep`
 * folders that pass the full check stay, older ones go, damaged ones are moved aside — never
 * deleted).
 *
 * A reader trusts a folder only when baton_ckpt_verify passes; baton_ckpt_latest walks from the
 * newest step down, warning about every folder it skips. */
#include "baton/rec.h"
#include "ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const required[] = {"model.safetensors", "optim.safetensors", "state.json"};

/* dir/name into out; 0 when it does not fit. */
static int pj(char *out, size_t cap, const char *dir, const char *name)
{
    return baton_path_join(out, cap, dir, name, NULL) == BATON_OK;
}

static int io_err(baton_err *err, const char *what, const char *path) { return baton_err_errno(err, errno, what, path); }

int baton_ckpt_parse_name(const char *name, uint64_t *step)
{
    if (strncmp(name, "ckpt-", 5) != 0) return 0;
    const char *d = name + 5;
    if (!*d || strlen(d) > 19) return 0;
    uint64_t v = 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9') return 0;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*d - '0'), &v)) return 0;
    }
    *step = v;
    return 1;
}

static const char *base_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    const char *s = path + n;
    while (s > path && s[-1] != '/') s--;
    return s;
}

int ckpt_clean_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    char (*names)[256] = NULL;
    size_t n = 0, cap = 0;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, ".ckpt-", 6) != 0 || strlen(e->d_name) >= sizeof names[0]) continue;
        if (!strstr(e->d_name, ".tmp.") && !strstr(e->d_name, ".old.") && !strstr(e->d_name, ".del."))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char(*q)[256] = realloc(names, nc * sizeof *names);
            if (!q) break;   /* out of memory: the rest waits for the next save */
            names = q;
            cap = nc;
        }
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        char p[4200], fin[4200];
        if (!pj(p, sizeof p, dir, names[i])) continue;
        const char *old = strstr(names[i], ".old.");
        if (old) {
            /* a crash between moving the old folder aside and publishing the new one */
            snprintf(fin, sizeof fin, "%s/%.*s", dir, (int)(old - names[i] - 1), names[i] + 1);
            if (!baton_is_dir(fin) && baton_sys.rename(p, fin) == 0) {
                baton_log(BATON_LOG_WARN, "%s: restored from %s", fin, names[i]);
                continue;
            }
        }
        if (baton_remove_tree(p) == 0) {
            removed++;
            baton_log(BATON_LOG_INFO, "%s: removed a stray temporary checkpoint folder", p);
        }
    }
    free(names);
    return removed;
}

/* Create and write one file of the temporary folder, and start its write-back at once; *fd stays
 * open for the fsync that follows once every file is written. */
static int write_file(const char *path, const void *p, size_t n, uint32_t *crc, int *fd, baton_err *err)
{
    *fd = baton_sys.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (*fd < 0) return io_err(err, "cannot create", path);
    int rc = baton_write_all(*fd, p, n, path, err);
    if (rc == BATON_OK) {
        /* a hint (errors ignored): the disk works on this file while the next ones are written, and
         * the fsyncs below then find the blocks allocated and mostly written, so one journal commit
         * covers several files instead of one commit each */
        (void)sync_file_range(*fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        if (crc) *crc = baton_crc32c(0, p, n);
    }
    return rc;
}

int ckpt_commit_files(const char *dir, uint64_t step, const baton_ckpt_blob *files, size_t nfiles, int keep,
                      char *committed, size_t cap, baton_err *err)
{
    return ckpt_commit(dir, step, files, nfiles, keep, NULL, committed, cap, err);
}

int ckpt_commit(const char *dir, uint64_t step, const baton_ckpt_blob *files, size_t nfiles, int keep,
                ckpt_vcache *vc, char *committed, size_t cap, baton_err *err)
{
    char tmp[4096], fin[4096], old[4096], p[4200];
    if (nfiles > 15) return baton_err_set(err, BATON_ERR_ARG, "checkpoint: too many files (%zu)", nfiles);
    if (snprintf(tmp, sizeof tmp, "%s/.ckpt-%09" PRIu64 ".tmp.%ld", dir, step, (long)getpid()) >= (int)sizeof tmp ||
        snprintf(fin, sizeof fin, "%s/ckpt-%09" PRIu64, dir, step) >= (int)sizeof fin ||
        snprintf(old, sizeof old, "%s/.ckpt-%09" PRIu64 ".old.%ld", dir, step, (long)getpid()) >= (int)sizeof old)
        return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", dir);
    ckpt_clean_temps(dir);
    if (baton_sys.mkdir(tmp, 0755) != 0) return io_err(err, "cannot create folder", tmp);
    baton_ckpt_manifest man = {0};
    int rc = BATON_OK, fds[16];
    size_t nfd = 0;
    for (size_t i = 0; i < nfiles && rc == BATON_OK; i++) {
        baton_ckpt_file *f = &man.files[man.nfiles++];
        snprintf(f->name, sizeof f->name, "%s", files[i].name);
        f->bytes = files[i].len;
        rc = baton_path_join(p, sizeof p, tmp, files[i].name, err);
        if (rc == BATON_OK) {
            rc = write_file(p, files[i].data, files[i].len, &f->crc32c, &fds[nfd], err);
            if (fds[nfd] >= 0) nfd++;
        }
    }
    if (rc == BATON_OK) {
        char *mt = ckpt_manifest_format(&man);
        if (!mt) {
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", tmp);
        } else {
            pj(p, sizeof p, tmp, "MANIFEST");
            rc = write_file(p, mt, strlen(mt), NULL, &fds[nfd], err);
            if (fds[nfd] >= 0) nfd++;
            free(mt);
        }
    }
    /* every file durable before the folder is published; inside the unpublished temporary folder
     * their order does not matter (a crash before the rename discards it whole) */
    for (size_t i = 0; i < nfd; i++) {
        if (rc == BATON_OK && baton_sys.fsync(fds[i]) != 0) {
            pj(p, sizeof p, tmp, i < man.nfiles ? man.files[i].name : "MANIFEST");
            rc = io_err(err, "fsync failed", p);
        }
        if (baton_sys.close(fds[i]) != 0 && rc == BATON_OK) {
            pj(p, sizeof p, tmp, i < man.nfiles ? man.files[i].name : "MANIFEST");
            rc = io_err(err, "close failed", p);
        }
    }
    if (rc == BATON_OK) rc = baton_fsync_dir(tmp, err);
    int moved_old = 0;
    char why[512];
    if (rc == BATON_OK && baton_is_dir(fin) && ckpt_vcache_status(vc, fin, step, why, sizeof why) != BATON_OK &&
        ckpt_move_aside(dir, step, fin, why) != 0)
        rc = io_err(err, "cannot move a damaged folder of the same step aside", fin);
    if (rc == BATON_OK && baton_is_dir(fin)) {
        if (baton_sys.rename(fin, old) != 0)
            rc = io_err(err, "cannot move the previous folder of the same step aside", fin);
        else
            moved_old = 1;
    }
    if (rc == BATON_OK && baton_sys.rename(tmp, fin) != 0) {
        rc = io_err(err, "cannot publish (rename)", fin);
        if (moved_old) baton_sys.rename(old, fin);
    }
    if (rc != BATON_OK) {
        baton_remove_tree(tmp);
        return baton_err_prefix(err, "checkpoint %" PRIu64 " not saved (earlier checkpoints untouched)", step);
    }
    if (committed) snprintf(committed, cap, "%s", fin);
    ckpt_vcache_put_ok(vc, fin, step);
    rc = baton_fsync_dir(dir, err);
    if (moved_old) baton_remove_tree(old);
    if (rc != BATON_OK) return baton_err_prefix(err, "checkpoint %" PRIu64 " published but not durable", step);
    baton_err rerr = {0};
    if (ckpt_retain(dir, keep, vc, &rerr) != BATON_OK)
        baton_log(BATON_LOG_WARN, "retention in %s: %s", dir, rerr.msg);
    return BATON_OK;
}

/* ---- verification ---- */

static int file_crc(const char *path, uint64_t *size, uint32_t *crc, baton_err *err)
{
    int fd = baton_open_regular(path, err);
    if (fd == -2) return err->code;
    if (fd < 0) return io_err(err, errno == ENOENT ? "missing" : "cannot open", path);
    size_t cap = 1 << 20;
    uint8_t *b = malloc(cap);
    if (!b) {
        baton_sys.close(fd);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    }
    uint32_t c = 0;
    uint64_t n = 0;
    int rc = BATON_OK;
    for (;;) {
        ssize_t r = baton_sys.read(fd, b, cap);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = io_err(err, "read failed", path);
            break;
        }
        if (r == 0) break;
        c = baton_crc32c(c, b, (size_t)r);
        n += (uint64_t)r;
    }
    free(b);
    baton_sys.close(fd);
    *size = n;
    *crc = c;
    return rc;
}

static int check_st_header(const char *path, uint64_t size, baton_err *err)
{
    int fd = baton_open_regular(path, err);
    if (fd == -2) return err->code;
    if (fd < 0) return io_err(err, "cannot open", path);
    uint8_t lenb[8] = {0};
    ssize_t r = size >= 8 ? baton_sys.pread(fd, lenb, 8, 0) : 0;
    if (r < 0) {   /* a read that failed says nothing about the file: an I/O error, not damage */
        int rc = io_err(err, "read failed", path);
        baton_sys.close(fd);
        return rc;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | lenb[i];
    size_t want = 8;
    if (r == 8 && hl <= size - 8 && hl <= BATON_ST_MAX_HEADER) want = 8 + (size_t)hl;
    uint8_t *b = malloc(want + 1);
    if (!b) {
        baton_sys.close(fd);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t got = 0;
    while (got < want) {
        ssize_t k = baton_sys.pread(fd, b + got, want - got, (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int rc = io_err(err, "read failed", path);
            baton_sys.close(fd);
            free(b);
            return rc;
        }
        if (k == 0) break;
        got += (size_t)k;
    }
    baton_sys.close(fd);
    baton_st_header h;
    int rc = ckpt_st_parse_header(path, b, got, size, &h, err);
    free(b);
    if (rc == BATON_OK) baton_st_header_free(&h);
    return rc;
}

static int verify_impl(const char *ckpt_dir, int full, baton_err *err)
{
    char p[4200];
    pj(p, sizeof p, ckpt_dir, "MANIFEST");
    uint8_t *text;
    size_t len;
    int rc = baton_file_read_all(p, BATON_CKPT_MANIFEST_MAX, &text, &len, err);
    if (rc == BATON_ERR_NOTFOUND)
        return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: MANIFEST missing (not committed, or torn)", ckpt_dir);
    if (rc) return rc;
    baton_ckpt_manifest m;
    rc = ckpt_manifest_parse(p, (const char *)text, len, &m, err);
    free(text);
    if (rc) return rc;
    for (size_t k = 0; k < sizeof required / sizeof required[0]; k++) {
        int found = 0;
        for (size_t i = 0; i < m.nfiles && !found; i++) found = strcmp(m.files[i].name, required[k]) == 0;
        if (!found) return baton_err_set(err, BATON_ERR_FORMAT, "%s: does not list %s", p, required[k]);
    }
    uint64_t step = UINT64_MAX;
    if (!baton_ckpt_parse_name(base_name(ckpt_dir), &step)) step = UINT64_MAX;
    for (size_t i = 0; i < m.nfiles; i++) {
        const baton_ckpt_file *f = &m.files[i];
        pj(p, sizeof p, ckpt_dir, f->name);
        uint64_t size = 0;
        uint32_t crc = 0;
        if (!full) {   /* quick: the file exists with the listed size */
            struct stat sb;
            if (stat(p, &sb) != 0) return io_err(err, "missing", p);
            if ((uint64_t)sb.st_size != f->bytes)
                return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: %lld bytes, MANIFEST says %" PRIu64, p,
                                     (long long)sb.st_size, f->bytes);
            continue;
        }
        if ((rc = file_crc(p, &size, &crc, err)) != BATON_OK) return rc;
        if (size != f->bytes)
            return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: %" PRIu64 " bytes, MANIFEST says %" PRIu64, p,
                                 size, f->bytes);
        if (crc != f->crc32c)
            return baton_err_set(err, BATON_ERR_CORRUPT, "%s: CRC32C %08x, MANIFEST says %08x", p, crc,
                                 f->crc32c);
        size_t nl = strlen(f->name);
        if (nl > 12 && strcmp(f->name + nl - 12, ".safetensors") == 0) {
            if ((rc = check_st_header(p, size, err)) != BATON_OK) return rc;
        } else if (strcmp(f->name, "state.json") == 0) {
            uint8_t *st;
            size_t sl;
            if ((rc = baton_file_read_all(p, (size_t)64 << 20, &st, &sl, err)) != BATON_OK) return rc;
            rc = ckpt_state_check(p, (const char *)st, sl, step, err);
            free(st);
            if (rc) return rc;
        }
    }
    return BATON_OK;
}

int baton_ckpt_verify(const char *ckpt_dir, baton_err *err) { return verify_impl(ckpt_dir, 1, err); }

/* ---- listing ---- */

static int cmp_info(const void *a, const void *b)
{
    uint64_t x = ((const baton_ckpt_info *)a)->step, y = ((const baton_ckpt_info *)b)->step;
    return x < y ? 1 : x > y ? -1 : 0;
}

int baton_ckpt_list(const char *dir, int verify, baton_ckpt_info **out, size_t *n, baton_err *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return io_err(err, "cannot list checkpoint directory", dir);
    size_t cap = 0;
    baton_ckpt_info *v = NULL;
    struct dirent *e;
    int rc = BATON_OK;
    while ((e = readdir(d)) != NULL) {
        uint64_t step;
        int aside = 0;
        if (!baton_ckpt_parse_name(e->d_name, &step) &&
            !((verify & BATON_CKPT_LIST_ASIDE) && (aside = ckpt_parse_aside_name(e->d_name, &step))))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            baton_ckpt_info *q = realloc(v, cap * sizeof *v);
            if (!q) {
                rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", dir);
                break;
            }
            v = q;
        }
        baton_ckpt_info *c = &v[(*n)++];
        memset(c, 0, sizeof *c);
        c->step = step;
        c->aside = aside;
        if (!pj(c->path, sizeof c->path, dir, e->d_name)) {
            (*n)--;
            continue;
        }
    }
    closedir(d);
    if (rc) {
        free(v);
        *n = 0;
        return rc;
    }
    if (*n) qsort(v, *n, sizeof *v, cmp_info);
    for (size_t i = 0; i < *n; i++) {
        baton_ckpt_info *c = &v[i];
        char p[4200];
        pj(p, sizeof p, c->path, "MANIFEST");
        struct stat st;
        if (stat(p, &st) == 0) c->mtime = (int64_t)st.st_mtime;
        uint8_t *text;
        size_t len;
        baton_ckpt_manifest m;
        baton_err e2 = {0};
        if (baton_file_read_all(p, BATON_CKPT_MANIFEST_MAX, &text, &len, &e2) == BATON_OK) {
            if (ckpt_manifest_parse(p, (const char *)text, len, &m, &e2) == BATON_OK)
                for (size_t k = 0; k < m.nfiles; k++) c->bytes += m.files[k].bytes;
            free(text);
        }
        const int how = verify & 3;
        if (how) {
            baton_err ve = {0};
            c->status = verify_impl(c->path, how == 1, &ve);
            if (c->status) snprintf(c->reason, sizeof c->reason, "%s", ve.msg);
            else if (c->aside) c->status = BATON_ERR_CORRUPT;   /* moved aside once: never trusted again */
        }
    }
    *out = v;
    return BATON_OK;
}

int baton_ckpt_latest(const char *dir, char *path, size_t cap, uint64_t *step, baton_err *err)
{
    baton_ckpt_info *v;
    size_t n;
    int rc = baton_ckpt_list(dir, 0, &v, &n, err);
    if (rc) return rc;
    rc = BATON_ERR_NOTFOUND;
    for (size_t i = 0; i < n; i++) {
        baton_err ve = {0};
        if (baton_ckpt_verify(v[i].path, &ve) != BATON_OK) {
            baton_log(BATON_LOG_WARN, "skipping checkpoint %s: %s", v[i].path, ve.msg);
            continue;
        }
        snprintf(path, cap, "%s", v[i].path);
        if (step) *step = v[i].step;
        rc = BATON_OK;
        break;
    }
    if (rc) baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no checkpoint that verifies (%zu found)", dir, n);
    free(v);
    return rc;
}

int baton_ckpt_load(const char *ckpt_dir, baton_nn_model *m, baton_nn_optim *o, char **state, baton_err *err)
{
    if (state) *state = NULL;
    int rc = baton_ckpt_verify(ckpt_dir, err);
    if (rc) return rc;
    char p[4200];
    if (m) {
        pj(p, sizeof p, ckpt_dir, "model.safetensors");
        if ((rc = baton_ckpt_load_model(p, m, err)) != BATON_OK) return rc;
    }
    if (o) {
        pj(p, sizeof p, ckpt_dir, "optim.safetensors");
        if ((rc = ckpt_load_optim(p, o, err)) != BATON_OK) return rc;
    }
    if (state) {
        pj(p, sizeof p, ckpt_dir, "state.json");
        uint8_t *s;
        size_t len;
        if ((rc = baton_file_read_all(p, (size_t)64 << 20, &s, &len, err)) != BATON_OK) return rc;
        *state = (char *)s;
    }
    return BATON_OK;
}
