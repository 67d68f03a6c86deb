/* track_builtin.c — baton's own tracks, kept as data: each is a list of segments (a straight of
 * some length, or an arc of some radius turning some degrees, left positive) driven
 * counter-clockwise from the start line at (0, 0) heading +x, 0.76 m wide (as re:Invent 2018).
 * Waypoints are placed about every 0.15 m (the spacing of DeepRacer's own files) and given as
 * DeepRacer rows: centre, inner (left) and outer (right) border; the last row repeats the first.
 *
 *   oval       two 4 m straights joined by half circles of 1.6 m radius: 18.05 m
 *   technical  a 7 m straight into a 0.6 m hairpin, a right-left pair of 0.8 m corners, a chicane
 *              (right 60°, left 120°, right 60° at 0.6 m), two 1 m corners back to the straight:
 *              23.16 m. The two closing straights were solved so the loop closes on itself. */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct seg {
    char kind;        /* 'S' straight, 'A' arc */
    double a, deg;    /* straight: length; arc: radius and turn (degrees, left positive) */
} seg;

static const seg oval[] = {
    {'S', 2.0, 0}, {'A', 1.6, 180}, {'S', 4.0, 0}, {'A', 1.6, 180}, {'S', 2.0, 0},
};

static const seg technical[] = {
    {'S', 6.0, 0},                    /* the long straight, from the start line */
    {'A', 0.6, 180},                  /* hairpin */
    {'S', 1.5, 0},  {'A', 0.8, -90},  {'S', 1.0, 0}, {'A', 0.8, 90}, {'S', 0.8, 0},
    {'A', 0.6, -60}, {'A', 0.6, 120}, {'A', 0.6, -60},   /* chicane */
    {'S', 1.021539030917351, 0},      /* solved for closure */
    {'A', 1.0, 90}, {'S', 1.8, 0}, {'A', 1.0, 90},
    {'S', 1.0, 0},                    /* the straight's first metre, before the start line */
};

static const struct {
    const char *name;
    const seg *segs;
    size_t n;
} designs[] = {
    {"oval", oval, sizeof oval / sizeof oval[0]},
    {"technical", technical, sizeof technical / sizeof technical[0]},
};

static const char *const names[] = {"oval", "technical", NULL};

const char *const *baton_race_builtin_tracks(void)
{
    return names;
}

#define STEP_M 0.15
#define HALF_W 0.38

static size_t seg_points(const seg *s)
{
    double len = s->kind == 'S' ? s->a : s->a * fabs(s->deg) * RACE_PI / 180;
    size_t n = (size_t)ceil(len / STEP_M - 1e-9);
    return n ? n : 1;
}

static void put_row(double *r, double x, double y, double h)
{
    double nx = -sin(h), ny = cos(h);
    r[0] = x, r[1] = y;
    r[2] = x + HALF_W * nx, r[3] = y + HALF_W * ny;
    r[4] = x - HALF_W * nx, r[5] = y - HALF_W * ny;
}

int race_builtin_rows(const char *name, double **rows, size_t *n, baton_err *err)
{
    *rows = NULL;
    *n = 0;
    for (size_t d = 0; d < sizeof designs / sizeof designs[0]; d++) {
        if (strcmp(name, designs[d].name)) continue;
        size_t total = 1;
        for (size_t i = 0; i < designs[d].n; i++) total += seg_points(&designs[d].segs[i]);
        double *r = malloc(total * 6 * sizeof *r);
        if (!r) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
        double x = 0, y = 0, h = 0;
        size_t k = 0;
        put_row(r + 6 * k++, x, y, h);
        for (size_t i = 0; i < designs[d].n; i++) {
            const seg *s = &designs[d].segs[i];
            size_t m = seg_points(s);
            if (s->kind == 'S') {
                for (size_t j = 1; j <= m; j++)
                    put_row(r + 6 * k++, x + cos(h) * s->a * (double)j / (double)m,
                            y + sin(h) * s->a * (double)j / (double)m, h);
                x += cos(h) * s->a;
                y += sin(h) * s->a;
            } else {
                double turn = s->deg * RACE_PI / 180, sg = turn > 0 ? 1 : -1;
                double cx = x - sg * s->a * sin(h), cy = y + sg * s->a * cos(h);
                for (size_t j = 1; j <= m; j++) {
                    double hj = h + turn * (double)j / (double)m;
                    put_row(r + 6 * k++, cx + sg * s->a * sin(hj), cy - sg * s->a * cos(hj), hj);
                }
                h += turn;
                x = r[6 * (k - 1)];
                y = r[6 * (k - 1) + 1];
            }
        }
        /* the design closes to rounding: the last row is the first, exactly */
        memcpy(r + 6 * (total - 1), r, 6 * sizeof *r);
        *rows = r;
        *n = total;
        return BATON_OK;
    }
    return BATON_ERR_NOTFOUND;
}
