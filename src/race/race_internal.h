/* race_internal.h — what the files of src/race share: the track's geometry in each driving
 * direction (track.c), the uniform grid that answers "is this point on the track" exactly in O(1)
 * and casts rays against the borders (track_grid.c), nearest-point searches on polylines
 * (track_geom.c), the built-in designs (track_builtin.c), oriented rectangles and their collisions
 * (collide.c), each environment's objects (objects.c), the simulator's private state (sim.c,
 * sim_params.c, sensor.c), the camera's pinhole (camera.c) and the Python reward's hooks
 * (reward_py.c). */
#ifndef BATON_RACE_INTERNAL_H
#define BATON_RACE_INTERNAL_H

#include "baton/race.h"

#include <math.h>

#define RACE_PI 3.14159265358979323846

/* One border edge (inner, outer, or an end cap of an open track). */
typedef struct race_edge {
    double ax, ay, bx, by;
} race_edge;

/* Uniform grid over the track's bounding box. A cell that no edge touches is wholly on or off the
 * track (kind 1 / 0); a mixed cell (kind 2) lists the edges that may cross it and knows whether
 * its reference point is on the track, so a query point's answer is that, flipped once per edge
 * the segment reference→point crosses (exact: both lie in the convex cell). */
typedef struct race_grid {
    double x0, y0, cell, inv;
    int nx, ny;
    uint8_t *kind;            /* nx × ny: 0 off, 1 on, 2 mixed */
    uint8_t *ref_on;          /* the reference point's answer, every cell */
    uint32_t *off;            /* nx × ny + 1 offsets into idx */
    uint32_t *idx;            /* edge indices of mixed cells */
    const race_edge *edges;
    size_t nedges;
} race_grid;

/* The reference point of cell (i, j): its centre nudged off any axis-aligned coincidence. */
#define RACE_REF_DX 0.4999917
#define RACE_REF_DY 0.5000131

int race_grid_build(race_grid *g, const race_edge *edges, size_t nedges, double cell, baton_err *err);
void race_grid_free(race_grid *g);
int race_grid_contains(const race_grid *g, double x, double y);
/* Even-odd over every edge (the plain reference). */
int race_edges_contain(const race_edge *edges, size_t n, double x, double y);
/* Distance along the ray (x, y) + t (dx, dy), |d| = 1, to the first edge, at most tmax. */
double race_grid_raycast(const race_grid *g, double x, double y, double dx, double dy, double tmax);
double race_edges_raycast(const race_edge *edges, size_t n, double x, double y, double dx, double dy,
                          double tmax);

/* A polyline of n points (x, y interleaved) with cumulative lengths cs[0..n-1] and, per segment,
 * 1 / its squared length (0 for a point). */
typedef struct race_poly {
    size_t n;
    const double *p;
    const double *cs;
    const double *inv2;
} race_poly;

/* Nearest point of the polyline to (px, py): its segment, distance along the line and squared
 * distance. _near starts from segment hint and walks downhill (the car moves little per step);
 * _all scans every segment (the reference; ties go to the first, as shapely's project does). */
typedef struct race_near {
    size_t seg;
    double along, d2, nx, ny;   /* nx, ny: the nearest point */
} race_near;
void race_poly_near_all(const race_poly *l, double px, double py, race_near *r);
void race_poly_near(const race_poly *l, int loop, size_t hint, double px, double py, race_near *r);
/* The point at distance s along the line (clamped to its ends) and its segment. */
void race_poly_at(const race_poly *l, double s, size_t *seg, double *x, double *y);

/* The geometry of one driving direction (forward, or every line reversed as DeepRacer does). */
typedef struct race_geom {
    size_t n;                 /* waypoints; a loop's last equals its first */
    int loop, ccw;
    double *c, *in, *out;     /* n × 2 each */
    double *cs, *ins, *outs;  /* cumulative lengths of the three lines */
    double *cinv, *iinv, *oinv;   /* 1 / squared segment lengths of the three lines */
    double *ndist;            /* DeepRacer's ndists: cs / length, the last 1 */
    double *kappa;            /* signed curvature (1/m, left positive) at each waypoint, over ±0.25 m */
    double length;
    race_poly cl, il, ol;
} race_geom;

