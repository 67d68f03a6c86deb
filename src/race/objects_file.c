/* objects_file.c — a race's settings from a file (`--race-file F` of race drive, train and eval;
 * race.h, baton_race_objects_load): one YAML or JSON mapping (libyaml reads both), its keys
 * baton's names or deepracer-for-cloud's run.env names for the same settings:
 *
 *   race               DR_RACE_TYPE                           time-trial | object-avoidance | head-to-bot
 *                                                             (or TIME_TRIAL, OBJECT_AVOIDANCE, HEAD_TO_BOT)
 *   objects            DR_OA_NUMBER_OF_OBSTACLES              boxes, 1..16
 *   positions          DR_OA_OBJECT_POSITIONS                 [[progress 0..1, lane -1..1], ...], or
 *                                                             "progress,lane" strings, or one string of
 *                                                             them joined by ';'
 *   randomize          DR_OA_RANDOMIZE_OBSTACLE_LOCATIONS,    true | false
 *                      DR_H2B_RANDOMIZE_BOT_CAR_LOCATIONS
 *   min_gap_m          DR_OA_MIN_DISTANCE_BETWEEN_OBSTACLES   0..100
 *   bots               DR_H2B_NUMBER_OF_BOT_CARS              1..6
 *   bot_speed          DR_H2B_BOT_CAR_SPEED                   m/s, above 0, at most 4
 *   lane_change        DR_H2B_IS_LANE_CHANGE                  true | false
 *   lane_change_min_s  DR_H2B_LOWER_LANE_CHANGE_TIME          above 0
 *   lane_change_max_s  DR_H2B_UPPER_LANE_CHANGE_TIME          at least the lower, at most 3600
 *   lane_change_m      DR_H2B_LANE_CHANGE_DISTANCE            above 0, at most 100
 *   bot_gap_m          DR_H2B_MIN_DISTANCE_BETWEEN_BOT_CARS   0..100
 *
 * Contract: the file is outside input. "race" is required; a key that is unknown, given twice,
 * or of another race type, a value of the wrong kind or out of range is an error naming the file,
 * the line and the key. Unset settings take the race's defaults (baton_race_objects_for_race). */
#include "race_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

typedef struct ctx {
    const char *file;
    yaml_document_t *doc;
    baton_err *err;
} ctx;

static int fail(ctx *c, const yaml_node_t *n, const char *key, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(ctx *c, const yaml_node_t *n, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return baton_err_set(c->err, BATON_ERR_FORMAT, "%s:%d: %s%s%s", c->file, n ? (int)n->start_mark.line + 1 : 1,
                         key ? key : "", key ? ": " : "", msg);
}

static const char *text(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && strlen((const char *)n->data.scalar.value) == n->data.scalar.length
               ? (const char *)n->data.scalar.value : NULL;
}

static int number(ctx *c, const yaml_node_t *n, const char *key, double lo, double hi, double *v)
{
    const char *s = text(n);
    char *end = NULL;
    errno = 0;
    double d = s ? strtod(s, &end) : NAN;
    if (!s || errno || end == s || *end || !isfinite(d)) return fail(c, n, key, "is not a number");
    if (!(d >= lo && d <= hi)) return fail(c, n, key, "%g is outside %g..%g", d, lo, hi);
    *v = d;
    return BATON_OK;
}

static int count(ctx *c, const yaml_node_t *n, const char *key, int lo, int hi, int *v)
{
    double d;
    int rc = number(c, n, key, lo, hi, &d);
    if (!rc && d != floor(d)) rc = fail(c, n, key, "%g is not a whole number", d);
    if (!rc) *v = (int)d;
    return rc;
}

static int boolean(ctx *c, const yaml_node_t *n, const char *key, int *v)
{
    const char *s = text(n);
    if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1"))) *v = 1;
    else if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcmp(s, "0"))) *v = 0;
    else return fail(c, n, key, "is not true or false");
    return BATON_OK;
}

static int race_of(ctx *c, const yaml_node_t *n, const char *key, int *type)
{
    static const char *const names[3][2] = {{"time-trial", "TIME_TRIAL"},
                                            {"object-avoidance", "OBJECT_AVOIDANCE"},
                                            {"head-to-bot", "HEAD_TO_BOT"}};
    const char *s = text(n);
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, names[i][0]) || !strcmp(s, names[i][1])) return *type = i, BATON_OK;
    return fail(c, n, key, "'%.64s' is not a race type (time-trial, object-avoidance or head-to-bot)", s ? s : "");
}

