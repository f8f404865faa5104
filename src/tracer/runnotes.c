/* What a traced process tells `memtrace run`: that it traces, and the
 * processes it starts.
 *
 * memtrace run reports on the trace of the process it started. A shell
 * script, `time`, `make` or a compiler driver do their work in child
 * processes: without %p in the trace's name those run untraced, and the
 * report showed the wrapper's few allocations with no word of the rest;
 * with %p (run's default name) each child wrote a trace of its own that
 * the report did not name. So run passes the path of a file of its own
 * (/proc/RUN/fd/N of a memfd: nothing to clean up), and each traced
 * process appends one line per child it starts. The lines are written when
 * the child is started, so a program stopped by Ctrl-C has told them. A
 * trace sent to a socket (tcp:, listen:) leaves no file for run to look
 * at: the traced process tells it that it started tracing. */
#include "runnotes.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "dest.h"
#include "environ.h"
#include "format/trace_file.h"

static int fd = -1;
static mt__fd_id id;

void mt__runnotes_open(void) {
  const char *path = mt__env_get(MT__RUN_NOTES_ENV);
  if (fd >= 0 || !path || !*path) return;
  int f = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (f >= 0) fd = mt__dest_adopt(f, &id);
}

void mt__runnotes_close(void) {
  if (fd < 0) return;
  close(fd);
  fd = -1;
}

/* Appends "KIND PID\n" (no stdio: a fork handler may call this), unless
 * the program has closed the descriptor or put a file of its own at its
 * number. */
static void note(char kind, long pid) {
  if (fd < 0 || !mt__dest_same(fd, &id)) return;
  char line[32], digits[24];
  size_t n = 0, k = 0;
  unsigned long v = pid > 0 ? (unsigned long)pid : 0;
  do digits[k++] = (char)('0' + v % 10);
  while ((v /= 10) && k < sizeof digits);
  line[n++] = kind;
  line[n++] = ' ';
  while (k) line[n++] = digits[--k];
  line[n++] = '\n';
  ssize_t w = write(fd, line, n); /* O_APPEND: one line, whole, at the end */
  (void)w;
}

void mt__runnotes_started(void) { note('s', (long)getpid()); }

void mt__runnotes_stopped(unsigned long long us, const char *why) {
  if (fd < 0 || !mt__dest_same(fd, &id)) return;
  char line[600];
  int n = snprintf(line, sizeof line, "x %ld %llu ", (long)getpid(), us);
  for (const char *c = why; *c && n < (int)sizeof line - 2; c++)
    line[n++] = *c == '\n' ? ' ' : *c;
  line[n++] = '\n';
  ssize_t w = write(fd, line, (size_t)n); /* O_APPEND: one line, whole, at the end */
  (void)w;
}

void mt__runnotes_child(int traced, long pid) { note(traced ? 't' : 'u', pid); }
