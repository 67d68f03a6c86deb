/* spottime.c — the ISO 8601 times that metadata services write ("2017-09-18T08:22:00Z") and the
 * wall clock they are compared with.
 *
 * Contract: parsing is strict (every field in range, the whole string consumed, a zone required:
 * "Z" or an offset), because a time that does not parse is garbage and garbage is never a notice. */
#include "baton/notice.h"

#include <string.h>
#include <time.h>

double baton_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n decimal digits at *p into *v; advances *p. */
static int digits(const char **p, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') return -1;
        x = x * 10 + (c - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

int baton_notice_time_parse(const char *s, double *t)
{
    if (!s) return -1;
    const char *p = s;
    int Y, M, D, h, m, sec;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' || digits(&p, 2, &D)) return -1;
    if (*p != 'T' && *p != 't' && *p != ' ') return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' || digits(&p, 2, &sec)) return -1;
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (Y < 1970 || M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || m > 59 || sec > 60) return -1;
    double frac = 0;
    if (*p == '.') {
        p++;
        double scale = 0.1;
        int nd = 0;
        while (*p >= '0' && *p <= '9') {
            if (nd < 9) frac += (*p - '0') * scale;
            scale *= 0.1;
            p++;
            nd++;
        }
        if (!nd) return -1;
    }
    int off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh)) return -1;
        if (*p == ':') p++;
        if (digits(&p, 2, &om) || oh > 23 || om > 59) return -1;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p) return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    time_t u = timegm(&tm);   /* seconds added after the check: 23:59:60 is a leap second */
    if (u == (time_t)-1) return -1;
    /* timegm normalises 31 April into 1 May: reject dates that do not exist */
    struct tm back;
    if (!gmtime_r(&u, &back) || back.tm_mday != D || back.tm_mon != M - 1) return -1;
    u += sec;
    *t = (double)u - off + frac;
    return 0;
}

void baton_notice_time_format(double t, char out[32])
{
    time_t u = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&u, &tm)) {
        snprintf(out, 32, "1970-01-01T00:00:00Z");
        return;
    }
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
