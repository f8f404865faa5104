/* The state of one pass of mt_analysis_load over a trace (load.c), shared
 * with what a load keeping less than every object does to it (load_keep.c). */
#ifndef MT_ANALYSIS_LOAD_PASS_H
#define MT_ANALYSIS_LOAD_PASS_H

#include "analysis_internal.h"
#include "format/bt_tags.h"

/* A timeline made while reading (timeline_load.c). */
typedef struct mt__tl_pass mt__tl_pass;

/* How a load runs: what it keeps, MT_KEEP_FOLDED's conditions, and a
 * timeline to make while reading (NULL: none). */
typedef struct mt__load_spec {
  mt_keep keep;
  const mt_filter *fold;
  mt__tl_pass *tl;
} mt__load_spec;

/* mt_analysis_load_keep's work, `how` as said. */
int mt__load_paths(mt_analysis **out, const char *const *paths, size_t n,
                   const mt__load_spec *how, mt_progress_fn progress, void *ctx);

/* Readies tl for the load of a, before any object: 0, or -1. */
int mt__tl_begin(mt_analysis *a, mt__tl_pass *tl);
/* Object i's fate is known: collected at `gone` (us since the start), or
 * never (MT_NEVER, at the end): its life goes to tl's bins. */
void mt__tl_fate(const mt_analysis *a, mt__tl_pass *tl, size_t i, uint64_t gone);

typedef struct pass {
  uint64_t *prev_codes; /* previous object's backtrace, to share its prefix */
  uint32_t *prev_ids;   /* and the code ids of its frames [0, ids_valid) */
  uint64_t *prefix_hash; /* [j]: hash of its first j codes (while interning) */
  size_t prev_len, prev_cap, ids_valid;
  uint32_t prev_domain;  /* its domain (any, before the first object) */
  mt__bt_tags_seen tags_seen; /* the reader's slots for code ids (bt_tags.h) */
  uint32_t *last_ids;   /* the last distinct backtrace logged */
  size_t last_len, last_cap;
  int logged_last;      /* and it is the last object's */
  /* the intern table: backtrace id + 1 by hash (0 = empty); each
   * backtrace's full hash in bt_hash */
  uint32_t *slots;
  size_t nslots;
  uint64_t *bt_hash;
  int no_intern;     /* gave up interning: see intern_backtrace */
  uint32_t prev_bt;  /* the previous object's backtrace id */
  /* object ids -> object index: the identity until ids first diverge
   * (memtrace numbers objects 0, 1, 2...); from then on, a map. */
  int diverged;
  size_t diverged_at;
  mt__u64map ids;
  uint64_t live;
  uint64_t unknown_ids, double_frees;
  /* several traces read as one: each one's live samples, and the traces
   * ended but not yet dropped from the live heap (finished[dropped..]) */
  uint64_t *live_by;
  size_t dropped;
  /* bit b: backtrace b is an anonymous mapping's (MT_MAPPING_FILENAME) */
  uint8_t *bt_mapping;
  size_t bt_mapping_cap;
  /* MT_KEEP_LIVE and MT_KEEP_FOLDED (load_keep.c): each kept object's id,
   * and whether it was collected (or folded) since the last compaction.
   * Objects [0, tail_at) are those the last compaction kept, their ids
   * increasing; from tail_at on, ids run on from tail_id0. Ids that do not
   * (live_map) go through `ids`. */
  int keep_live, live_map;
  uint64_t *obj_id;
  uint8_t *gone;
  size_t keep_cap, ngone, tail_at;
  size_t side_kept; /* side entries after the last rebuild of the table */
  uint64_t tail_id0;
  mt__tl_pass *tl; /* a timeline made while reading, or NULL */
  /* MT_KEEP_PROFILE: once interning stops, `fates` is set, objects from
   * then on are not kept, and each object's fate is a bit of
   * a->gone_bits (load.c) */
  int keep_profile, fates;
  size_t gone_cap; /* words of a->gone_bits */
  /* MT_KEEP_FOLDED and MT_KEEP_SITES: the filter's conditions on objects */
  const mt__query *fold;
  int fold_at_alloc; /* decided as objects are allocated */
  int fold_rows;     /* by backtrace (MT_KEEP_FOLDED); else by site */
  /* MT_KEEP_SITES: each site's sum, found by code or by backtrace */
  uint32_t *site_slot; /* [0]: no site, [c + 1]: code c; its sum + 1, or 0 */
  uint32_t *bt_sum;    /* per backtrace: its site's sum + 1, or 0 */
  size_t site_slot_cap, fold_site_cap, fold_code_cap, bt_sum_cap;
  /* MT_KEEP_FOLDED: the objects that passed, a row per backtrace with
   * some (nfold rows, in the order they came), found through row_of (per
   * backtrace id: its row + 1, or 0). Rows only where objects passed: on a
   * trace of nearly all distinct stacks under a filter of few objects (the
   * live ones), a row per backtrace would be most of the load's memory. */
  struct mt__fold_row *rows;
  uint32_t *row_of;
  size_t nfold, rows_cap, row_of_cap;
} pass;

