/* track_grid.c — "is this point on the track?" and "how far along this ray is the nearest border?"
 * in constant time, exactly.
 *
 * The track is the even-odd interior of its border edges (DeepRacer: a polygon with the outer
 * border as shell and the inner border as hole). A uniform grid over the edges' bounding box
 * records, per cell, the edges whose bounding box touches it. Each cell's reference point (its
 * centre, nudged) is classified once by a scanline over the edges; a query point in a cell no edge
 * touches has its reference point's answer; in a mixed cell the answer flips once per listed edge
 * that the segment from the reference point to the query point crosses — exact, since both points
 * lie in the convex cell and so does every crossing. Crossings are counted half-open (a vertex
 * counts on one side only), as in the reference test. Rays walk the grid cell by cell (Amanatides
 * and Woo) and stop at the first cell whose edges hit before the ray leaves it. */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

#define GRID_MAX_CELLS ((size_t)1 << 20)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Cell range touched by an edge's bounding box (clamped to the grid). */
static void edge_cells(const race_grid *g, const race_edge *e, int *i0, int *j0, int *i1, int *j1)
{
    double xa = fmin(e->ax, e->bx), xb = fmax(e->ax, e->bx), ya = fmin(e->ay, e->by), yb = fmax(e->ay, e->by);
    double eps = 1e-9;
    *i0 = (int)floor((xa - eps - g->x0) * g->inv);
    *i1 = (int)floor((xb + eps - g->x0) * g->inv);
    *j0 = (int)floor((ya - eps - g->y0) * g->inv);
    *j1 = (int)floor((yb + eps - g->y0) * g->inv);
    if (*i0 < 0) *i0 = 0;
    if (*j0 < 0) *j0 = 0;
    if (*i1 >= g->nx) *i1 = g->nx - 1;
    if (*j1 >= g->ny) *j1 = g->ny - 1;
}

/* Classify every cell's reference point, row by row. */
static int classify(race_grid *g)
{
    double *xs = malloc((g->nedges + 1) * sizeof *xs);
    if (!xs) return BATON_ERR_NOMEM;
    for (int j = 0; j < g->ny; j++) {
        double y = g->y0 + (j + RACE_REF_DY) * g->cell;
        size_t m = 0;
        for (size_t k = 0; k < g->nedges; k++) {
            const race_edge *e = &g->edges[k];
            if ((e->ay > y) != (e->by > y)) xs[m++] = e->ax + (y - e->ay) * (e->bx - e->ax) / (e->by - e->ay);
        }
        qsort(xs, m, sizeof *xs, cmp_double);
        size_t c = 0;
        for (int i = 0; i < g->nx; i++) {
            double x = g->x0 + (i + RACE_REF_DX) * g->cell;
            while (c < m && xs[c] <= x) c++;
            /* on the track iff an odd number of crossings lie to the right of the point */
            size_t cell = (size_t)j * (size_t)g->nx + (size_t)i;
            g->ref_on[cell] = (uint8_t)((m - c) & 1);
            if (g->kind[cell] != 2) g->kind[cell] = g->ref_on[cell];
        }
    }
    free(xs);
    return BATON_OK;
}

