/*
 * memtrace/analysis.h - a trace, loaded into compact tables for queries.
 *
 * One streaming pass over a trace (memtrace/format.h) builds:
 *   - objects: one row per sampled allocation (times, size, samples, source,
 *     backtrace), in allocation order;
 *   - backtraces: each distinct one stored once, objects naming it by id;
 *   - codes and functions: each location code's inlined locations, each
 *     function (name, file) once;
 *   - the live heap over time: its exact peak and a bounded envelope.
 * Memory grows with sampled objects (19 bytes each) and distinct backtraces,
 * never with events.
 *
 * Queries take a filter (memtrace/filter.h: which objects) and return
 * tallies: additive sums from which the estimators give bytes and object
 * counts with 95% confidence intervals. docs/estimators.md derives the
 * estimators and their intervals. The answers the tools give (rankings,
 * leaks, call trees, statistics, the live heap, diffs, profiles) are built
 * on these: memtrace/rank.h, memtrace/calltree.h, memtrace/stats.h,
 * memtrace/profile.h.
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

#include "memtrace/filter.h"
#include "memtrace/format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_analysis mt_analysis;

/* Called now and then during loading with bytes read so far and the total
 * (0 if unknown). Return 0 to go on, MT_PROGRESS_END to end the load there
 * (the analysis is then that of the trace as if it ended after the events
 * read so far: an object not collected by then is live at its end; a
 * preview of a long trace), or any other value to cancel the load
 * (MT_ERR_INVALID). */
typedef int (*mt_progress_fn)(void *ctx, uint64_t done, uint64_t total);
#define MT_PROGRESS_END 2

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
/* ---- A trace still being written, read as it grows ---------------------
 *
 * mt_follow keeps one analysis of a trace file that a program is still
 * writing, and adds to it what each call finds appended: every packet is
 * decoded once, so a step costs what arrived, not the whole trace. After
 * each step the analysis is that of the trace as written so far (its
 * whole packets; a partial one waits for its end): every answer is the
 * one a load of the file at that point gives.
 *
 * The analysis changes only inside mt_follow_read and mt_follow_end, and
 * nothing else may use it while one runs (a server serving it from other
 * threads holds a reader-writer lock). A step extends the stacks' index
 * (mt_analysis_index_stacks) by its new backtraces. */
typedef struct mt_follow mt_follow;

/* Opens the trace at `path` and reads its trace_info packet (no events
 * yet). MT_OK with *out; on failure a negative status with *out NULL and
 * the reader's message in err[0..n) (a file that does not yet hold a whole
 * first packet is MT_ERR_CORRUPT: try again once it has grown). */
MT_API int mt_follow_open(mt_follow **out, const char *path, char *err, size_t n);
/* Adds the events appended since the last call: at most `limit` (0: no
 * bound; the rest comes at the next call). *events (may be NULL) gets
 * how many were read. MT_OK, or a negative status (a corrupt packet, out
 * of memory; mt_analysis_error says which): the analysis then keeps what
 * was read before, and every later call fails alike. */
MT_API int mt_follow_read(mt_follow *f, uint64_t limit, uint64_t *events);
/* The writer is done: reads the rest to the file's end, which is now the
 * trace's end (a partial last packet is a truncation, and
 * mt_analysis_warning says so); *events (may be NULL) as for
 * mt_follow_read. MT_OK or a negative status as mt_follow_read's; later
 * reads find nothing. */
MT_API int mt_follow_end(mt_follow *f, uint64_t *events);
/* The analysis (owned by f: valid until mt_follow_close). */
MT_API mt_analysis *mt_follow_analysis(const mt_follow *f);
/* Bytes of the file consumed so far (whole packets). */
MT_API uint64_t mt_follow_offset(const mt_follow *f);
/* Whether some code the trace had left undescribed got its locations in
 * the last step (a tree built from the analysis must then be built
 * again: mt_calltree_extend refuses it). */
MT_API int mt_follow_described_late(const mt_follow *f);
MT_API void mt_follow_close(mt_follow *f);

