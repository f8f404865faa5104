/* memtrace report: the viewer's page as one self-contained HTML file. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "viewer/viewer.h"

static const char usage[] =
    "usage: memtrace report [-o FILE.html] [--title T] [--base OLD ...] TRACE...\n"
    "\n"
    "Writes the viewer's page (memtrace view) with the trace's unfiltered\n"
    "views inlined: one HTML file that opens without a server (flame graph,\n"
    "live heap, hot functions, paths, sites, leaks, histograms; filters need\n"
    "memtrace view). FILE defaults to report.html; - writes to stdout.\n"
    "Several traces (files, or directories of .ctf files: a process tree, a\n"
    "fleet) are read as one, lined up by their starts, at the lowest of\n"
    "their sample rates.\n"
    "With --base OLD (a trace or a directory; repeatable), the differential\n"
    "report: the flame graph coloured by change against OLD, and the changes\n"
    "(memtrace view --base).\n";

static int run(int argc, char **argv) {
  const char *out = "report.html", *title = NULL;
  static mt_cli_list base;
  static const char *args[MT_CLI_MAX_TRACES];
  const mt_option options[] = {{"-o", "--output", MT_OPT_TEXT, &out, NULL, 0, 0, 0},
                               {"--title", NULL, MT_OPT_TEXT, &title, NULL, 0, 0, 0},
                               {"--base", NULL, MT_OPT_LIST, &base, NULL, 0, 0, 0},
                               {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(&mt_cmd_report, argc, argv, &spec);
  char **paths;
  size_t n = mt_cli_traces(&mt_cmd_report, args, nargs, &paths);
  char **base_paths = NULL;
  size_t nbase = base.n ? mt_cli_traces(&mt_cmd_report, base.v, base.n, &base_paths) : 0;
  int rc = mt_viewer_report((const char *const *)paths, n, (const char *const *)base_paths,
                            nbase, out, title);
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
  for (size_t i = 0; i < nbase; i++) free(base_paths[i]);
  free(base_paths);
  return rc;
}

const mt_command mt_cmd_report = {"report", "write a self-contained HTML report of a trace",
                                  usage, run};
