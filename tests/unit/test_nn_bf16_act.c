/* test_nn_bf16_act.c — activations in bfloat16 in the bf16 table (nn.h's conv_fwd16 ... relu_bwd_y16
 * entries): a convolution's output that only the batch norm after it reads, and a batch norm's ReLU
 * output that only a convolution reads, are stored in bfloat16 and read so.
 *
 *   - Each bfloat16 entry against its plain reference, the float32 entry of the same table on the
 *     inputs widened (exact), its bfloat16 outputs rounded with nn_bf16_round: the same bits.
 *     Batch norm (training forward alone, with its ReLU, with the add and ReLU; evaluation; x, y
 *     or both in bfloat16; the three backwards) on 16, 32, 48 and 64 channels, planes of 7x7 and
 *     14x14, batches of 3 and 8 (two threads' items at 8x64x14x14), statistics and parameter
 *     gradients included, dx in bfloat16 too; the ReLU forward and backward on a count that is not
 *     a multiple of 16; the convolutions (forward with x, y or both in bfloat16, both backward
 *     passes with x, d(output) or both in bfloat16) on resnet20's layers that take them (16->16
 *     28x28, 32->32 14x14, 64->64 7x7, 32->64 stride 2: not d(output), its backward-weights runs
 *     on the f32 kernels), the geometries left to f32 declined (one input channel, 1x1, stride 2
 *     with weights small enough to widen).
 *   - The plan: which slots hold bfloat16 (resnet8: every convolution output a batch norm alone
 *     reads, and every batch norm's ReLU output such a convolution alone reads, where conv16_ok
 *     takes the convolution; the convolution output's gradient where conv_dy16_ok does; the same under synchronised batch norm — test_nn_part checks its
 *     sums on them; none in the f32 table).
 *   - The bfloat16 copies of float32 activations (nn_slot.data16): bn16_fwd_train's copy is its y
 *     rounded; the plan gives one to each float32 ReLU output after a batch norm or an add that a
 *     convolution on the bfloat16 kernels reads (resnet8: two), none to evaluation's ops or under
 *     synchronised batch norm; and two training steps with them give the loss, gradients and
 *     weights of two without them, bit for bit.
 *   - Whole model (resnet8, batch 8, one training step) against the f32 reference, beside the same
 *     step with f32 activations (the bf16 table without these entries): the tolerance of
 *     bfloat16 activations. The loss within 2e-2; the gradients' relative L2 error over all
 *     tensors within 1.25x that of f32 activations + 0.02, and no tensor's above 0.35. Why: a
 *     bfloat16 ReLU output is the value a bf16 convolution rounds its input to anyway (no new
 *     error), and a convolution output rounded once more costs at most 2^-9 of its value, less
 *     than the 2^-8 of each rounded factor, so the error should grow by a fraction, not a
 *     multiple; but batch norm's backward (a difference of nearly equal terms) amplifies any
 *     rounding, so single tensors at initialisation on 8 images are noisy. Measured (this seed):
 *     overall 0.077 against 0.069, largest tensor 0.271 (layers.0.bn1.bias) against 0.244 —
 *     test_nn_bf16's 0.25 per tensor, measured on its own seed, holds there. And the evaluation
 *     logits against f32 activations: within 2e-2 of the logits' scale (measured 5e-4) and not
 *     equal (it did round).
 * On a CPU without AVX512-BF16 the checks are skipped. About 1 s. */
#include "../../src/nn/nn_internal.h"
#include "nn_gradcheck.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const baton_nn_kernels *R, *B, *D;
static baton_rng rng;

static float *vec(size_t n, float lo, float hi)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    if (p) fill_uniform(&rng, p, n, lo, hi);
    return p;
}

#define SAME(what, a, b, cnt)                                                                                         \
    CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)(cnt)) == 0, "n%d c%d hw%d: %s differs from the f32 entry's", n, \
              c, hw, what)

