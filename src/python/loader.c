/* loader.c — baton.Loader: a dataset (any URI, any input mode) as batches of NumPy arrays, through
 * the library's loader (io.h) and decode pipeline (img.h), exactly the batches `baton train` trains
 * on for the same seed, batch size and world size.
 *
 * Contract:
 *  - iterating yields the batches of the current epoch from the cursor, then stops; the next
 *    iteration is the next epoch (as a DataLoader behaves), until `epochs` (None, the default: no
 *    end). A pass is what one iter() hands out: iter() while the pass before it handed out some
 *    but not all of its batches (a peek, a break) starts that pass again where it started (the
 *    epoch's start, or where load_state_dict()/set_epoch() put the cursor), so nothing is skipped;
 *    next(loader) without iter() goes on from the cursor. set_epoch(e): the next pass is epoch e,
 *    from its start — or from the cursor when the cursor is already in epoch e (a resumed run). Each
 *    batch is a baton.Batch: (images, labels) as a tuple, with epoch, index, positions and total as
 *    attributes. images is float32 (n, C, H, W) (or (n, H, W, C) with layout="nhwc") and shares the
 *    pipeline's memory (no copy); labels are int64 (what PyTorch's losses take), positions uint64.
 *  - rank/world: each global batch's samples i ≡ rank (mod world) (the pipeline's parts), so the
 *    samples trained do not depend on the world size and a state saved at any world size resumes at
 *    any other; total is the global batch's size (scale a summed loss by world / total).
 *  - state_dict() is the cursor after the last batch handed out; load_state_dict() continues
 *    exactly there (the decode pipeline is reopened at it).
 *  - memory: a batch's arrays stay valid while any of them is referenced; its pipeline slot goes
 *    back when the last one is dropped. A pipeline replaced (load_state_dict) or closed while
 *    batches are held is stopped at once and freed with the last of them ("gen" below).
 *  - waiting for a batch releases the GIL and wakes every 100 ms to let Ctrl-C through
 *    (KeyboardInterrupt, the loader stays usable); nothing here blocks without that check except
 *    the open of file mode (its download).
 *  - one thread at a time: a second thread entering while one waits gets baton.UsageError. */
#include "python_internal.h"

#include <structmember.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BATCH PYB_LOADER_MAX_BATCH
#define MAX_SLOTS PYB_LOADER_MAX_DEPTH

/* ---------------------------------------------------------------- a pipeline and its leases */
typedef struct gen {
    baton_pipeline *p;
    Py_ssize_t leases;          /* batches handed out, not yet released */
    int retired;                /* stopped; freed with its last lease */
    pid_t pid;                  /* the process whose threads run it (a forked child has none) */
    uint32_t batch, ntab;
    struct {
        const baton_batch *b;
        int64_t *labels;        /* batch entries, allocated once per slot */
    } tab[MAX_SLOTS];
} gen;

static void gen_free(gen *g)
{
    baton_pipeline_close(g->p);
    for (uint32_t i = 0; i < g->ntab; i++) free(g->tab[i].labels);
    free(g);
}

/* Stop the pipeline; free it now or with its last lease. */
static void gen_retire(gen *g)
{
    if (!g) return;
    Py_BEGIN_ALLOW_THREADS
    baton_pipeline_stop(g->p);
    Py_END_ALLOW_THREADS
    g->retired = 1;
    if (g->leases == 0) gen_free(g);
}

static int64_t *gen_labels(gen *g, const baton_batch *b)
{
    for (uint32_t i = 0; i < g->ntab; i++)
        if (g->tab[i].b == b) return g->tab[i].labels;
    if (g->ntab == MAX_SLOTS) return NULL;
    int64_t *v = malloc((size_t)g->batch * sizeof *v);
    if (!v) return NULL;
    g->tab[g->ntab].b = b;
    g->tab[g->ntab++].labels = v;
    return v;
}

typedef struct {
    PyObject_HEAD
    gen *g;
    baton_batch *b;
    int64_t *labels;
} Lease;

static void lease_dealloc(Lease *self)
{
    gen *g = self->g;
    if (g && g->pid == getpid()) {   /* in a forked child the pipeline is the parent's: left alone */
        baton_pipeline_release(g->p, self->b);
        if (--g->leases == 0 && g->retired) gen_free(g);
    }
    pyb_free((PyObject *)self);
}

static PyType_Slot lease_slots[] = {
    {Py_tp_dealloc, lease_dealloc},
    {Py_tp_doc, "A decode-pipeline slot held while any array of its batch is alive."},
    {0, NULL},
};
PyType_Spec pyb_LeaseSpec = {"baton._BatchLease", sizeof(Lease), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, lease_slots};

/* One array of a batch, exported through the buffer protocol (NumPy views it without a copy). */
enum { V_IMAGES, V_LABELS, V_POSITIONS };
typedef struct {
    PyObject_HEAD
    Lease *lease;
    int kind;
    int ndim;
    Py_ssize_t shape[4], strides[4];
} View;

