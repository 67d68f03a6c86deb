/* test_io_share.c — one local copy for the loaders of one machine (baton_loader_opts.share_*):
 * groups of 2 and 3 loaders, each in its own thread over one folder, in cache mode (epoch 0 in
 * the streamed order, read locally) and file mode, also split by rank/world, deliver exactly the
 * records an unshared loader of the same mode does, and the store sends each shard once for the
 * whole group (manifest and indexes once per loader). A group of another size resumes from the
 * copy without fetching a shard; a damaged copy is fetched again by its owner alone while the
 * others wait; an end fetches only the shards it needs; a loader whose owner never comes, and a
 * store whose shard does not match, fail in bounded time with the shard named. */
#include "baton/img.h"
#include "check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp[] = "/tmp/baton-test-share-XXXXXX";
static const char *dataset;
static uint64_t meta;   /* dataset.json and the indexes: what each loader fetches at open */
static uint64_t data_bytes;
static baton_manifest man;

typedef struct job {
    const char *uri, *dir;
    baton_io_mode mode;
    uint32_t rank, world, share_rank, share_size;
    baton_cursor from, end;
    int has_end;
    uint64_t epochs;     /* without an end: read this many epochs */
    double wait_s;
    /* results */
    uint64_t *ids;
    uint32_t *shards;
    uint64_t n;
    int rc;
    char msg[1024];
    baton_loader_stats st;
    double seconds;
} job;

static uint64_t record_id(const baton_loader *l, const baton_record *r)
{
    baton_sample s;
    baton_err err;
    if (baton_sample_parse(baton_loader_manifest(l)->format, r->data, r->len, "t", r->offset, &s, &err))
        return UINT64_MAX;
    return s.id;
}

static int at_end(const job *j, baton_cursor c)
{
    return j->has_end && (c.epoch > j->end.epoch || (c.epoch == j->end.epoch && c.position >= j->end.position));
}

static void *run(void *arg)
{
    job *j = arg;
    double t0 = baton_now();
    j->n = 0;
    baton_loader_opts o;
    baton_loader_opts_default(&o);
    o.uri = j->uri;
    o.mode = j->mode;
    o.seed = 5;
    o.rank = j->rank;
    o.world = j->world ? j->world : 1;
    o.block = 500;
    o.local_dir = j->dir;
    o.share_rank = j->share_rank;
    o.share_size = j->share_size;
    if (j->wait_s > 0) o.share_wait_s = j->wait_s;
    baton_err err = {0};
    baton_loader *l = NULL;
    uint64_t cap = man.samples * (j->epochs + 2) + 1;
    j->ids = malloc(cap * sizeof *j->ids);
    j->shards = malloc(cap * sizeof *j->shards);
    int rc = baton_loader_open(&o, &l, &err);
    if (!rc && j->has_end) rc = baton_loader_set_end(l, &j->end, &err);
    if (!rc) rc = baton_loader_seek(l, &j->from, &err);
    uint64_t ends = 0;
    while (!rc && !at_end(j, baton_loader_cursor(l)) && j->n < cap) {
        baton_record r;
        rc = baton_loader_next(l, &r, &err);
        if (rc == BATON_END) {
            rc = ++ends == j->epochs && !j->has_end ? BATON_END : BATON_OK;
            continue;
        }
        if (!rc) j->ids[j->n] = record_id(l, &r), j->shards[j->n++] = r.shard;
    }
    if (rc == BATON_END) rc = BATON_OK;
    j->rc = rc;
    snprintf(j->msg, sizeof j->msg, "%s", rc ? err.msg : "");
    if (l) baton_loader_get_stats(l, &j->st);
    baton_loader_close(l);
    j->seconds = baton_now() - t0;
    return NULL;
}

/* Run n jobs at once, each in a thread. */
static void run_group(job *g, int n)
{
    pthread_t th[8];
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, run, &g[i]);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

static void free_job(job *j)
{
    free(j->ids);
    free(j->shards);
}

static int fresh_dir(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", tmp, name);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    return system(cmd);
}

/* A group of `size` sharing dir, against an unshared loader of the same kind; returns the bytes
 * the group's store sent beyond each loader's dataset.json and indexes (-1 on failure). */
