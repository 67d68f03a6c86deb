/* test_race_ppo.c — PPO's arithmetic (src/ppo/ppo_math.c) on cases computed by hand: GAE over an
 * episode that ends (bootstrap 0) and one that is cut (bootstrap from the value), advantage
 * standardisation, the clipped surrogate where the clip binds (no gradient) and where it does not
 * (each sign of the advantage), the entropy bonus, the Gaussian policy's log-probability and
 * gradients, huber and mean squared error; then every gradient against finite differences on
 * random cases, and sampling: frequencies follow the softmax, Gaussian samples have the policy's
 * mean and spread, the same RNG state gives the same samples. */
#include "../../src/ppo/ppo_internal.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void test_gae(void)
{
    float r[3] = {1, 0, 2}, v[4] = {0.5f, 1.0f, -0.5f, 0}, adv[3], ret[3];
    ppo_gae(3, r, v, 0.9, 0.8, adv, ret);
    /* delta = 2.5, -1.45, 1.4; A2 = 2.5, A1 = -1.45 + 0.72 * 2.5, A0 = 1.4 + 0.72 * A1 */
    CHECK_MSG(near(adv[2], 2.5, 1e-6) && near(adv[1], 0.35, 1e-6) && near(adv[0], 1.652, 1e-6), "%g %g %g", adv[0],
              adv[1], adv[2]);
    CHECK(near(ret[0], 2.152, 1e-6) && near(ret[1], 1.35, 1e-6) && near(ret[2], 2.0, 1e-6));
    v[3] = 1.0f;   /* cut, not ended: the last step bootstraps from the value after it */
    ppo_gae(3, r, v, 0.9, 0.8, adv, ret);
    CHECK_MSG(near(adv[2], 3.4, 1e-6) && near(adv[1], 0.998, 1e-6) && near(adv[0], 2.11856, 1e-6), "%g %g %g",
              adv[0], adv[1], adv[2]);
    /* lambda 1, gamma 1: the return to go minus the value */
    float r2[2] = {1, 1}, v2[3] = {0, 0, 0};
    ppo_gae(2, r2, v2, 1, 1, adv, ret);
    CHECK(adv[0] == 2 && adv[1] == 1 && ret[0] == 2);
    float a[4] = {1, 2, 3, 4};
    ppo_normalize(4, a);
    CHECK_MSG(near(a[0], -1.3416407, 1e-6) && near(a[1], -0.4472136, 1e-6) && near(a[3], 1.3416407, 1e-6), "%g %g",
              a[0], a[1]);
    float same[3] = {5, 5, 5};
    ppo_normalize(3, same);
    CHECK(same[0] == 0 && same[2] == 0);   /* no spread: zeros, not NaN */
}

static void test_discrete_cases(void)
{
    float z[2] = {0, 0}, dz[2];
    ppo_terms t;
    /* rho = 0.5 / 0.4 = 1.25 > 1 + eps with A > 0: clipped, the surrogate gives no gradient; the
     * entropy's gradient is 0 at the uniform distribution */
    ppo_discrete_loss(2, z, 0, (float)log(0.4), 1, 0.2, 0.1, 1, dz, &t);
    CHECK(t.clipped && near(t.ratio, 1.25, 1e-6) && near(t.surrogate, -1.2, 1e-6));
    CHECK(near(t.entropy, log(2), 1e-12) && near(t.loss, -1.2 - 0.1 * log(2), 1e-6));
    CHECK(fabs(dz[0]) < 1e-7 && fabs(dz[1]) < 1e-7);
    /* the same ratio with A < 0: the unclipped term is the smaller; dL/dlogp = -A rho = 1.25 and
     * dlogp/dz = (0.5, -0.5) */
    ppo_discrete_loss(2, z, 0, (float)log(0.4), -1, 0.2, 0, 1, dz, &t);
    CHECK(!t.clipped && near(t.surrogate, 1.25, 1e-6));
    CHECK_MSG(near(dz[0], 0.625, 1e-6) && near(dz[1], -0.625, 1e-6), "%g %g", dz[0], dz[1]);
    /* rho 1 inside the range, A 2, w 0.5 */
    ppo_discrete_loss(2, z, 1, (float)log(0.5), 2, 0.2, 0, 0.5, dz, &t);
    CHECK(!t.clipped && near(t.ratio, 1, 1e-6) && near(t.surrogate, -2, 1e-6) && near(t.kl, 0, 1e-6));
    CHECK_MSG(near(dz[0], 0.5, 1e-6) && near(dz[1], -0.5, 1e-6), "%g %g", dz[0], dz[1]);
    /* below 1 - eps with A < 0: clipped */
    ppo_discrete_loss(2, z, 0, (float)log(0.9), -1, 0.2, 0, 1, dz, &t);
    CHECK(t.clipped && near(t.surrogate, 0.8, 1e-6) && dz[0] == 0);
    /* the entropy bonus alone at a skewed distribution: dL/dz_j = beta p_j (log p_j + H) */
    float z3[3] = {1, 0, -1}, dz3[3];
    ppo_discrete_loss(3, z3, 0, (float)ppo_discrete_logp(3, z3, 0), 0, 0.2, 1, 1, dz3, &t);
    double e[3] = {exp(1.0), 1, exp(-1.0)}, s = e[0] + e[1] + e[2], H = 0;
    for (int i = 0; i < 3; i++) H -= e[i] / s * log(e[i] / s);
    CHECK(near(t.entropy, H, 1e-9));
    for (int j = 0; j < 3; j++) CHECK(near(dz3[j], e[j] / s * (log(e[j] / s) + H), 1e-6));
    CHECK(near(ppo_discrete_logp(3, z3, 2), -1 - log(s), 1e-9));
}

