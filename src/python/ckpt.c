/* ckpt.c — baton.Checkpoints: a trainer's own tensors (a PyTorch state_dict flattened by
 * baton.torch, or any NumPy arrays) saved with the protocol of `baton train`: snapshot to memory,
 * write and commit in the background (ckpt.h: model.safetensors, optim.safetensors, state.json,
 * MANIFEST last, rename, fsync), the folder locked while open, retention that never loses a
 * verified checkpoint, an object-store copy uploaded in the background (MANIFEST object last) and
 * restored when the folder is empty; and loading the newest that verifies.
 *
 * Contract:
 *  - save(step, tensors, state, optim) returns once the tensors are copied (the GIL released for
 *    the copy); the caller may change them at once. A save while the previous one is still being
 *    written waits for it. sync=True commits (and uploads) before returning.
 *  - tensors and optim map names to objects with the buffer protocol (NumPy arrays, C-contiguous)
 *    or to (dtype, buffer) pairs for dtypes NumPy lacks ("BF16"); the dtype comes from the buffer's
 *    format. state is what JSON holds and what torch's state dicts hold besides (baton._state:
 *    inf and nan, NumPy scalars, small tensors, tagged "$baton"); state.json is {"step": N, "kind":
 *    "baton-python", "state": state}, which `baton ckpt show` prints.
 *  - due(step), called once per step, says whether a save is due (every N steps, S seconds, or
 *    Daly's interval), writes the fleet's progress file ($BATON_PROGRESS_FILE), and collects a
 *    finished background save: one that failed makes due() true at once (a retry). All of it is
 *    ckpt.h's cadence, the one `baton train` paces its checkpoints with; this file converts types.
 *  - load() returns the newest checkpoint that verifies as a baton.Checkpoint whose arrays share one
 *    buffer per file; newer damaged ones are moved aside; with uri= and an empty folder, the
 *    object store's newest complete one is restored first. */
#include "python_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- a loaded safetensors file */
typedef struct {
    PyObject_HEAD
    uint8_t *data;              /* the whole file */
    baton_st_header h;
} File;

static void file_dealloc(File *self)
{
    free(self->data);
    baton_st_header_free(&self->h);
    pyb_free((PyObject *)self);
}

static PyType_Slot file_slots[] = {
    {Py_tp_dealloc, file_dealloc},
    {Py_tp_doc, "A safetensors file read into memory; its tensors are views of it."},
    {0, NULL},
};
PyType_Spec pyb_FileSpec = {"baton._SafetensorsFile", sizeof(File), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, file_slots};

/* One tensor of a File, through the buffer protocol. */
typedef struct {
    PyObject_HEAD
    File *f;
    size_t i;
    Py_ssize_t shape[BATON_ST_MAX_DIMS], strides[BATON_ST_MAX_DIMS];
} TensorView;

/* The buffer-protocol format of each dtype (BF16 and the F8s as raw unsigned integers of their
 * size: baton.torch reinterprets them) */
static const char *st_format(int dt)
{
    switch (dt) {
    case BATON_ST_F32: return "f";
    case BATON_ST_F64: return "d";
    case BATON_ST_F16: return "e";
    case BATON_ST_I64: return "q";
    case BATON_ST_I32: return "i";
    case BATON_ST_I16: return "h";
    case BATON_ST_I8: return "b";
    case BATON_ST_BOOL: return "?";
    case BATON_ST_U16:
    case BATON_ST_BF16: return "H";
    case BATON_ST_U32: return "I";
    case BATON_ST_U64: return "Q";
    default: return "B";   /* U8, F8_E4M3, F8_E5M2 */
    }
}

static int tv_getbuffer(TensorView *self, Py_buffer *v, int flags)
{
    const baton_st_tensor *t = &self->f->h.tensors[self->i];
    v->buf = self->f->data + self->f->h.data_start + t->begin;
    v->obj = Py_NewRef((PyObject *)self);
    v->len = (Py_ssize_t)(t->end - t->begin);
    v->itemsize = (Py_ssize_t)baton_st_dtype_size(t->dtype);
    v->readonly = 0;
    v->ndim = t->ndim;
    v->format = (flags & PyBUF_FORMAT) ? (char *)st_format(t->dtype) : NULL;
    v->shape = (flags & PyBUF_ND) ? self->shape : NULL;
    v->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
    v->suboffsets = NULL;
    v->internal = NULL;
    return 0;
}

static void tv_dealloc(TensorView *self)
{
    Py_XDECREF(self->f);
    pyb_free((PyObject *)self);
}

static PyType_Slot tv_slots[] = {
    {Py_tp_dealloc, tv_dealloc},
    {Py_bf_getbuffer, tv_getbuffer},
    {0, NULL},
};
PyType_Spec pyb_TensorViewSpec = {"baton._TensorView", sizeof(TensorView), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, tv_slots};

