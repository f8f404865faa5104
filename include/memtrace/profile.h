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
 * bytes an object); a backtrace may come as more than one sample (pprof
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
} mt_profile_info;

/* One sample: its backtrace (code ids, outermost first; empty for an
 * allocation with no backtrace), its source (-1 when sources are merged),
 * its values. Non-zero stops the profile. */
typedef int (*mt_profile_fn)(void *ctx, const uint32_t *codes, size_t n, int source,
                             const int64_t values[MT_PROFILE_VALUES]);

/* Fills *info and calls fn for every sample of the profile of the objects
 * f keeps. MT_OK, fn's non-zero result, or MT_ERR_NOMEM. */
MT_API int mt_profile(const mt_analysis *a, const mt_filter *f, int merge_sources,
                      mt_profile_info *info, mt_profile_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_PROFILE_H */
