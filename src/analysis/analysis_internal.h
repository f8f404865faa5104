/* The tables behind mt_analysis (include/memtrace/analysis.h). Objects are
 * stored column by column (19 bytes each, plus rare side entries), each
 * naming its backtrace by id. Backtraces are interned while loading (a hash
 * of the code-id sequence -> id), so each distinct one is stored once, in a
 * delta log in first-seen order (backtraces.c): memory and the cost of
 * every per-stack answer follow distinct backtraces, not objects. */
#ifndef MT_ANALYSIS_INTERNAL_H
#define MT_ANALYSIS_INTERNAL_H

#include <math.h>

#include "base/containers.h"
#include "memtrace/analysis.h"
#include "memtrace/profile.h"
#include "memtrace/stats.h"

/* The live heap's envelope: min, max and end of each of at most this many
 * equal bins over the trace (a timeline's bins take the least and most of
 * the envelope bins they overlap). */
#define MT__ENVELOPE_BINS 4096
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
#define MT__OBJ_MAPPING 0x20      /* an anonymous mapping (MT_MAPPING_FILENAME) */

typedef struct mt__bin {
  double min, max, end;
  int touched;
} mt__bin;

/* The objects of one allocation site: their tally, and when the first and
 * the last were allocated (us). */
typedef struct mt__site_sum {
  mt_tally tally;
  uint64_t oldest, newest;
} mt__site_sum;

/* The side table (side.c): the values that do not fit an object's columns
 * (lengths past 32 bits, samples past 16) and promotion times, by object
 * key (its index, or its id while a live-only load moves objects). Per
 * kind, entries that come in increasing key order (objects are allocated
 * and promoted in order) are appended to a run and found by bisection, so
 * that a trace's many promotions cost no hashing and no cache miss; any
 * other entry goes to a map. */
enum { MT__SIDE_LENGTH = 0, MT__SIDE_SAMPLES = 1, MT__SIDE_PROMOTE = 2, MT__SIDE_KINDS = 3 };

typedef struct mt__side {
  struct mt__side_run {
    uint64_t *key, *val;
    size_t n, cap;
  } run[MT__SIDE_KINDS];
  mt__u64map late; /* key << 2 | kind -> index in late_val */
  uint64_t *late_val;
  size_t nlate, late_cap;
} mt__side;

/* The entries held. */
size_t mt__side_count(const mt__side *s);
/* Frees every entry: s is empty and may be used again. */
void mt__side_free(mt__side *s);

struct mt_analysis {
  int status;
  char err[768];
  uint64_t err_off;       /* mt_analysis_error_offset */
  char warn[512];
  int has_warn;
  uint64_t truncated_off; /* mt_analysis_truncated */

  mt_trace_info info;
  mt__strtab strings; /* info strings, function names and files */
  uint64_t duration;
  double word_bytes;
  double log1m_rate; /* log(1 - rate), for P(sampled) */
  double ht_w[MT__HT_CACHE]; /* 1/P */
  /* 1/P and (1-P)/P^2 in a tally's fixed point (mt__fx_of) */
  uint64_t ht_wfx[MT__HT_CACHE][2], ht_vfx[MT__HT_CACHE][2];

  /* objects */
  size_t nobj, obj_cap;
  /* times since the start in units of 2^time_shift us (0 until a trace
   * runs past 71 minutes); free time MT__T_NEVER if never collected */
  uint32_t *alloc_t, *free_t;
  unsigned time_shift;
  uint16_t *nsamples; /* above 65535: in the side table */
  /* several traces read as one (mt_analysis_load_many): each object's
   * trace, and each trace's last event (us since the start); else NULL */
  uint16_t *trace_of;
  uint64_t *trace_end;
  size_t ntraces;
  uint32_t *length;
  uint8_t *source;
  uint32_t *bt; /* backtrace id of each object */

