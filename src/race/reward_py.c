/* reward_py.c — DeepRacer's own Python reward functions, unchanged, in an embedded CPython (built
 * when the Makefile finds Debian's python3-embed; otherwise opening a .py file is a clear error).
 *
 * The file is compiled and run as a module of its own; its reward_function(params) gets the dict
 * the DeepRacer simulator builds (RewardParam in bundle/markov/agent_ctrl/constants.py of
 * deepracer-simapp): the same 27 keys in the same order, bools as bool, x/y/heading/... as float,
 * steps as a float (the simulator counts steps in a float), waypoints as a list of (x, y) tuples,
 * closest_waypoints as [int, int], the object fields as lists with one entry per object
 * (objects_location of (x, y) tuples, objects_left_of_center of bools, the others of floats) and
 * closest_objects as [int, int] — empty lists and [0, 0] in a time trial. Any module the interpreter can import is allowed (math, random; numpy, scipy,
 * shapely where installed). The result may be any number (float(), as the simulator does); a
 * string, None or an exception stops the run with the file, line and step.
 *
 * Speed: the dict, the waypoints list and the argument tuple are built once and their values
 * replaced on each call; a dict or list the reward kept a reference to is left to it (the
 * simulator passes a fresh deep copy each call) and a new one is built. The interpreter starts
 * once per process without its signal handlers; its lock is released between calls and taken
 * once per batch by the stepping thread. */
#ifdef BATON_HAVE_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#endif

#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

#ifndef BATON_HAVE_PYTHON

int race_python_built(void)
{
    return 0;
}

int race_reward_py_open(const char *path, void **state, baton_err *err)
{
    *state = NULL;
#ifdef BATON_SHARED_LIBRARY
    return baton_err_set(err, BATON_ERR_ARG, "%s: libbaton.so has no embedded Python (a Python process that "
                         "loads it is already an interpreter), so Python reward functions run under the baton "
                         "command only; use a .c reward or a built-in here", path);
#else
    return baton_err_set(err, BATON_ERR_ARG, "%s: this baton was built without Python (install Debian's "
                         "libpython3-dev and rebuild), so Python reward functions cannot run; use a .c "
                         "reward or a built-in", path);
#endif
}

int race_reward_py_call(void *state, const struct baton_race_params *p, size_t n, double *out, baton_err *err)
{
    return baton_err_set(err, BATON_ERR_ARG, "built without Python");
}

void race_reward_py_close(void *state)
{
}

#else

#include <pthread.h>

/* Under AddressSanitizer the interpreter allocates with malloc (PYTHONMALLOC=malloc), so the leak
 * checker sees its whole object graph — reachable from its globals while the process lives —
 * instead of blocks pointed to only from pymalloc's unscanned arenas. */
#if defined(__SANITIZE_ADDRESS__)
#define PY_PLAIN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PY_PLAIN_MALLOC 1
#endif
#endif

enum {
    K_WHEELS, K_X, K_Y, K_HEADING, K_CENTER, K_PROJ, K_PROG, K_STEPS, K_SPEED, K_STEER, K_WIDTH, K_LEN,
    K_WAYPOINTS, K_CLOSEST, K_LEFT, K_REVERSED, K_CLOSEST_OBJ, K_OBJ_LOC, K_OBJ_LEFT, K_OBJ_CAM, K_OBJ_SPEED,
    K_OBJ_HEADING, K_OBJ_CENTER, K_OBJ_DIST, K_CRASHED, K_OFFTRACK, K_SIMTIME, K_COUNT
};
static const char *const key_names[K_COUNT] = {
    "all_wheels_on_track", "x", "y", "heading", "distance_from_center", "projection_distance", "progress",
    "steps", "speed", "steering_angle", "track_width", "track_length", "waypoints", "closest_waypoints",
    "is_left_of_center", "is_reversed", "closest_objects", "objects_location", "objects_left_of_center",
    "object_in_camera", "objects_speed", "objects_heading", "objects_distance_from_center", "objects_distance",
    "is_crashed", "is_offtrack", "sim_time",
};

