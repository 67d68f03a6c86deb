/* test_io_loader.c — the loader's promise in every mode: each epoch delivers every sample exactly
 * once, in the same order as an uninterrupted reader, across any number of restarts from a saved
 * cursor; two workers (rank 0/1 of 2) split an epoch without overlap. Given an end cursor, a
 * reader hands out the same records up to it, fetches each byte it uses once (the store's bytes
 * counted by the loader), fetches little of a block it stops inside, and refuses to read past it.
 * Failed open, fstat and pread calls on shard files (through baton_sys) give errors naming them;
 * file mode reads its local copy with pread too, and a copy cut short under it is an error naming
 * the file and the offset (never SIGBUS). A dataset with piece checksums fetches whole pieces
 * around what it needs; one without (an older pack) keeps the tighter bounds of record ranges.
 * Pipe mode opens before the shards' indexes arrive (a broken one is found at the first read,
 * mount mode finds it at the open). Held for a launch (baton_loader_hold_ahead), it fetches only
 * the block it reads until released, and the same records and bytes as a reader never held.
 *
 * Without arguments it packs a small dataset and checks the four modes over a local path. The
 * URIs in BATON_TEST_URIS (space-separated, e.g. an nginx and an S3 copy of the same dataset
 * behind the fault proxy; set by tests/cli/test_io_servers.sh) are checked the same way, with
 * BATON_TEST_DATASET naming the local folder they hold. */
#include "baton/img.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EPOCHS 3
#define RESTARTS 10

static char tmp[] = "/tmp/baton-test-loader-XXXXXX";

static uint64_t record_id(const baton_loader *l, const baton_record *r)
{
    baton_sample s;
    baton_err err;
    if (baton_sample_parse(baton_loader_manifest(l)->format, r->data, r->len, "t", r->offset, &s, &err))
        return UINT64_MAX;
    return s.id;
}

static int download_first;   /* file mode: the whole copy before the open returns */

static int open_loader(const char *uri, baton_io_mode mode, uint32_t rank, uint32_t world, const char *local,
                       uint32_t block, baton_loader **l)
{
    baton_loader_opts o;
    baton_loader_opts_default(&o);
    o.download_first = download_first;
    o.uri = uri;
    o.mode = mode;
    o.seed = 11;
    o.rank = rank;
    o.world = world;
    o.block = block;
    o.local_dir = local;
    o.fetch.chunk_bytes = 256 << 10;
    o.store.retries = 8;
    baton_err err = {0};
    int rc = baton_loader_open(&o, l, &err);
    CHECK_MSG(rc == BATON_OK, "open %s %s: %s", uri, baton_io_mode_name(mode), err.msg);
    return rc;
}

/* The uninterrupted sequence of record ids for EPOCHS epochs. */
static uint64_t *reference(const char *uri, baton_io_mode mode, uint32_t rank, uint32_t world,
                           const char *local, uint32_t block, uint64_t *n_out, uint64_t *per_epoch)
{
    baton_loader *l;
    if (open_loader(uri, mode, rank, world, local, block, &l)) return NULL;
    *per_epoch = baton_loader_epoch_size(l);
    uint64_t cap = *per_epoch * EPOCHS + 1, n = 0;
    uint64_t *ids = malloc(cap * sizeof *ids);
    baton_err err = {0};
    baton_record r;
    int rc = BATON_OK, ends = 0;
    while (ends < EPOCHS && n < cap) {
        rc = baton_loader_next(l, &r, &err);
        if (rc == BATON_END) {
            ends++;
            continue;
        }
        if (rc) break;
        ids[n++] = record_id(l, &r);
    }
    CHECK_MSG(rc == BATON_OK || rc == BATON_END, "%s: %s", uri, err.msg);
    *n_out = n;
    baton_loader_close(l);
    return ids;
}

