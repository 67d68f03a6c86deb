/* league_web.c — `baton race serve` (league.h): the league's page and JSON API over
 * libmicrohttpd. GET / lists the tracks; GET /track/NAME shows the standings (time trial, or
 * ?format=total), the track with its racing line, and replays an entry's drive (the car moving
 * along its trace at real time, drawn over the SVG by a short inline script: no external scripts
 * or fonts); GET /api/tracks, /api/leaderboard?track=T[&format=F], /api/entries/ID/trace,
 * /api/submissions/ID and head-to-model's /api/ratings, /api/matches and /api/matches/ID/trace
 * (league_web_h2m.c) answer JSON; POST /api/submit queues an upload (league_web_submit.c) that
 * the worker thread evaluates. Anything else is 404 (405 for a method a path does not take).
 *
 * Contract: every alias and track name is escaped where it is written into HTML; one server
 * thread, so its SQLite connection is used by one thread at a time; the worker has its own
 * connection; no request body is read but an accepted upload's, and none is held in memory; a
 * request with a NUL in a query argument (400), more than 16 of them (414), a body where none is
 * taken (400) is answered at once; IDs in paths are canonical decimal; an error's message names
 * no path of the server's (its log does). */
#include "league_web_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A request's context: &not_upload, an upload (league_web_submit.c), &drain_then_route (a short
 * body where none is taken, read and dropped before the answer), or &too_many_args, which the URI
 * log callback sets before libmicrohttpd has parsed the query. */
static int not_upload, too_many_args, drain_then_route;
#define LEAGUE_ARGS_MAX 16   /* query arguments a request may carry: the API takes 3 at most */
/* Connections one client address may hold of the 128: a client holding unfinished requests
 * (slowloris) takes at most this many, and racers at other addresses are still served. */
#define LEAGUE_PER_IP 16
#define LEAGUE_HEAD_S 10.0   /* seconds for a whole request head (league_web_guard.c) */

cJSON *baton_league_entry_json(const baton_league_entry *e)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    if (e->rank) cJSON_AddNumberToObject(j, "rank", e->rank);
    cJSON_AddNumberToObject(j, "id", (double)e->id);
    cJSON_AddStringToObject(j, "alias", e->alias);
    cJSON_AddStringToObject(j, "track", e->track);
    cJSON_AddStringToObject(j, "race", baton_league_race_name(e->race));
    cJSON_AddStringToObject(j, "format", baton_league_format_name(e->format));
    cJSON *set = e->settings[0] ? baton_jr_value(e->settings, strlen(e->settings)) : NULL;
    if (set) cJSON_AddItemToObject(j, "settings", set);
    cJSON_AddBoolToObject(j, "completed", e->completed);
    cJSON_AddNumberToObject(j, "laps", e->laps);
    cJSON_AddNumberToObject(j, "best_lap_s", e->best_lap_s);
    cJSON_AddNumberToObject(j, "total_s", e->total_s);
    cJSON_AddNumberToObject(j, "penalties_s", e->penalties_s);
    cJSON_AddNumberToObject(j, "resets", e->resets);
    cJSON_AddNumberToObject(j, "iteration", (double)e->iteration);
    cJSON_AddStringToObject(j, "model_hash", e->model_hash);
    cJSON_AddNumberToObject(j, "submitted_at", e->submitted_at);
    return j;
}

/* every answer's headers: only the page's own inline script and style, no sniffing */
static const char *const headers[] = {
    "Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'; "
                               "img-src 'self' data:",
    "X-Content-Type-Options", "nosniff", NULL};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype, const void *body, size_t len)
{
    return http_reply(c, status, ctype, body, len, headers);
}

enum MHD_Result league_reply_json(struct MHD_Connection *c, unsigned status, cJSON *j)
{
    return http_reply_json(c, status, j, headers);
}

/* msg without the server's own paths that may reach one: its database's and its tracks folder's
 * (an unpacked upload's are said in the archive's names where they arise: league_unpacked_msg). */
static void client_msg(const baton_league_server *s, char *msg, size_t cap)
{
    const char *const from[] = {s->db_real, s->db_path, s->tracks_real, s->tracks_dir};
    const char *const to[] = {"the league's database", "the league's database", "the league's tracks", "the league's tracks"};
    for (size_t i = 0; i < sizeof from / sizeof *from; i++)
        if (strlen(from[i]) > 1) league_unpath(msg, cap, from[i], to[i]);
}

enum MHD_Result league_reply_error(baton_league_server *s, struct MHD_Connection *c, unsigned status, const char *msg)
{
    char said[sizeof ((baton_err *)0)->msg];
    snprintf(said, sizeof said, "%s", msg);
    client_msg(s, said, sizeof said);
    if (status >= 500 || strcmp(said, msg))   /* the log keeps the paths */
        baton_log(status >= 500 ? BATON_LOG_WARN : BATON_LOG_INFO, "league: answered %u: %s", status, msg);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", said);
    return league_reply_json(c, status, j);
}

