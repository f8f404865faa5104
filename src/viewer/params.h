/* The query parameters of the viewer's API (docs/viewer.md, "The filter"
 * and each endpoint's own), parsed and validated. */
#ifndef MT_VIEWER_PARAMS_H
#define MT_VIEWER_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/analysis.h"

#define MT_VQ_MAX_STR 256
#define MT_VQ_MAX_HIDE 32

/* Which parameters an endpoint takes, besides the filter. */
enum {
  MT_VP_FILTER = 1 << 0,
  MT_VP_BINS = 1 << 1,
  MT_VP_FLAME = 1 << 2, /* focus, min, weight */
  MT_VP_N = 1 << 3,
  MT_VP_SORT = 1 << 4,
};

typedef struct mt_vquery {
  mt_filter f; /* inside/not_inside point into the strings below */
  char inside[MT_VQ_MAX_STR + 1], not_inside[MT_VQ_MAX_STR + 1];
  char hide_buf[MT_VQ_MAX_STR * 4 + 1];
  const char *hide[MT_VQ_MAX_HIDE];
  int nhide;
  int bins;      /* timeline, default 600 */
  int64_t focus; /* -1: none */
  double min;    /* flame, default 0.001 */
  int by_objects;
  int n;          /* default 50 */
  int sort_total; /* functions */
  int has_filter; /* some filter parameter was given */
} mt_vquery;

void mt_vquery_init(mt_vquery *q);
/* Applies one parameter; returns 0, or -1 with a message in err naming the
 * parameter and its value. `allowed` is a set of MT_VP_ flags. */
int mt_vquery_set(mt_vquery *q, unsigned allowed, const char *key, const char *value,
                  char *err, size_t errlen);
/* Whether a function name is hidden by the query's `hide`. */
int mt_vquery_hidden(const mt_vquery *q, const char *name);

#endif