static void check_mode(const char *uri, baton_io_mode mode, uint64_t total)
{
    char local[512];
    snprintf(local, sizeof local, "%s/local-%s", tmp, baton_io_mode_name(mode));
    const char *ld = (mode == BATON_MODE_FILE || mode == BATON_MODE_CACHE) ? local : NULL;
    uint64_t n, per_epoch;
    uint64_t *ref = reference(uri, mode, 0, 1, ld, 700, &n, &per_epoch);
    if (!ref) return;
    CHECK_EQ_U(per_epoch, total);
    CHECK_EQ_U(n, total * EPOCHS);
    /* every epoch: each id exactly once */
    uint8_t *seen = calloc(total, 1);
    int ok = 1;
    for (int e = 0; e < EPOCHS; e++) {
        memset(seen, 0, total);
        for (uint64_t i = 0; i < total && e * total + i < n; i++) {
            uint64_t id = ref[e * total + i];
            if (id >= total || seen[id]++) ok = 0;
        }
    }
    CHECK_MSG(ok, "%s %s: an epoch missed or repeated a sample", uri, baton_io_mode_name(mode));
    CHECK(n < 2 * total || memcmp(ref, ref + total, total * sizeof *ref) != 0);  /* epochs differ */

    /* restarts: reopen from the saved cursor at random moments; the sequence must not change */
    if (ld) {  /* a restart on a fresh machine keeps the local copy only if it's the same disk */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", local);
        CHECK(system(cmd) == 0);
    }
    baton_rng rng;
    baton_rng_seed(&rng, 5 + mode);
    uint64_t stops[RESTARTS];
    for (int i = 0; i < RESTARTS; i++) stops[i] = 1 + baton_rng_below(&rng, n - 1);
    baton_cursor cur = {11, 0, 0};
    uint64_t got = 0, mismatches = 0;
    int restarts = 0;
    while (got < n) {
        baton_loader *l;
        if (open_loader(uri, mode, 0, 1, ld, 700, &l)) break;
        baton_err err = {0};
        int rc = baton_loader_seek(l, &cur, &err);
        CHECK_MSG(rc == BATON_OK, "seek: %s", err.msg);
        uint64_t stop = n;
        for (int i = 0; i < RESTARTS; i++)
            if (stops[i] > got && stops[i] < stop) stop = stops[i];
        baton_record r;
        while (rc == BATON_OK && got < stop) {
            rc = baton_loader_next(l, &r, &err);
            if (rc == BATON_END) {
                rc = BATON_OK;
                continue;
            }
            if (rc) break;
            if (record_id(l, &r) != ref[got]) mismatches++;
            got++;
        }
        CHECK_MSG(rc == BATON_OK, "%s %s: %s", uri, baton_io_mode_name(mode), err.msg);
        cur = baton_loader_cursor(l);
        baton_loader_close(l);
        if (rc) break;
        restarts++;
    }
    CHECK_EQ_U(got, n);
    CHECK_EQ_U(mismatches, 0);
    CHECK(restarts >= RESTARTS);

    /* two workers: disjoint, together the whole epoch */
    memset(seen, 0, total);
    uint64_t both = 0;
    for (uint32_t rank = 0; rank < 2; rank++) {
        char l2[600];
        snprintf(l2, sizeof l2, "%s-r%u", local, rank);
        uint64_t m, pe;
        uint64_t *ids = reference(uri, mode, rank, 2, ld ? l2 : NULL, 700, &m, &pe);
        if (!ids) continue;
        for (uint64_t i = 0; i < pe && i < m; i++)
            if (ids[i] < total && !seen[ids[i]]++) both++;
        free(ids);
    }
    CHECK_EQ_U(both, total);
    printf("%-40s %-5s ok: %llu samples x %d epochs, %d restarts\n", uri, baton_io_mode_name(mode),
           (unsigned long long)total, EPOCHS, restarts);
    free(seen);
    free(ref);
}

/* Read with an end cursor from `from`: the records must be ref[first ...] up to the end, then
 * BATON_ERR_ARG. Returns the store bytes fetched after open (all of them when after_open is 0). */
static uint64_t read_to_end(const char *uri, baton_io_mode mode, const char *ld, baton_cursor from,
                            baton_cursor end, const uint64_t *ref, uint64_t first, uint64_t want,
                            uint64_t *epoch_fetched, baton_loader_stats *stats)
{
    if (ld) {   /* a fresh local copy, so what was fetched is this reader's doing */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", ld);
        CHECK(system(cmd) == 0);
    }
    baton_loader *l;
    if (open_loader(uri, mode, 0, 1, ld, 0, &l)) return 0;
    baton_err err = {0};
    int rc = baton_loader_set_end(l, &end, &err);
    if (rc == BATON_OK) rc = baton_loader_seek(l, &from, &err);
    CHECK_MSG(rc == BATON_OK, "%s %s: %s", uri, baton_io_mode_name(mode), err.msg);
    uint64_t got = 0, bad = 0;
    baton_record r;
    while (rc == BATON_OK && got <= want) {
        rc = baton_loader_next(l, &r, &err);
        if (rc == BATON_END) {
            rc = BATON_OK;
            continue;
        }
        if (rc == BATON_OK && record_id(l, &r) != ref[first + got++]) bad++;
    }
    CHECK_MSG(rc == BATON_ERR_ARG && strstr(err.msg, "past the end"), "%s %s: after %llu records: rc %d %s", uri,
              baton_io_mode_name(mode), (unsigned long long)got, rc, err.msg);
    CHECK_EQ_U(got, want);
    CHECK_EQ_U(bad, 0);
    usleep(100 * 1000);   /* time for any read-ahead past the end to show in the counts */
    baton_loader_get_stats(l, stats);
    for (uint64_t e = 0; e < 3; e++) epoch_fetched[e] = baton_loader_epoch_fetched(l, e);
    baton_loader_close(l);
    return stats->bytes_fetched - stats->open_fetched;
}

