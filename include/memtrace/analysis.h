/*
 * memtrace/analysis.h - a trace, loaded into compact tables for queries.
 *
 * One streaming pass over a trace (memtrace/format.h) builds:
 *   - objects: one row per sampled allocation (times, size, samples, source,
 *     stack), in allocation order;
 *   - backtraces: each distinct one stored once, objects naming it by id;
 *   - stacks: every distinct backtrace, interned as a tree of frames (a stack
 *     id names a path from the root; 0 is the empty stack), built on demand;
 *   - codes and functions: each location code's inlined locations, each
 *     function (name, file) once;
 *   - the live heap over time: its exact peak and a bounded envelope.
 * Memory grows with sampled objects (19 bytes each) and distinct backtraces,
 * never with events.
 *
 * Queries take a filter (which objects) and return tallies: additive sums
 * from which the estimators give bytes and object counts with 95% confidence
 * intervals. docs/estimators.md derives the estimators and their intervals.
 *
 * Times in this API are microseconds since the trace's start. Sizes are in
 * bytes unless a name says words. All functions are safe to call
 * concurrently on one analysis once it is loaded (it is read-only), except
 * mt_analysis_free.
 */
#ifndef MEMTRACE_ANALYSIS_H
#define MEMTRACE_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A time that never comes: the free time of an object never collected. */
#define MT_NEVER UINT64_MAX

typedef struct mt_analysis mt_analysis;

/* Called now and then during loading with bytes read so far and the total
 * (0 if unknown). Return non-zero to cancel the load (MT_ERR_INVALID). */