enum MHD_Result league_reply_buf(struct MHD_Connection *c, baton_buf *b, const char *ctype)
{
    enum MHD_Result r = b->data ? reply(c, 200, ctype, b->data, b->len) : MHD_NO;
    baton_buf_free(b);
    return r;
}

/* A path segment for a link: letters, digits and ._- as they are, the rest %XX. */
void league_put_url_part(baton_buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("._-", *p))
            baton_buf_append(b, p, 1);
        else
            baton_buf_printf(b, "%%%02X", *p);
    }
}

static const char style[] =
    "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}"
    "th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}th{background:#f3f3f3}"
    "td.alias,th.alias{text-align:left;max-width:28em;overflow-wrap:anywhere}tr.sel{background:#fff3cd}a.sel{font-weight:bold}"
    "button{font-size:12px}#status{color:#555}</style>";

void league_page_head(baton_buf *b, const char *title)
{
    baton_buf_printf(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    baton_buf_esc_xml(b, title);
    baton_buf_printf(b, "</title><link rel=\"icon\" href=\"data:,\">%s</head>\n<body>\n", style);
}

static enum MHD_Result page_index(baton_league_server *s, struct MHD_Connection *c)
{
    baton_league_track *t;
    size_t n;
    baton_err err = {0};
    if (league_tracks(s->l, &t, &n, &err)) return league_reply_error(s, c, 500, err.msg);
    baton_buf b = {0};
    league_page_head(&b, "baton league");
    baton_buf_printf(&b, "<h1>baton league</h1>\n<table id=\"tracks\"><thead><tr><th class=\"alias\">track</th><th>racers</th>"
                      "<th>entries</th><th class=\"alias\">race types</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < n; i++) {
        baton_buf_printf(&b, "<tr><td class=\"alias\"><a href=\"/track/");
        league_put_url_part(&b, t[i].track);
        baton_buf_printf(&b, "\">");
        baton_buf_esc_xml(&b, t[i].track);
        baton_buf_printf(&b, "</a></td><td>%zu</td><td>%zu</td><td class=\"alias\">", t[i].aliases, t[i].entries);
        for (int k = 0, first = 1; k < BATON_LEAGUE_RACES; k++) {   /* the race types it has entries in */
            if (!t[i].race_entries[k]) continue;
            baton_buf_printf(&b, "%s<a href=\"/track/", first ? "" : " · ");
            league_put_url_part(&b, t[i].track);
            baton_buf_printf(&b, "?race=%s\">%s (%zu %s)</a>", baton_league_race_name(k), baton_league_race_name(k),
                          t[i].race_entries[k], t[i].race_entries[k] == 1 ? "entry" : "entries");
            first = 0;
        }
        baton_buf_printf(&b, "</td></tr>\n");
    }
    if (!n) baton_buf_printf(&b, "<tr><td class=\"alias\" colspan=\"4\">no entries yet: <code>baton race submit</code></td></tr>\n");
    baton_buf_printf(&b, "</tbody></table>\n");
    free(t);
    if (league_h2m_index(s, &b, &err)) {
        baton_buf_free(&b);
        return league_reply_error(s, c, 500, err.msg);
    }
    baton_buf_printf(&b, "</body></html>\n");
    return league_reply_buf(c, &b, "text/html; charset=utf-8");
}

/* The replay: reads the picture's world-to-pixel map from the SVG's root, fetches a trace and moves
 * the car along it at 15 steps a second (DeepRacer's), the driven line drawn as it goes; the
 * trace's objects (boxes, bots) drawn as their footprints where the trace puts them at each step
 * (<g class="object"> in #objects, translated to the object's centre and turned to its heading). */
static const char replay_js[] =
    "<script>\n(function(){\n"
    "var svg=document.querySelector('#track svg'),car=document.getElementById('car'),line=document.getElementById('driven');\n"
    "var m={x0:+svg.dataset.x0,y1:+svg.dataset.y1,s:+svg.dataset.scale,l:+svg.dataset.left,t:+svg.dataset.top};\n"
    "var tr=null,t0=0,st=document.getElementById('status');\n"
    "function px(x){return m.l+(x-m.x0)*m.s}function py(y){return m.t+(m.y1-y)*m.s}\n"
    "var og=document.getElementById('objects');\n"
    "function objs(d){while(og.firstChild)og.removeChild(og.firstChild);(d.objects||[]).forEach(function(o){\n"
    " var g=document.createElementNS('http://www.w3.org/2000/svg','g'),r=document.createElementNS('http://www.w3.org/2000/svg','rect');\n"
    " g.setAttribute('class','object');g.dataset.kind=o.kind;r.setAttribute('x',-o.back_m*m.s);r.setAttribute('y',-o.width_m/2*m.s);\n"
    " r.setAttribute('width',o.length_m*m.s);r.setAttribute('height',o.width_m*m.s);\n"
    " r.setAttribute('fill',o.kind=='bot'?'#9467bd':'#8c564b');r.setAttribute('stroke','white');g.appendChild(r);og.appendChild(g)})}\n"
    "function showobjs(k){var gs=og.children;(tr.objects||[]).forEach(function(o,i){\n"
    " gs[i].setAttribute('transform','translate('+px(o.x[k]).toFixed(2)+' '+py(o.y[k]).toFixed(2)+') rotate('+(-o.yaw[k]*180/Math.PI).toFixed(2)+')')})}\n"
    "function show(k){car.setAttribute('cx',px(tr.x[k]));car.setAttribute('cy',py(tr.y[k]));showobjs(k);\n"
    " st.textContent='entry '+tr.id+': step '+(k+1)+' of '+tr.steps+', lap '+(tr.lap[k]+1)+', '+tr.v[k].toFixed(2)+' m/s'}\n"
    "function frame(now){if(!tr)return;var k=Math.max(0,Math.floor((now-t0)/1000*15));if(k>=tr.steps){t0=now;k=0}\n"
    " show(k);requestAnimationFrame(frame)}\n"
    "function play(id){fetch('/api/entries/'+id+'/trace').then(function(r){return r.json()}).then(function(d){\n"
    " if(!d.steps)return;tr=d;var p=[];for(var i=0;i<d.steps;i++)p.push(px(d.x[i]).toFixed(1)+','+py(d.y[i]).toFixed(1));\n"
    " line.setAttribute('points',p.join(' '));car.setAttribute('visibility','visible');objs(d);\n"
    " document.querySelectorAll('#standings tr').forEach(function(r){r.classList.toggle('sel',r.dataset.entry==id)});\n"
    " show(0);t0=performance.now();requestAnimationFrame(frame)})}\n"
    "document.querySelectorAll('button[data-replay]').forEach(function(b){b.onclick=function(){play(b.dataset.replay)}});\n"
    "var first=document.querySelector('button[data-replay]');if(first)play(first.dataset.replay);\n"
    "})();\n</script>\n";

void league_utc_minutes(double t, char out[32])
{
    time_t s = (time_t)t;
    struct tm tm;
    strftime(out, 32, "%Y-%m-%d %H:%M", gmtime_r(&s, &tm));
}

static void standings_table(baton_buf *b, const baton_league_entry *e, size_t n)
{
    baton_buf_printf(b, "<table id=\"standings\"><thead><tr><th>rank</th><th class=\"alias\">alias</th><th>best lap</th>"
                     "<th>total</th><th>resets</th><th>laps</th><th>submitted (UTC)</th><th>model</th><th></th></tr></thead><tbody>\n");
    for (size_t i = 0; i < n; i++) {
        char when[32];
        league_utc_minutes(e[i].submitted_at, when);
        baton_buf_printf(b, "<tr data-entry=\"%lld\" data-rank=\"%u\"><td>%u</td><td class=\"alias\">", (long long)e[i].id,
                      e[i].rank, e[i].rank);
        baton_buf_esc_xml(b, e[i].alias);
        baton_buf_printf(b, "</td><td>%.3f s</td><td>%.3f s</td><td>%u</td><td>%u%s</td><td>%s</td><td><code>%.12s</code></td>"
                         "<td><button data-replay=\"%lld\">replay</button></td></tr>\n",
                      e[i].best_lap_s, e[i].total_s, e[i].resets, e[i].laps, e[i].completed ? "" : " (did not finish)", when,
                      e[i].model_hash, (long long)e[i].id);
    }
    baton_buf_printf(b, "</tbody></table>\n");
}

static int race_and_format(struct MHD_Connection *c, int *race, baton_league_format *f, baton_err *err);

/* The race types' selector: each with its count of entries on the track (the front page's count),
 * the shown one marked. */
static void race_selector(baton_buf *b, const size_t entries[BATON_LEAGUE_RACES], int race)
{
    baton_buf_printf(b, "<p id=\"races\">race type:");
    for (int r = 0; r < BATON_LEAGUE_RACES; r++)
        baton_buf_printf(b, " <a href=\"?race=%s\" data-race=\"%s\" data-entries=\"%zu\"%s>%s (%zu %s)</a>",
                      baton_league_race_name(r), baton_league_race_name(r), entries[r], r == race ? " class=\"sel\"" : "",
                      baton_league_race_name(r), entries[r], entries[r] == 1 ? "entry" : "entries");
    baton_buf_printf(b, " <a href=\"?race=head-to-model\" data-race=\"head-to-model\">head-to-model (rated)</a></p>\n");
}

/* What the league drives a race's models under, in a sentence for the page. */
static void race_rules(baton_buf *b, int race)
{
    baton_buf_printf(b, "the league drives every model itself under the race's official settings: %d laps from a standing start, "
                     "%g s per reset", BATON_LEAGUE_LAPS, BATON_LEAGUE_PENALTY_S);
    if (race == BATON_RACE_OBJECT_AVOIDANCE)
        baton_buf_printf(b, "; %d boxes at fixed places, %g s per crash", BATON_LEAGUE_OA_BOXES, BATON_LEAGUE_COLLISION_PENALTY_S);
    else if (race == BATON_RACE_HEAD_TO_BOT)
        baton_buf_printf(b, "; %d bot cars at %g m/s changing lanes, %g s per crash", BATON_LEAGUE_H2B_BOTS,
                      BATON_LEAGUE_H2B_BOT_SPEED, BATON_LEAGUE_COLLISION_PENALTY_S);
}

static enum MHD_Result page_track(baton_league_server *s, struct MHD_Connection *c, const char *name)
{
    baton_league_format f;
    int race;
    baton_err err = {0};
    const char *rs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "race");
    if (rs && !strcmp(rs, "head-to-model")) return league_page_h2m(s, c, name);
    if (race_and_format(c, &race, &f, &err)) return league_reply_error(s, c, 400, err.msg);
    baton_league_track *t;
    size_t nt;
    if (league_tracks(s->l, &t, &nt, &err)) return league_reply_error(s, c, 500, err.msg);
    size_t k = 0;
    while (k < nt && strcmp(t[k].track, name)) k++;
    if (k == nt) {
        free(t);
        return league_reply_error(s, c, 404, "no such track in the league");
    }
    baton_race_track *track = NULL;
    const baton_race_limit_result *lr = NULL;
    int rc = league_track_view_get(s, t[k].track_path, &track, &lr, &err);   /* computed once per track */
    size_t race_entries[BATON_LEAGUE_RACES];   /* what the front page counts, said here too */
    memcpy(race_entries, t[k].race_entries, sizeof race_entries);
    free(t);
    baton_league_entry *e = NULL;
    size_t n = 0;
    if (rc) return league_reply_error(s, c, 500, err.msg);
    baton_buf b = {0};
    race_selector(&b, race_entries, race);
    if ((rc = baton_league_standings(s->l, name, race, f, &e, &n, &err))) {
        league_track_view_put(s);
        free(e);
        baton_buf_free(&b);
        return league_reply_error(s, c, 500, err.msg);
    }
    baton_buf sel = b;   /* the selector goes after the page's head */
    b = (baton_buf){0};
    char title[512];
    const char *rn = baton_league_race_name(race);
    snprintf(title, sizeof title, "%s — %s, %s — baton league", name, rn,
             f == BATON_LEAGUE_TOTAL ? "total time" : "fastest lap");
    league_page_head(&b, title);
    baton_buf_printf(&b, "<p><a href=\"/\">all tracks</a> · <a href=\"?race=%s&amp;format=%s\">%s</a></p>\n", rn,
                  f == BATON_LEAGUE_TOTAL ? "time-trial" : "total", f == BATON_LEAGUE_TOTAL ? "fastest lap" : "total time");
    baton_buf_append(&b, sel.data, sel.len);
    baton_buf_free(&sel);
    baton_buf_printf(&b, "<h1>");
    baton_buf_esc_xml(&b, name);
    baton_buf_printf(&b, " — <span id=\"race\">%s</span>, %s</h1>\n", rn,
                  f == BATON_LEAGUE_TOTAL ? "total time of 3 laps" : "fastest lap");
    baton_buf_printf(&b, "<p>the racing-line limit: %.3f s a lap; ", lr->lap_s);
    race_rules(&b, race);
    baton_buf_printf(&b, ".</p>\n");
    baton_buf_printf(&b, "<p id=\"counts\">%zu %s ranked from %zu %s (each racer's best)</p>\n", n,
                  n == 1 ? "racer" : "racers", race_entries[race], race_entries[race] == 1 ? "entry" : "entries");
    standings_table(&b, e, n);
    baton_buf_printf(&b, "<p id=\"status\">%s</p>\n<div id=\"track\">", n ? "" : "no entries in this race yet");
    baton_race_svg_line lines[1] = {{"racing line (limit)", lr->racing.x, lr->racing.y, NULL, lr->racing.n, 1}};
    char svgtitle[300];
    baton_race_track_info info;
    baton_race_track_get_info(track, &info);
    snprintf(svgtitle, sizeof svgtitle, "%s: %.2f m", name, info.length_m);
    size_t at = b.len;
    baton_race_svg_buf(&b, track, svgtitle, lines, 1);
    /* the replay's line and car go in before the picture's closing tag */
    if (b.data && b.len - at >= 7 && !memcmp(b.data + b.len - 7, "</svg>\n", 7)) b.len -= 7;
    baton_buf_printf(&b, "<polyline id=\"driven\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"\"/><g id=\"objects\"></g>"
                      "<circle id=\"car\" r=\"6\" fill=\"#d62728\" stroke=\"white\" stroke-width=\"1.5\" visibility=\"hidden\"/>"
                      "</svg>\n</div>\n");
    baton_buf_append(&b, replay_js, strlen(replay_js));
    baton_buf_printf(&b, "</body></html>\n");
    league_track_view_put(s);
    free(e);
    return league_reply_buf(c, &b, "text/html; charset=utf-8");
}

