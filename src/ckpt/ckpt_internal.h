/* ckpt_internal.h — the checkpoint component's private pieces: parsing safetensors headers and
 * writing safetensors files, the MANIFEST format, the store's synchronous save and busy test, the
 * remote-copy object behind baton_ckpt_store_attach, committing a folder and retention; then the
 * verification memory that retention consults, the commit and retention entry points that take
 * it, and moving a damaged folder aside. Nothing outside src/ckpt (and its tests, fuzz targets and
 * benchmarks) includes this. */
#ifndef BATON_CKPT_INTERNAL_H
#define BATON_CKPT_INTERNAL_H

#include "baton/ckpt.h"

/* ---------------------------------------------------------------------------------------------
 * safetensors (src/ckpt/safetensors.c): parsing a header, writing files, loading tensors
 * --------------------------------------------------------------------------------------------- */
#define BATON_ST_MAX_HEADER 100000000u   /* the reference implementation's limit (100 MB) */

/* Parse and validate the header of a safetensors file of file_size bytes. p holds the first
 * avail bytes of the file (at least 8; all of the header once its length is known, else
 * BATON_ERR_TRUNCATED). name is used in messages. Checks: header length <= file_size - 8 and
 * <= 100 MB, JSON well-formed (an object, nothing but spaces after it), every tensor has a known
 * dtype, a shape of non-negative integers whose element count times the dtype size equals
 * end - begin (overflow-safe), offsets inside the data area, no overlap, the tensors covering the
 * data area exactly, unique names; __metadata__ maps strings to strings. */
int ckpt_st_parse_header(const char *name, const uint8_t *p, size_t avail, uint64_t file_size,
                          baton_st_header *h, baton_err *err);
/* Index of a tensor by name, or -1. */
long ckpt_st_find(const baton_st_header *h, const char *name);

/* Serialise the header for these tensors (offsets contiguous, in the given order; __metadata__
 * first when nmeta > 0; padded with spaces to a multiple of 8) into out: the 8-byte length plus
 * the JSON. *data_len receives the size of the data area that must follow. */
int ckpt_st_build_header(const baton_st_entry *t, size_t n, const char *const *meta_keys,
                          const char *const *meta_vals, size_t nmeta, baton_buf *out,
                          uint64_t *data_len, baton_err *err);
/* Write a whole safetensors file (not atomically: callers rename). */
int ckpt_st_write_file(const char *path, const baton_st_entry *t, size_t n,
                        const char *const *meta_keys, const char *const *meta_vals, size_t nmeta,
                        baton_err *err);

/* Load a file into named tensors (a model's or an optimizer's). Every file tensor must match a
 * target by name, dtype and shape and every target must be present; otherwise nothing is written
 * and the error names the tensor ("a checkpoint of another model"). what names the set in
 * messages ("model resnet20"). If meta is non-NULL, *meta receives the header (caller frees). */
int ckpt_st_load_tensors(const char *path, const baton_nn_tensor *targets, size_t n, const char *what,
                          baton_st_header *meta, baton_err *err);
