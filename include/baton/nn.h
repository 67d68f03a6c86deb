/* nn.h — tensors, layers, models, optimizers and learning-rate schedules for baton's native training
 * engine.
 *
 * Layout and memory. Everything is float32. Activations are NCHW (the decode pipeline's layout);
 * convolution weights are OIHW and linear weights [out, in] — PyTorch's layouts, so exporting a
 * model's tensors to safetensors is a plain copy. A model is created for a maximum batch size and
 * allocates all its memory then, in arenas (parameters, gradients, buffers, activations); an
 * optimizer allocates its state once when created. Nothing is allocated inside forward, backward or
 * step, and any batch of 1..max_batch images may be run.
 *
 * Kernels. Every heavy operation goes through a kernel table (baton_nn_kernels). The plain C
 * reference table (baton_nn_kernels_reference) is the obviously-correct implementation that every
 * fast path is checked against; a fast path (oneDNN) supplies another table with the same contract.
 * Forward and backward are bit-reproducible for the same inputs, kernel table and thread count.
 *
 * Models (baton_nn_model_create): "mlp", "lenet", "resnet8", "resnet20", "resnet56" — see
 * src/nn/zoo.c for their exact definitions (lenet and resnet-N are those of the PyTorch reference
 * models) — and the racing league's policy and value networks "race_mlp" (on a sensor vector) and
 * "race_cnn" (DeepRacer's 3-layer "shallow" CNN on the camera), whose `classes` is their output
 * count (1 for a value) and whose loss the caller brings (baton_nn_backward_from). Tensor names,
 * shapes and order are those of the PyTorch modules' state_dict().
 *
 * Errors are values: functions return BATON_OK or a negative baton status and fill a baton_err whose
 * message names the model, layer or field. Nothing here exits or asserts on outside input. */
#ifndef BATON_NN_H
#define BATON_NN_H

#include <stddef.h>
#include <stdint.h>

#include "baton/util.h"

/* ---------------------------------------------------------------------------------------------
 * Kernel table: the seam between the network code and the arithmetic.
 *
 * Contract for every entry: inputs are read-only, outputs are overwritten (never accumulated),
 * pointers do not alias unless stated, weights are dense OIHW / [out,in] float32, and activations
 * are in the table's layout: dense NCHW when `block` is 0; when `block` is B > 0, an activation
 * whose channel count is a multiple of B is stored [n][c/B][h][w][B] (oneDNN's nChw16c for B = 16)
 * and any other stays NCHW ([n, c] when h = w = 1 either way). to_plain / from_plain convert one
 * activation between the table's layout and NCHW. Gradient outputs for parameters (dw, db, dgamma,
 * dbeta) are overwritten as well.
 *
 * Optional entries (NULL in the reference table) run several operations in one pass. A model
 * decides which of them it uses when it is built and whenever its table changes (src/nn/fuse.c):
 * an optional entry is used for a geometry only when its predicate (the *_ok entry beside it)
 * accepts that geometry, asked with n = the model's maximum batch; an accepted geometry must then be
 * taken for every batch of 1..n images (the predicate may reserve what the entry needs for n). An
 * optional entry without a predicate takes every geometry. Each returns 1 when it did the work; 0
 * (nothing written) only for a geometry its predicate refuses — the model treats a 0 where the
 * predicate accepted as a broken table.
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_nn_conv_geom {
    int n, ic, ih, iw;       /* input  [n, ic, ih, iw] */
    int oc, kh, kw;          /* weight [oc, ic, kh, kw] */
    int stride, pad;         /* same in both spatial dimensions; zero padding */
    int oh, ow;              /* output [n, oc, oh, ow]: (ih + 2*pad - kh) / stride + 1 */
} baton_nn_conv_geom;

typedef struct baton_nn_pool_geom {
    int n, c, ih, iw;        /* input  [n, c, ih, iw] */
    int k, stride;           /* square window, no padding, floor mode */
    int oh, ow;              /* output [n, c, oh, ow] */
} baton_nn_pool_geom;

