/* retain.c — retention: which checkpoint folders stay after a commit, and what happens to those
 * that do not verify.
 *
 * Rules (ckpt_retain_dir / ckpt_retain), over the ckpt-<step> folders newest first:
 *   1. a folder counts only when it passes the full check (baton_ckpt_verify: every byte against
 *      its MANIFEST) — the same check resume uses; a folder with the right sizes but a flipped byte
 *      is damaged, not one of the K;
 *   2. the newest `keep` folders that verify stay (keep >= 1, so the newest verified one always
 *      stays); older verified ones are removed (renamed out of sight first, see store.c);
 *   3. a folder that does not verify is never removed: it is moved aside to .ckpt-<step>.corrupt
 *      (ckpt_move_aside), where `baton ckpt ls` reports it and nothing reads it again.
 * Each folder is checked once per process: the result is remembered (ckpt_vcache) under its
 * MANIFEST's identity, and a folder this process committed is known good without a re-read. */
#include "ckpt_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int manifest_id(const char *path, uint64_t *ino, uint64_t *size, int64_t *mtime_ns)
{
    char p[4200];
    if (snprintf(p, sizeof p, "%s/MANIFEST", path) >= (int)sizeof p) return -1;
    struct stat sb;
    if (stat(p, &sb) != 0) return -1;
    *ino = (uint64_t)sb.st_ino;
    *size = (uint64_t)sb.st_size;
    *mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    return 0;
}

static ckpt_vcache_entry *slot(ckpt_vcache *c, uint64_t step)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].step == step) return &c->e[i];
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        ckpt_vcache_entry *q = realloc(c->e, cap * sizeof *q);
        if (!q) return NULL;
        c->e = q;
        c->cap = cap;
    }
    ckpt_vcache_entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->step = step;
    e->status = 1;   /* not a status: never matches a lookup until filled */
    return e;
}

int ckpt_vcache_status(ckpt_vcache *c, const char *path, uint64_t step, char *reason, size_t cap)
{
    uint64_t ino = 0, size = 0;
    int64_t mt = 0;
    int have_id = manifest_id(path, &ino, &size, &mt) == 0;
    ckpt_vcache_entry *e = c && have_id ? slot(c, step) : NULL;
    if (e && e->status <= 0 && e->ino == ino && e->size == size && e->mtime_ns == mt) {
        if (reason && cap) snprintf(reason, cap, "%s", e->reason);
        return e->status;
    }
    baton_err ve = {0};
    int st = baton_ckpt_verify(path, &ve);
    if (reason && cap) snprintf(reason, cap, "%s", st ? ve.msg : "");
    if (e && st != BATON_ERR_IO && st != BATON_ERR_NOMEM) {   /* a read that failed proves nothing: not kept */
        e->ino = ino, e->size = size, e->mtime_ns = mt, e->status = st;
        snprintf(e->reason, sizeof e->reason, "%.500s", st ? ve.msg : "");
    }
    return st;
}

void ckpt_vcache_put_ok(ckpt_vcache *c, const char *path, uint64_t step)
{
    if (!c) return;
    uint64_t ino, size;
    int64_t mt;
    if (manifest_id(path, &ino, &size, &mt) != 0) return;
    ckpt_vcache_entry *e = slot(c, step);
    if (!e) return;
    e->ino = ino, e->size = size, e->mtime_ns = mt, e->status = BATON_OK;
    e->reason[0] = 0;
}

void ckpt_vcache_free(ckpt_vcache *c)
{
    free(c->e);
    memset(c, 0, sizeof *c);
}

int ckpt_parse_aside_name(const char *name, uint64_t *step)
{
    if (strncmp(name, ".ckpt-", 6) != 0) return 0;
    const char *d = name + 6, *dot = strstr(d, ".corrupt");
    if (!dot || dot == d || dot - d > 19) return 0;
    uint64_t v = 0;
    for (const char *q = d; q < dot; q++) {
        if (*q < '0' || *q > '9') return 0;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*q - '0'), &v)) return 0;
    }
    const char *tail = dot + 8;
    if (*tail && (*tail != '.' || !tail[1] || strspn(tail + 1, "0123456789") != strlen(tail + 1))) return 0;
    *step = v;
    return 1;
}

int ckpt_move_aside(const char *dir, uint64_t step, const char *path, const char *reason)
{
    char to[4200];
    for (int k = 1; k < 1000; k++) {
        int n = k == 1 ? snprintf(to, sizeof to, "%s/.ckpt-%09" PRIu64 ".corrupt", dir, step)
                       : snprintf(to, sizeof to, "%s/.ckpt-%09" PRIu64 ".corrupt.%d", dir, step, k);
        if (n < 0 || n >= (int)sizeof to) return -1;
        struct stat sb;
        if (lstat(to, &sb) == 0) continue;
        if (baton_sys.rename(path, to) != 0) {
            baton_log(BATON_LOG_WARN, "checkpoint %s does not verify (%s) and cannot be moved aside: %s", path,
                      reason, strerror(errno));
            return -1;
        }
        baton_log(BATON_LOG_WARN, "checkpoint %s does not verify (%s): moved aside to %s", path, reason, to);
        return 0;
    }
    return -1;
}

int ckpt_retain(const char *dir, int keep, ckpt_vcache *c, baton_err *err)
{
    if (keep <= 0) keep = BATON_CKPT_KEEP_DEFAULT;
    baton_ckpt_info *v;
    size_t n;
    int rc = baton_ckpt_list(dir, 0, &v, &n, err);
    if (rc) return rc;
    int kept = 0;
    for (size_t i = 0; i < n; i++) {
        char why[512];
        int st = ckpt_vcache_status(c, v[i].path, v[i].step, why, sizeof why);
        if (st == BATON_ERR_IO || st == BATON_ERR_NOMEM) {   /* unreadable now, not shown damaged: left as it is */
            baton_log(BATON_LOG_WARN, "checkpoint %s could not be checked (%s): left in place, not counted", v[i].path,
                      why);
            continue;
        }
        if (st != BATON_OK) {
            ckpt_move_aside(dir, v[i].step, v[i].path, why);
            continue;
        }
        if (kept < keep) {
            kept++;
            continue;
        }
        /* out of sight in one rename, then file by file (in place only if the rename fails) */
        char del[4200];
        const char *p = v[i].path;
        if (snprintf(del, sizeof del, "%s/.ckpt-%09" PRIu64 ".del.%ld", dir, v[i].step, (long)getpid()) <
                (int)sizeof del &&
            baton_sys.rename(v[i].path, del) == 0)
            p = del;
        if (baton_remove_tree(p) != 0)
            baton_log(BATON_LOG_WARN, "%s: cannot remove: %s", p, strerror(errno));
    }
    free(v);
    return BATON_OK;
}

int ckpt_retain_dir(const char *dir, int keep, baton_err *err) { return ckpt_retain(dir, keep, NULL, err); }
