/* svg.c — minimal SVG charts for benchmark and report output: one chart per file, linear axes with
 * "nice" ticks starting at zero (or logarithmic axes over whole decades), a legend. Line charts draw
 * every series as a polyline with point markers; scatter charts draw markers (dot, ring, square,
 * diamond, or none) with optional per-point labels, and a polyline only for series that ask for
 * one. A label goes beside its point where it overlaps no other text and stays on the canvas;
 * where no such place is near, it is left out and the point keeps it as a tooltip. The file is written crash-safely (baton_file_write_atomic) so a
 * half-written chart never appears. */
#include "svg_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

double svg_nice_step(double range, int ticks)
{
    if (!(range > 0)) return 1;
    double raw = range / ticks, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

double util_svg_text_width(const char *s, double px, int bold)
{
    double em = 0;
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        const unsigned char c = *p;
        if (c >= 0x80) {   /* a UTF-8 sequence counts once, as a wide letter */
            if ((c & 0xc0) == 0xc0) em += 0.70;
            continue;
        }
        em += strchr("il.,:;'|!I ", c) ? 0.34
            : strchr("ftrj()[]/\\", c) ? 0.42
            : strchr("mw%", c) ? 0.98
            : strchr("MW@", c) ? 1.00
            : c >= 'A' && c <= 'Z' ? 0.74
            : c >= '0' && c <= '9' ? 0.64
            : c >= 'a' && c <= 'z' ? 0.63
            : 0.66;
    }
    return em * px * (bold ? 1.12 : 1.0) + 2;
}

void baton_svg_esc(baton_buf *b, const char *s) { baton_buf_esc_xml(b, s); }

