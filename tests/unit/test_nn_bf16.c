/* test_nn_bf16.c — the bfloat16 kernel table (mixed precision, baton_nn_kernels_dnnl_bf16) against
 * the plain f32 reference.
 *
 *   - Rounding to bfloat16 (nearest, ties to even; NaN stays NaN; overflow to infinity) and exact
 *     widening.
 *   - Every entry the bf16 table computes in bfloat16 — convolution forward (also with its ReLU
 *     post-op), backward-data, backward-weights (and bias), linear forward, backward-data,
 *     backward-weights — on the layer shapes of lenet and resnet20 (1x28x28) and random ones, each
 *     output element within the bound that rounding both factors of every product gives:
 *         |bf16 - ref| <= (2^-7 + 2^-16 + 2 K 2^-24) * sum_k |a_k| |b_k|   (+ 1e-30)
 *     (each input rounded to bfloat16's 8 significant bits: relative error <= 2^-8 per factor, so
 *     <= 2^-7 + 2^-16 per product; both sides then sum K products in f32, each within K 2^-24 of
 *     exact). The
 *     sums of |a||b| are the reference kernel run on |a| and |b|. A table that did not round at all
 *     would pass too, so each layer must also differ from the f32 result somewhere.
 *   - Every other entry (batch norm and its fusions, ReLU, pooling, add) runs in f32 under bf16,
 *     on channels-last activations: the f32 table's results on blocked ones bit for bit (16, 32,
 *     48, 64 and 24 channels; test_nn_dnnl checks those against the reference), the elementwise
 *     entries the f32 table's own.
 *   - Whole models (lenet, resnet8): one training step under the bf16 table against the reference:
 *     the loss within 2e-2, each gradient tensor within a relative L2 error of 0.25 (measured at
 *     initialisation, batch 8: 0.001-0.09 for lenet, 0.02-0.19 for resnet8 — the rounding of each
 *     layer compounds through backward, and batch norm's backward, a difference of nearly equal
 *     terms, amplifies it). Then the bfloat16 copy of the weights the optimizer
 *     wrote is what rounding them all again gives, bit for bit (baton_nn_model_weights_changed);
 *     a weight written through baton_nn_model_tensor's pointer is seen by the next forward.
 *   - The input a bf16 convolution's forward saves in bfloat16 for backward-weights: the same bits
 *     as converting it there, read indeed, and stale after another thread's forward on it.
 *   - The folded inference plan in bf16 against the f32 plan (lenet, resnet20).
 *   - Refusal: with oneDNN limited to AVX-512 without BF16 (ONEDNN_MAX_CPU_ISA, in a child
 *     process before oneDNN starts), the bf16 table and baton_nn_kernels_select refuse, naming
 *     the limit; f32 still runs.
 * On a CPU without AVX512-BF16 the table checks are skipped (the refusal is then checked here
 * without a limit). About 2 s (20 s under the sanitizers on a busy machine). */
#include "../../src/nn/nn_internal.h"
#include "nn_gradcheck.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const baton_nn_kernels *R, *B, *D;
static baton_rng rng;

static float *vec(size_t n, float lo, float hi)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    if (p) fill_uniform(&rng, p, n, lo, hi);
    return p;
}

static float *absv(const float *a, size_t n)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; p && i < n; i++) p[i] = fabsf(a[i]);
    return p;
}

/* w rounded to bfloat16, as the bf16 table reads weights (the model's copy) */
static uint16_t *to16(const float *w, size_t n)
{
    uint16_t *p = malloc(sizeof(uint16_t) * (n ? n : 1));
    if (p) nn_bf16_round(n, w, p);
    return p;
}
#define W16(p) ((const float *)(const void *)(p))

/* every |got - ref| within the rounding bound for sums of k products whose |a||b| sums are in s;
 * *differs += elements where got is not ref's value */
static int within(const char *what, const float *got, const float *ref, const float *s, size_t n, double k,
                  size_t *differs)
{
    const double rel = ldexp(1, -7) + ldexp(1, -16) + 2 * k * ldexp(1, -24);
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - ref[i]), lim = rel * s[i] + 1e-30;
        if (!(d <= lim)) {
            fprintf(stderr, "%s: element %zu: bf16 %.8g, reference %.8g, bound %.3g\n", what, i, got[i], ref[i], lim);
            return 0;
        }
        *differs += got[i] != ref[i];
    }
    return 1;
}

/* a table's activations from NCHW arrays and back: blocked (the f32 table) or channels-last (the
 * bf16 table) where the channel count allows */
static float *in_layout_of(const baton_nn_kernels *k, int n, int c, int h, int w, const float *x)
{
    float *t = malloc(sizeof(float) * (size_t)n * c * h * w);
    if (t) k->from_plain(n, c, h, w, x, t);
    return t;
}

static void out_layout_of(const baton_nn_kernels *k, int n, int c, int h, int w, const float *t, float *y)
{
    k->to_plain(n, c, h, w, t, y);
}

static float *in_layout(int n, int c, int h, int w, const float *x) { return in_layout_of(B, n, c, h, w, x); }
static void out_layout(int n, int c, int h, int w, const float *t, float *y) { out_layout_of(B, n, c, h, w, t, y); }

