/* The tables behind mt_analysis (include/memtrace/analysis.h). Objects are
 * stored column by column (19 bytes each, plus rare side entries), each
 * naming its backtrace by id. Backtraces are interned while loading (a hash
 * of the code-id sequence -> id), so each distinct one is stored once, in a
 * delta log in first-seen order: memory and the stack tree's cost follow
 * distinct backtraces, not objects. The stack tree (a parent-pointer tree
 * whose ids grow from the root, so a parent's id is always smaller than its
 * children's) is built from the log on first use (stacks.c). */
#ifndef MT_ANALYSIS_INTERNAL_H
#define MT_ANALYSIS_INTERNAL_H

#include <pthread.h>

#include "memtrace/analysis.h"
#include "tables.h"

#define MT__ENVELOPE_BINS 1024
/* Every this many distinct backtraces, the backtrace log holds a full
 * record: where a replay may start. */
#define MT__LOG_CHECKPOINT 64
#define MT__NO_SITE UINT32_MAX
/* Distinct backtraces whose codes total at most this are also kept
 * expanded (bt_flat), for direct access. */
#define MT__FLAT_MAX (1u << 22)
/* Interning stops past this many distinct backtraces if most objects
 * bring a new one. */
#define MT__INTERN_TRIAL (1u << 18)
#define MT__HT_CACHE 4096 /* object weights precomputed for lengths below */

/* source column: low 2 bits the source; flags above */
#define MT__OBJ_PROMOTED 0x04
#define MT__OBJ_BIG_LENGTH 0x08   /* length in the side table */
#define MT__OBJ_BIG_SAMPLES 0x10  /* nsamples in the side table */

typedef struct mt__bin {
  double min, max, end;
  int touched;
} mt__bin;

struct mt_analysis {
  int status;
  char err[768];
  char warn[512];
  int has_warn;

  mt_trace_info info;
  mt__strtab strings; /* info strings, function names and files */
  uint64_t duration;
  double word_bytes;
  double log1m_rate; /* log(1 - rate), for P(sampled) */
  double ht_w[MT__HT_CACHE], ht_v[MT__HT_CACHE]; /* 1/P and (1-P)/P^2 */

  /* objects */
  size_t nobj, obj_cap;
  /* times since the start in units of 2^time_shift us (0 until a trace
   * runs past 71 minutes); free time MT__T_NEVER if never collected */
  uint32_t *alloc_t, *free_t;
  unsigned time_shift;
  uint16_t *nsamples; /* above 65535: in the side table */
  uint32_t *length;
  uint8_t *source;
  uint32_t *bt; /* backtrace id of each object */

  /* Distinct backtraces, ids in first-seen order (an object's backtrace id
   * is at most one more than the largest before it). */
  size_t nbt, bt_cap;
  int bt_distinct; /* 1: distinct ids are distinct backtraces (see load.c) */
  uint32_t *bt_site;  /* code id of the allocation site, or MT__NO_SITE */
  uint32_t *bt_stack; /* stack ids: NULL until stacks are materialized */
  /* Their codes: per backtrace, varint(prefix shared with the previous
   * backtrace) varint(count) and that many varint code ids; a full record
   * every MT__LOG_CHECKPOINT backtraces. */
  uint8_t *log;
  size_t log_len, log_cap;
  uint64_t *checkpoints; /* log offset of every MT__LOG_CHECKPOINT-th one */
  size_t ncheckpoints, checkpoints_cap;
  /* Expanded when small (MT__FLAT_MAX): codes of backtrace b are
   * bt_flat[bt_off[b] .. bt_off[b + 1]); else NULL. */
  uint32_t *bt_flat, *bt_off;
  size_t bt_codes_total;
  pthread_mutex_t stacks_lock;
  int stacks_built; /* 1 when built; -1 when building ran out of memory */
  mt__u64map side;    /* (object << 2 | kind) -> index in side_vals */
  uint64_t *side_vals;
  size_t nside, side_cap;

  /* stacks: 0 is the root (empty stack) */
  size_t nstacks, st_cap;
  uint32_t *st_parent, *st_code, *st_depth;
  mt__u64map st_index; /* parent << 32 | code -> stack */

  /* codes and their frames */
  size_t ncodes, code_cap;
  uint64_t *code_val;
  int8_t *code_described; /* during loading: 1 if located, 0 if not, -1 unknown */
  uint32_t code_cache[1u << 16]; /* recent code value -> id + 1, by hash */
  uint32_t *code_first, *code_n; /* into frames */
  mt__u64map code_index;         /* code value -> code id */
  mt_frame *frames;
  size_t nframes, frames_cap;

  /* functions */
  size_t nfn, fn_cap;
  const char **fn_name, **fn_file;
  mt__u64map fn_index; /* interned "name\0file" pointer -> function */

  /* live heap */
  uint64_t peak_time, peak_samples;
  mt__bin bins[MT__ENVELOPE_BINS];
  uint64_t bin_width; /* us */
  size_t nbins_used;
};

enum { MT__SIDE_LENGTH = 0, MT__SIDE_SAMPLES = 1, MT__SIDE_PROMOTE = 2 };

uint64_t mt__side_get(const mt_analysis *a, size_t obj, unsigned kind);

#define MT__T_NEVER UINT32_MAX
/* Object times in microseconds (MT_NEVER for a free time never reached). */
static inline uint64_t mt__obj_alloc_time(const mt_analysis *a, size_t i) {
  return (uint64_t)a->alloc_t[i] << a->time_shift;
}
static inline uint64_t mt__obj_free_time(const mt_analysis *a, size_t i) {
  return a->free_t[i] == MT__T_NEVER ? MT_NEVER : (uint64_t)a->free_t[i] << a->time_shift;
}

static inline uint64_t mt__obj_length(const mt_analysis *a, size_t i) {
  return (a->source[i] & MT__OBJ_BIG_LENGTH) ? mt__side_get(a, i, MT__SIDE_LENGTH)
                                              : a->length[i];
}
static inline uint64_t mt__obj_samples(const mt_analysis *a, size_t i) {
  return (a->source[i] & MT__OBJ_BIG_SAMPLES) ? mt__side_get(a, i, MT__SIDE_SAMPLES)
                                               : a->nsamples[i];
}

/* Builds the stack tree and the objects' stack ids if not done yet (once,
 * under a lock). Returns 0, or -1 when out of memory (then every stack
 * query answers as for an empty trace). */
int mt__ensure_stacks(const mt_analysis *a);

/* Calls fn for every object i with mask[i] (mask NULL: all), in order, with
 * its backtrace (code ids, outermost first); stops at fn's first non-zero
 * result and returns it (-1 when out of memory). */
int mt__log_replay(const mt_analysis *a, const uint8_t *mask,
                   int (*fn)(void *ctx, size_t i, const uint32_t *codes, size_t n), void *ctx);

/* After loading: fills bt_flat and bt_off when the distinct backtraces are
 * few (MT__FLAT_MAX). Returns 0, or -1 when out of memory. */
int mt__expand_backtraces(mt_analysis *a);

/* Backtrace b's codes into out[0..cap); returns its length. */
size_t mt__bt_codes(const mt_analysis *a, uint32_t b, uint32_t *out, size_t cap);

/* Adds object i to a tally. */
void mt__tally_object(const mt_analysis *a, size_t i, mt_tally *t);

#endif
