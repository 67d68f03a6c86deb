/* fold_dnnl.c — the folded inference plan (baton_nn_infer_plan_*): a model's layer graph compiled
 * once, for one batch size, into a short list of oneDNN primitives that then run with no
 * allocation and no reorder of weights. It sits beside the training plan (fuse.c) and the oneDNN
 * kernel table (kern_dnnl.c): the same component, the same oneDNN, but a fixed batch and weights
 * packed into the primitives' own layouts once.
 *
 * Compilation (baton_nn_infer_plan_create):
 *   1. Lowering (fold.c): batch norm folded into convolutions, ReLU and residual adds fused as
 *      post-ops (eltwise, sum), dropout dropped; the result is a list of operations on values.
 *   2. Primitives, in order. Each is created with format_tag any for weights and outputs, so
 *      oneDNN picks its preferred (blocked) layouts; an input takes exactly the layout its producer
 *      chose (no reorder between layers) unless oneDNN has only a reference kernel for it. An inner
 *      product also tries its input as a plain [batch, C·H·W] matrix (brgemm kernels want that) and
 *      keeps the fastest candidate, timed at load; gemm-based kernels, which oneDNN generates at
 *      their first execution, are run once at load so the first query does not pay for it.
 *      The model input is plain NCHW (the caller's array), the logits plain [batch, classes] (the
 *      caller's array): their data handles are set on each call.
 *   3. Weights are reordered once into the layouts chosen (on one thread: tiny reorders do not
 *      pay for a parallel region); activation buffers and one shared scratchpad are allocated.
 *   4. A warm-up query on zeros: it starts oneDNN's OpenMP threads and touches every weight and
 *      buffer once, so the first real query is not the one that pays for that.
 *
 * In bfloat16 (precision BF16, where the CPU has it): weights packed into bf16 once, activations
 * bf16 between layers (oneDNN sums in f32 within a layer and rounds its output), biases and the
 * logits f32; the input is reordered into bf16 by the first layer's input reorder. PyTorch's bf16
 * autocast runs inference the same way.
 *
 * Contract: baton_nn_infer_plan_run allocates nothing and is not thread-safe per plan (one query
 * at a time). Primitives are tuned for the OpenMP thread count in force when the plan was built.
 * A model the lowering cannot express (e.g. batch norm not after a convolution) is refused with a
 * message naming the layer. The model is only read; the plan keeps nothing of it. */
#include "nn_dnnl.h"

#include <math.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A value of the plan: the lowering's (fold.c) and the temporaries compilation adds. */
typedef struct value {
    int c, h, w;             /* one image; linear outputs are c × 1 × 1 */
    int dead;                /* replaced by a sum target: no buffer */
    int alias;               /* >= 0: a view (another descriptor) of that value's buffer */
    int has_md;
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;       /* created with the md, data handle set later */
} value;

typedef struct fprim {
    dnnl_primitive_t p;
    int nargs;
    dnnl_exec_arg_t args[6];
    dnnl_memory_t scratch;   /* this primitive's view of the shared scratchpad, or NULL */
} fprim;

struct baton_nn_infer_plan {
    dnnl_engine_t eng;       /* the kernel table's (nn_dnnl.h), not ours */
    dnnl_stream_t strm;
    fprim *prims;
    int nprims, capprims;
    value *vals;
    int nvals, capvals;
    dnnl_memory_t *mems;     /* packed weights and biases */
    int nmems, capmems;
    void **bufs;             /* every buffer we allocated */
    int nbufs, capbufs;
    int batch, in_val, out_val;
    dnnl_data_type_t dt;     /* of the activations and weights: f32, or bf16 (sums f32) */
    void *scratch;
    size_t scratch_size, bytes;
};

/* inner products with at least this many bytes of weights get their candidate kernels timed */
#define TIME_IP_BYTES (512.0 * 1024)

/* libgomp, oneDNN's OpenMP runtime */
int omp_get_max_threads(void);
void omp_set_num_threads(int n);

/* ---------------------------------------------------------------- small helpers */

