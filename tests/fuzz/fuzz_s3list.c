/* fuzz_s3list.c — libFuzzer target: the parser of an S3 ListObjectsV2 answer (io_list_parse in
 * src/io/store_list.c), which reads a page from a server. Every name it returns must start after
 * the store's prefix, be a valid object name and fit the key limit; a truncated page must come with
 * a non-empty token; nothing may crash, leak or read past the page. */
#include "../../src/io/store_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so reading one byte past the page is caught */
    char *body = malloc(size ? size : 1);
    if (!body) return 0;
    memcpy(body, data, size);
    io_objlist l = {.max = 1000};
    int truncated = 0;
    char token[1025];
    baton_err err = {0};
    int rc = io_list_parse("s3://bucket/pre/", body, size, "pre/ckpt-", 4, &l, &truncated, token, sizeof token, &err);
    if (rc == BATON_OK) {
        for (size_t i = 0; i < l.n; i++) {
            baton_err ne;
            if (strncmp(l.v[i].name, "ckpt-", 5) != 0 || strlen(l.v[i].name) > 1024 ||
                io_name_check("s3://bucket/pre/", l.v[i].name, &ne) != BATON_OK || l.v[i].size >= (1ull << 63))
                abort();
        }
        if (truncated && !token[0]) abort();
    } else if (!err.msg[0]) {
        abort();
    }
    baton_store_list_free(l.v, l.n);
    free(body);
    return 0;
}
