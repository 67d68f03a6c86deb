/* fuzz_cifar.c — libFuzzer target: the CIFAR-10 binary reader behind `baton pack --from
 * cifar10:DIR` (src/img/source_cifar.c), which reads files an outside party made. The input is
 * cut in two at its first byte's worth (0..255 bytes of class-name text, batches.meta.txt; the
 * rest is test_batch.bin), both written into a scratch folder; the source is opened for the test
 * split and every record read. A source that opens has a record count of size / 3073, 10 class
 * names and items of 32x32x3 with labels 0..9; a refusal is an error value with a message; nothing
 * may crash, leak or overflow. */
#include "../../src/img/img_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void cleanup(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/batches.meta.txt", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    unlink(path);
    rmdir(dir);
}

static void put(const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/baton-fuzz-cifar-%d", (int)getpid());
        if (mkdir(dir, 0700) && access(dir, W_OK)) abort();
        atexit(cleanup);
    }
    size_t meta = size ? data[0] : 0;
    if (meta > size - (size ? 1 : 0)) meta = size ? size - 1 : 0;
    char path[128];
    snprintf(path, sizeof path, "%s/batches.meta.txt", dir);
    unlink(path);
    if (meta) put("batches.meta.txt", data + 1, meta);   /* none: the standard names */
    size_t off = size ? 1 + meta : 0;
    put("test_batch.bin", data + off, size - off);
    char spec[96];
    snprintf(spec, sizeof spec, "cifar10:%s", dir);
    baton_src *s = NULL;
    baton_err err = {0};
    int rc = img_src_open(spec, "test", &s, &err);
    if (rc == BATON_OK) {
        if (img_src_count(s) != (size - off) / 3073 || img_src_classes(s) != 10) abort();
        for (size_t i = 0; i < img_src_count(s); i++) {
            baton_src_item it;
            baton_err e2 = {0};
            int r2 = img_src_get(s, i, &it, &e2);
            if (r2 == BATON_OK) {
                if (!it.image || it.image->h != 32 || it.image->w != 32 || it.image->c != 3 || it.label > 9) abort();
            } else if (r2 >= 0 || !e2.msg[0]) {
                abort();
            }
        }
        for (uint32_t k = 0; k < 10; k++)
            if (!img_src_class_name(s, k) || !img_src_class_name(s, k)[0]) abort();
        img_src_close(s);
    } else if (rc >= 0 || err.code != rc || !err.msg[0] || !memchr(err.msg, 0, sizeof err.msg)) {
        abort();
    }
    return 0;
}
