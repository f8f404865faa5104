/* memtrace check: memory limits on a trace, for CI (check.h). */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "cli.h"

static const char usage[] =
    "usage: memtrace check [LIMITS] [FILTERS] TRACE...\n"
    "\n"
    "Checks TRACE against memory limits, for a CI gate: exits 0 when every\n"
    "limit is met, 1 when one is broken (printing the sites that break it),\n"
    "2 on a usage error. Several traces (files, or directories of .ctf\n"
    "files: a process tree) are checked as one, read as the viewer reads them.\n"
    "\n"
    "Limits (sizes in bytes, with an optional k, M, G or T suffix):\n"
    "  --max-allocated SIZE   bytes allocated by the objects passing the\n"
    "                         filters, over the whole trace\n"
    "  --max-peak SIZE        the peak of their live heap (exact without\n"
    "                         filters; with filters, the most at 4096 instants)\n"
    "  --max-leaked SIZE      bytes still live at the end of the trace\n"
    "  --base OLD.ctf --max-growth PCT\n"
    "                         bytes allocated may grow by at most PCT percent\n"
    "                         over OLD.ctf's (filtered alike); --base may name\n"
    "                         a directory of traces, and be repeated\n"
    "  --strict               an estimate over its limit breaks it (see below)\n"
    "\n" MT_FILTER_OPTIONS_HELP
    "\n"
    "Every figure is estimated from the samples, with its 95% interval. A limit\n"
    "is broken when the whole interval is over it, so that sampling alone\n"
    "rarely fails a build; when only the estimate is over, the limit is \"at\n"
    "risk\": printed, not failed (--strict fails it). At rate 1 the figures are\n"
    "exact. Growth breaks its limit when it is over it and significant (the\n"
    "two traces' intervals do not overlap, as memtrace diff decides).\n"
    "\n"
    "memtrace run --check-allocated, --check-peak, --check-leaked (and\n"
    "--check-base, --check-growth, --check-strict) apply the same limits to\n"
    "the run they make. docs/ci.md shows both in ctest and cargo test.\n";

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_check;
  mt_cli_limit_texts texts = {0};
  static const char *args[MT_CLI_MAX_TRACES];
  static mt_cli_list base;
  mt_filter f;
  mt_filter_init(&f);
  const mt_option options[] = {
      {"--max-allocated", NULL, MT_OPT_TEXT, &texts.allocated, NULL, 0, 0, 0},
      {"--max-peak", NULL, MT_OPT_TEXT, &texts.peak, NULL, 0, 0, 0},
      {"--max-leaked", NULL, MT_OPT_TEXT, &texts.leaked, NULL, 0, 0, 0},
      {"--base", NULL, MT_OPT_LIST, &base, NULL, 0, 0, 0},
      {"--max-growth", NULL, MT_OPT_TEXT, &texts.growth, NULL, 0, 0, 0},
      {"--strict", NULL, MT_OPT_FLAG, &texts.strict, NULL, 1, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(cmd, argc, argv, &spec);
  texts.base = base.n ? base.v[0] : NULL;
  static const char *const names[5] = {"--max-allocated", "--max-peak", "--max-leaked", "--base",
                                       "--max-growth"};
  mt_cli_limits limits;
  char err[512];
  if (mt_cli_limits_parse(&texts, names, &limits, err, sizeof err) != 0)
    mt_cli_usage_error(cmd, "%s", err);
  if (!mt_cli_limits_any(&limits))
    mt_cli_usage_error(cmd, "no limit given (--max-allocated, --max-peak, --max-leaked, "
                            "--max-growth)");
  /* the traces (several: a process tree, read as one), and the base's */
  char **paths, **base_paths = NULL;
  size_t n = mt_cli_traces(cmd, args, nargs, &paths);
  if (base.n) {
    limits.nbase = mt_cli_traces(cmd, base.v, base.n, &base_paths);
    limits.base_paths = (const char *const *)base_paths;
  }
  mt_analysis *a = mt_cli_load_many(cmd, (const char *const *)paths, n);
  mt_cli_warn_unmatched(cmd, &f, (const mt_analysis *const *)&a, 1);
  char many[128];
  snprintf(many, sizeof many, "%zu traces (%s ...)", n, paths[0]);
  int rc = mt_cli_check(stdout, n == 1 ? paths[0] : many, a, &f, &limits);
  mt_analysis_free(a);
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
  for (size_t i = 0; i < limits.nbase; i++) free(base_paths[i]);
  free(base_paths);
  return rc < 0 ? 1 : rc;
}

const mt_command mt_cmd_check = {"check", "memory limits on a trace, for CI: exit 1 when one is broken",
                                 usage, run};
