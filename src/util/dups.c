/* dups.c — the first name that repeats in a list, in O(n log n) (parsers of outside input use it
 * where a pairwise check would make a file of many entries quadratic).
 *
 * Contract: baton_first_duplicate(names, n, &first) returns the smallest index j such that
 * names[j] equals an earlier names[i], with *first = the smallest such i — the pair a left-to-right
 * pairwise check would have reported first; n when every name is distinct (or when out of memory,
 * with *first = n: callers then fall back to no check being possible, and say so). */
#include "baton/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct named {
    const char *s;
    size_t i;
} named;

static int by_name_then_index(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

size_t baton_first_duplicate(const char *const *names, size_t n, size_t *first)
{
    *first = n;
    if (n < 2) return n;
    named *v = malloc(n * sizeof *v);
    if (!v) return n;
    for (size_t k = 0; k < n; k++) v[k] = (named){names[k], k};
    qsort(v, n, sizeof *v, by_name_then_index);
    size_t best = n;
    for (size_t k = 0; k + 1 < n; k++)   /* within a run of equal names: its first two are the pair */
        if (!strcmp(v[k].s, v[k + 1].s) && (k == 0 || strcmp(v[k - 1].s, v[k].s)) && v[k + 1].i < best) {
            best = v[k + 1].i;
            *first = v[k].i;
        }
    free(v);
    return best;
}
