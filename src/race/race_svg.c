/* race_svg.c — SVG pictures of a track: the surface between the borders, white borders, the dashed
 * centre line, the start line with an arrow for the direction of travel, a 1 m scale bar, and any
 * lines drawn over it (a driven path, the racing line), a line with speeds coloured from blue
 * (slow) to red (fast) with a colour bar. World y points up; the picture is flipped to match.
 * Written crash-safely (baton_file_write_atomic). */
#include "race_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct view {
    double x0, y1, sc, left, top;
} view;

static double vx(const view *v, double x)
{
    return v->left + (x - v->x0) * v->sc;
}

static double vy(const view *v, double y)
{
    return v->top + (v->y1 - y) * v->sc;
}

static void polyline(baton_buf *b, const view *v, const double *p, size_t n, const char *style)
{
    baton_svg_put(b, "<polyline fill=\"none\" %s points=\"", style);
    for (size_t k = 0; k < n; k++) baton_svg_put(b, "%.1f,%.1f ", vx(v, p[2 * k]), vy(v, p[2 * k + 1]));
    baton_svg_put(b, "\"/>\n");
}

/* Blue (0) through green to red (1). */
static void speed_colour(double f, char *out, size_t cap)
{
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    int r = (int)(255 * fmin(1, 2 * f)), g = (int)(200 * (1 - fabs(2 * f - 1))), bl = (int)(255 * fmin(1, 2 - 2 * f));
    snprintf(out, cap, "#%02x%02x%02x", f < 0.5 ? (int)(r * 0.3) : r, g, f > 0.5 ? (int)(bl * 0.3) : bl);
}

/* plain lines: colours the speed scale (blue, green, yellow, orange, red) never takes, magenta first */
static const char *palette[] = {"#ff00ff", "#00e5ff", "#ffffff", "#000000", "#8b4513"};

static void draw_track(baton_buf *b, const view *v, const race_geom *g)
{
    /* the surface: outer ring then inner ring, even-odd (an open track: one ring around both) */
    baton_svg_put(b, "<path fill=\"#4a4a4a\" fill-rule=\"evenodd\" d=\"");
    if (g->loop) {
        const double *rings[2] = {g->out, g->in};
        for (int r = 0; r < 2; r++) {
            for (size_t k = 0; k < g->n; k++)
                baton_svg_put(b, "%s%.1f,%.1f ", k ? "L" : "M", vx(v, rings[r][2 * k]), vy(v, rings[r][2 * k + 1]));
            baton_svg_put(b, "Z ");
        }
    } else {
        for (size_t k = 0; k < g->n; k++)
            baton_svg_put(b, "%s%.1f,%.1f ", k ? "L" : "M", vx(v, g->out[2 * k]), vy(v, g->out[2 * k + 1]));
        for (size_t k = g->n; k-- > 0;) baton_svg_put(b, "L%.1f,%.1f ", vx(v, g->in[2 * k]), vy(v, g->in[2 * k + 1]));
        baton_svg_put(b, "Z");
    }
    baton_svg_put(b, "\"/>\n");
    polyline(b, v, g->in, g->n, "stroke=\"white\" stroke-width=\"2\"");
    polyline(b, v, g->out, g->n, "stroke=\"white\" stroke-width=\"2\"");
    polyline(b, v, g->c, g->n, "stroke=\"#e8c000\" stroke-width=\"1.2\" stroke-dasharray=\"6 6\"");
    /* start line across the first rung, an arrow along the direction of travel */
    baton_svg_put(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e00000\" stroke-width=\"5\"/>\n",
                 vx(v, g->in[0]), vy(v, g->in[1]), vx(v, g->out[0]), vy(v, g->out[1]));
    double yaw, x, y;
    race_geom_pose(g, 0, &x, &y, &yaw);
    double ax = vx(v, x), ay = vy(v, y), dx = cos(yaw), dy = -sin(yaw), L = 26, W = 8;
    double off = hypot(g->out[0] - g->in[0], g->out[1] - g->in[1]) * v->sc / 2 + 16;
    double nx = -dy, ny = dx;   /* put the arrow beside the track, on the outer side */
    double ox = vx(v, g->out[0]) - ax, oy = vy(v, g->out[1]) - ay;
    if (nx * ox + ny * oy < 0) nx = -nx, ny = -ny;
    double bx = ax + nx * off, by = ay + ny * off;
    baton_svg_put(b, "<path fill=\"#e00000\" d=\"M%.1f,%.1f L%.1f,%.1f L%.1f,%.1f Z\"/>\n", bx + dx * W * 1.6,
                 by + dy * W * 1.6, bx + nx * W, by + ny * W, bx - nx * W, by - ny * W);
    baton_svg_put(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e00000\" stroke-width=\"3\"/>\n",
                 bx - dx * L, by - dy * L, bx, by);
    baton_svg_put(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" fill=\"#900\" text-anchor=\"middle\">start</text>\n",
                 bx + nx * 20 - dx * L * 0.5, by + ny * 20 - dy * L * 0.5 + 4);
}

