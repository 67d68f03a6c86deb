/* cmd_notice.c — `baton notice wait`: block until an interruption notice (EC2 metadata, GCE
 * metadata or SIGTERM, as notice.h's watcher sees them) and print it, so a trainer in any language
 * can be wrapped: `baton notice wait && kill -USR1 $trainer`. Exit 0 on a notice, 1 on a timeout or
 * an error. --json prints one object: action, deadline (ISO 8601 or null), deadline_unix,
 * seconds_left, seen_at, source. */
#include "baton/notice.h"
#include "cli.h"

#include <cJSON.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void print_event(const baton_notice_event *ev, int json)
{
    char dl[32] = "", seen[32];
    if (ev->deadline > 0) baton_notice_time_format(ev->deadline, dl);
    baton_notice_time_format(ev->seen_at, seen);
    double left = ev->deadline > 0 ? ev->deadline - baton_wall_now() : 0;
    const char *action = baton_notice_kind_name(ev->kind);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "action", action);
        if (ev->deadline > 0) {
            cJSON_AddStringToObject(j, "deadline", dl);
            cJSON_AddNumberToObject(j, "deadline_unix", round(ev->deadline * 1e3) / 1e3);   /* ms, 0.1 s: */
            cJSON_AddNumberToObject(j, "seconds_left", round(left * 10) / 10);            /* what is known */
        } else {
            cJSON_AddNullToObject(j, "deadline");
            cJSON_AddNullToObject(j, "deadline_unix");
            cJSON_AddNullToObject(j, "seconds_left");
        }
        cJSON_AddStringToObject(j, "seen_at", seen);
        cJSON_AddStringToObject(j, "source", ev->source);
        cli_print_json(stdout, j);
    } else if (ev->deadline > 0) {
        printf("%s deadline %s (in %.0f s) source %s\n", action, dl, left, ev->source);
    } else {
        printf("%s deadline unknown source %s\n", action, ev->source);
    }
    fflush(stdout);
}

/* Why no metadata service is polled, in the words of the variables that decide it. */
static const char *no_service_why(const baton_notice_opts *o)
{
    return o->ec2_disabled ? "AWS_EC2_METADATA_DISABLED=true and no AWS_EC2_METADATA_SERVICE_ENDPOINT set"
                           : "not an EC2, GCE or Azure machine, and no AWS_EC2_METADATA_SERVICE_ENDPOINT set";
}

int cmd_notice(int argc, char **argv)
{
    baton_notice_opts o;
    baton_notice_opts_default(&o);
    double timeout = -1, poll = 0;
    int json = 0, rebalance = 0, no_sigterm = 0;
    const struct cli_opt opts[] = {
        {"json", CLI_FLAG, &json, "one JSON object"},
        {"timeout", CLI_DBL, &timeout, "give up after SEC seconds (exit 1); default: wait forever"},
        {"rebalance", CLI_FLAG, &rebalance, "also return on a rebalance recommendation"},
        {"endpoint", CLI_STR, &o.endpoint, "EC2 metadata URL (else AWS_EC2_METADATA_SERVICE_ENDPOINT)"},
        {"gce-endpoint", CLI_STR, &o.gce_endpoint, "GCE metadata URL (else BATON_GCE_METADATA_ENDPOINT)"},
        {"azure-endpoint", CLI_STR, &o.azure_endpoint, "Azure metadata URL (else BATON_AZURE_METADATA_ENDPOINT)"},
        {"poll", CLI_DBL, &poll, "seconds between polls (else BATON_NOTICE_POLL_S, default 5)"},
        {"no-sigterm", CLI_FLAG, &no_sigterm, "do not treat SIGTERM as a notice"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("notice", "wait [--json] [--timeout SEC] [--rebalance] [--endpoint URL] [--poll SEC]", opts, argc,
                  argv, pos, 1, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos != 1 || strcmp(pos[0], "wait")) {
        fprintf(stderr, "baton notice: expected 'wait'\n");
        return CLI_USAGE;
    }
    if (!(poll >= 0 && poll <= 3600) || (cli_given(argc, argv, "timeout") && !(timeout >= 0 && isfinite(timeout)))) {
        fprintf(stderr, "baton notice: --poll must be 0..3600 and --timeout a number of seconds >= 0 "
                        "(leave --timeout out to wait without a limit)\n");
        return CLI_USAGE;
    }
    if (poll > 0) o.poll_s = poll;
    o.handle_sigterm = !no_sigterm;
    baton_notice_watcher *w = NULL;
    baton_err err = {0};
    if (baton_notice_start(&o, &w, &err)) {
        if (err.code == BATON_ERR_ARG) err.code = BATON_ERR_USAGE;   /* a bad --endpoint */
        return cli_fail("notice", &err);
    }
    int what = baton_notice_watching(w);
    if (!(what & (BATON_NOTICE_WATCH_EC2 | BATON_NOTICE_WATCH_GCE))) {
        if (!(what & BATON_NOTICE_WATCH_SIGTERM)) {
            baton_notice_stop(w);
            fprintf(stderr, "baton notice: nothing to wait for: no metadata service (%s) and SIGTERM ignored\n",
                    no_service_why(&o));
            return CLI_ERROR;
        }
        baton_log(BATON_LOG_WARN, "no metadata service to poll (%s); waiting for SIGTERM only", no_service_why(&o));
    }
    baton_notice_event ev;
    int got = baton_notice_wait_any(w, timeout, rebalance, &ev);
    baton_notice_stop(w);
    if (!got) {
        fprintf(stderr, "baton notice: no notice within %g s\n", timeout);
        return CLI_ERROR;
    }
    print_event(&ev, json);
    return CLI_OK;
}
