/* test_race_objects.c — objects on the track (object avoidance, head-to-bot): the collision test
 * against hand-computed cases (squares corner to corner, a rotated square whose bounding box
 * overlaps but which does not touch, the car clipping a box at an angle, the car driven into a box,
 * a bot overtaken on either side with clearance), every objects_* parameter of a constructed scene
 * against its hand-computed value (and as a user's C and Python rewards read them), the camera's
 * picture of a box where the pinhole puts it, the LIDAR's reading, bots that keep their lanes and
 * speeds and change lanes on time, seeded scenes that are bit-identical between runs, a crash
 * reset, the trace's crash counter and options refused naming the field. */
#include "../../src/ppo/ppo_internal.h"
#include "../../src/race/race_internal.h"
#include "baton/race.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A straight open track along +x from 0 to 20 m, width w, its inner border on the left (y = +w/2):
 * lane +1 (inner) is y = +w/4, lane -1 (outer) y = -w/4. */
static baton_race_track *straight(double w)
{
    enum { N = 41 };
    double rows[N * 6];
    for (int i = 0; i < N; i++) {
        double x = 0.5 * i, r[6] = {x, 0, x, w / 2, x, -w / 2};
        memcpy(rows + 6 * i, r, sizeof r);
    }
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(race_track_from_rows("straight", rows, N, &t, &err) == BATON_OK, "%s", err.msg);
    return t;
}

static baton_race_sim *sim_new(const baton_race_track *t, const baton_race_sim_opts *o)
{
    baton_race_sim *s = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_sim_new(t, o, &s, &err) == BATON_OK, "%s", err.msg);
    return s;
}

static void rect(race_rect *r, double x, double y, double yaw, double len, double wid)
{
    race_rect_make(r, x, y, yaw, len / 2, len, wid);
}

static void test_geometry(void)
{
    race_rect a, b;
    const double e = 1e-3, r2 = sqrt(2.0);
    rect(&a, 0, 0, 0, 0.2, 0.2);
    /* side by side: 0.2 apart is touching, a millimetre more is not */
    rect(&b, 0.2 + e, 0, 0, 0.2, 0.2);
    CHECK(!race_rect_touch(&a, &b) && !race_rect_touch(&b, &a));
    rect(&b, 0.2 - e, 0.05, 0, 0.2, 0.2);
    CHECK(race_rect_touch(&a, &b) && race_rect_touch(&b, &a));
    /* corner to corner on the diagonal */
    rect(&b, 0.2 + e, 0.2 + e, 0, 0.2, 0.2);
    CHECK(!race_rect_touch(&a, &b));
    rect(&b, 0.2 - e, 0.2 - e, 0, 0.2, 0.2);
    CHECK(race_rect_touch(&a, &b));
    /* a square turned 45°, its corner at a's right edge: x = 0.1 + gap */
    rect(&b, 0.1 + 0.1 * r2 + e, 0.03, M_PI / 4, 0.2, 0.2);
    CHECK(!race_rect_touch(&a, &b));
    rect(&b, 0.1 + 0.1 * r2 - e, 0.03, M_PI / 4, 0.2, 0.2);
    CHECK(race_rect_touch(&a, &b));
    /* turned 45° off a's corner: the bounding boxes overlap, only b's own axis separates them —
     * along (1, 1)/√2 the centres are 0.175·√2 = 0.2475 apart, the radii 0.1·√2 + 0.1 = 0.2414 */
    rect(&b, 0.175, 0.175, M_PI / 4, 0.2, 0.2);
    CHECK(!race_rect_touch(&a, &b) && !race_rect_touch(&b, &a));
    rect(&b, 0.165, 0.165, M_PI / 4, 0.2, 0.2);   /* 0.2333 < 0.2414 */
    CHECK(race_rect_touch(&a, &b));

    /* the car at 30°: its front-left corner (front_m, half the wheels' width) is its highest
     * point; a box whose lower edge is a millimetre above it is clear, a millimetre below is hit */
    baton_race_car car;
    baton_race_car_default(&car);
    double th = M_PI / 6, fx = car.front_m, fy = (car.track_m + 0.025) / 2;
    double cx = fx * cos(th) - fy * sin(th), cy = fx * sin(th) + fy * cos(th);
    CHECK(fabs(cx - 0.074494) < 1e-6 && fabs(cy - 0.150973) < 1e-6);
    race_rect c;
    race_car_rect(&car, 0, 0, th, &c);
    rect(&b, cx, cy + 0.1 + e, 0, 0.2, 0.2);
    CHECK(!race_rect_touch(&c, &b));
    rect(&b, cx, cy + 0.1 - e, 0, 0.2, 0.2);
    CHECK(race_rect_touch(&c, &b));
    /* the footprint: rear wheels' back edge to the front point, wheels' outer edges */
    CHECK(fabs(race_car_length(&car) - (0.14 + 0.0817 + 0.03)) < 1e-12);
    CHECK(fabs(race_car_width(&car) - 0.187) < 1e-12);

    /* rays: from (-1, 0) along +x to the square at the origin meets its face at x = -0.1 */
    CHECK(fabs(race_rect_raycast(&a, -1, 0, 1, 0, 3) - 0.9) < 1e-12);
    CHECK(race_rect_raycast(&a, -1, 0.2, 1, 0, 3) == 3);
    CHECK(race_rect_raycast(&a, -1, 0, -1, 0, 3) == 3);
    CHECK(race_rect_raycast(&a, 0, 0, 1, 0, 3) == 0);
    double d = race_rect_raycast(&a, -1, -1, 1 / r2, 1 / r2, 3);
    CHECK(fabs(d - 0.9 * r2) < 1e-12);
}

