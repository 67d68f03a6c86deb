/* nn_internal.h — the nn component's private structures: the layer graph a model is built into,
 * its activation slots and named tensors, the plan of ops its passes run (fuse.c, ops.c, pass.c),
 * the builder used by the model zoo, and the kernels' symbols. Nothing outside src/nn includes
 * this. */
#ifndef BATON_NN_INTERNAL_H
#define BATON_NN_INTERNAL_H

#include "baton/nn.h"

/* reference kernels (kern_conv.c, kern_norm.c, kern_misc.c) */
void nn_ref_conv_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y);
void nn_ref_conv_bwd_data(const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx);
void nn_ref_conv_bwd_weights(const baton_nn_conv_geom *g, const float *x, const float *dy, float *dw,
                             float *db);
void nn_ref_linear_fwd(int n, int in, int out, const float *x, const float *w, const float *b, float *y);
void nn_ref_linear_bwd_data(int n, int in, int out, const float *dy, const float *w, float *dx);
void nn_ref_linear_bwd_weights(int n, int in, int out, const float *x, const float *dy, float *dw, float *db);
void nn_ref_bn_fwd_train(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                         float eps, float *y, float *mean, float *var);
void nn_ref_bn_fwd_infer(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                         const float *mean, const float *var, float eps, float *y);
void nn_ref_bn_bwd(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                   const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta);
/* the oneDNN table's batch norm (kern_bn_fast.c): same contract, threaded, vectorised */
void nn_fast_bn_fwd_train(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                          float eps, float *y, float *mean, float *var);
void nn_fast_bn_fwd_infer(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                          const float *mean, const float *var, float eps, float *y);
void nn_fast_bn_bwd(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                    const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta);
int nn_fast_bn_relu_fwd_train(int n, int c, int hw, const float *x, const float *gamma, const float *beta, float eps,
                              float *y, float *mean, float *var);
int nn_fast_bn_relu_bwd(int n, int c, int hw, const float *x, const float *dy, const float *gamma, const float *beta,
                        const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta);
int nn_fast_bn_add_relu_fwd_train(int n, int c, int hw, const float *x, const float *res, const float *gamma,
                                  const float *beta, float eps, float *y, float *mean, float *var);
int nn_fast_bn_add_relu_bwd(int n, int c, int hw, const float *x, const float *y, const float *dy, const float *dy2,
                            const float *gamma, const float *mean, const float *var, float eps, float *g, float *dx,
                            float *dgamma, float *dbeta);
int nn_fast_add_relu(size_t count, const float *a, const float *b, float *y);
int nn_fast_relu_bwd_add(size_t count, const float *y, const float *dy, const float *dy2, float *dx);
/* kern_bn_fast.c's kernels behind those entries and the _cl ones below: cl 0 blocked (or NCHW),
 * 1 channels-last; on channels-last, | NN_CL_X16: x holds bfloat16 values, | NN_CL_Y16: the
 * output does — y forward, dx backward (uint16_t, through the float pointers) */
#define NN_CL_X16 2
#define NN_CL_Y16 4
void nn_fast_bn_fwd_train_lay(int cl, int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                              float eps, float *y, float *mean, float *var);
void nn_fast_bn_fwd_infer_lay(int cl, int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                              const float *mean, const float *var, float eps, float *y);
void nn_fast_bn_bwd_lay(int cl, int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                        const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta);
int nn_fast_bn_fused_train_lay(int cl, int n, int c, int hw, const float *x, const float *res, int relu,
                               const float *gamma, const float *beta, float eps, float *y, uint16_t *ycopy, float *mean,
                               float *var);
int nn_fast_bn_relu_bwd_lay(int cl, int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                            const float *beta, const float *mean, const float *var, float eps, float *dx,
                            float *dgamma, float *dbeta);
int nn_fast_bn_add_relu_bwd_lay(int cl, int n, int c, int hw, const float *x, const float *y, const float *dy,
                                const float *dy2, const float *gamma, const float *mean, const float *var, float eps,
                                float *g, float *dx, float *dgamma, float *dbeta);
int nn_fast_bn_apply_train_lay(int cl, int n, int c, int hw, const float *x, const float *res, int relu,
                               const float *gamma, const float *beta, float eps, const float *mean, const float *var,
                               float *y);
