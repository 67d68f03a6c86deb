/* test_race_league_queue.c — the league's uploads (league.h): the tar reader on archives
 * built here byte by byte (files and folders, "./" names, the ustar prefix, a GNU long name, a pax
 * path; refused: "../", absolute paths, empty and "." components, too deep, links, devices, FIFOs,
 * a name twice, a wrong checksum, no magic, a size beyond the bytes, a cut header, more than the
 * entry limit; extraction never through a link); the request parser (token form, content type,
 * alias, track names, never paths, format, size, archive); tokens (made once, stored hashed,
 * checked, rotated, revoked); and the queue: a real model submitted, run, its entry stored with
 * the submission done; one alias one waiting submission; a submission left running recovered
 * (queued again, and failed after BATON_LEAGUE_ATTEMPTS); a model that is not a race model fails
 * with the reason, storing no entry; the submission's state machine: its table, and moves on
 * final states moving nothing. */
#include "../../src/race/race_internal.h"
#include "../../src/league/league_internal.h"
#include "check.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/baton-test-queue-XXXXXX";

static char *path_in(const char *name)
{
    static char p[16][512];
    static int k;
    char *o = p[k++ % 16];
    snprintf(o, 512, "%s/%s", tmp, name);
    return o;
}

/* ---------------------------------------------------------------- a tar writer for the tests */
static void tar_entry(baton_buf *b, const char *name, char type, const void *data, size_t n, const char *link)
{
    uint8_t h[512] = {0};
    size_t nl = strlen(name);
    if (nl > 100) {   /* the ustar prefix */
        const char *cut = name + nl - 100;
        while (*cut && *cut != '/') cut++;
        memcpy(h + 345, name, (size_t)(cut - name));
        memcpy(h, cut + 1, strlen(cut + 1));
    } else {
        memcpy(h, name, nl);
    }
    snprintf((char *)h + 100, 8, "%07o", type == '5' ? 0755 : 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011zo", n);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = (uint8_t)type;
    if (link) memcpy(h + 157, link, strlen(link));
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    baton_buf_append(b, h, 512);
    if (n) baton_buf_append(b, data, n);
    static const uint8_t zero[512];
    if (n % 512) baton_buf_append(b, zero, 512 - n % 512);
}

static void tar_end(baton_buf *b)
{
    static const uint8_t zero[1024];
    baton_buf_append(b, zero, 1024);
}

static int tar_refused(baton_buf *b, const char *want)
{
    baton_league_tar_entry *e = (void *)1;
    size_t n = 9;
    baton_err err = {0};
    int rc = league_tar_read(b->data, b->len, &e, &n, &err);
    int ok = rc != BATON_OK && e == NULL && n == 0 && strstr(err.msg, want);
    if (!ok) fprintf(stderr, "tar: wanted /%s/, got %d: %s\n", want, rc, err.msg);
    baton_buf_free(b);
    return ok;
}

static void test_tar(void)
{
    baton_buf b = {0};
    tar_entry(&b, "./", '5', NULL, 0, NULL);
    tar_entry(&b, "./ckpt-5/", '5', NULL, 0, NULL);
    tar_entry(&b, "./ckpt-5/MANIFEST", '0', "m\n", 2, NULL);
    char deep[160];
    snprintf(deep, sizeof deep, "a/%0120d/f", 7);   /* over 100 bytes: the prefix field */
    tar_entry(&b, deep, '0', "abc", 3, NULL);
    tar_end(&b);
    baton_league_tar_entry *e;
    size_t n;
    baton_err err = {0};
    CHECK_MSG(league_tar_read(b.data, b.len, &e, &n, &err) == BATON_OK, "%s", err.msg);
    CHECK(n == 3 && !strcmp(e[0].name, "ckpt-5") && e[0].is_dir && !strcmp(e[1].name, "ckpt-5/MANIFEST") &&
          e[1].size == 2 && !memcmp(e[1].data, "m\n", 2) && !strcmp(e[2].name, deep) && e[2].size == 3);
    /* extraction: the files, and nothing through a link planted where a file goes */
    const char *out = path_in("x1");
    CHECK(mkdir(out, 0700) == 0);
    CHECK_MSG(league_tar_extract(e, n, out, &err) == BATON_OK, "%s", err.msg);
    uint8_t *got;
    size_t len;
    CHECK(baton_file_read_all(path_in("x1/ckpt-5/MANIFEST"), 100, &got, &len, &err) == BATON_OK && len == 2);
    free(got);
    const char *out2 = path_in("x2");
    CHECK(mkdir(out2, 0700) == 0 && symlink("/tmp", path_in("x2/ckpt-5")) == 0);
    CHECK(league_tar_extract(e, n, out2, &err) != BATON_OK && strstr(err.msg, "both a file and a folder"));
    free(e);
    baton_buf_free(&b);

    /* a GNU long name and a pax path name the next entry */
    char longname[220];
    memset(longname, 'n', 200);
    strcpy(longname + 200, "/MANIFEST");
    tar_entry(&b, "././@LongLink", 'L', longname, strlen(longname) + 1, NULL);
    tar_entry(&b, "short", '0', "1", 1, NULL);
    const char rec[] = "23 path=pax/MANIFEST.x\n";
    tar_entry(&b, "PaxHeader", 'x', rec, strlen(rec), NULL);
    tar_entry(&b, "ignored", '0', "2", 1, NULL);
    tar_end(&b);
    CHECK_MSG(league_tar_read(b.data, b.len, &e, &n, &err) == BATON_OK, "%s", err.msg);
    CHECK(n == 2 && !strcmp(e[0].name, longname) && !strcmp(e[1].name, "pax/MANIFEST.x"));
    free(e);
    baton_buf_free(&b);

    /* refusals, each naming the entry */
    tar_entry(&b, "../evil", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "'../evil': a \"..\" component is not accepted"));
    tar_entry(&b, "a/../../evil", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "a \"..\" component"));
    tar_entry(&b, "/etc/cron.d/x", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "'/etc/cron.d/x': an absolute path"));
    tar_entry(&b, "a//b", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "an empty path component"));
    tar_entry(&b, "a/./b", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "a \".\" component"));
    tar_entry(&b, "a/b/c/d/e", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "nested too deep"));
    tar_entry(&b, "a\nb", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "a control character"));
    tar_entry(&b, "link", '2', NULL, 0, "/etc/passwd"), tar_end(&b);
    CHECK(tar_refused(&b, "'link' is a symbolic link; only files and folders are accepted"));
    tar_entry(&b, "hard", '1', NULL, 0, "MANIFEST"), tar_end(&b);
    CHECK(tar_refused(&b, "'hard' is a hard link"));
    tar_entry(&b, "dev", '3', NULL, 0, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "a character device"));
    tar_entry(&b, "blk", '4', NULL, 0, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "a block device"));
    tar_entry(&b, "fifo", '6', NULL, 0, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "'fifo' is a FIFO"));
    const char lrec[] = "24 linkpath=/etc/passwd\n";
    tar_entry(&b, "p", 'x', lrec, strlen(lrec), NULL), tar_entry(&b, "f", '0', "x", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "a link (pax linkpath)"));
    tar_entry(&b, "f", '0', "x", 1, NULL), tar_entry(&b, "./f", '0', "y", 1, NULL), tar_end(&b);
    CHECK(tar_refused(&b, "'f' appears twice"));
    tar_entry(&b, "f", '0', "x", 1, NULL), tar_end(&b);
    b.data[0] ^= 1;
    CHECK(tar_refused(&b, "tar offset 0: not a ustar header (wrong checksum)"));
    tar_entry(&b, "f", '0', "x", 1, NULL), tar_end(&b);
    memset(b.data + 257, 0, 6);
    CHECK(tar_refused(&b, "no \"ustar\" magic"));
    tar_entry(&b, "f", '0', "0123456789", 10, NULL);
    b.len = 512 + 4;   /* the data cut short */
    CHECK(tar_refused(&b, "beyond the 4 bytes that follow"));
    tar_entry(&b, "f", '0', "x", 1, NULL), tar_entry(&b, "g", '0', "x", 1, NULL);
    b.len = 1024 + 100;   /* a header cut short */
    CHECK(tar_refused(&b, "tar offset 1024: the archive ends inside a header"));
    baton_buf_append(&b, "", 0);
    CHECK(tar_refused(&b, "an empty archive"));
    for (int i = 0; i <= BATON_LEAGUE_TAR_ENTRIES; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "d/f%d", i);
        tar_entry(&b, nm, '0', NULL, 0, NULL);
    }
    tar_end(&b);
    CHECK(tar_refused(&b, "more than 1024 entries"));
}