static int new_value(baton_nn_infer_plan *f, int c, int h, int w)
{
    if (nn_grow((void **)&f->vals, &f->nvals, &f->capvals, sizeof *f->vals)) return -1;
    value *v = &f->vals[f->nvals];
    memset(v, 0, sizeof *v);
    v->c = c;
    v->h = h;
    v->w = w;
    v->alias = -1;
    return f->nvals++;
}

static void *own_buffer(baton_nn_infer_plan *f, size_t bytes)
{
    if (nn_grow((void **)&f->bufs, &f->nbufs, &f->capbufs, sizeof *f->bufs)) return NULL;
    size_t sz = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, sz ? sz : 64);
    if (!p) return NULL;
    memset(p, 0, sz);   /* touch every page now, not during the first query */
    f->bufs[f->nbufs++] = p;
    f->bytes += sz;
    return p;
}

static int dnnl_fail(baton_err *err, dnnl_status_t st, const char *what, const char *layer)
{
    return baton_err_set(err, BATON_ERR_FORMAT, "fast path: layer %s: %s failed (%s)", layer && *layer ? layer : "?",
                         what, dnnl_status2str(st));
}

/* ---------------------------------------------------------------- 2. primitives */

static int add_prim(baton_nn_infer_plan *f, dnnl_primitive_desc_t pd, const int *ids, const dnnl_memory_t *mems, int n,
                    const char *name, baton_err *err)
{
    if (nn_grow((void **)&f->prims, &f->nprims, &f->capprims, sizeof *f->prims))
        return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    fprim *p = &f->prims[f->nprims];
    memset(p, 0, sizeof *p);
    for (int i = 0; i < n; i++) {
        p->args[i].arg = ids[i];
        p->args[i].memory = mems[i];
    }
    p->nargs = n;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t need = smd ? dnnl_memory_desc_get_size(smd) : 0;
    dnnl_status_t st = dnnl_success;
    if (need > 0) {
        st = dnnl_memory_create(&p->scratch, smd, f->eng, DNNL_MEMORY_NONE);
        if (st == dnnl_success) {
            p->args[p->nargs].arg = DNNL_ARG_SCRATCHPAD;
            p->args[p->nargs++].memory = p->scratch;
            if (need > f->scratch_size) f->scratch_size = need;
        }
    }
    if (st == dnnl_success) st = dnnl_primitive_create(&p->p, pd);
    if (st != dnnl_success) {
        if (p->scratch) dnnl_memory_destroy(p->scratch);
        return dnnl_fail(err, st, "primitive creation", name);
    }
    f->nprims++;
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    baton_log(BATON_LOG_DEBUG, "infer: %-20s %s", name && *name ? name : "(pool/reorder)", impl ? impl : "?");
    return BATON_OK;
}

/* Give value v its memory descriptor (from the producing primitive) and a memory object. */
static int set_value_md(baton_nn_infer_plan *f, int v, const dnnl_memory_desc_t *md)
{
    value *x = &f->vals[v];
    if (x->has_md) return BATON_OK;
    x->md = *md;
    x->has_md = 1;
    return dnnl_memory_create(&x->mem, md, f->eng, DNNL_MEMORY_NONE) == dnnl_success ? BATON_OK : BATON_ERR_NOMEM;
}

/* 0: a JIT kernel generated at creation; 1: gemm-based (its kernels are generated at the first
 * execution); 2: a reference implementation. */
static int impl_rank(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return 1;
    if (!strncmp(impl, "ref", 3)) return 2;
    return strstr(impl, "gemm") && !strstr(impl, "brgemm") ? 1 : 0;
}

/* Whether a candidate with the same implementation is already in v. */
static int has_impl(dnnl_primitive_desc_t *v, int n, const_dnnl_primitive_desc_t pd)
{
    const char *a = NULL, *b = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &a);
    for (int i = 0; i < n; i++) {
        dnnl_primitive_desc_query(v[i], dnnl_query_impl_info_str, 0, &b);
        if (a && b && !strcmp(a, b)) return 1;
    }
    return 0;
}

