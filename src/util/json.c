/* json.c — printing cJSON trees so that every number reads back bit for bit (util.h).
 *
 * cJSON prints a double with 15 significant digits whenever that reads back *approximately* equal
 * (within DBL_EPSILON), so a value like 0.1 + 0.2 comes back as another double: a resumed run's
 * metrics, losses or clocks drift in their last bits. baton_json_print turns every finite number
 * of the tree into the shortest of %.15g, %.16g and %.17g that strtod reads back to the same bits,
 * prints, and puts the tree back as it was.
 *
 * Contract: the tree is unchanged afterwards; non-finite numbers print as cJSON prints them
 * (null); the result is malloc'd (free it), NULL when out of memory. */
#include "baton/util.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int baton_json_number_format(double d, char out[32])
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 32, "%.*g", prec, d);
        double back = strtod(out, NULL);
        if (!memcmp(&back, &d, sizeof d)) return prec;
    }
    return 17;   /* not reached for a finite double: 17 digits always read back */
}

/* Numbers to raw text (dir 1) or back (dir 0). */
static int swap(cJSON *j, int dir)
{
    for (cJSON *c = j; c; c = c->next) {
        if (dir && (c->type & 0xff) == cJSON_Number && isfinite(c->valuedouble)) {
            char s[32];
            baton_json_number_format(c->valuedouble, s);
            char *t = strdup(s);
            if (!t) return -1;
            c->valuestring = t;
            c->type = (c->type & ~0xff) | cJSON_Raw;
            c->type |= 0x4000;   /* ours to restore: a flag bit cJSON does not use */
        } else if (!dir && (c->type & 0x4000)) {
            free(c->valuestring);
            c->valuestring = NULL;
            c->type = (c->type & ~(0xff | 0x4000)) | cJSON_Number;
        }
        if (c->child && swap(c->child, dir)) return -1;
    }
    return 0;
}

char *baton_json_print(const cJSON *cj, int formatted)
{
    if (!cj) return NULL;
    cJSON *j = (cJSON *)cj;   /* changed only for the printing, and put back: logically const */
    cJSON *next = j->next;
    j->next = NULL;   /* the item alone, not its siblings */
    char *s = NULL;
    if (swap(j, 1) == 0) s = formatted ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
    swap(j, 0);
    j->next = next;
    return s;
}

/* s as a JSON string (escaped), written to f; -1 when out of memory */
static int put_key(FILE *f, const char *s)
{
    cJSON *k = cJSON_CreateString(s);
    char *t = k ? cJSON_PrintUnformatted(k) : NULL;
    cJSON_Delete(k);
    if (!t) return -1;
    fprintf(f, "%s:", t);
    cJSON_free(t);
    return 0;
}

int baton_json_write_lines(FILE *f, const cJSON *j)
{
    if (!cJSON_IsObject(j)) {
        char *s = baton_json_print(j, 0);
        if (!s) return BATON_ERR_NOMEM;
        fprintf(f, "%s\n", s);
        free(s);
        return BATON_OK;
    }
    fputc('{', f);
    for (const cJSON *m = j->child; m; m = m->next) {
        if (put_key(f, m->string ? m->string : "")) return BATON_ERR_NOMEM;
        if (cJSON_IsArray(m)) {
            fputs("[\n", f);
            for (const cJSON *x = m->child; x; x = x->next) {
                char *s = baton_json_print(x, 0);
                if (!s) return BATON_ERR_NOMEM;
                fprintf(f, "%s%s\n", s, x->next ? "," : "");
                free(s);
            }
            fputc(']', f);
        } else {
            char *s = baton_json_print(m, 0);
            if (!s) return BATON_ERR_NOMEM;
            fputs(s, f);
            free(s);
        }
        if (m->next) fputs(",\n", f);
    }
    fputs("}\n", f);
    return BATON_OK;
}
