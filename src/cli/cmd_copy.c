/* memtrace copy: decode a trace and encode it again. With memtrace's own
 * encoder choices, copying a trace memtrace wrote reproduces it exactly. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tables.h"

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
  const char *in = NULL, *out = NULL;
  int version = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mt_cli_is_help(a)) return mt_cli_help(&mt_cmd_copy);
    if (strcmp(a, "--format-version") == 0 || strncmp(a, "--format-version=", 17) == 0) {
      const char *v = a[16] == '=' ? a + 17 : (i + 1 < argc ? argv[++i] : NULL);
      if (!v) mt_cli_usage_error(&mt_cmd_copy, "--format-version needs a value (2 or 3)");
      if (strcmp(v, "2") == 0) version = 2;
      else if (strcmp(v, "3") == 0) version = 3;
      else mt_cli_usage_error(&mt_cmd_copy, "--format-version must be 2 or 3, not '%s'", v);
    } else if (a[0] == '-' && a[1]) {
      mt_cli_usage_error(&mt_cmd_copy, "unknown option '%s'", a);
    } else if (!in) {
      in = a;
    } else if (!out) {
      out = a;
    } else {
      mt_cli_usage_error(&mt_cmd_copy, "unexpected argument '%s'", a);
    }
  }
  if (!in || !out) mt_cli_usage_error(&mt_cmd_copy, "needs IN and OUT");

  mt_reader *r = mt_cli_open(in);
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "memtrace: %s: cannot create: %s\n", out, strerror(errno));
    mt_reader_close(r);
    return 1;
  }
  mt_trace_info info = *mt_reader_info(r);
  if (version < 3) info.initial_domain = 0;
  mt_writer_options opt = {.version = version, .fd = fd, .resolve = resolve, .resolve_ctx = r};
  mt_writer *w;
  int wrc = mt_writer_open(&w, &info, &opt);

  /* Input id -> output id, for the objects whose ids differ (only when the
   * input's ids have gaps or another chunking). */
  mt__u64map remap = {0};
  uint64_t skipped = 0;
  mt_event ev;
  int rc = 0;
  while (wrc == MT_OK && (rc = mt_reader_next(r, &ev)) > 0) {
    if (version < 3 && ev.domain != 0) {
      fprintf(stderr,
              "memtrace: %s: has events of domain %u; format version 2 has one "
              "domain: use --format-version 3\n",
              in, ev.domain);
      wrc = MT_ERR_INVALID;
      break;
    }
    if (ev.kind == MT_EVENT_ALLOC) {
      uint64_t id;
      wrc = mt_writer_alloc(w, ev.time, ev.domain, ev.length, ev.nsamples, ev.source,
                            ev.backtrace, ev.backtrace_len, &id);
      if (wrc == MT_OK && id != ev.obj_id) {
        if (id > UINT32_MAX || mt__u64map_put(&remap, ev.obj_id, (uint32_t)id) != 0) {
          fprintf(stderr, "memtrace: %s: too many renumbered objects\n", in);
          wrc = MT_ERR_NOMEM;
        }
      }
    } else {
      uint32_t *m = mt__u64map_get(&remap, ev.obj_id);
      uint64_t id = m ? *m - 1 : ev.obj_id;
      wrc = ev.kind == MT_EVENT_PROMOTE ? mt_writer_promote(w, ev.time, ev.domain, id)
                                        : mt_writer_collect(w, ev.time, ev.domain, id);
      if (wrc == MT_ERR_INVALID) { /* an object the input never allocated */
        skipped++;
        wrc = MT_OK;
      }
    }
  }
  if (wrc == MT_OK && rc >= 0) wrc = mt_writer_flush(w);
  if (wrc != MT_OK && wrc != MT_ERR_INVALID)
    fprintf(stderr, "memtrace: %s: %s\n", out, mt_writer_error(w));
  mt_writer_close(w);
  if (rc < 0) mt_cli_finish(r, rc); /* exits */
  if (close(fd) != 0 && wrc == MT_OK) {
    fprintf(stderr, "memtrace: %s: %s\n", out, strerror(errno));
    wrc = MT_ERR_IO;
  }
  mt__u64map_free(&remap);
  if (wrc != MT_OK) {
    mt_reader_close(r);
    return 1;
  }
  mt_cli_finish(r, rc);
  if (skipped)
    fprintf(stderr, "memtrace: warning: %s: skipped %llu promotions/collections of "
            "objects the trace never allocated\n", in, (unsigned long long)skipped);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_copy = {"copy", "re-encode a trace (format version 2 or 3)", usage, run};
