/* memtrace hotspots: the Misra-Gries heavy-hitters summary over
 * (caller, allocator) pairs, as memtrace's bin/hotspots.ml keeps it.
 *
 * memtrace's summary (a Hashtbl.Make table created for k = 10000) keeps at
 * most k counters, each with hits and misses. Adding a pair it has counts a
 * hit; adding another one when it is full adds nothing but sweeps the
 * table: every counter gets a miss, and those left with hits <= misses go.
 * Rather than giving every counter its misses, each keeps
 *   score = hits + (sweeps done before it came)
 * and goes at the sweep that brings `sweeps` up to its score, so a sweep
 * scans one compact array. Counters are found through a sparse
 * open-addressing table of 16-bit counter numbers (linear probing), rebuilt
 * at each sweep; each counter remembers when it came, which is all OCaml's
 * iteration order needs.
 *
 * Hits on counters commute with each other and with insertions: only a
 * sweep reads the scores. So a caller may hold hits back (hh_bump them
 * later) as long as it hands over, before a sweep, those whose scores the
 * sweep's decisions need: the before_sweep hook is called first thing in
 * every sweep for that.
 */
#ifndef MT_CLI_HOTSPOTS_HH_H
#define MT_CLI_HOTSPOTS_HH_H

#include <stddef.h>
#include <stdint.h>

/* 2^17 slots: at most 8% of them in use, for short probes (the summary
 * inserts about as often as it hits on ordinary traces); fewer slots make
 * probes longer, more do not make them shorter (bench/tools.sh). */
enum { HH_K = 10000, HH_SLOT_BITS = 17, HH_SLOTS = 1 << HH_SLOT_BITS };
#define HH_EMPTY UINT16_MAX /* no counter; counters are numbered below k */
#define HH_MASK ((size_t)HH_SLOTS - 1)
#define HH_FREE INT64_MAX   /* the score of a free counter */
_Static_assert(HH_K < HH_EMPTY, "counters fit 16 bits");

/* What a hit reads and writes, together: one cache line per hit. */
typedef struct hh_counter {
  int64_t score; /* HH_FREE when the counter is free */
  uint64_t key;  /* caller << 32 | allocator; kept when freed */
} hh_counter;

typedef struct heavy_hitters {
  uint16_t *slots; /* the counter whose key hashes there, or HH_EMPTY */
  /* per counter */
  hh_counter *ctr;
  int64_t *base;  /* sweeps before it came: hits = score - base */
  uint64_t *seq;  /* insertion number */
  uint16_t *free_counters;
  size_t nfree, nused; /* counters 0 .. nused-1 have been used */
  int64_t sweeps;
  uint64_t adds;
  void (*before_sweep)(void *ctx); /* hands held-back hits over; or NULL */
  void *ctx;
} heavy_hitters;

/* Returns 0, or -1 when out of memory. */
int hh_init(heavy_hitters *hh);
void hh_free(heavy_hitters *hh);
/* The miss of a full summary: calls before_sweep, then sweeps. */
void hh_sweep(heavy_hitters *hh);
/* Inserts key at the empty slot i (the summary is not full); returns its
 * counter. */
uint16_t hh_insert(heavy_hitters *hh, uint64_t key, size_t i);

static inline size_t hh_home(uint64_t key) {
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - HH_SLOT_BITS));
}

static inline uint64_t hh_key(uint32_t caller, uint32_t allocator) {
  return (uint64_t)caller << 32 | allocator;
}

/* Adds the pair; returns its counter, or HH_EMPTY when it has none (the
 * addition swept the summary). */
static inline uint16_t hh_add(heavy_hitters *hh, uint32_t caller, uint32_t allocator) {
  uint64_t key = hh_key(caller, allocator);
  const uint16_t *s = hh->slots;
  size_t i = hh_home(key);
  for (; s[i] != HH_EMPTY; i = (i + 1) & HH_MASK) {
    if (hh->ctr[s[i]].key == key) {
      hh->ctr[s[i]].score++;
      return s[i];
    }
  }
  if (hh->nused - hh->nfree >= HH_K) {
    hh_sweep(hh);
    return HH_EMPTY;
  }
  return hh_insert(hh, key, i);
}

/* hh_add, given the counter the pair had last time (or HH_EMPTY): when the
 * counter still holds the pair, no probe is needed. */
static inline uint16_t hh_add_at(heavy_hitters *hh, uint32_t caller, uint32_t allocator,
                                 uint16_t c) {
  if (c != HH_EMPTY) {
    hh_counter *k = &hh->ctr[c];
    if (k->key == hh_key(caller, allocator) && k->score != HH_FREE) {
      k->score++;
      return c;
    }
  }
  return hh_add(hh, caller, allocator);
}

/* n held-back hits of the pair counter c holds. */
static inline void hh_bump(heavy_hitters *hh, uint16_t c, int64_t n) { hh->ctr[c].score += n; }

#endif
