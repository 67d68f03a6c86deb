/* fuzz_notice.c — libFuzzer target: metadata answers as the notice watcher reads them (EC2
 * instance-action and rebalance bodies, ISO 8601 times). A time that parses must format and parse
 * back to the same whole second; a notice must carry a known kind. */
#include "../../src/notice/notice_internal.h"
#include "baton/notice.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_notice_kind k;
    double t = 0;
    if (notice_parse_action((const char *)data, size, &k, &t) &&
        k != BATON_NOTICE_TERMINATE && k != BATON_NOTICE_STOP && k != BATON_NOTICE_HIBERNATE)
        abort();
    char raw[64];
    if (notice_parse_rebalance((const char *)data, size, &t, raw, sizeof raw) &&
        strlen(raw) >= sizeof raw)
        abort();
    char s[80];
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = 0;
    if (baton_notice_time_parse(s, &t) == 0 && t >= 0) {
        char f[32];
        double back;
        baton_notice_time_format(t, f);
        if (baton_notice_time_parse(f, &back) != 0 || back != (double)(long long)t) abort();
    }
    return 0;
}