/* one geometry: every bn_x16 entry against the f32 channels-last entry on the widened input */
static void bn_case(int n, int c, int h)
{
    const int hw = h * h;
    const size_t cnt = (size_t)n * c * hw;
    float *x = vec(cnt, -2, 2), *xw = vec(cnt, 0, 0), *dy = vec(cnt, -1, 1), *dy2 = vec(cnt, -1, 1);
    float *res = vec(cnt, -1, 1), *g = vec((size_t)c, 0.5f, 1.5f), *bt = vec((size_t)c, -0.5f, 0.5f);
    float *ya = vec(cnt, 0, 0), *yb = vec(cnt, 0, 0), *da = vec(cnt, 0, 0), *db = vec(cnt, 0, 0);
    float *ga = vec(cnt, 0, 0), *gb = vec(cnt, 0, 0), *yo = vec(cnt, 0, 0);
    uint16_t *x16 = malloc(sizeof(uint16_t) * cnt), *y16 = malloc(sizeof(uint16_t) * cnt);
    uint16_t *r16 = malloc(sizeof(uint16_t) * cnt);
    float sa[4][64], sb[4][64];
    if (!x || !xw || !dy || !dy2 || !res || !g || !bt || !ya || !yb || !da || !db || !ga || !gb || !yo || !x16 ||
        !y16 || !r16) {
        CHECK_MSG(0, "out of memory");
        return;
    }
    nn_bf16_round(cnt, x, x16);
    nn_bf16_widen(cnt, x16, xw);
    CHECK(B->bn_fused_ok(c, hw));
    for (int form = 0; form < 3; form++) {   /* alone, with the ReLU, with the add and the ReLU */
        const float *r = form == 2 ? res : NULL;
        memset(sa, 0, sizeof sa), memset(sb, 0, sizeof sb);
        CHECK(B->bn16_fwd_train(n, c, hw, 1, x16, r, form >= 1, g, bt, 1e-5f, 0, ya, NULL, sa[0], sa[1]) == 1);
        if (form == 0) B->bn_fwd_train(n, c, hw, xw, g, bt, 1e-5f, yb, sb[0], sb[1]);
        else if (form == 1) CHECK(B->bn_relu_fwd_train(n, c, hw, xw, g, bt, 1e-5f, yb, sb[0], sb[1]));
        else CHECK(B->bn_add_relu_fwd_train(n, c, hw, xw, res, g, bt, 1e-5f, yb, sb[0], sb[1]));
        SAME("bn16_fwd_train", ya, yb, cnt);
        SAME("bn16_fwd_train statistics", sa, sb, 2 * 64);
        for (int xs = 0; xs < 2; xs++) {   /* y in bfloat16: the f32 result rounded, x either way */
            CHECK(B->bn16_fwd_train(n, c, hw, xs, xs ? (const void *)x16 : xw, r, form >= 1, g, bt, 1e-5f, 1, y16,
                                    NULL, sa[2], sa[3]) == 1);
            nn_bf16_round(cnt, yb, r16);
            CHECK_MSG(memcmp(y16, r16, sizeof(uint16_t) * cnt) == 0 && memcmp(sa[2], sb[0], sizeof(float) * 128) == 0,
                      "n%d c%d hw%d: bn16_fwd_train's bfloat16 y (x16 %d) is not the f32 entry's rounded", n, c, hw,
                      xs);
            /* y in float32 with its bfloat16 copy (a resnet block's output): both, the same bits */
            memset(yo, 0, sizeof(float) * cnt), memset(y16, 0, sizeof(uint16_t) * cnt);
            CHECK(B->bn16_fwd_train(n, c, hw, xs, xs ? (const void *)x16 : xw, r, form >= 1, g, bt, 1e-5f, 0, yo,
                                    y16, sa[2], sa[3]) == 1);
            CHECK_MSG(memcmp(y16, r16, sizeof(uint16_t) * cnt) == 0 && memcmp(yo, yb, sizeof(float) * cnt) == 0,
                      "n%d c%d hw%d: bn16_fwd_train's y and its bfloat16 copy (x16 %d) are not the f32 entry's y "
                      "and that rounded", n, c, hw, xs);
        }
        if (form == 2) memcpy(yo, ya, sizeof(float) * cnt);   /* the add+ReLU output backward reads */
    }
    CHECK(B->bn16_fwd_infer(n, c, hw, 1, x16, g, bt, sa[0], sa[1], 1e-5f, 0, ya) == 1);
    B->bn_fwd_infer(n, c, hw, xw, g, bt, sa[0], sa[1], 1e-5f, yb);
    SAME("bn16_fwd_infer", ya, yb, cnt);
    CHECK(B->bn16_fwd_infer(n, c, hw, 1, x16, g, bt, sa[0], sa[1], 1e-5f, 1, y16) == 1);
    nn_bf16_round(cnt, yb, r16);
    CHECK_MSG(memcmp(y16, r16, sizeof(uint16_t) * cnt) == 0, "n%d c%d hw%d: bn16_fwd_infer's bfloat16 y", n, c, hw);
    for (int form = 0; form < 3; form++) {
        memset(sa[2], 0, sizeof(float) * 2 * 64), memset(sb[2], 0, sizeof(float) * 2 * 64);
        CHECK(B->bn_x16_bwd(n, c, hw, x16, form == 2 ? yo : NULL, dy, form == 2 ? dy2 : NULL, form >= 1, g,
                            form == 1 ? bt : NULL, sa[0], sa[1], 1e-5f, ga, 0, da, sa[2], sa[3]) == 1);
        if (form == 0) B->bn_bwd(n, c, hw, xw, dy, g, sa[0], sa[1], 1e-5f, db, sb[2], sb[3]);
        else if (form == 1) CHECK(B->bn_relu_bwd(n, c, hw, xw, dy, g, bt, sa[0], sa[1], 1e-5f, db, sb[2], sb[3]));
        else CHECK(B->bn_add_relu_bwd(n, c, hw, xw, yo, dy, dy2, g, sa[0], sa[1], 1e-5f, gb, db, sb[2], sb[3]));
        SAME("bn_x16_bwd dx", da, db, cnt);
        SAME("bn_x16_bwd dgamma/dbeta", sa[2], sb[2], 2 * 64);
        if (form == 2) SAME("bn_x16_bwd g", ga, gb, cnt);
        CHECK(B->bn_x16_bwd(n, c, hw, x16, form == 2 ? yo : NULL, dy, form == 2 ? dy2 : NULL, form >= 1, g,
                            form == 1 ? bt : NULL, sa[0], sa[1], 1e-5f, ga, 1, y16, sa[2], sa[3]) == 1);
        nn_bf16_round(cnt, db, r16);   /* dx in bfloat16: the f32 entry's rounded */
        CHECK_MSG(memcmp(y16, r16, sizeof(uint16_t) * cnt) == 0, "n%d c%d hw%d: bn_x16_bwd's bfloat16 dx (form %d)", n,
                  c, hw, form);
    }
    free(x), free(xw), free(dy), free(dy2), free(res), free(g), free(bt), free(ya), free(yb), free(da), free(db);
    free(ga), free(gb), free(yo), free(x16), free(y16), free(r16);
}