/* Three boxes at explicit places on the straight track. */
static void boxes3(baton_race_sim_opts *o)
{
    baton_race_sim_opts_default(o);
    o->objects.boxes = 3;
    o->objects.npos = 3;
    const double pr[3] = {0.25, 0.5, 0.75}, ln[3] = {1, -1, 0};   /* left (inner), right, centre */
    for (int i = 0; i < 3; i++) o->objects.pos_progress[i] = pr[i], o->objects.pos_lane[i] = ln[i];
}

static void test_crash(const baton_race_track *t)
{
    baton_race_sim_opts o;
    boxes3(&o);
    o.objects.pos_lane[0] = 0;   /* the first box on the centre line at x = 5 */
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    /* 1 m/s from x = 0: the front point (0.14 m ahead) reaches the box's face (x = 4.9) in step
     * 72 (71 / 15 + 0.14 = 4.873, 72 / 15 + 0.14 = 4.94) */
    float steer = 0, speed = 1;
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    int k = 0;
    while (st->status == BATON_RACE_IN_PROGRESS && k < 200) baton_race_sim_step(s, &steer, &speed), k++;
    CHECK_MSG(k == 72 && st->status == BATON_RACE_CRASHED && st->crashed && st->crashes == 1, "step %d, %s", k,
              baton_race_status_name(st->status));
    CHECK(!strcmp(baton_race_status_name(BATON_RACE_CRASHED), "crashed"));
    struct baton_race_params p;
    baton_race_sim_params(s, 0, &p);
    CHECK(p.is_crashed == 1 && p.num_objects == 3);
    /* the trace's last column counts the episode's crashes */
    baton_buf b = {0};
    CHECK(race_trace_row(&b, 1, st->steps, st, 0, 1.0, 20, 4.8) == BATON_OK);
    CHECK(b.len > 14 && !memcmp(b.data + b.len - 14, "crashed,0.0,1\n", 14));
    baton_buf_free(&b);
    CHECK(!strcmp(RACE_TRACE_HEADER + strlen(RACE_TRACE_HEADER) - 23, "obstacle_crash_counter\n"));
    /* an evaluation's crash reset: back along the centre line until clear, the counter kept */
    baton_race_sim_crash_reset(s, 0);
    race_rect c, bx;
    race_car_rect(&o.car, st->x, st->y, st->yaw, &c);
    rect(&bx, 5, 0, 0, 0.2, 0.2);
    CHECK(st->status == BATON_RACE_IN_PROGRESS && !st->crashed && st->crashes == 1 && !race_rect_touch(&c, &bx));
    CHECK_MSG(st->x < 4.9 - 0.14 && st->x > 4.9 - 0.14 - 0.1, "reset to %g", st->x);
    baton_race_sim_step(s, &steer, &speed);
    CHECK(st->status == BATON_RACE_CRASHED && st->crashes == 2);
    /* a new episode starts with none */
    baton_race_sim_start(s, 0, 0, 0);
    CHECK(st->crashes == 0 && !st->crashed);
    baton_race_sim_free(s);
}

/* On a straight 2 m wide (lanes at y = ±0.5), one bot in the inner lane (y = +0.5) at 0.2 m/s,
 * 10 m ahead; the car drives straight at 1 m/s, `lateral` off the centre line, and passes it. */
static void overtake(const baton_race_track *t, double lateral, int expect_crash)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.objects.bots = 1;
    o.objects.bot_speed_mps = 0.2;
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    race_sim_place(s, 0, 0.5, lateral, 0);
    float steer = 0, speed = 1;
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    for (int k = 0; k < 250 && st->status == BATON_RACE_IN_PROGRESS; k++) baton_race_sim_step(s, &steer, &speed);
    baton_race_object bot;
    CHECK(baton_race_sim_objects(s, 0, &bot, 1) == 1);
    CHECK(fabs(bot.y - 0.5) < 1e-12);
    if (expect_crash)
        CHECK_MSG(st->status == BATON_RACE_CRASHED, "car at %g: %s", lateral, baton_race_status_name(st->status));
    else
        CHECK_MSG(st->status == BATON_RACE_IN_PROGRESS && st->x > bot.x + 1, "car at %g: %s, car x %g, bot x %g",
                  lateral, baton_race_status_name(st->status), st->x, bot.x);
    baton_race_sim_free(s);
}

static void test_overtake(void)
{
    baton_race_track *t = straight(2.0);
    if (!t) return;
    /* the footprints are 0.187 m wide: 0.3 m apart leaves 0.113 m between them */
    overtake(t, 0.2, 0);     /* on the bot's right */
    overtake(t, 0.8, 0);     /* on its left (the car's left wheels 0.11 m from the border) */
    overtake(t, 0.35, 1);    /* 0.15 m apart: the footprints overlap */
    overtake(t, 0.65, 1);
    baton_race_track_free(t);
}