/* ---------------------------------------------------------------- the request */
static baton_league_request req(const char *auth, const char *alias, const char *track, const baton_buf *body)
{
    baton_league_request q = {auth, "application/x-tar", alias, track, NULL, body ? body->data : NULL, body ? body->len : 0, NULL};
    return q;
}

static int parse_refused(baton_league_request q, const baton_league_upload_rules *r, unsigned want_http, const char *want)
{
    baton_league_upload u;
    unsigned http = 0;
    baton_err err = {0};
    int rc = league_request_parse(&q, r, &u, &http, &err);
    int ok = rc != BATON_OK && http == want_http && strstr(err.msg, want);
    if (!ok) fprintf(stderr, "request: wanted %u /%s/, got %d %u: %s\n", want_http, want, rc, http, err.msg);
    return ok;
}

static void test_request(void)
{
    baton_buf b = {0};
    tar_entry(&b, "ckpt-5/MANIFEST", '0', "m", 1, NULL), tar_end(&b);
    char auth[100] = "Bearer btn_";
    memset(auth + 11, 'a', 64);
    auth[75] = 0;
    mkdir(path_in("tracks"), 0700);
    const double rows[4 * 6] = {0, 0, 0, 1, 0, -1, 1, 0, 1, 1, 1, -1, 2, 0, 2, 1, 2, -1, 3, 0, 3, 1, 3, -1};
    baton_buf npy = {0};
    CHECK(race_npy_write(&npy, rows, 4, 6) == BATON_OK &&
          baton_file_write_atomic(path_in("tracks/Mine.npy"), npy.data, npy.len, &(baton_err){0}) == BATON_OK);
    baton_buf_free(&npy);
    baton_league_upload_rules r = {4096, path_in("tracks")};
    baton_league_upload u;
    unsigned http = 0;
    baton_err err = {0};
    baton_league_request q = req(auth, "<b>'; DROP TABLE entries;--", "oval", &b);
    CHECK_MSG(league_request_parse(&q, &r, &u, &http, &err) == BATON_OK, "%s", err.msg);
    CHECK(!strcmp(u.alias, q.alias) && !strcmp(u.track, "oval") && !strcmp(u.track_path, "oval") && u.len == b.len &&
          !strcmp(u.token, auth + 7) && u.format == BATON_LEAGUE_TIME_TRIAL);
    q = req(auth, "a", "Mine.npy", &b);
    q.format = "total", q.content_type = "application/octet-stream";
    CHECK(league_request_parse(&q, &r, &u, &http, &err) == BATON_OK && !strcmp(u.track, "Mine") &&
          strstr(u.track_path, "/tracks/Mine.npy") && u.track_path[0] == '/' && u.format == BATON_LEAGUE_TOTAL);
    CHECK(parse_refused(req(NULL, "a", "oval", &b), &r, 401, "a token is required"));
    CHECK(parse_refused(req("Basic YTpi", "a", "oval", &b), &r, 401, "expected \"Bearer btn_\""));
    CHECK(parse_refused(req("Bearer btn_123", "a", "oval", &b), &r, 401, "64 hex digits"));
    auth[20] = 'G';
    CHECK(parse_refused(req(auth, "a", "oval", &b), &r, 401, "64 hex digits"));
    auth[20] = 'a';
    q = req(auth, "a", "oval", &b);
    q.content_type = "text/html";
    CHECK(parse_refused(q, &r, 415, "Content-Type 'text/html'"));
    CHECK(parse_refused(req(auth, "", "oval", &b), &r, 400, "alias: an alias is required"));
    CHECK(parse_refused(req(auth, "a\x01", "oval", &b), &r, 400, "control character"));
    CHECK(parse_refused(req(auth, "a", NULL, &b), &r, 400, "track: required"));
    CHECK(parse_refused(req(auth, "a", "../../etc/passwd", &b), &r, 400, "not starting with '.'"));
    CHECK(parse_refused(req(auth, "a", "tracks/../Mine", &b), &r, 400, "a name, not a path"));
    CHECK(parse_refused(req(auth, "a", "/etc/passwd", &b), &r, 400, "a name, not a path"));
    CHECK(parse_refused(req(auth, "a", "Nowhere", &b), &r, 404, "track 'Nowhere': not a built-in track"));
    q = req(auth, "a", "oval", &b);
    q.format = "sprint";
    CHECK(parse_refused(q, &r, 400, "format 'sprint'"));
    /* the race type: named, or time-trial; its standings' format the race's own unless given */
    q = req(auth, "a", "oval", &b);
    q.race = "drag";
    CHECK(parse_refused(q, &r, 400, "race 'drag': time-trial, object-avoidance, head-to-bot or head-to-model"));
    q.race = "";
    CHECK(parse_refused(q, &r, 400, "race '': time-trial"));
    baton_league_upload ur;
    unsigned hr = 0;
    q.race = "object-avoidance";
    CHECK(league_request_parse(&q, &r, &ur, &hr, &err) == BATON_OK && ur.race == BATON_RACE_OBJECT_AVOIDANCE &&
          ur.format == BATON_LEAGUE_TOTAL);
    q.race = "head-to-bot", q.format = "time-trial";
    CHECK(league_request_parse(&q, &r, &ur, &hr, &err) == BATON_OK && ur.race == BATON_RACE_HEAD_TO_BOT &&
          ur.format == BATON_LEAGUE_TIME_TRIAL);
    q = req(auth, "a", "oval", &b);
    CHECK(league_request_parse(&q, &r, &ur, &hr, &err) == BATON_OK && ur.race == BATON_RACE_TIME_TRIAL);
    r.max_bytes = b.len - 1;
    CHECK(parse_refused(req(auth, "a", "oval", &b), &r, 413, "this league takes at most"));
    r.max_bytes = 4096;
    CHECK(parse_refused(req(auth, "a", "oval", NULL), &r, 400, "an empty body"));
    baton_buf c = {0};
    tar_entry(&c, "README", '0', "hi", 2, NULL), tar_end(&c);
    CHECK(parse_refused(req(auth, "a", "oval", &c), &r, 400, "no MANIFEST in the archive"));
    baton_buf_free(&c);
    tar_entry(&c, "../MANIFEST", '0', "hi", 2, NULL), tar_end(&c);
    CHECK(parse_refused(req(auth, "a", "oval", &c), &r, 400, "'../MANIFEST'"));
    baton_buf_free(&c);
    baton_buf_free(&b);
}

