/* manifest.c — a checkpoint folder's MANIFEST and the store's view of state.json.
 *
 * MANIFEST format (text, written last, the commit record of a checkpoint folder):
 *
 *   baton-ckpt 1\n
 *   <name> <bytes> <crc32c>\n        one line per file of the folder, in the order written
 *
 * Invariants a reader checks (ckpt_manifest_parse):
 *   - the first line is exactly "baton-ckpt 1" (version 1; other versions are refused);
 *   - every line ends in '\n' (a MANIFEST cut short is refused, not half-read);
 *   - name is 1..63 bytes of [A-Za-z0-9._-], not "." or "..", unique within the file;
 *   - bytes is a decimal integer (no sign, no leading zeros except "0") below 2^63;
 *   - crc32c is exactly 8 lowercase hex digits (the CRC32C of the whole file);
 *   - at most 16 files; the whole MANIFEST at most 64 KiB.
 *
 * state.json is opaque to the store except that it must be a JSON object whose "step" is an
 * integer equal to the folder's step (so a folder's state cannot be another checkpoint's). */
#include "ckpt_internal.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= BATON_CKPT_NAME_MAX) return 0;
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int ckpt_manifest_parse(const char *name, const char *text, size_t len, baton_ckpt_manifest *m,
                              baton_err *err)
{
    memset(m, 0, sizeof *m);
    if (len > BATON_CKPT_MANIFEST_MAX)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu bytes, more than %d", name, len,
                             BATON_CKPT_MANIFEST_MAX);
    static const char head[] = "baton-ckpt 1\n";
    if (len < sizeof head - 1 || memcmp(text, head, sizeof head - 1) != 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: line 1: expected \"baton-ckpt 1\"", name);
    size_t at = sizeof head - 1;
    int line = 1;
    while (at < len) {
        line++;
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl)
            return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: line %d (offset %zu): no end of line", name,
                                 line, at);
        const char *s = text + at, *e = nl;
        at = (size_t)(nl - text) + 1;
        const char *sp1 = memchr(s, ' ', (size_t)(e - s));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(e - sp1 - 1)) : NULL;
        if (!sp1 || !sp2)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: expected \"name bytes crc32c\"", name,
                                 line);
        if (m->nfiles >= sizeof m->files / sizeof m->files[0])
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: more than %zu files", name, line,
                                 sizeof m->files / sizeof m->files[0]);
        baton_ckpt_file *f = &m->files[m->nfiles];
        size_t nl_len = (size_t)(sp1 - s);
        if (!name_ok(s, nl_len))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: bad file name", name, line);
        memcpy(f->name, s, nl_len);
        f->name[nl_len] = 0;
        for (size_t i = 0; i < m->nfiles; i++)
            if (strcmp(m->files[i].name, f->name) == 0)
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: file '%s' listed twice", name, line,
                                     f->name);
        const char *b = sp1 + 1;
        size_t bl = (size_t)(sp2 - b);
        if (bl == 0 || bl > 19 || (bl > 1 && b[0] == '0'))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: bad byte count", name, line);
        uint64_t v = 0;
        for (size_t i = 0; i < bl; i++) {
            if (b[i] < '0' || b[i] > '9')
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: bad byte count", name, line);
            v = v * 10 + (uint64_t)(b[i] - '0');
        }
        if (v >= (1ull << 63))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: byte count too large", name, line);
        f->bytes = v;
        const char *c = sp2 + 1;
        if (e - c != 8)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: crc32c must be 8 hex digits", name, line);
        uint32_t crc = 0;
        for (int i = 0; i < 8; i++) {
            char ch = c[i];
            int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
            if (d < 0)
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: line %d: crc32c must be 8 lowercase hex digits",
                                     name, line);
            crc = (crc << 4) | (uint32_t)d;
        }
        f->crc32c = crc;
        m->nfiles++;
    }
    return BATON_OK;
}

char *ckpt_manifest_format(const baton_ckpt_manifest *m)
{
    size_t cap = 16 + m->nfiles * (BATON_CKPT_NAME_MAX + 40);
    char *s = malloc(cap);
    if (!s) return NULL;
    size_t k = (size_t)snprintf(s, cap, "baton-ckpt 1\n");
    for (size_t i = 0; i < m->nfiles; i++)
        k += (size_t)snprintf(s + k, cap - k, "%s %llu %08x\n", m->files[i].name,
                              (unsigned long long)m->files[i].bytes, m->files[i].crc32c);
    return s;
}

int ckpt_state_check(const char *name, const char *text, size_t len, uint64_t step, baton_err *err)
{
    baton_jr r;
    baton_jr_init(&r, name, err);
    cJSON *root = baton_jr_parse(&r, text, len);
    if (!root) return r.rc;
    int rc = BATON_OK;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "step");
    double d = cJSON_IsNumber(st) ? st->valuedouble : -1.0;
    if (!cJSON_IsNumber(st) || !(d >= 0.0) || d > 9007199254740992.0 || d != (double)(uint64_t)d) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: field \"step\" missing or not a non-negative integer",
                           name);
        goto out;
    }
    if (step != UINT64_MAX && (uint64_t)d != step)
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: field \"step\" is %llu, the checkpoint's step is %llu",
                           name, (unsigned long long)(uint64_t)d, (unsigned long long)step);
out:
    cJSON_Delete(root);
    return rc;
}

const char *baton_ckpt_kind_hint(const char *kind)
{
    if (!kind) return NULL;
    if (!strcmp(kind, "race-ppo")) return "a race model's checkpoint (baton race train): evaluate it with baton race eval";
    if (!strcmp(kind, "baton-python"))
        return "a checkpoint of the Python module (baton.Checkpoints): load it with baton.Checkpoints(DIR).load()";
    return NULL;
}
