/* kern_dnnl.c — the oneDNN fast path: a second kernel table (baton_nn_kernels_dnnl) with the same
 * contract as the reference table, built on oneDNN's C API (CPU engine).
 *
 * What it owns: one process-wide CPU engine (lent to the folded inference plan, fold_dnnl.c,
 * through nn_dnnl.h) and, for each thread that calls the table, its own stream, a small cache of
 * oneDNN primitives keyed by operation and geometry (shapes, stride, padding, bias or not,
 * epsilon), a memory object per primitive argument (its data handle is pointed at the caller's
 * arrays on every call), and one user-managed scratchpad buffer shared by its primitives.
 * Primitives are created the first time a geometry is seen on a thread and reused after that: in
 * steady state a call sets a few data handles and runs the primitive, and this file allocates
 * nothing. A cache holds CACHE_CAP entries and evicts the least recently used one; the scratchpad
 * grows (only) when a new primitive needs more. A thread's state is allocated at its first call
 * and freed when the thread ends.
 *
 * Layout: activations whose channel count is a multiple of 16 are blocked, nChw16c (the table's
 * `block` is 16; kern_layout.c converts and pools them), others NCHW; convolution weights stay OIHW
 * and linear weights [out, in] at the boundary (reordered to the primitive's weight format around
 * each call — small arrays). Inner products see [n, features] arrays (the model flattens blocked
 * activations to NCHW order first).
 *
 * Which entries are oneDNN: convolution (forward — also with the ReLU after it as a post-op —,
 * backward data — for some stride-1 geometries as a forward convolution with flipped weights —,
 * backward weights; Winograd or direct by use_winograd's fixed rule; except the forward and
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
 * per call. Convolutions leave the activation layout to oneDNN, which on AMX picks channels-last
 * (nhwc): the f32 nChw16c arrays are reordered into bf16 nhwc before and out of nhwc after — a
 * transpose each way, still far cheaper than the f32 kernel on such a CPU. No Winograd, no
 * hand-written direct kernel and no statistics-taking fusion in bf16.
 *
 * Threads: oneDNN in Debian runs on OpenMP, so OMP_NUM_THREADS (or omp_set_num_threads on the
 * calling thread, baton_nn_set_threads) sets the team's size. For a fixed team size every
 * primitive is deterministic, so results are bit-reproducible run to run — and the same on any
 * calling thread. Threads share nothing but the engine, so two threads may run the table at once
 * (two networks trained side by side, each on a team of one: race's learners). Batch norm and the
 * other hand-written kernels run OpenMP loops on the calling thread's team.
 *
 * Errors: the table entries cannot return a status. If oneDNN cannot create or run a primitive for
 * some geometry, that call (and later ones with the same geometry) falls back to the reference
 * kernel, with one warning per operation logged through baton_log (the convolution with a ReLU
 * post-op: to the plain convolution and the ReLU, so the fused entry takes every geometry). The
 * optional entries' predicates (nn.h) are those of the hand-written kernels behind them. Creation
 * of the table itself fails (NULL and a message) when the engine or stream cannot be created.
 * Nothing here aborts. */
#include "nn_dnnl.h"

#include <oneapi/dnnl/dnnl_debug.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum op {
    OP_CONV_FWD, OP_CONV_BWD_DATA, OP_CONV_BWD_W,
    OP_IP_FWD, OP_IP_BWD_DATA, OP_IP_BWD_W,
    OP_RELU_FWD, OP_RELU_BWD, OP_ADD,
    OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
    "conv_fwd", "conv_bwd_data", "conv_bwd_weights", "linear_fwd", "linear_bwd_data",
    "linear_bwd_weights", "relu_fwd", "relu_bwd", "add",
};

#define KEY_LEN 15     /* op + up to 13 geometry values + the bf16 flag */
#define KEY_BF16 14    /* 1: the bfloat16 table's call (convolutions and inner products) */
#define MAX_ARGS 6     /* user arguments + scratchpad */
#define CACHE_CAP 192

typedef struct pkey {
    int64_t v[KEY_LEN];
} pkey;

typedef struct entry {
    pkey key;
    int used;                       /* slot holds a geometry */
    int failed;                     /* oneDNN refused it: this geometry runs on the reference kernel */
    dnnl_status_t why;              /* the failing status */
    uint64_t tick;                  /* last use, for LRU eviction */
    dnnl_primitive_t prim;
    int nuser;                      /* user arguments, in the order the caller passes pointers */
    int nargs;                      /* nuser (+1 with a scratchpad) */
    dnnl_exec_arg_t args[MAX_ARGS]; /* what the primitive runs on: user[i] or inner[i] */
    dnnl_memory_t user[MAX_ARGS];   /* the caller's array i, plain layout */
    /* argument i in the primitive's own (blocked) layout, when it differs from the plain one: a
     * buffer at inner_off[i] in the shared arena and the reorder that fills it (inputs, before) or
     * empties it (outputs, after) */
    dnnl_memory_t inner[MAX_ARGS];
    dnnl_primitive_t reorder[MAX_ARGS];
    size_t inner_off[MAX_ARGS];
    int is_out[MAX_ARGS];
} entry;

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;             /* the warnings */
    int ready;
    char why[256];
    dnnl_engine_t eng;
    dnnl_primitive_attr_t attr;     /* scratchpad_mode_user */
    dnnl_primitive_attr_t attr_relu;/* the same and a ReLU post-op */
    pthread_key_t key;              /* a thread's tstate, freed when it ends */
    int warned[OP_COUNT];           /* under mu */
} S = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

