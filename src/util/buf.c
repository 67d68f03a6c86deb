/* buf.c — growable byte buffer. Grows geometrically; never shrinks until freed, so a buffer
 * reused in a loop stops allocating once it has seen the largest item. */
#include "baton/util.h"

#include <stdlib.h>
#include <string.h>

int baton_buf_reserve(baton_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len) return BATON_ERR_NOMEM;
    size_t need = b->len + extra;
    if (need <= b->cap) return BATON_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) return BATON_ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return BATON_OK;
}

int baton_buf_append(baton_buf *b, const void *p, size_t n)
{
    if (n == 0) return BATON_OK;
    int rc = baton_buf_reserve(b, n);
    if (rc) return rc;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return BATON_OK;
}

void baton_buf_free(baton_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
