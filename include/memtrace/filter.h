/*
 * memtrace/filter.h - which sampled objects a question is about.
 *
 * A filter is a set of conditions on an object's times, size, source and
 * stack; every analysis (memtrace/analysis.h and the answers built on it)
 * takes one. The same language serves the command line (`--size 1k..`) and
 * the viewer's query parameters (`size=1k..`): one table of parameters, one
 * parser, one text for each error.
 *
 *   parameter   command line                 value
 *   alloc       --time FROM..TO              allocated in [FROM, TO) seconds
 *   live        --live-at T, --live-at-peak, alive at T seconds, at the peak of
 *               --live-at-end                the live heap, or never collected
 *   collected   --collected FROM..TO,        collected in [FROM, TO), or never
 *               --never-collected
 *   size        --size MIN..MAX              MIN <= bytes <= MAX (k, M, G, T
 *                                            suffixes: powers of 1024)
 *   lifetime    --lifetime MIN..MAX          MIN <= seconds <= MAX (an object
 *                                            never collected lives to the end)
 *   source      --source S[,S...]            minor, major, external; of the
 *                                            external: mapping (anonymous
 *                                            mappings) or heap (the others)
 *   inside      --inside STR                 a frame's function name contains STR
 *   not_inside  --not-inside STR             no frame's function name contains STR
 *   hide        --hide STR[,STR...]          frames whose function name contains
 *                                            one of them are left out of stacks
 *
 * Time ranges are half-open, so that consecutive windows split a trace
 * without counting an object twice; sizes and lifetimes are closed. Either
 * side of a range may be empty (`1k..`, `..2.5`). `hide` selects no
 * objects: it changes the stacks the answers group by (stacks, leaks, call
 * trees), not allocation sites or statistics.
 *
 * Strings (inside, not_inside, hide) are not copied: the filter points to
 * the values it was given, which must outlive it.
 */
#ifndef MEMTRACE_FILTER_H
#define MEMTRACE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A time that never comes: the free time of an object never collected. */
#define MT_NEVER UINT64_MAX

enum {
  MT_LIVE_ANY = 0,   /* no condition                                      */
  MT_LIVE_AT = 1,    /* alive at `live_at`: allocated at or before it and
                        not yet collected                                 */
  MT_LIVE_AT_PEAK = 2,
  MT_LIVE_AT_END = 3 /* never collected                                   */
};
enum { MT_COLLECTED_ANY = 0, MT_COLLECTED_IN = 1, MT_COLLECTED_NEVER = 2 };

/* Times are microseconds since the trace's start. */
typedef struct mt_filter {
  uint64_t alloc_from, alloc_to;       /* allocated in [from, to)             */
  int live;                            /* MT_LIVE_*                           */
  uint64_t live_at;
  int collected;                       /* MT_COLLECTED_*                      */
  uint64_t collect_from, collect_to;   /* with MT_COLLECTED_IN: [from, to)    */
  uint64_t size_min, size_max;         /* bytes, inclusive                    */
  uint64_t lifetime_min, lifetime_max; /* us, inclusive                       */
  unsigned sources;                    /* bits (1 << MT_SOURCE_x) and
                                          MT_FILTER_MAPPINGS/HEAP; 0 = all    */
  const char *inside;     /* some frame's function name contains this       */
  const char *not_inside; /* no frame's function name contains this         */
  const char *hide;       /* comma-separated; NULL or "" hides nothing       */
} mt_filter;

/* Bits of mt_filter.sources beside (1 << MT_SOURCE_x): the external
 * objects that are anonymous mappings (the innermost frame
 * MT_MAPPING_FILENAME's), and those that are not. */
#define MT_FILTER_MAPPINGS (1u << 3)
#define MT_FILTER_HEAP (1u << 4)

/* A filter that keeps every object and hides nothing. */
MT_API void mt_filter_init(mt_filter *f);

/* Whether the filter keeps every object (`hide` aside). */
MT_API int mt_filter_selects_all(const mt_filter *f);

