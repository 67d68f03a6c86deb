/* limit_line.c — the minimum-curvature line through a track (for limit.c).
 *
 * The track is given as n rungs from inner point I_j to outer point O_j (resampled evenly along
 * the centre line); the line crosses rung j at P_j = I_j + b_j (O_j - I_j), with b_j kept
 * `margin` metres from both ends. It minimises the sum of the squared curvatures kappa_j of the
 * circles through P_{j-1}, P_j, P_{j+1}: a smooth, non-convex least-squares problem, solved by
 * Gauss-Newton steps inside a trust region. Each step linearises every kappa_j in the three b's it
 * depends on and solves the box-constrained linear least-squares problem that results (a convex
 * quadratic program) by a log-barrier Newton method. Its Hessian has five diagonals, except for
 * the two rows that close a loop; each Newton system is solved by conjugate gradients
 * preconditioned with the Cholesky factor of the banded part, which the closing rows change by
 * rank two only, so a few iterations are exact. (The plainer objective, squared second
 * differences of the points, is not enough: its value scales with the spacing of the points, and
 * on a ring it prefers the inner, shorter circle to the outer, straighter one.) */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

/* A linear least-squares problem in n unknowns: `per` rows for each j, row r (j = r / per) being
 * r0_r + ka_r d_a + kj_r d_j + kc_r d_c with a, c the neighbours of j (wrapping on a loop; an open
 * line has no rows for its first and last j). */
typedef struct lsq {
    size_t n, per;
    int loop;
    double *r0, *ka, *kj, *kc;
    double *h0, *h1, *h2;       /* the banded part of the Hessian (rows that do not wrap) */
    double *l0, *l1, *l2;       /* its Cholesky factor with the barrier's diagonal */
    double *w1, *w2, *w3, *w4, *res;
} lsq;

static inline int row_idx(const lsq *q, size_t r, size_t *a, size_t *j_out, size_t *c)
{
    size_t j = r / q->per;
    *j_out = j;
    if (q->loop) {
        *a = (j + q->n - 1) % q->n;
        *c = (j + 1) % q->n;
        return 1;
    }
    if (j == 0 || j + 1 >= q->n) return 0;
    *a = j - 1;
    *c = j + 1;
    return 1;
}

/* out = H v with H = 2 AᵀA; with_r0: the gradient 2 Aᵀ(A v + r0) instead. */
static void hess_mul(const lsq *q, const double *v, double *out, int with_r0)
{
    size_t a, j, c;
    memset(out, 0, q->n * sizeof *out);
    for (size_t r = 0; r < q->n * q->per; r++) {
        if (!row_idx(q, r, &a, &j, &c)) continue;
        double e = q->ka[r] * v[a] + q->kj[r] * v[j] + q->kc[r] * v[c] + (with_r0 ? q->r0[r] : 0);
        out[a] += 2 * q->ka[r] * e;
        out[j] += 2 * q->kj[r] * e;
        out[c] += 2 * q->kc[r] * e;
    }
}

static double objective(const lsq *q, const double *v)
{
    size_t a, j, c;
    double f = 0;
    for (size_t r = 0; r < q->n * q->per; r++) {
        if (!row_idx(q, r, &a, &j, &c)) continue;
        double e = q->r0[r] + q->ka[r] * v[a] + q->kj[r] * v[j] + q->kc[r] * v[c];
        f += e * e;
    }
    return f;
}

static void band_build(lsq *q)
{
    size_t n = q->n;
    memset(q->h0, 0, n * sizeof(double));
    memset(q->h1, 0, n * sizeof(double));
    memset(q->h2, 0, n * sizeof(double));
    for (size_t rr = q->per; rr < (n - 1) * q->per; rr++) {   /* h1[i] = H[i][i-1], h2[i] = H[i][i-2] */
        size_t j = rr / q->per;
        double k[3] = {q->ka[rr], q->kj[rr], q->kc[rr]};
        for (int u = 0; u < 3; u++)
            for (int w = 0; w <= u; w++) {
                double h = 2 * k[u] * k[w];
                size_t r = j - 1 + (size_t)u, off = (size_t)(u - w);
                (off == 0 ? q->h0 : off == 1 ? q->h1 : q->h2)[r] += h;
            }
    }
}

