/* dnnl_prim.c — the oneDNN kernel table's primitives (dnnl_prim.h): the process-wide engine, each
 * calling thread's cache of primitives, their construction for each operation (convolution, inner
 * product, eltwise and add, f32 or bf16, with the reorders into and out of a primitive's own
 * layout) and the call that runs one on the caller's arrays. kern_dnnl.c's entries name a
 * primitive by its key and fall back to the reference kernels when this refuses it.
 *
 * What it owns: one process-wide CPU engine (lent to the folded inference plan, fold_dnnl.c,
 * through nn_dnnl.h) and, for each thread that calls the table, its own stream, a small cache of
 * oneDNN primitives keyed by operation and geometry (shapes, stride, padding, bias or not,
 * epsilon), a memory object per primitive argument (its data handle is pointed at the caller's
 * arrays on every call), one user-managed scratchpad buffer shared by its primitives, and the
 * bfloat16 copies of convolution inputs that forward saves for backward-weights (nn_prim_save: up
 * to SAVE_CAP per thread, each the size of its input, kept until the thread ends; a process-wide
 * record of the last save of each input, under a mutex, makes a copy stale once any thread saves
 * that input again).
 * Primitives are created the first time a geometry is seen on a thread and reused after that: in
 * steady state a call sets a few data handles and runs the primitive, and this file allocates
 * nothing. A cache holds CACHE_CAP entries and evicts the least recently used one; the scratchpad
 * grows (only) when a new primitive needs more. A thread's state is allocated at its first call
 * and freed when the thread ends.
 *
 * Threads: oneDNN in Debian runs on OpenMP, so OMP_NUM_THREADS (or omp_set_num_threads on the
 * calling thread, baton_nn_set_threads) sets the team's size. For a fixed team size every
 * primitive is deterministic, so results are bit-reproducible run to run — and the same on any
 * calling thread. Threads share nothing but the engine and the saved copies' record, so two
 * threads may run the table at once (two networks trained side by side, each on a team of one:
 * race's learners). Batch norm and the other hand-written kernels run OpenMP loops on the
 * calling thread's team.
 *
 * Errors: a primitive oneDNN cannot create for a geometry is remembered as failed for it (its
 * status kept), and nn_prim_dispatch then returns 0 at once, as it does when running one fails;
 * each operation's first failure is logged through baton_log. Nothing here aborts. */
#include "dnnl_prim.h"

#include <oneapi/dnnl/dnnl_debug.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const nn_prim_op_name[OP_COUNT] = {
    "conv_fwd", "conv_bwd_data", "conv_bwd_weights", "linear_fwd", "linear_bwd_data",
    "linear_bwd_weights", "relu_fwd", "relu_bwd", "add",
};

#define MAX_ARGS 6     /* user arguments + scratchpad */
#define CACHE_CAP 192

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
    pthread_mutex_t mu;             /* the warnings */
    dnnl_engine_t eng;
    dnnl_primitive_attr_t attr;     /* scratchpad_mode_user */
    dnnl_primitive_attr_t attr_relu;/* the same and a ReLU post-op */
    pthread_key_t key;              /* a thread's tstate, freed when it ends */
    int warned[OP_COUNT];           /* under mu */
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* nn_prim_save's copy of an input in a primitive's layout, named by (name, user); current while
 * seq is the process's last save of user (SV: a later save on any thread, or one that failed,
 * makes it stale). */
#define SAVE_CAP 64
typedef struct saved {
    pkey name;
    const void *user;
    uint64_t seq;                   /* 0: empty */
    uint64_t tick;                  /* last use, for LRU eviction */
    void *buf;
    size_t size;
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;              /* buf as a oneDNN memory of md */
} saved;

/* the last save of each (name, user) pair (SAVE_USERS of them, the least recent forgotten: its
 * copies then count as stale), process-wide */
