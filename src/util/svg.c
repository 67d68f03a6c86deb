/* svg.c — minimal SVG charts for benchmark and report output: one chart per file, linear axes with
 * "nice" ticks starting at zero, a legend. Line charts draw every series as a polyline with point
 * markers; scatter charts draw markers (with optional per-point labels) and a polyline only for
 * series that ask for one. The file is written crash-safely (baton_file_write_atomic) so a
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

double svg_text_width(const char *s, double px, int bold)
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

void svg_esc(baton_buf *b, const char *s)
{
    for (; s && *s; s++) {
        const char *r = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : *s == '"' ? "&quot;" : NULL;
        if (r) baton_buf_append(b, r, strlen(r));
        else baton_buf_append(b, s, 1);
    }
}

void svg_put(baton_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) baton_buf_append(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* The x axis: ticks at a nice step; when every x is a whole number (epochs, steps), the step is a
 * whole number too, so no tick falls between two possible values. */
static double x_step(const baton_svg_points *s, size_t ns, double xmax)
{
    int whole = 1;
    for (size_t i = 0; i < ns && whole; i++)
        for (size_t k = 0; k < s[i].n && whole; k++) whole = !isfinite(s[i].x[k]) || s[i].x[k] == floor(s[i].x[k]);
    double xs = svg_nice_step(xmax, 5);
    return whole && xs < 1 ? 1 : xs;
}

static int render(const char *path, const char *title, const char *xlabel, const char *ylabel,
                  const baton_svg_points *s, size_t ns, baton_err *err)
{
    double xmax = 0, ymax = 0;
    for (size_t i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i].n; k++) {
            if (isfinite(s[i].x[k]) && s[i].x[k] > xmax) xmax = s[i].x[k];
            if (isfinite(s[i].y[k]) && s[i].y[k] > ymax) ymax = s[i].y[k];
        }
    double xs = x_step(s, ns, xmax), ys = svg_nice_step(ymax, 5);
    xmax = xs * ceil(xmax / xs - 1e-9);   /* the axis ends at the first tick at or past the data */
    ymax = ys * ceil(ymax / ys + 1e-9);
    if (xmax <= 0) xmax = 1;
    if (ymax <= 0) ymax = 1;
    /* room for what is written: the y tick labels on the left, the legend on the right, the title */
    char tick[32];
    double ytw = 0, legend = 0;
    for (double v = 0; v <= ymax + 1e-9; v += ys) {
        snprintf(tick, sizeof tick, "%g", v);
        if (svg_text_width(tick, 12, 0) > ytw) ytw = svg_text_width(tick, 12, 0);
    }
    for (size_t i = 0; i < ns; i++)
        if (svg_text_width(s[i].name, 12, 0) > legend) legend = svg_text_width(s[i].name, 12, 0);
    const double T = 40, B = 50, L = 34 + ytw, R = 54 + legend, H = 420;
    double W = L + 480 + R;
    if (svg_text_width(title, 15, 1) + L + 10 > W) W = svg_text_width(title, 15, 1) + L + 10;
    double pw = W - L - R, ph = H - T - B;
    baton_buf b = {0};
    svg_put(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    svg_put(&b, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" y=\"24\" "
            "font-size=\"15\" font-weight=\"bold\">", L);
    svg_esc(&b, title);
    svg_put(&b, "</text>\n");
    for (double v = 0; v <= xmax + 1e-9; v += xs) {
        double x = L + v / xmax * pw;
        svg_put(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
            x, T, x, T + ph, x, T + ph + 16, v);
    }
    for (double v = 0; v <= ymax + 1e-9; v += ys) {
        double y = T + ph - v / ymax * ph;
        svg_put(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
            L, y, L + pw, y, L - 6, y + 4, v);
    }
    svg_put(&b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#333\"/>\n",
        L, T, pw, ph);
    svg_put(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", L + pw / 2, H - 10);
    svg_esc(&b, xlabel);
    svg_put(&b, "</text>\n<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">", L - ytw - 14,
            T + ph / 2);
    svg_esc(&b, ylabel);
    svg_put(&b, "</text>\n");
    for (size_t i = 0; i < ns; i++) {
        const char *col = palette[i % (sizeof palette / sizeof *palette)];
        if (s[i].line) {
            svg_put(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
            for (size_t k = 0; k < s[i].n; k++)
                svg_put(&b, "%.1f,%.1f ", L + s[i].x[k] / xmax * pw, T + ph - s[i].y[k] / ymax * ph);
            svg_put(&b, "\"/>\n");
        }
        for (size_t k = 0; k < s[i].n; k++) {
            const double cx = L + s[i].x[k] / xmax * pw, cy = T + ph - s[i].y[k] / ymax * ph;
            svg_put(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", cx, cy, s[i].line ? "3" : "4", col);
            if (s[i].labels && s[i].labels[k]) {
                svg_put(&b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">", cx + 5, cy - 5, col);
                svg_esc(&b, s[i].labels[k]);
                svg_put(&b, "</text>\n");
            }
        }
        double ly = T + 10 + 20 * (double)i;
        svg_put(&b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
                "<text x=\"%.0f\" y=\"%.1f\">", L + pw + 12, ly, L + pw + 36, ly, col, L + pw + 42, ly + 4);
        svg_esc(&b, s[i].name);
        svg_put(&b, "</text>\n");
    }
    svg_put(&b, "</svg>\n");
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
    int rc = render(path, title, xlabel, ylabel, p, ns, err);
    free(p);
    return rc;
}

int baton_svg_scatter(const char *path, const char *title, const char *xlabel, const char *ylabel,
                      const baton_svg_points *s, size_t ns, baton_err *err)
{
    return render(path, title, xlabel, ylabel, s, ns, err);
}