static int band_factor(lsq *q, const double *diag)
{
    for (size_t i = 0; i < q->n; i++) {
        q->l2[i] = i >= 2 ? q->h2[i] / q->l0[i - 2] : 0;
        q->l1[i] = i >= 1 ? (q->h1[i] - (i >= 2 ? q->l2[i] * q->l1[i - 1] : 0)) / q->l0[i - 1] : 0;
        double d = q->h0[i] + diag[i] - q->l1[i] * q->l1[i] - q->l2[i] * q->l2[i];
        if (!(d > 0)) return -1;
        q->l0[i] = sqrt(d);
    }
    return 0;
}

static void band_solve(const lsq *q, const double *b, double *x)
{
    size_t n = q->n;
    for (size_t i = 0; i < n; i++)
        x[i] = (b[i] - (i >= 1 ? q->l1[i] * x[i - 1] : 0) - (i >= 2 ? q->l2[i] * x[i - 2] : 0)) / q->l0[i];
    for (size_t i = n; i-- > 0;)
        x[i] = (x[i] - (i + 1 < n ? q->l1[i + 1] * x[i + 1] : 0) - (i + 2 < n ? q->l2[i + 2] * x[i + 2] : 0)) / q->l0[i];
}

/* Solve (H + diag) x = b by conjugate gradients preconditioned with the banded factor. */
static void newton_solve(lsq *q, const double *diag, const double *b, double *x)
{
    size_t n = q->n;
    double *r = q->w1, *z = q->w2, *p = q->w3, *kp = q->w4;
    memset(x, 0, n * sizeof *x);
    memcpy(r, b, n * sizeof *r);
    band_solve(q, r, z);
    memcpy(p, z, n * sizeof *p);
    double rz = 0, bb = 0;
    for (size_t i = 0; i < n; i++) rz += r[i] * z[i], bb += b[i] * b[i];
    for (int it = 0; it < 50 && rz > 0; it++) {
        hess_mul(q, p, kp, 0);
        double pkp = 0;
        for (size_t i = 0; i < n; i++) {
            kp[i] += diag[i] * p[i];
            pkp += p[i] * kp[i];
        }
        if (!(pkp > 0)) break;
        double alpha = rz / pkp, rr = 0;
        for (size_t i = 0; i < n; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * kp[i];
            rr += r[i] * r[i];
        }
        if (rr <= 1e-28 * bb) break;
        band_solve(q, r, z);
        double rz2 = 0;
        for (size_t i = 0; i < n; i++) rz2 += r[i] * z[i];
        for (size_t i = 0; i < n; i++) p[i] = z[i] + rz2 / rz * p[i];
        rz = rz2;
    }
}

static double barrier(const lsq *q, const double *d, const double *lo, const double *hi, double mu)
{
    double f = objective(q, d);
    for (size_t j = 0; j < q->n; j++) f -= mu * (log(d[j] - lo[j]) + log(hi[j] - d[j]));
    return f;
}

/* Minimise |A d + r0|^2 over lo < d < hi, from d (strictly inside) by a log barrier. */
static int solve_box_lsq(lsq *q, double *d, const double *lo, const double *hi)
{
    size_t n = q->n;
    double *g = malloc(n * sizeof *g), *dg = malloc(n * sizeof *dg), *step = malloc(n * sizeof *step),
           *tr = malloc(n * sizeof *tr);
    int rc = BATON_OK;
    if (!g || !dg || !step || !tr) {
        rc = BATON_ERR_NOMEM;
        goto out;
    }
    band_build(q);
    double f0 = objective(q, d), mu = fmax(f0, 1e-18) / (double)n;
    for (int outer = 0; outer < 7; outer++, mu *= 0.05) {
        for (int it = 0; it < 30; it++) {
            hess_mul(q, d, g, 1);
            for (size_t i = 0; i < n; i++) {
                double u = d[i] - lo[i], w = hi[i] - d[i];
                g[i] += -mu / u + mu / w;
                dg[i] = mu / (u * u) + mu / (w * w);
                tr[i] = -g[i];
            }
            if (band_factor(q, dg)) goto out;
            newton_solve(q, dg, tr, step);
            double dec = 0, amax = 1;
            for (size_t i = 0; i < n; i++) {
                dec -= g[i] * step[i];
                if (step[i] < 0) amax = fmin(amax, 0.99 * (lo[i] - d[i]) / step[i]);
                if (step[i] > 0) amax = fmin(amax, 0.99 * (hi[i] - d[i]) / step[i]);
            }
            if (!(dec > 1e-12 * fmax(f0, 1e-18))) break;
            double fb = barrier(q, d, lo, hi, mu), alpha = amax;
            int moved = 0;
            for (int ls = 0; ls < 40 && !moved; ls++, alpha *= 0.5) {
                for (size_t i = 0; i < n; i++) tr[i] = d[i] + alpha * step[i];
                if (barrier(q, tr, lo, hi, mu) <= fb - 0.25 * alpha * dec) moved = 1;
            }
            if (!moved) break;
            memcpy(d, tr, n * sizeof *d);
        }
    }
out:
    free(g);
    free(dg);
    free(step);
    free(tr);
    return rc;
}

