/* ckpt.h — baton's checkpoint store: safetensors files, the checkpoint folder with its MANIFEST,
 * the atomic commit protocol, retention, verification with fallback, and the two-phase
 * (snapshot to memory, persist in the background) save of CheckFreq.
 *
 * What it offers, in the order a caller uses it:
 *   1. Finding and loading a checkpoint (src/ckpt/store.c): baton_ckpt_latest gives the newest
 *      folder that verifies (baton_ckpt_list lists them all, baton_ckpt_verify checks one,
 *      baton_ckpt_parse_name reads a folder name's step); baton_ckpt_load reads the model, the
 *      optimizer and state.json back, baton_ckpt_load_model (section 3) the model alone.
 *   2. Saving through a store (src/ckpt/snapshot.c, store.c, remote.c): baton_ckpt_store_open on
 *      the directory (a trainer opens it before it resumes), optionally baton_ckpt_store_attach of
 *      a remote copy, with baton_ckpt_store_restore bringing the remote's newest back when the
 *      directory has none; then per checkpoint baton_ckpt_snapshot (or _snapshot_tensors) copies
 *      the state to memory and baton_ckpt_persist_async writes and commits it in the background,
 *      baton_ckpt_reap collecting it (baton_ckpt_persist_sync does it all on the calling thread);
 *      at the end baton_ckpt_wait, then baton_ckpt_store_close.
 *   3. safetensors files (src/ckpt/safetensors.c): baton_st_read_file of one file, its tensors'
 *      names, dtypes (baton_st_dtype_name) and shapes, baton_st_header_free; and
 *      baton_ckpt_load_model.
 * Writing safetensors files, parsing their headers, the MANIFEST format, the commit protocol and
 * retention, and the remote-copy object itself are private to src/ckpt: src/ckpt/ckpt_internal.h.
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
/* The same from named tensors of any dtype (a caller's own, e.g. a PyTorch state_dict): model
 * entries go to model.safetensors and optimizer entries to optim.safetensors, each in the given
 * order. baton_st_entry and the dtypes are declared with the safetensors functions below. */
struct baton_st_entry;
int baton_ckpt_snapshot_entries(baton_ckpt_store *s, const struct baton_st_entry *mt, size_t nm,
                                const struct baton_st_entry *ot, size_t no, uint64_t optim_steps,
                                const char *state_json, uint64_t step, int flags, baton_err *err);
/* The mirror of baton_ckpt_snapshot_tensors: verify a checkpoint folder, then read its
 * model.safetensors into mt and (ot non-NULL) its optim.safetensors into ot. Every tensor is matched
 * by name, dtype and shape, a tensor of the file that no list names is refused too, and nothing is
 * copied unless all match (the message names the file and the first tensor that does not).
 * *optim_steps (may be NULL) gets optim.safetensors' "steps" metadata (0 when absent), which must be
 * a decimal count. */
int baton_ckpt_load_tensors(const char *ckpt_dir, const baton_nn_tensor *mt, size_t nm,
                            const baton_nn_tensor *ot, size_t no, uint64_t *optim_steps, baton_err *err);
/* Hand the snapshot to a background thread that writes and commits it, then applies retention.
 * BATON_ERR_ARG when there is no fresh snapshot or a persist is already in flight. */
int baton_ckpt_persist_async(baton_ckpt_store *s, baton_err *err);
/* Wait for the in-flight persist and, with a remote attached, for queued uploads; returns the first
 * failure not yet reported (BATON_OK when none). */
int baton_ckpt_wait(baton_ckpt_store *s, baton_err *err);
/* Persist the current snapshot on the calling thread (waits for an in-flight persist first). */
int baton_ckpt_persist_sync(baton_ckpt_store *s, baton_err *err);
/* The local half of baton_ckpt_wait, for a trainer that bounds its uncommitted work: collects a
 * background persist that has finished (or, with block set, waits until it has). Returns 1 and
 * sets *step to the collected snapshot's step when that persist committed; 0 when none was in
 * flight or (block == 0) it is still running; -1 when it failed (the failure is logged as a
 * warning and not reported again). Never waits for uploads. */
int baton_ckpt_reap(baton_ckpt_store *s, int block, uint64_t *step);
/* Path of the last committed checkpoint folder ("" if none yet). */
const char *baton_ckpt_last_committed(const baton_ckpt_store *s);

/* What a checkpoint whose state.json says {"kind": KIND} is and what reads it, for the message of a
 * command given a checkpoint of another kind (race-ppo, baton-python); NULL for an unknown kind. */
