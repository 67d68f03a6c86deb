/* io.h — where the data lives and how it reaches the trainer.
 *
 *  stores    a dataset folder named by a URI: a plain path or file:// (local or a mounted file
 *            system), http(s)://host/prefix/, s3://bucket/prefix/ (SigV4 through libcurl, path-style
 *            addressing for non-AWS endpoints). Endpoint from --s3-endpoint or AWS_ENDPOINT_URL;
 *            credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN;
 *            region from AWS_REGION (default us-east-1). Secrets never appear in any message.
 *  fetch     an I/O thread that streams byte ranges of objects through several concurrent ranged
 *            requests (libcurl multi), hands the bytes over strictly in order, bounds the bytes it
 *            holds, and after a dropped connection, a short body or a 5xx re-requests exactly the
 *            bytes not yet handed over (with If-Match on the first response's ETag, so an object
 *            that changed underneath is an error, never a silent mix).
 *  order     each epoch's record order is a pure function of (seed, epoch): see "Orders" below.
 *  loader    records of an epoch in that order, in one of four modes (file, pipe, mount, cache),
 *            resumable exactly from a cursor {seed, epoch, position}, sharded over (rank, world);
 *            every mode checks each shard against dataset.json as its bytes pass (the size the
 *            store tells; the CRC32C of each shard read whole in an epoch), BATON_ERR_CORRUPT
 *            naming the shard.
 *
 * What it offers, in the order a caller uses it:
 *   1. Stores (src/io/store.c, store_local.c, store_remote.c, store_list.c):
 *      baton_store_opts_default, baton_store_open of a URI, then get, put, list or delete
 *      objects; baton_store_close.
 *   2. The loader (src/io/loader.c, stream.c): baton_loader_opts_default, baton_loader_open (the
 *      manifest; file mode downloads here), optionally baton_loader_set_end, baton_loader_seek to
 *      a cursor, then baton_loader_next until BATON_END for each epoch (baton_loader_cursor is
 *      what a checkpoint saves); baton_loader_close. img's decode pipeline sits on it.
 *   3. Moving datasets (src/io/push.c, channel.c): baton_dataset_push uploads a dataset folder;
 *      baton_channel_check, then baton_channel_run writes a loader's epochs into named pipes.
 * The fetch thread itself (baton_fetch_*, src/io/fetch.c: only its options are public) and the
 * shard permutation of the streamed order are private to src/io (src/io/io_internal.h).
 *
 * Layering: io depends on rec and util (and libcurl). img's decode pipeline sits on the loader. */
#ifndef BATON_IO_H
#define BATON_IO_H

#include "baton/rec.h"

/* ---------------------------------------------------------------- stores */
typedef enum baton_store_kind {
    BATON_STORE_LOCAL = 0,
    BATON_STORE_HTTP = 1,
    BATON_STORE_S3 = 2,
} baton_store_kind;

typedef struct baton_store_opts {
    const char *s3_endpoint;   /* overrides AWS_ENDPOINT_URL; NULL = environment / AWS default */
    const char *region;        /* overrides AWS_REGION; default us-east-1 */
    double connect_timeout_s;  /* default 10 */
    double stall_timeout_s;    /* a transfer slower than 1 KB/s for this long fails; default 30 */
    int retries;               /* per request, after the first try; default 5 (AWS_MAX_ATTEMPTS - 1
                                  when that is 1..50, as the AWS SDKs read it), backoff 50 ms × 2^k,
                                  at most 5 s a wait */
} baton_store_opts;

typedef struct baton_store baton_store;

void baton_store_opts_default(baton_store_opts *o);
int baton_store_open(const char *uri, const baton_store_opts *o, baton_store **out, baton_err *err);
void baton_store_close(baton_store *s);
baton_store_kind baton_store_kind_of(const baton_store *s);
/* The URI for messages ("s3://bucket/prefix/"); never contains credentials. */
const char *baton_store_uri(const baton_store *s);
/* LOCAL: the folder path; otherwise NULL. */
const char *baton_store_local_dir(const baton_store *s);
/* Whole object (bounded by max bytes). Errors: BATON_ERR_NOTFOUND (404 / missing file),
 * BATON_ERR_NET (server down, 5xx after retries, 403 with the key id named). */
