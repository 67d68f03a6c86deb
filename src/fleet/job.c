/* job.c — what a parsed job file offers besides the parser (jobfile.c): the names of its enums,
 * duration parsing, per-zone spot prices, backend options, loading a job from a file (relative
 * paths resolved against the file's folder, a local seed checked). */
#include "baton/fleet.h"
#include "baton/infer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ names */
const char *baton_backend_name(baton_backend b)
{
    return b == BATON_BACKEND_SLURM ? "slurm" : b == BATON_BACKEND_AWS ? "aws" : "local";
}

const char *baton_alloc_name(baton_alloc a)
{
    return a == BATON_ALLOC_CAPACITY_OPTIMIZED ? "capacity-optimized"
         : a == BATON_ALLOC_LOWEST_PRICE       ? "lowest-price"
                                               : "price-capacity-optimized";
}

/* the buckets are the catalog's (infer.h), in the same order */
const char *baton_bucket_name(baton_bucket b) { return baton_infer_bucket_name((int)b); }

int fleet_bucket_parse(const char *s, baton_bucket *b)
{
    int i;
    if (baton_infer_bucket_parse(s, &i)) return -1;
    *b = (baton_bucket)i;
    return 0;
}

int fleet_duration_parse(const char *s, double *seconds)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0) return -1;
    double mul = 1;
    if (*end == 's') mul = 1, end++;
    else if (*end == 'm') mul = 60, end++;
    else if (*end == 'h') mul = 3600, end++;
    else if (*end == 'd') mul = 86400, end++;
    if (*end) return -1;
    *seconds = v * mul;
    return 0;
}

double baton_job_spot_price(const baton_job_type *t, const char *zone)
{
    for (size_t i = 0; i < t->nzone_prices; i++)
        if (!strcmp(t->zone_prices[i].zone, zone)) return t->zone_prices[i].price;
    return t->spot_price;
}

const baton_job_kv *fleet_job_backend_opt(const baton_job *job, const char *key)
{
    for (size_t i = 0; i < job->nbackend_opts; i++)
        if (!strcmp(job->backend_opts[i].key, key)) return &job->backend_opts[i];
    return NULL;
}

/* A relative local path of the job file is relative to the job file's folder (as SkyPilot and
 * docker compose read theirs), whatever folder baton runs in. */
static int resolve(const char *jobfile, char *p, size_t cap, const char *field, baton_err *err)
{
    if (!p[0] || p[0] == '/' || strstr(p, "://")) return 0;
    char dir[4096], out[8192];
    baton_path_dirname(jobfile, dir, sizeof dir);
    if (!strcmp(dir, ".")) return 0;
    if (baton_path_join(out, sizeof out, dir, p, NULL) || strlen(out) >= cap)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s: '%s' relative to the job file's folder is too long",
                             jobfile, field, p);
    memcpy(p, out, strlen(out) + 1);
    return 0;
}

int baton_job_load(const char *path, baton_job *job, baton_err *err)
{
    uint8_t *p;
    size_t n;
    memset(job, 0, sizeof *job);   /* freeable whatever happens; the parser fills in the defaults */
    int rc = baton_file_read_all(path, BATON_JOB_MAX_BYTES, &p, &n, err);
    if (rc) return baton_err_prefix(err, "job file");
    rc = baton_job_parse(path, (const char *)p, n, job, err);
    free(p);
    return rc ? rc : baton_job_resolve_paths(job, err);
}

int baton_job_resolve_paths(baton_job *job, baton_err *err)
{
    const char *path = job->path;
    int rc = resolve(path, job->volume.seed, sizeof job->volume.seed, "volume.seed", err);
    if (!rc) rc = resolve(path, job->state_dir, sizeof job->state_dir, "state_dir", err);
    /* a seed this machine copies (local and Slurm backends) must exist now, not at the first launch */
    if (!rc && job->volume.seed[0] && job->backend != BATON_BACKEND_AWS && !strstr(job->volume.seed, "://") &&
        !baton_is_dir(job->volume.seed))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: volume.seed: %s: no such folder (relative paths are relative "
                           "to the job file's folder)", path, job->volume.seed);
    return rc;
}
