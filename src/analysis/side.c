/* The side table (analysis_internal.h): values beside an object's columns,
 * in per-kind runs of increasing keys, with a map for the rest. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

/* An object's key: its index, or its id while a live-only load moves
 * objects (side_key). */
static uint64_t key_of(const mt_analysis *a, size_t obj) {
  return a->side_key ? a->side_key[obj] : (uint64_t)obj;
}

size_t mt__side_count(const mt__side *s) {
  size_t n = s->nlate;
  for (int k = 0; k < MT__SIDE_KINDS; k++) n += s->run[k].n;
  return n;
}

void mt__side_free(mt__side *s) {
  for (int k = 0; k < MT__SIDE_KINDS; k++) {
    free(s->run[k].key);
    free(s->run[k].val);
  }
  mt__u64map_free(&s->late);
  free(s->late_val);
  memset(s, 0, sizeof *s);
}

/* The index of key in run r, or r->n. */
static size_t run_find(const struct mt__side_run *r, uint64_t key) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->key[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < r->n && r->key[lo] == key ? lo : r->n;
}

uint64_t mt__side_get(const mt_analysis *a, size_t obj, unsigned kind) {
  const mt__side *s = &a->side;
  uint64_t key = key_of(a, obj);
  const struct mt__side_run *r = &s->run[kind];
  size_t i = run_find(r, key);
  if (i < r->n) return r->val[i];
  uint32_t *ix = mt__u64map_get(&s->late, key << 2 | kind);
  return ix ? s->late_val[*ix - 1] : 0;
}

int mt__side_put(mt_analysis *a, size_t obj, unsigned kind, uint64_t v) {
  mt__side *s = &a->side;
  uint64_t key = key_of(a, obj);
  struct mt__side_run *r = &s->run[kind];
  if (r->n == 0 || key > r->key[r->n - 1]) {
    size_t cap = r->cap;
    if (mt__grow_big((void **)&r->key, &cap, r->n + 1, sizeof *r->key, 1024) ||
        mt__grow_big((void **)&r->val, &r->cap, r->n + 1, sizeof *r->val, 1024))
      return -1;
    r->key[r->n] = key;
    r->val[r->n++] = v;
    return 0;
  }
  size_t i = run_find(r, key);
  if (i < r->n) { /* set again */
    r->val[i] = v;
    return 0;
  }
  uint32_t *ix = mt__u64map_get(&s->late, key << 2 | kind);
  if (ix) {
    s->late_val[*ix - 1] = v;
    return 0;
  }
  if (mt__grow((void **)&s->late_val, &s->late_cap, s->nlate + 1, sizeof *s->late_val, 64) ||
      mt__u64map_put(&s->late, key << 2 | kind, (uint32_t)s->nlate))
    return -1;
  s->late_val[s->nlate++] = v;
  return 0;
}
