/* league_objects.c — the objects of an entry's drive (league.h, invariant 7): where each box
 * and bot stood after every step of the league's evaluation, stored beside the car's trace so the
 * page's replay draws them where the drive met them.
 *
 * Stored rather than recomputed: a bot's path depends on the simulator's code (its lane-change
 * draws, its speed along the centre line, how a crash reset moves nothing but the car), and an
 * entry's replay must show what its evaluation saw even after that code changes. The cost is
 * small: 12 bytes per object per step (3 laps with 2 bots: about 30 KB).
 *
 * The row: objects (how many), steps (the trace's), shapes (per object kind, length, width,
 * back_m as float32: BLOB of objects × 16 bytes), data (steps × objects × x, y, yaw float32).
 *
 * Contract: written in the caller's transaction; a row that does not add up is BATON_ERR_CORRUPT
 * naming the entry. */
#include "league_internal.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE_FLOATS 4
#define POSE_FLOATS 3
#define OBJECTS_CAP (BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS)

int league_objects_store(baton_league *l, int64_t id, const baton_ppo_eval_result *r, baton_err *err)
{
    if (!r->nobj) return BATON_OK;
    float shapes[OBJECTS_CAP * SHAPE_FLOATS];
    for (size_t i = 0; i < r->nobj && i < OBJECTS_CAP; i++) {
        shapes[SHAPE_FLOATS * i] = (float)r->obj[i].kind;
        shapes[SHAPE_FLOATS * i + 1] = (float)r->obj[i].length_m;
        shapes[SHAPE_FLOATS * i + 2] = (float)r->obj[i].width_m;
        shapes[SHAPE_FLOATS * i + 3] = (float)r->obj[i].back_m;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "INSERT INTO trace_objects(entry, objects, steps, shapes, data) VALUES(?,?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot store the drive's objects");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)r->nobj);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)r->n);
    sqlite3_bind_blob(st, 4, shapes, (int)(r->nobj * SHAPE_FLOATS * sizeof(float)), SQLITE_STATIC);
    sqlite3_bind_blob64(st, 5, r->obj_pose, r->n * r->nobj * POSE_FLOATS * sizeof(float), SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? BATON_OK : league_db_fail(l, err, "cannot store the drive's objects");
    sqlite3_finalize(st);
    return rc;
}

/* The row's shapes into obj (each placed where it stood first). */
static void read_shapes(const float *sh, const float *pose, size_t nobj, baton_race_object *obj)
{
    for (size_t i = 0; i < nobj; i++) {
        memset(&obj[i], 0, sizeof obj[i]);
        obj[i].kind = sh[SHAPE_FLOATS * i] == (float)BATON_RACE_BOT ? BATON_RACE_BOT : BATON_RACE_BOX;
        obj[i].length_m = sh[SHAPE_FLOATS * i + 1];
        obj[i].width_m = sh[SHAPE_FLOATS * i + 2];
        obj[i].back_m = sh[SHAPE_FLOATS * i + 3];
        obj[i].height_m = obj[i].kind == BATON_RACE_BOT ? BATON_RACE_BOT_HEIGHT_M : BATON_RACE_BOX_HEIGHT_M;
        if (pose) {
            obj[i].x = pose[POSE_FLOATS * i];
            obj[i].y = pose[POSE_FLOATS * i + 1];
            obj[i].yaw = pose[POSE_FLOATS * i + 2];
        }
    }
}

int league_trace_objects(baton_league *l, int64_t id, size_t *nobj, baton_race_object *obj, size_t *steps,
                               float **pose, baton_err *err)
{
    *nobj = 0, *steps = 0, *pose = NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT objects, steps, shapes, data FROM trace_objects WHERE entry = ?", -1, &st, NULL) !=
        SQLITE_OK)
        return league_db_fail(l, err, "cannot read the drive's objects");
    sqlite3_bind_int64(st, 1, id);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {   /* none: a time trial (or an entry stored before version 3) */
        sqlite3_finalize(st);
        return s == SQLITE_DONE ? BATON_OK : league_db_fail(l, err, "cannot read the drive's objects");
    }
    int64_t n = sqlite3_column_int64(st, 0), k = sqlite3_column_int64(st, 1);
    const void *sh = sqlite3_column_blob(st, 2);
    int64_t shlen = sqlite3_column_bytes(st, 2);
    const void *data = sqlite3_column_blob(st, 3);
    int64_t len = sqlite3_column_bytes(st, 3);
    if (n < 1 || n > OBJECTS_CAP || k < 0 || k > (1 << 26) || shlen != n * SHAPE_FLOATS * (int64_t)sizeof(float) ||
        len != k * n * POSE_FLOATS * (int64_t)sizeof(float)) {
        sqlite3_finalize(st);
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: entry %lld: the drive's objects hold %lld bytes for %lld objects"
                             " and %lld steps", l->path, (long long)id, (long long)len, (long long)n, (long long)k);
    }
    float *p = malloc((size_t)len + 1), shapes[OBJECTS_CAP * SHAPE_FLOATS];
    if (!p) {
        sqlite3_finalize(st);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    memcpy(shapes, sh, (size_t)shlen);
    if (len) memcpy(p, data, (size_t)len);
    sqlite3_finalize(st);
    read_shapes(shapes, k ? p : NULL, (size_t)n, obj);
    *nobj = (size_t)n, *steps = (size_t)k, *pose = p;
    return BATON_OK;
}

cJSON *league_json_rounded(const float *v, size_t n, size_t stride, int decimals)
{
    const double scale = decimals >= 4 ? 1e4 : decimals == 3 ? 1e3 : 1e2;
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(round(v[i * stride] * scale) / scale));
    return a;
}

/* The trace answer's "objects" member (GET /api/entries/ID/trace) added to o: "objects":[{kind,
 * length_m, width_m, back_m, x:[...], y:[...], yaw:[...]}...] with one place per step of the trace
 * (steps: the car's); nothing for a drive without objects. */
int league_objects_json(baton_league *l, int64_t id, size_t steps, cJSON *o, baton_err *err)
{
    size_t nobj, k;
    baton_race_object obj[OBJECTS_CAP];
    float *pose;
    int rc = league_trace_objects(l, id, &nobj, obj, &k, &pose, err);
    if (rc || !nobj) {
        free(pose);
        return rc;
    }
    if (k != steps) {
        free(pose);
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: entry %lld: %zu steps of objects for %zu of the car", l->path,
                             (long long)id, k, steps);
    }
    cJSON *a = cJSON_AddArrayToObject(o, "objects");
    for (size_t i = 0; a && i < nobj; i++) {
        cJSON *x = cJSON_CreateObject();
        const float dims[3] = {obj[i].length_m, obj[i].width_m, obj[i].back_m};
        static const char *const dim_names[3] = {"length_m", "width_m", "back_m"};
        cJSON_AddStringToObject(x, "kind", obj[i].kind == BATON_RACE_BOT ? "bot" : "box");
        for (int d = 0; d < 3; d++) cJSON_AddNumberToObject(x, dim_names[d], round(dims[d] * 1e3) / 1e3);
        static const char *const names[POSE_FLOATS] = {"x", "y", "yaw"};
        for (int c = 0; c < POSE_FLOATS; c++)
            cJSON_AddItemToObject(x, names[c], league_json_rounded(pose + i * POSE_FLOATS + c, k, nobj * POSE_FLOATS, 4));
        cJSON_AddItemToArray(a, x);
    }
    free(pose);
    return BATON_OK;
}
