/* kern_dnnl.c — the oneDNN fast path: a second kernel table (baton_nn_kernels_dnnl) with the same
 * contract as the reference table, built on oneDNN's C API (CPU engine), and its bfloat16 twin
 * (baton_nn_kernels_dnnl_bf16); which table a run gets (baton_nn_kernels_select). The entries name
 * a primitive by operation and geometry and run it through dnnl_prim.c (the engine, each thread's
 * cache of primitives, their construction and the call), falling back to the reference kernels
 * where oneDNN refuses a geometry; this file allocates nothing but on those fallbacks.
 *
 * Layout: activations whose channel count is a multiple of 16 are blocked, nChw16c (the table's
 * `block` is 16; kern_layout.c converts and pools them), others NCHW; convolution weights stay OIHW
 * and linear weights [out, in] at the boundary (reordered to the primitive's weight format around
 * each call — small arrays). Inner products see [n, features] arrays (the model flattens blocked
 * activations to NCHW order first).
 *
 * Which entries are oneDNN: convolution (forward — also with the ReLU after it as a post-op —,
 * backward data — for some stride-1 geometries as a forward convolution with flipped weights —,
 * backward weights; Winograd or direct by dnnl_prim.c's use_winograd rule; except the forward and
 * backward-data of 3x3 "same" convolutions with 16 or 32 channels, which run on
 * kern_conv_fast.c's direct kernel where the CPU has AVX-512F, the forward then also able to
 * take the following batch norm's statistics), inner product
 * (the same three), relu (forward, backward from the output) and add (binary). Batch normalisation
 * is kern_bn_fast.c's (oneDNN 2.6 has only a slow generic kernel for plain NCHW batch norm, which
 * made it over a third of a resnet training step; the blocked kernels there are as simple). Max
 * pooling is plain C (the max-pool workspace format is part of the table contract — a flat index
 * within the input plane — which oneDNN's opaque workspace is not): kern_pool_fast.c's entries.
 * Global average pooling is plain C too (a tiny share of the work).
 *
 * The bfloat16 table (baton_nn_kernels_dnnl_bf16, the same entries but for convolutions and inner
 * products): those run on oneDNN's bf16 kernels with f32 sums and f32 outputs. Their weights are
 * the caller's bfloat16 copy (weights_bf16: the model's, written by the optimizer), reordered into
 * the primitive's layout per call but never converted; activations and gradients are converted
 * per call — a convolution's input once, in forward, into a bfloat16 copy its backward-weights
 * reads again (dnnl_prim.c's saved copies: the same bits as converting it there), d(output) once
 * for both backward passes. Its activations are channels-last (nhwc, the table's channels_last;
 * the layout oneDNN's AMX convolutions read and write — fixed to nChw16c, oneDNN 2.6 runs its much
 * slower AVX512-BF16 kernels): a convolution's f32 output needs no reorder and its input only a
 * conversion to bfloat16. Batch norm and its fusions (kern_bn_fast.c's _cl entries), pooling and
 * the layout conversions have channels-last variants; the elementwise entries are the f32 table's.
 * Where a batch norm alone reads a convolution's output, and a convolution alone reads a batch
 * norm's ReLU output, those activations are bfloat16 (fuse.c picks the slots), and so is d(the
 * convolution's output) where both its backward passes run on the bfloat16 kernels: the
 * convolutions read and write them as they are (conv_fwd16, conv_bwd16: the primitive rounds its
 * f32 sums as it stores them), kern_bn_fast.c's channels-last kernels widen and round as they read
 * and write.
 * No Winograd, no hand-written direct kernel and no statistics-taking fusion in bf16. The
 * geometries where the bf16 kernels measured slower (one input channel, stride 2, 1x1:
 * bf16_as_f32) run on oneDNN's f32 kernels (on channels-last activations where a side has more
 * than 16 channels, except from an NCHW input: dnnl_prim.c) with the bfloat16 weights widened —
 * the same weight values, f32 activations.
 *
 * Errors: the table entries cannot return a status. If oneDNN cannot create or run a primitive for
 * some geometry, that call (and later ones with the same geometry) falls back to the reference
 * kernel, with one warning per operation logged through baton_log (the convolution with a ReLU
 * post-op: to the plain convolution and the ReLU, so the fused entry takes every geometry). The
 * optional entries' predicates (nn.h) are those of the hand-written kernels behind them. Creation
 * of the table itself fails (NULL and a message) when the engine or stream cannot be created.
 * Nothing here aborts. */
#include "dnnl_prim.h"

#include <oneapi/dnnl/dnnl_debug.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P(p) ((void *)(uintptr_t)(p))

static void to_plain(int cl, int n, int c, int h, int w, const float *x, float *y)
{
    (cl ? nn_cl_to_plain : nn_blk_to_plain)(n, c, h, w, x, y);
}

static void from_plain(int cl, int n, int c, int h, int w, const float *x, float *y)
{
    (cl ? nn_cl_from_plain : nn_blk_from_plain)(n, c, h, w, x, y);
}

/* The reference convolution on the table's layout: the rare path where oneDNN refused a geometry.
 * Blocked (cl: channels-last) arguments get NCHW copies allocated for the call (this path is already a
 * slow one). */
