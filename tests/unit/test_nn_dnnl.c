/* test_nn_dnnl.c — the oneDNN kernel table against the reference table: every entry on random
 * shapes (with and without bias) and on the exact layer shapes of lenet and resnet20 on 1x28x28 (as
 * the PyTorch peer; resnet20 also on 3x32x32 at batch 1) at batch 1 and 32, within
 * max|a - b| <= 1e-4 * (1 + max|b|); aliasing allowed by the contract (relu dx = dy, add y = a or b);
 * batch norm on odd shapes (one channel, one pixel per plane, planes longer than a summation
 * block) and from two threads at once (bit-identical to one call alone); the primitive cache past
 * its capacity; whole models (one SGD step of lenet and resnet8 under both
 * tables: close loss, gradients and updated weights, then eval-mode logits); and a few dozen
 * training steps under the oneDNN table bit-reproducible run to run. The oneDNN table keeps
 * activations blocked (nChw16c) where the channel count allows: entries are compared on NCHW data
 * converted around each call with the table's own layout functions, which are checked first. */
#include "nn_gradcheck.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static const baton_nn_kernels *R, *D;
static baton_rng rng;

static float *vec(size_t n, float lo, float hi)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    if (p) fill_uniform(&rng, p, n, lo, hi);
    return p;
}

/* max|a - b| <= rtol * (1 + max|b|) */
static int close_to(const char *what, const float *a, const float *b, size_t n, double rtol)
{
    double md = 0.0, mb = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= md)) {   /* NaN counts as a difference */
            md = isnan(d) ? INFINITY : d;
            at = i;
        }
        mb = fmax(mb, fabs((double)b[i]));
    }
    int ok = md <= rtol * (1.0 + mb);
    if (!ok)
        fprintf(stderr, "%s: max |diff| %.3g at %zu (%.7g vs %.7g), max |ref| %.3g\n", what, md, at, a[at], b[at],
                mb);
    return ok;
}

#define TOL 1e-4

/* ---- the oneDNN table keeps activations in its own layout (nChw16c where the channel count is
 * a multiple of 16): these wrappers take and return NCHW arrays, converting around each call with
 * the table's own to_plain / from_plain, so every entry is compared on the same NCHW data ---- */

/* storage index, in the table's layout, of NCHW element i of an [n, c, h, w] activation */
static size_t d_index(int n, int c, int h, int w, size_t i)
{
    const size_t hw = (size_t)h * w;
    if (!D->block || c % D->block || hw == 1) return i;
    const size_t img = i / ((size_t)c * hw), ch = i / hw % (size_t)c, p = i % hw, B = (size_t)D->block;
    return ((img * (size_t)(c / D->block) + ch / B) * hw + p) * B + ch % B;
}

static float *d_in(int n, int c, int h, int w, const float *x)
{
    const size_t cnt = (size_t)n * c * h * w;
    float *t = malloc(sizeof(float) * (cnt ? cnt : 1));
    D->from_plain(n, c, h, w, x, t);
    return t;
}

static void d_out(int n, int c, int h, int w, float *t, float *y)
{
    D->to_plain(n, c, h, w, t, y);
    free(t);
}

static void Dconv_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{
    float *tx = d_in(g->n, g->ic, g->ih, g->iw, x), *ty = d_in(g->n, g->oc, g->oh, g->ow, y);
    D->conv_fwd(g, tx, w, b, ty);
    d_out(g->n, g->oc, g->oh, g->ow, ty, y);
    free(tx);
}

static void Dconv_bwd_data(const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx)
{
    float *tdy = d_in(g->n, g->oc, g->oh, g->ow, dy), *tdx = d_in(g->n, g->ic, g->ih, g->iw, dx);
    D->conv_bwd_data(g, tdy, w, tdx);
    d_out(g->n, g->ic, g->ih, g->iw, tdx, dx);
    free(tdy);
}

static void Dconv_bwd_weights(const baton_nn_conv_geom *g, const float *x, const float *dy, float *dw, float *db)
{
    float *tx = d_in(g->n, g->ic, g->ih, g->iw, x), *tdy = d_in(g->n, g->oc, g->oh, g->ow, dy);
    D->conv_bwd_weights(g, tx, tdy, dw, db);
    free(tx);
    free(tdy);
}

static void Dbn_fwd_train(int n, int c, int hw, const float *x, const float *g, const float *b, float eps, float *y,
                          float *mean, float *var)
{
    float *tx = d_in(n, c, hw, 1, x), *ty = d_in(n, c, hw, 1, y);
    D->bn_fwd_train(n, c, hw, tx, g, b, eps, ty, mean, var);
    d_out(n, c, hw, 1, ty, y);
    free(tx);
}

static void Dbn_fwd_infer(int n, int c, int hw, const float *x, const float *g, const float *b, const float *mean,
                          const float *var, float eps, float *y)
{
    float *tx = d_in(n, c, hw, 1, x), *ty = d_in(n, c, hw, 1, y);
    D->bn_fwd_infer(n, c, hw, tx, g, b, mean, var, eps, ty);
    d_out(n, c, hw, 1, ty, y);
    free(tx);
}

static void Dbn_bwd(int n, int c, int hw, const float *x, const float *dy, const float *g, const float *mean,
                    const float *var, float eps, float *dx, float *dg, float *db)
{
    float *tx = d_in(n, c, hw, 1, x), *tdy = d_in(n, c, hw, 1, dy), *tdx = d_in(n, c, hw, 1, dx);
    D->bn_bwd(n, c, hw, tx, tdy, g, mean, var, eps, tdx, dg, db);
    d_out(n, c, hw, 1, tdx, dx);
    free(tx);
    free(tdy);
}

/* ws in and out in NCHW order of the outputs */
static void Dmaxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{
    const size_t no = (size_t)g->n * g->c * g->oh * g->ow;
    float *tx = d_in(g->n, g->c, g->ih, g->iw, x), *ty = d_in(g->n, g->c, g->oh, g->ow, y);
    int32_t *tws = malloc(sizeof(int32_t) * (no ? no : 1));
    D->maxpool_fwd(g, tx, ty, tws);
    for (size_t i = 0; i < no; i++) ws[i] = tws[d_index(g->n, g->c, g->oh, g->ow, i)];
    d_out(g->n, g->c, g->oh, g->ow, ty, y);
    free(tx);
    free(tws);
}

static void Dmaxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx)
{
    const size_t no = (size_t)g->n * g->c * g->oh * g->ow;
    float *tdy = d_in(g->n, g->c, g->oh, g->ow, dy), *tdx = d_in(g->n, g->c, g->ih, g->iw, dx);
    int32_t *tws = malloc(sizeof(int32_t) * (no ? no : 1));
    for (size_t i = 0; i < no; i++) tws[d_index(g->n, g->c, g->oh, g->ow, i)] = ws[i];
    D->maxpool_bwd(g, tdy, tws, tdx);
    d_out(g->n, g->c, g->ih, g->iw, tdx, dx);
    free(tdy);
    free(tws);
}

static void Dgap_fwd(int n, int c, int hw, const float *x, float *y)
{
    float *tx = d_in(n, c, hw, 1, x);
    D->gap_fwd(n, c, hw, tx, y);
    free(tx);
}

static void Dgap_bwd(int n, int c, int hw, const float *dy, float *dx)
{
    float *tdx = d_in(n, c, hw, 1, dx);
    D->gap_bwd(n, c, hw, dy, tdx);
    d_out(n, c, hw, 1, tdx, dx);
}

/* the layout itself: from_plain puts NCHW element i at d_index(i); to_plain inverts it */
static void test_layout(void)
{
    CHECK(D->block == 16 && R->block == 0);
    const int shapes[][4] = {{2, 16, 3, 5}, {3, 32, 7, 7}, {1, 64, 1, 1}, {2, 6, 4, 4}, {1, 48, 2, 9}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int n = shapes[s][0], c = shapes[s][1], h = shapes[s][2], w = shapes[s][3];
        const size_t cnt = (size_t)n * c * h * w;
        float *x = vec(cnt, -1, 1), *b = vec(cnt, 0, 0), *back = vec(cnt, 0, 0);
        D->from_plain(n, c, h, w, x, b);
        int ok = 1;
        for (size_t i = 0; i < cnt; i++) ok &= b[d_index(n, c, h, w, i)] == x[i];
        CHECK_MSG(ok, "from_plain [%d,%d,%d,%d]", n, c, h, w);
        D->to_plain(n, c, h, w, b, back);
        CHECK_MSG(memcmp(back, x, sizeof(float) * cnt) == 0, "to_plain round trip [%d,%d,%d,%d]", n, c, h, w);
        free(x), free(b), free(back);
    }
}

/* ---- convolution ---- */

