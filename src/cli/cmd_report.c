/* memtrace report: the viewer's page as one self-contained HTML file. */
#include <string.h>

#include "cli.h"
#include "../viewer/viewer.h"

static const char usage[] =
    "usage: memtrace report [-o FILE.html] [--title T] TRACE\n"
    "\n"
    "Writes the viewer's page (memtrace view) with the trace's unfiltered\n"
    "views inlined: one HTML file that opens without a server (flame graph,\n"
    "live heap, hot functions, paths, sites, leaks, histograms; filters need\n"
    "memtrace view). FILE defaults to report.html; - writes to stdout.\n";

static int run(int argc, char **argv) {
  const char *out = "report.html", *title = NULL, *trace = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mt_cli_is_help(a)) return mt_cli_help(&mt_cmd_report);
    if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (i + 1 >= argc) mt_cli_usage_error(&mt_cmd_report, "-o needs a FILE");
      out = argv[++i];
    } else if (strcmp(a, "--title") == 0) {
      if (i + 1 >= argc) mt_cli_usage_error(&mt_cmd_report, "--title needs a text");
      title = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      mt_cli_usage_error(&mt_cmd_report, "unknown option '%s'", a);
    } else if (!trace) {
      trace = a;
    } else {
      mt_cli_usage_error(&mt_cmd_report, "unexpected argument '%s'", a);
    }
  }
  if (!trace) mt_cli_usage_error(&mt_cmd_report, "needs a TRACE");
  return mt_viewer_report(trace, out, title);
}

const mt_command mt_cmd_report = {"report", "write a self-contained HTML report of a trace",
                                  usage, run};
