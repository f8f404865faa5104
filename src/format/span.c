/* A trace file's span from its packet headers alone (mt_trace_span). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "format_internal.h"
#include "memtrace/format.h"

/* The header fields read here, at their offsets in versions 1 to 3. */
enum { OFF_SIZE = 4, OFF_BEGIN = 8, OFF_END = 16, OFF_PID = 30, SPAN_HEADER = 38 };

int mt_trace_span(const char *path, uint64_t *first, uint64_t *last) {
  /* a FIFO is never opened here: that would wait for its writer, and take
   * what it writes from the reader that follows */
  struct stat st;
  if (stat(path, &st) != 0) return MT_ERR_IO;
  if (!S_ISREG(st.st_mode)) return MT_ERR_INVALID;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return MT_ERR_IO;
  int rc = MT_OK;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { /* replaced meanwhile */
    close(fd);
    return MT_ERR_INVALID;
  }
  uint64_t size = (uint64_t)st.st_size, off = 0, pid = 0, end = 0;
  while (off + SPAN_HEADER <= size) {
    uint8_t h[SPAN_HEADER];
    ssize_t got = pread(fd, h, sizeof h, (off_t)off);
    if (got < 0 && errno == EINTR) continue;
    if (got != (ssize_t)sizeof h) {
      rc = MT_ERR_IO;
      break;
    }
    uint64_t len = mt__ld32(h + OFF_SIZE) / 8;
    if (mt__ld32(h) != MT__MAGIC || len < MT__HEADER_V2 || len > MT__MAX_PACKET) {
      rc = MT_ERR_CORRUPT;
      break;
    }
    if (off + len > size) break; /* a truncated last packet: the reader stops before it */
    if (off == 0) { /* the first packet: the start, and the process */
      *first = mt__ld64(h + OFF_BEGIN);
      pid = mt__ld64(h + OFF_PID);
    }
    uint64_t e = mt__ld64(h + OFF_END);
    if (mt__ld64(h + OFF_PID) == pid && e > end) end = e;
    off += len;
  }
  close(fd);
  if (rc == MT_OK && off == 0) rc = MT_ERR_CORRUPT; /* not one whole packet */
  *last = end;
  return rc;
}