/* the convolution entries on bfloat16 activations against the f32 ones on the widened input (their
 * bfloat16 outputs rounded); want 0: the geometry must be declined */
static void conv_case(int n, int ic, int ih, int oc, int k, int stride, int pad, int want)
{
    const int oh = (ih + 2 * pad - k) / stride + 1;
    const baton_nn_conv_geom g = {n, ic, ih, ih, oc, k, k, stride, pad, oh, oh};
    CHECK_MSG(B->conv16_ok(&g) == want, "%d>%d %dx%d k%d s%d: conv16_ok %d", ic, oc, ih, ih, k, stride, !want);
    if (!want) return;
    const size_t xn = (size_t)n * ic * ih * ih, wn = (size_t)oc * ic * k * k, yn = (size_t)n * oc * oh * oh;
    float *xl = vec(xn, -1, 1), *xw = vec(xn, 0, 0), *w = vec(wn, -0.3f, 0.3f), *b = vec((size_t)oc, -0.1f, 0.1f);
    float *y = vec(yn, 0, 0), *ya = vec(yn, 0, 0), *dy = vec(yn, -1, 1), *dx = vec(xn, 0, 0), *dxa = vec(xn, 0, 0);
    float *dw = vec(wn, 0, 0), *dwa = vec(wn, 0, 0), db[64], dba[64];
    uint16_t *w16 = malloc(sizeof(uint16_t) * wn), *x16 = malloc(sizeof(uint16_t) * xn);
    uint16_t *y16 = malloc(sizeof(uint16_t) * yn), *r16 = malloc(sizeof(uint16_t) * yn);
    if (!xl || !xw || !w || !b || !y || !ya || !dy || !dx || !dxa || !dw || !dwa || !w16 || !x16 || !y16 || !r16) {
        CHECK_MSG(0, "out of memory");
        return;
    }
    nn_bf16_round(wn, w, w16);
    nn_bf16_round(xn, xl, x16);
    nn_bf16_widen(xn, x16, xw);
    const float *wp = (const float *)(const void *)w16;
    B->conv_fwd(&g, xw, wp, b, y);   /* the reference first: see main on the order */
    nn_bf16_round(yn, y, r16);
    for (int xs = 0; xs < 2; xs++) {
        CHECK(B->conv_fwd16(&g, xs, xs ? (const void *)x16 : xw, wp, b, 1, y16) == 1);
        CHECK_MSG(memcmp(y16, r16, sizeof(uint16_t) * yn) == 0, "%d>%d %dx%d k%d s%d: conv_fwd16 (x16 %d, y16 1)",
                  ic, oc, ih, ih, k, stride, xs);
    }
    CHECK(B->conv_fwd16(&g, 1, x16, wp, b, 0, ya) == 1);
    CHECK_MSG(memcmp(ya, y, sizeof(float) * yn) == 0, "%d>%d %dx%d k%d s%d: conv_fwd16 (x16 1, y16 0)", ic, oc, ih,
              ih, k, stride);
    uint16_t *dy16 = malloc(sizeof(uint16_t) * yn);
    if (dy16) nn_bf16_round(yn, dy, dy16);
    if (dy16 && B->conv_dy16_ok(&g)) nn_bf16_widen(yn, dy16, dy);   /* dy then holds bfloat16 values */
    B->conv_bwd(&g, xw, dy, wp, dw, db, dx);
    for (int v = 1; dy16 && v < 4; v++) {   /* x16 (bit 0), dy16 (bit 1) */
        const int xs = v & 1, ds = v >> 1;
        if (ds && !B->conv_dy16_ok(&g)) continue;
        memset(dwa, 0, sizeof(float) * wn), memset(dxa, 0, sizeof(float) * xn);
        CHECK(B->conv_bwd16(&g, xs, xs ? (const void *)x16 : xw, ds, ds ? (const void *)dy16 : dy, wp, dwa, dba,
                            dxa) == 1);
        CHECK_MSG(memcmp(dwa, dw, sizeof(float) * wn) == 0 && memcmp(dba, db, sizeof(float) * (size_t)oc) == 0 &&
                      memcmp(dxa, dx, sizeof(float) * xn) == 0,
                  "%d>%d %dx%d k%d s%d: conv_bwd16 (x16 %d, dy16 %d) differs from conv_bwd on the widened inputs", ic,
                  oc, ih, ih, k, stride, xs, ds);
    }
    CHECK(B->conv_dy16_ok(&g) == (stride == 1));   /* stride 2: backward-weights on the f32 kernels */
    free(dy16);
    free(xl), free(xw), free(w), free(b), free(y), free(ya), free(dy), free(dx), free(dxa), free(dw), free(dwa);
    free(w16), free(x16), free(y16), free(r16);
}

