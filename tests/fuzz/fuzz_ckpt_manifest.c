/* fuzz_ckpt_manifest.c — libFuzzer target: a checkpoint's MANIFEST and state.json parsers. A
 * MANIFEST that parses must format back to the very same text; state.json only must not crash. */
#include "../../src/ckpt/ckpt_internal.h"
#include "baton/ckpt.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_ckpt_manifest m;
    baton_err err;
    if (ckpt_manifest_parse("MANIFEST", (const char *)data, size, &m, &err) == BATON_OK) {
        char *s = ckpt_manifest_format(&m);
        if (!s || strlen(s) != size || memcmp(s, data, size) != 0) abort();
        free(s);
    }
    ckpt_state_check("state.json", (const char *)data, size, 7, &err);
    ckpt_state_check("state.json", (const char *)data, size, UINT64_MAX, &err);
    return 0;
}