typedef struct py_reward {
    char path[4096];
    PyObject *module, *fn;
    PyObject *keys[K_COUNT];
    PyObject *dict, *args;
    PyObject *waypoints;             /* list of tuples */
    const double (*wp_src)[2];       /* what it was built from */
    int wp_n;
} py_reward;

static pthread_once_t py_once = PTHREAD_ONCE_INIT;
static int py_ok;

static void py_start(void)
{
#ifdef PY_PLAIN_MALLOC
    PyPreConfig pre;
    PyPreConfig_InitPythonConfig(&pre);
    pre.allocator = PYMEM_ALLOCATOR_MALLOC;
    if (PyStatus_Exception(Py_PreInitialize(&pre))) return;
#endif
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    PyStatus st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) return;
    py_ok = 1;
    PyEval_SaveThread();   /* hand the lock back: every use takes it with PyGILState_Ensure */
}

int race_python_built(void)
{
    return 1;
}

/* The current exception as "FILE line N: Type: message" (the deepest frame in FILE). */
static void py_error(const py_reward *r, const char *when, baton_err *err)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    long line = -1;
    for (PyObject *t = tb; t && t != Py_None; t = (PyObject *)((PyTracebackObject *)t)->tb_next) {
        PyCodeObject *code = PyFrame_GetCode(((PyTracebackObject *)t)->tb_frame);
        const char *fn = code ? PyUnicode_AsUTF8(code->co_filename) : NULL;
        if (fn && !strcmp(fn, r->path)) line = ((PyTracebackObject *)t)->tb_lineno;
        Py_XDECREF(code);
    }
    if (value && type && PyErr_GivenExceptionMatches(type, PyExc_SyntaxError)) {
        PyObject *ln = PyObject_GetAttrString(value, "lineno");
        if (ln && PyLong_Check(ln)) line = PyLong_AsLong(ln);
        Py_XDECREF(ln);
    }
    PyErr_Clear();
    const char *tname = type ? ((PyTypeObject *)type)->tp_name : "error";
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    if (!msg) PyErr_Clear();
    if (line >= 0)
        baton_err_set(err, BATON_ERR_ARG, "%s line %ld: %s: %s (%s)", r->path, line, tname, msg ? msg : "", when);
    else
        baton_err_set(err, BATON_ERR_ARG, "%s: %s: %s (%s)", r->path, tname, msg ? msg : "", when);
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

static void py_free_locked(py_reward *r)
{
    for (int k = 0; k < K_COUNT; k++) Py_XDECREF(r->keys[k]);
    Py_XDECREF(r->dict);
    Py_XDECREF(r->args);
    Py_XDECREF(r->waypoints);
    Py_XDECREF(r->fn);
    Py_XDECREF(r->module);
}

static int load_module(py_reward *r, const char *src, baton_err *err)
{
    PyObject *code = Py_CompileString(src, r->path, Py_file_input);
    if (!code) return py_error(r, "loading it", err), BATON_ERR_ARG;
    static int counter;
    char mname[64];
    snprintf(mname, sizeof mname, "baton_reward_%d", ++counter);
    r->module = PyModule_New(mname);
    PyObject *d = r->module ? PyModule_GetDict(r->module) : NULL;
    PyObject *file = PyUnicode_FromString(r->path);
    if (!d || !file || PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) ||
        PyDict_SetItemString(d, "__file__", file)) {
        Py_XDECREF(file);
        Py_DECREF(code);
        return py_error(r, "loading it", err), BATON_ERR_ARG;
    }
    Py_DECREF(file);
    PyObject *res = PyEval_EvalCode(code, d, d);
    Py_DECREF(code);
    if (!res) return py_error(r, "running its top level", err), BATON_ERR_ARG;
    Py_DECREF(res);
    PyObject *fn = PyDict_GetItemString(d, "reward_function");   /* borrowed */
    if (!fn || !PyCallable_Check(fn))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: defines no function reward_function(params)", r->path);
    Py_INCREF(fn);
    r->fn = fn;
    return BATON_OK;
}