/* the f32 table's result within f32 rounding: where the bf16 table's f32 calls read channels-last
 * activations of more than 16 channels, oneDNN runs its channels-last kernels, which sum in another
 * order than its blocked ones (a difference of a few units in the last place of the largest
 * value; 2^-18 of it allowed) */
static int f32_close(const float *a, const float *b, size_t n)
{
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(b[i]));
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= ldexp(mx, -18))) {
            fprintf(stderr, "element %zu: %.9g, f32 table %.9g (largest %.3g)\n", i, a[i], b[i], mx);
            return 0;
        }
    return 1;
}

static void conv_case(const char *tag, int n, int ic, int ih, int oc, int k, int stride, int pad, int bias)
{
    const int oh = (ih + 2 * pad - k) / stride + 1;
    const baton_nn_conv_geom g = {n, ic, ih, ih, oc, k, k, stride, pad, oh, oh};
    const size_t nx = (size_t)n * ic * ih * ih, nw = (size_t)oc * ic * k * k, ny = (size_t)n * oc * oh * oh;
    float *x = vec(nx, -1, 1), *w = vec(nw, -0.5f, 0.5f), *b = bias ? vec((size_t)oc, -1, 1) : NULL;
    float *dy = vec(ny, -1, 1), *ax = absv(x, nx), *aw = absv(w, nw), *ady = absv(dy, ny);
    uint16_t *w16 = to16(w, nw);
    float *ref = vec(ny > nx ? ny : nx, 0, 0), *s = vec(ny > nx ? ny : nx, 0, 0), *got = vec(ny > nx ? ny : nx, 0, 0);
    float *dwr = vec(nw, 0, 0), *dws = vec(nw, 0, 0), *dwg = vec(nw, 0, 0);
    float dbr[64], dbs[64], dbg[64];
    float *tx = in_layout(n, ic, ih, ih, x), *tdy = in_layout(n, oc, oh, oh, dy), *t = vec(ny > nx ? ny : nx, 0, 0);
    char what[160];
    size_t differs = 0;
    /* forward, then with the ReLU post-op (relu of the same values) */
    R->conv_fwd(&g, x, w, b, ref);
    R->conv_fwd(&g, ax, aw, NULL, s);
    if (b) for (size_t i = 0; i < ny; i++) s[i] += fabsf(b[i / ((size_t)oh * oh) % oc]);
    B->conv_fwd(&g, tx, W16(w16), b, t);
    out_layout(n, oc, oh, oh, t, got);
    snprintf(what, sizeof what, "%s conv_fwd", tag);
    CHECK_MSG(within(what, got, ref, s, ny, (double)ic * k * k, &differs), "%s", what);
    CHECK_MSG(differs > 0, "%s: the bf16 result is the f32 one: nothing was rounded", what);
    CHECK(B->conv_relu_fwd(&g, tx, W16(w16), b, t) == 1);
    out_layout(n, oc, oh, oh, t, ref);
    int same = 1;
    for (size_t i = 0; i < ny; i++) same &= ref[i] == (got[i] > 0 ? got[i] : 0.0f);
    CHECK_MSG(same, "%s conv_relu_fwd is not relu(conv_fwd)", tag);
    /* backward-data */
    differs = 0;
    R->conv_bwd_data(&g, dy, w, ref);
    R->conv_bwd_data(&g, ady, aw, s);
    B->conv_bwd_data(&g, tdy, W16(w16), t);
    out_layout(n, ic, ih, ih, t, got);
    snprintf(what, sizeof what, "%s conv_bwd_data", tag);
    CHECK_MSG(within(what, got, ref, s, nx, (double)oc * k * k, &differs), "%s", what);
    CHECK_MSG(differs > 0 || nx < 64, "%s: the bf16 result is the f32 one", what);
    /* backward-weights (dw f32) */
    differs = 0;
    R->conv_bwd_weights(&g, x, dy, dwr, b ? dbr : NULL);
    R->conv_bwd_weights(&g, ax, ady, dws, b ? dbs : NULL);
    B->conv_bwd_weights(&g, tx, tdy, dwg, b ? dbg : NULL);
    snprintf(what, sizeof what, "%s conv_bwd_weights", tag);
    CHECK_MSG(within(what, dwg, dwr, dws, nw, (double)n * oh * oh, &differs), "%s", what);
    CHECK_MSG(differs > 0, "%s: the bf16 result is the f32 one", what);
    if (b) CHECK_MSG(within(what, dbg, dbr, dbs, (size_t)oc, (double)n * oh * oh, &differs), "%s db", what);
    /* conv_bwd: both passes in one call (d(output) converted once), the two entries' bits */
    if (B->conv_bwd) {
        float *t2 = vec(nx, 0, 0), dbb[64];
        B->conv_bwd(&g, tx, tdy, W16(w16), dws, b ? dbb : NULL, t2);
        B->conv_bwd_data(&g, tdy, W16(w16), t);
        CHECK_MSG(memcmp(dws, dwg, sizeof(float) * nw) == 0 && memcmp(t, t2, sizeof(float) * nx) == 0 &&
                      (!b || memcmp(dbb, dbg, sizeof(float) * (size_t)oc) == 0),
                  "%s conv_bwd is not conv_bwd_weights + conv_bwd_data", tag);
        B->conv_bwd(&g, tx, tdy, W16(w16), dws, b ? dbb : NULL, NULL);
        CHECK_MSG(memcmp(dws, dwg, sizeof(float) * nw) == 0, "%s conv_bwd without dx", tag);
        free(t2);
    }
    /* the geometries the bf16 table runs on the f32 kernels (kern_dnnl.c's bf16_as_f32: one input
     * channel, stride 2, 1x1): the f32 table's results (f32_close) — on the bfloat16 weights
     * widened, for the passes that read weights and whose weights fit its stack buffer */
    if (ic < 16 || stride != 1 || k == 1) {
        float *dx_ = in_layout_of(D, n, ic, ih, ih, x), *ddy = in_layout_of(D, n, oc, oh, oh, dy);
        D->conv_bwd_weights(&g, dx_, ddy, dwr, b ? dbr : NULL);
        CHECK_MSG(f32_close(dwr, dwg, nw), "%s: not the f32 kernel's", what);
        if (nw <= 4608) {
            nn_bf16_widen(nw, w16, w);
            float *t2 = vec(ny > nx ? ny : nx, 0, 0), *p1 = vec(ny > nx ? ny : nx, 0, 0);
            float *p2 = vec(ny > nx ? ny : nx, 0, 0);
            B->conv_fwd(&g, tx, W16(w16), b, t);
            D->conv_fwd(&g, dx_, w, b, t2);
            out_layout(n, oc, oh, oh, t, p1), out_layout_of(D, n, oc, oh, oh, t2, p2);
            CHECK_MSG(f32_close(p1, p2, ny), "%s conv_fwd: not the f32 kernel's", tag);
            B->conv_bwd_data(&g, tdy, W16(w16), t);
            D->conv_bwd_data(&g, ddy, w, t2);
            out_layout(n, ic, ih, ih, t, p1), out_layout_of(D, n, ic, ih, ih, t2, p2);
            CHECK_MSG(f32_close(p1, p2, nx), "%s conv_bwd_data: not the f32 kernel's", tag);
            free(t2), free(p1), free(p2);
        }
        free(dx_), free(ddy);
    }
    free(x), free(w), free(b), free(dy), free(ax), free(aw), free(ady), free(w16), free(ref), free(s), free(got);
    free(dwr), free(dws), free(dwg), free(tx), free(tdy), free(t);
}

