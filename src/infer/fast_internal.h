/* fast_internal.h — the fast inference path's private structures, shared by its two files:
 * lower.c (the layer graph lowered to fused operations on values) and fast.c (oneDNN primitives for
 * them, the buffers, the call path). Nothing outside src/infer includes this. */
#ifndef BATON_FAST_INTERNAL_H
#define BATON_FAST_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>

#include "infer_internal.h"

enum { K_CONV, K_IP, K_MAXPOOL, K_AVGPOOL };

typedef struct lop {
    int kind;
    const char *name;
    int src, dst;            /* values */
    int sum;                 /* value accumulated into (then dst == sum), -1 none */
    int relu;
    int k, stride, pad;
    float *w, *b;            /* conv / ip: folded weights and bias (owned until packed) */
    int oc;
    long seq;                /* execution order */
} lop;

typedef struct value {
    int c, h, w;             /* one image; linear outputs are c × 1 × 1 */
    int dead;                /* replaced by a sum target: no buffer */
    int alias;               /* >= 0: a view (another descriptor) of that value's buffer */
    int has_md;
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;       /* created with the md, data handle set later */
} value;

typedef struct fprim {
    dnnl_primitive_t p;
    int nargs;
    dnnl_exec_arg_t args[6];
    dnnl_memory_t scratch;   /* this primitive's view of the shared scratchpad, or NULL */
} fprim;

struct infer_fast {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    fprim *prims;
    int nprims, capprims;
    value *vals;
    int nvals, capvals;
    dnnl_memory_t *mems;     /* packed weights and biases */
    int nmems, capmems;
    void **bufs;             /* every buffer we allocated */
    int nbufs, capbufs;
    int batch, in_val, out_val;
    void *scratch;
    size_t scratch_size, bytes;
};

typedef struct lowering {
    lop *ops;
    int nops, capops;
    int *slot_val;           /* value of each slot, -1 none yet */
    int *producer;           /* op writing each value, -1 input */
    int *uses, *last_use;    /* per slot: readers, index of the last reading layer */
    long seq;
} lowering;

/* fast.c */
int fast_push(void **arr, int *n, int *cap, size_t elem);   /* grow an array by doubling; -1 on OOM */
int fast_new_value(infer_fast *f, int c, int h, int w);     /* index, or -1 on OOM */
/* lower.c: fill L->ops (in execution order) and f's values from m's graph; f->in_val and
 * f->out_val are set. Owned memory of L is freed by fast_lowering_free. */
int fast_lower(const baton_nn_model *m, infer_fast *f, lowering *L, baton_err *err);
void fast_lowering_free(lowering *L);

#endif
