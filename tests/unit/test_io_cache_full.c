/* test_io_cache_full.c — cache mode on a disk that fills up: writes of the local copy start to fail
 * with ENOSPC partway through epoch 0; the loader warns, removes the partial copy, goes on in pipe
 * mode, and every epoch still delivers every sample exactly once. Failures are injected through
 * the system-call table. */
#include "baton/img.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static size_t budget;  /* bytes the "disk" still takes */
static ssize_t full_write(int fd, const void *p, size_t n)
{
    if (n > budget) {
        errno = ENOSPC;
        return -1;
    }
    budget -= n;
    return write(fd, p, n);
}

int main(void)
{
    char tmp[] = "/tmp/baton-test-cachefull-XXXXXX", ds[600], local[600];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(ds, sizeof ds, "%s/ds", tmp);
    snprintf(local, sizeof local, "%s/local", tmp);
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
    uint64_t total = m.samples;
    baton_manifest_free(&m);

    baton_loader_opts o;
    baton_loader_opts_default(&o);
    o.uri = ds;
    o.mode = BATON_MODE_CACHE;
    o.local_dir = local;
    o.block = 500;
    baton_loader *l;
    CHECK_MSG(baton_loader_open(&o, &l, &err) == BATON_OK, "%s", err.msg);
    budget = 3u << 20;  /* about three shards fit */
    baton_sys.write = full_write;
    uint8_t *seen = calloc(total, 1);
    int bad = 0;
    for (int e = 0; e < 3; e++) {
        memset(seen, 0, total);
        uint64_t n = 0;
        baton_record r;
        while ((rc = baton_loader_next(l, &r, &err)) == BATON_OK) {
            baton_sample s;
            if (baton_sample_parse(BATON_FMT_RECORDIO, r.data, r.len, "t", r.offset, &s, &err) ||
                s.id >= total || seen[s.id]++)
                bad++;
            n++;
        }
        CHECK_MSG(rc == BATON_END, "epoch %d: %s", e, err.msg);
        CHECK_EQ_U(n, total);
    }
    baton_sys_reset();
    CHECK_EQ_U(bad, 0);
    baton_loader_stats st;
    baton_loader_get_stats(l, &st);
    CHECK(st.cache_fallback == 1);
    baton_loader_close(l);
    DIR *d = opendir(local);
    int parts = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        if (strstr(de->d_name, ".part")) parts++;
    if (d) closedir(d);
    CHECK_EQ_U(parts, 0);
    free(seen);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