/* What one calling thread owns: its stream, its primitives and the buffers they run on. */
typedef struct tstate {
    dnnl_stream_t strm;
    entry cache[CACHE_CAP];
    uint64_t tick;
    void *scratch;                  /* oneDNN scratchpad, shared by this thread's primitives */
    size_t scratch_size;
    void *arena;                    /* blocked copies of convolution arguments, likewise */
    size_t arena_size;
} tstate;

static __thread tstate *T;

/* ---- primitive construction ---- */

#define MD2(md, a, b) nn_dnnl_md(md, 2, (const int64_t[2]){a, b}, dnnl_ab)
#define MD1(md, a) nn_dnnl_md(md, 1, (const int64_t[1]){a}, dnnl_a)

static void entry_clear(entry *e)
{
    for (int i = 0; i < MAX_ARGS; i++) {
        if (e->user[i]) dnnl_memory_destroy(e->user[i]);
        if (e->inner[i]) dnnl_memory_destroy(e->inner[i]);
        if (e->reorder[i]) dnnl_primitive_destroy(e->reorder[i]);
    }
    if (e->nargs > e->nuser && e->args[e->nuser].memory) dnnl_memory_destroy(e->args[e->nuser].memory);
    if (e->prim) dnnl_primitive_destroy(e->prim);
    memset(e, 0, sizeof *e);
}

/* Empty an entry for another build of the same key: what it built is freed, its place in the
 * cache (key, use, tick) stays. */
static void entry_reset(entry *e)
{
    const pkey key = e->key;
    const uint64_t tick = e->tick;
    entry_clear(e);
    e->key = key;
    e->used = 1;
    e->tick = tick;
}

/* Make a thread's buffer at least need bytes (at primitive creation only; nothing is running on it). */
static dnnl_status_t grow(void **buf, size_t *size, size_t need)
{
    if (need <= *size) return dnnl_success;
    size_t sz = (need + 4095) / 4096 * 4096;
    void *p = aligned_alloc(64, sz);
    if (!p) return dnnl_out_of_memory;
    free(*buf);
    *buf = p;
    *size = sz;
    return dnnl_success;
}

static int is_output(int id)
{
    return id == DNNL_ARG_DST || id == DNNL_ARG_DIFF_SRC || id == DNNL_ARG_DIFF_WEIGHTS ||
           id == DNNL_ARG_DIFF_BIAS;
}

/* From an operation descriptor: the primitive and one memory object per argument in ids, in the
 * caller's plain layout (plain[i], or the primitive's own when plain is NULL). Where the primitive
 * chose another layout for an argument, a buffer in the shared arena and a reorder to or from the
 * plain array. Then the scratchpad. */
