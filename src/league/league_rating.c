/* league_rating.c — head-to-model ratings: a Bradley–Terry model fitted to every match of a track.
 *
 * Each racer i has a strength p_i > 0 and P(i finishes ahead of j) = p_i / (p_i + p_j). The
 * strengths are the maximum-likelihood fit to all results at once (Hunter's MM iteration, 2004:
 * p_i <- W_i / sum_j n_ij / (p_i + p_j), W_i racer i's wins, n_ij the games of i and j), with a
 * prior of one win and one loss against a reference racer of strength 1, so that a racer who
 * has won (or lost) every match has a finite rating and a newcomer starts at the reference.
 * Reported on Elo's scale: 1500 + 400 log10(p_i).
 *
 * Why Bradley–Terry and not Elo: Elo updates after each match with a step K, so the same matches
 * in another order give other ratings, and with the few matches a new entry plays (two against
 * each of the top 8) the last few dominate. The fit uses every result at once: the ratings are a
 * function of the set of matches (a server restarted mid-way, a match stored later, give the
 * same board), and they are what Elo's ratings tend to with many matches and a small K (the same
 * logistic model: a 400-point gap is 10 to 1).
 *
 * Contract: pure; deterministic (a fixed number of sweeps in index order, no allocation beyond
 * the caller's arrays); n racers, m games of (winner, loser) indices < n. */
#include "league_internal.h"

#include <math.h>
#include <stdlib.h>

#define SWEEPS 500

int league_bt_fit(size_t n, const uint32_t (*games)[2], size_t m, double *rating, baton_err *err)
{
    double *p = malloc(2 * n * sizeof *p + 1);
    if (!p) return baton_err_set(err, BATON_ERR_NOMEM, "ratings: out of memory for %zu racers", n);
    double *next = p + n;
    for (size_t i = 0; i < n; i++) p[i] = 1;
    for (size_t g = 0; g < m; g++)
        if (games[g][0] >= n || games[g][1] >= n || games[g][0] == games[g][1]) {
            free(p);
            return baton_err_set(err, BATON_ERR_ARG, "ratings: game %zu names racers %u and %u of %zu", g, games[g][0],
                                 games[g][1], n);
        }
    for (int sweep = 0; sweep < SWEEPS; sweep++) {
        /* W_i = wins + 1 (the prior's win); the denominator's prior: two games against strength 1 */
        for (size_t i = 0; i < n; i++) next[i] = 2 / (p[i] + 1);
        double *wins = rating;   /* the caller's array holds the wins while the sweep runs */
        for (size_t i = 0; i < n; i++) wins[i] = 1;
        for (size_t g = 0; g < m; g++) {
            uint32_t w = games[g][0], l = games[g][1];
            double d = 1 / (p[w] + p[l]);
            next[w] += d;
            next[l] += d;
            wins[w] += 1;
        }
        for (size_t i = 0; i < n; i++) next[i] = wins[i] / next[i];
        for (size_t i = 0; i < n; i++) p[i] = next[i];
    }
    for (size_t i = 0; i < n; i++) rating[i] = 1500 + 400 * log10(p[i]);
    free(p);
    return BATON_OK;
}
