/* libFuzzer target: the tracer's DWARF line-table reader
 * (src/tracer/dwline.h); the tables come from any binary the profiled
 * program maps.
 *
 * Input: a flags byte (bit 0: 4-byte addresses, else 8; bit 1: a unit
 * directory), two little-endian 16-bit lengths, that many bytes of
 * .debug_line_str and of .debug_str, and the rest: .debug_line, its table
 * at offset 0. A table read is asked for the row at addresses around each
 * row it gives (from the input's last 8 bytes and from 0 up), and for every
 * file name. Checks: memory safety and UBSan; a row found for pc lies at or
 * below pc, and asking at that row's own address gives the same row; a
 * file name fits where said, and not in one byte less. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwline.h"

static void check_file(const mt__line_table *t, uint32_t file) {
  static char buf[8192], small[8192];
  int r = mt__line_table_file(t, file, buf, sizeof buf);
  if (r < 0) return;
  if (r == 0) {
    if (mt__line_table_file(t, file, small, 1) != 0) abort(); /* none, whatever the room */
    return;
  }
  size_t n = strlen(buf);
  if (mt__line_table_file(t, file, small, n + 1) != 1 || strcmp(small, buf) != 0) abort();
  if (mt__line_table_file(t, file, small, n) != -1) abort();
}

static void ask(const mt__line_table *t, uint64_t pc) {
  mt__line_row row, again;
  if (!mt__line_table_find(t, pc, &row)) return;
  if (row.addr > pc) abort();
  if (!mt__line_table_find(t, row.addr, &again) || again.addr != row.addr ||
      again.file != row.file || again.line != row.line || again.column != row.column)
    abort();
  check_file(t, row.file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  unsigned flags = data[0];
  size_t line_str_n = data[1] | (size_t)data[2] << 8, str_n = data[3] | (size_t)data[4] << 8;
  data += 5;
  size -= 5;
  if (line_str_n > size) line_str_n = size;
  if (str_n > size - line_str_n) str_n = size - line_str_n;
  /* each section a copy of its own, so that reads past one are caught */
  uint8_t *line_str = malloc(line_str_n + 1), *str = malloc(str_n + 1);
  size_t line_n = size - line_str_n - str_n;
  uint8_t *line = malloc(line_n + 1);
  if (!line_str || !str || !line) abort();
  memcpy(line_str, data, line_str_n);
  memcpy(str, data + line_str_n, str_n);
  memcpy(line, data + line_str_n + str_n, line_n);
  mt__line_sections sec = {line_n ? line : NULL, line_str_n ? line_str : NULL,
                           str_n ? str : NULL, line_n, line_str_n, str_n};
  mt__line_table *t =
      mt__line_table_read(&sec, 0, flags & 2 ? "/unit/dir" : NULL, flags & 1 ? 4 : 8);
  if (t) {
    uint64_t base = 0;
    if (line_n >= 8) memcpy(&base, line + line_n - 8, 8);
    for (uint64_t d = 0; d < 64; d++) {
      ask(t, d * 7);
      ask(t, base + d);
      ask(t, base - d);
    }
    ask(t, UINT64_MAX);
    for (uint32_t f = 0; f < 40; f++) check_file(t, f);
    if (mt__line_table_points(t) > mt__line_table_rows(t)) abort();
    mt__line_table_free(t);
  }
  free(line_str);
  free(str);
  free(line);
  return 0;
}
