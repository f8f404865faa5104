/*
 * memtrace/profile.h - a trace as a heap profile: the content of a pprof
 * profile (pprof's profile.proto), for pprof and the profiling services
 * that take it.
 *
 * One sample per distinct backtrace (and, unless merged, per allocation
 * source), with four values estimated for the whole program from the
 * trace's sample (docs/estimators.md) and rounded to integers:
 *   alloc_objects  allocations made at the backtrace
 *   alloc_space    bytes they allocated
 *   inuse_objects  of those, the ones still alive at the snapshot
 *   inuse_space    and their bytes
 * The snapshot is the end of the trace (objects never collected), or the
 * time the filter's `live` condition names (a time, the peak): then, as in
 * a heap profile taken at that time, alloc_* count only the allocations
 * made up to it. The other conditions of the filter choose the objects
 * counted. Samples come in bounded memory, one backtrace at a time (beside
 * the analysis: a sum per distinct backtrace up to 64 MiB of them, else 4
 * bytes an object; or, from an analysis that kept no objects, from a second
 * read of the trace); a backtrace may come as more than one sample (pprof
 * adds them up).
 */
#ifndef MEMTRACE_PROFILE_H
#define MEMTRACE_PROFILE_H

#include "memtrace/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  MT_PROFILE_ALLOC_OBJECTS = 0,
  MT_PROFILE_ALLOC_SPACE = 1,
  MT_PROFILE_INUSE_OBJECTS = 2,
  MT_PROFILE_INUSE_SPACE = 3,
  MT_PROFILE_VALUES = 4
};

typedef struct mt_profile_info {
  int snapshot_kind;   /* MT_LIVE_AT_END, MT_LIVE_AT_PEAK or MT_LIVE_AT      */
  uint64_t snapshot;   /* us since the start                                */
  uint64_t covered;    /* the time the profile covers, us (the snapshot, or
                          the trace's end if earlier)                      */
  double period;       /* bytes between samples: word bytes / rate          */
  char error[512];     /* when mt_profile fails reading the trace again: why,
                          naming the trace; else empty                     */
} mt_profile_info;

/* One sample: its backtrace (code ids, outermost first; empty for an
 * allocation with no backtrace), its source (-1 when sources are merged),
 * its values. `shared` is a count of its outermost codes known to be those
 * of the last sample given (at most n and the last sample's n; 0 for the
 * first sample, or when the profile does not know): a writer encoding
 * each sample against the last one need not compare them. More may be
 * shared. `codes` is valid during the call only. Non-zero stops the
 * profile. */
typedef int (*mt_profile_fn)(void *ctx, const uint32_t *codes, size_t n, size_t shared,
                             int source, const int64_t values[MT_PROFILE_VALUES]);

/* Fills *info and calls fn for every sample of the profile of the objects
 * f keeps. MT_OK, fn's non-zero result, or MT_ERR_NOMEM.
 *
 * On an analysis loaded with MT_KEEP_PROFILE that kept no objects
 * (mt_analysis_keeps says MT_KEEP_PROFILE), the samples come from reading
 * its trace files again, with the memory of one backtrace: the same
 * samples, in the same order, as from the analysis MT_KEEP_ALL loads.
 * Then f must be one mt_profile_rereads accepts (MT_ERR_INVALID
 * otherwise), and a trace that changed since the load, or can no longer
 * be read, fails with MT_ERR_INVALID, MT_ERR_IO or MT_ERR_CORRUPT, the
 * reason in info->error; the samples before the failure have been given
 * to fn. */
MT_API int mt_profile(const mt_analysis *a, const mt_filter *f, int merge_sources,
                      mt_profile_info *info, mt_profile_fn fn, void *ctx);

/* Whether mt_profile can take f on an analysis that kept no objects
 * (MT_KEEP_PROFILE): f keeps every object, its snapshot the trace's end
 * (`live` MT_LIVE_ANY or MT_LIVE_AT_END; `hide` is no condition on
 * objects). A caller loads with MT_KEEP_PROFILE for such a filter, and
 * with MT_KEEP_ALL for any other. */
MT_API int mt_profile_rereads(const mt_filter *f);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_PROFILE_H */
