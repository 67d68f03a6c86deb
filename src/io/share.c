/* share.c — one local copy of a dataset for the ranks of one machine (file and cache modes with
 * share_size > 1; see baton_loader_opts in io.h).
 *
 * Owns: the list of shards needed from the cursor to the end, in order of first use; the
 * background thread that downloads this loader's part of it (the shards it owns); waiting for a shard that another loader of the group downloads; the downloader's
 * counters.
 *
 * Contract:
 *   1. Shard s is fetched by loader s mod share_size of the group only (io_share_owner), in the
 *      order of first use of the list every loader computes alike (the same options, cursor and
 *      end); so the parts are disjoint, and each loader's part is fetched as soon as it can be.
 *   2. A shard is read only after its file is in place (renamed there whole, after the writer's
 *      size and CRC32C check) and this process's own size and CRC32C check passed; a file in place
 *      that fails the check (a copy torn by an earlier crash, say) is not read, and waited on until
 *      it is replaced.
 *   3. Waiting is bounded: when neither the shard's file nor its ".part" changed for share_wait_s,
 *      the read fails naming the shard and the loader that was to fetch it. A downloader's failure
 *      is this loader's next record's error.
 *   4. The downloader only calls thread-safe functions (the store, files); the loader's thread
 *      alone touches the loader. Closing cancels it between two pieces and joins it. */
#include "loader_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct seen {   /* a file's identity, to notice when it changes */
    long long ino, size, mtime_ns;
} seen;

