/* memtrace symbolize: names for a trace's anonymous frames from separate
 * debug information, local or from debuginfod (symbolize.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rewrite.h"
#include "symbolize.h"

static const char usage[] =
    "usage: memtrace symbolize [-o OUT] TRACE\n"
    "\n"
    "Names the frames of TRACE that have no name (a stripped program's or\n"
    "library's code, shown as MODULE+0xOFFSET) from their separate debug\n"
    "information: /usr/lib/debug (Debian's -dbgsym packages) and, with\n"
    "DEBUGINFOD_URLS set, debuginfod servers, found by the files' build ids.\n"
    "The module files must be those the program ran. Writes the named trace\n"
    "to OUT, or replaces TRACE (written beside it, then renamed).\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT   where to write (default: TRACE itself)\n"
    "\n"
    "A server that does not answer costs at most DEBUGINFOD_TIMEOUT seconds\n"
    "(default here 10) per file. memtrace run does this by itself after the\n"
    "program ends when DEBUGINFOD_URLS is set; the program never waits for a\n"
    "server.\n";

typedef struct resolver {
  mt_reader *r;
  mt_cli_symbolizer *s;
} resolver;

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  resolver *rs = ctx;
  const mt_location *in = mt_reader_lookup(rs->r, code, n);
  mt_cli_symbolize(rs->s, in, *n, locs, n);
  return 0;
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_symbolize;
  const char *in, *out = NULL;
  const mt_option options[] = {{"-o", "--output", MT_OPT_TEXT, &out, NULL, 0, 0, 0},
                               {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, &in, 1, 1, "TRACE", 0, 0, NULL};
  mt_cli_parse(cmd, argc, argv, &spec);
  setenv("DEBUGINFOD_TIMEOUT", "10", 0); /* unless the user set one */
  char err[512], tmp[4096];
  mt_cli_symbolizer *s;
  if (mt_cli_symbolizer_new(&s, err, sizeof err) != 0) {
    fprintf(stderr, "memtrace symbolize: %s\n", err);
    return 1;
  }
  snprintf(tmp, sizeof tmp, "%s.symbolize-tmp", out ? out : in);
  mt_cli_rewrite rw;
  if (mt_cli_rewrite_open(&rw, in, tmp)) {
    mt_cli_symbolizer_free(s);
    return 1;
  }
  mt_trace_info info = *mt_reader_info(rw.r);
  int version = info.version >= 3 ? 3 : 2;
  resolver rs = {rw.r, s};
  mt_writer_options opt = {.version = version, .resolve = resolve, .resolve_ctx = &rs};
  mt_cli_rewrite_writer(&rw, &info, &opt);
  uint64_t skipped = 0;
  int status = mt_cli_rewrite_end(&rw, mt_cli_rewrite_events(&rw, version, &skipped));
  mt_reader_close(rw.r);
  if (status == 0 && rename(tmp, out ? out : in) != 0) {
    fprintf(stderr, "memtrace symbolize: cannot rename %s to %s\n", tmp, out ? out : in);
    status = 1;
  }
  if (status != 0) unlink(tmp);
  else
    fprintf(stderr, "memtrace: named %zu code%s of %s from debug information\n",
            mt_cli_symbolizer_named(s), mt_cli_symbolizer_named(s) == 1 ? "" : "s", in);
  mt_cli_symbolizer_free(s);
  return status;
}

const mt_command mt_cmd_symbolize = {
    "symbolize", "name a trace's anonymous frames from debug information (debuginfod)", usage, run};
