/* The filter language (memtrace/filter.h): one table of parameters, their
 * parsers and their words, for the command line and the viewer alike. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/human.h"
#include "memtrace/filter.h"

/* Strings longer than this are refused: no function name is that long, and
 * a filter is matched against every name of a trace. */
#define MAX_TEXT 4096

/* the sources, then the two kinds of external objects (MT_FILTER_MAPPINGS,
 * MT_FILTER_HEAP) */
static const char *const source_names[5] = {"minor", "major", "external", "mapping", "heap"};
#define NSOURCE_NAMES 5

void mt_filter_init(mt_filter *f) {
  memset(f, 0, sizeof *f);
  f->alloc_to = MT_NEVER;
  f->collect_to = MT_NEVER;
  f->size_max = UINT64_MAX;
  f->lifetime_max = UINT64_MAX;
}

static int nonempty(const char *s) { return s && s[0]; }

int mt_filter_selects_all(const mt_filter *f) {
  return f->alloc_from == 0 && f->alloc_to == MT_NEVER && f->live == MT_LIVE_ANY &&
         f->collected == MT_COLLECTED_ANY && f->size_min == 0 && f->size_max == UINT64_MAX &&
         f->lifetime_min == 0 && f->lifetime_max == UINT64_MAX && f->sources == 0 &&
         !nonempty(f->inside) && !nonempty(f->not_inside);
}

int mt_filter_has_stack_condition(const mt_filter *f) {
  return nonempty(f->inside) || nonempty(f->not_inside) || nonempty(f->hide);
}

int mt__filter_on_stacks(const mt_filter *f) {
  return nonempty(f->inside) || nonempty(f->not_inside);
}

int mt__filter_on_times(const mt_filter *f) {
  return f->alloc_from || f->alloc_to != MT_NEVER || f->live == MT_LIVE_AT ||
         f->collected == MT_COLLECTED_IN || f->lifetime_min || f->lifetime_max != UINT64_MAX;
}

int mt_filter_decided_at_allocation(const mt_filter *f) {
  return f->live == MT_LIVE_ANY && f->collected == MT_COLLECTED_ANY && f->lifetime_min == 0 &&
         f->lifetime_max == UINT64_MAX;
}

int mt_filter_hides(const mt_filter *f, const char *name) {
  if (!nonempty(f->hide)) return 0;
  size_t nlen = strlen(name);
  for (const char *t = f->hide; *t;) {
    size_t len = strcspn(t, ",");
    if (len && memmem(name, nlen, t, len)) return 1;
    t += len + (t[len] == ',');
  }
  return 0;
}

size_t mt_filter_names(const mt_filter *f, mt_filter_name *out, size_t max) {
  size_t n = 0;
  const char *one[] = {f->inside, f->not_inside}, *params[] = {"inside", "not_inside"};
  for (int k = 0; k < 2; k++) {
    if (!nonempty(one[k])) continue;
    if (n < max) out[n] = (mt_filter_name){params[k], one[k], strlen(one[k])};
    n++;
  }
  for (const char *t = nonempty(f->hide) ? f->hide : ""; *t;) {
    size_t len = strcspn(t, ",");
    if (len) {
      if (n < max) out[n] = (mt_filter_name){"hide", t, len};
      n++;
    }
    t += len + (t[len] == ',');
  }
  return n;
}

/* ---- parsing ---------------------------------------------------------------- */

static int say(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && n) vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return MT_ERR_INVALID;
}

/* A finite non-negative decimal number, all of s[0..len): digits, a point,
 * an exponent; strtod's other forms (inf, nan, hex, blanks) are refused. */
static int decimal(const char *s, size_t len, double *out) {
  char buf[64];
  if (len == 0 || len >= sizeof buf || s[0] == '-' || s[0] == '+') return -1;
  for (size_t i = 0; i < len; i++)
    if (!strchr("0123456789.eE+-", s[i]) || !s[i]) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *e;
  errno = 0;
  double v = strtod(buf, &e);
  if (e == buf || *e || errno || !isfinite(v) || v < 0) return -1;
  *out = v;
  return 0;
}

static uint64_t clamp_u64(double v) {
  return v >= 1.8e19 ? UINT64_MAX - 1 : (uint64_t)llround(v);
}