struct io_share {
    uint32_t *mine;              /* this loader's part of the shards needed, in order of first use */
    size_t nmine;
    seen *rejected;              /* per shard: the copy in place that failed this process's check */
    uint8_t *assigned;           /* per shard: in the running downloader's part */
    pthread_t thread;
    int running;                 /* thread started and not joined */
    int cancel, done, failed;    /* atomics */
    pthread_mutex_t mu;          /* guards st and err */
    baton_loader_stats st;       /* the downloader's counters */
    uint64_t counted;            /* of st.bytes_fetched, what is already in the loader's epochs */
    baton_err err;
    baton_loader *l;             /* read-only for the thread: store, manifest, local_dir, fetch */
};

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void *downloader(void *arg)
{
    io_share *sh = arg;
    baton_loader *l = sh->l;
    baton_loader_stats st;
    memset(&st, 0, sizeof st);
    baton_err e = {0};
    int rc = io_download_some(l->store, &l->m, l->local_dir, NULL, sh->mine, sh->nmine, &sh->cancel, &l->sfetch,
                              &st, &e);
    pthread_mutex_lock(&sh->mu);
    sh->st.bytes_fetched += st.bytes_fetched;
    sh->st.bytes_read += st.bytes_read;
    sh->st.downloads += st.downloads;
    sh->st.redownloads += st.redownloads;
    sh->st.fetch_retries += st.fetch_retries;
    if (rc && !__atomic_load_n(&sh->cancel, __ATOMIC_ACQUIRE)) {
        sh->err = e;
        baton_err_prefix(&sh->err, "downloading this machine's shared copy of the dataset into %s (rank %u of %u here)",
                         l->local_dir, l->o.share_rank, l->o.share_size);
        if (e.code == BATON_ERR_NOSPACE)
            snprintf(sh->err.msg + strlen(sh->err.msg), sizeof sh->err.msg - strlen(sh->err.msg),
                     " — the ranks of one machine keep one whole copy there: free space, or use --mode pipe");
        __atomic_store_n(&sh->failed, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sh->mu);
    __atomic_store_n(&sh->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void stop(io_share *sh)
{
    if (!sh->running) return;
    __atomic_store_n(&sh->cancel, 1, __ATOMIC_RELEASE);
    pthread_join(sh->thread, NULL);
    sh->running = 0;
    __atomic_store_n(&sh->cancel, 0, __ATOMIC_RELEASE);
}

int io_share_open(baton_loader *l, baton_err *err)
{
    io_share *sh = calloc(1, sizeof *sh);
    size_t n = l->m.nshards ? l->m.nshards : 1;
    if (sh) {
        sh->mine = malloc(n * sizeof *sh->mine);
        sh->rejected = calloc(n, sizeof *sh->rejected);
        sh->assigned = calloc(n, 1);
    }
    if (!sh || !sh->mine || !sh->rejected || !sh->assigned) {
        if (sh) free(sh->mine), free(sh->rejected), free(sh->assigned);
        free(sh);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&sh->mu, NULL);
    sh->l = l;
    l->share = sh;
    return BATON_OK;
}

void io_share_close(baton_loader *l)
{
    io_share *sh = l->share;
    if (!sh) return;
    stop(sh);
    pthread_mutex_destroy(&sh->mu);
    free(sh->mine);
    free(sh->rejected);
    free(sh->assigned);
    free(sh);
    l->share = NULL;
}

/* Shards holding positions [from, to) of an order, appended to list in order of first use. */
static void first_uses(const baton_loader *l, const uint64_t *perm, uint64_t from, uint64_t to, uint8_t *in,
                       uint32_t *list, size_t *n)
{
    for (uint64_t p = from; p < to; p++) {
        uint32_t s = io_loader_shard_of(l, perm[p]);
        if (!in[s]) in[s] = 1, list[(*n)++] = s;
    }
}

/* The shards needed from the cursor to the end, in order of first use (l->perm holds the cursor's
 * epoch). Epochs wholly before the end need every shard that has records. */
static int needed(baton_loader *l, uint32_t *list, size_t *n, baton_err *err)
{
    size_t ns = l->m.nshards;
    uint8_t *in = calloc(ns ? ns : 1, 1);
    if (!in) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    *n = 0;
    const baton_cursor *c = &l->cur, *e = &l->end;
    uint64_t size = baton_loader_epoch_size(l);
    int rc = BATON_OK;
    if (l->has_end && e->epoch == c->epoch) {
        first_uses(l, l->perm, c->position, e->position < size ? e->position : size, in, list, n);
    } else {
        first_uses(l, l->perm, c->position, size, in, list, n);
        if (l->has_end && e->epoch == c->epoch + 1 && e->position > 0) {   /* the next epoch, partly */
            uint64_t *next = malloc((l->total ? l->total : 1) * sizeof *next);
            if (!next) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
            if (!rc) rc = io_loader_order(l, c->epoch + 1, next, err);
            uint64_t size1 = io_indexed_epoch_size(l->total, l->o.rank, l->o.world);   /* epochs > 0 */
            if (!rc) first_uses(l, next, 0, e->position < size1 ? e->position : size1, in, list, n);
            free(next);
        } else if (!l->has_end || e->epoch > c->epoch + 1) {
            for (size_t s = 0; s < ns; s++)
                if (!in[s] && l->m.shards[s].records) list[(*n)++] = (uint32_t)s;
        }
    }
    free(in);
    return rc;
}

int io_share_plan(baton_loader *l, baton_err *err)
{
    io_share *sh = l->share;
    size_t ns = l->m.nshards, n = 0;
    uint32_t *list = malloc((ns ? ns : 1) * sizeof *list);
    if (!list) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = BATON_OK;
    if (l->o.mode == BATON_MODE_FILE)   /* everything, at open */
        for (size_t s = 0; s < ns; s++) list[n++] = (uint32_t)s;
    else
        rc = needed(l, list, &n, err);
    /* this loader's part: its shards not read yet (those it read were checked). The downloader
     * running keeps going when its part holds them all (the next epoch, for instance). */
    int covered = sh->running && !__atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE);
    for (size_t i = 0; rc == BATON_OK && i < n; i++)
        if (io_share_owner(l, list[i]) == l->o.share_rank && !l->local_ok[list[i]]) covered &= sh->assigned[list[i]];
    if (rc == BATON_OK && !covered) {
        stop(sh);
        sh->nmine = 0;
        memset(sh->assigned, 0, ns);
        for (size_t i = 0; i < n; i++)
            if (io_share_owner(l, list[i]) == l->o.share_rank && !l->local_ok[list[i]])
                sh->assigned[list[i]] = 1, sh->mine[sh->nmine++] = list[i];
        __atomic_store_n(&sh->done, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&sh->failed, 0, __ATOMIC_RELEASE);
        if (pthread_create(&sh->thread, NULL, downloader, sh) != 0)
            rc = baton_err_set(err, BATON_ERR_IO, "cannot start the download thread: %s", strerror(errno));
        else
            sh->running = 1;
    }
    free(list);
    return rc;
}

/* The downloader's bytes into the epoch being read; its failure as this loader's error. */
int io_share_poll(baton_loader *l, baton_err *err)
{
    io_share *sh = l->share;
    if (!__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) return BATON_OK;
    pthread_mutex_lock(&sh->mu);
    uint64_t got = sh->st.bytes_fetched - sh->counted;
    sh->counted = sh->st.bytes_fetched;
    int rc = __atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE) ? baton_err_set(err, sh->err.code, "%s", sh->err.msg) : 0;
    pthread_mutex_unlock(&sh->mu);
    if (got) io_loader_count_fetched(l, l->cur.epoch, got);
    return rc;
}

/* The downloader adds its counts when its whole part is done, a moment after the last shard's
 * rename: a loader that already holds every shard of its part waits that moment, so its stats
 * are whole (they missed the part's downloads under load). */
static void settle(const baton_loader *l, io_share *sh)
{
    if (!sh->running) return;
    for (size_t i = 0; i < sh->nmine; i++)
        if (!l->local_ok[sh->mine[i]]) return;
    while (!__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) sleep_ms(1);
}

void io_share_stats(const baton_loader *l, baton_loader_stats *st)
{
    io_share *sh = l->share;
    settle(l, sh);
    pthread_mutex_lock(&sh->mu);
    st->bytes_fetched += sh->st.bytes_fetched;
    st->bytes_read += sh->st.bytes_read;
    st->downloads += sh->st.downloads;
    st->redownloads += sh->st.redownloads;
    st->fetch_retries += sh->st.fetch_retries;
    pthread_mutex_unlock(&sh->mu);
}

static seen identity(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return (seen){-1, -1, -1};
    return (seen){(long long)st.st_ino, (long long)st.st_size,
                  (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
}

static int same(seen a, seen b) { return a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns; }

/* Which loader of the group fetches shard s: a function of s alone, so a new list (the next epoch,
 * a new end) never gives a shard to a second loader while the first may still be writing it. */
uint32_t io_share_owner(const baton_loader *l, uint32_t s) { return s % l->o.share_size; }

int io_share_take(baton_loader *l, uint32_t s, baton_err *err)
{
    io_share *sh = l->share;
    const baton_shard_info *si = &l->m.shards[s];
    char path[4096], part[4200];
    if (baton_path_join(path, sizeof path, l->local_dir, si->file, err)) return err->code;
    snprintf(part, sizeof part, "%s.part", path);
    seen last = identity(path), lastpart = identity(part);
    double changed = baton_now();
    for (;;) {
        int rc = io_share_poll(l, err);
        if (rc) return rc;
        seen now = identity(path);
        if (now.size == (long long)si->bytes && !same(now, sh->rejected[s])) {
            if (io_local_valid(l->local_dir, si)) {
                l->local_ok[s] = 1;   /* read with pread (shardfile.c), each piece checked again */
                return BATON_OK;
            }
            sh->rejected[s] = now;   /* not this copy again; wait for its replacement */
        }
        seen nowpart = identity(part);
        if (!same(now, last) || !same(nowpart, lastpart)) changed = baton_now();
        last = now, lastpart = nowpart;
        double idle = baton_now() - changed;
        if (idle > l->o.share_wait_s) {
            return baton_err_set(err, BATON_ERR_NET,
                                 "%s: waited %.1f s for this shard, which loader %u of the %u sharing %s "
                                 "fetches: nothing of it arrived",
                                 si->file, idle, io_share_owner(l, s), l->o.share_size, l->local_dir);
        }
        sleep_ms(20);
    }
}