/* the same entries on channels-last activations ([n][hw][c], c a multiple of 16: the bf16 table's
 * layout), the same arithmetic in the same order (kern_bn_fast.c) */
void nn_fast_bn_fwd_train_cl(int n, int c, int hw, const float *x, const float *gamma, const float *beta, float eps,
                             float *y, float *mean, float *var);
void nn_fast_bn_fwd_infer_cl(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                             const float *mean, const float *var, float eps, float *y);
void nn_fast_bn_bwd_cl(int n, int c, int hw, const float *x, const float *dy, const float *gamma, const float *mean,
                       const float *var, float eps, float *dx, float *dgamma, float *dbeta);
int nn_fast_bn_relu_fwd_train_cl(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                                 float eps, float *y, float *mean, float *var);
int nn_fast_bn_relu_bwd_cl(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                           const float *beta, const float *mean, const float *var, float eps, float *dx,
                           float *dgamma, float *dbeta);
int nn_fast_bn_add_relu_fwd_train_cl(int n, int c, int hw, const float *x, const float *res, const float *gamma,
                                     const float *beta, float eps, float *y, float *mean, float *var);
int nn_fast_bn_add_relu_bwd_cl(int n, int c, int hw, const float *x, const float *y, const float *dy,
                               const float *dy2, const float *gamma, const float *mean, const float *var, float eps,
                               float *g, float *dx, float *dgamma, float *dbeta);
int nn_fast_bn_apply_train_cl(int n, int c, int hw, const float *x, const float *res, int relu, const float *gamma,
                              const float *beta, float eps, const float *mean, const float *var, float *y);
/* the bf16 table's batch norm with x or y in bfloat16 (kern_bn_entries.c: nn.h's bn16 and bn_x16
 * entries, the _cl kernels widening and rounding as they read and write), and its ReLU writing
 * bfloat16 (kern_eltwise_fast.c) */
int nn_fast_bn16_fwd_train(int n, int c, int hw, int x16, const void *x, const float *res, int relu, const float *gamma,
                           const float *beta, float eps, int y16, void *y, uint16_t *ycopy, float *mean, float *var);
int nn_fast_bn16_fwd_infer(int n, int c, int hw, int x16, const void *x, const float *gamma, const float *beta,
                           const float *mean, const float *var, float eps, int y16, void *y);
int nn_fast_bn_x16_bwd(int n, int c, int hw, const uint16_t *x, const float *y, const float *dy, const float *dy2,
                       int relu, const float *gamma, const float *beta, const float *mean, const float *var, float eps,
                       float *g, int dx16, void *dx, float *dgamma, float *dbeta);
int nn_fast_relu_fwd_y16(size_t count, const float *x, uint16_t *y);
int nn_fast_relu_bwd_y16(size_t count, const uint16_t *y, const float *dy, float *dx);
/* the oneDNN table's max pooling (kern_pool_fast.c): the reference's results, threaded on blocked
 * activations */
void nn_fast_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws);
void nn_fast_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx);
int nn_fast_maxpool_relu_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *relu_out,
                             float *dx);
int nn_fast_maxpool_relu_ok(const baton_nn_pool_geom *g);
/* direct 3x3 stride-1 "same" convolution on blocked activations, AVX-512 (kern_conv_fast.c):
 * usable for 16- and 32-channel layers on CPUs with AVX-512F; pack the OIHW weights (flip = 1: for
 * a backward-data run as a forward convolution of dy), then run on c_in -> c_out channels */
#define NN_FAST_CONV_PACK_MAX (32 * 32 * 9)
int nn_fast_conv3_usable(const baton_nn_conv_geom *g);
void nn_fast_conv3_pack(const baton_nn_conv_geom *g, const float *w, int flip, float *wp);
void nn_fast_conv3_run(int n, int c_in, int c_out, int h, int w, const float *x, const float *wp, const float *bias,
                       int relu, float *y, const float *shift, double *sums);
int nn_fast_conv3_bn_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *bias,
                         const float *shift, float *y, float *mean, float *var);
int nn_fast_conv3_bn_ok(const baton_nn_conv_geom *g);   /* for batches of 1..g->n (reserves for them) */
/* the blocked batch-norm kernels (the fused ones included) take this geometry, for any batch size
 * (kern_bn_fast.c); normalisation with batch statistics taken by the convolution that wrote x */
