/* league_alias.c — what an alias may be (league.h, invariant 4): the one check every way in
 * takes (race submit, race token add, POST /api/submit).
 *
 * Contract: an alias is 1-64 bytes of well-formed UTF-8 (Unicode's table 3-7: no overlong form,
 * no surrogate, nothing above U+10FFFF) that reads the same wherever it is shown:
 *   1. no control character (C0, DEL, C1, U+2028/2029) and no character that is invisible or
 *      moves text around it (soft hyphen, zero-width and joiner characters, bidi embeddings,
 *      overrides and isolates, U+FEFF, tag characters), no noncharacter or private-use code point;
 *   2. spaces are ' ' only, never first, last or two in a row (a page collapses them);
 *   3. letters of at most one of the scripts whose letters pass for each other's — Latin, Greek,
 *      Cyrillic, Armenian, Cherokee: "\u0430lice" (a Cyrillic a) is refused, where "alice",
 *      "алиса" and "Tarō山田" are not. An alias wholly in another script stays distinct from its
 *      Latin look-alike: it is stored and shown as its code points are.
 * Each refusal names the byte offset and, past ASCII, the code point. */
#include "league_internal.h"

#include <string.h>

/* One code point from p[0..n) per table 3-7; its length, or 0 when the bytes are not one. */
static size_t utf8_next(const unsigned char *p, size_t n, unsigned *cp)
{
    unsigned c = p[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;   /* the second byte's range */
    if (c < 0x80) return *cp = c, 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, *cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) len = 3, *cp = c & 0x0f, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, *cp = c & 0x07, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return 0;
    if (len > n || p[1] < lo || p[1] > hi) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80) return 0;
        *cp = (*cp << 6) | (p[k] & 0x3f);
    }
    return len;
}

/* Rule 1: what it is, or NULL for a character an alias may hold. */
static const char *unseen(unsigned c)
{
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029) return "a control character";
    if (c == 0xad || c == 0x61c || c == 0x180e || (c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
        (c >= 0x2060 && c <= 0x206f) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe007f))
        return "an invisible or text-direction character";
    if ((c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe) return "a noncharacter";
    if ((c >= 0xe000 && c <= 0xf8ff) || c >= 0xf0000) return "a private-use character";
    return NULL;
}

static int other_space(unsigned c)
{
    return c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Rule 3: which of the look-alike scripts c is a letter of (0: none of them). */
enum { NONE, LATIN, GREEK, CYRILLIC, ARMENIAN, CHEROKEE };
static const char *const script_name[] = {"", "Latin", "Greek", "Cyrillic", "Armenian", "Cherokee"};

static int script_of(unsigned c)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == 0xaa || c == 0xba ||
        (c >= 0xc0 && c <= 0x2af && c != 0xd7 && c != 0xf7) || (c >= 0x1e00 && c <= 0x1eff) ||
        (c >= 0x2c60 && c <= 0x2c7f) || (c >= 0xa720 && c <= 0xa7ff) || (c >= 0xab30 && c <= 0xab6f) ||
        (c >= 0xff21 && c <= 0xff3a) || (c >= 0xff41 && c <= 0xff5a))
        return LATIN;
    if ((c >= 0x370 && c <= 0x3ff && c != 0x37e && c != 0x387) || (c >= 0x1f00 && c <= 0x1fff)) return GREEK;
    if ((c >= 0x400 && c <= 0x52f) || (c >= 0x1c80 && c <= 0x1c8f) || (c >= 0x2de0 && c <= 0x2dff) ||
        (c >= 0xa640 && c <= 0xa69f))
        return CYRILLIC;
    if ((c >= 0x531 && c <= 0x587) || (c >= 0xfb13 && c <= 0xfb17)) return ARMENIAN;
    if ((c >= 0x13a0 && c <= 0x13ff) || (c >= 0xab70 && c <= 0xabbf)) return CHEROKEE;
    return NONE;
}

int baton_league_alias_check(const char *alias, baton_err *err)
{
    size_t n = alias ? strlen(alias) : 0;
    if (n == 0) return baton_err_set(err, BATON_ERR_USAGE, "an alias is required");
    if (n > BATON_LEAGUE_ALIAS_MAX)
        return baton_err_set(err, BATON_ERR_USAGE, "alias is %zu bytes; at most %d", n, BATON_LEAGUE_ALIAS_MAX);
    const unsigned char *p = (const unsigned char *)alias;
    int script = NONE;
    unsigned script_cp = 0;
    size_t script_at = 0;
    for (size_t i = 0, len; i < n; i += len) {
        unsigned c;
        if (!(len = utf8_next(p + i, n - i, &c)))
            return baton_err_set(err, BATON_ERR_USAGE, "alias: not UTF-8 at byte %zu (0x%02x)", i, p[i]);
        const char *what = unseen(c);
        if (what && c < 0x80) return baton_err_set(err, BATON_ERR_USAGE, "alias: %s (0x%02x) at byte %zu", what, c, i);
        if (what) return baton_err_set(err, BATON_ERR_USAGE, "alias: %s (U+%04X) at byte %zu", what, c, i);
        if (other_space(c))
            return baton_err_set(err, BATON_ERR_USAGE, "alias: a space other than ' ' (U+%04X) at byte %zu", c, i);
        if (c == ' ' && (i == 0 || i + 1 == n || p[i + 1] == ' '))
            return baton_err_set(err, BATON_ERR_USAGE, "alias: a space %s at byte %zu (spaces go between words, one at a time)",
                                 i == 0 ? "first" : i + 1 == n ? "last" : "twice", i);
        int sc = script_of(c);
        if (sc != NONE && script != NONE && sc != script)
            return baton_err_set(err, BATON_ERR_USAGE,
                                 "alias: mixes %s and %s letters (U+%04X at byte %zu, U+%04X at byte %zu); an alias's letters "
                                 "are of one of them",
                                 script_name[script], script_name[sc], script_cp, script_at, c, i);
        if (sc != NONE && script == NONE) script = sc, script_cp = c, script_at = i;
    }
    return BATON_OK;
}