struct baton_race_track {
    char name[256];
    size_t file_rows;
    size_t n;
    double *rows;             /* n × 6 as kept */
    race_geom fwd, rev;
    race_edge *edges;
    size_t nedges;
    race_grid grid;
    baton_race_track_info info;
};

/* DeepRacer's find_prev_next over ndist (bisect_right). */
void race_geom_closest(const race_geom *g, double ndist, int out[2]);
/* The same, walking from segment seg (the projection's): O(1) for a car that moved a little. */
void race_geom_closest_hint(const race_geom *g, size_t seg, double ndist, int out[2]);
/* The centre line at distance s (wrapped onto a loop in place): its point, the segment it lies on
 * (returned) and how far along that segment, 0..1. */
size_t race_geom_at(const race_geom *g, double *s, double *x, double *y, double *u);
/* Pose on the centre line at distance s (forward difference to the next waypoint, as DeepRacer). */
void race_geom_pose(const race_geom *g, double s, double *x, double *y, double *yaw);
const race_geom *race_track_geom(const baton_race_track *t, int reversed);
/* Curvature of the centre line at distance s (interpolated between waypoints). */
double race_geom_kappa(const race_geom *g, double s);

/* Built-in tracks: rows for NAME (malloc'd, n × 6), or BATON_ERR_NOTFOUND. */
int race_builtin_rows(const char *name, double **rows, size_t *n, baton_err *err);

/* Oriented rectangles (collide.c): centre, the direction's cosine and sine, half length along it
 * and half width across it. */
#define RACE_WHEEL_R 0.03
#define RACE_WHEEL_W 0.025
typedef struct race_rect {
    double cx, cy, c, s, hl, hw;
} race_rect;
/* A rectangle length × width whose back edge is back metres behind (x, y) along yaw. */
void race_rect_make(race_rect *r, double x, double y, double yaw, double back, double length, double width);
/* The car's footprint at centre (x, y), yaw: rear wheels' back edge to the front point, wheels' outer edges. */
void race_car_rect(const baton_race_car *car, double x, double y, double yaw, race_rect *r);
double race_car_back(const baton_race_car *car);
double race_car_length(const baton_race_car *car);
double race_car_width(const baton_race_car *car);
/* 1 when a and b overlap or touch (the separating-axis test). */
int race_rect_touch(const race_rect *a, const race_rect *b);
/* Distance along the ray (x, y) + t (dx, dy), |d| = 1, to the rectangle (0 from inside), tmax when
 * it is not met before tmax. */
double race_rect_raycast(const race_rect *r, double x, double y, double dx, double dy, double tmax);

/* One environment's objects (objects.c): boxes first, then bots. A position is (s, lane): s
 * metres along the centre line of the episode's direction, lane -1..1 (outer..inner lane centre);
 * the pose follows from it. The reward's arrays are kept up to date after every move. */
typedef struct race_obj {
    int kind;                 /* BATON_RACE_BOX or BATON_RACE_BOT */
    double s, lane;
    double lane_from, lane_to, change_s;   /* a bot changing lanes: from, to, distance driven so far */
    int changing;
    double next_change_t;     /* the scene's clock at which the next lane change starts */
    double speed;
    double x, y, yaw;
    double len, wid, hgt, back;
    size_t seg;               /* hint: its centre-line segment */
    int peer;                 /* shared track: another car (its env + 1), moved by the simulator; 0: a box or bot */
} race_obj;

typedef struct race_scene {
    size_t n;
    race_obj o[BATON_RACE_MAX_OBJECTS];
    double t;                 /* seconds since the episode started */
    baton_rng rng;
    /* the reward's arrays */
    double loc[BATON_RACE_MAX_OBJECTS][2];   /* heading: a bot's, in degrees; 0 for a box (as simapp) */
    int left[BATON_RACE_MAX_OBJECTS];
    double speed[BATON_RACE_MAX_OBJECTS], heading[BATON_RACE_MAX_OBJECTS];
    double dcenter[BATON_RACE_MAX_OBJECTS], dist[BATON_RACE_MAX_OBJECTS];
} race_scene;

void race_scene_seed(race_scene *sc, uint64_t seed, size_t env);
/* A new episode on geometry g starting at start_ndist (share of the lap). */
void race_scene_start(race_scene *sc, const baton_race_objects_opts *o, const baton_race_car *car,
                      const baton_race_track *t, const race_geom *g, double start_ndist);