void baton_race_svg_buf(baton_buf *out, const baton_race_track *t, const char *title, const baton_race_svg_line *lines,
                        size_t nlines)
{
    const baton_race_track_info *in = &t->info;
    double pad = 0.6, wx = in->xmax - in->xmin + 2 * pad, wy = in->ymax - in->ymin + 2 * pad;
    double sc = 900 / wx;
    if (wy * sc > 700) sc = 700 / wy;
    int have_v = 0;
    double vmin = INFINITY, vmax = -INFINITY;
    for (size_t i = 0; i < nlines; i++)
        if (lines[i].v)
            for (size_t k = 0; k < lines[i].n; k++) {
                have_v = 1;
                vmin = fmin(vmin, lines[i].v[k]);
                vmax = fmax(vmax, lines[i].v[k]);
            }
    double legend_h = 30 + 20.0 * (double)nlines + (have_v ? 40 : 0);
    double W = wx * sc + 40, H = wy * sc + 50 + legend_h;
    if (W < 520) W = 520;
    view v = {in->xmin - pad, in->ymax + pad, sc, 20, 45};
    baton_buf b = *out;
    /* the world-to-picture map on the root, for a page that draws over it: px = left + (x - x0) * scale,
     * py = top + (y1 - y) * scale */
    baton_svg_put(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                 "font-size=\"13\" data-x0=\"%.6f\" data-y1=\"%.6f\" data-scale=\"%.6f\" data-left=\"%.1f\" data-top=\"%.1f\">\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, v.x0, v.y1, v.sc, v.left, v.top);
    baton_svg_put(&b, "<rect x=\"20\" y=\"45\" width=\"%.1f\" height=\"%.1f\" fill=\"#b9d3a8\"/>\n", wx * sc, wy * sc);
    baton_svg_put(&b, "<text x=\"20\" y=\"28\" font-size=\"16\" font-weight=\"bold\">");
    baton_svg_esc(&b, title);
    baton_svg_put(&b, "</text>\n");
    draw_track(&b, &v, &t->fwd);
    for (size_t i = 0; i < nlines; i++) {
        const baton_race_svg_line *l = &lines[i];
        if (l->n < 2) continue;
        if (l->v && vmax > vmin) {
            for (size_t k = 0; k + 1 < l->n + (l->closed ? 1 : 0); k++) {
                size_t nx = (k + 1) % l->n;
                char col[16];
                speed_colour((0.5 * (l->v[k] + l->v[nx]) - vmin) / (vmax - vmin), col, sizeof col);
                baton_svg_put(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\" "
                             "stroke-linecap=\"round\"/>\n", vx(&v, l->x[k]), vy(&v, l->y[k]), vx(&v, l->x[nx]),
                             vy(&v, l->y[nx]), col);
            }
        } else {
            baton_svg_put(&b, "<%s fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" points=\"", l->closed ? "polygon" : "polyline",
                         palette[i % 5]);
            for (size_t k = 0; k < l->n; k++) baton_svg_put(&b, "%.1f,%.1f ", vx(&v, l->x[k]), vy(&v, l->y[k]));
            baton_svg_put(&b, "\"/>\n");
        }
    }
    double ly = 45 + wy * sc + 24;
    baton_svg_put(&b, "<line x1=\"20\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-width=\"3\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\">1 m</text>\n", ly, 20 + sc, ly, 28 + sc, ly + 4);
    baton_svg_put(&b, "<text x=\"%.1f\" y=\"%.1f\">%s track, %.2f m, %.2f m wide</text>\n", 90 + sc, ly + 4,
                 in->loop ? "loop" : "open", in->length_m, in->width_m);
    for (size_t i = 0; i < nlines; i++) {
        double y = ly + 22 + 20.0 * (double)i;
        baton_svg_put(&b, "<line x1=\"20\" y1=\"%.1f\" x2=\"50\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/><text x=\"58\" "
                     "y=\"%.1f\">", y, y, lines[i].v && vmax > vmin ? "#888" : palette[i % 5], y + 4);
        baton_svg_esc(&b, lines[i].name);
        baton_svg_put(&b, "%s</text>\n", lines[i].v && vmax > vmin ? " (coloured by speed)" : "");
    }
    if (have_v && vmax > vmin) {
        double y = ly + 22 + 20.0 * (double)nlines;
        baton_svg_put(&b, "<text x=\"20\" y=\"%.1f\">%.2f m/s</text>\n", y + 14, vmin);
        for (int k = 0; k < 40; k++) {
            char col[16];
            speed_colour(k / 39.0, col, sizeof col);
            baton_svg_put(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"6\" height=\"12\" fill=\"%s\"/>\n", 95 + 6.0 * k, y + 3, col);
        }
        baton_svg_put(&b, "<text x=\"345\" y=\"%.1f\">%.2f m/s</text>\n", y + 14, vmax);
    }
    baton_svg_put(&b, "</svg>\n");
    *out = b;
}

int baton_race_svg(const char *path, const baton_race_track *t, const char *title, const baton_race_svg_line *lines,
                   size_t nlines, baton_err *err)
{
    baton_buf b = {0};
    baton_race_svg_buf(&b, t, title, lines, nlines);
    int rc = b.data ? baton_file_write_atomic(path, b.data, b.len, err)
                    : baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    baton_buf_free(&b);
    return rc;
}