/* Also restores the optimizer's update count from __metadata__ "steps". */
int ckpt_load_optim(const char *path, baton_nn_optim *o, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * MANIFEST (src/ckpt/manifest.c)
 * --------------------------------------------------------------------------------------------- */
#define BATON_CKPT_MANIFEST_MAX 65536
#define BATON_CKPT_NAME_MAX 64

typedef struct baton_ckpt_file {
    char name[BATON_CKPT_NAME_MAX];
    uint64_t bytes;
    uint32_t crc32c;
} baton_ckpt_file;

typedef struct baton_ckpt_manifest {
    baton_ckpt_file files[16];
    size_t nfiles;
} baton_ckpt_manifest;

/* Parse MANIFEST text: header line "baton-ckpt 1", then one "name bytes crc32c-hex" line per
 * file, each ending in '\n'; names are [A-Za-z0-9._-] (not "." or ".."), unique. */
int ckpt_manifest_parse(const char *name, const char *text, size_t len, baton_ckpt_manifest *m,
                              baton_err *err);
/* Serialise (malloc'd, NUL-terminated). NULL on out-of-memory. */
char *ckpt_manifest_format(const baton_ckpt_manifest *m);

/* Check state.json text: parses as a JSON object with an integer "step" equal to step (any step
 * when step is UINT64_MAX). */
int ckpt_state_check(const char *name, const char *text, size_t len, uint64_t step,
                           baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * The store's other calls (src/ckpt/snapshot.c)
 * --------------------------------------------------------------------------------------------- */
/* The interruption path: wait, snapshot, persist, all on the calling thread. */
int ckpt_save_sync(baton_ckpt_store *s, const baton_nn_model *m, const baton_nn_optim *o,
                         const char *state_json, uint64_t step, baton_err *err);
/* 1 while a persist is in flight. */
int ckpt_busy(baton_ckpt_store *s);

/* ---------------------------------------------------------------------------------------------
 * The remote copy (src/ckpt/remote.c); what it stores where is described in ckpt.h, beside
 * baton_ckpt_store_attach.
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_ckpt_remote baton_ckpt_remote;

/* Open the remote (S3 or a local folder; HTTP stores are read-only). keep as for the local store. */
int ckpt_remote_open(const char *uri, const baton_store_opts *so, int keep, baton_ckpt_remote **out,
                           baton_err *err);
/* Waits for the uploader to finish what is queued (a failure not yet reported is logged), frees. */
void ckpt_remote_close(baton_ckpt_remote *r);
const char *ckpt_remote_uri(const baton_ckpt_remote *r);
/* Upload the committed local folder of checkpoint step on the calling thread (after any upload in
 * flight): every file, checked against the folder's MANIFEST first, then MANIFEST; then remote
 * retention. A queued older checkpoint is dropped. */
int ckpt_remote_upload(baton_ckpt_remote *r, const char *folder, uint64_t step, baton_err *err);
/* Queue a committed folder for the background uploader; never waits for the network. A queued one
 * that has not started is replaced (it is superseded). */
int ckpt_remote_enqueue(baton_ckpt_remote *r, const char *folder, uint64_t step, baton_err *err);
/* Wait until nothing is queued or uploading; returns the outcome of the last upload when it failed
 * and was not reported yet (each failure is reported once), else BATON_OK. */
int ckpt_remote_wait(baton_ckpt_remote *r, baton_err *err);
/* Uploads completed so far. */
uint64_t ckpt_remote_uploads(baton_ckpt_remote *r);
/* The measured cost of an upload: the longest of the last (up to) 8 completed ones, in seconds
 * (remote retention included), or -1 when none completed yet; *n (may be NULL) the uploads so far. */
double ckpt_remote_cost(baton_ckpt_remote *r, uint64_t *n);
/* Every request of the remote ends by wall time t (baton_store_set_deadline; 0: no limit). */
void ckpt_remote_set_deadline(baton_ckpt_remote *r, double t);
/* The interruption's checkpoint (step) replaces what the uploader holds: a queued upload is dropped and
 * one under way is cut at once (waited for; its failure is not reported: the upload of the
 * interruption's checkpoint, or the next machine, replaces it). */
void ckpt_remote_supersede(baton_ckpt_remote *r, uint64_t step);
/* 1 when an upload of step (or a later one) completed in this process: one already under way when
 * supersede was called may have finished before it could be cut (a local folder is not cut). */
int ckpt_remote_uploaded(baton_ckpt_remote *r, uint64_t step);
/* 1 when the remote holds a complete checkpoint of step (its MANIFEST object), 0 when not, < 0
 * when it cannot be listed. */
int ckpt_remote_has(baton_ckpt_remote *r, uint64_t step, baton_err *err);
/* Steps of the complete remote checkpoints (MANIFEST present), newest first (caller frees). */
int ckpt_remote_list(baton_ckpt_remote *r, uint64_t **steps, size_t *n, baton_err *err);
/* Keep the newest keep complete remote checkpoints (0: the remote's keep); delete older ones
 * (MANIFEST first) and incomplete ones older than the newest complete one. */
int ckpt_remote_retain(baton_ckpt_remote *r, int keep, baton_err *err);
/* Download the newest complete remote checkpoint that verifies and commit it under dir (keep as in
 * ckpt_commit_files); its folder into path, its step into *step. Damaged ones are skipped with a
 * warning. BATON_ERR_NOTFOUND when there is none; a listing failure is an error. */
int ckpt_remote_restore(baton_ckpt_remote *r, const char *dir, int keep, char *path, size_t cap,
                              uint64_t *step, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Commit and retention (src/ckpt/store.c, src/ckpt/retain.c)
 * --------------------------------------------------------------------------------------------- */
/* Commit prepared file images as ckpt-<step> under dir (the protocol in store.c), then apply
 * retention (keep newest keep verified). Used by the persist path; exposed for tests. */
typedef struct baton_ckpt_blob {
    const char *name;       /* file name inside the folder */
    const void *data;
    size_t len;
} baton_ckpt_blob;
int ckpt_commit_files(const char *dir, uint64_t step, const baton_ckpt_blob *files, size_t nfiles,
                      int keep, char *committed, size_t cap, baton_err *err);
/* Remove stray .ckpt-*.tmp.* folders (crashed runs); returns how many were removed. */
int ckpt_clean_temps(const char *dir);
/* Apply retention (src/ckpt/retain.c): keep the newest keep checkpoints that pass the full check
 * (baton_ckpt_verify), remove older verified ones, and move every folder that does not verify aside
 * to .ckpt-<step>.corrupt (never deleted). The newest verified checkpoint always stays. */
int ckpt_retain_dir(const char *dir, int keep, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * The verification memory, and commit and retention with it (store.c, retain.c)
 * --------------------------------------------------------------------------------------------- */
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

/* ckpt_commit_files and ckpt_retain_dir with a verification memory (NULL: none). */
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