static long long check_group(const char *label, job proto, int size, const char *dir)
{
    char refdir[600];
    CHECK(fresh_dir(refdir, sizeof refdir, "ref") == 0);
    job ref = proto;
    ref.dir = refdir;
    ref.share_size = 0;
    run(&ref);
    CHECK_MSG(ref.rc == BATON_OK, "%s: reference: %s", label, ref.msg);
    job g[8];
    for (int i = 0; i < size; i++) {
        g[i] = proto;
        g[i].dir = dir;
        g[i].share_rank = (uint32_t)i;
        g[i].share_size = (uint32_t)size;
    }
    run_group(g, size);
    long long bytes = 0;
    uint64_t downloads = 0;
    int ok = ref.rc == BATON_OK;
    for (int i = 0; i < size; i++) {
        CHECK_MSG(g[i].rc == BATON_OK, "%s: loader %d of %d: %s", label, i, size, g[i].msg);
        int same = g[i].rc == BATON_OK && g[i].n == ref.n && !memcmp(g[i].ids, ref.ids, ref.n * sizeof *ref.ids);
        CHECK_MSG(same, "%s: loader %d of %d: %llu records, not the unshared loader's %llu in its order", label, i,
                  size, (unsigned long long)g[i].n, (unsigned long long)ref.n);
        ok &= same;
        bytes += (long long)(g[i].st.bytes_fetched - meta);
        downloads += g[i].st.downloads;
    }
    printf("%s: %d loaders, %llu records each, shards fetched %llu bytes in %llu downloads (dataset %llu)\n", label,
           size, (unsigned long long)ref.n, (unsigned long long)bytes, (unsigned long long)downloads,
           (unsigned long long)data_bytes);
    free_job(&ref);
    for (int i = 0; i < size; i++) free_job(&g[i]);
    return ok ? bytes : -1;
}

static void flip_byte(const char *dir, const char *file, long at)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

static void check_failures(void)
{
    char dir[600];
    /* the owner of shard 1 never comes: the wait ends, naming the shard and its loader */
    CHECK(fresh_dir(dir, sizeof dir, "lonely") == 0);
    job j = {.uri = dataset, .dir = dir, .mode = BATON_MODE_CACHE, .from = {5, 0, 0}, .epochs = 1,
             .share_rank = 0, .share_size = 2, .wait_s = 0.5};
    run(&j);
    int odd = 0;   /* the shard named is one of loader 1's (s mod 2 = 1) */
    for (size_t s = 1; s < man.nshards; s += 2) odd |= strstr(j.msg, man.shards[s].file) != NULL;
    CHECK_MSG(j.rc == BATON_ERR_NET && odd && strstr(j.msg, "loader 1 of the 2"), "a missing owner: rc %d: %s", j.rc,
              j.msg);
    CHECK_MSG(j.seconds < 10, "a missing owner: %.1f s", j.seconds);
    printf("a missing owner: %.1f s: %s\n", j.seconds, j.msg);
    free_job(&j);
    /* the store's shard 0 does not match dataset.json: its owner fails, the other stops waiting */
    char bad[600], cmd[1400];
    snprintf(bad, sizeof bad, "%s/badstore", tmp);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", bad, dataset, bad);
    CHECK(system(cmd) == 0);
    flip_byte(bad, man.shards[0].file, 100);
    CHECK(fresh_dir(dir, sizeof dir, "bad") == 0);
    job g[2];
    for (int i = 0; i < 2; i++)
        g[i] = (job){.uri = bad, .dir = dir, .mode = BATON_MODE_CACHE, .from = {5, 0, 0}, .epochs = 1,
                     .share_rank = (uint32_t)i, .share_size = 2, .wait_s = 1};
    run_group(g, 2);
    CHECK_MSG(g[0].rc != BATON_OK && strstr(g[0].msg, "checksum mismatch again") && strstr(g[0].msg, man.shards[0].file),
              "the owner of a bad shard: %s", g[0].msg);
    CHECK_MSG(g[1].rc != BATON_OK && strstr(g[1].msg, man.shards[0].file), "waiting for a bad shard: %s", g[1].msg);
    CHECK(g[0].seconds < 10 && g[1].seconds < 10);
    free_job(&g[0]);
    free_job(&g[1]);
}

