/* test_util_json_read.c — baton_jr, the checked JSON reader (util.h): every getter on a document
 * with the field right, missing, of the wrong type and out of range, each failure's message naming
 * the document and the field's whole path ("d.json: car.grip: is 2000, outside 0..1000"); the error
 * sticky (after the first failure no getter writes its output, and the first message stays);
 * integers as numbers up to 2^53 and as decimal strings up to 2^64-1, nothing beyond; an element of
 * a list named with baton_jr_at; parse errors with their byte, line and column; text after the
 * object and a document that is not an object refused; numeric strings (" 0.5 ", " 20") read as
 * numbers only when the reader is told to (DeepRacer's files). */
#include "baton/util.h"
#include "check.h"

#include <cJSON.h>
#include <string.h>

static const char doc[] =
    "{\"n\": 7, \"big\": \"18446744073709551615\", \"over\": \"18446744073709551616\", \"frac\": 1.5,\n"
    " \"car\": {\"grip\": 2000, \"ok\": 3.5, \"on\": true, \"name\": \"ann\"}, \"rng\": [\"1\", \"ff\", \"0\", \"0\"],\n"
    " \"zero\": [\"0\", \"0\"], \"list\": [{\"x\": 1}, {\"x\": \"y\"}], \"e53\": 9007199254740994}";

static int fails(baton_jr *r, const char *want)
{
    int ok = r->rc == BATON_ERR_FORMAT && strstr(r->err->msg, want) != NULL;
    if (!ok) fprintf(stderr, "    want \"%s\", got rc %d \"%s\"\n", want, r->rc, r->err->msg);
    return ok;
}

