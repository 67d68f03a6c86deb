/* ppo_pair.c — a second thread for learning: the value network's half of each minibatch runs on
 * it while the calling thread runs the policy's (ppo_learn.c). The two networks share nothing
 * but the minibatch's input (read by both), so the halves are independent: each runs the same
 * kernels in the same order as one thread running them one after the other, on an OpenMP team of
 * the same size, and the results are the same bytes (nn's oneDNN table keeps a stream, primitives
 * and buffers per calling thread; every primitive is deterministic for a team size).
 *
 * Contract: race_pair_new starts the thread (its team of `team` threads, denormals flushed as the
 * caller's are); race_pair_post hands it one job, race_pair_wait waits for it, and nothing else
 * runs on it in between; race_pair_free stops it. Nothing is allocated after race_pair_new. */
#include "ppo_internal.h"

#include <pthread.h>
#include <stdlib.h>

struct race_pair {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *);         /* the posted job, NULL when there is none */
    void *arg;
    int busy, quit;
    int team, flushed;
};

static void *worker(void *arg)
{
    race_pair *p = arg;
    baton_nn_set_threads(p->team);
    baton_nn_flush_denormals_here(p->flushed);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->fn && !p->quit) pthread_cond_wait(&p->cv, &p->mu);
        if (!p->fn) break;
        void (*fn)(void *) = p->fn;
        pthread_mutex_unlock(&p->mu);
        fn(p->arg);
        pthread_mutex_lock(&p->mu);
        p->fn = NULL;
        p->busy = 0;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int race_pair_new(race_pair **out, int team, baton_err *err)
{
    *out = NULL;
    race_pair *p = calloc(1, sizeof *p);
    if (!p) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for the second learner");
    p->team = team < 1 ? 1 : team;
    p->flushed = baton_nn_denormals_flushed();
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    int e = pthread_create(&p->th, NULL, worker, p);
    if (e) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return baton_err_set(err, BATON_ERR_IO, "cannot start the second learner's thread (error %d)", e);
    }
    *out = p;
    return BATON_OK;
}

void race_pair_post(race_pair *p, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&p->mu);
    p->fn = fn, p->arg = arg, p->busy = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void race_pair_wait(race_pair *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->busy) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int race_pair_idle(race_pair *p)
{
    pthread_mutex_lock(&p->mu);
    int idle = !p->busy;
    pthread_mutex_unlock(&p->mu);
    return idle;
}

void race_pair_free(race_pair *p)
{
    if (!p) return;
    race_pair_wait(p);
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
