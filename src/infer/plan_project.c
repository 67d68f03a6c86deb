/* plan_project.c — how `baton plan infer` carries a latency measured here onto another catalog
 * configuration, and when it refuses to.
 *
 * The model: a query costs F = model FLOPs × batch. Measured here it took t, so this machine ran
 * at efficiency e = (F / t) ÷ peak_here (its measured FMA peak). On a chip with T FP32 TFLOPS the
 * projection assumes no better efficiency than that — capped at 1, no machine beats its peak — so
 *     t_flops = F ÷ (min(e, 1) × T)              (= t × peak_here ÷ T when e <= 1),
 * and no faster than the chip's memory lets it read what a query must move at least (every weight
 * once, the input and the logits: stats.min_bytes, B) at its bandwidth W:
 *     t_floor = B ÷ W,    t = max(t_flops, t_floor).
 * P90 scales with the mean and is raised to the floor too. On a device (GPU, Neuron chip,
 * accelerator) a real call also costs what no FLOP count shows: the copies of the input and the
 * logits, the wait for the result, and a launch per kernel — the catalog's call_us + kernels ×
 * launch_us (kernels: what the measurement ran, stats.kernels), added to both:
 *     t = max(t_flops, t_floor) + call.
 * An instance with k chips serves k replicas: images/s × k, the latency of one. These are still
 * lower bounds (small-kernel efficiency and framework overheads are not modelled), so a projected
 * latency is "no faster than this", and the row always says projected, with its basis.
 *
 * Refused (listed as not projected, with the reason): a catalog entry with project: no (its notes
 * say why: Arm CPUs, Inferentia), no FP32 figure, and — for GPUs, Neuron chips and accelerators —
 * no memory-bandwidth figure or a measurement without min_bytes, because then the floor that keeps
 * a tiny model from projecting to nanoseconds is unknown; likewise without the device's call_us and
 * launch_us, or a measurement without its kernel count.
 *
 * Contract: pure arithmetic on its arguments; no I/O. */
#include "infer_internal.h"

#include <stdio.h>
#include <string.h>

double infer_efficiency(const baton_infer_stats *s)
{
    if (!(s->flops > 0) || !(s->mean_ms > 0) || !(s->peak_gflops > 0)) return 0;
    const double achieved = s->flops * (s->ctx.batch > 0 ? s->ctx.batch : 1) / (s->mean_ms * 1e-3) / 1e9;
    return achieved / s->peak_gflops;
}

/* A number of bytes, short. */
static void bytes_text(char *b, size_t n, double v)
{
    if (v >= 1e9) snprintf(b, n, "%.3g GB", v / 1e9);
    else if (v >= 1e6) snprintf(b, n, "%.3g MB", v / 1e6);
    else snprintf(b, n, "%.3g kB", v / 1e3);
}

int infer_project(const baton_infer_stats *s, const baton_plan_row *r, const baton_infer_config *cf,
                  baton_plan_row *q, char *why, size_t cap)
{
    const int device = cf->run_kind != BATON_CAT_CPU;   /* a GPU, Neuron chip or accelerator */
    if (!cf->project) {
        snprintf(why, cap, "%s", cf->notes[0] ? cf->notes : "the catalog says project: no");
        return 0;
    }
    if (!(cf->tflops > 0)) {
        snprintf(why, cap, "no FP32 figure in the catalog");
        return 0;
    }
    if (device && !(cf->mem_bw_gbs > 0)) {
        snprintf(why, cap, "no memory-bandwidth figure in the catalog to bound a projection onto it");
        return 0;
    }
    if (device && !(s->min_bytes > 0)) {
        snprintf(why, cap, "the measurement carries no model size (min_bytes; older infer-bench output): rerun "
                           "baton infer-bench --json --peak");
        return 0;
    }
    if (device && !(cf->call_us >= 0 && cf->launch_us >= 0)) {
        snprintf(why, cap, "no call_us / launch_us figures in the catalog: what a real call costs there is unknown");
        return 0;
    }
    if (device && cf->launch_us > 0 && !(s->kernels > 0)) {
        snprintf(why, cap, "the measurement carries no kernel count (kernels; older infer-bench output): rerun "
                           "baton infer-bench --json --peak");
        return 0;
    }
    const double e = infer_efficiency(s);
    /* t_flops = t x peak x max(e, 1) / T: the efficiency here, never above 1 */
    double scale = s->peak_gflops / (cf->tflops * 1e3);
    if (e > 1) scale *= e;
    *q = *r;
    q->source = BATON_SRC_PROJECTED;
    q->efficiency = e;
    q->mean_ms = r->mean_ms * scale;
    q->p90_ms = r->p90_ms * scale;
    q->floor_ms = cf->mem_bw_gbs > 0 && s->min_bytes > 0 ? s->min_bytes / (cf->mem_bw_gbs * 1e9) * 1e3 : 0;
    q->at_floor = q->mean_ms < q->floor_ms;
    if (q->mean_ms < q->floor_ms) q->mean_ms = q->floor_ms;
    if (q->p90_ms < q->floor_ms) q->p90_ms = q->floor_ms;
    /* on a device a query also pays its copies, its wait and a launch per kernel, whatever its size */
    q->call_ms = device ? (cf->call_us + s->kernels * cf->launch_us) / 1e3 : 0;
    q->mean_ms += q->call_ms;
    q->p90_ms += q->call_ms;
    const int chips = cf->chips > 1 ? cf->chips : 1;
    q->per_s = r->per_s * (r->mean_ms / q->mean_ms) * chips;
    char rep[48] = "";
    if (q->call_ms > 0) snprintf(rep, sizeof rep, " + %.2g ms a call", q->call_ms);
    if (chips > 1) snprintf(rep + strlen(rep), sizeof rep - strlen(rep), ", %d replicas", chips);
    if (q->at_floor) {
        char b[32];
        bytes_text(b, sizeof b, s->min_bytes);
        snprintf(q->basis, sizeof q->basis, "memory %s / %g GB/s%s", b, cf->mem_bw_gbs, rep);
    } else if (e > 0) {
        snprintf(q->basis, sizeof q->basis, "%g TFLOPS x %.3g%%%s", cf->tflops, (e > 1 ? 1 : e) * 100, rep);
    } else {
        snprintf(q->basis, sizeof q->basis, "%g TFLOPS / %.0f GFLOP/s here%s", cf->tflops, s->peak_gflops, rep);
    }
    return 1;
}
