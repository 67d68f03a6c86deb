/* camera.c — DeepRacer's front camera: a 160×120 greyscale image from a pinhole 0.13 m above the
 * ground, 0.145 m ahead of the car's centre, pitched 15° down (aws-deepracer's URDF), 120° wide
 * (the guide's lens; the Gazebo model's is 1.13 rad, set hfov_deg to 64.7 for it).
 *
 * The image is made without a 3-D renderer: the ground is flat, so every pixel below the horizon
 * sees one point of the ground, fixed in the car's frame. Those points (and how large a patch of
 * ground each pixel covers, which picks a mip level) are computed once; a frame is then one
 * rotation and translation per pixel and a bilinear sample of a top view of the track that was
 * rasterised once (topview.c). Pixels above the horizon are sky.
 *
 * Objects (boxes, bot cars) are solid boxes standing on the ground, drawn over that image: each
 * object's corners in front of the lens (and where its edges cross a plane just in front of it)
 * are projected to bound the pixels it may cover — an object wholly behind is skipped —; each of
 * those pixels'
 * rays is cut against the object's box in the object's own frame (the slab test), the nearest
 * object hit wins, and the face the ray enters gives the shade (front and back, sides and top
 * apart; bots darker than the surface, boxes lighter). An object stands on the ground, so a ray
 * that meets it meets it before the ground behind it: the track behind is hidden. */
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

