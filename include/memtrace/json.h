/*
 * memtrace/json.h - the answers as JSON: one writer, one document per
 * answer, the same for the command line's `--format json` and the viewer's
 * API. docs/json.md is the schema.
 *
 * The writer fills a growable buffer. Strings are escaped (quotes,
 * backslash, control characters) and invalid UTF-8 becomes U+FFFD, so any
 * name a trace holds gives valid JSON; non-finite numbers are written as
 * null; integers below 2^53 exactly, other numbers with the shortest text
 * that reads back to the same double. With `script_safe`, "</" is written
 * "<\/" so the text can sit inside an HTML <script> element; with `pretty`
 * (set before the first value), the text is indented for people. An
 * allocation failure sets `oom` and later writes do nothing: check it once
 * at the end. Commas are inserted between values.
 *
 * The documents' functions write members into an object the caller has
 * opened (mt_json_obj), so that a front end can add its own (the command
 * line names the command and the trace). Every estimate is
 * {"value": V, "lo": LO, "hi": HI}: the point estimate and its 95%
 * interval.
 */
#ifndef MEMTRACE_JSON_H
#define MEMTRACE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The writer ------------------------------------------------------------ */

typedef struct mt_json {
  char *buf;
  size_t len, cap;
  int oom;
  int script_safe;
  int pretty;     /* one member or element a line, indented by two spaces */
  int depth;      /* open objects and arrays */
  int need_comma; /* a value was written at this level */
  int after_key;  /* a key was just written: no comma before the value */
} mt_json;

MT_API void mt_json_init(mt_json *j);
MT_API void mt_json_free(mt_json *j);
/* Hands the text (NUL-terminated; NULL after an allocation failure) to the
 * caller, who frees it; the writer is reset, its options kept. */
MT_API char *mt_json_take(mt_json *j, size_t *len);

MT_API void mt_json_obj(mt_json *j); /* { */
MT_API void mt_json_end_obj(mt_json *j);
MT_API void mt_json_arr(mt_json *j); /* [ */
MT_API void mt_json_end_arr(mt_json *j);
MT_API void mt_json_key(mt_json *j, const char *key);
MT_API void mt_json_str(mt_json *j, const char *s); /* NULL writes null */
MT_API void mt_json_strn(mt_json *j, const char *s, size_t n);
MT_API void mt_json_num(mt_json *j, double v);
MT_API void mt_json_int(mt_json *j, int64_t v);
MT_API void mt_json_uint(mt_json *j, uint64_t v);
MT_API void mt_json_bool(mt_json *j, int v);
MT_API void mt_json_null(mt_json *j);
/* Inserts already-valid JSON text as one value. */
MT_API void mt_json_raw(mt_json *j, const char *text, size_t n);

/* ---- The answers' documents (docs/json.md) ------------------------------- */

struct mt_analysis;
struct mt_filter;
struct mt_ranking;
struct mt_diff;
struct mt_stats;
struct mt_timeline;
struct mt_flame;
struct mt_function_row;
struct mt_estimate;
struct mt_tally;

/* A value: {"value", "lo", "hi"}. */
MT_API void mt_json_estimate(mt_json *j, const struct mt_estimate *e);
/* A value: the filter's conditions ({} when none). */
MT_API void mt_json_filter(mt_json *j, const struct mt_filter *f);

/* Members, into an open object: */
/* The trace: executable, pid, host, times, sample rate, totals, peak. */
MT_API void mt_json_info(mt_json *j, const struct mt_analysis *a);
/* The filter's total and its share of the trace (the viewer's summary). */
MT_API void mt_json_summary(mt_json *j, const struct mt_analysis *a, const struct mt_filter *f);
/* A ranking by site or by stack (memtrace top, the viewer's sites and
 * paths), with the filter that made it. */
MT_API void mt_json_ranking(mt_json *j, const struct mt_ranking *r, const struct mt_filter *f);
/* Leaks (memtrace leaks, the viewer's leaks). */
MT_API void mt_json_leaks(mt_json *j, const struct mt_ranking *r, const struct mt_filter *f);
/* A diff (memtrace diff): its first `limit` rows (0: all); trace names
 * for its sides. */
MT_API void mt_json_diff(mt_json *j, const struct mt_diff *d, const struct mt_filter *f,
                         size_t limit, const char *base_name, const char *new_name);
/* Statistics (memtrace stats, the viewer's stats). */
MT_API void mt_json_stats(mt_json *j, const struct mt_stats *s, const struct mt_filter *f);
/* The finer histograms of the statistics (the viewer's histograms). */
MT_API void mt_json_histograms(mt_json *j, const struct mt_stats *s);
/* The live heap over time (memtrace timeline, the viewer's timeline). */
MT_API void mt_json_timeline(mt_json *j, const struct mt_timeline *t, const struct mt_filter *f);
/* A flame graph (the viewer's flame). */
MT_API void mt_json_flame(mt_json *j, const struct mt_analysis *a, const struct mt_flame *g);
/* The same beside a base trace (a differential flame graph): "base_total",
 * and on each node "base" (its bytes and objects in the base: tallies from
 * mt_flame_match) and "change": "grown" or "shrunk" when the 95% intervals
 * of its bytes here and there do not overlap (memtrace diff's rule), else
 * "same". base NULL: mt_json_flame. */
MT_API void mt_json_flame_diff(mt_json *j, const struct mt_analysis *a, const struct mt_flame *g,
                               const struct mt_analysis *base, const struct mt_tally *base_total,
                               const struct mt_tally *base_callees,
                               const struct mt_tally *base_callers);
/* Hot functions (the viewer's functions); total: the filter's. */
MT_API void mt_json_functions(mt_json *j, const struct mt_analysis *a,
                              const struct mt_function_row *rows, size_t n,
                              const struct mt_filter *f);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_JSON_H */
