/* train_speed.c — training throughput of baton's models on synthetic batches (no data loading), the
 * same measurement the PyTorch peer (../shared/peers/torch/bench.py) makes: a model built for
 * 28x28x1 input and 10 classes, SGD with momentum 0.9 and weight decay 5e-4, timed repeats of
 * forward + loss + backward + update. Prints img/s per repeat, the median, achieved GFLOP/s, and
 * with --profile the time per kernel-table entry. The JSON also gives images per CPU-second of the
 * process (all its threads; the median repeat's): on a shared machine, with one thread
 * (OMP_NUM_THREADS=1), a steadier measure of the code than wall-clock img/s, which counts the time
 * the scheduler gave to others.
 *
 *   train_speed --model resnet20 [--batch 128] [--seconds 4] [--reps 3] [--reference] [--profile] [--json]
 *               [--precision f32|bf16] [--cpu-clock]
 *
 * --cpu-clock: every time (the repeats' length, img/s, the profile's ms per step) is the process's
 * CPU time instead of wall-clock — with OMP_NUM_THREADS=1 on a shared machine, what the code costs
 * without the time the scheduler gave to other processes.
 *
 * FLOPs: 2 × multiply-accumulates of convolutions and linear layers per image for the forward
 * pass; a training step counts 3 × forward minus the first layer's data gradient (not computed),
 * the convention bench.py uses. */
#include "baton/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static clockid_t clock_id = CLOCK_MONOTONIC;   /* --cpu-clock: the process's CPU time */

static double now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* --- per-entry profiling: a table whose entries time the wrapped table's ----------------------- */
enum { P_CONV_F, P_CONV_BD, P_CONV_BW, P_LIN_F, P_LIN_BD, P_LIN_BW, P_BN_F, P_BN_I, P_BN_B, P_RELU_F,
       P_RELU_B, P_MP_F, P_MP_B, P_GAP_F, P_GAP_B, P_ADD, P_BNR_F, P_BNR_B, P_ADDR, P_CONVR_F,
       P_MPR_B, P_BNAR_F, P_RELU_BA, P_BNAR_B, P_CONVS_F, P_BNAP, P_CONV_B, P_CONV_F16,
       P_CONV_B16, P_BN16_F, P_BN16_I, P_BN16_B, P_RELU16_F, P_RELU16_B, P_N };
static const char *const pname[P_N] = {"conv_fwd", "conv_bwd_data", "conv_bwd_weights", "linear_fwd",
    "linear_bwd_data", "linear_bwd_weights", "bn_fwd_train", "bn_fwd_infer", "bn_bwd", "relu_fwd",
    "relu_bwd", "maxpool_fwd", "maxpool_bwd", "gap_fwd", "gap_bwd", "add", "bn_relu_fwd_train", "bn_relu_bwd",
    "add_relu", "conv_relu_fwd", "maxpool_relu_bwd", "bn_add_relu_fwd_train", "relu_bwd_add", "bn_add_relu_bwd",
    "conv_bn_stats_fwd", "bn_apply_train", "conv_bwd", "conv_fwd16", "conv_bwd16", "bn16_fwd_train", "bn16_fwd_infer",
    "bn_x16_bwd", "relu_fwd_y16", "relu_bwd_y16"};
static double ptime[P_N];
static unsigned long pcalls[P_N];
static const baton_nn_kernels *inner;

#define TIMED(i, call) do { double t0_ = now(); call; ptime[i] += now() - t0_; pcalls[i]++; } while (0)

/* convolutions also per geometry: time of forward, backward-data, backward-weights */
enum { MAX_GEOMS = 32 };
static struct { baton_nn_conv_geom g; double t[3]; unsigned long calls[3]; } geoms[MAX_GEOMS];
static int ngeoms;
static void geom_add(const baton_nn_conv_geom *g, int which, double t)
{
    int i = 0;
    while (i < ngeoms && memcmp(&geoms[i].g, g, sizeof *g)) i++;
    if (i == ngeoms) {
        if (ngeoms == MAX_GEOMS) return;
        geoms[ngeoms++].g = *g;
    }
    geoms[i].t[which] += t;
    geoms[i].calls[which]++;
}
#define CTIMED(i, which, call) do { double t0_ = now(); call; double d_ = now() - t0_; ptime[i] += d_; \
                                    pcalls[i]++; geom_add(g, which, d_); } while (0)
