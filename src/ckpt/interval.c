/* interval.c — how often to checkpoint: Young's (1974) and Daly's (2006, "A higher order estimate
 * of the optimum checkpoint interval for restart dumps") optimum for a blocking checkpoint cost δ
 * and a mean time between interruptions M, and M for a monthly interruption rate under a constant
 * hazard. Used by `baton plan train` (its table) and by training's --ckpt-every auto. And the
 * environment's say in them: a fleet worker's interval and MTBI, the deadline margin. */
#include "baton/ckpt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double baton_ckpt_young_interval(double delta, double mtbi)
{
    return delta > 0 && mtbi > 0 ? sqrt(2 * delta * mtbi) : 0;
}

double baton_ckpt_daly_interval(double delta, double mtbi)
{
    if (!(delta > 0) || !(mtbi > 0)) return 0;
    if (delta >= 2 * mtbi) return mtbi;
    const double r = delta / (2 * mtbi);
    return sqrt(2 * delta * mtbi) * (1 + sqrt(r) / 3 + r / 9) - delta;
}

double baton_ckpt_mtbi_hours(double f)
{
    if (!(f > 0)) return INFINITY;
    if (f >= 1) f = 0.999999;
    return 730.0 / -log1p(-f);
}

/* ---------------------------------------------------------------- the policy */
void baton_ckpt_policy_init(baton_ckpt_policy *p, uint64_t every_steps, double every_sec, int automatic,
                            double mtbi_s)
{
    memset(p, 0, sizeof *p);
    p->every_steps = every_steps;
    p->every_sec = every_sec > 0 ? every_sec : 0;
    p->automatic = automatic;
    p->mtbi_s = mtbi_s > 0 && isfinite(mtbi_s) ? mtbi_s : 0;
    p->saved_t = baton_now();
}

int baton_ckpt_policy_parse(baton_ckpt_policy *p, const char *spec, double mtbi_s, baton_err *err)
{
    if (!spec) return baton_err_set(err, BATON_ERR_USAGE, "checkpoint interval: none given");
    if (!strcmp(spec, "auto")) {
        baton_ckpt_policy_init(p, 0, BATON_CKPT_EVERY_SEC_DEFAULT, 1, mtbi_s);
        return BATON_OK;
    }
    if (!strcmp(spec, "off")) {
        baton_ckpt_policy_init(p, 0, 0, 0, mtbi_s);
        return BATON_OK;
    }
    char *end;
    errno = 0;
    double v = strtod(spec, &end);
    double scale = 0;   /* 0: steps */
    if (!strcmp(end, "s")) scale = 1;
    else if (!strcmp(end, "m")) scale = 60;
    else if (!strcmp(end, "h")) scale = 3600;
    else if (*end && strcmp(end, "steps"))
        end = (char *)spec;   /* not a number with a unit we know */
    if (end == spec || errno || !(v > 0) || !isfinite(v) || (!scale && (v != floor(v) || v > 1e15)))
        return baton_err_set(err, BATON_ERR_USAGE,
                             "checkpoint interval '%.64s': expected auto, off, a number of steps (100) or of "
                             "seconds (90s, 5m, 1h)",
                             spec);
    if (scale) baton_ckpt_policy_init(p, 0, v * scale, 0, mtbi_s);
    else baton_ckpt_policy_init(p, (uint64_t)v, 0, 0, mtbi_s);
    return BATON_OK;
}

int baton_ckpt_policy_from_env(baton_ckpt_policy *p, baton_err *err)
{
    const char *every = getenv("BATON_CKPT_EVERY"), *mtbi = getenv("BATON_SPOT_MTBI_S");
    double m = p->mtbi_s;
    if (mtbi && *mtbi) {
        char *end;
        m = strtod(mtbi, &end);
        if (end == mtbi || *end || !(m >= 0) || !isfinite(m))
            return baton_err_set(err, BATON_ERR_USAGE, "BATON_SPOT_MTBI_S '%.64s': expected seconds", mtbi);
    }
    if (every && *every) {
        int rc = baton_ckpt_policy_parse(p, every, m, err);
        return rc ? baton_err_prefix(err, "BATON_CKPT_EVERY") : 1;
    }
    if (mtbi && *mtbi) {
        p->mtbi_s = m;
        return 1;
    }
    return 0;
}

int baton_ckpt_policy_due(const baton_ckpt_policy *p, uint64_t step, double now)
{
    if (p->every_steps && step % p->every_steps == 0) return 1;
    if (p->automatic) return p->nsaves == 0 || now - p->saved_t >= p->tau;
    return p->every_sec > 0 && now - p->saved_t >= p->every_sec;
}

void baton_ckpt_policy_saved(baton_ckpt_policy *p, double now, double blocked_s)
{
    p->saved_t = now;
    if (!p->automatic) return;
    p->delta_sum += blocked_s > 0 ? blocked_s : 0;
    p->nsaves++;
    const double delta = p->delta_sum / (double)p->nsaves;
    double tau = p->mtbi_s > 0 ? baton_ckpt_daly_interval(delta, p->mtbi_s) : p->every_sec;
    if (tau < 1) tau = 1;           /* a floor: never a checkpoint per step on a tiny δ */
    if (tau > 3600) tau = 3600;
    if (p->nsaves == 1 || tau < p->tau / 1.5 || tau > p->tau * 1.5)
        baton_log(BATON_LOG_INFO, "checkpoint interval: %.1f s (Daly, blocking cost %.1f ms, mean time between "
                  "interruptions %.0f s)", tau, delta * 1e3, p->mtbi_s);
    p->tau = tau;
}

int baton_ckpt_margin_from_env(double *margin_s, baton_err *err)
{
    const char *dm = getenv("BATON_DEADLINE_MARGIN_S");
    *margin_s = 5;
    if (!dm || !*dm) return BATON_OK;
    char *end;
    double x = strtod(dm, &end);
    if (end == dm || *end || !(x >= 0 && x <= 3600))
        return baton_err_set(err, BATON_ERR_USAGE, "BATON_DEADLINE_MARGIN_S='%s': expected seconds in 0..3600", dm);
    *margin_s = x;
    return BATON_OK;
}