/* Read one safetensors file into {name: array} and {name: dtype name}; the metadata into meta. */
static int read_tensors(const char *path, PyObject *arrays, PyObject *dtypes, PyObject *meta)
{
    pyb_state *mst = pyb_state_now();
    if (!mst) return -1;
    File *f = PyObject_New(File, mst->File);
    if (!f) return -1;
    f->data = NULL;
    memset(&f->h, 0, sizeof f->h);
    baton_err err = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = baton_st_read_file(path, &f->h, &f->data, &err);
    Py_END_ALLOW_THREADS
    if (rc) {
        Py_DECREF(f);
        return pyb_raise_rc(&err);
    }
    for (size_t i = 0; i < f->h.ntensors; i++) {
        const baton_st_tensor *t = &f->h.tensors[i];
        TensorView *v = PyObject_New(TensorView, mst->TensorView);
        if (!v) break;
        v->f = (File *)Py_NewRef((PyObject *)f);
        v->i = i;
        Py_ssize_t st = (Py_ssize_t)baton_st_dtype_size(t->dtype);
        for (int d = t->ndim - 1; d >= 0; d--) {
            v->shape[d] = (Py_ssize_t)t->shape[d];
            v->strides[d] = st;
            st *= v->shape[d] ? v->shape[d] : 1;
        }
        PyObject *a = pyb_asarray((PyObject *)v);
        Py_DECREF(v);
        PyObject *dn = a ? PyUnicode_FromString(baton_st_dtype_name(t->dtype)) : NULL;
        int bad = !dn || PyDict_SetItemString(arrays, t->name, a) || PyDict_SetItemString(dtypes, t->name, dn);
        Py_XDECREF(a);
        Py_XDECREF(dn);
        if (bad) break;
    }
    for (size_t i = 0; !PyErr_Occurred() && meta && i < f->h.nmeta; i++) {
        PyObject *s = PyUnicode_FromString(f->h.meta_vals[i]);
        if (!s || PyDict_SetItemString(meta, f->h.meta_keys[i], s)) PyErr_Clear();
        Py_XDECREF(s);
    }
    Py_DECREF(f);
    return PyErr_Occurred() ? -1 : 0;
}

/* ---------------------------------------------------------------- tensors to write */
typedef struct {
    baton_st_entry *e;
    Py_buffer *views;
    int64_t (*shapes)[BATON_ST_MAX_DIMS];
    PyObject **names;           /* the keys, kept alive while the entries point at their UTF-8 */
    size_t n, nviews;
} entries;

static void entries_free(entries *t)
{
    for (size_t i = 0; i < t->nviews; i++) PyBuffer_Release(&t->views[i]);
    for (size_t i = 0; i < t->n; i++) Py_XDECREF(t->names[i]);
    free(t->e);
    free(t->views);
    free(t->shapes);
    free(t->names);
    memset(t, 0, sizeof *t);
}

/* The dtype of a buffer's struct-module format ("<f", "f", "=q"), checked against its itemsize. */
static int format_dtype(const char *fmt, Py_ssize_t item)
{
    if (!fmt) return BATON_ST_U8;
    if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
    if (strlen(fmt) != 1) return -1;
    int dt;
    switch (*fmt) {
    case 'f': dt = BATON_ST_F32; break;
    case 'd': dt = BATON_ST_F64; break;
    case 'e': dt = BATON_ST_F16; break;
    case 'q': case 'l': case 'n': dt = item == 8 ? BATON_ST_I64 : BATON_ST_I32; break;
    case 'Q': case 'L': case 'N': dt = item == 8 ? BATON_ST_U64 : BATON_ST_U32; break;
    case 'i': dt = BATON_ST_I32; break;
    case 'I': dt = BATON_ST_U32; break;
    case 'h': dt = BATON_ST_I16; break;
    case 'H': dt = BATON_ST_U16; break;
    case 'b': dt = BATON_ST_I8; break;
    case 'B': case 'c': dt = BATON_ST_U8; break;
    case '?': dt = BATON_ST_BOOL; break;
    default: return -1;
    }
    return (Py_ssize_t)baton_st_dtype_size(dt) == item ? dt : -1;
}