/* Signed curvature of the circle through three points. */
static double kappa3(const double *a, const double *b, const double *c)
{
    double ab = hypot(b[0] - a[0], b[1] - a[1]), bc = hypot(c[0] - b[0], c[1] - b[1]), ca = hypot(a[0] - c[0], a[1] - c[1]);
    double cr = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]), den = ab * bc * ca;
    return den > 1e-18 ? 2 * cr / den : 0;
}

typedef struct line_ctx {
    size_t n;
    int loop;
    const double *in, *dx, *dy;
} line_ctx;

static double kappa_at(const line_ctx *c, const double *b, size_t a, size_t j, size_t k, int which, double eps)
{
    size_t id[3] = {a, j, k};
    double p[3][2];
    for (int u = 0; u < 3; u++) {
        double bb = b[id[u]] + (u == which ? eps : 0);
        p[u][0] = c->in[2 * id[u]] + bb * c->dx[id[u]];
        p[u][1] = c->in[2 * id[u] + 1] + bb * c->dy[id[u]];
    }
    return kappa3(p[0], p[1], p[2]);
}

static double total_kappa2(const lsq *q, const line_ctx *c, const double *b)
{
    size_t a, j, k;
    double f = 0;
    for (size_t r = 0; r < q->n; r++)
        if (row_idx(q, r, &a, &j, &k)) {
            double v = kappa_at(c, b, a, j, k, -1, 0);
            f += v * v;
        }
    return f;
}

typedef struct work {
    double *buf, *dx, *dy, *lo, *hi, *d, *dlo, *dhi, *bt;
    lsq q;
} work;

static int work_new(work *w, size_t n, int loop, const double *in, const double *out, double margin)
{
    memset(w, 0, sizeof *w);
    w->buf = calloc(n * 30, sizeof(double));
    if (!w->buf) return BATON_ERR_NOMEM;
    double *p = w->buf;
    w->dx = p, w->dy = p + n, w->lo = p + 2 * n, w->hi = p + 3 * n, w->d = p + 4 * n, w->dlo = p + 5 * n;
    w->dhi = p + 6 * n, w->bt = p + 7 * n;
    lsq *q = &w->q;
    q->n = n;
    q->loop = loop;
    q->r0 = p + 8 * n, q->ka = p + 10 * n, q->kj = p + 12 * n, q->kc = p + 14 * n;   /* 2 n each */
    q->h0 = p + 16 * n, q->h1 = p + 17 * n, q->h2 = p + 18 * n;
    q->l0 = p + 19 * n, q->l1 = p + 20 * n, q->l2 = p + 21 * n;
    q->w1 = p + 22 * n, q->w2 = p + 23 * n, q->w3 = p + 24 * n, q->w4 = p + 25 * n, q->res = p + 26 * n;
    for (size_t j = 0; j < n; j++) {
        w->dx[j] = out[2 * j] - in[2 * j];
        w->dy[j] = out[2 * j + 1] - in[2 * j + 1];
        /* margin metres from a border, measured square to it: along a rung that meets the border
         * at an angle, that is margin / sin(angle) */
        size_t a = loop ? (j + n - 1) % n : (j ? j - 1 : 0), c = loop ? (j + 1) % n : (j + 1 < n ? j + 1 : j);
        double len = hypot(w->dx[j], w->dy[j]), f[2];
        const double *side[2] = {in, out};
        for (int k = 0; k < 2; k++) {
            double tx = side[k][2 * c] - side[k][2 * a], ty = side[k][2 * c + 1] - side[k][2 * a + 1], tl = hypot(tx, ty);
            double sn = tl > 0 && len > 0 ? fabs(w->dx[j] * ty - w->dy[j] * tx) / (len * tl) : 1;
            f[k] = len > 0 ? margin / (len * fmax(sn, 0.2)) : 0.5;
        }
        w->lo[j] = f[0];
        w->hi[j] = 1 - f[1];
        if (!(w->hi[j] - w->lo[j] > 2e-6)) {   /* narrower than the car: the middle of the rung */
            double mid = 0.5 * (w->lo[j] + w->hi[j]);
            mid = mid < 1e-6 ? 1e-6 : mid > 1 - 1e-6 ? 1 - 1e-6 : mid;
            w->lo[j] = mid - 1e-6;
            w->hi[j] = mid + 1e-6;
        }
    }
    return BATON_OK;
}