int race_grid_build(race_grid *g, const race_edge *edges, size_t nedges, double cell, baton_err *err)
{
    memset(g, 0, sizeof *g);
    if (nedges == 0 || nedges > UINT32_MAX / 2 || !(cell > 0))
        return baton_err_set(err, BATON_ERR_ARG, "track grid: bad edges or cell size");
    double xa = edges[0].ax, xb = xa, ya = edges[0].ay, yb = ya;
    for (size_t k = 0; k < nedges; k++) {
        xa = fmin(xa, fmin(edges[k].ax, edges[k].bx));
        xb = fmax(xb, fmax(edges[k].ax, edges[k].bx));
        ya = fmin(ya, fmin(edges[k].ay, edges[k].by));
        yb = fmax(yb, fmax(edges[k].ay, edges[k].by));
    }
    for (;;) {   /* grow the cells until the grid fits the budget */
        double nxd = ceil((xb - xa) / cell) + 2, nyd = ceil((yb - ya) / cell) + 2;
        if (nxd * nyd <= (double)GRID_MAX_CELLS) {
            g->nx = (int)nxd;
            g->ny = (int)nyd;
            break;
        }
        cell *= 2;
    }
    g->cell = cell;
    g->inv = 1 / cell;
    g->x0 = xa - cell;
    g->y0 = ya - cell;
    g->edges = edges;
    g->nedges = nedges;
    size_t nc = (size_t)g->nx * (size_t)g->ny;
    g->kind = calloc(nc, 1);
    g->ref_on = calloc(nc, 1);
    g->off = calloc(nc + 1, sizeof *g->off);
    if (!g->kind || !g->ref_on || !g->off) goto nomem;
    for (size_t k = 0; k < nedges; k++) {
        int i0, j0, i1, j1;
        edge_cells(g, &edges[k], &i0, &j0, &i1, &j1);
        for (int j = j0; j <= j1; j++)
            for (int i = i0; i <= i1; i++) g->off[(size_t)j * (size_t)g->nx + (size_t)i + 1]++;
    }
    for (size_t c = 0; c < nc; c++) {
        if (g->off[c + 1]) g->kind[c] = 2;
        g->off[c + 1] += g->off[c];
    }
    g->idx = malloc((g->off[nc] + 1) * sizeof *g->idx);
    uint32_t *fill = malloc(nc * sizeof *fill);
    if (!g->idx || !fill) {
        free(fill);
        goto nomem;
    }
    memcpy(fill, g->off, nc * sizeof *fill);
    for (size_t k = 0; k < nedges; k++) {
        int i0, j0, i1, j1;
        edge_cells(g, &edges[k], &i0, &j0, &i1, &j1);
        for (int j = j0; j <= j1; j++)
            for (int i = i0; i <= i1; i++) g->idx[fill[(size_t)j * (size_t)g->nx + (size_t)i]++] = (uint32_t)k;
    }
    free(fill);
    if (classify(g)) goto nomem;
    return BATON_OK;
nomem:
    race_grid_free(g);
    return baton_err_set(err, BATON_ERR_NOMEM, "track grid: out of memory");
}

void race_grid_free(race_grid *g)
{
    free(g->kind);
    free(g->ref_on);
    free(g->off);
    free(g->idx);
    memset(g, 0, sizeof *g);
}

static inline double orient(double ax, double ay, double bx, double by, double px, double py)
{
    return (bx - ax) * (py - ay) - (by - ay) * (px - ax);
}

int race_grid_contains(const race_grid *g, double x, double y)
{
    double fx = (x - g->x0) * g->inv, fy = (y - g->y0) * g->inv;
    if (!(fx >= 0 && fy >= 0 && fx < g->nx && fy < g->ny)) return 0;
    int i = (int)fx, j = (int)fy;
    size_t c = (size_t)j * (size_t)g->nx + (size_t)i;
    if (g->kind[c] != 2) return g->kind[c];
    double rx = g->x0 + (i + RACE_REF_DX) * g->cell, ry = g->y0 + (j + RACE_REF_DY) * g->cell;
    int on = g->ref_on[c];
    for (uint32_t k = g->off[c]; k < g->off[c + 1]; k++) {
        const race_edge *e = &g->edges[g->idx[k]];
        int s1 = orient(e->ax, e->ay, e->bx, e->by, rx, ry) > 0, s2 = orient(e->ax, e->ay, e->bx, e->by, x, y) > 0;
        if (s1 == s2) continue;
        int s3 = orient(rx, ry, x, y, e->ax, e->ay) > 0, s4 = orient(rx, ry, x, y, e->bx, e->by) > 0;
        if (s3 != s4) on ^= 1;
    }
    return on;
}

