/* kern_bn.h — what the fast batch-norm kernels' two files share (kern_bn_fast.c: the NCHW and
 * blocked kernels, the threads and the entries; kern_bn_cl.c: the channels-last items): one call's
 * work (bn_job), its phases and partial sums, and the 16-lane vector helpers. Nothing outside
 * those two files includes this; the contract is kern_bn_fast.c's. */
#ifndef BATON_NN_KERN_BN_H
#define BATON_NN_KERN_BN_H

#include "nn_internal.h"
#include "bf16_vec.h"

#include <stdint.h>
#include <string.h>

#define BLK_PART_MAX (NN_BN_MAX_C / 16 * PART_STRIDE)   /* doubles of partial sums on the stack: room for
                                                        * blocks * chunks * PART_STRIDE at NN_BN_MAX_C */
#define PART_STRIDE 48       /* blocked: doubles of partial sums per item, up to three sums of 16 lanes */

enum { JOB_TRAIN, JOB_INFER, JOB_BWD,
       /* blocked activations: the phases of one call, each over (channel block, image chunk) items */
       JOB_B_STATS, JOB_B_AFFINE, JOB_B_BSUM, JOB_B_DX };

typedef struct job {
    int kind;
    int n, c, hw;
    float eps;
    int items;                     /* channels (train, backward) or planes (inference) */
    const float *x, *dy, *gamma, *beta, *mean, *var;
    float *y, *dx, *omean, *ovar, *dgamma, *dbeta;
    int relu;                      /* blocked: y = max(0, bn(x)) in forward; in backward dy masked where
                                    * bn(x) > 0, recomputed from x as the forward computed it */
    const float *res;              /* blocked forward with relu: y = max(0, bn(x) + res) */
    const float *yo, *dy2;         /* blocked backward of bn + add + relu: d(bn output) = (dy [+ dy2]) */
    float *g;                      /* where yo > 0, written to g (the residual input's gradient too) */
    /* blocked: images [0, n) cut into `chunks` runs of `per_chunk`; per (block, chunk) partial sums
     * of 16 lanes (two sums in backward) in part; per-channel rows in coef (COEF_ROWS x c): m,
     * k1/scale, shift/mdy, b, and in backward the forward's scale and shift (for the ReLU mask) */
    int chunks, per_chunk;
    double *part;
    const float *coef;
    int cl;                        /* blocked kinds on channels-last activations: [n][hw][c], the
                                    * sixteen lanes of block cb at offset cb * 16 of each pixel; with
                                    * NN_CL_X16 x, NN_CL_Y16 y hold bfloat16 (uint16_t), the rest float */
    int cl_gb;                     /* channels-last: blocks per item (nn_bn_cl_item) */
    uint16_t *y2;                  /* channels-last forward, y float32: y rounded to bfloat16 here too */
} bn_job;

/* the 64-byte vector type below only ever passes between static functions of this file, which the
 * compiler inlines; its note that such a type would change an external ABI without AVX-512 does not
 * apply (GCC and clang both call the warning -Wpsabi) */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef int32_t v16i __attribute__((vector_size(16 * sizeof(int32_t))));

/* max(v, 0) lane by lane, and g where y > 0 (else 0): the fused ReLU, forward and backward */
static inline v16 v16relu(v16 v)
{
    const v16 z = {0};
    return (v16)((v16i)v & (v > z));
}

static inline v16 v16mask(v16 g, v16 y)
{
    const v16 z = {0};
    return (v16)((v16i)g & (y > z));
}

static inline v16 v16load(const float *p)
{
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v16store(float *p, v16 v)
{
    memcpy(p, &v, sizeof v);
}

static inline v16 v16from(const float *p16) { return v16load(p16); }

/* one channels-last item of a blocked phase (kern_bn_cl.c) */
void nn_bn_cl_item(const bn_job *j, int item);

#endif