static dnnl_status_t finish_attr(entry *e, const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
                                 const_dnnl_primitive_desc_t hint, const int *ids,
                            const dnnl_memory_desc_t *const *plain, int nids)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, desc, attr, S.eng, hint);
    if (st != dnnl_success) return st;
    size_t arena = 0;
    e->nuser = e->nargs = nids;
    for (int i = 0; i < nids && st == dnnl_success; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, ids[i]);
        if (!md || md->ndims == 0) {
            st = dnnl_invalid_arguments;
            break;
        }
        const dnnl_memory_desc_t *umd = plain ? plain[i] : md;
        e->args[i].arg = ids[i];
        e->is_out[i] = is_output(ids[i]);
        st = dnnl_memory_create(&e->user[i], umd, S.eng, DNNL_MEMORY_NONE);
        e->args[i].memory = e->user[i];
        if (st != dnnl_success || dnnl_memory_desc_equal(md, umd)) continue;
        st = dnnl_memory_create(&e->inner[i], md, S.eng, DNNL_MEMORY_NONE);
        e->args[i].memory = e->inner[i];
        e->inner_off[i] = arena;
        arena += (dnnl_memory_desc_get_size(md) + 4095) / 4096 * 4096;
        dnnl_primitive_desc_t rpd = NULL;
        if (st == dnnl_success)
            st = e->is_out[i] ? dnnl_reorder_primitive_desc_create(&rpd, md, S.eng, umd, S.eng, NULL)
                              : dnnl_reorder_primitive_desc_create(&rpd, umd, S.eng, md, S.eng, NULL);
        if (st == dnnl_success) st = dnnl_primitive_create(&e->reorder[i], rpd);
        if (rpd) dnnl_primitive_desc_destroy(rpd);
    }
    if (st == dnnl_success) st = grow(&T->arena, &T->arena_size, arena);
    if (st == dnnl_success) {
        const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        size_t need = smd ? dnnl_memory_desc_get_size(smd) : 0;
        if (need > 0) {
            st = grow(&T->scratch, &T->scratch_size, need);
            if (st == dnnl_success) {
                e->args[nids].arg = DNNL_ARG_SCRATCHPAD;
                st = dnnl_memory_create(&e->args[nids].memory, smd, S.eng, DNNL_MEMORY_NONE);
                if (st == dnnl_success) e->nargs = nids + 1;
            }
        }
    }
    if (st == dnnl_success) st = dnnl_primitive_create(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

static dnnl_status_t finish(entry *e, const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint, const int *ids,
                            const dnnl_memory_desc_t *const *plain, int nids)
{
    return finish_attr(e, desc, S.attr, hint, ids, plain, nids);
}

static dnnl_status_t hint_pd(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc)
{
    *pd = NULL;
    return dnnl_primitive_desc_create(pd, desc, S.attr, S.eng, NULL);
}

/* key for convolutions: n ic ih iw oc kh kw stride pad oh ow bias relu (forward: a ReLU post-op).
 * Activations are in the table's layout (nChw16c for channel counts that are multiples of 16, the
 * layout oneDNN's AVX-512 convolutions use natively; NCHW otherwise, e.g. the input images), so
 * they need no reorder. The weights stay OIHW at the boundary (the model's and PyTorch's layout)
 * and are reordered into the primitive's blocked weight format around the call — small arrays. */
static dnnl_status_t build_conv_alg(entry *e, const int64_t *v, dnnl_alg_kind_t alg)
{
    dnnl_memory_desc_t x, w, b, y, xa, wa, ya, xb, wb, yb;
    const int64_t xd[4] = {v[1], v[2], v[3], v[4]}, wd[4] = {v[5], v[2], v[6], v[7]};
    const int64_t yd[4] = {v[1], v[5], v[10], v[11]};
    const dnnl_format_tag_t any = dnnl_format_tag_any;
    dnnl_memory_desc_t wu;   /* the weights the caller passes: f32, or the model's bf16 copy */
    const dnnl_format_tag_t xt = nn_is_blocked(NN_BLOCK, (int)v[2]) ? dnnl_aBcd16b : dnnl_abcd;
    const dnnl_format_tag_t yt = nn_is_blocked(NN_BLOCK, (int)v[5]) ? dnnl_aBcd16b : dnnl_abcd;
    dnnl_status_t st = nn_dnnl_md(&x, 4, xd, xt);
    if (st == dnnl_success) st = nn_dnnl_md(&w, 4, wd, dnnl_abcd);
    if (st == dnnl_success) st = MD1(&b, v[5]);
    if (st == dnnl_success) st = nn_dnnl_md(&y, 4, yd, yt);
    if (st == dnnl_success) st = nn_dnnl_md(&xa, 4, xd, xt);
    if (st == dnnl_success) st = nn_dnnl_md(&wa, 4, wd, any);
    if (st == dnnl_success) st = nn_dnnl_md(&ya, 4, yd, yt);
    if (st != dnnl_success) return st;
    xb = xa, wb = wa, yb = ya, wu = w;   /* what the primitive reads: bfloat16 in the bf16 table's calls */
    if (v[KEY_BF16]) {
        dnnl_dims_t dx, dw, dy;
        for (int i = 0; i < 4; i++) dx[i] = xd[i], dw[i] = wd[i], dy[i] = yd[i];
        st = dnnl_memory_desc_init_by_tag(&wu, 4, dw, dnnl_bf16, dnnl_abcd);
        if (st != dnnl_success) return st;
        st = dnnl_memory_desc_init_by_tag(&xb, 4, dx, dnnl_bf16, any);
        if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&wb, 4, dw, dnnl_bf16, any);
        if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&yb, 4, dy, dnnl_bf16, any);
        /* the f32 outputs (forward's y, backward-data's dx) in the primitive's layout too: with
         * them fixed to nChw16c oneDNN 2.6 picks its AVX512-BF16 kernels; free, its AMX ones
         * (channels-last), 5-10x faster per call on a CPU with AMX — the reorders into and out
         * of the table's layout cost less than that difference */
        if (st == dnnl_success) st = nn_dnnl_md(&xa, 4, xd, any);
        if (st == dnnl_success) st = nn_dnnl_md(&ya, 4, yd, any);
        if (st != dnnl_success) return st;
    }
    const dnnl_dims_t strides = {v[8], v[8]}, pad = {v[9], v[9]};
    const int bias = (int)v[12];
    dnnl_convolution_desc_t fwd, cd;
    st = dnnl_convolution_forward_desc_init(&fwd, dnnl_forward_training, alg, &xb, &wb,
                                            bias ? &b : NULL, &ya, strides, pad, pad);
    if (st != dnnl_success) return st;
    switch (v[0]) {
    case OP_CONV_FWD: {
        const int ids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
        const dnnl_memory_desc_t *pl[4] = {&x, &wu, &y, &b};
        return finish_attr(e, &fwd, v[13] ? S.attr_relu : S.attr, NULL, ids, pl, bias ? 4 : 3);
    }
    case OP_CONV_BWD_DATA: {
        const int ids[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
        const dnnl_memory_desc_t *pl[3] = {&y, &wu, &x};
        st = dnnl_convolution_backward_data_desc_init(&cd, alg, &xa, &wb, &yb, strides, pad,
                                                      pad);
        if (st != dnnl_success) return st;
        dnnl_primitive_desc_t h;
        st = hint_pd(&h, &fwd);
        if (st == dnnl_success) st = finish(e, &cd, h, ids, pl, 3);
        if (h) dnnl_primitive_desc_destroy(h);
        return st;
    }
    default: {
        const int ids[4] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS};
        const dnnl_memory_desc_t *pl[4] = {&x, &y, &w, &b};
        st = dnnl_convolution_backward_weights_desc_init(&cd, alg, &xb, &wa, bias ? &b : NULL,
                                                         &yb, strides, pad, pad);
        if (st != dnnl_success) return st;
        dnnl_primitive_desc_t h;
        st = hint_pd(&h, &fwd);
        if (st == dnnl_success) st = finish(e, &cd, h, ids, pl, bias ? 4 : 3);
        if (h) dnnl_primitive_desc_destroy(h);
        return st;
    }
    }
}

