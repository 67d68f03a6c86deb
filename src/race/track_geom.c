/* track_geom.c — nearest points on polylines, the track's lines in each direction, and DeepRacer's
 * waypoint bookkeeping on them (closest waypoints by bisection of the normalised distances, the
 * pose at a distance along the centre line).
 *
 * race_poly_near_all is the reference: every segment, ties to the first (shapely's project).
 * race_poly_near walks from a hint segment to a local minimum and looks a few segments further
 * each way before it stops; a point far from what it found falls back to the full scan. */
#include "race_internal.h"

#include <string.h>

/* Nearest point of segment k to (px, py). */
static inline void seg_near(const race_poly *l, size_t k, double px, double py, race_near *r)
{
    const double *a = l->p + 2 * k, *b = a + 2;
    double ex = b[0] - a[0], ey = b[1] - a[1];
    double t = ((px - a[0]) * ex + (py - a[1]) * ey) * l->inv2[k];
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double qx = a[0] + t * ex, qy = a[1] + t * ey, dx = px - qx, dy = py - qy;
    r->seg = k;
    r->d2 = dx * dx + dy * dy;
    r->along = l->cs[k] + t * (l->cs[k + 1] - l->cs[k]);
    r->nx = qx;
    r->ny = qy;
}

void race_poly_near_all(const race_poly *l, double px, double py, race_near *r)
{
    seg_near(l, 0, px, py, r);
    for (size_t k = 1; k + 1 < l->n; k++) {
        race_near c;
        seg_near(l, k, px, py, &c);
        if (c.d2 < r->d2) *r = c;
    }
}

#define NEAR_LOOK 2

/* Segment k + d, wrapped on a loop; -1 past an open line's ends. */
static inline long seg_step(long k, long d, long ns, int loop)
{
    k += d;
    if (loop) return k < 0 ? k + ns : k >= ns ? k - ns : k;
    return k < 0 || k >= ns ? -1 : k;
}

void race_poly_near(const race_poly *l, int loop, size_t hint, double px, double py, race_near *r)
{
    long ns = (long)l->n - 1;
    if ((long)hint >= ns) hint = 0;
    seg_near(l, hint, px, py, r);
    for (int round = 0; round < 64; round++) {
        /* walk downhill one way, then the other */
        for (int dir = 1; dir >= -1; dir -= 2) {
            for (;;) {
                long k = seg_step((long)r->seg, dir, ns, loop);
                if (k < 0) break;
                race_near c;
                seg_near(l, (size_t)k, px, py, &c);
                if (!(c.d2 < r->d2 || (c.d2 == r->d2 && c.seg < r->seg))) break;
                *r = c;
            }
        }
        /* a local minimum (its neighbours are no nearer): look one further each way before
         * stopping (ties to the lower index, as in the full scan) */
        race_near best = *r;
        for (long d = -NEAR_LOOK; d <= NEAR_LOOK; d += 2 * NEAR_LOOK) {
            long k = seg_step((long)r->seg, d, ns, loop);
            if (k < 0) continue;
            race_near c;
            seg_near(l, (size_t)k, px, py, &c);
            if (c.d2 < best.d2 || (c.d2 == best.d2 && c.seg < best.seg)) best = c;
        }
        if (best.seg == r->seg) break;
        *r = best;
    }
}

void race_poly_at(const race_poly *l, double s, size_t *seg, double *x, double *y)
{
    size_t lo = 0, hi = l->n - 1;   /* find k with cs[k] <= s < cs[k+1] */
    if (s <= 0) s = 0;
    if (s >= l->cs[l->n - 1]) s = l->cs[l->n - 1];
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (l->cs[mid] <= s) lo = mid;
        else hi = mid;
    }
    double len = l->cs[lo + 1] - l->cs[lo], t = len > 0 ? (s - l->cs[lo]) / len : 0;
    const double *a = l->p + 2 * lo;
    *x = a[0] + t * (a[2] - a[0]);
    *y = a[1] + t * (a[3] - a[1]);
    if (seg) *seg = lo;
}

void race_geom_closest_hint(const race_geom *g, size_t seg, double ndist, int out[2])
{
    /* bisect_right from the projection's segment: the first index whose value is > ndist */
    size_t lo = seg < g->n ? seg : g->n - 1;
    while (lo < g->n && g->ndist[lo] <= ndist) lo++;
    while (lo > 0 && g->ndist[lo - 1] > ndist) lo--;
    long next = (long)lo, prev = next - 1;
    if (prev == -1) prev = (long)g->n - 1;
    if (next == (long)g->n) next = 0;
    out[0] = (int)prev;
    out[1] = (int)next;
}

void race_geom_closest(const race_geom *g, double ndist, int out[2])
{
    /* next = bisect_right(ndists, ndist): the first index whose value is > ndist */
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g->ndist[mid] <= ndist) lo = mid + 1;
        else hi = mid;
    }
    long next = (long)lo, prev = next - 1;
    if (prev == -1) prev = (long)g->n - 1;
    if (next == (long)g->n) next = 0;
    out[0] = (int)prev;
    out[1] = (int)next;
}

size_t race_geom_at(const race_geom *g, double *s, double *x, double *y, double *u)
{
    if (g->loop) {
        *s = fmod(*s, g->length);
        if (*s < 0) *s += g->length;
    }
    size_t k;
    race_poly_at(&g->cl, *s, &k, x, y);
    double len = g->cs[k + 1] - g->cs[k], t = len > 0 ? (*s - g->cs[k]) / len : 0;
    *u = t < 0 ? 0 : t > 1 ? 1 : t;
    return k;
}

void race_geom_pose(const race_geom *g, double s, double *x, double *y, double *yaw)
{
    double u;
    size_t seg = race_geom_at(g, &s, x, y, &u);
    int cw[2];
    race_geom_closest(g, g->length > 0 ? s / g->length : 0, cw);
    const double *nx = g->c + 2 * (size_t)cw[1];
    double dx = nx[0] - *x, dy = nx[1] - *y;
    if (dx * dx + dy * dy < 1e-18) {   /* on the next waypoint itself: the segment's direction */
        const double *a = g->c + 2 * seg;
        dx = a[2] - a[0];
        dy = a[3] - a[1];
    }
    *yaw = atan2(dy, dx);
}

const race_geom *race_track_geom(const baton_race_track *t, int reversed)
{
    return reversed ? &t->rev : &t->fwd;
}

void baton_race_track_at(const baton_race_track *t, double s, double *x, double *y, double *yaw)
{
    race_geom_pose(&t->fwd, s, x, y, yaw);
}