static int view_getbuffer(View *self, Py_buffer *v, int flags)
{
    const baton_batch *b = self->lease->b;
    void *buf = self->kind == V_IMAGES ? (b->x8 ? (void *)b->x8 : (void *)b->x)
                : self->kind == V_LABELS ? (void *)self->lease->labels : (void *)b->pos;
    Py_ssize_t item = self->kind == V_IMAGES ? (b->x8 ? 1 : 4) : 8, len = item;
    for (int i = 0; i < self->ndim; i++) len *= self->shape[i];
    v->buf = buf;
    v->obj = Py_NewRef((PyObject *)self);
    v->len = len;
    v->itemsize = item;
    v->readonly = 0;
    v->ndim = self->ndim;
    v->format = (flags & PyBUF_FORMAT) ? (char *)(self->kind == V_IMAGES ? (b->x8 ? "B" : "f") : self->kind == V_LABELS ? "q" : "Q")
                                       : NULL;
    v->shape = (flags & PyBUF_ND) ? self->shape : NULL;
    v->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
    v->suboffsets = NULL;
    v->internal = NULL;
    return 0;
}

static void view_dealloc(View *self)
{
    Py_XDECREF(self->lease);
    pyb_free((PyObject *)self);
}

static PyType_Slot view_slots[] = {
    {Py_tp_dealloc, view_dealloc},
    {Py_bf_getbuffer, view_getbuffer},
    {Py_tp_doc, "One array of a batch (images, labels or positions), in the pipeline's memory."},
    {0, NULL},
};
PyType_Spec pyb_ViewSpec = {"baton._BatchView", sizeof(View), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                            view_slots};

static PyObject *make_view(pyb_state *st, Lease *ls, int kind, int ndim, const Py_ssize_t *shape)
{
    View *v = PyObject_New(View, st->View);
    if (!v) return NULL;
    v->lease = (Lease *)Py_NewRef((PyObject *)ls);
    v->kind = kind;
    v->ndim = ndim;
    Py_ssize_t stride = kind == V_IMAGES ? (ls->b->x8 ? 1 : 4) : 8;
    for (int i = ndim - 1; i >= 0; i--) {
        v->shape[i] = shape[i];
        v->strides[i] = stride;
        stride *= shape[i];
    }
    PyObject *a = pyb_asarray((PyObject *)v);
    Py_DECREF(v);
    return a;
}

/* ---------------------------------------------------------------- the Loader */
typedef struct {
    PyObject_HEAD
    baton_loader *l;
    const baton_manifest *m;
    gen *g;                     /* the pipeline in use; NULL until the first batch after a seek */
    baton_loader_opts lo;
    baton_pipeline_opts po;
    char *uri, *local_dir, *endpoint;
    float mean[4], std[4];
    baton_cursor cur;           /* after the last batch handed out */
    baton_cursor pass_start;    /* where the current pass began: iter() restarts a partial pass here */
    int pass_dirty;             /* the current pass handed out a batch and has not ended */
    uint64_t epochs;            /* 0: no end */
    uint64_t esize;
    int busy;                   /* a call is inside the Loader with the GIL released (next(), a reseek) */
    unsigned long busy_thread;  /* ... made by this thread */
    int closing;                /* close() waits for that call: next() gives up its wait */
    pid_t pid;                  /* the process that opened it: a forked child never touches its threads */
    pyb_state *st;              /* its module's (its types) */
    PyObject *weakrefs;
} Loader;

/* Threads: every field is read and written with the GIL held. A call that releases the GIL while
 * it uses the pipeline or the loader marks the Loader busy first (and its thread), so a call from
 * another thread meanwhile is a UsageError, never a use of what is being replaced; close() and a
 * reseek detach the pointers before they release the GIL to stop and free them. */
static int check_open(Loader *self)
{
    if (!self->l) {
        pyb_usage("baton.Loader: closed");
        return -1;
    }
    if (self->pid != getpid()) {
        pyb_usage("baton.Loader: opened by process %d; a forked child opens its own (the threads are the parent's)",
                  (int)self->pid);
        return -1;
    }
    if (self->busy) {
        pyb_usage(self->busy_thread == PyThread_get_thread_ident()
                      ? "baton.Loader: in use by this thread's next() (called from a signal handler?)"
                      : "baton.Loader: in use by another thread (one thread at a time iterates a Loader)");
        return -1;
    }
    return 0;
}

/* For calls that only read the Loader's fields (with the GIL held): also from this thread's signal
 * handler during next(), which holds the GIL between two waits for a batch — the Loader is then
 * where the last batch handed out left it. */
static int check_readable(Loader *self)
{
    if (self->busy && self->busy_thread == PyThread_get_thread_ident() && self->l) return 0;
    return check_open(self);
}

