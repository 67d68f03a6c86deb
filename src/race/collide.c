/* collide.c — the plane geometry of objects on the track: oriented rectangles (a car's footprint,
 * a box, a bot car), whether two of them touch (the separating-axis test, exact for two convex
 * polygons: they are apart exactly when their projections on one of the four edge normals are
 * apart), and how far a ray runs before it meets one (the slab test in the rectangle's frame).
 *
 * The car's footprint is its wheels' outline: from the rear wheels' back edges (rear axle plus a
 * wheel radius, 0.03 m) to the front point DeepRacer reports (front_m), across the wheels' outer
 * edges (track plus a wheel width, 0.025 m): 0.252 × 0.187 m for DeepRacer's car.
 *
 * Contract: pure functions of their arguments; touching (a gap of exactly 0) counts as contact. */
#include "race_internal.h"

void race_rect_make(race_rect *r, double x, double y, double yaw, double back, double length, double width)
{
    r->c = cos(yaw);
    r->s = sin(yaw);
    r->hl = length / 2;
    r->hw = width / 2;
    double off = length / 2 - back;   /* the centre of the rectangle ahead of (x, y) */
    r->cx = x + off * r->c;
    r->cy = y + off * r->s;
}

double race_car_back(const baton_race_car *car)
{
    return car->rear_axle_m + RACE_WHEEL_R;
}

double race_car_length(const baton_race_car *car)
{
    return car->front_m + race_car_back(car);
}

double race_car_width(const baton_race_car *car)
{
    return car->track_m + RACE_WHEEL_W;
}

void race_car_rect(const baton_race_car *car, double x, double y, double yaw, race_rect *r)
{
    race_rect_make(r, x, y, yaw, race_car_back(car), race_car_length(car), race_car_width(car));
}

/* The rectangle's half extent along the unit axis (nx, ny). */
static double radius(const race_rect *r, double nx, double ny)
{
    return r->hl * fabs(r->c * nx + r->s * ny) + r->hw * fabs(-r->s * nx + r->c * ny);
}

static int apart_on(const race_rect *a, const race_rect *b, double nx, double ny)
{
    double d = fabs((b->cx - a->cx) * nx + (b->cy - a->cy) * ny);
    return d > radius(a, nx, ny) + radius(b, nx, ny);
}

int race_rect_touch(const race_rect *a, const race_rect *b)
{
    return !(apart_on(a, b, a->c, a->s) || apart_on(a, b, -a->s, a->c) || apart_on(a, b, b->c, b->s) ||
             apart_on(a, b, -b->s, b->c));
}

double race_rect_raycast(const race_rect *r, double x, double y, double dx, double dy, double tmax)
{
    /* the origin and direction in the rectangle's frame (u along it, v across) */
    double px = x - r->cx, py = y - r->cy;
    double o[2] = {px * r->c + py * r->s, -px * r->s + py * r->c};
    double d[2] = {dx * r->c + dy * r->s, -dx * r->s + dy * r->c};
    double h[2] = {r->hl, r->hw}, t0 = 0, t1 = tmax;
    for (int k = 0; k < 2; k++) {
        if (fabs(d[k]) < 1e-15) {
            if (o[k] < -h[k] || o[k] > h[k]) return tmax;
            continue;
        }
        double ta = (-h[k] - o[k]) / d[k], tb = (h[k] - o[k]) / d[k];
        if (ta > tb) {
            double t = ta;
            ta = tb;
            tb = t;
        }
        if (ta > t0) t0 = ta;
        if (tb < t1) t1 = tb;
        if (t0 > t1) return tmax;
    }
    return t0;
}
