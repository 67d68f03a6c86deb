/* league_web_h2m.c — head-to-model on the league's server (league.h, league_h2m.c): its page,
 * /track/NAME?race=head-to-model — the board by rating, the latest matches with each car's result,
 * the track with its racing line, and a replay of a match with every car (each car's line and a
 * dot moving along it at 15 steps a second, in its own colour; a car that has finished stays where
 * it finished) — and its JSON API:
 *   GET /api/ratings?track=T          the board: each alias's latest racer by rating, with its
 *                                     matches, wins and losses (every track when T is absent);
 *   GET /api/matches?track=T          the matches, newest first (at most 200), each car's result;
 *   GET /api/matches/ID/trace         every car's drive: x, y, speed after each step, for a replay
 *                                     with every car.
 * Aliases travel as JSON strings (escaped by cJSON); a track that is not one is 404. */
#include "league_web_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MATCHES_MAX 200
#define PAGE_MATCHES 50

/* Every car of a match: its line and its dot (#cars holds one <g class="car"> per car). */
static const char replay_js[] =
    "<script>\n(function(){\n"
    "var svg=document.querySelector('#track svg'),cg=document.getElementById('cars'),st=document.getElementById('status');\n"
    "var m={x0:+svg.dataset.x0,y1:+svg.dataset.y1,s:+svg.dataset.scale,l:+svg.dataset.left,t:+svg.dataset.top};\n"
    "var colours=['#d62728','#1f77b4','#2ca02c','#ff7f0e'],tr=null,t0=0,ns='http://www.w3.org/2000/svg';\n"
    "function px(x){return m.l+(x-m.x0)*m.s}function py(y){return m.t+(m.y1-y)*m.s}\n"
    "function show(k){var gs=cg.children;tr.cars.forEach(function(c,i){var j=Math.min(k,c.steps-1),d=gs[i].lastChild;\n"
    " d.setAttribute('cx',px(c.x[j]).toFixed(2));d.setAttribute('cy',py(c.y[j]).toFixed(2))});\n"
    " st.textContent='match '+tr.id+': step '+(k+1)+' of '+tr.steps+', '+tr.cars.length+' cars'}\n"
    "function frame(now){if(!tr)return;var k=Math.max(0,Math.floor((now-t0)/1000*15));if(k>=tr.steps){t0=now;k=0}\n"
    " show(k);requestAnimationFrame(frame)}\n"
    "function play(id){fetch('/api/matches/'+id+'/trace').then(function(r){return r.json()}).then(function(d){\n"
    " if(!d.cars||!d.cars.length)return;while(cg.firstChild)cg.removeChild(cg.firstChild);\n"
    " d.steps=Math.max.apply(null,d.cars.map(function(c){return c.steps}));\n"
    " d.cars.forEach(function(c,i){var g=document.createElementNS(ns,'g'),l=document.createElementNS(ns,'polyline'),\n"
    "  dot=document.createElementNS(ns,'circle'),p=[];for(var k=0;k<c.steps;k++)p.push(px(c.x[k]).toFixed(1)+','+py(c.y[k]).toFixed(1));\n"
    "  g.setAttribute('class','car');g.dataset.start=c.start;l.setAttribute('fill','none');l.setAttribute('stroke',colours[i%4]);\n"
    "  l.setAttribute('stroke-width','1.5');l.setAttribute('points',p.join(' '));dot.setAttribute('r','6');\n"
    "  dot.setAttribute('fill',colours[i%4]);dot.setAttribute('stroke','white');g.appendChild(l);g.appendChild(dot);cg.appendChild(g)});\n"
    " tr=d;document.querySelectorAll('#matches tr').forEach(function(r){r.classList.toggle('sel',r.dataset.match==id)});\n"
    " show(0);t0=performance.now();requestAnimationFrame(frame)})}\n"
    "document.querySelectorAll('button[data-match]').forEach(function(b){b.onclick=function(){play(b.dataset.match)}});\n"
    "var first=document.querySelector('button[data-match]');if(first)play(first.dataset.match);\n"
    "})();\n</script>\n";

static unsigned status_of(int rc)
{
    return rc == BATON_ERR_NOTFOUND ? 404 : rc == BATON_ERR_ARG || rc == BATON_ERR_USAGE || rc == BATON_ERR_FORMAT ? 404 : 500;
}

