/* fleet_wenv.c — a local worker's environment (fleet_internal.h: fleet_wenv): what a task's
 * command is told — its metadata service, volume, job, task, instance, type and zone, the progress
 * and result files, how often to poll for a notice, the checkpoint interval (BATON_CKPT_EVERY=auto
 * and the hazard its instance runs under, BATON_SPOT_MTBI_S), PATH and PYTHONPATH that find the
 * baton that runs the fleet, a short OpenMP spin (the workers share the machine's cores), then the
 * job file's own env: entries.
 *
 * Contract: every string lives in the fleet_wenv (fixed buffers, and the env: entries malloc'd
 * until fleet_wenv_free); a value too long is cut (fleet_fmt), never overflowed. */
#include "fleet_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The mean time between interruptions a worker's trainer plans its checkpoints for (its
 * --ckpt-every auto), in the worker's real seconds: the pool's Spot Advisor hazard as the prior,
 * updated by what this job has seen — (interruptions + 1) / (instance time + 1/prior), the mean of
 * a gamma posterior with one pseudo-interruption at the prior's rate. 0: no hazard at all. */
static double worker_mtbi(const sup *s, const baton_fleet_inst *in)
{
    double prior = fleet_bucket_hazard(s->job->types[fleet_pool_type(&s->market, in->pool)].bucket) *
                   s->job->market.hazard_scale;   /* per simulated second */
    double n = 0, t = 0, now = fleet_now(s);
    for (size_t k = 0; k < s->ninsts; k++) {
        const baton_fleet_inst *o = &s->insts[k];
        if (o->t_running < 0 || o == in) continue;
        t += (o->t_end >= 0 ? o->t_end : now) - o->t_running;
        n += o->interrupted != BATON_INT_NONE;
    }
    double rate = prior > 0 ? (n + 1) / (t + 1 / prior) : (t > 0 && n > 0 ? n / t : 0);
    return rate > 0 && s->scale > 0 ? 1 / rate / s->scale : 0;
}

void fleet_wenv_build(sup *s, size_t i, fleet_wenv *w)
{
    const baton_fleet_inst *in = &s->insts[i];
    const live *l = &s->lv[i];
    double notice_wall = s->job->market.notice / s->scale;
    double poll = notice_wall / 24;   /* EC2's advice: every 5 s of a 120 s notice */
    poll = poll < 0.05 ? 0.05 : poll > 5 ? 5 : poll;
    fleet_fmt(w->url, sizeof w->url, "AWS_EC2_METADATA_SERVICE_ENDPOINT=%s",
             l->imds ? baton_imds_url(l->imds) : "http://127.0.0.1:1");
    fleet_fmt(w->vol, sizeof w->vol, "BATON_VOLUME=%s", in->volume);
    fleet_fmt(w->job, sizeof w->job, "BATON_JOB=%s", s->rec.name);
    fleet_fmt(w->task, sizeof w->task, "BATON_TASK=%d", in->task);
    fleet_fmt(w->id, sizeof w->id, "BATON_INSTANCE_ID=%s", in->name);
    fleet_fmt(w->type, sizeof w->type, "BATON_INSTANCE_TYPE=%s", in->type);
    fleet_fmt(w->zone, sizeof w->zone, "BATON_ZONE=%s", in->zone);
    fleet_fmt(w->prog, sizeof w->prog, "BATON_PROGRESS_FILE=%s", l->progress);
    /* the run's result (baton train, race train, the Python module's baton.result) into the task's
     * volume, where the report reads it beside the task's cost */
    const char *rvol = s->job->nodes.max ? s->tasks[in->task].volume : in->volume;
    if (rvol[0]) fleet_fmt(w->result, sizeof w->result, "BATON_RESULT_FILE=%s/" BATON_FLEET_RESULT_FILE, rvol);
    else fleet_fmt(w->result, sizeof w->result, "BATON_RESULT_FILE=%s/run/task-%d.result.json", s->dir, in->task);
    fleet_fmt(w->poll, sizeof w->poll, "BATON_NOTICE_POLL_S=%.3f", poll);
    fleet_fmt(w->mtbi, sizeof w->mtbi, "BATON_CKPT_EVERY=auto");
    double mtbi = worker_mtbi(s, in);
    if (mtbi > 0) fleet_fmt(w->mtbi, sizeof w->mtbi, "BATON_SPOT_MTBI_S=%.3f", mtbi);
    const char *path = getenv("PATH");
    fleet_fmt(w->path, sizeof w->path, "PATH=%s%s%s", s->o->bin_dir ? s->o->bin_dir : "",
             s->o->bin_dir ? ":" : "", path ? path : "/usr/bin:/bin");
    const char *base[] = {w->url, w->vol, w->job, w->task, w->id, w->type, w->zone, w->prog, w->poll, w->path,
                          "BATON_NOTICE_TIMEOUT_S=0.5", "AWS_EC2_METADATA_DISABLED=false", "BATON_NO_PROGRESS=1",
                          "BATON_CKPT_EVERY=auto", w->mtbi};
    w->n = w->nextra = 0;
    for (size_t k = 0; k < sizeof base / sizeof base[0]; k++) w->env[w->n++] = base[k];
    w->env[w->n++] = w->result;
    /* the workers of a local fleet share this machine's cores, and an OpenMP team (oneDNN's, the
     * trainer's) spins up to 300,000 rounds at a barrier before it sleeps, on a core another
     * worker needs: two resnet8 trainers side by side took 5.5 s, 2.5 s with 1,000 rounds (one
     * alone the same either way). Unless this environment or the job's env: sets it. */
    int spin = getenv("GOMP_SPINCOUNT") != NULL;
    for (size_t k = 0; k < s->job->nenv; k++) spin |= !strcmp(s->job->env[k].key, "GOMP_SPINCOUNT");
    if (!spin) w->env[w->n++] = "GOMP_SPINCOUNT=1000";
    /* the baton Python module built beside the baton binary (make's $(BUILD)/python), as PATH finds
     * the binary: a PyTorch script under the fleet imports the baton that runs it */
    char mod[4200];
    const char *pp = getenv("PYTHONPATH");
    int own = 0;   /* the job's env: names one itself */
    for (size_t k = 0; k < s->job->nenv; k++) own |= !strcmp(s->job->env[k].key, "PYTHONPATH");
    if (!own && s->o->bin_dir && fleet_fmt(mod, sizeof mod, "%s/python/baton/__init__.py", s->o->bin_dir) > 0 &&
        access(mod, R_OK) == 0) {
        fleet_fmt(w->pypath, sizeof w->pypath, "PYTHONPATH=%s/python%s%s", s->o->bin_dir, pp && *pp ? ":" : "",
                  pp ? pp : "");
        w->env[w->n++] = w->pypath;
    }
    for (size_t k = 0; k < s->job->nenv && w->nextra < sizeof w->extra / sizeof w->extra[0]; k++) {
        size_t len = strlen(s->job->env[k].key) + strlen(s->job->env[k].value) + 2;
        if (!(w->extra[w->nextra] = malloc(len))) break;
        fleet_fmt(w->extra[w->nextra], len, "%s=%s", s->job->env[k].key, s->job->env[k].value);
        w->env[w->n++] = w->extra[w->nextra++];
    }
}

void fleet_wenv_free(fleet_wenv *w)
{
    for (size_t k = 0; k < w->nextra; k++) free(w->extra[k]);
    w->nextra = 0;
}