static int add_entry(entries *t, PyObject *key, PyObject *val, const char *what)
{
    size_t i = t->n;
    Py_ssize_t nlen = 0;
    const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &nlen) : NULL;
    if (!name) {
        PyErr_Clear();
        return pyb_usage_rc("%s: tensor names must be strings", what);
    }
    if ((size_t)nlen != strlen(name))   /* a NUL inside: two names would be cut to one */
        return pyb_usage_rc("%s: tensor name '%s\\0...' holds a NUL character", what, name);
    int forced = -1;
    if (PyTuple_Check(val)) {   /* (dtype, buffer) */
        const char *dn = PyTuple_GET_SIZE(val) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(val, 0))
                             ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(val, 0)) : NULL;
        if (!dn || (forced = baton_st_dtype_parse(dn)) < 0) {
            PyErr_Clear();
            return pyb_usage_rc("%s: tensor '%s': a pair must be (safetensors dtype name, buffer)", what, name);
        }
        val = PyTuple_GET_ITEM(val, 1);
    }
    Py_buffer *v = &t->views[t->nviews];
    if (PyObject_GetBuffer(val, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return pyb_usage_rc("%s: tensor '%s': a %s is not a C-contiguous buffer (a NumPy array; for a torch "
                            "tensor use baton.torch or .detach().cpu().contiguous().numpy())",
                            what, name, Py_TYPE(val)->tp_name);
    }
    t->nviews++;
    int dt = forced >= 0 ? forced : format_dtype(v->format, v->itemsize);
    if (dt < 0 || (Py_ssize_t)baton_st_dtype_size(dt) != v->itemsize)
        return pyb_usage_rc("%s: tensor '%s': element format '%s' (%zd bytes) has no safetensors dtype", what, name,
                            v->format ? v->format : "B", v->itemsize);
    if (v->ndim > BATON_ST_MAX_DIMS)
        return pyb_usage_rc("%s: tensor '%s': %d dimensions, at most %d", what, name, v->ndim, BATON_ST_MAX_DIMS);
    for (int d = 0; d < v->ndim; d++) t->shapes[i][d] = (int64_t)v->shape[d];
    t->names[i] = Py_NewRef(key);
    t->e[i] = (baton_st_entry){.name = name, .dtype = dt, .ndim = v->ndim, .shape = t->shapes[i], .data = v->buf};
    t->n++;
    return 0;
}

/* A mapping of tensors as entries (None: none). */
static int to_entries(PyObject *map, const char *what, entries *t)
{
    memset(t, 0, sizeof *t);
    if (!map || map == Py_None) return 0;
    PyObject *items = PyMapping_Items(map);
    if (!items) {
        PyErr_Clear();
        return pyb_usage_rc("%s: expected a mapping of names to arrays", what);
    }
    Py_ssize_t n = PyList_GET_SIZE(items);
    size_t cap = (size_t)n + 1;
    t->e = calloc(cap, sizeof *t->e);
    t->views = calloc(cap, sizeof *t->views);
    t->shapes = calloc(cap, sizeof *t->shapes);
    t->names = calloc(cap, sizeof *t->names);
    int rc = t->e && t->views && t->shapes && t->names ? 0 : (PyErr_NoMemory(), -1);
    for (Py_ssize_t i = 0; !rc && i < n; i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        rc = add_entry(t, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1), what);
    }
    Py_DECREF(items);
    if (rc) entries_free(t);
    return rc;
}

/* ---------------------------------------------------------------- Checkpoints */
typedef struct {
    PyObject_HEAD
    baton_ckpt_store *s;
    char *dir;
    baton_ckpt_policy pol;      /* every= parsed; then the cadence's copy is the one in force */
    baton_ckpt_cadence *cad;    /* when due() says a save is due, the progress file (ckpt.h) */
    int busy;
    uint64_t saves;
    int left_checked;           /* the resumed checkpoint's upload was checked (upload_left) */
    pid_t pid;                  /* the process that opened it: a forked child never touches its store */
} Checkpoints;

/* state.json's text and back through baton._state (dumps, loads): JSON that also holds what torch's
 * state dicts hold (inf and nan, NumPy scalars, small tensors), its errors naming the key's path */
static PyObject *json_call(const char *fn, PyObject *arg, PyObject *kw)
{
    PyObject *mod = PyImport_ImportModule("baton._state");
    PyObject *f = mod ? PyObject_GetAttrString(mod, fn) : NULL;
    Py_XDECREF(mod);
    if (!f) return NULL;
    PyObject *args = PyTuple_Pack(1, arg);
    PyObject *r = args ? PyObject_Call(f, args, kw) : NULL;
    Py_XDECREF(args);
    Py_DECREF(f);
    return r;
}

static int ck_check(Checkpoints *self)
{
    if (!self->s) return pyb_usage_rc("baton.Checkpoints: closed");
    if (self->pid != getpid())
        return pyb_usage_rc("baton.Checkpoints: opened by process %d; a forked child cannot use it (its lock, "
                            "threads and folder are the parent's)", (int)self->pid);
    if (self->busy) return pyb_usage_rc("baton.Checkpoints: in use by another thread");
    return 0;
}

static void ck_close_all(Checkpoints *self)
{
    if (self->s && self->pid != getpid()) self->s = NULL;   /* a forked child: the parent's, left alone */
    if (self->s) {
        baton_ckpt_store *s = self->s;
        self->s = NULL;
        Py_BEGIN_ALLOW_THREADS
        baton_ckpt_store_close(s);
        Py_END_ALLOW_THREADS
    }
    baton_ckpt_cadence_close(self->cad);
    self->cad = NULL;
}

static void ck_dealloc(Checkpoints *self)
{
    ck_close_all(self);
    free(self->dir);
    pyb_free((PyObject *)self);
}

/* every: None (the environment of a fleet worker, else every 60 s), an int (steps), a float
 * (seconds) or a string (ckpt.h: "auto", "100", "90s", "5m", "off") */
