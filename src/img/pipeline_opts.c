/* pipeline_opts.c — the decode pipeline's options: their defaults and the check that an open
 * makes of them against the dataset (pipeline.c runs the pipeline itself).
 *
 * Contract: img_pipeline_check_opts returns BATON_ERR_ARG for options out of range, named as the
 * caller gave them (workers, depth, layout, crop, size, scale, ratio, normalisation), and
 * BATON_ERR_FORMAT for a dataset the options cannot batch (images of varying size without a crop,
 * channels other than 1 or 3, an unknown encoding). */
#include "img_internal.h"

#include <math.h>
#include <string.h>

#define MAX_WORKERS 256
#define MAX_DEPTH 1024

void baton_pipeline_opts_default(baton_pipeline_opts *o)
{
    memset(o, 0, sizeof *o);
    o->workers = 2;
    o->batch = 128;
    o->layout = BATON_LAYOUT_NCHW;
    o->depth = 4;
}

int img_pipeline_check_opts(const baton_manifest *m, const baton_pipeline_opts *o, baton_err *err)
{
    if (o->workers < 1 || o->workers > MAX_WORKERS)
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: %d workers (expected 1..%d)", o->workers,
                             MAX_WORKERS);
    if (o->batch < 1) return baton_err_set(err, BATON_ERR_ARG, "pipeline: batch size 0");
    if (o->part_world > 1 && o->part_rank >= o->part_world)
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: part %u of %u", o->part_rank, o->part_world);
    if (o->depth < 1 || o->depth > MAX_DEPTH)
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: depth %u (expected 1..%d)", o->depth,
                             MAX_DEPTH);
    if (o->layout != BATON_LAYOUT_NCHW && o->layout != BATON_LAYOUT_NHWC)
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: unknown layout %d", (int)o->layout);
    if (o->crop_pad > 65536)
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: crop padding %u is too large", o->crop_pad);
    if ((unsigned)o->crop > BATON_CROP_CENTER)
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: unknown crop %d", (int)o->crop);
    int crops = o->crop == BATON_CROP_RANDOM_RESIZED || o->crop == BATON_CROP_CENTER;
    uint32_t shape[3];
    if (baton_pipeline_shape(m, o->crop, o->size, shape))
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "pipeline: dataset %s has images of varying size: crop them (crop random-resized for "
                             "training, center for evaluation, with a size)", m->name ? m->name : "?");
    uint32_t c = m->shape[2] ? m->shape[2] : m->channels;
    if (c != 1 && c != 3)
        return baton_err_set(err, BATON_ERR_FORMAT, "pipeline: %u channels (expected 1 or 3)", c);
    if (crops && (o->size > 4096 || (o->crop_pad && o->crop == BATON_CROP_RANDOM_RESIZED)))
        return baton_err_set(err, BATON_ERR_ARG, o->size > 4096 ? "pipeline: crop size %u (expected 1..4096)"
                                                                : "pipeline: crop padding goes with the pad crop, not random-resized",
                             o->size);
    uint32_t size;
    double sc[2], ra[2];
    img_crop_params(o, &size, sc, ra);
    if (o->crop == BATON_CROP_RANDOM_RESIZED && !(sc[0] > 0 && sc[0] <= sc[1] && sc[1] <= 1))
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: scale (%g, %g): expected 0 < min <= max <= 1", sc[0], sc[1]);
    if (o->crop == BATON_CROP_RANDOM_RESIZED && !(ra[0] > 0 && ra[0] <= ra[1] && isfinite(ra[1])))
        return baton_err_set(err, BATON_ERR_ARG, "pipeline: ratio (%g, %g): expected 0 < min <= max", ra[0], ra[1]);
    if (m->encoding != BATON_ENC_RAW && m->encoding != BATON_ENC_PNG &&
        m->encoding != BATON_ENC_JPEG && m->encoding != BATON_ENC_UNKNOWN)
        return baton_err_set(err, BATON_ERR_FORMAT, "pipeline: unknown encoding %d", (int)m->encoding);
    for (uint32_t k = 0; (o->mean || o->std) && k < c; k++)
        if (!o->mean || !o->std || !isfinite(o->mean[k]) || !(o->std[k] > 0) || !isfinite(o->std[k]))
            return baton_err_set(err, BATON_ERR_ARG, "pipeline: normalisation of channel %u: mean must be finite "
                                 "and std positive (both given)", k);
    return BATON_OK;
}
