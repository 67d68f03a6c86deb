/* topview.c — a track seen from above, rasterised once for the camera: the dark track surface,
 * a white line 5 cm wide along each border on the track side, a dashed centre line (15 cm dashes,
 * 15 cm gaps, 3 cm wide, yellow in colour: light grey here), a white start line across the first
 * waypoint's rung, and the lighter ground beyond; both surfaces carry a faint fixed texture so
 * motion shows. The area is the track's bounding box with 2.5 m around it; outside, the ground's
 * mean value. Pixels near a line or a border are the mean of 4 × 4 subsamples (no jagged edges up
 * close). Then the mip levels: each a 2 × 2 box average of the one before. */
#include "topview_internal.h"

#include <stdlib.h>
#include <string.h>

#define MARGIN_M 2.5
#define LINE_W 0.05
#define DASH_HALF_W 0.015
#define DASH_ON 0.15
#define DASH_PERIOD 0.30
#define MAX_PIXELS ((size_t)48 << 20)

enum { GROUND = 100, SURFACE = 50, WHITE = 235, DASH = 190 };

static uint32_t hash2(uint32_t i, uint32_t j)
{
    uint32_t h = i * 0x9e3779b1u ^ (j + 0x7f4a7c15u) * 0x85ebca77u;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    h *= 0x297a2d39u;
    return h ^ (h >> 15);
}

/* Smooth value noise in [-1, 1] with features about `cells` pixels apart. */
static double value_noise(int i, int j, int cells)
{
    int ci = i / cells, cj = j / cells;
    double fx = (double)(i % cells) / cells, fy = (double)(j % cells) / cells;
    double v00 = (double)(hash2((uint32_t)ci, (uint32_t)cj) & 255), v10 = (double)(hash2((uint32_t)ci + 1, (uint32_t)cj) & 255);
    double v01 = (double)(hash2((uint32_t)ci, (uint32_t)cj + 1) & 255), v11 = (double)(hash2((uint32_t)ci + 1, (uint32_t)cj + 1) & 255);
    fx = fx * fx * (3 - 2 * fx);
    fy = fy * fy * (3 - 2 * fy);
    double v = (1 - fy) * ((1 - fx) * v00 + fx * v10) + fy * ((1 - fx) * v01 + fx * v11);
    return v / 127.5 - 1;
}

static double seg_dist(double px, double py, double ax, double ay, double bx, double by, double *t)
{
    double ex = bx - ax, ey = by - ay, l2 = ex * ex + ey * ey;
    double u = l2 > 0 ? ((px - ax) * ex + (py - ay) * ey) / l2 : 0;
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    *t = u;
    return hypot(px - ax - u * ex, py - ay - u * ey);
}

/* Mark, in each pixel's 4 × 4 subsample mask, the subsamples within half_w of segment a-b (and,
 * dashed, inside a dash: s0 is the segment's start along the centre line). Also flags the pixel as
 * near a feature, so its subsamples are classified one by one. */
static void mark_seg(const race_topview *tv, uint16_t *mask, uint8_t *near, const double *a, const double *b,
                     double half_w, double s0, int dashed)
{
    int w = tv->w[0], h = tv->h[0];
    double r = tv->res, pad = half_w + 2 * r;
    int i0 = (int)floor((fmin(a[0], b[0]) - pad - tv->x0) / r), i1 = (int)floor((fmax(a[0], b[0]) + pad - tv->x0) / r);
    int j0 = (int)floor((fmin(a[1], b[1]) - pad - tv->y0) / r), j1 = (int)floor((fmax(a[1], b[1]) + pad - tv->y0) / r);
    double len = hypot(b[0] - a[0], b[1] - a[1]);
    for (int j = j0 < 0 ? 0 : j0; j <= j1 && j < h; j++)
        for (int i = i0 < 0 ? 0 : i0; i <= i1 && i < w; i++) {
            size_t p = (size_t)j * (size_t)w + (size_t)i;
            double u, cx = tv->x0 + (i + 0.5) * r, cy = tv->y0 + (j + 0.5) * r;
            if (seg_dist(cx, cy, a[0], a[1], b[0], b[1], &u) > half_w + r) continue;
            near[p] = 1;
            for (int q = 0; q < 16; q++) {
                double x = tv->x0 + (i + (q % 4 + 0.5) / 4) * r, y = tv->y0 + (j + (q / 4 + 0.5) / 4) * r;
                if (seg_dist(x, y, a[0], a[1], b[0], b[1], &u) > half_w) continue;
                if (dashed && fmod(s0 + u * len, DASH_PERIOD) >= DASH_ON) continue;
                mask[p] |= (uint16_t)(1u << q);
            }
        }
}

/* The value of a pixel near a feature: the mean of its 16 subsamples (white over dash over the
 * surface or the ground). */