static enum MHD_Result api_tracks(baton_league_server *s, struct MHD_Connection *c)
{
    baton_league_track *t;
    size_t n;
    baton_err err = {0};
    if (league_tracks(s->l, &t, &n, &err)) return league_reply_error(s, c, 500, err.msg);
    cJSON *j = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(j, "tracks");
    for (size_t i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "track", t[i].track);
        cJSON_AddNumberToObject(x, "entries", (double)t[i].entries);
        cJSON_AddNumberToObject(x, "aliases", (double)t[i].aliases);
        cJSON *r = cJSON_AddObjectToObject(x, "races");   /* entries of each race type */
        for (int k = 0; k < BATON_LEAGUE_RACES; k++)
            cJSON_AddNumberToObject(r, baton_league_race_name(k), (double)t[i].race_entries[k]);
        cJSON_AddItemToArray(a, x);
    }
    free(t);
    return league_reply_json(c, 200, j);
}

/* What a client should know before it sends: the largest archive taken, the formats, the race types. */
static enum MHD_Result api_server(baton_league_server *s, struct MHD_Connection *c)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "version", BATON_VERSION);
    cJSON_AddNumberToObject(j, "max_upload_bytes", (double)s->rules.max_bytes);
    cJSON *f = cJSON_AddArrayToObject(j, "formats");
    for (int i = BATON_LEAGUE_TIME_TRIAL; i <= BATON_LEAGUE_TOTAL; i++)
        cJSON_AddItemToArray(f, cJSON_CreateString(baton_league_format_name((baton_league_format)i)));
    cJSON *r = cJSON_AddArrayToObject(j, "races");   /* each race type, its default format and official settings */
    for (int i = 0; i < BATON_LEAGUE_RACES; i++) {
        char set[1024];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "race", baton_league_race_name(i));
        cJSON_AddStringToObject(x, "format", baton_league_format_name(baton_league_race_format(i)));
        if (!league_race_settings(i, set, sizeof set, NULL)) cJSON_AddItemToObject(x, "settings", baton_jr_value(set, strlen(set)));
        cJSON_AddItemToArray(r, x);
    }
    return league_reply_json(c, 200, j);
}

