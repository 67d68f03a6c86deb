/* fuzz_manifest.c — libFuzzer target: dataset.json. Whatever parses must serialise, parse again,
 * and serialise to the very same text (a fixed point after one round). */
#include "baton/rec.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_manifest m, m2;
    baton_err err;
    if (baton_manifest_parse("fuzz.json", (const char *)data, size, &m, &err) != BATON_OK) return 0;
    char *j1 = baton_manifest_to_json(&m);
    if (!j1) abort();
    if (baton_manifest_parse("fuzz.json", j1, strlen(j1), &m2, &err) != BATON_OK) abort();
    char *j2 = baton_manifest_to_json(&m2);
    if (!j2 || strcmp(j1, j2) != 0) abort();
    free(j1);
    free(j2);
    baton_manifest_free(&m);
    baton_manifest_free(&m2);
    return 0;
}
