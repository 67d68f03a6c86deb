/* bigmem.c — large zeroed regions (a model's activations: hundreds of MB for resnet20 at batch
 * 128) straight from the kernel: mmap'd anonymous memory is zero already, so nothing is written
 * at allocation, pages arrive on first touch, and transparent huge pages are requested so that
 * first touch costs one fault per 2 MB instead of one per 4 KB. The start-up of a resumed run
 * (process start to first step) is dominated by this memory, not by the checkpoint.
 *
 * Contract: baton_bigmem_alloc returns zeroed memory, 64-byte aligned (page-aligned but in the
 * sanitizer build), or NULL; baton_bigmem_free takes the same size; baton_bigmem_realloc moves the
 * pages (mremap), it does not copy them, and leaves the region as it was when it fails (the
 * sanitizer build: the heap, copied); baton_bigmem_reserve is the one doubling growth of an arena built on them (the
 * pipeline's record arenas, the stream's block arena). */
#include "baton/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
/* The sanitizer build takes these regions from the heap instead, so that a write past the end of a
 * batch buffer, an arena or a fetch chunk is caught there as it is for any other buffer. */
void *baton_bigmem_alloc(size_t bytes)
{
    void *p = NULL;
    if (bytes == 0) bytes = 64;
    /* calloc first: ASan hands a large block straight from mmap, zero already, where posix_memalign's
     * block had to be written whole (every page faulted in at once: a Python test's Loaders spent
     * most of their time there); taken when it is 64-byte aligned, as large ones are */
    p = calloc(1, bytes);
    if (p && ((uintptr_t)p & 63) == 0) return p;
    free(p);
    p = NULL;
    if (posix_memalign(&p, 4096, bytes) != 0) return NULL;
    return memset(p, 0, bytes);
}

void *baton_bigmem_realloc(void *p, size_t old_bytes, size_t bytes)
{
    void *q = baton_bigmem_alloc(bytes);
    if (!q || !p) return q;
    memcpy(q, p, old_bytes < bytes ? old_bytes : bytes);
    free(p);
    return q;
}

void baton_bigmem_free(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}
#else

static void advise(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (bytes >= (size_t)4 << 20) (void)madvise(p, bytes, MADV_HUGEPAGE);   /* advice only */
#else
    (void)p, (void)bytes;
#endif
}

void *baton_bigmem_alloc(size_t bytes)
{
    if (bytes == 0) bytes = 64;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    advise(p, bytes);
    return p;
}

void *baton_bigmem_realloc(void *p, size_t old_bytes, size_t bytes)
{
    if (!p) return baton_bigmem_alloc(bytes);
    if (old_bytes == 0) old_bytes = 64;
    if (bytes == 0) bytes = 64;
    void *q = mremap(p, old_bytes, bytes, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) return NULL;
    advise(q, bytes);
    return q;
}

void baton_bigmem_free(void *p, size_t bytes)
{
    if (!p) return;
    if (bytes == 0) bytes = 64;
    munmap(p, bytes);
}
#endif

int baton_bigmem_reserve(void **p, size_t *cap, size_t len, size_t extra, size_t first)
{
    if (*cap >= len && *cap - len >= extra) return 0;
    size_t need = len + extra, c = *cap ? *cap : (first ? first : 4096);
    if (need < len) return -1;
    while (c < need) {
        if (c > SIZE_MAX / 2) return -1;
        c *= 2;
    }
    void *q = baton_bigmem_realloc(*p, *cap, c);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}
