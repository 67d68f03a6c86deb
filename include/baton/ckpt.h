/* ckpt.h — baton's checkpoint store: safetensors files, the checkpoint folder with its MANIFEST,
 * the atomic commit protocol, retention, verification with fallback, and the two-phase
 * (snapshot to memory, persist in the background) save of CheckFreq.
 *
 * On disk, a checkpoint directory DIR holds folders ckpt-<step>/ (step zero-padded to 9 digits so
 * that names sort; larger steps simply have more digits) with
 *   model.safetensors   the model's state_dict tensors, in state_dict order
 *   optim.safetensors   the optimizer's state tensors; __metadata__ {"steps": "<updates done>"}
 *   state.json          caller-provided JSON object; the store checks only that it parses and that
 *                       its "step" equals the folder's step
 *   MANIFEST            written last: "baton-ckpt 1\n" then "<name> <bytes> <crc32c 8 hex>\n" per file
 * A folder is published by rename from .ckpt-<step>.tmp.<pid>/ after every file and the folder
 * itself were fsynced; the parent is fsynced after the rename. Readers trust a folder only when its
 * MANIFEST verifies (see src/ckpt/store.c for the full list of invariants).
 *
 * Errors are values: BATON_OK or a negative baton status, with a message naming the file, tensor,
 * field or offset. Nothing here exits or asserts on outside input; all file I/O goes through
 * baton_sys, so tests can inject failures. */
#ifndef BATON_CKPT_H
#define BATON_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "baton/io.h"
#include "baton/nn.h"
#include "baton/util.h"

/* ---------------------------------------------------------------------------------------------
 * safetensors (src/ckpt/safetensors.c)
 * --------------------------------------------------------------------------------------------- */
#define BATON_ST_MAX_HEADER 100000000u   /* the reference implementation's limit (100 MB) */
#define BATON_ST_MAX_DIMS 8

enum { BATON_ST_F32 = BATON_NN_F32, BATON_ST_I64 = BATON_NN_I64 };

/* One tensor as described by a header. Offsets are relative to the start of the data area. */
typedef struct baton_st_tensor {
    char *name;
    int dtype;                      /* BATON_ST_F32 or BATON_ST_I64 */
    int ndim;                       /* 0..BATON_ST_MAX_DIMS */
    int64_t shape[BATON_ST_MAX_DIMS];
    uint64_t numel;
    uint64_t begin, end;
} baton_st_tensor;

/* A parsed, fully validated header. */
typedef struct baton_st_header {
    uint64_t header_len;            /* N: bytes of JSON (with padding) after the 8-byte length */
    uint64_t data_start;            /* 8 + N */
    uint64_t data_len;              /* file size - data_start; tensors cover it exactly */
    baton_st_tensor *tensors;       /* in file order */
    size_t ntensors;
    char **meta_keys, **meta_vals;  /* "__metadata__", in file order */
    size_t nmeta;
} baton_st_header;

/* Parse and validate the header of a safetensors file of file_size bytes. p holds the first
 * avail bytes of the file (at least 8; all of the header once its length is known, else
 * BATON_ERR_TRUNCATED). name is used in messages. Checks: header length <= file_size - 8 and
 * <= 100 MB, JSON well-formed (an object, nothing but spaces after it), every tensor has a known
 * dtype, a shape of non-negative integers whose element count times the dtype size equals
 * end - begin (overflow-safe), offsets inside the data area, no overlap, the tensors covering the
 * data area exactly, unique names; __metadata__ maps strings to strings. */
int baton_st_parse_header(const char *name, const uint8_t *p, size_t avail, uint64_t file_size,
                          baton_st_header *h, baton_err *err);
void baton_st_header_free(baton_st_header *h);
/* Index of a tensor by name, or -1. */
long baton_st_find(const baton_st_header *h, const char *name);
/* Element size of a dtype (4 or 8), 0 if unknown; its safetensors name ("F32", "I64"). */
size_t baton_st_dtype_size(int dtype);
const char *baton_st_dtype_name(int dtype);

/* A tensor to write. data holds numel elements of dtype in host order (little-endian hosts). */
typedef struct baton_st_entry {
    const char *name;
    int dtype;
    int ndim;
    const int64_t *shape;
    const void *data;
} baton_st_entry;

