/* dist_allreduce.c — allreduce bandwidth between this machine's ranks through baton's dist layer
 * (MPI_Iallreduce, sum of floats, in place, waited for with the collectives' timed wait): for each
 * message size, REPS reductions after 3 warm-ups; rank 0 prints one JSON line per size with the
 * median time, the algorithm bandwidth (bytes / time) and the bus bandwidth (2 (W-1)/W × bytes /
 * time, what a ring moves per link: comparable across W). Run under mpirun -n W. */
#include "baton/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    if (reps < 1 || reps > 10000) reps = 20;
    baton_dist *d = NULL;
    baton_err err = {0};
    if (baton_dist_open(&d, &err)) {
        fprintf(stderr, "dist_allreduce: %s\n", err.msg);
        return 1;
    }
    int w = baton_dist_world(d), rank = baton_dist_rank(d);
    size_t maxn = (size_t)16 << 20 >> 2;
    float *buf = malloc(maxn * sizeof *buf);
    double *t = malloc((size_t)reps * sizeof *t);
    for (size_t n = 1024; n <= maxn && buf && t; n *= 4) {
        baton_dist_reducer *r = NULL;
        if (baton_dist_reducer_create(d, buf, n, n * sizeof(float), 0, &r, &err)) break;
        for (int i = -3; i < reps; i++) {
            for (size_t k = 0; k < n; k++) buf[k] = (float)(k % 7);
            baton_dist_barrier(d, &err);
            double t0 = baton_now();
            int rc = baton_dist_reducer_begin(r, NULL, &err);
            if (!rc) rc = baton_dist_reducer_finish(r, &err);
            if (rc) {
                fprintf(stderr, "dist_allreduce: %s\n", err.msg);
                return 1;
            }
            if (i >= 0) t[i] = baton_now() - t0;
        }
        baton_dist_reducer_free(r);
        qsort(t, (size_t)reps, sizeof *t, cmp);
        double med = t[reps / 2], bytes = (double)n * sizeof(float);
        if (rank == 0)
            printf("{\"world\":%d,\"bytes\":%.0f,\"median_us\":%.1f,\"algbw_gbs\":%.3f,\"busbw_gbs\":%.3f}\n", w, bytes,
                   med * 1e6, bytes / med / 1e9, w > 1 ? 2.0 * (w - 1) / w * bytes / med / 1e9 : 0.0);
    }
    free(buf);
    free(t);
    baton_dist_close(d);
    return 0;
}
