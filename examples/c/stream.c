/* stream.c — stream a dataset through libbaton's public API: the loader (any URI, any input
 * mode) under the decode pipeline, epoch by epoch, printing a digest of what was read per epoch
 * (samples, batches, the sum of the labels, a CRC32C of the decoded images) and the throughput.
 *
 *   cc stream.c $(pkg-config --cflags --libs baton) -o stream
 *   ./stream DATASET [--mode file|pipe|mount|cache] [--batch N] [--epochs N] [--seed S]
 *            [--local-dir DIR]
 *
 * DATASET is a folder or file:// URI (default mode mount), http(s):// or s3:// (default mode pipe;
 * S3 endpoint and credentials from AWS_ENDPOINT_URL and the AWS_* variables). File and cache
 * mode keep their local copy in --local-dir. Exit 0 done, 1 error, 2 usage. */
#include <baton/img.h>
#include <baton/rec.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint64_t samples, batches; int64_t labels; uint32_t crc; } epoch_digest;

static int usage(const char *why, const char *arg)
{
    fprintf(stderr, "stream: %s%s%s\nusage: stream DATASET [--mode file|pipe|mount|cache] [--batch 1..65536] "
                    "[--epochs 1..1000] [--seed S] [--local-dir DIR]\n", why, arg ? " " : "", arg ? arg : "");
    return 2;
}

static int number(const char *s, uint64_t min, uint64_t max, uint64_t *v)  /* 0 or -1 */
{
    char *end;
    errno = 0;
    if (!s || *s < '0' || *s > '9') return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (*end || errno || x < min || x > max) return -1;
    *v = x;
    return 0;
}

int main(int argc, char **argv)
{
    baton_err err = {0};
    if (BATON_VERSION_CHECK(&err)) {   /* the library we run against is the one we compiled for */
        fprintf(stderr, "stream: %s\n", err.msg);
        return 1;
    }
    const char *uri = NULL, *mode = NULL, *local_dir = NULL;
    uint64_t batch = 128, epochs = 1, seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = argv[i + 1];   /* argv[argc] is NULL */
        if (a[0] != '-' && !uri) { uri = a; continue; }
        int bad = !v;
        if (!strcmp(a, "--mode")) mode = v;
        else if (!strcmp(a, "--local-dir")) local_dir = v;
        else if (!strcmp(a, "--batch")) bad = number(v, 1, 65536, &batch);
        else if (!strcmp(a, "--epochs")) bad = number(v, 1, 1000, &epochs);
        else if (!strcmp(a, "--seed")) bad = number(v, 0, UINT64_MAX, &seed);
        else return usage("unknown argument", a);
        if (bad) return usage("a missing or bad value for", a);
        i++;
    }
    if (!uri) return usage("no DATASET", NULL);

    baton_loader_opts lo;
    baton_loader_opts_default(&lo);
    lo.uri = uri;
    lo.seed = seed;
    lo.local_dir = local_dir;
    int remote = strstr(uri, "://") && strncmp(uri, "file://", 7) != 0;
    lo.mode = remote ? BATON_MODE_PIPE : BATON_MODE_MOUNT;
    if (mode && baton_io_mode_parse(mode, &lo.mode)) return usage("unknown --mode", mode);
    if ((lo.mode == BATON_MODE_FILE || lo.mode == BATON_MODE_CACHE) && !local_dir)
        return usage("file and cache mode need --local-dir", NULL);

    epoch_digest *ep = calloc(epochs, sizeof *ep);
    baton_loader *l = NULL;
    baton_pipeline *p = NULL;
    int rc = ep ? baton_loader_open(&lo, &l, &err) : baton_err_set(&err, BATON_ERR_NOMEM, "out of memory");
    baton_cursor end = {seed, epochs, 0}, start = {seed, 0, 0};   /* fetch nothing past the last epoch */
    if (!rc) rc = baton_loader_set_end(l, &end, &err);
    if (!rc) rc = baton_loader_seek(l, &start, &err);
    if (!rc) {
        baton_pipeline_opts po;
        baton_pipeline_opts_default(&po);
        po.batch = (uint32_t)batch;
        if (!(p = baton_pipeline_open(l, &po, &err))) rc = err.code ? err.code : BATON_ERR_ARG;
    }
    double t0 = baton_now();
    for (uint64_t e = 0; !rc && e < epochs;) {
        baton_batch *b;
        rc = baton_pipeline_next(p, &b, &err);
        if (rc == BATON_END) { e++; rc = BATON_OK; continue; }   /* the end of epoch e */
        if (rc) break;
        epoch_digest *d = &ep[e];
        d->samples += b->n;
        d->batches++;
        for (uint32_t i = 0; i < b->n; i++) d->labels += b->y[i];
        d->crc = baton_crc32c(d->crc, b->x, (size_t)b->n * b->c * b->h * b->w * sizeof(float));
        baton_pipeline_release(p, b);
    }
    double secs = baton_now() - t0;
    baton_pipeline_close(p);
    baton_loader_stats st = {0};
    if (l) baton_loader_get_stats(l, &st);
    baton_loader_close(l);
    uint64_t total = 0;
    for (uint64_t e = 0; !rc && e < epochs; e++) {
        printf("epoch %" PRIu64 ": %" PRIu64 " samples, %" PRIu64 " batches, label sum %" PRId64 ", crc %08" PRIx32 "\n",
               e, ep[e].samples, ep[e].batches, ep[e].labels, ep[e].crc);
        total += ep[e].samples;
    }
    if (!rc)
        printf("%" PRIu64 " samples in %.2f s: %.0f samples/s, %" PRIu64 " bytes fetched\n", total, secs,
               secs > 0 ? total / secs : 0.0, st.bytes_fetched);
    free(ep);
    if (rc) fprintf(stderr, "stream: %s\n", err.msg);
    return rc ? 1 : 0;
}
