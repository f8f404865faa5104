/* memtrace hotspots' memo of distinct backtraces: the parts off the hot
 * path (hotspots_memo.h says what the memo does). */
#include "hotspots_memo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die_nomem(void) {
  fputs("memtrace hotspots: out of memory\n", stderr);
  exit(1);
}

void memo_init(memo *m, heavy_hitters *hh) {
  memset(m, 0, sizeof *m);
  m->on = 1;
  m->hh = hh;
  hh->before_sweep = memo_release_hits;
  hh->ctx = m;
}

static void memo_put_slot(memo_slot *slots, size_t cap, uint64_t hash1, size_t at) {
  size_t i = (size_t)(hash1 >> 32) & (cap - 1);
  while (slots[i].at) i = (i + 1) & (cap - 1);
  slots[i] = (memo_slot){(uint32_t)hash1, (uint32_t)at + 1};
}

memo_caller *memo_open(memo *m, size_t n) {
  size_t need = m->nwords + MEMO_HEADER + n;
  if (need > m->pool_cap) {
    size_t cap = m->pool_cap ? m->pool_cap : 256;
    while (cap < need) cap *= 2;
    memo_word *pool = realloc(m->pool, cap * sizeof *pool);
    if (!pool) die_nomem();
    m->pool = pool;
    m->pool_cap = cap;
  }
  return &m->pool[m->nwords + MEMO_HEADER].caller;
}

int memo_add(memo *m, uint64_t hash1, uint64_t hash2, uint32_t ncallers, uint32_t allocpt,
             uint32_t allocator, int64_t samples, int64_t epoch) {
  if (m->nbts >= MEMO_MAX_BTS || m->nwords > MEMO_MAX_WORDS) return 0;
  if ((m->nbts + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 4096;
    memo_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) die_nomem();
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].at)
        memo_put_slot(slots, cap, memo_rec(m, m->slots[i].at - 1)->hash1, m->slots[i].at - 1);
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
  }
  *memo_rec(m, m->nwords) =
      (memo_bt){hash1, hash2, samples, epoch, 0, allocpt, allocator, ncallers, 0};
  memo_put_slot(m->slots, m->cap, hash1, m->nwords);
  m->nwords += MEMO_HEADER + ncallers;
  m->nbts++;
  return 1;
}

void memo_hold_slow(memo *m, memo_bt *b) {
  if (m->nheld == m->held_cap) {
    size_t cap = m->held_cap ? m->held_cap * 2 : 1024;
    uint32_t *held = realloc(m->held, cap * sizeof *held);
    if (!held) die_nomem();
    m->held = held;
    m->held_cap = cap;
  }
  m->held[m->nheld++] = (uint32_t)((memo_word *)b - m->pool);
}

void memo_release_hits(void *ctx) {
  memo *m = ctx;
  heavy_hitters *hh = m->hh;
  for (size_t k = 0; k < m->nheld; k++) {
    memo_bt *b = memo_rec(m, m->held[k]);
    const memo_caller *c = memo_callers(b);
    for (uint32_t j = 0; j < b->ncallers; j++) hh_bump(hh, (uint16_t)c[j].counter, b->pending);
    b->pending = 0;
  }
  m->nheld = 0;
}

void memo_flush(memo *m, const memo_sink *sink) {
  if (m->nheld) memo_release_hits(m);
  int64_t *entry_count = *sink->entry_count, *total_count = *sink->total_count;
  for (size_t at = 0; at < m->nwords;) {
    memo_bt *b = memo_rec(m, at);
    const memo_caller *c = memo_callers(b);
    if (b->samples) {
      entry_count[b->allocpt] += b->samples;
      for (uint32_t j = 0; j < b->ncallers; j++) total_count[c[j].func] += b->samples;
      b->samples = 0;
    }
    at += MEMO_HEADER + b->ncallers;
  }
}

void memo_free(memo *m) {
  if (m->hh && m->hh->ctx == m) {
    m->hh->before_sweep = NULL;
    m->hh->ctx = NULL;
  }
  free(m->pool);
  free(m->slots);
  free(m->held);
  memset(m, 0, sizeof *m);
}

void memo_window_end(memo *m, const memo_sink *sink) {
  if (m->window_hits * 4 < m->window) {
    memo_flush(m, sink);
    memo_free(m); /* on = 0 */
  }
  m->window = m->window_hits = 0;
}
