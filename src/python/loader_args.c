/* loader_args.c — a baton.Loader's arguments: parsed and checked (pyb_loader_args_parse), and what
 * they imply beyond themselves: the default folder of file and cache modes' local copy, this
 * process's place among the ranks of its machine and of its job (from its launcher's environment;
 * Checkpoints asks too), and the prefetch buffers' size (a warning, or a refusal). */
#include "python_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int env_count(const char *name, uint32_t *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) return 0;
    unsigned long n = strtoul(v, &end, 10);
    if (*end || n > 65536) return 0;
    *out = (uint32_t)n;
    return 1;
}

/* This process's place among the processes of this machine, as its launcher tells it: torchrun's
 * LOCAL_RANK and LOCAL_WORLD_SIZE, or Open MPI's OMPI_COMM_WORLD_LOCAL_RANK and _LOCAL_SIZE.
 * 0 when neither says (a process started by hand). */
int pyb_launcher_local(uint32_t *rank, uint32_t *size)
{
    if (env_count("LOCAL_RANK", rank) && env_count("LOCAL_WORLD_SIZE", size) && *rank < *size) return 1;
    if (env_count("OMPI_COMM_WORLD_LOCAL_RANK", rank) && env_count("OMPI_COMM_WORLD_LOCAL_SIZE", size) &&
        *rank < *size)
        return 1;
    return 0;
}

/* This process's rank and the number of ranks of its job, as its launcher tells it: torchrun's RANK
 * and WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, Slurm's SLURM_PROCID and SLURM_NTASKS;
 * *who names the variable. 0 when none says (a process started by hand). */