/* ?race=R&format=F as a request gives them: the race (time-trial when absent) and the format (the
 * race's own when absent); 0, else an error naming the argument in err. */
static int race_and_format(struct MHD_Connection *c, int *race, baton_league_format *f, baton_err *err)
{
    const char *rs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "race");
    const char *fs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    *race = BATON_RACE_TIME_TRIAL;
    if (rs && baton_league_race_parse(rs, race, err)) return err->code;
    *f = baton_league_race_format(*race);
    if (fs && baton_league_format_parse(fs, f, err)) return err->code;
    return BATON_OK;
}

static enum MHD_Result api_leaderboard(baton_league_server *s, struct MHD_Connection *c)
{
    const char *track = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "track");
    baton_league_format f;
    int race;
    baton_err err = {0};
    if (race_and_format(c, &race, &f, &err)) return league_reply_error(s, c, 400, err.msg);
    baton_league_entry *e;
    size_t n;
    if (baton_league_standings(s->l, track, race, f, &e, &n, &err)) return league_reply_error(s, c, 500, err.msg);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "race", baton_league_race_name(race));
    cJSON_AddStringToObject(j, "format", baton_league_format_name(f));
    if (track) cJSON_AddStringToObject(j, "track", track);
    cJSON *a = cJSON_AddArrayToObject(j, "entries");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, baton_league_entry_json(&e[i]));
    free(e);
    return league_reply_json(c, 200, j);
}