typedef struct baton_nn_kernels {
    const char *name;        /* "reference" or "dnnl" */
    int block;               /* activation layout: 0 NCHW, B > 0 channel blocks of B (see above) */
    /* 0: the w argument of conv_fwd, conv_relu_fwd, conv_bwd_data, linear_fwd and linear_bwd_data
     * is float32 (the contract above). 1 (the bf16 table): it points to bfloat16 values (uint16_t,
     * the top half of a float32; same layout), passed through the entry's float pointer — a model
     * gives its bfloat16 copy of the weights, which the optimizer's step writes, so no call
     * converts weights. Gradients (dw) stay float32. */
    int weights_bf16;
    /* 1 (the bf16 table): an activation whose channel count is a multiple of `block` is stored
     * channels-last, [n][h][w][c], instead of in channel blocks (the layout oneDNN's AMX
     * convolutions read and write); the rest of the contract above unchanged */
    int channels_last;
    void (*to_plain)(int n, int c, int h, int w, const float *x, float *y);
    void (*from_plain)(int n, int c, int h, int w, const float *x, float *y);
    /* convolution; b / db may be NULL (no bias) */
    void (*conv_fwd)(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y);
    /* optional (NULL in the reference table): y = max(0, conv(x)), a convolution and the ReLU after
     * it in one pass, what conv_fwd + relu_fwd write; takes every geometry */
    int (*conv_relu_fwd)(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y);
    /* optional (NULL in the reference table): y = conv(x), and the batch mean and biased variance
     * of y per output channel (what bn_fwd_train would compute from y, within rounding; summed
     * about shift[c], a value near the mean such as the running mean) — for a convolution whose only
     * reader is a batch norm in training, which then normalises with bn_apply_train. For the
     * geometries conv_bn_stats_ok accepts. */
    int (*conv_bn_stats_fwd)(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b,
                             const float *shift, float *y, float *mean, float *var);
    int (*conv_bn_stats_ok)(const baton_nn_conv_geom *g);
    void (*conv_bwd_data)(const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx);
    void (*conv_bwd_weights)(const baton_nn_conv_geom *g, const float *x, const float *dy, float *dw,
                             float *db);
    /* fully connected: x [n, in], w [out, in], b [out], y [n, out]; b / db may be NULL */
    void (*linear_fwd)(int n, int in, int out, const float *x, const float *w, const float *b, float *y);
    void (*linear_bwd_data)(int n, int in, int out, const float *dy, const float *w, float *dx);
    void (*linear_bwd_weights)(int n, int in, int out, const float *x, const float *dy, float *dw,
                               float *db);
    /* batch normalisation over [n, c, hw]. Training forward writes the batch mean and the BIASED
     * batch variance per channel (the ones used to normalise); backward takes them back. */
    void (*bn_fwd_train)(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                         float eps, float *y, float *mean, float *var);
    void (*bn_fwd_infer)(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                         const float *mean, const float *var, float eps, float *y);
    void (*bn_bwd)(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                   const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta);
    /* optional (NULL in the reference table): batch norm fused with the ReLU that follows it, in
     * training. Forward writes y = max(0, bn(x)) (the ReLU's output) and the statistics; backward
     * takes d(y), the same gamma and beta and the statistics forward wrote, and gives what bn_bwd
     * would give for d(bn output) = dy where y > 0 (it finds where from x, as forward computed y).
     * The same results as bn_fwd_train + relu_fwd, or relu_bwd + bn_bwd, within float rounding. These
     * and the bn_add_relu and bn_apply entries below take the [n, c, hw] geometries bn_fused_ok
     * accepts (for every n). */
    int (*bn_relu_fwd_train)(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                             float eps, float *y, float *mean, float *var);
    int (*bn_relu_bwd)(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                       const float *beta, const float *mean, const float *var, float eps, float *dx,
                       float *dgamma, float *dbeta);
    int (*bn_fused_ok)(int c, int hw);
    /* optional (NULL in the reference table): y = max(0, bn(x) + res) in training — a batch norm, the
     * residual add after it and the ReLU after that in one call, with the statistics as
     * bn_fwd_train's; equal to bn_fwd_train then add_relu (bn output as a, res as b). */
    int (*bn_add_relu_fwd_train)(int n, int c, int hw, const float *x, const float *res, const float *gamma,
                                 const float *beta, float eps, float *y, float *mean, float *var);
    /* optional (NULL in the reference table): a training batch norm's normalisation with batch
     * statistics already taken (conv_bn_stats_fwd's): y = bn(x); with relu max(0, bn(x)); with res
     * not NULL max(0, bn(x) + res) — what bn_fwd_train, bn_relu_fwd_train and
     * bn_add_relu_fwd_train write for those statistics, bit for bit. */
    int (*bn_apply_train)(int n, int c, int hw, const float *x, const float *res, int relu, const float *gamma,
                          const float *beta, float eps, const float *mean, const float *var, float *y);
    /* optional (NULL in the reference table): its backward. With y the ReLU's output and d(y) = dy
     * (+ dy2 when not NULL): g = d(y) where y > 0 (the gradient of both addends), and dx, dgamma,
     * dbeta as bn_bwd gives them for g (what relu_bwd_add or relu_bwd, then bn_bwd give). g aliases
     * no input. */
    int (*bn_add_relu_bwd)(int n, int c, int hw, const float *x, const float *y, const float *dy, const float *dy2,
                           const float *gamma, const float *mean, const float *var, float eps, float *g, float *dx,
                           float *dgamma, float *dbeta);
    /* optional (NULL in the reference table): y = max(0, a + b), the residual add and the ReLU
     * after it in one pass (y may alias a or b), what add + relu_fwd write; takes every count */
    int (*add_relu)(size_t count, const float *a, const float *b, float *y);
    /* relu; backward uses the forward OUTPUT y (dx = dy where y > 0); dx may alias dy */
    void (*relu_fwd)(size_t count, const float *x, float *y);
    void (*relu_bwd)(size_t count, const float *y, const float *dy, float *dx);
    /* optional (NULL in the reference table): dx = (dy + dy2) where y > 0 — add, then relu_bwd, in
     * one pass (dx may alias any input); takes every count */
    int (*relu_bwd_add)(size_t count, const float *y, const float *dy, const float *dy2, float *dx);
    /* max pooling; ws holds, per output (in the output's storage order), the flat index within
     * its input plane of the chosen element (the first maximum in row-major window order, as
     * PyTorch); only the same table's backward reads it */
    void (*maxpool_fwd)(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws);
    void (*maxpool_bwd)(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx);
    /* optional (NULL in the reference table): maxpool_bwd, then relu_bwd of the ReLU whose output
     * relu_out is the pool's input, in one pass: dx = d(ReLU input); for the geometries
     * maxpool_relu_ok accepts */
    int (*maxpool_relu_bwd)(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *relu_out,
                            float *dx);
    int (*maxpool_relu_ok)(const baton_nn_pool_geom *g);
    /* global average pooling [n, c, hw] (table layout) -> [n, c] */
    void (*gap_fwd)(int n, int c, int hw, const float *x, float *y);
    void (*gap_bwd)(int n, int c, int hw, const float *dy, float *dx);
    /* y = a + b elementwise; y may alias a or b */
    void (*add)(size_t count, const float *a, const float *b, float *y);
    /* optional (NULL where the table has nothing to share between the two): a convolution's two
     * backward passes in one call — what conv_bwd_weights(g, x, dy, dw, db) then
     * conv_bwd_data(g, dy, w, dx) write, bit for bit; dx NULL: the weights' pass only. (The bf16
     * table converts dy to bfloat16 once for both.) */
    void (*conv_bwd)(const baton_nn_conv_geom *g, const float *x, const float *dy, const float *w, float *dw,
                     float *db, float *dx);
    /* optional (NULL but in the bf16 table): activations in bfloat16 (uint16_t, the top half of a
     * float32; the table's layout) where a convolution writes or reads them — a convolution's
     * output that only the batch norm after it reads, and the output of a batch norm's ReLU that
     * only a convolution reads. Each x16 / y16 flag says that x / y holds bfloat16 values; an
     * output in bfloat16 is the float32 result rounded once, to nearest even. conv_fwd16 is
     * conv_fwd, and conv_bwd_x16 conv_bwd (dx NULL: the weights' pass only) with x in bfloat16, for
     * the geometries conv16_ok accepts; conv_bwd16 is conv_bwd with x and/or dy in bfloat16 (dy:
     * for the geometries conv_dy16_ok accepts). bn16_fwd_train is bn_fwd_train (res NULL, relu 0),
     * bn_relu_fwd_train (relu 1) or bn_add_relu_fwd_train (res given), and with y in float32 (y16 0)
 * and ycopy not NULL writes y rounded to bfloat16 there too (the copy a bfloat16 convolution
 * reads of an activation that stays float32: a resnet block's output); bn16_fwd_infer is
     * bn_fwd_infer; bn_x16_bwd is bn_bwd (y NULL, relu 0), bn_relu_bwd (relu 1; beta given) or
     * bn_add_relu_bwd (y given: the add+ReLU's output), dx in bfloat16 with dx16 (g stays float32)
     * — for the geometries bn_fused_ok accepts (0 for others, nothing written). relu_fwd_y16 and
     * relu_bwd_y16 are relu_fwd and relu_bwd with the ReLU's output in bfloat16. Their results are
     * those of the float32 entries on the inputs widened (exact), the bfloat16 outputs those
     * entries' rounded, bit for bit. */
    int (*conv_fwd16)(const baton_nn_conv_geom *g, int x16, const void *x, const float *w, const float *b, int y16,
                      void *y);
    int (*conv_bwd16)(const baton_nn_conv_geom *g, int x16, const void *x, int dy16, const void *dy, const float *w,
                      float *dw, float *db, float *dx);
    int (*conv16_ok)(const baton_nn_conv_geom *g);
    int (*conv_dy16_ok)(const baton_nn_conv_geom *g);
    int (*bn16_fwd_train)(int n, int c, int hw, int x16, const void *x, const float *res, int relu,
                          const float *gamma, const float *beta, float eps, int y16, void *y, uint16_t *ycopy,
                          float *mean, float *var);
    int (*bn16_fwd_infer)(int n, int c, int hw, int x16, const void *x, const float *gamma, const float *beta,
                          const float *mean, const float *var, float eps, int y16, void *y);
    int (*bn_x16_bwd)(int n, int c, int hw, const uint16_t *x, const float *y, const float *dy, const float *dy2,
                      int relu, const float *gamma, const float *beta, const float *mean, const float *var,
                      float eps, float *g, int dx16, void *dx, float *dgamma, float *dbeta);
    int (*relu_fwd_y16)(size_t count, const float *x, uint16_t *y);
    int (*relu_bwd_y16)(size_t count, const uint16_t *y, const float *dy, float *dx);
} baton_nn_kernels;

