/* kern_bn_cl.c — the channels-last items of the fast batch norm's blocked phases (kern_bn_fast.c
 * plans the call, runs the items on its threads and adds their partial sums): the bf16 table's
 * layout, [n][hw][c] with sixteen adjacent channels of a pixel in one vector, x and y in float or
 * bfloat16 (NN_CL_X16, NN_CL_Y16). Contract: kern_bn_fast.c's — the blocked kernels' sums in the
 * same order and outputs by the same operations, so the same bits for the same values. */
#include "kern_bn.h"

/* Channels-last, one image's NB blocks from cb0 (NB a constant where inlined), pixel by pixel:
 * each block's sums in the order blk_item sums them (pixel order, even and odd pixels apart), its
 * outputs by the same operations, so the same bits. */
static inline __attribute__((always_inline)) void cl_image_pass(const bn_job *j, int i, int cb0, const int NB,
                                                                const int X16, const int Y16, double (*d)[3][16])
{
    const size_t C = (size_t)j->c, c0 = (size_t)cb0 * 16;
    const int hw = j->hw;
    const float *x = X16 ? NULL : j->x + (size_t)i * C * hw + c0;
    const uint16_t *xh = X16 ? (const uint16_t *)(const void *)j->x + (size_t)i * C * hw + c0 : NULL;
#define XL(o) (X16 ? nn_v16_widen(xh + (o)) : v16load(x + (o)))   /* x's sixteen lanes at offset o */
    v16 m[4], k1[4], k2[4], k3[4], f1[4], f2[4], a0[4], a1[4], b0[4], b1[4];   /* NB <= 4 */
    for (int b = 0; b < NB; b++) {
        const float *cf = j->coef + c0 + (size_t)b * 16;
        m[b] = v16from(cf), k1[b] = v16from(cf + C), k2[b] = v16from(cf + 2 * C), k3[b] = v16from(cf + 3 * C);
        f1[b] = v16from(cf + 4 * C), f2[b] = v16from(cf + 5 * C);
        a0[b] = a1[b] = b0[b] = b1[b] = (v16){0};
    }
    switch (j->kind) {
    case JOB_B_STATS: {
        int p = 0;
        for (; p + 2 <= hw; p += 2)
            for (int b = 0; b < NB; b++)
                a0[b] += XL((size_t)p * C + b * 16), a1[b] += XL((size_t)(p + 1) * C + b * 16);
        for (; p < hw; p++)
            for (int b = 0; b < NB; b++) a0[b] += XL((size_t)p * C + b * 16);
        v16 sa[4], mf[4];
        double mu[4][16];
        for (int b = 0; b < NB; b++) {
            sa[b] = a0[b] + a1[b];
            for (int l = 0; l < 16; l++) {
                mu[b][l] = (double)sa[b][l] / hw;
                mf[b][l] = (float)mu[b][l];
            }
        }
        for (p = 0; p + 2 <= hw; p += 2)
            for (int b = 0; b < NB; b++) {
                const v16 u = XL((size_t)p * C + b * 16) - mf[b];
                const v16 w = XL((size_t)(p + 1) * C + b * 16) - mf[b];
                b0[b] += u * u;
                b1[b] += w * w;
            }
        for (; p < hw; p++)
            for (int b = 0; b < NB; b++) {
                const v16 u = XL((size_t)p * C + b * 16) - mf[b];
                b0[b] += u * u;
            }
        for (int b = 0; b < NB; b++) {
            const v16 sb = b0[b] + b1[b];
            for (int l = 0; l < 16; l++) {
                const double dm = (double)mf[b][l] - mu[b][l];
                d[b][0][l] += sa[b][l];
                d[b][1][l] += (double)sb[l] - hw * dm * dm;
                d[b][2][l] += sa[b][l] * mu[b][l];
            }
        }
        return;
    }
    case JOB_B_AFFINE: {
        float *y = Y16 ? NULL : j->y + (size_t)i * C * hw + c0;
        uint16_t *yh = Y16 ? (uint16_t *)(void *)j->y + (size_t)i * C * hw + c0 : NULL;
        const float *r = j->res ? j->res + (size_t)i * C * hw + c0 : NULL;
        uint16_t *y2 = !Y16 && j->y2 ? j->y2 + (size_t)i * C * hw + c0 : NULL;
        for (int p = 0; p < hw; p++)
            for (int b = 0; b < NB; b++) {
                const size_t o = (size_t)p * C + b * 16;
                v16 v = (XL(o) - m[b]) * k1[b] + k2[b];
                v = r ? v16relu(v + v16load(r + o)) : j->relu ? v16relu(v) : v;
                if (Y16) nn_v16_round(yh + o, v);
                else v16store(y + o, v);
                if (y2) nn_v16_round(y2 + o, v);
            }
        return;
    }
    case JOB_B_BSUM: {
        const size_t base = (size_t)i * C * hw + c0;
        const float *dy = j->dy + base, *yo = j->g ? j->yo + base : NULL;
        const float *dy2 = j->g && j->dy2 ? j->dy2 + base : NULL;
        float *go = j->g ? j->g + base : NULL;
        for (int p = 0; p < hw; p++)
            for (int b = 0; b < NB; b++) {
                const size_t o = (size_t)p * C + b * 16;
                v16 g = v16load(dy + o);
                const v16 xm = XL(o) - m[b];
                if (j->relu) g = v16mask(g, xm * f1[b] + f2[b]);
                if (go) {
                    if (dy2) g += v16load(dy2 + o);
                    g = v16mask(g, v16load(yo + o));
                    v16store(go + o, g);
                }
                if (p & 1) {
                    a1[b] += g;
                    b1[b] += g * xm;
                } else {
                    a0[b] += g;
                    b0[b] += g * xm;
                }
            }
        for (int b = 0; b < NB; b++) {
            const v16 sa = a0[b] + a1[b], sb = b0[b] + b1[b];
            for (int l = 0; l < 16; l++) d[b][0][l] += sa[l], d[b][1][l] += sb[l];
        }
        return;
    }
    default: {
        const size_t base = (size_t)i * C * hw + c0;
        const float *dy = j->dy + base;
        float *dx = Y16 ? NULL : j->dx + base;
        uint16_t *dxh = Y16 ? (uint16_t *)(void *)j->dx + base : NULL;
        for (int p = 0; p < hw; p++)
            for (int b = 0; b < NB; b++) {
                const size_t o = (size_t)p * C + b * 16;
                const v16 xm = XL(o) - m[b];
                v16 g = v16load(dy + o);
                if (j->relu) g = v16mask(g, xm * f1[b] + f2[b]);
                if (Y16) nn_v16_round(dxh + o, k1[b] * (g - k2[b] - xm * k3[b]));
                else v16store(dx + o, k1[b] * (g - k2[b] - xm * k3[b]));
            }
        return;
    }
    }
}

