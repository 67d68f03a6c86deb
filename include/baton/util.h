/* util.h — small shared pieces every component uses: status codes and error values, a growable
 * byte buffer, the system-call table (so tests can fail any call), file helpers for crash-safe
 * writes, a deterministic RNG, logging and a terminal progress line.
 *
 * Contract: nothing here exits or asserts on outside input. Functions that can fail return a
 * baton status (BATON_OK = 0, negative = error) and fill a baton_err whose message names the file,
 * offset, field or line. The library never prints secrets and never calls exit(). */
#ifndef BATON_UTIL_H
#define BATON_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The version these headers describe. BATON_ABI_VERSION changes whenever a public structure or
 * signature changes incompatibly; it is the number in libbaton.so's soname (libbaton.so.1), so the
 * dynamic loader refuses a library of another ABI, and a program checks the library it got at run
 * time with BATON_VERSION_CHECK (src/util/version.c). */
#define BATON_VERSION "0.7.0"
#define BATON_VERSION_MAJOR 0
#define BATON_VERSION_MINOR 7
#define BATON_VERSION_PATCH 0
#define BATON_ABI_VERSION 6

/* Status codes. Positive values are non-error outcomes of iterators. */
enum baton_status {
    BATON_OK = 0,
    BATON_END = 1,             /* clean end of a stream: no more records, nothing left over */
    BATON_NEED_MORE = 2,       /* push parsers: feed more bytes (or finish) and call again */
    BATON_STOPPED = 3,         /* a run stopped early on an interruption notice, its checkpoint committed */
    BATON_ERR_IO = -1,         /* a system call failed (errno text in the message) */
    BATON_ERR_TRUNCATED = -2,  /* input ended in the middle of a record / structure */
    BATON_ERR_CORRUPT = -3,    /* checksum mismatch, bad magic where one must be, flipped bits */
    BATON_ERR_FORMAT = -4,     /* well-formed bytes that are not what was expected / unsupported */
    BATON_ERR_NOMEM = -5,
    BATON_ERR_ARG = -6,        /* bad argument from the caller or the command line */
    BATON_ERR_NOTFOUND = -7,
    BATON_ERR_NET = -8,        /* network / remote server error */
    BATON_ERR_NOSPACE = -9,    /* disk full (ENOSPC/EDQUOT) */
    BATON_ERR_BUSY = -10,      /* held by another process (a lock) */
    BATON_ERR_USAGE = -11,     /* an option value outside what the call accepts (the message names
                                  the option and its range); the command line exits 2 for it */
    BATON_ERR_DENIED = -12,    /* a missing or wrong credential (a token, a key) */
};

typedef struct baton_err {
    int code;
    char msg[1024];
} baton_err;