/* The plain C reference kernels: single-threaded, straightforward loops, fixed summation order. */
const baton_nn_kernels *baton_nn_kernels_reference(void);
/* The oneDNN fast path (one process-wide table): convolution (direct or Winograd by a fixed rule;
 * 16/32-channel 3x3 "same" forward and backward-data on a hand-written AVX-512 kernel),
 * linear, relu and add run as oneDNN primitives on the table's layout (nChw16c where the channel
 * count is a multiple of 16), created once per geometry and cached; batch norm, max pooling and the
 * fused entries run on hand-written vectorised kernels; global average pooling is plain C.
 * Threads: OpenMP for oneDNN and the hand-written kernels, sized by the calling thread's team
 * (OMP_NUM_THREADS, baton_nn_set_threads); bit-reproducible for a fixed team size; each calling
 * thread has its own primitives and buffers, so threads may run the table at once. Results
 * match the reference within float rounding, not bit for bit. A geometry oneDNN cannot handle runs
 * on the reference kernel (one warning per operation). Returns NULL and fills err when the oneDNN
 * CPU engine cannot be created. */
const baton_nn_kernels *baton_nn_kernels_dnnl(baton_err *err);
/* The same table with convolutions and linear layers on oneDNN's bfloat16 kernels (mixed
 * precision, as PyTorch's bf16 autocast: each call rounds its inputs — activations, weights,
 * gradients — to bfloat16, sums in f32 and writes f32, or bfloat16 through the conv_fwd16 family
 * of entries, which a model uses for the activations between its convolutions and batch norms;
 * the model's weights, gradients and optimizer stay f32, and the optimizer's step writes a
 * bfloat16 copy of the weights that the table reads:
 * weights_bf16). On AMX (Sapphire Rapids and later) oneDNN's channels-last bf16 convolutions run
 * 5-10x the f32 kernels' speed per call, the activations reordered in and out per call; on
 * AVX512-BF16 alone (Cooper Lake, Zen 4) they were not faster than f32 (bench/RESULTS.md). Results
 * within bfloat16's rounding of the reference (8 significant bits per input). NULL and err where
 * oneDNN's CPU ISA (the CPU's, or lower under ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA) lacks
 * AVX512-BF16 (oneDNN would emulate it, slower than f32) or oneDNN cannot start. */