  /* Distinct backtraces, ids in first-seen order (an object's backtrace id
   * is at most one more than the largest before it). */
  size_t nbt, bt_cap;
  int bt_distinct; /* 1: distinct ids are distinct backtraces (see load.c) */
  uint32_t *bt_site;  /* code id of the allocation site, or MT__NO_SITE */
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
  /* the expansion so far (mt__expand_backtraces): backtraces expanded,
   * where the next one starts in the log, the arrays' room; dropped for
   * good once the codes pass MT__FLAT_MAX */
  size_t nbt_expanded, expand_pos, bt_off_cap, bt_flat_cap;
  int flat_dropped;
  uint64_t *bt_fp; /* mt_analysis_index_stacks: fingerprints, NULL until
                      complete (read atomically), of backtraces [0, bt_fp_n) */
  size_t bt_fp_n;
  /* mt__bt_all: each backtrace's tally of every object, once asked for
   * (read atomically); of objects [0, bt_all_nobj), bt_all_cap entries */
  mt_tally *bt_all;
  size_t bt_all_nobj, bt_all_cap;
  /* the first live series of every object a timeline made (timeline.c;
   * read atomically), kept for the next timeline on that grid */
  struct mt__live_cache *live_cache;
  mt__side side;
  const uint64_t *side_key; /* while a live-only load runs: each object's id,
                               the side table's key (objects move); else NULL */

  /* codes and their frames */
  size_t ncodes, code_cap;
  uint64_t *code_val;
  int8_t *code_described; /* during loading: 1 if located, 0 if not, -1 unknown */
  uint32_t code_cache[1u << 16]; /* recent code value -> id + 1, by hash */
  uint32_t *code_first, *code_n; /* into frames */
  size_t ncodes_resolved, code_meta_cap; /* codes [0, ncodes_resolved) have them */
  mt__u64map code_index;         /* code value -> code id */
  mt_frame *frames;
  size_t nframes, frames_cap;

  /* functions */
  size_t nfn, fn_cap;
  const char **fn_name, **fn_file;
  mt__u64map fn_index; /* interned "name\0file" pointer -> function */

  mt_tally all; /* every object, kept or not */
  int live_only; /* MT_KEEP_LIVE: only the objects never collected are kept */
  /* MT_KEEP_PROFILE once the backtraces proved nearly all distinct: no
   * object is kept (nobj is 0), only whether each of the reread_objects
   * was collected (bit i of gone_bits); mt_profile reads the first
   * reread_events events of the traces at reread_paths again (every event
   * when reread_to_end: the load read to the traces' end), their objects'
   * samples adding up to reread_samples. */
  int reread, reread_to_end;
  char **reread_paths;
  size_t nreread_paths;
  uint64_t *gone_bits;
  uint64_t reread_objects, reread_events, reread_samples;
  /* MT_KEEP_FOLDED: one object per backtrace, the tally of the objects that
   * passed fold_filter's conditions on objects; else NULL */
  mt_tally *fold_tally;
  mt_filter fold_filter;
  /* MT_KEEP_SITES: per allocation site, the objects that passed the
   * load's conditions (fold_filter), each added as it was allocated, as a whole load's
   * scan adds them, each site's code (or MT__NO_SITE) in fold_site_code;
   * and all of them. NULL otherwise. */
  mt__site_sum *fold_site;
  uint32_t *fold_site_code;
  size_t nfold_site;
  mt_tally fold_sum;
  /* some object came from a runtime heap; some is an anonymous mapping */
  int any_runtime, any_mapping;
  /* objects are in the order of their allocation times (the reader's
   * order, unless a trace's times go back) */
  int alloc_sorted;

  /* live heap */
  uint64_t peak_time, peak_samples;
  mt__bin bins[MT__ENVELOPE_BINS];
  uint64_t bin_width; /* us */
  size_t nbins_used;
};

/* Object i's value of a side kind (0 when it has none). */
uint64_t mt__side_get(const mt_analysis *a, size_t obj, unsigned kind);
/* Sets object i's value of a side kind. 0, or -1 (no memory). */
int mt__side_put(mt_analysis *a, size_t obj, unsigned kind, uint64_t v);

#define MT__T_NEVER UINT32_MAX

/* The unit objects' times are stored in (2^shift us) once time t (us since
 * the start) is stored, from a unit of 2^at_least: the least that keeps t
 * under MT__T_NEVER. */
