#include "params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_vquery_init(mt_vquery *q) {
  memset(q, 0, sizeof *q);
  mt_filter_init(&q->f);
  q->bins = 600;
  q->focus = -1;
  q->min = 0.001;
  q->n = 50;
  q->by_line = 1;
  q->chunks = 1;
}

void mt_vquery_copy(mt_vquery *to, const mt_vquery *from) {
  *to = *from;
  const char **texts[3] = {&to->f.inside, &to->f.not_inside, &to->f.hide};
  for (int k = 0; k < 3; k++)
    if (*texts[k]) *texts[k] = to->text[k];
}

static int bad(char *err, size_t n, const char *key, const char *value, const char *want) {
  snprintf(err, n, "bad value for '%s': '%.300s' (%s)", key, value, want);
  return -1;
}

static int whole(const char *v, long lo, long hi, int *out) {
  if (!*v || strlen(v) > 9) return -1;
  long x = 0;
  for (const char *p = v; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    x = x * 10 + (*p - '0');
  }
  if (x < lo || x > hi) return -1;
  *out = (int)x;
  return 0;
}

/* A finite fraction in [0, 1], digits and a point only. */
static int fraction(const char *v, double *out) {
  if (!*v || strlen(v) > 30 || strspn(v, "0123456789.") != strlen(v)) return -1;
  char *e;
  errno = 0;
  double x = strtod(v, &e);
  if (*e || errno || !(x >= 0) || x > 1) return -1;
  *out = x;
  return 0;
}

/* The filter's strings are kept in the query, which may outlive the
 * request's parameters. */
static int filter_param(mt_vquery *q, const char *key, const char *v, char *err, size_t n) {
  static const char *const texts[3] = {"inside", "not_inside", "hide"};
  for (int k = 0; k < 3; k++) {
    if (strcmp(key, texts[k]) != 0) continue;
    if (strlen(v) > MT_VQ_MAX_STR) return bad(err, n, key, v, "at most 1024 bytes");
    strcpy(q->text[k], v);
    v = q->text[k];
  }
  char why[600];
  int rc = mt_filter_set(&q->f, key, v, why, sizeof why);
  if (rc == MT_OK) return 0;
  if (rc > 0) return 1;
  snprintf(err, n, "bad value for '%s': %s", key, why);
  return -1;
}

int mt_vquery_set(mt_vquery *q, unsigned allowed, const char *key, const char *value,
                  char *err, size_t errlen) {
  const char *v = value ? value : "";
  mt_filter probe;
  mt_filter_init(&probe);
  char why[8];
  int is_filter = mt_filter_set(&probe, key, "", why, sizeof why) == MT_OK;
  if (is_filter) {
    if (!(allowed & MT_VP_FILTER)) {
      snprintf(err, errlen, "this endpoint takes no filter: unknown parameter '%.100s'", key);
      return -1;
    }
    if (*v) q->has_filter = 1;
    return filter_param(q, key, v, err, errlen) ? -1 : 0;
  }
#define IS(k) (strcmp(key, k) == 0)
  if (IS("bins") && (allowed & MT_VP_BINS)) {
    if (*v && whole(v, 10, 4000, &q->bins)) return bad(err, errlen, key, v, "an integer in 10..4000");
  } else if (IS("n") && (allowed & MT_VP_N)) {
    if (*v && whole(v, 1, 10000, &q->n)) return bad(err, errlen, key, v, "an integer in 1..10000");
  } else if (IS("chunks") && (allowed & MT_VP_CHUNKS)) {
    if (*v && whole(v, 1, 1000, &q->chunks))
      return bad(err, errlen, key, v, "an integer in 1..1000");
  } else if (IS("sort") && (allowed & MT_VP_SORT)) {
    if (strcmp(v, "total") == 0) q->sort_total = 1;
    else if (strcmp(v, "self") == 0 || !*v) q->sort_total = 0;
    else return bad(err, errlen, key, v, "'self' or 'total'");
  } else if (IS("by") && (allowed & MT_VP_BY)) {
    if (strcmp(v, "function") == 0) q->by_line = 0;
    else if (strcmp(v, "line") == 0 || !*v) q->by_line = 1;
    else return bad(err, errlen, key, v, "'function' or 'line'");
  } else if (IS("focus") && (allowed & MT_VP_FLAME)) {
    int id;
    if (!*v) q->focus = -1;
    else if (whole(v, 0, 999999999, &id)) return bad(err, errlen, key, v, "a function id");
    else q->focus = id;
  } else if (IS("min") && (allowed & MT_VP_FLAME)) {
    double m;
    if (*v && fraction(v, &m)) return bad(err, errlen, key, v, "a fraction in 0..1");
    if (*v) q->min = m;
  } else if (IS("weight") && (allowed & MT_VP_FLAME)) {
    if (strcmp(v, "objects") == 0) q->by_objects = 1;
    else if (strcmp(v, "bytes") == 0 || !*v) q->by_objects = 0;
    else return bad(err, errlen, key, v, "'bytes' or 'objects'");
  } else {
    snprintf(err, errlen, "unknown parameter '%.100s'", key);
    return -1;
  }
#undef IS
  return 0;
}