int baton_store_get(baton_store *s, const char *name, size_t max, baton_buf *out, baton_err *err);
/* Bytes [off, off+len) of an object, appended to out. Short objects are an error. */
int baton_store_get_range(baton_store *s, const char *name, uint64_t off, uint64_t len,
                          baton_buf *out, baton_err *err);
int baton_store_size(baton_store *s, const char *name, uint64_t *size, baton_err *err);
/* Upload (S3 PUT / local crash-safe write). HTTP stores are read-only. */
int baton_store_put(baton_store *s, const char *name, const void *p, size_t n, baton_err *err);
int baton_store_put_file(baton_store *s, const char *name, const char *path, baton_err *err);
/* S3 only: create the store's bucket (PUT Bucket); a bucket that already exists and is owned by
 * these credentials is fine. A PUT into a missing bucket is BATON_ERR_NOTFOUND (NoSuchBucket). */
int baton_store_create_bucket(baton_store *s, baton_err *err);
/* Objects whose names start with prefix ("" = all), with their sizes, sorted by name
 * (src/io/store_list.c). S3: ListObjectsV2, every page; local: the folder tree (regular files).
 * HTTP stores cannot be listed (BATON_ERR_ARG). More than max objects (0: 1,000,000) is an error.
 * Free with baton_store_list_free. */
typedef struct baton_store_obj {
    char *name;             /* relative to the store, as baton_store_get takes it */
    uint64_t size;
} baton_store_obj;
int baton_store_list(baton_store *s, const char *prefix, size_t max, baton_store_obj **out, size_t *n,
                     baton_err *err);
void baton_store_list_free(baton_store_obj *v, size_t n);
/* Delete an object (S3 DELETE / unlink); one that does not exist is success. */
int baton_store_delete(baton_store *s, const char *name, baton_err *err);
/* Remote stores: every request (get, put, list, delete; not the fetch thread's streams) ends by
 * wall time t (unix seconds; 0: no limit again). A request under way at t is cut, none starts
 * after it (BATON_ERR_NET, "cut at the deadline" / "stopped at the deadline"). Any thread may
 * call it, while other threads use the store. Local stores ignore it. */
void baton_store_set_deadline(baton_store *s, double t);

/* ---------------------------------------------------------------- fetch: ordered range streaming */
typedef struct baton_fetch_opts {
    size_t chunk_bytes;     /* bytes per ranged request; default 4 MiB */
    int inflight;           /* concurrent requests; default 4 */
    size_t max_buffered;    /* bytes held (received, not yet released); default 64 MiB */
} baton_fetch_opts;
void baton_fetch_opts_default(baton_fetch_opts *o);

/* ---------------------------------------------------------------- order and cursor */
typedef enum baton_io_mode {
    BATON_MODE_FILE = 0,    /* a verified local copy, filled while epoch 0 reads it, then read locally */
    BATON_MODE_PIPE = 1,    /* stream shards, no local copy, bounded memory */
    BATON_MODE_MOUNT = 2,   /* read the (mounted) path directly */
    BATON_MODE_CACHE = 3,   /* stream epoch 0 while writing a verified local copy; then read it */
} baton_io_mode;
const char *baton_io_mode_name(baton_io_mode m);
int baton_io_mode_parse(const char *s, baton_io_mode *m);

/* Where a reader is: the next record it hands out is record `position` (0-based) of epoch
 * `epoch`'s order for this worker. Save it with a checkpoint; restore it to continue exactly. */
typedef struct baton_cursor {
    uint64_t seed;
    uint64_t epoch;
    uint64_t position;
} baton_cursor;

/* Orders (pure functions of seed, epoch, rank, world and the manifest):
 *  - indexed (file, mount, cache after epoch 0): a full permutation of all records of the dataset
 *    from RNG(seed, epoch); worker `rank` takes positions p ≡ rank (mod world).
 *  - streamed (pipe, cache's epoch 0): the shards in a per-epoch permutation, read as one stream
 *    cut into blocks of `block` consecutive records; each block is permuted from
 *    RNG(seed, epoch, block#) (a bounded shuffle buffer whose memory is one block); worker `rank`
 *    takes blocks b ≡ rank (mod world). */