int race_reward_py_open(const char *path, void **state, baton_err *err)
{
    *state = NULL;
    uint8_t *src;
    size_t len;
    int rc = baton_file_read_all(path, (size_t)16 << 20, &src, &len, err);
    if (rc) return rc;
    if (memchr(src, 0, len)) {
        free(src);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: has a NUL byte; not a Python source file", path);
    }
    pthread_once(&py_once, py_start);
    if (!py_ok) {
        free(src);
        return baton_err_set(err, BATON_ERR_IO, "%s: the embedded Python interpreter did not start", path);
    }
    py_reward *r = calloc(1, sizeof *r);
    if (!r) {
        free(src);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    PyGILState_STATE g = PyGILState_Ensure();
    rc = load_module(r, (const char *)src, err);
    for (int k = 0; !rc && k < K_COUNT; k++)
        if (!(r->keys[k] = PyUnicode_InternFromString(key_names[k]))) rc = BATON_ERR_NOMEM;
    if (rc) py_free_locked(r);
    PyGILState_Release(g);
    free(src);
    if (rc) {
        free(r);
        return rc == BATON_ERR_NOMEM ? baton_err_set(err, rc, "%s: out of memory", path) : rc;
    }
    *state = r;
    return BATON_OK;
}

void race_reward_py_close(void *state)
{
    py_reward *r = state;
    if (!r) return;
    PyGILState_STATE g = PyGILState_Ensure();
    py_free_locked(r);
    PyGILState_Release(g);
    free(r);
}

/* Set d[key] = v, taking v's reference. */
static int put(PyObject *d, PyObject *key, PyObject *v)
{
    if (!v) return -1;
    int rc = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *bool_of(int v)
{
    return Py_NewRef(v ? Py_True : Py_False);
}

static PyObject *int_pair(int a, int b)
{
    PyObject *l = PyList_New(2);
    if (!l) return NULL;
    PyList_SET_ITEM(l, 0, PyLong_FromLong(a));
    PyList_SET_ITEM(l, 1, PyLong_FromLong(b));
    if (!PyList_GET_ITEM(l, 0) || !PyList_GET_ITEM(l, 1)) Py_CLEAR(l);
    return l;
}

/* The waypoints list, rebuilt when the params point elsewhere or someone else holds it. */
static PyObject *waypoints(py_reward *r, const struct baton_race_params *p)
{
    if (r->waypoints && r->wp_src == p->waypoints && r->wp_n == p->num_waypoints && Py_REFCNT(r->waypoints) <= 2)
        return r->waypoints;
    Py_CLEAR(r->waypoints);
    PyObject *l = PyList_New(p->num_waypoints);
    for (int i = 0; l && i < p->num_waypoints; i++) {
        PyObject *t = Py_BuildValue("(dd)", p->waypoints[i][0], p->waypoints[i][1]);
        if (!t) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, t);
    }
    r->waypoints = l;
    r->wp_src = p->waypoints;
    r->wp_n = p->num_waypoints;
    return l;
}

/* Lists of n floats, of n bools, of n (x, y) tuples. */
static PyObject *float_list(const double *v, int n)
{
    PyObject *l = PyList_New(n > 0 ? n : 0);
    for (int i = 0; l && i < n; i++) {
        PyObject *f = PyFloat_FromDouble(v[i]);
        if (!f) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, f);
    }
    return l;
}

static PyObject *bool_list(const int *v, int n)
{
    PyObject *l = PyList_New(n > 0 ? n : 0);
    for (int i = 0; l && i < n; i++) PyList_SET_ITEM(l, i, bool_of(v[i]));
    return l;
}

static PyObject *xy_list(const double (*v)[2], int n)
{
    PyObject *l = PyList_New(n > 0 ? n : 0);
    for (int i = 0; l && i < n; i++) {
        PyObject *t = Py_BuildValue("(dd)", v[i][0], v[i][1]);
        if (!t) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, t);
    }
    return l;
}

/* The object fields, in the simulator's key order (num_objects 0: empty lists). */
static int fill_objects(PyObject *d, PyObject **k, const struct baton_race_params *p)
{
    int n = p->num_objects > 0 && p->objects_location ? p->num_objects : 0;
    return put(d, k[K_OBJ_LOC], xy_list(p->objects_location, n)) ||
           put(d, k[K_OBJ_LEFT], bool_list(p->objects_left_of_center, n)) ||
           put(d, k[K_OBJ_CAM], bool_of(p->object_in_camera)) || put(d, k[K_OBJ_SPEED], float_list(p->objects_speed, n)) ||
           put(d, k[K_OBJ_HEADING], float_list(p->objects_heading, n)) ||
           put(d, k[K_OBJ_CENTER], float_list(p->objects_distance_from_center, n)) ||
           put(d, k[K_OBJ_DIST], float_list(p->objects_distance, n));
}

