/* util_json.h — JSON for every component (part of util.h, which includes it): the one writer
 * (baton_json_print: numbers that read back bit for bit) and the one reader (baton_jr: checked
 * fields with a sticky error naming document and field; baton_jr_value for text judged by its
 * caller). No other file calls cJSON_Parse (tests/lint/check-code.sh checks).
 *
 * Contract: as util.h's. */
#ifndef BATON_UTIL_JSON_H
#define BATON_UTIL_JSON_H

#include "baton/util.h"

/* ---- JSON text whose numbers read back bit for bit (src/util/json.c) ---- */
struct cJSON;
/* cJSON_Print (formatted) or cJSON_PrintUnformatted of j alone, every finite number written with
 * the fewest digits (15-17) that strtod reads back to the same double; j is left as it was.
 * malloc'd; NULL when out of memory. */
char *baton_json_print(const struct cJSON *j, int formatted);
/* d as that text into out; returns the digits used. */
int baton_json_number_format(double d, char out[32]);
/* j written to f as one document that may also be read line by line: an object's members one per
 * line, and each element of a member that is a list on a line of its own:
 *   {"rows":[\n{...},\n{...}\n],\n"pick":{...}}\n
 * (anything but an object: baton_json_print's text and a newline); numbers as baton_json_print
 * writes them. BATON_OK, or BATON_ERR_NOMEM. */
int baton_json_write_lines(FILE *f, const struct cJSON *j);

/* ---- reading checked JSON from outside (src/util/json_read.c) ---- */
/* A reader of one JSON document with a sticky error, as Redis's rio: the first failure is kept
 * (r->rc and *err) and every later call does nothing and returns it, so a parser reads field after
 * field and looks at the outcome once. Every message names the document and the field:
 * "state.json: car.grip_mps2: is 2000, outside 0..1000". A path is one or more keys joined by '.'
 * and is looked up from the object given, so a nested field may be read from the root; r->at
 * (baton_jr_at: an element of a list, "shards[3]") goes before it in messages. Integers are JSON
 * numbers that are whole, >= 0 and below 2^53 (exact in a double), and strings where r->strings
 * says so. */
typedef struct baton_jr {
    const char *doc;            /* the document as messages name it: "state.json" */
    baton_err *err;
    int rc;                     /* BATON_OK, or the first failure's code */
    int strings;                /* BATON_JR_*: which strings count as numbers */
    char at[64];
} baton_jr;
enum {
    BATON_JR_NUMBERS = 0,       /* numbers only (the default) */
    BATON_JR_DIGITS = 1,        /* integers also as strings of 1..20 decimal digits: any uint64 (state.json's seeds) */
    BATON_JR_NUMERIC = 2,       /* any number also as a string holding one, white space around it allowed, as
                                 * Python's float() and int() read DeepRacer's files */
};
void baton_jr_init(baton_jr *r, const char *doc, baton_err *err);
/* text as one JSON object with nothing but white space after it (else NULL, the message giving
 * the byte where parsing stopped); cJSON_Delete it. */
struct cJSON *baton_jr_parse(baton_jr *r, const char *text, size_t len);
/* text (len bytes; NULL: none) as one JSON value of any kind with nothing but white space after it,
 * else NULL and no message: for a caller that judges a NULL itself (names the document in its own
 * message, or takes a missing value as "none"), or parses text baton wrote. cJSON_Delete it. */
struct cJSON *baton_jr_value(const char *text, size_t len);
/* Fail at path (NULL: the document itself) with the message DOC: [AT.]PATH: WHAT. */
int baton_jr_fail(baton_jr *r, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void baton_jr_at(baton_jr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The value at path, NULL when absent (not an error) or after a failure. */
const struct cJSON *baton_jr_get(baton_jr *r, const struct cJSON *o, const char *path);
/* Required: an object; an integer in lo..hi; a finite number in lo..hi; a string of 1..cap-1 bytes;
 * true or false (*v 1 or 0); a list of n strings of 1..16 hex digits, not all zero (a generator's
 * state). Each returns r->rc. */
const struct cJSON *baton_jr_obj(baton_jr *r, const struct cJSON *o, const char *path);
int baton_jr_u64(baton_jr *r, const struct cJSON *o, const char *path, uint64_t lo, uint64_t hi, uint64_t *v);
int baton_jr_dbl(baton_jr *r, const struct cJSON *o, const char *path, double lo, double hi, double *v);
int baton_jr_str(baton_jr *r, const struct cJSON *o, const char *path, char *out, size_t cap);
int baton_jr_bool(baton_jr *r, const struct cJSON *o, const char *path, int *v);
int baton_jr_hex64(baton_jr *r, const struct cJSON *o, const char *path, size_t n, uint64_t *out);

#endif