/* Seconds, into microseconds. */
static int seconds(const char *s, size_t len, uint64_t *us) {
  double v;
  if (decimal(s, len, &v)) return -1;
  *us = clamp_u64(v * 1e6);
  return 0;
}

/* Bytes, with an optional binary unit: 512, 1.5k, 2M, 3GiB, 1TB; a
 * fraction rounded up for a range's low end, down for its high end, so
 * that MIN <= bytes <= MAX holds of whole bytes. */
static int bytes(const char *s, size_t len, int high, uint64_t *out) {
  static const char units[] = "kKMGT";
  static const int power[] = {1, 1, 2, 3, 4};
  size_t num = len;
  while (num > 0 && !strchr("0123456789.", s[num - 1])) num--;
  const char *u = s + num, *end = s + len;
  double v, scale = 1;
  if (decimal(s, num, &v)) return -1;
  if (u < end) {
    const char *k = strchr(units, *u);
    if (!k || !*u) return -1;
    scale = pow(1024, power[k - units]);
    u++;
    if (u < end && *u == 'i') u++;
    if (u < end && *u == 'B') u++;
    if (u != end) return -1;
  }
  v *= scale;
  *out = clamp_u64(high ? floor(v) : ceil(v));
  return 0;
}

typedef enum { WINDOW, LIFETIME, SIZE } unit;

static const char *unit_words(unit u) {
  return u != SIZE ? "a time in seconds"
                   : "a size in bytes (a number, with an optional k, M, G or T suffix)";
}

static int bound(unit u, const char *s, size_t len, int high, uint64_t *out) {
  return u == SIZE ? bytes(s, len, high, out) : seconds(s, len, out);
}

/* "A..B", either side empty (0 and UINT64_MAX). A window is FROM..TO, a
 * closed range MIN..MAX. */
static int range(const char *v, unit u, uint64_t *lo, uint64_t *hi, char *err, size_t n) {
  const char *dots = strstr(v, "..");
  if (!dots)
    return say(err, n, "'%.200s' is not a range: write %s (either side may be empty)", v,
               u == WINDOW ? "FROM..TO" : "MIN..MAX");
  const char *end = v + strlen(v), *bad = NULL;
  size_t bad_len = 0;
  *lo = 0;
  *hi = UINT64_MAX;
  if (dots != v && bound(u, v, (size_t)(dots - v), 0, lo))
    bad = v, bad_len = (size_t)(dots - v);
  else if (dots + 2 != end && bound(u, dots + 2, (size_t)(end - dots - 2), 1, hi))
    bad = dots + 2, bad_len = (size_t)(end - dots - 2);
  if (bad)
    return say(err, n, "'%.*s' in '%.200s' is not %s", (int)(bad_len > 200 ? 200 : bad_len),
               bad, v, unit_words(u));
  if (*lo > *hi)
    return say(err, n, "'%.200s' is empty: %s", v,
               u == WINDOW ? "FROM is after TO" : "MIN is above MAX");
  return MT_OK;
}

static int text(const char *v, const char **out, char *err, size_t n) {
  if (strlen(v) > MAX_TEXT) return say(err, n, "the value is longer than %d bytes", MAX_TEXT);
  *out = v;
  return MT_OK;
}

static int set_sources(mt_filter *f, const char *v, char *err, size_t n) {
  unsigned s = 0;
  for (const char *t = v; *t;) {
    size_t len = strcspn(t, ",");
    int k = 0;
    while (k < NSOURCE_NAMES &&
           !(strlen(source_names[k]) == len && strncmp(t, source_names[k], len) == 0))
      k++;
    if (k == NSOURCE_NAMES && len)
      return say(err, n, "'%.*s' is not a source (minor, major, external, mapping or heap)",
                 (int)(len > 200 ? 200 : len), t);
    if (k < NSOURCE_NAMES) s |= 1u << k;
    t += len + (t[len] == ',');
  }
  if (!s) return say(err, n, "no source given (minor, major, external, mapping or heap)");
  f->sources = s;
  return MT_OK;
}

/* Each parameter's setter; the value is not empty. */
static int set_alloc(mt_filter *f, const char *v, char *err, size_t n) {
  return range(v, WINDOW, &f->alloc_from, &f->alloc_to, err, n);
}

