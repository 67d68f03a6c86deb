/* camera.c — DeepRacer's front camera: a 160×120 greyscale image from a pinhole 0.13 m above the
 * ground, 0.145 m ahead of the car's centre, pitched 15° down (aws-deepracer's URDF), 120° wide
 * (the guide's lens; the Gazebo model's is 1.13 rad, set hfov_deg to 64.7 for it).
 *
 * The image is made without a 3-D renderer: the ground is flat, so every pixel below the horizon
 * sees one point of the ground, fixed in the car's frame. Those points (and how large a patch of
 * ground each pixel covers, which picks a mip level) are computed once; a frame is then one
 * rotation and translation per pixel and a bilinear sample of a top view of the track that was
 * rasterised once (topview.c). Pixels above the horizon are sky. */
#include "race_internal.h"
#include "topview_internal.h"

#include <stdlib.h>
#include <string.h>

struct baton_race_camera {
    baton_race_camera_opts o;
    race_topview tv;
    float *gu, *gv;           /* per pixel: its ground point in the car's frame, in level-0 pixels */
    uint8_t *lev;             /* per pixel: mip level, 0xff for sky */
    uint8_t *sky;             /* per pixel: the sky's value */
};

void baton_race_camera_opts_default(baton_race_camera_opts *o)
{
    o->width = 160;
    o->height = 120;
    o->height_m = 0.13;
    o->ahead_m = 0.145;
    o->pitch_deg = 15;
    o->hfov_deg = 120;
    o->res_m = 0.01;
}

/* The ray through pixel centre (u, v) hits the ground at (fwd, left) in the car's frame; returns
 * 0 when it points at or above the horizon (or beyond 100 m). */
static int pixel_ground(const baton_race_camera_opts *o, double u, double v, double *fwd, double *left)
{
    double f = (o->width / 2.0) / tan(o->hfov_deg * RACE_PI / 360);
    double a = (u - o->width / 2.0) / f, b = (v - o->height / 2.0) / f, th = o->pitch_deg * RACE_PI / 180;
    double rx = cos(th) - b * sin(th), ry = -a, rz = -sin(th) - b * cos(th);
    if (rz > -1e-9) return 0;
    double t = o->height_m / -rz;
    if (t * sqrt(rx * rx + ry * ry) > 100) return 0;
    *fwd = o->ahead_m + t * rx;
    *left = t * ry;
    return 1;
}

static uint8_t sky_value(const baton_race_camera_opts *o, int v)
{
    return (uint8_t)(215 - 40.0 * v / (o->height > 1 ? o->height - 1 : 1));
}

/* Mip level for a pixel covering fp metres of ground. */
static int level_of(const race_topview *tv, double fp)
{
    int lv = 0;
    double r = tv->res;
    while (lv + 1 < tv->levels && fp > 1.5 * r) {
        lv++;
        r *= 2;
    }
    return lv;
}

int baton_race_camera_new(const baton_race_track *t, const baton_race_camera_opts *o, baton_race_camera **out,
                          baton_err *err)
{
    *out = NULL;
    if (o->width < 2 || o->height < 2 || o->width > 4096 || o->height > 4096 || !(o->height_m > 0) ||
        !(o->hfov_deg > 1 && o->hfov_deg < 179) || !(o->pitch_deg > -89 && o->pitch_deg < 89) ||
        !(o->res_m >= 0.002 && o->res_m <= 1))
        return baton_err_set(err, BATON_ERR_ARG, "camera: options out of range");
    baton_race_camera *c = calloc(1, sizeof *c);
    if (!c) return baton_err_set(err, BATON_ERR_NOMEM, "camera: out of memory");
    c->o = *o;
    int rc = race_topview_build(&c->tv, t, o->res_m, err);
    if (rc) {
        free(c);
        return rc;
    }
    size_t np = (size_t)o->width * (size_t)o->height;
    c->gu = malloc(np * sizeof *c->gu);
    c->gv = malloc(np * sizeof *c->gv);
    c->lev = malloc(np);
    c->sky = malloc(np);
    if (!c->gu || !c->gv || !c->lev || !c->sky) {
        baton_race_camera_free(c);
        return baton_err_set(err, BATON_ERR_NOMEM, "camera: out of memory");
    }
    for (int v = 0; v < o->height; v++)
        for (int u = 0; u < o->width; u++) {
            size_t i = (size_t)v * (size_t)o->width + (size_t)u;
            double f, l, f1, l1, f2, l2;
            c->sky[i] = sky_value(o, v);
            if (!pixel_ground(o, u + 0.5, v + 0.5, &f, &l)) {
                c->lev[i] = 0xff;
                continue;
            }
            double fp = 0;   /* the ground the pixel covers: distance to its neighbours' points */
            if (pixel_ground(o, u + 1.5, v + 0.5, &f1, &l1)) fp = fmax(fp, hypot(f1 - f, l1 - l));
            if (pixel_ground(o, u + 0.5, v + 1.5, &f2, &l2)) fp = fmax(fp, hypot(f2 - f, l2 - l));
            if (pixel_ground(o, u + 0.5, v - 0.5, &f2, &l2)) fp = fmax(fp, hypot(f2 - f, l2 - l));
            else fp = INFINITY;   /* next to the horizon */
            c->lev[i] = (uint8_t)level_of(&c->tv, fp);
            c->gu[i] = (float)(f / c->tv.res);
            c->gv[i] = (float)(l / c->tv.res);
        }
    *out = c;
    return BATON_OK;
}

