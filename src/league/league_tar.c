/* league_tar.c — the tar archives racers upload (league.h, "uploads"): read one held in
 * memory into a list of entries, and write those entries under a fresh folder.
 *
 * What is accepted, and nothing else (each refusal names the entry and its offset):
 *   1. 512-byte headers with the "ustar" magic (POSIX ustar/pax or GNU) and a correct checksum;
 *      sizes in octal; the archive ends at a zero block (or at the end of the bytes after one).
 *   2. Regular files and folders. Symbolic and hard links, devices, FIFOs and anything else are
 *      refused, as are GNU sparse and multi-volume entries.
 *   3. Names: the ustar prefix, a GNU long name ('L') or a pax "path" record, at most 255 bytes;
 *      a leading "./" is dropped; an absolute path, a ".." component, an empty component, a
 *      control character or more than BATON_LEAGUE_TAR_DEPTH folders deep is refused; so is a name
 *      that appears twice.
 *   4. At most BATON_LEAGUE_TAR_ENTRIES entries; every size is checked against the bytes there are.
 * Extraction writes into an existing empty folder with O_CREAT|O_EXCL|O_NOFOLLOW, so even a name
 * that slipped past the checks could not write outside it or through a link.
 *
 * league_tar_write is the other side, for `race submit --server`: a folder's regular files
 * and folders, by name, in ustar.
 *
 * Why by hand: the subset above is about 200 lines, works on the bytes already in memory and
 * refuses by construction what a general archive library would have to be told to refuse. */
#include "league_internal.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 512

static int all_zero(const uint8_t *b)
{
    for (int i = 0; i < BLOCK; i++)
        if (b[i]) return 0;
    return 1;
}

/* An octal field (NUL or space padded); -1 when it is not one. */
static int64_t octal(const uint8_t *f, size_t n)
{
    size_t i = 0;
    while (i < n && f[i] == ' ') i++;
    int64_t v = 0;
    size_t digits = 0;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (v > (INT64_MAX >> 3)) return -1;
        v = v * 8 + (f[i] - '0');
    }
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != 0) return -1;
    return digits ? v : -1;
}

static int checksum_ok(const uint8_t *h)
{
    int64_t want = octal(h + 148, 8);
    uint64_t sum = 0;
    int64_t ssum = 0;
    for (int i = 0; i < BLOCK; i++) {
        uint8_t c = i >= 148 && i < 156 ? ' ' : h[i];
        sum += c;
        ssum += (int8_t)c;   /* some old writers summed signed bytes */
    }
    return want >= 0 && ((uint64_t)want == sum || want == ssum);
}

/* Rule 3 on a name as it came, into out (normalized); an error names what is wrong. */
static int clean_name(const char *in, size_t len, char out[256], int *is_root, const char **why)
{
    *is_root = 0;
    while (len >= 2 && in[0] == '.' && in[1] == '/') {
        in += 2, len -= 2;
        while (len && in[0] == '/') in++, len--;   /* "./" repeated or ".//" */
    }
    while (len && in[len - 1] == '/') len--;   /* a folder's trailing slash */
    if (len == 0 || (len == 1 && in[0] == '.')) {
        *is_root = 1;
        return 0;
    }
    if (len > 255) return *why = "a name longer than 255 bytes", -1;
    if (in[0] == '/') return *why = "an absolute path", -1;
    int depth = 0;
    for (size_t a = 0; a < len;) {
        size_t b = a;
        while (b < len && in[b] != '/') b++;
        if (b == a) return *why = "an empty path component (\"//\")", -1;
        if ((b - a == 2 && in[a] == '.' && in[a + 1] == '.')) return *why = "a \"..\" component", -1;
        if (b - a == 1 && in[a] == '.') return *why = "a \".\" component", -1;
        if (++depth > BATON_LEAGUE_TAR_DEPTH) return *why = "a path nested too deep", -1;
        a = b + 1;
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)in[i] < 0x20 || in[i] == 0x7f) return *why = "a control character in the name", -1;
    memcpy(out, in, len);
    out[len] = 0;
    return 0;
}

/* A pax extended header's records ("LEN key=value\n"): path and size are taken, the rest (times,
 * owners, extended attributes) ignored. */