/* Loads several traces as one (a process tree, a fleet; mt_reader_open_many
 * merges them by wall-clock time): every answer then covers them all,
 * times counted from the earliest start, at the lowest of their sample
 * rates (mt_reader_open_many thins the others). They must share their
 * word size (MT_ERR_INVALID otherwise, the message naming two that
 * differ). An object never collected stays so (leaks list it), but
 * leaves the live heap when its trace ends: a process holds nothing once
 * it has exited (the timeline, the live heap's peak and envelope, "live
 * at" filters). Codes are those of mt_reader_open_many. One path is
 * mt_analysis_load. Errors as mt_analysis_load's. */
MT_API int mt_analysis_load_many(mt_analysis **out, const char *const *paths, size_t n,
                                 mt_progress_fn progress, void *ctx);

/* What a load keeps of the sampled objects. */
typedef enum mt_keep {
  MT_KEEP_ALL = 0,   /* every one: every answer */
  MT_KEEP_LIVE = 1,  /* those never collected: memory follows the live heap */
  MT_KEEP_FOLDED = 2, /* their tallies by backtrace (mt_analysis_load_folded) */
  MT_KEEP_SITES = 3,  /* those never collected, and sums by allocation site
                         (mt_analysis_load_sites) */
  MT_KEEP_PROFILE = 4 /* what a heap profile needs (mt_profile): every one
                         while backtraces repeat, else whether each was
                         collected, the trace read again for the profile */
} mt_keep;

/* As mt_analysis_load_many, keeping `keep` (MT_KEEP_ALL, MT_KEEP_LIVE or
 * MT_KEEP_PROFILE; MT_KEEP_FOLDED is mt_analysis_load_folded's). With
 * MT_KEEP_LIVE each object is dropped as it is collected, so the
 * analysis's memory is that of the objects live at the end and of the
 * distinct backtraces, whatever the trace's length: what mt_leaks needs,
 * for traces of any length. What is computed while reading stays whole:
 * the trace's total (mt_analysis_tally with a filter that selects all, a
 * ranking's trace_total), the live heap's series, peak and envelope, the
 * duration. Every other answer covers the objects never collected only,
 * so one asked under a filter that admits collected objects (collected
 * other than MT_COLLECTED_NEVER; mt_leaks sets it) returns
 * MT_ERR_INVALID.
 *
 * MT_KEEP_PROFILE loads as MT_KEEP_ALL while the trace's backtraces
 * repeat. Once nearly every object proves to have a backtrace of its own
 * (where the load would stop interning them: a heap profile then has
 * about a sample per object, and keeping the objects is most of its
 * cost), the load keeps of each object only whether it was collected,
 * and mt_profile reads the trace files again for the samples: they must
 * not change in between. mt_analysis_keeps then says MT_KEEP_PROFILE: the
 * analysis holds no object (mt_analysis_object_count is 0, the live heap
 * is empty) but the trace's info, duration, codes and functions, and
 * answers mt_profile under a filter mt_profile_rereads accepts; every
 * other answer returns MT_ERR_INVALID. Otherwise the analysis is
 * MT_KEEP_ALL's. Memory: 1 bit an object, the codes, and a map of the
 * objects' ids when they are not the objects' order (traces of several
 * domains).
 *
 * Errors as mt_analysis_load's. */
MT_API int mt_analysis_load_keep(mt_analysis **out, const char *const *paths, size_t n,
                                 mt_keep keep, mt_progress_fn progress, void *ctx);
/* Loads the traces keeping, per backtrace, the tally of the objects that
 * pass f's conditions on objects (times, sizes, lifetimes, sources; not
 * inside, not_inside and hide, which act on stacks): each object is
 * decided and dropped at its collection, or at the end. Memory: the live
 * objects, the distinct backtraces and a tally for each, whatever the
 * trace's length. The answers are those made of tallies alone: call trees
 * (mt_calltree_build, mt_calltree_tally) and totals (mt_analysis_tally),
 * under a filter with f's conditions on objects and any on stacks; any
 * other answer or filter returns MT_ERR_INVALID. A tally is a whole
 * load's, to the bit (tallies add exactly: mt_tally). f live at the peak
 * is refused
 * (MT_ERR_INVALID: the peak is known only at the end). Errors as
 * mt_analysis_load's. */
