/* A hash map from 64-bit keys to 64-bit values that supports removal, for
 * the tools that track live objects (identify, subsample, strip-names):
 * open addressing, linear probing with backward-shift deletion, so that a
 * trace of many short-lived objects keeps the table small. Exits 1 when out
 * of memory. */
#ifndef MT_CLI_OBJMAP_H
#define MT_CLI_OBJMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mt_objmap {
  uint64_t *keys, *vals;
  uint8_t *used;
  size_t cap, count; /* cap: a power of two, or 0 */
} mt_objmap;

void mt_objmap_free(mt_objmap *m);
/* Pointer to the value of key, or NULL. Valid until the next put/remove. */
uint64_t *mt_objmap_get(const mt_objmap *m, uint64_t key);
/* Sets key -> val (adding or replacing). */
void mt_objmap_put(mt_objmap *m, uint64_t key, uint64_t val);
/* Removes key; returns 1 and its value in *val (may be NULL) if it was
 * there, else 0. */
int mt_objmap_remove(mt_objmap *m, uint64_t key, uint64_t *val);

#endif
