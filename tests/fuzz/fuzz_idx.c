/* fuzz_idx.c — libFuzzer target: .idx text. Whatever parses must serialise back (append) and
 * parse again to the same entries. */
#include "../../src/rec/rec_internal.h"
#include "baton/rec.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_idx_entry *e, *e2;
    size_t n, n2;
    baton_err err;
    if (baton_idx_parse("fuzz.idx", (const char *)data, size, &e, &n, &err) != BATON_OK) {
        if (e != NULL || n != 0) abort();
        return 0;
    }
    baton_buf b = {0};
    for (size_t i = 0; i < n; i++)
        if (rec_idx_append(&b, e[i].key, e[i].offset) != BATON_OK) abort();
    if (baton_idx_parse("fuzz.idx", (const char *)b.data, b.len, &e2, &n2, &err) != BATON_OK ||
        n2 != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (e[i].key != e2[i].key || e[i].offset != e2[i].offset) abort();
    free(e);
    free(e2);
    baton_buf_free(&b);
    return 0;
}