/* Run a primitive on zero-filled scratch arguments: once (oneDNN generates gemm kernels at the
 * first execution, so this also makes them now), then the best of four runs, in ms; -1 when it
 * cannot run. */
static double time_pd(baton_nn_infer_plan *f, const_dnnl_primitive_desc_t pd)
{
    static const int ids[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD};
    dnnl_exec_arg_t args[5];
    void *bufs[5] = {0};
    int n = 0;
    double best = -1;
    dnnl_primitive_t p = NULL;
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < 5 && st == dnnl_success; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, ids[i]);
        size_t sz = md ? dnnl_memory_desc_get_size(md) : 0;
        if (!sz) continue;
        bufs[n] = aligned_alloc(64, (sz + 63) / 64 * 64);
        if (!bufs[n]) {
            st = dnnl_out_of_memory;
            break;
        }
        memset(bufs[n], 0, sz);
        args[n].arg = ids[i];
        st = dnnl_memory_create(&args[n].memory, md, f->eng, bufs[n]);
        if (st == dnnl_success) n++;
        else free(bufs[n]);
    }
    if (st == dnnl_success) st = dnnl_primitive_create(&p, pd);
    for (int r = 0; r < 5 && st == dnnl_success; r++) {
        const double t = baton_now();
        st = dnnl_primitive_execute(p, f->strm, n, args);
        if (st == dnnl_success) st = dnnl_stream_wait(f->strm);
        const double ms = (baton_now() - t) * 1e3;
        if (r > 0 && st == dnnl_success && (best < 0 || ms < best)) best = ms;
    }
    if (p) dnnl_primitive_destroy(p);
    for (int i = 0; i < n; i++) {
        dnnl_memory_destroy(args[i].memory);
        free(bufs[i]);
    }
    return st == dnnl_success ? best : -1;
}

/* An input in another layout than the value's: a temporary value and a reorder into it. */
static int adapt_input(baton_nn_infer_plan *f, int v, const dnnl_memory_desc_t *want, const char *name, dnnl_memory_t *mem,
                       baton_err *err)
{
    if (dnnl_memory_desc_equal(&f->vals[v].md, want)) {
        *mem = f->vals[v].mem;
        return BATON_OK;
    }
    int t = new_value(f, f->vals[v].c, f->vals[v].h, f->vals[v].w);
    if (t < 0 || set_value_md(f, t, want)) return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&rpd, &f->vals[v].md, f->eng, want, f->eng, NULL);
    if (st != dnnl_success) return dnnl_fail(err, st, "input reorder", name);
    const int ids[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    const dnnl_memory_t ms[2] = {f->vals[v].mem, f->vals[t].mem};
    int rc = add_prim(f, rpd, ids, ms, 2, name, err);
    dnnl_primitive_desc_destroy(rpd);
    *mem = f->vals[t].mem;
    return rc;
}

/* Reorder plain weights (dims, tag) into the layout the primitive wants; keep the packed copy. */
static int pack(baton_nn_infer_plan *f, const float *data, int nd, const int64_t *dims, dnnl_format_tag_t tag,
                const dnnl_memory_desc_t *want, dnnl_memory_t *out, const char *name, baton_err *err)
{
    dnnl_memory_desc_t plain;
    dnnl_status_t st = nn_dnnl_md(&plain, nd, dims, tag);
    void *buf = own_buffer(f, dnnl_memory_desc_get_size(want));
    if (!buf || nn_grow((void **)&f->mems, &f->nmems, &f->capmems, sizeof *f->mems))
        return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    dnnl_memory_t src = NULL, dst = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    if (st == dnnl_success) st = dnnl_memory_create(&src, &plain, f->eng, (void *)(uintptr_t)data);
    if (st == dnnl_success) st = dnnl_memory_create(&dst, want, f->eng, buf);
    /* on one thread (oneDNN fixes a reorder's thread count when it is created): a parallel region
     * per small reorder costs more than it saves, and on a busy machine each one can wait a
     * scheduler tick for the second thread */
    const int nthr = omp_get_max_threads();
    omp_set_num_threads(1);
    if (st == dnnl_success) st = dnnl_reorder_primitive_desc_create(&rpd, &plain, f->eng, want, f->eng, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&r, rpd);
    if (st == dnnl_success) {
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
        st = dnnl_primitive_execute(r, f->strm, 2, a);
        if (st == dnnl_success) st = dnnl_stream_wait(f->strm);
    }
    omp_set_num_threads(nthr);
    if (r) dnnl_primitive_destroy(r);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (src) dnnl_memory_destroy(src);
    if (st != dnnl_success) {
        if (dst) dnnl_memory_destroy(dst);
        return dnnl_fail(err, st, "weight reorder", name);
    }
    f->mems[f->nmems++] = dst;
    *out = dst;
    return BATON_OK;
}