static int fill(py_reward *r, const struct baton_race_params *p)
{
    if (!r->dict || Py_REFCNT(r->dict) > 2) {   /* ours and the argument tuple's */
        Py_CLEAR(r->args);
        Py_CLEAR(r->dict);
        if (!(r->dict = PyDict_New()) || !(r->args = PyTuple_Pack(1, r->dict))) return -1;
    }
    PyObject *d = r->dict, **k = r->keys;
    PyObject *wp = waypoints(r, p);
    if (!wp) return -1;
    Py_INCREF(wp);
    if (put(d, k[K_WHEELS], bool_of(p->all_wheels_on_track)) || put(d, k[K_X], PyFloat_FromDouble(p->x)) ||
        put(d, k[K_Y], PyFloat_FromDouble(p->y)) || put(d, k[K_HEADING], PyFloat_FromDouble(p->heading)) ||
        put(d, k[K_CENTER], PyFloat_FromDouble(p->distance_from_center)) ||
        put(d, k[K_PROJ], PyFloat_FromDouble(p->projection_distance)) ||
        put(d, k[K_PROG], PyFloat_FromDouble(p->progress)) || put(d, k[K_STEPS], PyFloat_FromDouble(p->steps)) ||
        put(d, k[K_SPEED], PyFloat_FromDouble(p->speed)) ||
        put(d, k[K_STEER], PyFloat_FromDouble(p->steering_angle)) ||
        put(d, k[K_WIDTH], PyFloat_FromDouble(p->track_width)) ||
        put(d, k[K_LEN], PyFloat_FromDouble(p->track_length)) || put(d, k[K_WAYPOINTS], wp) ||
        put(d, k[K_CLOSEST], int_pair(p->closest_waypoints[0], p->closest_waypoints[1])) ||
        put(d, k[K_LEFT], bool_of(p->is_left_of_center)) || put(d, k[K_REVERSED], bool_of(p->is_reversed)) ||
        put(d, k[K_CLOSEST_OBJ], int_pair(p->closest_objects[0], p->closest_objects[1])) || fill_objects(d, k, p) ||
        put(d, k[K_CRASHED], bool_of(p->is_crashed)) ||
        put(d, k[K_OFFTRACK], bool_of(p->is_offtrack)) || put(d, k[K_SIMTIME], PyFloat_FromDouble(p->sim_time)))
        return -1;
    return 0;
}

static int call_one(py_reward *r, const struct baton_race_params *p, double *out, baton_err *err)
{
    char when[64];
    snprintf(when, sizeof when, "step %d", p->steps);
    if (fill(r, p)) return py_error(r, when, err), BATON_ERR_ARG;
    PyObject *res = PyObject_Call(r->fn, r->args, NULL);
    if (!res) return py_error(r, when, err), BATON_ERR_ARG;
    if (!PyNumber_Check(res) || PyUnicode_Check(res)) {
        int rc = baton_err_set(err, BATON_ERR_ARG, "%s: reward_function returned %s, not a number (%s)", r->path,
                               Py_TYPE(res)->tp_name, when);
        Py_DECREF(res);
        return rc;
    }
    PyObject *f = PyNumber_Float(res);
    Py_DECREF(res);
    if (!f) return py_error(r, when, err), BATON_ERR_ARG;
    *out = PyFloat_AS_DOUBLE(f);
    Py_DECREF(f);
    return BATON_OK;
}

int race_reward_py_call(void *state, const struct baton_race_params *p, size_t n, double *out, baton_err *err)
{
    py_reward *r = state;
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = BATON_OK;
    for (size_t i = 0; i < n && !rc; i++) rc = call_one(r, &p[i], &out[i], err);
    PyGILState_Release(g);
    return rc;
}

#endif