static void linear_case(const char *tag, int n, int in, int out)
{
    const size_t nx = (size_t)n * in, nw = (size_t)out * in, ny = (size_t)n * out;
    float *x = vec(nx, -1, 1), *w = vec(nw, -0.1f, 0.1f), *b = vec((size_t)out, -1, 1), *dy = vec(ny, -1, 1);
    float *ax = absv(x, nx), *aw = absv(w, nw), *ady = absv(dy, ny), *ab = absv(b, (size_t)out);
    uint16_t *w16 = to16(w, nw);
    float *ref = vec(nx + ny, 0, 0), *s = vec(nx + ny, 0, 0), *got = vec(nx + ny, 0, 0);
    float *dwr = vec(nw, 0, 0), *dws = vec(nw, 0, 0), *dwg = vec(nw, 0, 0);
    float *dbr = vec((size_t)out, 0, 0), *dbs = vec((size_t)out, 0, 0), *dbg = vec((size_t)out, 0, 0);
    char what[160];
    size_t differs = 0;
    R->linear_fwd(n, in, out, x, w, b, ref);
    R->linear_fwd(n, in, out, ax, aw, ab, s);
    B->linear_fwd(n, in, out, x, W16(w16), b, got);
    snprintf(what, sizeof what, "%s linear_fwd", tag);
    CHECK_MSG(within(what, got, ref, s, ny, in, &differs), "%s", what);
    CHECK_MSG(differs > 0, "%s: the bf16 result is the f32 one", what);
    differs = 0;
    R->linear_bwd_data(n, in, out, dy, w, ref);
    R->linear_bwd_data(n, in, out, ady, aw, s);
    B->linear_bwd_data(n, in, out, dy, W16(w16), got);
    snprintf(what, sizeof what, "%s linear_bwd_data", tag);
    CHECK_MSG(within(what, got, ref, s, nx, out, &differs), "%s", what);
    CHECK_MSG(differs > 0, "%s: the bf16 result is the f32 one", what);
    differs = 0;
    R->linear_bwd_weights(n, in, out, x, dy, dwr, dbr);
    R->linear_bwd_weights(n, in, out, ax, ady, dws, dbs);
    B->linear_bwd_weights(n, in, out, x, dy, dwg, dbg);
    snprintf(what, sizeof what, "%s linear_bwd_weights", tag);
    CHECK_MSG(within(what, dwg, dwr, dws, nw, n, &differs), "%s", what);
    CHECK_MSG(within(what, dbg, dbr, dbs, (size_t)out, n, &differs), "%s db", what);
    CHECK_MSG(differs > 0, "%s: the bf16 result is the f32 one", what);
    free(x), free(w), free(b), free(dy), free(ax), free(aw), free(ady), free(ab), free(w16), free(ref), free(s);
    free(got), free(dwr), free(dws), free(dwg), free(dbr), free(dbs), free(dbg);
}