/* The end cursor in one mode: whole epochs fetch the data once each (pipe, mount) or once in all,
 * in epoch 0 (cache; file, its copy filled while epoch 0 reads it), nothing for the epoch after; a run that stops inside an
 * epoch's one block fetches a fraction of it; a resume with an end in the next epoch. */
static void check_end(const char *uri, baton_io_mode mode, uint64_t total, uint64_t data, int pieces)
{
    char local[512];
    snprintf(local, sizeof local, "%s/end-%s", tmp, baton_io_mode_name(mode));
    const char *ld = (mode == BATON_MODE_FILE || mode == BATON_MODE_CACHE) ? local : NULL;
    uint64_t n, per_epoch, ef[3];
    uint64_t *ref = reference(uri, mode, 0, 1, ld, 0, &n, &per_epoch);   /* no end, default block */
    if (!ref) return;
    baton_loader_stats st;
    for (uint64_t epochs = 1; epochs <= 2; epochs++) {
        uint64_t f = read_to_end(uri, mode, ld, (baton_cursor){11, 0, 0}, (baton_cursor){11, epochs, 0}, ref, 0,
                                 epochs * total, ef, &st);
        uint64_t once = mode == BATON_MODE_PIPE || mode == BATON_MODE_MOUNT ? epochs : 1;
        CHECK_MSG(f == once * data, "%s %s, %llu epoch(s): %llu bytes fetched after open, want %llu", uri,
                  baton_io_mode_name(mode), (unsigned long long)epochs, (unsigned long long)f,
                  (unsigned long long)(once * data));
        CHECK_EQ_U(ef[0], data);
        CHECK_EQ_U(ef[1], epochs > 1 && once > 1 ? data : 0);
        CHECK_EQ_U(ef[2], 0);
        if (mode == BATON_MODE_FILE) CHECK(st.open_fetched < data / 10);   /* dataset.json and the indexes */
    }
    /* five batches of 128: a small part of the one block (all the dataset) */
    uint64_t f = read_to_end(uri, mode, ld, (baton_cursor){11, 0, 0}, (baton_cursor){11, 0, 640}, ref, 0, 640, ef,
                             &st);
    /* (pieces: whole pieces around 640 records scattered over the block may be all of it) */
    if (mode != BATON_MODE_FILE)
        CHECK_MSG(f > 0 && f < (pieces ? data + 1 : data / 4), "%s %s: 640 records fetched %llu of %llu bytes", uri,
                  baton_io_mode_name(mode), (unsigned long long)f, (unsigned long long)data);
    /* resumed late in epoch 0, stopping early in epoch 1 */
    f = read_to_end(uri, mode, ld, (baton_cursor){11, 0, total - 300}, (baton_cursor){11, 1, 200}, ref,
                    total - 300, 500, ef, &st);
    if (mode == BATON_MODE_PIPE)
        CHECK_MSG(f <= (pieces ? 2 * data : data + data / 4), "%s pipe: %llu bytes", uri, (unsigned long long)f);
    /* an end set after reading began: the reader seeks again and goes on to it */
    baton_loader *l;
    if (!open_loader(uri, mode, 0, 1, ld, 0, &l)) {
        baton_err err = {0};
        baton_record r;
        uint64_t got = 0, bad = 0;
        int rc = BATON_OK;
        while (rc == BATON_OK && got < 100)
            if ((rc = baton_loader_next(l, &r, &err)) == BATON_OK && record_id(l, &r) != ref[got++]) bad++;
        if (rc == BATON_OK) rc = baton_loader_set_end(l, &(baton_cursor){11, 0, 150}, &err);
        while (rc == BATON_OK)
            if ((rc = baton_loader_next(l, &r, &err)) == BATON_OK && record_id(l, &r) != ref[got++]) bad++;
        CHECK_MSG(rc == BATON_ERR_ARG, "%s %s: %s", uri, baton_io_mode_name(mode), err.msg);
        CHECK_EQ_U(got, 150);
        CHECK_EQ_U(bad, 0);
        CHECK(baton_loader_set_end(l, &(baton_cursor){12, 1, 0}, &err) == BATON_ERR_ARG);   /* another seed */
        baton_loader_close(l);
    }
    printf("%-40s %-5s ok: end cursor, bytes fetched once\n", uri, baton_io_mode_name(mode));
    free(ref);
}

