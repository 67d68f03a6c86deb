/* test_util_json.c — numbers that round-trip (util.h, baton_json_print): a property test over
 * random doubles (random bit patterns, every exponent, subnormals, both zeros, and decimals such
 * as 0.1 + 0.2 whose 15-digit text cJSON would accept) — each printed inside an object, formatted
 * and not, and parsed back by cJSON, must come back with the same bits; the shortest text is used
 * (15 digits when that reads back); the tree is left as it was (numbers still numbers, siblings
 * untouched); non-finite numbers print as null. How many of the same doubles plain cJSON gets
 * wrong is printed, for the record. */
#include "baton/util.h"
#include "check.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int same_bits(double a, double b) { return !memcmp(&a, &b, sizeof a); }

static double draw(baton_rng *r, int k)
{
    uint64_t u = baton_rng_next(r);
    double d;
    switch (k % 4) {
    case 0: memcpy(&d, &u, sizeof d); break;                                     /* any bits */
    case 1: d = (double)(u % 100000) / 1000.0 + (double)(u >> 40) * 1e-9; break;   /* metric-like decimals */
    case 2: d = (double)(u % 1000) * 0.1 + 0.2; break;
    default: d = ldexp((double)(u >> 11), (int)(u % 200) - 1174); break;         /* subnormals and tiny */
    }
    return d;
}

int main(void)
{
    baton_rng r;
    baton_rng_seed(&r, 2026);
    size_t tested = 0, plain_wrong = 0;
    int all_same = 1, shortest = 1;
    for (int k = 0; k < 60000; k++) {
        double d = draw(&r, k);
        if (!isfinite(d)) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "v", d);
        for (int fmt = 0; fmt < 2; fmt++) {
            char *s = baton_json_print(o, fmt);
            cJSON *back = cJSON_Parse(s);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(back, "v");
            all_same &= cJSON_IsNumber(v) && same_bits(v->valuedouble, d);
            cJSON_Delete(back);
            free(s);
        }
        char txt[32];
        int prec = baton_json_number_format(d, txt);
        if (prec > 15) {   /* fewer digits would not have read back */
            char fewer[64];
            if (snprintf(fewer, sizeof fewer, "%.*g", prec - 1, d) >= (int)sizeof fewer) shortest = 0;
            shortest &= !same_bits(strtod(fewer, NULL), d);
        }
        char *p = cJSON_PrintUnformatted(o);
        cJSON *pb = cJSON_Parse(p);
        plain_wrong += !same_bits(cJSON_GetObjectItemCaseSensitive(pb, "v")->valuedouble, d);
        cJSON_Delete(pb);
        free(p);
        cJSON_Delete(o);
        tested++;
    }
    CHECK(all_same && tested > 57000);
    CHECK(shortest);
    printf("%zu doubles: all read back bit for bit; plain cJSON got %zu wrong\n", tested, plain_wrong);
    CHECK(plain_wrong > 0);   /* the defect this fixes is real for these inputs */

    /* known cases and the tree left as it was */
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "a");
    cJSON_AddItemToArray(a, cJSON_CreateNumber(0.1 + 0.2));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(-0.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(3));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(0.5));
    cJSON_AddStringToObject(o, "s", "x");
    char *s = baton_json_print(o, 0);
    CHECK(s && !strcmp(s, "{\"a\":[0.30000000000000004,-0,3,null,0.5],\"s\":\"x\"}"));
    free(s);
    CHECK(cJSON_IsNumber(cJSON_GetArrayItem(a, 0)) && cJSON_GetArrayItem(a, 0)->valuedouble == 0.1 + 0.2 &&
          cJSON_GetArrayItem(a, 0)->valuestring == NULL && cJSON_IsString(cJSON_GetObjectItem(o, "s")));
    s = baton_json_print(cJSON_GetArrayItem(a, 2), 0);   /* one item of a list: itself only */
    CHECK(s && !strcmp(s, "3"));
    free(s);
    char *again = cJSON_PrintUnformatted(o);   /* cJSON still prints the tree as before */
    CHECK(again && strstr(again, "\"s\":\"x\""));
    free(again);
    cJSON_Delete(o);
    CHECK(baton_json_print(NULL, 0) == NULL);
    CHECK_DONE();
}