MT_API int mt_analysis_load_folded(mt_analysis **out, const char *const *paths, size_t n,
                                   const mt_filter *f, mt_progress_fn progress, void *ctx);
/* Loads the traces keeping the objects never collected (as MT_KEEP_LIVE)
 * and, per allocation site, the sum of the objects that pass f's
 * conditions on objects, each added as it is allocated, in the order a
 * whole load adds them: f's conditions must be decided at allocation
 * (mt_filter_decided_at_allocation; MT_ERR_INVALID otherwise). Memory: the
 * live objects, the distinct backtraces and the sites, whatever the
 * trace's length; unlike a folded load, nothing per backtrace, so a trace
 * of millions of distinct stacks costs no more than loading it whole. The
 * answers: rankings by function or line under a filter with f's
 * conditions on objects (mt_rank_folds), to the last bit a whole load's;
 * mt_analysis_tally under such a filter; and a live-only load's (leaks
 * under collected=never). Errors as mt_analysis_load's. */
MT_API int mt_analysis_load_sites(mt_analysis **out, const char *const *paths, size_t n,
                                  const mt_filter *f, mt_progress_fn progress, void *ctx);
/* What the load of `a` kept. */
MT_API mt_keep mt_analysis_keeps(const mt_analysis *a);

MT_API void mt_analysis_free(mt_analysis *a);
MT_API const char *mt_analysis_error(const mt_analysis *a);
MT_API const char *mt_analysis_warning(const mt_analysis *a);
/* After a failed load: the byte offset of the corrupt part of the trace
 * (MT_ERR_CORRUPT, MT_ERR_VERSION), else MT_NO_OFFSET. */
MT_API uint64_t mt_analysis_error_offset(const mt_analysis *a);
/* The byte offset of the truncated packet that ended the trace (the
 * warning says so), or MT_NO_OFFSET when the trace was whole. */
MT_API uint64_t mt_analysis_truncated(const mt_analysis *a);

/* The trace_info; strings valid until mt_analysis_free. */
MT_API const mt_trace_info *mt_analysis_info(const mt_analysis *a);
/* Time of the last event (the trace's duration), in us since the start. */
MT_API uint64_t mt_analysis_duration(const mt_analysis *a);
/* Bytes per word (word_size / 8). */
MT_API double mt_analysis_word_bytes(const mt_analysis *a);
/* 1 when some object of the trace came from a language runtime's minor or
 * major heap (an OCaml trace, told in words, "collected", promotion), 0
 * when every one is external (a native program's: bytes, "freed"). Of every
 * object of the trace, whatever the load kept. */
MT_API int mt_analysis_has_runtime_heap(const mt_analysis *a);
/* Whether any object is an anonymous mapping (mt_object.mapping): a native
 * program's trace whose objects a `mapping` / `heap` source tells apart. */
MT_API int mt_analysis_has_mappings(const mt_analysis *a);

/* ---- Objects -------------------------------------------------------------- */

typedef struct mt_object {
  uint64_t alloc_time;
  uint64_t promote_time; /* MT_NEVER unless promoted (OCaml minor heap) */
  uint64_t free_time;    /* MT_NEVER if never collected                 */
  uint64_t length;       /* words                                       */
  uint64_t nsamples;
  uint32_t backtrace;    /* its backtrace id (below)                    */
  mt_source source;
  int mapping;           /* 1: an anonymous mapping (external; its stack's
                            innermost frame is MT_MAPPING_FILENAME's, and
                            its site is the frame after it)             */
} mt_object;

MT_API size_t mt_analysis_object_count(const mt_analysis *a);
/* Object i (0 <= i < count), in allocation order. */
MT_API mt_object mt_analysis_object(const mt_analysis *a, size_t i);
/* Object i's backtrace as code ids, outermost first, into out[0..cap);
 * returns its length (which may exceed cap: then out holds the first cap):
 * mt_analysis_backtrace_codes of its backtrace id. */
