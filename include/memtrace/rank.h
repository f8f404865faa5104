/*
 * memtrace/rank.h - allocations grouped and ranked: by allocation site
 * (function or line), by stack, leaks; the main callers of a site; the
 * difference between two traces.
 *
 * An allocation site is the innermost source location of an allocation's
 * backtrace, skipping up to 2 codes the trace has no location for
 * (memtrace's rule); a backtrace with no described code in that reach is
 * named by its last code, an empty one by nothing. A stack is a backtrace
 * as printed: every location of every code, innermost first, a code the
 * trace never described as one frame of its own, the frames the filter
 * hides left out. Backtraces that print alike are one stack.
 *
 * Groups are ranked on their tallies: by estimated bytes (the sample
 * count), by estimated objects (the Horvitz-Thompson count), or, for
 * leaks, by their oldest allocation; ties are broken by name (a site's
 * function, file, line; a stack's frames innermost first), so answers are
 * deterministic. Estimates and intervals of a group come from its summed
 * tally, never from combining per-member intervals.
 *
 * Ranking by stack works in bounded memory: groups are counted by a
 * 64-bit fingerprint of their printed frames, in passes over slices of the
 * fingerprints when the trace has more groups than a pass holds. Two
 * different stacks share a fingerprint with probability ~g^2 / 2^65 for g
 * stacks.
 *
 * Strings in the answers point into the analysis: valid until it is freed.
 */
#ifndef MEMTRACE_RANK_H
#define MEMTRACE_RANK_H

#include "memtrace/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mt_group_by {
  MT_BY_FUNCTION = 0, /* the site's function (name and file)      */
  MT_BY_LINE = 1,     /* the site's function and line             */
  MT_BY_STACK = 2     /* the whole stack                          */
} mt_group_by;

typedef enum mt_rank_order {
  MT_ORDER_BYTES = 0,   /* most estimated bytes first                        */
  MT_ORDER_OBJECTS = 1, /* most estimated objects first                      */
  MT_ORDER_OLDEST = 2   /* oldest allocation first, then most bytes (leaks)  */
} mt_rank_order;

/* What a group is named by. */
enum {
  MT_SITE_LOCATION = 0, /* a source location                                 */
  MT_SITE_CODE = 1,     /* a code the trace never described                  */
  MT_SITE_NONE = 2      /* no backtrace at all                               */
};

typedef struct mt_site {
  int kind;                   /* MT_SITE_*                                   */
  const char *function, *file; /* MT_SITE_LOCATION; "" otherwise             */
  uint32_t line;              /* 0 when grouping by function                 */
  uint64_t code;              /* MT_SITE_CODE: the code's value              */
} mt_site;

/* One frame of a stack as printed: a location, or (function NULL) a code
 * the trace never described. */
typedef struct mt_stack_frame {
  const char *function, *file;
  uint32_t line;
  uint64_t code;
} mt_stack_frame;

/* A site's main callers (mt_rank_callers): from the site out, the heaviest
 * caller among the group's stacks, then that caller's heaviest caller
 * among the stacks through it, and so on; each with the share of the
 * group's samples that came that way. A function calling itself, or
 * inlined into a function of its name, counts once. */
#define MT_CALLERS_MAX 3
typedef struct mt_caller {
  const char *function, *file; /* NULL: an undescribed code, `code`         */
  uint64_t code;
  double share;
} mt_caller;

typedef struct mt_site_callers {
  mt_caller callers[MT_CALLERS_MAX];
  size_t ncallers;
  /* Under a language runtime (CPython, node), the program's own function:
   * the innermost function the runtime compiled and named ("py::",
   * "JS:"...), past the runtime's own library when the stack has another;
   * the heaviest such among the group's stacks, with its share. NULL when
   * no stack of the group has one. */
  const char *program_function, *program_file;
  double program_share;
} mt_site_callers;