static double checksum(const struct baton_race_params *p)
{
    double sum = 17 * p->closest_objects[0] + 19 * p->closest_objects[1] + 23 * p->object_in_camera +
                 29 * p->is_crashed + 31 * p->num_objects;
    for (int i = 0; i < p->num_objects; i++)
        sum += (i + 1) * (p->objects_location[i][0] + 2 * p->objects_location[i][1] + 3 * p->objects_left_of_center[i] +
                          5 * p->objects_speed[i] + 7 * p->objects_heading[i] / 100 +
                          11 * p->objects_distance_from_center[i] + 13 * p->objects_distance[i]);
    return sum;
}

static const char py_checksum[] =
    "def reward_function(params):\n"
    "    n = len(params['objects_location'])\n"
    "    for k in ('objects_left_of_center', 'objects_speed', 'objects_heading', 'objects_distance_from_center',\n"
    "              'objects_distance'):\n"
    "        assert type(params[k]) is list and len(params[k]) == n, k\n"
    "    assert all(type(p) is tuple and len(p) == 2 and type(p[0]) is float for p in params['objects_location'])\n"
    "    assert all(type(b) is bool for b in params['objects_left_of_center'])\n"
    "    assert all(type(v) is float for v in params['objects_speed'] + params['objects_heading'])\n"
    "    assert type(params['object_in_camera']) is bool and type(params['is_crashed']) is bool\n"
    "    c = params['closest_objects']\n"
    "    s = 17 * c[0] + 19 * c[1] + 23 * params['object_in_camera'] + 29 * params['is_crashed'] + 31 * n\n"
    "    for i in range(n):\n"
    "        x, y = params['objects_location'][i]\n"
    "        s += (i + 1) * (x + 2 * y + 3 * params['objects_left_of_center'][i] + 5 * params['objects_speed'][i] +\n"
    "                        7 * params['objects_heading'][i] / 100 + 11 * params['objects_distance_from_center'][i] +\n"
    "                        13 * params['objects_distance'][i])\n"
    "    return s\n";

/* The same sum in a user's C reward (compiled and loaded as `--reward FILE.c` is). */
static const char c_checksum[] =
    "#include \"baton/race_reward.h\"\n"
    "double reward_function(const struct baton_race_params *p)\n"
    "{\n"
    "    double s = 17 * p->closest_objects[0] + 19 * p->closest_objects[1] + 23 * p->object_in_camera +\n"
    "               29 * p->is_crashed + 31 * p->num_objects;\n"
    "    for (int i = 0; i < p->num_objects; i++)\n"
    "        s += (i + 1) * (p->objects_location[i][0] + 2 * p->objects_location[i][1] + 3 * p->objects_left_of_center[i] +\n"
    "                        5 * p->objects_speed[i] + 7 * p->objects_heading[i] / 100 +\n"
    "                        11 * p->objects_distance_from_center[i] + 13 * p->objects_distance[i]);\n"
    "    return s;\n"
    "}\n";

