/* loader_args.c — what a baton.Loader's arguments imply beyond themselves: the default folder of
 * file and cache modes' local copy, this process's place among the ranks of its machine and of its
 * job (from its launcher's environment; Checkpoints asks too), and the prefetch buffers' size (a
 * warning, or a refusal). */
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
    uint64_t c = m->shape[2] ? m->shape[2] : m->channels, h = m->shape[0], w = m->shape[1];
    if (po->crop == BATON_CROP_RANDOM_RESIZED || po->crop == BATON_CROP_CENTER)
        h = w = po->size ? po->size : 224;
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
