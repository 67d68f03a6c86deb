/* fuzz_safetensors.c — libFuzzer target: the safetensors header parser. Whatever validates must
 * describe tensors that lie inside the data area, and rebuilding a header from them and parsing it
 * again must give the same tensors (names, dtypes, shapes, offsets) and metadata. */
#include "../../src/ckpt/ckpt_internal.h"
#include "baton/ckpt.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_st_header h, h2;
    baton_err err;
    if (ckpt_st_parse_header("fuzz.safetensors", data, size, size, &h, &err) != BATON_OK) return 0;
    if (h.data_start + h.data_len != size) abort();
    baton_st_entry *e = calloc(h.ntensors + 1, sizeof *e);
    if (!e) abort();
    for (size_t i = 0; i < h.ntensors; i++) {
        const baton_st_tensor *t = &h.tensors[i];
        if (t->end > h.data_len || t->begin > t->end) abort();
        if (t->numel * baton_st_dtype_size(t->dtype) != t->end - t->begin) abort();
        e[i] = (baton_st_entry){t->name, t->dtype, t->ndim, t->shape, NULL};
    }
    baton_buf b = {0};
    uint64_t dl;
    if (ckpt_st_build_header(e, h.ntensors, (const char *const *)h.meta_keys, (const char *const *)h.meta_vals,
                              h.nmeta, &b, &dl, &err) != BATON_OK)
        abort();
    if (dl != h.data_len) abort();
    /* the rebuilt header with a zeroed data area of the same size must parse to the same tensors */
    uint8_t *f = calloc(1, b.len + (size_t)dl + 1);
    if (!f) abort();
    memcpy(f, b.data, b.len);
    if (ckpt_st_parse_header("rebuilt", f, b.len + (size_t)dl, b.len + dl, &h2, &err) != BATON_OK) abort();
    if (h2.ntensors != h.ntensors || h2.nmeta != h.nmeta) abort();
    for (size_t i = 0; i < h.ntensors; i++) {
        const baton_st_tensor *x = &h.tensors[i], *y = &h2.tensors[i];
        if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->ndim != y->ndim || x->numel != y->numel) abort();
        for (int d = 0; d < x->ndim; d++)
            if (x->shape[d] != y->shape[d]) abort();
    }
    for (size_t i = 0; i < h.nmeta; i++)
        if (strcmp(h.meta_keys[i], h2.meta_keys[i]) || strcmp(h.meta_vals[i], h2.meta_vals[i])) abort();
    baton_st_header_free(&h2);
    free(f);
    baton_buf_free(&b);
    free(e);
    baton_st_header_free(&h);
    return 0;
}
