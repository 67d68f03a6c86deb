/* kern_bn_fast.c — the fast batch-normalisation kernels of the oneDNN table (training forward,
 * inference forward, backward) over NCHW activations [n, c, hw], and the small thread pool they
 * run on.
 *
 * Contract: that of the kernel table (nn.h, baton_nn_kernels) and of the reference kernels in
 * kern_norm.c — the same formulas (PyTorch's: batch mean and BIASED batch variance returned and
 * used to normalise; invstd = 1 / sqrtf(var + eps) from the float var in forward and backward;
 * dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), dgamma = sum(dy * xhat),
 * dbeta = sum(dy)), equal to the reference within float rounding, not bit for bit. The running
 * statistics are the caller's (model.c).
 *
 * Arithmetic: a channel is the n contiguous spans x[i, ch, 0 .. hw) of one image each. Sums run in
 * float vector lanes (GCC vector extensions: SSE on baseline x86-64) over at most SUM_BLOCK
 * elements, then fold into a double; the lane layout, the folding points and the final horizontal
 * sum depend only on (n, hw), never on threads. Training forward is two passes for the statistics
 * (mean, then squares about it) and one to normalise, all over one channel while it sits in cache.
 *
 * Threads: every channel (inference: every [image, channel] plane) is computed entirely by one
 * thread, so results are bit-identical whatever the thread count or scheduling. The pool is
 * (nthreads - 1) workers started on first use and kept for the life of the process; nthreads is
 * OMP_NUM_THREADS (as oneDNN's) or else the CPUs this process may run on, capped at MAX_THREADS
 * and at that CPU count. A call wakes the workers, and it and they take chunks of channels from a
 * shared counter until none is left; then it waits for them. Idle workers sleep on a condition
 * variable. Small tensors, a call made while another thread is using the pool, and calls in a
 * child after fork run on the caller alone (same results). Nothing is allocated per call. */
#include "nn_internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LANES 4      /* one SSE register: baseline x86-64, no ABI change for the vector type */
#define ACCS 4       /* independent accumulator chains per sum */
#define SUM_BLOCK 4096       /* elements summed in float lanes before folding into the double */
#define MAX_THREADS 16
#define MIN_PARALLEL 32768   /* fewer elements than this: not worth waking the workers */

typedef float vf __attribute__((vector_size(LANES * sizeof(float))));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v)
{
    memcpy(p, &v, sizeof v);
}

static inline vf vset(float s)
{
    return (vf){s, s, s, s};
}

/* Lane accumulators of one sum: ACCS vectors (independent dependency chains), a scalar for span
 * tails, and the double they fold into every SUM_BLOCK elements. */
typedef struct acc {
    vf v[ACCS];
    float t;
    int pending;
    double total;
} acc;

static inline void acc_init(acc *s)
{
    for (int i = 0; i < ACCS; i++) s->v[i] = vset(0.0f);
    s->t = 0.0f;
    s->pending = 0;
    s->total = 0.0;
}

static inline void acc_fold(acc *s)
{
    vf v = (s->v[0] + s->v[1]) + (s->v[2] + s->v[3]);
    double h = 0.0;
    for (int i = 0; i < LANES; i++) h += v[i];
    s->total += h + s->t;
    for (int i = 0; i < ACCS; i++) s->v[i] = vset(0.0f);
    s->t = 0.0f;
    s->pending = 0;
}

static inline double acc_result(acc *s)
{
    acc_fold(s);
    return s->total;
}

/* Sums over one span [0, len), len <= SUM_BLOCK, into the accumulators; folds when due. */
static inline void span_sum(acc *s, const float *restrict p, int len)
{
    int k = 0;
    for (; k + ACCS * LANES <= len; k += ACCS * LANES)
        for (int a = 0; a < ACCS; a++) s->v[a] += vload(p + k + a * LANES);
    for (; k + LANES <= len; k += LANES) s->v[0] += vload(p + k);
    for (; k < len; k++) s->t += p[k];
    if ((s->pending += len) >= SUM_BLOCK) acc_fold(s);
}