static void test_round(void)
{
    const uint32_t in[] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f80ffffu, 0xbf80c000u,
                           0x7f7fffffu, 0x00000001u, 0x80000000u, 0x7f800000u, 0x7f800001u, 0xffc00001u};
    const uint16_t want[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x3f81, 0xbf81, 0x7f80, 0x0000, 0x8000, 0x7f80};
    const size_t n = sizeof in / sizeof in[0];
    float x[sizeof in / sizeof in[0]], back[sizeof in / sizeof in[0]];
    uint16_t y[sizeof in / sizeof in[0]];
    memcpy(x, in, sizeof x);
    nn_bf16_round(n, x, y);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK_MSG(y[i] == want[i], "round %08x: %04x, want %04x", in[i], y[i], want[i]);
    nn_bf16_widen(n, y, back);
    for (size_t i = sizeof want / sizeof want[0]; i < n; i++)   /* NaNs stay NaN, signs kept */
        CHECK_MSG(isnan(back[i]) && (y[i] >> 15) == (in[i] >> 31), "NaN %08x -> %04x", in[i], y[i]);
    static uint16_t all[65536];
    static float wide[65536];
    for (uint32_t i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    nn_bf16_widen(65536, all, wide);
    nn_bf16_round(65536, wide, all);
    int exact = 1;
    for (uint32_t i = 0; i < 65536; i++) exact &= isnan(wide[i]) || all[i] == (uint16_t)i;
    CHECK_MSG(exact, "a bfloat16 widened and rounded again is not itself");
}

static void test_entries(void)
{
    for (int batch = 1; batch <= 4; batch += 3) {
        char t[64];
        snprintf(t, sizeof t, "lenet.conv1 n%d", batch);
        conv_case(t, batch, 1, 28, 32, 3, 1, 0, 1);
        snprintf(t, sizeof t, "lenet.conv2 n%d", batch);
        conv_case(t, batch, 32, 26, 64, 3, 1, 0, 1);
        snprintf(t, sizeof t, "resnet.conv n%d", batch);
        conv_case(t, batch, 1, 28, 16, 3, 1, 1, 0);
        snprintf(t, sizeof t, "resnet.s1 n%d", batch);
        conv_case(t, batch, 16, 28, 16, 3, 1, 1, 0);
        snprintf(t, sizeof t, "resnet.s2.conv1 n%d", batch);
        conv_case(t, batch, 16, 28, 32, 3, 2, 1, 0);
        snprintf(t, sizeof t, "resnet.s2.short n%d", batch);
        conv_case(t, batch, 16, 28, 32, 1, 2, 0, 0);
        snprintf(t, sizeof t, "resnet.s2 n%d", batch);
        conv_case(t, batch, 32, 14, 32, 3, 1, 1, 0);
        snprintf(t, sizeof t, "resnet.s3.conv1 n%d", batch);
        conv_case(t, batch, 32, 14, 64, 3, 2, 1, 0);
        snprintf(t, sizeof t, "resnet.s3 n%d", batch);
        conv_case(t, batch, 64, 7, 64, 3, 1, 1, 0);
        snprintf(t, sizeof t, "lenet.fc1 n%d", batch);
        linear_case(t, batch, 9216, 128);
        snprintf(t, sizeof t, "resnet.fc n%d", batch);
        linear_case(t, batch, 64, 10);
    }
    for (int i = 0; i < 8; i++) {
        int k = 1 + (int)baton_rng_below(&rng, 4), stride = 1 + (int)baton_rng_below(&rng, 2);
        int pad = (int)baton_rng_below(&rng, (uint64_t)(k / 2 + 1)), ih = k + 2 + (int)baton_rng_below(&rng, 10);
        int n = 1 + (int)baton_rng_below(&rng, 4), ic = 1 + (int)baton_rng_below(&rng, 40);
        int oc = 1 + (int)baton_rng_below(&rng, 40);
        char t[96];
        snprintf(t, sizeof t, "random conv n%d ic%d %dx%d oc%d k%d s%d p%d", n, ic, ih, ih, oc, k, stride, pad);
        conv_case(t, n, ic, ih, oc, k, stride, pad, i % 2);
        snprintf(t, sizeof t, "random linear n%d in%d out%d", n, ic * 7, oc);
        linear_case(t, n, ic * 7, oc);
    }
}

/* A bf16 convolution's forward keeps its input in bfloat16 for backward-weights (dnnl_prim.c's
 * nn_prim_save): backward-weights after a forward gives the bits it gives with no forward before
 * (the input converted then), and it reads the saved copy indeed (x changed behind the table's back
 * after the forward — outside the contract — leaves the result as it was); a later forward on x
 * on another thread makes this thread's copy stale (x's new values read), and a forward of another
 * batch size on x takes the copy's place. resnet's 16-channel stage, batch 2. */
typedef struct fwd_job {
    const baton_nn_conv_geom *g;
    const float *x, *w;
    float *y;
} fwd_job;

static void *fwd_thread(void *arg)
{
    const fwd_job *j = arg;
    B->conv_fwd(j->g, j->x, j->w, NULL, j->y);
    return NULL;
}

