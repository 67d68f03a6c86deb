/* test_io_shardfile.c — the pread reader of local shard files (src/io/shardfile.c) against the plain
 * reference (the file's bytes read whole): random ranges, inside a piece and across pieces, with a
 * cache of one piece and of all, give the file's bytes, whether every read checks its pieces (mount
 * mode) or each piece is checked once (io_shardfile_check_once: file and cache mode's copy, whose
 * dropped pieces are read as they are, without reading 256 KiB for a 3 KiB record). A piece that
 * differs from dataset.json is CORRUPT naming it before any byte of it is returned, in both
 * policies; a file cut short under the reader is TRUNCATED naming the file and the offset. The
 * descriptors kept open: all 70 shards of a dataset where the process's limit leaves room (a quarter
 * of the soft RLIMIT_NOFILE), 64 under a soft limit of 256, the oldest closed and reopened as
 * others are read — the same bytes either way. */
#include "../../src/io/io_internal.h"
#include "check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define PIECE 4096u
#define BYTES (PIECE * 9 + 1234)   /* a short last piece */

static char dir[] = "/tmp/baton-test-shardfile-XXXXXX";

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n);
    if (f) fclose(f);
}

/* n random reads of [at, end) compared with ref; returns the first error code */
static int compare(io_shardfile *f, const uint8_t *ref, baton_rng *r, int n, baton_err *err)
{
    for (int i = 0; i < n; i++) {
        uint64_t at = baton_rng_below(r, BYTES), len = 1 + baton_rng_below(r, i % 4 == 0 ? 3 * PIECE : 300);
        uint64_t end = at + len > BYTES ? BYTES : at + len;
        const uint8_t *p = NULL;
        int rc = io_shardfile_read(f, 0, at, end, &p, err);
        if (rc) return rc;
        if (memcmp(p, ref + at, (size_t)(end - at)) != 0) {
            CHECK_MSG(0, "bytes %llu..%llu differ from the file's", (unsigned long long)at, (unsigned long long)end);
            return BATON_ERR_FORMAT;
        }
    }
    return BATON_OK;
}

static int open_reader(io_shardfile **f, const baton_manifest *m, size_t cache, int once, baton_err *err)
{
    char uri[600];
    snprintf(uri, sizeof uri, "%s/", dir);
    int rc = io_shardfile_open(f, uri, dir, m, cache, err);
    if (rc == BATON_OK && once) rc = io_shardfile_check_once(*f, err);
    return rc;
}


/* descriptors this process has open */
static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n - 1;   /* opendir's own */
}

/* 70 one-piece shards read in a random order with the soft descriptor limit at `soft`: every read
 * the shard's bytes, and at most `keep` descriptors open */