/* sum (p - m)^2 */
static inline void span_sq(acc *s, const float *restrict p, int len, float m)
{
    const vf mv = vset(m);
    int k = 0;
    for (; k + ACCS * LANES <= len; k += ACCS * LANES)
        for (int a = 0; a < ACCS; a++) {
            vf d = vload(p + k + a * LANES) - mv;
            s->v[a] += d * d;
        }
    for (; k + LANES <= len; k += LANES) {
        vf d = vload(p + k) - mv;
        s->v[0] += d * d;
    }
    for (; k < len; k++) {
        float d = p[k] - m;
        s->t += d * d;
    }
    if ((s->pending += len) >= SUM_BLOCK) acc_fold(s);
}

/* sum dy and sum dy * (x - m) */
static inline void span_bwd(acc *sdy, acc *sdyx, const float *restrict x, const float *restrict dy, int len, float m)
{
    const vf mv = vset(m);
    int k = 0;
    for (; k + 2 * LANES <= len; k += 2 * LANES)
        for (int a = 0; a < 2; a++) {
            vf g = vload(dy + k + a * LANES);
            sdy->v[a] += g;
            sdyx->v[a] += g * (vload(x + k + a * LANES) - mv);
        }
    for (; k + LANES <= len; k += LANES) {
        vf g = vload(dy + k);
        sdy->v[0] += g;
        sdyx->v[0] += g * (vload(x + k) - mv);
    }
    for (; k < len; k++) {
        sdy->t += dy[k];
        sdyx->t += dy[k] * (x[k] - m);
    }
    if ((sdy->pending += len) >= SUM_BLOCK) acc_fold(sdy);
    if ((sdyx->pending += len) >= SUM_BLOCK) acc_fold(sdyx);
}

/* y = (x - m) * scale + shift */
static inline void span_affine(float *restrict y, const float *restrict x, int len, float m, float scale, float shift)
{
    const vf mv = vset(m), sv = vset(scale), bv = vset(shift);
    int k = 0;
    for (; k + LANES <= len; k += LANES) vstore(y + k, (vload(x + k) - mv) * sv + bv);
    for (; k < len; k++) y[k] = (x[k] - m) * scale + shift;
}

/* dx = k1 * (dy - mdy - (x - m) * b) */
static inline void span_dx(float *restrict dx, const float *restrict x, const float *restrict dy, int len, float m,
                           float k1, float mdy, float b)
{
    const vf mv = vset(m), kv = vset(k1), dv = vset(mdy), bv = vset(b);
    int k = 0;
    for (; k + LANES <= len; k += LANES) vstore(dx + k, kv * (vload(dy + k) - dv - (vload(x + k) - mv) * bv));
    for (; k < len; k++) dx[k] = k1 * (dy[k] - mdy - (x[k] - m) * b);
}

/* ---- one call's work ---- */

enum { JOB_TRAIN, JOB_INFER, JOB_BWD };

typedef struct job {
    int kind;
    int n, c, hw;
    float eps;
    int items;                     /* channels (train, backward) or planes (inference) */
    int chunk;                     /* items taken at a time */
    atomic_int next;               /* the first item no thread has taken yet */
    const float *x, *dy, *gamma, *beta, *mean, *var;
    float *y, *dx, *omean, *ovar, *dgamma, *dbeta;
} job;

/* The spans of channel ch, cut to at most SUM_BLOCK elements: offset of piece k of image i. */
static inline size_t span_off(const job *j, int i, int ch, int s)
{
    return ((size_t)i * j->c + ch) * j->hw + s;
}

static inline int span_len(const job *j, int s)
{
    return j->hw - s < SUM_BLOCK ? j->hw - s : SUM_BLOCK;
}

