/* svg_internal.h — what the SVG writers of util (svg.c: line and scatter charts, svg_timeline.c:
 * timelines) share beyond the public SVG helpers of util.h: tick spacing and text widths (svg.c),
 * and the buffer printer under baton_buf_printf and baton_svg_put (buf.c). */
#ifndef BATON_SVG_INTERNAL_H
#define BATON_SVG_INTERNAL_H

#include "baton/util.h"

#include <stdarg.h>

/* A "nice" tick step (1, 2 or 5 × a power of ten) giving about `ticks` ticks over range. */
double svg_nice_step(double range, int ticks);
/* The width in pixels s takes in the charts' sans-serif face (DejaVu Sans, what librsvg and
 * browsers on Debian draw) at size px, by character class and rounded up so that a layout made
 * with it leaves room (bold: about 10 % wider). */
double util_svg_text_width(const char *s, double px, int bold);
/* baton_buf_printf with a va_list (buf.c): the SVG helper's printer is this too. */
int util_buf_vprintf(baton_buf *b, const char *fmt, va_list ap);

#endif