static uint8_t shade(const race_topview *tv, const baton_race_track *t, int i, int j, uint16_t white, uint16_t dash,
                     double surface, double ground)
{
    double sum = 0;
    for (int q = 0; q < 16; q++) {
        double x = tv->x0 + (i + (q % 4 + 0.5) / 4) * tv->res, y = tv->y0 + (j + (q / 4 + 0.5) / 4) * tv->res;
        if (!race_grid_contains(&t->grid, x, y)) sum += ground;
        else if (white >> q & 1) sum += WHITE;
        else if (dash >> q & 1) sum += DASH;
        else sum += surface;
    }
    sum /= 16;
    return (uint8_t)(sum < 0 ? 0 : sum > 255 ? 255 : sum + 0.5);
}

int race_topview_build(race_topview *tv, const baton_race_track *t, double res, baton_err *err)
{
    memset(tv, 0, sizeof *tv);
    const baton_race_track_info *in = &t->info;
    double x0 = in->xmin - MARGIN_M, y0 = in->ymin - MARGIN_M, x1 = in->xmax + MARGIN_M, y1 = in->ymax + MARGIN_M;
    while (((x1 - x0) / res) * ((y1 - y0) / res) > (double)MAX_PIXELS) res *= 2;
    tv->res = res;
    tv->x0 = x0;
    tv->y0 = y0;
    tv->w[0] = (int)ceil((x1 - x0) / res);
    tv->h[0] = (int)ceil((y1 - y0) / res);
    tv->beyond = GROUND;
    size_t n0 = (size_t)tv->w[0] * (size_t)tv->h[0];
    if (!(tv->px[0] = malloc(n0))) return baton_err_set(err, BATON_ERR_NOMEM, "camera: out of memory");
    tv->levels = 1;
    int w = tv->w[0], h = tv->h[0];
    uint16_t *white = calloc(n0, sizeof *white), *dash = calloc(n0, sizeof *dash);
    uint8_t *near = calloc(n0, 1);
    if (!white || !dash || !near) {
        free(white);
        free(dash);
        free(near);
        race_topview_free(tv);
        return baton_err_set(err, BATON_ERR_NOMEM, "camera: out of memory");
    }
    const race_geom *g = &t->fwd;
    for (size_t k = 0; k + 1 < g->n; k++) {
        mark_seg(tv, white, near, g->in + 2 * k, g->in + 2 * k + 2, LINE_W, 0, 0);
        mark_seg(tv, white, near, g->out + 2 * k, g->out + 2 * k + 2, LINE_W, 0, 0);
        mark_seg(tv, dash, near, g->c + 2 * k, g->c + 2 * k + 2, DASH_HALF_W, g->cs[k], 1);
    }
    mark_seg(tv, white, near, g->in, g->out, LINE_W / 2, 0, 0);   /* the start line */
    int blob = (int)(0.25 / res) > 1 ? (int)(0.25 / res) : 1;
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            size_t p = (size_t)j * (size_t)w + (size_t)i;
            double fine = (double)(hash2((uint32_t)i, (uint32_t)j) & 15) - 7.5, soft = value_noise(i, j, blob);
            double surface = SURFACE + 0.4 * fine + 4 * soft, ground = GROUND + 0.8 * fine + 10 * soft, v;
            if (near[p] || white[p] || dash[p]) {
                tv->px[0][p] = shade(tv, t, i, j, white[p], dash[p], surface, ground);
                continue;
            }
            v = race_grid_contains(&t->grid, x0 + (i + 0.5) * res, y0 + (j + 0.5) * res) ? surface : ground;
            tv->px[0][p] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    free(white);
    free(dash);
    free(near);
    while (tv->levels < TOPVIEW_LEVELS && tv->w[tv->levels - 1] >= 32 && tv->h[tv->levels - 1] >= 32) {
        int l = tv->levels, pw = tv->w[l - 1], ph = tv->h[l - 1];
        tv->w[l] = pw / 2;
        tv->h[l] = ph / 2;
        if (!(tv->px[l] = malloc((size_t)tv->w[l] * (size_t)tv->h[l]))) {
            race_topview_free(tv);
            return baton_err_set(err, BATON_ERR_NOMEM, "camera: out of memory");
        }
        const uint8_t *s = tv->px[l - 1];
        for (int j = 0; j < tv->h[l]; j++)
            for (int i = 0; i < tv->w[l]; i++) {
                size_t a = (size_t)(2 * j) * (size_t)pw + (size_t)(2 * i);
                tv->px[l][(size_t)j * (size_t)tv->w[l] + (size_t)i] =
                    (uint8_t)((s[a] + s[a + 1] + s[a + (size_t)pw] + s[a + (size_t)pw + 1] + 2) / 4);
            }
        tv->levels++;
    }
    return BATON_OK;
}

void race_topview_free(race_topview *tv)
{
    for (int l = 0; l < TOPVIEW_LEVELS; l++) free(tv->px[l]);
    memset(tv, 0, sizeof *tv);
}