static void ref_conv(int cl, int op, const baton_nn_conv_geom *g, const float *a, const float *w, const float *b,
                     float *out, float *db)
{
    const int bx = nn_is_blocked(NN_BLOCK, g->ic), by = nn_is_blocked(NN_BLOCK, g->oc);
    const size_t nx = (size_t)g->n * g->ic * g->ih * g->iw, ny = (size_t)g->n * g->oc * g->oh * g->ow;
    float *px = bx ? malloc(sizeof(float) * nx) : NULL, *py = by ? malloc(sizeof(float) * ny) : NULL;
    if ((bx && !px) || (by && !py)) {
        baton_log(BATON_LOG_ERROR, "nn: out of memory in the reference fallback of %s", nn_prim_op_name[op]);
        memset(out, 0, sizeof(float) * (op == OP_CONV_FWD ? ny : op == OP_CONV_BWD_DATA ? nx
                                                               : (size_t)g->oc * g->ic * g->kh * g->kw));
        free(px);
        free(py);
        return;
    }
    switch (op) {
    case OP_CONV_FWD:      /* a = x; out = y */
        if (bx) to_plain(cl, g->n, g->ic, g->ih, g->iw, a, px);
        nn_ref_conv_fwd(g, bx ? px : a, w, b, by ? py : out);
        if (by) from_plain(cl, g->n, g->oc, g->oh, g->ow, py, out);
        break;
    case OP_CONV_BWD_DATA: /* a = dy; out = dx */
        if (by) to_plain(cl, g->n, g->oc, g->oh, g->ow, a, py);
        nn_ref_conv_bwd_data(g, by ? py : a, w, bx ? px : out);
        if (bx) from_plain(cl, g->n, g->ic, g->ih, g->iw, px, out);
        break;
    default:               /* a = x, w = dy; out = dw */
        if (bx) to_plain(cl, g->n, g->ic, g->ih, g->iw, a, px);
        if (by) to_plain(cl, g->n, g->oc, g->oh, g->ow, w, py);
        nn_ref_conv_bwd_weights(g, bx ? px : a, by ? py : w, out, db);
        break;
    }
    free(px);
    free(py);
}

/* The reference fallback's f32 weights for a bf16 table's call: its bfloat16 weights (count of
 * them) widened into a buffer allocated for the call (freed by the caller); NULL, logged, when out
 * of memory (the caller then writes zeros). */
static float *widened(const float *w16, size_t count, const char *op)
{
    float *w = malloc(sizeof(float) * (count ? count : 1));
    if (w) nn_bf16_widen(count, (const uint16_t *)(const void *)w16, w);
    else baton_log(BATON_LOG_ERROR, "nn: out of memory in the reference fallback of %s", op);
    return w;
}

/* ref_conv for a forward or backward-data call whose weights are bf16 (bf16 = 1) or f32 (0, or 2:
 * the bf16 table's call on the f32 kernels, channels-last) */
static void ref_conv_w(int bf16, int op, const baton_nn_conv_geom *g, const float *a, const float *w,
                       const float *b, float *out)
{
    if (bf16 != 1) {
        ref_conv(bf16, op, g, a, w, b, out, NULL);
        return;
    }
    float *w32 = widened(w, (size_t)g->oc * g->ic * g->kh * g->kw, nn_prim_op_name[op]);
    if (w32) ref_conv(1, op, g, a, w32, b, out, NULL);
    else memset(out, 0, sizeof(float) * (op == OP_CONV_FWD ? (size_t)g->n * g->oc * g->oh * g->ow
                                                           : (size_t)g->n * g->ic * g->ih * g->iw));
    free(w32);
}

/* kern_conv_fast.c's direct kernel where it is usable: y = conv(x) (+ b) (then max(0, .)); with
 * flip, the backward-data dx = conv(dy, flipped w) (stride 1, padding 1 both ways). 0: not usable,
 * nothing written. */
static int fast_conv(const baton_nn_conv_geom *g, const float *in, const float *w, const float *b, int relu,
                     int flip, float *out)
{
    if (!nn_fast_conv3_usable(g)) return 0;
    float wp[NN_FAST_CONV_PACK_MAX];
    nn_fast_conv3_pack(g, w, flip, wp);
    nn_fast_conv3_run(g->n, flip ? g->oc : g->ic, flip ? g->ic : g->oc, g->oh, g->ow, in, wp, b, relu, out, NULL,
                      NULL);
    return 1;
}

/* The convolutions and inner products, one body each for both tables: bf16 = 1 runs oneDNN's
 * bfloat16 kernels (AVX512-BF16; f32 arrays at the boundary, the inputs rounded to bfloat16 per
 * call, sums and outputs f32: the key's KEY_BF16 flag), 0 the f32 ones and, where they are
 * usable, kern_conv_fast.c's direct kernels. The tables' d_* and b_* entries below name them. */
static pkey with_bf16(pkey k, int bf16)
{
    k.v[KEY_BF16] = bf16;
    return k;
}

/* Where the bf16 table runs a convolution on the f32 kernels instead: the geometries whose bf16
 * kernels measured slower than the f32 ones on the AMX machine (bench/RESULTS.md §18, CPU time per
 * call in a resnet20 step) — the first layer (one input channel) and the stride-2 and 1x1
 * convolutions of the downsampling blocks, too little work per call for AMX to win back its
 * conversions. Backward-weights reads no weights, so it takes every such geometry; forward and
 * backward-data widen the bfloat16 weights on the stack (exactly: the same values the bf16 kernel
 * multiplies by), so they take those whose weights fit. A fixed rule of the geometry, so every
 * process chooses alike (a resumed run reproduces an uninterrupted one). */
