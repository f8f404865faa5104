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
}

/* A finite non-negative decimal number, all of [s, end). */
static int number(const char *s, const char *end, double *out) {
  char buf[64];
  size_t n = (size_t)(end - s);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  /* strtod also takes "inf", "nan", hex and leading blanks: refuse them */
  for (size_t i = 0; i < n; i++)
    if (!strchr("0123456789.eE+-", buf[i])) return -1;
  char *e;
  errno = 0;
  double v = strtod(buf, &e);
  if (*e || errno || !isfinite(v) || v < 0 || buf[0] == '-') return -1;
  *out = v;
  return 0;
}

static int integer(const char *s, const char *end, uint64_t *out) {
  if (s == end || end - s > 19) return -1;
  uint64_t v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  *out = v;
  return 0;
}

static uint64_t seconds_to_us(double s) {
  double us = s * 1e6;
  return us >= 1.8e19 ? UINT64_MAX - 1 : (uint64_t)llround(us);
}

/* "A..B" with either side empty; times in seconds to us, or integers. */
static int range(const char *v, int ints, uint64_t *lo, uint64_t *hi) {
  const char *dots = strstr(v, "..");
  if (!dots) return -1;
  const char *end = v + strlen(v);
  *lo = 0;
  *hi = UINT64_MAX;
  if (ints) {
    if (dots != v && integer(v, dots, lo)) return -1;
    if (dots + 2 != end && integer(dots + 2, end, hi)) return -1;
  } else {
    double a, b;
    if (dots != v) {
      if (number(v, dots, &a)) return -1;
      *lo = seconds_to_us(a);
    }
    if (dots + 2 != end) {
      if (number(dots + 2, end, &b)) return -1;
      *hi = seconds_to_us(b);
    }
  }
  return *lo <= *hi ? 0 : -1;
}

static int bad(char *err, size_t n, const char *key, const char *value, const char *want) {
  snprintf(err, n, "bad value for '%s': '%.300s' (%s)", key, value, want);
  return -1;
}

static int small_int(const char *v, long lo, long hi, int *out) {
  uint64_t x;
  if (integer(v, v + strlen(v), &x) || x < (uint64_t)lo || x > (uint64_t)hi) return -1;
  *out = (int)x;
  return 0;
}

