/* augment_internal.h — what augment.c shares with pipeline.c (and its tests): drawing a sample's
 * augmentation and applying it (fast path and reference), the per-channel normalisation table
 * and the fast augment path that takes a prepared table, so the decode pipeline builds the table
 * once at open instead of once per image.
 *
 * Contract: img_norm_value is the one definition of a normalised pixel value; both the reference
 * path and the table use it, which is why the fast path and the reference agree bit for bit. */
#ifndef BATON_AUGMENT_INTERNAL_H
#define BATON_AUGMENT_INTERNAL_H

#include "baton/img.h"

/* Augment + normalise one decoded image into dst (one sample's slot in the layout).
 * The fast path and the plain reference must produce identical floats. */
typedef struct baton_augment {
    int32_t dy, dx;         /* crop offset in the padded image minus pad: source = dst + (dy, dx) */
    int flip;
} baton_augment;
void img_augment_draw(uint64_t seed, uint64_t epoch, uint64_t position, uint32_t pad, int flip,
                        baton_augment *a);
void img_augment_apply(const baton_image *im, const baton_augment *a, const float *mean,
                         const float *std, baton_layout layout, float *dst);
void img_augment_apply_ref(const baton_image *im, const baton_augment *a, const float *mean,
                             const float *std, baton_layout layout, float *dst);

#define IMG_NORM_MAX_C 4  /* channels a table holds (the manifest allows 1..4) */

typedef struct img_norm_lut {
    uint32_t c;
    float v[IMG_NORM_MAX_C][256];  /* v[k][px] = normalised value of pixel px in channel k */
} img_norm_lut;

/* (px / 255 - mean) / std in float, evaluated the same way everywhere. */
static inline float img_norm_value(uint32_t px, float mean, float std)
{
    float x = (float)px / 255.0f;
    x = x - mean;
    return x / std;
}

/* Fill the table for c channels (c <= IMG_NORM_MAX_C). */
void img_norm_lut_init(img_norm_lut *lut, uint32_t c, const float *mean, const float *std);
/* img_augment_apply with a prepared table; im->c must equal lut->c. */
void img_augment_apply_lut(const baton_image *im, const baton_augment *a, const img_norm_lut *lut,
                           baton_layout layout, float *dst);

/* The same crop and flip without normalisation: the pixels (0 outside the image) in the layout.
 * _ref is the plain per-pixel loop; img_augment_apply_u8 walks rows for the crops' case (3 channels,
 * no shift, either layout) and is _ref otherwise: the same bytes (tests memcmp them). */
void img_augment_apply_u8(const baton_image *im, const baton_augment *a, baton_layout layout, uint8_t *dst);
void img_augment_apply_u8_ref(const baton_image *im, const baton_augment *a, baton_layout layout, uint8_t *dst);

#endif
