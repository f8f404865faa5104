/* Figures for people: sizes, counts, durations, shares and intervals, the
 * one way every command prints them. Each writes into buf (n bytes, at
 * least 32 for one figure, 80 for an interval) and returns buf. */
#ifndef MT_BASE_HUMAN_H
#define MT_BASE_HUMAN_H

#include <stddef.h>

/* Bytes with three significant digits in binary units: "512 B",
 * "1.23 KiB", "36.3 MiB", "1.00 GiB". */
const char *mt_human_bytes(char *buf, size_t n, double bytes);
/* Bytes with an explicit sign: "+1.23 MiB", "-512 B", "0 B". */
const char *mt_human_signed_bytes(char *buf, size_t n, double bytes);
/* A count: exact below 10 000, then three significant digits in decimal
 * units: "9999", "12.3k", "4.56M", "1.20G". */
const char *mt_human_count(char *buf, size_t n, double count);
/* A duration given in microseconds, as the viewer gives it: three
 * significant digits in us, ms or s ("78.0 us", "1.50 ms", "456 ms",
 * "1.23 s", "0 s"), then "2 min 5 s", "3 h 20 min". */
const char *mt_human_duration(char *buf, size_t n, double us);
/* part as a percentage of whole: "45.1%", "<0.1%", "-" when whole is not
 * positive. */
const char *mt_human_percent(char *buf, size_t n, double part, double whole);
/* An estimate's 95% interval: "[lo, hi]" in bytes (is_bytes) or counts, or
 * "exact" when lo == value == hi. */
const char *mt_human_interval(char *buf, size_t n, double value, double lo, double hi,
                              int is_bytes);
/* The same for running text: "[lo, hi]" or "(exact)". */
const char *mt_human_interval_note(char *buf, size_t n, double value, double lo, double hi,
                                   int is_bytes);
/* "s" unless count is 1. */
static inline const char *mt_human_plural(unsigned long long count) {
  return count == 1 ? "" : "s";
}

#endif
