/* replay.c — a main() for any fuzz target (LLVMFuzzerTestOneInput) without libFuzzer, so the
 * targets run in the sanitizer build (gcc's ASan+UBSan) that `make test` already has, instead of
 * a third, clang-built library.
 *
 *   replay_NAME [-m N] [-s SECONDS] PATH...
 *
 * Every file named, and every file in a folder named (not recursive), is given to the target once
 * as it is; then, with -m N, N deterministic mutations of each (xorshift from the file's index and
 * the mutation's number, so a failure repeats): a bit flipped, a byte set to 0, 0xff or a random
 * value, a cut at a random length, a run of bytes deleted, duplicated or overwritten with another
 * part of the input, a random 4-byte integer written over a random place — the edits that find
 * length and offset bugs in parsers. -s caps the mutations' wall time (the inputs as they are
 * always all run). Prints one line: inputs, executions, seconds. The target aborts on a wrong
 * result, and the sanitizers on a memory or UB error, so the exit status is the verdict.
 * Contract: never writes anything; inputs over 16 MiB are refused (exit 2). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX (16u << 20)

typedef struct inputs {
    char **path;
    size_t n, cap;
} inputs;

static void add(inputs *in, const char *p)
{
    if (in->n == in->cap) {
        in->cap = in->cap ? 2 * in->cap : 64;
        in->path = realloc(in->path, in->cap * sizeof *in->path);
        if (!in->path) { perror("replay"); exit(2); }
    }
    in->path[in->n++] = strdup(p);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect(inputs *in, const char *p)
{
    struct stat st;
    if (stat(p, &st) != 0) { perror(p); exit(2); }
    if (!S_ISDIR(st.st_mode)) { add(in, p); return; }
    DIR *d = opendir(p);
    if (!d) { perror(p); exit(2); }
    size_t first = in->n;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", p, e->d_name);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) add(in, full);
    }
    closedir(d);
    qsort(in->path + first, in->n - first, sizeof *in->path, cmp);   /* readdir's order varies */
}

static uint8_t *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f) { perror(p); exit(2); }
    uint8_t *buf = malloc(REPLAY_MAX + 1);
    if (!buf) { perror("replay"); exit(2); }
    *len = fread(buf, 1, REPLAY_MAX + 1, f);
    fclose(f);
    if (*len > REPLAY_MAX) { fprintf(stderr, "replay: %s: over 16 MiB\n", p); exit(2); }
    uint8_t *fit = realloc(buf, *len ? *len : 1);
    return fit ? fit : buf;
}

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* mutate: one edit of src (len) into dst (room for 2*len + 8), returning the new length */
static size_t mutate(const uint8_t *src, size_t len, uint8_t *dst, uint64_t *rng)
{
    memcpy(dst, src, len);
    if (len == 0) { dst[0] = (uint8_t)next(rng); return 1; }
    size_t at = next(rng) % len, n = 1 + next(rng) % (len - at < 64 ? len - at : 64);
    switch (next(rng) % 8) {
    case 0: dst[at] ^= (uint8_t)(1u << (next(rng) % 8)); return len;
    case 1: dst[at] = 0; return len;
    case 2: dst[at] = 0xff; return len;
    case 3: dst[at] = (uint8_t)next(rng); return len;
    case 4: return at;                                                   /* cut */
    case 5: memmove(dst + at, src + at + n, len - at - n); return len - n;   /* delete */
    case 6: memcpy(dst + at + n, src + at, len - at); return len + n;        /* duplicate */
    default: {
        uint32_t v = (uint32_t)next(rng);
        if (len - at < 4) return len;
        memcpy(dst + at, &v, 4);
        return len;
    }
    }
}

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* run: the target on exactly n bytes (a copy, so ASan sees a read past the input) */
static void run(const uint8_t *p, size_t n)
{
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) { perror("replay"); exit(2); }
    memcpy(exact, p, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
}

int main(int argc, char **argv)
{
    long muts = 0;
    double cap = 1e9;
    inputs in = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-m") == 0 && i + 1 < argc) muts = atol(argv[++i]);
        else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) cap = atof(argv[++i]);
        else collect(&in, argv[i]);
    }
    if (in.n == 0) { fprintf(stderr, "usage: %s [-m N] [-s SECONDS] PATH...\n", argv[0]); return 2; }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint8_t **data = calloc(in.n, sizeof *data);
    size_t *len = calloc(in.n, sizeof *len), most = 0;
    if (!data || !len) { perror("replay"); return 2; }
    long runs = 0;
    for (size_t i = 0; i < in.n; i++) {
        data[i] = slurp(in.path[i], &len[i]);
        if (len[i] > most) most = len[i];
        run(data[i], len[i]);
        runs++;
    }
    uint8_t *dst = malloc(2 * most + 8);
    if (!dst) { perror("replay"); return 2; }
    for (long m = 0; m < muts && since(&t0) < cap; m++) {
        for (size_t i = 0; i < in.n; i++) {
            uint64_t rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)i << 32) ^ (uint64_t)m;
            next(&rng);
            run(dst, mutate(data[i], len[i], dst, &rng));
            runs++;
        }
    }
    printf("%s: %zu inputs, %ld executions, %.1f s\n", argv[0], in.n, runs, since(&t0));
    free(dst);
    for (size_t i = 0; i < in.n; i++) { free(in.path[i]); free(data[i]); }
    free(in.path);
    free(data);
    free(len);
    return 0;
}
