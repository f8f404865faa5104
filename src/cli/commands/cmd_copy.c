/* memtrace copy: decode a trace and encode it again. With memtrace's own
 * encoder choices, copying a trace memtrace wrote reproduces it exactly. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rewrite.h"
#include "base/containers.h"

static const char usage[] =
    "usage: memtrace copy [--format-version 2|3] IN OUT\n"
    "\n"
    "Decodes the trace IN and writes its events to OUT, re-encoded in format\n"
    "version 2 (the default, read by every memtrace release) or 3.\n"
    "A trace of several domains needs version 3.\n";

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  *locs = mt_reader_lookup(ctx, code, n);
  return 0;
}

static int run(int argc, char **argv) {
  const char *pos[2];
  int vchoice = 0;
  const mt_option options[] = {
      {"--format-version", NULL, MT_OPT_CHOICE, &vchoice, "2|3", 0, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, pos, 2, 2, "IN and OUT", 0, 0, NULL};
  mt_cli_parse(&mt_cmd_copy, argc, argv, &spec);
  const char *in = pos[0], *out = pos[1];
  int version = vchoice + 2;

  mt_cli_rewrite rw;
  if (mt_cli_rewrite_open(&rw, in, out)) return 1;
  mt_trace_info info = *mt_reader_info(rw.r);
  if (version < 3) info.initial_domain = 0;
  mt_writer_options opt = {.version = version, .resolve = resolve, .resolve_ctx = rw.r};
  mt_cli_rewrite_writer(&rw, &info, &opt);

  uint64_t skipped = 0;
  int status = mt_cli_rewrite_end(&rw, mt_cli_rewrite_events(&rw, version, &skipped));
  if (status == 0 && skipped)
    fprintf(stderr, "memtrace: warning: %s: skipped %llu promotions/collections of "
            "objects the trace never allocated\n", in, (unsigned long long)skipped);
  mt_reader_close(rw.r);
  return status;
}

const mt_command mt_cmd_copy = {"copy", "re-encode a trace (format version 2 or 3)", usage, run};
