/* module.c — `baton._baton`, the C extension behind `import baton`: the exception classes, the
 * constants, the check that the library loaded is the one these sources were compiled against,
 * and the registration of the types (python_internal.h): multi-phase init, so that each
 * interpreter's import has its own module, exception classes and heap types (pyb_state).
 *
 * Errors: every library failure becomes baton.Error or one of its subclasses, chosen by the
 * status (baton_status in util.h), with the library's message unchanged (it names the file,
 * offset, field or URI; never a secret) and two attributes: code (the status, an int) and status
 * (its name, "corrupt"). */
#include "python_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static struct PyModuleDef moddef;

pyb_state *pyb_state_of(PyTypeObject *t)
{
    PyObject *mro = t->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!(b->tp_flags & Py_TPFLAGS_HEAPTYPE)) continue;
        PyObject *m = ((PyHeapTypeObject *)b)->ht_module;   /* as 3.11 does by module def */
        if (m && PyModule_GetDef(m) == &moddef) return PyModule_GetState(m);
    }
    return NULL;
}

pyb_state *pyb_state_now(void)
{
    PyObject *name = PyUnicode_FromString("baton._baton");
    PyObject *m = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    pyb_state *st = m && PyModule_Check(m) && PyModule_GetDef(m) == &moddef ? PyModule_GetState(m) : NULL;
    Py_XDECREF(m);   /* sys.modules holds it while its objects are in use */
    if (!st && !PyErr_Occurred()) PyErr_SetString(PyExc_ImportError, "baton._baton is not imported");
    return st;
}

void pyb_free(PyObject *self)
{
    PyTypeObject *t = Py_TYPE(self);
    t->tp_free(self);
    Py_DECREF(t);
}

PyObject *pyb_raise(const baton_err *err)
{
    if (err->code == BATON_ERR_NOMEM) return PyErr_NoMemory();
    pyb_state *st = pyb_state_now();
    const char *msg = err->msg[0] ? err->msg : baton_status_name(err->code);
    if (!st) {
        PyErr_Clear();
        PyErr_SetString(PyExc_RuntimeError, msg);
        return NULL;
    }
    PyObject *cls = st->Error;
    switch (err->code) {
    case BATON_ERR_TRUNCATED:
    case BATON_ERR_CORRUPT: cls = st->CorruptError; break;
    case BATON_ERR_FORMAT: cls = st->FormatError; break;
    case BATON_ERR_NOTFOUND: cls = st->NotFoundError; break;
    case BATON_ERR_NET: cls = st->NetworkError; break;
    case BATON_ERR_BUSY: cls = st->BusyError; break;
    case BATON_ERR_NOSPACE: cls = st->NoSpaceError; break;
    case BATON_ERR_DENIED: cls = st->DeniedError; break;
    case BATON_ERR_USAGE:
    case BATON_ERR_ARG: cls = st->UsageError; break;
    default: break;
    }
    PyObject *e = PyObject_CallFunction(cls, "s", msg);
    if (!e) return NULL;
    PyObject *code = PyLong_FromLong(err->code), *name = PyUnicode_FromString(baton_status_name(err->code));
    if (code && name && PyObject_SetAttrString(e, "code", code) == 0 && PyObject_SetAttrString(e, "status", name) == 0)
        PyErr_SetObject(cls, e);
    Py_XDECREF(code);
    Py_XDECREF(name);
    Py_DECREF(e);
    return NULL;
}

static void usage_v(const char *fmt, va_list ap)
{
    baton_err e = {.code = BATON_ERR_USAGE};
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    pyb_raise(&e);
}

PyObject *pyb_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    usage_v(fmt, ap);
    va_end(ap);
    return NULL;
}

int pyb_raise_rc(const baton_err *err)
{
    pyb_raise(err);
    return -1;
}

int pyb_usage_rc(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    usage_v(fmt, ap);
    va_end(ap);
    return -1;
}

/* numpy.asarray, looked up once per module (left NULL when NumPy is not installed) */
void pyb_numpy_load(pyb_state *st)
{
    if (st->np_looked) return;
    st->np_looked = 1;
    PyObject *np = PyImport_ImportModule("numpy");
    if (np) {
        st->np_asarray = PyObject_GetAttrString(np, "asarray");
        Py_DECREF(np);
    }
    if (!st->np_asarray) PyErr_Clear();
}

/* numpy.asarray(obj), or a memoryview without NumPy */
PyObject *pyb_asarray(PyObject *obj)
{
    pyb_state *st = pyb_state_of(Py_TYPE(obj));
    if (!st && !(st = pyb_state_now())) return NULL;
    pyb_numpy_load(st);
    return st->np_asarray ? PyObject_CallOneArg(st->np_asarray, obj) : PyMemoryView_FromObject(obj);
}

