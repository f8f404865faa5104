/* memtrace listen: receive one traced program's stream (MEMTRACE=tcp:...)
 * and write it to a file. The stream is the trace file's bytes, so
 * `nc -l PORT > FILE` works too; this adds progress and a check. */
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/private_file.h"
#include "cli.h"
#include "format/trace_file.h"
#include "base/tcp_listen.h"

static const char usage[] =
    "usage: memtrace listen [HOST:]PORT -o FILE\n"
    "\n"
    "Waits for one traced program to connect (run it with MEMTRACE=tcp:HOST:PORT),\n"
    "writes its trace to FILE until it disconnects, then checks the trace and\n"
    "says how many events it holds. HOST defaults to 127.0.0.1; PORT 0 picks a\n"
    "free port (printed). Progress goes to stderr when it is a terminal.\n";

static int run(int argc, char **argv) {
  const char *addr, *out = NULL;
  const mt_option options[] = {{"-o", "--output", MT_OPT_TEXT, &out, NULL, 0, 0, 0},
                               {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, &addr, 1, 1, "[HOST:]PORT", 0, 0, NULL};
  mt_cli_parse(&mt_cmd_listen, argc, argv, &spec);
  if (!out) mt_cli_usage_error(&mt_cmd_listen, "missing -o FILE");
  char shown[300];
  char err[512];
  int lfd = mt_tcp_listen(addr, shown, sizeof shown, err, sizeof err);
  if (lfd == -2) mt_cli_usage_error(&mt_cmd_listen, "%s", err);
  if (lfd < 0) {
    fprintf(stderr, "memtrace listen: %s\n", err);
    return 1;
  }
  /* claimed as a traced process claims its trace (trace_file.h): a file
   * another listener or traced process is writing is refused, not mixed
   * with this stream */
  char oerr[PATH_MAX + 128];
  int ofd = mt_open_private(out, 0, oerr, sizeof oerr);
  if (ofd < 0) {
    if (errno == ELOOP) fprintf(stderr, "memtrace listen: %s\n", oerr);
    else fprintf(stderr, "memtrace listen: %s: cannot create: %s\n", out, strerror(errno));
    return 1;
  }
  int claim = mt__trace_file_claim(ofd);
  if (claim == MT__TRACE_FILE_BUSY) {
    fprintf(stderr, "memtrace listen: %s is being written by another process\n", out);
    return 1;
  }
  if (claim == MT__TRACE_FILE_NOT_EMPTIED) {
    fprintf(stderr, "memtrace listen: %s: cannot empty it: %s\n", out, strerror(errno));
    return 1;
  }
  fprintf(stderr, "memtrace: listening on %s\n", shown);
  int cfd;
  while ((cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (cfd < 0) {
    fprintf(stderr, "memtrace listen: accept failed: %s\n", strerror(errno));
    return 1;
  }
  close(lfd); /* one client: later ones are refused by the closed port */
  int tty = isatty(2);
  double start = mt_monotonic_seconds(), last = 0;
  unsigned long long total = 0;
  static char buf[1 << 16];
  for (;;) {
    ssize_t n = read(cfd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fprintf(stderr, "\nmemtrace listen: the connection failed: %s\n", strerror(errno));
      break;
    }
    if (n == 0) break;
    for (ssize_t o = 0; o < n;) {
      ssize_t w = write(ofd, buf + o, (size_t)(n - o));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        fprintf(stderr, "\nmemtrace listen: %s: write failed: %s\n", out, strerror(errno));
        return 1;
      }
      o += w;
    }
    total += (unsigned long long)n;
    double t = mt_monotonic_seconds();
    if (tty && t - last > 0.2) {
      fprintf(stderr, "\rmemtrace: received %.1f MB in %.0f s", total / 1e6, t - start);
      last = t;
    }
  }
  close(cfd);
  if (tty) fprintf(stderr, "\r\033[K");
  if (close(ofd) != 0) {
    fprintf(stderr, "memtrace listen: %s: %s\n", out, strerror(errno));
    return 1;
  }
  /* Check what arrived: every complete packet is kept. */
  mt_reader *r = mt_cli_open(out);
  unsigned long long events = 0;
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) events++;
  mt_cli_finish(r, rc);
  fprintf(stderr, "memtrace: %s: %llu bytes, %llu events from %s (pid %llu)\n", out, total,
          events, mt_reader_info(r)->executable_name,
          (unsigned long long)mt_reader_info(r)->pid);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_listen = {"listen", "receive a program's trace over TCP into a file",
                                  usage, run};