#define SAVE_USERS 256
static struct {
    pthread_mutex_t mu;
    uint64_t seq;
    pkey name[SAVE_USERS];
    const void *user[SAVE_USERS];
    uint64_t last[SAVE_USERS];
} SV = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* What one calling thread owns: its stream, its primitives and the buffers they run on. */
typedef struct tstate {
    dnnl_stream_t strm;
    entry cache[CACHE_CAP];
    uint64_t tick;
    void *scratch;                  /* oneDNN scratchpad, shared by this thread's primitives */
    size_t scratch_size;
    void *arena;                    /* blocked copies of convolution arguments, likewise */
    size_t arena_size;
    void *stage;                    /* nn_prim_stage's copy, and its descriptor */
    size_t stage_size;
    dnnl_memory_desc_t stage_md;
    dnnl_memory_t stage_mem;        /* the copy as a oneDNN memory (its handle set per use) */
    saved save[SAVE_CAP];           /* nn_prim_save's copies */
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

/* The oneDNN tag of an activation of c channels in the table's layout: nChw16c (blocked) or NCHW
 * for the f32 table; for the bf16 table (cl: its keys' KEY_BF16 flag, 1 for its bfloat16 calls and
 * 2 for those it runs on the f32 kernels), channels-last (nhwc) where c is a multiple of 16 — the
 * layout oneDNN's AMX convolutions take, so its activations need no reorder, only a conversion of
 * the inputs to bfloat16 (16 channels: nhwc is nChw16c byte for byte). */
static dnnl_format_tag_t act_tag(int cl, int c)
{
    if (!nn_is_blocked(NN_BLOCK, c)) return dnnl_abcd;
    return cl ? dnnl_acdb : dnnl_aBcd16b;
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
    /* the bf16 table's f32 calls between activations of at most 16 channels: blocked, the same bytes
     * as channels-last there, so the f32 table's kernels (and bits) */
    const int cl = v[KEY_BF16] == 2 && v[2] <= NN_BLOCK && v[5] <= NN_BLOCK ? 0 : (int)v[KEY_BF16];
    const dnnl_format_tag_t xt = act_tag(cl, (int)v[2]), yt = act_tag(cl, (int)v[5]);
    /* and between an NCHW side (the input images) and a channels-last one, the primitive on the
     * blocked layout (oneDNN has only its reference kernel for NCHW to nhwc, 200x slower), the
     * channels-last side reordered around it */
    const int mixed = cl == 2 && (v[2] % NN_BLOCK != 0 || v[5] % NN_BLOCK != 0);
    const dnnl_format_tag_t xpt = mixed ? act_tag(0, (int)v[2]) : xt, ypt = mixed ? act_tag(0, (int)v[5]) : yt;
    dnnl_status_t st = nn_dnnl_md(&x, 4, xd, xt);
    if (st == dnnl_success) st = nn_dnnl_md(&w, 4, wd, dnnl_abcd);
    if (st == dnnl_success) st = MD1(&b, v[5]);
    if (st == dnnl_success) st = nn_dnnl_md(&y, 4, yd, yt);
    if (st == dnnl_success) st = nn_dnnl_md(&xa, 4, xd, xpt);
    if (st == dnnl_success) st = nn_dnnl_md(&wa, 4, wd, any);
    if (st == dnnl_success) st = nn_dnnl_md(&ya, 4, yd, ypt);
    if (st != dnnl_success) return st;
    xb = xa, wb = wa, yb = ya, wu = w;   /* what the primitive reads: bfloat16 in the bf16 table's calls */
    if (v[KEY_BF16] & 1) {
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
        /* | 2: the caller's y in bfloat16 — a forward's output (the f32 sums rounded once as stored),
         * a backward's d(output); | 4: the caller's x in bfloat16 (conv_fwd16, conv_bwd16) */
        if (st == dnnl_success && (v[KEY_BF16] & 2)) st = nn_dnnl_md_dt(&y, 4, yd, dnnl_bf16, yt);
        if (st == dnnl_success && (v[KEY_BF16] & 2) && v[0] == OP_CONV_FWD)
            st = nn_dnnl_md_dt(&ya, 4, yd, dnnl_bf16, any);   /* backward: its f32 forward as the hint */
        if (st == dnnl_success && (v[KEY_BF16] & 4)) st = nn_dnnl_md_dt(&x, 4, xd, dnnl_bf16, xt);
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
    const int bf = v[KEY_BF16] == 1;
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
    if (t->stage_mem) dnnl_memory_destroy(t->stage_mem);
    free(t->stage);
    for (int i = 0; i < SAVE_CAP; i++) {
        if (t->save[i].mem) dnnl_memory_destroy(t->save[i].mem);
        free(t->save[i].buf);
    }
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

/* the inner descriptor of an entry's argument i (NULL: none, the plain array is read as it is) */
static const dnnl_memory_desc_t *inner_md(const entry *e, int i)
{
    const dnnl_memory_desc_t *md = NULL;
    if (!e->inner[i] || dnnl_memory_get_memory_desc(e->inner[i], &md) != dnnl_success) return NULL;
    return md;
}

/* Input argument i of entry e converted from user into the primitive's layout for it, into *buf
 * (grown to fit) through *mem (made again when that layout is not *cur): nn_prim_stage's and
 * nn_prim_save's copy. dnnl_success, or why not (the argument needs no reorder: invalid). */
static dnnl_status_t copy_input(entry *e, int i, const void *user, void **buf, size_t *size, dnnl_memory_desc_t *cur,
                                dnnl_memory_t *mem)
{
    const dnnl_memory_desc_t *md = e->failed || i >= e->nuser || e->is_out[i] || !e->reorder[i] ? NULL
                                                                                                  : inner_md(e, i);
    if (!md) return dnnl_invalid_arguments;
    dnnl_status_t st = grow(buf, size, dnnl_memory_desc_get_size(md));
    if (st == dnnl_success && (!*mem || !dnnl_memory_desc_equal(md, cur))) {
        if (*mem) dnnl_memory_destroy(*mem);   /* a new geometry: once per change */
        *mem = NULL;
        st = dnnl_memory_create(mem, md, S.eng, DNNL_MEMORY_NONE);
        if (st == dnnl_success) *cur = *md;
    }
    if (st == dnnl_success) st = dnnl_memory_set_data_handle(*mem, *buf);
    if (st == dnnl_success) st = dnnl_memory_set_data_handle(e->user[i], (void *)(uintptr_t)user);
    if (st == dnnl_success) {
        dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, e->user[i]}, {DNNL_ARG_TO, *mem}};
        st = dnnl_primitive_execute(e->reorder[i], T->strm, 2, ra);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(T->strm);
    return st;
}

const void *nn_prim_stage(const pkey *k, int i, const void *user)
{
    if (!T && !(T = tstate_new())) return NULL;
    const dnnl_status_t st = copy_input(lookup(k), i, user, &T->stage, &T->stage_size, &T->stage_md, &T->stage_mem);
    return st == dnnl_success ? T->stage : NULL;
}

/* ---- saved inputs ---- */

/* SV: a new sequence number for a save of (name, user), recorded as its last; returned when ok,
 * else 0 (the record then says no copy of it is current) */
static uint64_t sv_note(const pkey *name, const void *user, int ok)
{
    pthread_mutex_lock(&SV.mu);
    const uint64_t seq = ++SV.seq;
    int at = -1, oldest = 0;
    for (int i = 0; i < SAVE_USERS && at < 0; i++)
        if (SV.user[i] == user && memcmp(&SV.name[i], name, sizeof *name) == 0) at = i;
        else if (SV.last[i] < SV.last[oldest]) oldest = i;
    if (at < 0) at = oldest;
    SV.name[at] = *name;
    SV.user[at] = user;
    SV.last[at] = seq;
    pthread_mutex_unlock(&SV.mu);
    return ok ? seq : 0;
}

/* whether seq is the last save of (name, user) */
static int sv_current(const pkey *name, const void *user, uint64_t seq)
{
    pthread_mutex_lock(&SV.mu);
    int cur = 0;
    for (int i = 0; i < SAVE_USERS; i++)
        if (SV.user[i] == user && memcmp(&SV.name[i], name, sizeof *name) == 0) cur = SV.last[i] == seq;
    pthread_mutex_unlock(&SV.mu);
    return cur;
}

static saved *save_find(const pkey *name, const void *user)
{
    for (int i = 0; i < SAVE_CAP; i++) {
        saved *v = &T->save[i];
        if (v->seq && v->user == user && memcmp(&v->name, name, sizeof *name) == 0) return v;
    }
    return NULL;
}

const void *nn_prim_save(const pkey *k, int i, const void *user, const pkey *name)
{
    if (!T && !(T = tstate_new())) return NULL;
    entry *e = lookup(k);
    saved *v = save_find(name, user);
    for (int j = 0; !v && j < SAVE_CAP; j++) {   /* user's copy for another batch size: its place */
        pkey a = T->save[j].name, b = *name;
        a.v[1] = b.v[1] = 0;
        if (T->save[j].seq && T->save[j].user == user && memcmp(&a, &b, sizeof a) == 0) v = &T->save[j];
    }
    if (!v) {   /* an empty place, or the least recently used one */
        v = &T->save[0];
        for (int j = 1; j < SAVE_CAP; j++)
            if (v->seq && (!T->save[j].seq || T->save[j].tick < v->tick)) v = &T->save[j];
    }
    v->seq = 0;   /* until this save is whole */
    const dnnl_status_t st = copy_input(e, i, user, &v->buf, &v->size, &v->md, &v->mem);
    const uint64_t seq = sv_note(name, user, st == dnnl_success);
    if (!seq) return NULL;
    v->name = *name;
    v->user = user;
    v->seq = seq;
    v->tick = ++T->tick;
    return v->buf;
}

const void *nn_prim_saved(const pkey *name, const void *user)
{
    if (!T) return NULL;
    saved *v = save_find(name, user);
    if (!v || !sv_current(name, user, v->seq)) return NULL;
    v->tick = ++T->tick;
    return v->buf;
}

/* the descriptor of a staged or saved copy of this thread (NULL: neither) */
static const dnnl_memory_desc_t *copy_md(const void *p)
{
    if (p && p == T->stage) return &T->stage_md;
    for (int i = 0; p && i < SAVE_CAP; i++)
        if (T->save[i].seq && T->save[i].buf == p) return &T->save[i].md;
    return NULL;
}

/* Run the primitive for key k on the caller's arrays (ptrs in the order of the entry's arguments;
 * an input i with staged[i] set read from that copy where it is in the primitive's layout for it).
 * Returns 1 when oneDNN did the work, 0 when the caller must run the reference kernel. */
static int dispatch(const pkey *k, void *const *ptrs, const void *const *staged)
{
    if (!T && !(T = tstate_new())) return 0;
    entry *e = lookup(k);
    dnnl_status_t st = e->failed ? e->why : dnnl_success;
    int skip[MAX_ARGS] = {0};
    for (int i = 0; staged && i < e->nuser && st == dnnl_success; i++) {
        const dnnl_memory_desc_t *md = !e->is_out[i] && e->reorder[i] ? inner_md(e, i) : NULL;
        const dnnl_memory_desc_t *smd = copy_md(staged[i]);
        skip[i] = md && smd && dnnl_memory_desc_equal(md, smd);
    }
    for (int i = 0; i < e->nuser && st == dnnl_success; i++) {
        st = dnnl_memory_set_data_handle(e->user[i], ptrs[i]);
        if (st == dnnl_success && e->inner[i])
            st = dnnl_memory_set_data_handle(e->inner[i], skip[i] ? (void *)(uintptr_t)staged[i]
                                                                  : (char *)T->arena + e->inner_off[i]);
    }
    if (st == dnnl_success && e->nargs > e->nuser)
        st = dnnl_memory_set_data_handle(e->args[e->nuser].memory, T->scratch);
    for (int i = 0; i < e->nuser && st == dnnl_success; i++)
        if (e->reorder[i] && !e->is_out[i] && !skip[i]) {
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
            baton_log(BATON_LOG_WARN, "nn: oneDNN %s failed (%s); using the reference kernel for it", nn_prim_op_name[op],
                      dnnl_status2str(st));
    }
    return st == dnnl_success;
}

int nn_prim_dispatch(const pkey *k, void *const *ptrs) { return dispatch(k, ptrs, NULL); }

int nn_prim_dispatch_staged(const pkey *k, void *const *ptrs, int i, const void *staged)
{
    const void *st[MAX_ARGS] = {0};
    if (i >= 0 && i < MAX_ARGS) st[i] = staged;
    return dispatch(k, ptrs, st);
}

int nn_prim_dispatch_copies(const pkey *k, void *const *ptrs, const void *const *staged)
{
    return dispatch(k, ptrs, staged);
}

pkey nn_prim_key(int op, int nv, const int64_t *vals)
{
    pkey k;
    memset(&k, 0, sizeof k);
    k.v[0] = op;
    for (int i = 0; i < nv; i++) k.v[1 + i] = vals[i];
    return k;
}

pkey nn_prim_conv_key(int op, const baton_nn_conv_geom *g, int bias)
{
    const int64_t v[13] = {g->n, g->ic, g->ih, g->iw, g->oc, g->kh, g->kw, g->stride, g->pad, g->oh, g->ow, bias, 0};
    return nn_prim_key(op, 13, v);
}

/* ---- the engine ---- */

int nn_prim_init(char *why, size_t cap)
{
    dnnl_status_t st = dnnl_engine_create(&S.eng, dnnl_cpu, 0);
    if (st != dnnl_success) {
        snprintf(why, cap, "cannot create the oneDNN CPU engine (%s)", dnnl_status2str(st));
        return -1;
    }
    dnnl_stream_t probe = NULL;   /* that a stream can be made: every thread's will be */
    st = dnnl_stream_create(&probe, S.eng, dnnl_stream_default_flags);
    if (probe) dnnl_stream_destroy(probe);
    if (st == dnnl_success && pthread_key_create(&S.key, tstate_free) != 0) st = dnnl_out_of_memory;
    if (st == dnnl_success) st = nn_dnnl_attr(&S.attr, 0, 0);
    if (st == dnnl_success) st = nn_dnnl_attr(&S.attr_relu, 0, 1);
    if (st != dnnl_success) {
        snprintf(why, cap, "cannot create a oneDNN stream (%s)", dnnl_status2str(st));
        return -1;
    }
    return 0;
}

dnnl_engine_t nn_prim_engine(void) { return S.eng; }
