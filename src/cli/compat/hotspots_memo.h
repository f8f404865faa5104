/* memtrace hotspots: the memo of distinct backtraces.
 *
 * A trace's backtraces mostly recur: once a backtrace has been analysed, its
 * allocation point's loc entry, its allocator and the list of its distinct
 * caller functions (in the order the analysis meets them, innermost first)
 * are fixed, since each code's description is. So a backtrace's result is
 * kept once it recurs (it is analysed in full on its first two appearances:
 * memo_met); a recurrence then costs the hash of the codes after the common
 * prefix with the previous backtrace (prefix hashes are kept per depth), one
 * table probe, and a heavy-hitter addition per caller, in the same order as
 * the full analysis makes them (the summary depends on that order). Each
 * caller remembers the counter its pair had, which spares the probe while
 * the pair keeps it. The samples counted for the allocation point and for
 * the callers are summed per backtrace and handed out at the end
 * (memo_flush).
 *
 * Once a recurrence has found every one of its pairs in the summary, they
 * stay there as long as the sweep count stays below the lowest of their
 * scores then (`safe_until`): only a sweep removes a counter, and only one
 * that brings the count up to its score, which never falls. Until then each
 * further recurrence only adds hits, which commute with whatever else the
 * summary does before the next sweep that may remove one of its pairs
 * (hotspots_hh.h): the record counts them (`pending`) and hands them over
 * in one go just before that sweep (memo_release_hits, the summary's
 * before_sweep hook) or at the end.
 *
 * Backtraces are told apart by two 64-bit hashes of their codes, taken
 * from one 128-bit product per code (memo_step), a chain in which a
 * backtrace and its prefixes differ as any two backtraces do: the codes
 * themselves are not kept, and a collision, which would merge two
 * backtraces' counts, needs both a collision of the 64-bit chain and one
 * of the sums beside it, a chance of about n^2 / 2^129 among n distinct
 * backtraces if the products behave as random.
 *
 * Traces whose backtraces rarely recur turn the memo off (memo_check). */
#ifndef MT_CLI_HOTSPOTS_MEMO_H
#define MT_CLI_HOTSPOTS_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "hotspots_hh.h"

/* A memoized backtrace: one cache line in the table itself, so that a
 * recurrence reads few lines (at the table's load, 3/8 to 3/4, a probe
 * reads about 1.3 to 2.5 slots on average, each slot the line after the
 * last); its callers are in the pool. The table takes huge pages once it is large
 * (mt__table_alloc): probes land anywhere in it, a TLB miss each with
 * small pages. */
typedef struct memo_bt {
  uint64_t hash1, hash2;
  int64_t samples;    /* counted since the last flush */
  int64_t safe_until; /* its pairs are all there while hh sweeps < this */
  int64_t pending;    /* recurrences whose hits are held back */
  uint32_t allocpt;   /* the allocation point's loc entry */
  uint32_t allocator; /* MEMO_FREE: an empty slot */
  uint32_t ncallers;
  uint32_t callers; /* its callers' position in the pool */
  uint32_t pad[2];
} memo_bt;
_Static_assert(sizeof(memo_bt) == 64, "a record is a cache line");
#define MEMO_FREE UINT32_MAX

typedef struct memo_caller {
  uint32_t func;
  uint32_t counter; /* the pair's heavy-hitter counter last time, or HH_EMPTY */
} memo_caller;

enum {
  MEMO_WINDOW = 1 << 14,    /* allocations between looks at the hit rate */
  MEMO_MAX_BTS = 1 << 20,   /* no new records beyond these */
  MEMO_MAX_CALLERS = 1u << 26, /* < 2^32 */
  MEMO_MET_BITS = 1 << 21,  /* the filter of backtraces met (memo_met) */
};

typedef struct memo {
  int on;
  heavy_hitters *hh; /* the summary it holds hits back from */
  memo_bt *table;    /* cap records, cache-line aligned */
  size_t cap, nbts;
  memo_caller *pool; /* the records' callers */
  size_t ncallers, pool_cap;
  uint32_t *held; /* slots of the records with pending hits */
  size_t nheld, held_cap;
  /* allocations in the current window, and those not recurrences it knew
   * (counted rather than the hits: a hit then costs one sum) */
  uint64_t window, window_misses;
  uint64_t *met; /* MEMO_MET_BITS bits, or NULL before the first miss */
} memo;

/* Where the memo hands the samples it summed (arrays that may move). */
typedef struct memo_sink {
  int64_t **entry_count; /* per loc entry: samples allocated there */
  int64_t **total_count; /* per function: samples it is a caller of */
} memo_sink;

/* The hashes of a backtrace's prefixes: kept after each code, so that a
 * backtrace sharing a prefix with the previous one hashes only the rest. */
typedef struct memo_prefix {
  uint64_t h1, h2;
} memo_prefix;