MT_API size_t mt_analysis_object_backtrace(const mt_analysis *a, size_t i,
                                           uint32_t *out, size_t cap);

/* ---- Distinct backtraces --------------------------------------------------- */

/* Loading interns backtraces: each distinct sequence of code ids gets a
 * backtrace id (0, 1, 2... in order of first appearance: an object's id is
 * at most one more than every id before it), and objects with equal
 * backtraces share it. Distinctness rests on a 64-bit hash of the sequence
 * (two different backtraces share an id with probability ~n^2 / 2^65 for n
 * distinct ones). A tool can tally per backtrace id and then visit only the
 * backtraces it needs.
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
/* Calls fn(ctx, bt, codes, n) for every distinct backtrace in id order (the
 * `object` argument of mt_backtrace_fn is the backtrace id): one sequential
 * pass. Stops at fn's first non-zero result and returns it; else MT_OK (or
 * MT_ERR_NOMEM). */
typedef int (*mt_backtrace_fn)(void *ctx, size_t object, const uint32_t *codes,
                               size_t n);
MT_API int mt_analysis_each_distinct_backtrace(const mt_analysis *a, mt_backtrace_fn fn,
                                               void *ctx);
/* For an analysis that answers many questions (the viewer): keeps a
 * 64-bit fingerprint of each distinct backtrace's printed frames (8 bytes
 * a backtrace), so that rankings by stack and leaks without hidden frames
 * read no backtrace. Safe to call while other threads query: the index is
 * used once complete. MT_OK or MT_ERR_NOMEM. */
MT_API int mt_analysis_index_stacks(mt_analysis *a);

/* ---- Codes, functions ----------------------------------------------------- */

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

/* ---- Tallies and estimates ------------------------------------------------- */

/* Sums over a set of sampled objects; add them to combine sets.
 *
 * The Horvitz-Thompson sums are kept in fixed point (units of 2^-32, 128
 * bits, low word first), so that they add exactly: a set's tally is the
 * same whatever the order or grouping its objects were added in (object
 * by object, by backtrace first, on several threads), and so is every
 * estimate made of it. Each object's terms are cut to whole units (an
 * error under 2.4e-10 each). Read them with mt_tally_ht and
 * mt_tally_ht_var. */
typedef struct mt_tally {
  uint64_t samples;   /* sum of nsamples                                   */
  uint64_t objects;   /* sampled objects                                   */
  uint64_t ht_fx[2];  /* Horvitz-Thompson object count: sum of 1/P(sampled) */
  uint64_t var_fx[2]; /* its variance estimate: sum of (1-P)/P^2            */
  double w_max;       /* the largest 1/P of the objects tallied (added last:
                         the interval on the object count uses it; 0 in a
                         tally made by hand falls back to the mean weight) */
} mt_tally;

typedef struct mt_estimate {
  double value, lo, hi; /* point estimate and 95% confidence interval     */
} mt_estimate;

/* to += v, two 128-bit fixed-point sums */
static inline void mt_tally_fx_add(uint64_t to[2], const uint64_t v[2]) {
  uint64_t lo = to[0] + v[0];
  to[1] += v[1] + (lo < v[0]);
  to[0] = lo;
}

/* A fixed-point sum as a double: the same sum gives the same double. */
static inline double mt_tally_fx_value(const uint64_t v[2]) {
  return (double)v[1] * 4294967296.0 + (double)v[0] * (1.0 / 4294967296.0);
}

static inline void mt_tally_add(mt_tally *to, const mt_tally *t) {
  to->samples += t->samples;
  to->objects += t->objects;
  mt_tally_fx_add(to->ht_fx, t->ht_fx);
  mt_tally_fx_add(to->var_fx, t->var_fx);
  if (t->w_max > to->w_max) to->w_max = t->w_max;
}

/* The Horvitz-Thompson object count, and its variance estimate. */
static inline double mt_tally_ht(const mt_tally *t) { return mt_tally_fx_value(t->ht_fx); }
static inline double mt_tally_ht_var(const mt_tally *t) { return mt_tally_fx_value(t->var_fx); }