static void test_saved_input(void)
{
    const baton_nn_conv_geom g = {2, 16, 28, 28, 16, 3, 3, 1, 1, 28, 28};
    const size_t nx = (size_t)2 * 16 * 28 * 28, nw = 16 * 16 * 9;
    float *x = vec(nx, -1, 1), *x2 = vec(nx, -1, 1), *dy = vec(nx, -1, 1), *w = vec(nw, -0.5f, 0.5f);
    float *y = vec(nx, 0, 0), *fresh = vec(nw, 0, 0), *fresh2 = vec(nw, 0, 0), *got = vec(nw, 0, 0);
    float *dx = vec(nx, 0, 0);
    uint16_t *w16 = to16(w, nw);
    B->conv_bwd_weights(&g, x2, dy, fresh2, NULL);   /* x2 read as it is: no forward saved it */
    B->conv_bwd_weights(&g, x, dy, fresh, NULL);
    B->conv_fwd(&g, x, W16(w16), NULL, y);
    B->conv_bwd_weights(&g, x, dy, got, NULL);
    CHECK_MSG(memcmp(got, fresh, sizeof(float) * nw) == 0, "bwd-weights on the saved input: other bits");
    B->conv_bwd(&g, x, dy, W16(w16), got, NULL, dx);
    CHECK_MSG(memcmp(got, fresh, sizeof(float) * nw) == 0, "conv_bwd on the saved input: other bits");
    CHECK(B->conv_relu_fwd(&g, x, W16(w16), NULL, y) == 1);
    memcpy(x, x2, sizeof(float) * nx);   /* behind the table's back */
    B->conv_bwd_weights(&g, x, dy, got, NULL);
    CHECK_MSG(memcmp(got, fresh, sizeof(float) * nw) == 0, "bwd-weights did not read the saved input");
    fwd_job j = {&g, x, W16(w16), dx};   /* x (now x2's values) saved again, on another thread */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fwd_thread, &j) == 0 && pthread_join(t, NULL) == 0);
    B->conv_bwd(&g, x, dy, W16(w16), got, NULL, dx);
    CHECK_MSG(memcmp(got, fresh2, sizeof(float) * nw) == 0, "a copy saved before another thread's forward was read");
    const baton_nn_conv_geom g1 = {1, 16, 28, 28, 16, 3, 3, 1, 1, 28, 28};   /* a batch of 1 takes its place */
    B->conv_fwd(&g1, x, W16(w16), NULL, y);
    B->conv_bwd_weights(&g, x, dy, got, NULL);
    CHECK_MSG(memcmp(got, fresh2, sizeof(float) * nw) == 0, "after a forward of another batch size: other bits");
    free(x), free(x2), free(dy), free(w), free(y), free(fresh), free(fresh2), free(got), free(dx), free(w16);
}

/* The layers bf16 leaves in f32 run on channels-last activations (the layout oneDNN's AMX
 * convolutions read and write): every such entry of the bf16 table on channels-last arrays gives
 * the f32 table's results on blocked ones bit for bit (the same arithmetic in the same order), for
 * 16, 32, 48 and 64 channels and a count that is not blocked (24); its layout conversions are exact
 * inverses; the elementwise entries are the f32 table's own. */
static int same_plain(const baton_nn_kernels *k, int n, int c, int h, int w, const float *a, const float *ref,
                      float *tmp)
{
    k->to_plain(n, c, h, w, a, tmp);
    return memcmp(tmp, ref, sizeof(float) * (size_t)n * c * h * w) == 0;
}