int mt_vquery_set(mt_vquery *q, unsigned allowed, const char *key, const char *value,
                  char *err, size_t errlen) {
  const char *v = value ? value : "";
  int filter = (allowed & MT_VP_FILTER) != 0;
  mt_filter *f = &q->f;
#define IS(k) (strcmp(key, k) == 0)
  int known_filter = IS("alloc") || IS("live") || IS("collected") || IS("size") ||
                     IS("lifetime") || IS("source") || IS("inside") || IS("not_inside") ||
                     IS("hide");
  if (known_filter && !filter) {
    snprintf(err, errlen, "this endpoint takes no filter: unknown parameter '%.100s'", key);
    return -1;
  }
  if (known_filter && !*v) return 0; /* empty = absent */
  if (known_filter) q->has_filter = 1;
  if (IS("alloc")) {
    uint64_t hi;
    if (range(v, 0, &f->alloc_from, &hi))
      return bad(err, errlen, key, v, "FROM..TO in seconds, FROM <= TO");
    /* the filter's range is half-open; TO is meant inclusively */
    f->alloc_to = hi == UINT64_MAX ? hi : hi + 1;
  } else if (IS("live")) {
    double t;
    if (strcmp(v, "peak") == 0) f->live = MT_LIVE_AT_PEAK;
    else if (strcmp(v, "end") == 0) f->live = MT_LIVE_AT_END;
    else if (number(v, v + strlen(v), &t) == 0) {
      f->live = MT_LIVE_AT;
      f->live_at = seconds_to_us(t);
    } else return bad(err, errlen, key, v, "a time in seconds, 'peak' or 'end'");
  } else if (IS("collected")) {
    uint64_t hi;
    if (strcmp(v, "never") == 0) f->collected = MT_COLLECTED_NEVER;
    else if (range(v, 0, &f->collect_from, &hi) == 0) {
      f->collected = MT_COLLECTED_IN;
      f->collect_to = hi == UINT64_MAX ? hi : hi + 1;
    } else return bad(err, errlen, key, v, "FROM..TO in seconds or 'never'");
  } else if (IS("size")) {
    if (range(v, 1, &f->size_min, &f->size_max))
      return bad(err, errlen, key, v, "MIN..MAX in bytes, integers, MIN <= MAX");
  } else if (IS("lifetime")) {
    if (range(v, 0, &f->lifetime_min, &f->lifetime_max))
      return bad(err, errlen, key, v, "MIN..MAX in seconds, MIN <= MAX");
  } else if (IS("source")) {
    unsigned s = 0;
    char buf[64];
    if (strlen(v) >= sizeof buf) return bad(err, errlen, key, v, "minor, major, external");
    strcpy(buf, v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (strcmp(t, "minor") == 0) s |= 1u << MT_SOURCE_MINOR;
      else if (strcmp(t, "major") == 0) s |= 1u << MT_SOURCE_MAJOR;
      else if (strcmp(t, "external") == 0) s |= 1u << MT_SOURCE_EXTERNAL;
      else return bad(err, errlen, key, v, "a comma list of minor, major, external");
    }
    if (!s) return bad(err, errlen, key, v, "a comma list of minor, major, external");
    f->sources = s;
  } else if (IS("inside") || IS("not_inside")) {
    if (strlen(v) > MT_VQ_MAX_STR) return bad(err, errlen, key, v, "at most 256 bytes");
    char *dst = IS("inside") ? q->inside : q->not_inside;
    strcpy(dst, v);
    if (IS("inside")) f->inside = dst;
    else f->not_inside = dst;
  } else if (IS("hide")) {
    if (strlen(v) >= sizeof q->hide_buf) return bad(err, errlen, key, v, "too long");
    strcpy(q->hide_buf, v);
    q->nhide = 0;
    char *save = NULL;
    for (char *t = strtok_r(q->hide_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (q->nhide == MT_VQ_MAX_HIDE) return bad(err, errlen, key, v, "at most 32 strings");
      q->hide[q->nhide++] = t;
    }
  } else if (IS("bins") && (allowed & MT_VP_BINS)) {
    if (*v && small_int(v, 10, 4000, &q->bins))
      return bad(err, errlen, key, v, "an integer in 10..4000");
  } else if (IS("n") && (allowed & MT_VP_N)) {
    if (*v && small_int(v, 1, 10000, &q->n))
      return bad(err, errlen, key, v, "an integer in 1..10000");
  } else if (IS("sort") && (allowed & MT_VP_SORT)) {
    if (strcmp(v, "total") == 0) q->sort_total = 1;
    else if (strcmp(v, "self") == 0 || !*v) q->sort_total = 0;
    else return bad(err, errlen, key, v, "'self' or 'total'");
  } else if (IS("focus") && (allowed & MT_VP_FLAME)) {
    uint64_t id;
    if (!*v) q->focus = -1;
    else if (integer(v, v + strlen(v), &id) || id > UINT32_MAX - 2)
      return bad(err, errlen, key, v, "a function id");
    else q->focus = (int64_t)id;
  } else if (IS("min") && (allowed & MT_VP_FLAME)) {
    double m;
    if (*v && (number(v, v + strlen(v), &m) || m > 1))
      return bad(err, errlen, key, v, "a fraction in 0..1");
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

int mt_vquery_hidden(const mt_vquery *q, const char *name) {
  for (int i = 0; i < q->nhide; i++)
    if (strstr(name, q->hide[i])) return 1;
  return 0;
}
