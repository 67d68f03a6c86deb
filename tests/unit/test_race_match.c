/* test_race_match.c — head-to-model: cars on one track (baton_race_sim_opts.shared) and a match
 * between drivers (baton_ppo_match):
 *   - a shared simulator is refused with one car, five cars, envs not a multiple of its cars, or
 *     boxes beside the cars; in two worlds of two cars a car sees and touches only its world's;
 *   - each car sees the other as it sees a bot: the reward's object fields, the LIDAR (a car ahead
 *     read where it stands, none behind: the LIDAR faces forward), the camera (its frame differs from
 *     the empty track's where the car ahead stands);
 *   - a car driven into the one ahead: its step ends crashed (one crash), the one ahead is bumped
 *     and drives on; the reference step gives the same states; a crash reset puts it clear of the
 *     other; a parked car is seen and touched by nobody;
 *   - a match of a slow car ahead and a fast one behind (race's centre-line driver, which sees
 *     nobody): the car behind crashes into the one ahead and pays the collision penalty for each
 *     crash, the one ahead none and is bumped; the same match twice is the same; passes add up
 *     (each car's overtakes are another's overtaken); a slow car in the inner lane is passed once,
 *     cleanly, in a lap by a fast one in the outer lane starting behind it. */
#include "../../src/race/race_internal.h"
#include "baton/ppo.h"
#include "baton/race.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static baton_race_sim *shared2(const baton_race_track *t)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.envs = 2;
    o.shared = 2;
    baton_race_sim *s = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_sim_new(t, &o, &s, &err) == BATON_OK, "%s", err.msg);
    return s;
}

static void test_refused(const baton_race_track *t)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    baton_race_sim *s = NULL;
    baton_err err = {0};
    o.shared = 1;
    o.envs = 1;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "1 cars on one track"));
    o.shared = o.envs = 5;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "want 2 to 4"));
    o.shared = 2, o.envs = 3;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "want a multiple"));
    o.envs = 2;
    o.objects.boxes = 1;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "without boxes or bots"));
    CHECK(s == NULL);
}

static int touching(const baton_race_sim *s)
{
    race_rect a, b;
    const baton_race_car_state *x = baton_race_sim_state(s, 0), *y = baton_race_sim_state(s, 1);
    race_car_rect(&s->o.car, x->x, x->y, x->yaw, &a);
    race_car_rect(&s->o.car, y->x, y->y, y->yaw, &b);
    return race_rect_touch(&a, &b);
}