/* Set err (if non-NULL) and return code. printf-style message. */
int baton_err_set(baton_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefix an existing message: "prefix: old message" (unchanged when it already starts with
 * "prefix:"). Returns err->code. */
int baton_err_prefix(baton_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failed system call as an error value: "path: what: strerror(e)", with the status its errno
 * value means (ENOSPC/EDQUOT: BATON_ERR_NOSPACE; ENOENT/ENOTDIR: BATON_ERR_NOTFOUND; else
 * BATON_ERR_IO). Pass errno as e (read it before anything else can change it). Returns the status. */
int baton_err_errno(baton_err *err, int e, const char *what, const char *path);
/* Name of a status code, e.g. "truncated". */
const char *baton_status_name(int code);

/* ---- the library's version (src/util/version.c) ---- */
const char *baton_version(void);      /* the library's BATON_VERSION */
int baton_abi_version(void);          /* the library's BATON_ABI_VERSION */
/* BATON_OK when the library was built with ABI `abi` and a version at least major.minor (the
 * caller's headers); else BATON_ERR_FORMAT naming both versions. */
int baton_version_check(int abi, int major, int minor, baton_err *err);
#define BATON_VERSION_CHECK(err) baton_version_check(BATON_ABI_VERSION, BATON_VERSION_MAJOR, BATON_VERSION_MINOR, (err))

/* ---- growable byte buffer ---- */
typedef struct baton_buf {
    uint8_t *data;
    size_t len, cap;
} baton_buf;

int baton_buf_reserve(baton_buf *b, size_t extra);             /* ensure cap >= len + extra */
int baton_buf_append(baton_buf *b, const void *p, size_t n);
/* Append printf's output, however long (BATON_ERR_NOMEM when it cannot grow: b keeps what it had);
 * text and HTML pages are printed through it. */
int baton_buf_printf(baton_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s with the five XML/HTML specials escaped (& < > " '): text or an attribute's value. */
int baton_buf_esc_xml(baton_buf *b, const char *s);
void baton_buf_free(baton_buf *b);

/* ---- system calls behind a table (tests replace entries to inject failures) ---- */
struct stat;
typedef struct baton_sys_table {
    int (*open)(const char *path, int flags, mode_t mode);
    ssize_t (*read)(int fd, void *buf, size_t n);
    ssize_t (*write)(int fd, const void *buf, size_t n);
    ssize_t (*pread)(int fd, void *buf, size_t n, off_t off);
    ssize_t (*pwrite)(int fd, const void *buf, size_t n, off_t off);
    int (*fsync)(int fd);
    int (*close)(int fd);
    int (*rename)(const char *from, const char *to);
    int (*unlink)(const char *path);
    int (*mkdir)(const char *path, mode_t mode);
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    int (*munmap)(void *addr, size_t len);
    int (*fstat)(int fd, struct stat *st);
} baton_sys_table;
extern baton_sys_table baton_sys;   /* the live table */
void baton_sys_reset(void);          /* restore the real system calls */

/* ---- files ---- */
/* Open a file baton reads from outside, read-only, never blocking: a FIFO, a device, a socket or
 * a folder (also through a symbolic link) is refused without waiting for a writer. Returns the
 * descriptor; -1 when open fails (errno set, err untouched: the caller words it); -2 when the path
 * is not a regular file (err says what it is). */
int baton_open_regular(const char *path, baton_err *err);
/* The same check without keeping the file open (for a path handed to another program or library):
 * BATON_OK, or an error naming what the path is or why it cannot be opened. */
int baton_check_regular(const char *path, baton_err *err);
/* Read a whole file into a malloc'd buffer (NUL-terminated for convenience; *len excludes it).
 * max_len bounds what we accept from outside. */
int baton_file_read_all(const char *path, size_t max_len, uint8_t **out, size_t *len, baton_err *err);
/* Write all bytes, retrying short writes and EINTR. Maps ENOSPC/EDQUOT to BATON_ERR_NOSPACE. */
int baton_write_all(int fd, const void *p, size_t n, const char *name, baton_err *err);
/* Crash-safe whole-file write: PATH.tmp.PID, write, fsync, rename, fsync parent dir. A path that
 * names a character device or a FIFO with a reader (/dev/null, /dev/stdout) is written straight
 * into, never replaced; a FIFO with no reader, a directory, a socket or a block device is an
 * error naming what it is. */
int baton_file_write_atomic(const char *path, const void *p, size_t n, baton_err *err);
/* The same without the two fsyncs: a reader never sees a half-written file while this process
 * runs, but after a crash the file may be the old one, the new one or torn. Only for copies every
 * reader checks against a size and CRC32C listed elsewhere (a local copy's shard index). */
int baton_file_write_replace(const char *path, const void *p, size_t n, baton_err *err);
int baton_fsync_dir(const char *dir, baton_err *err);
/* Finish a file written under the temporary name tmp (open as fd): fsync, close, rename to path,
 * fsync the parent. rc is the status of the writing so far: on any failure, then or here, the
 * temporary file is removed and the first error returned. */
int baton_file_publish(int fd, const char *tmp, const char *path, int rc, baton_err *err);
int baton_mkdir_p(const char *path, baton_err *err);
/* Remove path and, if it is a folder, everything below it (symbolic links are removed, never
 * followed). A missing path is success. Returns 0, or -1 with errno from the first failure. */
int baton_remove_tree(const char *path);
/* Parent directory of path into out (at most cap bytes). "." when none. */
void baton_path_dirname(const char *path, char *out, size_t cap);
/* Join dir and name into out; returns BATON_ERR_ARG when it does not fit. */
int baton_path_join(char *out, size_t cap, const char *dir, const char *name, baton_err *err);
int baton_is_dir(const char *path);

/* The first name that repeats (src/util/dups.c): the smallest j with names[j] equal to an earlier
 * names[i], *first = that smallest i; n when all differ. O(n log n). */
size_t baton_first_duplicate(const char *const *names, size_t n, size_t *first);

/* ---- exclusive locks on a folder (src/util/lock.c) ---- */
/* Take an exclusive advisory lock (flock) on the file PATH, creating it, and write this process's
 * pid into it, so that a second taker can name the holder. The lock lasts until baton_lock_release
 * or the process ends (a killed holder releases it at once). what names the locked thing in the
 * message ("checkpoint folder runs/a"). Held by someone else: BATON_ERR_BUSY, "WHAT is in use by
 * process PID (PATH is locked)"; a folder that cannot hold the file: the errno's status. */
int baton_lock_acquire(const char *path, const char *what, int *fd, baton_err *err);
void baton_lock_release(int fd);   /* fd < 0: nothing */

/* ---- RNG: xoshiro256** seeded by splitmix64; state is 4 words so it can be checkpointed ---- */
typedef struct baton_rng {
    uint64_t s[4];
} baton_rng;
void baton_rng_seed(baton_rng *r, uint64_t seed);
/* Seed from several words (e.g. seed, epoch, stream id): independent streams per tuple. */
void baton_rng_seed3(baton_rng *r, uint64_t a, uint64_t b, uint64_t c);
uint64_t baton_rng_next(baton_rng *r);
uint64_t baton_rng_below(baton_rng *r, uint64_t n);  /* uniform in [0, n), unbiased; n > 0 */
float baton_rng_float(baton_rng *r);                 /* uniform in [0, 1) */
/* Fisher–Yates permutation of 0..n-1 into perm. */
void baton_rng_permutation(baton_rng *r, uint64_t *perm, size_t n);

/* ---- time ---- */
double baton_now(void);           /* monotonic seconds */

/* ---- logging: to stderr, "baton: " prefix; level from BATON_LOG (error|warn|info|debug) ---- */
enum { BATON_LOG_ERROR = 0, BATON_LOG_WARN = 1, BATON_LOG_INFO = 2, BATON_LOG_DEBUG = 3 };
void baton_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void baton_log_set_level(int level);

/* ---- the event log `baton verify-resume` compares runs by (src/util/verify_log.c) ---- */
/* With BATON_VERIFY_LOG=FILE in the environment, append one line (a JSON object) to FILE in one
 * write; without it, nothing. {"ev":"resume","step":S} when a trainer starts (S = 0 fresh);
 * {"ev":"batch","epoch":E,"first":P,"n":N,"digest":"16 hex digits"} when the decode pipeline hands
 * a batch over; {"ev":"ckpt","step":S,"model":HEX,"optim":HEX} when a checkpoint commits;
 * {"ev":"loss","step":S,"loss":L} per step of baton train and race train (a non-finite L as the
 * string "nan", "inf" or "-inf"). */
void baton_verify_log_resume(uint64_t step);
void baton_verify_log_batch(uint64_t epoch, uint64_t first, uint32_t n, uint64_t digest);
void baton_verify_log_ckpt(uint64_t step, const char *model_sha256, const char *optim_sha256);
void baton_verify_log_loss(uint64_t step, double loss);
int baton_verify_log_on(void);    /* 1 when the log is on (to skip work that only feeds it) */

/* ---- progress line: redrawn in place on a terminal (stderr); when stderr is not a terminal (a
 * log file, a pipe, a fleet worker's output), an optional plain line every few seconds ---- */
typedef struct baton_progress {
    const char *label;
    uint64_t total, done;
    double start, last_draw;
    int tty;
    int drawn;
    double every, last_plain;   /* plain lines: every this many seconds (0: none) */
} baton_progress;
void baton_progress_start(baton_progress *p, const char *label, uint64_t total);
/* When stderr is not a terminal: print "LABEL 37.5% 300/800 12.0s eta 20s" as its own line every
 * every_s seconds of updates (none when every_s <= 0). On a terminal this does nothing (the redrawn
 * line shows it). May be called on a progress that was not started (then it starts it, silently). */
void baton_progress_plain_every(baton_progress *p, const char *label, uint64_t total, double every_s);
void baton_progress_update(baton_progress *p, uint64_t done);   /* redraws at most 10×/s */
void baton_progress_finish(baton_progress *p);

/* ---- a listening socket (src/util/net.c) ---- */
/* A listening TCP socket on "HOST:PORT" or "[V6]:PORT" (port 0: a free one; src/util/net.c): -1 and err
 * when the address is malformed, not loopback and allow_remote is 0, or cannot be bound. url gets
 * "http://HOST:PORT" as bound, *port the port, *v6 whether it is IPv6. */
int baton_net_listen(const char *spec, int allow_remote, char *url, size_t ucap, int *port, int *v6, baton_err *err);

/* JSON (util_json.h), large regions from the kernel (util_mem.h) and SVG charts (util_svg.h) are part
 * of this header too. */
#include "baton/util_json.h"
#include "baton/util_mem.h"
#include "baton/util_svg.h"

#endif
