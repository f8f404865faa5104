#include "human.h"

#include <math.h>
#include <stdio.h>

/* Three significant digits, the precision picked after rounding (9.995
 * would print as "10.00"). */
static const char *three_digits(char *buf, size_t n, double v, const char *unit) {
  double a = fabs(v);
  int prec = a < 9.995 ? 2 : a < 99.95 ? 1 : 0;
  snprintf(buf, n, "%.*f%s%s", prec, v, unit[0] ? " " : "", unit);
  return buf;
}

const char *mt_human_bytes(char *buf, size_t n, double b) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  /* the next unit where the rounded figure would reach 1024 */
  while (fabs(b) >= 1023.5 && u < 6) {
    b /= 1024;
    u++;
  }
  if (u == 0) {
    snprintf(buf, n, "%.0f B", b == 0 ? 0.0 : b);
    return buf;
  }
  return three_digits(buf, n, b, units[u]);
}

const char *mt_human_signed_bytes(char *buf, size_t n, double b) {
  char tmp[32];
  mt_human_bytes(tmp, sizeof tmp, fabs(b));
  snprintf(buf, n, "%s%s", b > 0 ? "+" : b < 0 ? "-" : "", tmp);
  return buf;
}

const char *mt_human_count(char *buf, size_t n, double c) {
  static const char *const units[] = {"", "k", "M", "G", "T", "P"};
  if (fabs(c) < 9999.5) {
    snprintf(buf, n, "%.0f", c == 0 ? 0.0 : c);
    return buf;
  }
  int u = 0;
  while (fabs(c) >= 999.5 && u < 5) {
    c /= 1000;
    u++;
  }
  char tmp[32];
  three_digits(tmp, sizeof tmp, c, "");
  snprintf(buf, n, "%s%s", tmp, units[u]);
  return buf;
}

/* The viewer's rule (fmtSeconds in src/viewer/assets/app.js), so that both
 * give a time alike. */
const char *mt_human_duration(char *buf, size_t n, double us) {
  double s = us / 1e6, a = fabs(s);
  int prec = 2;
  const char *unit = "s";
  if (a == 0) {
    snprintf(buf, n, "0 s");
    return buf;
  }
  if (a >= 7200) {
    snprintf(buf, n, "%.0f h %.0f min", floor(s / 3600), round(fmod(s, 3600) / 60));
    return buf;
  }
  if (a >= 120) {
    snprintf(buf, n, "%.0f min %.0f s", floor(s / 60), round(fmod(s, 60)));
    return buf;
  }
  if (a < 1e-3) s *= 1e6, unit = "us";
  else if (a < 1) s *= 1e3, unit = "ms";
  a = fabs(s);
  prec = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  snprintf(buf, n, "%.*f %s", prec, s, unit);
  return buf;
}

const char *mt_human_percent(char *buf, size_t n, double part, double whole) {
  if (!(whole > 0)) snprintf(buf, n, "-");
  else if (part > 0 && part / whole < 0.0005) snprintf(buf, n, "<0.1%%");
  else snprintf(buf, n, "%.1f%%", 100 * part / whole);
  return buf;
}

const char *mt_human_interval(char *buf, size_t n, double value, double lo, double hi,
                              int is_bytes) {
  if (lo == value && hi == value) {
    snprintf(buf, n, "exact");
    return buf;
  }
  char a[32], b[32];
  if (is_bytes) {
    mt_human_bytes(a, sizeof a, lo);
    mt_human_bytes(b, sizeof b, hi);
  } else {
    mt_human_count(a, sizeof a, lo);
    mt_human_count(b, sizeof b, hi);
  }
  snprintf(buf, n, "[%s, %s]", a, b);
  return buf;
}

const char *mt_human_interval_note(char *buf, size_t n, double value, double lo, double hi,
                                   int is_bytes) {
  if (lo == value && hi == value) snprintf(buf, n, "(exact)");
  else mt_human_interval(buf, n, value, lo, hi, is_bytes);
  return buf;
}
