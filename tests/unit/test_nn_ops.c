/* test_nn_ops.c — the reference kernels: every op's backward against central finite differences
 * of a random projection of its output (loss = sum(y * r), accumulated in double) on tiny shapes;
 * convolution forward against hand-computed examples; batch-norm inference formula; softmax
 * cross-entropy value, gradient and accuracy count; dropout determinism. */
#include "nn_gradcheck.h"

#include <stdlib.h>

static const baton_nn_kernels *K;

static double project(const float *y, const float *r, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)y[i] * r[i];
    return s;
}

/* ---- convolution ---- */
typedef struct {
    baton_nn_conv_geom g;
    float *x, *w, *b, *y, *r;
    size_t nx, nw, ny;
} conv_ctx;

static double conv_loss(void *p)
{
    conv_ctx *c = p;
    K->conv_fwd(&c->g, c->x, c->w, c->b, c->y);
    return project(c->y, c->r, c->ny);
}

static void test_conv_grad(baton_rng *r, int n, int ic, int ih, int iw, int oc, int k, int stride, int pad,
                           int bias)
{
    conv_ctx c;
    c.g = (baton_nn_conv_geom){n, ic, ih, iw, oc, k, k, stride, pad, (ih + 2 * pad - k) / stride + 1,
                               (iw + 2 * pad - k) / stride + 1};
    c.nx = (size_t)n * ic * ih * iw;
    c.nw = (size_t)oc * ic * k * k;
    c.ny = (size_t)n * oc * c.g.oh * c.g.ow;
    c.x = malloc(sizeof(float) * c.nx);
    c.w = malloc(sizeof(float) * c.nw);
    c.b = bias ? malloc(sizeof(float) * oc) : NULL;
    c.y = malloc(sizeof(float) * c.ny);
    c.r = malloc(sizeof(float) * c.ny);
    float *dx = malloc(sizeof(float) * c.nx), *dw = malloc(sizeof(float) * c.nw);
    float *db = bias ? malloc(sizeof(float) * oc) : NULL;
    fill_uniform(r, c.x, c.nx, -1, 1);
    fill_uniform(r, c.w, c.nw, -1, 1);
    if (bias) fill_uniform(r, c.b, oc, -1, 1);
    fill_uniform(r, c.r, c.ny, -1, 1);
    K->conv_bwd_data(&c.g, c.r, c.w, dx);
    K->conv_bwd_weights(&c.g, c.x, c.r, dw, db);
    CHECK(gradcheck("conv dx", conv_loss, &c, c.x, dx, c.nx, 1e-2f, 1e-3, 1e-2, 200, r) == 0);
    CHECK(gradcheck("conv dw", conv_loss, &c, c.w, dw, c.nw, 1e-2f, 1e-3, 1e-2, 200, r) == 0);
    if (bias) CHECK(gradcheck("conv db", conv_loss, &c, c.b, db, (size_t)oc, 1e-2f, 1e-3, 1e-2, 200, r) == 0);
    free(c.x), free(c.w), free(c.b), free(c.y), free(c.r), free(dx), free(dw), free(db);
}

static void test_conv_hand(void)
{
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[4];
    /* 2x2 kernel [[1,0],[0,-1]]: y = x[i][j] - x[i+1][j+1] = -4, plus bias 0.5 */
    float w[4] = {1, 0, 0, -1}, b = 0.5f;
    baton_nn_conv_geom g = {1, 1, 3, 3, 1, 2, 2, 1, 0, 2, 2};
    K->conv_fwd(&g, x, w, &b, y);
    for (int i = 0; i < 4; i++) CHECK(y[i] == -3.5f);
    /* 3x3 ones, padding 1, stride 2: each output sums the 2x2 corner block it overlaps */
    float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    baton_nn_conv_geom g2 = {1, 1, 3, 3, 1, 3, 3, 2, 1, 2, 2};
    K->conv_fwd(&g2, x, ones, NULL, y);
    CHECK(y[0] == 12.0f && y[1] == 16.0f && y[2] == 24.0f && y[3] == 28.0f);
    /* two input channels, two output channels, 1x1: a per-pixel matrix product */
    float x2[2 * 4] = {1, 2, 3, 4, 10, 20, 30, 40}, w2[4] = {1, 1, 2, -1}, y2[8];
    baton_nn_conv_geom g3 = {1, 2, 2, 2, 2, 1, 1, 1, 0, 2, 2};
    K->conv_fwd(&g3, x2, w2, NULL, y2);
    CHECK(y2[0] == 11 && y2[3] == 44 && y2[4] == -8 && y2[7] == -32);
}