/* bias_mode: 0 or 1 checks that variant only, 2 both */
static void conv_case(const char *tag, int n, int ic, int ih, int iw, int oc, int k, int stride, int pad,
                      int bias_mode)
{
    baton_nn_conv_geom g = {n, ic, ih, iw, oc, k, k, stride, pad, (ih + 2 * pad - k) / stride + 1,
                            (iw + 2 * pad - k) / stride + 1};
    const size_t nx = (size_t)n * ic * ih * iw, nw = (size_t)oc * ic * k * k, ny = (size_t)n * oc * g.oh * g.ow;
    float *x = vec(nx, -1, 1), *w = vec(nw, -0.5f, 0.5f), *b = vec((size_t)oc, -1, 1), *dy = vec(ny, -1, 1);
    float *y1 = vec(ny, 0, 0), *y2 = vec(ny, 9, 9), *dx1 = vec(nx, 0, 0), *dx2 = vec(nx, 9, 9);
    float *dw1 = vec(nw, 0, 0), *dw2 = vec(nw, 9, 9), *db1 = vec((size_t)oc, 0, 0), *db2 = vec((size_t)oc, 9, 9);
    char what[160];
    for (int bias = bias_mode == 1; bias < (bias_mode == 0 ? 1 : 2); bias++) {
        R->conv_fwd(&g, x, w, bias ? b : NULL, y1);
        Dconv_fwd(&g, x, w, bias ? b : NULL, y2);
        snprintf(what, sizeof what, "%s conv_fwd bias %d", tag, bias);
        CHECK_MSG(close_to(what, y2, y1, ny, TOL), "%s", what);
        if (D->conv_relu_fwd) {   /* the ReLU as a post-op: relu(conv) of this table, bit for bit */
            float *tx = d_in(g.n, g.ic, g.ih, g.iw, x), *ty = d_in(g.n, g.oc, g.oh, g.ow, y2);
            CHECK_MSG(D->conv_relu_fwd(&g, tx, w, bias ? b : NULL, ty) == 1, "%s conv_relu_fwd not fused", what);
            d_out(g.n, g.oc, g.oh, g.ow, ty, y1);   /* y1 (the reference's) is not needed again */
            free(tx);
            int same = 1;
            for (size_t i = 0; i < ny; i++) same &= y1[i] == (y2[i] > 0.0f ? y2[i] : 0.0f);
            CHECK_MSG(same, "%s conv_relu_fwd differs from conv_fwd + relu", what);
        }
        R->conv_bwd_weights(&g, x, dy, dw1, bias ? db1 : NULL);
        Dconv_bwd_weights(&g, x, dy, dw2, bias ? db2 : NULL);
        snprintf(what, sizeof what, "%s conv_bwd_weights bias %d", tag, bias);
        CHECK_MSG(close_to(what, dw2, dw1, nw, TOL), "%s", what);
        if (bias) CHECK_MSG(close_to(what, db2, db1, (size_t)oc, TOL), "%s db", what);
    }
    R->conv_bwd_data(&g, dy, w, dx1);
    Dconv_bwd_data(&g, dy, w, dx2);
    snprintf(what, sizeof what, "%s conv_bwd_data", tag);
    CHECK_MSG(close_to(what, dx2, dx1, nx, TOL), "%s", what);
    free(x), free(w), free(b), free(dy), free(y1), free(y2), free(dx1), free(dx2);
    free(dw1), free(dw2), free(db1), free(db2);
}

/* The convolution that takes its batch norm's statistics (conv_bn_stats_fwd): y bit for bit
 * conv_fwd's, mean and variance within rounding of bn_fwd_train's on y (summed about a shift near
 * the mean, or far from it); and the normalisation with given statistics (bn_apply_train): bit for
 * bit bn_fwd_train / bn_relu_fwd_train / bn_add_relu_fwd_train of this table given their own
 * statistics. Geometries the direct kernel takes (3x3, stride 1, padding 1, 16 or 32 channels;
 * widths that cut into one to five tiles, odd ones included), and ones it must decline (64
 * channels, stride 2, 1x1 images), where nothing is written. */
static void stats_case(int n, int ic, int oc, int h, int w, int bias, int stride)
{
    const int oh = (h + 2 - 3) / stride + 1, ow = (w + 2 - 3) / stride + 1, hw = oh * ow;
    baton_nn_conv_geom g = {n, ic, h, w, oc, 3, 3, stride, 1, oh, ow};
    const size_t nx = (size_t)n * ic * h * w, nw = (size_t)oc * ic * 9, ny = (size_t)n * oc * hw;
    float *x = vec(nx, -1, 1), *wt = vec(nw, -0.5f, 0.5f), *b = vec((size_t)oc, -1, 1), *res = vec(ny, -1, 1);
    float *gm = vec((size_t)oc, 0.5f, 1.5f), *bt = vec((size_t)oc, -0.5f, 0.5f);
    float *y1 = vec(ny, 0, 0), *y2 = vec(ny, 5, 5), *z1 = vec(ny, 0, 0), *z2 = vec(ny, 5, 5);
    float m1[64], v1[64], m2[64], v2[64];
    char what[128];
    snprintf(what, sizeof what, "conv_bn_stats_fwd n%d %d>%d %dx%d bias %d s%d", n, ic, oc, h, w, bias, stride);
    float *tx = d_in(n, ic, h, w, x), *tres = d_in(n, oc, oh, ow, res);
    const int usable = ic <= 32 && oc <= 32 && stride == 1 && hw > 1;   /* 1x1: not blocked */
    float shift[64];
    for (int c = 0; c < oc; c++) shift[c] = (c & 1) ? 0.0f : (float)(c % 7) - 3.0f;   /* near and off */
    if (D->conv_bn_stats_ok)   /* its predicate says so beforehand, for this batch and smaller ones */
        CHECK_MSG(D->conv_bn_stats_ok(&g) == usable, "%s: conv_bn_stats_ok says %d", what, !usable);
    const int done = D->conv_bn_stats_fwd(&g, tx, wt, bias ? b : NULL, shift, y2, m2, v2);
    CHECK_MSG(done == usable, "%s: done %d, expected %d", what, done, usable);
    if (!done) {
        int untouched = 1;
        for (size_t i = 0; i < ny; i++) untouched &= y2[i] == 5.0f;
        CHECK_MSG(untouched, "%s declined but wrote its output", what);
    } else {
        D->conv_fwd(&g, tx, wt, bias ? b : NULL, y1);
        CHECK_MSG(!memcmp(y1, y2, sizeof(float) * ny), "%s: y differs from conv_fwd", what);
        D->bn_fwd_train(n, oc, hw, y1, gm, bt, 1e-5f, z1, m1, v1);
        CHECK_MSG(close_to(what, m2, m1, (size_t)oc, 1e-5) && close_to(what, v2, v1, (size_t)oc, 1e-5),
                  "%s: statistics differ from bn_fwd_train's", what);
        memcpy(m2, m1, sizeof m1);   /* the normalisation, given the same statistics */
        memcpy(v2, v1, sizeof v1);
        CHECK(D->bn_apply_train(n, oc, hw, y2, NULL, 0, gm, bt, 1e-5f, m2, v2, z2) == 1);
        CHECK_MSG(!memcmp(z1, z2, sizeof(float) * ny), "%s: bn_apply_train differs from bn_fwd_train", what);
        CHECK(D->bn_relu_fwd_train(n, oc, hw, y1, gm, bt, 1e-5f, z1, m1, v1) == 1);
        CHECK(D->bn_apply_train(n, oc, hw, y2, NULL, 1, gm, bt, 1e-5f, m2, v2, z2) == 1);
        CHECK_MSG(!memcmp(z1, z2, sizeof(float) * ny), "%s: bn_apply_train relu differs", what);
        CHECK(D->bn_add_relu_fwd_train(n, oc, hw, y1, tres, gm, bt, 1e-5f, z1, m1, v1) == 1);
        CHECK(D->bn_apply_train(n, oc, hw, y2, tres, 1, gm, bt, 1e-5f, m2, v2, z2) == 1);
        CHECK_MSG(!memcmp(z1, z2, sizeof(float) * ny), "%s: bn_apply_train add+relu differs", what);
        /* and the convolution itself against the reference (NCHW) */
        float *ry = vec(ny, 0, 0), *py = vec(ny, 0, 0);
        R->conv_fwd(&g, x, wt, bias ? b : NULL, ry);
        D->to_plain(n, oc, oh, ow, y2, py);
        CHECK_MSG(close_to(what, py, ry, ny, TOL), "%s: conv differs from the reference", what);
        free(ry), free(py);
    }
    free(tx), free(tres), free(x), free(wt), free(b), free(res), free(gm), free(bt);
    free(y1), free(y2), free(z1), free(z2);
}

