/* test_race_track.c — tracks: every DeepRacer file in ../shared/tracks against the lengths and
 * mean widths its README lists (within 1 % and 2 %), the built-in designs, the grid's on-track test
 * and ray casts against the plain reference on random points, the fast nearest-point walk against
 * the full scan, and bad tracks refused with the row named. */
#include "../../src/race/race_internal.h"
#include "baton/race.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *file;
    size_t rows;
    double length, width;
    int loop;
} shared[] = {
    {"reinvent_base.npy", 119, 17.71, 0.762, 1},       {"reInvent2019_track.npy", 155, 23.12, 1.067, 1},
    {"reInvent2019_wide.npy", 112, 16.64, 1.067, 1},   {"2022_reinvent_champ_ccw.npy", 113, 33.28, 0.950, 1},
    {"Oval_track.npy", 102, 19.55, 0.710, 1},          {"Bowtie_track.npy", 163, 17.43, 0.789, 1},
    {"Canada_Training.npy", 203, 21.74, 0.757, 1},     {"Vegas_track.npy", 151, 22.55, 1.067, 1},
    {"Spain_track.npy", 259, 60.00, 0.913, 1},         {"Straight_track.npy", 22, 5.71, 0.610, 0},
};

static baton_race_track *load(const char *spec)
{
    baton_race_track *t = NULL;
    baton_err err = {0};
    int rc = baton_race_track_load(spec, &t, &err);
    CHECK_MSG(rc == BATON_OK, "%s: %s", spec, err.msg);
    return rc ? NULL : t;
}

static void test_shared_tracks(void)
{
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "../shared/tracks/%s", shared[i].file);
        baton_race_track *t = load(path);
        if (!t) continue;
        baton_race_track_info in;
        baton_race_track_get_info(t, &in);
        CHECK_MSG(fabs(in.length_m / shared[i].length - 1) < 0.01, "%s: length %.3f, README %.2f", path, in.length_m,
                  shared[i].length);
        CHECK_MSG(fabs(in.width_m / shared[i].width - 1) < 0.02, "%s: width %.4f, README %.3f", path, in.width_m,
                  shared[i].width);
        CHECK_EQ_U(in.rows, shared[i].rows);
        CHECK(in.loop == shared[i].loop);
        CHECK(in.min_width_m <= in.width_m + 1e-12 && in.width_m <= in.max_width_m + 1e-12);
        CHECK(in.loop ? in.turns >= 3 : in.turns == 0);
        char want[256];
        snprintf(want, sizeof want, "%s", shared[i].file);
        want[strlen(want) - 4] = 0;   /* the name is the file's, without .npy */
        CHECK_MSG(!strcmp(in.name, want), "name %s", in.name);
        baton_race_track_free(t);
    }
}

static void test_builtin(void)
{
    const char *const *names = baton_race_builtin_tracks();
    CHECK(names[0] && names[1] && !names[2]);
    for (int i = 0; names[i]; i++) {
        baton_race_track *t = load(names[i]);
        if (!t) continue;
        baton_race_track_info in;
        baton_race_track_get_info(t, &in);
        CHECK(in.loop && in.ccw);
        CHECK(fabs(in.width_m - 0.76) < 1e-9);
        size_t n;
        const double *rows = race_track_rows(t, &n);
        CHECK(!memcmp(rows, rows + 6 * (n - 1), 6 * sizeof(double)));
        /* the design closes on itself: the row before the last is one step (~0.15 m) from the start */
        double gap = hypot(rows[6 * (n - 2)] - rows[0], rows[6 * (n - 2) + 1] - rows[1]);
        CHECK_MSG(gap > 0.05 && gap < 0.16, "%s: gap %.4f", names[i], gap);
        if (!strcmp(names[i], "oval")) {
            CHECK(fabs(in.length_m - (8 + 3.2 * M_PI)) < 0.01);
            CHECK(in.turns == 2 && fabs(in.min_radius_m - 1.6) < 0.01);
        } else {
            /* technical: a hairpin (0.6 m), a chicane, a straight of 7 m */
            CHECK(in.turns >= 6 && fabs(in.min_radius_m - 0.6) < 0.02);
            CHECK(in.length_m > 20 && in.length_m < 26);
        }
        baton_race_track_free(t);
    }
    baton_race_track *t;
    baton_err err = {0};
    CHECK(baton_race_track_load("nosuch", &t, &err) == BATON_ERR_NOTFOUND && strstr(err.msg, "oval"));
}

