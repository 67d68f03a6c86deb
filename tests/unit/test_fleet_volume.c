/* test_fleet_volume.c — volumes and snapshots as folders: the manifest, snapshot + verify (a
 * flipped byte is caught), restore, and the zone move — at every step of a move at least one
 * complete copy exists, and a failure injected while the snapshot (or the restore) is being
 * written leaves the old volume untouched and no partial copies behind. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256], vol[512], snap[512], to[512], original[1] = "";
static char *want;   /* the volume's manifest before any move */

static void write_file(const char *path, size_t n, int seed)
{
    FILE *f = fopen(path, "wb");
    for (size_t i = 0; i < n; i++) fputc((int)((i * 131 + (size_t)seed) & 0xff), f);
    fclose(f);
}

static int complete(const char *dir)
{
    char *m = NULL;
    baton_err e;
    if (fleet_volume_manifest(dir, &m, &e)) return 0;
    int same = !strcmp(m, want);
    free(m);
    return same;
}

static int steps, zero_copies;
static void on_step(void *arg, const char *step, const char *path)
{
    (void)arg;
    (void)path;
    static const char *const order[] = {"snapshot-created", "snapshot-verified", "volume-restored", "old-volume-deleted"};
    CHECK_MSG(steps < 4 && !strcmp(step, order[steps]), "step %d: %s", steps, step);
    steps++;
    int copies = complete(vol) + complete(to) + (fleet_snapshot_verify(snap, NULL) == 0);
    if (copies == 0) zero_copies++;
}

static long fail_after;
static ssize_t failing_write(int fd, const void *p, size_t n)
{
    if (fail_after-- <= 0) {
        errno = EIO;
        return -1;
    }
    return write(fd, p, n);
}

static int exists(const char *p) { return access(p, F_OK) == 0; }

static int leftovers(const char *dir)   /* entries with ".tmp." in their name */
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "find %s -name '*.tmp.*' | grep -q .", dir);
    return system(cmd) == 0;
}

int main(void)
{
    (void)original;
    baton_err e = {0};
    snprintf(root, sizeof root, "/tmp/baton-vol-%d", (int)getpid());
    snprintf(vol, sizeof vol, "%s/volumes/za/vol-0", root);
    snprintf(snap, sizeof snap, "%s/snapshots/snap-1", root);
    snprintf(to, sizeof to, "%s/volumes/zb/vol-1", root);
    char p[700];
    CHECK(fleet_volume_create(vol, NULL, &e) == 0 && baton_is_dir(vol));
    snprintf(p, sizeof p, "%s/ckpt", vol);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/ckpt/ckpt-000000010", vol);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/empty", vol);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/ckpt/ckpt-000000010/model.safetensors", vol);
    write_file(p, 3u << 20, 1);   /* more than one copy chunk */
    snprintf(p, sizeof p, "%s/log with space.txt", vol);
    write_file(p, 1000, 2);
    snprintf(p, sizeof p, "%s/zero", vol);
    write_file(p, 0, 3);
    CHECK(fleet_volume_manifest(vol, &want, &e) == 0);
    CHECK(strncmp(want, "baton-snapshot 1\nd ckpt\nd ckpt/ckpt-000000010\nf 3145728 ", 55) == 0);
    CHECK(strstr(want, "d empty\n") && strstr(want, "f 1000 ") && strstr(want, " log with space.txt\n") &&
          strstr(want, "f 0 00000000 zero\n"));

    /* snapshot, verify, corrupt, restore */
    char s2[600], r2[600];
    snprintf(s2, sizeof s2, "%s/snapshots/snap-test", root);
    CHECK_MSG(fleet_snapshot_create(vol, s2, &e) == 0, "%s", e.msg);
    CHECK(fleet_snapshot_verify(s2, &e) == 0);
    CHECK(fleet_snapshot_create(vol, s2, &e) != 0 && strstr(e.msg, "already exists"));
    snprintf(r2, sizeof r2, "%s/volumes/zc/restored", root);
    CHECK(fleet_volume_restore(s2, r2, &e) == 0 && complete(r2));
    snprintf(p, sizeof p, "%s/log with space.txt", s2);
    int fd = open(p, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, "X", 1, 500) == 1);
    close(fd);
    CHECK(fleet_snapshot_verify(s2, &e) == BATON_ERR_CORRUPT && strstr(e.msg, s2));
    char r3[600];
    snprintf(r3, sizeof r3, "%s/volumes/zc/from-bad", root);
    CHECK(fleet_volume_restore(s2, r3, &e) != 0 && !exists(r3));   /* a bad snapshot is never restored */
    snprintf(p, sizeof p, "%s/extra", s2);
    write_file(p, 3, 4);
    CHECK(fleet_snapshot_verify(s2, &e) != 0);

    /* failure injected while the snapshot is written, at several points: nothing changes */
    for (long at = 0; at < 6; at++) {
        fail_after = at;
        baton_sys.write = failing_write;
        int rc = fleet_volume_move(vol, snap, to, NULL, NULL, &e);
        baton_sys_reset();
        CHECK_MSG(rc != 0, "at %ld", at);
        CHECK(complete(vol) && !exists(snap) && !exists(to) && !leftovers(root));
    }
    /* a failure while the new volume is restored (the snapshot takes
     * 5 writes; the 7th is the restore's second): the old volume remains, the snapshot is dropped */
    fail_after = 6;
    baton_sys.write = failing_write;
    int rc = fleet_volume_move(vol, snap, to, NULL, NULL, &e);
    baton_sys_reset();
    CHECK_MSG(rc != 0 && strstr(e.msg, "restore") && complete(vol) && !exists(to) && !exists(snap) && !leftovers(root), "%s", e.msg);

    /* the move itself: every step keeps a complete copy; the old volume goes last */
    CHECK_MSG(fleet_volume_move(vol, snap, to, on_step, NULL, &e) == 0, "%s", e.msg);
    CHECK(steps == 4 && zero_copies == 0);
    CHECK(!exists(vol) && complete(to) && fleet_snapshot_verify(snap, &e) == 0);

    /* a seeded volume; what a volume may not hold */
    char seeded[600];
    snprintf(seeded, sizeof seeded, "%s/volumes/za/seeded", root);
    CHECK(fleet_volume_create(seeded, to, &e) == 0 && complete(seeded));
    CHECK(fleet_volume_create(seeded, "/nonexistent-seed", &e) == 0);   /* exists: left alone */
    snprintf(p, sizeof p, "%s/volumes/za/s2", root);
    CHECK(fleet_volume_create(p, "/nonexistent-seed", &e) == BATON_ERR_NOTFOUND && strstr(e.msg, "/nonexistent-seed"));
    snprintf(p, sizeof p, "%s/link", seeded);
    CHECK(symlink("/etc/passwd", p) == 0);
    char s3[600];
    snprintf(s3, sizeof s3, "%s/snapshots/snap-link", root);
    CHECK(fleet_snapshot_create(seeded, s3, &e) == BATON_ERR_FORMAT && strstr(e.msg, "symbolic link") && !exists(s3));
    /* an unwritable destination: a file where a folder should be */
    snprintf(p, sizeof p, "%s/afile", root);
    write_file(p, 1, 0);
    snprintf(s3, sizeof s3, "%s/afile/vol", root);
    CHECK(fleet_volume_create(s3, NULL, &e) != 0 && strstr(e.msg, "afile"));

    free(want);
    baton_remove_tree(root);
    CHECK_DONE();
}