static int pax_records(const uint8_t *p, size_t n, char *path, size_t *path_len, int64_t *size, size_t off, baton_err *err)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i, len = 0;
        while (j < n && p[j] >= '0' && p[j] <= '9' && len < 1000000) len = len * 10 + (p[j++] - '0');
        if (j == i || j >= n || p[j] != ' ' || len < 5 || len > n - i || p[i + len - 1] != '\n')
            return baton_err_set(err, BATON_ERR_FORMAT, "tar offset %zu: a malformed pax record", off + i);
        const uint8_t *kv = p + j + 1, *end = p + i + len - 1;
        const uint8_t *eq = memchr(kv, '=', (size_t)(end - kv));
        if (!eq) return baton_err_set(err, BATON_ERR_FORMAT, "tar offset %zu: a pax record without '='", off + i);
        size_t kl = (size_t)(eq - kv), vl = (size_t)(end - eq - 1);
        if (kl == 4 && !memcmp(kv, "path", 4)) {
            if (vl > 255 || memchr(eq + 1, 0, vl))
                return baton_err_set(err, BATON_ERR_FORMAT, "tar offset %zu: a pax path longer than 255 bytes", off + i);
            memcpy(path, eq + 1, vl);
            *path_len = vl;
        } else if (kl == 4 && !memcmp(kv, "size", 4)) {
            int64_t v = 0;
            for (size_t k = 1; k <= vl; k++) {
                if (eq[k] < '0' || eq[k] > '9' || v > INT64_MAX / 10 - 9)
                    return baton_err_set(err, BATON_ERR_FORMAT, "tar offset %zu: a pax size that is not a number", off + i);
                v = v * 10 + (eq[k] - '0');
            }
            *size = vl ? v : -1;
        } else if (kl == 8 && !memcmp(kv, "linkpath", 8)) {
            return baton_err_set(err, BATON_ERR_FORMAT, "tar offset %zu: a link (pax linkpath); only files and folders are accepted", off + i);
        }
        i += len;
    }
    return BATON_OK;
}

static const char *kind_name(uint8_t t)
{
    switch (t) {
    case '1': return "a hard link";
    case '2': return "a symbolic link";
    case '3': return "a character device";
    case '4': return "a block device";
    case '6': return "a FIFO";
    case 'K': return "a GNU long link name";
    case 'S': return "a GNU sparse file";
    case 'M': return "a GNU multi-volume part";
    case 'V': return "a volume label";
    default: return "an entry of an unknown type";
    }
}

/* The reader's state between headers: where it is, a long name or size an extended header gave
 * the next entry, the entries so far. */
typedef struct tar_rd {
    size_t off;
    char longname[256];
    size_t longlen;
    int have_long;
    int64_t pax_size;
    baton_league_tar_entry *e;
    size_t cnt, cap;
    baton_err *err;
} tar_rd;

/* A pax ('x', 'g') or GNU long-name ('L') header: what it says of the next entry. */
static int ext_header(tar_rd *t, uint8_t type, const uint8_t *data, size_t size)
{
    int rc = BATON_OK;
    if (type == 'x' && (rc = pax_records(data, size, t->longname, &t->longlen, &t->pax_size, t->off + BLOCK, t->err)))
        return rc;
    if (type == 'x' && t->longlen) t->have_long = 1;
    if (type == 'L') {
        size_t l = strnlen((const char *)data, size);
        if (l > 255) return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: a GNU long name over 255 bytes", t->off);
        memcpy(t->longname, data, l), t->longlen = l, t->have_long = 1;
    }
    return BATON_OK;
}

/* The entry's name as the archive has it: an extended header's, or ustar's prefix/name. */
static size_t raw_name(tar_rd *t, const uint8_t *h, char raw[512])
{
    size_t rl = 0;
    if (t->have_long) {
        memcpy(raw, t->longname, t->longlen), rl = t->longlen;
    } else {
        size_t nl = strnlen((const char *)h, 100), pl = 0;
        if (!memcmp(h + 257, "ustar\0", 6) && (pl = strnlen((const char *)h + 345, 155))) {
            memcpy(raw, h + 345, pl);
            raw[pl] = '/';
            rl = pl + 1;
        }
        memcpy(raw + rl, h, nl);
        rl += nl;
    }
    t->have_long = 0, t->longlen = 0, t->pax_size = -1;
    raw[rl] = 0;
    return rl;
}

/* Append the entry (a file's bytes stay in the archive): no name twice, at most the limit. */
static int add_entry(tar_rd *t, const char *name, int is_dir, const uint8_t *data, size_t size)
{
    for (size_t k = 0; k < t->cnt; k++)
        if (!strcmp(t->e[k].name, name))
            return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: '%s' appears twice", t->off, name);
    if (t->cnt == BATON_LEAGUE_TAR_ENTRIES)
        return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: more than %d entries", t->off, BATON_LEAGUE_TAR_ENTRIES);
    if (t->cnt == t->cap) {
        baton_league_tar_entry *g = realloc(t->e, 2 * t->cap * sizeof *t->e);
        if (!g) return baton_err_set(t->err, BATON_ERR_NOMEM, "out of memory");
        t->e = g, t->cap *= 2;
    }
    baton_league_tar_entry *x = &t->e[t->cnt++];
    memcpy(x->name, name, strlen(name) + 1);
    x->is_dir = is_dir;
    x->data = is_dir ? NULL : data;
    x->size = is_dir ? 0 : size;
    return BATON_OK;
}