enum MHD_Result league_api_ratings(baton_league_server *s, struct MHD_Connection *c)
{
    const char *track = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "track");
    baton_league_racer *r;
    size_t n;
    baton_err err = {0};
    int rc = baton_league_h2m_ratings(s->l, track, &r, &n, &err);
    if (rc) return league_reply_error(s, c, status_of(rc), err.msg);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "race", "head-to-model");
    cJSON_AddStringToObject(j, "rating", "bradley-terry");
    if (track) cJSON_AddStringToObject(j, "track", track);
    cJSON *a = cJSON_AddArrayToObject(j, "racers");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, baton_league_racer_json(&r[i]));
    free(r);
    return league_reply_json(c, 200, j);
}

enum MHD_Result league_api_matches(baton_league_server *s, struct MHD_Connection *c)
{
    const char *track = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "track");
    baton_league_match *m;
    size_t n;
    baton_err err = {0};
    int rc = baton_league_h2m_matches(s->l, track, MATCHES_MAX, &m, &n, &err);
    if (rc) return league_reply_error(s, c, status_of(rc), err.msg);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "race", "head-to-model");
    if (track) cJSON_AddStringToObject(j, "track", track);
    cJSON *a = cJSON_AddArrayToObject(j, "matches");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, baton_league_match_json(&m[i]));
    free(m);
    return league_reply_json(c, 200, j);
}

enum MHD_Result league_api_match_trace(baton_league_server *s, struct MHD_Connection *c, long long id)
{
    baton_err err = {0};
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "id", (double)id);
    cJSON *cars = cJSON_AddArrayToObject(j, "cars");
    int slot = 0, rc = BATON_OK;
    for (; slot < BATON_PPO_MATCH_MAX; slot++) {
        size_t n;
        float *x, *y, *v;
        if ((rc = baton_league_h2m_drive(s->l, id, slot, &n, &x, &y, &v, &err))) break;
        cJSON *car = cJSON_CreateObject();
        cJSON_AddNumberToObject(car, "start", slot + 1);
        cJSON_AddNumberToObject(car, "steps", (double)n);
        const float *f[3] = {x, y, v};
        const char *names[3] = {"x", "y", "v"};
        for (int k = 0; k < 3; k++) cJSON_AddItemToObject(car, names[k], league_json_rounded(f[k], n, 1, 4));
        cJSON_AddItemToArray(cars, car);
        free(x);
    }
    if (rc != BATON_ERR_NOTFOUND || slot == 0) {   /* past the last car: done; no car at all: no match */
        cJSON_Delete(j);
        return league_reply_error(s, c, rc == BATON_ERR_NOTFOUND ? 404 : 500,
                                  rc == BATON_ERR_NOTFOUND ? "no such match" : err.msg);
    }
    return league_reply_json(c, 200, j);
}

static void board_table(baton_buf *b, const baton_league_racer *r, size_t n)
{
    baton_buf_printf(b, "<table id=\"ratings\"><thead><tr><th>rank</th><th class=\"alias\">alias</th><th>rating</th><th>matches</th>"
                     "<th>wins</th><th>losses</th><th>submitted (UTC)</th><th>model</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < n; i++) {
        char when[32];
        league_utc_minutes(r[i].submitted_at, when);
        baton_buf_printf(b, "<tr data-racer=\"%lld\" data-rank=\"%u\"><td>%u</td><td class=\"alias\">", (long long)r[i].id,
                      r[i].rank, r[i].rank);
        baton_buf_esc_xml(b, r[i].alias);
        baton_buf_printf(b, "</td><td>%.0f</td><td>%u</td><td>%u</td><td>%u</td><td>%s</td><td><code>%.12s</code></td></tr>\n",
                      r[i].rating, r[i].matches, r[i].wins, r[i].losses, when, r[i].model_hash);
    }
    if (!n) baton_buf_printf(b, "<tr><td class=\"alias\" colspan=\"8\">no racers yet: <code>baton race submit --race head-to-model</code></td></tr>\n");
    baton_buf_printf(b, "</tbody></table>\n");
}

static void matches_table(baton_buf *b, const baton_league_match *m, size_t n)
{
    baton_buf_printf(b, "<table id=\"matches\"><thead><tr><th>match</th><th class=\"alias\">cars, in start order: position, total</th>"
                     "<th></th></tr></thead><tbody>\n");
    for (size_t i = 0; i < n; i++) {
        baton_buf_printf(b, "<tr data-match=\"%lld\"><td>%lld</td><td class=\"alias\">", (long long)m[i].id, (long long)m[i].id);
        for (int k = 0; k < m[i].ncars; k++) {
            const baton_league_match_car *c = &m[i].car[k];
            baton_buf_printf(b, "%s", k ? " · " : "");
            baton_buf_esc_xml(b, c->alias);
            baton_buf_printf(b, " %d. %.2f s%s", c->position, c->total_s, c->completed ? "" : " (did not finish)");
        }
        baton_buf_printf(b, "</td><td><button data-match=\"%lld\">replay</button></td></tr>\n", (long long)m[i].id);
    }
    baton_buf_printf(b, "</tbody></table>\n");
}