/* ---------------------------------------------------------------- tokens */
static void test_tokens(void)
{
    baton_league *l;
    baton_err err = {0};
    CHECK(baton_league_open(path_in("tok.db"), &l, &err) == BATON_OK);
    char t1[BATON_LEAGUE_TOKEN_LEN + 1], t2[BATON_LEAGUE_TOKEN_LEN + 1], t3[BATON_LEAGUE_TOKEN_LEN + 1];
    CHECK(baton_league_token_add(l, "ann", 0, t1, &err) == BATON_OK && strlen(t1) == 68 && !strncmp(t1, "btn_", 4));
    CHECK(baton_league_token_add(l, "bob", 0, t2, &err) == BATON_OK && strcmp(t1, t2));
    CHECK(baton_league_token_add(l, "ann", 0, t3, &err) == BATON_ERR_BUSY && strstr(err.msg, "has a token already"));
    CHECK(league_token_check(l, "ann", t1, &err) == BATON_OK);
    CHECK(league_token_check(l, "ann", t2, &err) == BATON_ERR_DENIED);   /* another racer's */
    CHECK(league_token_check(l, "carl", t1, &err) == BATON_ERR_DENIED);  /* no token at all */
    CHECK(league_token_check(l, "ann", "", &err) == BATON_ERR_DENIED);
    CHECK(baton_league_token_add(l, "ann", 1, t3, &err) == BATON_OK);          /* rotated: the old one stops */
    CHECK(league_token_check(l, "ann", t1, &err) == BATON_ERR_DENIED && league_token_check(l, "ann", t3, &err) == BATON_OK);
    CHECK(baton_league_token_revoke(l, "bob", &err) == BATON_OK && league_token_check(l, "bob", t2, &err) == BATON_ERR_DENIED);
    CHECK(baton_league_token_revoke(l, "bob", &err) == BATON_ERR_NOTFOUND);
    baton_league_token_info *t;
    size_t n;
    CHECK(baton_league_tokens(l, &t, &n, &err) == BATON_OK && n == 1 && !strcmp(t[0].alias, "ann") && t[0].last_used_at > 0);
    free(t);
    baton_league_close(l);
    /* only hashes in the file */
    uint8_t *bytes;
    size_t len;
    CHECK(baton_file_read_all(path_in("tok.db"), 1 << 24, &bytes, &len, &err) == BATON_OK);
    CHECK(!memmem(bytes, len, t3 + 4, 64) && !memmem(bytes, len, t1 + 4, 64));
    free(bytes);
}