/* ---------------------------------------------------------------- failed system calls */
static int (*real_open)(const char *, int, mode_t);
static int eio_fstat(int fd, struct stat *st)
{
    (void)fd, (void)st;
    errno = EIO;
    return -1;
}
static int eacces_open(const char *path, int flags, mode_t mode)
{
    if (strstr(path, ".rec")) {
        errno = EACCES;
        return -1;
    }
    return real_open(path, flags, mode);
}
static ssize_t eio_pread(int fd, void *buf, size_t n, off_t off)
{
    (void)fd, (void)buf, (void)n, (void)off;
    errno = EIO;
    return -1;
}

/* Open in `mode` with one system call of the table failing: a clear error naming the shard. */
static void expect_open_error(const char *uri, baton_io_mode mode, const char *want1, const char *want2)
{
    char local[512];
    snprintf(local, sizeof local, "%s/sys-%s", tmp, baton_io_mode_name(mode));
    baton_loader_opts o;
    baton_loader_opts_default(&o);
    o.uri = uri;
    o.mode = mode;
    o.local_dir = mode == BATON_MODE_FILE ? local : NULL;
    baton_loader *l = NULL;
    baton_err err = {0};
    int rc = baton_loader_open(&o, &l, &err);
    baton_sys_reset();
    CHECK_MSG(rc != BATON_OK && strstr(err.msg, ".rec") && strstr(err.msg, want1) && strstr(err.msg, want2),
              "%s mode: rc %d: %s", baton_io_mode_name(mode), rc, err.msg);
    CHECK(l == NULL);
    baton_loader_close(l);
}

/* Pipe mode opens without waiting for the shards' indexes: they arrive behind the open while the
 * first block is fetched. With the index of the shard epoch 0 reads last broken, a pipe reader
 * opens, then fails naming that .idx (once the first block is in, as it plans the rest) without a
 * record of that shard; mount mode, which reads in an order over every shard, takes every index
 * from dataset.idx at the open — not hurt by that .idx, it fails there when that shard's part of
 * dataset.idx is broken, naming both. */
static void check_lazy_index(const char *dataset)
{
    char copy[600], cmd[1300];
    snprintf(copy, sizeof copy, "%s/lazy", tmp);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", dataset, copy);
    CHECK(system(cmd) == 0);
    baton_loader *l;
    if (open_loader(copy, BATON_MODE_PIPE, 0, 1, NULL, 64, &l)) return;
    baton_err err = {0};
    baton_record r;
    uint32_t first = UINT32_MAX, last = 0;
    int rc;
    while ((rc = baton_loader_next(l, &r, &err)) == BATON_OK) {
        if (first == UINT32_MAX) first = r.shard;
        last = r.shard;
    }
    CHECK_MSG(rc == BATON_END, "%s", err.msg);
    char idx[1200];
    snprintf(idx, sizeof idx, "%s/%s", copy, baton_loader_manifest(l)->shards[last].index);
    baton_loader_close(l);
    CHECK(first != last);
    FILE *f = fopen(idx, "a");
    CHECK(f && fputs("0\t1\n", f) >= 0 && fclose(f) == 0);

    baton_loader_opts o;
    baton_loader_opts_default(&o);
    o.uri = copy;
    o.mode = BATON_MODE_MOUNT;
    l = NULL;
    rc = baton_loader_open(&o, &l, &err);   /* mount mode takes every index from dataset.idx: unchanged */
    CHECK_MSG(rc == BATON_OK, "mount: rc %d: %s", rc, err.msg);
    baton_loader_close(l);
    l = NULL;
    const baton_manifest *mm = NULL;
    baton_manifest m;
    uint64_t at = 0;
    if (baton_manifest_load(copy, &m, &err) == BATON_OK) mm = &m;
    CHECK(mm && mm->indexes);
    for (uint32_t s = 0; mm && s < last; s++) at += mm->shards[s].index_bytes;
    snprintf(cmd, sizeof cmd, "printf 9 | dd of=%s/dataset.idx bs=1 seek=%llu conv=notrunc status=none", copy,
             (unsigned long long)at);
    CHECK(system(cmd) == 0);   /* the first digit of that shard's part of dataset.idx */
    rc = baton_loader_open(&o, &l, &err);
    CHECK_MSG(rc != BATON_OK && strstr(err.msg, "dataset.idx: the part of") && mm &&
                  strstr(err.msg, mm->shards[last].index),
              "mount, dataset.idx: rc %d: %s", rc, err.msg);
    baton_loader_close(l);
    if (mm) baton_manifest_free(&m);

    if (open_loader(copy, BATON_MODE_PIPE, 0, 1, NULL, 64, &l)) return;
    uint64_t got = 0, wrong = 0;
    while ((rc = baton_loader_next(l, &r, &err)) == BATON_OK) got++, wrong += r.shard == last;
    CHECK_MSG(rc != BATON_END && strstr(err.msg, baton_loader_manifest(l)->shards[last].index),
              "pipe: rc %d after %llu records: %s", rc, (unsigned long long)got, err.msg);
    CHECK_EQ_U(wrong, 0);
    baton_loader_close(l);
}