int main(void)
{
    baton_err err = {0};
    baton_jr r;
    baton_jr_init(&r, "d.json", &err);
    r.strings = BATON_JR_DIGITS;
    cJSON *j = baton_jr_parse(&r, doc, strlen(doc));
    CHECK(j != NULL);
    uint64_t u = 0;
    double d = 0;
    char s[8];
    int b = 0;
    uint64_t w[4];
    CHECK(baton_jr_u64(&r, j, "n", 1, 10, &u) == BATON_OK && u == 7);
    CHECK(baton_jr_u64(&r, j, "big", 0, UINT64_MAX, &u) == BATON_OK && u == UINT64_MAX);
    CHECK(baton_jr_dbl(&r, j, "car.ok", 0, 4, &d) == BATON_OK && d == 3.5);
    CHECK(baton_jr_bool(&r, j, "car.on", &b) == BATON_OK && b == 1);
    CHECK(baton_jr_str(&r, j, "car.name", s, sizeof s) == BATON_OK && !strcmp(s, "ann"));
    CHECK(baton_jr_hex64(&r, j, "rng", 4, w) == BATON_OK && w[0] == 1 && w[1] == 255);
    CHECK(baton_jr_obj(&r, j, "car") != NULL && baton_jr_get(&r, j, "nothing") == NULL && r.rc == BATON_OK);
    /* each failure, from a fresh reader */
    struct {
        int kind;
        const char *path, *want;
    } bad[] = {
        {0, "n", "d.json: n: is 7, outside 8..9"},
        {0, "over", "d.json: over: is not a whole number in 0..2^53"},
        {0, "frac", "frac: is not a whole number"},
        {0, "e53", "e53: is not a whole number"},
        {0, "car.nothing", "d.json: car.nothing: is missing"},
        {1, "car.grip", "d.json: car.grip: is 2000, outside 0..1000"},
        {1, "car.name", "car.name: is not a number"},
        {2, "car.name", "car.name: is 3 bytes long (at most 2)"},
        {2, "n", "n: is not a string"},
        {3, "car.grip", "car.grip: is not true or false"},
        {4, "zero", "zero: is all zero"},
        {4, "rng", "rng: is not a list of 2 hex words"},
        {5, "n", "d.json: n: is not an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        baton_jr q;
        baton_err e2 = {0};
        baton_jr_init(&q, "d.json", &e2);
        q.strings = BATON_JR_DIGITS;
        uint64_t uu = 42;
        double dd = 42;
        char ss[3] = "x";
        int bb = 42;
        uint64_t ww[2] = {42, 42};
        switch (bad[i].kind) {
        case 0: baton_jr_u64(&q, j, bad[i].path, 8, 9, &uu); break;
        case 1: baton_jr_dbl(&q, j, bad[i].path, 0, 1000, &dd); break;
        case 2: baton_jr_str(&q, j, bad[i].path, ss, sizeof ss); break;
        case 3: baton_jr_bool(&q, j, bad[i].path, &bb); break;
        case 4: baton_jr_hex64(&q, j, bad[i].path, 2, ww); break;
        default: CHECK(baton_jr_obj(&q, j, bad[i].path) == NULL); break;
        }
        CHECK_MSG(fails(&q, bad[i].want), "case %zu", i);
        CHECK_MSG(uu == 42 && dd == 42 && !strcmp(ss, "x") && bb == 42 && ww[0] == 42, "case %zu wrote its output", i);
    }
    /* sticky: the first failure stays, later getters write nothing */
    baton_jr_u64(&r, j, "car.grip", 0, 10, &u);
    char first[sizeof err.msg];
    snprintf(first, sizeof first, "%s", err.msg);
    u = 5, d = 5;
    CHECK(baton_jr_u64(&r, j, "n", 0, 10, &u) == BATON_ERR_FORMAT && u == 5);
    CHECK(baton_jr_dbl(&r, j, "car.ok", 0, 10, &d) == BATON_ERR_FORMAT && d == 5);
    CHECK(baton_jr_fail(&r, "n", "another") == BATON_ERR_FORMAT && !strcmp(err.msg, first) && strstr(first, "car.grip"));
    CHECK(baton_jr_get(&r, j, "n") == NULL && baton_jr_obj(&r, j, "car") == NULL);
    /* digits are numbers only when asked */
    baton_jr_init(&r, "d.json", &err);
    CHECK(baton_jr_u64(&r, j, "big", 0, UINT64_MAX, &u) == BATON_ERR_FORMAT && strstr(err.msg, "big: is not a whole number"));
    /* an element of a list */
    baton_jr_init(&r, "d.json", &err);
    const cJSON *x;
    size_t i = 0;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(j, "list"))
    {
        baton_jr_at(&r, "list[%zu]", i++);
        baton_jr_u64(&r, x, "x", 0, 10, &u);
    }
    CHECK(fails(&r, "d.json: list[1].x: is not a whole number"));
    cJSON_Delete(j);
    /* parsing */
    const char *texts[][2] = {
        {"{\"a\": 1,\n  \"b\" 2}", "d.json: not JSON: at byte 15 (line 2, column 7)"},
        {"{\"a\": 1} x", "d.json: text after the JSON object (at byte 9)"},
        {"[1, 2]", "d.json: not a JSON object"},
        {"", "d.json: not JSON: at byte 0 (line 1, column 1)"},
    };
    for (size_t k = 0; k < 4; k++) {
        baton_jr_init(&r, "d.json", &err);
        CHECK(baton_jr_parse(&r, texts[k][0], strlen(texts[k][0])) == NULL);
        CHECK_MSG(fails(&r, texts[k][1]), "text %zu", k);
    }
    baton_jr_init(&r, "d.json", &err);
    j = baton_jr_parse(&r, "{\"a\": 1} \n\t", 11);
    CHECK(j && r.rc == BATON_OK);
    cJSON_Delete(j);
    /* numeric strings (DeepRacer's files): only when asked */
    const char *ds = "{\"lr\": \" 0.5 \", \"n\": \" 20\", \"bad\": \"fast\", \"blank\": \" \"}";
    baton_jr_init(&r, "h.json", &err);
    j = baton_jr_parse(&r, ds, strlen(ds));
    CHECK(baton_jr_dbl(&r, j, "lr", 0, 1, &d) == BATON_ERR_FORMAT && strstr(err.msg, "h.json: lr: is not a number"));
    baton_jr_init(&r, "h.json", &err);
    r.strings = BATON_JR_NUMERIC;
    CHECK(baton_jr_dbl(&r, j, "lr", 0, 1, &d) == BATON_OK && d == 0.5);
    CHECK(baton_jr_u64(&r, j, "n", 1, 100, &u) == BATON_OK && u == 20);
    CHECK(baton_jr_dbl(&r, j, "blank", 0, 1, &d) == BATON_ERR_FORMAT && strstr(err.msg, "blank: is not a number"));
    baton_jr_init(&r, "h.json", &err);
    r.strings = BATON_JR_NUMERIC;
    CHECK(baton_jr_dbl(&r, j, "bad", 0, 1, &d) == BATON_ERR_FORMAT && strstr(err.msg, "bad: is not a number"));
    cJSON_Delete(j);
    /* baton_jr_value: any value, nothing but white space after it, no message either way */
    const char *vals[][2] = {{"[1, 2] \n", "array"}, {"\"s\"", "string"}, {"{}", "object"}};
    for (size_t k = 0; k < 3; k++) {
        j = baton_jr_value(vals[k][0], strlen(vals[k][0]));
        CHECK_MSG(j != NULL, "%s", vals[k][1]);
        cJSON_Delete(j);
    }
    const char *nots[] = {"", "{", "{} x", "[1] [2]", "nul"};
    for (size_t k = 0; k < 5; k++) CHECK_MSG(baton_jr_value(nots[k], strlen(nots[k])) == NULL, "not JSON %zu", k);
    CHECK(baton_jr_value(NULL, 0) == NULL);
    /* len bounds the text */
    j = baton_jr_value("{\"a\": 1} trailing", 8);
    CHECK(cJSON_IsObject(j));
    cJSON_Delete(j);
    CHECK_DONE();
}