int pyb_launcher_rank(uint32_t *rank, uint32_t *size, const char **who)
{
    static const char *const vars[][2] = {
        {"RANK", "WORLD_SIZE"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (env_count(vars[i][0], rank) && env_count(vars[i][1], size) && *rank < *size) {
            *who = vars[i][0];
            return 1;
        }
    return 0;
}

/* The default folder for file and cache modes' local copy: $XDG_CACHE_HOME/baton/data/<CRC of the
 * URI> (~/.cache when unset), reused by later runs on the same URI (each shard verified). */
int pyb_default_local_dir(const char *uri, char *out, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    unsigned crc = (unsigned)baton_crc32c(0, uri, strlen(uri));
    int n = xdg && *xdg ? snprintf(out, cap, "%s/baton/data/%08x", xdg, crc)
            : home && *home ? snprintf(out, cap, "%s/.cache/baton/data/%08x", home, crc) : -1;
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The pipeline's prefetch buffers: depth batches of `batch` decoded images, allocated whole when
 * the first batch is asked for. More than the machine's memory is refused; more than 1 GiB is a
 * warning naming the size (a batch larger than the dataset's epoch says so: its buffers hold
 * samples no batch will have). */
int pyb_prefetch_check(const baton_manifest *m, const baton_pipeline_opts *po, uint64_t esize)
{
    uint32_t shape[3];
    baton_pipeline_shape(m, po->crop, po->size, shape);   /* varying sizes without a crop: refused at open */
    uint64_t c = shape[2], h = shape[0], w = shape[1];
    double bytes = (double)po->depth * po->batch * (double)(c * h * w) * (po->u8 ? 1 : 4);
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    char what[256], why[160] = "";
    snprintf(what, sizeof what, "depth=%u batches of batch=%u %llux%llux%llu %s images take %.1f GB of prefetch buffers",
             po->depth, po->batch, (unsigned long long)c, (unsigned long long)h, (unsigned long long)w,
             po->u8 ? "uint8" : "float32", bytes / 1e9);
    if ((uint64_t)po->batch > esize)
        snprintf(why, sizeof why, " (an epoch holds %llu samples: every batch is smaller than its buffer)",
                 (unsigned long long)esize);
    if (phys > 0 && bytes > phys)
        return pyb_usage_rc("baton.Loader: %s%s, more than this machine's %.1f GB of memory: lower depth= or batch=",
                            what, why, phys / 1e9);
    if (bytes > (double)(1u << 30))
        return PyErr_WarnFormat(PyExc_UserWarning, 1, "baton.Loader: %s%s; lower depth= or batch= to use less",
                                what, why);
    return 0;
}

/* ------------------------------------------------------------------ the arguments */
#define MAX_BATCH PYB_LOADER_MAX_BATCH

/* The arguments still as Python objects, converted by the steps below. */
typedef struct raw_args {
    PyObject *mode, *seed, *epochs, *local, *endpoint, *crop;
    Py_ssize_t batch_size;
} raw_args;

static int parse_kw(PyObject *args, PyObject *kw, pyb_loader_args *a, raw_args *r)
{
    static char *kwlist[] = {"uri", "mode", "batch", "shuffle", "seed", "epochs", "rank", "world", "threads",
                             "normalize", "local_dir", "drop_last", "layout", "depth", "s3_endpoint", "block",
                             "crop_pad", "flip", "size", "crop", "scale", "ratio", "dtype", "batch_size",
                             "download_first", NULL};
    *a = (pyb_loader_args){.layout = "nchw", .dtype = "float32", .batch = PY_SSIZE_T_MIN, .world = 1, .threads = 2,
                           .depth = 4, .size = 224, .shuffle = 1, .crop_kind = BATON_CROP_NONE,
                           .scale = {0.08, 1.0}, .ratio = {3.0 / 4.0, 4.0 / 3.0}};
    *r = (raw_args){.batch_size = PY_SSIZE_T_MIN};
    /* the arguments after uri are keyword-only */
    return PyArg_ParseTupleAndKeywords(args, kw, "s|$OnpOOnnnOOpsnOnnpnO(dd)(dd)snp:Loader", kwlist, &a->uri, &r->mode,
                                       &a->batch, &a->shuffle, &r->seed, &r->epochs, &a->rank, &a->world, &a->threads,
                                       &a->norm, &r->local, &a->drop_last, &a->layout, &a->depth, &r->endpoint,
                                       &a->block, &a->crop, &a->flip, &a->size, &r->crop, &a->scale[0], &a->scale[1],
                                       &a->ratio[0], &a->ratio[1], &a->dtype, &r->batch_size, &a->download_first)
               ? 0
               : -1;
}

/* batch: the global batch (every rank's samples of a step); batch_size: PyTorch's, this process's */
static int global_batch(pyb_loader_args *a, Py_ssize_t batch_size)
{
    if (a->batch != PY_SSIZE_T_MIN && batch_size != PY_SSIZE_T_MIN)
        return pyb_usage_rc("batch=%zd and batch_size=%zd: give one (batch is the global batch over all world ranks, "
                            "batch_size this process's part, as in PyTorch: batch = batch_size * world)",
                            a->batch, batch_size);
    if (batch_size != PY_SSIZE_T_MIN) {
        if (batch_size < 1 || batch_size > MAX_BATCH) return pyb_usage_rc("batch_size: must be 1..16384");
        if (a->world >= 1 && batch_size > MAX_BATCH / a->world)
            return pyb_usage_rc("batch_size=%zd with world=%zd: the global batch %zd is over 16384", batch_size,
                                a->world, batch_size * a->world);
        a->batch = batch_size * (a->world >= 1 ? a->world : 1);
    } else if (a->batch == PY_SSIZE_T_MIN) {
        a->batch = 128;
    }
    return 0;
}

/* crop, dtype, size, scale and ratio */
static int check_crop(pyb_loader_args *a, PyObject *crop_o)
{
    const char *crop_name = NULL;
    if (pyb_opt_str(crop_o, "crop", &crop_name)) return -1;
    if (crop_name && baton_crop_parse(crop_name, &a->crop_kind))
        return pyb_usage_rc("crop '%s': expected \"random-resized\", \"center\", \"pad\" or None", crop_name);
    if (strcmp(a->dtype, "float32") && strcmp(a->dtype, "uint8"))
        return pyb_usage_rc("dtype '%s': expected \"float32\" or \"uint8\"", a->dtype);
    if (a->size < 1 || a->size > 4096) return pyb_usage_rc("size: must be 1..4096");
    if (!(a->scale[0] > 0 && a->scale[0] <= a->scale[1] && a->scale[1] <= 1))
        return pyb_usage_rc("scale (%g, %g): expected 0 < min <= max <= 1", a->scale[0], a->scale[1]);
    if (!(a->ratio[0] > 0 && a->ratio[0] <= a->ratio[1] && a->ratio[1] < 1e6))
        return pyb_usage_rc("ratio (%g, %g): expected 0 < min <= max", a->ratio[0], a->ratio[1]);
    return 0;
}

/* mode, local_dir and s3_endpoint as strings; seed; epochs (None: no end) */
static int convert(pyb_loader_args *a, const raw_args *r)
{
    if (pyb_opt_str(r->mode, "mode", &a->mode) || pyb_opt_str(r->local, "local_dir", &a->local) ||
        pyb_opt_str(r->endpoint, "s3_endpoint", &a->endpoint))
        return -1;
    if (r->seed && r->seed != Py_None) {
        a->seed = PyLong_AsUnsignedLongLong(r->seed);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return pyb_usage_rc("seed: expected an integer in [0, 2^64)");
        }
    }
    if (r->epochs && r->epochs != Py_None) {
        long long e = PyLong_AsLongLong(r->epochs);
        if ((e == -1 && PyErr_Occurred()) || e < 1) {
            PyErr_Clear();
            return pyb_usage_rc("epochs: expected a positive integer or None (no end)");
        }
        a->epochs = (uint64_t)e;
    }
    return 0;
}

static int check_ranges(const pyb_loader_args *a)
{
    const char *bad = a->batch < 1 || a->batch > MAX_BATCH ? "batch: must be 1..16384"
                      : a->world < 1 || a->world > 65536 ? "world: must be 1..65536"
                      : a->rank < 0 || a->rank >= a->world ? "rank: must be 0..world-1"
                      : a->threads < 1 || a->threads > 256 ? "threads: must be 1..256"
                      : a->depth < 2 || a->depth > PYB_LOADER_MAX_DEPTH ? "depth: must be 2..64"
                      : a->block < 0 || a->block > (1 << 24) ? "block: must be 0..16777216"
                      : a->crop < 0 || a->crop > 1024 ? "crop_pad: must be 0..1024"
                      : strcmp(a->layout, "nchw") && strcmp(a->layout, "nhwc") ? "layout: must be \"nchw\" or \"nhwc\""
                      : NULL;
    if (bad) return pyb_usage_rc("%s", bad);
    if (a->world > a->batch)
        return pyb_usage_rc("world %zd > batch %zd: batch is the global batch, split over the world's ranks, so %zd "
                            "of them would get no sample in any step; use batch >= world",
                            a->world, a->batch, a->world - a->batch);
    return 0;
}

int pyb_loader_args_parse(PyObject *args, PyObject *kw, pyb_loader_args *a)
{
    raw_args r;
    if (parse_kw(args, kw, a, &r) || global_batch(a, r.batch_size) || check_crop(a, r.crop) || convert(a, &r) ||
        check_ranges(a))
        return -1;
    return 0;
}
