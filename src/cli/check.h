/* Memory limits checked on a trace: `memtrace check` and `memtrace run
 * --check-*` (a CI gate). A limit is broken when the whole 95% interval of
 * its estimate is over it, so that sampling alone rarely fails a build
 * (at rate 1 every figure is exact and the interval is the figure); "at
 * risk" when only the estimate is over (--strict: broken too). Growth
 * against a base trace is broken when it is over the limit and significant
 * (the two traces' intervals do not overlap, as `memtrace diff` decides). */
#ifndef MT_CLI_CHECK_H
#define MT_CLI_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "memtrace/analysis.h"

#define MT_CLI_NO_LIMIT UINT64_MAX

typedef struct mt_cli_limits {
  uint64_t allocated, peak, leaked; /* bytes; MT_CLI_NO_LIMIT: none      */
  const char *base;                 /* a base trace, for growth           */
  /* the base's traces when it is several (read as one): base_paths[0..
   * nbase); nbase 0: `base` alone */
  const char *const *base_paths;
  size_t nbase;
  double growth;                    /* percent; < 0: none                 */
  int strict;                       /* "at risk" counts as broken        */
} mt_cli_limits;

/* The limits' options as text (`memtrace check`'s names, or run's
 * --check-* ones), parsed by mt_cli_limits_parse. */
typedef struct mt_cli_limit_texts {
  const char *allocated, *peak, *leaked, *base, *growth;
  int strict;
} mt_cli_limit_texts;

/* Parses the texts (sizes as the filter language writes them: 512, 64k,
 * 1.5G; growth in percent, "10" or "10%"). 0, or -1 with a message naming
 * the option in err[0..n); `names` are the options' spellings, in the
 * order of mt_cli_limit_texts' fields. */
int mt_cli_limits_parse(const mt_cli_limit_texts *t, const char *const names[5],
                        mt_cli_limits *out, char *err, size_t n);

/* Whether any limit is set. */
int mt_cli_limits_any(const mt_cli_limits *l);

/* Checks the objects of `a` (the trace at path) passing f against the
 * limits, and prints each limit's figure with its interval, its verdict
 * and, when it is not met, the sites that make it, then the rule. Returns
 * 0 when every limit is met (at risk included, unless strict), 1 when one
 * is broken, -1 when the base trace cannot be read (said). */
int mt_cli_check(FILE *out, const char *path, const mt_analysis *a, const mt_filter *f,
                 const mt_cli_limits *l);

#endif