/* ---- linear ---- */
typedef struct {
    int n, in, out;
    float *x, *w, *b, *y, *r;
} lin_ctx;

static double lin_loss(void *p)
{
    lin_ctx *c = p;
    K->linear_fwd(c->n, c->in, c->out, c->x, c->w, c->b, c->y);
    return project(c->y, c->r, (size_t)c->n * c->out);
}

static void test_linear(baton_rng *r)
{
    lin_ctx c = {3, 7, 5, NULL, NULL, NULL, NULL, NULL};
    float x[21], w[35], b[5], y[15], rr[15], dx[21], dw[35], db[5];
    c.x = x, c.w = w, c.b = b, c.y = y, c.r = rr;
    fill_uniform(r, x, 21, -1, 1);
    fill_uniform(r, w, 35, -1, 1);
    fill_uniform(r, b, 5, -1, 1);
    fill_uniform(r, rr, 15, -1, 1);
    K->linear_bwd_data(3, 7, 5, rr, w, dx);
    K->linear_bwd_weights(3, 7, 5, x, rr, dw, db);
    CHECK(gradcheck("linear dx", lin_loss, &c, x, dx, 21, 1e-2f, 1e-3, 1e-2, 100, r) == 0);
    CHECK(gradcheck("linear dw", lin_loss, &c, w, dw, 35, 1e-2f, 1e-3, 1e-2, 100, r) == 0);
    CHECK(gradcheck("linear db", lin_loss, &c, b, db, 5, 1e-2f, 1e-3, 1e-2, 100, r) == 0);
    /* hand: x [1,2], w [[1,1],[2,-1]], b [0, 1] -> [3, 1] */
    float hx[2] = {1, 2}, hw[4] = {1, 1, 2, -1}, hb[2] = {0, 1}, hy[2];
    K->linear_fwd(1, 2, 2, hx, hw, hb, hy);
    CHECK(hy[0] == 3 && hy[1] == 1);
}

/* ---- batch norm (training) ---- */
typedef struct {
    int n, c, hw;
    float *x, *g, *b, *y, *r, mean[4], var[4];
} bn_ctx;

static double bn_loss(void *p)
{
    bn_ctx *c = p;
    K->bn_fwd_train(c->n, c->c, c->hw, c->x, c->g, c->b, 1e-5f, c->y, c->mean, c->var);
    return project(c->y, c->r, (size_t)c->n * c->c * c->hw);
}

static void test_bn(baton_rng *r)
{
    enum { N = 3, C = 4, HW = 5, T = N * C * HW };
    float x[T], g[C], b[C], y[T], rr[T], dx[T], dg[C], db[C];
    bn_ctx c = {N, C, HW, x, g, b, y, rr, {0}, {0}};
    fill_uniform(r, x, T, -2, 2);
    fill_uniform(r, g, C, 0.5f, 1.5f);
    fill_uniform(r, b, C, -1, 1);
    fill_uniform(r, rr, T, -1, 1);
    bn_loss(&c);
    /* normalised output has mean beta and (biased) variance gamma^2 per channel */
    for (int ch = 0; ch < C; ch++) {
        double s = 0, s2 = 0;
        for (int i = 0; i < N; i++)
            for (int k = 0; k < HW; k++) s += y[(i * C + ch) * HW + k];
        double mu = s / (N * HW);
        for (int i = 0; i < N; i++)
            for (int k = 0; k < HW; k++) s2 += pow(y[(i * C + ch) * HW + k] - mu, 2);
        CHECK(fabs(mu - b[ch]) < 1e-5);
        CHECK(fabs(s2 / (N * HW) - (double)g[ch] * g[ch]) < 1e-3);
    }
    K->bn_bwd(N, C, HW, x, rr, g, c.mean, c.var, 1e-5f, dx, dg, db);
    CHECK(gradcheck("bn dx", bn_loss, &c, x, dx, T, 1e-2f, 2e-3, 2e-2, 100, r) == 0);
    CHECK(gradcheck("bn dgamma", bn_loss, &c, g, dg, C, 1e-2f, 1e-3, 1e-2, 100, r) == 0);
    CHECK(gradcheck("bn dbeta", bn_loss, &c, b, db, C, 1e-2f, 1e-3, 1e-2, 100, r) == 0);
    /* inference: y = (x - mean) / sqrt(var + eps) * gamma + beta with the given statistics */
    float rm[C] = {0.5f, -1, 0, 2}, rv[C] = {4, 1, 0.25f, 9};
    K->bn_fwd_infer(N, C, HW, x, g, b, rm, rv, 1e-5f, y);
    int ok = 1;
    for (int i = 0; i < T; i++) {
        int ch = (i / HW) % C;
        double want = (x[i] - rm[ch]) / sqrt(rv[ch] + 1e-5) * g[ch] + b[ch];
        if (fabs(want - y[i]) > 1e-5) ok = 0;
    }
    CHECK(ok);
}