enum MHD_Result league_page_h2m(baton_league_server *s, struct MHD_Connection *c, const char *track)
{
    baton_league_racer *r = NULL;
    baton_league_match *m = NULL;
    size_t n = 0, nm = 0;
    baton_err err = {0};
    if (baton_league_h2m_ratings(s->l, track, &r, &n, &err) || baton_league_h2m_matches(s->l, track, PAGE_MATCHES, &m, &nm, &err)) {
        free(r);
        return league_reply_error(s, c, 500, err.msg);
    }
    if (!n) {
        free(m);
        return league_reply_error(s, c, 404, "no head-to-model racers on this track");
    }
    baton_race_track *t = NULL;
    const baton_race_limit_result *lr = NULL;
    if (league_track_view_get(s, r[0].track_path, &t, &lr, &err)) {
        free(r);
        free(m);
        return league_reply_error(s, c, 500, err.msg);
    }
    baton_buf b = {0};
    char title[512];
    snprintf(title, sizeof title, "%s — head-to-model, by rating — baton league", track);
    league_page_head(&b, title);
    baton_buf_printf(&b, "<p><a href=\"/\">all tracks</a> · <a href=\"?race=time-trial\">time-trial</a></p>\n<h1>");
    baton_buf_esc_xml(&b, track);
    baton_buf_printf(&b, " — <span id=\"race\">head-to-model</span>, by rating</h1>\n");
    baton_buf_printf(&b, "<p>each new model races the track's top %d twice, from both starts: %d laps, 1 m apart, %g s per reset "
                      "and per crash into a car ahead; ratings are Bradley–Terry's fit to every match (1500 the reference).</p>\n",
                  BATON_LEAGUE_H2M_TOP, BATON_LEAGUE_LAPS, BATON_LEAGUE_PENALTY_S);
    board_table(&b, r, n);
    matches_table(&b, m, nm);
    baton_buf_printf(&b, "<p id=\"status\">%s</p>\n<div id=\"track\">", nm ? "" : "no matches yet");
    baton_race_svg_line lines[1] = {{"racing line (limit)", lr->racing.x, lr->racing.y, NULL, lr->racing.n, 1}};
    size_t at = b.len;
    baton_race_svg_buf(&b, t, title, lines, 1);
    if (b.data && b.len - at >= 7 && !memcmp(b.data + b.len - 7, "</svg>\n", 7)) b.len -= 7;   /* the cars go inside */
    baton_buf_printf(&b, "<g id=\"cars\"></g></svg>\n</div>\n");
    baton_buf_append(&b, replay_js, strlen(replay_js));
    baton_buf_printf(&b, "</body></html>\n");
    league_track_view_put(s);
    free(r);
    free(m);
    return league_reply_buf(c, &b, "text/html; charset=utf-8");
}

int league_h2m_index(baton_league_server *s, baton_buf *b, baton_err *err)
{
    baton_league_racer *r;
    size_t n;
    int rc = baton_league_h2m_ratings(s->l, NULL, &r, &n, err);   /* every track's board, tracks by name */
    if (rc || !n) {
        free(rc ? NULL : r);
        return rc;
    }
    baton_buf_printf(b, "<h2>head-to-model</h2>\n<table id=\"h2m-tracks\"><thead><tr><th class=\"alias\">track</th><th>racers</th>"
                     "<th class=\"alias\">leader</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && !strcmp(r[j].track, r[i].track)) j++;
        baton_buf_printf(b, "<tr><td class=\"alias\"><a href=\"/track/");
        league_put_url_part(b, r[i].track);
        baton_buf_printf(b, "?race=head-to-model\">");
        baton_buf_esc_xml(b, r[i].track);
        baton_buf_printf(b, "</a></td><td>%zu</td><td class=\"alias\">", j - i);
        baton_buf_esc_xml(b, r[i].alias);   /* rank 1: the board's first */
        baton_buf_printf(b, " (%.0f)</td></tr>\n", r[i].rating);
        i = j;
    }
    baton_buf_printf(b, "</tbody></table>\n");
    free(r);
    return BATON_OK;
}