/* Streamed bytes fetched so far (the indexes, which count as the open's, left out); waits `ms`
 * first, so that a fetcher allowed to read ahead has had the time to. */
static uint64_t streamed_bytes(const baton_loader *l, int ms)
{
    if (ms) usleep((useconds_t)ms * 1000);
    baton_loader_stats st;
    baton_loader_get_stats(l, &st);
    return st.bytes_fetched - st.open_fetched;
}

/* baton_loader_hold_ahead (a launch's first batch before the read-ahead): held, a pipe reader
 * fetches the block it reads and nothing more — no byte ahead of it after a wait, the next block
 * only once it is needed — while a reader not held has read ahead within the same wait; released,
 * it reads ahead again. Records, order and the epoch's bytes are those of a reader never held. */
static void check_hold(const char *dataset, uint64_t total)
{
    const uint32_t block = 1000;
    baton_loader *h = NULL, *f = NULL;
    if (open_loader(dataset, BATON_MODE_PIPE, 0, 1, NULL, block, &h) ||
        open_loader(dataset, BATON_MODE_PIPE, 0, 1, NULL, block, &f)) {
        baton_loader_close(h);
        return;
    }
    baton_err err = {0};
    baton_cursor end = {11, 1, 0};
    CHECK(baton_loader_set_end(h, &end, &err) == BATON_OK && baton_loader_set_end(f, &end, &err) == BATON_OK);
    CHECK(baton_loader_hold_ahead(h, 1, &err) == BATON_OK);
    baton_record rh, rf;
    CHECK_MSG(baton_loader_next(h, &rh, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_loader_next(f, &rf, &err) == BATON_OK, "%s", err.msg);
    CHECK_EQ_U(record_id(h, &rh), record_id(f, &rf));
    uint64_t first = streamed_bytes(h, 0), free_ahead = first;
    for (int i = 0; i < 50 && free_ahead <= first; i++) free_ahead = streamed_bytes(f, 100);
    CHECK_MSG(free_ahead > first, "a reader not held fetched %llu bytes, the held one's first block %llu",
              (unsigned long long)free_ahead, (unsigned long long)first);
    CHECK_EQ_U(streamed_bytes(h, 200), first);   /* held: nothing ahead */
    uint64_t n = 1, same = 1;
    for (; n < block && n < total; n++) {   /* the rest of the first block: still nothing more */
        CHECK(baton_loader_next(h, &rh, &err) == BATON_OK && baton_loader_next(f, &rf, &err) == BATON_OK);
        same += record_id(h, &rh) == record_id(f, &rf);
    }
    CHECK_EQ_U(streamed_bytes(h, 100), first);
    CHECK(baton_loader_next(h, &rh, &err) == BATON_OK && baton_loader_next(f, &rf, &err) == BATON_OK);
    same += record_id(h, &rh) == record_id(f, &rf), n++;
    uint64_t second = streamed_bytes(h, 0);   /* the next block, fetched as it is needed */
    CHECK_MSG(second > first && second < 3 * first, "first block %llu bytes, with the second %llu",
              (unsigned long long)first, (unsigned long long)second);
    CHECK_EQ_U(streamed_bytes(h, 200), second);
    CHECK(baton_loader_hold_ahead(h, 0, &err) == BATON_OK);   /* released: reads ahead again */
    uint64_t ahead = second;
    for (int i = 0; i < 50 && ahead <= second; i++) ahead = streamed_bytes(h, 100);
    CHECK_MSG(ahead > second, "released, still %llu bytes", (unsigned long long)ahead);
    int a, b;
    while ((a = baton_loader_next(h, &rh, &err)) == BATON_OK && (b = baton_loader_next(f, &rf, &err)) == BATON_OK)
        same += record_id(h, &rh) == record_id(f, &rf), n++;
    CHECK_EQ_U(a, BATON_END);
    CHECK_EQ_U(baton_loader_next(f, &rf, &err), BATON_END);
    CHECK_EQ_U(n, total);
    CHECK_EQ_U(same, total);
    CHECK_EQ_U(baton_loader_epoch_fetched(h, 0), baton_loader_epoch_fetched(f, 0));
    CHECK_EQ_U(streamed_bytes(h, 0), streamed_bytes(f, 0));
    baton_loader_close(h);
    baton_loader_close(f);
}

/* skip: the same positions as next, the record after the skipped ones the same as a reader that
 * read them, and in an indexed order (mount mode) not a byte read for the skipped ones */
static void check_skip(const char *dataset)
{
    baton_loader *a = NULL, *b = NULL;
    if (open_loader(dataset, BATON_MODE_MOUNT, 0, 1, NULL, 0, &a) || open_loader(dataset, BATON_MODE_MOUNT, 0, 1, NULL, 0, &b)) {
        baton_loader_close(a);
        return;
    }
    baton_err err = {0};
    baton_record ra, rb;
    for (uint64_t i = 0; i < 100; i++) {
        CHECK(baton_loader_next(a, &ra, &err) == BATON_OK && ra.position == i);
        CHECK(baton_loader_skip(b, &rb, &err) == BATON_OK && rb.position == i);
    }
    baton_loader_stats sa, sb;
    baton_loader_get_stats(a, &sa);
    baton_loader_get_stats(b, &sb);
    CHECK_MSG(sb.bytes_read == 0 && sa.bytes_read > 0 && sb.bytes_fetched + sa.bytes_read <= sa.bytes_fetched, "skipped: %llu bytes read",
              (unsigned long long)sb.bytes_read);
    CHECK(baton_loader_next(a, &ra, &err) == BATON_OK);
    uint64_t ida = record_id(a, &ra);
    CHECK(baton_loader_next(b, &rb, &err) == BATON_OK && rb.position == 100 && record_id(b, &rb) == ida);
    baton_loader_close(a);
    baton_loader_close(b);
}

/* The loader opens and reads shard files through baton_sys (mount mode's folder, file mode's copy):
 * each failure is reported with the file and the reason; a folder where a shard should be is
 * refused; a local copy cut short under the reader is an error naming it. */
static void check_sys_calls(const char *dataset)
{
    real_open = baton_sys.open;
    baton_sys.fstat = eio_fstat;
    expect_open_error(dataset, BATON_MODE_MOUNT, "cannot stat shard", strerror(EIO));
    baton_sys.open = eacces_open;
    expect_open_error(dataset, BATON_MODE_MOUNT, "cannot open shard", strerror(EACCES));

    char dir[600], cmd[4000];
    snprintf(dir, sizeof dir, "%s/sys-folder", tmp);
    snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s && rm %s/test-00001.rec && mkdir %s/test-00001.rec", dir,
             dataset, dir, dir, dir);
    CHECK(system(cmd) == 0);
    expect_open_error(dir, BATON_MODE_MOUNT, "test-00001.rec", "expected a regular file");

    baton_loader *l;
    if (!open_loader(dataset, BATON_MODE_MOUNT, 0, 1, NULL, 0, &l)) {   /* mount mode reads with pread */
        baton_record r;
        baton_err err = {0};
        baton_sys.pread = eio_pread;
        int rc = baton_loader_next(l, &r, &err);
        baton_sys_reset();
        CHECK_MSG(rc == BATON_ERR_IO && strstr(err.msg, ".rec: read failed at offset") && strstr(err.msg, strerror(EIO)),
                  "mount mode, pread failing: rc %d: %s", rc, err.msg);
        baton_loader_close(l);
    }
    char local[600];
    snprintf(local, sizeof local, "%s/sys-file", tmp);
    download_first = 1;   /* the whole copy first: these read a copy in place */
    if (!open_loader(dataset, BATON_MODE_FILE, 0, 1, local, 0, &l)) {   /* file mode reads its copy with pread */
        baton_record r;
        baton_err err = {0};
        baton_sys.pread = eio_pread;
        int rc = baton_loader_next(l, &r, &err);
        baton_sys_reset();
        CHECK_MSG(rc == BATON_ERR_IO && strstr(err.msg, local) && strstr(err.msg, ".rec: read failed at offset"),
                  "file mode, pread failing: rc %d: %s", rc, err.msg);
        baton_loader_close(l);
    }
    if (!open_loader(dataset, BATON_MODE_FILE, 0, 1, local, 0, &l)) {   /* its copy cut short under it */
        snprintf(cmd, sizeof cmd, "truncate -s 1000 %s/*.rec", local);
        CHECK(system(cmd) == 0);
        baton_record r;
        baton_err err = {0};
        int rc;
        while ((rc = baton_loader_next(l, &r, &err)) == BATON_OK) {}
        CHECK_MSG(rc == BATON_ERR_TRUNCATED && strstr(err.msg, local) && strstr(err.msg, ".rec: the file ends at offset") &&
                      strstr(err.msg, "(now 1000 bytes)"),
                  "file mode, its copy cut short: rc %d: %s", rc, err.msg);
        baton_loader_close(l);
    }
    download_first = 0;
    snprintf(cmd, sizeof cmd, "rm -rf %s", local);
    CHECK(system(cmd) == 0);
    if (!open_loader(dataset, BATON_MODE_FILE, 0, 1, local, 0, &l)) {   /* cut short while it fills */
        baton_record r;
        baton_err err = {0};
        int rc = baton_loader_next(l, &r, &err);
        snprintf(cmd, sizeof cmd, "truncate -s 1000 %s/*.rec.part", local);
        CHECK(rc == BATON_OK && system(cmd) == 0);
        while ((rc = baton_loader_next(l, &r, &err)) == BATON_OK) {}
        CHECK_MSG((rc == BATON_ERR_CORRUPT && strstr(err.msg, "the copy changed after it was written")) ||
                      (rc == BATON_ERR_TRUNCATED && (strstr(err.msg, ".rec.part: the file ends at offset") ||
                                                     strstr(err.msg, ".rec.part: the file is now 1000 bytes"))),
                  "file mode, its copy cut short while it fills: rc %d: %s", rc, err.msg);
        CHECK(strstr(err.msg, local) != NULL);
        baton_loader_close(l);
    }
    printf("%-40s mount, file ok: failed open, fstat and pread reported, a copy cut short\n", dataset);
}