static void test_gauss_cases(void)
{
    /* mu 0, log std 0, u 1: logp = -0.5 - log sqrt(2 pi); rho 1, A 1; dmu = -1, dls = -(u^2 - 1) - beta */
    float out[2] = {0, 0}, u[1] = {1}, d[2];
    double lp = ppo_gauss_logp(1, out, u);
    CHECK(near(lp, -0.5 - 0.91893853320467274, 1e-12));
    ppo_terms t;
    ppo_gauss_loss(1, out, u, (float)lp, 1, 0.2, 0.5, 1, d, &t);
    CHECK_MSG(near(d[0], -1, 1e-6) && near(d[1], -0.5, 1e-6), "%g %g", d[0], d[1]);
    CHECK(near(t.entropy, 0.5 + 0.91893853320467274, 1e-9) && near(t.loss, -1 - 0.5 * t.entropy, 1e-6));
    /* a log std beyond its bound is held there and gets no gradient */
    float wide[2] = {0, 3}, dw[2];
    CHECK(near(ppo_gauss_logp(1, wide, u), -0.5 * exp(-2.0) - 1.0 - 0.91893853320467274, 1e-9));
    ppo_gauss_loss(1, wide, u, (float)ppo_gauss_logp(1, wide, u), 1, 0.2, 0.5, 1, dw, &t);
    CHECK(dw[1] == 0 && dw[0] != 0);
}

static void test_value_loss(void)
{
    float dv;
    CHECK(near(ppo_value_loss(BATON_PPO_LOSS_HUBER, 3, 1, 1, &dv), 1.5, 1e-12) && dv == 1);
    CHECK(near(ppo_value_loss(BATON_PPO_LOSS_HUBER, 1.5f, 1, 1, &dv), 0.125, 1e-12) && near(dv, 0.5, 1e-7));
    CHECK(near(ppo_value_loss(BATON_PPO_LOSS_HUBER, -2, 1, 0.5, &dv), 2.5, 1e-12) && dv == -0.5f);
    CHECK(near(ppo_value_loss(BATON_PPO_LOSS_MSE, 3, 1, 1, &dv), 4, 1e-12) && dv == 4);
    CHECK(near(ppo_value_loss(BATON_PPO_LOSS_MSE, 0.5f, 1, 0.25, &dv), 0.25, 1e-12) && near(dv, -0.25, 1e-7));
}