typedef int (*mt_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Loads the trace at `path`. On success returns MT_OK and *out. On failure
 * returns a negative status, and *out is still an analysis whose
 * mt_analysis_error says what failed (free it), except for MT_ERR_NOMEM
 * where *out may be NULL. A truncated trace loads (its complete packets)
 * and sets mt_analysis_warning. */
MT_API int mt_analysis_load(mt_analysis **out, const char *path,
                            mt_progress_fn progress, void *progress_ctx);

/* As mt_analysis_load, from a reader already opened (e.g. on a socket); the
 * reader is consumed to its end but not closed. */
MT_API int mt_analysis_load_reader(mt_analysis **out, mt_reader *r,
                                   mt_progress_fn progress, void *progress_ctx);

MT_API void mt_analysis_free(mt_analysis *a);
MT_API const char *mt_analysis_error(const mt_analysis *a);
MT_API const char *mt_analysis_warning(const mt_analysis *a);

/* The trace_info; strings valid until mt_analysis_free. */
MT_API const mt_trace_info *mt_analysis_info(const mt_analysis *a);
/* Time of the last event (the trace's duration), in us since the start. */
MT_API uint64_t mt_analysis_duration(const mt_analysis *a);
/* Bytes per word (word_size / 8). */
MT_API double mt_analysis_word_bytes(const mt_analysis *a);

/* ---- Objects -------------------------------------------------------------- */

typedef struct mt_object {
  uint64_t alloc_time;
  uint64_t promote_time; /* MT_NEVER unless promoted (OCaml minor heap) */
  uint64_t free_time;    /* MT_NEVER if never collected                 */
  uint64_t length;       /* words                                       */
  uint64_t nsamples;
  uint32_t stack;        /* its stack id once the stack tree is built (see
                            below), else 0: mt_analysis_object_stack builds
                            it                                           */
  mt_source source;
} mt_object;

MT_API size_t mt_analysis_object_count(const mt_analysis *a);
/* Object i (0 <= i < count), in allocation order. */
MT_API mt_object mt_analysis_object(const mt_analysis *a, size_t i);
/* Object i's stack id, building the stack tree if need be. */
MT_API uint32_t mt_analysis_object_stack(const mt_analysis *a, size_t i);
/* Object i's backtrace as code ids, outermost first, into out[0..cap);
 * returns its length (which may exceed cap: then out holds the first cap).
 * Needs no stack tree (as mt_analysis_backtrace_codes of its backtrace id),
 * so it suits queries over a subset of the objects (leaks, a filtered
 * view). */
MT_API size_t mt_analysis_object_backtrace(const mt_analysis *a, size_t i,
                                           uint32_t *out, size_t cap);

/* ---- Distinct backtraces --------------------------------------------------- */

/* Loading interns backtraces: each distinct sequence of code ids gets a
 * backtrace id (0, 1, 2... in order of first appearance: an object's id is
 * at most one more than every id before it), and objects with equal
 * backtraces share it. Distinctness rests on a 64-bit hash of the sequence
 * (two different backtraces share an id with probability ~n^2 / 2^65 for n
 * distinct ones). Unlike stack ids these need no stack tree: a tool can
 * tally per backtrace id and then visit only the backtraces it needs.
 * On a trace where most objects bring a new backtrace (past 2^18 of them),
 * interning stops, as it would cost more than it saves: then an object
 * shares an id only with the object before it when their backtraces are
 * equal, and one backtrace may have several ids;
 * mt_analysis_backtraces_distinct says which holds. */
MT_API size_t mt_analysis_backtrace_count(const mt_analysis *a);
/* 1 when distinct backtrace ids always name distinct backtraces. */
MT_API int mt_analysis_backtraces_distinct(const mt_analysis *a);
MT_API uint32_t mt_analysis_object_backtrace_id(const mt_analysis *a, size_t i);
/* Backtrace bt's code ids, outermost first, into out[0..cap); returns its
 * length (which may exceed cap: then out holds the first cap). Direct when
 * the trace has few distinct backtraces, else it replays at most 63 logged
 * deltas. */
MT_API size_t mt_analysis_backtrace_codes(const mt_analysis *a, uint32_t bt, uint32_t *out,
                                          size_t cap);
/* Its allocation site, as mt_analysis_object_site. */
MT_API uint32_t mt_analysis_backtrace_site(const mt_analysis *a, uint32_t bt);
/* Its stack id (builds the stack tree if need be). */
MT_API uint32_t mt_analysis_backtrace_stack(const mt_analysis *a, uint32_t bt);
/* Calls fn(ctx, bt, codes, n) for every distinct backtrace in id order (the
 * `object` argument of mt_backtrace_fn is the backtrace id): one sequential
 * pass. Stops at fn's first non-zero result and returns it; else MT_OK (or
 * MT_ERR_NOMEM). */
typedef int (*mt_backtrace_fn)(void *ctx, size_t object, const uint32_t *codes,
                               size_t n);
MT_API int mt_analysis_each_distinct_backtrace(const mt_analysis *a, mt_backtrace_fn fn,
                                               void *ctx);

/* ---- Stacks, codes, functions --------------------------------------------- */

/* Number of stack ids (including 0, the empty stack). */
MT_API size_t mt_analysis_stack_count(const mt_analysis *a);
/* The parent of a stack (its path minus the last frame); 0 for depth 1. */
MT_API uint32_t mt_analysis_stack_parent(const mt_analysis *a, uint32_t stack);
/* The code id of a stack's last frame. Undefined for stack 0. */
MT_API uint32_t mt_analysis_stack_code(const mt_analysis *a, uint32_t stack);
MT_API uint32_t mt_analysis_stack_depth(const mt_analysis *a, uint32_t stack);
/* A stack's code ids, outermost first, into out[0..depth); returns depth.
 * `cap` must be at least the depth. */
MT_API size_t mt_analysis_stack_codes(const mt_analysis *a, uint32_t stack,
                                      uint32_t *out, size_t cap);

typedef struct mt_frame {
  uint32_t function; /* function id */
  uint32_t line, start_char, end_char;
} mt_frame;

MT_API size_t mt_analysis_code_count(const mt_analysis *a);
/* The trace's 64-bit value of a code id. */
MT_API uint64_t mt_analysis_code_value(const mt_analysis *a, uint32_t code);
/* The locations of a code, outermost (caller) first; *n = 0 for a code the
 * trace never described. */
MT_API const mt_frame *mt_analysis_code_frames(const mt_analysis *a,
                                               uint32_t code, size_t *n);

MT_API size_t mt_analysis_function_count(const mt_analysis *a);
MT_API const char *mt_analysis_function_name(const mt_analysis *a, uint32_t f);
MT_API const char *mt_analysis_function_file(const mt_analysis *a, uint32_t f);

/* The allocation site of a stack: the innermost location of its last frame
 * that has one (skipping at most 2 undescribed frames, as memtrace does).
 * Returns 0 and fills *site, or -1 when the stack has none.
 *
 * Stack ids exist once the stack tree is built: on the first call to a
 * stack function (mt_analysis_stack_count, _tally_stacks, _object, a filter
 * with `inside`/`not_inside`). Building it costs time and memory in the
 * number of distinct stack prefixes; queries by site (below) never need it.
 * Ids are stable once built. */
MT_API int mt_analysis_stack_site(const mt_analysis *a, uint32_t stack,
                                  mt_frame *site);

/* ---- Live heap over time --------------------------------------------------- */

typedef struct mt_live_point {
  uint64_t time;      /* end of the bin                                    */
  double min_samples; /* least live samples within the bin                */
  double max_samples; /* most                                             */
  double end_samples; /* at the end of the bin                            */
} mt_live_point;

/* The exact peak of live samples over the whole trace and when it was
 * first reached. Live bytes = samples / rate x word bytes. */
MT_API void mt_analysis_peak(const mt_analysis *a, uint64_t *time,
                             uint64_t *samples);

/* The live heap of all objects as at most `cap` equal bins covering the
 * whole trace (min, max and final value in each); returns the bin count. */
MT_API size_t mt_analysis_live_envelope(const mt_analysis *a,
                                        mt_live_point *out, size_t cap);

/* ---- Filters --------------------------------------------------------------- */

enum {
  MT_LIVE_ANY = 0,   /* no condition                                      */
  MT_LIVE_AT = 1,    /* alive at `live_at`: allocated at or before it and
                        not yet collected                                 */
  MT_LIVE_AT_PEAK = 2,
  MT_LIVE_AT_END = 3 /* never collected                                   */
};
enum { MT_COLLECTED_ANY = 0, MT_COLLECTED_IN = 1, MT_COLLECTED_NEVER = 2 };

typedef struct mt_filter {
  uint64_t alloc_from, alloc_to;     /* allocated in [from, to)           */
  int live;                          /* MT_LIVE_*                         */
  uint64_t live_at;
  int collected;                     /* MT_COLLECTED_*                    */
  uint64_t collect_from, collect_to; /* with MT_COLLECTED_IN              */
  uint64_t size_min, size_max;       /* bytes, inclusive                  */
  uint64_t lifetime_min, lifetime_max; /* us, inclusive; an object never
                                        collected lives to the trace end  */
  unsigned sources;                  /* bit (1 << MT_SOURCE_x); 0 = all   */
  const char *inside;     /* a frame's function name contains this        */
  const char *not_inside; /* no frame's function name contains this       */
} mt_filter;

/* A filter that keeps every object. */
MT_API void mt_filter_init(mt_filter *f);

/* ---- Tallies and estimates ------------------------------------------------- */

/* Sums over a set of sampled objects; add them to combine sets. */
typedef struct mt_tally {
  uint64_t samples;   /* sum of nsamples                                   */
  uint64_t objects;   /* sampled objects                                   */
  double ht;          /* Horvitz-Thompson object count: sum of 1/P(sampled) */
  double ht_var;      /* its variance estimate: sum of (1-P)/P^2            */
  double w_max;       /* the largest 1/P of the objects tallied (added last:
                         the interval on the object count uses it; 0 in a
                         tally made by hand falls back to the mean weight) */
} mt_tally;

typedef struct mt_estimate {
  double value, lo, hi; /* point estimate and 95% confidence interval     */
} mt_estimate;

static inline void mt_tally_add(mt_tally *to, const mt_tally *t) {
  to->samples += t->samples;
  to->objects += t->objects;
  to->ht += t->ht;
  to->ht_var += t->ht_var;
  if (t->w_max > to->w_max) to->w_max = t->w_max;
}

/* Adds object i to a tally. */
MT_API void mt_tally_object(const mt_analysis *a, size_t i, mt_tally *t);

/* Estimated bytes allocated by the objects tallied (all the program's
 * allocations they stand for, sampled or not). */
MT_API mt_estimate mt_estimate_bytes(const mt_analysis *a, const mt_tally *t);
/* Estimated number of allocations they stand for. */
MT_API mt_estimate mt_estimate_objects(const mt_analysis *a, const mt_tally *t);

/* Sets mask[i] to 1 for each object i passing the filter, else 0 (mask has
 * mt_analysis_object_count entries); *count (may be NULL) receives how
 * many pass. MT_OK or MT_ERR_NOMEM. */
MT_API int mt_analysis_select(const mt_analysis *a, const mt_filter *f,
                              uint8_t *mask, size_t *count);

/* Calls fn(ctx, object, codes, n) for each object passing the filter, in
 * allocation order, with its backtrace as code ids (outermost first; valid
 * during the call). One sequential pass, no stack tree. Stops at fn's first
 * non-zero result and returns it; else MT_OK (or MT_ERR_NOMEM). */
MT_API int mt_analysis_each_backtrace(const mt_analysis *a, const mt_filter *f,
                                      mt_backtrace_fn fn, void *ctx);

/* Whether object i passes the filter. Prefer the bulk calls above. */
MT_API int mt_analysis_matches(const mt_analysis *a, const mt_filter *f,
                               size_t i);

/* The code id of object i's allocation site: its last frame the trace
 * describes, skipping at most 2 undescribed ones (memtrace's rule), else its
 * last frame; MT_NO_CODE for an empty backtrace. A code's site location is
 * the innermost of mt_analysis_code_frames. */
#define MT_NO_CODE UINT32_MAX
MT_API uint32_t mt_analysis_object_site(const mt_analysis *a, size_t i);

/* Tallies the objects passing the filter by allocation site code, without
 * building the stack tree: per_code must have mt_analysis_code_count + 1
 * entries (the last for empty backtraces); it is zeroed first. */
MT_API int mt_analysis_tally_sites(const mt_analysis *a, const mt_filter *f,
                                   mt_tally *per_code, mt_tally *total);

/* Tallies the objects passing the filter by the stack they were allocated
 * at: per_stack must have mt_analysis_stack_count entries; it is zeroed
 * first. `total` (may be NULL) receives the sum. Returns MT_OK or
 * MT_ERR_NOMEM. */
MT_API int mt_analysis_tally_stacks(const mt_analysis *a, const mt_filter *f,
                                    mt_tally *per_stack, mt_tally *total);

/* The live samples of the objects passing the filter at the end of each of
 * `nbins` equal bins covering [from, to). out has nbins entries. */
MT_API int mt_analysis_live_series(const mt_analysis *a, const mt_filter *f,
                                   uint64_t from, uint64_t to, size_t nbins,
                                   double *out);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_ANALYSIS_H */