static void check_reward(const char *name, const char *text, const struct baton_race_params *p, size_t n)
{
    char dir[] = "/tmp/baton-test-objects-XXXXXX", path[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    baton_err err = {0};
    CHECK(baton_file_write_atomic(path, text, strlen(text), &err) == BATON_OK);
    baton_race_reward *r = NULL;
    CHECK_MSG(baton_race_reward_open(path, &r, &err) == BATON_OK, "%s", err.msg);
    for (size_t i = 0; r && i < n; i++) {
        double v = 0;
        CHECK_MSG(baton_race_reward_eval(r, &p[i], &v, &err) == BATON_OK, "%s", err.msg);
        CHECK_MSG(fabs(v - checksum(&p[i])) < 1e-9 * (1 + fabs(v)), "%s, case %zu: %.12g, here %.12g", name, i, v,
                  checksum(&p[i]));
    }
    baton_race_reward_free(r);
    baton_remove_tree(dir);
}

static void check_rewards(const struct baton_race_params *p, size_t n)
{
    check_reward("objects.c", c_checksum, p, n);
    if (baton_race_python_available()) check_reward("objects.py", py_checksum, p, n);
}

static void test_params(const baton_race_track *t)
{
    baton_race_sim_opts o;
    boxes3(&o);
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    struct baton_race_params p[4];
    /* the car's centre at 7 m (front point 7.14), facing along the track */
    race_sim_place(s, 0, 7, 0, 0);
    baton_race_sim_params(s, 0, &p[0]);
    const struct baton_race_params *q = &p[0];
    CHECK(q->num_objects == 3 && q->is_crashed == 0);
    const double ex[3] = {5, 10, 15}, ey[3] = {0.25, -0.25, 0};
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(fabs(q->objects_location[i][0] - ex[i]) < 1e-12 && fabs(q->objects_location[i][1] - ey[i]) < 1e-12,
                  "object %d at (%g, %g)", i, q->objects_location[i][0], q->objects_location[i][1]);
        CHECK(fabs(q->objects_distance[i] - ex[i]) < 1e-12);
        CHECK(fabs(q->objects_distance_from_center[i] - fabs(ey[i])) < 1e-12);
        CHECK(q->objects_speed[i] == 0 && fabs(q->objects_heading[i]) < 1e-12);
    }
    CHECK(q->objects_left_of_center[0] == 1 && q->objects_left_of_center[1] == 0 && q->objects_left_of_center[2] == 0);
    CHECK(q->closest_objects[0] == 0 && q->closest_objects[1] == 1);
    CHECK(q->object_in_camera == 1);   /* (10, -0.25) is 3 m ahead, 0.25 m right: in view */
    /* at 16 m the one behind is box 2, the one ahead wraps round to box 0 (behind the camera) */
    race_sim_place(s, 0, 16, 0, 0);
    baton_race_sim_params(s, 0, &p[1]);
    CHECK(p[1].closest_objects[0] == 2 && p[1].closest_objects[1] == 0 && p[1].object_in_camera == 0);
    /* at 11 m facing backwards: the next box by distance (15 m) is behind the lens */
    race_sim_place(s, 0, 11, 0, M_PI);
    baton_race_sim_params(s, 0, &p[2]);
    CHECK(p[2].closest_objects[0] == 1 && p[2].closest_objects[1] == 2 && p[2].object_in_camera == 0);
    /* the frustum is the Gazebo camera's, 1.13 rad wide: box 1 (2 m ahead, 0.25 m right) is in
     * it with the car turned 17° left, out of it at 46° (it would be in a 120° one) */
    race_sim_place(s, 0, 8, 0, 0.3);
    baton_race_sim_params(s, 0, &p[3]);
    CHECK(p[3].closest_objects[1] == 1 && p[3].object_in_camera == 1);
    race_sim_place(s, 0, 8, 0, 0.8);
    baton_race_sim_params(s, 0, &p[3]);
    CHECK(p[3].closest_objects[1] == 1 && p[3].object_in_camera == 0);
    /* before every object: behind wraps round to the last */
    race_sim_place(s, 0, 1, 0, 0);
    baton_race_sim_params(s, 0, &p[3]);
    CHECK(p[3].closest_objects[0] == 2 && p[3].closest_objects[1] == 0 && p[3].object_in_camera == 1);
    check_rewards(p, 4);
    baton_race_sim_free(s);

    /* a bot: its speed and heading (degrees), and a time trial's empty fields */
    baton_race_sim_opts_default(&o);
    o.objects.bots = 1;
    o.objects.bot_speed_mps = 0.6;
    s = sim_new(t, &o);
    if (!s) return;
    float steer = 0, speed = 0.5;
    for (int k = 0; k < 30; k++) baton_race_sim_step(s, &steer, &speed);
    baton_race_sim_params(s, 0, &p[0]);
    CHECK(p[0].num_objects == 1 && p[0].objects_speed[0] == 0.6 && fabs(p[0].objects_heading[0]) < 1e-9);
    CHECK_MSG(fabs(p[0].objects_distance[0] - (10 + 30 * 0.6 / 15)) < 1e-9, "bot at %.12g", p[0].objects_distance[0]);
    CHECK(p[0].objects_left_of_center[0] == 1 && fabs(p[0].objects_distance_from_center[0] - 0.25) < 1e-12);
    check_rewards(p, 1);
    baton_race_sim_free(s);
    baton_race_sim_opts_default(&o);
    s = sim_new(t, &o);
    if (!s) return;
    baton_race_sim_params(s, 0, &p[1]);
    CHECK(p[1].num_objects == 0 && p[1].objects_location == NULL && p[1].closest_objects[1] == 0);
    check_rewards(p + 1, 1);
    baton_race_sim_free(s);
}

/* The pinhole (camera.c's model, written out again): camera at (ahead, 0, height) in the car's
 * frame, pitched th down, focal length f = (W / 2) / tan(hfov / 2); image u right, v down. */
static void pinhole(const baton_race_camera_opts *o, double fwd, double left, double up, double *u, double *v)
{
    double f = 80.0 / tan(o->hfov_deg / 2 * M_PI / 180), th = o->pitch_deg * M_PI / 180;
    double px = fwd - o->ahead_m, pz = up - o->height_m;
    double depth = px * cos(th) - pz * sin(th);   /* along the optical axis */
    double down = -px * sin(th) - pz * cos(th);   /* along the image's down axis */
    *u = o->width / 2.0 - f * left / depth;
    *v = o->height / 2.0 + f * down / depth;
}