static void train_channel(const job *j, int ch)
{
    const double count = (double)j->n * j->hw;
    acc s;
    acc_init(&s);
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->hw; k += SUM_BLOCK) span_sum(&s, j->x + span_off(j, i, ch, k), span_len(j, k));
    const double mu = acc_result(&s) / count;
    const float m = (float)mu;
    acc_init(&s);
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->hw; k += SUM_BLOCK) span_sq(&s, j->x + span_off(j, i, ch, k), span_len(j, k), m);
    /* the squares were taken about the float mean m: remove the (tiny) offset m - mu */
    const double dm = (double)m - mu;
    double var = acc_result(&s) / count - dm * dm;
    if (var < 0.0) var = 0.0;
    const float v = (float)var;
    j->omean[ch] = m;
    j->ovar[ch] = v;
    const float scale = 1.0f / sqrtf(v + j->eps) * j->gamma[ch], shift = j->beta[ch];
    for (int i = 0; i < j->n; i++) {
        const size_t off = span_off(j, i, ch, 0);
        span_affine(j->y + off, j->x + off, j->hw, m, scale, shift);
    }
}

static void infer_plane(const job *j, int plane)
{
    const int ch = plane % j->c;
    const float scale = 1.0f / sqrtf(j->var[ch] + j->eps) * j->gamma[ch];
    const size_t off = (size_t)plane * j->hw;
    span_affine(j->y + off, j->x + off, j->hw, j->mean[ch], scale, j->beta[ch]);
}

static void bwd_channel(const job *j, int ch)
{
    const double count = (double)j->n * j->hw;
    const float invstd = 1.0f / sqrtf(j->var[ch] + j->eps), m = j->mean[ch];
    acc sdy, sdyx;
    acc_init(&sdy);
    acc_init(&sdyx);
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->hw; k += SUM_BLOCK) {
            const size_t off = span_off(j, i, ch, k);
            span_bwd(&sdy, &sdyx, j->x + off, j->dy + off, span_len(j, k), m);
        }
    const double gdy = acc_result(&sdy), gdyx = acc_result(&sdyx) * invstd;   /* sum dy, sum dy * xhat */
    j->dgamma[ch] = (float)gdyx;
    j->dbeta[ch] = (float)gdy;
    const float k1 = j->gamma[ch] * invstd;
    const float mdy = (float)(gdy / count), b = invstd * (float)(gdyx / count);
    for (int i = 0; i < j->n; i++) {
        const size_t off = span_off(j, i, ch, 0);
        span_dx(j->dx + off, j->x + off, j->dy + off, j->hw, m, k1, mdy, b);
    }
}

/* Take chunks of items until none is left. Which thread computes an item changes nothing in it. */
static void run_items(job *j)
{
    for (;;) {
        const int lo = atomic_fetch_add_explicit(&j->next, j->chunk, memory_order_relaxed);
        if (lo >= j->items) return;
        const int hi = j->items - lo < j->chunk ? j->items : lo + j->chunk;
        for (int it = lo; it < hi; it++) {
            switch (j->kind) {
            case JOB_TRAIN: train_channel(j, it); break;
            case JOB_INFER: infer_plane(j, it); break;
            default: bwd_channel(j, it); break;
            }
        }
    }
}

/* ---- the pool ---- */