typedef struct mt_rank_row {
  mt_site site;            /* by stack: the allocation site of its stack    */
  mt_tally tally;
  mt_estimate bytes, objects;
  uint64_t oldest, newest; /* its objects' allocation times, us            */
  /* by stack: the frames, innermost first, at most the spec's depth of
   * frames_total; a backtrace id of the group */
  const mt_stack_frame *frames;
  size_t nframes, frames_total;
  uint32_t backtrace;
  const mt_site_callers *callers; /* after mt_rank_callers; else NULL      */
  uint32_t trace;          /* mt_rank_traces by process: the trace's index   */
} mt_rank_row;

typedef struct mt_ranking {
  mt_group_by by;
  mt_rank_order order;
  size_t groups;           /* groups with objects passing the filter          */
  mt_rank_row *rows;       /* the first ones, in order                        */
  size_t nrows;
  mt_tally total;          /* the objects passing the filter                  */
  mt_tally trace_total;    /* every object of the trace                       */
  mt_estimate total_bytes, total_objects, trace_bytes, trace_objects;
  mt_sampling sampling;
  uint64_t duration;       /* the trace's, us                                 */
  int by_process;          /* mt_rank_traces by process: rows' `trace` apply */
  size_t ntraces;          /* traces ranked together: 0 or 1 for one        */
  int mixed_rates;         /* their rates differ: `sampling` is the smallest
                              rate's, and estimates are each trace's at its
                              own rate, added (mt_sampling_bytes_mixed)     */
  struct mt__rank_store *store; /* the rows' frames and callers              */
} mt_ranking;

typedef struct mt_rank_spec {
  mt_group_by by;
  mt_rank_order order;
  size_t limit; /* rows wanted; 0: every group                              */
  size_t depth; /* by stack: frames kept per row; 0: all                    */
} mt_rank_spec;

/* Whether a load by f that keeps sums by site (mt_analysis_load_sites)
 * ranks by spec under f: by function or line, f's conditions
 * decided at allocation (mt_filter_decided_at_allocation), none on stacks
 * but `hide`. The load sums each allocation site's objects while reading,
 * in the order a whole load adds them, so the ranking (rows, totals,
 * times) is a whole load's to the last bit, in the memory of the live
 * objects and the sites. It still returns MT_ERR_INVALID for a trace past 71 minutes
 * under a condition on allocation times, whose objects' times coarsen
 * while it is read (a whole load answers then). */
MT_API int mt_rank_folds(const mt_filter *f, const mt_rank_spec *spec);

/* Ranks the objects passing f. MT_OK with *out (free it with
 * mt_ranking_free), MT_ERR_INVALID for a spec it cannot do (MT_ORDER_OLDEST
 * groups by stack only; on a folded load, all but mt_rank_folds' case), or
 * MT_ERR_NOMEM. */
MT_API int mt_rank(const mt_analysis *a, const mt_filter *f, const mt_rank_spec *spec,
                   mt_ranking **out);
MT_API void mt_ranking_free(mt_ranking *r);

/* Several traces ranked as one (a process tree, the runs of a fleet): the
 * sites of each trace's objects passing f, matched by function name and
 * file (and line, by line) as mt_diff matches them, never by code values,
 * which differ between processes; their tallies added, so that estimates
 * and intervals are those of the traces' objects together. With
 * by_process, a site of each trace is a group of its own (its `trace` the
 * index in as[]). Traces of different rates add their estimates, each at
 * its own rate (mixed_rates); a ranking by stack, or oldest first, is one
 * trace's (MT_ERR_INVALID). Strings point into the analyses, which must
 * outlive the ranking. Times (oldest, newest, duration) are each trace's
 * own, since its start. */
MT_API int mt_rank_traces(const mt_analysis *const *as, size_t n, const mt_filter *f,
                          const mt_rank_spec *spec, int by_process, mt_ranking **out);

/* Leaks: the objects never collected (still live at the end of the trace)
 * among those f keeps, grouped by stack, in `order`: most bytes first (the
 * tools' default), most objects, or oldest allocation first. "Never
 * collected" is f's `collected` condition (a window of collection times
 * contradicts it: MT_ERR_INVALID), and its `live` condition "at the end" is
 * implied (so --live-at-peak asks which of them were already allocated at
 * the peak). */