static inline unsigned mt__time_shift(uint64_t t, unsigned at_least) {
  unsigned s = at_least;
  while ((t >> s) >= MT__T_NEVER) s++;
  return s;
}
/* Object times in microseconds (MT_NEVER for a free time never reached). */
static inline uint64_t mt__obj_alloc_time(const mt_analysis *a, size_t i) {
  return (uint64_t)a->alloc_t[i] << a->time_shift;
}
static inline uint64_t mt__obj_free_time(const mt_analysis *a, size_t i) {
  return a->free_t[i] == MT__T_NEVER ? MT_NEVER : (uint64_t)a->free_t[i] << a->time_shift;
}

/* When object i stops being live: its free time; never collected, the
 * end of its trace (the microsecond after its last event) when several
 * traces are read as one, a process holding nothing once it has exited
 * (MT_NEVER for the trace that ends last, and for one trace). */
static inline uint64_t mt__obj_gone_time(const mt_analysis *a, size_t i) {
  if (a->free_t[i] != MT__T_NEVER) return (uint64_t)a->free_t[i] << a->time_shift;
  if (!a->trace_of) return MT_NEVER;
  uint64_t gone = a->trace_end[a->trace_of[i]] + 1;
  return gone > a->duration ? MT_NEVER : gone;
}

static inline uint64_t mt__obj_length(const mt_analysis *a, size_t i) {
  return (a->source[i] & MT__OBJ_BIG_LENGTH) ? mt__side_get(a, i, MT__SIDE_LENGTH)
                                              : a->length[i];
}
static inline uint64_t mt__obj_samples(const mt_analysis *a, size_t i) {
  return (a->source[i] & MT__OBJ_BIG_SAMPLES) ? mt__side_get(a, i, MT__SIDE_SAMPLES)
                                               : a->nsamples[i];
}

/* After loading (and after each step of a load read in steps): fills
 * bt_flat and bt_off when the distinct backtraces are few (MT__FLAT_MAX).
 * Returns 0, or -1 when out of memory. */
int mt__expand_backtraces(mt_analysis *a);

/* Backtrace b's codes into out[0..cap); returns its length. */
size_t mt__bt_codes(const mt_analysis *a, uint32_t b, uint32_t *out, size_t cap);

/* x >= 0 in a tally's fixed point (units of 2^-32, low word first), cut
 * to whole units; saturated past 2^96. */
void mt__fx_of(double x, uint64_t out[2]);
/* Object i's terms of lengths past the weights' cache, into t. */
void mt__tally_big(const mt_analysis *a, uint64_t words, mt_tally *t);
/* Adds to t one object of w words (w < MT__HT_CACHE: its weights
 * precomputed) and `samples` samples. */
static inline void mt__tally_cached(const mt_analysis *a, uint64_t w, uint64_t samples,
                                    mt_tally *t) {
  t->samples += samples;
  t->objects++;
  mt_tally_fx_add(t->ht_fx, a->ht_wfx[w]);
  mt_tally_fx_add(t->var_fx, a->ht_vfx[w]);
  if (a->ht_w[w] > t->w_max) t->w_max = a->ht_w[w];
}
/* Adds to t one object of `length` words from `source` (MT_SOURCE_*) with
 * `samples` samples. */
static inline void mt__tally_one(const mt_analysis *a, uint64_t length, int source,
                                 uint64_t samples, mt_tally *t) {
  /* OCaml heap blocks are sampled over their header word too. */
  uint64_t w = length + (source != MT_SOURCE_EXTERNAL);
  if (__builtin_expect(w >= MT__HT_CACHE, 0)) {
    t->samples += samples;
    t->objects++;
    mt__tally_big(a, w, t);
    return;
  }
  mt__tally_cached(a, w, samples, t);
}
/* Adds object i to t: inline, as passes over millions of objects call it
 * for each. */
static inline void mt__tally_object(const mt_analysis *a, size_t i, mt_tally *t) {
  if (a->fold_tally) { /* a folded load: a row's objects */
    mt_tally_add(t, &a->fold_tally[i]);
    return;
  }
  mt__tally_one(a, mt__obj_length(a, i), a->source[i] & 3, mt__obj_samples(a, i), t);
}

/* The id + 1 of code `value` among a's codes, or 0 when a has none such:
 * through `cache`, a direct-mapped table of 2^16 ids + 1 by hash (most
 * frames repeat recent codes), filled here, then a's map. */