/* An ID in a path as the API writes it: canonical decimal, 1 to 18 digits, no sign, space or
 * leading zero; *end after it. 0 when rest does not start with one. */
static long long path_id(const char *rest, const char **end)
{
    long long id = 0;
    size_t k = 0;
    if (rest[0] < '1' || rest[0] > '9') return 0;
    for (; rest[k] >= '0' && rest[k] <= '9'; k++) {
        if (k == 18) return 0;
        id = id * 10 + (rest[k] - '0');
    }
    *end = rest + k;
    return id;
}

static enum MHD_Result api_trace(baton_league_server *s, struct MHD_Connection *c, const char *rest)
{
    const char *end = NULL;
    long long id = path_id(rest, &end);
    if (!id || strcmp(end, "/trace")) return league_reply_error(s, c, 404, "expected /api/entries/ID/trace");
    size_t n;
    float *x, *y, *v;
    uint8_t *lap, *reset;
    baton_err err = {0};
    int rc = league_trace(s->l, id, &n, &x, &y, &v, &lap, &reset, &err);
    if (rc) return league_reply_error(s, c, rc == BATON_ERR_NOTFOUND ? 404 : 500, err.msg);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "id", (double)id);
    cJSON_AddNumberToObject(j, "steps", (double)n);
    const float *f[3] = {x, y, v};
    const char *names[3] = {"x", "y", "v"};
    for (int k = 0; k < 3; k++) cJSON_AddItemToObject(j, names[k], league_json_rounded(f[k], n, 1, 4));
    const uint8_t *u[2] = {lap, reset};
    const char *un[2] = {"lap", "reset"};
    for (int k = 0; k < 2; k++) {
        cJSON *a = cJSON_AddArrayToObject(j, un[k]);
        for (size_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(u[k][i]));
    }
    free(x);
    if ((rc = league_objects_json(s->l, id, n, j, &err))) {
        cJSON_Delete(j);
        return league_reply_error(s, c, 500, err.msg);
    }
    return league_reply_json(c, 200, j);
}