/* Serialise the header for these tensors (offsets contiguous, in the given order; __metadata__
 * first when nmeta > 0; padded with spaces to a multiple of 8) into out: the 8-byte length plus
 * the JSON. *data_len receives the size of the data area that must follow. */
int baton_st_build_header(const baton_st_entry *t, size_t n, const char *const *meta_keys,
                          const char *const *meta_vals, size_t nmeta, baton_buf *out,
                          uint64_t *data_len, baton_err *err);
/* Write a whole safetensors file (not atomically: callers rename). */
int baton_st_write_file(const char *path, const baton_st_entry *t, size_t n,
                        const char *const *meta_keys, const char *const *meta_vals, size_t nmeta,
                        baton_err *err);
/* Read and validate a whole file: *h is the header, *data (malloc'd) the whole file's bytes;
 * tensor i's bytes are at *data + h->data_start + h->tensors[i].begin. */
int baton_st_read_file(const char *path, baton_st_header *h, uint8_t **data, baton_err *err);

/* Load a file into named tensors (a model's or an optimizer's). Every file tensor must match a
 * target by name, dtype and shape and every target must be present; otherwise nothing is written
 * and the error names the tensor ("a checkpoint of another model"). what names the set in
 * messages ("model resnet20"). If meta is non-NULL, *meta receives the header (caller frees). */
int baton_st_load_tensors(const char *path, const baton_nn_tensor *targets, size_t n, const char *what,
                          baton_st_header *meta, baton_err *err);
int baton_ckpt_load_model(const char *path, baton_nn_model *m, baton_err *err);
/* Also restores the optimizer's update count from __metadata__ "steps". */
int baton_ckpt_load_optim(const char *path, baton_nn_optim *o, baton_err *err);

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
int baton_ckpt_manifest_parse(const char *name, const char *text, size_t len, baton_ckpt_manifest *m,
                              baton_err *err);
/* Serialise (malloc'd, NUL-terminated). NULL on out-of-memory. */
char *baton_ckpt_manifest_format(const baton_ckpt_manifest *m);

/* Check state.json text: parses as a JSON object with an integer "step" equal to step (any step
 * when step is UINT64_MAX). */