static struct {
    pthread_once_t once;
    int nthreads;                  /* workers + the caller; 1: no workers */
    pid_t pid;                     /* the process the workers belong to */
    pthread_mutex_t busy;          /* held by the one caller using the workers */
    pthread_mutex_t lk;            /* guards gen, pending, cur */
    pthread_cond_t go, done;
    uint64_t gen;                  /* bumped once per parallel call */
    int pending;                   /* workers still running the current call */
    job *cur;
} P = {
    .once = PTHREAD_ONCE_INIT,
    .nthreads = 1,
    .busy = PTHREAD_MUTEX_INITIALIZER,
    .lk = PTHREAD_MUTEX_INITIALIZER,
    .go = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static void *worker(void *arg)
{
    uint64_t seen = 0;
    pthread_mutex_lock(&P.lk);
    for (;;) {
        while (P.gen == seen) pthread_cond_wait(&P.go, &P.lk);
        seen = P.gen;
        job *j = P.cur;
        pthread_mutex_unlock(&P.lk);
        run_items(j);
        pthread_mutex_lock(&P.lk);
        if (--P.pending == 0) pthread_cond_signal(&P.done);
    }
    return NULL;
}

static int cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void pool_start(void)
{
    int cpus = cpus_allowed(), want = cpus;
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);   /* the first entry of a list such as "2,1" */
        if (end != env && v >= 1) want = v < MAX_THREADS ? (int)v : MAX_THREADS;
    }
    if (want > cpus) want = cpus;
    if (want > MAX_THREADS) want = MAX_THREADS;
    /* the workers take no signals: those stay with the application's own threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int started = 1;
    for (; started < want; started++) {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, NULL) != 0) break;
        pthread_detach(th);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    P.pid = getpid();
    P.nthreads = started;
}

static void run(job *j)
{
    pthread_once(&P.once, pool_start);
    const size_t total = (size_t)j->n * j->c * j->hw;
    if (P.nthreads > 1 && j->items > 1 && total >= MIN_PARALLEL && getpid() == P.pid &&
        pthread_mutex_trylock(&P.busy) == 0) {
        /* a few chunks per thread: a worker that gets its CPU late (the machine's other threads,
         * oneDNN's spinning OpenMP workers) takes fewer of them instead of holding the call up */
        j->chunk = j->items / (8 * P.nthreads);
        if (j->chunk < 1) j->chunk = 1;
        atomic_init(&j->next, 0);
        pthread_mutex_lock(&P.lk);
        P.cur = j;
        P.pending = P.nthreads - 1;
        P.gen++;
        pthread_cond_broadcast(&P.go);
        pthread_mutex_unlock(&P.lk);
        run_items(j);
        pthread_mutex_lock(&P.lk);
        while (P.pending > 0) pthread_cond_wait(&P.done, &P.lk);
        pthread_mutex_unlock(&P.lk);
        pthread_mutex_unlock(&P.busy);
        return;
    }
    j->chunk = j->items;
    atomic_init(&j->next, 0);
    run_items(j);
}

/* ---- the table entries ---- */

void nn_fast_bn_fwd_train(int n, int c, int hw, const float *x, const float *gamma, const float *beta, float eps,
                          float *y, float *mean, float *var)
{
    if (n <= 0 || c <= 0 || hw <= 0) return;
    job j = {.kind = JOB_TRAIN, .n = n, .c = c, .hw = hw, .eps = eps, .items = c, .x = x, .gamma = gamma,
             .beta = beta, .y = y, .omean = mean, .ovar = var};
    run(&j);
}

void nn_fast_bn_fwd_infer(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                          const float *mean, const float *var, float eps, float *y)
{
    if (n <= 0 || c <= 0 || hw <= 0) return;
    job j = {.kind = JOB_INFER, .n = n, .c = c, .hw = hw, .eps = eps, .items = n * c, .x = x, .gamma = gamma,
             .beta = beta, .mean = mean, .var = var, .y = y};
    run(&j);
}

void nn_fast_bn_bwd(int n, int c, int hw, const float *x, const float *dy, const float *gamma, const float *mean,
                    const float *var, float eps, float *dx, float *dgamma, float *dbeta)
{
    if (n <= 0 || c <= 0 || hw <= 0) return;
    job j = {.kind = JOB_BWD, .n = n, .c = c, .hw = hw, .eps = eps, .items = c, .x = x, .dy = dy, .gamma = gamma,
             .mean = mean, .var = var, .dx = dx, .dgamma = dgamma, .dbeta = dbeta};
    run(&j);
}