static void many_shards(rlim_t soft, int keep)
{
    enum { NS = 70, SB = 1000 };
    static uint8_t data[NS][SB];
    static uint32_t crc[NS];
    static char names[NS][32];
    static baton_shard_info si[NS];
    baton_rng r;
    baton_rng_seed(&r, 11);
    char path[sizeof dir + 40];
    for (int s = 0; s < NS; s++) {
        for (int i = 0; i < SB; i++) data[s][i] = (uint8_t)baton_rng_next(&r);
        snprintf(names[s], sizeof names[s], "m-%05d.rec", s);
        snprintf(path, sizeof path, "%s/m-%05d.rec", dir, s);
        write_file(path, data[s], SB);
        crc[s] = baton_crc32c(0, data[s], SB);
        si[s] = (baton_shard_info){.file = names[s], .bytes = SB, .records = 1, .piece_bytes = PIECE,
                                   .piece_crc32c = &crc[s]};
    }
    baton_manifest m;
    memset(&m, 0, sizeof m);
    m.nshards = NS;
    m.shards = si;
    struct rlimit old, rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
    rl = old;
    rl.rlim_cur = soft < old.rlim_max ? soft : old.rlim_max;
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    const int base = open_fds();
    io_shardfile *f = NULL;
    baton_err err = {0};
    CHECK_MSG(io_shardfile_open(&f, dir, dir, &m, PIECE, &err) == BATON_OK, "%s", err.msg);
    int most = open_fds() - base, bad = 0;
    for (int i = 0; f && i < 700; i++) {
        const uint32_t s = (uint32_t)baton_rng_below(&r, NS);
        const uint64_t at = baton_rng_below(&r, SB), end = at + 1 + baton_rng_below(&r, SB - at);
        const uint8_t *p = NULL;
        if (io_shardfile_read(f, s, at, end, &p, &err) != BATON_OK || memcmp(p, data[s] + at, (size_t)(end - at)))
            bad++;
        const int now = open_fds() - base;
        most = now > most ? now : most;
    }
    CHECK_MSG(bad == 0, "soft limit %llu: %d of 700 reads wrong (%s)", (unsigned long long)soft, bad, err.msg);
    CHECK_MSG(most == keep, "soft limit %llu: %d descriptors open at most, want %d", (unsigned long long)soft, most,
              keep);
    io_shardfile_close(f);
    CHECK(open_fds() == base);
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    baton_rng r;
    baton_rng_seed(&r, 7);
    static uint8_t ref[BYTES], bad[BYTES];
    for (size_t i = 0; i < BYTES; i++) ref[i] = (uint8_t)baton_rng_next(&r);
    char path[700];
    snprintf(path, sizeof path, "%s/s-00000.rec", dir);
    write_file(path, ref, BYTES);

    uint32_t crcs[10];
    baton_shard_info si = {.file = "s-00000.rec", .bytes = BYTES, .records = 1, .piece_bytes = PIECE, .piece_crc32c = crcs};
    CHECK_EQ_U(baton_shard_pieces(&si), 10);
    for (uint64_t k = 0; k < 10; k++) {
        uint64_t lo = k * PIECE, hi = lo + PIECE < BYTES ? lo + PIECE : BYTES;
        crcs[k] = baton_crc32c(0, ref + lo, (size_t)(hi - lo));
    }
    baton_manifest m;
    memset(&m, 0, sizeof m);
    m.nshards = 1;
    m.shards = &si;

    for (int once = 0; once < 2; once++) {
        for (size_t cache = PIECE; cache <= 16 * PIECE; cache *= 16) {
            io_shardfile *f = NULL;
            baton_err err = {0};
            CHECK_MSG(open_reader(&f, &m, cache, once, &err) == BATON_OK, "%s", err.msg);
            if (!f) continue;
            int rc = compare(f, ref, &r, 2000, &err);
            CHECK_MSG(rc == BATON_OK, "once %d, cache %zu: rc %d: %s", once, cache, rc, err.msg);
            io_shardfile_close(f);
        }
        /* piece 3 changed before the reader opened: CORRUPT naming it, in both policies */
        memcpy(bad, ref, BYTES);
        bad[3 * PIECE + 100] ^= 1;
        write_file(path, bad, BYTES);
        io_shardfile *f = NULL;
        baton_err err = {0};
        if (open_reader(&f, &m, PIECE, once, &err) == BATON_OK) {
            const uint8_t *p;
            CHECK(io_shardfile_read(f, 0, 10, 20, &p, &err) == BATON_OK && !memcmp(p, ref + 10, 10));
            int rc = io_shardfile_read(f, 0, 3 * PIECE + 50, 3 * PIECE + 60, &p, &err);
            CHECK_MSG(rc == BATON_ERR_CORRUPT && strstr(err.msg, "s-00000.rec: bytes 12288..16383 (piece 4 of 10)"),
                      "once %d, a changed piece: rc %d: %s", once, rc, err.msg);
            io_shardfile_close(f);
        }
        /* cut short under the reader: TRUNCATED naming the file, where it ends and its size now */
        write_file(path, ref, BYTES);
        f = NULL;
        if (open_reader(&f, &m, PIECE, once, &err) == BATON_OK) {
            const uint8_t *p;
            CHECK(io_shardfile_read(f, 0, 0, PIECE, &p, &err) == BATON_OK);
            CHECK(truncate(path, 5000) == 0);
            int rc = io_shardfile_read(f, 0, 2 * PIECE + 10, 2 * PIECE + 20, &p, &err);
            CHECK_MSG(rc == BATON_ERR_TRUNCATED && strstr(err.msg, "s-00000.rec: the file ends at offset") &&
                          strstr(err.msg, "(now 5000 bytes)") && strstr(err.msg, dir),
                      "once %d, cut short: rc %d: %s", once, rc, err.msg);
            io_shardfile_close(f);
        }
        write_file(path, ref, BYTES);
    }

    /* check once: a piece checked, dropped from the cache and changed since is read as it is (the
     * copy was checked; what the policy trades for not reading a piece per record), while the
     * default policy checks it again */
    for (int once = 0; once < 2; once++) {
        io_shardfile *f = NULL;
        baton_err err = {0};
        if (open_reader(&f, &m, PIECE, once, &err) != BATON_OK) continue;
        const uint8_t *p;
        CHECK(io_shardfile_read(f, 0, 3 * PIECE + 50, 3 * PIECE + 60, &p, &err) == BATON_OK);
        CHECK(io_shardfile_read(f, 0, 10, 20, &p, &err) == BATON_OK);   /* piece 3 dropped (one slot) */
        memcpy(bad, ref, BYTES);
        bad[3 * PIECE + 100] ^= 1;
        write_file(path, bad, BYTES);
        int rc = io_shardfile_read(f, 0, 3 * PIECE + 50, 3 * PIECE + 60, &p, &err);
        if (once) CHECK_MSG(rc == BATON_OK && !memcmp(p, ref + 3 * PIECE + 50, 10), "once: rc %d: %s", rc, err.msg);
        else CHECK_MSG(rc == BATON_ERR_CORRUPT, "every read checked: rc %d: %s", rc, err.msg);
        io_shardfile_close(f);
        write_file(path, ref, BYTES);
    }
    many_shards(256, 64);
    many_shards(4096, 70);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
