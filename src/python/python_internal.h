/* python_internal.h — the baton Python module's C side (the files of src/python), one file per type:
 *   module.c   the module `baton._baton` (multi-phase init: a module state per import, so per
 *              interpreter): errors (baton.Error and its subclasses, raised with the library's
 *              message), constants, the version check at import, and the heap types below
 *   loader.c   Loader: a dataset as batches of NumPy arrays that share the decode pipeline's memory
 *   ckpt.c     Checkpoints (save in the background, load, wait) and Checkpoint (what load returns)
 *   notice.c   Notice: the interruption watcher
 * The module converts types and holds the GIL only while it touches Python objects: every wait
 * (a batch, a checkpoint's commit, a notice) and every copy runs with the GIL released, in the
 * library. Nothing here exits, asserts on outside input or prints; failures are Python
 * exceptions. python/baton/__init__.py re-exports these names. */
#ifndef BATON_PYTHON_INTERNAL_H
#define BATON_PYTHON_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The oldest Python these sources compile for: 3.10 (Py_NewRef, PyModule_AddObjectRef); python/setup.py's
 * python_requires says the same, and nothing newer is called (tests/python/test_api.py checks both). */
#define PYB_MIN_PYTHON 0x030A0000
#if PY_VERSION_HEX < PYB_MIN_PYTHON
#error "baton's Python module needs Python 3.10 or newer"
#endif

#include "baton/ckpt.h"
#include "baton/img.h"
#include "baton/notice.h"

/* Raise the baton.Error subclass for err->code with err->msg; returns NULL. */
PyObject *pyb_raise(const baton_err *err);
/* Raise baton.UsageError (a bad argument) with a printf-style message; returns NULL. */
PyObject *pyb_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, returning -1 (for tp_init and helpers that return a status). */
int pyb_raise_rc(const baton_err *err);
int pyb_usage_rc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* numpy.asarray(obj), or a memoryview of it when NumPy is not installed. New reference. */
PyObject *pyb_asarray(PyObject *obj);
/* A keyword argument as a C string, an int, a float (None or absent: the default). -1 on error. */
int pyb_opt_str(PyObject *o, const char *name, const char **out);

/* loader_args.c: the default local folder of a URI (-1: no HOME); this process's local rank and
 * the number of ranks on its machine, or its rank and the job's size (*who: the variable), as its
 * launcher tells (0: none does); the prefetch buffers of
 * depth batches checked (-1 with an exception: more than the machine's memory, or a warning that
 * warnings= turned into an error) */
int pyb_default_local_dir(const char *uri, char *out, size_t cap);
int pyb_launcher_local(uint32_t *rank, uint32_t *size);
int pyb_launcher_rank(uint32_t *rank, uint32_t *size, const char **who);
int pyb_prefetch_check(const baton_manifest *m, const baton_pipeline_opts *po, uint64_t esize);

/* A baton.Loader's arguments (loader_args.c), parsed and checked each against its range; -1 with
 * a Python exception (baton.UsageError naming the argument). batch is the global batch (batch_size
 * * world when batch_size was given); epochs 0: no end. The strings and norm are borrowed from
 * the call's arguments. */
#define PYB_LOADER_MAX_BATCH 16384
#define PYB_LOADER_MAX_DEPTH 64
typedef struct pyb_loader_args {
    const char *uri, *mode, *layout, *local, *endpoint, *dtype;
    PyObject *norm;
    Py_ssize_t batch, rank, world, threads, depth, block, crop, size;
    int shuffle, drop_last, flip, download_first;
    baton_crop crop_kind;
    double scale[2], ratio[2];
    uint64_t seed, epochs;
} pyb_loader_args;
int pyb_loader_args_parse(PyObject *args, PyObject *kw, pyb_loader_args *a);

/* What one import of the module holds (multi-phase init: one per interpreter, nothing shared
 * between them): its exception classes, its types (heap types made from the specs below when the
 * module executes), NumPy's asarray once looked up. */
typedef struct pyb_state {
    PyObject *Error, *CorruptError, *FormatError, *NotFoundError, *NetworkError, *BusyError, *NoSpaceError,
        *DeniedError, *UsageError;
    PyTypeObject *Loader, *Lease, *View, *Batch, *Checkpoints, *Checkpoint, *File, *TensorView, *Notice;
    PyObject *np_asarray;
    int np_looked;
} pyb_state;

/* The state of the module that made type t (a subclass of one of its types too); NULL (no
 * exception) for another type. */
pyb_state *pyb_state_of(PyTypeObject *t);
/* The state of this interpreter's baton._baton (sys.modules); NULL with an exception when it has
 * none (a call during its teardown). */
pyb_state *pyb_state_now(void);
/* NumPy's asarray looked up (NumPy imported) once per module: the first batch's arrays need it;
 * a Loader calls it while its pipeline fetches the first block, so the import is not in a launch. */
void pyb_numpy_load(pyb_state *st);

/* The types' specs (module.c makes them per module) and the struct sequences' descriptions */
extern PyType_Spec pyb_LoaderSpec, pyb_LeaseSpec, pyb_ViewSpec;
extern PyType_Spec pyb_CheckpointsSpec, pyb_FileSpec, pyb_TensorViewSpec;
extern PyType_Spec pyb_NoticeSpec;
extern PyStructSequence_Desc pyb_batch_desc, pyb_ckpt_desc;

/* A heap type's instance going away: free it and drop its reference to its type. */
void pyb_free(PyObject *self);

#endif
