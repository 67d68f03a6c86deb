/* infer_internal.h — the infer component's private pieces: the fast path's compiled plan (fast.c)
 * and the engine structure shared by engine.c and bench.c. Nothing outside src/infer includes this. */
#ifndef BATON_INFER_INTERNAL_H
#define BATON_INFER_INTERNAL_H

#include "baton/infer.h"

typedef struct infer_fast infer_fast;

/* User-edited tables (text.c): a NUL-terminated copy of text (an error when it holds a NUL byte
 * or memory runs out); the next line of *s, cut in place and trimmed, blank lines and #
 * comments skipped (NULL at the end; *line counts the lines read); trimming of one field. */
int infer_text_copy(const char *name, const char *text, size_t len, char **out, baton_err *err);
char *infer_text_line(char **s, size_t *line);
void infer_text_trim(char **s);

/* Compile m (weights read, not kept) for a fixed batch: see fast.c's header. */
int infer_fast_build(const baton_nn_model *m, int batch, infer_fast **out, baton_err *err);
int infer_fast_run(infer_fast *f, const float *x, float *logits, baton_err *err);
int infer_fast_nprims(const infer_fast *f);
size_t infer_fast_bytes(const infer_fast *f);
void infer_fast_free(infer_fast *f);

struct baton_infer_engine {
    baton_infer_info info;
    baton_nn_model *ref;     /* REFERENCE path: the model itself, evaluation mode */
    infer_fast *fast;        /* FAST path */
};

#endif
