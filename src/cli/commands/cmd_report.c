/* memtrace report: the viewer's page as one self-contained HTML file. */
#include <string.h>

#include "cli.h"
#include "viewer/viewer.h"

static const char usage[] =
    "usage: memtrace report [-o FILE.html] [--title T] TRACE\n"
    "\n"
    "Writes the viewer's page (memtrace view) with the trace's unfiltered\n"
    "views inlined: one HTML file that opens without a server (flame graph,\n"
    "live heap, hot functions, paths, sites, leaks, histograms; filters need\n"
    "memtrace view). FILE defaults to report.html; - writes to stdout.\n";

static int run(int argc, char **argv) {
  const char *out = "report.html", *title = NULL, *trace;
  const mt_option options[] = {{"-o", "--output", MT_OPT_TEXT, &out, NULL, 0, 0, 0},
                               {"--title", NULL, MT_OPT_TEXT, &title, NULL, 0, 0, 0},
                               {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, &trace, 1, 1, "TRACE", 0, 0, NULL};
  mt_cli_parse(&mt_cmd_report, argc, argv, &spec);
  return mt_viewer_report(trace, out, title);
}

const mt_command mt_cmd_report = {"report", "write a self-contained HTML report of a trace",
                                  usage, run};