static void set_busy(Loader *self, int on)
{
    self->busy = on;
    self->busy_thread = on ? PyThread_get_thread_ident() : 0;
}

static void loader_close_all(Loader *self)
{
    gen *g = self->g;
    baton_loader *l = self->l;
    self->g = NULL;   /* detached: no other thread reaches them while they stop */
    self->l = NULL;
    self->m = NULL;
    if (self->pid != getpid()) return;   /* a forked child: the parent's threads and files, left alone */
    gen_retire(g);
    if (l) {
        Py_BEGIN_ALLOW_THREADS
        baton_loader_close(l);
        Py_END_ALLOW_THREADS
    }
}

static void loader_dealloc(Loader *self)
{
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    loader_close_all(self);
    free(self->uri);
    free(self->local_dir);
    free(self->endpoint);
    pyb_free((PyObject *)self);
}

static char *dupstr(const char *s) { return s ? strdup(s) : NULL; }

/* normalize: True (dataset.json's mean and std), False (pixel / 255), or (mean, std) sequences */
static int parse_normalize(Loader *self, PyObject *norm, uint32_t channels)
{
    if (!norm || norm == Py_True) return 0;   /* po.mean/std NULL: the dataset's */
    if (norm == Py_False || norm == Py_None) {
        for (int c = 0; c < 4; c++) self->mean[c] = 0, self->std[c] = 1;
    } else {
        PyObject *seq = PySequence_Fast(norm, "normalize: expected True, False or (mean, std)");
        if (!seq) return -1;
        int bad = PySequence_Fast_GET_SIZE(seq) != 2;
        for (int k = 0; k < 2 && !bad; k++) {
            PyObject *v = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, k), "normalize: mean and std are sequences");
            if (!v) {
                Py_DECREF(seq);
                return -1;
            }
            bad = (uint32_t)PySequence_Fast_GET_SIZE(v) != channels;
            for (uint32_t c = 0; c < channels && !bad; c++) {
                double d = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(v, c));
                if (d == -1 && PyErr_Occurred()) bad = 1;
                else if (k == 1 && !(d > 0)) bad = 1;
                else (k ? self->std : self->mean)[c] = (float)d;
            }
            Py_DECREF(v);
        }
        Py_DECREF(seq);
        if (bad) {
            PyErr_Clear();
            pyb_usage("normalize: expected True, False or (mean, std) with %u numbers each (std > 0)", channels);
            return -1;
        }
    }
    self->po.mean = self->mean;
    self->po.std = self->std;
    return 0;
}

/* The options the dataset opens with (lo): the mode asked for (none: the library's default for the
 * URI, baton_loader_open_dataset), the URI, the S3 endpoint, the seed, the local copy's folder (file
 * and cache modes, only ever asked for; in the default folder, the ranks of this machine share the
 * downloads). */
static int set_open_opts(Loader *self, const pyb_loader_args *a)
{
    baton_loader_opts_default(&self->lo);
    if (a->mode && baton_io_mode_parse(a->mode, &self->lo.mode))
        return pyb_usage_rc("mode '%s': expected file, pipe, mount or cache", a->mode);
    self->uri = dupstr(a->uri);
    self->endpoint = dupstr(a->endpoint);
    self->lo.uri = self->uri;
    self->lo.store.s3_endpoint = self->endpoint;
    self->lo.seed = a->seed;
    self->lo.no_shuffle = !a->shuffle;
    self->lo.block = (uint32_t)a->block;
    if (self->lo.mode == BATON_MODE_FILE || self->lo.mode == BATON_MODE_CACHE) {
        char def[4096];
        if (!a->local && pyb_default_local_dir(a->uri, def, sizeof def))
            return pyb_usage_rc("%s mode needs local_dir= (a folder for the local copy): HOME is not set",
                             baton_io_mode_name(self->lo.mode));
        self->local_dir = dupstr(a->local ? a->local : def);
        self->lo.local_dir = self->local_dir;
        self->lo.download_first = a->download_first;
        /* file mode in the default folder (one per URI, so the same for every rank of this machine):
         * the ranks the launcher places here split the downloads, as baton train --dist mpi's do */
        uint32_t lr, ls;
        if (!a->local && self->lo.mode == BATON_MODE_FILE && pyb_launcher_local(&lr, &ls) && ls > 1)
            self->lo.share_rank = lr, self->lo.share_size = ls;
    }
    if (!self->uri || (a->endpoint && !self->endpoint) ||
        ((self->lo.mode == BATON_MODE_FILE || self->lo.mode == BATON_MODE_CACHE) && !self->local_dir))
        return PyErr_NoMemory(), -1;
    return 0;
}