static enum MHD_Result api_submission(baton_league_server *s, struct MHD_Connection *c, const char *rest)
{
    const char *end = NULL;
    long long id = path_id(rest, &end);
    if (!id || *end) return league_reply_error(s, c, 404, "expected /api/submissions/ID");
    baton_league_submission sub;
    baton_err err = {0};
    int rc = league_submission_get(s->l, id, &sub, &err);
    if (rc) return league_reply_error(s, c, rc == BATON_ERR_NOTFOUND ? 404 : 500, err.msg);
    cJSON *j = league_submission_json(&sub);
    baton_league_entry e;
    size_t n = 0;
    baton_league_racer racer;
    if (j && sub.state == BATON_LEAGUE_DONE && sub.racer && league_h2m_racer(s->l, sub.racer, &racer, &err) == BATON_OK)
        cJSON_AddItemToObject(j, "result", baton_league_racer_json(&racer));   /* head-to-model: the racer, rated */
    if (j && sub.state == BATON_LEAGUE_DONE && sub.entry &&
        baton_league_entry_standing(s->l, sub.entry, &e, &n, &err) == BATON_OK) {   /* the racer's result, at once */
        cJSON_AddItemToObject(j, "result", baton_league_entry_json(&e));
        cJSON_AddNumberToObject(j, "entries", (double)n);
    }
    return league_reply_json(c, 200, j);
}

/* A query argument with a NUL in it (%00): its name into cls (the check stops there). */
static enum MHD_Result arg_nul(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size, const char *value,
                               size_t value_size)
{
    (void)kind;
    if (strlen(key) == key_size && (!value || strlen(value) == value_size)) return MHD_YES;
    snprintf(cls, 300, "query argument '%.64s': a NUL byte (%%00) at byte %zu; not taken", key,
             strlen(key) != key_size ? strlen(key) : strlen(value));
    return MHD_NO;
}

/* Whether the request says a body follows (libmicrohttpd answered 400 to a malformed length). */
static int has_body(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) || (cl && strtoull(cl, NULL, 10));
}

int league_drainable(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    return cl && strtoull(cl, NULL, 10) <= LEAGUE_DRAIN_MAX && !(ex && strcasestr(ex, "100-continue")) &&
           !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

static enum MHD_Result route(baton_league_server *s, struct MHD_Connection *c, const char *url, const char *method, int body)
{
    if (!strcmp(url, "/api/submit")) return league_reply_error(s, c, 405, "POST the tar of the checkpoint folder to /api/submit");
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) return league_reply_error(s, c, 405, "only GET and HEAD here");
    if (body) return league_reply_error(s, c, 400, "a request body: only POST /api/submit takes one");
    if (!strcmp(url, "/")) return page_index(s, c);
    if (!strncmp(url, "/track/", 7) && url[7]) return page_track(s, c, url + 7);
    if (!strcmp(url, "/api/tracks")) return api_tracks(s, c);
    if (!strcmp(url, "/api/server")) return api_server(s, c);
    if (!strcmp(url, "/api/leaderboard")) return api_leaderboard(s, c);
    if (!strncmp(url, "/api/entries/", 13)) return api_trace(s, c, url + 13);
    if (!strncmp(url, "/api/submissions/", 17)) return api_submission(s, c, url + 17);
    if (!strcmp(url, "/api/ratings")) return league_api_ratings(s, c);
    if (!strcmp(url, "/api/matches")) return league_api_matches(s, c);
    if (!strncmp(url, "/api/matches/", 13)) {
        const char *end = NULL;
        long long id = path_id(url + 13, &end);
        if (!id || strcmp(end, "/trace")) return league_reply_error(s, c, 404, "expected /api/matches/ID/trace");
        return league_api_match_trace(s, c, id);
    }
    return league_reply_error(s, c, 404, "not found");
}

/* libmicrohttpd calls this first with the headers alone, then with each piece of a body, then with
 * none. A request refused or carrying a body it does not take is answered on the first call, so
 * its body is never read (but a short one already on its way: league_drainable); a request
 * without a body is answered on the last (an answer queued on the first closes the connection
 * after it). */