const baton_nn_kernels *baton_nn_kernels_dnnl_bf16(baton_err *err);

/* The arithmetic of a model's convolutions and linear layers: a run's --precision (train, eval,
 * infer-bench, race-train). */
enum { BATON_NN_PRECISION_F32 = 0, BATON_NN_PRECISION_BF16 = 1 };
/* "f32" or "bf16" -> BATON_NN_PRECISION_*; -1 for anything else (NULL included) */
int baton_nn_precision_parse(const char *s);
const char *baton_nn_precision_name(int precision);   /* "f32" / "bf16" */
/* The table a run asks for: reference (precision must be f32) the reference table; f32 the oneDNN
 * table, or the reference one with a warning when oneDNN cannot start; bf16 the bfloat16 table, or
 * NULL and err (naming the CPU's instruction set) where it is unavailable — never a slow stand-in. */
const baton_nn_kernels *baton_nn_kernels_select(int reference, int precision, baton_err *err);

/* Reference-only operations (cheap; no fast path needed). */
/* Inverted dropout: keep an element when baton_rng_float(rng) >= p (one draw per element, in
 * order), scale kept ones by 1/(1-p). mask receives the per-element scale (0 or 1/(1-p)). */
void baton_nn_dropout_fwd(size_t count, float p, baton_rng *rng, const float *x, float *y, float *mask);
void baton_nn_dropout_bwd(size_t count, const float *mask, const float *dy, float *dx);
/* Softmax cross-entropy, mean over the batch. labels must be in [0, classes) (checked by the caller
 * of this low-level function; baton_nn_loss checks them). dlogits (may be NULL) receives
 * d(mean loss)/d(logits). *correct counts rows whose argmax (first maximum) equals the label. */