/* File mode's copy filled while epoch 0 reads it (fill.c), in one folder kept between readers: one
 * epoch fetches the dataset once; a whole copy in place is used (nothing fetched); a piece of it
 * found wrong, and the pieces a killed reader's ".part" lacks, are fetched again and only they;
 * every reader yields the uninterrupted records. */
static uint64_t fill_epoch(const char *uri, const char *local, const uint64_t *ref, uint64_t total)
{
    char lock[700];
    snprintf(lock, sizeof lock, "%s/.download.lock", local);
    baton_loader *l;
    baton_loader_stats st;
    if (open_loader(uri, BATON_MODE_FILE, 0, 1, local, 0, &l)) return UINT64_MAX;
    baton_err err = {0};
    baton_record r;
    uint64_t got = 0, bad = 0;
    int rc;
    while (got < total && (rc = baton_loader_next(l, &r, &err)) == BATON_OK)
        if (record_id(l, &r) != ref[got++]) bad++;
    CHECK_MSG(got == total && bad == 0, "file mode in %s: %llu records, %llu not the reference's: %s", local,
              (unsigned long long)got, (unsigned long long)bad, err.msg);
    /* one epoch read every piece: the copy is whole and taken over, the folder's lock given back */
    baton_record r2;
    int fd = -1, lrc = baton_loader_next(l, &r2, &err) == BATON_END ? baton_lock_acquire(lock, "copy", &fd, &err) : -1;
    CHECK_MSG(lrc == BATON_OK, "file mode in %s: after a whole epoch the folder's lock is free: %s", local, err.msg);
    baton_lock_release(fd);
    baton_loader_get_stats(l, &st);
    baton_loader_close(l);
    return st.bytes_fetched - st.open_fetched;
}

