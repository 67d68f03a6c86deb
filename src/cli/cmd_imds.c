/* cmd_imds.c — `baton imds`: a local EC2 instance-metadata service (notice.h's emulator) for tests,
 * demos and wrapping trainers: EC2's paths, IMDSv2 tokens, interruption notices after N seconds, at
 * a time, or on demand (PUT /baton/interrupt?action=terminate&notice=120, PUT /baton/rebalance).
 * Prints the bound URL as the first line of stdout (port 0 = an ephemeral port), then serves until
 * SIGINT or SIGTERM. */
#include "baton/notice.h"
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

int cmd_imds(int argc, char **argv)
{
    baton_imds_opts o;
    baton_imds_opts_default(&o);
    const char *at = NULL;
    int v2 = 0, slide = 0, garbage = 0, remote = 0, token_status = 0;
    const struct cli_opt opts[] = {
        {"listen", CLI_STR, &o.listen, "HOST:PORT (default 127.0.0.1:0: an ephemeral port)"},
        {"interrupt-after", CLI_DBL, &o.interrupt_after, "schedule an interruption notice SEC seconds after start"},
        {"interrupt-at", CLI_STR, &at, "schedule it at an ISO 8601 time (e.g. 2030-01-01T00:00:00Z)"},
        {"action", CLI_STR, &o.action, "terminate (default) | stop | hibernate"},
        {"notice", CLI_DBL, &o.notice_seconds, "notice lead time in seconds: time = notice + this (default 120)"},
        {"imdsv2-only", CLI_FLAG, &v2, "401 on GETs without a valid IMDSv2 token"},
        {"slide", CLI_FLAG, &slide, "the notice time slides to now + notice on every request"},
        {"rebalance-after", CLI_DBL, &o.rebalance_after, "a rebalance recommendation SEC seconds after start"},
        {"instance-id", CLI_STR, &o.instance_id, "instance-id (default i-0b22a22eec53b9321)"},
        {"instance-type", CLI_STR, &o.instance_type, "instance-type (default m5.large)"},
        {"zone", CLI_STR, &o.zone, "placement/availability-zone (default us-east-1a)"},
        {"garbage", CLI_FLAG, &garbage, "answer 200 with junk on every metadata path (for tests)"},
        {"token-status", CLI_INT, &token_status, "answer the token PUT with this HTTP status (403/404: IMDSv1 only)"},
        {"allow-remote", CLI_FLAG, &remote, "allow a non-loopback --listen address"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("imds",
                  "--listen HOST:PORT [--interrupt-after SEC | --interrupt-at ISO8601] [--action terminate|stop|hibernate] "
                  "[--notice SEC] [--imdsv2-only] [--slide] [--rebalance-after SEC] [--instance-id ID] "
                  "[--instance-type T] [--zone Z] [--garbage] [--token-status CODE] [--allow-remote]",
                  opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    const char *bad = cli_given(argc, argv, "interrupt-after") && !(o.interrupt_after >= 0 && o.interrupt_after <= 86400 * 366)
                          ? "--interrupt-after must be 0..31622400 seconds"
                    : cli_given(argc, argv, "rebalance-after") && !(o.rebalance_after >= 0 && o.rebalance_after <= 86400 * 366)
                          ? "--rebalance-after must be 0..31622400 seconds"
                    : at && cli_given(argc, argv, "interrupt-after") ? "give --interrupt-after or --interrupt-at, not both"
                    : NULL;
    if (bad) {
        fprintf(stderr, "baton imds: %s\n", bad);
        return CLI_USAGE;
    }
    if (at && baton_notice_time_parse(at, &o.interrupt_at)) {
        fprintf(stderr, "baton imds: --interrupt-at '%s': expected an ISO 8601 time such as 2030-01-01T00:00:00Z\n", at);
        return CLI_USAGE;
    }
    o.v2_only = v2;
    o.slide = slide;
    o.garbage = garbage;
    o.allow_remote = remote;
    o.token_status = token_status;

    /* the signals are taken by sigwait below: block them before the server's thread starts */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    baton_imds *m = NULL;
    baton_err err = {0};
    if (baton_imds_start(&o, &m, &err)) return cli_fail("imds", &err);
    printf("%s\n", baton_imds_url(m));
    fflush(stdout);
    char t[32];
    if (o.interrupt_at > 0) {
        baton_notice_time_format(o.interrupt_at, t);
        baton_log(BATON_LOG_INFO, "imds: %s notice scheduled at %s", o.action, t);
    } else if (o.interrupt_after >= 0) {
        baton_log(BATON_LOG_INFO, "imds: %s notice scheduled in %g s", o.action, o.interrupt_after);
    }
    int sig = 0;
    sigwait(&set, &sig);
    baton_log(BATON_LOG_INFO, "imds: %llu requests served", (unsigned long long)baton_imds_requests(m));
    baton_imds_stop(m);
    return CLI_OK;
}
