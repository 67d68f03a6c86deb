/* azure.c — Azure's Scheduled Events as the watcher reads them and the emulator writes them: the
 * HTTP date of NotBefore ("Mon, 19 Sep 2016 18:29:47 GMT", RFC 7231's IMF-fixdate) and the parser of
 * a GET /metadata/scheduledevents answer.
 *
 * The answer is {"DocumentIncarnation": N, "Events": [{"EventId", "EventType", "ResourceType",
 * "Resources": [names], "EventStatus", "NotBefore", "Description", "EventSource",
 * "DurationInSeconds"}]}. An event is a notice for this machine when EventType is Preempt (a Spot
 * eviction, at least 30 s ahead) or Terminate (the machine is being deleted), ResourceType is
 * VirtualMachine, EventStatus is Scheduled or Started, and Resources names this machine (when its
 * name is known: the answer lists the events of every machine of an availability set or scale-set
 * placement group, and another machine's eviction is not ours). Its deadline is NotBefore; a Started
 * event whose NotBefore is empty is under way now (deadline = now). Reboot, Redeploy and Freeze
 * keep the machine and its disk, so they are not notices.
 *
 * Contract as for EC2's answers (notice.c): strict parsing, a time that does not parse or lies more
 * than an hour from now makes the event garbage, and garbage is never a notice. */
#include "notice_internal.h"

#include <cJSON.h>
#include <math.h>
#include <string.h>
#include <time.h>

#define AZURE_SKEW_S 3600.0

static const char *const wdays[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

static int num(const char *p, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        x = x * 10 + (p[i] - '0');
    }
    *v = x;
    return 0;
}

int notice_http_time_parse(const char *s, double *t)
{
    /* "Mon, 19 Sep 2016 18:29:47 GMT": exactly 29 characters */
    if (!s || strlen(s) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
        s[19] != ':' || s[22] != ':' || s[25] != ' ' || strcmp(s + 26, "GMT"))
        return -1;
    int wd = -1, mon = -1, D, Y, h, m, sec;
    for (int i = 0; i < 7; i++)
        if (!strncmp(s, wdays[i], 3)) wd = i;
    for (int i = 0; i < 12; i++)
        if (!strncmp(s + 8, months[i], 3)) mon = i;
    if (wd < 0 || mon < 0 || num(s + 5, 2, &D) || num(s + 12, 4, &Y) || num(s + 17, 2, &h) || num(s + 20, 2, &m) ||
        num(s + 23, 2, &sec))
        return -1;
    if (Y < 1970 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = Y - 1900;
    tm.tm_mon = mon;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    time_t u = timegm(&tm);
    struct tm back;
    /* a date that does not exist (31 Apr), or a weekday that is not the date's, is not a date */
    if (u == (time_t)-1 || !gmtime_r(&u, &back) || back.tm_mday != D || back.tm_mon != mon || back.tm_wday != wd)
        return -1;
    *t = (double)(u + sec);
    return 0;
}

void notice_http_time_format(double t, char out[32])
{
    time_t u = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&u, &tm)) {
        snprintf(out, 32, "Thu, 01 Jan 1970 00:00:00 GMT");
        return;
    }
    snprintf(out, 32, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int str_is(const cJSON *j, const char *key, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsString(v) && !strcmp(v->valuestring, want);
}

/* Resources names vm (or vm is unknown and the list is not empty). */
static int names_vm(const cJSON *ev, const char *vm)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(ev, "Resources"), *x;
    if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) < 1) return 0;
    cJSON_ArrayForEach(x, r) {
        if (!cJSON_IsString(x)) return 0;
        if (!vm || !*vm || !strcmp(x->valuestring, vm)) return 1;
    }
    return 0;
}

int notice_parse_azure(const char *body, size_t len, const char *vm, double now, baton_notice_kind *kind,
                             double *deadline, char *event_id, size_t id_cap)
{
    *kind = BATON_NOTICE_NONE;
    for (size_t i = 0; i < len; i++)   /* no escapes: a "\u0000" would cut a name short */
        if (body[i] == '\\' || ((unsigned char)body[i] < 0x20 && !strchr(" \t\r\n", body[i]))) return 0;
    cJSON *j = baton_jr_value(body, len);
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(j, "Events"), *ev;
    const cJSON *inc = cJSON_GetObjectItemCaseSensitive(j, "DocumentIncarnation");
    if (!cJSON_IsObject(j) || !cJSON_IsArray(evs) || !cJSON_IsNumber(inc)) {
        cJSON_Delete(j);
        return 0;
    }
    cJSON_ArrayForEach(ev, evs) {
        const cJSON *nb = cJSON_GetObjectItemCaseSensitive(ev, "NotBefore");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(ev, "EventId");
        baton_notice_kind k = str_is(ev, "EventType", "Preempt")     ? BATON_NOTICE_PREEMPTED
                              : str_is(ev, "EventType", "Terminate") ? BATON_NOTICE_TERMINATE
                                                                     : BATON_NOTICE_NONE;
        int started = str_is(ev, "EventStatus", "Started");
        if (k == BATON_NOTICE_NONE || !cJSON_IsObject(ev) || !str_is(ev, "ResourceType", "VirtualMachine") ||
            !(started || str_is(ev, "EventStatus", "Scheduled")) || !names_vm(ev, vm) || !cJSON_IsString(nb) ||
            !cJSON_IsString(id) || !id->valuestring[0])
            continue;
        double when;
        if (!nb->valuestring[0] && started) when = now;   /* under way: no time left */
        else if (notice_http_time_parse(nb->valuestring, &when) || fabs(when - now) > AZURE_SKEW_S) continue;
        *kind = k;
        *deadline = when;
        if (event_id && id_cap) snprintf(event_id, id_cap, "%s", id->valuestring);
        break;
    }
    cJSON_Delete(j);
    return *kind != BATON_NOTICE_NONE;
}
