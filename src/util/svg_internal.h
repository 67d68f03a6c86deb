/* svg_internal.h — what the SVG writers of util (svg.c: line and scatter charts, svg_timeline.c:
 * timelines) share: text escaping, formatted appends and tick spacing. Defined in svg.c. */
#ifndef BATON_SVG_INTERNAL_H
#define BATON_SVG_INTERNAL_H

#include "baton/util.h"

/* Append s (NULL: nothing) with <, >, & and " escaped for SVG text and attributes. */
void svg_esc(baton_buf *b, const char *s);
/* Append printf-formatted text (at most 511 bytes per call). */
void svg_put(baton_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A "nice" tick step (1, 2 or 5 × a power of ten) giving about `ticks` ticks over range. */
double svg_nice_step(double range, int ticks);
/* The width in pixels that s takes in the charts' sans-serif face (DejaVu Sans, what librsvg and
 * browsers on Debian draw) at size px: advance widths by character class, rounded up, so that a
 * layout made with it leaves room. bold: the bold face (about 10 % wider). */
double svg_text_width(const char *s, double px, int bold);

#endif
