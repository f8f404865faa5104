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

const char *mt_human_duration(char *buf, size_t n, double us) {
  if (us >= 1e6) snprintf(buf, n, "%.2f s", us / 1e6);
  else if (us >= 1e3) snprintf(buf, n, "%.1f ms", us / 1e3);
  else snprintf(buf, n, "%.0f us", us);
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