/* The hashes of a backtrace's first i+1 codes from those of its first i,
 * from one 64 x 64 -> 128-bit product: h1 chains the low halves (a
 * bijective mix of the code into h1, rotated so that its best mixed, high
 * bits come low), h2 sums the high halves. Two backtraces share h1 only by
 * a 64-bit collision of the chain, and then h2 too only if the high halves
 * along the way happen to sum alike. */
static inline void memo_step(memo_prefix *p, uint64_t code) {
  unsigned __int128 x = (unsigned __int128)(p->h1 ^ code) * 0x9e3779b97f4a7c15ull;
  uint64_t lo = (uint64_t)x;
  p->h1 = lo << 29 | lo >> 35;
  p->h2 += (uint64_t)(x >> 64);
}

/* Hashes bt[0..n) into *hash1 and *hash2, given ph[0..k) (the hashes of
 * the first k codes' prefixes); fills ph[k..n), and copies bt[k..n) to
 * out[0..n-k) on the way (out may be bt + k). */
static inline void memo_hash(const uint64_t *bt, size_t k, size_t n, memo_prefix *ph,
                             uint64_t *out, uint64_t *hash1, uint64_t *hash2) {
  memo_prefix p = k ? ph[k - 1] : (memo_prefix){0x2545f4914f6cdd1dull, 0x6a09e667f3bcc909ull};
  for (size_t i = k; i < n; i++) {
    uint64_t code = bt[i];
    out[i - k] = code;
    memo_step(&p, code);
    ph[i] = p;
  }
  *hash1 = p.h1;
  *hash2 = p.h2;
}

static inline memo_caller *memo_callers(const memo *m, const memo_bt *b) {
  return m->pool + b->callers;
}

static inline memo_bt *memo_find(const memo *m, uint64_t hash1, uint64_t hash2) {
  if (m->cap == 0) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)(hash1 >> 40) & mask;; i = (i + 1) & mask) {
    memo_bt *b = &m->table[i];
    if (b->allocator == MEMO_FREE) return NULL;
    if (b->hash1 == hash1 && b->hash2 == hash2) return b;
  }
}

/* Starts fetching the cache line where a probe for hash1 begins. */
static inline void memo_prefetch(const memo *m, uint64_t hash1) {
  if (m->cap) __builtin_prefetch(&m->table[(size_t)(hash1 >> 40) & (m->cap - 1)]);
}

/* Whether a backtrace the memo lacks was met before; notes that it has
 * been now. A backtrace is recorded when it recurs, not when first met: a
 * program's distinct backtraces, the deep ones especially, are mostly met
 * once, and their records would take memory for nothing. Each backtrace
 * sets two bits of one word of a fixed filter (the word from one hash, the
 * bits from the other); a filter filling up errs only toward "met",
 * recording at first sight. */
int memo_met(memo *m, uint64_t hash1, uint64_t hash2);
/* Starts fetching the word of the filter memo_met reads for hash1 (a
 * probe that misses is followed by the full analysis, long enough to hide
 * the filter's cache miss when the question comes after it). */
static inline void memo_met_prefetch(const memo *m, uint64_t hash1) {
  if (m->met) __builtin_prefetch(&m->met[(size_t)hash1 & (MEMO_MET_BITS / 64 - 1)], 1);
}

/* Room for the callers of a record of up to n callers at the pool's end
 * (the record made by memo_add); returns it. */
memo_caller *memo_open(memo *m, size_t n);
/* Records the backtrace whose callers were written at memo_open's place.
 * Returns the record, or NULL when the memo is full. Hands held-back hits
 * over when the table grows (records move). */
memo_bt *memo_add(memo *m, uint64_t hash1, uint64_t hash2, uint32_t ncallers,
                  uint32_t allocpt, uint32_t allocator, int64_t samples, int64_t safe_until);
/* Notes n recurrences of b whose hits are held back (the summary's sweep
 * count is below b->safe_until). */
void memo_hold_slow(memo *m, memo_bt *b);
static inline void memo_hold(memo *m, memo_bt *b, size_t n) {
  if (b->pending == 0) memo_hold_slow(m, b);
  b->pending += (int64_t)n;
}
/* Starts an empty memo, on, holding hits back from hh: becomes hh's
 * before_sweep hook. */
void memo_init(memo *m, heavy_hitters *hh);
/* Hands the held-back hits that the coming sweep needs to the summary (the
 * before_sweep hook; ctx: the memo). */
void memo_release_hits(void *ctx);
/* Hands the held-back hits and the summed samples over. */
void memo_flush(memo *m, const memo_sink *sink);
void memo_free(memo *m);
/* At the end of each window, turns the memo off for good (after a flush)
 * when fewer than a quarter of the window's allocations were recurrences
 * it knew: it would then cost more than it saves. */
void memo_window_end(memo *m, const memo_sink *sink);
/* Counts `allocations` more allocations, `hits` of them recurrences it
 * knew; may end the window (and free the memo). */
static inline void memo_check(memo *m, const memo_sink *sink, size_t allocations,
                              size_t hits) {
  m->window_misses += allocations - hits;
  m->window += allocations;
  if (m->window >= MEMO_WINDOW) memo_window_end(m, sink);
}

#endif
