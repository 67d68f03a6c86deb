/* notice.c — baton.Notice: the interruption watcher of `baton train` (notice.h) for a Python loop:
 * EC2's metadata (IMDSv2 with the v1 fallback) or GCE's when the machine is one (or the endpoint the
 * environment names), and SIGTERM and SIGINT. A loop checks `if notice:` once per step (a few
 * atomic loads, no system call), saves, and exits with baton.EXIT_INTERRUPTED (75).
 *
 * Signals: while a Notice with signals=True is open, SIGTERM and Ctrl-C are notices, not
 * KeyboardInterrupt (a second Ctrl-C ends the process at once, as in `baton train`); closing (or
 * dropping) the last one, on any thread, before or after a signal came, puts back exactly the
 * handlers that were there before. The watcher is the library's guest watcher: it changes no
 * thread's signal mask (a mask belongs to one thread, and a Notice may be closed or collected on
 * another; the handler only records the signal, so it may run on any thread, as Python's own does).
 *
 * wait(timeout) releases the GIL and wakes every 100 ms for Python's own signals. */
#include "python_internal.h"

typedef struct {
    PyObject_HEAD
    baton_notice_watcher *w;
    baton_notice_event ev;      /* the latched terminal notice (kind NONE: none) */
    int busy;
} Notice;

static int nt_check(Notice *self)
{
    if (!self->w) return pyb_usage_rc("baton.Notice: closed");
    if (self->busy) return pyb_usage_rc("baton.Notice: in use by another thread");
    return 0;
}

static void nt_close_all(Notice *self)
{
    if (!self->w) return;
    baton_notice_stop(self->w);   /* any thread: no mask was changed, the handlers come back */
    self->w = NULL;
}

static void nt_dealloc(Notice *self)
{
    nt_close_all(self);
    pyb_free((PyObject *)self);
}

static int nt_init(Notice *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"endpoint", "poll", "signals", "timeout", NULL};
    const char *endpoint = NULL;
    PyObject *ep_o = NULL;
    double poll = -1, timeout = -1;
    int signals = 1;
    if (self->w) return pyb_usage_rc("baton.Notice: already started");
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$Odpd:Notice", kwlist, &ep_o, &poll, &signals, &timeout)) return -1;
    if (pyb_opt_str(ep_o, "endpoint", &endpoint)) return -1;
    baton_notice_opts o;
    baton_notice_opts_default(&o);
    if (endpoint) o.endpoint = endpoint;
    if (poll != -1) {
        if (!(poll >= 0.01 && poll <= 3600)) return pyb_usage_rc("poll: seconds between polls, 0.01..3600");
        o.poll_s = poll;
    }
    if (timeout != -1) {
        if (!(timeout > 0 && timeout <= 60)) return pyb_usage_rc("timeout: seconds per request, (0, 60]");
        o.timeout_s = timeout;
    }
    o.handle_sigterm = signals;
    o.guest = 1;
    baton_err err = {0};
    if (baton_notice_start(&o, &self->w, &err)) return pyb_raise_rc(&err);
    return 0;
}

static PyObject *event_dict(const baton_notice_event *ev)
{
    double left = ev->deadline > 0 ? ev->deadline - baton_wall_now() : -1;
    const char *kind = ev->kind == BATON_NOTICE_SIGNAL ? ev->source : baton_notice_kind_name(ev->kind);
    return Py_BuildValue("{s:s,s:s,s:N,s:d,s:N}", "kind", kind, "source", ev->source, "deadline",
                         ev->deadline > 0 ? PyFloat_FromDouble(ev->deadline) : Py_NewRef(Py_None), "seen_at",
                         ev->seen_at, "seconds_left", left >= 0 ? PyFloat_FromDouble(left) : Py_NewRef(Py_None));
}

/* Poll; 1 when a terminal notice is latched. */
static int latched(Notice *self, int *rebalance)
{
    if (self->ev.kind != BATON_NOTICE_NONE) return 1;
    return baton_notice_poll(self->w, &self->ev, rebalance);
}

static int nt_bool(Notice *self)
{
    if (!self->w) return self->ev.kind != BATON_NOTICE_NONE;
    return latched(self, NULL);
}

static PyObject *get_event(Notice *self, void *c)
{
    if (self->w) latched(self, NULL);
    if (self->ev.kind == BATON_NOTICE_NONE) Py_RETURN_NONE;
    return event_dict(&self->ev);
}

static PyObject *get_rebalance(Notice *self, void *c)
{
    if (nt_check(self)) return NULL;
    int reb = 0;
    baton_notice_event ev;
    baton_notice_poll(self->w, &ev, &reb);
    if (ev.kind != BATON_NOTICE_NONE && self->ev.kind == BATON_NOTICE_NONE) self->ev = ev;
    return PyBool_FromLong(reb);
}