static int value_of_mem(const baton_nn_infer_plan *f, dnnl_memory_t mem)
{
    for (int v = 0; v < f->nvals; v++)
        if (f->vals[v].mem == mem) return v;
    return -1;
}

/* The same dims as md, format any. */
static dnnl_status_t md_any(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, dnnl_data_type_t dt)
{
    return dnnl_memory_desc_init_by_tag(out, md->ndims, md->dims, dt, dnnl_format_tag_any);
}

/* What a convolution or inner product is built from: its descriptors, the weights' logical shape,
 * and the input layouts to try. */
typedef struct cdesc {
    dnnl_memory_desc_t wmd, bmd, dmd, smd_any, smd_plain, smd_flat, wmd_flat;
    int64_t wd[4];
    int wnd;
    dnnl_format_tag_t wtag;
    const dnnl_memory_desc_t *cands[4];
} cdesc;

/* Input layouts to try: the producer's (no reorder); for an inner product on a 4-D input also the
 * same data seen as [batch, C·H·W] (plain NCHW is exactly that; brgemm kernels take it) and plain
 * NCHW; then oneDNN's choice. */
static dnnl_status_t compute_descs(baton_nn_infer_plan *f, const nn_fold_op *o, cdesc *d)
{
    const int N = f->batch;
    value *in = &f->vals[o->src], *outv = &f->vals[o->dst];
    const int final = o->dst == f->out_val;
    if (o->kind == NN_FOLD_CONV) {
        d->wnd = 4;
        d->wd[0] = o->oc, d->wd[1] = in->c, d->wd[2] = o->k, d->wd[3] = o->k;
        d->wtag = dnnl_abcd;
    } else if (in->md.ndims == 4) {
        d->wnd = 4;
        d->wd[0] = o->oc, d->wd[1] = in->c, d->wd[2] = in->h, d->wd[3] = in->w;
        d->wtag = dnnl_abcd;
    } else {
        d->wnd = 2;
        d->wd[0] = o->oc, d->wd[1] = (int64_t)in->c * in->h * in->w;
        d->wtag = dnnl_ab;
    }
    /* the logits are the caller's f32 array; a bf16 plan's other outputs and weights are bf16 (its
     * biases f32) */
    const dnnl_data_type_t dt = f->dt, ddt = final ? dnnl_f32 : dt;
    dnnl_status_t st = nn_dnnl_md_dt(&d->wmd, d->wnd, d->wd, dt, dnnl_format_tag_any);
    if (st == dnnl_success) st = nn_dnnl_md(&d->bmd, 1, (const int64_t[1]){o->oc}, dnnl_a);
    if (st == dnnl_success) {
        if (o->sum >= 0) d->dmd = f->vals[o->sum].md;
        else if (o->kind == NN_FOLD_CONV)
            st = nn_dnnl_md_dt(&d->dmd, 4, (const int64_t[4]){N, o->oc, outv->h, outv->w}, ddt, dnnl_format_tag_any);
        else st = nn_dnnl_md_dt(&d->dmd, 2, (const int64_t[2]){N, o->oc}, ddt, final ? dnnl_ab : dnnl_format_tag_any);
    }
    if (st == dnnl_success) st = md_any(&d->smd_any, &in->md, dt);
    if (st != dnnl_success) return st;
    const int is4d_ip = o->kind == NN_FOLD_IP && in->md.ndims == 4;
    const int64_t chw = (int64_t)in->c * in->h * in->w;
    const int try_flat = is4d_ip && nn_dnnl_md_dt(&d->smd_plain, 4, in->md.dims, dt, dnnl_abcd) == dnnl_success &&
                         nn_dnnl_md_dt(&d->smd_flat, 2, (const int64_t[2]){N, chw}, dt, dnnl_ab) == dnnl_success &&
                         nn_dnnl_md_dt(&d->wmd_flat, 2, (const int64_t[2]){o->oc, chw}, dt, dnnl_format_tag_any) == dnnl_success;
    const int try_plain = is4d_ip && try_flat && !dnnl_memory_desc_equal(&d->smd_plain, &in->md);
    d->cands[0] = &in->md;
    d->cands[1] = try_flat ? &d->smd_flat : NULL;
    d->cands[2] = try_plain ? &d->smd_plain : NULL;
    d->cands[3] = &d->smd_any;
    return dnnl_success;
}

