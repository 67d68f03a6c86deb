/* crop.c — where a sample's pixels are cut from: the names of the crops (baton_crop) and the draw
 * of a random-resized or centre crop's box for an image of a given size.
 *
 * Contract:
 *  - baton_crop_draw_for is a pure function of (options, seed, epoch, position, h, w): the RNG
 *    stream is baton_rng_seed3(seed ^ "crop", epoch, position), so a resume redraws every box and
 *    a sample's box does not depend on the world size, the thread count or the input mode.
 *  - RANDOM_RESIZED is torchvision's RandomResizedCrop.get_params on these draws: up to 10 tries,
 *    each drawing u_area then u_ratio (uniform doubles in [0, 1), 53 bits); target area =
 *    h·w·(scale0 + u_area·(scale1 − scale0)); aspect = exp(log ratio0 + u_ratio·(log ratio1 −
 *    log ratio0)); cw = round(sqrt(area·aspect)), ch = round(sqrt(area/aspect)) (round half to
 *    even, as Python's round); the first try with 0 < cw <= w and 0 < ch <= h draws top uniform in
 *    [0, h − ch] then left in [0, w − cw]; if none fits, the centre fallback (the whole image
 *    clipped to the ratio range). Then the flip bit (p = 0.5) when flip is on.
 *  - CENTER is Resize(floor(size·8/7)) of the shorter side (torchvision's int(long·R/short) for
 *    the longer) then CenterCrop(size) (offsets int(round((side − size)/2))), expressed as the box
 *    of the source that those output pixels cover; no draw, no flip.
 *  - tests/python/test_crop_rule.py re-implements torchvision's rule on the draws recorded here. */
#include "img_internal.h"

#include <math.h>
#include <string.h>

#define CROP_TAG 0x63726f70ULL  /* "crop" */

static const char *const names[] = {"none", "pad", "random-resized", "center"};

int baton_crop_parse(const char *name, baton_crop *c)
{
    for (int i = 0; i < 4; i++)
        if (name && !strcmp(name, names[i])) {
            *c = (baton_crop)i;
            return 0;
        }
    if (name && !strcmp(name, "centre")) {
        *c = BATON_CROP_CENTER;
        return 0;
    }
    return -1;
}

const char *baton_crop_name(baton_crop c) { return (unsigned)c < 4 ? names[c] : "?"; }

void img_crop_params(const baton_pipeline_opts *o, uint32_t *size, double scale[2], double ratio[2])
{
    *size = o->size ? o->size : 224;
    scale[0] = o->scale[0] || o->scale[1] ? o->scale[0] : 0.08;
    scale[1] = o->scale[0] || o->scale[1] ? o->scale[1] : 1.0;
    ratio[0] = o->ratio[0] || o->ratio[1] ? o->ratio[0] : 3.0 / 4.0;
    ratio[1] = o->ratio[0] || o->ratio[1] ? o->ratio[1] : 4.0 / 3.0;
}

int baton_pipeline_shape(const baton_manifest *m, baton_crop crop, uint32_t size, uint32_t out[3])
{
    out[2] = m->shape[2] ? m->shape[2] : m->channels;
    if (crop == BATON_CROP_RANDOM_RESIZED || crop == BATON_CROP_CENTER) {
        out[0] = out[1] = size ? size : 224;   /* img_crop_params' default */
        return 0;
    }
    out[0] = m->shape[0], out[1] = m->shape[1];
    return m->shape[0] && m->shape[1] && m->shape[2] ? 0 : -1;
}

static double u53(baton_rng *r) { return (double)(baton_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

static void set_box(baton_crop_draw *d, double top, double left, double ch, double cw)
{
    d->box[0] = left;
    d->box[1] = top;
    d->box[2] = left + cw;
    d->box[3] = top + ch;
}

static void random_resized(baton_crop_draw *d, baton_rng *r, uint32_t h, uint32_t w, const double scale[2],
                           const double ratio[2])
{
    double area = (double)h * w, lr0 = log(ratio[0]), lr1 = log(ratio[1]);
    for (uint32_t t = 0; t < 10; t++) {
        d->u_area[t] = u53(r);
        d->u_ratio[t] = u53(r);
        d->tries = t + 1;
        double target = area * (scale[0] + d->u_area[t] * (scale[1] - scale[0]));
        double aspect = exp(lr0 + d->u_ratio[t] * (lr1 - lr0));
        double cw = nearbyint(sqrt(target * aspect)), ch = nearbyint(sqrt(target / aspect));
        if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
            d->top = baton_rng_below(r, (uint64_t)(h - ch) + 1);
            d->left = baton_rng_below(r, (uint64_t)(w - cw) + 1);
            set_box(d, (double)d->top, (double)d->left, ch, cw);
            return;
        }
    }
    d->fallback = 1;
    double in_ratio = (double)w / h, cw = w, ch = h;
    double rmin = ratio[0] < ratio[1] ? ratio[0] : ratio[1], rmax = ratio[0] < ratio[1] ? ratio[1] : ratio[0];
    if (in_ratio < rmin) ch = nearbyint(cw / rmin);
    else if (in_ratio > rmax) cw = nearbyint(ch * rmax);
    if (ch < 1) ch = 1;
    if (ch > h) ch = h;
    if (cw < 1) cw = 1;
    if (cw > w) cw = w;
    d->top = (uint64_t)((h - (uint32_t)ch) / 2);
    d->left = (uint64_t)((w - (uint32_t)cw) / 2);
    set_box(d, (double)d->top, (double)d->left, ch, cw);
}

static void center(baton_crop_draw *d, uint32_t h, uint32_t w, uint32_t size)
{
    uint64_t R = (uint64_t)size * 8 / 7;   /* floor(size / 0.875): 256 for 224 */
    uint64_t nh, nw;
    if (h <= w) {
        nh = R;
        nw = (uint64_t)((double)R * w / h);
    } else {
        nw = R;
        nh = (uint64_t)((double)R * h / w);
    }
    if (nh < size) nh = size;   /* a very long image: its short side rounds below the crop */
    if (nw < size) nw = size;
    double top = nearbyint((double)(nh - size) / 2.0), left = nearbyint((double)(nw - size) / 2.0);
    double sy = (double)h / nh, sx = (double)w / nw;
    set_box(d, top * sy, left * sx, size * sy, size * sx);
}

void baton_crop_draw_for(const baton_pipeline_opts *o, uint64_t seed, uint64_t epoch, uint64_t position, uint32_t h,
                         uint32_t w, baton_crop_draw *d)
{
    memset(d, 0, sizeof *d);
    set_box(d, 0, 0, h, w);
    uint32_t size;
    double scale[2], ratio[2];
    img_crop_params(o, &size, scale, ratio);
    if (o->crop == BATON_CROP_CENTER) {
        if (h && w) center(d, h, w, size);
        return;
    }
    if (o->crop != BATON_CROP_RANDOM_RESIZED || !h || !w) return;
    baton_rng r;
    baton_rng_seed3(&r, seed ^ CROP_TAG, epoch, position);
    random_resized(d, &r, h, w, scale, ratio);
    if (o->flip) d->flip = (int)(baton_rng_next(&r) >> 63);
}