int nn_fast_bn_stats_ok(int c, int hw);
int nn_fast_bn_apply_train(int n, int c, int hw, const float *x, const float *res, int relu, const float *gamma,
                           const float *beta, float eps, const float *mean, const float *var, float *y);
void nn_ref_relu_fwd(size_t count, const float *x, float *y);
void nn_ref_relu_bwd(size_t count, const float *y, const float *dy, float *dx);
void nn_ref_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws);
void nn_ref_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx);
void nn_ref_gap_fwd(int n, int c, int hw, const float *x, float *y);
void nn_ref_gap_bwd(int n, int c, int hw, const float *dy, float *dx);
void nn_ref_add(size_t count, const float *a, const float *b, float *y);
/* the blocked layout of the oneDNN table (kern_layout.c): channel blocks of NN_BLOCK */
#define NN_BLOCK 16
/* the most channels of a blocked activation (a multiple of 16, more than one pixel): the blocked
 * batch-norm kernels keep their per-channel partial sums on the stack (kern_bn_fast.c); model.c
 * refuses a model with more */
#define NN_BN_MAX_C 4096
int nn_is_blocked(int block, int c);
void nn_layout_to_plain(int block, int n, int c, int h, int w, const float *x, float *y);
void nn_layout_from_plain(int block, int n, int c, int h, int w, const float *x, float *y);
void nn_blk_to_plain(int n, int c, int h, int w, const float *x, float *y);
void nn_blk_from_plain(int n, int c, int h, int w, const float *x, float *y);
/* the bf16 table's layout (kern_layout.c): a channel count that is a multiple of NN_BLOCK
 * channels-last, [n][h][w][c] (16 channels: the same bytes as nChw16c); others NCHW. Conversions,
 * global average pooling and max pooling (the reference's results, bit for bit) on it. */
void nn_cl_to_plain(int n, int c, int h, int w, const float *x, float *y);
void nn_cl_from_plain(int n, int c, int h, int w, const float *x, float *y);
void nn_cl_gap_fwd(int n, int c, int hw, const float *x, float *y);
void nn_cl_gap_bwd(int n, int c, int hw, const float *dy, float *dx);
void nn_cl_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws);
void nn_cl_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx);
int nn_cl_maxpool_relu_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *relu_out,
                           float *dx);
int nn_cl_maxpool_relu_ok(const baton_nn_pool_geom *g);
void nn_ref_layout_copy(int n, int c, int h, int w, const float *x, float *y);
void nn_blk_gap_fwd(int n, int c, int hw, const float *x, float *y);
void nn_blk_gap_bwd(int n, int c, int hw, const float *dy, float *dx);

/* bfloat16 (bf16.c): round to nearest even (NaN kept quiet), widen exactly; the model's copy of
 * its parameters in bfloat16 made current (when its table reads it and it is stale) */
void nn_bf16_round(size_t n, const float *x, uint16_t *y);
void nn_bf16_widen(size_t n, const uint16_t *x, float *y);
void nn_params16_refresh(baton_nn_model *m);

#define NN_ALIGN_ELEMS 16   /* arena alignment: 64 bytes of float / int32 */
static inline size_t nn_align_up(size_t n) { return (n + NN_ALIGN_ELEMS - 1) / NN_ALIGN_ELEMS * NN_ALIGN_ELEMS; }

#define NN_BN_EPS 1e-5f
#define NN_BN_MOMENTUM 0.1f
#define NN_NAME_MAX 64

enum nn_layer_kind { NN_CONV, NN_BN, NN_RELU, NN_MAXPOOL, NN_GAP, NN_LINEAR, NN_DROPOUT, NN_ADD };
enum nn_init { NN_INIT_UNIFORM, NN_INIT_ONES, NN_INIT_ZEROS };