/* One candidate's primitive descriptor for source layout smd. */
static dnnl_status_t compute_try(baton_nn_infer_plan *f, const nn_fold_op *o, const cdesc *d, const dnnl_memory_desc_t *smd,
                                 dnnl_primitive_desc_t *cand)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t st = nn_dnnl_attr(&attr, o->sum >= 0, o->relu);
    if (st == dnnl_success) {
        if (o->kind == NN_FOLD_CONV) {
            dnnl_convolution_desc_t cd;
            const dnnl_dims_t strides = {o->stride, o->stride}, pad = {o->pad, o->pad};
            st = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, smd, &d->wmd,
                                                    o->b ? &d->bmd : NULL, &d->dmd, strides, pad, pad);
            if (st == dnnl_success) st = dnnl_primitive_desc_create(cand, &cd, attr, f->eng, NULL);
        } else {
            dnnl_inner_product_desc_t id;
            st = dnnl_inner_product_forward_desc_init(&id, dnnl_forward_inference, smd,
                                                      smd == &d->smd_flat ? &d->wmd_flat : &d->wmd,
                                                      o->b ? &d->bmd : NULL, &d->dmd);
            if (st == dnnl_success) st = dnnl_primitive_desc_create(cand, &id, attr, f->eng, NULL);
        }
    }
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

/* An inner product's kernels without an optimised rank: a small one takes the best made at
 * creation (timing would cost more than any difference); a large one (lenet's fc1: 4.7 MB of
 * weights) the fastest. Returns the index kept; the others are destroyed. */
static int pick_inner_product(baton_nn_infer_plan *f, const nn_fold_op *o, dnnl_primitive_desc_t *alt, int nalt)
{
    const value *in = &f->vals[o->src];
    const int timed = nalt > 1 && (double)o->oc * in->c * in->h * in->w * sizeof(float) >= TIME_IP_BYTES;
    double tbest = INFINITY;
    int k = 0;
    if (timed) {
        for (int i = 0; i < nalt; i++) {
            const double ms = time_pd(f, alt[i]);
            if (ms >= 0 && ms < tbest) {
                tbest = ms;
                k = i;
            }
        }
        baton_log(BATON_LOG_DEBUG, "infer: %s: fastest of %d inner-product kernels: %.3f ms", o->name, nalt, tbest);
    } else {
        for (int i = 1; i < nalt; i++)
            if (impl_rank(alt[i]) < impl_rank(alt[k])) k = i;
        if (impl_rank(alt[k]) == 1) time_pd(f, alt[k]);   /* generate its lazily made kernels now */
    }
    for (int i = 0; i < nalt; i++)
        if (i != k) dnnl_primitive_desc_destroy(alt[i]);
    return k;
}

/* A convolution takes the first candidate layout that has an optimised kernel; an inner product's
 * candidates are timed (oneDNN's gemm and brgemm kernels each win somewhere, depending on shapes
 * and threads) and the fastest is kept. *chosen: the candidate's index. */
