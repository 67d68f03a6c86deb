/* svg_internal.h — what the SVG writers of util (svg.c: line and scatter charts, svg_timeline.c:
 * timelines) share beyond the public SVG helpers of util.h: tick spacing. Defined in svg.c. */
#ifndef BATON_SVG_INTERNAL_H
#define BATON_SVG_INTERNAL_H

#include "baton/util.h"

/* A "nice" tick step (1, 2 or 5 × a power of ten) giving about `ticks` ticks over range. */
double svg_nice_step(double range, int ticks);

#endif
