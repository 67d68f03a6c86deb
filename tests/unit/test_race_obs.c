/* test_race_obs.c — observations: the camera's fast renderer against its reference (every pixel's
 * ray recomputed), what the camera sees where the answer is known (track ahead, sky above the
 * horizon, only ground when facing away from the track), frames written as PNG by a drive, and the
 * sensor vector's rays through the grid against brute force and against the track's geometry. */
#include "baton/img.h"
#include "../../src/race/race_internal.h"
#include "baton/ppo.h"
#include "baton/race.h"
#include "check.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static baton_race_track *load(const char *spec)
{
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_track_load(spec, &t, &err) == BATON_OK, "%s: %s", spec, err.msg);
    return t;
}

static void test_camera(const char *spec)
{
    baton_race_track *t = load(spec);
    if (!t) return;
    baton_race_camera_opts co;
    baton_race_camera_opts_default(&co);
    baton_race_camera *cam = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_camera_new(t, &co, &cam, &err) == BATON_OK, "%s", err.msg);
    if (!cam) {
        baton_race_track_free(t);
        return;
    }
    size_t np = 160 * 120;
    uint8_t *a = malloc(np), *b = malloc(np);
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    size_t differ = 0, off_by_more = 0;
    for (int k = 0; k < 12; k++) {
        double x, y, yaw;
        baton_race_track_at(t, in.length_m * k / 12, &x, &y, &yaw);
        baton_race_camera_render(cam, x, y, yaw + 0.1 * (k % 3 - 1), a);
        baton_race_camera_render_ref(cam, x, y, yaw + 0.1 * (k % 3 - 1), b);
        for (size_t i = 0; i < np; i++) {
            int d = abs(a[i] - b[i]);
            differ += d != 0;
            off_by_more += d > 1;
        }
    }
    CHECK_MSG(off_by_more == 0 && differ < np * 12 / 100, "%s: %zu pixels differ, %zu by more than 1", spec, differ,
              off_by_more);
    /* on the centre line looking along it: the bottom rows are the dark surface (or the centre
     * dash), the top rows sky, and the middle of the bottom row the dash or the surface */
    double x, y, yaw;
    baton_race_track_at(t, 0.3, &x, &y, &yaw);
    baton_race_camera_render(cam, x, y, yaw, a);
    double bottom = 0, top = 0;
    for (int u = 10; u < 40; u++) bottom += a[119 * 160 + u];
    for (int u = 0; u < 160; u++) top += a[u];
    bottom /= 30;
    top /= 160;
    CHECK_MSG(bottom < 90 && top > 190, "%s: bottom %.0f, top %.0f", spec, bottom, top);
    /* the white borders: below the horizon, pixels brighter than 200 on both halves */
    int left = 0, right = 0;
    for (int v = 50; v < 90; v++)
        for (int u = 0; u < 160; u++)
            if (a[v * 160 + u] > 200) *(u < 80 ? &left : &right) += 1;
    CHECK_MSG(left > 20 && right > 20, "%s: no white borders (%d, %d)", spec, left, right);
    /* from outside the track looking away from it: no surface, no lines below the horizon */
    baton_race_camera_render(cam, in.xmin - 1.0, (in.ymin + in.ymax) / 2, M_PI, a);
    int dark = 0, white = 0;
    for (int v = 80; v < 120; v++)
        for (int u = 0; u < 160; u++) dark += a[v * 160 + u] < 70, white += a[v * 160 + u] > 200;
    CHECK_MSG(dark == 0 && white == 0, "%s: facing away: %d dark, %d white pixels", spec, dark, white);
    /* a batch renders each car at its pose */
    baton_race_sim_opts so;
    baton_race_sim_opts_default(&so);
    so.envs = 3;
    so.random_start = 1;
    baton_race_sim *s = NULL;
    CHECK(baton_race_sim_new(t, &so, &s, &err) == BATON_OK);
    uint8_t *batch = malloc(3 * np);
    race_sim_camera(s, cam, batch);
    const baton_race_car_state *st = baton_race_sim_state(s, 2);
    baton_race_camera_render(cam, st->x, st->y, st->yaw, a);
    CHECK(!memcmp(batch + 2 * np, a, np) && memcmp(batch, batch + 2 * np, np) != 0);
    free(batch);
    baton_race_sim_free(s);
    free(a);
    free(b);
    baton_race_camera_free(cam);
    baton_race_track_free(t);
}