/* ---- relu / maxpool / gap / add ---- */
typedef struct {
    int which;   /* 0 relu, 1 maxpool, 2 gap, 3 add (x + x2), 4 dropout */
    baton_nn_pool_geom pg;
    float *x, *x2, *y, *r, *mask;
    int32_t *ws;
    size_t nx, ny;
    baton_rng drop;
} misc_ctx;

static double misc_loss(void *p)
{
    misc_ctx *c = p;
    switch (c->which) {
    case 0: K->relu_fwd(c->nx, c->x, c->y); break;
    case 1: K->maxpool_fwd(&c->pg, c->x, c->y, c->ws); break;
    case 2: K->gap_fwd(c->pg.n, c->pg.c, c->pg.ih * c->pg.iw, c->x, c->y); break;
    case 3: K->add(c->nx, c->x, c->x2, c->y); break;
    case 4: {
        baton_rng rr = c->drop;   /* same mask every evaluation */
        baton_nn_dropout_fwd(c->nx, 0.3f, &rr, c->x, c->y, c->mask);
        break;
    }
    }
    return project(c->y, c->r, c->ny);
}

static void test_misc(baton_rng *r)
{
    enum { N = 2, C = 3, H = 5, W = 6, T = N * C * H * W };
    float x[T], x2[T], y[T], rr[T], dx[T], mask[T];
    int32_t ws[T];
    misc_ctx c;
    memset(&c, 0, sizeof c);
    c.x = x, c.x2 = x2, c.y = y, c.r = rr, c.ws = ws, c.mask = mask, c.nx = T;
    /* values away from relu's kink and with distinct pool maxima (spacing > 2*eps) */
    for (int i = 0; i < T; i++) {
        x[i] = (float)((i * 37) % T) * 0.05f - 4.4f;
        if (fabsf(x[i]) < 0.03f) x[i] = 0.04f;
    }
    fill_uniform(r, x2, T, -1, 1);
    fill_uniform(r, rr, T, -1, 1);

    c.which = 0, c.ny = T;
    misc_loss(&c);
    K->relu_bwd(T, y, rr, dx);
    CHECK(gradcheck("relu dx", misc_loss, &c, x, dx, T, 1e-2f, 1e-4, 1e-3, 400, r) == 0);

    c.which = 1, c.pg = (baton_nn_pool_geom){N, C, H, W, 2, 2, 2, 3}, c.ny = (size_t)N * C * 2 * 3;
    misc_loss(&c);
    K->maxpool_bwd(&c.pg, rr, ws, dx);
    CHECK(gradcheck("maxpool dx", misc_loss, &c, x, dx, T, 1e-2f, 1e-4, 1e-3, 400, r) == 0);
    /* hand: a 2x2 plane [[1,3],[3,2]] -> 3, the first maximum (index 1) gets the gradient */
    float hx[4] = {1, 3, 3, 2}, hy, hd = 1, hdx[4];
    int32_t hws;
    baton_nn_pool_geom hg = {1, 1, 2, 2, 2, 2, 1, 1};
    K->maxpool_fwd(&hg, hx, &hy, &hws);
    K->maxpool_bwd(&hg, &hd, &hws, hdx);
    CHECK(hy == 3 && hws == 1 && hdx[0] == 0 && hdx[1] == 1 && hdx[2] == 0 && hdx[3] == 0);

    c.which = 2, c.pg = (baton_nn_pool_geom){N, C, H, W, 0, 0, 1, 1}, c.ny = (size_t)N * C;
    misc_loss(&c);
    K->gap_bwd(N, C, H * W, rr, dx);
    CHECK(gradcheck("gap dx", misc_loss, &c, x, dx, T, 1e-2f, 1e-4, 1e-3, 400, r) == 0);

    c.which = 3, c.ny = T;
    for (int i = 0; i < T; i++) dx[i] = rr[i];
    CHECK(gradcheck("add da", misc_loss, &c, x, dx, T, 1e-2f, 1e-4, 1e-3, 400, r) == 0);
    CHECK(gradcheck("add db", misc_loss, &c, x2, dx, T, 1e-2f, 1e-4, 1e-3, 400, r) == 0);

    c.which = 4, c.ny = T;
    baton_rng_seed(&c.drop, 5);
    misc_loss(&c);
    baton_nn_dropout_bwd(T, mask, rr, dx);
    CHECK(gradcheck("dropout dx", misc_loss, &c, x, dx, T, 1e-2f, 1e-4, 1e-3, 400, r) == 0);
    /* kept fraction near 0.7, scale 1/0.7, identical masks from identical RNG states */
    int kept = 0, scale_ok = 1;
    for (int i = 0; i < T; i++) {
        if (mask[i] != 0) kept++;
        if (mask[i] != 0 && mask[i] != 1.0f / 0.7f) scale_ok = 0;
    }
    CHECK(kept > T / 2 && kept < T * 9 / 10 && scale_ok);
    float mask2[T];
    baton_rng d2 = c.drop;
    baton_nn_dropout_fwd(T, 0.3f, &d2, x, y, mask2);
    CHECK(memcmp(mask, mask2, sizeof mask) == 0);
}

