/* test_rec_idx.c — rec: .idx files. Well-formed texts (with and without the final newline, the
 * empty file, the 2^63 - 1 limit), every kind of malformed line rejected with its line number,
 * append + parse round trip, and loading from disk. */
#include "../../src/rec/rec_internal.h"
#include "baton/rec.h"
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static int parse(const char *text, baton_idx_entry **e, size_t *n, baton_err *err)
{
    return baton_idx_parse("t.idx", text, strlen(text), e, n, err);
}

static int rejects_at(const char *text, int line)
{
    baton_idx_entry *e = (baton_idx_entry *)1;
    size_t n = 99;
    baton_err err = {0};
    char want[32];
    snprintf(want, sizeof want, "t.idx: line %d:", line);
    int ok = parse(text, &e, &n, &err) == BATON_ERR_FORMAT && strstr(err.msg, want) && e == NULL &&
             n == 0;
    if (!ok) fprintf(stderr, "text %s: %s\n", text, err.msg);
    return ok;
}

int main(void)
{
    baton_idx_entry *e;
    size_t n;
    baton_err err = {0};
    CHECK(parse("0\t0\n1\t16\n2\t48\n", &e, &n, &err) == BATON_OK);
    CHECK(n == 3 && e[0].key == 0 && e[0].offset == 0 && e[1].key == 1 && e[1].offset == 16 &&
          e[2].key == 2 && e[2].offset == 48);
    free(e);
    CHECK(parse("7\t100", &e, &n, &err) == BATON_OK);   /* no final newline */
    CHECK(n == 1 && e[0].key == 7 && e[0].offset == 100);
    free(e);
    CHECK(parse("", &e, &n, &err) == BATON_OK && n == 0);
    free(e);
    CHECK(parse("9223372036854775807\t9223372036854775807\n", &e, &n, &err) == BATON_OK);
    CHECK(n == 1 && e[0].key == 9223372036854775807ULL && e[0].offset == 9223372036854775807ULL);
    free(e);
    CHECK(parse("007\t0010\n", &e, &n, &err) == BATON_OK && n == 1 && e[0].key == 7 &&
          e[0].offset == 10);
    free(e);

    CHECK(rejects_at("\n", 1));
    CHECK(rejects_at("0\t0\n\n", 2));
    CHECK(rejects_at("0\t0\n1\t16\r\n", 2));
    CHECK(rejects_at("0 0\n", 1));
    CHECK(rejects_at("0\t\n", 1));
    CHECK(rejects_at("\t5\n", 1));
    CHECK(rejects_at("0\t5\t6\n", 1));
    CHECK(rejects_at("0\t5 \n", 1));
    CHECK(rejects_at("-1\t5\n", 1));
    CHECK(rejects_at("1\t+5\n", 1));
    CHECK(rejects_at("0\t0\n1\t1\n2\t2\nx\t3\n", 4));
    CHECK(rejects_at("9223372036854775808\t0\n", 1));   /* 2^63 */
    CHECK(rejects_at("0\t99999999999999999999999\n", 1));
    CHECK(rejects_at("5", 1));
    CHECK(rejects_at("5\t", 1));
    /* an embedded NUL is just a bad character */
    n = 0;
    CHECK(baton_idx_parse("t.idx", "1\t2\0\n", 5, &e, &n, &err) == BATON_ERR_FORMAT);

    /* append → parse round trip */
    baton_buf b = {0};
    baton_rng rng;
    baton_rng_seed(&rng, 11);
    uint64_t keys[500], offs[500];
    for (int i = 0; i < 500; i++) {
        keys[i] = baton_rng_next(&rng) >> (1 + i % 63);
        offs[i] = baton_rng_next(&rng) >> (1 + (i * 7) % 63);
        CHECK(rec_idx_append(&b, keys[i], offs[i]) == BATON_OK);
    }
    CHECK(baton_idx_parse("t.idx", (const char *)b.data, b.len, &e, &n, &err) == BATON_OK);
    int same = n == 500;
    for (size_t i = 0; same && i < n; i++) same = e[i].key == keys[i] && e[i].offset == offs[i];
    CHECK(same);
    free(e);
    b.len = 0;
    rec_idx_append(&b, 3, 1234);
    CHECK(b.len == 7 && memcmp(b.data, "3\t1234\n", 7) == 0);

    /* load from disk */
    char dir[] = "/tmp/baton-test-idx-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/a.idx", dir);
    CHECK(baton_file_write_atomic(path, "0\t0\n1\t24\nzz\n", 12, &err) == BATON_OK);
    CHECK(rec_idx_load(path, &e, &n, &err) == BATON_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "a.idx: line 3"), "%s", err.msg);
    CHECK(baton_file_write_atomic(path, b.data, b.len, &err) == BATON_OK);
    CHECK(rec_idx_load(path, &e, &n, &err) == BATON_OK && n == 1 && e[0].offset == 1234);
    free(e);
    unlink(path);
    CHECK(rec_idx_load(path, &e, &n, &err) == BATON_ERR_NOTFOUND);
    rmdir(dir);
    baton_buf_free(&b);
    CHECK_DONE();
}
