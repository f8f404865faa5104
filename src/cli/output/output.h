/* Buffered standard output for the tools: large writes, fast decimal
 * formatting, and a clear message (then exit 1) when the output fails. */
#ifndef MT_CLI_OUTPUT_H
#define MT_CLI_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct mt_out {
  char *buf;
  size_t len, cap;
  int fd;
} mt_out;

void mt_out_init(mt_out *o, int fd);
/* Writes what is buffered; on failure prints a message and exits 1. */
void mt_out_flush(mt_out *o);
void mt_out_free(mt_out *o);
void mt_out_write_slow(mt_out *o, const char *s, size_t n);

static inline void mt_out_write(mt_out *o, const char *s, size_t n) {
  if (o->cap - o->len >= n) {
    memcpy(o->buf + o->len, s, n);
    o->len += n;
  } else {
    mt_out_write_slow(o, s, n);
  }
}
static inline void mt_out_str(mt_out *o, const char *s) { mt_out_write(o, s, strlen(s)); }
static inline void mt_out_char(mt_out *o, char c) { mt_out_write(o, &c, 1); }

/* Decimal of v, left-padded with `pad` to at least `width` characters. */
void mt_out_u64(mt_out *o, uint64_t v, int width, char pad);
void mt_out_i64(mt_out *o, int64_t v);
void mt_out_printf(mt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formats v into buf (at least 21 bytes); returns the length. */
size_t mt_fmt_u64(char *buf, uint64_t v);

#endif
