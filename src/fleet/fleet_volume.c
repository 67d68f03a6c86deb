/* fleet_volume.c — the persistent volume of a fleet task, simulated with folders: creation (with
 * an optional seed copy), snapshots with a manifest of sizes and CRC32Cs, verification by reading
 * every byte back, restore, and the zone move that never leaves zero complete copies.
 *
 * Contract (see fleet.h): every copy is written under "<dest>.tmp.<pid>", fsynced file by file and
 * folder by folder, verified against the manifest, and only then renamed into place (parent
 * fsynced). On any failure the temporary copy is removed and the source is untouched. */
#include "baton/rec.h"
#include "fleet_parts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)

typedef struct walker {
    const char *src_root, *dst_root;   /* dst_root NULL: checksum only */
    const char *skip;                  /* a top-level name to leave out (SNAPSHOT) */
    baton_buf man;
    uint8_t *chunk;
    baton_err *err;
} walker;

static int put(walker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(walker *w, const char *fmt, ...)
{
    char line[4200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) return baton_err_set(w->err, BATON_ERR_ARG, "%s: path too long", w->src_root);
    if (baton_buf_append(&w->man, line, (size_t)n)) return baton_err_set(w->err, BATON_ERR_NOMEM, "out of memory");
    return 0;
}

static int sys_err(baton_err *err, const char *what, const char *path) { return baton_err_errno(err, errno, what, path); }

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted entry names of a folder (excluding . and ..). */
static int list_dir(const char *dir, char ***names, size_t *n, baton_err *err)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return sys_err(err, "cannot open folder", dir);
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **p = realloc(*names, cap * sizeof *p);
            if (!p) { rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory"); break; }
            *names = p;
        }
        if (!((*names)[*n] = strdup(e->d_name))) { rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory"); break; }
        (*n)++;
    }
    closedir(d);
    if (!rc && *n) qsort(*names, *n, sizeof **names, cmp_names);
    return rc;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Copy (or only read) one regular file; size and CRC32C of the bytes read. */
static int do_file(walker *w, const char *src, const char *dst, uint64_t *size, uint32_t *crc)
{
    int in = baton_sys.open(src, O_RDONLY | O_CLOEXEC, 0);
    if (in < 0) return sys_err(w->err, "cannot open", src);
    int out = -1, rc = 0;
    if (dst && (out = baton_sys.open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
        rc = sys_err(w->err, "cannot create", dst);
        baton_sys.close(in);
        return rc;
    }
    *size = 0;
    *crc = 0;
    for (;;) {
        ssize_t r = baton_sys.read(in, w->chunk, COPY_CHUNK);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = sys_err(w->err, "read failed", src);
            break;
        }
        if (r == 0) break;
        *crc = baton_crc32c(*crc, w->chunk, (size_t)r);
        *size += (uint64_t)r;
        if (out >= 0 && (rc = baton_write_all(out, w->chunk, (size_t)r, dst, w->err))) break;
    }
    baton_sys.close(in);
    if (out >= 0) {
        if (!rc && baton_sys.fsync(out) != 0) rc = sys_err(w->err, "fsync failed", dst);
        if (baton_sys.close(out) != 0 && !rc) rc = sys_err(w->err, "close failed", dst);
    }
    return rc;
}

static int walk(walker *w, const char *rel)
{
    char src[4096], dst[4096];
    if (snprintf(src, sizeof src, "%s%s%s", w->src_root, *rel ? "/" : "", rel) >= (int)sizeof src)
        return baton_err_set(w->err, BATON_ERR_ARG, "%s/%s: path too long", w->src_root, rel);
    char **names;
    size_t n;
    int rc = list_dir(src, &names, &n, w->err);
    for (size_t i = 0; !rc && i < n; i++) {
        const char *name = names[i];
        if (!*rel && w->skip && !strcmp(name, w->skip)) continue;
        if (strchr(name, '\n')) {
            rc = baton_err_set(w->err, BATON_ERR_FORMAT, "%s: a file name with a line break is not supported in a volume", src);
            break;
        }
        char sub[4096];
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name) >= (int)sizeof sub ||
            baton_path_join(src, sizeof src, w->src_root, sub, NULL) ||
            (w->dst_root && baton_path_join(dst, sizeof dst, w->dst_root, sub, NULL))) {
            rc = baton_err_set(w->err, BATON_ERR_ARG, "%s/%s: path too long", w->src_root, sub);
            break;
        }
        struct stat st;
        if (lstat(src, &st) != 0) {
            rc = sys_err(w->err, "cannot stat", src);
        } else if (S_ISDIR(st.st_mode)) {
            if (!(rc = put(w, "d %s\n", sub)) && w->dst_root && baton_sys.mkdir(dst, 0755) != 0)
                rc = sys_err(w->err, "cannot create folder", dst);
            if (!rc) rc = walk(w, sub);
            if (!rc && w->dst_root) rc = baton_fsync_dir(dst, w->err);
        } else if (S_ISREG(st.st_mode)) {
            uint64_t size = 0;
            uint32_t crc = 0;
            rc = do_file(w, src, w->dst_root ? dst : NULL, &size, &crc);
            if (!rc) rc = put(w, "f %llu %08x %s\n", (unsigned long long)size, crc, sub);
        } else {
            rc = baton_err_set(w->err, BATON_ERR_FORMAT, "%s: %s in a volume: only files and folders are supported",
                               src, S_ISLNK(st.st_mode) ? "a symbolic link" : "a special file");
        }
    }
    free_names(names, n);
    return rc;
}

