/* fuzz_latencies.c — libFuzzer target: `baton plan infer --latencies FILE`'s CSV
 * (baton_latencies_parse). Rows that parse have a configuration name, a positive mean and batch;
 * a refusal is an error value with a message; nothing may crash, leak or overflow. */
#include "baton/infer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_latency_row *rows = NULL;
    size_t n = 0;
    baton_err err = {0};
    int rc = baton_latencies_parse("fuzz.csv", (const char *)data, size, &rows, &n, &err);
    if (rc == BATON_OK) {
        for (size_t i = 0; i < n; i++) {
            const baton_latency_row *r = &rows[i];
            if (!r->config[0] || !memchr(r->config, 0, sizeof r->config) || !memchr(r->label, 0, sizeof r->label))
                abort();
            if (!(r->mean_ms > 0) || !isfinite(r->mean_ms) || r->batch < 1) abort();
        }
        free(rows);
    } else if (rc >= 0 || err.code != rc || !err.msg[0] || !memchr(err.msg, 0, sizeof err.msg)) {
        abort();
    }
    return 0;
}