static int parse_every(Checkpoints *self, PyObject *every, double mtbi)
{
    baton_err err = {0};
    if (!every || every == Py_None) {
        baton_ckpt_policy_init(&self->pol, 0, BATON_CKPT_EVERY_SEC_DEFAULT, 0, mtbi);
        return baton_ckpt_policy_from_env(&self->pol, &err) < 0 ? pyb_raise_rc(&err) : 0;
    }
    if (PyUnicode_Check(every)) {
        const char *text = NULL;
        if (pyb_opt_str(every, "every", &text)) return -1;
        return baton_ckpt_policy_parse(&self->pol, text, mtbi, &err) ? pyb_raise_rc(&err) : 0;
    }
    if (PyLong_Check(every)) {
        long long n = PyLong_AsLongLong(every);
        if (n < 1) {
            PyErr_Clear();
            return pyb_usage_rc("every: a number of steps must be positive");
        }
        baton_ckpt_policy_init(&self->pol, (uint64_t)n, 0, 0, mtbi);
        return 0;
    }
    if (PyFloat_Check(every)) {
        double s = PyFloat_AsDouble(every);
        if (!(s > 0)) return pyb_usage_rc("every: seconds must be positive");
        baton_ckpt_policy_init(&self->pol, 0, s, 0, mtbi);
        return 0;
    }
    return pyb_usage_rc("every: expected None, steps (int), seconds (float) or \"auto\", \"90s\", \"5m\"");
}

static int ck_init(Checkpoints *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"dir", "keep", "uri", "every", "s3_endpoint", "mtbi", NULL};
    const char *dir, *uri = NULL, *endpoint = NULL;
    PyObject *uri_o = NULL, *every = NULL, *ep_o = NULL, *mtbi_o = NULL;
    Py_ssize_t keep = BATON_CKPT_KEEP_DEFAULT;
    if (self->s) return pyb_usage_rc("baton.Checkpoints: already open");
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|$nOOOO:Checkpoints", kwlist, &dir, &keep, &uri_o, &every, &ep_o,
                                     &mtbi_o))
        return -1;
    if (pyb_opt_str(uri_o, "uri", &uri) || pyb_opt_str(ep_o, "s3_endpoint", &endpoint)) return -1;
    if (keep < 1 || keep > 1000000) return pyb_usage_rc("keep: must be at least 1");
    double mtbi = 0;
    if (mtbi_o && mtbi_o != Py_None && (mtbi = PyFloat_AsDouble(mtbi_o), PyErr_Occurred() || !(mtbi > 0))) {
        PyErr_Clear();
        return pyb_usage_rc("mtbi: the mean time between interruptions, in seconds (> 0)");
    }
    if (parse_every(self, every, mtbi)) return -1;
    if (!(self->dir = strdup(dir))) return PyErr_NoMemory(), -1;
    baton_err err = {0};
    baton_store_opts so;
    baton_store_opts_default(&so);
    so.s3_endpoint = endpoint;
    int rc;
    baton_ckpt_store *s = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = baton_ckpt_store_open(dir, (int)keep, &s, &err);
    if (!rc && uri && (rc = baton_ckpt_store_attach(s, uri, &so, &err))) {
        baton_err_prefix(&err, "uri %s", uri);
        baton_ckpt_store_close(s);
        s = NULL;
    }
    Py_END_ALLOW_THREADS
    uint32_t rank, world;
    const char *who;
    if (rc == BATON_ERR_BUSY && pyb_launcher_rank(&rank, &world, &who) && world > 1)   /* every DDP rank opened it */
        baton_err_set(&err, BATON_ERR_BUSY,
                      "checkpoint folder %s is locked by another process, and this one is rank %u of %u (%s): open "
                      "baton.Checkpoints on rank 0 only; rank 0 saves and loads, and broadcasts what it loaded "
                      "(examples/pytorch/train.py)", dir, rank, world, who);
    /* no bound on uncommitted work: the caller's save waits for the persist in flight anyway */
    if (!rc && (rc = baton_ckpt_cadence_open(&self->pol, getenv("BATON_PROGRESS_FILE"), 0, &self->cad, &err)))
        baton_ckpt_store_close(s);
    if (rc) return pyb_raise_rc(&err);
    self->s = s;
    self->pid = getpid();
    return 0;
}