static void w_conv_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{ CTIMED(P_CONV_F, 0, inner->conv_fwd(g, x, w, b, y)); }
static int w_conv_relu(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{
    int done = 0;
    CTIMED(P_CONVR_F, 0, done = inner->conv_relu_fwd(g, x, w, b, y));
    return done;
}
static int w_conv_stats(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b,
                        const float *sh, float *y, float *mean, float *var)
{
    double t0 = now();   /* a declined call (conv_fwd follows) counts no convolution */
    int done = inner->conv_bn_stats_fwd(g, x, w, b, sh, y, mean, var);
    double d = now() - t0;
    ptime[P_CONVS_F] += d;
    pcalls[P_CONVS_F] += done;
    if (done) geom_add(g, 0, d);
    return done;
}
static int w_bn_apply(int n, int c, int hw, const float *x, const float *r, int relu, const float *g, const float *b,
                      float eps, const float *mean, const float *var, float *y)
{
    int done = 0;
    TIMED(P_BNAP, done = inner->bn_apply_train(n, c, hw, x, r, relu, g, b, eps, mean, var, y));
    return done;
}
static int w_mpr_b(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *r, float *dx)
{
    int done = 0;
    TIMED(P_MPR_B, done = inner->maxpool_relu_bwd(g, dy, ws, r, dx));
    return done;
}
static void w_conv_bd(const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx)
{ CTIMED(P_CONV_BD, 1, inner->conv_bwd_data(g, dy, w, dx)); }
static void w_conv_bw(const baton_nn_conv_geom *g, const float *x, const float *dy, float *dw, float *db)
{ CTIMED(P_CONV_BW, 2, inner->conv_bwd_weights(g, x, dy, dw, db)); }
/* both backward passes in one call: its time in the per-geometry table's backward-weights column */
static void w_conv_b(const baton_nn_conv_geom *g, const float *x, const float *dy, const float *w, float *dw,
                     float *db, float *dx)
{ CTIMED(P_CONV_B, 2, inner->conv_bwd(g, x, dy, w, dw, db, dx)); }
static void w_lin_f(int n, int in, int out, const float *x, const float *w, const float *b, float *y)
{ TIMED(P_LIN_F, inner->linear_fwd(n, in, out, x, w, b, y)); }
static void w_lin_bd(int n, int in, int out, const float *dy, const float *w, float *dx)
{ TIMED(P_LIN_BD, inner->linear_bwd_data(n, in, out, dy, w, dx)); }
static void w_lin_bw(int n, int in, int out, const float *x, const float *dy, float *dw, float *db)
{ TIMED(P_LIN_BW, inner->linear_bwd_weights(n, in, out, x, dy, dw, db)); }
static void w_bn_f(int n, int c, int hw, const float *x, const float *g, const float *b, float eps, float *y,
                   float *mean, float *var)
{ TIMED(P_BN_F, inner->bn_fwd_train(n, c, hw, x, g, b, eps, y, mean, var)); }
static void w_bn_i(int n, int c, int hw, const float *x, const float *g, const float *b, const float *mean,
                   const float *var, float eps, float *y)
{ TIMED(P_BN_I, inner->bn_fwd_infer(n, c, hw, x, g, b, mean, var, eps, y)); }
static void w_bn_b(int n, int c, int hw, const float *x, const float *dy, const float *g, const float *mean,
                   const float *var, float eps, float *dx, float *dg, float *db)
{ TIMED(P_BN_B, inner->bn_bwd(n, c, hw, x, dy, g, mean, var, eps, dx, dg, db)); }
static void w_relu_f(size_t count, const float *x, float *y) { TIMED(P_RELU_F, inner->relu_fwd(count, x, y)); }
static void w_relu_b(size_t count, const float *y, const float *dy, float *dx)
{ TIMED(P_RELU_B, inner->relu_bwd(count, y, dy, dx)); }
static void w_mp_f(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{ TIMED(P_MP_F, inner->maxpool_fwd(g, x, y, ws)); }
static void w_mp_b(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx)
{ TIMED(P_MP_B, inner->maxpool_bwd(g, dy, ws, dx)); }
static void w_gap_f(int n, int c, int hw, const float *x, float *y) { TIMED(P_GAP_F, inner->gap_fwd(n, c, hw, x, y)); }
static void w_gap_b(int n, int c, int hw, const float *dy, float *dx) { TIMED(P_GAP_B, inner->gap_bwd(n, c, hw, dy, dx)); }
static void w_add(size_t count, const float *a, const float *b, float *y) { TIMED(P_ADD, inner->add(count, a, b, y)); }
static int w_addr(size_t count, const float *a, const float *b, float *y)
{
    int done = 0;
    TIMED(P_ADDR, done = inner->add_relu(count, a, b, y));
    return done;
}
static int w_bnr_f(int n, int c, int hw, const float *x, const float *g, const float *b, float eps, float *y,
                   float *mean, float *var)
{
    int done = 0;
    TIMED(P_BNR_F, done = inner->bn_relu_fwd_train(n, c, hw, x, g, b, eps, y, mean, var));
    return done;
}
static int w_bnar_f(int n, int c, int hw, const float *x, const float *r, const float *g, const float *b, float eps,
                    float *y, float *mean, float *var)
{
    int done = 0;
    TIMED(P_BNAR_F, done = inner->bn_add_relu_fwd_train(n, c, hw, x, r, g, b, eps, y, mean, var));
    return done;
}
static int w_bnar_b(int n, int c, int hw, const float *x, const float *y, const float *dy, const float *dy2,
                    const float *gm, const float *mean, const float *var, float eps, float *g, float *dx, float *dg,
                    float *db)
{
    int done = 0;
    TIMED(P_BNAR_B, done = inner->bn_add_relu_bwd(n, c, hw, x, y, dy, dy2, gm, mean, var, eps, g, dx, dg, db));
    return done;
}
static int w_relu_ba(size_t count, const float *y, const float *dy, const float *dy2, float *dx)
{
    int done = 0;
    TIMED(P_RELU_BA, done = inner->relu_bwd_add(count, y, dy, dy2, dx));
    return done;
}
static int w_bnr_b(int n, int c, int hw, const float *x, const float *dy, const float *g, const float *b,
                   const float *mean, const float *var, float eps, float *dx, float *dg, float *db)
{
    int done = 0;
    TIMED(P_BNR_B, done = inner->bn_relu_bwd(n, c, hw, x, dy, g, b, mean, var, eps, dx, dg, db));
    return done;
}
/* the bf16 table's entries on bfloat16 activations (between convolutions and batch norms) */
static int w_conv_f16(const baton_nn_conv_geom *g, int x16, const void *x, const float *w, const float *b, int y16,
                      void *y)
{
    int done = 0;
    CTIMED(P_CONV_F16, 0, done = inner->conv_fwd16(g, x16, x, w, b, y16, y));
    return done;
}
static int w_conv_b16(const baton_nn_conv_geom *g, int x16, const void *x, int dy16, const void *dy, const float *w,
                      float *dw, float *db, float *dx)
{
    int done = 0;
    CTIMED(P_CONV_B16, 2, done = inner->conv_bwd16(g, x16, x, dy16, dy, w, dw, db, dx));
    return done;
}
static int w_bn16_f(int n, int c, int hw, int x16, const void *x, const float *r, int relu, const float *g,
                    const float *b, float eps, int y16, void *y, uint16_t *ycopy, float *mean, float *var)
{
    int done = 0;
    TIMED(P_BN16_F, done = inner->bn16_fwd_train(n, c, hw, x16, x, r, relu, g, b, eps, y16, y, ycopy, mean, var));
    return done;
}
static int w_bn16_i(int n, int c, int hw, int x16, const void *x, const float *g, const float *b, const float *mean,
                    const float *var, float eps, int y16, void *y)
{
    int done = 0;
    TIMED(P_BN16_I, done = inner->bn16_fwd_infer(n, c, hw, x16, x, g, b, mean, var, eps, y16, y));
    return done;
}
static int w_bn16_b(int n, int c, int hw, const uint16_t *x, const float *y, const float *dy, const float *dy2,
                    int relu, const float *gm, const float *bt, const float *mean, const float *var, float eps,
                    float *g, int dx16, void *dx, float *dg, float *db)
{
    int done = 0;
    TIMED(P_BN16_B, done = inner->bn_x16_bwd(n, c, hw, x, y, dy, dy2, relu, gm, bt, mean, var, eps, g, dx16, dx, dg,
                                             db));
    return done;
}
static int w_relu16_f(size_t count, const float *x, uint16_t *y)
{
    int done = 0;
    TIMED(P_RELU16_F, done = inner->relu_fwd_y16(count, x, y));
    return done;
}
static int w_relu16_b(size_t count, const uint16_t *y, const float *dy, float *dx)
{
    int done = 0;
    TIMED(P_RELU16_B, done = inner->relu_bwd_y16(count, y, dy, dx));
    return done;
}

static baton_nn_kernels profiled = {
    .name = "profiled", .conv_fwd = w_conv_fwd, .conv_bwd_data = w_conv_bd, .conv_bwd_weights = w_conv_bw,
    .linear_fwd = w_lin_f, .linear_bwd_data = w_lin_bd, .linear_bwd_weights = w_lin_bw, .bn_fwd_train = w_bn_f,
    .bn_fwd_infer = w_bn_i, .bn_bwd = w_bn_b, .relu_fwd = w_relu_f, .relu_bwd = w_relu_b, .maxpool_fwd = w_mp_f,
    .maxpool_bwd = w_mp_b, .gap_fwd = w_gap_f, .gap_bwd = w_gap_b, .add = w_add,
};

/* --- FLOP count: one batch-1 forward through a counting table ---------------------------------- */
static double macs, first_macs;
static int seen_first;
static void c_conv_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{
    double m = (double)g->n * g->oc * g->oh * g->ow * g->ic * g->kh * g->kw;
    if (!seen_first) first_macs = m, seen_first = 1;
    macs += m;
    inner->conv_fwd(g, x, w, b, y);
}
static void c_lin_f(int n, int in, int out, const float *x, const float *w, const float *b, float *y)
{
    double m = (double)n * in * out;
    if (!seen_first) first_macs = m, seen_first = 1;
    macs += m;
    inner->linear_fwd(n, in, out, x, w, b, y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *model = "resnet20";
    int batch = 128, reps = 3, reference = 0, profile = 0, json = 0, bf16 = 0;
    double seconds = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reference")) reference = 1;
        else if (!strcmp(argv[i], "--profile")) profile = 1;
        else if (!strcmp(argv[i], "--cpu-clock")) clock_id = CLOCK_PROCESS_CPUTIME_ID;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "bf16")) bf16 = 1, i++;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "f32")) i++;
        else if (!strcmp(argv[i], "--json")) json = 1;
        else {
            fprintf(stderr, "usage: train_speed --model NAME [--batch B] [--seconds S] [--reps R] "
                            "[--reference] [--precision f32|bf16] [--profile] [--cpu-clock] [--json]\n");
            return 2;
        }
    }
    if (batch < 1 || reps < 1 || reps > 100 || !(seconds > 0)) {
        fprintf(stderr, "train_speed: --batch, --reps and --seconds must be positive\n");
        return 2;
    }
    baton_err err = {0};
    const baton_nn_kernels *k = reference ? baton_nn_kernels_reference()
                               : bf16 ? baton_nn_kernels_dnnl_bf16(&err) : baton_nn_kernels_dnnl(&err);
    if (!k) {
        fprintf(stderr, "train_speed: %s\n", err.msg);
        return 1;
    }
    inner = k;
    baton_nn_spec spec = {.name = model, .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10,
                          .max_batch = batch, .seed = 0};
    baton_nn_model *m;
    if (baton_nn_model_create(&spec, k, &m, &err)) {
        fprintf(stderr, "train_speed: %s\n", err.msg);
        return 1;
    }
    /* count FLOPs with a table that wraps the real one */
    baton_nn_kernels counting = *k;
    counting.conv_fwd = c_conv_fwd;
    counting.linear_fwd = c_lin_f;
    counting.conv_fwd16 = NULL;   /* every convolution through conv_fwd (f32 activations: the same FLOPs) */
    size_t xcount = (size_t)batch * 28 * 28;
    float *x = malloc(xcount * sizeof *x);
    int32_t *y = malloc((size_t)batch * sizeof *y);
    baton_rng rng;
    baton_rng_seed(&rng, 1);
    for (size_t i = 0; i < xcount; i++) x[i] = baton_rng_float(&rng) * 2 - 1;
    for (int i = 0; i < batch; i++) y[i] = (int32_t)(baton_rng_next(&rng) % 10);
    baton_nn_model_set_kernels(m, &counting);
    baton_nn_model_set_training(m, 0);
    if (baton_nn_forward(m, x, 1, &err)) goto fail;
    baton_nn_model_set_training(m, 1);
    profiled.block = k->block;   /* the wrapped table's layout and weights */
    profiled.channels_last = k->channels_last;
    profiled.weights_bf16 = k->weights_bf16;
    profiled.conv_fwd16 = k->conv_fwd16 ? w_conv_f16 : NULL;
    profiled.conv_bwd16 = k->conv_bwd16 ? w_conv_b16 : NULL;
    profiled.conv16_ok = k->conv16_ok;
    profiled.conv_dy16_ok = k->conv_dy16_ok;
    profiled.bn16_fwd_train = k->bn16_fwd_train ? w_bn16_f : NULL;
    profiled.bn16_fwd_infer = k->bn16_fwd_infer ? w_bn16_i : NULL;
    profiled.bn_x16_bwd = k->bn_x16_bwd ? w_bn16_b : NULL;
    profiled.relu_fwd_y16 = k->relu_fwd_y16 ? w_relu16_f : NULL;
    profiled.relu_bwd_y16 = k->relu_bwd_y16 ? w_relu16_b : NULL;
    profiled.bn_relu_fwd_train = k->bn_relu_fwd_train ? w_bnr_f : NULL;   /* fused only where it fuses */
    profiled.bn_relu_bwd = k->bn_relu_bwd ? w_bnr_b : NULL;
    profiled.add_relu = k->add_relu ? w_addr : NULL;
    profiled.bn_add_relu_fwd_train = k->bn_add_relu_fwd_train ? w_bnar_f : NULL;
    profiled.relu_bwd_add = k->relu_bwd_add ? w_relu_ba : NULL;
    profiled.bn_add_relu_bwd = k->bn_add_relu_bwd ? w_bnar_b : NULL;
    profiled.conv_relu_fwd = k->conv_relu_fwd ? w_conv_relu : NULL;
    profiled.conv_bn_stats_fwd = k->conv_bn_stats_fwd ? w_conv_stats : NULL;
    profiled.conv_bwd = k->conv_bwd ? w_conv_b : NULL;
    profiled.bn_apply_train = k->bn_apply_train ? w_bn_apply : NULL;
    profiled.maxpool_relu_bwd = k->maxpool_relu_bwd ? w_mpr_b : NULL;
    profiled.conv_bn_stats_ok = k->conv_bn_stats_ok;   /* the wrapped entries take what the table's take */
    profiled.bn_fused_ok = k->bn_fused_ok;
    profiled.maxpool_relu_ok = k->maxpool_relu_ok;
    profiled.to_plain = k->to_plain;
    profiled.from_plain = k->from_plain;
    baton_nn_model_set_kernels(m, profile ? &profiled : k);
    double fwd_flops = 2 * macs, train_flops = 3 * fwd_flops - 2 * first_macs;

    baton_nn_optim_cfg oc = {.kind = BATON_NN_SGD, .momentum = 0.9, .weight_decay = 5e-4};
    baton_nn_optim *o;
    if (baton_nn_optim_create(&oc, m, &o, &err)) goto fail;
    float loss;
    int correct;
    for (int w = 0; w < 3; w++) {   /* warm-up: primitives created, caches hot */
        if (baton_nn_train_batch(m, x, y, batch, &loss, &correct, &err) || baton_nn_optim_step(o, 0.01, &err))
            goto fail;
    }
    memset(ptime, 0, sizeof ptime);
    memset(pcalls, 0, sizeof pcalls);
    memset(geoms, 0, sizeof geoms);
    ngeoms = 0;
    double rates[100], cpu_rates[100], opt_time = 0;
    unsigned long total_steps = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now(), c0 = cpu_now(), t;
        unsigned long steps = 0;
        do {
            if (baton_nn_train_batch(m, x, y, batch, &loss, &correct, &err)) goto fail;
            double t1 = now();
            if (baton_nn_optim_step(o, 0.01, &err)) goto fail;
            opt_time += now() - t1;
            steps++;
            t = now() - t0;
        } while (t < seconds);
        total_steps += steps;
        rates[r] = steps * (double)batch / t;
        cpu_rates[r] = steps * (double)batch / (cpu_now() - c0);
        if (!json) printf("repeat %d: %.1f img/s (%lu steps, %.2f s)\n", r + 1, rates[r], steps, t);
    }
    qsort(rates, (size_t)reps, sizeof rates[0], cmp_dbl);
    double med = rates[reps / 2];
    qsort(cpu_rates, (size_t)reps, sizeof cpu_rates[0], cmp_dbl);
    const double cpu_med = cpu_rates[reps / 2];
    const double gflops = med * train_flops / 1e9;   /* img/s x FLOP per image */
    if (profile) {
        double total = 0;
        for (int i = 0; i < P_N; i++) total += ptime[i];
        total += opt_time;
        printf("%-20s %10s %8s %6s\n", "entry", "ms/step", "calls", "share");
        for (int i = 0; i < P_N; i++)
            if (pcalls[i])
                printf("%-20s %10.2f %8lu %5.1f%%\n", pname[i], 1e3 * ptime[i] / total_steps,
                       pcalls[i] / total_steps, 100 * ptime[i] / total);
        printf("%-20s %10.2f %8d %5.1f%%\n", "optimizer", 1e3 * opt_time / total_steps, 1, 100 * opt_time / total);
        if (pcalls[P_CONV_B])
            printf("\n(conv_bwd: both backward passes in one call, counted in the bwd-w column below)");
        printf("\n%-28s %9s %9s %9s   GFLOP/s fwd/bd/bw\n", "convolution (ic>oc hxw kK sS)", "fwd ms", "bwd-d ms",
               "bwd-w ms");
        for (int i = 0; i < ngeoms; i++) {
            const baton_nn_conv_geom *g = &geoms[i].g;
            char name[64];
            snprintf(name, sizeof name, "%d>%d %dx%d k%d s%d", g->ic, g->oc, g->ih, g->iw, g->kh, g->stride);
            double fl = 2.0 * g->n * g->oc * g->oh * g->ow * g->ic * g->kh * g->kw;
            printf("%-28s %9.2f %9.2f %9.2f  ", name, 1e3 * geoms[i].t[0] / total_steps,
                   1e3 * geoms[i].t[1] / total_steps, 1e3 * geoms[i].t[2] / total_steps);
            for (int j = 0; j < 3; j++)
                printf(" %6.0f", geoms[i].t[j] > 0 ? fl * (double)geoms[i].calls[j] / geoms[i].t[j] / 1e9 : 0);
            printf("\n");
        }
    }
    if (json)
        printf("{\"impl\": \"baton\", \"kernels\": \"%s\", \"model\": \"%s\", \"batch\": %d, \"train_img_per_s\": %.1f, "
               "\"train_gflops\": %.1f, \"train_flops_per_img\": %.0f, \"train_img_per_cpu_s\": %.1f}\n",
               k->name, model, batch, med, gflops, train_flops, cpu_med);
    else
        printf("%s %s batch %d: median %.1f img/s, %.1f GFLOP/s (%.1f MFLOP per image per step)\n", model,
               k->name, batch, med, gflops, train_flops / 1e6);
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
    free(x);
    free(y);
    return 0;
fail:
    fprintf(stderr, "train_speed: %s\n", err.msg);
    return 1;
}