static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    baton_league_server *s = cls;
    (void)version;
    if (*con_cls == NULL || *con_cls == &too_many_args) league_guard_head_done(s, c);   /* the head is whole */
    if (*con_cls == &too_many_args) {
        char msg[160];
        snprintf(msg, sizeof msg, "more than %d query arguments; the league's API takes 3 at most", LEAGUE_ARGS_MAX);
        return league_reply_error(s, c, 414, msg);
    }
    if (*con_cls == NULL) {   /* the first call: headers only */
        char bad[300] = "";
        MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, arg_nul, bad);
        if (bad[0]) return league_reply_error(s, c, 400, bad);
        if (!strcmp(url, "/api/submit") && !strcmp(method, "POST")) return league_submit_begin(s, c, con_cls);
        int body = has_body(c);
        if (body && !league_drainable(c)) return route(s, c, url, method, 1);
        *con_cls = body ? &drain_then_route : &not_upload;
        return MHD_YES;
    }
    if (*con_cls == &not_upload || *con_cls == &drain_then_route) {
        if (*upload_size) {   /* a drained body: dropped */
            *upload_size = 0;
            return MHD_YES;
        }
        return route(s, c, url, method, *con_cls == &drain_then_route);
    }
    if (*upload_size) return league_submit_body(*con_cls, upload, upload_size);   /* an upload's body, then its end */
    return league_submit_end(s, c, *con_cls);
}

/* Before libmicrohttpd parses a request's query it shows this callback the request target.
 * libmicrohttpd 0.9.75 (Debian 12's) keeps each argument in its connection's 32 KiB memory pool;
 * about 490 of them exhaust it, and it then neither answers nor closes until the connection's
 * timeout. Past LEAGUE_ARGS_MAX arguments the query is cut here — the target is libmicrohttpd's
 * own request buffer, which it parses next, so it finds no arguments — and the handler answers
 * 414 on its first call. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls, (void)c;
    char *q = strchr(uri, '?');
    if (!q) return NULL;
    size_t n = 1;
    for (const char *p = q + 1; *p; p++) n += *p == '&';
    if (n <= LEAGUE_ARGS_MAX) return NULL;
    q[1] = 0;
    return &too_many_args;
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    league_guard_request_done(cls, c);   /* the next request's head, if any, from now */
    if (*con_cls && *con_cls != &not_upload && *con_cls != &too_many_args && *con_cls != &drain_then_route)
        league_submit_free(cls, *con_cls);
    *con_cls = NULL;
}

/* After an evaluation the WAL is copied into the database and cut to nothing, so neither keeps
 * growing (PRAGMA secure_delete zeroes what a deleted row leaves). */
static void checkpoint(baton_league *l)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &st, NULL) != SQLITE_OK) return;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0))
        baton_log(BATON_LOG_INFO, "league: the WAL could not be checkpointed now (a reader holds it)");
    sqlite3_finalize(st);
}

/* Wait up to ms for a poke or the stop; a backoff (hard) ignores pokes. Called with s->mu held. */
static void worker_wait(baton_league_server *s, long ms, int hard)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    while (!s->stop && (hard || !s->poke))
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts)) break;
    s->poke = 0;
}

/* Put back the submissions a killed server left running (or fail those at the attempt cap).
 * Until this has been written nothing is evaluated; on a full disk it cannot be, so the server
 * starts anyway, serves its pages and takes uploads, and the worker retries it with the backoff
 * below (0 done, else the error's code). */
static int recover_queue(baton_league_server *s, baton_err *err)
{
    size_t requeued = 0;
    if (league_queue_recover(s->wl, &requeued, err)) return err->code;
    if (requeued)
        baton_log(BATON_LOG_INFO, "league: %zu submission(s) were being evaluated when the server stopped: queued again",
                  requeued);
    s->recovered = 1;
    return BATON_OK;
}

/* The worker: the queue, one submission at a time, until stopped; woken by a new submission
 * or every second (another process may queue into the same database). An attempt the server
 * failed (its entry not stored: a full disk) is queued again and retried after 1, 2, 4 ... 30 s;
 * if even that could not be written, the worker keeps trying to, so a live server never leaves a
 * submission running. The queue's recovery after a kill (recover_queue) comes first, retried the
 * same way. */