static void box_frame(const baton_race_camera *cam, const baton_race_camera_opts *co, double dist, double lateral)
{
    /* the car's centre at (2, 0) facing +x, a box whose centre is dist ahead, lateral to the left */
    baton_race_object ob = {BATON_RACE_BOX, 2 + dist, lateral, 0, 0.2, 0.2, 0.2, 0.1, 0, 0};
    uint8_t plain[160 * 120], with[160 * 120];
    baton_race_camera_render(cam, 2, 0, 0, plain);
    race_camera_render_objects(cam, 2, 0, 0, &ob, 1, with);
    int u0 = 999, u1 = -1, v0 = 999, v1 = -1, other = 0;
    for (int v = 0; v < 120; v++)
        for (int u = 0; u < 160; u++) {
            int i = v * 160 + u;
            if (with[i] == plain[i]) continue;
            if (with[i] != 165 && with[i] != 135) other++;
            u0 = u < u0 ? u : u0, u1 = u > u1 ? u : u1, v0 = v < v0 ? v : v0, v1 = v > v1 ? v : v1;
        }
    /* the outline of a convex solid is the hull of its corners' images */
    double umin = INFINITY, umax = -INFINITY, vtop = INFINITY, vbot = -INFINITY, pu, pv;
    for (int j = 0; j < 8; j++) {
        pinhole(co, dist + (j & 1 ? 0.1 : -0.1), lateral + (j & 2 ? 0.1 : -0.1), j & 4 ? 0.2 : 0, &pu, &pv);
        umin = fmin(umin, pu), umax = fmax(umax, pu), vtop = fmin(vtop, pv), vbot = fmax(vbot, pv);
    }
    double ua, uc, ub, ud;   /* the near face's left and right edges, top and bottom */
    pinhole(co, dist - 0.1, lateral + 0.1, 0.2, &ua, &pv);
    pinhole(co, dist - 0.1, lateral + 0.1, 0, &uc, &pv);
    pinhole(co, dist - 0.1, lateral - 0.1, 0.2, &ub, &pv);
    pinhole(co, dist - 0.1, lateral - 0.1, 0, &ud, &pv);
    CHECK_MSG(fabs(u0 - umin) <= 1 && fabs(u1 + 1 - umax) <= 1 && fabs(v0 - vtop) <= 1 && fabs(v1 + 1 - vbot) <= 1,
              "box %.1f m ahead, %.2f left: drawn in columns %d..%d, rows %d..%d; the pinhole puts it at u %.2f..%.2f, "
              "v %.2f..%.2f", dist, lateral, u0, u1 + 1, v0, v1 + 1, umin, umax, vtop, vbot);
    CHECK_MSG(other == 0, "%d pixels of the box not in its shades", other);
    /* it hides the track: every pixel inside its outline is the box */
    int holes = 0;
    for (int v = (int)ceil(vtop) + 1; v < (int)vbot - 1; v++)
        for (int u = (int)ceil(fmax(ua, uc)) + 1; u < (int)fmin(ub, ud) - 1; u++) holes += with[v * 160 + u] != 165;
    CHECK_MSG(holes == 0, "%d pixels inside the box's face are not its face", holes);
}

static void test_camera(const baton_race_track *t)
{
    baton_race_camera_opts co;
    baton_race_camera_opts_default(&co);
    baton_race_camera *cam = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_camera_new(t, &co, &cam, &err) == BATON_OK, "%s", err.msg);
    if (!cam) return;
    box_frame(cam, &co, 1.0, 0);
    box_frame(cam, &co, 2.0, 0);
    box_frame(cam, &co, 1.5, 0.25);
    /* a box behind the car is not drawn; a bot is drawn darker than the track */
    uint8_t a[160 * 120], b[160 * 120];
    baton_race_object ob = {BATON_RACE_BOX, 1.0, 0, 0, 0.2, 0.2, 0.2, 0.1, 0, 0};
    baton_race_camera_render(cam, 2, 0, 0, a);
    race_camera_render_objects(cam, 2, 0, 0, &ob, 1, b);
    CHECK(!memcmp(a, b, sizeof a));
    baton_race_object bot = {BATON_RACE_BOT, 3.2, 0, 0, 0.2517, 0.187, 0.16, 0.1117, 0.2, 0};
    race_camera_render_objects(cam, 2, 0, 0, &bot, 1, b);
    int dark = 0;
    for (size_t i = 0; i < sizeof a; i++) dark += a[i] != b[i] && b[i] < 40;
    CHECK_MSG(dark > 50, "bot: %d dark pixels", dark);
    /* a box beside the car reaching behind the lens (fwd -0.1..0.6 m, its right side 0.25 m to the
     * left): the side's points where the pinhole puts them, out to the image's left edge */
    baton_race_object side = {BATON_RACE_BOX, 2.25, 0.35, 0, 0.7, 0.2, 0.2, 0.35, 0, 0};
    race_camera_render_objects(cam, 2, 0, 0, &side, 1, b);
    const double pts[3][3] = {{0.5, 0.25, 0.1}, {0.3, 0.25, 0.1}, {0.35, 0.25, 0.15}};
    for (int i = 0; i < 3; i++) {
        double pu, pv;
        pinhole(&co, pts[i][0], pts[i][1], pts[i][2], &pu, &pv);
        int u = (int)pu, v = (int)pv;
        CHECK_MSG(u >= 0 && u < 160 && v >= 0 && v < 120 && b[v * 160 + u] == 135, "side point %d at (%d, %d): %d", i,
                  u, v, u >= 0 && u < 160 && v >= 0 && v < 120 ? b[v * 160 + u] : -1);
    }
    /* the simulator's frames carry the scene */
    baton_race_sim_opts o;
    boxes3(&o);
    baton_race_sim *s = sim_new(t, &o);
    if (s) {
        race_sim_place(s, 0, 8.5, 0, 0);   /* box 1 (10 m, right lane) 1.5 m ahead */
        race_sim_camera(s, cam, a);
        const baton_race_car_state *st = baton_race_sim_state(s, 0);
        baton_race_camera_render(cam, st->x, st->y, st->yaw, b);
        int differ = 0;
        for (size_t i = 0; i < sizeof a; i++) differ += a[i] != b[i];
        CHECK_MSG(differ > 50, "the sim's frame shows %d box pixels", differ);
        baton_race_sim_free(s);
    }
    baton_race_camera_free(cam);
}

