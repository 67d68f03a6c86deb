/* league_work.c — the league's own folder beside its database (league.h, "the work folder"):
 * for a database DB it is DB-work/ (mode 0700, beside DB-wal and DB-shm), holding
 *   uploads/ID.tar   a queued submission's archive (mode 0600): written and synced before the row
 *                    that names it commits, read by each attempt, removed once the submission is
 *                    done or failed — never kept in the database, whose file and WAL would keep
 *                    pieces of it long after;
 *   unpack/          the folders uploads are unpacked into (mkdtemp, 0700), each removed after its
 *                    evaluation; a server killed during one leaves its folder, so a server's start
 *                    empties unpack/ and removes uploads no waiting submission names.
 *
 * Contract: every path here is derived from the database's path, never from $TMPDIR; files are
 * made with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600; errors name the file (the server's log keeps
 * them; what a racer is told is said without them). */
#include "league_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int league_work_path(const char *db_path, const char *sub, char *out, size_t cap, baton_err *err)
{
    int n = sub ? snprintf(out, cap, "%s-work/%s", db_path, sub) : snprintf(out, cap, "%s-work", db_path);
    if (n < 0 || (size_t)n >= cap) return baton_err_set(err, BATON_ERR_ARG, "%s: the league's work folder's path is too long", db_path);
    return BATON_OK;
}

/* DB-work/ and DB-work/sub, mode 0700 (an existing one is tightened to it). */
int league_work_dir(const char *db_path, const char *sub, char *out, size_t cap, baton_err *err)
{
    char top[4200];
    if (league_work_path(db_path, NULL, top, sizeof top, err) || league_work_path(db_path, sub, out, cap, err)) return err->code;
    const char *const dirs[2] = {top, out};
    for (int i = 0; i < 2; i++) {
        if (mkdir(dirs[i], 0700) && errno != EEXIST) return baton_err_errno(err, errno, "cannot make the league's work folder", dirs[i]);
        struct stat sb;
        if (lstat(dirs[i], &sb) || !S_ISDIR(sb.st_mode))
            return baton_err_set(err, BATON_ERR_ARG, "%s: the league's work folder is not a folder", dirs[i]);
        if ((sb.st_mode & 077) && chmod(dirs[i], 0700))
            return baton_err_errno(err, errno, "cannot make the league's work folder private", dirs[i]);
    }
    return BATON_OK;
}

static int archive_path(baton_league *l, int64_t id, char *out, size_t cap, baton_err *err)
{
    char dir[4200];
    if (league_work_dir(l->path, "uploads", dir, sizeof dir, err)) return err->code;
    if (snprintf(out, cap, "%s/%lld.tar", dir, (long long)id) >= (int)cap)
        return baton_err_set(err, BATON_ERR_ARG, "%s: the upload's path is too long", dir);
    return BATON_OK;
}

int league_archive_put(baton_league *l, int64_t id, const uint8_t *data, size_t len, baton_err *err)
{
    char path[4300];
    if (archive_path(l, id, path, sizeof path, err)) return err->code;
    unlink(path);   /* a file an earlier, rolled-back transaction left under this id */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return baton_err_errno(err, errno, "cannot store the upload", path);
    int rc = baton_write_all(fd, data, len, path, err);
    if (!rc && fsync(fd)) rc = baton_err_errno(err, errno, "cannot sync the upload", path);
    close(fd);
    if (rc) unlink(path);
    return rc;
}

int league_archive_get(baton_league *l, int64_t id, uint8_t **data, size_t *len, baton_err *err)
{
    char path[4300];
    if (archive_path(l, id, path, sizeof path, err)) return err->code;
    return baton_file_read_all(path, (size_t)1 << 33, data, len, err);
}

void league_archive_drop(baton_league *l, int64_t id)
{
    char path[4300];
    baton_err err = {0};
    if (!archive_path(l, id, path, sizeof path, &err) && unlink(path) && errno != ENOENT)
        baton_log(BATON_LOG_WARN, "league: cannot remove %s: %s", path, strerror(errno));
}

/* An upload file's submission id, or 0 when the name is not ID.tar. */
static int64_t upload_id(const char *name)
{
    char *end;
    long long id = strtoll(name, &end, 10);
    return id > 0 && !strcmp(end, ".tar") ? id : 0;
}

int league_work_clean(baton_league *l, baton_err *err)
{
    char dir[4200];
    if (league_work_dir(l->path, "unpack", dir, sizeof dir, err)) return err->code;
    if (baton_remove_tree(dir)) return baton_err_errno(err, errno, "cannot empty the league's unpack folder", dir);
    if (league_work_dir(l->path, "unpack", dir, sizeof dir, err) || league_work_dir(l->path, "uploads", dir, sizeof dir, err))
        return err->code;
    DIR *d = opendir(dir);
    if (!d) return baton_err_errno(err, errno, "cannot read the league's uploads folder", dir);
    struct dirent *de;
    int rc = BATON_OK;
    while (!rc && (de = readdir(d))) {
        int64_t id = upload_id(de->d_name), waiting = 0;
        if (!id) continue;
        baton_league_submission s;
        baton_err e2 = {0};
        int r = league_submission_get(l, id, &s, &e2);
        if (r && r != BATON_ERR_NOTFOUND) rc = baton_err_set(err, e2.code, "%s", e2.msg);
        waiting = !r && (s.state == BATON_LEAGUE_QUEUED || s.state == BATON_LEAGUE_RUNNING);
        if (!rc && !waiting) league_archive_drop(l, id);
    }
    closedir(d);
    return rc;
}
