/* threads.c — how many threads the fast kernels' OpenMP team runs. OpenMP reads OMP_NUM_THREADS
 * once, when the runtime starts (before main), so a command that takes --threads sets the team's
 * size here as well as in the environment (for the processes it starts).
 *
 * Contract: n >= 1 sets the size of the teams of later parallel regions on the calling thread
 * (oneDNN's and the hand-written kernels'); n < 1 leaves it. */
#include "nn_internal.h"

void omp_set_num_threads(int n);   /* libgomp, oneDNN's OpenMP runtime */

void baton_nn_set_threads(int n)
{
    if (n >= 1) omp_set_num_threads(n);
}

int omp_get_max_threads(void);

int baton_nn_threads(void)
{
    return omp_get_max_threads();
}