/* A backtrace's objects in a folded load: their tally, and when the oldest
 * was allocated (us). */
typedef struct mt__fold_row {
  mt_tally tally;
  uint64_t oldest;
} mt__fold_row;

/* A pass in steps (load.c): readies a and p to read r as `how` says
 * (fq: room for the fold's query). MT_OK or MT_ERR_NOMEM. */
int mt__pass_begin(mt_analysis *a, pass *p, mt_reader *r, const mt__load_spec *how,
                   mt__query *fq);
/* Reads r's events into a: up to the reader's end (its end for now when
 * following: 0), at most `limit` of them (0: no bound), or until progress
 * ends the load (both: 1); *count (may be NULL) gets how many. A negative
 * status on error (a's error set). */
int mt__pass_read(mt_analysis *a, pass *p, mt_reader *r, uint64_t limit,
                  mt_progress_fn progress, void *ctx, uint64_t *count);
/* Brings what queries read up to date with the events read so far: the
 * new codes' locations, the expanded backtraces, the live heap's envelope,
 * the warnings. MT_OK or MT_ERR_NOMEM. */
int mt__pass_publish(mt_analysis *a, const pass *p, const mt_reader *r);
/* Frees the pass's reading state. */
void mt__pass_free(pass *p);
/* Code c, left undescribed when resolved, gets the locations the reader
 * now knows for it: 1 if it has some now, 0 if not, -1 (no memory). */
int mt__describe_late(mt_analysis *a, const mt_reader *r, uint32_t c);
/* The backtrace id of the object ev allocates (load_intern.c): an interned
 * one, or a new distinct backtrace logged with its site. 0, or -1 (no
 * memory). */
int mt__intern_backtrace(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev,
                         uint32_t *out);
/* Maps the codes of ev's backtrace to code ids, as mt__intern_backtrace
 * does, without a backtrace id: an object whose fate alone is kept
 * (MT_KEEP_PROFILE). 0, or -1 (no memory). */
int mt__note_codes(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev);
/* A new analysis, empty. NULL when out of memory. */
mt_analysis *mt__analysis_new(void);

/* Grows an array of `size`-byte elements to hold at least `need` (the
 * loading pass's tables: 1024 at first, then doubling). 0, or -1. */
static inline int mt__load_grow(void **p, size_t *cap, size_t need, size_t size) {
  return mt__grow_big(p, cap, need, size, 1024);
}

/* Room for `need` objects in every column of a; 0, or -1. */
int mt__grow_objects(mt_analysis *a, size_t need);

/* MT_KEEP_LIVE: notes object i (id `id`) as kept; 0, or -1 (no memory). */
int mt__live_note(mt_analysis *a, pass *p, size_t i, uint64_t id);
/* MT_KEEP_LIVE: the index of object `id` among the nobj kept: 0, or -1. */
int mt__live_find(const pass *p, uint64_t id, size_t nobj, size_t *out);
/* MT_KEEP_LIVE: object i was collected; it goes at a compaction, which
 * this runs when the collected outnumber the live. 0, or -1. */
int mt__live_collect(mt_analysis *a, pass *p, size_t i);
/* MT_KEEP_FOLDED: object i's fate is known (collected, or the trace
 * ended): its tally goes to its backtrace's row if it passes the fold's
 * conditions (unless decided at its allocation). 0, or -1. */
int mt__fold_object(mt_analysis *a, pass *p, size_t i);
/* A fold decided at allocation (fold_at_alloc): object i, just allocated
 * at time t, its tally `one`, goes to its backtrace's row (MT_KEEP_FOLDED)
 * or its allocation site's sum (MT_KEEP_SITES) if it passes the fold's
 * conditions. 0, or -1. */
int mt__fold_alloc(mt_analysis *a, pass *p, size_t i, uint64_t t, const mt_tally *one);
/* At the end of a load with sums by site: their times as a whole load
 * gives them, or the sums dropped (see load_keep.c). */
void mt__fold_sites_finish(mt_analysis *a);
/* MT_KEEP_FOLDED, at the end: the rows replace the objects (one object
 * per row, in backtrace order, its tally in a->fold_tally). 0, or -1. */
int mt__fold_finish(mt_analysis *a, pass *p);
/* MT_KEEP_LIVE: drops every collected object now; 0, or -1. Frees the
 * pass's per-object arrays when `last`. */
int mt__live_compact(mt_analysis *a, pass *p, int last);

#endif
