/* league_upload.c — a submission over HTTP before it is queued (league.h, "submissions"):
 * parse the request (token, alias, track, format, size; all of it before the body, then the
 * archive's structure) and unpack an archive into a fresh folder to find the race checkpoint in it
 * (its files at the archive's top, or in its one folder, with or without that folder's own entry).
 *
 * Contract: league_request_parse touches no file except to look a track up in the league's
 * tracks folder, and names each refusal with the HTTP status it deserves; a track is a name, never a
 * path; league_unpack_archive writes only under the folder it makes and removes it when it fails; what
 * it says names the archive's entries as the archive names them, never the server's folders. */
#include "league_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* err set from fmt, and the HTTP status to answer with. */
static int refuse(unsigned *http, unsigned status, baton_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int refuse(unsigned *http, unsigned status, baton_err *err, int code, const char *fmt, ...)
{
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    *http = status;
    return baton_err_set(err, code, "%s", msg);
}

static int token_form_ok(const char *t)
{
    if (strlen(t) != BATON_LEAGUE_TOKEN_LEN || strncmp(t, "btn_", 4)) return 0;
    for (const char *p = t + 4; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
    return 1;
}

/* A track's name: 1-128 of [A-Za-z0-9_.-], not starting with '.'; "NAME.npy" means NAME. */
static int track_lookup(const char *name, const baton_league_upload_rules *rules, baton_league_upload *u, unsigned *http,
                        baton_err *err)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128 || name[0] == '.')
        return refuse(http, 400, err, BATON_ERR_ARG, "track: a name of 1-128 characters, not starting with '.'");
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", name[i]))
            return refuse(http, 400, err, BATON_ERR_ARG, "track: letters, digits, '_', '.' and '-' only (a name, not a path)");
    char stem[129];
    snprintf(stem, sizeof stem, "%.*s", (int)(n > 4 && !strcmp(name + n - 4, ".npy") ? n - 4 : n), name);
    for (const char *const *b = baton_race_builtin_tracks(); *b; b++)
        if (!strcmp(*b, stem)) {
            snprintf(u->track, sizeof u->track, "%s", stem);
            snprintf(u->track_path, sizeof u->track_path, "%s", stem);
            return BATON_OK;
        }
    if (rules->tracks_dir) {
        char path[1024];
        struct stat sb;
        int w = snprintf(path, sizeof path, "%s/%s.npy", rules->tracks_dir, stem);
        if (w > 0 && (size_t)w < sizeof path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            char *abs = realpath(path, NULL);
            snprintf(u->track, sizeof u->track, "%s", stem);
            snprintf(u->track_path, sizeof u->track_path, "%s", abs ? abs : path);
            free(abs);
            return BATON_OK;
        }
    }
    return refuse(http, 404, err, BATON_ERR_NOTFOUND,
                  "track '%s': not a built-in track nor one of the league's tracks (GET /api/tracks lists those with entries)",
                  stem);
}

int league_request_head(const baton_league_request *q, const baton_league_upload_rules *rules, baton_league_upload *u,
                        unsigned *http, baton_err *err)
{
    memset(u, 0, sizeof *u);
    *http = 400;
    const char *a = q->authorization;
    if (!a || !*a) return refuse(http, 401, err, BATON_ERR_DENIED, "a token is required: Authorization: Bearer TOKEN");
    if (strncasecmp(a, "Bearer ", 7) || !token_form_ok(a + 7))
        return refuse(http, 401, err, BATON_ERR_DENIED,
                      "Authorization: expected \"Bearer btn_\" and 64 hex digits (baton race token add ALIAS)");
    memcpy(u->token, a + 7, BATON_LEAGUE_TOKEN_LEN + 1);
    if (q->content_type && *q->content_type) {
        size_t n = strcspn(q->content_type, "; \t");
        if (!((n == 17 && !strncasecmp(q->content_type, "application/x-tar", n)) ||
              (n == 24 && !strncasecmp(q->content_type, "application/octet-stream", n))))
            return refuse(http, 415, err, BATON_ERR_FORMAT, "Content-Type '%.100s': the body is a tar (application/x-tar)",
                          q->content_type);
    }
    if (baton_league_alias_check(q->alias, err)) return baton_err_prefix(err, "alias");
    snprintf(u->alias, sizeof u->alias, "%s", q->alias);
    u->race = BATON_RACE_TIME_TRIAL;
    if (q->race && league_race_parse_any(q->race, &u->race, err)) return err->code;
    if (u->race == BATON_LEAGUE_H2M && q->format)
        return refuse(http, 400, err, BATON_ERR_USAGE, "format: head-to-model has none (its board is by rating)");
    u->format = u->race == BATON_LEAGUE_H2M ? BATON_LEAGUE_TOTAL : baton_league_race_format(u->race);
    if (q->format && baton_league_format_parse(q->format, &u->format, err)) return err->code;
    if (!q->track || !*q->track) return refuse(http, 400, err, BATON_ERR_ARG, "track: required (?track=NAME)");
    return track_lookup(q->track, rules, u, http, err);
}