MT_API int mt_leaks(const mt_analysis *a, const mt_filter *f, mt_rank_order order, size_t limit,
                    size_t depth, mt_ranking **out);
/* Leaks of several traces as one (a process tree, a fleet): each trace's
 * groups (mt_leaks) merged where their stacks print the same (functions,
 * files and lines; code values only for frames without a location), their
 * tallies added. With by_process, each trace's groups stay apart (rows'
 * `trace` is the index in as[]). Traces of different rates add their
 * estimates, each at its own rate (mixed_rates). MT_ERR_INVALID when n is
 * 0; rows' times are each trace's own, since its start, and `backtrace` is
 * one of the group's in its trace. One trace without by_process is
 * mt_leaks. */
MT_API int mt_leaks_traces(const mt_analysis *const *as, size_t n, const mt_filter *f,
                           mt_rank_order order, size_t limit, size_t depth, int by_process,
                           mt_ranking **out);
/* The filter mt_leaks applies for f. */
MT_API void mt_leaks_filter(const mt_filter *f, mt_filter *out);

/* Fills each row's `callers` (up to `levels` <= MT_CALLERS_MAX callers)
 * for a ranking by function or by line of the objects passing f: one pass
 * over their backtraces. MT_OK, MT_ERR_INVALID (a ranking by stack), or
 * MT_ERR_NOMEM. */
MT_API int mt_rank_callers(const mt_analysis *a, const mt_filter *f, mt_ranking *r,
                           size_t levels);

/* The site of a row as text into buf (n bytes): "function (file)", with
 * ":line" when by line (and by stack), "#hex" for a code, "(no
 * backtrace)". Returns buf. */
MT_API const char *mt_site_text(const mt_site *s, int with_line, char *buf, size_t n);

/* ---- Two traces ------------------------------------------------------------ */

/* Sites of two traces matched by function name and file (and line, by
 * line), never by code values, which differ between runs; sites with no
 * location pooled as one, empty backtraces as another. A change is
 * significant when the 95% intervals of the site's bytes in the two traces
 * do not overlap: conservative, it rarely flags what sampling alone
 * explains and may miss small real changes. A site absent from one trace
 * has there the estimate of zero samples (0, up to 3.7 / rate x word
 * bytes), so a site must be clearly sampled to count as new or gone. Rows
 * come significant first, then by the size of the change in bytes, then
 * by name. Each side's analysis is needed only while it is added. */
enum { MT_DIFF_BASE = 0, MT_DIFF_NEW = 1 };

typedef struct mt_diff_side {
  mt_tally tally;
  mt_estimate bytes, objects;
  int present;
} mt_diff_side;

typedef struct mt_diff_row {
  mt_site site;       /* kind MT_SITE_CODE: every site with no location    */
  mt_diff_side side[2];
  int significant;
} mt_diff_row;

typedef struct mt_diff {
  mt_group_by by;     /* function or line                                  */
  mt_diff_row *rows;  /* every site, in order (after mt_diff_finish)       */
  size_t nrows, nsignificant;
  mt_tally total[2];
  mt_estimate total_bytes[2], total_objects[2];
  mt_sampling sampling[2];
  size_t ntraces[2];  /* traces added to each side                          */
  int total_significant;
  struct mt__diff_store *store;
} mt_diff;

/* A diff by function or by line (MT_ERR_INVALID by stack). */
MT_API int mt_diff_new(mt_group_by by, mt_diff **out);
/* Adds a trace's sites passing f to side MT_DIFF_BASE or MT_DIFF_NEW
 * (names are copied: the analysis may be freed after). Several traces on
 * one side (a process tree, a fleet) add their tallies, and must share
 * that side's sample rate and word size (MT_ERR_INVALID otherwise); the
 * two sides may differ. */
MT_API int mt_diff_add(mt_diff *d, int side, const mt_analysis *a, const mt_filter *f);
/* Computes the significance and orders the rows, once both sides are in. */
MT_API int mt_diff_finish(mt_diff *d);
MT_API void mt_diff_free(mt_diff *d);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_RANK_H */
