#include "u64map.h"

#include <stdlib.h>

static size_t hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return (size_t)k;
}

int mt_vmap_init(mt_vmap *m, size_t expect) {
  size_t cap = 64;
  while (cap < expect * 2) cap *= 2;
  m->keys = calloc(cap, sizeof *m->keys);
  m->vals = malloc(cap * sizeof *m->vals);
  m->cap = cap;
  m->n = 0;
  if (!m->keys || !m->vals) {
    mt_vmap_free(m);
    return -1;
  }
  return 0;
}

void mt_vmap_free(mt_vmap *m) {
  free(m->keys);
  free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->n = 0;
}

static int grow(mt_vmap *m) {
  mt_vmap nm;
  if (mt_vmap_init(&nm, m->cap)) return -1; /* twice the slots */
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = hash(m->keys[i] - 1) & (nm.cap - 1);
    while (nm.keys[j]) j = (j + 1) & (nm.cap - 1);
    nm.keys[j] = m->keys[i];
    nm.vals[j] = m->vals[i];
  }
  nm.n = m->n;
  mt_vmap_free(m);
  *m = nm;
  return 0;
}

uint32_t mt_vmap_intern(mt_vmap *m, uint64_t key, uint32_t val, int *fresh) {
  if ((m->n + 1) * 2 > m->cap && grow(m)) return UINT32_MAX;
  size_t j = hash(key) & (m->cap - 1);
  for (;;) {
    if (!m->keys[j]) {
      m->keys[j] = key + 1;
      m->vals[j] = val;
      m->n++;
      *fresh = 1;
      return val;
    }
    if (m->keys[j] == key + 1) {
      *fresh = 0;
      return m->vals[j];
    }
    j = (j + 1) & (m->cap - 1);
  }
}

uint32_t mt_vmap_get(const mt_vmap *m, uint64_t key) {
  if (!m->cap) return UINT32_MAX;
  size_t j = hash(key) & (m->cap - 1);
  while (m->keys[j]) {
    if (m->keys[j] == key + 1) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return UINT32_MAX;
}