static void check_fill(const char *uri, uint64_t total, uint64_t data)
{
    char local[600], cmd[4000];
    snprintf(local, sizeof local, "%s/fill", tmp);
    uint64_t n, per_epoch;
    uint64_t *ref = reference(uri, BATON_MODE_MOUNT, 0, 1, NULL, 0, &n, &per_epoch);   /* the same indexed order */
    if (!ref) return;
    baton_manifest m;
    baton_err err = {0};
    CHECK_MSG(baton_manifest_load(uri, &m, &err) == BATON_OK, "%s", err.msg);
    uint64_t piece = m.shards[0].piece_bytes;
    uint64_t f0 = fill_epoch(uri, local, ref, total);
    snprintf(cmd, sizeof cmd, "test -f %s/dataset.json && ! ls %s/*.part 2>/dev/null", local, local);
    CHECK_MSG(system(cmd) == 0, "file mode: after one epoch the copy in %s is whole, with its dataset.json", local);
    uint64_t f1 = fill_epoch(uri, local, ref, total);
    /* a byte flipped in the middle of shard 3's copy: its piece, and only that, is fetched again */
    snprintf(cmd, sizeof cmd, "printf '\\377' | dd of=%s/%s bs=1 seek=%llu conv=notrunc status=none", local,
             m.shards[3].file, (unsigned long long)(piece * 2 + 17));
    CHECK(system(cmd) == 0);
    uint64_t f2 = fill_epoch(uri, local, ref, total);
    /* shard 5 as a killed reader leaves it: ".part", its second half zeros */
    snprintf(cmd, sizeof cmd, "mv %s/%s %s/%s.part && dd if=/dev/zero of=%s/%s.part bs=%llu seek=1 count=1 conv=notrunc "
             "status=none", local, m.shards[5].file, local, m.shards[5].file, local, m.shards[5].file,
             (unsigned long long)(m.shards[5].bytes / 2));
    CHECK(system(cmd) == 0);
    uint64_t f3 = fill_epoch(uri, local, ref, total), half = m.shards[5].bytes - m.shards[5].bytes / 2;
    CHECK_MSG(f0 == data && f1 == 0 && f2 == piece && f3 >= half && f3 <= half + piece,
              "file mode's copy: fetched %llu (want %llu), %llu in place (want 0), %llu with a flipped byte (want "
              "%llu), %llu with half a .part (want %llu + at most a piece)", (unsigned long long)f0,
              (unsigned long long)data, (unsigned long long)f1, (unsigned long long)f2, (unsigned long long)piece,
              (unsigned long long)f3, (unsigned long long)half);
    snprintf(cmd, sizeof cmd, "cmp -s %s/%s %s/%s && ! ls %s/*.part 2>/dev/null", uri, m.shards[5].file, local,
             m.shards[5].file, local);
    CHECK_MSG(system(cmd) == 0, "file mode: the .part completed and renamed, equal to the store's");
    baton_manifest_free(&m);
    free(ref);
    printf("%-40s file  ok: copy filled while read: %llu bytes once, 0 in place, %llu for a flipped byte, %llu for "
           "half a .part\n", uri, (unsigned long long)f0, (unsigned long long)f2, (unsigned long long)f3);
}

