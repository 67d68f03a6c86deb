/* fuzz_idxu.c — libFuzzer target for the IDX-ubyte parser (plain and gzip input): any bytes must
 * give BATON_OK with a consistent result or a clean error, never a crash or a leak. */
#include "../../src/img/img_internal.h"
#include "baton/img.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_idxu x;
    baton_err err;
    int rc = img_idxu_parse("fuzz", data, size, &x, &err);
    if (rc == BATON_OK) {
        size_t want = 1;
        for (uint32_t i = 0; i < x.ndim; i++) want *= x.dims[i];
        if (want != x.len || (x.ndim != 1 && x.ndim != 3)) abort();
        if (x.len) {
            volatile uint8_t sink = x.data[0] ^ x.data[x.len - 1];  /* touch both ends */
            (void)sink;
        }
    } else if (rc >= 0 || err.msg[0] == 0) {
        abort();
    }
    img_idxu_free(&x);
    return 0;
}