static PyObject *ck_save(Checkpoints *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"step", "tensors", "state", "optim", "sync", NULL};
    unsigned long long step;
    PyObject *step_o, *tensors, *state = Py_None, *optim = Py_None;
    int sync = 0;
    if (ck_check(self)) return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO$p:save", kwlist, &step_o, &tensors, &state, &optim, &sync)) return NULL;
    step = PyLong_Check(step_o) ? PyLong_AsUnsignedLongLong(step_o) : (unsigned long long)-1;
    if (!PyLong_Check(step_o) || (step == (unsigned long long)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        return pyb_usage("save: step must be an integer in [0, 2^64)");
    }
    /* a step below the newest in the folder (a folder reused for a new run) would be committed and
     * then deleted by retention at once, and load() would return the old run's */
    baton_ckpt_info *ls = NULL;
    size_t nls = 0;
    uint64_t have = 0;
    baton_err lerr = {0};
    int below = 0;
    if (baton_ckpt_list(self->dir, 2, &ls, &nls, &lerr) == BATON_OK)   /* quick: MANIFESTs, newest first */
        for (size_t i = 0; i < nls && !below; i++)
            if (ls[i].status == BATON_OK) have = ls[i].step, below = step < have, i = nls;
    free(ls);
    if (below)
        return pyb_usage("save: step %llu is below the newest checkpoint in %s (step %llu): a new run takes a folder "
                         "of its own (or remove the old checkpoints first)", step, self->dir, (unsigned long long)have);
    PyObject *doc = Py_BuildValue("{s:K,s:s,s:O}", "step", step, "kind", "baton-python", "state", state);
    PyObject *js = doc ? json_call("dumps", doc, NULL) : NULL;
    Py_XDECREF(doc);
    const char *text = js ? PyUnicode_AsUTF8(js) : NULL;
    if (!text) {
        Py_XDECREF(js);
        return NULL;   /* baton._state's error: the path of what in the state it cannot hold */
    }
    entries mt, ot;
    if (to_entries(tensors, "tensors", &mt)) {
        Py_DECREF(js);
        return NULL;
    }
    if (to_entries(optim, "optim", &ot)) {
        entries_free(&mt);
        Py_DECREF(js);
        return NULL;
    }
    baton_err err = {0};
    int rc;
    double t0 = baton_now(), blocked = 0;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = baton_ckpt_snapshot_entries(self->s, mt.e, mt.n, ot.e, ot.n, step, text, step, BATON_CKPT_WAIT, &err);
    blocked = baton_now() - t0;
    if (!rc) rc = sync ? baton_ckpt_persist_sync(self->s, &err) : baton_ckpt_persist_async(self->s, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    entries_free(&mt);
    entries_free(&ot);
    Py_DECREF(js);
    if (rc) {
        baton_err_prefix(&err, "checkpoint at step %llu", step);
        return pyb_raise(&err);
    }
    if (sync) baton_ckpt_cadence_committed(self->cad, step);
    baton_ckpt_cadence_saved(self->cad, baton_now(), blocked);
    self->saves++;
    Py_RETURN_NONE;
}

static PyObject *ck_due(Checkpoints *self, PyObject *arg)
{
    if (ck_check(self)) return NULL;
    unsigned long long step = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    /* a failed background save (logged) makes a save due at once: the retry is the caller's save */
    return PyBool_FromLong(baton_ckpt_cadence_due(self->cad, self->s, step, baton_now()) != BATON_CKPT_NOT_DUE);
}

/* _cadence(op, step, now, blocked=0.0): the cadence driven with a clock of the caller's (tests
 * replay one script through this and through the C path of `baton train`): "begin" (the run
 * starts at step, nothing committed), "due" (the decision: 0 not due, 1 due, 2 retry; no store
 * reaped), "saved" (a save handed over at now, blocking `blocked` seconds). */
static PyObject *ck_cadence(Checkpoints *self, PyObject *args)
{
    const char *op;
    unsigned long long step;
    double now, blocked = 0;
    if (!self->cad) return pyb_usage("baton.Checkpoints: closed");
    if (!PyArg_ParseTuple(args, "sKd|d:_cadence", &op, &step, &now, &blocked)) return NULL;
    if (!strcmp(op, "begin")) baton_ckpt_cadence_begin(self->cad, step, 0, now);
    else if (!strcmp(op, "due")) return PyLong_FromLong(baton_ckpt_cadence_due(self->cad, NULL, step, now));
    else if (!strcmp(op, "saved")) baton_ckpt_cadence_saved(self->cad, now, blocked);
    else return pyb_usage("_cadence: op '%s': expected begin, due or saved", op);
    Py_RETURN_NONE;
}

static PyObject *committed(Checkpoints *self)
{
    const char *c = baton_ckpt_last_committed(self->s);
    if (!c[0]) Py_RETURN_NONE;
    return PyUnicode_FromString(c);
}

/* A deadline given to wait(): unix seconds, or a Notice's event (its "deadline", None: unknown). */
static int deadline_arg(PyObject *o, double *t)
{
    *t = 0;
    if (PyDict_Check(o)) {
        o = PyDict_GetItemString(o, "deadline");   /* borrowed */
        if (!o || o == Py_None) return 0;
    }
    double x = PyFloat_AsDouble(o);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        pyb_usage("wait: deadline must be unix seconds (a Notice's event['deadline']) or a Notice's event");
        return -1;
    }
    if (!(x >= 0)) {
        pyb_usage("wait: deadline must be >= 0 unix seconds");
        return -1;
    }
    *t = x;
    return 0;
}

