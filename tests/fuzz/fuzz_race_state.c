/* fuzz_race_state.c — libFuzzer target: a race checkpoint's state.json (race_state_parse), which a
 * resumed `baton race train` and the league's evaluation trust from disk. Whatever parses must
 * format (race_state_format) into text that parses again to the same state, formatted the same;
 * a refusal comes with a message; nothing crashes, leaks or overflows. */
#include "../../src/ppo/ppo_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    race_run_state a, b;
    memset(&a, 0, sizeof a);
    baton_err err = {0};
    int rc = race_state_parse((const char *)data, size, &a, &err);
    if (rc != BATON_OK) {
        if (rc >= 0 || err.code != rc || !err.msg[0]) abort();
        return 0;
    }
    char *t1 = race_state_format(&a);
    if (!t1) abort();
    memset(&b, 0, sizeof b);
    if (race_state_parse(t1, strlen(t1), &b, &err) != BATON_OK) abort();
    char *t2 = race_state_format(&b);
    if (!t2 || strcmp(t1, t2)) abort();
    free(t1);
    free(t2);
    return 0;
}