static void test_conv_stats(void)
{
    if (!D->conv_bn_stats_fwd || !D->bn_apply_train) return;
    const int widths[] = {1, 2, 5, 9, 14, 16, 17, 28, 33, 40};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        const int w = widths[i], h = 1 + (int)baton_rng_below(&rng, 6);
        stats_case(1 + (int)baton_rng_below(&rng, 3), 16, 16, h, w, (int)(i & 1), 1);
        stats_case(2, 32, 16, h, w, (int)(i & 1) ^ 1, 1);
        stats_case(2, 16, 32, w, h, 0, 1);
    }
    stats_case(8, 16, 16, 28, 28, 0, 1);   /* resnet's stages on 28x28 */
    stats_case(8, 32, 32, 14, 14, 0, 1);
    stats_case(2, 64, 64, 7, 7, 0, 1);     /* declined: above the direct kernel's channel counts */
    stats_case(2, 16, 32, 28, 28, 0, 2);   /* declined: stride 2 */
    stats_case(1, 16, 16, 1, 1, 0, 1);     /* declined: one value per channel */
}

static void test_conv(void)
{
    for (int batch = 1; batch <= 32; batch += 31) {
        char t[64];
        /* lenet on 1x28x28 */
        snprintf(t, sizeof t, "lenet.conv1 n%d", batch);
        conv_case(t, batch, 1, 28, 28, 32, 3, 1, 0, 1);
        snprintf(t, sizeof t, "lenet.conv2 n%d", batch);
        conv_case(t, batch, 32, 26, 26, 64, 3, 1, 0, 1);
        /* resnet20 on the peer's 1x28x28 and on CIFAR's 3x32x32 (batch 1 only): the stem, the 3x3
         * convs of each stage, the stride-2 convs and the 1x1 stride-2 projections */
        const int inputs[2][2] = {{1, 28}, {3, 32}};
        for (int in = 0; in < (batch == 1 ? 2 : 1); in++) {
            const int c = inputs[in][0], h = inputs[in][1], h2 = (h - 1) / 2 + 1, h3 = (h2 - 1) / 2 + 1;
            snprintf(t, sizeof t, "resnet.conv %dx%d n%d", c, h, batch);
            conv_case(t, batch, c, h, h, 16, 3, 1, 1, 0);
            snprintf(t, sizeof t, "resnet.s1 %dx%d n%d", c, h, batch);
            conv_case(t, batch, 16, h, h, 16, 3, 1, 1, 0);
            snprintf(t, sizeof t, "resnet.s2.conv1 %dx%d n%d", c, h, batch);
            conv_case(t, batch, 16, h, h, 32, 3, 2, 1, 0);
            snprintf(t, sizeof t, "resnet.s2.short %dx%d n%d", c, h, batch);
            conv_case(t, batch, 16, h, h, 32, 1, 2, 0, 0);
            snprintf(t, sizeof t, "resnet.s2 %dx%d n%d", c, h, batch);
            conv_case(t, batch, 32, h2, h2, 32, 3, 1, 1, 0);
            snprintf(t, sizeof t, "resnet.s3.conv1 %dx%d n%d", c, h, batch);
            conv_case(t, batch, 32, h2, h2, 64, 3, 2, 1, 0);
            snprintf(t, sizeof t, "resnet.s3.short %dx%d n%d", c, h, batch);
            conv_case(t, batch, 32, h2, h2, 64, 1, 2, 0, 0);
            snprintf(t, sizeof t, "resnet.s3 %dx%d n%d", c, h, batch);
            conv_case(t, batch, 64, h3, h3, 64, 3, 1, 1, 0);
        }
    }
    /* random geometries, odd sizes and floor-mode leftovers included */
    for (int i = 0; i < 40; i++) {
        int k = 1 + (int)baton_rng_below(&rng, 5), stride = 1 + (int)baton_rng_below(&rng, 3);
        int pad = (int)baton_rng_below(&rng, (uint64_t)(k / 2 + 1));
        int ih = k + (int)baton_rng_below(&rng, 12), iw = k + (int)baton_rng_below(&rng, 12);
        int n = 1 + (int)baton_rng_below(&rng, 4), ic = 1 + (int)baton_rng_below(&rng, 20);
        int oc = 1 + (int)baton_rng_below(&rng, 20);
        char t[96];
        snprintf(t, sizeof t, "random conv n%d ic%d %dx%d oc%d k%d s%d p%d", n, ic, ih, iw, oc, k, stride, pad);
        conv_case(t, n, ic, ih, iw, oc, k, stride, pad, 2);
    }
}

/* ---- linear ---- */

static void linear_case(const char *tag, int n, int in, int out)
{
    const size_t nx = (size_t)n * in, nw = (size_t)out * in, ny = (size_t)n * out;
    float *x = vec(nx, -1, 1), *w = vec(nw, -0.1f, 0.1f), *b = vec((size_t)out, -1, 1), *dy = vec(ny, -1, 1);
    float *y1 = vec(ny, 0, 0), *y2 = vec(ny, 9, 9), *dx1 = vec(nx, 0, 0), *dx2 = vec(nx, 9, 9);
    float *dw1 = vec(nw, 0, 0), *dw2 = vec(nw, 9, 9), *db1 = vec((size_t)out, 0, 0), *db2 = vec((size_t)out, 9, 9);
    char what[128];
    for (int bias = 0; bias < 2; bias++) {
        R->linear_fwd(n, in, out, x, w, bias ? b : NULL, y1);
        D->linear_fwd(n, in, out, x, w, bias ? b : NULL, y2);
        snprintf(what, sizeof what, "%s linear_fwd bias %d", tag, bias);
        CHECK_MSG(close_to(what, y2, y1, ny, TOL), "%s", what);
        R->linear_bwd_weights(n, in, out, x, dy, dw1, bias ? db1 : NULL);
        D->linear_bwd_weights(n, in, out, x, dy, dw2, bias ? db2 : NULL);
        snprintf(what, sizeof what, "%s linear_bwd_weights bias %d", tag, bias);
        CHECK_MSG(close_to(what, dw2, dw1, nw, TOL), "%s", what);
        if (bias) CHECK_MSG(close_to(what, db2, db1, (size_t)out, TOL), "%s db", what);
    }
    R->linear_bwd_data(n, in, out, dy, w, dx1);
    D->linear_bwd_data(n, in, out, dy, w, dx2);
    snprintf(what, sizeof what, "%s linear_bwd_data", tag);
    CHECK_MSG(close_to(what, dx2, dx1, nx, TOL), "%s", what);
    free(x), free(w), free(b), free(dy), free(y1), free(y2), free(dx1), free(dx2);
    free(dw1), free(dw2), free(db1), free(db2);
}

static void test_linear(void)
{
    for (int batch = 1; batch <= 32; batch += 31) {
        char t[64];
        snprintf(t, sizeof t, "lenet.fc1 n%d", batch);
        linear_case(t, batch, 9216, 128);
        snprintf(t, sizeof t, "lenet.fc2 n%d", batch);
        linear_case(t, batch, 128, 10);
        snprintf(t, sizeof t, "resnet.fc n%d", batch);
        linear_case(t, batch, 64, 10);
        snprintf(t, sizeof t, "mlp.fc1 n%d", batch);
        linear_case(t, batch, 784, 256);
    }
    for (int i = 0; i < 30; i++) {
        int n = 1 + (int)baton_rng_below(&rng, 9), in = 1 + (int)baton_rng_below(&rng, 300);
        int out = 1 + (int)baton_rng_below(&rng, 40);
        char t[64];
        snprintf(t, sizeof t, "random linear n%d in%d out%d", n, in, out);
        linear_case(t, n, in, out);
    }
}

/* ---- batch norm ---- */