/* What baton_ckpt_persist_by did, as the dict wait(deadline=...) returns. */
static PyObject *by_dict(const baton_ckpt_by *by, double deadline, const char *folder)
{
    double now = baton_wall_now();
    const char *up = by->upload == BATON_CKPT_UPLOAD_DONE   ? "done"
                     : by->upload == BATON_CKPT_UPLOAD_LEFT ? "left to the next machine"
                                                            : "none";
    return Py_BuildValue("{s:K,s:s,s:d,s:d,s:s,s:d,s:N,s:N,s:s,s:N,s:d,s:N}", "step", (unsigned long long)by->step,
                         "checkpoint", folder, "commit_at", by->commit_at, "commit_s", by->commit_s, "upload", up,
                         "upload_s", by->upload_s,
                         "upload_at", by->upload == BATON_CKPT_UPLOAD_DONE ? PyFloat_FromDouble(by->upload_at)
                                                                            : Py_NewRef(Py_None),
                         "upload_estimate_s", by->upload_est_s >= 0 ? PyFloat_FromDouble(by->upload_est_s)
                                                                    : Py_NewRef(Py_None),
                         "why", by->why, "deadline", deadline > 0 ? PyFloat_FromDouble(deadline) : Py_NewRef(Py_None),
                         "exit_at", now, "margin_s",
                         deadline > 0 ? PyFloat_FromDouble(deadline - now) : Py_NewRef(Py_None));
}

static PyObject *ck_wait(Checkpoints *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"deadline", "margin", NULL};
    PyObject *dl = Py_None;
    double margin = -1, deadline = 0;
    if (ck_check(self)) return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$d", kwlist, &dl, &margin)) return NULL;
    if (dl != Py_None && deadline_arg(dl, &deadline)) return NULL;
    baton_err err = {0};
    if (margin < 0 && baton_ckpt_margin_from_env(&margin, &err)) return pyb_raise(&err);
    baton_ckpt_by by;
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = dl == Py_None ? baton_ckpt_wait(self->s, &err) : baton_ckpt_persist_by(self->s, deadline, margin, &by, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (rc) return pyb_raise(&err);
    if (dl == Py_None) return committed(self);
    if (by.upload == BATON_CKPT_UPLOAD_LEFT)
        baton_log(BATON_LOG_WARN, "checkpoint %llu left to the next machine: %s", (unsigned long long)by.step, by.why);
    return by_dict(&by, deadline, baton_ckpt_last_committed(self->s));
}

/* The newest checkpoint that verifies (the library waits for a save in flight first); the GIL is
 * released and the store marked busy by the caller. */
static int latest_path(Checkpoints *self, char *path, size_t cap, uint64_t *step, baton_err *err)
{
    int rc, check = !self->left_checked;
    Py_BEGIN_ALLOW_THREADS
    rc = baton_ckpt_store_latest(self->s, path, cap, step, err);
    /* once: a checkpoint the previous machine committed but had no time to upload */
    if (rc == BATON_OK && check) baton_ckpt_store_upload_left(self->s, path, *step);
    Py_END_ALLOW_THREADS
    if (rc == BATON_OK) self->left_checked = 1;
    return rc;
}

static PyObject *ck_latest(Checkpoints *self, PyObject *noargs)
{
    if (ck_check(self)) return NULL;
    char path[4096];
    uint64_t step = 0;
    baton_err err = {0};
    self->busy = 1;
    int rc = latest_path(self, path, sizeof path, &step, &err);
    self->busy = 0;
    if (rc == BATON_ERR_NOTFOUND) Py_RETURN_NONE;
    if (rc) return pyb_raise(&err);
    return Py_BuildValue("(Ks)", (unsigned long long)step, path);
}

static PyStructSequence_Field ckpt_fields[] = {
    {"step", "the step it was saved at"},
    {"path", "its folder"},
    {"tensors", "{name: array} of model.safetensors"},
    {"optim", "{name: array} of optim.safetensors"},
    {"state", "the state given to save() (the whole state.json for a checkpoint of baton train)"},
    {"dtypes", "{name: safetensors dtype} of both files (BF16 arrays are their raw uint16 bits)"},
    {NULL, NULL},
};
PyStructSequence_Desc pyb_ckpt_desc = {"baton.Checkpoint", "A checkpoint read back.", ckpt_fields, 6};

