/* idx.c — MXNet .idx files: text lines "key<TAB>offset\n", offset = byte position of a record's
 * first byte in its shard. We write the same file for TFRecord shards.
 *
 * Contract: keys and offsets are unsigned decimal numbers below 2^63 (digits only: no sign, no
 * spaces); the last line may lack its newline; an empty text has 0 entries; anything else (blank
 * lines, CR, extra fields, overflow) is BATON_ERR_FORMAT naming the 1-based line:
 * "train-00000.idx: line 17: expected key<TAB>offset". The parser never reads past text[n). */
#include "rec_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define IDX_MAX_FILE ((size_t)1 << 34)   /* 16 GiB of index text: ~ 10^9 records */
#define IDX_LIMIT ((uint64_t)1 << 63)

/* Parse digits at text[*i..n) up to `stop`; 0 on success. */
static int parse_num(const char *text, size_t n, size_t *i, char stop, uint64_t *out)
{
    size_t j = *i;
    uint64_t v = 0;
    if (j >= n || text[j] < '0' || text[j] > '9') return -1;
    while (j < n && text[j] >= '0' && text[j] <= '9') {
        v = v * 10 + (uint64_t)(text[j] - '0');
        if (v >= IDX_LIMIT) return -1;   /* v < 2^63 before, so v*10+9 cannot wrap */
        j++;
    }
    if (j < n && text[j] != stop) return -1;
    *i = j;
    *out = v;
    return 0;
}

int baton_idx_parse(const char *name, const char *text, size_t n, baton_idx_entry **out,
                    size_t *count, baton_err *err)
{
    *out = NULL;
    *count = 0;
    if (!name) name = "index";
    if (n == 0) return BATON_OK;
    size_t lines = 0;
    for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
    if (text[n - 1] != '\n') lines++;
    baton_idx_entry *e = malloc(lines * sizeof *e);
    if (!e)
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory for %zu entries", name,
                             lines);
    size_t k = 0, i = 0;
    while (i < n) {
        size_t line = k + 1;
        uint64_t key, off;
        if (parse_num(text, n, &i, '\t', &key) != 0 || i >= n) goto bad;
        i++;   /* the tab */
        if (parse_num(text, n, &i, '\n', &off) != 0) goto bad;
        if (i < n) i++;   /* the newline (absent at the very end) */
        e[k].key = key;
        e[k].offset = off;
        k++;
        continue;
    bad:
        free(e);
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: line %zu: expected key<TAB>offset (unsigned decimal numbers "
                             "below 2^63)",
                             name, line);
    }
    *out = e;
    *count = k;
    return BATON_OK;
}

int rec_idx_load(const char *path, baton_idx_entry **out, size_t *count, baton_err *err)
{
    uint8_t *text;
    size_t n;
    *out = NULL;
    *count = 0;
    int rc = baton_file_read_all(path, IDX_MAX_FILE, &text, &n, err);
    if (rc) return rc;
    rc = baton_idx_parse(path, (const char *)text, n, out, count, err);
    free(text);
    return rc;
}

int rec_idx_append(baton_buf *out, uint64_t key, uint64_t offset)
{
    char line[48];
    int len = snprintf(line, sizeof line, "%llu\t%llu\n", (unsigned long long)key,
                       (unsigned long long)offset);
    return baton_buf_append(out, line, (size_t)len);
}
