/* fuzz_infer_stats.c — libFuzzer target: one line of `baton infer-bench --json` as
 * `baton plan infer --measured FILE` reads it back (baton_infer_stats_parse). The line is given
 * NUL-terminated, as the file reader hands it over; a line that parses is written again by
 * baton_infer_stats_json and must parse back; a refusal is an error value with a message. */
#include "baton/infer.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) return 0;
    char *line = malloc(size + 1);
    if (!line) return 0;
    memcpy(line, data, size);
    line[size] = 0;
    baton_infer_stats st;
    baton_err err = {0};
    int rc = baton_infer_stats_parse("fuzz.jsonl", 1, line, &st, &err);
    if (rc == BATON_OK) {
        char *again = baton_infer_stats_json(&st);
        baton_infer_stats st2;
        if (!again || baton_infer_stats_parse("again", 1, again, &st2, &err) != BATON_OK) abort();
        free(again);
    } else if (rc >= 0 || err.code != rc || !err.msg[0] || !memchr(err.msg, 0, sizeof err.msg)) {
        abort();
    }
    free(line);
    return 0;
}