static void test_frames(void)
{
    baton_race_track *t = load("oval");
    if (!t) return;
    char dir[] = "/tmp/baton-test-frames-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    baton_ppo_drive_opts o;
    baton_ppo_drive_opts_default(&o);
    o.frames_dir = dir;
    o.max_steps = 12;
    baton_ppo_drive_result r;
    baton_err err = {0};
    CHECK_MSG(baton_ppo_drive(t, &o, &r, &err) == BATON_OK, "%s", err.msg);
    CHECK(r.status == BATON_RACE_TIME_UP && r.steps == 12 && r.frames == 13 && r.n == 13);
    char path[4200];
    snprintf(path, sizeof path, "%s/frame-00012.png", dir);
    uint8_t *png;
    size_t len;
    CHECK(baton_file_read_all(path, 1 << 20, &png, &len, &err) == BATON_OK);
    baton_image im = {0};
    CHECK(baton_img_decode(png, len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    CHECK(im.w == 160 && im.h == 120 && im.c == 1);
    baton_image_free(&im);
    free(png);
    baton_ppo_drive_result_free(&r);
    /* a policy that is not a checkpoint folder: the error names the flag and the folder */
    o.policy = "no-such-ckpt-dir";
    CHECK(baton_ppo_drive(t, &o, &r, &err) != BATON_OK && strstr(err.msg, "--policy no-such-ckpt-dir"));
    baton_remove_tree(dir);
    baton_race_track_free(t);
}

static void test_sensor(void)
{
    baton_race_track *oval = load("oval");
    if (!oval) return;
    baton_race_sensor_opts so;
    baton_race_sensor_opts_default(&so);
    size_t dim = baton_race_sensor_dim(&so);
    CHECK(dim == 11 + 3 + 3);
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.envs = 1;
    baton_race_sim *s = NULL;
    baton_err err = {0};
    CHECK(baton_race_sim_new(oval, &o, &s, &err) == BATON_OK);
    float v[32], w[32];
    /* the front 1 m into the bottom straight (which runs from x = -2 to 2, then a half circle of
     * 1.6 m): the rays at ±90° reach the borders 0.38 m away, straight ahead is more than 3 m, the
     * centre line ahead is straight */
    baton_race_track_info in;
    baton_race_track_get_info(oval, &in);
    race_sim_place(s, 0, in.length_m - 1.0 - 0.14, 0, 0);
    baton_race_sim_sensor(s, &so, v);
    CHECK_MSG(fabs(v[0] * 3 - 0.38) < 1e-6 && fabs(v[10] * 3 - 0.38) < 1e-6, "%.6f %.6f", v[0] * 3, v[10] * 3);
    CHECK_MSG(v[5] == 1.0f, "%.4f", v[5]);
    CHECK(v[11] == 0 && v[12] == 0 && fabs(v[13]) < 1e-6);
    CHECK(fabs(v[14]) < 1e-9 && fabs(v[15]) < 1e-9 && fabs(v[16]) < 1e-9);
    /* the front at x = 1.9: 0.5 and 1 m ahead lie on the half circle, curvature 1/1.6 (× 0.25);
     * straight ahead the ray meets the turn's outer border at x = 2 + sqrt(1.98² - 1.6²) */
    race_sim_place(s, 0, 1.9 - 0.14, 0, 0);
    baton_race_sim_sensor(s, &so, v);
    CHECK_MSG(fabs(v[14] - 0.25 / 1.6) < 1e-3 && fabs(v[15] - 0.25 / 1.6) < 1e-3, "%.5f %.5f", v[14], v[15]);
    CHECK_MSG(fabs(v[5] * 3 - (2 + sqrt(1.98 * 1.98 - 1.6 * 1.6) - 1.9)) < 0.01, "%.4f", v[5] * 3);
    /* turned by 0.3 rad: the heading error reads it */
    race_sim_place(s, 0, 1.0, 0, 0.3);
    baton_race_sim_sensor(s, &so, v);
    CHECK(fabs(v[13] - 0.3 / M_PI) < 1e-4);
    /* the grid's rays against brute force, everywhere along a noisy drive on each track */
    baton_race_sim_free(s);
    const char *specs[] = {"technical", "../shared/tracks/reinvent_base.npy", "../shared/tracks/Spain_track.npy"};
    for (size_t i = 0; i < 3; i++) {
        baton_race_track *t = load(specs[i]);
        if (!t) continue;
        baton_race_sim_opts_default(&o);
        o.steer_noise_deg = 10;
        o.random_start = 1;
        CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_OK);
        int same = 1;
        for (int k = 0; k < 300; k++) {
            float steer, speed;
            baton_race_centerline_action(s, 0, 0.8, &steer, &speed);
            baton_race_sim_step(s, &steer, &speed);
            baton_race_sim_sensor(s, &so, v);
            race_sim_sensor_ref(s, &so, w);
            for (size_t j = 0; j < dim; j++) same &= fabsf(v[j] - w[j]) < 1e-6f;
            if (baton_race_sim_state(s, 0)->status != BATON_RACE_IN_PROGRESS) baton_race_sim_reset(s, 0);
        }
        CHECK_MSG(same, "%s: sensor rays differ from brute force", specs[i]);
        baton_race_sim_free(s);
        baton_race_track_free(t);
    }
    baton_race_track_free(oval);
}

int main(void)
{
    test_camera("oval");
    test_camera("../shared/tracks/reinvent_base.npy");
    test_frames();
    test_sensor();
    CHECK_DONE();
}
