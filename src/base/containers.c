#include "containers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void mt__u64map_free(mt__u64map *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

uint32_t *mt__u64map_get(const mt__u64map *m, uint64_t key) {
  if (m->cap == 0) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = mt__hash64(key) & mask;; i = (i + 1) & mask) {
    if (m->vals[i] == 0) return NULL;
    if (m->keys[i] == key) return &m->vals[i];
  }
}

static int grow(mt__u64map *m) {
  size_t ncap = m->cap ? m->cap * 2 : 64;
  uint64_t *nk = malloc(ncap * sizeof *nk);
  uint32_t *nv = calloc(ncap, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return -1;
  }
  for (size_t j = 0; j < m->cap; j++) {
    if (!m->vals[j]) continue;
    size_t i = mt__hash64(m->keys[j]) & (ncap - 1);
    while (nv[i]) i = (i + 1) & (ncap - 1);
    nk[i] = m->keys[j];
    nv[i] = m->vals[j];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
  return 0;
}

int mt__u64map_put(mt__u64map *m, uint64_t key, uint32_t val) {
  uint32_t *v = mt__u64map_get(m, key);
  if (v) {
    *v = val + 1;
    return 0;
  }
  if ((m->count + 1) * 2 > m->cap && grow(m) != 0) return -1;
  size_t mask = m->cap - 1;
  size_t i = mt__hash64(key) & mask;
  while (m->vals[i]) i = (i + 1) & mask;
  m->keys[i] = key;
  m->vals[i] = val + 1;
  m->count++;
  return 0;
}

/* ---- string interner ---- */

uint64_t mt__hash_bytes(const char *s, size_t len) {
  /* Eight bytes a step (names and file paths are tens of bytes: a byte a
   * step cost the reader more than the rest of interning), each word
   * folded in by a multiply and a shift, the rest of the bytes as one
   * last word; then mixed. */
  uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
  for (; len >= 8; s += 8, len -= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  for (size_t i = 0; i < len; i++) w |= (uint64_t)(uint8_t)s[i] << (8 * i);
  return mt__mix64((h ^ w) * 0xff51afd7ed558ccdull);
}

void mt__strtab_free(mt__strtab *t) {
  for (size_t i = 0; i < t->nchunks; i++) free(t->chunks[i]);
  free(t->chunks);
  free(t->slots);
  memset(t, 0, sizeof *t);
}

static char *arena_alloc(mt__strtab *t, size_t n) {
  if (t->chunk_cap - t->chunk_used < n) {
    size_t cap = n > 65536 ? n : 65536;
    if (t->nchunks == t->chunks_cap) {
      size_t nc = t->chunks_cap ? t->chunks_cap * 2 : 16;
      void **c = realloc(t->chunks, nc * sizeof *c);
      if (!c) return NULL;
      t->chunks = c;
      t->chunks_cap = nc;
    }
    char *chunk = malloc(cap);
    if (!chunk) return NULL;
    t->chunks[t->nchunks++] = chunk;
    t->chunk = chunk;
    t->chunk_cap = cap;
    t->chunk_used = 0;
  }
  char *p = t->chunk + t->chunk_used;
  t->chunk_used += n;
  return p;
}

static int strtab_grow(mt__strtab *t) {
  size_t ncap = t->cap ? t->cap * 2 : 256;
  mt__strtab_slot *ns = calloc(ncap, sizeof *ns);
  if (!ns) return -1;
  for (size_t j = 0; j < t->cap; j++) {
    const mt__strtab_slot *o = &t->slots[j];
    if (!o->s) continue;
    size_t i = mt__hash_bytes(o->s, o->len) & (ncap - 1);
    while (ns[i].s) i = (i + 1) & (ncap - 1);
    ns[i] = *o;
  }
  free(t->slots);
  t->slots = ns;
  t->cap = ncap;
  return 0;
}

const char *mt__strtab_intern(mt__strtab *t, const char *s, size_t len) {
  if (len > UINT32_MAX || ((t->count + 1) * 2 > t->cap && strtab_grow(t) != 0)) return NULL;
  size_t mask = t->cap - 1;
  uint64_t h = mt__hash_bytes(s, len);
  uint32_t tag = (uint32_t)(h >> 32);
  size_t i = h & mask;
  for (; t->slots[i].s; i = (i + 1) & mask) {
    const mt__strtab_slot *c = &t->slots[i];
    if (c->tag == tag && c->len == len && memcmp(c->s, s, len) == 0) return c->s;
  }
  char *copy = arena_alloc(t, len + 1);
  if (!copy) return NULL;
  memcpy(copy, s, len);
  copy[len] = 0;
  t->slots[i] = (mt__strtab_slot){copy, (uint32_t)len, tag};
  t->count++;
  return copy;
}

/* A transparent huge page's size (x86-64, arm64 with 4 KiB pages). */
#define HUGE_PAGE ((size_t)2 << 20)

void *mt__table_alloc(size_t bytes) {
  const size_t huge = HUGE_PAGE;
  if (bytes < huge) return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  size_t whole = (bytes + huge - 1) & ~(huge - 1); /* aligned_alloc wants a multiple */
  void *p = aligned_alloc(huge, whole);
#ifdef MADV_HUGEPAGE
  if (p) (void)madvise(p, whole, MADV_HUGEPAGE); /* advice only: refused, it stays small pages */
#endif
  return p;
}

int mt__realloc_columns(void **const columns[], const size_t sizes[], size_t n, size_t nc,
                        void *(*re)(void *, size_t)) {
  int rc = 0;
  for (size_t k = 0; k < n; k++) {
    void *p = sizes[k] && nc > SIZE_MAX / sizes[k] ? NULL : re(*columns[k], nc * sizes[k]);
    if (p) *columns[k] = p;
    else rc = -1;
  }
  return rc;
}

void *mt__realloc_big(void *old, size_t bytes) {
  void *p = realloc(old, bytes);
#ifdef MADV_HUGEPAGE
  if (p && bytes >= 2 * HUGE_PAGE) {
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    /* every page it touches: a block this large is a mapping of its own,
     * which a partial advice would split in two, and realloc then copies
     * it rather than moving the pages (mremap takes one mapping) */
    uintptr_t from = (uintptr_t)p & ~(page - 1);
    uintptr_t to = ((uintptr_t)p + bytes + page - 1) & ~(page - 1);
    (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
  }
#endif
  return p;
}
