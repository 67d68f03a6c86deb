/* fuzz_state.c — libFuzzer target: the trainer's state.json parser (baton_train_state_parse), the
 * text a resume and `baton eval` trust from a checkpoint on disk or in a bucket. Whatever parses must
 * satisfy the parser's contract (src/train/state.c); nothing may crash, leak or overflow. */
#include "baton/train.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_train_state st;
    baton_err err = {0};
    memset(&st, 0xa5, sizeof st);
    int rc = baton_train_state_parse((const char *)data, size, &st, &err);
    if (rc == BATON_OK) {
        size_t ml = strnlen(st.model, sizeof st.model);
        if (ml == 0 || ml >= sizeof st.model) abort();
        if (st.batch < 1 || st.batch > UINT32_MAX) abort();
        if (st.cursor.seed != st.seed || st.ep_correct > st.ep_seen) abort();
        if (!(st.rng[0] | st.rng[1] | st.rng[2] | st.rng[3])) abort();
        if (!(st.ep_loss_sum >= 0) || !(st.ep_seconds >= 0)) abort();
    } else if (rc >= 0 || err.code != rc || !err.msg[0] || !memchr(err.msg, 0, sizeof err.msg)) {
        abort();
    }
    return 0;
}
