/* world.c — this process's MPI world: detection from the launcher's environment, MPI's
 * initialisation and finalisation, and the small collectives (broadcast, sums, gather, hash
 * agreement, barrier), each non-blocking underneath and waited for with a timeout (dist.h).
 *
 * Contract: MPI is initialised only by baton_dist_open (never by detection); errors come back as
 * values (the communicator's error handler is MPI_ERRORS_RETURN); baton works on its own
 * duplicate of MPI_COMM_WORLD. */
#include "dist_internal.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int baton_dist_launched(int *world)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    static const char *const marks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    if (world) *world = 0;
    int launched = 0;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (getenv(marks[i])) launched = 1;
    for (size_t i = 0; world && i < sizeof sizes / sizeof sizes[0]; i++) {
        const char *v = getenv(sizes[i]);
        char *end;
        long n = v ? strtol(v, &end, 10) : 0;
        if (v && *end == '\0' && n > 0 && n < INT_MAX) {
            *world = (int)n;
            break;
        }
    }
    return launched;
}

int dist_mpi_fail(baton_err *err, int code, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", code);
    return baton_err_set(err, BATON_ERR_NET, "%s: %s", what, s);
}

static double timeout_from_env(void)
{
    const char *v = getenv("BATON_DIST_TIMEOUT_S");
    char *end;
    double t = v ? strtod(v, &end) : 0;
    return v && *end == '\0' && t > 0 && t < 1e7 ? t : 120.0;
}

/* Wait for n requests: MPI's progress is driven by MPI_Testall; the thread yields between tries
 * and, after the first millisecond, sleeps 50 µs per try (ranks oversubscribing few cores must
 * not spin against each other). Past the timeout: BATON_ERR_NET naming `what`. */
int dist_wait(baton_dist *d, int n, MPI_Request *req, const char *what, baton_err *err)
{
    double t0 = baton_now(), limit = d->timeout_s;
    for (unsigned tries = 0;; tries++) {
        int done = 0;
        int rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, what);
        if (done) return BATON_OK;
        double el = baton_now() - t0;
        if (el > limit)
            return baton_err_set(err, BATON_ERR_NET,
                                 "%s: rank %d waited %.0f s for the other ranks (a rank is gone or stuck; "
                                 "BATON_DIST_TIMEOUT_S sets the limit)",
                                 what, d->rank, el);
        if (el < 1e-3) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

/* Which ranks share this rank's machine: MPI's shared-memory split, or the ranks given the same
 * BATON_DIST_NODE (gathered: ranks with equal values form one machine). */
static int find_node(baton_dist *d, baton_err *err)
{
    const char *name = getenv("BATON_DIST_NODE");
    int color = 0, rc;
    MPI_Comm node;
    if (name) {
        enum { N = 64 };
        char mine[N] = {0}, *all = calloc((size_t)d->world, N);
        if (!all) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        snprintf(mine, N, "%s", name);
        rc = MPI_Allgather(mine, N, MPI_CHAR, all, N, MPI_CHAR, d->comm);
        while (rc == MPI_SUCCESS && memcmp(all + (size_t)color * N, mine, N)) color++;
        free(all);
        if (rc == MPI_SUCCESS) rc = MPI_Comm_split(d->comm, color, d->rank, &node);
    } else {
        rc = MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node);
    }
    if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, "finding the ranks of this machine");
    MPI_Comm_rank(node, &d->local_rank);
    MPI_Comm_size(node, &d->local_size);
    d->leader = d->rank;
    rc = MPI_Bcast(&d->leader, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    return rc == MPI_SUCCESS ? BATON_OK : dist_mpi_fail(err, rc, "finding the ranks of this machine");
}