/* ---- softmax cross-entropy ---- */
typedef struct {
    float logits[12];
    int32_t labels[3];
} xent_ctx;

static double xent_loss(void *p)
{
    xent_ctx *c = p;
    float l;
    baton_nn_softmax_xent(3, 4, c->logits, c->labels, NULL, &l, NULL);
    return l;
}

static void test_xent(baton_rng *r)
{
    xent_ctx c = {{0}, {2, 0, 3}};
    fill_uniform(r, c.logits, 12, -2, 2);
    float d[12], loss;
    int correct;
    baton_nn_softmax_xent(3, 4, c.logits, c.labels, d, &loss, &correct);
    CHECK(gradcheck("xent dlogits", xent_loss, &c, c.logits, d, 12, 1e-2f, 2e-4, 1e-2, 100, r) == 0);
    /* hand: uniform logits -> loss ln(4); argmax ties pick the first class */
    float z[8] = {0}, dz[8];
    int32_t lab[2] = {0, 1};
    baton_nn_softmax_xent(2, 4, z, lab, dz, &loss, &correct);
    CHECK(fabs(loss - log(4.0)) < 1e-6 && correct == 1);
    CHECK(fabsf(dz[0] - (0.25f - 1) / 2) < 1e-7f && fabsf(dz[1] - 0.125f) < 1e-7f);
    /* large logits do not overflow */
    float big[2] = {1000, -1000};
    int32_t l1 = 1;
    baton_nn_softmax_xent(1, 2, big, &l1, NULL, &loss, &correct);
    CHECK(fabs(loss - 2000.0) < 1e-2 && correct == 0);
}

int main(void)
{
    K = baton_nn_kernels_reference();
    CHECK(strcmp(K->name, "reference") == 0);
    baton_rng r;
    baton_rng_seed(&r, 1234);
    test_conv_hand();
    test_conv_grad(&r, 2, 3, 5, 6, 4, 3, 1, 1, 1);   /* same padding with bias */
    test_conv_grad(&r, 2, 2, 7, 6, 3, 3, 2, 1, 0);   /* strided, no bias */
    test_conv_grad(&r, 1, 3, 5, 5, 2, 1, 2, 0, 0);   /* 1x1 stride 2 projection */
    test_conv_grad(&r, 2, 1, 6, 6, 3, 3, 1, 0, 1);   /* valid (lenet-style) */
    test_linear(&r);
    test_bn(&r);
    test_misc(&r);
    test_xent(&r);
    CHECK_DONE();
}
