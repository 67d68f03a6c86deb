/* store_fault.c — a store that wraps another and injects faults, for tests: every blocking call
 * goes to the inner store's method table after an optional delay, except the calls the fault
 * description names, which fail instead.
 *
 * Owns: io_store_faulty (the wrapper's construction), its method table, and its counters.
 *
 * Contract:
 *  1. Deterministic: of the operations in f.ops, call k (1-based, counted per operation) fails
 *     when k is a multiple of f.fail_every; nothing else is random.
 *  2. A failed call does nothing to the inner store and leaves out/size untouched; its message is
 *     "STORE-URI NAME: injected fault: OP (call K)" with f.code (BATON_ERR_IO by default), so the
 *     caller's own message wraps a message that names the object, as a real failure's would.
 *  3. f.delay_s is slept before every call of every operation (failing or not): a slow store.
 *  4. Counters are atomic: the wrapper may be used from several threads, as any store.
 *  5. The wrapper owns inner: closing it closes inner. Only the blocking calls pass through it
 *     (its local_dir is NULL, so the loader's mapped and pread paths never see it). */
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const op_names[IO_OP_N] = {"get", "get_range", "size", "put", "put_file", "delete", "list"};

/* Count the call; non-zero (err set) when this one is to fail. */
static int fault(baton_store *s, int op, const char *name, baton_err *err)
{
    io_fault_state *fs = s->faults;
    if (fs->f.delay_s > 0) io_sleep_s(fs->f.delay_s);
    uint64_t k = __atomic_add_fetch(&fs->calls[op], 1, __ATOMIC_RELAXED);
    if (!(fs->f.ops & (1u << op)) || !fs->f.fail_every || k % fs->f.fail_every) return BATON_OK;
    __atomic_add_fetch(&fs->failed[op], 1, __ATOMIC_RELAXED);
    return baton_err_set(err, fs->f.code ? fs->f.code : BATON_ERR_IO, "%s%s: injected fault: %s (call %llu)", s->uri,
                         name, op_names[op], (unsigned long long)k);
}

static baton_store *inner(baton_store *s)
{
    return s->faults->inner;
}

static int f_get(baton_store *s, const char *name, size_t max, baton_buf *out, baton_err *err)
{
    int rc = fault(s, IO_OP_GET, name, err);
    return rc ? rc : baton_store_get(inner(s), name, max, out, err);
}

static int f_get_range(baton_store *s, const char *name, uint64_t off, uint64_t len, baton_buf *out, baton_err *err)
{
    int rc = fault(s, IO_OP_GET_RANGE, name, err);
    return rc ? rc : baton_store_get_range(inner(s), name, off, len, out, err);
}

static int f_size(baton_store *s, const char *name, uint64_t *size, baton_err *err)
{
    int rc = fault(s, IO_OP_SIZE, name, err);
    return rc ? rc : baton_store_size(inner(s), name, size, err);
}

static int f_put(baton_store *s, const char *name, const void *p, size_t n, baton_err *err)
{
    int rc = fault(s, IO_OP_PUT, name, err);
    return rc ? rc : baton_store_put(inner(s), name, p, n, err);
}

static int f_put_file(baton_store *s, const char *name, const char *path, baton_err *err)
{
    int rc = fault(s, IO_OP_PUT_FILE, name, err);
    return rc ? rc : baton_store_put_file(inner(s), name, path, err);
}

static int f_del(baton_store *s, const char *name, baton_err *err)
{
    int rc = fault(s, IO_OP_DEL, name, err);
    return rc ? rc : baton_store_delete(inner(s), name, err);
}

static int f_list(baton_store *s, const char *prefix, io_objlist *l, baton_err *err)
{
    int rc = fault(s, IO_OP_LIST, prefix, err);
    if (rc) return rc;
    baton_store *in = inner(s);
    return in->ops->list ? in->ops->list(in, prefix, l, err)
                         : baton_err_set(err, BATON_ERR_ARG, "%s: HTTP stores cannot be listed", in->uri);
}

static int f_create_bucket(baton_store *s, baton_err *err)
{
    return baton_store_create_bucket(inner(s), err);
}

static void f_close(baton_store *s)
{
    if (!s->faults) return;
    baton_store_close(s->faults->inner);
    free(s->faults);
    s->faults = NULL;
}

static const io_store_ops fault_ops = {
    .get = f_get,
    .get_range = f_get_range,
    .size = f_size,
    .put = f_put,
    .put_file = f_put_file,
    .del = f_del,
    .list = f_list,
    .create_bucket = f_create_bucket,
    .close = f_close,
};

int io_store_faulty(baton_store *in, const io_faults *f, baton_store **out, baton_err *err)
{
    *out = NULL;
    baton_store *s = calloc(1, sizeof *s);
    io_fault_state *fs = calloc(1, sizeof *fs);
    char *uri = strdup(in->uri);
    if (!s || !fs || !uri) {
        free(s);
        free(fs);
        free(uri);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", in->uri);
    }
    pthread_mutex_init(&s->mu, NULL);
    fs->inner = in;
    fs->f = *f;
    s->ops = &fault_ops;
    s->kind = in->kind;
    s->opts = in->opts;
    s->uri = uri;
    s->faults = fs;
    *out = s;
    return BATON_OK;
}

io_fault_state *io_store_faults(baton_store *s)
{
    return s && s->ops == &fault_ops ? s->faults : NULL;
}
