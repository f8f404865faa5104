/* memtrace hotspots: the memo of distinct backtraces.
 *
 * A trace's backtraces mostly recur: once a backtrace has been analysed, its
 * allocation point's loc entry, its allocator and the list of its distinct
 * caller functions (in the order the analysis meets them, innermost first)
 * are fixed, since each code's description is. So each distinct backtrace
 * is analysed once and its result kept; a recurrence then costs the hash of
 * the codes after the common prefix with the previous backtrace (prefix
 * hashes are kept per depth), one table probe, and a heavy-hitter addition
 * per caller, in the same order as the full analysis makes them (the
 * summary depends on that order). Each caller remembers the counter its
 * pair had, which spares the probe while the pair keeps it. The samples
 * counted for the allocation point and for the callers are summed per
 * backtrace and handed out at the end (memo_flush).
 *
 * Once a recurrence has found every one of its pairs in the summary, they
 * stay there until the next sweep (only sweeps remove counters), so until
 * then each further recurrence only adds hits, which commute with whatever
 * else the summary does before that sweep (hotspots_hh.h): the record
 * counts them (`pending`) and hands them over in one go just before the
 * sweep (memo_release_hits, the summary's before_sweep hook) or at the end.
 * `epoch` is the sweep count at which the record last found all its pairs.
 *
 * Backtraces are told apart by two independent 64-bit hashes of their
 * codes (and their lengths): the codes themselves are not kept, and a
 * collision, which would merge two backtraces' counts, has a chance of
 * about n^2 / 2^129 among n distinct backtraces.
 *
 * Traces whose backtraces rarely recur turn the memo off (memo_check). */
#ifndef MT_CLI_HOTSPOTS_MEMO_H
#define MT_CLI_HOTSPOTS_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "hotspots_hh.h"

/* A memoized backtrace is one record of the pool, its callers right after
 * its header, so that a hit reads one run of memory. */
typedef struct memo_bt {
  uint64_t hash1, hash2;
  int64_t samples;  /* counted since the last flush */
  int64_t epoch;    /* hh sweeps when all its pairs were last found; -1 */
  int64_t pending;  /* recurrences whose hits are held back */
  uint32_t allocpt; /* the allocation point's loc entry */
  uint32_t allocator;
  uint32_t ncallers, pad;
} memo_bt;

typedef struct memo_caller {
  uint32_t func;
  uint32_t counter; /* the pair's heavy-hitter counter last time, or HH_EMPTY */
} memo_caller;

/* the pool's unit */
typedef union memo_word {
  memo_caller caller;
  uint64_t u;
} memo_word;
enum { MEMO_HEADER = sizeof(memo_bt) / sizeof(memo_word) };
_Static_assert(sizeof(memo_bt) % sizeof(memo_word) == 0, "headers are whole words");

/* 8 bytes, so that the table stays small enough for the caches: the
 * record's position and 32 other bits of hash1 than those that place it. */
typedef struct memo_slot {
  uint32_t tag; /* hash1's low 32 bits */
  uint32_t at;  /* the record's position in the pool + 1; 0: empty */
} memo_slot;

enum {
  MEMO_WINDOW = 1 << 14,    /* allocations between looks at the hit rate */
  MEMO_MAX_BTS = 1 << 20,   /* no new records beyond these */
  MEMO_MAX_WORDS = 1 << 25, /* < 2^32: positions fit slots */
};

typedef struct memo {
  int on;
  heavy_hitters *hh; /* the summary it holds hits back from */
  memo_word *pool;
  size_t nwords, pool_cap, nbts;
  memo_slot *slots;
  size_t cap;
  uint32_t *held; /* positions of the records with pending hits */
  size_t nheld, held_cap;
  uint64_t window, window_hits; /* allocations in the current window, hits */
} memo;

/* Where the memo hands the samples it summed (arrays that may move). */
typedef struct memo_sink {
  int64_t **entry_count; /* per loc entry: samples allocated there */
  int64_t **total_count; /* per function: samples it is a caller of */
} memo_sink;

#define MEMO_SEED1 0x2545f4914f6cdd1dull
#define MEMO_SEED2 0x6a09e667f3bcc909ull

/* The hashes of a backtrace's first i+1 codes from those of its first i:
 * two unrelated bijective mixes. */
static inline uint64_t memo_step1(uint64_t h, uint64_t code) {
  h = (h ^ code) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}
static inline uint64_t memo_step2(uint64_t h, uint64_t code) {
  h = (h + code) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

static inline memo_bt *memo_rec(const memo *m, size_t at) { return (memo_bt *)(m->pool + at); }
static inline memo_caller *memo_callers(memo_bt *b) { return (memo_caller *)(b + 1); }

static inline memo_bt *memo_find(const memo *m, uint64_t hash1, uint64_t hash2) {
  if (m->cap == 0) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)(hash1 >> 32) & mask; m->slots[i].at; i = (i + 1) & mask) {
    if (m->slots[i].tag != (uint32_t)hash1) continue;
    memo_bt *b = memo_rec(m, m->slots[i].at - 1);
    if (b->hash1 == hash1 && b->hash2 == hash2) return b;
  }
  return NULL;
}

/* Room for a record of up to n callers at the pool's end (its header
 * written by memo_add); returns its callers. */
memo_caller *memo_open(memo *m, size_t n);
/* Records the backtrace whose callers were written at memo_open's place.
 * Returns 0 when the memo is full. */
int memo_add(memo *m, uint64_t hash1, uint64_t hash2, uint32_t ncallers, uint32_t allocpt,
             uint32_t allocator, int64_t samples, int64_t epoch);
/* Notes a recurrence of b whose hits are held back (b->epoch is the
 * summary's sweep count). */
void memo_hold_slow(memo *m, memo_bt *b);
static inline void memo_hold(memo *m, memo_bt *b) {
  if (b->pending++ == 0) memo_hold_slow(m, b);
}
/* Starts an empty memo, on, holding hits back from hh: becomes hh's
 * before_sweep hook. */
void memo_init(memo *m, heavy_hitters *hh);
/* Hands the held-back hits to the summary (the before_sweep hook; ctx: the
 * memo). */
void memo_release_hits(void *ctx);
/* Hands the held-back hits and the summed samples over. */
void memo_flush(memo *m, const memo_sink *sink);
void memo_free(memo *m);
/* At the end of each window, turns the memo off for good (after a flush)
 * when fewer than a quarter of the window's allocations were recurrences
 * it knew: it would then cost more than it saves. */
void memo_window_end(memo *m, const memo_sink *sink);
static inline void memo_check(memo *m, const memo_sink *sink, int hit) {
  m->window_hits += (uint64_t)hit;
  if (++m->window >= MEMO_WINDOW) memo_window_end(m, sink);
}

#endif