/* A file or folder header at t->off: its name checked, the entry kept (the top folder itself is
 * not an entry). */
static int entry(tar_rd *t, const uint8_t *h, uint8_t type, const uint8_t *data, size_t size)
{
    char raw[512], name[256];
    size_t rl = raw_name(t, h, raw);
    int is_dir = type == '5', root = 0;
    const char *why = NULL;
    if (type != '0' && type != 0 && type != '7' && !is_dir)
        return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: '%.100s' is %s; only files and folders are accepted",
                             t->off, raw, kind_name(type));
    if (clean_name(raw, rl, name, &root, &why))
        return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: '%.100s': %s is not accepted", t->off, raw, why);
    if (root && !is_dir) return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: a file without a name", t->off);
    return root ? BATON_OK : add_entry(t, name, is_dir, data, size);
}

/* One header block at t->off and what follows it; *ended at the end-of-archive block. */
static int header(tar_rd *t, const uint8_t *buf, size_t len, int *ended)
{
    const uint8_t *h = buf + t->off;
    if (all_zero(h)) return *ended = 1, BATON_OK;
    if (memcmp(h + 257, "ustar", 5) || !checksum_ok(h))
        return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: not a ustar header (%s)", t->off,
                             memcmp(h + 257, "ustar", 5) ? "no \"ustar\" magic" : "wrong checksum");
    int64_t size = octal(h + 124, 12);
    uint8_t type = h[156];
    int ext = type == 'x' || type == 'g' || type == 'L';
    if (t->pax_size >= 0 && !ext) size = t->pax_size;
    if (size < 0 || (uint64_t)size > len - t->off - BLOCK)
        return baton_err_set(t->err, BATON_ERR_FORMAT, "tar offset %zu: entry size %s the %zu bytes that follow", t->off,
                             size < 0 ? "unreadable; not within" : "beyond", len - t->off - BLOCK);
    size_t span = BLOCK + (((size_t)size + BLOCK - 1) / BLOCK) * BLOCK;
    if (span > len - t->off) span = len - t->off;   /* the last entry's padding may be cut */
    int rc = ext ? ext_header(t, type, h + BLOCK, (size_t)size) : entry(t, h, type, h + BLOCK, (size_t)size);
    t->off += span;
    return rc;
}

int league_tar_read(const uint8_t *buf, size_t len, baton_league_tar_entry **out, size_t *n, baton_err *err)
{
    *out = NULL;
    *n = 0;
    tar_rd t = {.pax_size = -1, .cap = 16, .err = err};
    if (!(t.e = malloc(t.cap * sizeof *t.e))) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = BATON_OK, ended = 0;
    while (!rc && !ended && t.off + BLOCK <= len) rc = header(&t, buf, len, &ended);
    if (!rc && !ended && t.off < len)
        rc = baton_err_set(err, BATON_ERR_TRUNCATED, "tar offset %zu: the archive ends inside a header", t.off);
    if (!rc && !ended && t.cnt == 0) rc = baton_err_set(err, BATON_ERR_TRUNCATED, "an empty archive (no entries, no end marker)");
    if (!rc && (t.have_long || t.pax_size >= 0))
        rc = baton_err_set(err, BATON_ERR_TRUNCATED, "tar offset %zu: an extended header with no entry after it", t.off);
    if (rc) {
        free(t.e);
        return rc;
    }
    *out = t.e;
    *n = t.cnt;
    return BATON_OK;
}