/* Walk src (copying to dst when non-NULL); the manifest text in *man (malloc'd). */
static int run_walk(const char *src, const char *dst, const char *skip, char **man, baton_err *err)
{
    walker w = {src, dst, skip, {0}, NULL, err};
    *man = NULL;
    if (!baton_is_dir(src)) return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such folder", src);
    w.chunk = malloc(COPY_CHUNK);
    if (!w.chunk) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = put(&w, "baton-snapshot 1\n");
    if (!rc) rc = walk(&w, "");
    if (!rc) rc = baton_buf_append(&w.man, "", 1) ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : 0;
    free(w.chunk);
    if (rc) baton_buf_free(&w.man);
    else *man = (char *)w.man.data;
    return rc;
}

int fleet_volume_manifest(const char *dir, char **text, baton_err *err)
{
    return run_walk(dir, NULL, NULL, text, err);
}

static int tmp_name(char *out, size_t cap, const char *path, baton_err *err)
{
    if (snprintf(out, cap, "%s.tmp.%ld", path, (long)getpid()) >= (int)cap)
        return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", path);
    return 0;
}

/* Publish tmp as path: fsync tmp, rename, fsync the parent. */
static int publish_dir(const char *tmp, const char *path, baton_err *err)
{
    int rc = baton_fsync_dir(tmp, err);
    if (!rc && baton_sys.rename(tmp, path) != 0) rc = sys_err(err, "cannot rename into place", path);
    if (!rc) {
        char parent[4096];
        baton_path_dirname(path, parent, sizeof parent);
        rc = baton_fsync_dir(parent, err);
    }
    return rc;
}

static int make_parent(const char *path, baton_err *err)
{
    char parent[4096];
    baton_path_dirname(path, parent, sizeof parent);
    return baton_mkdir_p(parent, err);
}

/* Copy src into a fresh dst under a temporary name, verify the copy by re-reading it against
 * expect (or against the manifest computed while copying), publish. */
static int copy_verified(const char *src, const char *skip, const char *dst, const char *expect,
                         char **man_out, baton_err *err)
{
    char tmp[4096], *man = NULL, *again = NULL;
    int rc = tmp_name(tmp, sizeof tmp, dst, err);
    if (rc) return rc;
    if (access(dst, F_OK) == 0) return baton_err_set(err, BATON_ERR_ARG, "%s: already exists", dst);
    if ((rc = make_parent(dst, err))) return rc;
    baton_remove_tree(tmp);
    if (baton_sys.mkdir(tmp, 0755) != 0) return sys_err(err, "cannot create folder", tmp);
    rc = run_walk(src, tmp, skip, &man, err);
    if (!rc && expect && strcmp(man, expect) != 0)
        rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: contents differ from its manifest (read while copying)", src);
    if (!rc) rc = run_walk(tmp, NULL, NULL, &again, err);
    if (!rc && strcmp(again, man) != 0)
        rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: the copy does not read back as written", tmp);
    free(again);
    if (!rc && man_out) {
        *man_out = man;
        man = NULL;
    }
    free(man);
    if (rc) {
        baton_remove_tree(tmp);
        return rc;
    }
    return rc;   /* the caller publishes (it may add files first) */
}