/* An activation: one image is [c, h, w]; data and grad hold max_batch images. */
typedef struct nn_slot {
    int c, h, w;
    size_t per_image;         /* c*h*w */
    size_t off_data, off_grad;/* in the activation arena */
    float *data, *grad;
    int bf16;                 /* data holds bfloat16 values (uint16_t; grad stays float): a
                               * convolution's output read only by the batch norm after it, or a batch
                               * norm's ReLU output read only by a convolution, where the table has
                               * the entries for it (fuse.c, plan_bf16_slots) */
    int grad16;               /* grad holds bfloat16 too: d(a bf16 convolution output), which its batch
                               * norm's backward writes rounded and the convolution's backward reads
                               * as it is (both its passes on the bfloat16 kernels) */
    uint16_t *data16;         /* NULL, or a bfloat16 copy of data (which stays float32): the training
                               * forward's batch norm that writes data writes it too, and the bfloat16
                               * convolutions reading data read it instead (fuse.c, plan_copies) */
} nn_slot;

typedef struct nn_tensor {
    char name[NN_NAME_MAX];
    int kind, dtype, ndim;
    int64_t shape[4];
    size_t numel;
    size_t off;               /* params arena (PARAM), buffer arena (F32 BUFFER) or i64 arena */
    int init;
    float bound;              /* NN_INIT_UNIFORM: U(-bound, bound) */
    void *data;
    float *grad;
} nn_tensor;

typedef struct nn_layer {
    int kind;
    char name[NN_NAME_MAX];   /* module path for messages, e.g. "layers.3.conv1" */
    int in, in2, out;         /* slots (in2: NN_ADD only) */
    int tw, tb;               /* tensors: weight/bias (conv, linear) or gamma/beta (bn); -1 none */
    int trm, trv, tnbt;       /* bn buffers */
    int k, stride, pad;       /* conv / pool */
    float p;                  /* dropout */
    size_t off_a;             /* activation arena extras: bn mean+var (2c), dropout mask */
    size_t off_ws;            /* int32 arena: max-pool workspace */
    float *save_mean, *save_var, *mask;
    float *flat;              /* linear on a spatial input with a blockable channel count: the input
                               * in NCHW order (forward), then d(input) (backward) */
    size_t off_flat;
    int32_t *ws;
    double sync_count;        /* bn under bn_sync: the whole batch's values per channel (forward's) */
} nn_layer;

/* ---- the plan (fuse.c): a model's layers as a list of ops for its kernel table ----
 * An op is one layer, or several run as one unit (a fused op: conv+relu, bn+relu, bn+add+relu, ...)
 * with its own forward and backward; forward runs the list in order, backward in reverse, each op's
 * backward the mirror of its forward. Every choice — which fused kernel, where each gradient goes —
 * is made when the plan is made, none at run time. */
enum nn_op_kind {
    NN_OP_CONV, NN_OP_CONV_RELU, NN_OP_CONV_STATS, NN_OP_CONV_RELU_POOL,
    NN_OP_BN, NN_OP_BN_RELU, NN_OP_BN_ADD_RELU, NN_OP_BN_INFER,
    NN_OP_RELU, NN_OP_RELU_POOL, NN_OP_MAXPOOL, NN_OP_GAP, NN_OP_LINEAR,
    NN_OP_DROPOUT, NN_OP_DROPOUT_INFER, NN_OP_ADD, NN_OP_ADD_RELU,
    NN_OP_KINDS
};

/* Where an op's backward puts the gradient of one of its inputs. */
enum nn_gmode {
    NN_G_NONE,     /* not wanted (the input images) */
    NN_G_DIRECT,   /* the slot's first contribution: written into its grad */
    NN_G_ADD,      /* a later one: written into scratch, then added to the slot's grad */
    NN_G_PEND,     /* a later one, left in scratch: the next op's backward adds it as its dy2 */
};

typedef struct nn_gout {
    int slot, mode;
} nn_gout;

typedef struct nn_op nn_op;
/* An op's forward or backward on a batch of n images: 1, or 0 when a kernel declined a geometry its
 * predicate had accepted (a broken table; nothing else can fail). */
typedef int (*nn_op_fn)(baton_nn_model *m, const nn_op *o, int n);

