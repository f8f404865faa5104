/* libFuzzer target: the perf map reader (src/tracer/runtimes/perfmap.h), which
 * reads /tmp/perf-PID.map (or a jitdump) inside the profiled program:
 * whatever is there.
 *
 * Input: the map's text, in two parts split at the first NUL byte: the
 * first is written, looked up, then the second appended (the file grows as
 * a runtime writes it) and looked up again. The addresses asked: the
 * first 16 hexadecimal numbers of the text, each, one below and one past.
 * An input that starts with the jitdump's magic is a jitdump, split in
 * halves; the addresses asked are its code load records' (read as the
 * records' sizes lead, the header's size first).
 * Checks: memory safety and UBSan; a name found is a string of at most
 * 4096 bytes, and asked again at once, the same; the parts its name is
 * taken apart into lie within it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer/runtimes/perfmap.h"

static char path[64];

static void write_part(const uint8_t *p, size_t n, const char *mode) {
  FILE *f = fopen(path, mode);
  if (!f) abort();
  if (n && fwrite(p, 1, n, f) != n) abort();
  if (fclose(f) != 0) abort();
}

static void look(mt__perfmap *pm, uint64_t addr) {
  const char *name = mt__perfmap_name(pm, path, addr);
  if (!name) return;
  size_t len = strlen(name);
  if (len > 4096) abort();
  char copy[4097];
  memcpy(copy, name, len + 1);
  const char *again = mt__perfmap_name(pm, path, addr);
  if (!again || strcmp(again, copy) != 0) abort();
  mt__perfmap_where w;
  mt__perfmap_where_of(again, &w);
  if (w.fn_len > len) abort();
  if (w.file && (w.file < again || w.file + w.file_len > again + len)) abort();
  if (w.mark && (w.mark >= w.fn_len || !strchr("~^+*", again[w.mark]))) abort();
  if (w.anonymous && w.fn_len > w.mark + 1 && w.mark) abort(); /* nothing after the mark */
}

/* The first hexadecimal numbers of the text: the addresses asked. */
static size_t numbers(const uint8_t *p, size_t n, uint64_t *out, size_t max) {
  size_t k = 0;
  for (size_t i = 0; i < n && k < max;) {
    uint64_t v = 0;
    size_t digits = 0;
    for (; i < n && digits < 16; i++, digits++) {
      uint8_t c = p[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) break;
      v = v << 4 | (uint64_t)d;
    }
    if (digits) out[k++] = v;
    else i++;
  }
  return k;
}

static uint32_t u32_at(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* A jitdump's code load addresses, following the records' sizes. */
static size_t loads(const uint8_t *p, size_t n, uint64_t *out, size_t max) {
  size_t k = 0, at = n >= 12 ? u32_at(p + 8) : n;
  while (k < max && at + 16 <= n) {
    uint32_t id = u32_at(p + at), len = u32_at(p + at + 4);
    if (len < 16) break;
    if (id == 0 && at + 16 + 24 <= n) memcpy(&out[k++], p + at + 16 + 16, 8);
    at += len;
  }
  return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!path[0]) snprintf(path, sizeof path, "/tmp/mt-fuzz-perfmap-%ld.map", (long)getpid());
  int jitdump = size >= 4 && u32_at(data) == 0x4A695444;
  const uint8_t *nul = jitdump ? data + size / 2 : memchr(data, 0, size);
  size_t first = nul ? (size_t)(nul - data) : size;
  uint64_t addrs[16];
  size_t na = jitdump ? loads(data, size, addrs, 16) : numbers(data, size, addrs, 16);
  mt__perfmap pm = {0};
  pm.watch = size & 1; /* the lines read noted for a watcher, or not */
  write_part(data, first, "w");
  for (size_t i = 0; i < na; i++) {
    look(&pm, addrs[i]);
    look(&pm, addrs[i] - 1);
  }
  if (nul) {
    write_part(nul + !jitdump, size - first - !jitdump, "a");
    size_t before = pm.n, noted = pm.nfresh;
    mt__perfmap_refresh(&pm, path);
    /* what was read since is noted, each range a line's, unless all is */
    if (!pm.watch && (pm.nfresh || pm.fresh_all)) abort();
    if (pm.watch && !pm.fresh_all && pm.nfresh - noted != pm.n - before) abort();
    for (size_t i = 0; i < pm.nfresh; i++)
      if (pm.fresh[i].start >= pm.fresh[i].end) abort();
    for (size_t i = 0; i < na; i++) {
      look(&pm, addrs[i]);
      look(&pm, addrs[i] + 1);
    }
  }
  mt__perfmap_clear(&pm);
  unlink(path);
  return 0;
}