/* finite differences of the loss against the analytic gradients, away from the clip's edges */
static void test_gradients(void)
{
    baton_rng r;
    baton_rng_seed(&r, 9);
    int bad = 0, checked = 0;
    for (int trial = 0; trial < 200; trial++) {
        float z[6], dz[6], out[4], u[2], d[4];
        for (int i = 0; i < 6; i++) z[i] = (float)(2 * ppo_uniform(&r) - 1);
        int a = (int)baton_rng_below(&r, 6);
        float adv = (float)(2 * ppo_uniform(&r) - 1), lpo = (float)(ppo_discrete_logp(6, z, a) + 0.3 * ppo_normal(&r));
        ppo_terms t;
        ppo_discrete_loss(6, z, a, lpo, adv, 0.2, 0.05, 1, dz, &t);
        double rho = t.ratio;
        if (fabs(rho - 0.8) < 0.02 || fabs(rho - 1.2) < 0.02) continue;
        for (int j = 0; j < 6; j++) {
            float keep = z[j];
            ppo_terms tp, tm;
            float tmp[6];
            z[j] = keep + 1e-3f;
            ppo_discrete_loss(6, z, a, lpo, adv, 0.2, 0.05, 1, tmp, &tp);
            z[j] = keep - 1e-3f;
            ppo_discrete_loss(6, z, a, lpo, adv, 0.2, 0.05, 1, tmp, &tm);
            z[j] = keep;
            double num = (tp.loss - tm.loss) / 2e-3;
            bad += !near(num, dz[j], 1e-3 + 1e-2 * fabs(num));
            checked++;
        }
        for (int i = 0; i < 2; i++) out[i] = (float)ppo_normal(&r), out[2 + i] = (float)(ppo_uniform(&r) - 1);
        for (int i = 0; i < 2; i++) u[i] = (float)(out[i] + exp(out[2 + i]) * ppo_normal(&r));
        lpo = (float)(ppo_gauss_logp(2, out, u) + 0.3 * ppo_normal(&r));
        ppo_gauss_loss(2, out, u, lpo, adv, 0.2, 0.05, 1, d, &t);
        if (fabs(t.ratio - 0.8) < 0.02 || fabs(t.ratio - 1.2) < 0.02) continue;
        for (int j = 0; j < 4; j++) {
            float keep = out[j], tmp[4];
            ppo_terms tp, tm;
            out[j] = keep + 1e-3f;
            ppo_gauss_loss(2, out, u, lpo, adv, 0.2, 0.05, 1, tmp, &tp);
            out[j] = keep - 1e-3f;
            ppo_gauss_loss(2, out, u, lpo, adv, 0.2, 0.05, 1, tmp, &tm);
            out[j] = keep;
            double num = (tp.loss - tm.loss) / 2e-3;
            bad += !near(num, d[j], 1e-3 + 1e-2 * fabs(num));
            checked++;
        }
    }
    CHECK_MSG(bad == 0 && checked > 1000, "%d of %d gradients off", bad, checked);
}

static void test_sampling(void)
{
    baton_rng r, r2;
    baton_rng_seed(&r, 5);
    float z[3] = {0, (float)log(2.0), (float)log(5.0)};   /* p = 1/8, 2/8, 5/8 */
    int count[3] = {0, 0, 0};
    const int N = 80000;
    for (int i = 0; i < N; i++) {
        float lp;
        int a = ppo_sample_discrete(3, z, &r, &lp);
        count[a]++;
        if (i == 0) CHECK(near(lp, ppo_discrete_logp(3, z, a), 1e-6));
    }
    CHECK_MSG(near(count[0] / (double)N, 0.125, 0.006) && near(count[2] / (double)N, 0.625, 0.006), "%d %d %d",
              count[0], count[1], count[2]);
    CHECK(ppo_argmax(3, z) == 2);
    float ties[3] = {1, 3, 3};
    CHECK(ppo_argmax(3, ties) == 1);
    float out[4] = {0.5f, -1, (float)log(0.5), 0}, u[2];
    double s = 0, ss = 0;
    for (int i = 0; i < N; i++) {
        float lp;
        ppo_sample_gauss(2, out, &r, u, &lp);
        s += u[0];
        ss += (u[0] - 0.5) * (u[0] - 0.5);
    }
    CHECK_MSG(near(s / N, 0.5, 0.01) && near(sqrt(ss / N), 0.5, 0.01), "mean %g sd %g", s / N, sqrt(ss / N));
    baton_rng_seed(&r, 77);
    r2 = r;
    float a1[2], a2[2], l1, l2;
    ppo_sample_gauss(2, out, &r, a1, &l1);
    ppo_sample_gauss(2, out, &r2, a2, &l2);
    CHECK(a1[0] == a2[0] && a1[1] == a2[1] && l1 == l2 && !memcmp(&r, &r2, sizeof r));
}

int main(void)
{
    test_gae();
    test_discrete_cases();
    test_gauss_cases();
    test_value_loss();
    test_gradients();
    test_sampling();
    CHECK_DONE();
}