/* The pipeline's options (po) from the arguments. */
static void set_pipeline_opts(Loader *self, const pyb_loader_args *a)
{
    baton_pipeline_opts_default(&self->po);
    self->po.batch = (uint32_t)a->batch;
    self->po.workers = (int)a->threads;
    self->po.layout = strcmp(a->layout, "nhwc") ? BATON_LAYOUT_NCHW : BATON_LAYOUT_NHWC;
    self->po.drop_last = a->drop_last;
    self->po.depth = (uint32_t)a->depth;
    self->po.crop_pad = (uint32_t)a->crop;
    self->po.flip = a->flip;
    self->po.crop = a->crop_kind;
    self->po.size = (uint32_t)a->size;
    self->po.scale[0] = (float)a->scale[0], self->po.scale[1] = (float)a->scale[1];
    self->po.ratio[0] = (float)a->ratio[0], self->po.ratio[1] = (float)a->ratio[1];
    self->po.u8 = !strcmp(a->dtype, "uint8");
    self->po.part_rank = (uint32_t)a->rank;
    self->po.part_world = (uint32_t)a->world;
}

/* The dataset opened (with the GIL released), its manifest and epoch size read, the end of the
 * last epoch set; images of varying size without a crop refused. Closed again on an error. */
static int open_dataset(Loader *self, const pyb_loader_args *a)
{
    baton_err err = {0};
    int rc;
    baton_loader *l = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = baton_loader_open_dataset(&self->lo, a->mode != NULL, &l, &err);
    Py_END_ALLOW_THREADS
    if (rc) return pyb_raise_rc(&err);
    self->l = l;
    self->lo.mode = baton_loader_mode(l);   /* what stats and repr say */
    self->pid = getpid();
    self->m = baton_loader_manifest(l);
    self->esize = baton_loader_epoch_size(l);
    uint32_t shape[3];
    if (baton_pipeline_shape(self->m, a->crop_kind, (uint32_t)a->size, shape))
        baton_err_set(&err, BATON_ERR_FORMAT, "%s: images vary in size: crop them to one size (crop=\"random-resized\" "
                      "for training, crop=\"center\" for evaluation; size=224 by default)", a->uri);
    self->epochs = a->epochs;
    self->cur = self->pass_start = (baton_cursor){a->seed, 0, 0};
    self->pass_dirty = 0;
    baton_cursor end = {a->seed, a->epochs, 0};
    if (!err.code && a->epochs) baton_loader_set_end(l, &end, &err);
    if (err.code) {
        loader_close_all(self);
        return pyb_raise_rc(&err);
    }
    return 0;
}

static int loader_init(Loader *self, PyObject *args, PyObject *kw)
{
    pyb_loader_args a;
    if (self->l) return pyb_usage_rc("baton.Loader: already open");
    if (!(self->st = pyb_state_of(Py_TYPE(self)))) return pyb_usage_rc("baton.Loader: not a type of baton._baton");
    if (pyb_loader_args_parse(args, kw, &a) || set_open_opts(self, &a) || open_dataset(self, &a)) return -1;
    set_pipeline_opts(self, &a);
    if (parse_normalize(self, a.norm, self->m->shape[2] ? self->m->shape[2] : self->m->channels) ||
        pyb_prefetch_check(self->m, &self->po, self->esize)) {
        loader_close_all(self);
        return -1;
    }
    return 0;
}

/* Open the pipeline at the cursor. */
static int open_gen(Loader *self)
{
    gen *g = calloc(1, sizeof *g);
    if (!g) return PyErr_NoMemory(), -1;
    g->batch = self->po.batch;
    baton_err err = {0};
    self->po.start = &self->cur;   /* the pipeline's reader seeks: Ctrl-C is not held up by the network */
    Py_BEGIN_ALLOW_THREADS
    if (!(g->p = baton_pipeline_open(self->l, &self->po, &err)) && !err.code)
        baton_err_set(&err, BATON_ERR_ARG, "cannot open the decode pipeline");
    Py_END_ALLOW_THREADS
    if (!g->p) {
        free(g);
        return pyb_raise_rc(&err);
    }
    g->pid = getpid();
    self->g = g;
    return 0;
}