static void test_lidar(const baton_race_track *t)
{
    baton_race_sensor_opts so;
    baton_race_sensor_opts_default(&so);
    CHECK(baton_race_sensor_dim(&so) == 17);   /* a time trial's vector is unchanged */
    baton_race_sensor_opts_lidar(&so);
    CHECK(baton_race_sensor_dim(&so) == 28);
    baton_race_sim_opts o;
    boxes3(&o);
    o.objects.pos_lane[0] = 0;   /* box 0 on the centre line at 5 m */
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    race_sim_place(s, 0, 4, 0, 0);   /* the front point at 4.14: 0.76 m from the box's face */
    float v[28];
    baton_race_sim_sensor_env(s, &so, 0, v);
    CHECK_MSG(fabs(v[17 + 5] - 0.76 / 3) < 1e-6, "straight ahead %g", v[17 + 5]);
    CHECK(v[17] == 1 && v[27] == 1);   /* left and right: nothing */
    /* 18° to the right: the ray meets the face at 0.76 / cos(18°), 0.76 tan(18°) = 0.247 > 0.1 off the axis: misses */
    CHECK(v[17 + 6] == 1);
    baton_race_sim_free(s);
    /* without objects the LIDAR reads nothing */
    baton_race_sim_opts_default(&o);
    s = sim_new(t, &o);
    if (!s) return;
    baton_race_sim_sensor_env(s, &so, 0, v);
    for (int k = 17; k < 28; k++) CHECK(v[k] == 1);
    baton_race_sim_free(s);
}

/* A ring 10 m in radius and 10 m wide (lanes 2.5 m either side of the centre line): bots drive
 * round it while the car stands at the start. */
static baton_race_track *ring(void)
{
    enum { N = 401 };
    double *rows = malloc(N * 6 * sizeof *rows);
    for (int i = 0; i < N; i++) {
        double a = 2 * M_PI * (i % (N - 1)) / (N - 1), c = cos(a), s = sin(a);
        double r[6] = {10 * c, 10 * s, 5 * c, 5 * s, 15 * c, 15 * s};
        memcpy(rows + 6 * i, r, sizeof r);
    }
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(race_track_from_rows("ring", rows, N, &t, &err) == BATON_OK, "%s", err.msg);
    free(rows);
    return t;
}

/* Bots over a long drive: each keeps its lane (a quarter width from the centre line, the same
 * side) and its speed along the line (measured as the params measure it, by projection on the
 * 400-gon: a point 2.5 m inside a corner projects up to a few centimetres off). */
static void test_bots_keep(const baton_race_track *t, double length)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.objects.bots = 3;
    o.objects.bot_speed_mps = 1.0;
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    struct baton_race_params p;
    baton_race_sim_params(s, 0, &p);
    double prev[3], run[3] = {0, 0, 0};
    int left0[3], lane_bad = 0, steps = 0;
    for (int i = 0; i < 3; i++) prev[i] = p.objects_distance[i], left0[i] = p.objects_left_of_center[i];
    CHECK(left0[0] == 1 && left0[1] == 0 && left0[2] == 1);   /* inner (left of a ccw loop), outer, inner */
    float steer = 0, speed = 0.1;
    for (int k = 0; k < 1500; k++) {
        race_sim_place(s, 0, 0, 0, 0);   /* the car stays at the start: the bots drive */
        baton_race_sim_step(s, &steer, &speed);
        if (baton_race_sim_state(s, 0)->status != BATON_RACE_IN_PROGRESS) break;
        steps++;
        baton_race_sim_params(s, 0, &p);
        for (int i = 0; i < 3; i++) {
            double d = p.objects_distance[i] - prev[i];
            if (d < -length / 2) d += length;
            run[i] += d;
            prev[i] = p.objects_distance[i];
            lane_bad += p.objects_left_of_center[i] != left0[i] || fabs(p.objects_distance_from_center[i] - 2.5) > 0.01;
        }
    }
    CHECK(steps == 1500);
    CHECK_MSG(lane_bad == 0, "%d bot positions out of their lanes", lane_bad);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(fabs(run[i] - steps / 15.0) < 0.05, "bot %d drove %.6f m along the line in %.1f s at 1 m/s", i,
                  run[i], steps / 15.0);
    baton_race_sim_free(s);
}

/* Lane changes: one starts every 3–5 s and takes 1 m at 1 m/s (15 steps), to the other lane. */
static void test_bots_change(const baton_race_track *t)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.objects.bots = 1;
    o.objects.bot_speed_mps = 1.0;
    o.objects.lane_change = 1;
    o.seed = 7;
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    baton_race_object ob;
    float steer = 0, speed = 0.1;
    int starts[32], nstart = 0, was = 0, len = 0, bad = 0;
    double rest = 1;   /* the lane before the change under way */
    for (int k = 1; k <= 900; k++) {
        race_sim_place(s, 0, 0, 0, 0);
        baton_race_sim_step(s, &steer, &speed);
        baton_race_sim_objects(s, 0, &ob, 1);
        int changing = fabs(ob.lane) < 1;
        if (changing && !was && nstart < 32) starts[nstart++] = k, len = 0;
        if (changing) len++;
        if (!changing && was) bad += len < 14 || len > 15 || ob.lane != -rest;
        if (!changing) rest = ob.lane;
        was = changing;
    }
    CHECK_MSG(nstart >= 11 && nstart <= 21, "%d lane changes in 60 s", nstart);
    CHECK_MSG(bad == 0, "%d lane changes not 1 m long or not to the other lane", bad);
    for (int i = 1; i < nstart; i++)
        CHECK_MSG(starts[i] - starts[i - 1] >= 3 * 15 - 1 && starts[i] - starts[i - 1] <= 5 * 15 + 1,
                  "lane changes %d steps apart", starts[i] - starts[i - 1]);
    baton_race_sim_free(s);
}