/* Channels-last, an item is an image chunk: each image's blocks, four (then two, then one) at a
 * time, pixel by pixel (one block at a time through the images, each pass reading every other
 * cache line of a 32- or 64-channel activation, made batch norm 40 % slower than on the blocked
 * layout; this is as fast). The partial sums per (block, chunk), as blk_item's. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
void nn_bn_cl_item(const bn_job *j, int item)
{
    const int nb = j->cl_gb, cb0 = item / j->chunks * nb, ch = item % j->chunks;
    const int i0 = ch * j->per_chunk, i1 = i0 + j->per_chunk < j->n ? i0 + j->per_chunk : j->n;
    double d[BLK_PART_MAX / PART_STRIDE][3][16];
    memset(d, 0, sizeof(double) * 3 * 16 * (size_t)nb);
    for (int i = i0; i < i1; i++) {
        int b = 0;
#define CL_PASSES(X, Y) do { for (; b + 4 <= nb; b += 4) cl_image_pass(j, i, cb0 + b, 4, X, Y, d + b);     \
                            for (; b + 2 <= nb; b += 2) cl_image_pass(j, i, cb0 + b, 2, X, Y, d + b);     \
                            for (; b < nb; b++) cl_image_pass(j, i, cb0 + b, 1, X, Y, d + b); } while (0)
        switch (j->cl & (NN_CL_X16 | NN_CL_Y16)) {   /* which of x and y hold bfloat16 */
        case NN_CL_X16: CL_PASSES(1, 0); break;
        case NN_CL_Y16: CL_PASSES(0, 1); break;
        case NN_CL_X16 | NN_CL_Y16: CL_PASSES(1, 1); break;
        default: CL_PASSES(0, 0); break;
        }
#undef CL_PASSES
    }
    for (int b = 0; b < nb && (j->kind == JOB_B_STATS || j->kind == JOB_B_BSUM); b++)
        memcpy(j->part + ((size_t)(cb0 + b) * j->chunks + ch) * PART_STRIDE, d[b], sizeof d[b]);
}