static PyObject *make_batch(Loader *self, baton_batch *b)
{
    gen *g = self->g;
    int64_t *labels = gen_labels(g, b);
    if (!labels) {
        baton_pipeline_release(g->p, b);
        return PyErr_NoMemory();
    }
    for (uint32_t i = 0; i < b->n; i++) labels[i] = b->y[i];
    Lease *ls = PyObject_New(Lease, self->st->Lease);
    if (!ls) {
        baton_pipeline_release(g->p, b);
        return NULL;
    }
    ls->g = g;
    ls->b = b;
    ls->labels = labels;
    g->leases++;
    Py_ssize_t n = b->n;
    Py_ssize_t ish[4] = {n, b->c, b->h, b->w};
    if (b->layout == BATON_LAYOUT_NHWC) ish[1] = b->h, ish[2] = b->w, ish[3] = b->c;
    PyObject *images = make_view(self->st, ls, V_IMAGES, 4, ish);
    PyObject *lab = images ? make_view(self->st, ls, V_LABELS, 1, &n) : NULL;
    PyObject *pos = lab ? make_view(self->st, ls, V_POSITIONS, 1, &n) : NULL;
    Py_DECREF(ls);
    PyObject *bt = pos ? PyStructSequence_New(self->st->Batch) : NULL;
    if (!bt) {
        Py_XDECREF(images);
        Py_XDECREF(lab);
        Py_XDECREF(pos);
        return NULL;
    }
    PyStructSequence_SET_ITEM(bt, 0, images);
    PyStructSequence_SET_ITEM(bt, 1, lab);
    PyStructSequence_SET_ITEM(bt, 2, PyLong_FromUnsignedLongLong(b->epoch));
    PyStructSequence_SET_ITEM(bt, 3, PyLong_FromUnsignedLongLong(b->first / self->po.batch));
    PyStructSequence_SET_ITEM(bt, 4, pos);
    PyStructSequence_SET_ITEM(bt, 5, PyLong_FromUnsignedLong(b->total));
    if (PyErr_Occurred()) {
        Py_DECREF(bt);
        return NULL;
    }
    return bt;
}

static PyObject *loader_next(Loader *self)
{
    if (check_open(self)) return NULL;
    if (self->closing) return pyb_usage("baton.Loader: being closed by another thread");
    if (self->epochs && self->cur.epoch >= self->epochs) {   /* the last epoch's end: StopIteration */
        self->pass_start = self->cur;
        self->pass_dirty = 0;
        return NULL;
    }
    set_busy(self, 1);   /* before the pipeline opens with the GIL released */
    if (!self->g) {
        if (open_gen(self)) {
            set_busy(self, 0);
            return NULL;
        }
        pyb_numpy_load(self->st);   /* the pipeline's threads fetch meanwhile */
    }
    baton_batch *b = NULL;
    baton_err err = {0};
    int rc;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        rc = baton_pipeline_next_timed(self->g->p, &b, 0.1, &err);
        Py_END_ALLOW_THREADS
        if (rc != BATON_NEED_MORE) break;
        if (self->closing) {   /* close() from another thread waits for this call */
            set_busy(self, 0);
            return pyb_usage("baton.Loader: closed by another thread while waiting for a batch");
        }
        if (PyErr_CheckSignals() < 0) {
            set_busy(self, 0);
            return NULL;
        }
    }
    set_busy(self, 0);
    if (rc == BATON_END) {
        if (self->cur.position) self->cur = (baton_cursor){self->cur.seed, self->cur.epoch + 1, 0};
        self->pass_start = self->cur;   /* the next pass is the next epoch */
        self->pass_dirty = 0;
        return NULL;   /* the epoch's end: StopIteration */
    }
    if (rc < 0) {
        if (rc == BATON_ERR_ARG && self->g && self->g->leases >= (Py_ssize_t)self->po.depth) {   /* every slot is ours */
            size_t k = strlen(err.msg);
            snprintf(err.msg + k, sizeof err.msg - k,
                     " (drop the arrays of earlier batches, or open the Loader with a larger depth=; inside a "
                     "torch DataLoader give it batch_size=None: a Loader's items are whole batches)");
        }
        return pyb_raise(&err);
    }
    self->cur = b->next;
    self->pass_dirty = 1;
    return make_batch(self, b);
}

/* Put the cursor at c for the next pass: the pipeline is reopened there at the next batch. */
static void seek_pass(Loader *self, baton_cursor c)
{
    gen *old = self->g;
    self->g = NULL;
    self->cur = self->pass_start = c;
    self->pass_dirty = 0;
    set_busy(self, 1);   /* the old pipeline stops with the GIL released: nobody opens another meanwhile */
    gen_retire(old);
    set_busy(self, 0);
}

/* A new pass: a pass that handed out part of its batches starts again where it started. */
static PyObject *loader_iter(Loader *self)
{
    if (check_open(self)) return NULL;
    if (self->pass_dirty) seek_pass(self, self->pass_start);
    return Py_NewRef((PyObject *)self);
}