static void cl_case(int n, int c, int h)
{
    const int hw = h * h;
    const size_t cnt = (size_t)n * c * hw;
    float *x = vec(cnt, -2, 2), *dy = vec(cnt, -1, 1), *res = vec(cnt, -1, 1), *g = vec((size_t)c, 0.5f, 1.5f);
    float *bt = vec((size_t)c, -0.5f, 0.5f), *t = vec(cnt, 0, 0);
    float *xb = vec(cnt, 0, 0), *xc = vec(cnt, 0, 0), *dyb = vec(cnt, 0, 0), *dyc = vec(cnt, 0, 0);
    float *rb = vec(cnt, 0, 0), *rc = vec(cnt, 0, 0), *yb = vec(cnt, 0, 0), *yc = vec(cnt, 0, 0);
    float *db = vec(cnt, 0, 0), *dc = vec(cnt, 0, 0), *gb = vec(cnt, 0, 0), *gc = vec(cnt, 0, 0);
    float st[8][64], pb[4][64], pc[4][64];
    D->from_plain(n, c, h, h, x, xb), B->from_plain(n, c, h, h, x, xc);
    D->from_plain(n, c, h, h, dy, dyb), B->from_plain(n, c, h, h, dy, dyc);
    D->from_plain(n, c, h, h, res, rb), B->from_plain(n, c, h, h, res, rc);
    CHECK_MSG(same_plain(B, n, c, h, h, xc, x, t), "c%d: channels-last round trip", c);
    const int fused = B->bn_fused_ok(c, hw);
    CHECK(fused == D->bn_fused_ok(c, hw));
#define PLAIN_EQ(what, pb_, pc_)                                                                                      \
    do {                                                                                                             \
        float *u_ = vec(cnt, 0, 0);                                                                                  \
        D->to_plain(n, c, h, h, pb_, u_);                                                                            \
        CHECK_MSG(same_plain(B, n, c, h, h, pc_, u_, t), "n%d c%d %dx%d: %s differs from the f32 table's", n, c, h, \
                  h, what);                                                                                          \
        free(u_);                                                                                                    \
    } while (0)
#define STATS_EQ(what)                                                                                                \
    CHECK_MSG(memcmp(pb, pc, sizeof(float) * 2 * 64) == 0, "n%d c%d: %s statistics differ", n, c, what)
    memset(pb, 0, sizeof pb), memset(pc, 0, sizeof pc);
    D->bn_fwd_train(n, c, hw, xb, g, bt, 1e-5f, yb, pb[0], pb[1]);
    B->bn_fwd_train(n, c, hw, xc, g, bt, 1e-5f, yc, pc[0], pc[1]);
    PLAIN_EQ("bn_fwd_train", yb, yc);
    STATS_EQ("bn_fwd_train");
    memcpy(st[0], pb[0], sizeof st[0]), memcpy(st[1], pb[1], sizeof st[1]);
    D->bn_fwd_infer(n, c, hw, xb, g, bt, st[0], st[1], 1e-5f, yb);
    B->bn_fwd_infer(n, c, hw, xc, g, bt, st[0], st[1], 1e-5f, yc);
    PLAIN_EQ("bn_fwd_infer", yb, yc);
    D->bn_bwd(n, c, hw, xb, dyb, g, st[0], st[1], 1e-5f, db, pb[2], pb[3]);
    B->bn_bwd(n, c, hw, xc, dyc, g, st[0], st[1], 1e-5f, dc, pc[2], pc[3]);
    PLAIN_EQ("bn_bwd", db, dc);
    CHECK_MSG(memcmp(pb[2], pc[2], sizeof(float) * 2 * 64) == 0, "c%d: bn_bwd dgamma/dbeta differ", c);
    if (fused) {
        CHECK(D->bn_relu_fwd_train(n, c, hw, xb, g, bt, 1e-5f, yb, pb[0], pb[1]) &&
              B->bn_relu_fwd_train(n, c, hw, xc, g, bt, 1e-5f, yc, pc[0], pc[1]));
        PLAIN_EQ("bn_relu_fwd_train", yb, yc);
        STATS_EQ("bn_relu_fwd_train");
        CHECK(D->bn_relu_bwd(n, c, hw, xb, dyb, g, bt, st[0], st[1], 1e-5f, db, pb[2], pb[3]) &&
              B->bn_relu_bwd(n, c, hw, xc, dyc, g, bt, st[0], st[1], 1e-5f, dc, pc[2], pc[3]));
        PLAIN_EQ("bn_relu_bwd", db, dc);
        CHECK(D->bn_add_relu_fwd_train(n, c, hw, xb, rb, g, bt, 1e-5f, yb, pb[0], pb[1]) &&
              B->bn_add_relu_fwd_train(n, c, hw, xc, rc, g, bt, 1e-5f, yc, pc[0], pc[1]));
        PLAIN_EQ("bn_add_relu_fwd_train", yb, yc);
        STATS_EQ("bn_add_relu_fwd_train");
        CHECK(D->bn_add_relu_bwd(n, c, hw, xb, yb, dyb, rb, g, st[0], st[1], 1e-5f, gb, db, pb[2], pb[3]) &&
              B->bn_add_relu_bwd(n, c, hw, xc, yc, dyc, rc, g, st[0], st[1], 1e-5f, gc, dc, pc[2], pc[3]));
        PLAIN_EQ("bn_add_relu_bwd dx", db, dc);
        PLAIN_EQ("bn_add_relu_bwd g", gb, gc);
        CHECK_MSG(memcmp(pb[2], pc[2], sizeof(float) * 2 * 64) == 0, "c%d: bn_add_relu_bwd dgamma/dbeta differ", c);
        CHECK(D->bn_apply_train(n, c, hw, xb, rb, 1, g, bt, 1e-5f, st[0], st[1], yb) &&
              B->bn_apply_train(n, c, hw, xc, rc, 1, g, bt, 1e-5f, st[0], st[1], yc));
        PLAIN_EQ("bn_apply_train", yb, yc);
    }
    float gy[8 * 64], gd[8 * 64];
    D->gap_fwd(n, c, hw, xb, gy), B->gap_fwd(n, c, hw, xc, gd);
    CHECK_MSG(memcmp(gy, gd, sizeof(float) * (size_t)n * c) == 0, "c%d: gap_fwd differs", c);
    D->gap_bwd(n, c, hw, gy, db), B->gap_bwd(n, c, hw, gy, dc);
    PLAIN_EQ("gap_bwd", db, dc);
    for (int k = 2; k <= 3; k++) {   /* 2x2 stride 2, 3x3 stride 2 */
        const int oh = (h - k) / 2 + 1;
        const baton_nn_pool_geom pg = {n, c, h, h, k, 2, oh, oh};
        const size_t oc = (size_t)n * c * oh * oh;
        int32_t *wb = malloc(sizeof(int32_t) * oc), *wc = malloc(sizeof(int32_t) * oc);
        float *ob = vec(oc, 0, 0), *o2 = vec(oc, 0, 0), *q = vec(oc, 0, 0), *qb = vec(oc, 0, 0), *qc = vec(oc, 0, 0);
        float *u = vec(oc, 0, 0), *v = vec(oc, 0, 0);
        D->maxpool_fwd(&pg, xb, ob, wb), B->maxpool_fwd(&pg, xc, o2, wc);
        D->to_plain(n, c, oh, oh, ob, u), B->to_plain(n, c, oh, oh, o2, v);
        CHECK_MSG(memcmp(u, v, sizeof(float) * oc) == 0, "c%d k%d: maxpool_fwd differs", c, k);
        D->from_plain(n, c, oh, oh, q, qb), B->from_plain(n, c, oh, oh, q, qc);
        D->maxpool_bwd(&pg, qb, wb, db), B->maxpool_bwd(&pg, qc, wc, dc);
        PLAIN_EQ("maxpool_bwd", db, dc);
        if (B->maxpool_relu_ok(&pg)) {
            CHECK(D->maxpool_relu_bwd(&pg, qb, wb, xb, db) && B->maxpool_relu_bwd(&pg, qc, wc, xc, dc));
            PLAIN_EQ("maxpool_relu_bwd", db, dc);
        }
        free(wb), free(wc), free(ob), free(o2), free(q), free(qb), free(qc), free(u), free(v);
    }
#undef PLAIN_EQ
#undef STATS_EQ
    free(x), free(dy), free(res), free(g), free(bt), free(t), free(xb), free(xc), free(dyb), free(dyc);
    free(rb), free(rc), free(yb), free(yc), free(db), free(dc), free(gb), free(gc);
}