/* ---------------------------------------------------------------- loader */
typedef struct baton_loader_opts {
    const char *uri;
    baton_io_mode mode;
    baton_store_opts store;
    baton_fetch_opts fetch;
    const char *local_dir;      /* file and cache modes: where local copies go (required) */
    uint64_t seed;
    uint32_t rank, world;       /* default 0, 1 */
    uint32_t block;             /* streamed order: records per shuffle block; 0 = from the
                                   manifest, about 32 MiB of records, between 64 and 16384 */
    int download_threads;       /* file mode: parallel downloads; default 4 */
    int download_first;         /* file mode: download and check every shard before the open
                                   returns (SageMaker's File mode). Default 0: the copy fills while
                                   epoch 0 reads it, each record's pieces asked for first (fill.c) */
    /* File and cache modes: local_dir shared by share_size loaders of one run (the ranks of one
     * machine), this one number share_rank (0 .. share_size-1). They split the downloads: of the
     * shards needed from the cursor to the end, in order of first use, shard s is fetched by a
     * background thread of loader s mod share_size, each whole and
     * verified before it is renamed into place; a loader reads a shard once it is in place and its
     * own CRC32C check passed, and waits for one that is not (failing when nothing of it arrived
     * for share_wait_s). The order is unchanged: cache mode's epoch 0 is still the streamed order,
     * read from the local copy. Every loader of the group must be given the same options, seeks
     * and end. share_size 0 or 1: not shared (as before). */
    uint32_t share_rank, share_size;
    double share_wait_s;        /* default 300 */
    int no_shuffle;             /* every order is the identity: shards in the manifest's order, records
                                   in file order (an evaluation pass); the cursor works the same */
} baton_loader_opts;

typedef struct baton_record {
    const uint8_t *data;        /* the record payload (image record); valid until the next call */
    size_t len;
    uint64_t position;          /* position in this worker's epoch order */
    uint32_t shard;             /* index into the manifest's shards */
    uint64_t offset;            /* byte offset in that shard */
} baton_record;

typedef struct baton_loader_stats {
    double open_s;              /* baton_loader_open: manifest, indexes (download_first: the download) */
    uint64_t bytes_read;        /* record bytes taken from the store or the local copy */
    uint64_t bytes_fetched;     /* what the store sent: dataset.json, indexes, downloads, streamed
                                   ranges (read-ahead that was never used included); mount mode:
                                   what was read from the mounted folder */
    uint64_t open_fetched;      /* of these, during baton_loader_open (download_first: the download) */
    uint64_t downloads, redownloads, fetch_retries;
    uint64_t record_requests;   /* file mode while its copy fills: requests for the pieces of records
                                   about to be read (the rest came with the download) */
    int cache_fallback;         /* cache mode fell back to pipe (disk full) */
} baton_loader_stats;

typedef struct baton_loader baton_loader;
void baton_loader_opts_default(baton_loader_opts *o);
int baton_loader_open(const baton_loader_opts *o, baton_loader **out, baton_err *err);
/* The input mode a URI gets when none is asked for: mount for a path or file://, pipe otherwise
 * (never file or cache: a front end needs a local folder only when its user asks for one). */
baton_io_mode baton_io_mode_for_uri(const char *uri);
/* A dataset opened as `baton train` and the Python module open it: without mode_set,
 * baton_io_mode_for_uri's mode (o->mode ignored); file and cache modes create
 * o->local_dir (required), other modes ignore it and the share fields; an error names the URI; a
 * dataset whose epoch has no record is refused (BATON_ERR_FORMAT). In file mode, processes that
 * open one local_dir outside a share group take turns downloading (each shard fetched once). */
int baton_loader_open_dataset(const baton_loader_opts *o, int mode_set, baton_loader **out, baton_err *err);
/* The mode it was opened in (the one asked for, or the URI's default). */
baton_io_mode baton_loader_mode(const baton_loader *l);
const baton_manifest *baton_loader_manifest(const baton_loader *l);
/* Records this worker gets in one epoch. */
uint64_t baton_loader_epoch_size(const baton_loader *l);
/* Where the caller stops reading: the loader fetches nothing at or past `end` (a cursor as seek
 * takes; {seed, E, 0} = after E epochs), so a run of N epochs or S steps pulls each byte it uses
 * once and no more. Without it the loader reads on forever and streams the next epoch's ranges
 * ahead of time. A block only partly needed (the end inside it, or a resume point) fetches only
 * the ranges holding the needed records when that halves its bytes. next() at the end returns
 * BATON_ERR_ARG (after the END of an epoch that ends there). Set it before the first seek or
 * next; set later, the loader seeks again to its cursor (dropping what it fetched ahead). */