int fleet_volume_create(const char *path, const char *seed, baton_err *err)
{
    if (baton_is_dir(path)) return BATON_OK;
    if (!seed || !*seed) {
        int rc = baton_mkdir_p(path, err);
        return rc ? baton_err_prefix(err, "volume") : rc;
    }
    if (!baton_is_dir(seed)) return baton_err_set(err, BATON_ERR_NOTFOUND, "volume seed %s: no such folder", seed);
    char tmp[4096];
    int rc = tmp_name(tmp, sizeof tmp, path, err);
    if (!rc) rc = copy_verified(seed, NULL, path, NULL, NULL, err);
    if (!rc && (rc = publish_dir(tmp, path, err))) baton_remove_tree(tmp);
    return rc ? baton_err_prefix(err, "volume %s", path) : rc;
}

int fleet_snapshot_create(const char *volume, const char *snapshot, baton_err *err)
{
    char tmp[4096], mpath[4200], *man = NULL;
    int rc = tmp_name(tmp, sizeof tmp, snapshot, err);
    if (!rc) rc = copy_verified(volume, NULL, snapshot, NULL, &man, err);
    if (!rc) {
        rc = baton_path_join(mpath, sizeof mpath, tmp, BATON_SNAPSHOT_MANIFEST, err);
        if (!rc) rc = baton_file_write_atomic(mpath, man, strlen(man), err);
        if (!rc) rc = publish_dir(tmp, snapshot, err);
        if (rc) baton_remove_tree(tmp);
    }
    free(man);
    return rc ? baton_err_prefix(err, "snapshot of %s", volume) : rc;
}

static int read_manifest(const char *snapshot, char **text, baton_err *err)
{
    char mpath[4200];
    uint8_t *p;
    size_t n;
    int rc = baton_path_join(mpath, sizeof mpath, snapshot, BATON_SNAPSHOT_MANIFEST, err);
    if (!rc) rc = baton_file_read_all(mpath, 64u << 20, &p, &n, err);
    if (rc) return rc;
    if (strlen((char *)p) != n || strncmp((char *)p, "baton-snapshot 1\n", 17) != 0) {
        free(p);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a snapshot manifest", mpath);
    }
    *text = (char *)p;
    return 0;
}

int fleet_snapshot_verify(const char *snapshot, baton_err *err)
{
    char *want = NULL, *have = NULL;
    int rc = read_manifest(snapshot, &want, err);
    if (!rc) rc = run_walk(snapshot, NULL, BATON_SNAPSHOT_MANIFEST, &have, err);
    if (!rc && strcmp(want, have) != 0)
        rc = baton_err_set(err, BATON_ERR_CORRUPT, "snapshot %s: contents differ from its manifest", snapshot);
    free(want);
    free(have);
    return rc;
}

int fleet_volume_restore(const char *snapshot, const char *volume, baton_err *err)
{
    char *want = NULL, tmp[4096];
    int rc = read_manifest(snapshot, &want, err);
    if (!rc) rc = tmp_name(tmp, sizeof tmp, volume, err);
    if (!rc) rc = copy_verified(snapshot, BATON_SNAPSHOT_MANIFEST, volume, want, NULL, err);
    if (!rc && (rc = publish_dir(tmp, volume, err))) baton_remove_tree(tmp);
    free(want);
    return rc ? baton_err_prefix(err, "restore of %s", volume) : rc;
}

int fleet_volume_move(const char *from, const char *snapshot, const char *to, baton_volume_step_fn fn,
                      void *arg, baton_err *err)
{
    int rc = fleet_snapshot_create(from, snapshot, err);
    if (rc) return rc;
    if (fn) fn(arg, "snapshot-created", snapshot);
    if ((rc = fleet_snapshot_verify(snapshot, err))) goto drop_snapshot;
    if (fn) fn(arg, "snapshot-verified", snapshot);
    if ((rc = fleet_volume_restore(snapshot, to, err))) goto drop_snapshot;
    if (fn) fn(arg, "volume-restored", to);
    if (baton_remove_tree(from) != 0)   /* two good copies remain; report, do not fail the move */
        baton_log(BATON_LOG_WARN, "volume %s: could not delete the old copy: %s", from, strerror(errno));
    else if (fn)
        fn(arg, "old-volume-deleted", from);
    return BATON_OK;
drop_snapshot:
    baton_remove_tree(snapshot);   /* the old volume was never touched */
    return rc;
}
