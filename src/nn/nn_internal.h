/* nn_internal.h — the nn component's private structures: the layer graph a model is built into,
 * its activation slots and named tensors, the builder used by the model zoo, and the reference
 * kernels' symbols. Nothing outside src/nn includes this. */
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
/* max pooling on blocked activations (kern_pool_fast.c): the reference's results, threaded */
void nn_fast_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws);
void nn_fast_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx);
void nn_fast_maxpool_bwd_masked(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws,
                                const float *relu_out, float *dx);
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
int nn_is_blocked(int block, int c);
void nn_layout_to_plain(int block, int n, int c, int h, int w, const float *x, float *y);
void nn_layout_from_plain(int block, int n, int c, int h, int w, const float *x, float *y);
void nn_blk_to_plain(int n, int c, int h, int w, const float *x, float *y);
void nn_blk_from_plain(int n, int c, int h, int w, const float *x, float *y);
void nn_ref_layout_copy(int n, int c, int h, int w, const float *x, float *y);
void nn_blk_gap_fwd(int n, int c, int hw, const float *x, float *y);
void nn_blk_gap_bwd(int n, int c, int hw, const float *dy, float *dx);

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
    int grad_ready;           /* backward: grad holds a value (later contributions are added) */
    const float *galias;      /* backward: where the gradient is, when not in grad (NULL: grad) — an
                               * add's input sharing the buffer of the add's other input */
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
    int relu_next;            /* bn, add, conv: the ReLU layer right after it, run fused in training (-1 none) */
    int fused;                /* relu, in training: 1 forward and backward run inside the batch norm or add
                               * before it; 2 forward inside the convolution before it */
    int relu_prev;            /* maxpool: the ReLU whose output it pools, whose backward runs inside the
                               * pool's in training (-1 none) */
    int in_pool;              /* relu: 1 its backward may run inside the max pool after it (training),
                               * 2 it did in this backward pass */
    int add_next;             /* bn: the add (with a fused ReLU) its training forward runs inside (-1 none) */
    int deferred;             /* bn: this forward left it to add_next; backward: 2 when this backward
                               * pass ran it inside add_next's */
    int bn_prev, bn_res;      /* add: that batch norm's layer (-1 none) and the add's other input slot */
    int alias_in;             /* add: in's gradient may share in2's buffer in backward (see plan_adds) */
    int bn_next;              /* conv: the batch norm that is its output's only reader, whose training
                               * statistics this convolution takes as it writes (-1 none) */
    int stats_ready;          /* bn, in a training forward: its input's convolution left the batch
                               * statistics in save_mean / save_var */
} nn_layer;

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
    size_t acts_bytes;   /* the mapping behind acts (baton_bigmem_alloc) */
    int64_t *i64;
    int32_t *wsa;
    float *scratch;
    int pend;                               /* backward: the slot whose latest gradient contribution
                                             * is still in scratch, not yet added (-1 none) */
    int out_slot;
    int build_err;                          /* sticky builder failure (status) */
    baton_err berr;
    baton_rng rng;                          /* dropout stream */
};

/* fuse.c: the fusion plan for the model's table (training), into the layers' fields */
void nn_plan_fusions(baton_nn_model *m);

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