static void bn_case(const char *tag, int n, int c, int hw)
{
    const size_t cnt = (size_t)n * c * hw;
    /* an offset per channel, so mean subtraction matters */
    float *x = vec(cnt, -1, 1), *dy = vec(cnt, -1, 1), *g = vec((size_t)c, 0.5f, 1.5f), *b = vec((size_t)c, -1, 1);
    for (int i = 0; i < n; i++)
        for (int ch = 0; ch < c; ch++)
            for (int k = 0; k < hw; k++) x[((size_t)i * c + ch) * hw + k] += 0.25f * (float)(ch % 7);
    float *y1 = vec(cnt, 0, 0), *y2 = vec(cnt, 9, 9), *m1 = vec((size_t)c, 0, 0), *m2 = vec((size_t)c, 9, 9);
    float *v1 = vec((size_t)c, 0, 0), *v2 = vec((size_t)c, 9, 9), *rm = vec((size_t)c, -1, 1);
    float *rv = vec((size_t)c, 0.2f, 2.0f);
    float *dx1 = vec(cnt, 0, 0), *dx2 = vec(cnt, 9, 9), *dg1 = vec((size_t)c, 0, 0), *dg2 = vec((size_t)c, 9, 9);
    float *db1 = vec((size_t)c, 0, 0), *db2 = vec((size_t)c, 9, 9);
    char what[128];
    R->bn_fwd_train(n, c, hw, x, g, b, 1e-5f, y1, m1, v1);
    Dbn_fwd_train(n, c, hw, x, g, b, 1e-5f, y2, m2, v2);
    snprintf(what, sizeof what, "%s bn_fwd_train", tag);
    CHECK_MSG(close_to(what, y2, y1, cnt, TOL), "%s y", what);
    CHECK_MSG(close_to(what, m2, m1, (size_t)c, TOL), "%s mean", what);
    CHECK_MSG(close_to(what, v2, v1, (size_t)c, TOL), "%s var", what);
    R->bn_fwd_infer(n, c, hw, x, g, b, rm, rv, 1e-5f, y1);
    Dbn_fwd_infer(n, c, hw, x, g, b, rm, rv, 1e-5f, y2);
    snprintf(what, sizeof what, "%s bn_fwd_infer", tag);
    CHECK_MSG(close_to(what, y2, y1, cnt, TOL), "%s", what);
    /* backward from the same saved statistics */
    R->bn_bwd(n, c, hw, x, dy, g, m1, v1, 1e-5f, dx1, dg1, db1);
    Dbn_bwd(n, c, hw, x, dy, g, m1, v1, 1e-5f, dx2, dg2, db2);
    snprintf(what, sizeof what, "%s bn_bwd", tag);
    CHECK_MSG(close_to(what, dx2, dx1, cnt, TOL), "%s dx", what);
    CHECK_MSG(close_to(what, dg2, dg1, (size_t)c, TOL), "%s dgamma", what);
    CHECK_MSG(close_to(what, db2, db1, (size_t)c, TOL), "%s dbeta", what);
    /* batch norm fused with the ReLU after it (where the table fuses the geometry): against the
     * reference's bn_fwd_train + relu_fwd, and relu_bwd + bn_bwd */
    if (D->bn_relu_fwd_train && D->bn_relu_bwd) {
        R->bn_fwd_train(n, c, hw, x, g, b, 1e-5f, y1, m1, v1);
        R->relu_fwd(cnt, y1, y1);
        float *tx = d_in(n, c, hw, 1, x), *ty = d_in(n, c, hw, 1, y2);
        int fused = D->bn_relu_fwd_train(n, c, hw, tx, g, b, 1e-5f, ty, m2, v2);
        d_out(n, c, hw, 1, ty, y2);
        if (D->bn_fused_ok) CHECK_MSG(D->bn_fused_ok(c, hw) == fused, "%s bn_fused_ok disagrees with the entry", tag);
        if (c % 16 != 0) CHECK_MSG(!fused, "%s bn_relu_fwd_train fused an NCHW geometry", tag);
        if ((c == 16 || c == 32 || c == 64) && hw > 1) CHECK_MSG(fused, "%s bn_relu_fwd_train did not fuse", tag);
        if (fused) {
            snprintf(what, sizeof what, "%s bn_relu_fwd_train", tag);
            CHECK_MSG(close_to(what, y2, y1, cnt, TOL), "%s y", what);
            CHECK_MSG(close_to(what, m2, m1, (size_t)c, TOL), "%s mean", what);
            CHECK_MSG(close_to(what, v2, v1, (size_t)c, TOL), "%s var", what);
            /* backward from this forward's statistics: it finds where y > 0 from x, as forward did,
             * so the reference gets this forward's y for its mask */
            float *dm = vec(cnt, 0, 0);   /* d(bn output) = dy where y > 0 */
            R->relu_bwd(cnt, y2, dy, dm);
            R->bn_bwd(n, c, hw, x, dm, g, m2, v2, 1e-5f, dx1, dg1, db1);
            float *tdy = d_in(n, c, hw, 1, dy), *tdx = d_in(n, c, hw, 1, dx2);
            CHECK(D->bn_relu_bwd(n, c, hw, tx, tdy, g, b, m2, v2, 1e-5f, tdx, dg2, db2) == 1);
            d_out(n, c, hw, 1, tdx, dx2);
            snprintf(what, sizeof what, "%s bn_relu_bwd", tag);
            CHECK_MSG(close_to(what, dx2, dx1, cnt, TOL), "%s dx", what);
            CHECK_MSG(close_to(what, dg2, dg1, (size_t)c, TOL), "%s dgamma", what);
            CHECK_MSG(close_to(what, db2, db1, (size_t)c, TOL), "%s dbeta", what);
            free(dm), free(tdy);
        }
        free(tx);
    }
    /* batch norm + residual add + ReLU in one call: bit for bit this table's bn_fwd_train, then
     * add_relu (the bn output as the first addend) */
    if (D->bn_add_relu_fwd_train && D->add_relu) {
        float *r = vec(cnt, -1.0f, 1.0f);
        float *tx = d_in(n, c, hw, 1, x), *tr = d_in(n, c, hw, 1, r), *ty1 = d_in(n, c, hw, 1, y1);
        float *ty2 = d_in(n, c, hw, 1, y2);
        int fused = D->bn_add_relu_fwd_train(n, c, hw, tx, tr, g, b, 1e-5f, ty2, m2, v2);
        if (D->bn_fused_ok)
            CHECK_MSG(D->bn_fused_ok(c, hw) == fused, "%s bn_fused_ok disagrees with bn_add_relu_fwd_train", tag);
        if (c % 16 != 0) CHECK_MSG(!fused, "%s bn_add_relu_fwd_train fused an NCHW geometry", tag);
        if ((c == 16 || c == 32 || c == 64) && hw > 1) CHECK_MSG(fused, "%s bn_add_relu_fwd_train did not fuse", tag);
        if (fused) {
            D->bn_fwd_train(n, c, hw, tx, g, b, 1e-5f, ty1, m1, v1);
            CHECK(D->add_relu(cnt, ty1, tr, ty1) == 1);
            CHECK_MSG(!memcmp(ty1, ty2, sizeof(float) * cnt), "%s bn_add_relu_fwd_train y differs", tag);
            CHECK_MSG(!memcmp(m1, m2, sizeof(float) * (size_t)c) && !memcmp(v1, v2, sizeof(float) * (size_t)c),
                      "%s bn_add_relu_fwd_train statistics differ", tag);
        }
        /* its backward: bit for bit relu_bwd_add then bn_bwd of this table; without a second
         * contribution, the reference's relu_bwd then bn_bwd within rounding */
        if (fused && D->bn_add_relu_bwd && D->relu_bwd_add) {
            float *d2 = vec(cnt, -1.0f, 1.0f), *tdy = d_in(n, c, hw, 1, dy), *td2 = d_in(n, c, hw, 1, d2);
            float *g1 = vec(cnt, 0, 0), *g2 = vec(cnt, 7, 7), *tdx1 = vec(cnt, 0, 0), *tdx2 = vec(cnt, 7, 7);
            CHECK(D->relu_bwd_add(cnt, ty2, tdy, td2, g1) == 1);
            D->bn_bwd(n, c, hw, tx, g1, g, m2, v2, 1e-5f, tdx1, dg1, db1);
            CHECK(D->bn_add_relu_bwd(n, c, hw, tx, ty2, tdy, td2, g, m2, v2, 1e-5f, g2, tdx2, dg2, db2) == 1);
            CHECK_MSG(!memcmp(g1, g2, sizeof(float) * cnt) && !memcmp(tdx1, tdx2, sizeof(float) * cnt) &&
                      !memcmp(dg1, dg2, sizeof(float) * (size_t)c) && !memcmp(db1, db2, sizeof(float) * (size_t)c),
                      "%s bn_add_relu_bwd differs from relu_bwd_add + bn_bwd", tag);
            float *yp = vec(cnt, 0, 0), *dm = vec(cnt, 0, 0);
            D->to_plain(n, c, hw, 1, ty2, yp);
            R->relu_bwd(cnt, yp, dy, dm);
            R->bn_bwd(n, c, hw, x, dm, g, m2, v2, 1e-5f, dx1, dg1, db1);
            CHECK(D->bn_add_relu_bwd(n, c, hw, tx, ty2, tdy, NULL, g, m2, v2, 1e-5f, g2, tdx2, dg2, db2) == 1);
            D->to_plain(n, c, hw, 1, tdx2, dx2);
            D->to_plain(n, c, hw, 1, g2, yp);
            snprintf(what, sizeof what, "%s bn_add_relu_bwd", tag);
            CHECK_MSG(close_to(what, yp, dm, cnt, TOL), "%s g", what);
            CHECK_MSG(close_to(what, dx2, dx1, cnt, TOL), "%s dx", what);
            CHECK_MSG(close_to(what, dg2, dg1, (size_t)c, TOL), "%s dgamma", what);
            CHECK_MSG(close_to(what, db2, db1, (size_t)c, TOL), "%s dbeta", what);
            free(d2), free(tdy), free(td2), free(g1), free(g2), free(tdx1), free(tdx2), free(yp), free(dm);
        }
        free(r), free(tx), free(tr), free(ty1), free(ty2);
    }
    /* another epsilon */
    R->bn_fwd_infer(n, c, hw, x, g, b, rm, rv, 1e-3f, y1);
    Dbn_fwd_infer(n, c, hw, x, g, b, rm, rv, 1e-3f, y2);
    snprintf(what, sizeof what, "%s bn_fwd_infer eps 1e-3", tag);
    CHECK_MSG(close_to(what, y2, y1, cnt, TOL), "%s", what);
    free(x), free(dy), free(g), free(b), free(y1), free(y2), free(m1), free(m2), free(v1), free(v2), free(rm);
    free(rv), free(dx1), free(dx2), free(dg1), free(dg2), free(db1), free(db2);
}