/* ---------------------------------------------------------------- the queue */
static void add_file(baton_buf *b, const char *dir, const char *name, const char *as)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    uint8_t *d;
    size_t n;
    baton_err err = {0};
    CHECK_MSG(baton_file_read_all(p, 1 << 26, &d, &n, &err) == BATON_OK, "%s", err.msg);
    tar_entry(b, as, '0', d, n, NULL);
    free(d);
}

static int64_t count(baton_league *l, const char *db, const char *sql)
{
    (void)l;
    sqlite3 *h;
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_open(db, &h) == SQLITE_OK && sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}

static void test_queue(void)
{
    baton_err err = {0};
    baton_ppo_train_opts o;
    baton_ppo_train_opts_default(&o);
    o.track = "oval";
    o.obs = BATON_PPO_OBS_SENSOR, o.obs_set = 1;
    o.session.ckpt_dir = path_in("model");
    o.episodes = 100;
    o.seed = 3, o.seed_set = 1;
    baton_ppo_train_result tr;
    CHECK_MSG(baton_ppo_train(&o, &tr, &err) == BATON_OK, "train: %s", err.msg);
    /* the checkpoint's files at the archive's top level (no folder): named ckpt-<step> on unpacking */
    baton_buf b = {0};
    const char *files[] = {"MANIFEST", "model.safetensors", "optim.safetensors", "state.json"};
    for (int i = 0; i < 4; i++) {
        char as[64];
        snprintf(as, sizeof as, "./%s", files[i]);
        add_file(&b, tr.checkpoint, files[i], as);
    }
    tar_end(&b);
    const char *db = path_in("q.db");
    baton_league *l;
    CHECK(baton_league_open(db, &l, &err) == BATON_OK);
    baton_league_upload u = {.alias = "<i>ann</i>", .track = "oval", .track_path = "oval", .archive = b.data, .len = b.len};
    char dir[4096], ckpt[4096];
    CHECK_MSG(league_unpack_archive(b.data, b.len, tmp, dir, ckpt, &err) == BATON_OK, "%s", err.msg);
    CHECK(strstr(ckpt, "/ckpt-5") != NULL && baton_remove_tree(dir) == 0);
    int64_t id, id2, ran;
    CHECK(league_enqueue(l, &u, &id, &err) == BATON_OK && id == 1);
    CHECK(league_enqueue(l, &u, &id2, &err) == BATON_ERR_BUSY && strstr(err.msg, "has submission 1 waiting"));
    baton_league_submission s;
    CHECK(league_submission_get(l, 1, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_QUEUED && s.bytes == b.len);
    CHECK(league_queue_run_one(l, tmp, &ran, &err) == BATON_OK && ran == 1);
    CHECK(league_submission_get(l, 1, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_DONE && s.entry == 1 &&
          s.attempts == 1 && s.finished_at >= s.started_at);
    baton_league_entry *e;
    size_t n;
    CHECK(baton_league_standings(l, "oval", BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &e, &n, &err) == BATON_OK && n == 1 &&
          !strcmp(e[0].alias, u.alias) && e[0].submitted_at == s.submitted_at);
    free(e);
    CHECK(league_queue_run_one(l, tmp, &ran, &err) == BATON_OK && ran == 0);   /* empty */
    /* left running by a server that died: queued again, and run once */
    CHECK(league_enqueue(l, &u, &id, &err) == BATON_OK && id == 2);
    sqlite3 *h;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK &&
          sqlite3_exec(h, "UPDATE submissions SET state = 1, attempts = 1 WHERE id = 2", NULL, NULL, NULL) == SQLITE_OK);
    size_t requeued;
    CHECK(league_queue_recover(l, &requeued, &err) == BATON_OK && requeued == 1);
    CHECK(league_submission_get(l, 2, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_QUEUED);
    CHECK(league_queue_run_one(l, tmp, &ran, &err) == BATON_OK && ran == 2);
    CHECK(count(l, db, "SELECT count(*) FROM entries") == 2 && count(l, db, "SELECT attempts FROM submissions WHERE id = 2") == 2);
    /* ... and after BATON_LEAGUE_ATTEMPTS starts it fails instead */
    CHECK(league_enqueue(l, &u, &id, &err) == BATON_OK && id == 3);
    CHECK(sqlite3_exec(h, "UPDATE submissions SET state = 1, attempts = 3 WHERE id = 3", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(league_queue_recover(l, &requeued, &err) == BATON_OK && requeued == 0);
    CHECK(league_submission_get(l, 3, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_FAILED &&
          strstr(s.reason, "interrupted 3 times"));
    /* a result for a submission no longer running is not stored (never counted twice) */
    CHECK(league_enqueue(l, &u, &id, &err) == BATON_OK && id == 4);
    CHECK(sqlite3_exec(h, "CREATE TRIGGER steal AFTER UPDATE OF state ON submissions WHEN new.state = 1"
                          " BEGIN UPDATE submissions SET state = 2 WHERE id = new.id; END", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(league_queue_run_one(l, tmp, &ran, &err) == BATON_OK && ran == 4);
    CHECK(count(l, db, "SELECT count(*) FROM entries") == 2);
    CHECK(sqlite3_exec(h, "DROP TRIGGER steal", NULL, NULL, NULL) == SQLITE_OK);
    /* an archive that is no race model: failed with the reason, no entry */
    baton_buf bad = {0};
    tar_entry(&bad, "ckpt-1/MANIFEST", '0', "junk", 4, NULL), tar_end(&bad);
    baton_league_upload v = u;
    snprintf(v.alias, sizeof v.alias, "bob");
    v.archive = bad.data, v.len = bad.len;
    CHECK(league_enqueue(l, &v, &id, &err) == BATON_OK && id == 5);
    CHECK(league_queue_run_one(l, tmp, &ran, &err) == BATON_OK && ran == 5);
    CHECK(league_submission_get(l, 5, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_FAILED && s.reason[0] &&
          !strstr(s.reason, tmp));
    CHECK(count(l, db, "SELECT count(*) FROM entries") == 2 && count(l, db, "SELECT count(*) FROM submissions WHERE archive IS NOT NULL AND id != 4") == 0);
    CHECK(league_submission_get(l, 99, &s, &err) == BATON_ERR_NOTFOUND);
    /* the state machine's table: every move leaves running but claim; done and failed are final,
     * so a move on them moves nothing */
    static const struct { league_sub_event ev; baton_league_state from, to; } mv[] = {
        {LEAGUE_SE_CLAIM, BATON_LEAGUE_QUEUED, BATON_LEAGUE_RUNNING},
        {LEAGUE_SE_DONE_ENTRY, BATON_LEAGUE_RUNNING, BATON_LEAGUE_DONE},
        {LEAGUE_SE_DONE_RACER, BATON_LEAGUE_RUNNING, BATON_LEAGUE_DONE},
        {LEAGUE_SE_FAIL, BATON_LEAGUE_RUNNING, BATON_LEAGUE_FAILED},
        {LEAGUE_SE_GIVE_UP, BATON_LEAGUE_RUNNING, BATON_LEAGUE_FAILED},
        {LEAGUE_SE_REQUEUE, BATON_LEAGUE_RUNNING, BATON_LEAGUE_QUEUED},
        {LEAGUE_SE_RESTART, BATON_LEAGUE_RUNNING, BATON_LEAGUE_QUEUED},
    };
    CHECK_EQ_U(sizeof mv / sizeof mv[0], LEAGUE_SE_N);
    for (size_t k = 0; k < sizeof mv / sizeof mv[0]; k++) {
        baton_league_state from, to;
        CHECK_MSG(league_sub_move_of(mv[k].ev, &from, &to) == 0 && from == mv[k].from && to == mv[k].to, "move %s",
                  league_sub_event_name(mv[k].ev));
    }
    baton_league_state f0, t0;
    CHECK(league_sub_move_of(LEAGUE_SE_N, &f0, &t0) == -1);
    league_sub_move m = {.id = 1, .reason = "late"};
    CHECK(league_sub_step(l, LEAGUE_SE_FAIL, &m, &err) == BATON_OK && m.changed == 0);
    CHECK(league_submission_get(l, 1, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_DONE && !s.reason[0]);
    m = (league_sub_move){.id = 5, .reason = "again"};
    CHECK(league_sub_step(l, LEAGUE_SE_REQUEUE, &m, &err) == BATON_OK && m.changed == 0);
    CHECK(league_submission_get(l, 5, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_FAILED);
    m = (league_sub_move){.id = 5, .ref = 1};
    CHECK(league_sub_step(l, LEAGUE_SE_DONE_ENTRY, &m, &err) == BATON_OK && m.changed == 0);
    CHECK(count(l, db, "SELECT count(*) FROM submissions WHERE state = 1") == 0);
    m = (league_sub_move){0};
    CHECK(league_sub_step(l, LEAGUE_SE_CLAIM, &m, &err) == BATON_OK && m.changed == 0);   /* nothing queued */
    CHECK(league_sub_step(l, (league_sub_event)99, &m, &err) == BATON_ERR_ARG);
    sqlite3_close(h);
    baton_league_close(l);
    baton_buf_free(&bad);
    baton_buf_free(&b);
}

int main(void)
{
    CHECK(mkdtemp(tmp) != NULL);
    test_tar();
    test_request();
    test_tokens();
    test_queue();
    baton_remove_tree(tmp);
    CHECK_DONE();
}