void baton_race_camera_free(baton_race_camera *c)
{
    if (!c) return;
    race_topview_free(&c->tv);
    free(c->gu);
    free(c->gv);
    free(c->lev);
    free(c->sky);
    free(c);
}

/* Bilinear sample of level lv at level-0 pixel coordinates (x, y), pixel centres at +0.5. */
static inline uint8_t sample(const race_topview *tv, int lv, float x, float y)
{
    float s = 1.0f / (float)(1 << lv);
    float fx = x * s - 0.5f, fy = y * s - 0.5f;
    int w = tv->w[lv], h = tv->h[lv];
    if (!(fx >= 0 && fy >= 0 && fx < (float)(w - 1) && fy < (float)(h - 1))) return tv->beyond;
    int ix = (int)fx, iy = (int)fy;
    float ax = fx - (float)ix, ay = fy - (float)iy;
    const uint8_t *p = tv->px[lv] + (size_t)iy * (size_t)w + (size_t)ix;
    float top = p[0] + ax * (float)(p[1] - p[0]), bot = p[w] + ax * (float)(p[w + 1] - p[w]);
    return (uint8_t)(top + ay * (bot - top) + 0.5f);
}

void baton_race_camera_render(const baton_race_camera *c, double x, double y, double yaw, uint8_t *out)
{
    const race_topview *tv = &c->tv;
    float cs = (float)cos(yaw), sn = (float)sin(yaw);
    float ox = (float)((x - tv->x0) / tv->res), oy = (float)((y - tv->y0) / tv->res);
    size_t np = (size_t)c->o.width * (size_t)c->o.height;
    for (size_t i = 0; i < np; i++) {
        int lv = c->lev[i];
        if (lv == 0xff) {
            out[i] = c->sky[i];
            continue;
        }
        float gu = c->gu[i], gv = c->gv[i];
        out[i] = sample(tv, lv, ox + gu * cs - gv * sn, oy + gu * sn + gv * cs);
    }
}

void baton_race_camera_render_ref(const baton_race_camera *c, double x, double y, double yaw, uint8_t *out)
{
    const race_topview *tv = &c->tv;
    for (int v = 0; v < c->o.height; v++)
        for (int u = 0; u < c->o.width; u++) {
            size_t i = (size_t)v * (size_t)c->o.width + (size_t)u;
            double f, l;
            if (!pixel_ground(&c->o, u + 0.5, v + 0.5, &f, &l)) {
                out[i] = sky_value(&c->o, v);
                continue;
            }
            double wx = x + f * cos(yaw) - l * sin(yaw), wy = y + f * sin(yaw) + l * cos(yaw);
            int lv = c->lev[i];
            double s = 1.0 / (double)(1 << lv);
            double fx = (wx - tv->x0) / tv->res * s - 0.5, fy = (wy - tv->y0) / tv->res * s - 0.5;
            int w = tv->w[lv], h = tv->h[lv];
            if (!(fx >= 0 && fy >= 0 && fx < w - 1 && fy < h - 1)) {
                out[i] = tv->beyond;
                continue;
            }
            int ix = (int)floor(fx), iy = (int)floor(fy);
            double ax = fx - ix, ay = fy - iy;
            const uint8_t *p = tv->px[lv];
            double v00 = p[(size_t)iy * w + ix], v10 = p[(size_t)iy * w + ix + 1];
            double v01 = p[(size_t)(iy + 1) * w + ix], v11 = p[(size_t)(iy + 1) * w + ix + 1];
            double val = (1 - ay) * ((1 - ax) * v00 + ax * v10) + ay * ((1 - ax) * v01 + ax * v11);
            out[i] = (uint8_t)(val + 0.5);
        }
}

void baton_race_sim_camera(const baton_race_sim *s, const baton_race_camera *c, uint8_t *out)
{
    size_t np = (size_t)c->o.width * (size_t)c->o.height;
    for (size_t e = 0; e < s->n; e++) {
        const baton_race_car_state *st = &s->env[e].st;
        baton_race_camera_render(c, st->x, st->y, st->yaw, out + e * np);
    }
}

