/* Shared by the analysis-based subcommands (top, leaks, stats, timeline,
 * diff, export, flamegraph's own options): loading a trace into an
 * analysis, the common filter options, and human-readable numbers. */
#ifndef MT_CLI_ANALYSIS_H
#define MT_CLI_ANALYSIS_H

#include <stddef.h>

#include "cli.h"
#include "memtrace/analysis.h"

/* Loads the trace or exits 1 with a message naming it; prints the
 * analysis' warning (truncated trace...) on stderr. */
mt_analysis *mt_cli_load(const char *path);

/* The common filter options, for usage texts. */
#define MT_CLI_FILTER_HELP                                                      \
  "Filters (combinable):\n"                                                     \
  "  --time FROM..TO        allocated between FROM and TO (seconds since the\n" \
  "                         trace start; either side may be omitted)\n"        \
  "  --live-at T            alive at time T (seconds)\n"                        \
  "  --live-at-peak         alive when the live heap peaked\n"                  \
  "  --live-at-end          never collected (leaked, or alive at exit)\n"       \
  "  --collected FROM..TO   collected in that interval; --never-collected\n"    \
  "  --size MIN..MAX        object size in bytes (suffixes k, M, G)\n"          \
  "  --lifetime MIN..MAX    lifetime in seconds\n"                              \
  "  --source S[,S...]      minor, major, external\n"                           \
  "  --inside STR           a frame's function name contains STR\n"             \
  "  --not-inside STR       no frame's function name contains STR\n"

/* If argv[*i] is a filter option, parses it (and its value, advancing *i)
 * into f and returns 1; returns 0 otherwise. Bad values are usage errors
 * (exit 2) of `cmd`. */
int mt_cli_filter_option(const mt_command *cmd, int argc, char **argv, int *i,
                         mt_filter *f);

/* "12.3 MiB" style, into buf (at least 16 bytes). */
const char *mt_cli_bytes(char *buf, size_t n, double bytes);
/* "1.23 s" / "456 ms" / "78 us" style. */
const char *mt_cli_duration(char *buf, size_t n, double us);
/* A stack's allocation site as "function (file:line)", into buf. */
const char *mt_cli_site(const mt_analysis *a, uint32_t stack, char *buf, size_t n);

#endif
