/* fleet.h — the fleet side of the spot component: the job file every fleet backend reads, and
 * (below it) the local backend's pieces: the spot-market simulator, the persistent volume with its
 * snapshots, cost accounting, the per-worker state machine, the event history and the supervisor.
 *
 * The job file is YAML (parsed with libyaml); docs/jobfile.md is its reference. Every error names
 * the file, the line and the field ("job.yaml:12: instance_types[1].spot_price: expected a number
 * of dollars per hour, got 'cheap'"). Backends other than local (slurm, aws) read the same file; the
 * fields only they understand live in their own sections (`slurm:`, `aws:`) and reach them as
 * key/value pairs with line numbers, so each backend validates its own options.
 *
 * Layering: spot (this header) depends on train's headers only through ckpt (checkpoint listing
 * for work-lost accounting) and on util. Errors are values; nothing here exits. */
#ifndef BATON_FLEET_H
#define BATON_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "baton/util.h"

/* ---------------------------------------------------------------------------------------------
 * Job file (src/spot/jobfile.c)
 * --------------------------------------------------------------------------------------------- */
#define BATON_JOB_MAX_BYTES (1u << 20)    /* a job file is small; refuse anything over 1 MiB */
#define BATON_JOB_NAME_MAX 64
#define BATON_JOB_MAX_TYPES 64
#define BATON_JOB_MAX_ZONES 32
#define BATON_JOB_MAX_COMMANDS 256

typedef enum { BATON_BACKEND_LOCAL = 0, BATON_BACKEND_SLURM, BATON_BACKEND_AWS } baton_backend;
typedef enum { BATON_ALLOC_LOWEST_PRICE = 0, BATON_ALLOC_CAPACITY_OPTIMIZED } baton_alloc;

/* Spot Instance Advisor interruption-frequency buckets (share of instances reclaimed per month). */
typedef enum { BATON_BUCKET_LT5 = 0, BATON_BUCKET_5_10, BATON_BUCKET_10_15, BATON_BUCKET_15_20,
               BATON_BUCKET_GT20, BATON_BUCKET_COUNT } baton_bucket;

typedef struct baton_job_zone_price {
    char zone[64];
    double price;                 /* USD per hour */
} baton_job_zone_price;

typedef struct baton_job_type {
    char name[64];                /* e.g. "c5.xlarge" */
    double on_demand_price;       /* USD per hour */
    double spot_price;            /* USD per hour in every zone without an entry in zone_prices */
    baton_job_zone_price *zone_prices;
    size_t nzone_prices;
    double speed;                 /* relative speed (work per hour), default 1 */
    baton_bucket bucket;          /* interruption frequency */
    int from_catalog;             /* prices/speed/bucket defaulted from the built-in catalog */
    int line;
} baton_job_type;

/* One entry of the explicit interruption schedule: the k-th entry naming task T interrupts the
 * k-th instance launched for T, `after` simulated seconds after it started running, with `notice`
 * simulated seconds of warning (0: none, the instance just dies). */
typedef struct baton_job_interrupt {
    int task;
    double after, notice;
    int line;
} baton_job_interrupt;

/* A field of a backend section (`slurm:`, `aws:`) or of `env:`, flattened: nested maps give
 * dotted keys ("aws.tags.team"), sequences give indices ("aws.security_groups.0"). */
typedef struct baton_job_kv {
    char *key, *value;
    int line;
} baton_job_kv;

typedef struct baton_job {
    char path[1024];              /* where it was read from ("-" or a name for text) */
    char name[BATON_JOB_NAME_MAX + 1];
    baton_backend backend;
    char **commands;              /* run by /bin/sh -c in the volume folder; one per task */
    size_t ncommands;
    int target_capacity;          /* instances running at once (default: the number of commands) */
    baton_alloc alloc;
    int retries;                  /* crashes tolerated per task before it fails (default 2) */
    baton_job_type *types;
    size_t ntypes;
    char zones[BATON_JOB_MAX_ZONES][64];
    size_t nzones;
    char state_dir[1024];         /* "" : the caller's default */
    struct {
        char checkpoints[256];    /* folder inside the volume with ckpt-<step>/ (default "ckpt") */
        char seed[1024];          /* copied into a new volume once ("" none) */
        double size_gb;           /* for backends that create real volumes (default 20) */
    } volume;
    struct {
        double time_scale;        /* simulated seconds per wall second (default 1) */
        uint64_t seed;
        double launch_delay;      /* simulated seconds from request to running (default 90) */
        double notice;            /* simulated seconds of notice (default 120) */
        double hazard_scale;      /* multiplies every type's hazard (default 1; stress tests) */
        double capacity_cooldown; /* a pool that reclaimed an instance has none this long (3600) */
        int random;               /* draw interruptions from the hazard (default: 1 unless a
                                     schedule is given) */
        baton_job_interrupt *interrupts;
        size_t ninterrupts;
    } market;
    baton_job_kv *env;            /* extra environment for every worker */
    size_t nenv;
    baton_job_kv *backend_opts;   /* the `slurm:` and `aws:` sections, flattened */
    size_t nbackend_opts;
} baton_job;

/* Parse a job file. Every error names path, line and field. Unknown fields are errors (a typo
 * must not be silently ignored); backend sections are kept for their backend to check. Instance
 * types named without prices are looked up in the built-in catalog (an unknown one is an error
 * that lists the known names). */
int baton_job_load(const char *path, baton_job *job, baton_err *err);
int baton_job_parse(const char *name, const char *text, size_t len, baton_job *job, baton_err *err);
void baton_job_free(baton_job *job);

const char *baton_backend_name(baton_backend b);
const char *baton_alloc_name(baton_alloc a);
const char *baton_bucket_name(baton_bucket b);
/* Parse "<5%", "5-10%", "10-15%", "15-20%", ">20%" (the % optional). 0 on success. */
int baton_bucket_parse(const char *s, baton_bucket *b);
/* Parse a duration: a number of seconds, or a number with s, m, h or d. 0 on success. */
int baton_duration_parse(const char *s, double *seconds);
/* The spot price of a type in a zone. */
double baton_job_spot_price(const baton_job_type *t, const char *zone);
/* A backend option by key (NULL if absent). */
const baton_job_kv *baton_job_backend_opt(const baton_job *job, const char *key);

/* Built-in catalog of instance types (illustrative us-east-1 Linux prices). */
typedef struct baton_catalog_entry {
    const char *name;
    double on_demand_price, spot_price, speed;
    baton_bucket bucket;
} baton_catalog_entry;
const baton_catalog_entry *baton_catalog_find(const char *name);
const baton_catalog_entry *baton_catalog_all(size_t *n);

#endif
