/* memtrace view: the interactive viewer (src/viewer, docs/viewer.md). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "view_attach.h"
#include "viewer/viewer.h"

static const char usage[] =
    "usage: memtrace view [--port N] [--host ADDR [--no-token]] [--open] TRACE...\n"
    "       memtrace view --base OLD [--base OLD2 ...] [OPTIONS] NEW...\n"
    "       memtrace view --follow [--port N] [--host ADDR [--no-token]] [--open] TRACE\n"
    "       memtrace view --listen [HOST:]PORT [-o FILE] [--port N] [--host ADDR [--no-token]]\n"
    "                     [--open]\n"
    "       memtrace view --attach PID [--rate R] [-o FILE] [--port N] [--open]\n"
    "\n"
    "Loads the trace once and serves a web page to explore it (flame graph,\n"
    "live heap over time, hot functions, paths, sites, leaks, histograms, with\n"
    "filters) and its JSON API. Binds 127.0.0.1:8080 unless told otherwise; a\n"
    "busy port moves to the next of 20. Stop with Ctrl-C.\n"
    "\n"
    "Several traces (files, or directories of .ctf files: a process tree, a\n"
    "fleet) are read as one, lined up by their wall-clock starts; a trace's\n"
    "objects leave the live heap when it ends. Traces of different rates are\n"
    "read at the lowest (the others' samples thinned to it).\n"
    "\n"
    "With --base, the differential view: the flame graph of NEW coloured by\n"
    "change against OLD (red: grown, blue: shrunk, where the 95% intervals of\n"
    "the bytes do not overlap, as memtrace diff decides), and a Changes view\n"
    "listing the sites that changed; every filter applies to both sides.\n"
    "OLD is a trace or a directory of traces; --base may be repeated.\n"
    "\n"
    "Bound to an address other than loopback, the server answers only requests\n"
    "that carry its access token: a random one, in the URL it prints\n"
    "(http://HOST:PORT/?token=...). The page, opened with it, keeps it in a\n"
    "cookie.\n"
    "\n"
    "  --port N          port to serve on (8080)\n"
    "  --host ADDR       address to bind (127.0.0.1; 0.0.0.0 exposes the trace\n"
    "                    to whoever has the token)\n"
    "  --no-token        beyond loopback, serve anyone who can connect, with no\n"
    "                    token (warns: anyone can then read the trace)\n"
    "  --base OLD        compare with OLD, a trace or a directory (the\n"
    "                    differential view, above); repeatable\n"
    "  --open            open the page with xdg-open\n"
    "  --follow          the trace is still being written: reload as it grows\n"
    "  --listen [H:]P    receive a traced program's stream (MEMTRACE=tcp:H:P)\n"
    "                    and show it live; -o FILE keeps the trace\n"
    "  --attach PID      trace the running process PID (memtrace attach, at\n"
    "                    --rate R) and show it live, until Ctrl-C; -o FILE\n"
    "                    keeps the trace\n";

static int run(int argc, char **argv) {
  mt_viewer_opts o = {0};
  static mt_cli_list base;
  size_t port = 8080;
  const char *attach = NULL, *rate = NULL;
  const mt_option options[] = {{"--port", NULL, MT_OPT_COUNT, &port, NULL, 0, 0, 65535},
                               {"--host", NULL, MT_OPT_TEXT, &o.host, NULL, 0, 0, 0},
                               {"--no-token", NULL, MT_OPT_FLAG, &o.no_token, NULL, 1, 0, 0},
                               {"--open", NULL, MT_OPT_FLAG, &o.open, NULL, 1, 0, 0},
                               {"--follow", NULL, MT_OPT_FLAG, &o.follow, NULL, 1, 0, 0},
                               {"--listen", NULL, MT_OPT_TEXT, &o.listen, NULL, 0, 0, 0},
                               {"-o", "--output", MT_OPT_TEXT, &o.output, NULL, 0, 0, 0},
                               {"--base", NULL, MT_OPT_LIST, &base, NULL, 0, 0, 0},
                               {"--attach", NULL, MT_OPT_TEXT, &attach, NULL, 0, 0, 0},
                               {"--rate", NULL, MT_OPT_TEXT, &rate, NULL, 0, 0, 0},
                               {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  static const char *args[MT_CLI_MAX_TRACES];
  mt_cli_spec spec = {options, NULL, args, 0, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(&mt_cmd_view, argc, argv, &spec);
  o.port = (int)port;
  char listen_at[32];
  pid_t attacher = 0;
  if (rate && !attach) mt_cli_usage_error(&mt_cmd_view, "--rate goes with --attach");
  if (attach) {
    char *end;
    long pid = strtol(attach, &end, 10);
    if (*end || pid <= 0 || pid > INT32_MAX)
      mt_cli_usage_error(&mt_cmd_view, "--attach takes a process id, not '%s'", attach);
    if (o.listen || nargs || o.follow || base.n)
      mt_cli_usage_error(&mt_cmd_view, "--attach takes no TRACE, --listen, --follow or --base");
    int p = mt_attach_free_port();
    if (p < 0) {
      fprintf(stderr, "memtrace view: no loopback port free for the process's stream\n");
      return 1;
    }
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%d", p);
    o.listen = listen_at;
    /* forked before the viewer starts any thread */
    if (mt_attach_spawn_for_view((pid_t)pid, rate, p, &attacher) != 0) {
      fprintf(stderr, "memtrace view: cannot start memtrace attach\n");
      return 1;
    }
  }
  if (o.listen && (nargs || o.follow))
    mt_cli_usage_error(&mt_cmd_view, "--listen takes no TRACE (use -o FILE to keep it)");
  if (!o.listen && !nargs) mt_cli_usage_error(&mt_cmd_view, "missing TRACE");
  if (o.output && !o.listen) mt_cli_usage_error(&mt_cmd_view, "-o goes with --listen");
  char **paths = NULL;
  if (nargs) {
    /* a trace being written (--follow) is one file; else files and
     * directories of traces */
    if (o.follow && nargs > 1) mt_cli_usage_error(&mt_cmd_view, "--follow takes one TRACE");
    if (o.follow) {
      o.trace = args[0];
    } else {
      o.ntraces = mt_cli_traces(&mt_cmd_view, args, nargs, &paths);
      o.traces = (const char *const *)paths;
      o.trace = paths[0];
    }
  }
  char **base_paths = NULL;
  if (base.n) {
    if (o.listen || o.follow) mt_cli_usage_error(&mt_cmd_view, "--base goes with TRACE... only");
    o.nbase = mt_cli_traces(&mt_cmd_view, base.v, base.n, &base_paths);
    o.base = (const char *const *)base_paths;
  }
  int rc = mt_viewer_serve(&o);
  if (attacher > 0) { /* Ctrl-C reached it too; else it is told now */
    kill(attacher, SIGINT);
    int st;
    waitpid(attacher, &st, 0);
  }
  for (size_t i = 0; i < o.ntraces; i++) free(paths[i]);
  free(paths);
  for (size_t i = 0; i < o.nbase; i++) free(base_paths[i]);
  free(base_paths);
  return rc;
}

const mt_command mt_cmd_view = {"view", "explore a trace in the browser (flame graph, filters)",
                                usage, run};