static inline uint32_t mt__code_find(const mt_analysis *a, uint32_t *cache, uint64_t value) {
  uint32_t *slot = &cache[mt__hash64(value) >> 48];
  if (__builtin_expect(*slot && a->code_val[*slot - 1] == value, 1)) return *slot;
  uint32_t *ix = mt__u64map_get(&a->code_index, value);
  return ix ? (*slot = *ix) : 0;
}

/* Whether object i of an analysis that kept only the objects' fates
 * (a->reread) was collected. */
static inline int mt__reread_gone(const mt_analysis *a, size_t i) {
  return (int)((a->gone_bits[i / 64] >> (i % 64)) & 1);
}

/* How many outer frames the backtrace of ev shares with prev[0..n), that
 * of the object allocated before it, of domain prev_domain. The trace
 * encodes a backtrace against its domain's last one: the reader says how
 * many frames they share (more than either has when the writer cut one
 * short); a writer may say fewer than they share, so the rest are
 * compared. */
static inline size_t mt__frames_shared(const mt_event *ev, uint32_t prev_domain,
                                       const uint64_t *prev, size_t n) {
  size_t len = ev->backtrace_len, k = 0;
  if (ev->domain == prev_domain) {
    k = ev->common_prefix < len ? ev->common_prefix : len;
    if (k > n) k = n;
  }
  while (k < len && k < n && ev->backtrace[k] == prev[k]) k++;
  return k;
}

/* ---- Queries (select.c): the one place that decides which objects a
 * filter keeps, and which frames it hides ---- */

typedef struct mt__query {
  const mt_analysis *a;
  mt_filter f;        /* the filter, `live` at the peak resolved to a time */
  int every_object;   /* no condition on an object's own columns */
  int need_alloc, need_free; /* the conditions read allocation, free times */
  uint8_t *code_bits; /* per code: 1 a location matches inside, 2 not_inside;
                         NULL without those conditions */
  uint8_t *bt_pass;   /* per backtrace id: passes inside and not_inside;
                         NULL without those conditions */
  uint8_t *fn_hidden; /* per function id: hidden by `hide`; NULL when
                         nothing is hidden */
  /* the objects [lo, hi) hold every one passing: objects in allocation
   * order narrowed by a time range or a time alive (a binary search) */
  size_t lo, hi;
} mt__query;

/* MT_OK; MT_ERR_NOMEM; or MT_ERR_INVALID for a filter that admits
 * collected objects on a live-only load (MT_KEEP_LIVE), and on a folded
 * one (MT_KEEP_FOLDED). Nothing to free then. */
int mt__query_init(mt__query *q, const mt_analysis *a, const mt_filter *f);
/* The same for an answer made of tallies alone (call trees, totals): on a
 * folded load, under a filter with the fold's conditions on objects. */
int mt__query_init_tallies(mt__query *q, const mt_analysis *a, const mt_filter *f);
void mt__query_free(mt__query *q);
/* The width (us) of each of nbins bins over a trace of `duration` us (a
 * trace of one instant still gets bins). */
static inline double mt__timeline_width(uint64_t duration, size_t nbins) {
  return (double)(duration ? duration : 1) / (double)nbins;
}
/* The timeline's bin of time t (us) on a clock offset by `off`, bins of
 * `width`: the first whose end is at or after t + off. */
static inline size_t mt__timeline_bin(double width, double off, double t) {
  double x = (t + off) / width;
  return x <= 1 ? 0 : (size_t)ceil(x) - 1;
}
/* mt_timeline_compute, the live samples at each bin's end of every object
 * (live) and of those passing f (filt) given, or computed (NULL). */
int mt__timeline_of_series(const mt_analysis *a, const mt_filter *f, size_t nbins,
                           const double *live, const double *filt, mt_timeline **out);
/* Whether f selects objects by their stacks (inside, not_inside; `hide`
 * selects none). */
int mt__filter_on_stacks(const mt_filter *f);
/* Whether f's conditions look at times (of allocation, of collection, a
 * time alive, lifetimes): decided on times as the objects' columns hold
 * them, which coarsen once a trace passes 71 minutes. */
int mt__filter_on_times(const mt_filter *f);
/* Whether a kept sums by allocation site (MT_KEEP_SITES) that answer f:
 * f has the load's conditions on objects and none on stacks (`hide`
 * aside). */