static void test_f32_entries(void)
{
    CHECK(B->weights_bf16 == 1 && D->weights_bf16 == 0 && B->block == D->block);
    CHECK(B->channels_last == 1 && D->channels_last == 0);
    CHECK(B->add_relu == D->add_relu && B->add == D->add);
    CHECK(B->relu_fwd == D->relu_fwd && B->relu_bwd == D->relu_bwd && B->relu_bwd_add == D->relu_bwd_add);
    CHECK(B->conv_bn_stats_fwd == NULL);   /* the f32 kernel's fusion: bf16 runs the convolution */
    const int cs[5] = {16, 32, 48, 64, 24};   /* 48: the kernels' groups of two blocks and one */
    for (int i = 0; i < 5; i++) {
        cl_case(3, cs[i], 7);
        cl_case(2, cs[i], 14);
    }
    cl_case(8, 64, 14);   /* large enough for two threads: an item then takes two blocks of four */
}

static baton_nn_model *make(const char *name, int batch, const baton_nn_kernels *k)
{
    baton_nn_spec spec = {.name = name, .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10, .max_batch = batch, .seed = 3};
    baton_nn_model *m = NULL;
    baton_err err;
    CHECK_MSG(baton_nn_model_create(&spec, k, &m, &err) == BATON_OK, "%s", err.msg);
    return m;
}