/* The bots drive dt seconds (lane changes as they fall due). */
void race_scene_step(race_scene *sc, const baton_race_objects_opts *o, const baton_race_track *t,
                     const race_geom *g, double dt);
/* 1 when the rectangle touches any object. */
int race_scene_hits(const race_scene *sc, const race_rect *r);
/* Shared track: object i of the scene is car `env` (another car) at (x, y, yaw) driving at speed;
 * the reward's arrays follow. The scene's count is the caller's to set. */
void race_scene_peer(race_scene *sc, size_t i, size_t env, const baton_race_car *car, double x, double y, double yaw,
                     double speed, const baton_race_track *t, const race_geom *g);
/* Distance along a ray to the nearest object (tmax when none is met before). */
double race_scene_raycast(const race_scene *sc, double x, double y, double dx, double dy, double tmax);
void race_obj_rect(const race_obj *ob, race_rect *r);
void race_obj_public(const race_obj *ob, baton_race_object *out);
/* The lateral offset (metres, left positive) of lane at distance s: lane × a quarter of the local
 * width, towards the inner border for lane > 0. */
double race_geom_lane_offset(const race_geom *g, double s, double lane);

/* Where the camera's pinhole puts a point (fwd, left, up) of the car's frame (metres from the car's
 * centre on the ground): image coordinates u (right), v (down), pixel centres at +0.5; 0 when the
 * point is less than near metres in front of the lens along its axis (camera.c). */
int race_camera_project_near(const baton_race_camera_opts *o, double near, double fwd, double left, double up,
                             double *u, double *v);

/* The simulator (sim.c). */
typedef struct race_env {
    baton_race_car_state st;
    double start_ndist;       /* this episode's start, share of the lap */
    double next_start;        /* the next episode's (round robin) */
    int next_reversed;
    double prev_progress;
    double last_x, last_y;    /* the centre at the previous step (immobilized rule) */
    double cy, sy;            /* cos and sin of the yaw */
    double tan_deg, tan_val;  /* tan of the last steering angle, kept while it repeats */
    uint32_t rev_count, immob_count;
    size_t seg;               /* hint: the front point's centre-line segment */
    baton_rng rng;
    int parked;               /* shared track: off it (not started yet, or parked) */
} race_env;

struct baton_race_sim {
    const baton_race_track *t;
    baton_race_sim_opts o;
    double dt;
    race_env *env;
    race_scene *scene;        /* one per environment; NULL without objects */
    size_t n;
    uint8_t *stepped;         /* shared: which envs moved in the step (n) */
};

/* Shared track (sim_shared.c): every car's scene holds the others of its world where they stand
 * now (one world: the one env is in); and the collision rule after a step (s->stepped[e]: env e
 * moved in it): returns the episodes it ended. */
void race_sim_sync_peers(baton_race_sim *s);
void race_sim_sync_world(baton_race_sim *s, size_t env);
size_t race_sim_collide(baton_race_sim *s);

/* Fill the params of one environment; ref selects the reference searches. */
void race_sim_fill_params(const baton_race_sim *s, size_t e, int ref, struct baton_race_params *p);

/* Lines across n rungs in[j] -> out[j] (x, y interleaved), margin metres from their ends, as the
 * fraction b[j] of each rung (limit_line.c): the minimum-curvature line (sum of squared
 * curvatures) and the smoothest short line (sum of squared second differences of the points). */
int race_line_mincurv(size_t n, int loop, const double *in, const double *out, double margin, double *b);
int race_line_smooth(size_t n, int loop, const double *in, const double *out, double margin, double *b);

/* Reward plug-ins: the user's C (reward_c.c) and Python (reward_py.c). */
typedef double (*race_reward_fn)(const struct baton_race_params *p);
int race_reward_c_open(const char *path, void **handle, race_reward_fn *fn, baton_err *err);
void race_reward_c_close(void *handle);
extern const char race_reward_header[];   /* include/baton/race_reward.h, copied next to the file */
int race_reward_py_open(const char *path, void **state, baton_err *err);
int race_reward_py_call(void *state, const struct baton_race_params *p, size_t n, double *out, baton_err *err);
void race_reward_py_close(void *state);
int race_python_built(void);

