/* svg_timeline.c — SVG timelines (a Gantt-style chart): one row per item, coloured spans along a
 * linear time axis with "nice" ticks, point marks (tick, triangle, cross, dot) with tooltips, and
 * a legend for both. Written crash-safely like the line charts (baton_file_write_atomic). */
#include "svg_internal.h"

#include <math.h>
#include <string.h>

static const char *span_palette[] = {"#c7c7c7", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};
static const char *mark_colour[4] = {"#222222", "#d62728", "#8b0000", "#9467bd"};

static void mark_shape(baton_buf *b, int kind, double x, double y, const char *title)
{
    const char *c = mark_colour[kind & 3];
    switch (kind & 3) {
    case 0: baton_svg_put(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\">", x, y - 9, x, y + 9, c);
        break;
    case 1: baton_svg_put(b, "<path d=\"M%.1f %.1f l-5 -9 h10 z\" fill=\"%s\">", x, y - 2, c); break;
    case 2: baton_svg_put(b, "<path d=\"M%.1f %.1f l8 8 m0 -8 l-8 8\" stroke=\"%s\" stroke-width=\"2.5\">", x - 4, y - 4, c); break;
    default: baton_svg_put(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\">", x, y, c); break;
    }
    if (title) {
        baton_svg_put(b, "<title>");
        baton_svg_esc(b, title);
        baton_svg_put(b, "</title>");
    }
    baton_svg_put(b, (kind & 3) == 0 ? "</line>\n" : (kind & 3) == 3 ? "</circle>\n" : "</path>\n");
}

int baton_svg_timeline(const char *path, const char *title, const char *xlabel, const baton_svg_row *rows,
                       size_t nrows, const char *const *span_names, size_t nstyles, const baton_svg_mark *marks,
                       size_t nmarks, const char *const mark_names[4], baton_err *err)
{
    /* the left margin holds the longest row label; the legend wraps onto as many lines as it needs */
    double label = 0;
    for (size_t i = 0; i < nrows; i++)
        if (util_svg_text_width(rows[i].label, 12, 0) > label) label = util_svg_text_width(rows[i].label, 12, 0);
    const double L = 24 + label, R = 30, T = 46, rowh = 24;
    double W = L + 760 + R;
    if (util_svg_text_width(title, 15, 1) + 24 > W) W = util_svg_text_width(title, 15, 1) + 24;
    double legend_w = 0;   /* the legend's items on one line, to count its lines */
    for (size_t s = 0; s < nstyles; s++) legend_w += 30 + util_svg_text_width(span_names[s], 12, 0);
    for (int m = 0; m < 4 && mark_names; m++)
        if (mark_names[m]) legend_w += 30 + util_svg_text_width(mark_names[m], 12, 0);
    const double legend_lines = ceil(legend_w / (W - L - R) + 1e-9);
    double H = T + rowh * (double)(nrows ? nrows : 1) + 70 + 22 * (legend_lines > 1 ? legend_lines : 1);
    double xmax = 0;
    for (size_t i = 0; i < nrows; i++)
        for (size_t k = 0; k < rows[i].nspans; k++)
            if (isfinite(rows[i].spans[k].t1) && rows[i].spans[k].t1 > xmax) xmax = rows[i].spans[k].t1;
    for (size_t k = 0; k < nmarks; k++)
        if (isfinite(marks[k].t) && marks[k].t > xmax) xmax = marks[k].t;
    double xs = svg_nice_step(xmax, 8);
    xmax = xs * ceil(xmax / xs + 1e-9);
    if (xmax <= 0) xmax = 1;
    double pw = W - L - R, ph = rowh * (double)(nrows ? nrows : 1);
    baton_buf b = {0};
    baton_svg_put(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
    baton_svg_put(&b, "<text x=\"12\" y=\"24\" font-size=\"15\" font-weight=\"bold\">");
    baton_svg_esc(&b, title);
    baton_svg_put(&b, "</text>\n");
    /* ticks by count (an absolute epsilon would make ~1e211 ticks of an axis 1e-220 long) */
    const double nticks = floor(xmax / xs * (1 + 1e-9));
    for (int k = 0; k <= nticks && k <= 64; k++) {
        const double v = k * xs, x = L + v / xmax * pw;
        baton_svg_put(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, T, x, T + ph, x, T + ph + 16, v);
    }
    for (size_t i = 0; i < nrows; i++) {
        double y = T + rowh * (double)i;
        baton_svg_put(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", L - 8, y + rowh / 2 + 4);
        baton_svg_esc(&b, rows[i].label);
        baton_svg_put(&b, "</text>\n");
        for (size_t k = 0; k < rows[i].nspans; k++) {
            const baton_svg_span *sp = &rows[i].spans[k];
            if (!(sp->t1 >= sp->t0)) continue;
            double x0 = L + sp->t0 / xmax * pw, x1 = L + sp->t1 / xmax * pw;
            if (x1 - x0 < 1) x1 = x0 + 1;
            baton_svg_put(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x0, y + 4, x1 - x0,
                rowh - 8, span_palette[(size_t)sp->style % (sizeof span_palette / sizeof *span_palette)]);
        }
    }
    for (size_t k = 0; k < nmarks; k++) {
        if (marks[k].row >= nrows || !isfinite(marks[k].t)) continue;
        mark_shape(&b, marks[k].kind, L + marks[k].t / xmax * pw, T + rowh * (double)marks[k].row + rowh / 2,
                   marks[k].title);
    }
    baton_svg_put(&b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#333\"/>\n", L, T, pw, ph);
    baton_svg_put(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", L + pw / 2, T + ph + 34);
    baton_svg_esc(&b, xlabel);
    baton_svg_put(&b, "</text>\n");
    double lx = L, ly = T + ph + 60;
    for (size_t s = 0; s < nstyles; s++) {
        double w = 30 + util_svg_text_width(span_names[s], 12, 0);
        if (lx > L && lx + w > W - R) lx = L, ly += 22;   /* wrap */
        baton_svg_put(&b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"10\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">", lx,
            ly - 9, span_palette[s % (sizeof span_palette / sizeof *span_palette)], lx + 18, ly);
        baton_svg_esc(&b, span_names[s]);
        baton_svg_put(&b, "</text>\n");
        lx += w;
    }
    for (int m = 0; m < 4 && mark_names; m++) {
        if (!mark_names[m]) continue;
        double w = 30 + util_svg_text_width(mark_names[m], 12, 0);
        if (lx > L && lx + w > W - R) lx = L, ly += 22;
        mark_shape(&b, m, lx + 6, ly - 4, NULL);
        baton_svg_put(&b, "<text x=\"%.0f\" y=\"%.0f\">", lx + 16, ly);
        baton_svg_esc(&b, mark_names[m]);
        baton_svg_put(&b, "</text>\n");
        lx += w;
    }
    baton_svg_put(&b, "</svg>\n");
    int rc = b.data ? baton_file_write_atomic(path, b.data, b.len, err) : baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    baton_buf_free(&b);
    return rc;
}
