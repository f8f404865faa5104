/* An open-addressing hash map from non-zero-free 64-bit keys to 32-bit
 * values, for interning tree nodes (key = parent << 32 | function). */
#ifndef MT_VIEWER_U64MAP_H
#define MT_VIEWER_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mt_vmap {
  uint64_t *keys; /* key + 1; 0 marks an empty slot */
  uint32_t *vals;
  size_t cap, n; /* cap is a power of two */
} mt_vmap;

int mt_vmap_init(mt_vmap *m, size_t expect);
void mt_vmap_free(mt_vmap *m);
/* The value of key, or inserts `val` and returns it; *fresh says which.
 * Returns UINT32_MAX when out of memory. */
uint32_t mt_vmap_intern(mt_vmap *m, uint64_t key, uint32_t val, int *fresh);
/* The value of key, or UINT32_MAX. */
uint32_t mt_vmap_get(const mt_vmap *m, uint64_t key);

#endif