/* the fused residual add + ReLU against the reference add then relu, also in place (y = a) */
static void test_add_relu(void)
{
    if (!D->add_relu) return;
    const size_t sizes[] = {1, 17, 4096, 128 * 16 * 784};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const size_t cnt = sizes[k];
        float *a = vec(cnt, -1, 1), *b = vec(cnt, -1, 1), *y1 = vec(cnt, 0, 0), *y2 = vec(cnt, 9, 9);
        R->add(cnt, a, b, y1);
        R->relu_fwd(cnt, y1, y1);
        CHECK(D->add_relu(cnt, a, b, y2) == 1);
        CHECK_MSG(!memcmp(y1, y2, sizeof(float) * cnt), "add_relu of %zu elements differs", cnt);
        CHECK(D->add_relu(cnt, a, b, a) == 1);   /* in place */
        CHECK_MSG(!memcmp(y1, a, sizeof(float) * cnt), "add_relu in place, %zu elements", cnt);
        free(a), free(b), free(y1), free(y2);
    }
    /* its backward with two contributions, dx = (dy + dy2) where y > 0, against add then relu_bwd */
    for (size_t k = 0; D->relu_bwd_add && k < sizeof sizes / sizeof sizes[0]; k++) {
        const size_t cnt = sizes[k];
        float *y = vec(cnt, -1, 1), *dy = vec(cnt, -1, 1), *dy2 = vec(cnt, -1, 1), *s = vec(cnt, 0, 0);
        float *dx1 = vec(cnt, 0, 0), *dx2 = vec(cnt, 9, 9);
        for (size_t i = 0; i < cnt; i += 7) y[i] = 0.0f;   /* the ReLU's zeros: masked */
        R->add(cnt, dy, dy2, s);
        R->relu_bwd(cnt, y, s, dx1);
        CHECK(D->relu_bwd_add(cnt, y, dy, dy2, dx2) == 1);
        CHECK_MSG(!memcmp(dx1, dx2, sizeof(float) * cnt), "relu_bwd_add of %zu elements differs", cnt);
        CHECK(D->relu_bwd_add(cnt, y, dy, dy2, dy2) == 1);   /* in place */
        CHECK_MSG(!memcmp(dx1, dy2, sizeof(float) * cnt), "relu_bwd_add in place, %zu elements", cnt);
        free(y), free(dy), free(dy2), free(s), free(dx1), free(dx2);
    }
}

static void test_bn(void)
{
    for (int batch = 1; batch <= 32; batch += 31) {
        char t[64];
        snprintf(t, sizeof t, "resnet.bn16 n%d", batch);
        bn_case(t, batch, 16, 28 * 28);
        snprintf(t, sizeof t, "resnet.bn32 n%d", batch);
        bn_case(t, batch, 32, 14 * 14);
        snprintf(t, sizeof t, "resnet.bn64 n%d", batch);
        bn_case(t, batch, 64, 7 * 7);
    }
    for (int i = 0; i < 20; i++) {
        int n = 1 + (int)baton_rng_below(&rng, 6), c = 1 + (int)baton_rng_below(&rng, 40);
        int hw = 1 + (int)baton_rng_below(&rng, 100);
        if (n * hw < 2) hw = 2;
        char t[64];
        snprintf(t, sizeof t, "random bn n%d c%d hw%d", n, c, hw);
        bn_case(t, n, c, hw);
    }
    /* odd shapes: one channel (all work in one thread), one pixel per plane with a batch of them,
     * planes longer than the kernel's summation block, spans shorter than a vector */
    bn_case("bn c1", 8, 1, 5000);
    bn_case("bn c1 n1", 1, 1, 3);
    bn_case("bn hw1 n2", 2, 3, 1);
    bn_case("bn hw1 n128", 128, 64, 1);
    bn_case("bn hw1 n1024", 1024, 64, 1);
    bn_case("bn hw3", 37, 5, 3);
    bn_case("bn large hw", 2, 3, 100003);
    bn_case("bn large hw n1", 1, 2, 300000);
    /* more channels than the blocked kernels keep partial sums for on the stack */
    bn_case("bn c2048", 2, 2048, 4);
    baton_err e = {0};
    const baton_nn_kernels *blocked = D, *cl = baton_nn_kernels_dnnl_bf16(&e);
    if (cl) {   /* the bfloat16 table's batch norm: float32 on channels-last activations */
        D = cl;
        bn_case("bn c2048 channels-last", 2, 2048, 4);
        bn_case("bn c64 channels-last", 4, 64, 9);
        D = blocked;
    }
}

/* Batch norm from two threads at once (one of them runs on the pool, the other on its own or
 * both share it): each result bit-identical to the same call made alone. */
typedef struct bn_par {
    int n, c, hw;
    const float *x, *dy, *g, *b;
    float *y, *m, *v, *dx, *dg, *db;
} bn_par;

static void bn_par_run(const bn_par *p)
{
    D->bn_fwd_train(p->n, p->c, p->hw, p->x, p->g, p->b, 1e-5f, p->y, p->m, p->v);
    D->bn_bwd(p->n, p->c, p->hw, p->x, p->dy, p->g, p->m, p->v, 1e-5f, p->dx, p->dg, p->db);
    D->bn_fwd_infer(p->n, p->c, p->hw, p->x, p->g, p->b, p->m, p->v, 1e-5f, p->dx);
}

static void *bn_par_thread(void *arg)
{
    for (int i = 0; i < 20; i++) bn_par_run(arg);
    return NULL;
}

static void test_bn_threads(void)
{
    enum { N = 16, C = 16, HW = 196, CNT = N * C * HW };
    float *x = vec(CNT, -1, 1), *dy = vec(CNT, -1, 1), *g = vec(C, 0.5f, 1.5f), *b = vec(C, -1, 1);
    float *out[3][6];
    for (int k = 0; k < 3; k++) {
        out[k][0] = vec(CNT, 0, 0), out[k][1] = vec(C, 0, 0), out[k][2] = vec(C, 0, 0);
        out[k][3] = vec(CNT, 0, 0), out[k][4] = vec(C, 0, 0), out[k][5] = vec(C, 0, 0);
    }
    bn_par p[3];
    for (int k = 0; k < 3; k++)
        p[k] = (bn_par){N, C, HW, x, dy, g, b, out[k][0], out[k][1], out[k][2], out[k][3], out[k][4], out[k][5]};
    bn_par_run(&p[0]);
    pthread_t th[2];
    int started[2];
    for (int k = 0; k < 2; k++) started[k] = pthread_create(&th[k], NULL, bn_par_thread, &p[k + 1]) == 0;
    for (int k = 0; k < 2; k++)
        if (started[k]) pthread_join(th[k], NULL);
    CHECK(started[0] && started[1]);
    const size_t len[6] = {CNT, C, C, CNT, C, C};
    for (int k = 1; k < 3; k++)
        for (int a = 0; a < 6; a++)
            CHECK_MSG(memcmp(out[k][a], out[0][a], sizeof(float) * len[a]) == 0, "thread %d output %d", k, a);
    free(x), free(dy), free(g), free(b);
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < 6; a++) free(out[k][a]);
}

/* ---- relu, add, pooling ---- */

static void elt_case(const char *tag, size_t cnt)
{
    float *x = vec(cnt, -1, 1), *y1 = vec(cnt, 0, 0), *y2 = vec(cnt, 9, 9), *dy = vec(cnt, -1, 1);
    float *dx1 = vec(cnt, 0, 0), *dx2 = vec(cnt, 9, 9), *a2 = vec(cnt, 0, 0);
    char what[96];
    R->relu_fwd(cnt, x, y1);
    D->relu_fwd(cnt, x, y2);
    snprintf(what, sizeof what, "%s relu_fwd", tag);
    CHECK_MSG(close_to(what, y2, y1, cnt, 0), "%s", what);
    R->relu_bwd(cnt, y1, dy, dx1);
    D->relu_bwd(cnt, y1, dy, dx2);
    snprintf(what, sizeof what, "%s relu_bwd", tag);
    CHECK_MSG(close_to(what, dx2, dx1, cnt, 0), "%s", what);
    memcpy(dx2, dy, sizeof(float) * cnt);   /* in place: dx = dy */
    D->relu_bwd(cnt, y1, dx2, dx2);
    CHECK_MSG(close_to(what, dx2, dx1, cnt, 0), "%s in place", what);
    R->add(cnt, x, dy, y1);
    D->add(cnt, x, dy, y2);
    snprintf(what, sizeof what, "%s add", tag);
    CHECK_MSG(close_to(what, y2, y1, cnt, 0), "%s", what);
    memcpy(a2, x, sizeof(float) * cnt);      /* y = a */
    D->add(cnt, a2, dy, a2);
    CHECK_MSG(close_to(what, a2, y1, cnt, 0), "%s y=a", what);
    memcpy(a2, dy, sizeof(float) * cnt);     /* y = b */
    D->add(cnt, x, a2, a2);
    CHECK_MSG(close_to(what, a2, y1, cnt, 0), "%s y=b", what);
    free(x), free(y1), free(y2), free(dy), free(dx1), free(dx2), free(a2);
}