static void test_bots(void)
{
    baton_race_track *t = ring();
    if (!t) return;
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    test_bots_keep(t, in.length_m);
    test_bots_change(t);
    baton_race_track_free(t);
}

/* Random scenes: the same seed gives the same scenes, bit for bit, on every step; another seed
 * gives others; objects keep their gaps and leave the start clear. */
static void record_scenes(const baton_race_track *t, uint64_t seed, baton_race_object *out, size_t steps)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.envs = 3;
    o.seed = seed;
    o.objects.boxes = 3;
    o.objects.bots = 2;
    o.objects.randomize = 1;
    o.objects.lane_change = 1;
    o.objects.bot_speed_mps = 0.5;
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    float steer[3], speed[3];
    for (size_t k = 0; k < steps; k++) {
        for (size_t e = 0; e < 3; e++) {
            baton_race_centerline_action(s, e, 0.8, &steer[e], &speed[e]);
            if (baton_race_sim_state(s, e)->status != BATON_RACE_IN_PROGRESS) baton_race_sim_reset(s, e);
        }
        baton_race_sim_step(s, steer, speed);
        for (size_t e = 0; e < 3; e++) CHECK(baton_race_sim_objects(s, e, out + (k * 3 + e) * 5, 5) == 5);
    }
    baton_race_sim_free(s);
}

static void test_seeded(const baton_race_track *t)
{
    size_t steps = 400, n = steps * 3 * 5;
    baton_race_object *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b), *c = calloc(n, sizeof *c);
    record_scenes(t, 11, a, steps);
    record_scenes(t, 11, b, steps);
    record_scenes(t, 12, c, steps);
    CHECK(!memcmp(a, b, n * sizeof *a));
    CHECK(memcmp(a, c, n * sizeof *a) != 0);
    /* the boxes of the first step's scenes: 2 m apart along the track */
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    int close = 0;
    for (size_t e = 0; e < 3; e++)
        for (int i = 0; i < 3; i++)
            for (int j = i + 1; j < 3; j++)
                close += hypot(a[e * 5 + i].x - a[e * 5 + j].x, a[e * 5 + i].y - a[e * 5 + j].y) < 0.5;
    CHECK(close == 0);
    free(a);
    free(b);
    free(c);
}

/* A scene keyed by the caller is a function of (seed, key) alone, whichever environment and
 * whatever came before. */
static void test_scene_key(const baton_race_track *t)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.envs = 2;
    o.objects.boxes = 4;
    o.objects.randomize = 1;
    baton_race_sim *s = sim_new(t, &o);
    if (!s) return;
    baton_race_object a[4], b[4], c[4];
    memset(a, 0, sizeof a), memset(b, 0, sizeof b), memset(c, 0, sizeof c);   /* the padding */
    baton_race_sim_reset(s, 1);   /* env 1 has drawn more than env 0 */
    baton_race_sim_scene_seed(s, 0, 42);
    baton_race_sim_start(s, 0, 0.3, 0);
    baton_race_sim_objects(s, 0, a, 4);
    baton_race_sim_scene_seed(s, 1, 42);
    baton_race_sim_start(s, 1, 0.3, 0);
    baton_race_sim_objects(s, 1, b, 4);
    baton_race_sim_scene_seed(s, 1, 43);
    baton_race_sim_start(s, 1, 0.3, 0);
    baton_race_sim_objects(s, 1, c, 4);
    CHECK(!memcmp(a, b, sizeof a) && memcmp(a, c, sizeof a) != 0);
    baton_race_sim_free(s);
}

/* state.json keeps a run's objects exactly; a bad objects field is refused naming it. */
static void test_state_objects(void)
{
    race_run_state s, b;
    memset(&s, 0, sizeof s);
    ppo_meta_default(&s.meta);
    s.meta.obs = BATON_PPO_OBS_SENSOR, s.meta.lidar = 1;
    ppo_hyper_default(&s.hyper);
    baton_rng_seed(&s.act_rng, 3);
    baton_rng_seed(&s.shuffle_rng, 4);
    snprintf(s.track, sizeof s.track, "oval");
    snprintf(s.reward, sizeof s.reward, "follow_center_line");
    s.envs = 20, s.max_steps = 10000;
    baton_race_car_default(&s.car);
    baton_race_objects_opts_default(&s.objects);
    s.objects.boxes = 2, s.objects.npos = 2, s.objects.randomize = 1;
    s.objects.pos_progress[0] = 0.1, s.objects.pos_lane[0] = -1, s.objects.pos_progress[1] = 1.0 / 3, s.objects.pos_lane[1] = 0.5;
    s.objects.bots = 1, s.objects.bot_speed_mps = 0.7, s.objects.lane_change = 1, s.objects.lane_change_m = 1.25;
    char *js = race_state_format(&s);
    baton_err err = {0};
    memset(&b, 0x5a, sizeof b);
    CHECK_MSG(js && race_state_parse(js, strlen(js), &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(!memcmp(&b.objects, &s.objects, sizeof s.objects) && b.meta.lidar == 1);
    /* bad fields, named */
    const char *cases[][3] = {
        {"\"bots\":1", "\"bots\":9", "objects.bots: is 9, outside 0..6"},
        {"\"bot_speed_mps\":0.7", "\"bot_speed_mps\":\"fast\"", "bot_speed_mps"},
        {"\"randomize\":true", "\"randomize\":1", "randomize"},
        {"[0.1,-1]", "[0.1,-3]", "lane -3"},
        {"[0.1,-1]", "[0.1]", "positions"},
    };
    for (size_t i = 0; js && i < sizeof cases / sizeof cases[0]; i++) {
        const char *at = strstr(js, cases[i][0]);
        CHECK_MSG(at != NULL, "%s not in %s", cases[i][0], js);
        if (!at) continue;
        char text[16384];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - js), js, cases[i][1], at + strlen(cases[i][0]));
        int rc = race_state_parse(text, strlen(text), &b, &err);
        CHECK_MSG(rc == BATON_ERR_FORMAT && strstr(err.msg, "state.json") && strstr(err.msg, cases[i][2]),
                  "%s: rc %d, %s", cases[i][1], rc, err.msg);
    }
    free(js);
}