static void relu_case(size_t cnt)
{
    float *x = vec(cnt, -1, 1), *y = vec(cnt, 0, 0), *yw = vec(cnt, 0, 0), *dy = vec(cnt, -1, 1);
    float *dx = vec(cnt, 0, 0), *dxa = vec(cnt, 0, 0);
    uint16_t *y16 = malloc(sizeof(uint16_t) * cnt), *r16 = malloc(sizeof(uint16_t) * cnt);
    if (!x || !y || !yw || !dy || !dx || !dxa || !y16 || !r16) {
        CHECK_MSG(0, "out of memory");
        return;
    }
    B->relu_fwd(cnt, x, y);
    nn_bf16_round(cnt, y, r16);
    CHECK(B->relu_fwd_y16(cnt, x, y16) == 1);
    CHECK_MSG(memcmp(y16, r16, sizeof(uint16_t) * cnt) == 0, "relu_fwd_y16 (%zu) is not relu_fwd rounded", cnt);
    nn_bf16_widen(cnt, y16, yw);
    nn_ref_relu_bwd(cnt, yw, dy, dx);   /* +0 where y is 0, as the reference (oneDNN's relu_bwd: -0 * dy) */
    CHECK(B->relu_bwd_y16(cnt, y16, dy, dxa) == 1);
    CHECK_MSG(memcmp(dx, dxa, sizeof(float) * cnt) == 0, "relu_bwd_y16 (%zu) differs from the reference", cnt);
    free(x), free(y), free(yw), free(dy), free(dx), free(dxa), free(y16), free(r16);
}