static void pool_case(const char *tag, int n, int c, int h, int w, int k, int s)
{
    baton_nn_pool_geom g = {n, c, h, w, k, s, (h - k) / s + 1, (w - k) / s + 1};
    const size_t ni = (size_t)n * c * h * w, no = (size_t)n * c * g.oh * g.ow;
    float *x = vec(ni, -1, 1), *y1 = vec(no, 0, 0), *y2 = vec(no, 9, 9), *dy = vec(no, -1, 1);
    float *dx1 = vec(ni, 0, 0), *dx2 = vec(ni, 9, 9);
    int32_t *ws1 = calloc(no, sizeof *ws1), *ws2 = calloc(no, sizeof *ws2);
    char what[96];
    R->maxpool_fwd(&g, x, y1, ws1);
    Dmaxpool_fwd(&g, x, y2, ws2);
    snprintf(what, sizeof what, "%s maxpool_fwd", tag);
    CHECK_MSG(close_to(what, y2, y1, no, 0) && memcmp(ws1, ws2, no * sizeof *ws1) == 0, "%s", what);
    R->maxpool_bwd(&g, dy, ws1, dx1);
    Dmaxpool_bwd(&g, dy, ws1, dx2);
    snprintf(what, sizeof what, "%s maxpool_bwd", tag);
    CHECK_MSG(close_to(what, dx2, dx1, ni, 0), "%s", what);
    R->gap_fwd(n, c, h * w, x, y1);
    Dgap_fwd(n, c, h * w, x, y2);
    snprintf(what, sizeof what, "%s gap_fwd", tag);
    CHECK_MSG(close_to(what, y2, y1, (size_t)n * c, TOL), "%s", what);
    R->gap_bwd(n, c, h * w, dy, dx1);
    Dgap_bwd(n, c, h * w, dy, dx2);
    snprintf(what, sizeof what, "%s gap_bwd", tag);
    CHECK_MSG(close_to(what, dx2, dx1, ni, TOL), "%s", what);
    free(x), free(y1), free(y2), free(dy), free(dx1), free(dx2), free(ws1), free(ws2);
}

static void test_elementwise_and_pool(void)
{
    for (int batch = 1; batch <= 32; batch += 31) {
        char t[64];
        snprintf(t, sizeof t, "lenet.relu2 n%d", batch);
        elt_case(t, (size_t)batch * 64 * 24 * 24);
        snprintf(t, sizeof t, "resnet.relu16 n%d", batch);
        elt_case(t, (size_t)batch * 16 * 28 * 28);
        snprintf(t, sizeof t, "resnet.relu64 n%d", batch);
        elt_case(t, (size_t)batch * 64 * 7 * 7);
        snprintf(t, sizeof t, "lenet.pool n%d", batch);
        pool_case(t, batch, 64, 24, 24, 2, 2);
        snprintf(t, sizeof t, "resnet.gap n%d", batch);
        pool_case(t, batch, 64, 7, 7, 7, 7);
    }
    for (int i = 0; i < 20; i++) {
        char t[64];
        size_t cnt = 1 + (size_t)baton_rng_below(&rng, 5000);
        snprintf(t, sizeof t, "random elementwise %zu", cnt);
        elt_case(t, cnt);
        int k = 1 + (int)baton_rng_below(&rng, 3), s = 1 + (int)baton_rng_below(&rng, 3);
        int h = k + (int)baton_rng_below(&rng, 9), w = k + (int)baton_rng_below(&rng, 9);
        snprintf(t, sizeof t, "random pool %dx%d k%d s%d", h, w, k, s);
        pool_case(t, 1 + (int)baton_rng_below(&rng, 3), 1 + (int)baton_rng_below(&rng, 5), h, w, k, s);
        snprintf(t, sizeof t, "random blocked pool %dx%d k%d s%d", h, w, k, s);   /* kern_pool_fast.c */
        pool_case(t, 1 + (int)baton_rng_below(&rng, 3), 16 * (1 + (int)baton_rng_below(&rng, 2)), h, w, k, s);
        snprintf(t, sizeof t, "random blocked 2x2 pool %dx%d", h + 1, w + 1);
        pool_case(t, 2, 16, h + 1, w + 1, 2, 2);
    }
}

/* Max pooling ties and NaNs: the first maximum in window order wins, a NaN beats any number; on
 * NCHW (3 channels) and blocked (16, 32) activations. */
static void test_pool_ties(void)
{
    const int chans[3] = {3, 16, 32};
    for (int t = 0; t < 3; t++) {
        baton_nn_pool_geom g = {2, chans[t], 6, 8, 2, 2, 3, 4};
        const size_t ni = (size_t)2 * g.c * 6 * 8, no = (size_t)2 * g.c * 3 * 4;
        float *x = vec(ni, 0, 0), *y1 = vec(no, 0, 0), *y2 = vec(no, 9, 9);
        int32_t *ws1 = calloc(no, sizeof *ws1), *ws2 = calloc(no, sizeof *ws2);
        for (size_t i = 0; i < ni; i++) {
            uint64_t r = baton_rng_below(&rng, 10);
            x[i] = r == 0 ? NAN : (float)(r % 3);   /* few distinct values: many ties */
        }
        R->maxpool_fwd(&g, x, y1, ws1);
        Dmaxpool_fwd(&g, x, y2, ws2);
        CHECK_MSG(memcmp(ws1, ws2, sizeof *ws1 * no) == 0, "ties, %d channels: workspace", g.c);
        int same = 1;
        for (size_t i = 0; i < no; i++) same &= (isnan(y1[i]) && isnan(y2[i])) || y1[i] == y2[i];
        CHECK_MSG(same, "ties, %d channels: values", g.c);
        free(x), free(y1), free(y2), free(ws1), free(ws2);
    }
}

/* The max pool's backward fused with the ReLU before it (maxpool_relu_bwd, blocked activations):
 * what the reference's maxpool_bwd then relu_bwd give, bit for bit, for 2x2 stride-2 windows (odd
 * sizes included) and overlapping ones; ReLU outputs with exact zeros. */
static void test_pool_relu_bwd(void)
{
    if (!D->maxpool_relu_bwd) return;
    const int geo[][5] = {{16, 24, 24, 2, 2}, {32, 7, 9, 2, 2}, {16, 5, 5, 3, 2}, {16, 6, 7, 2, 1}, {48, 12, 12, 2, 2}};
    for (size_t t = 0; t < sizeof geo / sizeof geo[0]; t++) {
        const int n = 3, c = geo[t][0], h = geo[t][1], w = geo[t][2], k = geo[t][3], st = geo[t][4];
        baton_nn_pool_geom g = {n, c, h, w, k, st, (h - k) / st + 1, (w - k) / st + 1};
        const size_t ni = (size_t)n * c * h * w, no = (size_t)n * c * g.oh * g.ow;
        float *x = vec(ni, -1, 1), *r = vec(ni, 0, 0), *y = vec(no, 0, 0), *dy = vec(no, -1, 1);
        float *dr = vec(ni, 0, 0), *dx1 = vec(ni, 0, 0), *dx2 = vec(ni, 9, 9);
        int32_t *ws = calloc(no, sizeof *ws);
        R->relu_fwd(ni, x, r);
        R->maxpool_fwd(&g, r, y, ws);
        R->maxpool_bwd(&g, dy, ws, dr);
        R->relu_bwd(ni, r, dr, dx1);
        float *tdy = d_in(n, c, g.oh, g.ow, dy), *tr = d_in(n, c, h, w, r), *tdx = d_in(n, c, h, w, dx2);
        float *ty = d_in(n, c, g.oh, g.ow, y);
        int32_t *tws = calloc(no, sizeof *tws);
        D->maxpool_fwd(&g, tr, ty, tws);
        CHECK(!D->maxpool_relu_ok || D->maxpool_relu_ok(&g) == 1);
        CHECK_MSG(D->maxpool_relu_bwd(&g, tdy, tws, tr, tdx) == 1, "pool+relu %dx%d c%d k%d s%d: not fused", h, w, c,
                  k, st);
        d_out(n, c, h, w, tdx, dx2);
        CHECK_MSG(memcmp(dx1, dx2, sizeof(float) * ni) == 0, "pool+relu %dx%d c%d k%d s%d: d(ReLU input) differs", h,
                  w, c, k, st);
        free(ty), free(tdy), free(tr), free(tws);
        free(x), free(r), free(y), free(dy), free(dr), free(dx1), free(dx2), free(ws);
    }
    baton_nn_pool_geom g = {1, 3, 4, 4, 2, 2, 2, 2};   /* NCHW: not this kernel's */
    float z[48] = {0};
    int32_t zw[12] = {0};
    CHECK(D->maxpool_relu_bwd(&g, z, zw, z, z) == 0);
    CHECK(D->maxpool_relu_ok && D->maxpool_relu_ok(&g) == 0);   /* and its predicate says so */
}

