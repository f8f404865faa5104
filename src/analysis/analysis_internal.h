/* The tables behind mt_analysis (include/memtrace/analysis.h). Objects are
 * stored column by column (29 bytes each, plus rare side entries), stacks as
 * a parent-pointer tree whose ids grow from the root, so a parent's id is
 * always smaller than its children's. */
#ifndef MT_ANALYSIS_INTERNAL_H
#define MT_ANALYSIS_INTERNAL_H

#include "memtrace/analysis.h"
#include "tables.h"

#define MT__ENVELOPE_BINS 1024
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
  uint64_t *alloc_t, *free_t;
  uint32_t *stack, *nsamples, *length;
  uint8_t *source;
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

static inline uint64_t mt__obj_length(const mt_analysis *a, size_t i) {
  return (a->source[i] & MT__OBJ_BIG_LENGTH) ? mt__side_get(a, i, MT__SIDE_LENGTH)
                                              : a->length[i];
}
static inline uint64_t mt__obj_samples(const mt_analysis *a, size_t i) {
  return (a->source[i] & MT__OBJ_BIG_SAMPLES) ? mt__side_get(a, i, MT__SIDE_SAMPLES)
                                               : a->nsamples[i];
}

/* Adds object i to a tally. */
void mt__tally_object(const mt_analysis *a, size_t i, mt_tally *t);

#endif
