/* fuzz_league_request.c — libFuzzer target: a submission's request (league_request_parse).
 * The input is split at its first six newlines into the Authorization header, the Content-Type,
 * the alias, the track, the format and the race type (an empty line: absent); the rest is the body. An accepted
 * request must carry a well-formed token, an alias the league stores, a built-in track's name
 * (never a path: there is no tracks folder here), and its body unchanged; a refusal names an
 * HTTP status the server answers with. */
#include "../../src/league/league_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    copy[size] = 0;
    const char *field[6] = {0};
    char *p = copy;
    size_t used = 0;
    for (int k = 0; k < 6; k++) {
        char *nl = memchr(p, '\n', size - used);
        if (!nl) break;
        *nl = 0;
        field[k] = *p ? p : NULL;
        used += (size_t)(nl - p) + 1;
        p = nl + 1;
    }
    baton_league_request q = {field[0], field[1], field[2], field[3], field[4], (const uint8_t *)p, size - used, field[5]};
    baton_league_upload_rules rules = {1 << 16, NULL};
    baton_league_upload u;
    unsigned http = 0;
    baton_err err = {0};
    if (league_request_parse(&q, &rules, &u, &http, &err) != BATON_OK) {
        if (!err.msg[0] || (http != 400 && http != 401 && http != 404 && http != 413 && http != 415)) abort();
    } else {
        if (strlen(u.token) != BATON_LEAGUE_TOKEN_LEN || strncmp(u.token, "btn_", 4)) abort();
        if (baton_league_alias_check(u.alias, &err) || strcmp(u.alias, q.alias)) abort();
        if (strchr(u.track_path, '/') || strcmp(u.track, u.track_path)) abort();
        int builtin = 0;
        for (const char *const *b = baton_race_builtin_tracks(); *b; b++) builtin |= !strcmp(*b, u.track);
        if (u.race < 0 || u.race >= BATON_LEAGUE_RACES) abort();
        if (!builtin || u.archive != q.body || u.len != q.len || u.len > rules.max_bytes) abort();
    }
    free(copy);
    return 0;
}