static void test_options(const baton_race_track *t)
{
    baton_race_sim_opts o;
    baton_race_sim *s = NULL;
    baton_err err = {0};
    baton_race_sim_opts_default(&o);
    o.objects.boxes = 17;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "boxes 17"));
    baton_race_sim_opts_default(&o);
    o.objects.bots = 2;
    o.objects.bot_speed_mps = 0;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "bot speed"));
    boxes3(&o);
    o.objects.pos_lane[1] = 2;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "position 2: lane 2"));
    boxes3(&o);
    o.objects.npos = 2;
    CHECK(baton_race_sim_new(t, &o, &s, &err) == BATON_ERR_ARG && strstr(err.msg, "positions"));
    baton_race_objects_opts oo;
    baton_race_objects_opts_default(&oo);
    CHECK(baton_race_objects_for_race(BATON_RACE_OBJECT_AVOIDANCE, 3, &oo, &err) == BATON_OK && oo.boxes == 3);
    CHECK(baton_race_objects_for_race(BATON_RACE_HEAD_TO_BOT, 9, &oo, &err) == BATON_ERR_ARG && strstr(err.msg, "bots"));
    CHECK(!strcmp(baton_race_type_name(BATON_RACE_HEAD_TO_BOT), "head-to-bot"));
    CHECK(s == NULL);
}

/* The fast object renderer (car frame, culled to each object's bounds) against the plain reference
 * (world frame, every pixel against every box) on 200 random scenes of boxes and bots around a
 * car anywhere on the track: the ground may differ by 1 (the two ground renderers' rounding), an
 * object's pixel not at all but on its outline's few pixels where the two frames' rounding decide
 * a grazing ray differently. */
static void test_camera_ref(const baton_race_track *t)
{
    baton_race_camera_opts co;
    baton_race_camera_opts_default(&co);
    baton_race_camera *cam = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_camera_new(t, &co, &cam, &err) == BATON_OK, "%s", err.msg);
    if (!cam) return;
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    baton_rng r;
    baton_rng_seed(&r, 17);
    uint8_t a[160 * 120], b[160 * 120];
    size_t drawn = 0, off = 0, worst = 0;
    for (int k = 0; k < 200; k++) {
        double x, y, yaw;
        baton_race_track_at(t, in.length_m * baton_rng_float(&r), &x, &y, &yaw);
        yaw += 0.4 * (baton_rng_float(&r) - 0.5);
        baton_race_object ob[6];
        int n = 1 + k % 6;
        for (int i = 0; i < n; i++) {
            double fwd = -0.3 + 3.0 * baton_rng_float(&r), left = 1.2 * (baton_rng_float(&r) - 0.5);
            int bot = baton_rng_float(&r) < 0.4;
            ob[i] = (baton_race_object){bot ? BATON_RACE_BOT : BATON_RACE_BOX, x + fwd * cos(yaw) - left * sin(yaw),
                                        y + fwd * sin(yaw) + left * cos(yaw), yaw + 3.0 * (baton_rng_float(&r) - 0.5),
                                        bot ? 0.2517 : 0.2, bot ? 0.187 : 0.2, bot ? 0.16 : 0.2, bot ? 0.1117 : 0.1, 0, 0};
        }
        race_camera_render_objects(cam, x, y, yaw, ob, (size_t)n, a);
        race_camera_render_objects_ref(cam, x, y, yaw, ob, (size_t)n, b);
        size_t here = 0;
        for (size_t i = 0; i < sizeof a; i++) {
            int d = abs(a[i] - b[i]);
            here += d > 1;
            drawn += (b[i] == 165 || b[i] == 135 || b[i] == 200 || b[i] < 40) && d == 0;
        }
        off += here;
        worst = here > worst ? here : worst;
    }
    CHECK_MSG(drawn > 20000 && worst <= 8 && off <= 200, "%zu object pixels agree; %zu differ by more than 1 (at most %zu in a frame)",
              drawn, off, worst);
    baton_race_camera_free(cam);
}

int main(void)
{
    test_geometry();
    test_state_objects();
    baton_race_track *t = straight(1.0);
    test_overtake();
    if (t) {
        test_crash(t);
        test_params(t);
        test_camera(t);
        test_camera_ref(t);
        test_lidar(t);
        test_options(t);
    }
    baton_race_track_free(t);
    test_bots();
    baton_race_track *rb = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_track_load("../shared/tracks/reinvent_base.npy", &rb, &err) == BATON_OK, "%s", err.msg);
    if (rb) test_seeded(rb), test_scene_key(rb);
    baton_race_track_free(rb);
    CHECK_DONE();
}
