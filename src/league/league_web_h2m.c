/* league_web_h2m.c — head-to-model's JSON API on the league's server (league.h, league_h2m.c):
 *   GET /api/ratings?track=T          the board: each alias's latest racer by rating, with its
 *                                     matches, wins and losses (every track when T is absent);
 *   GET /api/matches?track=T          the matches, newest first (at most 200), each car's result;
 *   GET /api/matches/ID/trace         every car's drive: x, y, speed after each step, for a replay
 *                                     with every car.
 * Aliases travel as JSON strings (escaped by cJSON); a track that is not one is 404. */
#include "league_web_internal.h"

#include <stdlib.h>
#include <string.h>

#define MATCHES_MAX 200

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
    baton_buf b = {0};
    baton_svg_put(&b, "{\"id\":%lld,\"cars\":[", id);
    int slot = 0, rc = BATON_OK;
    for (; slot < BATON_PPO_MATCH_MAX; slot++) {
        size_t n;
        float *x, *y, *v;
        if ((rc = baton_league_h2m_drive(s->l, id, slot, &n, &x, &y, &v, &err))) break;
        baton_svg_put(&b, "%s{\"start\":%d,\"steps\":%zu", slot ? "," : "", slot + 1, n);
        const float *f[3] = {x, y, v};
        const char *names[3] = {"x", "y", "v"};
        for (int k = 0; k < 3; k++) {
            baton_svg_put(&b, ",\"%s\":[", names[k]);
            for (size_t i = 0; i < n; i++) baton_svg_put(&b, i ? ",%.4f" : "%.4f", f[k][i]);
            baton_svg_put(&b, "]");
        }
        baton_svg_put(&b, "}");
        free(x);
    }
    if (rc != BATON_ERR_NOTFOUND || slot == 0) {   /* past the last car: done; no car at all: no match */
        baton_buf_free(&b);
        return league_reply_error(s, c, rc == BATON_ERR_NOTFOUND ? 404 : 500,
                                  rc == BATON_ERR_NOTFOUND ? "no such match" : err.msg);
    }
    baton_svg_put(&b, "]}");
    return league_reply_buf(c, &b, "application/json");
}
