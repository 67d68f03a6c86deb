/* dist_internal.h — what world.c and reducer.c share: the world's fields and the timed wait. */
#ifndef BATON_DIST_INTERNAL_H
#define BATON_DIST_INTERNAL_H

#include "baton/dist.h"

#include <mpi.h>

struct baton_dist {
    MPI_Comm comm;           /* baton's own duplicate of MPI_COMM_WORLD */
    int rank, world;
    int local_rank, local_size, leader;   /* this rank's machine (baton_dist_node) */
    int owns_init;           /* this process's baton_dist_open initialised MPI */
    double timeout_s;        /* per collective */
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
};

int dist_mpi_fail(baton_err *err, int code, const char *what);
int dist_wait(baton_dist *d, int n, MPI_Request *req, const char *what, baton_err *err);

#endif