/* The grid's answer and ray casts against the plain reference, on random points over the box. */
static void test_grid_vs_ref(void)
{
    baton_rng rng;
    baton_rng_seed(&rng, 7);
    const char *specs[] = {"oval", "technical", "../shared/tracks/reinvent_base.npy", "../shared/tracks/Spain_track.npy",
                           "../shared/tracks/Straight_track.npy", "../shared/tracks/Bowtie_track.npy"};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        baton_race_track *t = load(specs[s]);
        if (!t) continue;
        baton_race_track_info in;
        baton_race_track_get_info(t, &in);
        int mismatch = 0, on = 0;
        for (int k = 0; k < 20000; k++) {
            double x = in.xmin - 0.5 + (in.xmax - in.xmin + 1) * baton_rng_float(&rng);
            double y = in.ymin - 0.5 + (in.ymax - in.ymin + 1) * baton_rng_float(&rng);
            int a = race_track_contains(t, x, y), b = race_track_contains_ref(t, x, y);
            mismatch += a != b;
            on += b;
        }
        CHECK_MSG(mismatch == 0, "%s: %d of 20000 points disagree", specs[s], mismatch);
        CHECK(on > 1000 && on < 19000);
        /* every centre point is on the track, every point 1 cm outside a border is off */
        size_t n;
        const double *r = race_track_rows(t, &n);
        int bad = 0, loop = !memcmp(r, r + 6 * (n - 1), 6 * sizeof *r);
        for (size_t i = loop ? 0 : 1; i + (loop ? 0 : 1) < n; i++) {   /* an open track's ends lie on its caps */
            double ox = r[6 * i + 4] - r[6 * i], oy = r[6 * i + 5] - r[6 * i + 1], ol = hypot(ox, oy);
            bad += !race_track_contains(t, r[6 * i], r[6 * i + 1]);
            bad += race_track_contains(t, r[6 * i + 4] + 0.01 * ox / ol, r[6 * i + 5] + 0.01 * oy / ol);
        }
        CHECK_MSG(bad == 0, "%s: %d waypoint checks wrong", specs[s], bad);
        baton_race_track_free(t);
    }
}

static void bad_track(const char *name, const double *rows, size_t n, const char *want)
{
    baton_race_track *t = NULL;
    baton_err err = {0};
    int rc = race_track_from_rows(name, rows, n, &t, &err);
    CHECK_MSG(rc != BATON_OK && strstr(err.msg, want) && strstr(err.msg, name), "%s: rc %d, '%s' (want '%s')", name,
              rc, err.msg, want);
    baton_race_track_free(t);
}

static void test_bad_tracks(void)
{
    /* a square loop 4 × 4 m, 1 m wide: good */
    double sq[9 * 6];
    const double cx[9] = {0, 2, 4, 4, 4, 2, 0, 0, 0}, cy[9] = {0, 0, 0, 2, 4, 4, 4, 2, 0};
    for (int i = 0; i < 9; i++) {
        double dx = cx[i] - 2, dy = cy[i] - 2, l = fmax(fabs(dx), fabs(dy));
        double ux = l > 0 ? dx / l : 0, uy = l > 0 ? dy / l : 0;
        sq[6 * i] = cx[i], sq[6 * i + 1] = cy[i];
        sq[6 * i + 2] = cx[i] - 0.5 * ux, sq[6 * i + 3] = cy[i] - 0.5 * uy;
        sq[6 * i + 4] = cx[i] + 0.5 * ux, sq[6 * i + 5] = cy[i] + 0.5 * uy;
    }
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(race_track_from_rows("square", sq, 9, &t, &err) == BATON_OK, "%s", err.msg);
    if (t) {
        baton_race_track_info in;
        baton_race_track_get_info(t, &in);
        CHECK(in.loop && fabs(in.length_m - 16) < 1e-12);
        baton_race_track_free(t);
    }
    double b[9 * 6];
    bad_track("two-rows", sq, 2, "at least 3");
    memcpy(b, sq, sizeof b);
    b[6 * 3 + 2] = NAN;
    bad_track("nan", b, 9, "row 3: inner x is nan");
    memcpy(b, sq, sizeof b);
    b[6 * 5 + 5] = INFINITY;
    bad_track("inf", b, 9, "row 5: outer y is inf");
    /* the inner border point of row 2 pulled out past the outer border */
    memcpy(b, sq, sizeof b);
    b[6 * 2 + 2] = 5.5;
    bad_track("crossing", b, 9, "crosses");
    memcpy(b, sq, sizeof b);
    b[6 * 4 + 2] = b[6 * 4 + 4];
    b[6 * 4 + 3] = b[6 * 4 + 5];
    bad_track("zero-width", b, 9, "row 4");
    /* only repeated centre points */
    double same[3 * 6] = {0, 0, 0, 1, 0, -1, 0, 0, 0, 1, 0, -1, 0, 0, 0, 1, 0, -1};
    bad_track("degenerate", same, 3, "distinct centre points");

    /* through a file: shape (N, 4) */
    baton_buf buf = {0};
    CHECK(race_npy_write(&buf, sq, 9, 4) == BATON_OK);
    char path[] = "/tmp/baton-test-track-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && baton_write_all(fd, buf.data, buf.len, path, &err) == BATON_OK);
    close(fd);
    CHECK(baton_race_track_load(path, &t, &err) != BATON_OK && strstr(err.msg, "6 columns") && strstr(err.msg, path));
    unlink(path);
    baton_buf_free(&buf);
}

int main(void)
{
    test_shared_tracks();
    test_builtin();
    test_grid_vs_ref();
    test_bad_tracks();
    CHECK_DONE();
}