/* one "progress,lane" pair (from a string) into place i */
static int pair_text(ctx *c, const yaml_node_t *n, const char *key, const char *s, baton_race_objects_opts *o)
{
    char *end;
    errno = 0;
    double p = strtod(s, &end), l = NAN;
    if (!errno && end != s && *end == ',') {
        const char *t = end + 1;
        l = strtod(t, &end);
        if (end == t || errno) l = NAN;
        while (*end == ' ') end++;
    }
    if (!isfinite(p) || !isfinite(l) || (*end && *end != ';'))
        return fail(c, n, key, "'%.64s' is not a \"progress,lane\" pair", s);
    if (o->npos >= BATON_RACE_MAX_OBJECTS) return fail(c, n, key, "more than %d places", BATON_RACE_MAX_OBJECTS);
    if (!(p >= 0 && p <= 1) || !(l >= -1 && l <= 1))
        return fail(c, n, key, "place %d: progress %g (0..1) or lane %g (-1..1) out of range", o->npos + 1, p, l);
    o->pos_progress[o->npos] = p, o->pos_lane[o->npos++] = l;
    return BATON_OK;
}

/* positions: a list of [progress, lane] lists or "progress,lane" strings, or one string "p,l;p,l" */
static int positions(ctx *c, const yaml_node_t *n, const char *key, baton_race_objects_opts *o)
{
    int rc = BATON_OK;
    if (text(n)) {
        for (const char *s = text(n); !rc && *s; s = strchr(s, ';') ? strchr(s, ';') + 1 : s + strlen(s)) {
            while (*s == ' ') s++;
            if (*s) rc = pair_text(c, n, key, s, o);
        }
        return rc;
    }
    if (n->type != YAML_SEQUENCE_NODE) return fail(c, n, key, "is not a list of [progress, lane] places");
    for (yaml_node_item_t *it = n->data.sequence.items.start; !rc && it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, *it);
        if (e && text(e)) {
            rc = pair_text(c, e, key, text(e), o);
            continue;
        }
        int k = e && e->type == YAML_SEQUENCE_NODE ? (int)(e->data.sequence.items.top - e->data.sequence.items.start) : 0;
        if (k != 2) return fail(c, e ? e : n, key, "place %d is not a [progress, lane] pair", o->npos + 1);
        double p, l;
        if ((rc = number(c, yaml_document_get_node(c->doc, e->data.sequence.items.start[0]), key, 0, 1, &p)) ||
            (rc = number(c, yaml_document_get_node(c->doc, e->data.sequence.items.start[1]), key, -1, 1, &l)))
            return rc;
        if (o->npos >= BATON_RACE_MAX_OBJECTS) return fail(c, e, key, "more than %d places", BATON_RACE_MAX_OBJECTS);
        o->pos_progress[o->npos] = p, o->pos_lane[o->npos++] = l;
    }
    return rc;
}

enum { K_RACE, K_OBJECTS, K_POSITIONS, K_RANDOMIZE, K_MIN_GAP, K_BOTS, K_SPEED, K_LC, K_LC_MIN, K_LC_MAX, K_LC_M,
       K_BOT_GAP, K_N };
static const struct {
    const char *name, *drfc, *drfc2;
    int race;   /* the race type it belongs to; -1: any */
} keys[K_N] = {
    {"race", "DR_RACE_TYPE", NULL, -1},
    {"objects", "DR_OA_NUMBER_OF_OBSTACLES", NULL, BATON_RACE_OBJECT_AVOIDANCE},
    {"positions", "DR_OA_OBJECT_POSITIONS", NULL, BATON_RACE_OBJECT_AVOIDANCE},
    {"randomize", "DR_OA_RANDOMIZE_OBSTACLE_LOCATIONS", "DR_H2B_RANDOMIZE_BOT_CAR_LOCATIONS", -1},
    {"min_gap_m", "DR_OA_MIN_DISTANCE_BETWEEN_OBSTACLES", NULL, BATON_RACE_OBJECT_AVOIDANCE},
    {"bots", "DR_H2B_NUMBER_OF_BOT_CARS", NULL, BATON_RACE_HEAD_TO_BOT},
    {"bot_speed", "DR_H2B_BOT_CAR_SPEED", NULL, BATON_RACE_HEAD_TO_BOT},
    {"lane_change", "DR_H2B_IS_LANE_CHANGE", NULL, BATON_RACE_HEAD_TO_BOT},
    {"lane_change_min_s", "DR_H2B_LOWER_LANE_CHANGE_TIME", NULL, BATON_RACE_HEAD_TO_BOT},
    {"lane_change_max_s", "DR_H2B_UPPER_LANE_CHANGE_TIME", NULL, BATON_RACE_HEAD_TO_BOT},
    {"lane_change_m", "DR_H2B_LANE_CHANGE_DISTANCE", NULL, BATON_RACE_HEAD_TO_BOT},
    {"bot_gap_m", "DR_H2B_MIN_DISTANCE_BETWEEN_BOT_CARS", NULL, BATON_RACE_HEAD_TO_BOT},
};

