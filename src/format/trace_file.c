/* Trace files on disk (trace_file.h). */
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int mt__trace_file_claim(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return MT__TRACE_FILE_OK;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) return MT__TRACE_FILE_BUSY;
  if (st.st_size && ftruncate(fd, 0) != 0) return MT__TRACE_FILE_NOT_EMPTIED;
  return MT__TRACE_FILE_OK;
}

int mt__trace_file_busy(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  int busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return busy;
}

void mt__trace_path_expand(const char *pattern, long pid, char *out, size_t n) {
  size_t o = 0;
  for (const char *p = pattern; *p && o + 1 < n; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      o += (size_t)snprintf(out + o, n - o, "%ld", pid);
      if (o >= n) o = n - 1;
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      out[o++] = '%';
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = 0;
}

void mt__trace_period_path(const char *pattern, unsigned period, char *out, size_t n) {
  char num[16];
  snprintf(num, sizeof num, "%u", period);
  const char *at = strstr(pattern, "%n");
  size_t len = strlen(pattern);
  if (at)
    snprintf(out, n, "%.*s%s%s", (int)(at - pattern), pattern, num, at + 2);
  else if (len > 4 && strcmp(pattern + len - 4, ".ctf") == 0)
    snprintf(out, n, "%.*s.%s.ctf", (int)(len - 4), pattern, num);
  else
    snprintf(out, n, "%s.%s", pattern, num);
}

int mt__trace_path_has_pid(const char *pattern) {
  for (const char *p = pattern; *p; p++)
    if (p[0] == '%' && (p[1] == 'p' || p[1] == '%')) {
      if (p[1] == 'p') return 1;
      p++;
    }
  return 0;
}

int mt__trace_dest_is_socket(const char *dest) {
  return strncmp(dest, "tcp:", 4) == 0 || strncmp(dest, "listen:", 7) == 0;
}