static baton_nn_model *make(const char *name, int batch, const baton_nn_kernels *k)
{
    baton_nn_spec spec = {.name = name, .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10, .max_batch = batch,
                          .seed = 3};
    baton_nn_model *m = NULL;
    baton_err err;
    CHECK_MSG(baton_nn_model_create(&spec, k, &m, &err) == BATON_OK, "%s", err.msg);
    return m;
}

static int bf16_slots(const baton_nn_model *m)
{
    int c = 0;
    for (size_t s = 0; s < m->nslots; s++) c += m->slots[s].bf16;
    return c;
}

static int sum_noop(double *v, int n, void *ctx, baton_err *err) { return BATON_OK; }

/* the slots the plan should mark in m (the rule of fuse.c's plan_bf16_slots, spelled out) */
static int want_slots(const baton_nn_model *m)
{
    int want = 0;
    for (size_t li = 0; li + 1 < m->nlayers; li++) {
        const nn_layer *l = &m->layers[li];
        if (l->kind != NN_CONV || m->layers[li + 1].kind != NN_BN) continue;
        const baton_nn_conv_geom g = nn_conv_geom(m, l, m->spec.max_batch);
        const int ok = B->conv16_ok(&g);
        CHECK_MSG(m->slots[l->out].bf16 == ok, "layer %s: bf16 output %d", l->name, m->slots[l->out].bf16);
        CHECK_MSG(m->slots[l->out].grad16 == (ok && B->conv_dy16_ok(&g)), "layer %s: bf16 gradient %d", l->name,
                  m->slots[l->out].grad16);
        want += ok;
        int readers = 0;   /* of the convolution's input */
        for (size_t lj = 0; lj < m->nlayers; lj++)
            readers += (m->layers[lj].in == l->in) + (m->layers[lj].kind == NN_ADD && m->layers[lj].in2 == l->in);
        if (li >= 2 && m->layers[li - 1].kind == NN_RELU && m->layers[li - 2].kind == NN_BN && readers == 1) {
            CHECK_MSG(m->slots[l->in].bf16 == ok, "layer %s: bf16 input %d", l->name, m->slots[l->in].bf16);
            want += ok;
        }
    }
    return want;
}

/* the bfloat16 copies the plan should make in m (fuse.c's plan_copies, spelled out on the layers): a
 * float32 ReLU output after a batch norm or a residual add, read by a convolution conv16_ok takes;
 * and the ops that write and read them */
