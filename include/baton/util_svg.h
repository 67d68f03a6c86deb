/* util_svg.h — SVG line, scatter and timeline charts (part of util.h, which
 * includes it; src/util/svg.c, svg_timeline.c).
 *
 * Contract: as util.h's. */
#ifndef BATON_UTIL_SVG_H
#define BATON_UTIL_SVG_H

#include "baton/util.h"

/* ---- SVG line charts (a browser opens them; no dependencies) ---- */
/* SVG text: append s (NULL: nothing) with <, >, & and " escaped for text and attributes; append
 * printf-formatted text (at most 1023 bytes per call). */
void baton_svg_esc(baton_buf *b, const char *s);
void baton_svg_put(baton_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct baton_svg_series {
    const char *name;
    const double *x, *y;
    size_t n;
} baton_svg_series;
/* Write a line chart with markers, axes with ticks, and a legend. */
int baton_svg_lines(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const baton_svg_series *s, size_t ns, baton_err *err);
/* Scatter charts: points with markers, an optional text label per point, and optionally a line
 * through a series' points (e.g. a Pareto front). */
enum { BATON_SVG_DOT = 0, BATON_SVG_RING, BATON_SVG_SQUARE, BATON_SVG_DIAMOND, BATON_SVG_NOMARK };
typedef struct baton_svg_points {
    const char *name;
    const double *x, *y;
    size_t n;
    const char *const *labels;   /* per point (NULL entries: no label), or NULL; placed where they
                                    overlap no other text, else left out (kept as a tooltip) */
    int line;                    /* also join the points in order */
    int marker;                  /* BATON_SVG_DOT (default), _RING, _SQUARE, _DIAMOND, _NOMARK */
} baton_svg_points;
/* The same with logarithmic axes (BATON_SVG_XLOG, BATON_SVG_YLOG: whole decades; values <= 0 not
 * drawn). */
enum { BATON_SVG_XLOG = 1, BATON_SVG_YLOG = 2 };
int baton_svg_scatter_axes(const char *path, const char *title, const char *xlabel, const char *ylabel,
                           const baton_svg_points *s, size_t ns, unsigned flags, baton_err *err);

/* ---- SVG timelines: one row per item (e.g. an instance), spans coloured by style, point marks
 * (src/util/svg_timeline.c). Mark kinds: 0 a tick, 1 a triangle, 2 a cross, 3 a dot. ---- */
typedef struct baton_svg_span {
    double t0, t1;
    int style;                  /* index into span_names (and the span palette) */
} baton_svg_span;
typedef struct baton_svg_mark {
    double t;
    size_t row;
    int kind;
    const char *title;          /* tooltip; may be NULL */
} baton_svg_mark;
typedef struct baton_svg_row {
    const char *label;
    const baton_svg_span *spans;
    size_t nspans;
} baton_svg_row;
int baton_svg_timeline(const char *path, const char *title, const char *xlabel, const baton_svg_row *rows,
                       size_t nrows, const char *const *span_names, size_t nstyles, const baton_svg_mark *marks,
                       size_t nmarks, const char *const mark_names[4], baton_err *err);

#endif