/* Adds one object of weight w = 1/P (>= 1) and variance term
 * v = (1-P)/P^2 to the Horvitz-Thompson sums and to w_max, for tallies
 * made by hand; samples and objects are the caller's. */
MT_API void mt_tally_add_weight(mt_tally *t, double w, double v);

/* Adds object i to a tally. */
MT_API void mt_tally_object(const mt_analysis *a, size_t i, mt_tally *t);

/* Estimated bytes allocated by the objects tallied (all the program's
 * allocations they stand for, sampled or not). */
MT_API mt_estimate mt_estimate_bytes(const mt_analysis *a, const mt_tally *t);
/* Estimated number of allocations they stand for. */
MT_API mt_estimate mt_estimate_objects(const mt_analysis *a, const mt_tally *t);

/* What the estimators need of a trace: its sampling. Kept by answers that
 * outlive their analysis (a diff's sides). */
typedef struct mt_sampling {
  double rate;       /* per word */
  double word_bytes;
} mt_sampling;

MT_API mt_sampling mt_analysis_sampling(const mt_analysis *a);
MT_API mt_estimate mt_sampling_bytes(const mt_sampling *s, const mt_tally *t);
MT_API mt_estimate mt_sampling_objects(const mt_sampling *s, const mt_tally *t);
/* The bytes of n tallies taken at different rates (several traces), t[k]
 * at sampling s[k]: the sum of their estimates, with Fay and Feuer's gamma
 * interval for a weighted sum of Poisson counts (each sample weighing its
 * trace's bytes per sample), which is mt_sampling_bytes' Garwood interval
 * when the rates are equal (docs/estimators.md). The objects of such
 * tallies need nothing new: their Horvitz-Thompson weights are each
 * object's own, so tallies added with mt_tally_add give the count and its
 * interval (mt_sampling_objects). */
MT_API mt_estimate mt_sampling_bytes_mixed(const mt_sampling *s, const mt_tally *t, size_t n);

/* The tally of every object of the trace. */
MT_API mt_tally mt_analysis_total(const mt_analysis *a);
/* The tally of the objects passing the filter (its `objects` counts
 * them). MT_OK or MT_ERR_NOMEM. */
MT_API int mt_analysis_tally(const mt_analysis *a, const mt_filter *f, mt_tally *t);

/* Sets mask[i] to 1 for each object i passing the filter, else 0 (mask has
 * mt_analysis_object_count entries); *count (may be NULL) receives how
 * many pass. MT_OK or MT_ERR_NOMEM. */
MT_API int mt_analysis_select(const mt_analysis *a, const mt_filter *f,
                              uint8_t *mask, size_t *count);

/* Whether some function of the trace has s[0..len) in its name: whether
 * an `inside`, `not_inside` or `hide` condition on it (mt_filter_names)
 * can select or hide anything. */
MT_API int mt_analysis_has_function_like(const mt_analysis *a, const char *s, size_t len);

/* The names of f's (mt_filter_names, the first MT_FILTER_NAMES_MAX) that
 * no function of the trace has in its name, into out[0..max), in f's
 * order; returns how many were written. */
MT_API size_t mt_filter_unmatched(const mt_analysis *a, const mt_filter *f, mt_filter_name *out,
                                  size_t max);

/* Calls fn(ctx, object, codes, n) for each object passing the filter, in
 * allocation order, with its backtrace as code ids (outermost first; valid
 * during the call). One sequential pass. Stops at fn's first
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

/* Tallies the objects passing the filter by allocation site code:
 * per_code must have mt_analysis_code_count + 1 entries (the last for
 * empty backtraces); it is zeroed first. `total` (may be NULL) receives the
 * sum. MT_OK or MT_ERR_NOMEM. */
MT_API int mt_analysis_tally_sites(const mt_analysis *a, const mt_filter *f,
                                   mt_tally *per_code, mt_tally *total);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_ANALYSIS_H */