int race_camera_project_near(const baton_race_camera_opts *o, double near, double fwd, double left, double up,
                             double *u, double *v)
{
    double f = (o->width / 2.0) / tan(o->hfov_deg * RACE_PI / 360), th = o->pitch_deg * RACE_PI / 180;
    double px = fwd - o->ahead_m, pz = up - o->height_m;
    double zc = px * cos(th) - pz * sin(th);          /* along the optical axis */
    if (zc < near) return 0;
    *u = o->width / 2.0 + f * (-left / zc);
    *v = o->height / 2.0 + f * ((-px * sin(th) - pz * cos(th)) / zc);
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

/* An object in the car's frame: its box's centre (ground level), axes, half sizes; the pixels
 * its projection may cover. */
typedef struct cam_obj {
    double cx, cy, c, s, hl, hw, h;
    int u0, u1, v0, v1;
    uint8_t shade[3];         /* front/back, sides, top */
} cam_obj;

/* Extend the bounds (ab[0..3]: min and max of a, min and max of b) by an image-plane point. */
static void bound(double *ab, double a, double b)
{
    ab[0] = fmin(ab[0], a), ab[1] = fmax(ab[1], a), ab[2] = fmin(ab[2], b), ab[3] = fmax(ab[3], b);
}

/* The pixels the object's box may cover: its corners in front of the lens projected, and where its
 * edges cross a plane just in front of the lens (an object partly behind the camera); 0 when none
 * of it is in front or its bounds miss the image. */
static int cam_obj_bounds(const baton_race_camera_opts *o, cam_obj *k)
{
    const double near = 1e-3, th = o->pitch_deg * RACE_PI / 180, ct = cos(th), st = sin(th);
    double z[8], r[8], d[8], ab[4] = {INFINITY, -INFINITY, INFINITY, -INFINITY};
    int any = 0;
    for (int j = 0; j < 8; j++) {   /* depth along the optical axis, offsets right and down */
        double a = (j & 1 ? 1 : -1) * k->hl, b = (j & 2 ? 1 : -1) * k->hw;
        double px = k->cx + a * k->c - b * k->s - o->ahead_m, pz = (j & 4 ? k->h : 0) - o->height_m;
        z[j] = px * ct - pz * st;
        r[j] = -(k->cy + a * k->s + b * k->c);
        d[j] = -px * st - pz * ct;
        if (z[j] >= near) bound(ab, r[j] / z[j], d[j] / z[j]), any = 1;
    }
    for (int j = 0; j < 8; j++)
        for (int bit = 1; bit < 8; bit <<= 1) {
            int m = j | bit;
            if (m == j || (z[j] >= near) == (z[m] >= near)) continue;
            double t = (near - z[j]) / (z[m] - z[j]);
            bound(ab, (r[j] + t * (r[m] - r[j])) / near, (d[j] + t * (d[m] - d[j])) / near);
        }
    if (!any) return 0;
    double f = (o->width / 2.0) / tan(o->hfov_deg * RACE_PI / 360);
    double u0 = o->width / 2.0 + f * ab[0], u1 = o->width / 2.0 + f * ab[1];
    double v0 = o->height / 2.0 + f * ab[2], v1 = o->height / 2.0 + f * ab[3];
    if (u1 < 0 || v1 < 0 || u0 >= o->width || v0 >= o->height) return 0;
    k->u0 = u0 < 0 ? 0 : (int)u0, k->v0 = v0 < 0 ? 0 : (int)v0;
    k->u1 = u1 >= o->width ? o->width - 1 : (int)u1, k->v1 = v1 >= o->height ? o->height - 1 : (int)v1;
    return 1;
}

static int cam_obj_make(const baton_race_camera_opts *o, const baton_race_object *ob, double x, double y, double yaw,
                        cam_obj *k)
{
    double cy = cos(yaw), sy = sin(yaw), oc = cos(ob->yaw), os = sin(ob->yaw);
    double off = ob->length_m / 2 - ob->back_m;
    double wx = ob->x + off * oc - x, wy = ob->y + off * os - y;
    k->cx = wx * cy + wy * sy;
    k->cy = -wx * sy + wy * cy;
    k->c = cos(ob->yaw - yaw);
    k->s = sin(ob->yaw - yaw);
    k->hl = ob->length_m / 2, k->hw = ob->width_m / 2, k->h = ob->height_m;
    int bot = ob->kind == BATON_RACE_BOT;
    k->shade[0] = bot ? 22 : 165, k->shade[1] = bot ? 12 : 135, k->shade[2] = bot ? 34 : 200;
    return cam_obj_bounds(o, k);
}

/* The ray from the lens (ox, 0, oz) along (rx, ry, rz), in the car's frame, against the object's
 * box: the entry distance (INFINITY: missed) and the face's shade. */
static double cam_obj_hit(const cam_obj *k, double ox, double oz, double rx, double ry, double rz, uint8_t *shade)
{
    double px = ox - k->cx, py = -k->cy;
    double o3[3] = {px * k->c + py * k->s, -px * k->s + py * k->c, oz - k->h / 2};
    double d3[3] = {rx * k->c + ry * k->s, -rx * k->s + ry * k->c, rz};
    double h3[3] = {k->hl, k->hw, k->h / 2}, t0 = 0, t1 = INFINITY;
    int face = -1;
    for (int a = 0; a < 3; a++) {
        if (fabs(d3[a]) < 1e-12) {
            if (o3[a] < -h3[a] || o3[a] > h3[a]) return INFINITY;
            continue;
        }
        double ta = (-h3[a] - o3[a]) / d3[a], tb = (h3[a] - o3[a]) / d3[a];
        if (ta > tb) {
            double t = ta;
            ta = tb, tb = t;
        }
        if (ta > t0) t0 = ta, face = a;
        if (tb < t1) t1 = tb;
        if (t0 > t1) return INFINITY;
    }
    *shade = k->shade[face < 0 ? 0 : face];
    return t0;
}

void race_camera_render_objects(const baton_race_camera *c, double x, double y, double yaw,
                                      const baton_race_object *obj, size_t nobj, uint8_t *out)
{
    baton_race_camera_render(c, x, y, yaw, out);
    const baton_race_camera_opts *o = &c->o;
    cam_obj k[BATON_RACE_MAX_OBJECTS];
    size_t n = 0;
    int u0 = o->width, u1 = -1, v0 = o->height, v1 = -1;
    for (size_t i = 0; i < nobj && n < BATON_RACE_MAX_OBJECTS; i++)
        if (cam_obj_make(o, &obj[i], x, y, yaw, &k[n])) {
            u0 = k[n].u0 < u0 ? k[n].u0 : u0, u1 = k[n].u1 > u1 ? k[n].u1 : u1;
            v0 = k[n].v0 < v0 ? k[n].v0 : v0, v1 = k[n].v1 > v1 ? k[n].v1 : v1;
            n++;
        }
    double f = (o->width / 2.0) / tan(o->hfov_deg * RACE_PI / 360), th = o->pitch_deg * RACE_PI / 180;
    double ct = cos(th), st = sin(th);
    for (int v = v0; v <= v1; v++)
        for (int u = u0; u <= u1; u++) {
            double a = (u + 0.5 - o->width / 2.0) / f, b = (v + 0.5 - o->height / 2.0) / f;
            double rx = ct - b * st, ry = -a, rz = -st - b * ct, best = INFINITY;
            uint8_t shade = 0, sh;
            for (size_t j = 0; j < n; j++) {
                if (u < k[j].u0 || u > k[j].u1 || v < k[j].v0 || v > k[j].v1) continue;
                double t = cam_obj_hit(&k[j], o->ahead_m, o->height_m, rx, ry, rz, &sh);
                if (t < best) best = t, shade = sh;
            }
            if (best < INFINITY) out[(size_t)v * (size_t)o->width + (size_t)u] = shade;
        }
}

/* The plain reference of race_camera_render_objects: every pixel's ray in the world's frame
 * (the lens where the car's pose puts it, the ray through the pixel's centre turned by the yaw)
 * against every object's box in the world's frame, the nearest hit's face shaded as the fast path
 * shades it, over the reference ground picture; no bounds, no culling, no per-car frame. */
void race_camera_render_objects_ref(const baton_race_camera *c, double x, double y, double yaw,
                                    const baton_race_object *obj, size_t nobj, uint8_t *out)
{
    const baton_race_camera_opts *o = &c->o;
    baton_race_camera_render_ref(c, x, y, yaw, out);
    double f = (o->width / 2.0) / tan(o->hfov_deg * RACE_PI / 360), th = o->pitch_deg * RACE_PI / 180;
    double cy = cos(yaw), sy = sin(yaw);
    double lens[3] = {x + o->ahead_m * cy, y + o->ahead_m * sy, o->height_m};
    for (int v = 0; v < o->height; v++)
        for (int u = 0; u < o->width; u++) {
            double a = (u + 0.5 - o->width / 2.0) / f, b = (v + 0.5 - o->height / 2.0) / f;
            /* forward, left, up in the car's frame: the optical axis pitched down, a to the right, b down */
            double fw = cos(th) - b * sin(th), lf = -a, up = -sin(th) - b * cos(th);
            double ray[3] = {fw * cy - lf * sy, fw * sy + lf * cy, up}, best = INFINITY;
            uint8_t shade = 0;
            for (size_t j = 0; j < nobj; j++) {
                const baton_race_object *ob = &obj[j];
                double oc = cos(ob->yaw), os = sin(ob->yaw), off = ob->length_m / 2 - ob->back_m;
                double ctr[3] = {ob->x + off * oc, ob->y + off * os, ob->height_m / 2};
                double ax[3][3] = {{oc, os, 0}, {-os, oc, 0}, {0, 0, 1}};
                double half[3] = {ob->length_m / 2, ob->width_m / 2, ob->height_m / 2}, t0 = 0, t1 = INFINITY;
                int face = 0, miss = 0;
                for (int k = 0; k < 3 && !miss; k++) {
                    double p = 0, d = 0;
                    for (int i = 0; i < 3; i++) p += (lens[i] - ctr[i]) * ax[k][i], d += ray[i] * ax[k][i];
                    if (fabs(d) < 1e-12) {
                        miss = p < -half[k] || p > half[k];
                        continue;
                    }
                    double ta = (-half[k] - p) / d, tb = (half[k] - p) / d;
                    if (ta > tb) {
                        double t = ta;
                        ta = tb, tb = t;
                    }
                    if (ta > t0) t0 = ta, face = k;
                    if (tb < t1) t1 = tb;
                    miss = t0 > t1;
                }
                if (miss || !(t0 < best)) continue;
                int bot = ob->kind == BATON_RACE_BOT;
                static const uint8_t box_shade[3] = {165, 135, 200}, bot_shade[3] = {22, 12, 34};
                best = t0, shade = bot ? bot_shade[face] : box_shade[face];
            }
            if (best < INFINITY) out[(size_t)v * (size_t)o->width + (size_t)u] = shade;
        }
}

void baton_race_sim_camera_env(const baton_race_sim *s, const baton_race_camera *c, size_t env, uint8_t *out)
{
    if (env >= s->n) return;
    const baton_race_car_state *st = &s->env[env].st;
    if (!s->scene || s->scene[env].n == 0) {
        baton_race_camera_render(c, st->x, st->y, st->yaw, out);
        return;
    }
    baton_race_object obj[BATON_RACE_MAX_OBJECTS];
    size_t n = baton_race_sim_objects(s, env, obj, BATON_RACE_MAX_OBJECTS);
    race_camera_render_objects(c, st->x, st->y, st->yaw, obj, n, out);
}

void race_sim_camera(const baton_race_sim *s, const baton_race_camera *c, uint8_t *out)
{
    size_t np = (size_t)c->o.width * (size_t)c->o.height;
    for (size_t e = 0; e < s->n; e++) baton_race_sim_camera_env(s, c, e, out + e * np);
}

