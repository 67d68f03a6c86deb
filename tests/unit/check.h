/* check.h — the unit-test harness: CHECK(cond) records a failure with file and line and goes on;
 * each test program ends with CHECK_DONE(), which prints "N passed, N failed" (checks, not
 * programs) and returns non-zero if anything failed. tests/run.sh adds the programs up. */
#ifndef BATON_CHECK_H
#define BATON_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_pass, check_fail;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            check_pass++;                                                            \
        } else {                                                                     \
            check_fail++;                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        if (cond) {                                                                  \
            check_pass++;                                                            \
        } else {                                                                     \
            check_fail++;                                                            \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                  \
    do {                                                                                  \
        unsigned long long check_a = (unsigned long long)(a), check_b = (unsigned long long)(b); \
        CHECK_MSG(check_a == check_b, "%s = %llu, %s = %llu", #a, check_a, #b, check_b);    \
    } while (0)

#define CHECK_DONE()                                                       \
    do {                                                                   \
        printf("%d passed, %d failed\n", check_pass, check_fail);          \
        return check_fail ? 1 : 0;                                         \
    } while (0)

#endif