#define WIDEN_MAX 4608   /* 32x16x3x3: floats of widened weights on the stack */

static int bf16_slower(const baton_nn_conv_geom *g) { return g->ic < 16 || g->stride != 1 || g->kh == 1; }

static int bf16_as_f32(const baton_nn_conv_geom *g, int reads_w)
{
    return bf16_slower(g) && (!reads_w || (size_t)g->oc * g->ic * g->kh * g->kw <= WIDEN_MAX);
}

static void conv_bwd_data(int bf16, const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx);

/* The name of a bf16 convolution's input as forward saves it in bfloat16 (nn_prim_save) and its
 * backward-weights reads it back (nn_prim_saved): the geometry (whatever the bias or post-op). */
static pkey save_name(const baton_nn_conv_geom *g) { return with_bf16(nn_prim_conv_key(OP_CONV_FWD, g, 0), 1); }

/* run forward key k (bf16) on p = {x, w, y, b}, x converted into its saved copy first */
static int fwd_saving(const pkey *k, const baton_nn_conv_geom *g, void *const *p)
{
    const pkey nm = save_name(g);
    const void *st[4] = {nn_prim_save(k, 0, p[0], &nm), NULL, NULL, NULL};
    return nn_prim_dispatch_copies(k, p, st);
}

static void conv_fwd(int bf16, const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{
    if (bf16 == 1 && bf16_as_f32(g, 1)) {
        float w32[WIDEN_MAX];
        nn_bf16_widen((size_t)g->oc * g->ic * g->kh * g->kw, (const uint16_t *)(const void *)w, w32);
        conv_fwd(2, g, x, w32, b, y);
        return;
    }
    if (!bf16 && fast_conv(g, x, w, b, 0, 0, y)) return;
    pkey k = with_bf16(nn_prim_conv_key(OP_CONV_FWD, g, b != NULL), bf16);
    void *p[4] = {P(x), P(w), y, P(b)};
    if (!(bf16 == 1 ? fwd_saving(&k, g, p) : nn_prim_dispatch(&k, p))) ref_conv_w(bf16, OP_CONV_FWD, g, x, w, b, y);
}

static void d_relu_fwd(size_t count, const float *x, float *y);

/* y = max(0, conv(x)): the ReLU as the convolution's post-op (the model's conv + ReLU pair in
 * training). Where oneDNN refuses the post-op for a geometry: conv_fwd, then the ReLU in place —
 * the same values, so the entry takes every geometry. */
static int conv_relu_fwd(int bf16, const baton_nn_conv_geom *g, const float *x, const float *w, const float *b,
                         float *y)
{
    if (bf16 == 1 && bf16_as_f32(g, 1)) {
        float w32[WIDEN_MAX];
        nn_bf16_widen((size_t)g->oc * g->ic * g->kh * g->kw, (const uint16_t *)(const void *)w, w32);
        return conv_relu_fwd(2, g, x, w32, b, y);
    }
    if (!bf16 && fast_conv(g, x, w, b, 1, 0, y)) return 1;
    pkey k = with_bf16(nn_prim_conv_key(OP_CONV_FWD, g, b != NULL), bf16);
    k.v[13] = 1;
    void *p[4] = {P(x), P(w), y, P(b)};
    if (!(bf16 == 1 ? fwd_saving(&k, g, p) : nn_prim_dispatch(&k, p))) {
        conv_fwd(bf16, g, x, w, b, y);
        d_relu_fwd((size_t)g->n * g->oc * g->oh * g->ow, y, y);
    }
    return 1;
}

/* Backward-data of a stride-1 convolution is a forward convolution: dx = conv(dy, w'),
 * w'[i][o][a][b] = w[o][i][K-1-a][K-1-b], padding K-1-pad. Used where oneDNN's forward kernel
 * measured faster than its backward-data one, "same" padding:
 * - f32: 16 channels in and out (one channel block; resnet's first stage) — 5-7 % per call (min of
 *   30, bench/RESULTS.md §4f). At 32 and 64 channels the two are equal, and for lenet's conv2
 *   (32 -> 64, no padding) the forward form was slower, so those keep backward-data.
 * - bf16 (the bfloat16 kernels' geometries, b_conv16_ok): oneDNN 2.6's AMX backward-data took
 *   1.9-2.2x its AMX forward per call at 16, 32 and 64 channels (resnet20, two threads,
 *   bench/RESULTS.md §18g) — its forward is brgemm-based, its backward-data an older kernel.
 * The weights are flipped on the stack per call (at most FLIP_MAX values; bf16: FLIP16_MAX). */
#define FLIP_MAX (16 * 16 * 9)
#define FLIP16_MAX (64 * 64 * 9)

static int bwd_data_by_fwd(const baton_nn_conv_geom *g, int bf16)
{
    return g->stride == 1 && g->kh == g->kw && 2 * g->pad == g->kh - 1 &&
           (bf16 ? (size_t)g->oc * g->ic * g->kh * g->kw <= FLIP16_MAX
                 : g->ic == 16 && g->oc == 16 && (size_t)g->oc * g->ic * g->kh * g->kw <= FLIP_MAX);
}

/* w' of the comment above into wf (values of size esz: f32 or the bfloat16 copy), and the
 * transposed convolution's geometry */
static baton_nn_conv_geom flip_weights(const baton_nn_conv_geom *g, size_t esz, const void *w, void *wf)
{
    const int K = g->kh;
    for (int o = 0; o < g->oc; o++)
        for (int i = 0; i < g->ic; i++)
            for (int a = 0; a < K; a++)
                for (int b = 0; b < K; b++)
                    memcpy((char *)wf + ((((size_t)i * g->oc + o) * K + a) * K + b) * esz,
                           (const char *)w + ((((size_t)o * g->ic + i) * K + (K - 1 - a)) * K + (K - 1 - b)) * esz,
                           esz);
    const baton_nn_conv_geom t = {.n = g->n, .ic = g->oc, .ih = g->oh, .iw = g->ow, .oc = g->ic, .kh = K,
                                  .kw = K, .stride = 1, .pad = K - 1 - g->pad, .oh = g->ih, .ow = g->iw};
    return t;
}

static int b_conv16_ok(const baton_nn_conv_geom *g);

/* the bf16 table's backward-data in the forward form (bwd_data_by_fwd) on d(output) dy: f32,
 * converted by the primitive or read from its copy dys (NULL: none) where that is in the forward's
 * layout; or bfloat16 (dy16). 0 where it does not apply or oneDNN failed (the caller then runs its
 * backward-data). */
static int b_bwd_data_fwd(const baton_nn_conv_geom *g, int dy16, const void *dy, const void *dys, const float *w,
                          float *dx)
{
    if (!b_conv16_ok(g) || !bwd_data_by_fwd(g, 1)) return 0;
    uint16_t wf[FLIP16_MAX];
    const baton_nn_conv_geom t = flip_weights(g, sizeof(uint16_t), w, wf);
    const pkey k = with_bf16(nn_prim_conv_key(OP_CONV_FWD, &t, 0), 1 | (dy16 ? 4 : 0));
    void *p[4] = {P(dy), wf, dx, NULL};
    const void *st[4] = {dy16 ? NULL : dys, NULL, NULL, NULL};
    return nn_prim_dispatch_copies(&k, p, st);
}

static void conv_bwd_data(int bf16, const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx)
{
    if (bf16 == 1 && bf16_as_f32(g, 1)) {
        float w32[WIDEN_MAX];
        nn_bf16_widen((size_t)g->oc * g->ic * g->kh * g->kw, (const uint16_t *)(const void *)w, w32);
        conv_bwd_data(2, g, dy, w32, dx);
        return;
    }
    if (!bf16 && fast_conv(g, dy, w, NULL, 0, 1, dx)) return;
    if (!bf16 && bwd_data_by_fwd(g, 0)) {
        float wf[FLIP_MAX];
        const baton_nn_conv_geom t = flip_weights(g, sizeof(float), w, wf);
        conv_fwd(0, &t, dy, wf, NULL, dx);
        return;
    }
    if (bf16 == 1 && b_bwd_data_fwd(g, 0, dy, NULL, w, dx)) return;
    pkey k = with_bf16(nn_prim_conv_key(OP_CONV_BWD_DATA, g, 0), bf16);
    void *p[3] = {P(dy), P(w), dx};
    if (!nn_prim_dispatch(&k, p)) ref_conv_w(bf16, OP_CONV_BWD_DATA, g, dy, w, NULL, dx);
}

static void conv_bwd_weights(int bf16, const baton_nn_conv_geom *g, const float *x, const float *dy, float *dw,
                             float *db)
{
    if (bf16 == 1 && bf16_as_f32(g, 0)) bf16 = 2;
    pkey k = with_bf16(nn_prim_conv_key(OP_CONV_BWD_W, g, db != NULL), bf16);
    void *p[4] = {P(x), P(dy), dw, db};
    const pkey nm = save_name(g);
    const void *st[4] = {bf16 == 1 ? nn_prim_saved(&nm, x) : NULL, NULL, NULL, NULL};
    if (!(bf16 == 1 ? nn_prim_dispatch_copies(&k, p, st) : nn_prim_dispatch(&k, p)))
        ref_conv(bf16, OP_CONV_BWD_W, g, x, dy, NULL, dw, db);
}

static pkey ip_key(int op, int n, int in, int out, int bias)
{
    const int64_t v[4] = {n, in, out, bias};
    return nn_prim_key(op, 4, v);
}

static void linear_fwd(int bf16, int n, int in, int out, const float *x, const float *w, const float *b, float *y)
{
    pkey k = with_bf16(ip_key(OP_IP_FWD, n, in, out, b != NULL), bf16);
    void *p[4] = {P(x), P(w), y, P(b)};
    if (nn_prim_dispatch(&k, p)) return;
    float *w32 = bf16 ? widened(w, (size_t)in * out, nn_prim_op_name[OP_IP_FWD]) : NULL;
    if (!bf16 || w32) nn_ref_linear_fwd(n, in, out, x, bf16 ? w32 : w, b, y);
    else memset(y, 0, sizeof(float) * (size_t)n * out);
    free(w32);
}

static void linear_bwd_data(int bf16, int n, int in, int out, const float *dy, const float *w, float *dx)
{
    pkey k = with_bf16(ip_key(OP_IP_BWD_DATA, n, in, out, 0), bf16);
    void *p[3] = {P(dy), P(w), dx};
    if (nn_prim_dispatch(&k, p)) return;
    float *w32 = bf16 ? widened(w, (size_t)in * out, nn_prim_op_name[OP_IP_BWD_DATA]) : NULL;
    if (!bf16 || w32) nn_ref_linear_bwd_data(n, in, out, dy, bf16 ? w32 : w, dx);
    else memset(dx, 0, sizeof(float) * (size_t)n * in);
    free(w32);
}

static void linear_bwd_weights(int bf16, int n, int in, int out, const float *x, const float *dy, float *dw,
                               float *db)
{
    pkey k = with_bf16(ip_key(OP_IP_BWD_W, n, in, out, db != NULL), bf16);
    void *p[4] = {P(x), P(dy), dw, db};
    if (!nn_prim_dispatch(&k, p)) nn_ref_linear_bwd_weights(n, in, out, x, dy, dw, db);
}

/* both backward passes (the bf16 table's conv_bwd): dy converted to bfloat16 once, for the
 * weights' pass and then the data's; the same calls, so the same bits, as the two entries */
static void b_conv_bwd(const baton_nn_conv_geom *g, const float *x, const float *dy, const float *w, float *dw,
                       float *db, float *dx)
{
    const pkey kw = with_bf16(nn_prim_conv_key(OP_CONV_BWD_W, g, db != NULL), 1);
    const pkey kd = with_bf16(nn_prim_conv_key(OP_CONV_BWD_DATA, g, 0), 1);
    const void *dy16 = dx && !bf16_as_f32(g, 0) && !bf16_as_f32(g, 1) ? nn_prim_stage(&kw, 1, dy) : NULL;
    if (!dy16) {
        conv_bwd_weights(1, g, x, dy, dw, db);
        if (dx) conv_bwd_data(1, g, dy, w, dx);
        return;
    }
    void *pw[4] = {P(x), P(dy), dw, db};
    const pkey nm = save_name(g);
    const void *sw[4] = {nn_prim_saved(&nm, x), dy16, NULL, NULL};
    if (!nn_prim_dispatch_copies(&kw, pw, sw)) ref_conv(1, OP_CONV_BWD_W, g, x, dy, NULL, dw, db);
    if (b_bwd_data_fwd(g, 0, dy, dy16, w, dx)) return;
    void *pd[3] = {P(dy), P(w), dx};
    if (!nn_prim_dispatch_staged(&kd, pd, 0, dy16)) ref_conv_w(1, OP_CONV_BWD_DATA, g, dy, w, NULL, dx);
}

/* The bf16 table's convolutions on bfloat16 activations (conv_fwd16, conv_bwd_x16; conv16_ok):
 * those it runs on the bfloat16 kernels (not bf16_as_f32) between channels-last activations of
 * more than one pixel. Forward: the primitive reads x in bfloat16 as it is (KEY_BF16 | 4; no copy
 * to save: backward-weights reads x itself) or converts and saves it as conv_fwd does, and rounds
 * its f32 sums as it stores y (| 2). The reference fallbacks (buffers allocated for the call) widen
 * x and round conv_fwd's f32 output. */
static int b_conv16_ok(const baton_nn_conv_geom *g)
{
    return !bf16_as_f32(g, 1) && nn_is_blocked(NN_BLOCK, g->ic) && nn_is_blocked(NN_BLOCK, g->oc) &&
           g->ih * g->iw > 1 && g->oh * g->ow > 1;
}

/* count bfloat16 values widened into a buffer allocated for the call (NULL, logged, when out of
 * memory) */
static float *widened16(const void *p, size_t count)
{
    float *t = malloc(sizeof(float) * (count ? count : 1));
    if (t) nn_bf16_widen(count, p, t);
    else baton_log(BATON_LOG_ERROR, "nn: out of memory in the reference fallback of a bfloat16 convolution");
    return t;
}
#define widened_x(g, x) widened16(x, (size_t)(g)->n * (g)->ic * (g)->ih * (g)->iw)

static int b_conv_fwd16(const baton_nn_conv_geom *g, int x16, const void *x, const float *w, const float *b, int y16,
                        void *y)
{
    if (!b_conv16_ok(g)) return 0;
    const pkey k = with_bf16(nn_prim_conv_key(OP_CONV_FWD, g, b != NULL), 1 | (y16 ? 2 : 0) | (x16 ? 4 : 0));
    void *p[4] = {P(x), P(w), y, P(b)};
    if (x16 ? nn_prim_dispatch(&k, p) : fwd_saving(&k, g, p)) return 1;
    const size_t cnt = (size_t)g->n * g->oc * g->oh * g->ow;
    float *xw = x16 ? widened_x(g, x) : NULL, *t = y16 ? malloc(sizeof(float) * cnt) : y;
    if ((x16 && !xw) || !t) {
        if (y16) free(t);
        free(xw);
        return 0;
    }
    conv_fwd(1, g, x16 ? xw : x, w, b, t);
    if (y16) nn_bf16_round(cnt, t, y), free(t);
    free(xw);
    return 1;
}

/* d(output) in bfloat16 too: both backward passes on the bfloat16 kernels */
static int b_conv_dy16_ok(const baton_nn_conv_geom *g) { return b_conv16_ok(g) && !bf16_as_f32(g, 0); }

/* the reference of b_conv_bwd16's passes on x and dy widened where they are bfloat16; 0 when out
 * of memory */
static int bwd16_ref(const baton_nn_conv_geom *g, int x16, const void *x, int dy16, const void *dy, const float *w,
                     float *dw, float *db, float *dx)
{
    float *xw = x16 ? widened_x(g, x) : NULL;
    float *dyw = dy16 ? widened16(dy, (size_t)g->n * g->oc * g->oh * g->ow) : NULL;
    const int ok = (!x16 || xw) && (!dy16 || dyw);
    if (ok && dw) ref_conv(1, OP_CONV_BWD_W, g, x16 ? xw : x, dy16 ? dyw : dy, NULL, dw, db);
    if (ok && dx) ref_conv_w(1, OP_CONV_BWD_DATA, g, dy16 ? dyw : dy, w, NULL, dx);
    free(xw), free(dyw);
    return ok;
}

/* both backward passes as b_conv_bwd, with x (| 4) and / or dy (| 2) in bfloat16 read as they are:
 * no saved copy of x needed, no conversion of dy */
static int b_conv_bwd16(const baton_nn_conv_geom *g, int x16, const void *x, int dy16, const void *dy, const float *w,
                        float *dw, float *db, float *dx)
{
    if (!b_conv16_ok(g) || (dy16 && !b_conv_dy16_ok(g))) return 0;
    if (!x16 && !dy16) {
        b_conv_bwd(g, x, dy, w, dw, db, dx);
        return 1;
    }
    if (bf16_as_f32(g, 0)) {   /* x16 alone, backward-weights on the f32 kernels (stride 2): x widened */
        float *xw = widened_x(g, x);
        if (xw) b_conv_bwd(g, xw, dy, w, dw, db, dx);
        free(xw);
        return xw != NULL;
    }
    const pkey kw = with_bf16(nn_prim_conv_key(OP_CONV_BWD_W, g, db != NULL), 1 | (dy16 ? 2 : 0) | (x16 ? 4 : 0));
    const pkey kd = with_bf16(nn_prim_conv_key(OP_CONV_BWD_DATA, g, 0), 1 | (dy16 ? 2 : 0));
    const void *dys = !dy16 && dx ? nn_prim_stage(&kw, 1, dy) : NULL;   /* f32 dy: converted once */
    const pkey nm = save_name(g);
    void *pw[4] = {P(x), P(dy), dw, db};
    const void *sw[4] = {x16 ? NULL : nn_prim_saved(&nm, x), dys, NULL, NULL};
    if (!nn_prim_dispatch_copies(&kw, pw, sw) && !bwd16_ref(g, x16, x, dy16, dy, w, dw, db, NULL)) return 0;
    if (!dx || b_bwd_data_fwd(g, dy16, dy, dys, w, dx)) return 1;
    void *pd[3] = {P(dy), P(w), dx};
    if (!(dys ? nn_prim_dispatch_staged(&kd, pd, 0, dys) : nn_prim_dispatch(&kd, pd)))
        return bwd16_ref(g, x16, x, dy16, dy, w, NULL, NULL, dx);
    return 1;
}

/* the two tables' entries */
#define CG const baton_nn_conv_geom *g
static void d_conv_fwd(CG, const float *x, const float *w, const float *b, float *y) { conv_fwd(0, g, x, w, b, y); }
static void b_conv_fwd(CG, const float *x, const float *w, const float *b, float *y) { conv_fwd(1, g, x, w, b, y); }
static int d_conv_relu_fwd(CG, const float *x, const float *w, const float *b, float *y)
{
    return conv_relu_fwd(0, g, x, w, b, y);
}
static int b_conv_relu_fwd(CG, const float *x, const float *w, const float *b, float *y)
{
    return conv_relu_fwd(1, g, x, w, b, y);
}
static void d_conv_bwd_data(CG, const float *dy, const float *w, float *dx) { conv_bwd_data(0, g, dy, w, dx); }
static void b_conv_bwd_data(CG, const float *dy, const float *w, float *dx) { conv_bwd_data(1, g, dy, w, dx); }
static void d_conv_bwd_weights(CG, const float *x, const float *dy, float *dw, float *db)
{
    conv_bwd_weights(0, g, x, dy, dw, db);
}
static void b_conv_bwd_weights(CG, const float *x, const float *dy, float *dw, float *db)
{
    conv_bwd_weights(1, g, x, dy, dw, db);
}
#undef CG
#define IP int n, int in, int out
static void d_linear_fwd(IP, const float *x, const float *w, const float *b, float *y)
{
    linear_fwd(0, n, in, out, x, w, b, y);
}
static void b_linear_fwd(IP, const float *x, const float *w, const float *b, float *y)
{
    linear_fwd(1, n, in, out, x, w, b, y);
}
static void d_linear_bwd_data(IP, const float *dy, const float *w, float *dx)
{
    linear_bwd_data(0, n, in, out, dy, w, dx);
}
static void b_linear_bwd_data(IP, const float *dy, const float *w, float *dx)
{
    linear_bwd_data(1, n, in, out, dy, w, dx);
}
static void d_linear_bwd_weights(IP, const float *x, const float *dy, float *dw, float *db)
{
    linear_bwd_weights(0, n, in, out, x, dy, dw, db);
}
static void b_linear_bwd_weights(IP, const float *x, const float *dy, float *dw, float *db)
{
    linear_bwd_weights(1, n, in, out, x, dy, dw, db);
}
#undef IP

static pkey elt_key(int op, size_t count)
{
    const int64_t v[1] = {(int64_t)count};
    return nn_prim_key(op, 1, v);
}

static void d_relu_fwd(size_t count, const float *x, float *y)
{
    if (count == 0) return;
    pkey k = elt_key(OP_RELU_FWD, count);
    void *p[2] = {P(x), y};
    if (!nn_prim_dispatch(&k, p)) nn_ref_relu_fwd(count, x, y);
}

static void d_relu_bwd(size_t count, const float *y, const float *dy, float *dx)
{
    if (count == 0) return;
    pkey k = elt_key(OP_RELU_BWD, count);
    void *p[3] = {P(y), P(dy), dx};
    if (!nn_prim_dispatch(&k, p)) nn_ref_relu_bwd(count, y, dy, dx);
}

static void d_add(size_t count, const float *a, const float *b, float *y)
{
    if (count == 0) return;
    /* in place only as dst == src0; a + b and b + a are the same float */
    if (y == b && y != a) {
        const float *t = a;
        a = b;
        b = t;
    }
    pkey k = elt_key(OP_ADD, count);
    void *p[3] = {P(a), P(b), y};
    if (!nn_prim_dispatch(&k, p)) nn_ref_add(count, a, b, y);
}

static void d_gap_fwd(int n, int c, int hw, const float *x, float *y)
{
    if (nn_is_blocked(NN_BLOCK, c))
        nn_blk_gap_fwd(n, c, hw, x, y);
    else
        nn_ref_gap_fwd(n, c, hw, x, y);
}

static void d_gap_bwd(int n, int c, int hw, const float *dy, float *dx)
{
    if (nn_is_blocked(NN_BLOCK, c))
        nn_blk_gap_bwd(n, c, hw, dy, dx);
    else
        nn_ref_gap_bwd(n, c, hw, dy, dx);
}

static const baton_nn_kernels dnnl_table = {
    .name = "dnnl",
    .block = NN_BLOCK,
    .to_plain = nn_blk_to_plain,
    .from_plain = nn_blk_from_plain,
    .conv_fwd = d_conv_fwd,
    .conv_relu_fwd = d_conv_relu_fwd,
    .conv_bn_stats_fwd = nn_fast_conv3_bn_fwd,
    .conv_bn_stats_ok = nn_fast_conv3_bn_ok,
    .conv_bwd_data = d_conv_bwd_data,
    .conv_bwd_weights = d_conv_bwd_weights,
    .linear_fwd = d_linear_fwd,
    .linear_bwd_data = d_linear_bwd_data,
    .linear_bwd_weights = d_linear_bwd_weights,
    .bn_fwd_train = nn_fast_bn_fwd_train,
    .bn_fwd_infer = nn_fast_bn_fwd_infer,
    .bn_bwd = nn_fast_bn_bwd,
    .bn_relu_fwd_train = nn_fast_bn_relu_fwd_train,
    .bn_relu_bwd = nn_fast_bn_relu_bwd,
    .bn_fused_ok = nn_fast_bn_stats_ok,
    .bn_add_relu_fwd_train = nn_fast_bn_add_relu_fwd_train,
    .bn_apply_train = nn_fast_bn_apply_train,
    .bn_add_relu_bwd = nn_fast_bn_add_relu_bwd,
    .add_relu = nn_fast_add_relu,
    .relu_fwd = d_relu_fwd,
    .relu_bwd = d_relu_bwd,
    .relu_bwd_add = nn_fast_relu_bwd_add,
    .maxpool_fwd = nn_fast_maxpool_fwd,
    .maxpool_bwd = nn_fast_maxpool_bwd,
    .maxpool_relu_bwd = nn_fast_maxpool_relu_bwd,
    .maxpool_relu_ok = nn_fast_maxpool_relu_ok,
    .gap_fwd = d_gap_fwd,
    .gap_bwd = d_gap_bwd,
    .add = d_add,
};

static const char *isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "SSE4.1";
    case dnnl_cpu_isa_avx: return "AVX";
    case dnnl_cpu_isa_avx2: return "AVX2";
    case dnnl_cpu_isa_avx512_mic: case dnnl_cpu_isa_avx512_mic_4ops: return "AVX-512 (Xeon Phi)";
    case dnnl_cpu_isa_avx512_core: return "AVX-512";
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX-512 with VNNI";
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX-512 with AVX512-BF16";
    case dnnl_cpu_isa_avx512_core_amx: return "AVX-512 with AMX";
    case dnnl_cpu_isa_avx2_vnni: return "AVX2 with VNNI";
    default: return "another instruction set";
    }
}