int pyb_opt_str(PyObject *o, const char *name, const char **out)
{
    if (!o || o == Py_None) return 0;
    if (!PyUnicode_Check(o)) {
        pyb_usage("%s: expected a string, got %s", name, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n = 0;
    *out = PyUnicode_AsUTF8AndSize(o, &n);
    if (!*out) {   /* a lone surrogate ("\udcff", a byte os.fsdecode could not decode): not text */
        PyErr_Clear();
        pyb_usage("%s: not valid text (it holds a lone surrogate, which has no UTF-8 form)", name);
        return -1;
    }
    if ((size_t)n != strlen(*out)) {
        pyb_usage("%s: holds a NUL character", name);
        return -1;
    }
    return 0;
}

static PyObject *version(PyObject *self, PyObject *noargs)
{
    return PyUnicode_FromString(baton_version());
}

/* crc32c(data, crc=0): the CRC32C (Castagnoli) baton's formats use, over any bytes-like object */
static PyObject *crc32c(PyObject *self, PyObject *args)
{
    Py_buffer b;
    unsigned int crc = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &b, &crc)) return NULL;
    if (b.len > 1 << 20) {
        Py_BEGIN_ALLOW_THREADS
        crc = baton_crc32c(crc, b.buf, (size_t)b.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = baton_crc32c(crc, b.buf, (size_t)b.len);
    }
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(crc);
}

/* crop_box(h, w, seed, epoch, position, crop="random-resized", size=224, scale, ratio, flip=True): the box a
 * Loader cuts for that sample, with the draws behind it (baton_crop_draw_for) */
static PyObject *crop_box(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"h", "w", "seed", "epoch", "position", "crop", "size", "scale", "ratio", "flip", NULL};
    unsigned int h, w, size = 224;
    unsigned long long seed, epoch, position;
    const char *crop = "random-resized";
    double scale[2] = {0.08, 1.0}, ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
    int flip = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "IIKKK|sI(dd)(dd)p", kwlist, &h, &w, &seed, &epoch, &position, &crop,
                                     &size, &scale[0], &scale[1], &ratio[0], &ratio[1], &flip))
        return NULL;
    baton_pipeline_opts o;
    baton_pipeline_opts_default(&o);
    if (baton_crop_parse(crop, &o.crop)) return pyb_usage("crop '%s': expected \"random-resized\" or \"center\"", crop);
    o.size = size;
    o.scale[0] = (float)scale[0], o.scale[1] = (float)scale[1];
    o.ratio[0] = (float)ratio[0], o.ratio[1] = (float)ratio[1];
    o.flip = flip;
    baton_crop_draw d;
    baton_crop_draw_for(&o, seed, epoch, position, h, w, &d);
    PyObject *ua = PyList_New(d.tries), *ur = PyList_New(d.tries);
    for (uint32_t i = 0; ua && ur && i < d.tries; i++) {
        PyList_SET_ITEM(ua, i, PyFloat_FromDouble(d.u_area[i]));
        PyList_SET_ITEM(ur, i, PyFloat_FromDouble(d.u_ratio[i]));
    }
    if (!ua || !ur) {
        Py_XDECREF(ua);
        Py_XDECREF(ur);
        return NULL;
    }
    return Py_BuildValue("{s:(dddd),s:O,s:O,s:N,s:N,s:K,s:K}", "box", d.box[0], d.box[1], d.box[2], d.box[3], "flip",
                         d.flip ? Py_True : Py_False, "fallback", d.fallback ? Py_True : Py_False, "u_area", ua,
                         "u_ratio", ur, "top", (unsigned long long)d.top, "left", (unsigned long long)d.left);
}

static PyMethodDef methods[] = {
    {"crop_box", (PyCFunction)(void (*)(void))crop_box, METH_VARARGS | METH_KEYWORDS,
     "crop_box(h, w, seed, epoch, position, crop='random-resized', size=224, scale=(0.08, 1.0), "
     "ratio=(0.75, 1.3333333333333333), flip=True)\n--\n\nA dict: the box (x0, y0, x1, y1) a Loader with that seed cuts from an h x w image at (epoch, "
     "position), its flip, and the uniform draws of each try (u_area, u_ratio) with the offsets (top, left)."},
    {"library_version", version, METH_NOARGS, "library_version()\n--\n\nThe version of the libbaton this module runs on."},
    {"crc32c", crc32c, METH_VARARGS,
     "crc32c(data, crc=0, /)\n--\n\nThe CRC32C of a bytes-like object (continuing crc), as dataset.json and "
     "checkpoint MANIFESTs hold them."},
    {NULL, NULL, 0, NULL},
};

static int add_error(PyObject *m, const char *name, PyObject *base, const char *doc, PyObject **out)
{
    char full[64];
    snprintf(full, sizeof full, "baton.%s", name);
    *out = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    return *out && PyModule_AddObjectRef(m, name, *out) == 0 ? 0 : -1;
}