static void test_seen_and_hit(const baton_race_track *t)
{
    baton_race_sim *s = shared2(t), *r = shared2(t);
    /* car 0 at 5 m, car 1 0.4 m behind it (front to front): 0.148 m clear */
    baton_race_sim *both[2] = {s, r};
    for (int k = 0; k < 2; k++) {
        race_sim_place(both[k], 0, 5.0, 0, 0);
        race_sim_place(both[k], 1, 4.6, 0, 0);
    }
    CHECK(!touching(s));
    struct baton_race_params p0, p1;
    baton_race_sim_params(s, 0, &p0);
    baton_race_sim_params(s, 1, &p1);
    CHECK(p0.num_objects == 1 && p1.num_objects == 1);
    const baton_race_car_state *c0 = baton_race_sim_state(s, 0), *c1 = baton_race_sim_state(s, 1);
    CHECK(fabs(p1.objects_location[0][0] - c0->x) < 1e-12 && fabs(p1.objects_location[0][1] - c0->y) < 1e-12);
    CHECK(fabs(p1.objects_speed[0]) < 1e-12);
    /* the LIDAR: car 1 reads car 0's back 0.4 - 0.252 m ahead of its front point; car 0 sees nothing */
    baton_race_sensor_opts so;
    baton_race_sensor_opts_default(&so);
    baton_race_sensor_opts_lidar(&so);
    size_t dim = baton_race_sensor_dim(&so);
    float v0[64], v1[64];
    baton_race_sim_sensor_env(s, &so, 0, v0);
    baton_race_sim_sensor_env(s, &so, 1, v1);
    int mid = so.rays + 3 + so.ahead + so.lidar / 2;
    CHECK_MSG(fabs(v1[mid] * so.lidar_range_m - (0.4 - race_car_length(&s->o.car))) < 0.01, "lidar %g", v1[mid] * so.lidar_range_m);
    CHECK(v0[mid] == 1.0f);
    CHECK(dim < 64);
    /* the camera: car 1's frame shows car 0 */
    baton_race_camera_opts co;
    baton_race_camera_opts_default(&co);
    baton_race_camera *cam = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_camera_new(t, &co, &cam, &err) == BATON_OK, "%s", err.msg);
    size_t np = (size_t)co.width * co.height, differ = 0;
    uint8_t *with = malloc(np), *without = malloc(np);
    baton_race_sim_camera_env(s, cam, 1, with);
    baton_race_camera_render(cam, c1->x, c1->y, c1->yaw, without);
    for (size_t i = 0; i < np; i++) differ += with[i] != without[i];
    CHECK_MSG(differ > 500, "%zu pixels show the car ahead", differ);
    /* car 1 drives into car 0 (4 m/s: 0.27 m in a step; car 0 at 0.1 m/s) */
    float steer[2] = {0, 0}, speed[2] = {0.1f, 4.0f};
    size_t ended = baton_race_sim_step(s, steer, speed), ended_ref = baton_race_sim_step_ref(r, steer, speed);
    CHECK(ended == 1 && ended_ref == 1);
    CHECK(c1->status == BATON_RACE_CRASHED && c1->crashed && c1->crashes == 1 && c1->bumps == 0);
    CHECK(c0->status == BATON_RACE_IN_PROGRESS && c0->bumped && c0->bumps == 1 && c0->crashes == 0);
    for (int e = 0; e < 2; e++) {
        const baton_race_car_state *a = baton_race_sim_state(s, (size_t)e), *b = baton_race_sim_state(r, (size_t)e);
        CHECK(a->x == b->x && a->y == b->y && a->status == b->status && a->crashes == b->crashes && a->bumps == b->bumps);
    }
    baton_race_sim_params(s, 1, &p1);
    CHECK(p1.is_crashed == 1);
    /* the crash reset: clear of car 0, behind it */
    baton_race_sim_crash_reset(s, 1);
    CHECK(!touching(s) && c1->status == BATON_RACE_IN_PROGRESS && c1->ndist < c0->ndist);
    /* parked: nobody sees or touches it */
    baton_race_sim_park(s, 0);
    baton_race_sim_params(s, 1, &p1);
    CHECK(p1.num_objects == 0);
    baton_race_sim_sensor_env(s, &so, 1, v1);
    CHECK(v1[mid] == 1.0f);
    for (int k = 0; k < 5; k++) baton_race_sim_step(s, steer, speed);
    CHECK(c1->crashes == 1 && c1->status == BATON_RACE_IN_PROGRESS && c1->ndist > c0->ndist);
    free(with);
    free(without);
    baton_race_camera_free(cam);
    baton_race_sim_free(s);
    baton_race_sim_free(r);
}

/* Two worlds of two cars: a car sees and touches only its own world's. */
static void test_worlds(const baton_race_track *t)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.envs = 4;
    o.shared = 2;
    baton_race_sim *s = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_sim_new(t, &o, &s, &err) == BATON_OK, "%s", err.msg);
    if (!s) return;
    race_sim_place(s, 0, 5.0, 0, 0);   /* world 0: car 0 at 5 m, car 1 at 2 m */
    race_sim_place(s, 1, 2.0, 0, 0);
    race_sim_place(s, 2, 4.7, 0, 0);   /* world 1: car 2 right behind world 0's car 0, car 3 far */
    race_sim_place(s, 3, 8.0, 0, 0);
    struct baton_race_params p;
    for (size_t e = 0; e < 4; e++) {
        baton_race_sim_params(s, e, &p);
        CHECK(p.num_objects == 1);
    }
    baton_race_sim_params(s, 2, &p);
    CHECK(fabs(p.objects_location[0][0] - baton_race_sim_state(s, 3)->x) < 1e-12);
    float steer[4] = {0}, speed[4] = {0.1f, 0.1f, 4.0f, 0.1f};
    baton_race_sim_step(s, steer, speed);   /* car 2 drives through where world 0's car 0 stands */
    CHECK(baton_race_sim_state(s, 2)->status == BATON_RACE_IN_PROGRESS && baton_race_sim_state(s, 0)->bumps == 0);
    baton_race_sim_free(s);
}