static int key_of(const char *s)
{
    for (int k = 0; s && k < K_N; k++)
        if (!strcmp(s, keys[k].name) || !strcmp(s, keys[k].drfc) || (keys[k].drfc2 && !strcmp(s, keys[k].drfc2))) return k;
    return -1;
}

/* the value of key k (named as the file names it) into the settings */
static int value(ctx *c, int k, const char *key, const yaml_node_t *v, int type, baton_race_objects_opts *o)
{
    if (keys[k].race >= 0 && keys[k].race != type)
        return fail(c, v, key, "belongs to %s, not %s", baton_race_type_name(keys[k].race), baton_race_type_name(type));
    switch (k) {
    case K_OBJECTS: return count(c, v, key, 1, BATON_RACE_MAX_OBJECTS, &o->boxes);
    case K_POSITIONS: return positions(c, v, key, o);
    case K_RANDOMIZE:
        if (type == BATON_RACE_TIME_TRIAL) return fail(c, v, key, "a time trial has nothing to place");
        return boolean(c, v, key, &o->randomize);
    case K_MIN_GAP: return number(c, v, key, 0, 100, &o->min_gap_m);
    case K_BOTS: return count(c, v, key, 1, BATON_RACE_MAX_BOTS, &o->bots);
    case K_SPEED:
        if (number(c, v, key, 0, 4, &o->bot_speed_mps)) return c->err->code;
        return o->bot_speed_mps > 0 ? BATON_OK : fail(c, v, key, "must be above 0 m/s");
    case K_LC: return boolean(c, v, key, &o->lane_change);
    case K_LC_MIN: return number(c, v, key, 1e-3, 3600, &o->lane_change_min_s);
    case K_LC_MAX: return number(c, v, key, 1e-3, 3600, &o->lane_change_max_s);
    case K_LC_M: return number(c, v, key, 1e-3, 100, &o->lane_change_m);
    case K_BOT_GAP: return number(c, v, key, 0, 100, &o->bot_gap_m);
    default: return BATON_OK;   /* K_RACE: read first */
    }
}

static int read_map(ctx *c, const yaml_node_t *root, int *type, baton_race_objects_opts *o)
{
    if (!root || root->type != YAML_MAPPING_NODE) return fail(c, root, NULL, "not a mapping of race settings");
    const yaml_node_pair_t *p0 = root->data.mapping.pairs.start, *p1 = root->data.mapping.pairs.top;
    const yaml_node_t *at[K_N] = {0};
    const char *named[K_N] = {0};
    for (const yaml_node_pair_t *p = p0; p < p1; p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        int id = key_of(k ? text(k) : NULL);
        if (id < 0) return fail(c, k, NULL, "'%.64s' is not a race setting", k && text(k) ? text(k) : "?");
        if (at[id]) return fail(c, k, text(k), "is given twice (also as %s)", named[id]);
        at[id] = yaml_document_get_node(c->doc, p->value), named[id] = text(k);
    }
    if (!at[K_RACE]) return fail(c, root, NULL, "no \"race\" (time-trial, object-avoidance or head-to-bot)");
    int rc = race_of(c, at[K_RACE], named[K_RACE], type);
    int n = *type == BATON_RACE_OBJECT_AVOIDANCE ? 6 : *type == BATON_RACE_HEAD_TO_BOT ? 3 : 0;
    baton_race_objects_opts_default(o);
    if (!rc && (rc = baton_race_objects_for_race(*type, n, o, c->err))) return rc;
    for (int k = K_OBJECTS; !rc && k < K_N; k++)
        if (at[k]) rc = value(c, k, named[k], at[k], *type, o);
    if (!rc && o->npos && !at[K_OBJECTS]) o->boxes = o->npos;   /* the places say how many */
    if (!rc && baton_race_objects_check(o, c->err)) {
        char m[sizeof c->err->msg];
        snprintf(m, sizeof m, "%s", c->err->msg);
        rc = baton_err_set(c->err, BATON_ERR_FORMAT, "%s: %s", c->file, m);
    }
    return rc;
}

int baton_race_objects_load(const char *path, int *race_type, baton_race_objects_opts *out, baton_err *err)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = baton_file_read_all(path, 1u << 20, &buf, &len, err);
    if (rc) return rc;
    yaml_parser_t parser;
    yaml_document_t doc;
    ctx c = {path, &doc, err};
    if (!yaml_parser_initialize(&parser)) {
        free(buf);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    }
    yaml_parser_set_input_string(&parser, buf, len);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%d: %s", path, (int)parser.problem_mark.line + 1,
                           parser.problem ? parser.problem : "not YAML or JSON");
    } else {
        baton_race_objects_opts o;
        int type = 0;
        rc = read_map(&c, yaml_document_get_root_node(&doc), &type, &o);
        if (!rc) *out = o, *race_type = type;
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    free(buf);
    return rc;
}