int baton_ckpt_state_check(const char *name, const char *text, size_t len, uint64_t step,
                           baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Checkpoint folders: listing, verification, fallback (src/ckpt/store.c)
 * --------------------------------------------------------------------------------------------- */
#define BATON_CKPT_KEEP_DEFAULT 3

typedef struct baton_ckpt_info {
    uint64_t step;
    char path[4096];
    int64_t mtime;          /* MANIFEST's modification time (seconds since the epoch), 0 if none */
    uint64_t bytes;         /* sum of the manifest's sizes (0 when it does not parse) */
    int status;             /* BATON_OK, or why verification failed */
    char reason[1024];      /* when status != BATON_OK */
    int aside;              /* a folder moved aside (.ckpt-<step>.corrupt[.N]): listed only with
                               BATON_CKPT_LIST_ASIDE, never trusted */
} baton_ckpt_info;

/* Parse a folder name "ckpt-<digits>"; 1 and *step on success, 0 otherwise. */
int baton_ckpt_parse_name(const char *name, uint64_t *step);
/* Verify one checkpoint folder: MANIFEST parses and lists model.safetensors, optim.safetensors and
 * state.json; every listed file exists with the listed size and CRC32C; safetensors headers
 * validate; state.json parses with the folder's step. */
int baton_ckpt_verify(const char *ckpt_dir, baton_err *err);
/* All ckpt-<step> folders under dir, newest (highest step) first. verify: 0 no check (status
 * BATON_OK), 1 full baton_ckpt_verify, 2 quick (MANIFEST parses and lists the required files,
 * each with the listed size); | BATON_CKPT_LIST_ASIDE also lists the folders retention moved aside
 * because they did not verify (aside = 1; their status is never BATON_OK). bytes/mtime come from
 * the MANIFEST when present. */
#define BATON_CKPT_LIST_ASIDE 4
int baton_ckpt_list(const char *dir, int verify, baton_ckpt_info **out, size_t *n, baton_err *err);
/* Newest checkpoint that verifies: its folder path into path (cap bytes) and *step. Logs a warning
 * for each newer one that does not verify. BATON_ERR_NOTFOUND when there is none. */
int baton_ckpt_latest(const char *dir, char *path, size_t cap, uint64_t *step, baton_err *err);
/* Read a verified checkpoint back: model and optimizer (either may be NULL) and the state text
 * (malloc'd, NUL-terminated; state may be NULL). Verifies the folder first. */
int baton_ckpt_load(const char *ckpt_dir, baton_nn_model *m, baton_nn_optim *o, char **state,
                    baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Saving: snapshot + persist (src/ckpt/snapshot.c, commit in src/ckpt/store.c)
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_ckpt_store baton_ckpt_store;

/* Open (creating it if needed) a checkpoint directory. keep: how many verified checkpoints to
 * keep (0 means BATON_CKPT_KEEP_DEFAULT). */
int baton_ckpt_store_open(const char *dir, int keep, baton_ckpt_store **out, baton_err *err);
/* Waits for an in-flight persist (its failure, if not collected, is logged) and frees. */
void baton_ckpt_store_close(baton_ckpt_store *s);

/* Snapshot flags: what to do when a persist is still in flight (the snapshot buffer is single). */
enum { BATON_CKPT_WAIT = 0, BATON_CKPT_SKIP_IF_BUSY = 1 };
#define BATON_CKPT_SKIPPED 3   /* non-error outcome: snapshot skipped because a persist is busy */

/* Copy the model's and optimizer's tensors and the state JSON into the store's in-memory snapshot
 * (allocated on first use and reused while names and shapes stay the same). The caller may change
 * the model as soon as this returns. state_json must be a JSON object whose "step" is step. o may
 * be NULL (optim.safetensors then holds no tensors). */
int baton_ckpt_snapshot(baton_ckpt_store *s, const baton_nn_model *m, const baton_nn_optim *o,
                        const char *state_json, uint64_t step, int flags, baton_err *err);
/* The same from explicit tensor lists (the model's and the optimizer's), for callers without a
 * baton_nn_model; optim_steps goes into optim.safetensors' metadata. */
int baton_ckpt_snapshot_tensors(baton_ckpt_store *s, const baton_nn_tensor *mt, size_t nm,
                                const baton_nn_tensor *ot, size_t no, uint64_t optim_steps,
                                const char *state_json, uint64_t step, int flags, baton_err *err);
/* Hand the snapshot to a background thread that writes and commits it, then applies retention.
 * BATON_ERR_ARG when there is no fresh snapshot or a persist is already in flight. */
int baton_ckpt_persist_async(baton_ckpt_store *s, baton_err *err);
/* Wait for the in-flight persist and, with a remote attached, for queued uploads; returns the first
 * failure not yet reported (BATON_OK when none). */
int baton_ckpt_wait(baton_ckpt_store *s, baton_err *err);
/* Persist the current snapshot on the calling thread (waits for an in-flight persist first). */
int baton_ckpt_persist_sync(baton_ckpt_store *s, baton_err *err);
/* The interruption path: wait, snapshot, persist, all on the calling thread. */
int baton_ckpt_save_sync(baton_ckpt_store *s, const baton_nn_model *m, const baton_nn_optim *o,
                         const char *state_json, uint64_t step, baton_err *err);
/* 1 while a persist is in flight. */
int baton_ckpt_busy(baton_ckpt_store *s);
/* The local half of baton_ckpt_wait, for a trainer that bounds its uncommitted work: collects a
 * background persist that has finished (or, with block set, waits until it has). Returns 1 and
 * sets *step to the collected snapshot's step when that persist committed; 0 when none was in
 * flight or (block == 0) it is still running; -1 when it failed (the failure is logged as a
 * warning and not reported again). Never waits for uploads. */
int baton_ckpt_reap(baton_ckpt_store *s, int block, uint64_t *step);
/* Path of the last committed checkpoint folder ("" if none yet). */
const char *baton_ckpt_last_committed(const baton_ckpt_store *s);

/* ---------------------------------------------------------------------------------------------
 * Remote copies: upload to and restore from a store (src/ckpt/remote.c)
 *
 * Under the store URI (s3://bucket/prefix/ or a folder) each checkpoint is ckpt-<step>/ with the
 * local folder's files, MANIFEST uploaded last: a remote checkpoint counts as uploaded exactly when
 * its MANIFEST object exists. Retention deletes the MANIFEST object first. Restore downloads the
 * newest complete one that verifies and commits it locally through baton_ckpt_commit.
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_ckpt_remote baton_ckpt_remote;

/* Open the remote (S3 or a local folder; HTTP stores are read-only). keep as for the local store. */
int baton_ckpt_remote_open(const char *uri, const baton_store_opts *so, int keep, baton_ckpt_remote **out,
                           baton_err *err);
/* Waits for the uploader to finish what is queued (a failure not yet reported is logged), frees. */
void baton_ckpt_remote_close(baton_ckpt_remote *r);
const char *baton_ckpt_remote_uri(const baton_ckpt_remote *r);
/* Upload the committed local folder of checkpoint step on the calling thread (after any upload in
 * flight): every file, checked against the folder's MANIFEST first, then MANIFEST; then remote
 * retention. A queued older checkpoint is dropped. */
int baton_ckpt_remote_upload(baton_ckpt_remote *r, const char *folder, uint64_t step, baton_err *err);
/* Queue a committed folder for the background uploader; never waits for the network. A queued one
 * that has not started is replaced (it is superseded). */
int baton_ckpt_remote_enqueue(baton_ckpt_remote *r, const char *folder, uint64_t step, baton_err *err);
/* Wait until nothing is queued or uploading; returns the outcome of the last upload when it failed
 * and was not reported yet (each failure is reported once), else BATON_OK. */
int baton_ckpt_remote_wait(baton_ckpt_remote *r, baton_err *err);
/* Uploads completed so far. */
uint64_t baton_ckpt_remote_uploads(baton_ckpt_remote *r);
/* Steps of the complete remote checkpoints (MANIFEST present), newest first (caller frees). */
int baton_ckpt_remote_list(baton_ckpt_remote *r, uint64_t **steps, size_t *n, baton_err *err);
/* Keep the newest keep complete remote checkpoints (0: the remote's keep); delete older ones
 * (MANIFEST first) and incomplete ones older than the newest complete one. */
int baton_ckpt_remote_retain(baton_ckpt_remote *r, int keep, baton_err *err);
/* Download the newest complete remote checkpoint that verifies and commit it under dir (keep as in
 * baton_ckpt_commit); its folder into path, its step into *step. Damaged ones are skipped with a
 * warning. BATON_ERR_NOTFOUND when there is none; a listing failure is an error. */
int baton_ckpt_remote_restore(baton_ckpt_remote *r, const char *dir, int keep, char *path, size_t cap,
                              uint64_t *step, baton_err *err);

/* Attach a remote copy to a store (opened with the store's keep; the store owns it): every commit is
 * then uploaded — queued for the uploader thread after a background persist, on the calling thread
 * after a synchronous one (baton_ckpt_persist_sync / baton_ckpt_save_sync fail when the upload
 * fails, the local commit standing). baton_ckpt_wait also waits for queued uploads. */
int baton_ckpt_store_attach(baton_ckpt_store *s, const char *uri, const baton_store_opts *so, baton_err *err);
/* With a remote attached: baton_ckpt_remote_restore into the store's directory. Without one:
 * BATON_ERR_NOTFOUND. */
int baton_ckpt_store_restore(baton_ckpt_store *s, char *path, size_t cap, uint64_t *step, baton_err *err);

/* Commit prepared file images as ckpt-<step> under dir (the protocol in store.c), then apply
 * retention (keep newest keep verified). Used by the persist path; exposed for tests. */
typedef struct baton_ckpt_blob {
    const char *name;       /* file name inside the folder */
    const void *data;
    size_t len;
} baton_ckpt_blob;
int baton_ckpt_commit(const char *dir, uint64_t step, const baton_ckpt_blob *files, size_t nfiles,
                      int keep, char *committed, size_t cap, baton_err *err);
/* Remove stray .ckpt-*.tmp.* folders (crashed runs); returns how many were removed. */
int baton_ckpt_clean_temps(const char *dir);
/* Apply retention (src/ckpt/retain.c): keep the newest keep checkpoints that pass the full check
 * (baton_ckpt_verify), remove older verified ones, and move every folder that does not verify aside
 * to .ckpt-<step>.corrupt (never deleted). The newest verified checkpoint always stays. */
int baton_ckpt_retain(const char *dir, int keep, baton_err *err);

#endif
