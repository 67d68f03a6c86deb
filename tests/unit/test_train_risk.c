/* test_train_risk.c — the trainer's bound on work at risk: with --ckpt-every-steps N, at no moment
 * are more than N reached steps (the progress file a supervisor reads) ahead of the newest
 * committed checkpoint, even when a background persist is much slower than a training step.
 * fsync is slowed through the system-call table (20 ms per call, so a persist takes ~100 ms while
 * an mlp step takes a few ms); a monitor thread samples the progress file, then the newest
 * checkpoint folder, every ~0.2 ms and records the largest gap. Skips (passes) if Debian's
 * dataset-fashion-mnist is not installed. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"
#include "baton/img.h"
#include "baton/train.h"
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define FM "/usr/share/datasets/fashion-mnist"
#define EVERY 5

static int (*real_fsync)(int);
static int slow_fsync(int fd)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return real_fsync(fd);
}

typedef struct monitor {
    const char *progress, *ckpt_dir;
    atomic_int stop;
    int64_t max_gap, samples;
} monitor;

static void *watch(void *arg)
{
    monitor *m = arg;
    struct timespec ts = {0, 200 * 1000};
    while (!atomic_load(&m->stop)) {
        int64_t p = fleet_progress_file_read(m->progress);   /* first the step, then the checkpoint */
        int64_t c = fleet_ckpt_newest_name(m->ckpt_dir);
        if (p >= 0) {
            int64_t gap = p - (c < 0 ? 0 : c);
            if (gap > m->max_gap) m->max_gap = gap;
            m->samples++;
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(void)
{
    if (access(FM "/t10k-images-idx3-ubyte.gz", R_OK) != 0 && access(FM "/t10k-images-idx3-ubyte", R_OK) != 0) {
        printf("skip: no %s\n", FM);
        CHECK_DONE();
    }
    char tmp[] = "/tmp/baton-risk-XXXXXX", data[600], ckpt[600], prog[600];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(data, sizeof data, "%s/data", tmp);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", tmp);
    snprintf(prog, sizeof prog, "%s/progress", tmp);
    baton_err err = {0};
    baton_pack_opts po;
    baton_pack_opts_default(&po);
    po.from = "fashion-mnist";
    po.split = "test";
    po.out_dir = data;
    po.shard_mb = 4;
    baton_manifest man;
    int rc = baton_pack(&po, &man, &err);
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    if (rc) CHECK_DONE();
    baton_manifest_free(&man);

    baton_train_opts o;
    baton_train_opts_default(&o);
    o.data_uri = data;
    o.model = "mlp";
    o.session.ckpt_dir = ckpt;
    o.epochs = 2;
    o.max_steps = 60;
    o.session.ckpt_every = EVERY;
    o.session.ckpt_every_sec = 0;
    o.seed = 7;
    o.session.progress_file = prog;
    real_fsync = baton_sys.fsync;
    baton_sys.fsync = slow_fsync;
    monitor m = {.progress = prog, .ckpt_dir = ckpt, .max_gap = 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, watch, &m) == 0);
    baton_train_result r;
    rc = baton_train_run(&o, &r, &err);
    atomic_store(&m.stop, 1);
    pthread_join(th, NULL);
    baton_sys_reset();
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    CHECK_EQ_U(r.step, 60);
    printf("%lld samples, largest gap between the reached step and the newest checkpoint %lld (bound %d), %.2f s\n",
           (long long)m.samples, (long long)m.max_gap, EVERY, r.seconds);
    CHECK(m.samples > 100);
    CHECK_MSG(m.max_gap <= EVERY, "gap %lld > %d", (long long)m.max_gap, EVERY);
    CHECK(fleet_ckpt_newest_name(ckpt) == 60);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
    CHECK_DONE();
}