static int want_copies(const baton_nn_model *m)
{
    int want = 0;
    for (size_t li = 1; li < m->nlayers; li++) {
        const nn_layer *l = &m->layers[li];
        const int before = m->layers[li - 1].kind;
        if (l->kind != NN_RELU || m->slots[l->out].bf16 || (before != NN_BN && before != NN_ADD)) continue;
        int read = 0;
        for (size_t lj = 0; lj < m->nlayers; lj++)
            if (m->layers[lj].kind == NN_CONV && m->layers[lj].in == l->out) {
                const baton_nn_conv_geom g = nn_conv_geom(m, &m->layers[lj], m->spec.max_batch);
                read |= B->conv16_ok(&g);
            }
        CHECK_MSG((m->slots[l->out].data16 != NULL) == read, "layer %s: a bfloat16 copy %d", l->name, !read);
        want += read;
    }
    for (size_t i = 0; i < m->train.nops; i++) {
        const nn_op *o = &m->train.ops[i];
        const int slot = o->kind == NN_OP_CONV ? o->in : o->out;
        CHECK_MSG(!o->copy16 || m->slots[slot].data16, "op %zu: copy16 without a copy", i);
        if (o->kind == NN_OP_BN_RELU || o->kind == NN_OP_BN_ADD_RELU)
            CHECK_MSG(o->copy16 == (m->slots[o->out].data16 != NULL), "op %zu: writes no copy", i);
    }
    for (size_t i = 0; i < m->infer.nops; i++) CHECK(!m->infer.ops[i].copy16);
    return want;
}

static int copies(const baton_nn_model *m)
{
    int c = 0;
    for (size_t s = 0; s < m->nslots; s++) c += m->slots[s].data16 != NULL;
    return c;
}

static void test_plan(void)
{
    baton_nn_model *m = make("resnet8", 4, B);
    if (!m) return;
    const int want = want_slots(m);
    CHECK_MSG(want >= 6 && bf16_slots(m) == want, "resnet8: %d bfloat16 slots, want %d", bf16_slots(m), want);
    /* resnet8: the stem's output (read by the first block's 16->16) and the second block's (read by
     * the third's 32->64 stride 2, on the bfloat16 kernels); not the first block's (its readers are
     * stride-2 convolutions of 16 channels, on the f32 kernels) nor the last (global pooling) */
    const int wc = want_copies(m);
    CHECK_MSG(wc == 2 && copies(m) == wc, "resnet8: %d bfloat16 copies, want %d", copies(m), wc);
    baton_err err;
    CHECK(baton_nn_model_set_bn_sync(m, sum_noop, NULL, &err) == BATON_OK);
    CHECK_MSG(bf16_slots(m) == want, "synchronised batch norm reads and writes bfloat16 activations too");
    CHECK_MSG(copies(m) == 0, "synchronised batch norm runs alone: no copies");
    CHECK(baton_nn_model_set_bn_sync(m, NULL, NULL, &err) == BATON_OK);
    CHECK(bf16_slots(m) == want && copies(m) == wc);
    baton_nn_model_set_kernels(m, D);
    CHECK(bf16_slots(m) == 0 && copies(m) == 0);
    baton_nn_model_free(m);
}

/* one training step of resnet8 on m; its gradients' relative L2 error against r's, per tensor (the
 * largest into *worst) and over all of them (returned) */
static double step_error(baton_nn_model *r, baton_nn_model *m, const float *x, const int32_t *y, int n, double *worst)
{
    baton_err err;
    float lr_ = 0, lm = 0;
    int cr, cm;
    CHECK_MSG(baton_nn_train_batch(m, x, y, n, &lm, &cm, &err) == BATON_OK, "%s", err.msg);
    CHECK(baton_nn_train_batch(r, x, y, n, &lr_, &cr, &err) == BATON_OK);
    CHECK_MSG(fabs(lm - lr_) <= 2e-2 * (1 + fabs(lr_)), "bf16 loss %g, reference %g", lm, lr_);
    double all_d2 = 0, all_r2 = 0;
    *worst = 0;
    for (size_t i = 0; i < baton_nn_model_ntensors(r); i++) {
        double d2, r2;
        const char *name;
        if (!grad_diff2(m, r, i, &d2, &r2, &name)) continue;
        *worst = fmax(*worst, sqrt(d2 / (r2 + 1e-300)));
        all_d2 += d2, all_r2 += r2;
    }
    return sqrt(all_d2 / all_r2);
}