static baton_nn_kernels bf16_table;   /* dnnl_table with the bfloat16 convolutions and inner products */
static int bf16_ok;

static struct {
    pthread_once_t once;
    int ready;
    char why[256];
} S = {.once = PTHREAD_ONCE_INIT};

static void init_once(void)
{
    if (nn_prim_init(S.why, sizeof S.why)) return;
    S.ready = 1;
    bf16_table = dnnl_table;
    bf16_table.name = "dnnl-bf16";
    bf16_table.weights_bf16 = 1;
    bf16_table.conv_fwd = b_conv_fwd;
    bf16_table.conv_relu_fwd = b_conv_relu_fwd;
    bf16_table.conv_bwd_data = b_conv_bwd_data;
    bf16_table.conv_bwd_weights = b_conv_bwd_weights;
    bf16_table.conv_bwd = b_conv_bwd;
    /* activations in bfloat16 between convolutions and batch norms (fuse.c) */
    bf16_table.conv_fwd16 = b_conv_fwd16;
    bf16_table.conv_bwd16 = b_conv_bwd16;
    bf16_table.conv16_ok = b_conv16_ok;
    bf16_table.conv_dy16_ok = b_conv_dy16_ok;
    bf16_table.bn16_fwd_train = nn_fast_bn16_fwd_train;
    bf16_table.bn16_fwd_infer = nn_fast_bn16_fwd_infer;
    bf16_table.bn_x16_bwd = nn_fast_bn_x16_bwd;
    bf16_table.relu_fwd_y16 = nn_fast_relu_fwd_y16;
    bf16_table.relu_bwd_y16 = nn_fast_relu_bwd_y16;
    bf16_table.linear_fwd = b_linear_fwd;
    bf16_table.linear_bwd_data = b_linear_bwd_data;
    bf16_table.linear_bwd_weights = b_linear_bwd_weights;
    bf16_table.conv_bn_stats_fwd = NULL;   /* that fused entry is the hand-written f32 kernel's */
    bf16_table.conv_bn_stats_ok = NULL;
    /* channels-last activations: the layout entries, batch norm, pooling on it (the elementwise
     * entries take any layout) */
    bf16_table.channels_last = 1;
    bf16_table.to_plain = nn_cl_to_plain;
    bf16_table.from_plain = nn_cl_from_plain;
    bf16_table.bn_fwd_train = nn_fast_bn_fwd_train_cl;
    bf16_table.bn_fwd_infer = nn_fast_bn_fwd_infer_cl;
    bf16_table.bn_bwd = nn_fast_bn_bwd_cl;
    bf16_table.bn_relu_fwd_train = nn_fast_bn_relu_fwd_train_cl;
    bf16_table.bn_relu_bwd = nn_fast_bn_relu_bwd_cl;
    bf16_table.bn_add_relu_fwd_train = nn_fast_bn_add_relu_fwd_train_cl;
    bf16_table.bn_apply_train = nn_fast_bn_apply_train_cl;
    bf16_table.bn_add_relu_bwd = nn_fast_bn_add_relu_bwd_cl;
    bf16_table.maxpool_fwd = nn_cl_maxpool_fwd;
    bf16_table.maxpool_bwd = nn_cl_maxpool_bwd;
    bf16_table.maxpool_relu_bwd = nn_cl_maxpool_relu_bwd;
    bf16_table.maxpool_relu_ok = nn_cl_maxpool_relu_ok;
    bf16_table.gap_fwd = nn_cl_gap_fwd;
    bf16_table.gap_bwd = nn_cl_gap_bwd;
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    bf16_ok = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

const baton_nn_kernels *baton_nn_kernels_dnnl(baton_err *err)
{
    pthread_once(&S.once, init_once);
    if (!S.ready) {
        baton_err_set(err, BATON_ERR_FORMAT, "nn: oneDNN fast path unavailable: %s", S.why);
        return NULL;
    }
    return &dnnl_table;
}

const baton_nn_kernels *baton_nn_kernels_dnnl_bf16(baton_err *err)
{
    if (!baton_nn_kernels_dnnl(err)) return NULL;
    if (!bf16_ok) {
        const char *lim = getenv("ONEDNN_MAX_CPU_ISA") ? "ONEDNN_MAX_CPU_ISA"
                          : getenv("DNNL_MAX_CPU_ISA") ? "DNNL_MAX_CPU_ISA" : NULL;
        char why[128] = "";
        if (lim) snprintf(why, sizeof why, ", limited by %s=%s", lim, getenv(lim));
        baton_err_set(err, BATON_ERR_ARG,
                      "nn: bfloat16 kernels need AVX512-BF16 or AMX, and oneDNN sees %s on this CPU%s; "
                      "emulated they would be slower than f32: use f32 here",
                      isa_name(dnnl_get_effective_cpu_isa()), why);
        return NULL;
    }
    return &bf16_table;
}

int baton_nn_precision_parse(const char *s)
{
    return !s ? -1 : !strcmp(s, "f32") ? BATON_NN_PRECISION_F32 : !strcmp(s, "bf16") ? BATON_NN_PRECISION_BF16 : -1;
}

const char *baton_nn_precision_name(int precision)
{
    return precision == BATON_NN_PRECISION_BF16 ? "bf16" : "f32";
}

const baton_nn_kernels *baton_nn_kernels_select(int reference, int precision, baton_err *err)
{
    if (precision == BATON_NN_PRECISION_BF16) {
        if (reference) {
            baton_err_set(err, BATON_ERR_ARG, "nn: bfloat16 runs on oneDNN's kernels, not on the reference ones");
            return NULL;
        }
        const baton_nn_kernels *k = baton_nn_kernels_dnnl_bf16(err);
        const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        if (k && (isa & dnnl_cpu_isa_avx512_core_amx) != dnnl_cpu_isa_avx512_core_amx)
            baton_log(BATON_LOG_WARN, "bfloat16 without AMX (oneDNN sees %s): resnet20 trained at 0.6x its f32 speed "
                      "so on the benchmark machine (docs/training.md); f32 is likely faster here", isa_name(isa));
        return k;
    }
    const baton_nn_kernels *k = NULL;
    if (!reference) {
        baton_err kerr = {0};
        if (!(k = baton_nn_kernels_dnnl(&kerr)))
            baton_log(BATON_LOG_WARN, "oneDNN unavailable (%s); using the reference kernels", kerr.msg);
    }
    return k ? k : baton_nn_kernels_reference();
}

dnnl_engine_t nn_dnnl_engine(baton_err *err)
{
    return baton_nn_kernels_dnnl(err) ? nn_prim_engine() : NULL;
}
