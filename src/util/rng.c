/* rng.c — deterministic random numbers: xoshiro256** (Blackman & Vigna) seeded through
 * splitmix64. The whole state is four 64-bit words, so checkpoints can store it and a resumed
 * run draws the same numbers. baton_rng_seed3 derives independent streams from tuples such as
 * (seed, epoch, purpose), which is how every "pure function of (seed, epoch)" order is built. */
#include "baton/util.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void baton_rng_seed(baton_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void baton_rng_seed3(baton_rng *r, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a;
    uint64_t h = splitmix64(&x);
    x = h ^ b;
    h = splitmix64(&x);
    x = h ^ c;
    baton_rng_seed(r, splitmix64(&x));
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t baton_rng_next(baton_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint64_t baton_rng_below(baton_rng *r, uint64_t n)
{
    if (n <= 1) return 0;
    /* rejection sampling: discard the top partial bucket */
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = baton_rng_next(r);
    while (x >= lim);
    return x % n;
}

float baton_rng_float(baton_rng *r) { return (float)(baton_rng_next(r) >> 40) * (1.0f / 16777216.0f); }

void baton_rng_permutation(baton_rng *r, uint64_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++) perm[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)baton_rng_below(r, i);
        uint64_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}