int race_line_smooth(size_t n, int loop, const double *in, const double *out, double margin, double *b)
{
    work w;
    if (work_new(&w, n, loop, in, out, margin)) return BATON_ERR_NOMEM;
    lsq *q = &w.q;
    q->per = 2;
    size_t a, j, c;
    for (size_t r = 0; r < 2 * n; r++) {
        if (!row_idx(q, r, &a, &j, &c)) continue;
        int y = (int)(r % 2);
        const double *dd = y ? w.dy : w.dx;
        q->r0[r] = in[2 * a + y] - 2 * in[2 * j + y] + in[2 * c + y];
        q->ka[r] = dd[a];
        q->kj[r] = -2 * dd[j];
        q->kc[r] = dd[c];
    }
    for (size_t i = 0; i < n; i++) b[i] = 0.5;
    int rc = solve_box_lsq(q, b, w.lo, w.hi);
    free(w.buf);
    return rc;
}

int race_line_mincurv(size_t n, int loop, const double *in, const double *out, double margin, double *b)
{
    work w;
    if (work_new(&w, n, loop, in, out, margin)) return BATON_ERR_NOMEM;
    lsq *q = &w.q;
    q->per = 1;
    line_ctx c = {n, loop, in, w.dx, w.dy};
    for (size_t i = 0; i < n; i++) b[i] = 0.5;
    double f = total_kappa2(q, &c, b), radius = 0.25;
    int rc = BATON_OK;
    for (int it = 0; it < 200 && radius > 1e-7; it++) {
        /* linearise every kappa_j in b_{j-1}, b_j, b_{j+1} (central differences) */
        size_t a, j, k;
        const double eps = 1e-7;
        for (size_t r = 0; r < n; r++) {
            q->r0[r] = q->ka[r] = q->kj[r] = q->kc[r] = 0;
            if (!row_idx(q, r, &a, &j, &k)) continue;
            q->r0[r] = kappa_at(&c, b, a, j, k, -1, 0);
            double *coef[3] = {&q->ka[r], &q->kj[r], &q->kc[r]};
            for (int u = 0; u < 3; u++)
                *coef[u] = (kappa_at(&c, b, a, j, k, u, eps) - kappa_at(&c, b, a, j, k, u, -eps)) / (2 * eps);
        }
        /* the step's box: the rungs' ends and the trust radius */
        for (size_t i = 0; i < n; i++) {
            w.dlo[i] = fmax(w.lo[i] - b[i], -radius);
            w.dhi[i] = fmin(w.hi[i] - b[i], radius);
            w.d[i] = 0;
            if (!(w.dlo[i] < 0)) w.dlo[i] = -1e-12;
            if (!(w.dhi[i] > 0)) w.dhi[i] = 1e-12;
        }
        if ((rc = solve_box_lsq(q, w.d, w.dlo, w.dhi))) break;
        for (size_t i = 0; i < n; i++) w.bt[i] = fmin(w.hi[i], fmax(w.lo[i], b[i] + w.d[i]));
        double ft = total_kappa2(q, &c, w.bt), pred = f - objective(q, w.d);
        if (ft < f) {
            double gain = f - ft;
            memcpy(b, w.bt, n * sizeof *b);
            f = ft;
            if (pred > 0 && gain > 0.75 * pred) radius = fmin(0.5, 2 * radius);
            if (gain < 1e-6 * f) break;
        } else {
            radius *= 0.25;
        }
    }
    free(w.buf);
    return rc;
}
