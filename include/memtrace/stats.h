/*
 * memtrace/stats.h - allocation statistics and the live heap over time.
 *
 * Statistics: the figures of Jane Street's ocaml-alloc-stats notebook (a
 * size histogram, the share of large blocks, size moments) and more
 * (lifetimes, sources, promotion, chunks of allocation time), estimated for
 * the whole program from the sampled objects passing a filter:
 *  - P, the chance that an allocation of w words was sampled at all, is
 *    1 - (1 - rate)^w, where w counts the OCaml header word for minor and
 *    major blocks (the sampler draws over it too) and not for external ones;
 *  - allocations: Horvitz-Thompson, the sum of 1/P (the tallies' `ht`);
 *  - bytes: samples / rate x word bytes (memtrace's own estimator);
 *  - size moments, for sizes in words (header excluded): `population`
 *    weights each object by 1/P (ratio estimates: mean = sum(x/P) /
 *    sum(1/P), variance = sum((x-mean)^2/P) / sum(1/P)); `sampled` weights
 *    each by 1 (variance divided by the count). The largest size is the
 *    largest sampled one.
 * At rate 1 every allocation is sampled, P = 1, and all of these are exact.
 *
 * The live heap: at the end of each of N equal bins over the trace, the
 * live bytes of every object (exact for the sampled objects: allocated at
 * or before the bin's end and not yet collected) and of those passing a
 * filter; within each bin the least and most of every object's, from the
 * trace's envelope (bins finer than the envelope's get the extremes of the
 * envelope bins they overlap, bounds of the truth); the exact peak.
 */
#ifndef MEMTRACE_STATS_H
#define MEMTRACE_STATS_H

#include "memtrace/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Statistics ------------------------------------------------------------ */

/* Size bins in words (0-32, 33-256, 257-10000, over 10000; OCaml allocates
 * blocks of up to 256 words on the minor heap); lifetime bins by decade of
 * microseconds (bin 0: under 1 us; bin k: [10^(k-1), 10^k)). */
#define MT_STATS_SIZE_BINS 4
#define MT_STATS_LIFE_BINS 21
/* The finer histograms: sizes in bytes by power of two (bin b: [2^b,
 * 2^(b+1)), bin 0 also 0), lifetimes by third of a decade of microseconds
 * (bin 0: under 1 us; bin b: [10^((b-1)/3), 10^(b/3))). */
#define MT_STATS_SIZE_LOG2_BINS 64
#define MT_STATS_LIFE_FINE_BINS 64

typedef struct mt_moments {
  double n, mean, m2; /* weight, mean, sum of weighted squared deviations */
  uint64_t max;       /* largest size (words) */
} mt_moments;

/* The variance of a moments record (m2 / n; 0 when empty). */
MT_API double mt_moments_variance(const mt_moments *m);

typedef struct mt_stats_group {
  uint64_t from, to;                    /* allocation times covered, us      */
  mt_tally all;
  mt_tally size[MT_STATS_SIZE_BINS];
  mt_tally life[MT_STATS_LIFE_BINS];    /* collected objects only            */
  mt_tally never;                       /* never collected                   */
  mt_tally source[3];                   /* by mt_source                      */
  mt_tally promoted;                    /* minor objects promoted            */
  mt_moments sampled, population;
} mt_stats_group;

typedef struct mt_stats {
  mt_sampling sampling;
  uint64_t duration;                    /* the trace's, us                   */
  int nlife;                            /* lifetime bins in use: 1 + the
                                           digits of the duration           */
  mt_stats_group all;                   /* every object passing the filter   */
  mt_stats_group *chunks;               /* nchunks equal spans of allocation
                                           time (with nchunks > 1)          */
  size_t nchunks;
  mt_tally size_log2[MT_STATS_SIZE_LOG2_BINS];  /* of `all` */
  mt_tally life_fine[MT_STATS_LIFE_FINE_BINS];
} mt_stats;

/* Statistics of the objects passing f, and with nchunks > 1 of each of
 * nchunks equal spans of the allocation times the filter allows (within
 * the trace; chunk k starts at the first whole microsecond at or after
 * from + k (to - from) / nchunks). MT_OK, MT_ERR_INVALID (nchunks 0), or
 * MT_ERR_NOMEM. Free with mt_stats_free. */
MT_API int mt_stats_compute(const mt_analysis *a, const mt_filter *f, size_t nchunks,
                            mt_stats **out);
MT_API void mt_stats_free(mt_stats *s);
/* The finer histograms alone: size_log2, life_fine and all.never equal to
 * mt_stats_compute's (nchunks 1), as are sampling, duration, nlife,
 * nchunks and all's time span; the groups' other tallies and moments are
 * zero. Far cheaper: no groups, no moments. Errors as mt_stats_compute's. */
MT_API int mt_stats_histograms(const mt_analysis *a, const mt_filter *f, mt_stats **out);

/* Bin k's bounds in words (max UINT64_MAX for the last, open, bin). */
MT_API void mt_stats_size_bin(int k, uint64_t *min_words, uint64_t *max_words);
/* Lifetime bin k's bounds in microseconds, [from, to) (to UINT64_MAX: open). */
MT_API void mt_stats_life_bin(int k, uint64_t *from_us, uint64_t *to_us);
/* Bin k's names: "0-32", "33-256", "257-10000", ">10000" (words); "<1 us",
 * "1-10 us", "0.1-1 ms"... (writes into buf, n bytes, and returns it). */