void baton_nn_softmax_xent(int n, int classes, const float *logits, const int32_t *labels,
                           float *dlogits, float *loss, int *correct);

/* ---------------------------------------------------------------------------------------------
 * Models
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_nn_model baton_nn_model;

typedef struct baton_nn_spec {
    const char *name;        /* "mlp", "lenet", "resnet8", "resnet20", "resnet56", "race_mlp", "race_cnn" */
    int in_c, in_h, in_w;    /* one image, from the dataset */
    int classes;             /* from the dataset (>= 2); race_*: the output count (>= 1) */
    int max_batch;           /* activations are allocated for this many images */
    uint64_t seed;           /* parameter initialisation (and the dropout stream) */
} baton_nn_spec;

enum { BATON_NN_PARAM = 0, BATON_NN_BUFFER = 1 };
enum { BATON_NN_F32 = 0, BATON_NN_I64 = 1 };

/* One named tensor of the model (or of an optimizer's state). */
typedef struct baton_nn_tensor {
    const char *name;        /* state_dict name, e.g. "layers.3.short.1.running_var" */
    int kind;                /* BATON_NN_PARAM or BATON_NN_BUFFER */
    int dtype;               /* BATON_NN_F32, or BATON_NN_I64 (num_batches_tracked, a 0-d tensor) */
    int ndim;                /* 0..4 */
    int64_t shape[4];
    size_t numel;
    void *data;              /* float * or int64_t *, numel elements, writable (for loading) */
    float *grad;             /* parameters only, else NULL */
} baton_nn_tensor;

/* Build a model from its spec: validates the name and shapes, allocates everything, initialises
 * parameters as PyTorch does by default (conv/linear weight and bias ~ U(-1/sqrt(fan_in),
 * 1/sqrt(fan_in)), BN weight 1 and bias 0, running mean 0 and var 1), drawn from baton_rng seeded
 * with spec->seed in state_dict order. kernels NULL means the reference kernels. */
