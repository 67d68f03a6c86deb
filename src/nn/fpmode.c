/* fpmode.c — denormal floats flushed to zero (the x86 MXCSR's FTZ and DAZ bits) for training that
 * asks for it, on the calling thread and on every thread of the OpenMP team the fast kernels run
 * in, as TensorFlow's CPU kernels run (and PyTorch's torch.set_flush_denormal). Adam's second
 * moment of a parameter whose gradient is zero (a dead ReLU's) decays by beta2 each step into
 * denormals, and tiny gradients square into them; the processor handles those in a slow assist
 * path, tens of times slower per operation, which can take most of a small network's training time.
 *
 * Contract: a mode of the threads, not of the data: with it on, results are still a function of
 * the inputs and the thread count (a value below 2^-126 reads and writes as zero). Elsewhere than
 * x86 with SSE it does nothing. */
#include "nn_internal.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#define NN_FTZ_DAZ 0x8040u   /* flush to zero (bit 15), denormals are zero (bit 6) */

static void set_this_thread(int on)
{
    unsigned csr = _mm_getcsr();
    _mm_setcsr(on ? csr | NN_FTZ_DAZ : csr & ~NN_FTZ_DAZ);
}
#else
static void set_this_thread(int on) { (void)on; }
#endif

void baton_nn_flush_denormals_here(int on)
{
    set_this_thread(on);
}

void baton_nn_flush_denormals(int on)
{
    set_this_thread(on);
#pragma omp parallel
    set_this_thread(on);
}

int baton_nn_denormals_flushed(void)
{
#if defined(__SSE2__)
    return (_mm_getcsr() & NN_FTZ_DAZ) == NN_FTZ_DAZ;
#else
    return 0;
#endif
}
