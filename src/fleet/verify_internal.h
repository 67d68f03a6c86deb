/* verify_internal.h — what verify.c (running the command) and verify_compare.c (reading and
 * comparing the event logs) share. Private to src/fleet. */
#ifndef BATON_VERIFY_INTERNAL_H
#define BATON_VERIFY_INTERNAL_H

#include "baton/fleet.h"

#include <stdint.h>

/* One line of a BATON_VERIFY_LOG file (util.h says who writes which). */
enum { VEV_NONE = 0, VEV_RESUME, VEV_BATCH, VEV_LOSS, VEV_CKPT };
typedef struct vevent {
    int type;
    uint64_t step;              /* resume, loss, ckpt: as logged */
    uint64_t epoch, first, digest;   /* batch */
    uint32_t n;
    int has_loss;               /* a loss line may carry only its step */
    double loss;
    char model[65], optim[65];  /* ckpt: SHA-256 hex */
} vevent;

/* Parse one line (without its newline): 1 and *e for an event, 0 for anything else (ignored). */
int verify_parse_line(const char *line, size_t len, vevent *e);

/* The step of each event of one process's log, in order: a resume event starts a segment at its
 * step; the segment's k-th batch is step resume + k. */
typedef struct vseg {
    uint64_t resume, k;
    uint64_t last;              /* the highest step seen */
    int progressed;             /* a batch or loss seen since the resume: training is under way */
} vseg;
/* The step e stands for (0 for a resume event), updating s. */
uint64_t verify_seg_step(vseg *s, const vevent *e);

/* The uninterrupted run's log, by step. */
typedef struct vref vref;
int verify_ref_load(const char *path, vref **out, baton_err *err);
void verify_ref_free(vref *v);
uint64_t verify_ref_steps(const vref *v);   /* the last step it reached */

/* Hold every event of the interrupted runs' logs (paths[0..n-1], one per process, in order) to the
 * reference, and the whole to its length and its last checkpoint; the first difference by step goes
 * into r (cause, step, what) unless r already holds an earlier one; counts into r. failed_step > 0:
 * the runs failed there (r's cause FAILED is a candidate at that step). */
int verify_compare(const vref *ref, char *const *paths, int n, uint64_t failed_step, const char *failed_what,
                   baton_verify_report *r, baton_err *err);

/* Read a whole log (a missing file is an empty log). */
int verify_read_log(const char *path, char **text, size_t *len, baton_err *err);

#endif