int baton_nn_model_create(const baton_nn_spec *spec, const baton_nn_kernels *kernels,
                          baton_nn_model **out, baton_err *err);
/* The same with every tensor left at zero (BN running variances too): for a caller that loads all
 * of them next (serving a checkpoint), skipping the initialisation's random draws. */
int baton_nn_model_create_empty(const baton_nn_spec *spec, const baton_nn_kernels *kernels,
                                baton_nn_model **out, baton_err *err);
void baton_nn_model_free(baton_nn_model *m);

const char *baton_nn_model_name(const baton_nn_model *m);
/* A table with weights_bf16 reads the model's bfloat16 copy of its parameters, written by
 * baton_nn_optim_step; baton_nn_model_tensor and _find hand out writable pointers and so mark it
 * to be made again before the next forward. A caller that writes a parameter through a pointer it
 * kept from earlier says so here (cheap; the next forward rounds every parameter again). */
void baton_nn_model_weights_changed(baton_nn_model *m);
/* Switch the kernel table (NULL: the reference's); the model plans its operations for it again. A
 * forward run before the switch cannot be followed by loss or backward (run it again). */
void baton_nn_model_set_kernels(baton_nn_model *m, const baton_nn_kernels *kernels);
/* Training mode (batch statistics, dropout active) or evaluation mode (running statistics). */
void baton_nn_model_set_training(baton_nn_model *m, int training);
size_t baton_nn_model_param_count(const baton_nn_model *m);     /* trainable scalars */
int baton_nn_model_classes(const baton_nn_model *m);
/* The dropout RNG (part of the training state a checkpoint must carry). */
baton_rng *baton_nn_model_rng(baton_nn_model *m);

/* Named tensors in state_dict order: parameters and buffers interleaved as PyTorch lists them. */
size_t baton_nn_model_ntensors(const baton_nn_model *m);
int baton_nn_model_tensor(const baton_nn_model *m, size_t i, baton_nn_tensor *t);   /* BATON_OK / ERR_ARG */
int baton_nn_model_find(const baton_nn_model *m, const char *name, baton_nn_tensor *t); /* ERR_NOTFOUND */

/* The layer graph's size and shapes (src/nn/graph.c): layers in execution order; activations are
 * "slots", slot 0 the input, the last slot the logits. Shape of one image in slot i ([c, h, w];
 * linear outputs are [out, 1, 1]). Multiply-accumulates of one image's forward (convolutions and
 * linear layers). */
size_t baton_nn_model_nlayers(const baton_nn_model *m);
int baton_nn_model_slot(const baton_nn_model *m, size_t i, int *c, int *h, int *w);  /* BATON_OK / ERR_ARG */
double baton_nn_model_macs(const baton_nn_model *m);

/* The folded inference plan (src/nn/fold.c, fold_dnnl.c), beside the training plan: m compiled
 * once for a fixed batch — batch norm folded into the convolution before it, ReLU and residual add
 * fused, dropout dropped, weights packed once into oneDNN's layouts (m's weights are read, not
 * kept). Evaluation only. A model it cannot express is refused with the layer named. run: x is
 * batch × C×H×W floats (plain NCHW), logits batch × classes; it allocates nothing and runs one
 * query at a time per plan. nprims: primitives run per query; bytes: memory the plan holds. */
typedef struct baton_nn_infer_plan baton_nn_infer_plan;
/* precision BATON_NN_PRECISION_BF16: weights and activations in bfloat16 (sums f32; biases and the
 * logits f32), refused where the CPU lacks bfloat16 (as baton_nn_kernels_dnnl_bf16) */
int baton_nn_infer_plan_create(const baton_nn_model *m, int batch, int precision, baton_nn_infer_plan **out,
                               baton_err *err);
int baton_nn_infer_plan_run(baton_nn_infer_plan *p, const float *x, float *logits, baton_err *err);
int baton_nn_infer_plan_nprims(const baton_nn_infer_plan *p);
size_t baton_nn_infer_plan_bytes(const baton_nn_infer_plan *p);
void baton_nn_infer_plan_free(baton_nn_infer_plan *p);

/* Forward n images (x: n*C*H*W floats, copied in). Logits [n, classes] stay valid until the next
 * forward. */
