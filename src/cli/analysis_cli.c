#include "analysis_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mt_analysis *mt_cli_load(const char *path) {
  mt_analysis *a;
  if (mt_analysis_load(&a, path, NULL, NULL) != MT_OK) {
    fprintf(stderr, "memtrace: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
    exit(1);
  }
  const char *w = mt_analysis_warning(a);
  if (w) fprintf(stderr, "memtrace: warning: %s\n", w);
  return a;
}

/* A non-negative number with an optional unit suffix; returns -1 if bad. */
static int parse_scaled(const char *s, const char *end, double *out, int sizes) {
  if (s == end) return -1;
  char buf[64];
  size_t n = (size_t)(end - s);
  if (n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *e;
  errno = 0;
  double v = strtod(buf, &e);
  if (e == buf || errno || !(v >= 0) || isinf(v)) return -1;
  if (sizes && *e) {
    static const char units[] = "kMGT";
    const char *u = strchr(units, *e);
    if (!u || !*e) return -1;
    v *= pow(1024, (double)(u - units + 1));
    e++;
    if (*e == 'B' || *e == 'i') e += (*e == 'i' && e[1] == 'B') ? 2 : 1;
  }
  if (*e) return -1;
  *out = v;
  return 0;
}

/* "A..B", "A..", "..B"; times are seconds (returned in us), sizes bytes. */
static int parse_range(const char *s, uint64_t *lo, uint64_t *hi, int sizes) {
  const char *dots = strstr(s, "..");
  if (!dots) return -1;
  double a = 0, b = 0;
  double scale = sizes ? 1 : 1e6;
  if (dots != s && parse_scaled(s, dots, &a, sizes)) return -1;
  if (dots[2] && parse_scaled(dots + 2, dots + strlen(dots), &b, sizes)) return -1;
  *lo = dots != s ? (uint64_t)llround(a * scale) : 0;
  *hi = dots[2] ? (uint64_t)llround(b * scale) : UINT64_MAX;
  return *lo <= *hi ? 0 : -1;
}

int mt_cli_filter_option(const mt_command *cmd, int argc, char **argv, int *i, mt_filter *f) {
  const char *o = argv[*i];
  static const char *const with_value[] = {"--time", "--live-at", "--collected", "--size",
                                           "--lifetime", "--source", "--inside",
                                           "--not-inside"};
  const char *v = NULL;
  for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) {
    size_t n = strlen(with_value[k]);
    if (strncmp(o, with_value[k], n) == 0 && (o[n] == 0 || o[n] == '=')) {
      if (o[n] == '=') v = o + n + 1;
      else if (*i + 1 < argc) v = argv[++*i];
      else mt_cli_usage_error(cmd, "%s needs a value", with_value[k]);
      break;
    }
  }
  if (strcmp(o, "--live-at-peak") == 0) f->live = MT_LIVE_AT_PEAK;
  else if (strcmp(o, "--live-at-end") == 0) f->live = MT_LIVE_AT_END;
  else if (strcmp(o, "--never-collected") == 0) f->collected = MT_COLLECTED_NEVER;
  else if (!v) return 0;
  else if (strncmp(o, "--time", 6) == 0) {
    uint64_t hi;
    if (parse_range(v, &f->alloc_from, &hi, 0))
      mt_cli_usage_error(cmd, "--time wants FROM..TO in seconds, not '%s'", v);
    f->alloc_to = hi;
  } else if (strncmp(o, "--live-at", 9) == 0) {
    double t;
    if (parse_scaled(v, v + strlen(v), &t, 0))
      mt_cli_usage_error(cmd, "--live-at wants a time in seconds, not '%s'", v);
    f->live = MT_LIVE_AT;
    f->live_at = (uint64_t)llround(t * 1e6);
  } else if (strncmp(o, "--collected", 11) == 0) {
    if (parse_range(v, &f->collect_from, &f->collect_to, 0))
      mt_cli_usage_error(cmd, "--collected wants FROM..TO in seconds, not '%s'", v);
    f->collected = MT_COLLECTED_IN;
  } else if (strncmp(o, "--size", 6) == 0) {
    if (parse_range(v, &f->size_min, &f->size_max, 1))
      mt_cli_usage_error(cmd, "--size wants MIN..MAX in bytes (k, M, G suffixes), not '%s'", v);
  } else if (strncmp(o, "--lifetime", 10) == 0) {
    if (parse_range(v, &f->lifetime_min, &f->lifetime_max, 0))
      mt_cli_usage_error(cmd, "--lifetime wants MIN..MAX in seconds, not '%s'", v);
  } else if (strncmp(o, "--source", 8) == 0) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    f->sources = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (strcmp(t, "minor") == 0) f->sources |= 1u << MT_SOURCE_MINOR;
      else if (strcmp(t, "major") == 0) f->sources |= 1u << MT_SOURCE_MAJOR;
      else if (strcmp(t, "external") == 0) f->sources |= 1u << MT_SOURCE_EXTERNAL;
      else mt_cli_usage_error(cmd, "--source takes minor, major or external, not '%s'", t);
    }
    if (!f->sources) mt_cli_usage_error(cmd, "--source needs at least one source");
  } else if (strncmp(o, "--inside", 8) == 0) {
    f->inside = v;
  } else {
    f->not_inside = v;
  }
  return 1;
}

const char *mt_cli_bytes(char *buf, size_t n, double b) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double neg = b < 0 ? -1 : 1;
  b *= neg;
  while (b >= 1024 && u < 5) {
    b /= 1024;
    u++;
  }
  snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b * neg, units[u]);
  return buf;
}

const char *mt_cli_duration(char *buf, size_t n, double us) {
  if (us >= 1e6) snprintf(buf, n, "%.2f s", us / 1e6);
  else if (us >= 1e3) snprintf(buf, n, "%.1f ms", us / 1e3);
  else snprintf(buf, n, "%.0f us", us);
  return buf;
}

const char *mt_cli_site(const mt_analysis *a, uint32_t stack, char *buf, size_t n) {
  mt_frame site;
  if (mt_analysis_stack_site(a, stack, &site) != 0) {
    if (stack == 0) snprintf(buf, n, "(no backtrace)");
    else
      snprintf(buf, n, "#%llx",
               (unsigned long long)mt_analysis_code_value(a, mt_analysis_stack_code(a, stack)));
    return buf;
  }
  snprintf(buf, n, "%s (%s:%u)", mt_analysis_function_name(a, site.function),
           mt_analysis_function_file(a, site.function), site.line);
  return buf;
}