static PyObject *get_watching(Notice *self, void *c)
{
    if (nt_check(self)) return NULL;
    int w = baton_notice_watching(self->w);
    PyObject *l = PyList_New(0);
    const char *names[] = {"ec2", "gce", "signals"};
    for (int i = 0; l && i < 3; i++) {
        if (!(w & (1 << i))) continue;
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s || PyList_Append(l, s)) Py_CLEAR(l);
        Py_XDECREF(s);
    }
    return l;
}

static PyObject *nt_wait(Notice *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", "rebalance", NULL};
    PyObject *to = Py_None;
    int rebalance = 0;
    if (nt_check(self)) return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$p:wait", kwlist, &to, &rebalance)) return NULL;
    double limit = -1;
    if (to != Py_None && ((limit = PyFloat_AsDouble(to)) == -1 && PyErr_Occurred())) return NULL;
    if (self->ev.kind != BATON_NOTICE_NONE) return event_dict(&self->ev);
    double end = limit >= 0 ? baton_now() + limit : 0;
    baton_notice_event ev = {0};
    int got = 0;
    self->busy = 1;
    for (;;) {
        double slice = 0.1;
        if (limit >= 0 && end - baton_now() < slice) slice = end - baton_now();
        if (slice < 0) slice = 0;
        Py_BEGIN_ALLOW_THREADS
        got = baton_notice_wait_any(self->w, slice, rebalance, &ev);
        Py_END_ALLOW_THREADS
        if (got || (limit >= 0 && baton_now() >= end)) break;
        if (PyErr_CheckSignals() < 0) {
            self->busy = 0;
            return NULL;
        }
    }
    self->busy = 0;
    if (!got) Py_RETURN_NONE;
    if (ev.kind != BATON_NOTICE_REBALANCE) self->ev = ev;
    return event_dict(&ev);
}

static PyObject *nt_close(Notice *self, PyObject *noargs)
{
    if (self->busy) return pyb_usage("baton.Notice: in use by another thread");
    nt_close_all(self);
    Py_RETURN_NONE;
}

static PyObject *nt_enter(Notice *self, PyObject *noargs) { return Py_NewRef((PyObject *)self); }
static PyObject *nt_exit(Notice *self, PyObject *args) { return nt_close(self, NULL); }

static PyMethodDef nt_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))nt_wait, METH_VARARGS | METH_KEYWORDS,
     "wait($self, timeout=None, *, rebalance=False)\n--\n\n"
     "Block until a notice (or, with rebalance=True, a rebalance recommendation) or timeout seconds (None: no "
     "limit); the event dict (kind, source, deadline, seen_at, seconds_left) or None. Ctrl-C gets through."},
    {"close", (PyCFunction)nt_close, METH_NOARGS,
     "close($self, /)\n--\n\nStop watching; the process's previous signal handlers and mask come back."},
    {"__enter__", (PyCFunction)nt_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)nt_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef nt_getset[] = {
    {"event", (getter)get_event, NULL,
     "The notice (kind, source, deadline, seen_at, seconds_left) once one came, else None.", NULL},
    {"rebalance", (getter)get_rebalance, NULL, "Whether a rebalance recommendation came since the last look.",
     NULL},
    {"watching", (getter)get_watching, NULL, "What is watched: ec2, gce, signals.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot nt_slots[] = {
    {Py_tp_dealloc, nt_dealloc},
    {Py_tp_doc, (void *)("Notice(*, endpoint=None, poll=None, signals=True, timeout=None)\n--\n\n"
              "True once an interruption notice came: a cloud's spot notice, SIGTERM or Ctrl-C. Every argument is "
              "keyword-only.\n\n"
              "endpoint  the EC2 metadata service to poll (default: $AWS_EC2_METADATA_SERVICE_ENDPOINT, else "
              "EC2's; GCE's from $GCE_METADATA_HOST).\n"
              "poll      seconds between polls, 0.01..3600 (default: $BATON_NOTICE_POLL_S, else 5).\n"
              "signals   catch SIGTERM and SIGINT (Ctrl-C) as notices while open (False: leave them alone).\n"
              "timeout   seconds per metadata request, (0, 60] (default: $BATON_NOTICE_TIMEOUT_S, else 1).")},
    {Py_nb_bool, nt_bool},
    {Py_tp_methods, nt_methods},
    {Py_tp_getset, nt_getset},
    {Py_tp_init, nt_init},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};
PyType_Spec pyb_NoticeSpec = {"baton._baton.Notice", sizeof(Notice), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
                              nt_slots};