static int set_live(mt_filter *f, const char *v, char *err, size_t n) {
  if (strcmp(v, "peak") == 0) f->live = MT_LIVE_AT_PEAK;
  else if (strcmp(v, "end") == 0) f->live = MT_LIVE_AT_END;
  else if (seconds(v, strlen(v), &f->live_at) == 0) f->live = MT_LIVE_AT;
  else return say(err, n, "'%.200s' is not a time in seconds, 'peak' or 'end'", v);
  return MT_OK;
}

static int set_collected(mt_filter *f, const char *v, char *err, size_t n) {
  if (strcmp(v, "never") == 0) {
    f->collected = MT_COLLECTED_NEVER;
    return MT_OK;
  }
  if (!strstr(v, ".."))
    return say(err, n, "'%.200s' is neither 'never' nor a range FROM..TO in seconds", v);
  int rc = range(v, WINDOW, &f->collect_from, &f->collect_to, err, n);
  if (rc == MT_OK) f->collected = MT_COLLECTED_IN;
  return rc;
}

static int set_size(mt_filter *f, const char *v, char *err, size_t n) {
  return range(v, SIZE, &f->size_min, &f->size_max, err, n);
}

static int set_lifetime(mt_filter *f, const char *v, char *err, size_t n) {
  return range(v, LIFETIME, &f->lifetime_min, &f->lifetime_max, err, n);
}

static int set_inside(mt_filter *f, const char *v, char *err, size_t n) {
  return text(v, &f->inside, err, n);
}
static int set_not_inside(mt_filter *f, const char *v, char *err, size_t n) {
  return text(v, &f->not_inside, err, n);
}
static int set_hide(mt_filter *f, const char *v, char *err, size_t n) {
  return text(v, &f->hide, err, n);
}

/* Back to "not given". */
static void clear(mt_filter *f, int k);

typedef struct param {
  const char *name;
  int (*set)(mt_filter *f, const char *v, char *err, size_t n);
} param;

static const param params[] = {
    {"alloc", set_alloc},       {"live", set_live},     {"collected", set_collected},
    {"size", set_size},         {"lifetime", set_lifetime}, {"source", set_sources},
    {"inside", set_inside},     {"not_inside", set_not_inside}, {"hide", set_hide},
};
#define NPARAMS (sizeof params / sizeof *params)

static void clear(mt_filter *f, int k) {
  mt_filter d;
  mt_filter_init(&d);
  switch (k) {
  case 0: f->alloc_from = d.alloc_from, f->alloc_to = d.alloc_to; break;
  case 1: f->live = d.live, f->live_at = d.live_at; break;
  case 2:
    f->collected = d.collected, f->collect_from = d.collect_from, f->collect_to = d.collect_to;
    break;
  case 3: f->size_min = d.size_min, f->size_max = d.size_max; break;
  case 4: f->lifetime_min = d.lifetime_min, f->lifetime_max = d.lifetime_max; break;
  case 5: f->sources = 0; break;
  case 6: f->inside = NULL; break;
  case 7: f->not_inside = NULL; break;
  default: f->hide = NULL; break;
  }
}

int mt_filter_set(mt_filter *f, const char *name, const char *value, char *err, size_t n) {
  for (size_t k = 0; k < NPARAMS; k++) {
    if (strcmp(name, params[k].name) != 0) continue;
    if (!value || !*value) {
      clear(f, (int)k);
      return MT_OK;
    }
    mt_filter before = *f;
    int rc = params[k].set(f, value, err, n);
    if (rc != MT_OK) *f = before; /* a failed setter leaves the filter as it was */
    return rc;
  }
  return 1;
}

/* The command line's options: a flag and the parameter it sets, with the
 * value it stands for when it takes none. */
typedef struct option {
  const char *flag, *param, *fixed;
} option;

static const option options[] = {
    {"--time", "alloc", NULL},          {"--live-at", "live", NULL},
    {"--live-at-peak", "live", "peak"}, {"--live-at-end", "live", "end"},
    {"--collected", "collected", NULL}, {"--never-collected", "collected", "never"},
    {"--size", "size", NULL},           {"--lifetime", "lifetime", NULL},
    {"--source", "source", NULL},       {"--inside", "inside", NULL},
    {"--not-inside", "not_inside", NULL}, {"--hide", "hide", NULL},
};