void baton_svg_put(baton_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    util_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ axes */
/* One axis: linear from 0 (ticks at a nice step) or logarithmic over whole decades. */
typedef struct axis {
    int log;
    double lo, hi;           /* data range mapped onto the axis (lo > 0 when log) */
    double ticks[64];
    size_t nticks;
} axis;

/* Linear: when every value is a whole number (epochs, steps), the step is a whole number too, so
 * no tick falls between two possible values; the axis ends at the first tick at or past the data. */
static void axis_linear(axis *a, double vmax, int whole)
{
    double st = svg_nice_step(vmax, 5);
    if (whole && st < 1) st = 1;
    a->log = 0;
    a->lo = 0;
    a->hi = st * ceil(vmax / st - 1e-9);
    if (a->hi <= 0) a->hi = st > 0 ? st : 1;
    a->nticks = 0;
    for (double v = 0; v <= a->hi + 1e-9 * a->hi && a->nticks < 64; v += st) a->ticks[a->nticks++] = v;
}

/* Logarithmic: from the decade at or below the smallest positive value to the one at or above the
 * largest; 2 and 5 between decades when there are at most two. */
static void axis_log(axis *a, double vmin, double vmax)
{
    a->log = 1;
    if (!(vmin > 0)) vmin = vmax > 0 ? vmax / 10 : 1;
    if (!(vmax > 0)) vmax = vmin * 10;
    int d0 = (int)floor(log10(vmin) + 1e-9), d1 = (int)ceil(log10(vmax) - 1e-9);
    if (d1 <= d0) d1 = d0 + 1;
    if (d1 - d0 > 60) d0 = d1 - 60;
    a->lo = pow(10, d0);
    a->hi = pow(10, d1);
    a->nticks = 0;
    for (int d = d0; d <= d1 && a->nticks < 64; d++) {
        a->ticks[a->nticks++] = pow(10, d);
        if (d1 - d0 <= 2 && d < d1) {
            a->ticks[a->nticks++] = 2 * pow(10, d);
            a->ticks[a->nticks++] = 5 * pow(10, d);
        }
    }
}

/* Where v falls on the axis, 0 (lo) to 1 (hi); values a log axis cannot show are NAN. */
static double axis_frac(const axis *a, double v)
{
    if (!isfinite(v)) return NAN;
    if (a->log) return v > 0 ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : NAN;
    return (v - a->lo) / (a->hi - a->lo);
}

static void axes_of(const baton_svg_points *s, size_t ns, unsigned flags, axis *ax, axis *ay)
{
    double xmax = 0, ymax = 0, xmin = INFINITY, ymin = INFINITY;
    int whole = 1;
    for (size_t i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            const double x = s[i].x[k], y = s[i].y[k];
            if (isfinite(x) && x > xmax) xmax = x;
            if (isfinite(y) && y > ymax) ymax = y;
            if (isfinite(x) && x > 0 && x < xmin) xmin = x;
            if (isfinite(y) && y > 0 && y < ymin) ymin = y;
            whole &= !isfinite(x) || x == floor(x);
        }
    if (flags & BATON_SVG_XLOG) axis_log(ax, xmin, xmax);
    else axis_linear(ax, xmax, whole);
    if (flags & BATON_SVG_YLOG) axis_log(ay, ymin, ymax);
    else axis_linear(ay, ymax, 0);
}

/* ------------------------------------------------------------------ text boxes */
/* The box a label occupies (text at x, baseline y, size px, anchored start / middle / end). */
typedef struct box {
    double x0, y0, x1, y1;
} box;

static box text_box(const char *s, double x, double y, double px, int anchor)
{
    const double w = util_svg_text_width(s, px, 0);
    const double x0 = anchor == 0 ? x : anchor == 1 ? x - w / 2 : x - w;
    return (box){x0, y - 0.80 * px, x0 + w, y + 0.25 * px};
}

typedef struct boxes {
    box v[4096];
    size_t n;
} boxes;

static void keep_box(boxes *bs, box b)
{
    if (bs->n < sizeof bs->v / sizeof *bs->v) bs->v[bs->n++] = b;
}

static int free_spot(const boxes *bs, box b, box area)
{
    if (b.x0 < area.x0 || b.y0 < area.y0 || b.x1 > area.x1 || b.y1 > area.y1) return 0;
    for (size_t i = 0; i < bs->n; i++)
        if (b.x0 < bs->v[i].x1 && bs->v[i].x0 < b.x1 && b.y0 < bs->v[i].y1 && bs->v[i].y0 < b.y1) return 0;
    return 1;
}

/* ------------------------------------------------------------------ markers */
static void marker(baton_buf *b, int kind, double cx, double cy, const char *col, int small)
{
    const double r = small ? 3 : 4;
    switch (kind) {
    case BATON_SVG_NOMARK:
        break;
    case BATON_SVG_RING:
        baton_svg_put(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"white\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
                cx, cy, r, col);
        break;
    case BATON_SVG_SQUARE:
        baton_svg_put(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", cx - r, cy - r, 2 * r,
                2 * r, col);
        break;
    case BATON_SVG_DIAMOND:
        baton_svg_put(b, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"white\" stroke=\"%s\" "
                   "stroke-width=\"1.5\"/>\n",
                cx, cy - r - 1, cx + r + 1, cy, cx, cy + r + 1, cx - r - 1, cy, col);
        break;
    default:
        baton_svg_put(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>\n", cx, cy, r, col);
    }
}

/* ------------------------------------------------------------------ the chart */
/* A label beside its point where it overlaps nothing drawn so far (text, markers, lines) and stays
 * inside the plot: right, left, above, below, then further out; none free: left out (the point
 * keeps it as a tooltip). */
static int place_label(baton_buf *b, boxes *bs, const char *text, double cx, double cy, const char *col, box area)
{
    static const double off[][3] = {{7, -5, 0}, {7, 13, 0}, {-7, -5, 2}, {-7, 13, 2}, {0, -9, 1}, {0, 18, 1},
                                    {12, -14, 0}, {-12, -14, 2}, {12, 24, 0}, {-12, 24, 2}, {0, -22, 1}, {0, 30, 1}};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
        const int anchor = (int)off[i][2];
        const box bx = text_box(text, cx + off[i][0], cy + off[i][1], 10, anchor);
        if (!free_spot(bs, bx, area)) continue;
        keep_box(bs, bx);
        baton_svg_put(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\"%s>", cx + off[i][0], cy + off[i][1], col,
                anchor == 1 ? " text-anchor=\"middle\"" : anchor == 2 ? " text-anchor=\"end\"" : "");
        baton_svg_esc(b, text);
        baton_svg_put(b, "</text>\n");
        return 1;
    }
    return 0;
}

static void tick_text(char *t, size_t n, double v)
{
    snprintf(t, n, "%g", v);
}

/* Where the plot sits on the canvas. */
typedef struct geom {
    double L, T, W, H, pw, ph, ytw;
} geom;

static double px_x(const geom *g, const axis *ax, double v) { return g->L + axis_frac(ax, v) * g->pw; }
static double px_y(const geom *g, const axis *ay, double v) { return g->T + g->ph - axis_frac(ay, v) * g->ph; }

/* The title, the grid and tick labels, the frame, the axis titles (each text's box kept). */
static void frame(baton_buf *b, boxes *bs, const geom *g, const axis *ax, const axis *ay, const char *title,
                  const char *xlabel, const char *ylabel)
{
    char tick[32];
    baton_svg_put(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n", g->W, g->H);
    baton_svg_put(b, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" y=\"24\" "
            "font-size=\"15\" font-weight=\"bold\">", g->L);
    baton_svg_esc(b, title);
    baton_svg_put(b, "</text>\n");
    keep_box(bs, (box){g->L, 24 - 12, g->L + util_svg_text_width(title, 15, 1), 24 + 4});
    for (size_t i = 0; i < ax->nticks; i++) {
        const double x = px_x(g, ax, ax->ticks[i]);
        tick_text(tick, sizeof tick, ax->ticks[i]);
        baton_svg_put(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            x, g->T, x, g->T + g->ph, x, g->T + g->ph + 16, tick);
        keep_box(bs, text_box(tick, x, g->T + g->ph + 16, 12, 1));
    }
    for (size_t i = 0; i < ay->nticks; i++) {
        const double y = px_y(g, ay, ay->ticks[i]);
        tick_text(tick, sizeof tick, ay->ticks[i]);
        baton_svg_put(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
            g->L, y, g->L + g->pw, y, g->L - 6, y + 4, tick);
        keep_box(bs, text_box(tick, g->L - 6, y + 4, 12, 2));
    }
    baton_svg_put(b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#333\"/>\n",
        g->L, g->T, g->pw, g->ph);
    baton_svg_put(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", g->L + g->pw / 2, g->H - 10);
    baton_svg_esc(b, xlabel);
    baton_svg_put(b, "</text>\n<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">",
            g->L - g->ytw - 14, g->T + g->ph / 2);
    baton_svg_esc(b, ylabel);
    baton_svg_put(b, "</text>\n");
    keep_box(bs, text_box(xlabel, g->L + g->pw / 2, g->H - 10, 12, 1));
    const double yl = util_svg_text_width(ylabel, 12, 0);
    keep_box(bs, (box){g->L - g->ytw - 24, g->T + g->ph / 2 - yl / 2, g->L - g->ytw - 10, g->T + g->ph / 2 + yl / 2});
}

/* The legend, right of the plot: a line and/or the marker, and the series' name. */
static void legend(baton_buf *b, boxes *bs, const geom *g, const baton_svg_points *s, size_t ns)
{
    for (size_t i = 0; i < ns; i++) {
        const char *col = palette[i % (sizeof palette / sizeof *palette)];
        const double ly = g->T + 10 + 20 * (double)i, x = g->L + g->pw;
        if (s[i].line)
            baton_svg_put(b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
                    x + 12, ly, x + 36, ly, col);
        if (!s[i].line || s[i].marker != BATON_SVG_DOT) marker(b, s[i].marker, x + 24, ly, col, 0);
        baton_svg_put(b, "<text x=\"%.0f\" y=\"%.1f\">", x + 42, ly + 4);
        baton_svg_esc(b, s[i].name);
        baton_svg_put(b, "</text>\n");
        keep_box(bs, text_box(s[i].name, x + 42, ly + 4, 12, 0));
    }
}

/* Labels keep clear of the lines (sampled every 5 px) and of every marker. */
static void obstacles(boxes *bs, const geom *g, const axis *ax, const axis *ay, const baton_svg_points *s, size_t ns)
{
    for (size_t i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            const double x1 = px_x(g, ax, s[i].x[k]), y1 = px_y(g, ay, s[i].y[k]);
            if (!isfinite(x1) || !isfinite(y1)) continue;
            if (s[i].marker != BATON_SVG_NOMARK) keep_box(bs, (box){x1 - 5, y1 - 5, x1 + 5, y1 + 5});
            if (!s[i].line || k == 0) continue;
            const double x0 = px_x(g, ax, s[i].x[k - 1]), y0 = px_y(g, ay, s[i].y[k - 1]);
            if (!isfinite(x0) || !isfinite(y0)) continue;
            const int steps = 1 + (int)(hypot(x1 - x0, y1 - y0) / 5);
            for (int j = 0; j <= steps && j < 400; j++)
                keep_box(bs, (box){x0 + (x1 - x0) * j / steps - 1.5, y0 + (y1 - y0) * j / steps - 1.5,
                                   x0 + (x1 - x0) * j / steps + 1.5, y0 + (y1 - y0) * j / steps + 1.5});
        }
}

/* The series: polylines, markers, labels (or their tooltips). */
static void series(baton_buf *b, boxes *bs, const geom *g, const axis *ax, const axis *ay, const baton_svg_points *s,
                   size_t ns)
{
    const box area = {g->L + 2, g->T + 2, g->L + g->pw - 2, g->T + g->ph - 2};
    for (size_t i = 0; i < ns; i++) {
        const char *col = palette[i % (sizeof palette / sizeof *palette)];
        if (s[i].line) {
            baton_svg_put(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
            for (size_t k = 0; k < s[i].n; k++) {
                const double x = px_x(g, ax, s[i].x[k]), y = px_y(g, ay, s[i].y[k]);
                if (isfinite(x) && isfinite(y)) baton_svg_put(b, "%.1f,%.1f ", x, y);
            }
            baton_svg_put(b, "\"/>\n");
        }
        for (size_t k = 0; k < s[i].n; k++) {
            const double cx = px_x(g, ax, s[i].x[k]), cy = px_y(g, ay, s[i].y[k]);
            if (!isfinite(cx) || !isfinite(cy)) continue;
            marker(b, s[i].marker, cx, cy, col, s[i].line);
            if (s[i].labels && s[i].labels[k] && !place_label(b, bs, s[i].labels[k], cx, cy, col, area)) {
                baton_svg_put(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"none\"><title>", cx, cy);
                baton_svg_esc(b, s[i].labels[k]);
                baton_svg_put(b, "</title></circle>\n");
            }
        }
    }
}

static int render(const char *path, const char *title, const char *xlabel, const char *ylabel,
                  const baton_svg_points *s, size_t ns, unsigned flags, baton_err *err)
{
    axis ax, ay;
    axes_of(s, ns, flags, &ax, &ay);
    /* room for what is written: the y tick labels on the left, the legend on the right, the title */
    char tick[32];
    double ytw = 0, lw = 0;
    for (size_t i = 0; i < ay.nticks; i++) {
        tick_text(tick, sizeof tick, ay.ticks[i]);
        if (util_svg_text_width(tick, 12, 0) > ytw) ytw = util_svg_text_width(tick, 12, 0);
    }
    for (size_t i = 0; i < ns; i++)
        if (util_svg_text_width(s[i].name, 12, 0) > lw) lw = util_svg_text_width(s[i].name, 12, 0);
    geom g = {.T = 40, .H = 420, .L = 34 + ytw, .ytw = ytw};
    g.W = g.L + 480 + 54 + lw;
    if (util_svg_text_width(title, 15, 1) + g.L + 10 > g.W) g.W = util_svg_text_width(title, 15, 1) + g.L + 10;
    g.pw = g.W - g.L - (54 + lw);
    g.ph = g.H - g.T - 50;
    boxes *bs = calloc(1, sizeof *bs);
    if (!bs) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    baton_buf b = {0};
    frame(&b, bs, &g, &ax, &ay, title, xlabel, ylabel);
    legend(&b, bs, &g, s, ns);   /* before the series: labels keep clear of it */
    obstacles(bs, &g, &ax, &ay, s, ns);
    series(&b, bs, &g, &ax, &ay, s, ns);
    baton_svg_put(&b, "</svg>\n");
    free(bs);
    int rc = b.data ? baton_file_write_atomic(path, b.data, b.len, err)
                    : baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    baton_buf_free(&b);
    return rc;
}

int baton_svg_lines(const char *path, const char *title, const char *xlabel, const char *ylabel,
                    const baton_svg_series *s, size_t ns, baton_err *err)
{
    baton_svg_points *p = calloc(ns ? ns : 1, sizeof *p);
    if (!p) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < ns; i++)
        p[i] = (baton_svg_points){.name = s[i].name, .x = s[i].x, .y = s[i].y, .n = s[i].n, .line = 1};
    int rc = render(path, title, xlabel, ylabel, p, ns, 0, err);
    free(p);
    return rc;
}

int baton_svg_scatter_axes(const char *path, const char *title, const char *xlabel, const char *ylabel,
                           const baton_svg_points *s, size_t ns, unsigned flags, baton_err *err)
{
    return render(path, title, xlabel, ylabel, s, ns, flags, err);
}