static PyObject *loader_set_epoch(Loader *self, PyObject *arg)
{
    if (check_open(self)) return NULL;
    unsigned long long e = PyLong_Check(arg) ? PyLong_AsUnsignedLongLong(arg) : (unsigned long long)-1;
    if (!PyLong_Check(arg) || (e == (unsigned long long)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        return pyb_usage("set_epoch: expected an epoch number (an integer >= 0)");
    }
    if (e != self->cur.epoch) seek_pass(self, (baton_cursor){self->cur.seed, e, 0});
    Py_RETURN_NONE;
}

static Py_ssize_t loader_len(Loader *self)
{
    if (check_readable(self)) return -1;
    uint64_t B = self->po.batch;
    return (Py_ssize_t)(self->po.drop_last ? self->esize / B : (self->esize + B - 1) / B);
}

/* ---------------------------------------------------------------- state */
static PyObject *loader_state_dict(Loader *self, PyObject *noargs)
{
    /* read with the GIL held: also from this thread's signal handler during next() (the cursor after
     * the last batch handed out) */
    if (check_readable(self)) return NULL;
    return Py_BuildValue("{s:i,s:s,s:K,s:K,s:K,s:I,s:K,s:O}", "version", 1, "uri", self->uri, "seed",
                         (unsigned long long)self->cur.seed, "epoch", (unsigned long long)self->cur.epoch,
                         "position", (unsigned long long)self->cur.position, "batch", self->po.batch, "samples",
                         (unsigned long long)self->esize, "shuffle", self->lo.no_shuffle ? Py_False : Py_True);
}

static int get_u64(PyObject *d, const char *key, uint64_t *out)
{
    PyObject *v = PyMapping_GetItemString(d, key);
    if (!v) {
        PyErr_Clear();
        pyb_usage("load_state_dict: the state has no \"%s\" (not a baton.Loader state?)", key);
        return -1;
    }
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        pyb_usage("load_state_dict: \"%s\" is not a non-negative integer", key);
        return -1;
    }
    *out = x;
    return 0;
}