int main(void)
{
    CHECK(mkdtemp(tmp) != NULL);
    const char *dataset = getenv("BATON_TEST_DATASET");
    char ds[600];
    if (!dataset) {
        snprintf(ds, sizeof ds, "%s/data", tmp);
        baton_pack_opts po;
        baton_pack_opts_default(&po);
        po.from = "fashion-mnist";
        po.split = "test";
        po.out_dir = ds;
        po.shard_mb = 1;
        baton_manifest m;
        baton_err err = {0};
        int rc = baton_pack(&po, &m, &err);
        if (rc == BATON_ERR_NOTFOUND) {
            printf("skip: fashion-mnist not installed\n");
            CHECK_DONE();
        }
        CHECK_MSG(rc == BATON_OK, "%s", err.msg);
        if (rc == BATON_OK) baton_manifest_free(&m);
        dataset = ds;
    }
    baton_manifest m;
    baton_err err = {0};
    CHECK_MSG(baton_manifest_load(dataset, &m, &err) == BATON_OK, "%s", err.msg);
    uint64_t total = m.samples, data = 0;
    int pieces = 0;
    for (size_t i = 0; i < m.nshards; i++) data += m.shards[i].bytes, pieces |= m.shards[i].piece_bytes != 0;
    baton_manifest_free(&m);

    const char *uris = getenv("BATON_TEST_URIS");
    if (!uris) {
        for (int mode = 0; mode < 4; mode++) check_mode(dataset, (baton_io_mode)mode, total);
        for (int mode = 0; mode < 4; mode++) check_end(dataset, (baton_io_mode)mode, total, data, pieces);
        /* the same dataset packed without pieces (as before they existed): tight record ranges */
        char old[600];
        snprintf(old, sizeof old, "%s/nopieces", tmp);
        baton_pack_opts po;
        baton_pack_opts_default(&po);
        po.from = "fashion-mnist";
        po.split = "test";
        po.out_dir = old;
        po.shard_mb = 1;
        po.piece_bytes = 0;
        CHECK_MSG(baton_pack(&po, &m, &err) == BATON_OK, "%s", err.msg);
        baton_manifest_free(&m);
        check_mode(old, BATON_MODE_MOUNT, total);
        check_mode(old, BATON_MODE_PIPE, total);
        check_end(old, BATON_MODE_PIPE, total, data, 0);
        check_mode(old, BATON_MODE_FILE, total);   /* no pieces: the whole download first */
        check_fill(dataset, total, data);
        check_sys_calls(dataset);
        check_skip(dataset);
        check_lazy_index(dataset);
        check_hold(dataset, total);
    } else {
        char *copy = strdup(uris), *save = NULL;
        for (char *u = strtok_r(copy, " ", &save); u; u = strtok_r(NULL, " ", &save))
            for (int mode = 0; mode < 4; mode++)
                if (mode != BATON_MODE_MOUNT) {
                    check_mode(u, (baton_io_mode)mode, total);
                    check_end(u, (baton_io_mode)mode, total, data, pieces);
                }
        free(copy);
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
