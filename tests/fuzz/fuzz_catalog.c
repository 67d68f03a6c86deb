/* fuzz_catalog.c — libFuzzer target: the instance catalog's CSV (baton_infer_catalog_parse), the
 * file `baton plan` and `baton fleet` read with --catalog. A catalog that parses has entries with
 * names and no negative price; a refusal is an error value with a message; nothing may crash, leak
 * or overflow, and the work stays linear in the input (libFuzzer's -timeout guards it). */
#include "baton/infer.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_infer_catalog c;
    baton_err err = {0};
    memset(&c, 0, sizeof c);
    int rc = baton_infer_catalog_parse("fuzz.csv", (const char *)data, size, &c, &err);
    if (rc == BATON_OK) {
        for (size_t i = 0; i < c.n; i++) {
            const baton_infer_catalog_entry *e = &c.e[i];
            if (!e->name[0] || !memchr(e->name, 0, sizeof e->name)) abort();
            if (baton_infer_catalog_find(&c, e->name) == NULL) abort();
        }
        baton_infer_catalog_free(&c);
    } else if (rc >= 0 || err.code != rc || !err.msg[0] || !memchr(err.msg, 0, sizeof err.msg)) {
        abort();
    }
    return 0;
}
