/* dist.c — the trainer's data-parallel part: W ranks (dist.h) each holding the same model, each
 * global batch of B samples split by position (rank r takes the batch's samples r, r+W, …: the
 * pipeline's parts), the loss of each part scaled by the whole batch's size so that the sum of the
 * ranks' gradients is the global batch's, summed by the bucketed allreduce that backward's progress
 * starts bucket by bucket; the step's loss sum, correct count and a notice flag ride in the same
 * step as three more sums.
 *
 * Contract: every rank calls the same functions in the same order with the same batch grid (the
 * cursor, batch size, seed and dataset are checked equal at the start); rank 0 alone owns the
 * checkpoint folder (its session commits; the others' are followers) and broadcasts the resumed
 * state, so a checkpoint does not depend on W and a run resumed with another W continues at the
 * same global position with the same global batch. Batch norm statistics are each rank's own
 * (rank 0's running averages are the ones checkpointed), or with --sync-bn the global batch's:
 * every batch norm's sums go through an allreduce of a communicator of their own (so that they
 * never interleave with the gradient buckets' collectives), and a rank with no sample in a step
 * makes the same sums with zeros. A single process never opens MPI. */
#include "train_internal.h"
#include "baton/dist.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct train_dist {
    baton_dist *d;
    baton_dist *bn;          /* --sync-bn: the batch norms' sums (a duplicate of d's world), or NULL */
    baton_dist_reducer *red;
    float *grads;
    size_t glen;
    int hook_rc;
    baton_err hook_err;
    double scal[3];          /* loss sum, correct, notices */
};

int train_dist_open(const baton_train_opts *o, train_dist **out, baton_err *err)
{
    *out = NULL;
    int world = 0, launched = baton_dist_launched(&world);
    if (o->dist < 0 || (!o->dist && !launched)) return BATON_OK;
    if (o->dist > 0 && !launched)
        return baton_err_set(err, BATON_ERR_USAGE,
                             "--dist mpi: this process was not started as an MPI rank (run it under mpirun -n W, "
                             "or srun --mpi=pmix)");
    train_dist *td = calloc(1, sizeof *td);
    if (!td) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = baton_dist_open(&td->d, err);
    if (rc) {
        free(td);
        return baton_err_prefix(err, "MPI");
    }
    baton_log(BATON_LOG_INFO, "data parallel: rank %d of %d (%s)", baton_dist_rank(td->d), baton_dist_world(td->d),
              baton_dist_library(td->d));
    *out = td;
    return BATON_OK;
}

int train_dist_rank(const train_dist *td) { return td ? baton_dist_rank(td->d) : 0; }
int train_dist_world(const train_dist *td) { return td ? baton_dist_world(td->d) : 1; }
void train_dist_node(const train_dist *td, int *local_rank, int *local_size, int *leader)
{
    baton_dist_node(td ? td->d : NULL, local_rank, local_size, leader);
}

int train_dist_share_group(train_dist *td, const char *dir, uint32_t *share_rank, uint32_t *share_size,
                           baton_err *err)
{
    *share_rank = 0, *share_size = 1;
    if (!td) return BATON_OK;
    struct stat st;
    if (stat(dir, &st) != 0) return baton_err_errno(err, errno, "cannot stat", dir);
    int lrank, lsize, leader, world = baton_dist_world(td->d), me = baton_dist_rank(td->d);
    baton_dist_node(td->d, &lrank, &lsize, &leader);
    struct { int64_t leader; uint64_t dev, ino; } mine = {leader, (uint64_t)st.st_dev, (uint64_t)st.st_ino}, *all;
    if (!(all = calloc((size_t)world, sizeof *all))) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = baton_dist_gather_all(td->d, &mine, all, sizeof mine, "the data folders of this machine's ranks", err);
    uint32_t n = 0, k = 0;
    for (int r = 0; rc == BATON_OK && r < world; r++)
        if (!memcmp(&all[r], &mine, sizeof mine)) {
            if (r == me) k = n;
            n++;
        }
    free(all);
    if (rc == BATON_OK) *share_rank = k, *share_size = n;
    return rc;
}

