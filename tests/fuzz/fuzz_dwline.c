/* libFuzzer target: the tracer's DWARF line-table reader
 * (src/tracer/symbols/dwline.h); the tables come from any binary the profiled
 * program maps.
 *
 * Input: a flags byte (bit 0: 4-byte addresses, else 8; bit 1: a unit
 * directory), two little-endian 16-bit lengths, that many bytes of
 * .debug_line_str and of .debug_str, and the rest: .debug_line, its table
 * at offset 0. A table read is asked for the row at addresses around each
 * row it gives (from the input's last 8 bytes, from 0 up, and at and
 * around every row's address), and for every file name. Checks: memory
 * safety and UBSan; the row found for pc is the one libdw's way finds
 * among all the table's rows (all of them sorted by address, markers
 * first among equals, then in the program's order; the last at or below
 * pc; none if that is a marker or the very last row), computed here from
 * mt__line_table_each; a file name fits where said, and not in one byte
 * less. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/symbols/dwline.h"

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

/* All rows, libdw's way: sorted by address, end markers first among
 * equal addresses, then in the program's order. */
typedef struct all_rows {
  mt__line_row *v;
  int *end;
  size_t n, cap, seqno;
  size_t *order;
} all_rows;

static void collect(void *arg, const mt__line_row *row, int end) {
  all_rows *a = arg;
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 256;
    a->v = realloc(a->v, a->cap * sizeof *a->v);
    a->end = realloc(a->end, a->cap * sizeof *a->end);
    a->order = realloc(a->order, a->cap * sizeof *a->order);
    if (!a->v || !a->end || !a->order) abort();
  }
  a->v[a->n] = *row;
  a->end[a->n] = end;
  a->order[a->n] = a->n;
  a->n++;
}

static const all_rows *sorting;

static int by_libdw(const void *x, const void *y) {
  size_t i = *(const size_t *)x, j = *(const size_t *)y;
  const all_rows *a = sorting;
  if (a->v[i].addr != a->v[j].addr) return a->v[i].addr < a->v[j].addr ? -1 : 1;
  if (a->end[i] != a->end[j]) return a->end[j] - a->end[i];
  return i < j ? -1 : i > j;
}

/* dwfl_module_getsrc's search over the sorted rows. */
static int libdw_find(const all_rows *a, uint64_t pc, mt__line_row *out) {
  if (!a->n) return 0;
  size_t lo = 0, hi = a->n; /* rows [0, lo) at or below pc */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (a->v[a->order[mid]].addr <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0 || lo == a->n) return 0; /* none below, or the last: made a marker */
  size_t k = a->order[lo - 1];
  if (a->end[k]) return 0;
  *out = a->v[k];
  return 1;
}

static void ask(const mt__line_table *t, const all_rows *a, uint64_t pc) {
  mt__line_row row, want;
  int got = mt__line_table_find(t, pc, &row), ok = libdw_find(a, pc, &want);
  if (got != ok) abort();
  if (!got) return;
  if (row.addr != want.addr || row.file != want.file || row.line != want.line ||
      row.column != want.column)
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
    all_rows a = {0};
    mt__line_table_each(t, collect, &a);
    if (a.n != mt__line_table_rows(t)) abort();
    sorting = &a;
    qsort(a.order, a.n, sizeof *a.order, by_libdw);
    uint64_t base = 0;
    if (line_n >= 8) memcpy(&base, line + line_n - 8, 8);
    for (uint64_t d = 0; d < 64; d++) {
      ask(t, &a, d * 7);
      ask(t, &a, base + d);
      ask(t, &a, base - d);
    }
    for (size_t i = 0; i < a.n && i < 4096; i++) {
      ask(t, &a, a.v[i].addr - 1);
      ask(t, &a, a.v[i].addr);
      ask(t, &a, a.v[i].addr + 1);
    }
    ask(t, &a, UINT64_MAX);
    free(a.v);
    free(a.end);
    free(a.order);
    for (uint32_t f = 0; f < 40; f++) check_file(t, f);
    if (mt__line_table_points(t) > mt__line_table_rows(t)) abort();
    mt__line_table_free(t);
  }
  free(line_str);
  free(str);
  free(line);
  return 0;
}
