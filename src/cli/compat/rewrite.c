#include "rewrite.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