int main(void)
{
    CHECK(mkdtemp(tmp) != NULL);
    char ds[600];
    snprintf(ds, sizeof ds, "%s/data", tmp);
    baton_pack_opts po;
    baton_pack_opts_default(&po);
    po.from = "fashion-mnist";
    po.split = "test";
    po.out_dir = ds;
    po.shard_mb = 1;
    baton_err err = {0};
    int rc = baton_pack(&po, &man, &err);
    if (rc == BATON_ERR_NOTFOUND) {
        printf("skip: fashion-mnist not installed\n");
        CHECK_DONE();
    }
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    if (rc) CHECK_DONE();
    dataset = ds;
    meta = 0;
    for (size_t i = 0; i < man.nshards; i++) data_bytes += man.shards[i].bytes, meta += man.shards[i].index_bytes;
    char mpath[700];
    snprintf(mpath, sizeof mpath, "%s/%s", ds, BATON_MANIFEST_NAME);
    uint8_t *mj = NULL;
    size_t mlen = 0;
    CHECK(baton_file_read_all(mpath, 1 << 20, &mj, &mlen, &err) == BATON_OK);
    meta += mlen;
    free(mj);
    CHECK(man.nshards >= 4);

    char d1[600], d2[600], d3[600];
    job cache = {.uri = dataset, .mode = BATON_MODE_CACHE, .from = {5, 0, 0}, .epochs = 3};
    CHECK(fresh_dir(d1, sizeof d1, "c2") == 0);
    CHECK_EQ_U(check_group("cache, 2 loaders, 3 epochs", cache, 2, d1), data_bytes);
    job split = cache;
    split.rank = 1, split.world = 2;
    CHECK(fresh_dir(d2, sizeof d2, "c3") == 0);
    CHECK_EQ_U(check_group("cache, 3 loaders, worker 1 of 2", split, 3, d2), data_bytes);
    job file = {.uri = dataset, .mode = BATON_MODE_FILE, .from = {5, 0, 0}, .epochs = 2};
    CHECK(fresh_dir(d3, sizeof d3, "f2") == 0);
    CHECK_EQ_U(check_group("file, 2 loaders", file, 2, d3), data_bytes);

    /* another group size resumes from the copy: nothing fetched but dataset.json and indexes */
    job resume = cache;
    resume.from = (baton_cursor){5, 1, 1234}, resume.epochs = 2;
    CHECK_EQ_U(check_group("cache, 3 loaders resuming at epoch 1", resume, 3, d1), 0);
    job resume0 = cache;
    resume0.from = (baton_cursor){5, 0, 4321}, resume0.epochs = 1;
    CHECK_EQ_U(check_group("cache, 3 loaders resuming in epoch 0", resume0, 3, d1), 0);

    /* a damaged copy in place: its owner fetches it again, the others wait for the new one */
    flip_byte(d1, man.shards[1].file, 10);
    job again = cache;
    again.epochs = 1;
    CHECK_EQ_U(check_group("cache, 2 loaders, shard 1 damaged", again, 2, d1), man.shards[1].bytes);

    /* an end inside epoch 0: the shards holding its first 3000 records, once */
    char refdir[600];
    CHECK(fresh_dir(refdir, sizeof refdir, "endref") == 0);
    job e = cache;
    e.has_end = 1, e.end = (baton_cursor){5, 0, 3000}, e.dir = refdir;
    run(&e);
    uint64_t need = 0;
    uint8_t *in = calloc(man.nshards, 1);
    for (uint64_t i = 0; i < e.n; i++)
        if (!in[e.shards[i]]) in[e.shards[i]] = 1, need += man.shards[e.shards[i]].bytes;
    free(in);
    free_job(&e);
    CHECK(need < data_bytes);
    CHECK(fresh_dir(d3, sizeof d3, "end") == 0);
    CHECK_EQ_U(check_group("cache, 2 loaders, end at record 3000", e, 2, d3), need);

    check_failures();
    baton_manifest_free(&man);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