static void run_match(baton_ppo_match_result *r, const char *a, const char *b)
{
    baton_ppo_match_opts o;
    baton_ppo_match_opts_default(&o);
    o.ncars = 2;
    o.ckpt[0] = a;
    o.ckpt[1] = b;
    o.track = "oval";
    o.laps = 1;
    baton_err err = {0};
    CHECK_MSG(baton_ppo_match(&o, r, &err) == BATON_OK, "%s", err.msg);
}

static void test_match(void)
{
    baton_ppo_match_result r, again;
    run_match(&r, "centerline:0.4", "centerline:1.0");
    run_match(&again, "centerline:0.4", "centerline:1.0");
    const baton_ppo_match_car *front = &r.car[0], *back = &r.car[1];
    CHECK_MSG(back->crashes > 0 && front->crashes == 0 && front->bumps > 0, "crashes %u, %u; bumps %u", back->crashes,
              front->crashes, front->bumps);
    CHECK(back->penalties_s >= 5.0 * back->crashes && front->penalties_s == 5.0 * front->resets);
    CHECK(front->completed && front->position == 1 && back->position == 2);
    CHECK(front->overtakes + back->overtakes == front->overtaken + back->overtaken);
    CHECK(r.steps == again.steps);
    for (int i = 0; i < 2; i++) {
        const baton_ppo_match_car *x = &r.car[i], *y = &again.car[i];
        CHECK(x->total_s == y->total_s && x->crashes == y->crashes && x->bumps == y->bumps && x->n == y->n &&
              x->distance_m == y->distance_m && !memcmp(x->x, y->x, x->n * sizeof *x->x));
    }
    baton_ppo_match_result_free(&r);
    baton_ppo_match_result_free(&again);
    /* in lanes (inner slow ahead, outer fast behind): one clean pass in a lap, the second car's */
    run_match(&r, "centerline:0.3:1", "centerline:0.9:-1");
    CHECK_MSG(r.car[1].overtakes == 1 && r.car[0].overtaken == 1 && r.car[0].overtakes == 0 && r.car[1].overtaken == 0,
              "overtakes %u %u, overtaken %u %u", r.car[0].overtakes, r.car[1].overtakes, r.car[0].overtaken, r.car[1].overtaken);
    CHECK(r.car[0].crashes == 0 && r.car[1].crashes == 0 && r.car[0].bumps == 0 && r.car[1].bumps == 0);
    CHECK(r.car[1].position == 1 && r.car[0].position == 2 && r.car[1].total_s < r.car[0].total_s);
    baton_ppo_match_result_free(&r);
    baton_ppo_match_opts o;
    baton_ppo_match_opts_default(&o);
    o.ncars = 2;
    o.ckpt[0] = o.ckpt[1] = "centerline";
    o.track = "oval";
    o.gap_m = 0.1;
    baton_err err = {0};
    CHECK(baton_ppo_match(&o, &r, &err) == BATON_ERR_ARG && strstr(err.msg, "start gap"));
    o.gap_m = 1;
    o.ckpt[1] = "centerline:9";
    CHECK(baton_ppo_match(&o, &r, &err) == BATON_ERR_ARG && strstr(err.msg, "pace"));
    o.ckpt[1] = "centerline:1:2";
    CHECK(baton_ppo_match(&o, &r, &err) == BATON_ERR_ARG && strstr(err.msg, "lane"));
}

int main(void)
{
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_track_load("oval", &t, &err) == BATON_OK, "%s", err.msg);
    test_refused(t);
    test_seen_and_hit(t);
    test_worlds(t);
    test_match();
    baton_race_track_free(t);
    CHECK_DONE();
}