int mt_filter_option(mt_filter *f, int argc, char *const *argv, int *i, char *err, size_t n) {
  const char *arg = argv[*i];
  for (size_t k = 0; k < sizeof options / sizeof *options; k++) {
    const option *o = &options[k];
    size_t len = strlen(o->flag);
    if (strncmp(arg, o->flag, len) != 0) continue;
    const char *v;
    if (o->fixed) {
      if (arg[len]) continue; /* --live-at-peak=x is no option */
      v = o->fixed;
    } else if (arg[len] == '=') {
      v = arg + len + 1;
    } else if (arg[len] == 0) {
      if (*i + 1 >= argc) {
        say(err, n, "%s needs a value", o->flag);
        return -1;
      }
      v = argv[++*i];
    } else {
      continue; /* a longer flag: --live-at-peak against --live-at */
    }
    char why[512];
    if (mt_filter_set(f, o->param, v, why, sizeof why) != MT_OK) {
      say(err, n, "%s: %s", o->flag, why);
      return -1;
    }
    return 1;
  }
  return 0;
}

/* ---- words ------------------------------------------------------------------ */

typedef struct words {
  char *buf;
  size_t n, len; /* len: what was needed, as snprintf counts */
} words;

static void add(words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(words *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = w->len < w->n ? w->n - w->len : 0;
  int k = vsnprintf(room ? w->buf + w->len : NULL, room, fmt, ap);
  va_end(ap);
  if (k > 0) w->len += (size_t)k;
}

static void clause(words *w) {
  if (w->len) add(w, "; ");
}

static const char *secs(char *buf, size_t n, uint64_t us) {
  snprintf(buf, n, "%.6g s", (double)us / 1e6);
  return buf;
}

static void closed_range(words *w, const char *what, uint64_t lo, uint64_t hi, int is_time) {
  char a[32], b[32];
  if (is_time) {
    secs(a, sizeof a, lo);
    secs(b, sizeof b, hi);
  } else {
    mt_human_bytes(a, sizeof a, (double)lo);
    mt_human_bytes(b, sizeof b, (double)hi);
  }
  clause(w);
  if (hi == UINT64_MAX) add(w, "%s %s or more", what, a);
  else if (lo == 0) add(w, "%s at most %s", what, b);
  else add(w, "%s %s to %s", what, a, b);
}

static void window(words *w, const char *what, uint64_t from, uint64_t to) {
  char a[32], b[32];
  clause(w);
  if (to == MT_NEVER) add(w, "%s from %s", what, secs(a, sizeof a, from));
  else add(w, "%s in [%s, %s)", what, secs(a, sizeof a, from), secs(b, sizeof b, to));
}

size_t mt_filter_describe(const mt_filter *f, char *buf, size_t n) {
  words w = {buf, n, 0};
  char t[32];
  if (n) buf[0] = 0;
  if (f->alloc_from || f->alloc_to != MT_NEVER) window(&w, "allocated", f->alloc_from, f->alloc_to);
  if (f->live == MT_LIVE_AT) clause(&w), add(&w, "live at %s", secs(t, sizeof t, f->live_at));
  else if (f->live == MT_LIVE_AT_PEAK) clause(&w), add(&w, "live at the peak");
  else if (f->live == MT_LIVE_AT_END) clause(&w), add(&w, "live at the end (never collected)");
  if (f->collected == MT_COLLECTED_NEVER) clause(&w), add(&w, "never collected");
  else if (f->collected == MT_COLLECTED_IN)
    window(&w, "collected", f->collect_from, f->collect_to);
  if (f->size_min || f->size_max != UINT64_MAX)
    closed_range(&w, "size", f->size_min, f->size_max, 0);
  if (f->lifetime_min || f->lifetime_max != UINT64_MAX)
    closed_range(&w, "lifetime", f->lifetime_min, f->lifetime_max, 1);
  if (f->sources) {
    clause(&w);
    add(&w, "source");
    const char *sep = " ";
    for (int k = 0; k < NSOURCE_NAMES; k++)
      if (f->sources & (1u << k)) add(&w, "%s%s", sep, source_names[k]), sep = ",";
  }
  if (nonempty(f->inside)) clause(&w), add(&w, "inside \"%s\"", f->inside);
  if (nonempty(f->not_inside)) clause(&w), add(&w, "not inside \"%s\"", f->not_inside);
  if (nonempty(f->hide)) clause(&w), add(&w, "hiding \"%s\"", f->hide);
  if (!w.len) add(&w, "none");
  return w.len;
}