static PyObject *load_folder(const char *path)
{
    baton_err err = {0};
    char *state = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = baton_ckpt_load(path, NULL, NULL, &state, &err);   /* verifies every byte first */
    Py_END_ALLOW_THREADS
    if (rc) return pyb_raise(&err);
    PyObject *text = PyUnicode_FromString(state);
    free(state);
    PyObject *doc = text ? json_call("loads", text, NULL) : NULL;
    Py_XDECREF(text);
    if (!doc) return NULL;
    PyObject *step = PyMapping_GetItemString(doc, "step"), *kind = PyMapping_GetItemString(doc, "kind");
    PyErr_Clear();
    PyObject *st = NULL;
    if (kind && PyUnicode_Check(kind) && !PyUnicode_CompareWithASCIIString(kind, "baton-python"))
        st = PyMapping_GetItemString(doc, "state");
    PyErr_Clear();
    if (!st) st = Py_NewRef(doc);
    Py_XDECREF(kind);
    Py_DECREF(doc);
    if (!step) {   /* the error was cleared above: raise one that names the file */
        Py_DECREF(st);
        baton_err e = {0};
        baton_err_set(&e, BATON_ERR_FORMAT, "%s/state.json: not an object with a \"step\"", path);
        return pyb_raise(&e);
    }
    PyObject *model = PyDict_New(), *optim = PyDict_New(), *dtypes = PyDict_New();
    char p[4200];
    int bad = !model || !optim || !dtypes;
    snprintf(p, sizeof p, "%s/model.safetensors", path);
    bad = bad || read_tensors(p, model, dtypes, NULL);
    snprintf(p, sizeof p, "%s/optim.safetensors", path);
    bad = bad || read_tensors(p, optim, dtypes, NULL);
    pyb_state *mst = bad ? NULL : pyb_state_now();
    PyObject *r = mst ? PyStructSequence_New(mst->Checkpoint) : NULL;
    if (!r) {
        Py_XDECREF(step);
        Py_XDECREF(model);
        Py_XDECREF(optim);
        Py_XDECREF(dtypes);
        Py_DECREF(st);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, step);
    PyStructSequence_SET_ITEM(r, 1, PyUnicode_FromString(path));
    PyStructSequence_SET_ITEM(r, 2, model);
    PyStructSequence_SET_ITEM(r, 3, optim);
    PyStructSequence_SET_ITEM(r, 4, st);
    PyStructSequence_SET_ITEM(r, 5, dtypes);
    if (PyErr_Occurred()) Py_CLEAR(r);
    return r;
}

static PyObject *ck_load(Checkpoints *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", NULL};
    const char *path = NULL;
    if (ck_check(self)) return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|z:load", kwlist, &path)) return NULL;
    if (path) return load_folder(path);
    /* busy from finding the folder to reading it: no save from another thread (whose retention
     * could remove it) starts in between */
    char found[4096];
    uint64_t step = 0;
    baton_err err = {0};
    self->busy = 1;
    int rc = latest_path(self, found, sizeof found, &step, &err);
    PyObject *r = rc == BATON_OK ? load_folder(found) : rc == BATON_ERR_NOTFOUND ? Py_NewRef(Py_None) : pyb_raise(&err);
    if (r)   /* what a resume starts from, for `baton verify-resume` (0: a fresh start) */
        baton_verify_log_resume(rc == BATON_OK ? step : 0);
    self->busy = 0;
    return r;
}

static PyObject *ck_list(Checkpoints *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"verify", NULL};
    int verify = 0;
    if (ck_check(self)) return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$p:list", kwlist, &verify)) return NULL;
    baton_ckpt_info *v = NULL;
    size_t n = 0;
    baton_err err = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = baton_ckpt_list(self->dir, verify ? 1 : 2, &v, &n, &err);
    Py_END_ALLOW_THREADS
    if (rc) return pyb_raise(&err);
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *d = Py_BuildValue("{s:K,s:s,s:K,s:O,s:s}", "step", (unsigned long long)v[i].step, "path", v[i].path,
                                    "bytes", (unsigned long long)v[i].bytes, "ok", v[i].status ? Py_False : Py_True,
                                    "reason", v[i].status ? v[i].reason : "");
        if (!d || PyList_Append(out, d)) Py_CLEAR(out);
        Py_XDECREF(d);
    }
    free(v);
    return out;
}

static PyObject *ck_close(Checkpoints *self, PyObject *noargs)
{
    if (self->busy) return pyb_usage("baton.Checkpoints: in use by another thread");
    ck_close_all(self);
    Py_RETURN_NONE;
}

static PyObject *ck_enter(Checkpoints *self, PyObject *noargs) { return Py_NewRef((PyObject *)self); }
static PyObject *ck_exit(Checkpoints *self, PyObject *args) { return ck_close(self, NULL); }

static PyObject *get_committed(Checkpoints *self, void *c)
{
    if (!self->s) Py_RETURN_NONE;
    return committed(self);
}

static PyObject *get_interval(Checkpoints *self, void *c)
{
    const baton_ckpt_policy *p = self->cad ? baton_ckpt_cadence_policy(self->cad) : &self->pol;
    return Py_BuildValue("{s:K,s:d,s:O,s:d,s:d,s:d}", "every_steps", (unsigned long long)p->every_steps, "every_s",
                         p->every_sec, "auto", p->automatic ? Py_True : Py_False, "mtbi_s", p->mtbi_s, "tau_s", p->tau,
                         "delta_s", p->nsaves ? p->delta_sum / (double)p->nsaves : 0.0);
}

static PyObject *get_dir(Checkpoints *self, void *c) { return PyUnicode_FromString(self->dir ? self->dir : ""); }