int league_request_parse(const baton_league_request *q, const baton_league_upload_rules *rules,
                               baton_league_upload *u, unsigned *http, baton_err *err)
{
    int rc = league_request_head(q, rules, u, http, err);
    if (rc) return rc;
    size_t max = rules->max_bytes ? rules->max_bytes : BATON_LEAGUE_UPLOAD_MAX;
    if (q->len > max) {
        *http = 413;
        return baton_err_set(err, BATON_ERR_USAGE, "the archive is %zu bytes; this league takes at most %zu", q->len, max);
    }
    if (!q->body || !q->len)
        return refuse(http, 400, err, BATON_ERR_ARG, "an empty body: send the tar of the checkpoint folder");
    baton_league_tar_entry *e;
    size_t n;
    if ((rc = league_tar_read(q->body, q->len, &e, &n, err))) return rc;
    int manifest = 0;
    for (size_t i = 0; i < n && !manifest; i++) {
        const char *s = strrchr(e[i].name, '/');
        manifest = !e[i].is_dir && !strcmp(s ? s + 1 : e[i].name, "MANIFEST");
    }
    free(e);
    if (!manifest)
        return refuse(http, 400, err, BATON_ERR_FORMAT,
                      "no MANIFEST in the archive: send a checkpoint folder (tar -C runs/ckpt-40 -cf - .)");
    u->archive = q->body;
    u->len = q->len;
    return BATON_OK;
}

void league_unpath(char *msg, size_t cap, const char *server, const char *client)
{
    size_t sl = strlen(server), cl = strlen(client);
    if (!sl || !cap) return;
    char out[sizeof ((baton_err *)0)->msg];
    size_t w = 0;
    for (const char *p = msg; *p && w + 1 < sizeof out;) {
        if (!strncmp(p, server, sl)) {
            size_t k = cl < sizeof out - 1 - w ? cl : sizeof out - 1 - w;
            memcpy(out + w, client, k), w += k, p += sl;
        } else {
            out[w++] = *p++;
        }
    }
    out[w] = 0;
    snprintf(msg, cap, "%s", out);
}

void league_unpacked_msg(const league_unpacked *u, char *msg, size_t cap)
{
    char from[4100], to[300];
    if (u->ckpt[0]) {   /* the checkpoint's folder as the archive names it: the longest path first */
        snprintf(from, sizeof from, "%s/", u->ckpt);
        snprintf(to, sizeof to, "%s%s", u->as, u->as[0] ? "/" : "");
        league_unpath(msg, cap, from, to);
        league_unpath(msg, cap, u->ckpt, u->as[0] ? u->as : "the archive");
    }
    if (u->dir[0]) {
        snprintf(from, sizeof from, "%s/up/", u->dir);
        league_unpath(msg, cap, from, "");
        snprintf(from, sizeof from, "%s/up", u->dir);
        league_unpath(msg, cap, from, "the archive");
        league_unpath(msg, cap, u->dir, "the upload's folder");
    }
}

/* A folder holding a MANIFEST must be named ckpt-<step> for the checkpoint store; rename it so,
 * the step read from its state.json. */
static int name_as_ckpt(char *path, size_t cap, baton_err *err)
{
    const char *base = strrchr(path, '/');
    uint64_t step;
    if (baton_ckpt_parse_name(base ? base + 1 : path, &step)) return BATON_OK;
    char sp[4200];
    snprintf(sp, sizeof sp, "%s/state.json", path);
    uint8_t *text;
    size_t len;
    if (baton_file_read_all(sp, 1u << 20, &text, &len, err)) return err->code;
    baton_jr r;
    baton_jr_init(&r, sp, err);
    cJSON *j = baton_jr_parse(&r, (const char *)text, len);
    free(text);
    baton_jr_u64(&r, j, "step", 0, 9007199254740992ull, &step);
    cJSON_Delete(j);
    if (r.rc) return r.rc;
    char parent[4096], to[4200];
    baton_path_dirname(path, parent, sizeof parent);
    snprintf(to, sizeof to, "%s/ckpt-%llu", parent, (unsigned long long)step);
    if (rename(path, to)) return baton_err_errno(err, errno, "cannot rename", path);
    return snprintf(path, cap, "%s", to) < (int)cap ? BATON_OK : baton_err_set(err, BATON_ERR_ARG, "%s: path too long", to);
}