static void test_model(void)
{
    const int n = 8;
    baton_nn_kernels f32act = *B;   /* the bf16 table with float32 activations */
    f32act.conv_fwd16 = NULL;
    baton_nn_model *r = make("resnet8", n, R), *b = make("resnet8", n, B), *c = make("resnet8", n, &f32act);
    if (!r || !b || !c) return;
    CHECK(bf16_slots(b) > 0 && bf16_slots(c) == 0);
    float *x = vec((size_t)n * 784, -1, 1);
    int32_t y[8];
    for (int i = 0; i < n; i++) y[i] = (int32_t)baton_rng_below(&rng, 10);
    double wb, wc;
    const double eb = step_error(r, b, x, y, n, &wb), ec = step_error(r, c, x, y, n, &wc);
    printf("resnet8 gradients against the reference, relative L2 over all (largest tensor): bfloat16 activations "
           "%.3f (%.3f), float32 activations %.3f (%.3f)\n", eb, wb, ec, wc);
    CHECK_MSG(wb <= 0.35 && eb <= 1.25 * ec + 0.02, "bfloat16 activations: gradient error %.3f (largest %.3f), "
              "float32 activations %.3f", eb, wb, ec);
    /* evaluation: bfloat16 activations against float32 ones, the same weights and statistics */
    baton_err err;
    for (size_t i = 0; i < baton_nn_model_ntensors(b); i++) {
        baton_nn_tensor tb, tc;
        baton_nn_model_tensor(b, i, &tb);
        baton_nn_model_tensor(c, i, &tc);
        memcpy(tc.data, tb.data, tb.numel * (tb.dtype == BATON_NN_I64 ? 8 : 4));
    }
    baton_nn_model_set_training(b, 0), baton_nn_model_set_training(c, 0);
    CHECK(baton_nn_forward(b, x, n, &err) == BATON_OK && baton_nn_forward(c, x, n, &err) == BATON_OK);
    const float *lb16 = baton_nn_logits(b), *lc = baton_nn_logits(c);
    double md = 0, sc = 0;
    for (int i = 0; i < n * 10; i++) md = fmax(md, fabs((double)lb16[i] - lc[i])), sc = fmax(sc, fabs(lc[i]));
    printf("resnet8 evaluation logits, bf16 against f32 activations: largest difference %.3g of scale %.3g\n", md, sc);
    CHECK_MSG(md <= 2e-2 * sc && md > 0, "logits differ by %g (scale %g)", md, sc);
    baton_nn_model_free(r), baton_nn_model_free(b), baton_nn_model_free(c);
    free(x);
}

/* Two training steps of resnet8 with the block outputs' bfloat16 copies and with them taken out of
 * the plan (the convolutions then convert their float32 input themselves): the same loss,
 * gradients and weights, bit for bit — the copies are the conversion done earlier. */
