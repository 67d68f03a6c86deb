/* util_mem.h — large zeroed regions straight from the kernel, for buffers that are big and written
 * for the first time at a launch (batch buffers, arenas, fetch chunks, a model's activations)
 * (part of util.h, which includes it; src/util/bigmem.c).
 *
 * Contract: as util.h's. */
#ifndef BATON_UTIL_MEM_H
#define BATON_UTIL_MEM_H

#include "baton/util.h"

/* ---- large zeroed regions from the kernel (lazily faulted, huge pages advised; src/util/bigmem.c) ---- */
void *baton_bigmem_alloc(size_t bytes);   /* zeroed, 64-byte aligned; NULL when out of memory */
void baton_bigmem_free(void *p, size_t bytes);
/* Grow (or shrink) a region from baton_bigmem_alloc to bytes, contents kept, the new part zero;
 * NULL when out of memory (p is then left as it was). */
void *baton_bigmem_realloc(void *p, size_t old_bytes, size_t bytes);
/* Room for extra more bytes after the len in use of a region *p of *cap bytes (*p NULL and *cap 0:
 * none yet): its capacity doubled from *cap (first when 0) until they fit. 0, or -1 when out of
 * memory or len + extra overflows (*p and *cap then left as they were). The region may move. */
int baton_bigmem_reserve(void **p, size_t *cap, size_t len, size_t extra, size_t first);

#endif