struct nn_op {
    int kind;                 /* enum nn_op_kind */
    nn_op_fn fwd, bwd;
    int layer;                /* its main layer: conv, bn, relu, pool, gap, linear, dropout or add */
    int bn, relu, pool;       /* layers run with it (-1 none); bn+add+relu: layer is the add */
    int stats;                /* its batch norm normalises with statistics the convolution before took */
    int flat;                 /* linear: the input goes through layer->flat (NCHW order) */
    int in, in2, out;         /* slots: its input (bn+add+relu: the batch norm's), an add's other input
                               * (-1 none), its output */
    /* backward (the training plan) */
    int dy;                   /* the slot whose grad holds d(out): out's, or the one out's shares */
    int zero_dy;              /* nothing writes d(out) (an output no layer reads): cleared first */
    int dy2;                  /* a second contribution to d(out) waits in scratch: added in this op */
    int alias;                /* add+relu: d(in) = d(in2), kept once in in2's grad (in's producer reads
                               * it there: its dy) */
    nn_gout gx, gx2;          /* d(in), d(in2) */
    int copy16;               /* training: a batch norm op writing out's data16 too (1); a convolution
                               * reading in's data16 in forward (1) or in both passes (2) */
};

typedef struct nn_plan {
    nn_op *ops;
    size_t nops;
    int bn_1x1;               /* training: the first batch norm over 1x1 planes (a batch of one image
                               * has one value per channel: cannot be normalised), -1 none */
} nn_plan;

/* the op kinds' forward and backward (ops.c), and the geometries they run with */
typedef struct nn_op_impl {
    const char *name;
    nn_op_fn fwd, bwd;
} nn_op_impl;
extern const nn_op_impl nn_op_impls[NN_OP_KINDS];
baton_nn_conv_geom nn_conv_geom(const baton_nn_model *m, const nn_layer *l, int n);
baton_nn_pool_geom nn_pool_geom(const baton_nn_model *m, const nn_layer *l, int n);

struct baton_nn_model {
    char name[32];
    baton_nn_spec spec;
    const baton_nn_kernels *k;
    int training;
    int fwd_n, fwd_training, have_loss;
    nn_layer *layers;
    size_t nlayers, cap_layers;
    nn_slot *slots;
    size_t nslots, cap_slots;
    nn_tensor *tensors;
    size_t ntensors, cap_tensors;
    size_t nparam, nbuf, ni64, nact, nws;   /* arena sizes (elements) */
    size_t param_count;
    size_t max_slot;                        /* largest per_image over slots */
    float *params, *grads, *bufs, *acts;
    uint16_t *params16;  /* the parameters rounded to bfloat16, for a table with weights_bf16 (bf16.c) */
    int params16_stale;  /* params may have changed since params16 was written */
    size_t acts_bytes;   /* the mapping behind acts (baton_bigmem_alloc) */
    int64_t *i64;
    int32_t *wsa;
    float *scratch;      /* a gradient contribution to a slot already holding one, until added */
    nn_plan train, infer;/* the ops of a training and of an evaluation forward, for k */
    int *plan_work;      /* fuse.c's working space */
    uint16_t *copies16;  /* the slots' data16 (fuse.c, plan_copies; NULL none) */
    int out_slot;
    int build_err;                          /* sticky builder failure (status) */
    baton_err berr;
    baton_rng rng;                          /* dropout stream */
    baton_nn_grad_ready_fn ready_fn;        /* backward's progress (data parallelism), NULL none */
    void *ready_ctx;
    int *ready_op;                          /* per tensor: the training op that fills its grad */
    baton_nn_sum_fn bn_sync_fn;             /* batch norm over the parts of a batch (kern_bn_sync.c), NULL off */
    void *bn_sync_ctx;
    double *bn_sync_buf;                    /* 1 + 2 * the widest batch norm's channels */
    int bn_sync_rc;                         /* sticky: a failed sum (the pass reports bn_sync_err) */
    baton_err bn_sync_err;
};

/* kern_bn_sync.c: batch norm l's training forward into y, and its backward, with the whole
 * batch's statistics (n may be 0: a part with no image makes the same sums); 1, or 0 after a
 * failed sum (m->bn_sync_rc). */
int nn_sync_bn_fwd(baton_nn_model *m, nn_layer *l, int n, float *y);
int nn_sync_bn_bwd(baton_nn_model *m, const nn_layer *l, int n, const float *dy, float *dx);
/* ops.c: a pass with no image — every batch norm's sums, forward then backward, with zeros
 * (running statistics updated; the batch norms' grads zero) */
