/* reducer.c — the bucketed gradient allreduce (dist.h): a float arena cut into buckets from its
 * end, each bucket's MPI_Iallreduce (sum, in place) started as soon as backward reports it final,
 * the step's scalars in one more request, everything waited for before the optimizer step.
 *
 * Contract: begin → ready* → finish once per step, on every rank in the same order; the buckets
 * and their order are fixed at create (the same on every rank, so the same collectives match);
 * nothing is allocated after create. Between calls MPI_Testsome drives progress and records when
 * each bucket completed, for the overlap figure: per step, the communication span is from the
 * first bucket's start to the last one's completion, the exposed part is what finish waited. */
#include "dist_internal.h"

#include <stdlib.h>
#include <string.h>

struct baton_dist_reducer {
    baton_dist *d;
    float *buf;
    size_t len;
    int nb;                  /* buckets; bucket j = [lo[j], hi[j]), j = 0 the arena's end */
    size_t *lo, *hi;
    int next;                /* the next bucket to start */
    int extra;
    double *scalars;
    MPI_Request *req;        /* nb buckets, then the scalars' */
    int *idx;
    int active;              /* a step is between begin and finish */
    int pending;             /* requests started and not seen complete */
    double first_start, last_done;
    baton_dist_reducer_stats st;
};

int baton_dist_reducer_create(baton_dist *d, float *buf, size_t len, size_t bucket_bytes, int extra,
                              baton_dist_reducer **out, baton_err *err)
{
    *out = NULL;
    size_t per = bucket_bytes / sizeof(float);
    if (per < 1) per = 1;
    if (per > (1u << 28)) per = 1u << 28;   /* an int count */
    size_t nb = len ? (len + per - 1) / per : 0;
    if (nb > (1u << 20)) return baton_err_set(err, BATON_ERR_ARG, "reducer: %zu buckets", nb);
    baton_dist_reducer *r = calloc(1, sizeof *r);
    if (!r) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    r->d = d, r->buf = buf, r->len = len, r->nb = (int)nb, r->extra = extra;
    r->lo = calloc(nb + 1, sizeof *r->lo);
    r->hi = calloc(nb + 1, sizeof *r->hi);
    r->req = calloc(nb + 1, sizeof *r->req);
    r->idx = calloc(nb + 1, sizeof *r->idx);
    if (!r->lo || !r->hi || !r->req || !r->idx) {
        baton_dist_reducer_free(r);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    for (size_t j = 0; j < nb; j++) {
        r->hi[j] = len - j * per;
        r->lo[j] = r->hi[j] > per ? r->hi[j] - per : 0;
    }
    for (size_t j = 0; j <= nb; j++) r->req[j] = MPI_REQUEST_NULL;
    *out = r;
    return BATON_OK;
}

void baton_dist_reducer_free(baton_dist_reducer *r)
{
    if (!r) return;
    /* a step abandoned by an error leaves its collectives to MPI (they cannot be cancelled); the
     * process ends right after */
    free(r->lo), free(r->hi), free(r->req), free(r->idx);
    free(r);
}

/* Progress: note the buckets that completed since the last look. */
static int poll_done(baton_dist_reducer *r, baton_err *err)
{
    int outcount = 0;
    int rc = MPI_Testsome(r->nb + 1, r->req, &outcount, r->idx, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, "gradient allreduce");
    if (outcount > 0 && outcount != MPI_UNDEFINED) {
        r->last_done = baton_now();
        r->pending -= outcount;
    }
    return BATON_OK;
}

int baton_dist_reducer_begin(baton_dist_reducer *r, double *scalars, baton_err *err)
{
    if (r->active) return baton_err_set(err, BATON_ERR_ARG, "reducer: a step began twice");
    r->active = 1;
    r->next = 0;
    r->scalars = scalars;
    r->first_start = r->last_done = 0;
    r->pending = 0;
    if (r->extra > 0) {
        r->pending++;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, scalars, r->extra, MPI_DOUBLE, MPI_SUM, r->d->comm, &r->req[r->nb]);
        if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, "step scalars allreduce");
    }
    return BATON_OK;
}

int baton_dist_reducer_ready(baton_dist_reducer *r, size_t from, baton_err *err)
{
    if (!r->active) return baton_err_set(err, BATON_ERR_ARG, "reducer: ready outside a step");
    while (r->next < r->nb && r->lo[r->next] >= from) {
        int j = r->next++;
        if (!r->first_start) r->first_start = baton_now();
        int rc = MPI_Iallreduce(MPI_IN_PLACE, r->buf + r->lo[j], (int)(r->hi[j] - r->lo[j]), MPI_FLOAT, MPI_SUM,
                                r->d->comm, &r->req[j]);
        if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, "gradient allreduce");
        r->pending++;
        r->st.buckets++;
        r->st.bytes += (double)(r->hi[j] - r->lo[j]) * sizeof(float);
    }
    return poll_done(r, err);
}

int baton_dist_reducer_finish(baton_dist_reducer *r, baton_err *err)
{
    int rc = baton_dist_reducer_ready(r, 0, err);
    if (rc) return rc;
    double t0 = baton_now(), end = r->last_done;
    if (r->pending > 0) {
        rc = dist_wait(r->d, r->nb + 1, r->req, "gradient allreduce", err);
        end = baton_now();
        r->st.wait_s += end - t0;
    }
    r->active = 0;
    if (rc) return rc;
    r->st.steps++;
    if (r->first_start > 0 && end > r->first_start) r->st.comm_s += end - r->first_start;
    return BATON_OK;
}

void baton_dist_reducer_get_stats(const baton_dist_reducer *r, baton_dist_reducer_stats *st) { *st = r->st; }