static int compute_pick(baton_nn_infer_plan *f, const nn_fold_op *o, const cdesc *d, dnnl_primitive_desc_t *out, int *chosen,
                        baton_err *err)
{
    dnnl_primitive_desc_t pd = NULL, alt[4] = {0};
    int best = 99, nalt = 0, alt_at[4] = {0};
    dnnl_status_t st = dnnl_success, first_st = dnnl_success;
    *chosen = -1;
    for (int attempt = 0; attempt < 4 && (best > 0 || o->kind == NN_FOLD_IP); attempt++) {
        if (!d->cands[attempt]) continue;
        dnnl_primitive_desc_t cand = NULL;
        st = compute_try(f, o, d, d->cands[attempt], &cand);
        if (st != dnnl_success) {
            if (attempt == 0) first_st = st;
            continue;
        }
        const int score = impl_rank(cand);
        if (o->kind == NN_FOLD_IP && score < 2 && !has_impl(alt, nalt, cand)) {
            alt_at[nalt] = attempt;
            alt[nalt++] = cand;   /* timed below */
        } else if (score < best) {
            if (pd) dnnl_primitive_desc_destroy(pd);
            pd = cand;
            best = score;
            *chosen = attempt;
        } else {
            dnnl_primitive_desc_destroy(cand);
        }
    }
    if (nalt) {
        const int k = pick_inner_product(f, o, alt, nalt);
        if (pd) dnnl_primitive_desc_destroy(pd);
        pd = alt[k];
        *chosen = alt_at[k];
    } else if (pd && best == 1) {
        time_pd(f, pd);   /* generates its lazily made kernels now, not in the first query */
    }
    if (!pd) st = first_st != dnnl_success ? first_st : st;
    if (st != dnnl_success || !pd) return dnnl_fail(err, st, o->kind == NN_FOLD_CONV ? "convolution" : "inner product", o->name);
    *out = pd;
    return BATON_OK;
}