const char *baton_ckpt_kind_hint(const char *kind);

/* ---------------------------------------------------------------------------------------------
 * Remote copies: upload to and restore from a store (src/ckpt/remote.c)
 *
 * Under the store URI (s3://bucket/prefix/ or a folder) each checkpoint is ckpt-<step>/ with the
 * local folder's files, MANIFEST uploaded last: a remote checkpoint counts as uploaded exactly when
 * its MANIFEST object exists. Retention deletes the MANIFEST object first. Restore downloads the
 * newest complete one that verifies and commits it locally through baton_ckpt_commit.
 * --------------------------------------------------------------------------------------------- */
/* Attach a remote copy to a store (opened with the store's keep; the store owns it): every commit is
 * then uploaded — queued for the uploader thread after a background persist, on the calling thread
 * after a synchronous one (baton_ckpt_persist_sync / baton_ckpt_save_sync fail when the upload
 * fails, the local commit standing). baton_ckpt_wait also waits for queued uploads. */
int baton_ckpt_store_attach(baton_ckpt_store *s, const char *uri, const baton_store_opts *so, baton_err *err);
/* With a remote attached: baton_ckpt_remote_restore (src/ckpt/ckpt_internal.h) into the store's
 * directory. Without one: BATON_ERR_NOTFOUND. */
int baton_ckpt_store_restore(baton_ckpt_store *s, char *path, size_t cap, uint64_t *step, baton_err *err);
/* What a trainer resumes from, through its open store: the newest checkpoint under the directory
 * that verifies (every newer one that does not is moved aside to .ckpt-<step>.corrupt, as
 * retention would, with a warning), or, when there is none and a remote is attached, the remote's
 * newest complete one restored (baton_ckpt_store_restore). BATON_ERR_NOTFOUND: a fresh start.
 * A background persist in flight is waited for first (its outcome still goes to baton_ckpt_wait or
 * baton_ckpt_reap), so the folder found is the newest and stays until the store's next persist. */