static void *worker_main(void *arg)
{
    baton_league_server *s = arg;
    int64_t held = 0;   /* a submission still marked running that must go back to the queue */
    char why[sizeof ((baton_err *)0)->msg] = "";
    long backoff = 0;
    league_track_views_warm(s, s->wl);   /* the pages' drawings, ahead of their first load */
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        int64_t id = 0;
        baton_err err = {0};
        if (!s->recovered && recover_queue(s, &err))
            baton_log(BATON_LOG_WARN, "league: the queue cannot be recovered yet (nothing is evaluated until it is): %s", err.msg);
        else if (held && !league_requeue(s->wl, held, why, &err)) held = 0;
        else if (held) baton_log(BATON_LOG_WARN, "league: submission %lld is still marked running: %s", (long long)held, err.msg);
        if (s->recovered && !held && league_queue_run_one(s->wl, s->tmp_parent, &id, &err)) {
            baton_log(BATON_LOG_WARN, "league: the queue: %s", err.msg);
            if (id) held = id, snprintf(why, sizeof why, "%s", err.msg);
        }
        if (id) checkpoint(s->wl);
        if (id && !err.code) league_track_views_warm(s, s->wl);   /* a new track's page, if any */
        backoff = err.code ? (backoff ? (backoff * 2 > 30000 ? 30000 : backoff * 2) : 1000) : 0;
        pthread_mutex_lock(&s->mu);
        if (id && !err.code) continue;
        worker_wait(s, backoff ? backoff : 1000, backoff > 0);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void baton_league_serve_opts_default(baton_league_serve_opts *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:0";
    o->rules.max_bytes = BATON_LEAGUE_UPLOAD_MAX;
}

static int start_worker(baton_league_server *s, const char *db_path, baton_err *err)
{
    int rc = baton_league_open(db_path, &s->wl, err);
    if (!rc) rc = league_work_clean(s->wl, err);   /* what a server killed mid-evaluation left (before uploads arrive) */
    if (rc) return rc;
    baton_err e2 = {0};
    if (recover_queue(s, &e2))   /* a full disk: the worker retries it; the pages are served meanwhile */
        baton_log(BATON_LOG_WARN, "league: the queue cannot be recovered yet (the worker retries; pages are served): %s", e2.msg);
    if (pthread_create(&s->worker, NULL, worker_main, s))
        return baton_err_set(err, BATON_ERR_IO, "cannot start the league's worker thread");
    s->worker_started = 1;
    return BATON_OK;
}

/* The server's paths: the database's (as given and resolved), its folder (where uploads arrive),
 * the tracks folder's resolved. */
static void paths(baton_league_server *s, const char *db_path)
{
    snprintf(s->db_path, sizeof s->db_path, "%s", db_path);
    char *r = realpath(db_path, NULL);
    snprintf(s->db_real, sizeof s->db_real, "%s", r ? r : db_path);
    baton_path_dirname(s->db_real, s->spool_dir, sizeof s->spool_dir);
    free(r);
    r = s->tracks_dir[0] ? realpath(s->tracks_dir, NULL) : NULL;
    snprintf(s->tracks_real, sizeof s->tracks_real, "%s", r ? r : "");
    free(r);
}

int baton_league_serve_start(const baton_league_serve_opts *o, baton_league_server **out, baton_err *err)
{
    *out = NULL;
    baton_league_server *s = calloc(1, sizeof *s);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    s->views = league_track_views_new();
    pthread_mutex_init(&s->views_mu, NULL);
    if (!s->views) {
        free(s);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_init(&s->guard_mu, NULL);
    pthread_cond_init(&s->guard_cv, NULL);
    s->head_deadline_ms = (long long)((o->head_timeout_s > 0 ? o->head_timeout_s : LEAGUE_HEAD_S) * 1000);
    s->rules = o->rules;
    if (!s->rules.max_bytes) s->rules.max_bytes = BATON_LEAGUE_UPLOAD_MAX;   /* set once: every check reads it */
    if (o->rules.tracks_dir) {
        snprintf(s->tracks_dir, sizeof s->tracks_dir, "%s", o->rules.tracks_dir);
        s->rules.tracks_dir = s->tracks_dir;
    }
    int rc = baton_league_open(o->db_path, &s->l, err);
    if (!rc && o->tmp_parent) snprintf(s->tmp_parent, sizeof s->tmp_parent, "%s", o->tmp_parent);
    else if (!rc) rc = league_work_dir(o->db_path, "unpack", s->tmp_parent, sizeof s->tmp_parent, err);
    if (!rc) paths(s, o->db_path);
    int port = 0, v6 = 0, fd = -1;
    if (!rc) rc = start_worker(s, o->db_path, err);
    if (!rc) rc = league_guard_start(s, err);
    if (!rc) {
        fd = baton_net_listen(o->listen ? o->listen : "127.0.0.1:0", o->allow_remote, s->url, sizeof s->url, &port, &v6, err);
        if (fd < 0) rc = err->code;
    }
    if (!rc) {
        const struct MHD_OptionItem opts[] = {
            {MHD_OPTION_CONNECTION_TIMEOUT, 30, NULL},
            {MHD_OPTION_CONNECTION_LIMIT, 128, NULL},
            {MHD_OPTION_PER_IP_CONNECTION_LIMIT, LEAGUE_PER_IP, NULL},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_done, s},
            {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_log, s},
            {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)league_guard_notify, s},
            {MHD_OPTION_END, 0, NULL}};
        if (!(s->d = http_serve(fd, v6, handler, s, opts, s->url, err))) rc = err->code;
    }
    if (rc) {
        baton_league_serve_stop(s);
        return rc;
    }
    *out = s;
    return BATON_OK;
}

const char *baton_league_serve_url(const baton_league_server *s) { return s->url; }

void baton_league_serve_stop(baton_league_server *s)
{
    if (!s) return;
    if (s->d) MHD_stop_daemon(s->d);
    league_guard_stop(s);
    if (s->worker_started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->worker, NULL);   /* after the evaluation in progress, if any */
    }
    baton_league_close(s->wl);
    baton_league_close(s->l);
    league_track_views_free(s);
    pthread_mutex_destroy(&s->views_mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->guard_cv);
    pthread_mutex_destroy(&s->guard_mu);
    free(s);
}
