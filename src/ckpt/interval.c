/* interval.c — how often to checkpoint: Young's (1974) and Daly's (2006, "A higher order estimate
 * of the optimum checkpoint interval for restart dumps") optimum for a blocking checkpoint cost δ
 * and a mean time between interruptions M, and M for a monthly interruption rate under a constant
 * hazard. Used by `baton plan train` (its table) and by training's --ckpt-every auto. */
#include "baton/ckpt.h"

#include <math.h>

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