static void test_copies(void)
{
    const int n = 8;
    baton_nn_model *a = make("resnet8", n, B), *b = make("resnet8", n, B);
    if (!a || !b) return;
    CHECK(copies(a) == 2);
    for (size_t i = 0; i < b->train.nops; i++) b->train.ops[i].copy16 = 0;
    float *x = vec((size_t)n * 784, -1, 1);
    int32_t y[8];
    for (int i = 0; i < n; i++) y[i] = (int32_t)baton_rng_below(&rng, 10);
    baton_nn_optim *oa = NULL, *ob = NULL;
    baton_err err;
    const baton_nn_optim_cfg oc = {.kind = BATON_NN_SGD, .momentum = 0.9, .nesterov = 1, .weight_decay = 5e-4};
    CHECK(baton_nn_optim_create(&oc, a, &oa, &err) == BATON_OK && baton_nn_optim_create(&oc, b, &ob, &err) == BATON_OK);
    for (int step = 0; step < 2 && oa && ob; step++) {
        float la = 0, lb = 0;
        int ca, cb;
        CHECK(baton_nn_train_batch(a, x, y, n, &la, &ca, &err) == BATON_OK);
        CHECK(baton_nn_train_batch(b, x, y, n, &lb, &cb, &err) == BATON_OK);
        CHECK_MSG(memcmp(&la, &lb, sizeof la) == 0, "step %d: loss %.9g with copies, %.9g without", step, la, lb);
        for (size_t i = 0; i < baton_nn_model_ntensors(a); i++) {
            baton_nn_tensor ta, tb;
            baton_nn_model_tensor(a, i, &ta);
            baton_nn_model_tensor(b, i, &tb);
            CHECK_MSG(!ta.grad || memcmp(ta.grad, tb.grad, sizeof(float) * ta.numel) == 0,
                      "step %d: %s's gradient differs with the copies", step, ta.name);
        }
        CHECK(baton_nn_optim_step(oa, 0.1, &err) == BATON_OK && baton_nn_optim_step(ob, 0.1, &err) == BATON_OK);
    }
    for (size_t i = 0; i < baton_nn_model_ntensors(a); i++) {
        baton_nn_tensor ta, tb;
        baton_nn_model_tensor(a, i, &ta);
        baton_nn_model_tensor(b, i, &tb);
        CHECK_MSG(memcmp(ta.data, tb.data, ta.numel * (ta.dtype == BATON_NN_I64 ? 8 : 4)) == 0,
                  "%s differs after two steps with the copies", ta.name);
    }
    baton_nn_optim_free(oa), baton_nn_optim_free(ob);
    baton_nn_model_free(a), baton_nn_model_free(b);
    free(x);
}

int main(int argc, char **argv)
{
    if (argc >= 1 && !getenv("OMP_WAIT_POLICY")) {   /* as test_nn_bf16: passive waiting on a busy machine */
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    baton_rng_seed(&rng, 45);
    baton_err err = {0};
    R = baton_nn_kernels_reference();
    D = baton_nn_kernels_dnnl(NULL);
    B = baton_nn_kernels_dnnl_bf16(&err);
    if (!B) {
        printf("bfloat16 kernels unavailable here (%s): checks skipped\n", err.msg);
        CHECK_DONE();
    }
    CHECK(D->conv_fwd16 == NULL && D->bn16_fwd_train == NULL && R->conv_fwd16 == NULL && R->relu_fwd_y16 == NULL);
    const int cs[4] = {16, 32, 48, 64};
    for (int i = 0; i < 4; i++) {
        bn_case(3, cs[i], 7);
        bn_case(2, cs[i], 14);
    }
    bn_case(8, 64, 14);
    /* the stride-2 one first: under the sanitizers, oneDNN 2.6's dnnl_primitive_create crashed
     * (a read past a heap block, inside libdnnl) creating a second bf16 primitive for it after the
     * other geometries' (n 4 or 8; alone, or first, it passes) — bench/RESULTS.md §18d met the same */
    conv_case(8, 32, 14, 64, 3, 2, 1, 1);
    conv_case(4, 16, 28, 16, 3, 1, 1, 1);
    conv_case(4, 32, 14, 32, 3, 1, 1, 1);
    conv_case(4, 64, 7, 64, 3, 1, 1, 1);
    conv_case(4, 1, 28, 16, 3, 1, 1, 0);
    conv_case(4, 16, 28, 32, 3, 2, 1, 0);
    conv_case(4, 16, 28, 32, 1, 2, 0, 0);
    relu_case(1000);
    relu_case(128 * 16 * 28 * 28 + 5);   /* threaded */
    test_plan();
    test_model();
    test_copies();
    CHECK_DONE();
}