int race_edges_contain(const race_edge *edges, size_t n, double x, double y)
{
    int on = 0;
    for (size_t k = 0; k < n; k++) {
        const race_edge *e = &edges[k];
        if ((e->ay > y) != (e->by > y) && x < e->ax + (y - e->ay) * (e->bx - e->ax) / (e->by - e->ay)) on ^= 1;
    }
    return on;
}

/* Distance along the ray to edge e, or INFINITY. */
static inline double ray_edge(const race_edge *e, double x, double y, double dx, double dy)
{
    double ex = e->bx - e->ax, ey = e->by - e->ay, den = dx * ey - dy * ex;
    if (fabs(den) < 1e-15) return INFINITY;
    double wx = e->ax - x, wy = e->ay - y;
    double t = (wx * ey - wy * ex) / den, u = (wx * dy - wy * dx) / den;
    return (t >= 0 && u >= 0 && u <= 1) ? t : INFINITY;
}

double race_edges_raycast(const race_edge *edges, size_t n, double x, double y, double dx, double dy,
                          double tmax)
{
    double best = tmax;
    for (size_t k = 0; k < n; k++) {
        double t = ray_edge(&edges[k], x, y, dx, dy);
        if (t < best) best = t;
    }
    return best;
}

double race_grid_raycast(const race_grid *g, double x, double y, double dx, double dy, double tmax)
{
    double fx = (x - g->x0) * g->inv, fy = (y - g->y0) * g->inv;
    double t = 0;
    /* a start outside the grid: step in to its edge first, if the ray meets it */
    if (!(fx >= 0 && fy >= 0 && fx < g->nx && fy < g->ny)) {
        double tin = 0, tout = tmax * g->inv;
        double o[2] = {fx, fy}, d[2] = {dx, dy}, hi[2] = {g->nx, g->ny};
        for (int a = 0; a < 2; a++) {
            if (fabs(d[a]) < 1e-15) {
                if (o[a] < 0 || o[a] >= hi[a]) return tmax;
                continue;
            }
            double t1 = (0 - o[a]) / d[a], t2 = (hi[a] - o[a]) / d[a];
            if (t1 > t2) {
                double s = t1;
                t1 = t2;
                t2 = s;
            }
            tin = fmax(tin, t1);
            tout = fmin(tout, t2);
        }
        if (tin >= tout) return tmax;
        t = tin * g->cell + 1e-9;
        fx += dx * t * g->inv;
        fy += dy * t * g->inv;
    }
    int i = (int)fx, j = (int)fy;
    if (i >= g->nx) i = g->nx - 1;
    if (j >= g->ny) j = g->ny - 1;
    if (i < 0) i = 0;
    if (j < 0) j = 0;
    int si = dx > 0 ? 1 : -1, sj = dy > 0 ? 1 : -1;
    /* ray parameter (metres) at which the next vertical / horizontal cell line is crossed */
    double tdx = fabs(dx) > 1e-15 ? g->cell / fabs(dx) : INFINITY;
    double tdy = fabs(dy) > 1e-15 ? g->cell / fabs(dy) : INFINITY;
    double nxl = g->x0 + (i + (si > 0)) * g->cell, nyl = g->y0 + (j + (sj > 0)) * g->cell;
    double tx = fabs(dx) > 1e-15 ? (nxl - x) / dx : INFINITY;
    double ty = fabs(dy) > 1e-15 ? (nyl - y) / dy : INFINITY;
    double best = tmax;
    for (;;) {
        size_t c = (size_t)j * (size_t)g->nx + (size_t)i;
        if (g->kind[c] == 2)
            for (uint32_t k = g->off[c]; k < g->off[c + 1]; k++) {
                double h = ray_edge(&g->edges[g->idx[k]], x, y, dx, dy);
                if (h < best) best = h;
            }
        double texit = fmin(tx, ty);
        if (best <= texit || texit >= tmax) break;
        if (tx < ty) {
            i += si;
            tx += tdx;
        } else {
            j += sj;
            ty += tdy;
        }
        if (i < 0 || j < 0 || i >= g->nx || j >= g->ny) break;
    }
    return best;
}
