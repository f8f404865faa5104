/* memtrace view: the interactive viewer (src/viewer, docs/viewer.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../viewer/viewer.h"

static const char usage[] =
    "usage: memtrace view [--port N] [--host ADDR] [--open] TRACE\n"
    "       memtrace view --follow [--port N] [--host ADDR] [--open] TRACE\n"
    "       memtrace view --listen [HOST:]PORT [-o FILE] [--port N] [--host ADDR] [--open]\n"
    "\n"
    "Loads the trace once and serves a web page to explore it (flame graph,\n"
    "live heap over time, hot functions, paths, sites, leaks, histograms, with\n"
    "filters) and its JSON API. Binds 127.0.0.1:8080 unless told otherwise; a\n"
    "busy port moves to the next of 20. Stop with Ctrl-C.\n"
    "\n"
    "  --port N          port to serve on (8080)\n"
    "  --host ADDR       address to bind (127.0.0.1; 0.0.0.0 exposes the trace)\n"
    "  --open            open the page with xdg-open\n"
    "  --follow          the trace is still being written: reload as it grows\n"
    "  --listen [H:]P    receive a traced program's stream (MEMTRACE=tcp:H:P)\n"
    "                    and show it live; -o FILE keeps the trace\n";

static int run(int argc, char **argv) {
  mt_viewer_opts o = {0};
  o.port = 8080;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mt_cli_is_help(a)) return mt_cli_help(&mt_cmd_view);
    int has = i + 1 < argc;
    if (strcmp(a, "--port") == 0) {
      char *e;
      if (!has) mt_cli_usage_error(&mt_cmd_view, "--port needs a number");
      long p = strtol(argv[++i], &e, 10);
      if (*e || !*argv[i] || p < 0 || p > 65535)
        mt_cli_usage_error(&mt_cmd_view, "invalid port '%s'", argv[i]);
      o.port = (int)p;
    } else if (strcmp(a, "--host") == 0) {
      if (!has) mt_cli_usage_error(&mt_cmd_view, "--host needs an address");
      o.host = argv[++i];
    } else if (strcmp(a, "--open") == 0) {
      o.open = 1;
    } else if (strcmp(a, "--follow") == 0) {
      o.follow = 1;
    } else if (strcmp(a, "--listen") == 0) {
      if (!has) mt_cli_usage_error(&mt_cmd_view, "--listen needs [HOST:]PORT");
      o.listen = argv[++i];
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (!has) mt_cli_usage_error(&mt_cmd_view, "-o needs a FILE");
      o.output = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      mt_cli_usage_error(&mt_cmd_view, "unknown option '%s'", a);
    } else if (!o.trace) {
      o.trace = a;
    } else {
      mt_cli_usage_error(&mt_cmd_view, "unexpected argument '%s'", a);
    }
  }
  if (o.listen && (o.trace || o.follow))
    mt_cli_usage_error(&mt_cmd_view, "--listen takes no TRACE (use -o FILE to keep it)");
  if (!o.listen && !o.trace) mt_cli_usage_error(&mt_cmd_view, "needs a TRACE");
  if (o.output && !o.listen) mt_cli_usage_error(&mt_cmd_view, "-o goes with --listen");
  return mt_viewer_serve(&o);
}

const mt_command mt_cmd_view = {"view", "explore a trace in the browser (flame graph, filters)",
                                usage, run};
