/* test_race_npy.c — the .npy reader: real DeepRacer files, what the writer writes (every header
 * version), and each kind of malformed file named in the race issue refused with a message that
 * names the file and what is wrong. */
#include "../../src/race/race_internal.h"
#include "baton/race.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A .npy with an arbitrary header text and version; data appended as given. */
static size_t make_npy(uint8_t *out, int major, const char *header, const void *data, size_t n)
{
    size_t hl = strlen(header), k = 0;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)major;
    out[7] = 0;
    k = 8;
    if (major == 1) {
        out[k++] = (uint8_t)(hl & 0xff);
        out[k++] = (uint8_t)(hl >> 8);
    } else {
        for (int i = 0; i < 4; i++) out[k++] = (uint8_t)(hl >> (8 * i));
    }
    memcpy(out + k, header, hl);
    k += hl;
    memcpy(out + k, data, n);
    return k + n;
}

static int fails_with(const uint8_t *buf, size_t n, const char *want)
{
    baton_npy a;
    baton_err err = {0};
    int rc = race_npy_parse("bad.npy", buf, n, &a, &err);
    if (rc == BATON_OK) {
        race_npy_free(&a);
        fprintf(stderr, "parsed, but should fail with '%s'\n", want);
        return 0;
    }
    if (!strstr(err.msg, "bad.npy") || !strstr(err.msg, want)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
        return 0;
    }
    return a.data == NULL;
}

static void test_real_file(void)
{
    baton_npy a;
    baton_err err = {0};
    int rc = race_npy_load("../shared/tracks/reinvent_base.npy", &a, &err);
    CHECK_MSG(rc == BATON_OK, "%s", err.msg);
    if (rc) return;
    CHECK_EQ_U(a.rows, 119);
    CHECK_EQ_U(a.cols, 6);
    /* a loop: the last row repeats the first */
    CHECK(!memcmp(a.data, a.data + 6 * 118, 6 * sizeof(double)));
    CHECK(fabs(a.data[0]) < 20 && fabs(a.data[1]) < 20);
    race_npy_free(&a);
}

static void test_round_trip(void)
{
    double d[12];
    for (int i = 0; i < 12; i++) d[i] = i * 0.25 - 1.0 / 3;
    d[5] = -0.0;
    baton_buf b = {0};
    CHECK(race_npy_write(&b, d, 4, 3) == BATON_OK);
    baton_npy a;
    baton_err err = {0};
    CHECK(race_npy_parse("rt.npy", b.data, b.len, &a, &err) == BATON_OK);
    CHECK_EQ_U(a.rows, 4);
    CHECK_EQ_U(a.cols, 3);
    CHECK(!memcmp(a.data, d, sizeof d));
    race_npy_free(&a);
    /* the header is padded so the data starts at a multiple of 64, as numpy writes it */
    size_t hl = (size_t)b.data[8] | (size_t)b.data[9] << 8;
    CHECK((10 + hl) % 64 == 0);
    CHECK(b.data[10 + hl - 1] == '\n');
    baton_buf_free(&b);

    /* versions 2.0 and 3.0 (4-byte header length), keys in another order, 'float64', Python 2 longs */
    uint8_t buf[512];
    size_t n = make_npy(buf, 2, "{'shape': (4L, 3L), 'fortran_order': False, 'descr': '<f8'}\n", d, sizeof d);
    CHECK(race_npy_parse("v2.npy", buf, n, &a, &err) == BATON_OK && a.rows == 4 && !memcmp(a.data, d, sizeof d));
    race_npy_free(&a);
    n = make_npy(buf, 3, "{\"descr\": \"float64\", \"fortran_order\": False, \"shape\": (2, 6)}", d, sizeof d);
    CHECK(race_npy_parse("v3.npy", buf, n, &a, &err) == BATON_OK && a.rows == 2 && a.cols == 6);
    race_npy_free(&a);
}

static void test_malformed(void)
{
    double d[24] = {0}, more[25] = {0};
    uint8_t buf[1024];
    const char *good = "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 6), }\n";
    size_t n = make_npy(buf, 1, good, d, sizeof d);
    baton_npy a;
    baton_err err = {0};
    CHECK(race_npy_parse("good.npy", buf, n, &a, &err) == BATON_OK);
    race_npy_free(&a);

    uint8_t bad[1024];
    memcpy(bad, buf, n);
    bad[1] = 'X';
    CHECK(fails_with(bad, n, "bad magic"));
    CHECK(fails_with((const uint8_t *)"hello", 5, "bad magic"));
    memcpy(bad, buf, n);
    bad[6] = 4;
    CHECK(fails_with(bad, n, "version 4.0"));
    memcpy(bad, buf, n);
    bad[7] = 1;
    CHECK(fails_with(bad, n, "version 1.1"));

    n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 6), }\n", d, 4 * 24);
    CHECK(fails_with(buf, n, "dtype '<f4'"));
    n = make_npy(buf, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (4, 6), }\n", d, sizeof d);
    CHECK(fails_with(buf, n, "dtype '>f8'"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (4, 6), }\n", d, sizeof d);
    CHECK(fails_with(buf, n, "Fortran order"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (24,), }\n", d, sizeof d);
    CHECK(fails_with(buf, n, "1 dimensions"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 6), }\n", d, sizeof d - 8);
    CHECK(fails_with(buf, n, "row 3 is incomplete"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 6), }\n", more, sizeof more);
    CHECK(fails_with(buf, n, "bytes after the data"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False }\n", d, sizeof d);
    CHECK(fails_with(buf, n, "lacks 'shape'"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 6), 'x': 1}\n", d, sizeof d);
    CHECK(fails_with(buf, n, "unknown key 'x'"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (4, 6)}\n", d, sizeof d);
    CHECK(fails_with(buf, n, "True/False"));
    n = make_npy(buf, 1, "['descr', '<f8']\n", d, sizeof d);
    CHECK(fails_with(buf, n, "not a dict"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 6)}\n", d, 8);
    CHECK(fails_with(buf, n, "not a tuple of sizes"));
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4000000000000, 6)}\n", d, 8);
    CHECK(fails_with(buf, n, "too large"));
    /* a header length past the end of the file */
    n = make_npy(buf, 1, good, d, sizeof d);
    buf[8] = 0xff;
    buf[9] = 0x7f;
    CHECK(fails_with(buf, n, "runs past the end"));
    n = make_npy(buf, 2, good, d, 0);
    buf[11] = 0x7f;
    CHECK(fails_with(buf, n, "past the end"));
    CHECK(fails_with(buf, 11, "truncated header length"));
}

static void test_file_errors(void)
{
    baton_npy a;
    baton_err err = {0};
    CHECK(race_npy_load("/nonexistent/track.npy", &a, &err) != BATON_OK && strstr(err.msg, "/nonexistent/track.npy"));
    CHECK(race_npy_load("tests", &a, &err) != BATON_OK && strstr(err.msg, "directory"));
}

int main(void)
{
    test_real_file();
    test_round_trip();
    test_malformed();
    test_file_errors();
    CHECK_DONE();
}
