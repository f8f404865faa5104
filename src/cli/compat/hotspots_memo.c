/* memtrace hotspots' memo of distinct backtraces: the parts off the hot
 * path (hotspots_memo.h says what the memo does). */
#include "hotspots_memo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/containers.h"

static void die_nomem(void) {
  fputs("memtrace hotspots: out of memory\n", stderr);
  exit(1);
}

static void release(memo *m, int all);

void memo_init(memo *m, heavy_hitters *hh) {
  memset(m, 0, sizeof *m);
  m->on = 1;
  m->hh = hh;
  hh->before_sweep = memo_release_hits;
  hh->ctx = m;
}

/* An empty table of cap (a power of two) records. */
static memo_bt *new_table(size_t cap) {
  memo_bt *t = mt__table_alloc(cap * sizeof *t);
  if (!t) die_nomem();
  for (size_t i = 0; i < cap; i++) t[i].allocator = MEMO_FREE;
  return t;
}

static memo_bt *free_slot(memo_bt *table, size_t cap, uint64_t hash1) {
  size_t i = (size_t)(hash1 >> 40) & (cap - 1);
  while (table[i].allocator != MEMO_FREE) i = (i + 1) & (cap - 1);
  return &table[i];
}

memo_caller *memo_open(memo *m, size_t n) {
  size_t need = m->ncallers + n;
  if (need > m->pool_cap) {
    size_t cap = m->pool_cap ? m->pool_cap : 1024;
    while (cap < need) cap *= 2;
    memo_caller *pool = realloc(m->pool, cap * sizeof *pool);
    if (!pool) die_nomem();
    m->pool = pool;
    m->pool_cap = cap;
  }
  return m->pool + m->ncallers;
}

memo_bt *memo_add(memo *m, uint64_t hash1, uint64_t hash2, uint32_t ncallers,
                  uint32_t allocpt, uint32_t allocator, int64_t samples, int64_t safe_until) {
  if (m->nbts >= MEMO_MAX_BTS || m->ncallers + ncallers > MEMO_MAX_CALLERS) return NULL;
  if ((m->nbts + 1) * 4 > m->cap * 3) { /* load at most 3/4 */
    release(m, 1); /* the held records move */
    size_t cap = m->cap ? m->cap * 2 : 1024;
    memo_bt *table = new_table(cap);
    for (size_t i = 0; i < m->cap; i++)
      if (m->table[i].allocator != MEMO_FREE)
        *free_slot(table, cap, m->table[i].hash1) = m->table[i];
    free(m->table);
    m->table = table;
    m->cap = cap;
  }
  memo_bt *b = free_slot(m->table, m->cap, hash1);
  *b = (memo_bt){
      hash1, hash2, samples, safe_until, 0, allocpt, allocator, ncallers, (uint32_t)m->ncallers, {0, 0}};
  m->ncallers += ncallers;
  m->nbts++;
  return b;
}

int memo_met(memo *m, uint64_t hash1, uint64_t hash2) {
  if (!m->met && !(m->met = calloc(MEMO_MET_BITS / 64, sizeof *m->met))) die_nomem();
  /* both bits in one word: one cache line read */
  uint64_t *word = &m->met[(size_t)hash1 & (MEMO_MET_BITS / 64 - 1)];
  uint64_t bits = 1ull << (hash2 & 63) | 1ull << (hash2 >> 6 & 63);
  int met = (*word & bits) == bits;
  *word |= bits;
  return met;
}

void memo_hold_slow(memo *m, memo_bt *b) {
  if (m->nheld == m->held_cap) {
    size_t cap = m->held_cap ? m->held_cap * 2 : 1024;
    uint32_t *held = realloc(m->held, cap * sizeof *held);
    if (!held) die_nomem();
    m->held = held;
    m->held_cap = cap;
  }
  m->held[m->nheld++] = (uint32_t)(b - m->table);
}

/* Hands over the held hits of the records whose pairs the coming sweep
 * may remove (every record's when all): a pair whose score is above the
 * count the sweep reaches stays whatever its score, so its held hits can
 * wait, and the others' decisions read scores only. */
static void release(memo *m, int all) {
  if (m->nheld == 0) return; /* a freed memo too: no hh */
  heavy_hitters *hh = m->hh;
  int64_t next = hh->sweeps + 1;
  size_t kept = 0;
  for (size_t k = 0; k < m->nheld; k++) {
    memo_bt *b = &m->table[m->held[k]];
    if (!all && b->safe_until > next) {
      m->held[kept++] = m->held[k];
      continue;
    }
    const memo_caller *c = memo_callers(m, b);
    for (uint32_t j = 0; j < b->ncallers; j++) hh_bump(hh, (uint16_t)c[j].counter, b->pending);
    b->pending = 0;
  }
  m->nheld = kept;
}

void memo_release_hits(void *ctx) { release(ctx, 0); }

void memo_flush(memo *m, const memo_sink *sink) {
  release(m, 1);
  int64_t *entry_count = *sink->entry_count, *total_count = *sink->total_count;
  for (size_t i = 0; i < m->cap; i++) {
    memo_bt *b = &m->table[i];
    if (b->allocator == MEMO_FREE || !b->samples) continue;
    const memo_caller *c = memo_callers(m, b);
    entry_count[b->allocpt] += b->samples;
    for (uint32_t j = 0; j < b->ncallers; j++) total_count[c[j].func] += b->samples;
    b->samples = 0;
  }
}

void memo_free(memo *m) {
  if (m->hh && m->hh->ctx == m) {
    m->hh->before_sweep = NULL;
    m->hh->ctx = NULL;
  }
  free(m->table);
  free(m->pool);
  free(m->held);
  free(m->met);
  memset(m, 0, sizeof *m);
}

void memo_window_end(memo *m, const memo_sink *sink) {
  if ((m->window - m->window_misses) * 4 < m->window) {
    memo_flush(m, sink);
    memo_free(m); /* on = 0 */
  }
  m->window = m->window_misses = 0;
}
