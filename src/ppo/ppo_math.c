/* ppo_math.c — clipped PPO's arithmetic, as rl_coach's ClippedPPOAgent (the algorithm DeepRacer
 * trains with) defines it: GAE advantages per episode, standardised over an iteration; the
 * clipped surrogate -min(rho A, clip(rho, 1 - eps, 1 + eps) A) with an entropy bonus -beta H, for
 * a softmax over discrete actions or a tanh-squashed Gaussian over continuous ones; the value
 * loss (huber or mean squared error); and sampling from the policy.
 *
 * Contract: pure functions of their arguments (and of the RNG's state for sampling); softmax and
 * log-probabilities in double; gradients are those of the loss as written, times w (the caller's
 * 1 / minibatch), and the surrogate gives none where the clipped term is the smaller (both terms
 * are equal inside the clip range, so either gradient is the same there). */
#include "ppo_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define LOG_SQRT_2PI 0.91893853320467274178   /* log(sqrt(2 pi)) */

void ppo_gae(size_t n, const float *r, const float *v, double gamma, double lambda, float *adv, float *ret)
{
    double a = 0;
    for (size_t k = n; k-- > 0;) {
        double delta = (double)r[k] + gamma * (double)v[k + 1] - (double)v[k];
        a = delta + gamma * lambda * a;
        adv[k] = (float)a;
        ret[k] = (float)(a + (double)v[k]);
    }
}

void ppo_normalize(size_t n, float *a)
{
    if (n == 0) return;
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) s += a[i];
    double mean = s / (double)n;
    for (size_t i = 0; i < n; i++) ss += ((double)a[i] - mean) * ((double)a[i] - mean);
    double inv = 1.0 / (sqrt(ss / (double)n) + 1e-8);
    for (size_t i = 0; i < n; i++) a[i] = (float)(((double)a[i] - mean) * inv);
}

/* log-softmax of z into lp (double), returns nothing; A <= BATON_PPO_MAX_ACTIONS */
static void log_softmax(int A, const float *z, double *lp)
{
    double mx = -DBL_MAX;
    for (int i = 0; i < A; i++) mx = fmax(mx, (double)z[i]);
    double s = 0;
    for (int i = 0; i < A; i++) s += exp((double)z[i] - mx);
    double lse = mx + log(s);
    for (int i = 0; i < A; i++) lp[i] = (double)z[i] - lse;
}

double ppo_discrete_logp(int A, const float *z, int a)
{
    double lp[BATON_PPO_MAX_ACTIONS];
    log_softmax(A, z, lp);
    return lp[a];
}

/* the surrogate's value and d/dlogp, the shared part of both action kinds */
static double surrogate(double logp, float logp_old, float adv, double eps, ppo_terms *t, double *dlogp)
{
    double rho = exp(logp - (double)logp_old), A = adv;
    double clipped = rho < 1 - eps ? 1 - eps : rho > 1 + eps ? 1 + eps : rho;
    double u = rho * A, c = clipped * A;
    t->clipped = c < u;
    t->surrogate = -(c < u ? c : u);
    t->ratio = rho;
    t->kl = (rho - 1) - (logp - (double)logp_old);
    *dlogp = t->clipped ? 0.0 : -A * rho;
    return t->surrogate;
}

void ppo_discrete_loss(int A, const float *z, int a, float logp_old, float adv, double eps, double beta, double w,
                       float *dz, ppo_terms *t)
{
    double lp[BATON_PPO_MAX_ACTIONS], p[BATON_PPO_MAX_ACTIONS];
    log_softmax(A, z, lp);
    double H = 0;
    for (int i = 0; i < A; i++) {
        p[i] = exp(lp[i]);
        H -= p[i] * lp[i];
    }
    double g;
    surrogate(lp[a], logp_old, adv, eps, t, &g);
    t->entropy = H;
    t->loss = t->surrogate - beta * H;
    /* d logp_a / dz_j = [j == a] - p_j;  d(-beta H) / dz_j = beta p_j (log p_j + H) */
    for (int j = 0; j < A; j++) {
        double d = g * ((j == a ? 1.0 : 0.0) - p[j]) + beta * p[j] * (lp[j] + H);
        dz[j] = (float)(w * d);
    }
}

static double clamp_ls(float raw, int *inside)
{
    double ls = raw;
    *inside = ls >= PPO_LOG_STD_MIN && ls <= PPO_LOG_STD_MAX;
    return ls < PPO_LOG_STD_MIN ? PPO_LOG_STD_MIN : ls > PPO_LOG_STD_MAX ? PPO_LOG_STD_MAX : ls;
}

double ppo_gauss_logp(int D, const float *out, const float *u)
{
    double lp = 0;
    for (int i = 0; i < D; i++) {
        int in;
        double ls = clamp_ls(out[D + i], &in), z = ((double)u[i] - (double)out[i]) * exp(-ls);
        lp += -0.5 * z * z - ls - LOG_SQRT_2PI;
    }
    return lp;
}

void ppo_gauss_loss(int D, const float *out, const float *u, float logp_old, float adv, double eps, double beta,
                    double w, float *dout, ppo_terms *t)
{
    double g, H = 0;
    surrogate(ppo_gauss_logp(D, out, u), logp_old, adv, eps, t, &g);
    for (int i = 0; i < D; i++) {
        int in;
        double ls = clamp_ls(out[D + i], &in), isig = exp(-ls), z = ((double)u[i] - (double)out[i]) * isig;
        H += ls + 0.5 + LOG_SQRT_2PI;
        /* d logp / d mu = z / sigma; d logp / d ls = z^2 - 1; d(-beta H) / d ls = -beta */
        dout[i] = (float)(w * g * z * isig);
        dout[D + i] = in ? (float)(w * (g * (z * z - 1) - beta)) : 0.0f;
    }
    t->entropy = H;
    t->loss = t->surrogate - beta * H;
}

double ppo_value_loss(int kind, float v, float target, double w, float *dv)
{
    double x = (double)v - (double)target;
    if (kind == BATON_PPO_LOSS_MSE) {
        *dv = (float)(w * 2 * x);
        return x * x;
    }
    if (fabs(x) <= 1) {
        *dv = (float)(w * x);
        return 0.5 * x * x;
    }
    *dv = (float)(w * (x > 0 ? 1 : -1));
    return fabs(x) - 0.5;
}

double ppo_uniform(baton_rng *r)
{
    return (double)(baton_rng_next(r) >> 11) / 9007199254740992.0;
}

double ppo_normal(baton_rng *r)
{
    double u = ppo_uniform(r) + 0.5 / 9007199254740992.0, v = ppo_uniform(r);
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

int ppo_sample_discrete(int A, const float *z, baton_rng *r, float *logp)
{
    double lp[BATON_PPO_MAX_ACTIONS];
    log_softmax(A, z, lp);
    double x = ppo_uniform(r), c = 0;
    int a = A - 1;
    for (int i = 0; i < A; i++) {
        c += exp(lp[i]);
        if (x < c) {
            a = i;
            break;
        }
    }
    *logp = (float)lp[a];
    return a;
}

void ppo_sample_gauss(int D, const float *out, baton_rng *r, float *u, float *logp)
{
    for (int i = 0; i < D; i++) {
        int in;
        u[i] = (float)((double)out[i] + exp(clamp_ls(out[D + i], &in)) * ppo_normal(r));
    }
    *logp = (float)ppo_gauss_logp(D, out, u);
}

int ppo_argmax(int A, const float *z)
{
    int a = 0;
    for (int i = 1; i < A; i++)
        if (z[i] > z[a]) a = i;
    return a;
}