static PyObject *loader_load_state_dict(Loader *self, PyObject *d)
{
    if (check_open(self)) return NULL;
    if (!PyMapping_Check(d)) return pyb_usage("load_state_dict: expected a dict from state_dict()");
    uint64_t seed, epoch, pos, batch, samples;
    if (get_u64(d, "seed", &seed) || get_u64(d, "epoch", &epoch) || get_u64(d, "position", &pos) ||
        get_u64(d, "batch", &batch) || get_u64(d, "samples", &samples))
        return NULL;
    PyObject *sh = PyMapping_GetItemString(d, "shuffle");
    int shuffle = sh ? PyObject_IsTrue(sh) : 1;
    Py_XDECREF(sh);
    PyErr_Clear();
    if (seed != self->lo.seed || batch != self->po.batch || shuffle == self->lo.no_shuffle)
        return pyb_usage("load_state_dict: the state is of a Loader with seed %llu, batch %llu, shuffle %s; this "
                         "one has seed %llu, batch %u, shuffle %s (the order depends on them: open it with the same)",
                         (unsigned long long)seed, (unsigned long long)batch, shuffle ? "True" : "False",
                         (unsigned long long)self->lo.seed, self->po.batch, self->lo.no_shuffle ? "False" : "True");
    if (samples != self->esize)
        return pyb_usage("load_state_dict: the state is of a dataset of %llu samples; %s has %llu",
                         (unsigned long long)samples, self->uri, (unsigned long long)self->esize);
    if (pos > self->esize) return pyb_usage("load_state_dict: position %llu is past the epoch's %llu samples",
                                            (unsigned long long)pos, (unsigned long long)self->esize);
    if (pos == self->esize) epoch++, pos = 0;   /* the end of an epoch: the next one */
    seek_pass(self, (baton_cursor){seed, epoch, pos});
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- stats and the rest */
static PyObject *loader_stats(Loader *self, PyObject *noargs)
{
    if (check_readable(self)) return NULL;
    baton_loader_stats st;
    baton_loader_get_stats(self->l, &st);
    uint64_t dataset = 0;
    for (size_t i = 0; i < self->m->nshards; i++) dataset += self->m->shards[i].bytes;
    uint64_t last = self->epochs ? self->epochs : self->cur.epoch + 1;
    PyObject *per = PyList_New(0);
    for (uint64_t e = 0; per && e < last && e <= self->cur.epoch; e++) {
        PyObject *v = PyLong_FromUnsignedLongLong(baton_loader_epoch_fetched(self->l, e));
        if (!v || PyList_Append(per, v)) Py_CLEAR(per);
        Py_XDECREF(v);
    }
    if (!per) return NULL;
    return Py_BuildValue("{s:s,s:d,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N}", "mode", baton_io_mode_name(self->lo.mode),
                         "open_s", st.open_s, "bytes_read", (unsigned long long)st.bytes_read, "bytes_fetched",
                         (unsigned long long)st.bytes_fetched, "open_fetched", (unsigned long long)st.open_fetched,
                         "retries", (unsigned long long)st.fetch_retries, "downloads",
                         (unsigned long long)st.downloads, "record_requests", (unsigned long long)st.record_requests,
                         "dataset_bytes", (unsigned long long)dataset,
                         "epoch_fetched", per);
}

/* close(): waits for another thread's call in progress (its next() gives up its wait within 0.1 s);
 * from the busy thread itself (a signal handler during next()) it is refused. */
static PyObject *loader_close(Loader *self, PyObject *noargs)
{
    if (self->busy && self->busy_thread == PyThread_get_thread_ident())
        return pyb_usage("baton.Loader: close() from inside this thread's next() (a signal handler?): close it after");
    self->closing++;
    while (self->busy) {
        Py_BEGIN_ALLOW_THREADS
        usleep(1000);
        Py_END_ALLOW_THREADS
    }
    self->closing--;
    loader_close_all(self);
    Py_RETURN_NONE;
}

static PyObject *loader_enter(Loader *self, PyObject *noargs) { return Py_NewRef((PyObject *)self); }

static PyObject *loader_exit(Loader *self, PyObject *args) { return loader_close(self, NULL); }

static PyObject *get_epoch(Loader *self, void *c)
{
    return PyLong_FromUnsignedLongLong(self->cur.epoch);
}

static PyObject *get_position(Loader *self, void *c)
{
    return PyLong_FromUnsignedLongLong(self->cur.position);
}

static PyObject *get_info(Loader *self, void *c)
{
    if (check_readable(self)) return NULL;
    const baton_manifest *m = self->m;
    PyObject *names = PyList_New(0);
    for (uint32_t i = 0; names && m->class_names && i < m->classes; i++) {
        PyObject *s = PyUnicode_FromString(m->class_names[i] ? m->class_names[i] : "");
        if (!s || PyList_Append(names, s)) Py_CLEAR(names);
        Py_XDECREF(s);
    }
    if (!names) return NULL;
    uint32_t sh[3] = {m->shape[0], m->shape[1], m->shape[2] ? m->shape[2] : m->channels};
    if (self->po.crop == BATON_CROP_RANDOM_RESIZED || self->po.crop == BATON_CROP_CENTER)   /* what a batch holds */
        sh[0] = sh[1] = self->po.size ? self->po.size : 224;
    /* what float batches are normalised with (uint8 batches are not: a GPU does it with these) */
    const float *mean = self->po.mean ? self->po.mean : m->mean, *std = self->po.std ? self->po.std : m->std;
    PyObject *mo = PyList_New(0), *so = PyList_New(0);
    for (uint32_t k = 0; mo && so && k < sh[2] && k < 4; k++) {
        PyObject *a = PyFloat_FromDouble(mean[k]), *b = PyFloat_FromDouble(std[k]);
        if (!a || !b || PyList_Append(mo, a) || PyList_Append(so, b)) Py_CLEAR(mo);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
    if (!mo || !so) {
        Py_XDECREF(mo);
        Py_XDECREF(so);
        Py_DECREF(names);
        return NULL;
    }
    return Py_BuildValue("{s:K,s:K,s:I,s:(III),s:N,s:s,s:K,s:s,s:N,s:N,s:s}", "samples", (unsigned long long)m->samples,
                         "epoch_samples", (unsigned long long)self->esize, "classes", m->classes, "shape",
                         sh[2], sh[0], sh[1], "class_names", names, "mode",
                         baton_io_mode_name(self->lo.mode), "epochs", (unsigned long long)self->epochs, "uri",
                         self->uri, "mean", mo, "std", so, "dtype", self->po.u8 ? "uint8" : "float32");
}

static PyMethodDef loader_methods[] = {
    {"state_dict", (PyCFunction)loader_state_dict, METH_NOARGS,
     "state_dict($self, /)\n--\n\nThe cursor after the last batch handed out (a dict JSON can hold): save it with a checkpoint."},
    {"load_state_dict", (PyCFunction)loader_load_state_dict, METH_O,
     "load_state_dict($self, state, /)\n--\n\nContinue exactly where a state_dict() was taken (same seed, batch, shuffle and dataset)."},
    {"set_epoch", (PyCFunction)loader_set_epoch, METH_O,
     "set_epoch($self, epoch, /)\n--\n\nThe next pass is epoch e: from its start, or from the cursor when it is already in epoch e (resumed)."},
    {"stats", (PyCFunction)loader_stats, METH_NOARGS,
     "stats($self, /)\n--\n\nBytes read and fetched (per epoch too), the open time, retries (exact between epochs)."},
    {"close", (PyCFunction)loader_close, METH_NOARGS, "close($self, /)\n--\n\nStop the threads and free the buffers not held."},
    {"__enter__", (PyCFunction)loader_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)loader_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef loader_getset[] = {
    {"epoch", (getter)get_epoch, NULL, "The epoch the next batch belongs to.", NULL},
    {"position", (getter)get_position, NULL, "The epoch position of the next sample.", NULL},
    {"info", (getter)get_info, NULL, "samples, classes, shape (C, H, W), class_names, mode, epochs, uri, mean and std (what float32 batches are normalised with), dtype.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef loader_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Loader, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot loader_slots[] = {
    {Py_tp_dealloc, loader_dealloc},
    {Py_tp_doc, (void *)("Loader(uri, *, batch=None, batch_size=None, mode=None, shuffle=True, seed=0, epochs=None, rank=0, world=1, threads=2, normalize=True, local_dir=None, drop_last=False, layout='nchw', depth=4, s3_endpoint=None, block=0, crop_pad=0, flip=False, size=224, crop=None, scale=(0.08, 1.0), ratio=(0.75, 1.3333333333333333), dtype='float32', download_first=False)\n"
              "--\n"
              "\n"
              "A baton dataset as batches, exactly those `baton train` trains on for the same seed and batch.\n"
              "Every argument after uri is keyword-only.\n"
              "\n"
              "uri          the dataset `baton pack` made: a folder, file://, http(s):// or s3:// (its dataset.json).\n"
              "batch        the global batch: the samples of one step over all `world` ranks (128 when neither\n"
              "             batch nor batch_size is given); each rank gets its part (sample i of the batch goes to\n"
              "             rank i mod world), so a run resumes at any world size.\n"
              "batch_size   PyTorch's meaning: this process's samples per step; the global batch is then\n"
              "             batch_size * world. Give batch or batch_size, not both.\n"
              "mode         \"mount\" (read in place; a path's default), \"pipe\" (stream; http(s):// and s3://'s\n"
              "             default), \"file\" (download whole into local_dir, then read it), \"cache\" (stream the\n"
              "             first epoch, keeping a copy in local_dir for the next).\n"
              "shuffle      a new order each epoch drawn from seed (False: the packed order).\n"
              "seed         the order's and the augmentations' seed, an integer in [0, 2^64).\n"
              "epochs       how many epochs iteration goes through (None: no end; each iter() is the next epoch).\n"
              "rank, world  this process's place among data-parallel processes (torchrun's RANK and WORLD_SIZE).\n"
              "threads      decode threads (1..256).\n"
              "normalize    True: dataset.json's per-channel mean and std; False: pixels / 255; or (mean, std),\n"
              "             one number per channel each.\n"
              "local_dir    file and cache modes' local copy (default $XDG_CACHE_HOME/baton/data/<CRC of uri>,\n"
              "             shared by the ranks a launcher places on one machine, which split the downloads).\n"
              "drop_last    leave out an epoch's last batch when it is partial.\n"
              "download_first  file mode: download and check every shard before the first batch (SageMaker's\n"
              "             File mode); by default the copy fills while the first epoch reads it.\n"
              "layout       \"nchw\" or \"nhwc\": the images' axis order.\n"
              "depth        batches decoded ahead (2..64): the prefetch buffers, and how many batches a caller may\n"
              "             hold at once (their arrays alive).\n"
              "s3_endpoint  an S3-compatible server's URL for s3:// (default: $AWS_ENDPOINT_URL, else AWS).\n"
              "block        pipe and cache modes' streamed order: records per shuffle block, the memory of the\n"
              "             shuffle (0: about 32 MiB of records, 64..16384).\n"
              "crop_pad     pad by this many pixels and crop a random window of the original size (0: none).\n"
              "flip         a random horizontal flip per sample.\n"
              "size         the side of crop=\"random-resized\" and crop=\"center\"'s output (1..4096).\n"
              "crop         None (the images as they are: one size), \"pad\" (crop_pad 4 by default), \"random-resized\"\n"
              "             (training: torchvision's RandomResizedCrop draws), \"center\" (evaluation: resize, center).\n"
              "scale, ratio \"random-resized\"'s ranges of area and aspect (torchvision's defaults).\n"
              "dtype        \"float32\" (normalised) or \"uint8\" (raw pixels, a quarter of the bytes: normalise on the\n"
              "             GPU with info[\"mean\"] and info[\"std\"]).")},
    {Py_tp_iter, loader_iter},
    {Py_tp_iternext, loader_next},
    {Py_tp_methods, loader_methods},
    {Py_tp_getset, loader_getset},
    {Py_tp_members, loader_members},
    {Py_sq_length, loader_len},
    {Py_tp_init, loader_init},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};
PyType_Spec pyb_LoaderSpec = {"baton._baton.Loader", sizeof(Loader), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
                              loader_slots};

static PyStructSequence_Field batch_fields[] = {
    {"images", "float32 (n, C, H, W) (or (n, H, W, C)): the decoded, normalised images (uint8 pixels with dtype=\"uint8\")"},
    {"labels", "int64 (n,): the labels"},
    {"epoch", "the epoch"},
    {"index", "the batch's index in the epoch (the same at any world size)"},
    {"positions", "uint64 (n,): each sample's position in the epoch's order"},
    {"total", "samples of the whole global batch (n is this rank's part of it)"},
    {NULL, NULL},
};
PyStructSequence_Desc pyb_batch_desc = {
    "baton.Batch", "One batch: (images, labels), with epoch, index, positions and total.", batch_fields, 2,
};