int baton_nn_forward(baton_nn_model *m, const float *x, int n, baton_err *err);
const float *baton_nn_logits(const baton_nn_model *m);
/* Loss of the last forward against labels (n of them); also seeds the backward pass. */
int baton_nn_loss(baton_nn_model *m, const int32_t *labels, float *loss, int *correct, baton_err *err);
/* Backward of the last forward + loss (training mode): fills every parameter's grad. */
int baton_nn_backward(baton_nn_model *m, baton_err *err);
/* Backward of the last training-mode forward from a caller's gradient of its loss with respect to
 * the output: dout holds n × classes floats (n of that forward), d(loss)/d(output) in the output's
 * order; it replaces baton_nn_loss's d(logits). Fills every parameter's grad. */
int baton_nn_backward_from(baton_nn_model *m, const float *dout, baton_err *err);
/* Data parallelism (train's dist stage). The batch of the last forward is this rank's part of a
 * global batch of `total` images (>= its n): the loss seeds backward with d(mean over all total),
 * so summing every rank's gradients gives the global batch's. *loss is the mean over this part. */
int baton_nn_loss_part(baton_nn_model *m, const int32_t *labels, int total, float *loss, int *correct,
                       baton_err *err);
/* The gradient arena: every parameter's grad lies in [grads, grads + *len) (padding between
 * tensors stays zero), so one allreduce of it reduces every gradient. */
float *baton_nn_model_grads(baton_nn_model *m, size_t *len);
/* During backward, after each op: fn(ctx, from) says grads[from, len) are final for this pass
 * (from only decreases; backward's end does not call it with 0 — the caller knows it ended).
 * fn NULL: off. The model keeps one int per tensor for it (allocated here, once). */
typedef void (*baton_nn_grad_ready_fn)(void *ctx, size_t from);
int baton_nn_model_on_grad_ready(baton_nn_model *m, baton_nn_grad_ready_fn fn, void *ctx, baton_err *err);
/* Synchronised batch norm (data parallelism): each process trains on a part of every batch, and
 * sum(v, n, ctx, err) sums n doubles in place over the parts (an allreduce of its own, apart from
 * the gradients'). Every batch norm then normalises with the whole batch's statistics and computes
 * its input's gradient from the whole batch's sums (kern_bn_sync.c); its gamma and beta grads stay
 * this part's (summed with the other gradients). The calls every part makes, in the same order:
 * per batch norm in forward order two, in backward order one. The training plan is made again
 * without the fused batch-norm ops. fn NULL: local statistics again (the default). */
typedef int (*baton_nn_sum_fn)(double *v, int n, void *ctx, baton_err *err);
int baton_nn_model_set_bn_sync(baton_nn_model *m, baton_nn_sum_fn fn, void *ctx, baton_err *err);
/* A part with no image in a step: the same sums with zeros, so the other parts are not left
 * waiting (running statistics updated as theirs are; the batch norms' grads zero). */
int baton_nn_bn_sync_idle(baton_nn_model *m, baton_err *err);
/* forward + loss + backward */
int baton_nn_train_batch(baton_nn_model *m, const float *x, const int32_t *labels, int n, float *loss,
                         int *correct, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * Threads and denormals
 * --------------------------------------------------------------------------------------------- */
/* Flush denormal floats to zero (FTZ and DAZ) on the calling thread and the fast kernels' OpenMP
 * team (1), or restore IEEE denormals (0): what TensorFlow's CPU kernels do. A training loop whose
 * Adam moments decay into denormals (dead units' second moments) otherwise spends most of its time
 * in the processor's slow path for them. Results stay a function of the inputs and thread count. */
void baton_nn_flush_denormals(int on);
/* The fast kernels' thread count (OpenMP's team size for later parallel regions; OMP_NUM_THREADS is
 * read only when the runtime starts): n >= 1 sets it. */
void baton_nn_set_threads(int n);
int baton_nn_threads(void);                   /* the calling thread's team size for the next parallel region */
void baton_nn_flush_denormals_here(int on);   /* the calling thread only (cheap: no parallel region) */
int baton_nn_denormals_flushed(void);         /* 1 when the calling thread flushes them */

/* Optimizers and learning-rate schedules (nn_optim.h) are part of this header too. */
#include "baton/nn_optim.h"

#endif