/* A heap type of this module from spec; named in the module when public is set. */
static int add_type(PyObject *m, PyType_Spec *spec, const char *public, PyTypeObject **out)
{
    *out = (PyTypeObject *)PyType_FromModuleAndSpec(m, spec, NULL);
    return *out && (!public || PyModule_AddObjectRef(m, public, (PyObject *)*out) == 0) ? 0 : -1;
}

/* Py_mod_exec: the module's contents, made for each module object (each interpreter's import) */
static int exec_module(PyObject *m)
{
    baton_err err = {0};
    if (BATON_VERSION_CHECK(&err)) {
        PyErr_Format(PyExc_ImportError, "baton: %s", err.msg);
        return -1;
    }
    pyb_state *st = PyModule_GetState(m);
    if (add_error(m, "Error", PyExc_Exception,
                  "A failure in baton's library; the message names the file, offset, field or URI. "
                  "Attributes: code (the library's status) and status (its name).",
                  &st->Error) ||
        add_error(m, "CorruptError", st->Error, "Bytes that fail a checksum, or end in the middle of a record.",
                  &st->CorruptError) ||
        add_error(m, "FormatError", st->Error, "Well-formed bytes that are not what was expected.",
                  &st->FormatError) ||
        add_error(m, "NotFoundError", st->Error, "A file, object or checkpoint that is not there.",
                  &st->NotFoundError) ||
        add_error(m, "NetworkError", st->Error, "A server that cannot be reached or keeps failing.",
                  &st->NetworkError) ||
        add_error(m, "BusyError", st->Error, "Held by another process (a checkpoint folder's lock).",
                  &st->BusyError) ||
        add_error(m, "NoSpaceError", st->Error, "The disk is full.", &st->NoSpaceError) ||
        add_error(m, "DeniedError", st->Error, "A missing or wrong credential.", &st->DeniedError) ||
        add_error(m, "UsageError", st->Error, "An argument outside what the call accepts.", &st->UsageError) ||
        PyModule_AddIntConstant(m, "EXIT_INTERRUPTED", BATON_EXIT_STOPPED) ||
        PyModule_AddStringConstant(m, "__version__", BATON_VERSION) ||
        PyModule_AddIntConstant(m, "ABI_VERSION", BATON_ABI_VERSION) ||
        !(st->Batch = PyStructSequence_NewType(&pyb_batch_desc)) ||
        PyModule_AddObjectRef(m, "Batch", (PyObject *)st->Batch) ||
        !(st->Checkpoint = PyStructSequence_NewType(&pyb_ckpt_desc)) ||
        add_type(m, &pyb_LoaderSpec, "Loader", &st->Loader) || add_type(m, &pyb_LeaseSpec, NULL, &st->Lease) ||
        add_type(m, &pyb_ViewSpec, NULL, &st->View) ||
        add_type(m, &pyb_CheckpointsSpec, "Checkpoints", &st->Checkpoints) ||
        add_type(m, &pyb_FileSpec, NULL, &st->File) || add_type(m, &pyb_TensorViewSpec, NULL, &st->TensorView) ||
        add_type(m, &pyb_NoticeSpec, "Notice", &st->Notice))
        return -1;
    return 0;
}

/* Every reference the state holds, for the collector and for teardown */
enum { NREFS = 19 };
static void state_refs(pyb_state *st, PyObject **r[NREFS])
{
    PyObject **v[NREFS] = {
        &st->Error, &st->CorruptError, &st->FormatError, &st->NotFoundError, &st->NetworkError, &st->BusyError,
        &st->NoSpaceError, &st->DeniedError, &st->UsageError, (PyObject **)&st->Loader, (PyObject **)&st->Lease,
        (PyObject **)&st->View, (PyObject **)&st->Batch, (PyObject **)&st->Checkpoints,
        (PyObject **)&st->Checkpoint, (PyObject **)&st->File, (PyObject **)&st->TensorView,
        (PyObject **)&st->Notice, &st->np_asarray};
    memcpy(r, v, sizeof v);
}

static int state_traverse(PyObject *m, visitproc visit, void *arg)
{
    pyb_state *st = PyModule_GetState(m);
    PyObject **r[NREFS];
    if (!st) return 0;
    state_refs(st, r);
    for (int i = 0; i < NREFS; i++) Py_VISIT(*r[i]);
    return 0;
}

static int state_clear(PyObject *m)
{
    pyb_state *st = PyModule_GetState(m);
    PyObject **r[NREFS];
    if (!st) return 0;
    state_refs(st, r);
    for (int i = 0; i < NREFS; i++) Py_CLEAR(*r[i]);
    return 0;
}

static void state_free(void *m) { state_clear((PyObject *)m); }

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)exec_module},
    {0, NULL},
};

/* Multi-phase init: each import (each interpreter's) gets a module of its own, its state above */
static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "baton._baton",
    "baton's C library from Python: Loader, Checkpoints, Notice (see the baton package)", sizeof(pyb_state), methods,
    slots, state_traverse, state_clear, state_free,
};

PyMODINIT_FUNC PyInit__baton(void) { return PyModuleDef_Init(&moddef); }
