#include "output.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define OUT_CAP (1u << 20)

void mt_out_init(mt_out *o, int fd) {
  o->buf = malloc(OUT_CAP);
  if (!o->buf) {
    fprintf(stderr, "memtrace: out of memory\n");
    exit(1);
  }
  o->len = 0;
  o->cap = OUT_CAP;
  o->fd = fd;
}

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "memtrace: writing %s failed: %s\n",
              fd == STDOUT_FILENO ? "to standard output" : "the output", strerror(errno));
      exit(1);
    }
    p += w;
    n -= (size_t)w;
  }
}

void mt_out_flush(mt_out *o) {
  write_all(o->fd, o->buf, o->len);
  o->len = 0;
}

void mt_out_free(mt_out *o) {
  free(o->buf);
  o->buf = NULL;
}

void mt_out_write_slow(mt_out *o, const char *s, size_t n) {
  mt_out_flush(o);
  if (n >= o->cap) write_all(o->fd, s, n);
  else {
    memcpy(o->buf, s, n);
    o->len = n;
  }
}

size_t mt_fmt_u64(char *buf, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  return n;
}

void mt_out_u64(mt_out *o, uint64_t v, int width, char pad) {
  char tmp[24];
  size_t n = mt_fmt_u64(tmp, v);
  while ((int)n < width--) mt_out_char(o, pad);
  mt_out_write(o, tmp, n);
}

void mt_out_i64(mt_out *o, int64_t v) {
  if (v < 0) {
    mt_out_char(o, '-');
    mt_out_u64(o, (uint64_t)0 - (uint64_t)v, 0, ' ');
  } else {
    mt_out_u64(o, (uint64_t)v, 0, ' ');
  }
}

void mt_out_printf(mt_out *o, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    mt_out_write(o, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) return;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  mt_out_write(o, big, (size_t)n);
  free(big);
}