/* Winograd F(4x4, 3x3) (oneDNN's AVX-512 kernels) instead of the direct convolution, where it
 * measured faster on the 2-core AVX-512 machine the benchmarks run on (bench/RESULTS.md §4e): 3x3
 * stride-1 convolutions between blocked activations, for backward-weights from 16 input channels,
 * for forward and backward-data from 32 (with 16 the direct kernels win). A fixed rule, not a
 * timing at run time: the choice must be the same in every process, or a resumed run would not
 * reproduce an uninterrupted one bit for bit. BATON_WINOGRAD=0 in the environment turns it off. */
static int use_winograd(const int64_t *v)
{
    static int off = -1;
    if (off < 0) {
        const char *e = getenv("BATON_WINOGRAD");
        off = e && strcmp(e, "0") == 0;
    }
    if (off || v[KEY_BF16] || v[6] != 3 || v[7] != 3 || v[8] != 1 || v[2] % 16 != 0 || v[5] % 16 != 0) return 0;
    return v[0] == OP_CONV_BWD_W ? v[2] >= 16 : v[2] >= 32;
}

/* the convolution for key v: Winograd where the rule says so and oneDNN has it for this CPU, else
 * direct */
static dnnl_status_t build_conv(entry *e, const int64_t *v)
{
    if (use_winograd(v)) {
        if (build_conv_alg(e, v, dnnl_convolution_winograd) == dnnl_success) return dnnl_success;
        entry_reset(e);   /* v points into e->key, which stays */
    }
    return build_conv_alg(e, v, dnnl_convolution_direct);
}

/* key for inner products: n in out bias (and the bf16 flag). The arrays are plain [n, in], [out, in]
 * and [n, out] f32; in the bf16 table's calls the weights are the caller's bfloat16 [out, in] (read
 * as they are), the primitive reads bfloat16 copies of the other inputs (reordered in per call) and
 * writes f32. */
