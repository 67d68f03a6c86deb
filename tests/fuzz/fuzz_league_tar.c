/* fuzz_league_tar.c — libFuzzer target: the league's tar reader (league_tar_read). Whatever
 * it accepts must obey its rules: every name relative, without "..", "." or empty components, no
 * control characters, at most BATON_LEAGUE_TAR_DEPTH deep, unique; every file's bytes inside the
 * input; at most BATON_LEAGUE_TAR_ENTRIES entries. A refusal leaves nothing allocated and says why. */
#include "../../src/league/league_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255 || s[0] == '/' || s[n - 1] == '/') return 0;
    int depth = 0;
    for (const char *a = s; *a;) {
        const char *b = strchr(a, '/');
        size_t l = b ? (size_t)(b - a) : strlen(a);
        if (l == 0 || (l == 1 && a[0] == '.') || (l == 2 && a[0] == '.' && a[1] == '.')) return 0;
        if (++depth > BATON_LEAGUE_TAR_DEPTH) return 0;
        a += l + (b != NULL);
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_league_tar_entry *e = NULL;
    size_t n = 0;
    baton_err err = {0};
    if (league_tar_read(data, size, &e, &n, &err) != BATON_OK) {
        if (e || n || !err.msg[0]) abort();
        return 0;
    }
    if (n > BATON_LEAGUE_TAR_ENTRIES) abort();
    for (size_t i = 0; i < n; i++) {
        if (!name_ok(e[i].name)) abort();
        if (e[i].is_dir ? (e[i].data != NULL || e[i].size) : (e[i].data < data || e[i].size > size ||
                                                               (size_t)(e[i].data - data) > size - e[i].size))
            abort();
        for (size_t k = 0; k < i; k++)
            if (!strcmp(e[i].name, e[k].name)) abort();
    }
    free(e);
    return 0;
}
