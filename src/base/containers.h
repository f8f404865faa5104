/* Small containers shared by every module: a hash map from 64-bit keys to
 * 32-bit values, a string interner whose strings never move, and growth of
 * arrays. Internal (mt__ prefix). */
#ifndef MT_BASE_CONTAINERS_H
#define MT_BASE_CONTAINERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hash.h"

/* Open addressing, linear probing, power-of-two capacity, load <= 1/2.
 * Values are stored +1 so that 0 marks an empty slot; any key is allowed. */
typedef struct mt__u64map {
  uint64_t *keys;
  uint32_t *vals; /* value + 1; 0 = empty */
  size_t cap, count;
} mt__u64map;

void mt__u64map_free(mt__u64map *m);
/* Returns a pointer to the stored value of `key` (the value + 1), or NULL. */
uint32_t *mt__u64map_get(const mt__u64map *m, uint64_t key);
/* Sets key -> val (val < UINT32_MAX). Returns 0, or -1 when out of memory. */
int mt__u64map_put(mt__u64map *m, uint64_t key, uint32_t val);

/* The value of key if it has one (*fresh = 0); else sets key -> val and
 * returns val (*fresh = 1). UINT32_MAX when out of memory. */
static inline uint32_t mt__u64map_intern(mt__u64map *m, uint64_t key, uint32_t val,
                                         int *fresh) {
  uint32_t *v = mt__u64map_get(m, key);
  *fresh = v == NULL;
  if (v) return *v - 1; /* stored + 1 */
  return mt__u64map_put(m, key, val) ? UINT32_MAX : val;
}

/* realloc(old, bytes), the result marked for transparent huge pages when
 * it is large (a few MiB and more): an array grown by doubling and written
 * in order then takes a page fault per 2 MiB rather than per 4 KiB. */
void *mt__realloc_big(void *old, size_t bytes);

/* mt__grow's work, growing by `re` (realloc or mt__realloc_big). */
static inline int mt__grow_by(void **v, size_t *cap, size_t need, size_t size, size_t first,
                              void *(*re)(void *, size_t)) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : first;
  while (nc < need) {
    if (nc > SIZE_MAX / 2) return -1;
    nc *= 2;
  }
  if (size && nc > SIZE_MAX / size) return -1;
  void *p = re(*v, nc * size);
  if (!p) return -1;
  *v = p;
  *cap = nc;
  return 0;
}

/* Room for at least `need` elements of `size` bytes in the array *v of
 * *cap: 0 (*v and *cap grown by doubling, from `first` elements, if
 * needed), or -1 when out of memory or the size would not fit a size_t
 * (*v and *cap unchanged). */
static inline int mt__grow(void **v, size_t *cap, size_t need, size_t size, size_t first) {
  return mt__grow_by(v, cap, need, size, first, realloc);
}

/* mt__grow for the analysis's large arrays, on huge pages from a few MiB
 * (mt__realloc_big). Not for the tracer: the profiled program's memory
 * stays as its allocator makes it. */
static inline int mt__grow_big(void **v, size_t *cap, size_t need, size_t size, size_t first) {
  return mt__grow_by(v, cap, need, size, first, mt__realloc_big);
}

/* Reallocates n parallel arrays (columns[k] points to the k-th array, of
 * sizes[k]-byte elements) to nc elements each, by `re` (realloc or
 * mt__realloc_big): 0, or -1 when out of memory or a size would not fit a
 * size_t. On failure the arrays that were reallocated keep their new
 * place, each at least as large as before: the caller's capacity, which it
 * updates only on success, stays true. */
int mt__realloc_columns(void **const columns[], const size_t sizes[], size_t n, size_t nc,
                        void *(*re)(void *, size_t));

/* Room for one more element in the array *v, n of *cap used (mt__grow). */
static inline int mt__reserve(void **v, size_t n, size_t *cap, size_t size) {
  return n < *cap ? 0 : mt__grow(v, cap, n + 1, size, 16);
}

/* `bytes` for a large table read at random places: from 2 MiB on, aligned
 * to 2 MiB and marked for transparent huge pages (madvise), which take a
 * page fault and a TLB entry per 2 MiB rather than per 4 KiB; smaller ones
 * cache-line aligned. Not zeroed; freed with free(). NULL when out of
 * memory. Where the kernel gives no huge pages, it is an aligned malloc. */
void *mt__table_alloc(size_t bytes);

/* A slot of an mt__strtab. */
typedef struct mt__strtab_slot {
  const char *s; /* NULL: empty */
  uint32_t len;  /* s's length */
  uint32_t tag;  /* the high half of s's hash: a probe that misses reads
                    neither s nor its bytes, most of the time */
} mt__strtab_slot;

/* Interned strings: equal strings give the same pointer, valid until the
 * table is freed. */
typedef struct mt__strtab {
  mt__strtab_slot *slots; /* hash set of interned strings */
  size_t cap, count;
  char *chunk;        /* current arena chunk */
  size_t chunk_used, chunk_cap;
  void **chunks;      /* every chunk, for freeing */
  size_t nchunks, chunks_cap;
} mt__strtab;

void mt__strtab_free(mt__strtab *t);
/* The interned copy of s[0..len), or NULL when out of memory or when len
 * is past UINT32_MAX. */
const char *mt__strtab_intern(mt__strtab *t, const char *s, size_t len);

#endif