int baton_dist_open(baton_dist **out, baton_err *err)
{
    *out = NULL;
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return baton_err_set(err, BATON_ERR_NET, "MPI_Init_thread failed (%d)", rc);
    }
    baton_dist *d = calloc(1, sizeof *d);
    if (!d) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    d->owns_init = !inited;
    d->timeout_s = timeout_from_env();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
    if (rc != MPI_SUCCESS) {
        free(d);
        return dist_mpi_fail(err, rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->world);
    if ((rc = find_node(d, err))) {
        MPI_Comm_free(&d->comm);
        free(d);
        return rc;
    }
    int len = 0;
    MPI_Get_library_version(d->library, &len);
    char *nl = strchr(d->library, '\n');
    if (nl) *nl = '\0';
    *out = d;
    return BATON_OK;
}

int baton_dist_dup(baton_dist *d, baton_dist **out, baton_err *err)
{
    *out = NULL;
    baton_dist *c = calloc(1, sizeof *c);
    if (!c) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    *c = *d;
    c->owns_init = 0;
    int rc = MPI_Comm_dup(d->comm, &c->comm);
    if (rc != MPI_SUCCESS) {
        free(c);
        return dist_mpi_fail(err, rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    *out = c;
    return BATON_OK;
}

void baton_dist_close(baton_dist *d)
{
    if (!d) return;
    MPI_Comm_free(&d->comm);
    if (d->owns_init) {
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Finalize();
    }
    free(d);
}

int baton_dist_rank(const baton_dist *d) { return d ? d->rank : 0; }
int baton_dist_world(const baton_dist *d) { return d ? d->world : 1; }
void baton_dist_node(const baton_dist *d, int *local_rank, int *local_size, int *leader)
{
    *local_rank = d ? d->local_rank : 0;
    *local_size = d ? d->local_size : 1;
    *leader = d ? d->leader : 0;
}
const char *baton_dist_library(const baton_dist *d) { return d ? d->library : ""; }

int baton_dist_bcast(baton_dist *d, void *buf, size_t bytes, const char *what, baton_err *err)
{
    uint8_t *p = buf;
    while (bytes) {   /* MPI counts are ints: pieces of at most 1 GiB */
        int n = bytes > (1u << 30) ? 1 << 30 : (int)bytes;
        MPI_Request req;
        int rc = MPI_Ibcast(p, n, MPI_BYTE, 0, d->comm, &req);
        if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, what);
        if ((rc = dist_wait(d, 1, &req, what, err))) return rc;
        p += n;
        bytes -= (size_t)n;
    }
    return BATON_OK;
}

int baton_dist_sum(baton_dist *d, double *v, int n, const char *what, baton_err *err)
{
    MPI_Request req;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, d->comm, &req);
    if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, what);
    return dist_wait(d, 1, &req, what, err);
}

int baton_dist_gather_all(baton_dist *d, const void *mine, void *all, size_t bytes, const char *what, baton_err *err)
{
    if (bytes > INT_MAX) return baton_err_set(err, BATON_ERR_ARG, "%s: %zu bytes per rank", what, bytes);
    MPI_Request req;
    int rc = MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, d->comm, &req);
    if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, what);
    return dist_wait(d, 1, &req, what, err);
}

int baton_dist_agree_hash(baton_dist *d, uint64_t h, const char *what, baton_err *err)
{
    uint64_t *all = calloc((size_t)d->world, sizeof *all);
    if (!all) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = baton_dist_gather_all(d, &h, all, sizeof h, what, err);
    for (int r = 1; !rc && r < d->world; r++)
        if (all[r] != all[0])
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: rank %d holds %016llx, rank 0 %016llx", what, r,
                               (unsigned long long)all[r], (unsigned long long)all[0]);
    free(all);
    return rc;
}

int baton_dist_barrier(baton_dist *d, baton_err *err)
{
    MPI_Request req;
    int rc = MPI_Ibarrier(d->comm, &req);
    if (rc != MPI_SUCCESS) return dist_mpi_fail(err, rc, "barrier");
    return dist_wait(d, 1, &req, "barrier", err);
}