int nn_sync_bn_idle(baton_nn_model *m);

/* fuse.c: nn_plan_alloc sizes the plans for the graph (once, after it is built); nn_plan_fusions
 * fills both for the model's table (when the model is created and whenever its table changes). */
int nn_plan_alloc(baton_nn_model *m, baton_err *err);
/* softmax cross-entropy whose d(logits) is divided by denom (>= n) rather than n */
void nn_softmax_xent_denom(int n, int denom, int classes, const float *logits, const int32_t *labels, float *dlogits,
                           float *loss, int *correct);
void nn_plan_fusions(baton_nn_model *m);
void nn_plan_free(baton_nn_model *m);

/* ---- the folded inference plan (fold.c lowers the graph, fold_dnnl.c compiles and runs it) ----
 * Evaluation only: batch norm folded into the convolution before it, ReLU and residual add fused
 * as post-ops, dropout dropped. The lowering is a list of ops on "values" (one activation buffer
 * each, one image's shape); the compiler turns it into oneDNN primitives with weights packed once. */
enum nn_fold_kind { NN_FOLD_CONV, NN_FOLD_IP, NN_FOLD_MAXPOOL, NN_FOLD_AVGPOOL };

typedef struct nn_fold_op {
    int kind;                /* enum nn_fold_kind */
    const char *name;        /* the layer's module path (the model's own string) */
    int src, dst;            /* values */
    int sum;                 /* value accumulated into (then dst == sum), -1 none */
    int relu;
    int k, stride, pad;
    float *w, *b;            /* conv / ip: folded weights and bias, owned by the lowering */
    int oc;
    long seq;                /* execution order */
} nn_fold_op;

typedef struct nn_fold_val {
    int c, h, w;             /* one image; linear outputs are c x 1 x 1 */
    int dead;                /* replaced by a sum target: no buffer */
} nn_fold_val;

typedef struct nn_fold {
    nn_fold_op *ops;         /* in execution order once lowered */
    int nops, capops;
    nn_fold_val *vals;
    int nvals, capvals;
    int in_val, out_val;
    /* working state of the lowering */
    int *slot_val;           /* value of each slot, -1 none yet */
    int *producer;           /* per value (capvals long): the op writing it, -1 the input */
    int *uses, *last_use;    /* per slot: readers, index of the last reading layer */
    long seq;
} nn_fold;

/* fold.c: grow an array by doubling (-1 on OOM); lower m's graph into F (zeroed by the caller;
 * a layer the plan cannot express is refused with its name); free what F owns. */
int nn_grow(void **arr, int *n, int *cap, size_t elem);
int nn_fold_lower(const baton_nn_model *m, nn_fold *F, baton_err *err);
void nn_fold_free(nn_fold *F);

/* fold_table.c: the same op list run on a kernel table (each op a table call), for batch images:
 * on the reference table, the plain reference of the compiled plan (the tests compare them). */
typedef struct nn_fold_exec nn_fold_exec;
int nn_fold_exec_create(const baton_nn_model *m, const baton_nn_kernels *K, int batch, nn_fold_exec **out,
                        baton_err *err);
void nn_fold_exec_run(nn_fold_exec *e, const float *x, float *logits);
int nn_fold_exec_nops(const nn_fold_exec *e);
void nn_fold_exec_free(nn_fold_exec *e);

/* builder (build.c); each returns the new slot id, or -1 after recording a failure in m->berr */
int nn_b_input(baton_nn_model *m, int c, int h, int w);
int nn_b_conv(baton_nn_model *m, const char *name, int in, int oc, int k, int stride, int pad, int bias);
int nn_b_bn(baton_nn_model *m, const char *name, int in);
int nn_b_relu(baton_nn_model *m, int in);
int nn_b_maxpool(baton_nn_model *m, int in, int k, int stride);
int nn_b_gap(baton_nn_model *m, int in);
int nn_b_linear(baton_nn_model *m, const char *name, int in, int out, int bias);
int nn_b_dropout(baton_nn_model *m, int in, float p);
int nn_b_add(baton_nn_model *m, int a, int b);

/* zoo.c: build the named architecture's graph into m (m->spec filled in) */
int nn_zoo_build(baton_nn_model *m, baton_err *err);

#endif
