/* infer_internal.h — the infer component's private pieces: the engine structure shared by engine.c
 * and bench.c, and the planners' helpers. Nothing outside src/infer includes this. */
#ifndef BATON_INFER_INTERNAL_H
#define BATON_INFER_INTERNAL_H

#include "baton/infer.h"

/* User-edited tables (text.c): a NUL-terminated copy of text (an error when it holds a NUL byte
 * or memory runs out); the next line of *s, cut in place and trimmed, blank lines and #
 * comments skipped (NULL at the end; *line counts the lines read); trimming of one field. */
int infer_text_copy(const char *name, const char *text, size_t len, char **out, baton_err *err);
char *infer_text_line(char **s, size_t *line);
void infer_text_trim(char **s);

/* Money as the planners print it: "-" below zero, 4 decimals from a cent up, 6 below (plan_report.c). */
void infer_money_text(char *b, size_t n, double v);

/* What a pick rests on, in words, into b (plan_report.c); returns b. */
const char *infer_pick_basis(const baton_plan_row *r, char *b, size_t n);

/* The planner's projection (plan_project.c): the FLOP efficiency a measurement shows (achieved /
 * peak; 0 when flops, mean or peak is unknown); the projection of measured row r (from stats s)
 * onto cf into q, 1 on success, or 0 with why (the reason it is not projected) filled. */
double infer_efficiency(const baton_infer_stats *s);
int infer_project(const baton_infer_stats *s, const baton_plan_row *r, const baton_infer_config *cf,
                  baton_plan_row *q, char *why, size_t cap);

struct baton_infer_engine {
    baton_infer_info info;
    baton_nn_model *ref;     /* REFERENCE path: the model itself, evaluation mode */
    baton_nn_infer_plan *fast;   /* FAST path: nn's folded inference plan */
};

/* bench.c */
/* The timed part alone on an open engine (first, warm-up, loop; fills the latency fields). */
int infer_bench_engine(baton_infer_engine *e, const baton_infer_bench_opts *o, baton_infer_stats *st,
                             baton_err *err);
/* plan_report.c: one row as JSON */
char *infer_plan_row_json(const baton_plan_row *r);   /* malloc'd, no newline */

#endif