static int has_manifest(const char *dir)
{
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/MANIFEST", dir);
    return lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The archive's one top-level folder, whether or not it has an entry of its own (a shell's glob,
 * `tar cf - x/MANIFEST x/state.json ...`, makes none): its name into top; 0 when the top level
 * holds more than one name. */
static int one_folder(const baton_league_tar_entry *e, size_t n, char top[256])
{
    size_t len = 0;
    int folder = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strcspn(e[i].name, "/");
        if (i && (l != len || strncmp(e[i].name, top, l))) return 0;
        if (!i) memcpy(top, e[i].name, l), top[l] = 0, len = l;
        folder |= e[i].name[l] == '/' || e[i].is_dir;
    }
    return n && folder;
}

/* The archive's checkpoint under root: root itself, or its only folder. u->ckpt gets its path,
 * u->as what the archive calls it. */
static int find_ckpt(const char *root, const baton_league_tar_entry *e, size_t n, league_unpacked *u, baton_err *err)
{
    snprintf(u->ckpt, sizeof u->ckpt, "%s", root);
    char top[256];
    if (!has_manifest(u->ckpt) && one_folder(e, n, top)) {
        if (snprintf(u->ckpt, sizeof u->ckpt, "%s/%s", root, top) >= (int)sizeof u->ckpt)
            return baton_err_set(err, BATON_ERR_ARG, "the upload folder's path is too long");
        snprintf(u->as, sizeof u->as, "%s", top);
    }
    if (has_manifest(u->ckpt) && name_as_ckpt(u->ckpt, sizeof u->ckpt, err)) return err->code;
    /* the model must be a race model that loads: what evaluation will do, done now */
    if (baton_ppo_policy_check(u->ckpt, err)) return baton_err_prefix(err, "not a race model that loads");
    return BATON_OK;
}

int league_unpack(const uint8_t *archive, size_t len, const char *tmp_parent, league_unpacked *u, baton_err *err)
{
    memset(u, 0, sizeof *u);
    const char *parent = tmp_parent ? tmp_parent : getenv("TMPDIR");
    if (!parent || !*parent) parent = "/tmp";
    baton_league_tar_entry *e;
    size_t n;
    int rc = league_tar_read(archive, len, &e, &n, err);
    if (rc) return rc;
    if (snprintf(u->dir, sizeof u->dir, "%s/baton-upload-XXXXXX", parent) >= (int)sizeof u->dir || !mkdtemp(u->dir)) {
        baton_log(BATON_LOG_WARN, "league: cannot make a folder for an upload under %s: %s", parent, strerror(errno));
        u->dir[0] = 0;
        free(e);
        return baton_err_set(err, BATON_ERR_IO, "cannot make a folder for the upload on the server");
    }
    char root[4096];
    if (snprintf(root, sizeof root, "%s/up", u->dir) >= (int)sizeof root)
        rc = baton_err_set(err, BATON_ERR_ARG, "the upload folder's path is too long");
    else if (mkdir(root, 0700))
        rc = baton_err_errno(err, errno, "cannot make the folder", root);
    if (!rc) rc = league_tar_extract(e, n, root, err);
    if (!rc) rc = find_ckpt(root, e, n, u, err);
    free(e);
    if (rc) {
        if (rc == BATON_ERR_IO || rc == BATON_ERR_NOSPACE || rc == BATON_ERR_NOMEM)   /* the server's fault: its log says where */
            baton_log(BATON_LOG_WARN, "league: unpacking an upload: %s", err->msg);
        league_unpacked_msg(u, err->msg, sizeof err->msg);
        baton_remove_tree(u->dir);
        u->dir[0] = u->ckpt[0] = 0;
    }
    return rc;
}

int league_unpack_archive(const uint8_t *archive, size_t len, const char *tmp_parent, char dir[4096], char ckpt[4096],
                        baton_err *err)
{
    league_unpacked u;
    int rc = league_unpack(archive, len, tmp_parent, &u, err);
    memcpy(dir, u.dir, 4096);
    memcpy(ckpt, u.ckpt, 4096);
    return rc;
}