/* mkdir -p of name's folders under the open folder root (names already checked). */
static int make_parents(int root, const char *name, int through_last, baton_err *err)
{
    char p[256];
    snprintf(p, sizeof p, "%s", name);
    for (char *s = p; (s = strchr(s, '/')) || through_last; s++) {
        if (s) *s = 0;
        if (mkdirat(root, p, 0700) && errno != EEXIST) return baton_err_errno(err, errno, "cannot make the folder", p);
        struct stat sb;
        if (fstatat(root, p, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(sb.st_mode))
            return baton_err_set(err, BATON_ERR_FORMAT, "tar: '%s' is both a file and a folder", p);
        if (!s) break;
        *s = '/';
    }
    return BATON_OK;
}

int league_tar_extract(const baton_league_tar_entry *e, size_t n, const char *dir, baton_err *err)
{
    int root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0) return baton_err_errno(err, errno, "cannot open the folder", dir);
    int rc = BATON_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        if ((rc = make_parents(root, e[i].name, e[i].is_dir, err))) break;
        if (e[i].is_dir) continue;
        int fd = openat(root, e[i].name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            int en = errno;
            rc = en == EEXIST ? baton_err_set(err, BATON_ERR_FORMAT, "tar: '%s' is both a file and a folder", e[i].name)
                              : baton_err_errno(err, en, "cannot create", e[i].name);
            break;
        }
        rc = baton_write_all(fd, e[i].data, e[i].size, e[i].name, err);
        if (close(fd) && !rc) rc = baton_err_errno(err, errno, "cannot close", e[i].name);
    }
    close(root);
    return rc;
}

/* ------------------------------------------------------------------ writing (the client's side) */
static int put_header(baton_buf *b, const char *name, int is_dir, size_t size, baton_err *err)
{
    uint8_t h[BLOCK] = {0};
    size_t nl = strlen(name);
    if (nl > 100) {   /* the ustar prefix holds what does not fit, cut at a '/' */
        const char *cut = name + nl - 100;
        while (*cut && *cut != '/') cut++;
        if (!*cut || (size_t)(cut - name) > 155)
            return baton_err_set(err, BATON_ERR_ARG, "%s: a name too long for a ustar archive", name);
        memcpy(h + 345, name, (size_t)(cut - name));
        memcpy(h, cut + 1, strlen(cut + 1));
    } else {
        memcpy(h, name, nl);
    }
    snprintf((char *)h + 100, 8, "%07o", is_dir ? 0755 : 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = is_dir ? '5' : '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    return baton_buf_append(b, h, BLOCK) ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : BATON_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dir's regular files and folders, by name, as as/NAME (depth counts folders below the top). */
static int write_dir(baton_buf *b, const char *dir, const char *as, int depth, size_t max, baton_err *err)
{
    if (depth > BATON_LEAGUE_TAR_DEPTH) return baton_err_set(err, BATON_ERR_ARG, "%s: nested too deep for an upload", dir);
    int rc = put_header(b, as, 1, 0, err);
    DIR *d = rc ? NULL : opendir(dir);
    if (!rc && !d) return baton_err_errno(err, errno, "cannot read the folder", dir);
    char *names[BATON_LEAGUE_TAR_ENTRIES];
    size_t n = 0;
    for (struct dirent *de; !rc && (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".lock")) continue;
        if (n == BATON_LEAGUE_TAR_ENTRIES) rc = baton_err_set(err, BATON_ERR_ARG, "%s: too many files for an upload", dir);
        else if (!(names[n++] = strdup(de->d_name))) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    if (d) closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && !rc; i++) {
        char path[4200], name[600];
        struct stat sb;
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path ||
            snprintf(name, sizeof name, "%s/%s", as, names[i]) > 255) {
            rc = baton_err_set(err, BATON_ERR_ARG, "%s/%s: a name too long for an upload", dir, names[i]);
        } else if (lstat(path, &sb)) {
            rc = baton_err_errno(err, errno, "cannot stat", path);
        } else if (S_ISDIR(sb.st_mode)) {
            rc = write_dir(b, path, name, depth + 1, max, err);
        } else if (!S_ISREG(sb.st_mode)) {
            rc = baton_err_set(err, BATON_ERR_ARG, "%s: not a regular file or folder; an upload holds only those", path);
        } else {
            uint8_t *data = NULL;
            size_t len;
            if (!(rc = baton_file_read_all(path, max, &data, &len, err)) && !(rc = put_header(b, name, 0, len, err))) {
                static const uint8_t zero[BLOCK];
                if (baton_buf_append(b, data, len) || (len % BLOCK && baton_buf_append(b, zero, BLOCK - len % BLOCK)))
                    rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
            }
            free(data);
        }
        if (!rc && b->len > max) rc = baton_err_set(err, BATON_ERR_USAGE, "%s: over %zu bytes for an upload", dir, max);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    return rc;
}

int league_tar_write(baton_buf *b, const char *dir, const char *as, size_t max, baton_err *err)
{
    int rc = write_dir(b, dir, as, 1, max, err);
    static const uint8_t end[2 * BLOCK];
    if (!rc && baton_buf_append(b, end, sizeof end)) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    return rc;
}