/* More geometries than the primitive cache holds: entries are evicted and rebuilt, results stay
 * right (the first counts come back after their entries were evicted). */
static void test_cache_eviction(void)
{
    enum { N = 400 };
    float *x = vec(N + 1, -1, 1), *y1 = vec(N + 1, 0, 0), *y2 = vec(N + 1, 9, 9);
    int bad = 0;
    for (int round = 0; round < 2; round++)
        for (size_t cnt = 1; cnt <= N; cnt++) {
            R->relu_fwd(cnt, x, y1);
            D->relu_fwd(cnt, x, y2);
            if (memcmp(y1, y2, sizeof(float) * cnt) != 0) bad++;
        }
    CHECK_MSG(bad == 0, "%d counts differ", bad);
    free(x), free(y1), free(y2);
}

/* ---- whole models ---- */

static baton_nn_model *make(const char *name, int c, int h, int w, int batch, const baton_nn_kernels *k)
{
    baton_nn_spec s = {name, c, h, w, 10, batch, 1234};
    baton_nn_model *m = NULL;
    baton_err err;
    int rc = baton_nn_model_create(&s, k, &m, &err);
    CHECK_MSG(rc == BATON_OK, "%s: %s", name, err.msg);
    return m;
}

static void batch_of(baton_rng *r, float *x, int32_t *y, size_t per, int n)
{
    fill_uniform(r, x, per * (size_t)n, -1, 1);
    for (int i = 0; i < n; i++) y[i] = (int32_t)baton_rng_below(r, 10);
}

/* One SGD step (momentum, weight decay) under each table from the same weights and batch. */
static void test_one_step(const char *name, int c, int h, int w, int batch)
{
    baton_nn_model *mr = make(name, c, h, w, batch, R), *md = make(name, c, h, w, batch, D);
    baton_nn_optim *orf = NULL, *od = NULL;
    baton_nn_optim_cfg cfg = {.kind = BATON_NN_SGD, .momentum = 0.9, .weight_decay = 5e-4};
    baton_err err;
    float *x = malloc(sizeof(float) * (size_t)batch * c * h * w);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)batch);
    if (!mr || !md || !x || !lab) goto out;
    CHECK(baton_nn_optim_create(&cfg, mr, &orf, &err) == BATON_OK);
    CHECK(baton_nn_optim_create(&cfg, md, &od, &err) == BATON_OK);
    if (!orf || !od) goto out;
    baton_rng r;
    baton_rng_seed(&r, 99);
    batch_of(&r, x, lab, (size_t)c * h * w, batch);
    float lr_loss = 0, ld_loss = 0;
    int cr = 0, cd = 0;
    CHECK(baton_nn_train_batch(mr, x, lab, batch, &lr_loss, &cr, &err) == BATON_OK);
    CHECK(baton_nn_train_batch(md, x, lab, batch, &ld_loss, &cd, &err) == BATON_OK);
    CHECK_MSG(fabsf(lr_loss - ld_loss) <= 1e-4f * (1.0f + fabsf(lr_loss)), "%s loss %.7g vs %.7g", name, lr_loss,
              ld_loss);
    CHECK_MSG(cr == cd, "%s correct %d vs %d", name, cr, cd);
    int bad_g = 0, bad_w = 0;
    for (size_t i = 0; i < baton_nn_model_ntensors(mr); i++) {
        baton_nn_tensor a, b;
        baton_nn_model_tensor(mr, i, &a);
        baton_nn_model_tensor(md, i, &b);
        if (a.kind != BATON_NN_PARAM) continue;
        char what[128];
        snprintf(what, sizeof what, "%s %s grad", name, a.name);
        /* gradients pass through the whole network: float rounding compounds, so a looser bound */
        if (!close_to(what, b.grad, a.grad, a.numel, 1e-3)) bad_g++;
    }
    CHECK(baton_nn_optim_step(orf, 0.1, &err) == BATON_OK);
    CHECK(baton_nn_optim_step(od, 0.1, &err) == BATON_OK);
    for (size_t i = 0; i < baton_nn_model_ntensors(mr); i++) {
        baton_nn_tensor a, b;
        baton_nn_model_tensor(mr, i, &a);
        baton_nn_model_tensor(md, i, &b);
        if (a.dtype != BATON_NN_F32) continue;
        char what[128];
        snprintf(what, sizeof what, "%s %s after one step", name, a.name);
        if (!close_to(what, b.data, a.data, a.numel, TOL)) bad_w++;
    }
    CHECK_MSG(bad_g == 0, "%s: %d gradients differ", name, bad_g);
    CHECK_MSG(bad_w == 0, "%s: %d tensors differ after one step", name, bad_w);
    /* evaluation mode (running statistics) agrees too */
    baton_nn_model_set_training(mr, 0);
    baton_nn_model_set_training(md, 0);
    CHECK(baton_nn_forward(mr, x, batch, &err) == BATON_OK);
    CHECK(baton_nn_forward(md, x, batch, &err) == BATON_OK);
    CHECK_MSG(close_to("eval logits", baton_nn_logits(md), baton_nn_logits(mr), (size_t)batch * 10, TOL), "%s",
              name);
out:
    baton_nn_optim_free(orf);
    baton_nn_optim_free(od);
    baton_nn_model_free(mr);
    baton_nn_model_free(md);
    free(x);
    free(lab);
}

/* steps training steps under the oneDNN table; the final weights go to out (numel floats). */
static size_t train_run(const char *name, int c, int h, int w, int batch, int steps, float *out, float *losses)
{
    baton_nn_model *m = make(name, c, h, w, batch, D);
    baton_nn_optim *o = NULL;
    baton_nn_optim_cfg cfg = {.kind = BATON_NN_SGD, .momentum = 0.9, .nesterov = 1, .weight_decay = 5e-4};
    baton_err err;
    size_t total = 0;
    float *x = malloc(sizeof(float) * (size_t)batch * c * h * w);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)batch);
    if (m && x && lab && baton_nn_optim_create(&cfg, m, &o, &err) == BATON_OK) {
        baton_rng r;
        baton_rng_seed(&r, 5);
        for (int s = 0; s < steps; s++) {
            /* a smaller last batch exercises a second set of primitives */
            int n = s == steps - 1 ? batch / 2 : batch;
            batch_of(&r, x, lab, (size_t)c * h * w, n);
            int correct;
            if (baton_nn_train_batch(m, x, lab, n, &losses[s], &correct, &err) != BATON_OK ||
                baton_nn_optim_step(o, 0.05, &err) != BATON_OK) {
                CHECK_MSG(0, "%s step %d: %s", name, s, err.msg);
                break;
            }
        }
        for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {
            baton_nn_tensor t;
            baton_nn_model_tensor(m, i, &t);
            if (t.dtype != BATON_NN_F32) continue;
            if (out) memcpy(out + total, t.data, sizeof(float) * t.numel);
            total += t.numel;
        }
    }
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
    free(x);
    free(lab);
    return total;
}

static void test_reproducible(const char *name, int c, int h, int w, int batch, int steps)
{
    float l1[64], l2[64];
    size_t n = train_run(name, c, h, w, batch, 1, NULL, l1);
    float *a = calloc(n ? n : 1, sizeof(float)), *b = calloc(n ? n : 1, sizeof(float));
    if (!a || !b || n == 0) {
        CHECK(0);
        free(a), free(b);
        return;
    }
    train_run(name, c, h, w, batch, steps, a, l1);
    train_run(name, c, h, w, batch, steps, b, l2);
    CHECK_MSG(memcmp(l1, l2, sizeof(float) * (size_t)steps) == 0, "%s: losses differ run to run", name);
    CHECK_MSG(memcmp(a, b, sizeof(float) * n) == 0, "%s: weights differ run to run", name);
    CHECK_MSG(isfinite(l1[steps - 1]), "%s: final loss %g", name, l1[steps - 1]);
    free(a), free(b);
}

/* ---- the plan: fused entries chosen when the model is built, never declined at run time ---- */

/* the oneDNN table with its fused entries counted: calls, and calls that declined (returned 0) */
enum { F_CONV_RELU, F_CONV_STATS, F_BN_RELU_F, F_BN_RELU_B, F_BN_ADD_F, F_BN_APPLY, F_BN_ADD_B, F_ADD_RELU,
       F_RELU_BWD_ADD, F_POOL_RELU, F_N };