static dnnl_status_t build_ip(entry *e, const int64_t *v)
{
    dnnl_memory_desc_t x, w, b, y, xb, wb, yb, wa, wu;
    dnnl_status_t st = MD2(&x, v[1], v[2]);
    if (st == dnnl_success) st = MD2(&w, v[3], v[2]);
    if (st == dnnl_success) st = MD1(&b, v[3]);
    if (st == dnnl_success) st = MD2(&y, v[1], v[3]);
    if (st != dnnl_success) return st;
    const int bf = v[KEY_BF16] != 0;
    xb = x, wb = w, yb = y, wa = w, wu = w;
    if (bf) {
        const dnnl_dims_t dx = {v[1], v[2]}, dw = {v[3], v[2]}, dy = {v[1], v[3]};
        st = dnnl_memory_desc_init_by_tag(&xb, 2, dx, dnnl_bf16, dnnl_format_tag_any);
        if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&wb, 2, dw, dnnl_bf16, dnnl_ab);
        if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&yb, 2, dy, dnnl_bf16, dnnl_format_tag_any);
        if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&wa, 2, dw, dnnl_f32, dnnl_ab);
        wu = wb;
        if (st != dnnl_success) return st;
    }
    const int bias = (int)v[4];
    dnnl_inner_product_desc_t fwd, d;
    st = dnnl_inner_product_forward_desc_init(&fwd, dnnl_forward_training, &xb, &wb, bias ? &b : NULL, &y);
    if (st != dnnl_success) return st;
    if (v[0] == OP_IP_FWD) {
        const int ids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
        const dnnl_memory_desc_t *pl[4] = {&x, &wu, &y, &b};
        return finish(e, &fwd, NULL, ids, bf ? pl : NULL, bias ? 4 : 3);
    }
    int ids[4], nids;
    const dnnl_memory_desc_t *pl[4];
    if (v[0] == OP_IP_BWD_DATA) {
        st = dnnl_inner_product_backward_data_desc_init(&d, &x, &wb, &yb);
        const int i3[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
        memcpy(ids, i3, sizeof i3);
        pl[0] = &y, pl[1] = &wu, pl[2] = &x;
        nids = 3;
    } else {
        st = dnnl_inner_product_backward_weights_desc_init(&d, &xb, &wa, bias ? &b : NULL, &yb);
        const int i4[4] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS};
        memcpy(ids, i4, sizeof i4);
        pl[0] = &x, pl[1] = &y, pl[2] = &w, pl[3] = &b;
        nids = bias ? 4 : 3;
    }
    if (st != dnnl_success) return st;
    dnnl_primitive_desc_t h;
    st = hint_pd(&h, &fwd);
    if (st == dnnl_success) st = finish(e, &d, h, ids, bf ? pl : NULL, nids);
    if (h) dnnl_primitive_desc_destroy(h);
    return st;
}

/* key for elementwise operations: count */
static dnnl_status_t build_elt(entry *e, const int64_t *v)
{
    dnnl_memory_desc_t x;
    dnnl_status_t st = MD1(&x, v[1]);
    if (st != dnnl_success) return st;
    if (v[0] == OP_ADD) {
        dnnl_binary_desc_t d;
        st = dnnl_binary_desc_init(&d, dnnl_binary_add, &x, &x, &x);
        const int ids[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST};
        return st == dnnl_success ? finish(e, &d, NULL, ids, NULL, 3) : st;
    }
    /* relu whose backward reads the forward output: dx = dy where y > 0 */
    dnnl_eltwise_desc_t fwd, d;
    st = dnnl_eltwise_forward_desc_init(&fwd, dnnl_forward_training, dnnl_eltwise_relu_use_dst_for_bwd, &x, 0.f,
                                        0.f);
    if (st != dnnl_success) return st;
    if (v[0] == OP_RELU_FWD) {
        const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
        return finish(e, &fwd, NULL, ids, NULL, 2);
    }
    st = dnnl_eltwise_backward_desc_init(&d, dnnl_eltwise_relu_use_dst_for_bwd, &x, &x, 0.f, 0.f);
    if (st != dnnl_success) return st;
    const int ids[3] = {DNNL_ARG_DST, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
    dnnl_primitive_desc_t h;
    st = hint_pd(&h, &fwd);
    if (st == dnnl_success) st = finish(e, &d, h, ids, NULL, 3);
    if (h) dnnl_primitive_desc_destroy(h);
    return st;
}

static dnnl_status_t build(entry *e)
{
    const int64_t *v = e->key.v;
    switch (v[0]) {
    case OP_CONV_FWD: case OP_CONV_BWD_DATA: case OP_CONV_BWD_W: return build_conv(e, v);
    case OP_IP_FWD: case OP_IP_BWD_DATA: case OP_IP_BWD_W: return build_ip(e, v);
    default: return build_elt(e, v);
    }
}

/* ---- the cache and the call path ---- */

/* The calling thread's cached entry for key k, built on a miss (evicting the least recently used). */
static entry *lookup(const pkey *k)
{
    entry *slot = NULL;
    for (int i = 0; i < CACHE_CAP; i++) {
        entry *e = &T->cache[i];
        if (e->used && memcmp(&e->key, k, sizeof *k) == 0) {
            e->tick = ++T->tick;
            return e;
        }
        if (!slot || (slot->used && (!e->used || e->tick < slot->tick))) slot = e;
    }
    entry_clear(slot);
    slot->key = *k;
    slot->used = 1;
    slot->tick = ++T->tick;
    dnnl_status_t st = build(slot);
    if (st != dnnl_success) {
        entry_reset(slot);
        slot->failed = 1;
        slot->why = st;
    }
    return slot;
}

static void tstate_free(void *p)
{
    tstate *t = p;
    for (int i = 0; i < CACHE_CAP; i++) entry_clear(&t->cache[i]);
    if (t->strm) dnnl_stream_destroy(t->strm);
    free(t->scratch);
    free(t->arena);
    free(t);
}

/* The calling thread's state, at its first call: NULL when there is no memory or no stream (the
 * call then runs the reference kernel). */
static tstate *tstate_new(void)
{
    tstate *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (dnnl_stream_create(&t->strm, S.eng, dnnl_stream_default_flags) != dnnl_success ||
        pthread_setspecific(S.key, t) != 0) {
        tstate_free(t);
        return NULL;
    }
    return t;
}

/* Run the primitive for key k on the caller's arrays (ptrs in the order of the entry's arguments).
 * Returns 1 when oneDNN did the work, 0 when the caller must run the reference kernel. */
static int dispatch(const pkey *k, void *const *ptrs)
{
    if (!T && !(T = tstate_new())) return 0;
    entry *e = lookup(k);
    dnnl_status_t st = e->failed ? e->why : dnnl_success;
    for (int i = 0; i < e->nuser && st == dnnl_success; i++) {
        st = dnnl_memory_set_data_handle(e->user[i], ptrs[i]);
        if (st == dnnl_success && e->inner[i])
            st = dnnl_memory_set_data_handle(e->inner[i], (char *)T->arena + e->inner_off[i]);
    }
    if (st == dnnl_success && e->nargs > e->nuser)
        st = dnnl_memory_set_data_handle(e->args[e->nuser].memory, T->scratch);
    for (int i = 0; i < e->nuser && st == dnnl_success; i++)
        if (e->reorder[i] && !e->is_out[i]) {
            dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, e->user[i]}, {DNNL_ARG_TO, e->inner[i]}};
            st = dnnl_primitive_execute(e->reorder[i], T->strm, 2, ra);
        }
    if (st == dnnl_success) st = dnnl_primitive_execute(e->prim, T->strm, e->nargs, e->args);
    for (int i = 0; i < e->nuser && st == dnnl_success; i++)
        if (e->reorder[i] && e->is_out[i]) {
            dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, e->inner[i]}, {DNNL_ARG_TO, e->user[i]}};
            st = dnnl_primitive_execute(e->reorder[i], T->strm, 2, ra);
        }
    if (st == dnnl_success) st = dnnl_stream_wait(T->strm);
    const int op = (int)k->v[0];
    if (st != dnnl_success) {
        pthread_mutex_lock(&S.mu);
        int first = !S.warned[op];
        S.warned[op] = 1;
        pthread_mutex_unlock(&S.mu);
        if (first)
            baton_log(BATON_LOG_WARN, "nn: oneDNN %s failed (%s); using the reference kernel for it", op_name[op],
                      dnnl_status2str(st));
    }
    return st == dnnl_success;
}

