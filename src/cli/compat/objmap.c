#include "objmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline size_t slot_of(uint64_t key, size_t mask) {
  key ^= key >> 31;
  key *= 0x9e3779b97f4a7c15ull;
  key ^= key >> 29;
  return (size_t)key & mask;
}

void mt_objmap_free(mt_objmap *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  memset(m, 0, sizeof *m);
}

uint64_t *mt_objmap_get(const mt_objmap *m, uint64_t key) {
  if (m->count == 0) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = slot_of(key, mask); m->used[i]; i = (i + 1) & mask)
    if (m->keys[i] == key) return &m->vals[i];
  return NULL;
}

static void grow(mt_objmap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 1024;
  uint64_t *nk = malloc(ncap * sizeof *nk), *nv = malloc(ncap * sizeof *nv);
  uint8_t *nu = calloc(ncap, 1);
  if (!nk || !nv || !nu) {
    fputs("memtrace: out of memory\n", stderr);
    exit(1);
  }
  for (size_t j = 0; j < m->cap; j++) {
    if (!m->used[j]) continue;
    size_t i = slot_of(m->keys[j], ncap - 1);
    while (nu[i]) i = (i + 1) & (ncap - 1);
    nk[i] = m->keys[j];
    nv[i] = m->vals[j];
    nu[i] = 1;
  }
  size_t count = m->count;
  mt_objmap_free(m);
  m->keys = nk;
  m->vals = nv;
  m->used = nu;
  m->cap = ncap;
  m->count = count;
}

void mt_objmap_put(mt_objmap *m, uint64_t key, uint64_t val) {
  uint64_t *v = mt_objmap_get(m, key);
  if (v) {
    *v = val;
    return;
  }
  if ((m->count + 1) * 2 > m->cap) grow(m);
  size_t mask = m->cap - 1, i = slot_of(key, mask);
  while (m->used[i]) i = (i + 1) & mask;
  m->keys[i] = key;
  m->vals[i] = val;
  m->used[i] = 1;
  m->count++;
}

int mt_objmap_remove(mt_objmap *m, uint64_t key, uint64_t *val) {
  if (m->count == 0) return 0;
  size_t mask = m->cap - 1, i = slot_of(key, mask);
  while (m->used[i] && m->keys[i] != key) i = (i + 1) & mask;
  if (!m->used[i]) return 0;
  if (val) *val = m->vals[i];
  /* Backward-shift: move later entries of the run into the hole when their
   * home slot is not between the hole and them. */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
    size_t home = slot_of(m->keys[j], mask);
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      m->keys[hole] = m->keys[j];
      m->vals[hole] = m->vals[j];
      hole = j;
    }
  }
  m->used[hole] = 0;
  m->count--;
  return 1;
}
