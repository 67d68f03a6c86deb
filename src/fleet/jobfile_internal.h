/* jobfile_internal.h — the job-file parser's two files: jobfile.c (the fields of a job file) and
 * jobfile_yaml.c (walking the libyaml document: values, mappings, lists, flattened sections).
 * Nothing else includes this. */
#ifndef BATON_FLEET_JOBFILE_INTERNAL_H
#define BATON_FLEET_JOBFILE_INTERNAL_H

#include "fleet_parts.h"

#include <yaml.h>

typedef struct ctx {
    const char *file;
    yaml_document_t *doc;
    baton_err *err;
    baton_job *job;
    int has_random;     /* market.random was given */
} ctx;

static inline int line_of(const yaml_node_t *n) { return n ? (int)n->start_mark.line + 1 : 0; }
static inline yaml_node_t *node_at(ctx *c, int idx) { return yaml_document_get_node(c->doc, idx); }

/* "FILE:LINE: FIELD: message" as BATON_ERR_FORMAT in c->err; returns the code. */
int jf_fail(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
const char *jf_kind_name(const yaml_node_t *n);   /* "a mapping", "a list", "a scalar" */
/* A scalar's text; fails on non-scalars and on embedded NULs. */
int jf_scalar(ctx *c, const yaml_node_t *n, const char *field, const char **out);
int jf_get_string(ctx *c, const yaml_node_t *n, const char *field, char *dst, size_t cap);
int jf_get_strdup(ctx *c, const yaml_node_t *n, const char *field, char **dst);   /* not empty */
/* a finite number in [lo, hi]; what names the expected value in the error */
int jf_get_number(ctx *c, const yaml_node_t *n, const char *field, double lo, double hi, const char *what,
                  double *out);
int jf_get_int(ctx *c, const yaml_node_t *n, const char *field, long lo, long hi, long *out);
int jf_get_duration(ctx *c, const yaml_node_t *n, const char *field, double *out);
int jf_get_bool(ctx *c, const yaml_node_t *n, const char *field, int *out);

/* Iterate a mapping: checks keys are scalars and unique; calls fn for each pair. */
typedef int (*pair_fn)(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg,
                       const char *path);
int jf_each_pair(ctx *c, yaml_node_t *map, const char *path, pair_fn fn, void *arg);
/* Iterate a list: calls fn for each item with its path "path[i]"; what names the expected list in
 * the error for a node that is not one ("a list of zone names"). */
typedef int (*item_fn)(ctx *c, yaml_node_t *item, const char *path, void *arg);
int jf_each_item(ctx *c, yaml_node_t *seq, const char *path, const char *what, item_fn fn, void *arg);
/* "unknown field (known here: KNOWN)" */
int jf_unknown(ctx *c, yaml_node_t *kn, const char *path, const char *known);
/* Room for element n of an array that only jf_grow enlarges (zeroed; doubling capacity). */
int jf_grow(void **arr, size_t n, size_t elem, baton_err *err, const char *file);

/* A section flattened to "path.key" = value pairs (lists as path.0, path.1, ...) with their lines,
 * appended to *arr; depth counts the nesting (at most 8). */
typedef struct flat_arg {
    baton_job_kv **arr;
    size_t *n;
    int depth;
} flat_arg;
int jf_add_kv(ctx *c, baton_job_kv **arr, size_t *n, const char *key, const char *value, int line);
int jf_flatten(ctx *c, yaml_node_t *n, const char *path, flat_arg *fa);
/* a pair_fn flattening the pair's value (arg: the flat_arg) */
int jf_flatten_pair(ctx *c, const char *key, yaml_node_t *kn, yaml_node_t *vn, void *arg, const char *path);

#endif
