/* race_obs.h — the simulator's observations: the sensor vector and the camera's images (part of
 * race.h, which includes it; src/race/sensor.c, camera.c).
 *
 * Contract: as race.h's. */
#ifndef BATON_RACE_OBS_H
#define BATON_RACE_OBS_H

#include "baton/race.h"

/* ---------------------------------------------------------------- observations */
/* The sensor vector: distances to the borders along `rays` rays spread over fov_deg around the
 * heading (1 = max_range_m or more), speed / max speed, steering / max steering, heading error
 * against the centre line (radians / pi), and the centre line's signed curvature (1/m, scaled by
 * 0.25) at each lookahead distance. */
#define BATON_RACE_SENSOR_MAX_RAYS 32
#define BATON_RACE_SENSOR_MAX_AHEAD 8
typedef struct baton_race_sensor_opts {
    int rays;                 /* 11 */
    double fov_deg;           /* 180 */
    double max_range_m;       /* 3 */
    int ahead;                /* 3 lookahead distances: */
    double ahead_m[BATON_RACE_SENSOR_MAX_AHEAD];   /* 0.5, 1, 2 m */
    int lidar;                /* 0 (time trials: the vector as before); else a front-facing LIDAR's
                               * rays appended: distance to the nearest object (box or bot) */
    double lidar_fov_deg;     /* 180, spread left to right like the border rays */
    double lidar_range_m;     /* 3: a ray that meets nothing nearer reads 1 */
} baton_race_sensor_opts;
void baton_race_sensor_opts_default(baton_race_sensor_opts *o);
/* Turn the LIDAR on for a race with objects: 11 rays over 180°, 3 m. */
void baton_race_sensor_opts_lidar(baton_race_sensor_opts *o);
size_t baton_race_sensor_dim(const baton_race_sensor_opts *o);   /* rays + 3 + ahead + lidar */
/* Every environment's vector into out (envs × dim floats). */
void baton_race_sim_sensor(const baton_race_sim *s, const baton_race_sensor_opts *o, float *out);
/* One environment's vector (dim floats), as baton_race_sim_sensor writes it. */
void baton_race_sim_sensor_env(const baton_race_sim *s, const baton_race_sensor_opts *o, size_t env, float *out);

/* The front camera: width × height greyscale, a pinhole at height_m above the ground, ahead_m in
 * front of the car's centre, pitched pitch_deg down, hfov_deg wide. The image is the ground
 * projected pixel by pixel over a top view of the track rasterised once (surface, white borders,
 * a dashed centre line, the ground beyond, mip-mapped), the sky above the horizon. */
typedef struct baton_race_camera_opts {
    int width, height;        /* 160 × 120 */
    double height_m;          /* 0.13 */
    double ahead_m;           /* 0.145 */
    double pitch_deg;         /* 15 */
    double hfov_deg;          /* 120 (the guide's lens; the Gazebo model's is 64.7) */
    double res_m;             /* top view resolution: 0.01 */
} baton_race_camera_opts;
void baton_race_camera_opts_default(baton_race_camera_opts *o);
typedef struct baton_race_camera baton_race_camera;
int baton_race_camera_new(const baton_race_track *t, const baton_race_camera_opts *o,
                          baton_race_camera **out, baton_err *err);
void baton_race_camera_free(baton_race_camera *c);
/* Render the view of a car at (x, y, yaw) into out (width × height bytes, row-major, top row first).
 * _ref recomputes every pixel's ray and samples with plain arithmetic; same image within 1 level. */
void baton_race_camera_render(const baton_race_camera *c, double x, double y, double yaw, uint8_t *out);
void baton_race_camera_render_ref(const baton_race_camera *c, double x, double y, double yaw, uint8_t *out);
/* One environment's frame, its objects drawn. */
void baton_race_sim_camera_env(const baton_race_sim *s, const baton_race_camera *c, size_t env, uint8_t *out);

#endif