int baton_ckpt_store_latest(baton_ckpt_store *s, char *path, size_t cap, uint64_t *step, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Commits planned by a deadline (src/ckpt/snapshot.c)
 *
 * On an interruption notice a trainer has until the notice's deadline. baton_ckpt_persist_by
 * commits locally first (the store's fresh snapshot, or the newest committed one when there is
 * none), verifies the folder (baton_ckpt_verify), and only then decides the upload from the
 * measured cost of this run's past uploads: with no deadline, or when the longest of the last
 * uploads fits before deadline - margin (or none was measured yet), it uploads on the calling
 * thread, every request cut at deadline - margin; otherwise, or when that upload is cut or fails,
 * the upload is left to the next machine, which finds the local commit on the volume the fleet
 * carries over (baton_ckpt_store_upload_left). An upload is said done only when its MANIFEST
 * object is written. What the uploader held (an older checkpoint queued or under way) is dropped
 * first: the interruption's checkpoint supersedes it.
 * --------------------------------------------------------------------------------------------- */
enum { BATON_CKPT_UPLOAD_NONE = 0,   /* no remote attached */
       BATON_CKPT_UPLOAD_DONE = 1,   /* uploaded, MANIFEST object last */
       BATON_CKPT_UPLOAD_LEFT = 2 }; /* left to the next machine */

typedef struct baton_ckpt_by {
    uint64_t step;              /* the committed checkpoint's */
    double commit_at;           /* wall time (unix seconds) the local commit was verified */
    double commit_s;            /* seconds from the call to then (a persist in flight included) */
    int upload;                 /* BATON_CKPT_UPLOAD_* */
    double upload_at, upload_s; /* DONE: when it finished and how long it took; LEFT after a try:
                                   how long the try ran (0 when not tried) */
    double upload_est_s;        /* the measured cost it was planned with (-1: none measured) */
    char why[256];              /* LEFT: why */
} baton_ckpt_by;

/* deadline: wall time (unix seconds; 0: none); margin_s: kept free before it. BATON_OK with *out
 * filled once the local commit is verified (an upload left is not an error); an error when the
 * local commit or its verification failed (then nothing is claimed). */
int baton_ckpt_persist_by(baton_ckpt_store *s, double deadline, double margin_s, baton_ckpt_by *out, baton_err *err);
/* The measured costs of this store's commits: the longest of the last (up to) 8 local commits
 * (write, fsync, rename) and of the last 8 uploads, in seconds (-1: none yet), and their counts. */
typedef struct baton_ckpt_costs {
    uint64_t commits, uploads;
    double commit_s, upload_s;
} baton_ckpt_costs;
void baton_ckpt_store_costs(baton_ckpt_store *s, baton_ckpt_costs *c);
/* The next machine's half: when a remote is attached and does not hold a complete checkpoint of
 * step (the one resumed from folder), queue its upload (background) and return 1 (logged: "left
 * by the previous machine"); 0 when there is nothing to do; a remote that cannot be listed is a
 * warning and 0. */
int baton_ckpt_store_upload_left(baton_ckpt_store *s, const char *folder, uint64_t step);

/* ---------------------------------------------------------------------------------------------
 * safetensors (src/ckpt/safetensors.c)
 * --------------------------------------------------------------------------------------------- */
#define BATON_ST_MAX_DIMS 8

/* safetensors' dtypes. Models use F32 and I64 (the nn values); a caller's own tensors (a PyTorch
 * state_dict through the Python module) may be any. */
enum {
    BATON_ST_F32 = BATON_NN_F32, BATON_ST_I64 = BATON_NN_I64, BATON_ST_F64, BATON_ST_F16, BATON_ST_BF16,
    BATON_ST_I32, BATON_ST_I16, BATON_ST_I8, BATON_ST_U8, BATON_ST_BOOL, BATON_ST_U16, BATON_ST_U32,
    BATON_ST_U64, BATON_ST_F8_E4M3, BATON_ST_F8_E5M2, BATON_ST_NDTYPES
};
/* Element size in bytes (0: not a dtype) and safetensors name ("F32", "BF16"; "?"); parse: the
 * BATON_ST_* of a name, -1 when it is none. */
size_t baton_st_dtype_size(int dtype);
int baton_st_dtype_parse(const char *name);

/* A tensor to write: data holds prod(shape) elements of dtype, row-major, little-endian. */
typedef struct baton_st_entry {
    const char *name;
    int dtype;                      /* BATON_ST_* */
    int ndim;                       /* 0..BATON_ST_MAX_DIMS */
    const int64_t *shape;
    const void *data;
} baton_st_entry;

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

void baton_st_header_free(baton_st_header *h);
const char *baton_st_dtype_name(int dtype);

/* Read and validate a whole file: *h is the header, *data (malloc'd) the whole file's bytes;
 * tensor i's bytes are at *data + h->data_start + h->tensors[i].begin. */
int baton_st_read_file(const char *path, baton_st_header *h, uint8_t **data, baton_err *err);

/* Load a model.safetensors into m: every tensor of the model matched by name, dtype and shape, as
 * baton_st_load_tensors (src/ckpt/ckpt_internal.h) does. */
int baton_ckpt_load_model(const char *path, baton_nn_model *m, baton_err *err);


/* ---------------------------------------------------------------- checkpoint interval (interval.c)
 * Optimal interval (same unit as delta and mtbi). Young: sqrt(2·δ·M). Daly: sqrt(2δM)·[1 + (1/3)·
 * sqrt(δ/(2M)) + (1/9)·(δ/(2M))] − δ for δ < 2M, else M. 0 when either is not positive. */
double baton_ckpt_young_interval(double delta, double mtbi);
double baton_ckpt_daly_interval(double delta, double mtbi);
/* Mean time between interruptions (hours) for a monthly interruption frequency (fraction of
 * instances reclaimed per month, e.g. 0.1 for the 5–10 % bucket's upper end): a constant hazard,
 * 730 h per month. */
double baton_ckpt_mtbi_hours(double monthly_fraction);

/* When a loop should checkpoint (interval.c): every `every_steps` steps, every `every_sec` seconds,
 * or (automatic) every τ seconds, Daly's optimum for the mean blocking cost δ of this run's saves
 * so far and the mean time between interruptions mtbi_s, re-estimated after every save (the first
 * save is due at once, to measure δ; τ is kept within [1 s, 1 h]; without a hazard, every_sec).
 * baton train's --ckpt-every-steps/-sec/auto and the Python module's Checkpoints(every=…) are this. */
/* The default interval: a background checkpoint at the first step that ends 60 s or more after
 * the previous one (baton train without --ckpt-every, Checkpoints(every=None) outside a fleet; and
 * auto's interval while there is no hazard). */
#define BATON_CKPT_EVERY_SEC_DEFAULT 60.0
typedef struct baton_ckpt_policy {
    uint64_t every_steps;       /* 0: none by count */
    double every_sec;           /* 0: none by time */
    int automatic;
    double mtbi_s;              /* 0: unknown */
    /* state */
    double saved_t;             /* when the last save was taken (baton_now) */
    double delta_sum;           /* automatic: blocking seconds of the saves so far */
    uint64_t nsaves;
    double tau;                 /* automatic: the interval in force (0 before the first save) */
} baton_ckpt_policy;
/* Parse an interval: "auto", "N" or "Nsteps" (steps), "Ns", "Nm", "Nh" (seconds), "off"; with
 * mtbi_s (0 unknown). BATON_ERR_USAGE naming the text otherwise. */
int baton_ckpt_policy_parse(baton_ckpt_policy *p, const char *spec, double mtbi_s, baton_err *err);
void baton_ckpt_policy_init(baton_ckpt_policy *p, uint64_t every_steps, double every_sec, int automatic,
                            double mtbi_s);
/* Whether a save is due after global step `step` at time now (baton_now). */
int baton_ckpt_policy_due(const baton_ckpt_policy *p, uint64_t step, double now);
/* A save was taken at now and blocked the loop for blocked_s seconds (automatic: δ). */
void baton_ckpt_policy_saved(baton_ckpt_policy *p, double now, double blocked_s);
/* The environment of a fleet worker: $BATON_CKPT_EVERY (an interval as above) and
 * $BATON_SPOT_MTBI_S; 0 and p unchanged when neither is set, 1 when set from them, < 0 on a bad
 * value (named). */
int baton_ckpt_policy_from_env(baton_ckpt_policy *p, baton_err *err);
/* The margin a commit keeps free before a notice's deadline (baton_ckpt_persist_by) when the caller
 * gives none: $BATON_DEADLINE_MARGIN_S, seconds in 0..3600, else 5; BATON_ERR_USAGE naming a value
 * that is not such seconds. */
int baton_ckpt_margin_from_env(double *margin_s, baton_err *err);

/* ---------------------------------------------------------------- checkpoint cadence (cadence.c)
 * The one object that paces a training loop's checkpoints, for `baton train`'s session
 * (train_session.h) and the Python module's Checkpoints alike: the policy above, the progress
 * file (the global step for a fleet's supervisor, $BATON_PROGRESS_FILE), the collection of a
 * finished background save, the bound on uncommitted work and the retry after a failed save.
 * The caller saves; the cadence says when. Per step: due(step, now); after a save handed to the
 * store: saved(now, blocked_s). Every time is baton_now()'s clock (a test may pass its own). */
typedef struct baton_ckpt_cadence baton_ckpt_cadence;
enum { BATON_CKPT_NOT_DUE = 0, BATON_CKPT_DUE = 1, BATON_CKPT_RETRY = 2 };
/* policy: copied (its clock starts at its saved_t, i.e. when it was initialised, until begin);
 * progress_file: NULL none, else opened now (a file that cannot be opened is a warning, not an
 * error); bound_steps: 0 none, else due() waits for a background persist before the progress
 * file would run more than bound_steps steps ahead of the newest committed checkpoint. */
int baton_ckpt_cadence_open(const baton_ckpt_policy *policy, const char *progress_file, uint64_t bound_steps,
                            baton_ckpt_cadence **out, baton_err *err);
/* The run starts at global step `step` at time now, the newest committed checkpoint being
 * `committed` (a resume's step, else 0): the clock restarts, the progress file says step. */
void baton_ckpt_cadence_begin(baton_ckpt_cadence *c, uint64_t step, uint64_t committed, double now);
/* After global step `step`: collects a finished background save of store (NULL: none; waiting
 * for it when the bound says), writes the progress file, then BATON_CKPT_RETRY when a background
 * save failed (logged; save again now), BATON_CKPT_DUE when the policy says, else
 * BATON_CKPT_NOT_DUE. */
int baton_ckpt_cadence_due(baton_ckpt_cadence *c, baton_ckpt_store *store, uint64_t step, double now);
/* A save was handed to the store at now (its end), having held the loop blocked_s seconds: the
 * clock restarts (whatever asked for the save), automatic measures δ. */
void baton_ckpt_cadence_saved(baton_ckpt_cadence *c, double now, double blocked_s);
/* Checkpoint `step` is committed (a synchronous save, or one the caller collected itself). */
void baton_ckpt_cadence_committed(baton_ckpt_cadence *c, uint64_t step);
const baton_ckpt_policy *baton_ckpt_cadence_policy(const baton_ckpt_cadence *c);
/* Closes the progress file (left as it is). NULL is fine. */
void baton_ckpt_cadence_close(baton_ckpt_cadence *c);

#endif
