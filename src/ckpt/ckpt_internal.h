/* ckpt_internal.h — the checkpoint component's private pieces: the verification memory that
 * retention consults, the commit and retention entry points that take it, and moving a damaged
 * folder aside. Nothing outside src/ckpt (and its tests) includes this. */
#ifndef BATON_CKPT_INTERNAL_H
#define BATON_CKPT_INTERNAL_H

#include "baton/ckpt.h"

/* What a full baton_ckpt_verify said about a folder, remembered so that each folder is read once
 * per process. An entry is keyed by step and by its MANIFEST's identity (inode, size, mtime): a
 * folder re-committed under the same step has a new MANIFEST and is checked again. */
typedef struct ckpt_vcache_entry {
    uint64_t step;
    uint64_t ino, size;
    int64_t mtime_ns;
    int status;
    char reason[512];
} ckpt_vcache_entry;

typedef struct ckpt_vcache {
    ckpt_vcache_entry *e;
    size_t n, cap;
} ckpt_vcache;

/* The full check of the folder path (checkpoint step), from memory when this MANIFEST was checked
 * before; reason (may be NULL) receives the failure. c NULL: always checked. */
int ckpt_vcache_status(ckpt_vcache *c, const char *path, uint64_t step, char *reason, size_t cap);
/* Remember that the folder path, just committed by this process, verifies (its bytes were
 * checksummed as they were written). */
void ckpt_vcache_put_ok(ckpt_vcache *c, const char *path, uint64_t step);
void ckpt_vcache_free(ckpt_vcache *c);

/* baton_ckpt_commit and baton_ckpt_retain with a verification memory (NULL: none). */
int ckpt_commit(const char *dir, uint64_t step, const baton_ckpt_blob *files, size_t nfiles, int keep,
                ckpt_vcache *c, char *committed, size_t cap, baton_err *err);
int ckpt_retain(const char *dir, int keep, ckpt_vcache *c, baton_err *err);

/* Move a published folder that does not verify out of the way, to DIR/.ckpt-<step>.corrupt (or
 * .corrupt.2, .3, … when that exists), never deleting it: a person may still want its bytes.
 * Logs a warning with reason. Returns 0, or -1 when the rename failed (the folder stays). */
int ckpt_move_aside(const char *dir, uint64_t step, const char *path, const char *reason);

/* The name of a moved-aside folder: 1 and *step for ".ckpt-<digits>.corrupt[.N]", else 0. */
int ckpt_parse_aside_name(const char *name, uint64_t *step);

#endif