int mt__fold_sites_answer(const mt_analysis *a, const mt_filter *f);
/* The conditions on object i's own columns (times, size, source). */
int mt__query_columns(const mt__query *q, size_t i);
/* Whether object i passes the whole filter. */
static inline int mt__query_object(const mt__query *q, size_t i) {
  if (q->bt_pass && !q->bt_pass[q->a->bt[i]]) return 0;
  return q->every_object || mt__query_columns(q, i);
}
/* inside / not_inside decided on a backtrace given as code ids. */
int mt__query_codes_pass(const mt__query *q, const uint32_t *codes, size_t n);
static inline int mt__query_hidden(const mt__query *q, uint32_t function) {
  return q->fn_hidden && q->fn_hidden[function];
}

/* A visit of one object passing a query: its index, and its backtrace
 * (code ids, outermost first) when the scan gives them (else NULL, 0).
 * Non-zero stops the scan. */
typedef int (*mt__visit_fn)(void *ctx, size_t i, const uint32_t *codes, size_t n);
/* Objects [from, to) passing the query, in order, without backtraces.
 * Returns the first non-zero visit result, else 0. */
int mt__scan(const mt__query *q, size_t from, size_t to, mt__visit_fn fn, void *ctx);
/* Every object passing the query, in order, with its backtrace (one
 * sequential read of the backtrace log). Returns the first non-zero visit
 * result, else 0; -1 when out of memory. */
int mt__scan_codes(const mt__query *q, mt__visit_fn fn, void *ctx);
/* Backtraces by id, for a pass that asks for them mostly in increasing
 * order (objects' backtraces first appear in id order): the log read
 * once, sequentially; an older one replayed from its checkpoint. */
typedef struct mt__bt_cursor {
  const mt_analysis *a;
  const uint8_t *p; /* the next record */
  size_t next;      /* its backtrace id */
  uint32_t *cur;    /* the codes of backtrace next - 1 */
  size_t cur_n, cap;
  uint32_t *old; /* the last older one replayed */
  size_t old_cap;
} mt__bt_cursor;
void mt__bt_cursor_init(mt__bt_cursor *c, const mt_analysis *a);
void mt__bt_cursor_free(mt__bt_cursor *c);
/* mt__bt_cursor_get's cases past the backtrace last read. */
const uint32_t *mt__bt_cursor_seek(mt__bt_cursor *c, uint32_t b, size_t *n);
/* Backtrace b's codes (outermost first), *n of them, valid until the next
 * call; NULL when out of memory. Inline: a pass asks once per object. */
static inline const uint32_t *mt__bt_cursor_get(mt__bt_cursor *c, uint32_t b, size_t *n) {
  const mt_analysis *a = c->a;
  if (a->bt_flat) {
    *n = a->bt_off[b + 1] - a->bt_off[b];
    return a->bt_flat + a->bt_off[b];
  }
  if (b + 1 == c->next && c->cur) {
    *n = c->cur_n;
    return c->cur;
  }
  return mt__bt_cursor_seek(c, b, n);
}
/* Runs fn(arg[0]) and fn(arg[1]), on two threads when `threaded` and a
 * thread can be started, else one after the other. */
void mt__run_pair(void (*fn)(void *), void *arg0, void *arg1, int threaded);
/* Below this many objects a pass over them stays on one thread. */
#define MT__PAIR_MIN ((size_t)1 << 20)
/* Each backtrace's tally of the objects passing q into out[0..a->nbt):
 * one pass, its halves on two threads when the objects are many (tallies
 * add exactly: the sums are one pass's). 0, or -1 when out of memory. */
int mt__tally_backtraces(const mt__query *q, mt_tally *out);
/* The tally of every object passing q, its halves on two threads when the
 * objects are many. */
void mt__tally_query(const mt__query *q, mt_tally *t);
/* What a ranking needs of a backtrace's passing objects beside their
 * tally: their allocation times' span, and the first one's index (the
 * group it starts in allocation order). None: oldest UINT64_MAX, first
 * SIZE_MAX. */
typedef struct mt__bt_span {
  uint64_t oldest, newest;
  size_t first;
} mt__bt_span;
/* mt__tally_backtraces, and each backtrace's span into span[0..a->nbt). */
int mt__tally_backtraces_spans(const mt__query *q, mt_tally *out, mt__bt_span *span);
/* Whether answers over q's objects are cheaper from tallies by backtrace
 * (a pass over the objects into few sums, then the sums) than object by
 * object: objects outnumber backtraces, and the load kept objects. */
