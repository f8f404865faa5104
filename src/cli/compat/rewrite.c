#include "rewrite.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/containers.h"
#include "base/private_file.h"
#include "cli.h"

int mt_cli_rewrite_open(mt_cli_rewrite *rw, const char *in, const char *out) {
  *rw = (mt_cli_rewrite){.in = in, .out = out, .fd = -1};
  rw->r = mt_cli_open(in);
  char err[PATH_MAX + 128];
  rw->fd = mt_open_private(out, O_TRUNC, err, sizeof err);
  if (rw->fd < 0) {
    if (errno == ELOOP) fprintf(stderr, "memtrace: %s\n", err);
    else fprintf(stderr, "memtrace: %s: cannot create: %s\n", out, strerror(errno));
    mt_reader_close(rw->r);
    return 1;
  }
  return 0;
}

void mt_cli_rewrite_writer(mt_cli_rewrite *rw, const mt_trace_info *info,
                           mt_writer_options *opt) {
  opt->fd = rw->fd;
  rw->wrc = mt_writer_open(&rw->w, info, opt);
}

int mt_cli_rewrite_domain_ok(mt_cli_rewrite *rw, int version, uint32_t domain) {
  if (version >= 3 || domain == 0) return 1;
  fprintf(stderr,
          "memtrace: %s: has events of domain %u; format version 2 has one "
          "domain: use --format-version 3\n",
          rw->in, domain);
  rw->wrc = MT_ERR_INVALID;
  rw->reported = 1;
  return 0;
}

int mt_cli_rewrite_events(mt_cli_rewrite *rw, int version, uint64_t *skipped) {
  /* Input id -> output id, for the objects whose ids differ (only when the
   * input's ids have gaps or another chunking). */
  mt__u64map remap = {0};
  mt_event ev;
  int rc = 0;
  while (rw->wrc == MT_OK && (rc = mt_reader_next(rw->r, &ev)) > 0) {
    if (!mt_cli_rewrite_domain_ok(rw, version, ev.domain)) break;
    if (ev.kind == MT_EVENT_ALLOC) {
      uint64_t id;
      rw->wrc = mt_writer_alloc(rw->w, ev.time, ev.domain, ev.length, ev.nsamples, ev.source,
                                ev.backtrace, ev.backtrace_len, &id);
      if (rw->wrc == MT_OK && id != ev.obj_id &&
          (id > UINT32_MAX || mt__u64map_put(&remap, ev.obj_id, (uint32_t)id) != 0)) {
        fprintf(stderr, "memtrace: %s: too many renumbered objects\n", rw->in);
        rw->wrc = MT_ERR_NOMEM;
        rw->reported = 1;
      }
    } else {
      uint32_t *m = mt__u64map_get(&remap, ev.obj_id);
      uint64_t id = m ? *m - 1 : ev.obj_id;
      rw->wrc = ev.kind == MT_EVENT_PROMOTE ? mt_writer_promote(rw->w, ev.time, ev.domain, id)
                                            : mt_writer_collect(rw->w, ev.time, ev.domain, id);
      if (rw->wrc == MT_ERR_INVALID) { /* an object the input never allocated */
        (*skipped)++;
        rw->wrc = MT_OK;
      }
    }
  }
  mt__u64map_free(&remap);
  return rc;
}

int mt_cli_rewrite_end(mt_cli_rewrite *rw, int rc) {
  if (rw->wrc == MT_OK && rc >= 0) rw->wrc = mt_writer_flush(rw->w);
  if (rw->wrc != MT_OK && !rw->reported)
    fprintf(stderr, "memtrace: %s: %s\n", rw->out, mt_writer_error(rw->w));
  mt_writer_close(rw->w);
  if (rc < 0) mt_cli_finish(rw->r, rc); /* exits */
  if (close(rw->fd) != 0 && rw->wrc == MT_OK) {
    fprintf(stderr, "memtrace: %s: %s\n", rw->out, strerror(errno));
    rw->wrc = MT_ERR_IO;
  }
  if (rw->wrc != MT_OK) return 1;
  mt_cli_finish(rw->r, rc);
  return 0;
}
