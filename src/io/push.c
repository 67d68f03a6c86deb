/* push.c — upload a packed dataset folder to a store (see io.h): shards and indexes first, each
 * verified against dataset.json before it is sent, dataset.json last. */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>

int baton_dataset_push(const char *dir, baton_store *dst, int progress, baton_err *err)
{
    baton_manifest m;
    int rc = baton_manifest_load(dir, &m, err);
    if (rc) return rc;
    uint64_t total = 0, done = 0;
    for (size_t i = 0; i < m.nshards; i++) total += m.shards[i].bytes + m.shards[i].index_bytes;
    baton_progress prog;
    if (progress) baton_progress_start(&prog, "push", total);
    char path[4096];
    for (size_t i = 0; rc == BATON_OK && i < m.nshards; i++) {
        const baton_shard_info *si = &m.shards[i];
        if (!io_local_valid(dir, si)) {
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s/%s: size or CRC32C differs from dataset.json; "
                               "not uploading a damaged shard", dir, si->file);
            break;
        }
        rc = baton_path_join(path, sizeof path, dir, si->file, err);
        if (rc == BATON_OK) rc = baton_store_put_file(dst, si->file, path, err);
        if (rc == BATON_OK && si->index) {
            rc = baton_path_join(path, sizeof path, dir, si->index, err);
            if (rc == BATON_OK) rc = baton_store_put_file(dst, si->index, path, err);
        }
        done += si->bytes + si->index_bytes;
        if (progress) baton_progress_update(&prog, done);
    }
    if (rc == BATON_OK && m.indexes) {   /* every index in one file: checked part by part, as readers do */
        uint8_t *b = NULL;
        size_t n = 0;
        rc = baton_indexes_read(dir, &m, &b, &n, err);
        if (rc == BATON_OK) rc = baton_store_put(dst, m.indexes, b, n, err);
        free(b);
    }
    if (rc == BATON_OK) {
        char *json = baton_manifest_to_json(&m);
        rc = json ? baton_store_put(dst, BATON_MANIFEST_NAME, json, strlen(json), err)
                  : baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        free(json);
    }
    if (progress) baton_progress_finish(&prog);
    baton_manifest_free(&m);
    return rc;
}
