/* The query parameters of the viewer's API (docs/viewer.md): the filter
 * (memtrace/filter.h, by its parameter names) and each endpoint's own,
 * parsed and validated. */
#ifndef MT_VIEWER_PARAMS_H
#define MT_VIEWER_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/filter.h"

#define MT_VQ_MAX_STR 1024

/* Which parameters an endpoint takes, besides the filter. */
enum {
  MT_VP_FILTER = 1 << 0,
  MT_VP_BINS = 1 << 1,
  MT_VP_FLAME = 1 << 2, /* focus, min, weight */
  MT_VP_N = 1 << 3,
  MT_VP_SORT = 1 << 4,  /* functions: self or total */
  MT_VP_BY = 1 << 5,    /* sites: function or line */
  MT_VP_CHUNKS = 1 << 6
};

typedef struct mt_vquery {
  mt_filter f; /* inside, not_inside and hide point into text */
  char text[3][MT_VQ_MAX_STR + 1];
  int bins;      /* timeline, default 600 */
  int64_t focus; /* -1: none */
  double min;    /* flame, default 0.001 */
  int by_objects;
  int n;          /* default 50 */
  int sort_total; /* functions */
  int by_line;    /* sites: 1 (default) or by function */
  int chunks;     /* stats, default 1 */
  int has_filter; /* some filter parameter was given */
} mt_vquery;

void mt_vquery_init(mt_vquery *q);
/* Applies one parameter; returns 0, or -1 with a message in err naming the
 * parameter and saying what is wrong with its value. `allowed` is a set of
 * MT_VP_ flags. */
int mt_vquery_set(mt_vquery *q, unsigned allowed, const char *key, const char *value,
                  char *err, size_t errlen);
/* A copy of a query whose filter points into the copy's own strings. */
void mt_vquery_copy(mt_vquery *to, const mt_vquery *from);

#endif