MT_API const char *mt_stats_size_name(int k);
MT_API const char *mt_stats_life_name(int k, char *buf, size_t n);
/* The finer histograms' bin bounds: bytes, and seconds. */
MT_API void mt_stats_size_log2_bin(int b, double *lo_bytes, double *hi_bytes);
MT_API void mt_stats_life_fine_bin(int b, double *lo_s, double *hi_s);

/* ---- The live heap over time ---------------------------------------------- */

typedef struct mt_timeline {
  size_t nbins;
  double *end;          /* each bin's end, us since the start              */
  double *live;         /* every object: live bytes at the bin's end       */
  double *min, *max;    /* every object: least and most within the bin     */
  double *filtered;     /* the objects passing the filter, at the bin's end */
  int filter_selects_all; /* then filtered equals live                     */
  mt_sampling sampling;   /* several traces: the first one's              */
  uint64_t duration;    /* us                                              */
  uint64_t start;       /* us since the epoch: where time 0 is             */
  size_t ntraces;       /* the traces it covers                            */
  /* peak_exact: the exact peak of live samples, first reached at peak_time
   * (us); else (mt_timeline_traces) the highest bin end, its bytes with no
   * interval. */
  int peak_exact;
  uint64_t peak_time;
  mt_estimate peak_bytes;
  /* the process's resident memory at each bin's end (mt_timeline_add_rss),
   * bytes: RssAnon, RssFile, and their sum with RssShmem; NULL without */
  double *rss_anon, *rss_file, *rss_total;
} mt_timeline;

/* nbins equal bins covering [0, the trace's duration] (a trace of one
 * instant gets bins over its first microsecond). MT_OK, MT_ERR_INVALID
 * (nbins 0), or MT_ERR_NOMEM. Free with mt_timeline_free. */
MT_API int mt_timeline_compute(const mt_analysis *a, const mt_filter *f, size_t nbins,
                               mt_timeline **out);
/* mt_timeline_compute's answer for the trace at `path`, made while it is
 * read: the memory of a live-only load (MT_KEEP_LIVE), whatever the
 * trace's length. The bins are placed before reading, from the span the
 * packet headers give (mt_trace_span), and the events read must confirm
 * it. Where that cannot be done (no regular file; f live at the peak or
 * with a condition on stacks; a trace past 71 minutes, whose times a
 * whole load keeps coarser, under a condition on times; a span the events
 * do not confirm) the trace is loaded whole (again) and answered from that.
 * Either way the answer is mt_timeline_compute's on a whole load, field
 * for field. *a receives the analysis it comes from (live-only or whole:
 * its info, duration, peak and total hold for the whole trace; free it
 * with mt_analysis_free), on a failed load one holding the message, as
 * mt_analysis_load's. MT_OK, a load's error, MT_ERR_INVALID (nbins 0), or
 * MT_ERR_NOMEM. */
MT_API int mt_timeline_load(mt_analysis **a, mt_timeline **out, const char *path,
                            const mt_filter *f, size_t nbins, mt_progress_fn progress,
                            void *ctx);
/* Several traces' live heaps added on one clock, the wall clock, each at
 * its own rate (traces of one rate are better read as one analysis,
 * mt_analysis_load_many, whose timeline has an exact peak): bins
 * cover from the earliest trace's start to the latest one's end, each
 * trace counted from its own start (mt_trace_info.start_time); a trace
 * holds nothing outside its span (its objects never collected go at its
 * end: a process holds nothing once it has exited), and bytes are each
 * trace's at its own rate. The least and most within a bin are the sums of
 * each trace's, so they bound the truth. One trace is
 * mt_timeline_compute. MT_OK, MT_ERR_INVALID (nbins or n 0), or
 * MT_ERR_NOMEM. */
MT_API int mt_timeline_traces(const mt_analysis *const *as, size_t n, const mt_filter *f,
                              size_t nbins, mt_timeline **out);
MT_API void mt_timeline_free(mt_timeline *t);

/* ---- Resident memory beside a trace --------------------------------------- */

/* What `memtrace run` records beside a trace file, TRACE.rss (docs/format.md,
 * "Resident memory beside the trace"): every ~50 ms, the resident memory of
 * the program and its descendants, summed per sample. */
typedef struct mt_rss {
  size_t n;
  uint64_t *time;            /* us since the epoch, increasing          */
  double *anon, *file, *shmem; /* bytes: RssAnon, RssFile, RssShmem      */
} mt_rss;

/* Reads trace_path.rss. MT_OK with *out (free it with mt_rss_free),
 * MT_ERR_INVALID when there is none (or it holds no sample), MT_ERR_IO
 * when it cannot be read, MT_ERR_NOMEM. A line cut short ends it. */
MT_API int mt_rss_load(const char *trace_path, mt_rss **out);
MT_API void mt_rss_free(mt_rss *r);
/* Sets t's resident series: at each bin's end, the last sample at or
 * before it (0 before the first). MT_OK or MT_ERR_NOMEM. */
MT_API int mt_timeline_add_rss(mt_timeline *t, const mt_rss *r);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_STATS_H */