int mt__by_backtrace(const mt__query *q);
/* Each backtrace's tally of every object (a->nbt of them), computed once
 * (safe while other threads query; NULL when out of memory, and for a
 * folded load): the answers whose filter has no condition on objects'
 * own columns count backtraces instead of objects. */
const mt_tally *mt__bt_all(const mt_analysis *a);
/* A followed trace's step (load in steps) added objects: the tallies of
 * mt__bt_all, if made, take them. 0, or -1 when out of memory. */
int mt__bt_all_extend(mt_analysis *a);
/* A followed trace's step added backtraces: the stacks' index, if made,
 * takes theirs. 0, or -1 when out of memory (the index is then dropped
 * by the caller). */
int mt__index_stacks_extend(mt_analysis *a);
/* Drops the live series a timeline kept (timeline.c), which a step of a
 * followed trace makes stale; frees it with the analysis. */
void mt__live_cache_drop(mt_analysis *a);

/* ---- Printed frames (frames.c) ---- */

/* Walks a backtrace's printed frames innermost first: each code's
 * locations innermost first (the hidden ones skipped), then its caller's;
 * a code the trace never described is one frame of its own. */
typedef struct mt__frame_iter {
  const mt_analysis *a;
  const mt__query *q;     /* for `hide`; NULL hides nothing */
  const uint32_t *codes;  /* codes[0..ncodes) still to expand, from the end */
  size_t ncodes;
  const mt_frame *frames; /* the current code's locations */
  size_t left;            /* of them, still to give (from the end) */
  uint32_t code;          /* the current code */
} mt__frame_iter;

typedef struct mt__printed {
  uint32_t function; /* a function id, or UINT32_MAX for an undescribed code */
  uint32_t line;
  uint32_t code;     /* the code id the frame comes from */
} mt__printed;

void mt__frame_iter_init(mt__frame_iter *it, const mt_analysis *a, const mt__query *q,
                         const uint32_t *codes, size_t n);
int mt__frame_next(mt__frame_iter *it, mt__printed *out);
/* Orders two backtraces by their printed frames, innermost first (function
 * name, then file, then line; an undescribed code after any location, by
 * code value; a stack that ends first sorts first). */
int mt__codes_cmp(const mt_analysis *a, const mt__query *q, const uint32_t *x, size_t nx,
                  const uint32_t *y, size_t ny);

/* ---- Groups of stacks (rank_stacks.c) ---- */

/* A group of objects whose backtraces print alike. */
typedef struct mt__stack_group {
  uint32_t bt;             /* a backtrace id of the group */
  mt_tally tally;
  uint64_t oldest, newest; /* allocation times, us */
} mt__stack_group;

/* The first `limit` groups (0: all) of the objects passing q, grouped by
 * their printed stacks (q's hidden frames left out) and ordered by `order`
 * (an mt_rank_order), ties broken by printed frames. Uses about `budget`
 * bytes for a pass's groups; more groups take more passes. Returns MT_OK
 * with *groups (free it; *n of them) and the number of groups in all, or
 * MT_ERR_NOMEM. When the groups were made from each backtrace's tally,
 * *total is their sum (the objects passing q) and *have_total 1; else
 * *have_total is 0. */
int mt__rank_stacks(const mt__query *q, int order, size_t limit, size_t budget,
                    mt__stack_group **groups, size_t *n, size_t *ngroups, mt_tally *total,
                    int *have_total);

/* mt_profile, the sums of every backtrace at once (interned backtraces)
 * when they take at most sums_max bytes, else the objects sorted by
 * backtrace: the same samples either way (tests take both). */
int mt__profile(const mt_analysis *a, const mt_filter *f, int merge, mt_profile_info *info,
                mt_profile_fn fn, void *ctx, size_t sums_max);

/* A backtrace's codes into a buffer grown as needed (*buf, *cap);
 * returns its length, or SIZE_MAX when out of memory. */
size_t mt__bt_codes_grow(const mt_analysis *a, uint32_t bt, uint32_t **buf, size_t *cap);

#endif