static int make_compute(baton_nn_infer_plan *f, nn_fold_op *o, baton_err *err)
{
    cdesc d;
    dnnl_status_t st = compute_descs(f, o, &d);
    if (st != dnnl_success) return dnnl_fail(err, st, "memory descriptor", o->name);
    dnnl_primitive_desc_t pd = NULL;
    int chosen;
    int rc = compute_pick(f, o, &d, &pd, &chosen, err);
    if (rc) return rc;
    dnnl_memory_t src_mem = NULL, w_mem = NULL, b_mem = NULL;
    if (chosen == 1) {
        /* plain NCHW (a reorder into it if the producer chose otherwise), then a 2-D view of it */
        rc = adapt_input(f, o->src, &d.smd_plain, o->name, &src_mem, err);
        int v = rc ? -1 : value_of_mem(f, src_mem);
        int t = v < 0 ? -1 : new_value(f, f->vals[v].c, f->vals[v].h, f->vals[v].w);
        if (!rc && (t < 0 || set_value_md(f, t, &d.smd_flat)))
            rc = baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
        if (!rc) {
            f->vals[t].alias = v;
            src_mem = f->vals[t].mem;
            d.wnd = 2;
            d.wd[1] = d.wd[1] * d.wd[2] * d.wd[3];
            d.wtag = dnnl_ab;
        }
    } else {
        rc = adapt_input(f, o->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), o->name, &src_mem, err);
    }
    if (!rc) rc = pack(f, o->w, d.wnd, d.wd, d.wtag, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &w_mem,
                       o->name, err);
    if (!rc && o->b) rc = pack(f, o->b, 1, (const int64_t[1]){o->oc}, dnnl_a,
                               dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), &b_mem, o->name, err);
    if (!rc && o->sum < 0 && set_value_md(f, o->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0)))
        rc = baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    if (!rc) {
        const int ids[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
        const dnnl_memory_t ms[4] = {src_mem, w_mem, f->vals[o->dst].mem, b_mem};
        rc = add_prim(f, pd, ids, ms, o->b ? 4 : 3, o->name, err);
    }
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

static int make_pool(baton_nn_infer_plan *f, nn_fold_op *o, baton_err *err)
{
    value *in = &f->vals[o->src], *outv = &f->vals[o->dst];
    dnnl_memory_desc_t dmd;
    dnnl_status_t st = nn_dnnl_md_dt(&dmd, 4, (const int64_t[4]){f->batch, outv->c, outv->h, outv->w},
                                     in->md.data_type, dnnl_format_tag_any);
    const int gap = o->kind == NN_FOLD_AVGPOOL;
    const dnnl_dims_t strides = {gap ? 1 : o->stride, gap ? 1 : o->stride};
    const dnnl_dims_t kernel = {gap ? in->h : o->k, gap ? in->w : o->k}, pad = {0, 0};
    dnnl_pooling_desc_t pdsc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    if (st == dnnl_success)
        st = dnnl_pooling_forward_desc_init(&pdsc, dnnl_forward_inference,
                                            gap ? dnnl_pooling_avg_exclude_padding : dnnl_pooling_max, &in->md, &dmd,
                                            strides, kernel, pad, pad);
    if (st == dnnl_success) st = nn_dnnl_attr(&attr, 0, 0);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &pdsc, attr, f->eng, NULL);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return dnnl_fail(err, st, "pooling", gap ? "adaptive_avg_pool2d" : "max_pool2d");
    int rc = set_value_md(f, o->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
    if (rc) rc = baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    if (!rc) {
        const int ids[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
        const dnnl_memory_t ms[2] = {in->mem, outv->mem};
        rc = add_prim(f, pd, ids, ms, 2, gap ? "adaptive_avg_pool2d" : "max_pool2d", err);
    }
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* ---------------------------------------------------------------- 3. build, run, free */

/* The lowering's values, then the model input's layout: plain NCHW (the caller's array). */
static int plan_values(baton_nn_infer_plan *f, const nn_fold *F, baton_err *err)
{
    for (int v = 0; v < F->nvals; v++) {
        if (new_value(f, F->vals[v].c, F->vals[v].h, F->vals[v].w) < 0)
            return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
        f->vals[v].dead = F->vals[v].dead;
    }
    f->in_val = F->in_val;
    f->out_val = F->out_val;
    value *in = &f->vals[f->in_val];
    dnnl_memory_desc_t imd;
    if (nn_dnnl_md(&imd, 4, (const int64_t[4]){f->batch, in->c, in->h, in->w}, dnnl_abcd) != dnnl_success ||
        set_value_md(f, f->in_val, &imd))
        return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    return BATON_OK;
}

/* Buffers: every live value but the caller's input and logits; views share their value's buffer
 * (the input's: per call); then the shared scratchpad. */
static int plan_buffers(baton_nn_infer_plan *f, baton_err *err)
{
    for (int v = 0; v < f->nvals; v++) {
        value *x = &f->vals[v];
        if (v == f->in_val || v == f->out_val || x->dead || !x->has_md || x->alias >= 0) continue;
        void *b = own_buffer(f, dnnl_memory_desc_get_size(&x->md));
        if (!b || dnnl_memory_set_data_handle(x->mem, b) != dnnl_success)
            return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory for activations");
    }
    for (int v = 0; v < f->nvals; v++) {
        value *x = &f->vals[v];
        void *b = NULL;
        if (x->alias < 0 || x->alias == f->in_val) continue;
        if (dnnl_memory_get_data_handle(f->vals[x->alias].mem, &b) != dnnl_success ||
            dnnl_memory_set_data_handle(x->mem, b) != dnnl_success)
            return baton_err_set(err, BATON_ERR_FORMAT, "fast path: cannot share an activation buffer");
    }
    if (f->scratch_size) {
        f->scratch = own_buffer(f, f->scratch_size);
        if (!f->scratch) return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory for the scratchpad");
        for (int i = 0; i < f->nprims; i++)
            if (f->prims[i].scratch) dnnl_memory_set_data_handle(f->prims[i].scratch, f->scratch);
    }
    return BATON_OK;
}

/* Steps 1-3 on an empty plan. */
static int plan_compile(baton_nn_infer_plan *f, const baton_nn_model *m, baton_err *err)
{
    if (!(f->eng = nn_dnnl_engine(err))) return BATON_ERR_FORMAT;
    dnnl_status_t st = dnnl_stream_create(&f->strm, f->eng, dnnl_stream_default_flags);
    if (st != dnnl_success)
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: cannot create a oneDNN stream (%s)",
                             dnnl_status2str(st));
    nn_fold F = {0};
    int rc = nn_fold_lower(m, &F, err);
    if (!rc) rc = plan_values(f, &F, err);
    for (int i = 0; i < F.nops && !rc; i++) {
        nn_fold_op *o = &F.ops[i];
        rc = (o->kind == NN_FOLD_CONV || o->kind == NN_FOLD_IP) ? make_compute(f, o, err) : make_pool(f, o, err);
    }
    nn_fold_free(&F);
    return rc ? rc : plan_buffers(f, err);
}

int baton_nn_infer_plan_create(const baton_nn_model *m, int batch, int precision, baton_nn_infer_plan **out,
                               baton_err *err)
{
    *out = NULL;
    if (precision == BATON_NN_PRECISION_BF16 && !baton_nn_kernels_dnnl_bf16(err))
        return baton_err_prefix(err, "fast path in bf16");
    baton_nn_infer_plan *f = calloc(1, sizeof *f);
    if (!f) return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    f->batch = batch;
    f->dt = precision == BATON_NN_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
    f->in_val = f->out_val = -1;
    int rc = plan_compile(f, m, err);
    if (!rc) {
        /* the warm-up: one query on zeros starts oneDNN's OpenMP threads and touches every weight
         * and buffer, so that the first real query runs like the others (counted in the load) */
        void *zin = own_buffer(f, dnnl_memory_desc_get_size(&f->vals[f->in_val].md));
        void *zout = own_buffer(f, dnnl_memory_desc_get_size(&f->vals[f->out_val].md));
        if (!zin || !zout) rc = baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
        else rc = baton_nn_infer_plan_run(f, zin, zout, err);
    }
    if (rc) {
        baton_nn_infer_plan_free(f);
        return rc;
    }
    *out = f;
    return BATON_OK;
}

int baton_nn_infer_plan_run(baton_nn_infer_plan *f, const float *x, float *logits, baton_err *err)
{
    dnnl_status_t st = dnnl_memory_set_data_handle(f->vals[f->in_val].mem, (void *)(uintptr_t)x);
    for (int v = 0; v < f->nvals && st == dnnl_success; v++)   /* views of the input (a few at most) */
        if (f->vals[v].alias == f->in_val) st = dnnl_memory_set_data_handle(f->vals[v].mem, (void *)(uintptr_t)x);
    if (st == dnnl_success) st = dnnl_memory_set_data_handle(f->vals[f->out_val].mem, logits);
    for (int i = 0; i < f->nprims && st == dnnl_success; i++)
        st = dnnl_primitive_execute(f->prims[i].p, f->strm, f->prims[i].nargs, f->prims[i].args);
    if (st == dnnl_success) st = dnnl_stream_wait(f->strm);
    if (st != dnnl_success)
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: oneDNN execution failed (%s)", dnnl_status2str(st));
    return BATON_OK;
}

int baton_nn_infer_plan_nprims(const baton_nn_infer_plan *f) { return f->nprims; }
size_t baton_nn_infer_plan_bytes(const baton_nn_infer_plan *f) { return f->bytes; }

void baton_nn_infer_plan_free(baton_nn_infer_plan *f)
{
    if (!f) return;
    for (int i = 0; i < f->nprims; i++) {
        if (f->prims[i].p) dnnl_primitive_destroy(f->prims[i].p);
        if (f->prims[i].scratch) dnnl_memory_destroy(f->prims[i].scratch);
    }
    for (int v = 0; v < f->nvals; v++)
        if (f->vals[v].mem) dnnl_memory_destroy(f->vals[v].mem);
    for (int i = 0; i < f->nmems; i++) dnnl_memory_destroy(f->mems[i]);
    for (int i = 0; i < f->nbufs; i++) free(f->bufs[i]);
    if (f->strm) dnnl_stream_destroy(f->strm);
    free(f->prims);
    free(f->vals);
    free(f->mems);
    free(f->bufs);
    free(f);
}