/* Whether it has a condition on stacks (inside, not_inside) or hides
 * frames. */
MT_API int mt_filter_has_stack_condition(const mt_filter *f);

/* Whether every condition of f on objects is decided when an object is
 * allocated: its allocation time, size and source, and any on stacks; no
 * condition on being alive, collected, or on lifetimes. */
MT_API int mt_filter_decided_at_allocation(const mt_filter *f);

/* Sets parameter `name` (the names of the table above) from its text.
 * An empty value (or NULL) removes the condition, as if never given.
 * Returns MT_OK; MT_ERR_INVALID with a message in err (errlen bytes) that
 * says what is wrong and quotes the bad part, without naming the parameter
 * (the caller knows how the user spelled it); or 1, err untouched, when
 * `name` is no filter parameter. `value` must outlive the filter (inside,
 * not_inside and hide point into it). */
MT_API int mt_filter_set(mt_filter *f, const char *name, const char *value, char *err,
                         size_t errlen);

/* The command line's spelling: if argv[*i] is a filter option ("--size
 * 1k..", "--size=1k..", "--live-at-peak"), applies it, advances *i past its
 * value and returns 1; returns 0 when argv[*i] is no filter option, and -1
 * on a bad or missing value, with the message in err, naming the option. */
MT_API int mt_filter_option(mt_filter *f, int argc, char *const *argv, int *i, char *err,
                            size_t errlen);

/* The command-line options, for usage texts. */
#define MT_FILTER_OPTIONS_HELP                                                  \
  "Filters (combinable):\n"                                                     \
  "  --time FROM..TO        allocated in [FROM, TO) (seconds since the trace\n" \
  "                         start; either side may be omitted)\n"               \
  "  --live-at T            alive at time T (seconds)\n"                        \
  "  --live-at-peak         alive when the live heap peaked\n"                  \
  "  --live-at-end          never collected (leaked, or alive at exit)\n"       \
  "  --collected FROM..TO   collected in [FROM, TO); --never-collected\n"       \
  "  --size MIN..MAX        object size in bytes (suffixes k, M, G, T)\n"       \
  "  --lifetime MIN..MAX    lifetime in seconds\n"                              \
  "  --source S[,S...]      minor, major, external; mapping (anonymous\n"      \
  "                         mappings) or heap (the other external objects)\n" \
  "  --inside STR           a frame's function name contains STR\n"             \
  "  --not-inside STR       no frame's function name contains STR\n"            \
  "  --hide STR[,STR...]    leave frames whose function name contains one of\n" \
  "                         these out of stacks and call trees\n"               \
  "  A STR of these three that no function's name contains is warned of.\n"

/* The filter in words, into buf (n bytes, truncated if short): "none", or
 * its conditions separated by "; " ("allocated in [1 s, 2 s); size 1.00 KiB
 * or more"). Returns the length it needed (as snprintf). */
MT_API size_t mt_filter_describe(const mt_filter *f, char *buf, size_t n);

/* A function name a condition names: its parameter ("inside",
 * "not_inside" or "hide") and the name, name[0..len) (one of hide's
 * comma-separated names is not NUL-terminated). */
typedef struct mt_filter_name {
  const char *param;
  const char *name;
  size_t len;
} mt_filter_name;

/* The function names f's conditions name, into out[0..max): `inside`,
 * `not_inside`, then each of `hide`'s (the empty ones skipped), in that
 * order. Returns their count, which may exceed max (only max are
 * written). With mt_analysis_has_function_like, a name no function has is
 * a condition that selects or hides nothing: most likely misspelled. */
MT_API size_t mt_filter_names(const mt_filter *f, mt_filter_name *out, size_t max);
/* The names the front ends look at (an array of this many; the rest of a
 * longer `hide` list is not looked at). */
#define MT_FILTER_NAMES_MAX 64

/* Whether `hide` hides a function of this name. */
MT_API int mt_filter_hides(const mt_filter *f, const char *function_name);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_FILTER_H */