/* A line of n zeroed points (limit.c); BATON_ERR_NOMEM leaves it empty. */
int race_line_alloc(baton_race_line *l, size_t n, int loop);

/* The plain reference of race_camera_render_objects (camera.c), for the tests that compare
 * them: every pixel's ray against every object's box in the world's frame, no culling. */
void race_camera_render_objects_ref(const baton_race_camera *c, double x, double y, double yaw,
                                    const baton_race_object *obj, size_t nobj, uint8_t *out);

/* ---------------------------------------------------------------- what only the tests call
 * (each beside the public functions it checks or builds inputs for) */
/* A 2-D float64 array from a NumPy .npy file: format version 1.0, 2.0 or 3.0, dtype '<f8',
 * C order. Anything else is an error naming the file and what is wrong. */
typedef struct baton_npy {
    size_t rows, cols;
    double *data;            /* rows × cols, row-major, malloc'd */
} baton_npy;
int race_npy_load(const char *path, baton_npy *out, baton_err *err);
void race_npy_free(baton_npy *a);
/* Put env's car at distance s along the centre line of its direction, lateral metres to the left,
 * heading along the track plus yaw_off radians, standing still; its episode goes on (or starts
 * when it had ended). For constructed tests (race eval resets with
 * baton_race_sim_reset_here). */
void race_sim_place(baton_race_sim *s, size_t env, double s_m, double lateral_m, double yaw_off);
/* The same view with objects standing on the track: each object a solid box (a bot car: a box of
 * the car's footprint and height), its visible sides shaded by which way they face, hiding the
 * ground behind it. */
void race_camera_render_objects(const baton_race_camera *c, double x, double y, double yaw,
                                      const baton_race_object *obj, size_t nobj, uint8_t *out);
/* Every environment's frame into out (envs × width × height), its objects drawn. */
void race_sim_camera(const baton_race_sim *s, const baton_race_camera *c, uint8_t *out);
/* A .npy from memory (race_npy_load reads the file and calls it). */
int race_npy_parse(const char *name, const uint8_t *buf, size_t n, baton_npy *out, baton_err *err);
/* Append a .npy (version 1.0, '<f8', C order) of rows × cols doubles to out. */
int race_npy_write(baton_buf *out, const double *data, size_t rows, size_t cols);
/* The same from rows in memory (rows × 6 doubles); name is used in messages. */
int race_track_from_rows(const char *name, const double *rows, size_t n, baton_race_track **out,
                               baton_err *err);
/* The rows as loaded (N × 6), after DeepRacer's clean-up (repeated centre points dropped). */
const double *race_track_rows(const baton_race_track *t, size_t *n);
/* On-track test (DeepRacer's: inside the polygon between the borders), fast and reference. */
int race_track_contains(const baton_race_track *t, double x, double y);
int race_track_contains_ref(const baton_race_track *t, double x, double y);
/* The reward parameters as the reference computes them (test_race_sim compares). */
void race_sim_params_ref(const baton_race_sim *s, size_t env, struct baton_race_params *p);
/* Put env's car at an exact pose (x, y, yaw), standing still; the episode goes on. */
void race_sim_set_pose(baton_race_sim *s, size_t env, double x, double y, double yaw);
/* The sensor vectors by brute-force ray casting (test_race_obs compares). */
void race_sim_sensor_ref(const baton_race_sim *s, const baton_race_sensor_opts *o, float *out);
/* The reward's name as opened (a file's path, or a built-in's name). */
const char *race_reward_name(const baton_race_reward *r);
/* The DeepRacer guide's second and third examples, in C. */
double race_reward_stay_inside_borders(const struct baton_race_params *p);
double race_reward_prevent_zigzag(const struct baton_race_params *p);
/* Free a line's arrays (one the tests built with race_speed_profile). */
void race_line_free(baton_race_line *l);
/* The speed profile of a path (n points, closed when loop): v <= min(max, sqrt(a_lat / |kappa|)),
 * then forward (acceleration) and backward (braking) passes — twice around a loop. Fills line->s,
 * kappa, v, length_m, lap_s from line->x, y. */
int race_speed_profile(baton_race_line *line, const baton_race_limits *l, baton_err *err);

#endif
