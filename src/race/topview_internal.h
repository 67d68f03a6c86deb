/* topview_internal.h — the top view of a track that the camera samples (topview.c, camera.c). */
#ifndef BATON_RACE_TOPVIEW_INTERNAL_H
#define BATON_RACE_TOPVIEW_INTERNAL_H

#include "race_internal.h"

#define TOPVIEW_LEVELS 8

/* Greyscale rasters of the ground, level 0 at res metres per pixel, each next level half the
 * size (2 × 2 box averages). Pixel (i, j) of level 0 covers x0 + [i, i+1) res, y0 + [j, j+1) res;
 * row 0 is the bottom (lowest y). */
typedef struct race_topview {
    int levels;
    int w[TOPVIEW_LEVELS], h[TOPVIEW_LEVELS];
    uint8_t *px[TOPVIEW_LEVELS];
    double x0, y0, res;
    uint8_t beyond;           /* the value of the ground outside the raster */
} race_topview;

int race_topview_build(race_topview *tv, const baton_race_track *t, double res, baton_err *err);
void race_topview_free(race_topview *tv);

#endif