static void test_model(const char *name)
{
    const int n = 8;
    baton_nn_model *r = make(name, n, R), *b = make(name, n, B), *c = make(name, n, B);
    if (!r || !b || !c) return;
    float *x = vec((size_t)n * 784, -1, 1), logits[8 * 10];
    int32_t y[8];
    for (int i = 0; i < n; i++) y[i] = (int32_t)baton_rng_below(&rng, 10);
    baton_err err;
    float lr_ = 0, lb = 0;
    int cr, cb;
    CHECK(baton_nn_train_batch(r, x, y, n, &lr_, &cr, &err) == BATON_OK);
    CHECK_MSG(baton_nn_train_batch(b, x, y, n, &lb, &cb, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(fabs(lb - lr_) <= 2e-2 * (1 + fabs(lr_)), "%s: bf16 loss %g, reference %g", name, lb, lr_);
    for (size_t i = 0; i < baton_nn_model_ntensors(r); i++) {
        double d2, r2;
        const char *tname;
        if (!grad_diff2(b, r, i, &d2, &r2, &tname)) continue;
        CHECK_MSG(sqrt(d2) <= 0.25 * sqrt(r2) + 1e-12, "%s %s: bf16 gradient's relative L2 error %.3f > 0.25", name,
                  tname, sqrt(d2 / r2));
    }
    /* the copy the optimizer writes is the weights rounded: forward after a step, then after
     * rounding them all again, the same bits */
    baton_nn_optim *o = NULL;
    baton_nn_optim_cfg oc = {.kind = BATON_NN_SGD, .momentum = 0.9, .nesterov = 1, .weight_decay = 5e-4};
    CHECK(baton_nn_optim_create(&oc, b, &o, &err) == BATON_OK);
    CHECK(baton_nn_optim_step(o, 0.1, &err) == BATON_OK);
    baton_nn_model_set_training(b, 0);
    CHECK(baton_nn_forward(b, x, n, &err) == BATON_OK);
    memcpy(logits, baton_nn_logits(b), sizeof(float) * (size_t)n * 10);
    baton_nn_model_weights_changed(b);
    CHECK(baton_nn_forward(b, x, n, &err) == BATON_OK);
    CHECK_MSG(memcmp(logits, baton_nn_logits(b), sizeof(float) * (size_t)n * 10) == 0,
              "%s: the optimizer's bf16 copy is not the weights rounded", name);
    /* a model given b's tensors through their pointers runs on them: the same logits */
    for (size_t i = 0; i < baton_nn_model_ntensors(b); i++) {
        baton_nn_tensor tb, tc;
        baton_nn_model_tensor(b, i, &tb);
        baton_nn_model_tensor(c, i, &tc);
        memcpy(tc.data, tb.data, tb.numel * (tb.dtype == BATON_NN_I64 ? 8 : 4));
    }
    baton_nn_model_set_training(c, 0);
    CHECK(baton_nn_forward(c, x, n, &err) == BATON_OK);
    CHECK_MSG(memcmp(logits, baton_nn_logits(c), sizeof(float) * (size_t)n * 10) == 0,
              "%s: weights written through baton_nn_model_tensor were not seen", name);
    baton_nn_optim_free(o);
    baton_nn_model_free(r), baton_nn_model_free(b), baton_nn_model_free(c);
    free(x);
}

/* the folded inference plan in bf16 against the f32 plan on the same weights (batch norms folded,
 * after a few steps so that the running statistics are not the initial ones): logits within
 * 1e-2 * (0.1 + their scale) — each layer's output is rounded to bfloat16 (2^-8) as well as its
 * inputs; measured 1.2e-3 of the scale for lenet, 2e-3 for resnet8 and resnet20 — and not equal */
static void test_plan(const char *name)
{
    const int n = 16;
    baton_nn_model *m = make(name, n, D);
    if (!m) return;
    float *x = vec((size_t)n * 784, -1, 1), *lf = vec((size_t)n * 10, 0, 0), *lb = vec((size_t)n * 10, 0, 0);
    int32_t y[16];
    for (int i = 0; i < n; i++) y[i] = (int32_t)baton_rng_below(&rng, 10);
    baton_err err;
    baton_nn_optim *o = NULL;
    baton_nn_optim_cfg oc = {.kind = BATON_NN_SGD, .momentum = 0.9};
    CHECK(baton_nn_optim_create(&oc, m, &o, &err) == BATON_OK);
    for (int s = 0; s < 3; s++) {
        float loss;
        int corr;
        CHECK(baton_nn_train_batch(m, x, y, n, &loss, &corr, &err) == BATON_OK && baton_nn_optim_step(o, 0.05, &err) == BATON_OK);
    }
    baton_nn_model_set_training(m, 0);
    baton_nn_infer_plan *pf = NULL, *pb = NULL;
    CHECK_MSG(baton_nn_infer_plan_create(m, n, BATON_NN_PRECISION_F32, &pf, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_nn_infer_plan_create(m, n, BATON_NN_PRECISION_BF16, &pb, &err) == BATON_OK, "%s", err.msg);
    if (pf && pb) {
        CHECK(baton_nn_infer_plan_run(pf, x, lf, &err) == BATON_OK && baton_nn_infer_plan_run(pb, x, lb, &err) == BATON_OK);
        double md = 0, sc = 0;
        int differs = 0;
        for (int i = 0; i < n * 10; i++) {
            md = fmax(md, fabs((double)lb[i] - lf[i]));
            sc = fmax(sc, fabs(lf[i]));
            differs |= lb[i] != lf[i];
        }
        CHECK_MSG(md <= 1e-2 * (0.1 + sc), "%s: bf16 plan's logits differ by %g (scale %g)", name, md, sc);
        CHECK_MSG(differs, "%s: the bf16 plan gave the f32 plan's logits: it did not round", name);
    }
    baton_nn_infer_plan_free(pf), baton_nn_infer_plan_free(pb);
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
    free(x), free(lf), free(lb);
}

/* in a child, before oneDNN starts: oneDNN limited to AVX-512 without BF16 */
static int refused_under_limit(void)
{
    setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE", 1);
    baton_err err = {0};
    if (baton_nn_kernels_dnnl_bf16(&err) || !strstr(err.msg, "AVX512-BF16") || !strstr(err.msg, "ONEDNN_MAX_CPU_ISA"))
        return 1;
    if (baton_nn_kernels_select(0, BATON_NN_PRECISION_BF16, &err) || !baton_nn_kernels_select(0, BATON_NN_PRECISION_F32, &err))
        return 2;
    if (baton_nn_kernels_select(1, BATON_NN_PRECISION_BF16, &err) || !strstr(err.msg, "reference")) return 3;
    return 0;
}

int main(int argc, char **argv)
{
    /* OpenMP threads that spin while waiting crawl on a busy machine, and libgomp reads its
     * settings before main: run again with passive waiting (as test_nn_dnnl; no result changes) */
    if (argc >= 1 && !getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    pid_t pid = fork();
    if (pid == 0) _exit(refused_under_limit());
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "under ONEDNN_MAX_CPU_ISA=AVX512_CORE: check %d failed",
              WEXITSTATUS(st));
    CHECK(baton_nn_precision_parse("bf16") == BATON_NN_PRECISION_BF16 && baton_nn_precision_parse("f32") == 0);
    CHECK(baton_nn_precision_parse("fp16") < 0 && baton_nn_precision_parse(NULL) < 0);
    baton_rng_seed(&rng, 16);
    test_round();
    baton_err err = {0};
    R = baton_nn_kernels_reference();
    D = baton_nn_kernels_dnnl(NULL);
    B = baton_nn_kernels_dnnl_bf16(&err);
    if (!B) {
        printf("bfloat16 kernels unavailable here (%s): table checks skipped\n", err.msg);
        CHECK(strstr(err.msg, "AVX512-BF16") != NULL);
        CHECK_DONE();
    }
    test_f32_entries();
    test_entries();
    test_saved_input();
    test_model("lenet");
    test_model("resnet8");
    test_plan("lenet");
    test_plan("resnet20");
    CHECK_DONE();
}