int baton_loader_set_end(baton_loader *l, const baton_cursor *end, baton_err *err);
/* Position the loader at a cursor (seed must match the loader's). Starting fresh = {seed, 0, 0}. */
int baton_loader_seek(baton_loader *l, const baton_cursor *c, baton_err *err);
/* Next record of the current epoch: OK, END at the end of the epoch (the cursor then points at
 * {epoch+1, 0}; the next call starts that epoch), or an error. */
int baton_loader_next(baton_loader *l, baton_record *r, baton_err *err);
/* The same as next, for a record the caller does not want (another rank's): in an indexed order
 * nothing is read (out holds only its position; data NULL); a streamed block is read whole
 * anyway, so there it is next. */
int baton_loader_skip(baton_loader *l, baton_record *out, baton_err *err);
baton_cursor baton_loader_cursor(const baton_loader *l);
/* Launch first: with hold 1 a streamed loader (pipe mode, cache mode's first epoch) fetches the
 * block it is reading and nothing ahead of it, so a launch's first batch is decoded without the
 * read-ahead's transfers competing for the cores; when the reader needs the next block it is
 * fetched all the same (never a wait). File mode while its copy fills asks for fewer records ahead
 * and starts its download only once released. With hold 0 the read-ahead resumes at once (plans what was
 * held back). Records and their order do not change. Call from the thread that reads. */
int baton_loader_hold_ahead(baton_loader *l, int hold, baton_err *err);
void baton_loader_get_stats(const baton_loader *l, baton_loader_stats *st);
/* Bytes the store sent for the records of one epoch (streamed ranges as they are used, cache
 * mode's download before its first local epoch, mount mode's reads, file mode's copy in the epoch
 * it arrives in — with download_first, in open_fetched). Not safe while another thread is in
 * next(). */
uint64_t baton_loader_epoch_fetched(const baton_loader *l, uint64_t epoch);
void baton_loader_close(baton_loader *l);

/* ---------------------------------------------------------------- upload */
/* Upload a dataset folder to a store: every shard and index first, dataset.json last, so readers
 * never see a manifest whose shards are not all there. Files are checked against dataset.json
 * (size and CRC32C) before they are sent. */
int baton_dataset_push(const char *dir, baton_store *dst, int progress, baton_err *err);

/* ---------------------------------------------------------------- FIFO channels */
/* SageMaker Pipe-mode layout (REFERENCE.md §3): epoch e of the dataset is written, one RecordIO
 * record per sample, into the named pipe <fifo_dir>/<channel>_<e>, which is created just before
 * the epoch and removed after it; a reader opens it, reads to end of file, then waits for the next
 * epoch's pipe. Epochs run from the loader's cursor up to `epochs` (exclusive). A reader that goes
 * away mid-epoch ends that epoch cleanly (counted in stats); the next epoch's pipe follows.
 * fifo_dir must be an existing folder (the reader's); a pipe left at a pipe's path is replaced, any
 * other file there is an error (never removed). */
typedef struct baton_channel_opts {
    const char *fifo_dir;
    const char *channel;
    uint64_t epochs;
    double open_timeout_s;   /* how long to wait for a reader per epoch; 0 = forever */
    int progress;
    /* called with a pipe's path as it is created and with NULL once it is removed (a program that
     * handles SIGINT/SIGTERM removes the current one on its way out); NULL: not called */
    void (*on_pipe)(const char *path, void *ud);
    void *ud;
} baton_channel_opts;

typedef struct baton_channel_stats {
    uint64_t epochs, records, bytes, readers_gone;
} baton_channel_stats;

/* The options alone, before anything is opened: a channel name that is one path component
 * ([A-Za-z0-9._-], not starting with '.') and epochs >= 1 (BATON_ERR_USAGE otherwise), an existing
 * fifo_dir. baton_channel_run checks them too. */
int baton_channel_check(const baton_channel_opts *o, baton_err *err);
int baton_channel_run(baton_loader *l, const baton_channel_opts *o, baton_channel_stats *st,
                      baton_err *err);

#endif
