/* league_rank.c — the league's ranking rule (league.h): time trial by the fastest lap
 * (penalties included), `total` by the total time; runs that did not complete their laps after
 * every run that did, more laps first; ties to the earlier submission, then the lower id. One
 * standing per alias: its best entry. Also the formats' names (what an alias may be: league_alias.c).
 *
 * Contract: pure functions of the entries given; the order is total (no two distinct entries
 * compare equal), so the standings do not depend on the order rows come in. */
#include "league_internal.h"

#include <stdlib.h>
#include <string.h>

int baton_league_format_parse(const char *s, baton_league_format *out, baton_err *err)
{
    if (s && !strcmp(s, "time-trial")) *out = BATON_LEAGUE_TIME_TRIAL;
    else if (s && !strcmp(s, "total")) *out = BATON_LEAGUE_TOTAL;
    else return baton_err_set(err, BATON_ERR_USAGE, "format '%s': time-trial or total", s ? s : "");
    return BATON_OK;
}

const char *baton_league_format_name(baton_league_format f)
{
    return f == BATON_LEAGUE_TOTAL ? "total" : "time-trial";
}

static int cmp_num(double a, double b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

int league_compare(const baton_league_entry *a, const baton_league_entry *b, baton_league_format f)
{
    if (a->completed != b->completed) return a->completed ? -1 : 1;
    if (a->laps != b->laps) return a->laps > b->laps ? -1 : 1;
    if (a->laps > 0) {   /* no lap: no time to compare */
        int c = f == BATON_LEAGUE_TOTAL ? cmp_num(a->total_s, b->total_s) : cmp_num(a->best_lap_s, b->best_lap_s);
        if (c) return c;
    }
    int c = cmp_num(a->submitted_at, b->submitted_at);
    if (c) return c;
    return a->id < b->id ? -1 : a->id > b->id ? 1 : 0;
}

static int cmp_ctx(const void *a, const void *b, void *f)
{
    return league_compare(a, b, *(const baton_league_format *)f);
}

void league_rank_entries(baton_league_entry *e, size_t n, baton_league_format f, size_t *kept)
{
    qsort_r(e, n, sizeof *e, cmp_ctx, &f);
    /* keep the first (best) entry of each alias in place, the rest after them in rank order */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < k && !seen; j++) seen = !strcmp(e[j].alias, e[i].alias);
        if (seen) continue;
        if (i != k) {   /* rotate e[k..i] right by one: e[i] to k, the others keep their order */
            baton_league_entry t = e[i];
            memmove(e + k + 1, e + k, (i - k) * sizeof *e);
            e[k] = t;
        }
        e[k].rank = (uint32_t)(k + 1);
        k++;
    }
    for (size_t i = k; i < n; i++) e[i].rank = 0;
    *kept = k;
}
