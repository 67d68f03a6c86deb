/* log.c — logging to stderr and the terminal progress line.
 * Level comes from BATON_LOG (error|warn|info|debug; default info). The progress line is drawn
 * only when stderr is a terminal, at most ten times a second, and erased before a log line; when
 * stderr is not a terminal, a caller may ask for a plain line every few seconds instead. */
#include "baton/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_level = -1;
static baton_progress *active;

double baton_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void baton_log_set_level(int level) { log_level = level; }

static int current_level(void)
{
    if (log_level < 0) {
        const char *e = getenv("BATON_LOG");
        log_level = BATON_LOG_INFO;
        if (e) {
            if (!strcmp(e, "error")) log_level = BATON_LOG_ERROR;
            else if (!strcmp(e, "warn")) log_level = BATON_LOG_WARN;
            else if (!strcmp(e, "debug")) log_level = BATON_LOG_DEBUG;
        }
    }
    return log_level;
}

void baton_log(int level, const char *fmt, ...)
{
    if (level > current_level()) return;
    static const char *names[] = {"error", "warning", "info", "debug"};
    if (active && active->drawn) fputs("\r\033[K", stderr);
    fprintf(stderr, "baton: %s: ", names[level]);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (active) active->last_draw = 0;  /* redraw on next update */
}

static void draw(baton_progress *p, int final)
{
    double now = baton_now(), el = now - p->start;
    char line[256];
    if (p->total) {
        double f = (double)p->done / (double)p->total;
        int w = 24, fill = (int)(f * w);
        char bar[32];
        for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
        bar[w] = 0;
        double eta = f > 0 ? el * (1 - f) / f : 0;
        int k = snprintf(line, sizeof line, "%s [%s] %5.1f%% %llu/%llu %.1fs", p->label, bar,
                         100 * f, (unsigned long long)p->done, (unsigned long long)p->total, el);
        if (!final && k > 0 && (size_t)k < sizeof line)
            snprintf(line + k, sizeof line - (size_t)k, " eta %.0fs", eta);
    } else {
        snprintf(line, sizeof line, "%s %llu %.1fs", p->label, (unsigned long long)p->done, el);
    }
    fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
    fflush(stderr);
    p->drawn = !final;
    p->last_draw = now;
}

void baton_progress_start(baton_progress *p, const char *label, uint64_t total)
{
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->start = baton_now();
    p->tty = isatty(2) && !getenv("BATON_NO_PROGRESS");
    if (p->tty) active = p;
}

void baton_progress_plain_every(baton_progress *p, const char *label, uint64_t total, double every_s)
{
    if (p->tty || every_s <= 0 || isatty(2)) return;
    if (!p->start) {
        memset(p, 0, sizeof *p);
        p->label = label;
        p->total = total;
        p->start = baton_now();
    }
    p->every = every_s;
    p->last_plain = baton_now();
}

static void plain(baton_progress *p, double now)
{
    double el = now - p->start;
    if (p->total) {
        double f = (double)p->done / (double)p->total;
        fprintf(stderr, "%s %.1f%% %llu/%llu %.1fs eta %.0fs\n", p->label, 100 * f, (unsigned long long)p->done,
                (unsigned long long)p->total, el, f > 0 ? el * (1 - f) / f : 0.0);
    } else {
        fprintf(stderr, "%s %llu %.1fs\n", p->label, (unsigned long long)p->done, el);
    }
    fflush(stderr);
    p->last_plain = now;
}

void baton_progress_update(baton_progress *p, uint64_t done)
{
    p->done = done;
    if (!p->tty) {
        if (p->every > 0) {
            double now = baton_now();
            if (now - p->last_plain >= p->every) plain(p, now);
        }
        return;
    }
    if (baton_now() - p->last_draw < 0.1) return;
    draw(p, 0);
}

void baton_progress_finish(baton_progress *p)
{
    if (p->tty) draw(p, 1);
    if (active == p) active = NULL;
}
