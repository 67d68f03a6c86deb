/* buf.c — growable byte buffer. Grows geometrically; never shrinks until freed, so a buffer
 * reused in a loop stops allocating once it has seen the largest item. Also the printer of text and
 * HTML into one (baton_buf_printf, baton_buf_esc_xml): nothing cut at any length. */
#include "baton/util.h"
#include "svg_internal.h"

#include <stdarg.h>
#include <stdio.h>
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

int util_buf_vprintf(baton_buf *b, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    int rc = n < 0 ? BATON_ERR_ARG : BATON_OK;
    if (rc == BATON_OK && (size_t)n < sizeof small) rc = baton_buf_append(b, small, (size_t)n);
    else if (rc == BATON_OK && (rc = baton_buf_reserve(b, (size_t)n + 1)) == BATON_OK) {   /* + the terminator */
        vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return rc;
}

int baton_buf_printf(baton_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = util_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int baton_buf_esc_xml(baton_buf *b, const char *s)
{
    int rc = BATON_OK;
    for (const char *run = s; s && rc == BATON_OK; s++) {
        const char *r = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : *s == '"' ? "&quot;"
                      : *s == '\'' ? "&#39;" : NULL;
        if (!r && *s) continue;
        rc = baton_buf_append(b, run, (size_t)(s - run));   /* the plain run before it */
        if (rc == BATON_OK && r) rc = baton_buf_append(b, r, strlen(r));
        if (!*s) break;
        run = s + 1;
    }
    return rc;
}

void baton_buf_free(baton_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
