/* text.c — the line reading the user-edited tables share (catalog.c: the instance catalog;
 * cost.c: measured latencies): a NUL-free copy of the text, then its lines one at a time, cut in
 * place and trimmed, blank lines and # comments skipped, counted from 1 for error messages. */
#include "infer_internal.h"

#include <stdlib.h>
#include <string.h>

int infer_text_copy(const char *name, const char *text, size_t len, char **out, baton_err *err)
{
    *out = NULL;
    char *copy = malloc(len + 1);
    if (!copy) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    memcpy(copy, text, len);
    copy[len] = 0;
    if (strlen(copy) != len) {
        free(copy);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: contains a NUL byte", name);
    }
    *out = copy;
    return BATON_OK;
}

void infer_text_trim(char **s)
{
    while (**s == ' ' || **s == '\t') (*s)++;
    char *e = *s + strlen(*s);
    while (e > *s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
}

char *infer_text_line(char **s, size_t *line)
{
    while (**s) {
        char *nl = strchr(*s, '\n');
        if (nl) *nl = 0;
        ++*line;
        char *l = *s;
        *s = nl ? nl + 1 : *s + strlen(*s);
        infer_text_trim(&l);
        if (*l && *l != '#') return l;
    }
    return NULL;
}
