/* dist.h — a process's place in a data-parallel world of W ranks (Open MPI), and the collectives
 * training needs: broadcast from rank 0, small sums, and a bucketed gradient reducer that starts
 * each bucket's allreduce as soon as backward has finished it.
 *
 *   1. Detection: baton_dist_launched() says whether this process was started as an MPI rank
 *      (mpirun / orterun, or Slurm's srun --mpi=pmix): it reads the launcher's environment only and
 *      never initialises MPI. A single process started by hand stays exactly as it was.
 *   2. baton_dist_open initialises MPI (MPI_THREAD_FUNNELED: only the thread that opened it calls
 *      MPI) once per process; baton_dist_close finalises it. World 1 is allowed.
 *   3. Every collective is called by every rank in the same order (MPI's rule); each waits at most
 *      the world's timeout (default 120 s, BATON_DIST_TIMEOUT_S) and then fails with BATON_ERR_NET
 *      naming the collective — a rank that vanished never hangs the others forever (mpirun also
 *      ends the job when one of its ranks dies).
 *   4. Results are the same bytes on every rank: sums are MPI_Allreduce of one fixed algorithm for
 *      a given world and message size (MPI's built-in sums); baton_dist_agree_hash checks it.
 *
 * The reducer (one per gradient arena): baton_dist_reducer_ready(from) after each piece of
 * backward says that elements [from, len) are final; every bucket lying wholly inside that range
 * has its non-blocking allreduce started (buckets are cut from the end of the arena, where backward
 * starts); baton_dist_reducer_finish waits for all of them. Between calls the reducer drives MPI's
 * progress (MPI_Testall), so communication overlaps the rest of backward. */
#ifndef BATON_DIST_H
#define BATON_DIST_H

#include "baton/util.h"

#include <stddef.h>
#include <stdint.h>

typedef struct baton_dist baton_dist;

/* 1 when the environment says this process is one rank of an MPI launch (OMPI_COMM_WORLD_SIZE,
 * PMIX_RANK, PMI_SIZE); *world gets the launcher's world size when it says (else 0). */
int baton_dist_launched(int *world);

int baton_dist_open(baton_dist **out, baton_err *err);
void baton_dist_close(baton_dist *d);
/* The same world on a communicator of its own (MPI_Comm_dup): its collectives never match d's,
 * so two streams of collectives (the gradient buckets and the batch norms' sums) may interleave
 * differently on different ranks. Closed before d. */
int baton_dist_dup(baton_dist *d, baton_dist **out, baton_err *err);
int baton_dist_rank(const baton_dist *d);
int baton_dist_world(const baton_dist *d);
const char *baton_dist_library(const baton_dist *d);   /* "Open MPI v4.1.4, ..." */
/* This rank's machine: the ranks that share it (MPI_COMM_TYPE_SHARED, or the same value of
 * BATON_DIST_NODE where that is set: a test's stand-in for several machines on one), this rank's
 * place among them (0 .. local_size-1, in world order), and the world rank of the first of them
 * (its leader). Without MPI (d NULL): 0, 1, 0. */
void baton_dist_node(const baton_dist *d, int *local_rank, int *local_size, int *leader);

/* Rank 0's bytes to every rank. */
int baton_dist_bcast(baton_dist *d, void *buf, size_t bytes, const char *what, baton_err *err);
/* In-place sum of n doubles over the ranks. */
int baton_dist_sum(baton_dist *d, double *v, int n, const char *what, baton_err *err);
/* Every rank's `bytes` bytes, rank order, into all (world × bytes). */
int baton_dist_gather_all(baton_dist *d, const void *mine, void *all, size_t bytes, const char *what,
                          baton_err *err);
/* All ranks hold the same 64-bit value: BATON_OK, else BATON_ERR_CORRUPT naming the first rank
 * that differs from rank 0 (ranks that should hold equal weights, for instance). */
int baton_dist_agree_hash(baton_dist *d, uint64_t h, const char *what, baton_err *err);
/* A barrier (with the timeout). */
int baton_dist_barrier(baton_dist *d, baton_err *err);

/* ---------------------------------------------------------------- gradient reducer */
typedef struct baton_dist_reducer baton_dist_reducer;
typedef struct baton_dist_reducer_stats {
    uint64_t steps, buckets;
    double comm_s;        /* time from each bucket's start to its completion, summed over buckets */
    double wait_s;        /* time finish() spent waiting (communication not hidden behind backward) */
    double bytes;         /* bytes reduced per rank */
} baton_dist_reducer_stats;

/* A reducer over buf[0, len) in buckets of about bucket_bytes (at least one float). extra
 * doubles (may be 0) are summed with each step too (the step's scalars: loss, correct, a notice
 * flag), in their own request started at baton_dist_reducer_begin. */
int baton_dist_reducer_create(baton_dist *d, float *buf, size_t len, size_t bucket_bytes, int extra,
                              baton_dist_reducer **out, baton_err *err);
void baton_dist_reducer_free(baton_dist_reducer *r);
/* A step's reduction begins: scalars[extra] are this rank's (summed in place by finish). */
int baton_dist_reducer_begin(baton_dist_reducer *r, double *scalars, baton_err *err);
/* Elements [from, len) of buf are final for this step. */
int baton_dist_reducer_ready(baton_dist_reducer *r, size_t from, baton_err *err);
/* Everything started and waited for: buf and scalars hold the sums. */
int baton_dist_reducer_finish(baton_dist_reducer *r, baton_err *err);
void baton_dist_reducer_get_stats(const baton_dist_reducer *r, baton_dist_reducer_stats *st);

#endif
