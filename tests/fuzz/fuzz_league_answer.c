/* fuzz_league_answer.c — libFuzzer target: a league server's JSON answer about a submission
 * (league_submission_read), what `baton race submit --league URL` believes from the network. An
 * accepted answer has an id in 1..2^53, a known state, an entry of at least 1 or none, and a
 * terminated reason; a refusal comes with a message; nothing crashes, leaks or overflows (a number
 * past int64 must never be cast). */
#include "../../src/league/league_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_league_submission s;
    memset(&s, 0xa5, sizeof s);
    baton_err err = {0};
    int rc = league_submission_read(data, size, "http://league/api/submissions/1", &s, &err);
    if (rc == BATON_OK) {
        if (s.id < 1 || s.id > (1LL << 53) || (unsigned)s.state > 3 || s.entry < 0) abort();
        if (!memchr(s.reason, 0, sizeof s.reason)) abort();
    } else if (rc >= 0 || err.code != rc || !err.msg[0]) {
        abort();
    }
    return 0;
}
