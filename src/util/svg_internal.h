/* svg_internal.h — what the SVG writers of util (svg.c: line and scatter charts, svg_timeline.c:
 * timelines) share beyond the public SVG helpers of util.h: tick spacing and text widths. Defined
 * in svg.c. */
#ifndef BATON_SVG_INTERNAL_H
#define BATON_SVG_INTERNAL_H

#include "baton/util.h"

/* A "nice" tick step (1, 2 or 5 × a power of ten) giving about `ticks` ticks over range. */
double svg_nice_step(double range, int ticks);
/* The width in pixels s takes in the charts' sans-serif face (DejaVu Sans, what librsvg and
 * browsers on Debian draw) at size px, by character class and rounded up so that a layout made
 * with it leaves room (bold: about 10 % wider). */
double util_svg_text_width(const char *s, double px, int bold);

#endif