static PyMethodDef ck_methods[] = {
    {"save", (PyCFunction)(void (*)(void))ck_save, METH_VARARGS | METH_KEYWORDS,
     "save($self, step, tensors, state=None, optim=None, *, sync=False)\n--\n\n"
     "Copy the tensors and commit them as checkpoint `step` in the background; returns at once.\n"
     "step     the number of steps done (an integer above the newest checkpoint's).\n"
     "tensors  {name: array}: NumPy arrays or anything with the buffer protocol (safetensors).\n"
     "state    a dict JSON can hold (inf, nan, NumPy scalars and small tensors too): the loader's cursor, "
     "the epoch, a scheduler's state.\n"
     "optim    {name: array} of the optimizer's tensors (optim.safetensors).\n"
     "sync     commit before returning."},
    {"due", (PyCFunction)ck_due, METH_O,
     "due($self, step, /)\n--\n\n"
     "Call once per step with the steps done: whether a save is due now (every=); also the fleet's progress file."},
    {"_cadence", (PyCFunction)ck_cadence, METH_VARARGS, NULL},
    {"wait", (PyCFunction)(void (*)(void))ck_wait, METH_VARARGS | METH_KEYWORDS,
     "wait($self, deadline=None, *, margin=None)\n--\n\n"
     "Block until every save is committed (and uploaded); the newest committed folder, or None.\n"
     "deadline  unix seconds, or a Notice's event: the interruption's commit, planned by it: the newest save "
     "committed and verified locally, uploaded only if this run's measured upload cost fits before the deadline "
     "less margin (default 5 s, $BATON_DEADLINE_MARGIN_S), else left to the next machine (which uploads it when "
     "it resumes); then returns a dict: step, checkpoint, commit_at, commit_s, upload ('done', 'left to the next "
     "machine', 'none'), upload_s, upload_at, upload_estimate_s, why, deadline, exit_at, margin_s."},
    {"latest", (PyCFunction)ck_latest, METH_NOARGS,
     "latest($self, /)\n--\n\n"
     "(step, path) of the newest checkpoint that verifies (restored from uri= when the folder is empty), or None."},
    {"load", (PyCFunction)(void (*)(void))ck_load, METH_VARARGS | METH_KEYWORDS,
     "load($self, path=None)\n--\n\n"
     "The newest checkpoint that verifies as a baton.Checkpoint (step, tensors, state, optim, path), or None; "
     "path: that checkpoint folder instead."},
    {"list", (PyCFunction)(void (*)(void))ck_list, METH_VARARGS | METH_KEYWORDS,
     "list($self, *, verify=False)\n--\n\n"
     "Every checkpoint folder, newest first: step, path, bytes, ok and the reason when not (verify: read every "
     "file's checksum, else only the MANIFEST)."},
    {"close", (PyCFunction)ck_close, METH_NOARGS,
     "close($self, /)\n--\n\nWait for saves in flight and release the folder's lock."},
    {"__enter__", (PyCFunction)ck_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)ck_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ck_getset[] = {
    {"last_committed", (getter)get_committed, NULL, "The newest folder this object committed, or None.", NULL},
    {"interval", (getter)get_interval, NULL, "The checkpoint interval in force and what it rests on.", NULL},
    {"dir", (getter)get_dir, NULL, "The checkpoint folder.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *ck_new(PyTypeObject *t, PyObject *a, PyObject *k)
{
    Checkpoints *self = (Checkpoints *)t->tp_alloc(t, 0);
    return (PyObject *)self;
}

static PyType_Slot ck_slots[] = {
    {Py_tp_dealloc, ck_dealloc},
    {Py_tp_doc, (void *)("Checkpoints(dir, *, keep=3, uri=None, every=None, s3_endpoint=None, mtbi=None)\n--\n\n"
              "A checkpoint folder, committed with baton's protocol (lock, MANIFEST last, retention). Every "
              "argument after dir is keyword-only.\n\n"
              "dir          the folder (made when missing), locked while open: one process at a time; under "
              "torchrun or mpirun open it on rank 0 only.\n"
              "keep         how many committed checkpoints retention keeps.\n"
              "uri          a copy of each committed checkpoint there too (s3://, file://, a path), restored from "
              "when dir holds none.\n"
              "every        when due(step) says a save is due: None (a baton fleet worker's setting, else every 60 "
              "s), steps (an int), seconds (a float), or \"auto\" (from the measured cost of a save and mtbi), "
              "\"100\", \"90s\", \"5m\", \"off\".\n"
              "s3_endpoint an S3-compatible server's URL for uri (default: $AWS_ENDPOINT_URL, else AWS).\n"
              "mtbi         every=\"auto\"'s mean time between interruptions, in seconds (default: a baton fleet "
              "worker's $BATON_SPOT_MTBI_S, else unknown).")},
    {Py_tp_methods, ck_methods},
    {Py_tp_getset, ck_getset},
    {Py_tp_init, ck_init},
    {Py_tp_new, ck_new},
    {0, NULL},
};
PyType_Spec pyb_CheckpointsSpec = {"baton._baton.Checkpoints", sizeof(Checkpoints), 0,
                                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, ck_slots};