static void on_ready(void *ctx, size_t from)
{
    train_dist *td = ctx;
    if (!td->hook_rc) td->hook_rc = baton_dist_reducer_ready(td->red, from, &td->hook_err);
}

static int bn_sum(double *v, int n, void *ctx, baton_err *err)
{
    train_dist *td = ctx;
    return baton_dist_sum(td->bn, v, n, "the batch norm statistics (--sync-bn)", err);
}

int train_dist_attach(train_dist *td, baton_nn_model *m, size_t bucket_bytes, int sync_bn, baton_err *err)
{
    td->grads = baton_nn_model_grads(m, &td->glen);
    int rc = baton_dist_reducer_create(td->d, td->grads, td->glen, bucket_bytes ? bucket_bytes : 1u << 20, 3, &td->red,
                                       err);
    if (!rc) rc = baton_nn_model_on_grad_ready(m, on_ready, td, err);
    if (rc || !sync_bn || baton_dist_world(td->d) < 2) return rc;
    if ((rc = baton_dist_dup(td->d, &td->bn, err))) return baton_err_prefix(err, "--sync-bn");
    return baton_nn_model_set_bn_sync(m, bn_sum, td, err);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

int train_dist_same(train_dist *td, const char *what, const void *bytes, size_t n, baton_err *err)
{
    int rc = baton_dist_agree_hash(td->d, fnv(0xcbf29ce484222325ull, bytes, n), what, err);
    return rc == BATON_ERR_CORRUPT ? baton_err_prefix(err, "the ranks were not given the same run") : rc;
}

/* Every tensor of the model (parameters and buffers) and of the optimizer, in order. */
static int bcast_tensors(train_dist *td, baton_nn_model *m, baton_nn_optim *opt, baton_err *err)
{
    int rc = BATON_OK;
    for (size_t i = 0; !rc && i < baton_nn_model_ntensors(m); i++) {
        baton_nn_tensor t;
        if ((rc = baton_nn_model_tensor(m, i, &t))) break;
        rc = baton_dist_bcast(td->d, t.data, t.numel * (t.dtype == BATON_NN_I64 ? 8 : 4), t.name, err);
    }
    for (size_t i = 0; !rc && i < baton_nn_optim_ntensors(opt); i++) {
        baton_nn_tensor t;
        if ((rc = baton_nn_optim_tensor(opt, i, &t))) break;
        rc = baton_dist_bcast(td->d, t.data, t.numel * (t.dtype == BATON_NN_I64 ? 8 : 4), t.name, err);
    }
    return rc;
}

int train_dist_sync(train_dist *td, baton_nn_model *m, baton_nn_optim *opt, baton_train_state *st, int *resumed,
                    uint64_t *resumed_step, baton_err *err)
{
    struct {
        baton_train_state st;
        uint64_t rng[4], optim_steps, resumed_step;
        int32_t resumed;
    } facts;
    memset(&facts, 0, sizeof facts);
    facts.st = *st;
    memcpy(facts.rng, baton_nn_model_rng(m)->s, sizeof facts.rng);
    facts.optim_steps = baton_nn_optim_steps(opt);
    facts.resumed = *resumed;
    facts.resumed_step = *resumed_step;
    int rc = baton_dist_bcast(td->d, &facts, sizeof facts, "the training state", err);
    if (!rc) rc = bcast_tensors(td, m, opt, err);
    if (rc) return baton_err_prefix(err, "rank 0's state to every rank");
    *st = facts.st;
    memcpy(baton_nn_model_rng(m)->s, facts.rng, sizeof facts.rng);
    baton_nn_optim_set_steps(opt, facts.optim_steps);
    *resumed = facts.resumed;
    *resumed_step = facts.resumed_step;
    return BATON_OK;
}

int train_dist_step(train_dist *td, baton_nn_model *m, const baton_batch *b, int noticed, double *loss_sum,
                    uint64_t *correct, int *stop, baton_err *err)
{
    float loss = 0;
    int corr = 0, rc = BATON_OK;
    if (b->n > 0) {
        rc = baton_nn_forward(m, b->x, (int)b->n, err);
        if (!rc) rc = baton_nn_loss_part(m, b->y, (int)b->total, &loss, &corr, err);
        if (rc) return rc;
    } else if (td->bn && (rc = baton_nn_bn_sync_idle(m, err))) {   /* the others' batch norms wait for ours */
        return rc;
    }
    td->scal[0] = (double)loss * b->n;
    td->scal[1] = corr;
    td->scal[2] = noticed ? 1 : 0;
    td->hook_rc = BATON_OK;
    if ((rc = baton_dist_reducer_begin(td->red, td->scal, err))) return rc;
    if (b->n > 0) rc = baton_nn_backward(m, err);
    else memset(td->grads, 0, td->glen * sizeof *td->grads);   /* a part with no samples adds nothing */
    if (!rc && td->hook_rc) {
        *err = td->hook_err;
        rc = td->hook_rc;
    }
    if (!rc) rc = baton_dist_reducer_finish(td->red, err);
    if (rc) return rc;
    *loss_sum = td->scal[0];
    *correct = (uint64_t)td->scal[1];
    *stop = td->scal[2] > 0;
    return BATON_OK;
}

int train_dist_share_notice(train_dist *td, baton_train_session *sess, const baton_notice_event *mine,
                            baton_err *err)
{
    int w = baton_dist_world(td->d);
    baton_notice_event *all = calloc((size_t)w, sizeof *all);
    if (!all) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = baton_dist_gather_all(td->d, mine, all, sizeof *mine, "the ranks' notices", err);
    for (int r = 0; !rc && r < w; r++) {
        if (all[r].kind == BATON_NOTICE_NONE) continue;
        if (r != baton_dist_rank(td->d))
            baton_log(BATON_LOG_INFO, "rank %d saw the notice (%s): the world stops at this step", r, all[r].source);
        train_session_stop_for(sess, &all[r]);
        break;
    }
    free(all);
    return rc;
}

int train_dist_end(train_dist *td, baton_nn_model *m, baton_err *err)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {
        baton_nn_tensor t;
        if (baton_nn_model_tensor(m, i, &t) || t.kind != BATON_NN_PARAM) continue;
        h = fnv(h, t.data, t.numel * sizeof(float));
    }
    int rc = baton_dist_agree_hash(td->d, h, "the weights after the last step", err);
    if (rc == BATON_ERR_CORRUPT) baton_err_prefix(err, "the ranks' models diverged");
    return rc;
}

void train_dist_stats(const train_dist *td, baton_train_result *r)
{
    r->rank = train_dist_rank(td);
    r->world = train_dist_world(td);
    if (!td || !td->red) return;
    baton_dist_reducer_stats st;
    baton_dist_reducer_get_stats(td->red, &st);
    if (!st.steps) return;
    r->comm_s_per_step = st.comm_s / (double)st.steps;
    r->wait_s_per_step = st.wait_s / (double)st.steps;
    r->overlap = st.comm_s > 0 ? 1.0 - st.wait_s / st.comm_s : 0;
    if (r->overlap < 0) r->overlap = 0;
    r->allreduce_mb = st.bytes / (double)st.steps / 1e6;
}

int train_dist_barrier(train_dist *td, baton_err *err) { return td ? baton_dist_barrier(td->d, err) : BATON_OK; }

void train_dist_close(train_dist *td)
{
    if (!td) return;
    baton_dist_reducer_free(td->red);
    baton_dist_close(td->bn);
    baton_dist_close(td->d);
    free(td);
}
