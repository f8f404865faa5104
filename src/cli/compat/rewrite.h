/* Shared by the commands that read a trace and write another (copy,
 * subsample, strip-names): opening both ends, the one-domain rule of format
 * version 2, and the ending (flush, errors, the reader's warnings). */
#ifndef MT_CLI_REWRITE_H
#define MT_CLI_REWRITE_H

#include <stdint.h>

#include "memtrace/format.h"

typedef struct mt_cli_rewrite {
  const char *in, *out;
  mt_reader *r;
  mt_writer *w;
  int fd;
  int wrc;      /* the writer's status; the loop runs while MT_OK */
  int reported; /* an error was already printed */
} mt_cli_rewrite;

/* Opens IN (exits 1 when it can't be read) and creates OUT. Returns 0, or 1
 * after saying why OUT can't be created (IN is closed then). */
int mt_cli_rewrite_open(mt_cli_rewrite *rw, const char *in, const char *out);

/* Opens the writer on OUT (opt->fd is set here); its status is rw->wrc. */
void mt_cli_rewrite_writer(mt_cli_rewrite *rw, const mt_trace_info *info,
                           mt_writer_options *opt);

/* Whether an event of `domain` may be written in format `version`: version
 * 2 has one domain. If not, says so and stops the rewrite. */
int mt_cli_rewrite_domain_ok(mt_cli_rewrite *rw, int version, uint32_t domain);

/* Copies every event of IN to OUT as it is (backtraces too; their codes'
 * locations are what the writer's resolver says), until the end or a
 * failure; objects renumbered when the output's ids differ, promotions and
 * collections of objects IN never allocated skipped and counted in
 * *skipped. Returns the reader's last result (for mt_cli_rewrite_end). */
int mt_cli_rewrite_events(mt_cli_rewrite *rw, int version, uint64_t *skipped);

/* Ends the rewrite, rc being the reader's last result: flushes and closes the
 * writer and OUT and reports their failure; a reader error exits 1, a reader
 * warning is printed. Returns the exit status (0, or 1 after a write
 * failure). The reader stays open: close it. */
int mt_cli_rewrite_end(mt_cli_rewrite *rw, int rc);

#endif