static unsigned long fcalls[F_N], fdeclined[F_N];
#define COUNT(i, call) do { int d_ = (call); fcalls[i]++; fdeclined[i] += !d_; return d_; } while (0)
static int c_conv_relu(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{ COUNT(F_CONV_RELU, D->conv_relu_fwd(g, x, w, b, y)); }
static int c_conv_stats(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, const float *sh,
                        float *y, float *mean, float *var)
{ COUNT(F_CONV_STATS, D->conv_bn_stats_fwd(g, x, w, b, sh, y, mean, var)); }
static int c_bn_relu_f(int n, int c, int hw, const float *x, const float *g, const float *b, float eps, float *y,
                       float *mean, float *var)
{ COUNT(F_BN_RELU_F, D->bn_relu_fwd_train(n, c, hw, x, g, b, eps, y, mean, var)); }
static int c_bn_relu_b(int n, int c, int hw, const float *x, const float *dy, const float *g, const float *b,
                       const float *mean, const float *var, float eps, float *dx, float *dg, float *db)
{ COUNT(F_BN_RELU_B, D->bn_relu_bwd(n, c, hw, x, dy, g, b, mean, var, eps, dx, dg, db)); }
static int c_bn_add_f(int n, int c, int hw, const float *x, const float *r, const float *g, const float *b, float eps,
                      float *y, float *mean, float *var)
{ COUNT(F_BN_ADD_F, D->bn_add_relu_fwd_train(n, c, hw, x, r, g, b, eps, y, mean, var)); }
static int c_bn_apply(int n, int c, int hw, const float *x, const float *r, int relu, const float *g, const float *b,
                      float eps, const float *mean, const float *var, float *y)
{ COUNT(F_BN_APPLY, D->bn_apply_train(n, c, hw, x, r, relu, g, b, eps, mean, var, y)); }
static int c_bn_add_b(int n, int c, int hw, const float *x, const float *y, const float *dy, const float *dy2,
                      const float *g, const float *mean, const float *var, float eps, float *go, float *dx, float *dg,
                      float *db)
{ COUNT(F_BN_ADD_B, D->bn_add_relu_bwd(n, c, hw, x, y, dy, dy2, g, mean, var, eps, go, dx, dg, db)); }
static int c_add_relu(size_t cnt, const float *a, const float *b, float *y) { COUNT(F_ADD_RELU, D->add_relu(cnt, a, b, y)); }
static int c_relu_bwd_add(size_t cnt, const float *y, const float *dy, const float *dy2, float *dx)
{ COUNT(F_RELU_BWD_ADD, D->relu_bwd_add(cnt, y, dy, dy2, dx)); }
static int c_pool_relu(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *r, float *dx)
{ COUNT(F_POOL_RELU, D->maxpool_relu_bwd(g, dy, ws, r, dx)); }

/* A few training steps (full batches, a smaller one, one of two images) and an evaluation forward
 * under the counting table: no fused entry is ever called for a geometry it declines (the model
 * asked the predicates when it was planned), those the model uses do run, and the weights are
 * those of the plain table, bit for bit. want: the entries that must have been called. */
static void plan_case(const char *name, int c, int hw, int batch, const int *want, int nwant)
{
    baton_nn_kernels counting = *D;
    counting.conv_relu_fwd = c_conv_relu, counting.conv_bn_stats_fwd = c_conv_stats;
    counting.bn_relu_fwd_train = c_bn_relu_f, counting.bn_relu_bwd = c_bn_relu_b;
    counting.bn_add_relu_fwd_train = c_bn_add_f, counting.bn_apply_train = c_bn_apply;
    counting.bn_add_relu_bwd = c_bn_add_b, counting.add_relu = c_add_relu, counting.relu_bwd_add = c_relu_bwd_add;
    counting.maxpool_relu_bwd = c_pool_relu;
    memset(fcalls, 0, sizeof fcalls);
    memset(fdeclined, 0, sizeof fdeclined);
    baton_nn_model *a = make(name, c, hw, hw, batch, &counting), *b = make(name, c, hw, hw, batch, D);
    const size_t per = (size_t)c * hw * hw;
    float *x = malloc(sizeof(float) * per * (size_t)batch);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)batch);
    baton_err err;
    if (!a || !b || !x || !lab) goto out;
    baton_rng r;
    baton_rng_seed(&r, 17);
    const int ns[] = {batch, batch / 2 + 1, 2, batch};
    for (int s = 0; s < 4; s++) {
        batch_of(&r, x, lab, per, ns[s]);
        float la, lb;
        int ca, cb;
        CHECK_MSG(baton_nn_train_batch(a, x, lab, ns[s], &la, &ca, &err) == BATON_OK, "%s: %s", name, err.msg);
        CHECK(baton_nn_train_batch(b, x, lab, ns[s], &lb, &cb, &err) == BATON_OK);
        CHECK_MSG(la == lb && ca == cb, "%s %dx%d step %d: loss %g vs %g", name, hw, hw, s, la, lb);
    }
    baton_nn_model_set_training(a, 0);
    CHECK(baton_nn_forward(a, x, batch, &err) == BATON_OK);
    int same = 1;
    for (size_t i = 0; i < baton_nn_model_ntensors(a); i++) {
        baton_nn_tensor ta, tb;
        baton_nn_model_tensor(a, i, &ta);
        baton_nn_model_tensor(b, i, &tb);
        same &= ta.dtype != BATON_NN_F32 || !memcmp(ta.data, tb.data, sizeof(float) * ta.numel);
        same &= !ta.grad || !memcmp(ta.grad, tb.grad, sizeof(float) * ta.numel);
    }
    CHECK_MSG(same, "%s %dx%d: the counting table's model differs", name, hw, hw);
    for (int i = 0; i < F_N; i++)
        CHECK_MSG(fdeclined[i] == 0, "%s %dx%d: fused entry %d declined %lu of %lu calls", name, hw, hw, i,
                  fdeclined[i], fcalls[i]);
    for (int i = 0; i < nwant; i++)
        CHECK_MSG(fcalls[want[i]] > 0, "%s %dx%d: fused entry %d never used", name, hw, hw, want[i]);
out:
    baton_nn_model_free(a);
    baton_nn_model_free(b);
    free(x);
    free(lab);
}

static void test_plan(void)
{
    if (!D->bn_add_relu_fwd_train || !D->conv_relu_fwd || !D->maxpool_relu_bwd) return;
    const int res[] = {F_CONV_STATS, F_BN_APPLY, F_BN_RELU_F, F_BN_RELU_B, F_BN_ADD_B};
    const int tail[] = {F_BN_ADD_B, F_ADD_RELU, F_RELU_BWD_ADD}, le[] = {F_CONV_RELU, F_POOL_RELU};
    plan_case("resnet8", 1, 28, 8, res, 5);    /* 28, 14, 7: every stage blocked */
    plan_case("resnet20", 3, 8, 4, res, 5);
    plan_case("resnet20", 1, 4, 8, tail, 3);   /* the last stage 1x1: no blocked batch norm there */
    plan_case("lenet", 1, 12, 8, le, 2);
    plan_case("mlp", 1, 6, 8, NULL, 0);
    /* a forward under one table is not carried into another's backward */
    baton_nn_model *m = make("resnet8", 1, 8, 8, 2, D);
    float x[2 * 64] = {0};
    int32_t lab[2] = {1, 2};
    float loss;
    baton_err err;
    if (!m) return;
    CHECK(baton_nn_forward(m, x, 2, &err) == BATON_OK && baton_nn_loss(m, lab, &loss, NULL, &err) == BATON_OK);
    baton_nn_model_set_kernels(m, R);
    CHECK(baton_nn_backward(m, &err) == BATON_ERR_ARG);
    CHECK(baton_nn_train_batch(m, x, lab, 2, &loss, NULL, &err) == BATON_OK);
    baton_nn_model_free(m);
}

int main(int argc, char **argv)
{
    /* OpenMP threads that spin while waiting crawl when the machine is busy with other tests, and
     * libgomp reads its settings before main: so, unless the caller chose a wait policy, run again
     * with passive waiting (it changes no result) */
    if (argc >= 1 && !getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);   /* on failure, go on as we are */
    }
    baton_err err;
    R = baton_nn_kernels_reference();
    D = baton_nn_kernels_dnnl(&err);
    CHECK_MSG(D != NULL, "%s", err.msg);
    if (!D) CHECK_DONE();
    CHECK(strcmp(D->name, "dnnl") == 0);
    CHECK(baton_nn_kernels_dnnl(NULL) == D);   /* one table per process */
    baton_rng_seed(&rng, 2024);
    test_layout();
    test_conv();
    test_conv_stats();
    test_linear();
    test_bn();
    test_add_relu();
    test_bn_threads();
    test_elementwise_and_pool();
    test_pool_ties();
    test_pool_relu_bwd();
    test_cache_eviction();
    test_one_step("lenet", 1, 28, 28, 8);
    test_one_step("resnet8", 1, 28, 28, 8);
    test_one_step("resnet8", 1, 4, 4, 8);   /* a 1x1 last stage: its batch norms unfused */
    test_plan();
    test_reproducible("lenet", 1, 28, 28, 16, 30);
    test_reproducible("resnet8", 3, 16, 16, 16, 30);
    CHECK_DONE();
}