static pkey key(int op, int nv, const int64_t *vals)
{
    pkey k;
    memset(&k, 0, sizeof k);
    k.v[0] = op;
    for (int i = 0; i < nv; i++) k.v[1 + i] = vals[i];
    return k;
}

#define P(p) ((void *)(uintptr_t)(p))

static pkey conv_key(int op, const baton_nn_conv_geom *g, int bias)
{
    const int64_t v[13] = {g->n, g->ic, g->ih, g->iw, g->oc, g->kh, g->kw, g->stride, g->pad, g->oh, g->ow, bias, 0};
    return key(op, 13, v);
}

/* The reference convolution on the table's layout: the rare path where oneDNN refused a geometry.
 * Blocked arguments get NCHW copies allocated for the call (this path is already a slow one). */
static void ref_conv(int op, const baton_nn_conv_geom *g, const float *a, const float *w, const float *b, float *out,
                     float *db)
{
    const int bx = nn_is_blocked(NN_BLOCK, g->ic), by = nn_is_blocked(NN_BLOCK, g->oc);
    const size_t nx = (size_t)g->n * g->ic * g->ih * g->iw, ny = (size_t)g->n * g->oc * g->oh * g->ow;
    float *px = bx ? malloc(sizeof(float) * nx) : NULL, *py = by ? malloc(sizeof(float) * ny) : NULL;
    if ((bx && !px) || (by && !py)) {
        baton_log(BATON_LOG_ERROR, "nn: out of memory in the reference fallback of %s", op_name[op]);
        memset(out, 0, sizeof(float) * (op == OP_CONV_FWD ? ny : op == OP_CONV_BWD_DATA ? nx
                                                               : (size_t)g->oc * g->ic * g->kh * g->kw));
        free(px);
        free(py);
        return;
    }
    switch (op) {
    case OP_CONV_FWD:      /* a = x; out = y */
        if (bx) nn_layout_to_plain(NN_BLOCK, g->n, g->ic, g->ih, g->iw, a, px);
        nn_ref_conv_fwd(g, bx ? px : a, w, b, by ? py : out);
        if (by) nn_layout_from_plain(NN_BLOCK, g->n, g->oc, g->oh, g->ow, py, out);
        break;
    case OP_CONV_BWD_DATA: /* a = dy; out = dx */
        if (by) nn_layout_to_plain(NN_BLOCK, g->n, g->oc, g->oh, g->ow, a, py);
        nn_ref_conv_bwd_data(g, by ? py : a, w, bx ? px : out);
        if (bx) nn_layout_from_plain(NN_BLOCK, g->n, g->ic, g->ih, g->iw, px, out);
        break;
    default:               /* a = x, w = dy; out = dw */
        if (bx) nn_layout_to_plain(NN_BLOCK, g->n, g->ic, g->ih, g->iw, a, px);
        if (by) nn_layout_to_plain(NN_BLOCK, g->n, g->oc, g->oh, g->ow, w, py);
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

/* ref_conv for a forward or backward-data call whose weights are bf16 (bf16 = 1) or f32 */
static void ref_conv_w(int bf16, int op, const baton_nn_conv_geom *g, const float *a, const float *w,
                       const float *b, float *out)
{
    if (!bf16) {
        ref_conv(op, g, a, w, b, out, NULL);
        return;
    }
    float *w32 = widened(w, (size_t)g->oc * g->ic * g->kh * g->kw, op_name[op]);
    if (w32) ref_conv(op, g, a, w32, b, out, NULL);
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

static void conv_fwd(int bf16, const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{
    if (!bf16 && fast_conv(g, x, w, b, 0, 0, y)) return;
    pkey k = with_bf16(conv_key(OP_CONV_FWD, g, b != NULL), bf16);
    void *p[4] = {P(x), P(w), y, P(b)};
    if (!dispatch(&k, p)) ref_conv_w(bf16, OP_CONV_FWD, g, x, w, b, y);
}

static void d_relu_fwd(size_t count, const float *x, float *y);

/* y = max(0, conv(x)): the ReLU as the convolution's post-op (the model's conv + ReLU pair in
 * training). Where oneDNN refuses the post-op for a geometry: conv_fwd, then the ReLU in place —
 * the same values, so the entry takes every geometry. */
static int conv_relu_fwd(int bf16, const baton_nn_conv_geom *g, const float *x, const float *w, const float *b,
                         float *y)
{
    if (!bf16 && fast_conv(g, x, w, b, 1, 0, y)) return 1;
    pkey k = with_bf16(conv_key(OP_CONV_FWD, g, b != NULL), bf16);
    k.v[13] = 1;
    void *p[4] = {P(x), P(w), y, P(b)};
    if (!dispatch(&k, p)) {
        conv_fwd(bf16, g, x, w, b, y);
        d_relu_fwd((size_t)g->n * g->oc * g->oh * g->ow, y, y);
    }
    return 1;
}

/* Backward-data of a stride-1 convolution is a forward convolution: dx = conv(dy, w'),
 * w'[i][o][a][b] = w[o][i][K-1-a][K-1-b], padding K-1-pad. Used (f32 only) where oneDNN's forward
 * kernel measured faster than its backward-data one: 16 channels in and out (one channel block;
 * resnet's first stage), "same" padding — 5-7 % per call (min of 30, bench/RESULTS.md §4f). At 32
 * and 64 channels the two are equal, and for lenet's conv2 (32 -> 64, no padding) the forward form
 * was slower, so those keep backward-data. The weights are flipped on the stack per call (16x16x3x3). */
#define FLIP_MAX (16 * 16 * 9)

static int bwd_data_by_fwd(const baton_nn_conv_geom *g)
{
    return g->stride == 1 && g->kh == g->kw && 2 * g->pad == g->kh - 1 && g->ic == 16 && g->oc == 16 &&
           (size_t)g->oc * g->ic * g->kh * g->kw <= FLIP_MAX;
}

static void conv_bwd_data(int bf16, const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx)
{
    if (!bf16 && fast_conv(g, dy, w, NULL, 0, 1, dx)) return;
    if (!bf16 && bwd_data_by_fwd(g)) {
        float wf[FLIP_MAX];
        const int K = g->kh;
        for (int o = 0; o < g->oc; o++)
            for (int i = 0; i < g->ic; i++)
                for (int a = 0; a < K; a++)
                    for (int b = 0; b < K; b++)
                        wf[(((size_t)i * g->oc + o) * K + a) * K + b] =
                            w[(((size_t)o * g->ic + i) * K + (K - 1 - a)) * K + (K - 1 - b)];
        const baton_nn_conv_geom t = {.n = g->n, .ic = g->oc, .ih = g->oh, .iw = g->ow, .oc = g->ic, .kh = K,
                                      .kw = K, .stride = 1, .pad = K - 1 - g->pad, .oh = g->ih, .ow = g->iw};
        conv_fwd(0, &t, dy, wf, NULL, dx);
        return;
    }
    pkey k = with_bf16(conv_key(OP_CONV_BWD_DATA, g, 0), bf16);
    void *p[3] = {P(dy), P(w), dx};
    if (!dispatch(&k, p)) ref_conv_w(bf16, OP_CONV_BWD_DATA, g, dy, w, NULL, dx);
}

static void conv_bwd_weights(int bf16, const baton_nn_conv_geom *g, const float *x, const float *dy, float *dw,
                             float *db)
{
    pkey k = with_bf16(conv_key(OP_CONV_BWD_W, g, db != NULL), bf16);
    void *p[4] = {P(x), P(dy), dw, db};
    if (!dispatch(&k, p)) ref_conv(OP_CONV_BWD_W, g, x, dy, NULL, dw, db);
}

static pkey ip_key(int op, int n, int in, int out, int bias)
{
    const int64_t v[4] = {n, in, out, bias};
    return key(op, 4, v);
}

static void linear_fwd(int bf16, int n, int in, int out, const float *x, const float *w, const float *b, float *y)
{
    pkey k = with_bf16(ip_key(OP_IP_FWD, n, in, out, b != NULL), bf16);
    void *p[4] = {P(x), P(w), y, P(b)};
    if (dispatch(&k, p)) return;
    float *w32 = bf16 ? widened(w, (size_t)in * out, op_name[OP_IP_FWD]) : NULL;
    if (!bf16 || w32) nn_ref_linear_fwd(n, in, out, x, bf16 ? w32 : w, b, y);
    else memset(y, 0, sizeof(float) * (size_t)n * out);
    free(w32);
}

static void linear_bwd_data(int bf16, int n, int in, int out, const float *dy, const float *w, float *dx)
{
    pkey k = with_bf16(ip_key(OP_IP_BWD_DATA, n, in, out, 0), bf16);
    void *p[3] = {P(dy), P(w), dx};
    if (dispatch(&k, p)) return;
    float *w32 = bf16 ? widened(w, (size_t)in * out, op_name[OP_IP_BWD_DATA]) : NULL;
    if (!bf16 || w32) nn_ref_linear_bwd_data(n, in, out, dy, bf16 ? w32 : w, dx);
    else memset(dx, 0, sizeof(float) * (size_t)n * in);
    free(w32);
}

static void linear_bwd_weights(int bf16, int n, int in, int out, const float *x, const float *dy, float *dw,
                               float *db)
{
    pkey k = with_bf16(ip_key(OP_IP_BWD_W, n, in, out, db != NULL), bf16);
    void *p[4] = {P(x), P(dy), dw, db};
    if (!dispatch(&k, p)) nn_ref_linear_bwd_weights(n, in, out, x, dy, dw, db);
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
    return key(op, 1, v);
}

static void d_relu_fwd(size_t count, const float *x, float *y)
{
    if (count == 0) return;
    pkey k = elt_key(OP_RELU_FWD, count);
    void *p[2] = {P(x), y};
    if (!dispatch(&k, p)) nn_ref_relu_fwd(count, x, y);
}

static void d_relu_bwd(size_t count, const float *y, const float *dy, float *dx)
{
    if (count == 0) return;
    pkey k = elt_key(OP_RELU_BWD, count);
    void *p[3] = {P(y), P(dy), dx};
    if (!dispatch(&k, p)) nn_ref_relu_bwd(count, y, dy, dx);
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
    if (!dispatch(&k, p)) nn_ref_add(count, a, b, y);
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

static void init_once(void)
{
    dnnl_status_t st = dnnl_engine_create(&S.eng, dnnl_cpu, 0);
    if (st != dnnl_success) {
        snprintf(S.why, sizeof S.why, "cannot create the oneDNN CPU engine (%s)", dnnl_status2str(st));
        return;
    }
    dnnl_stream_t probe = NULL;   /* that a stream can be made: every thread's will be */
    st = dnnl_stream_create(&probe, S.eng, dnnl_stream_default_flags);
    if (probe) dnnl_stream_destroy(probe);
    if (st == dnnl_success && pthread_key_create(&S.key, tstate_free) != 0) st = dnnl_out_of_memory;
    if (st == dnnl_success) st = nn_dnnl_attr(&S.attr, 0, 0);
    if (st == dnnl_success) st = nn_dnnl_attr(&S.attr_relu, 0, 1);
    if (st != dnnl_success) {
        snprintf(S.why, sizeof S.why, "cannot create a oneDNN stream (%s)", dnnl_status2str(st));
        return;
    }
    S.ready = 1;
    bf16_table = dnnl_table;
    bf16_table.name = "dnnl-bf16";
    bf16_table.weights_bf16 = 1;
    bf16_table.conv_fwd = b_conv_fwd;
    bf16_table.conv_relu_fwd = b_conv_relu_fwd;
    bf16_table.conv_bwd_data = b_conv_bwd_data;
    bf16_table.conv_bwd_weights = b_conv_bwd_weights;
    bf16_table.linear_fwd = b_linear_fwd;
    bf16_table.linear_bwd_data = b_linear_bwd_data;
    bf16_table.linear_bwd_weights = b_linear_bwd_weights;
    bf16_table.conv_bn_stats_fwd = NULL;   /* that fused entry is the hand-written f32 kernel's */
    bf16_table.conv_bn_stats_ok = NULL;
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
    return baton_nn_kernels_dnnl(err) ? S.eng : NULL;
}
