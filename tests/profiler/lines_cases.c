/* Code for test_srclines, built into two libraries: one with DWARF 4 line
 * tables (include_directories, file_names, file 0 unused), one with each
 * function in a section of its own and the unused ones dropped by the
 * linker (-ffunction-sections, --gc-sections), whose line tables then hold
 * sequences of dropped code at address 0 or a tombstone, overlapping. The
 * inline helpers from a header-like block and the loops give rows in
 * several files and many columns. */
#include <stddef.h>
#include <string.h>

#define HIDDEN __attribute__((visibility("hidden"), noinline))

static inline unsigned mix(unsigned h, unsigned x) {
  h ^= x;
  h *= 0x9e3779b1u;
  return h ^ (h >> 15);
}

HIDDEN unsigned lines_unused_a(const unsigned char *p, size_t n) { /* dropped */
  unsigned h = 7;
  for (size_t i = 0; i < n; i++) h = mix(h, p[i]);
  return h;
}

HIDDEN unsigned lines_unused_b(unsigned x) { /* dropped */
  return mix(x, x * 3) + mix(x + 1, 9);
}

HIDDEN unsigned lines_hash(const char *s) {
  unsigned h = 1;
  for (size_t i = 0, n = strlen(s); i < n; i++) {
    if (s[i] == ' ') continue;
    h = mix(h, (unsigned char)s[i]);
  }
  return h;
}

HIDDEN int lines_sort(int *v, int n) {
  int swaps = 0;
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      int t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
      swaps++;
    }
  return swaps;
}

unsigned lines_cases_run(int rounds) {
  int v[32];
  unsigned h = 0;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < 32; i++) v[i] = (int)mix((unsigned)r, (unsigned)i) % 1000;
    h += (unsigned)lines_sort(v, 32) + lines_hash(r & 1 ? "a line table" : "two words");
  }
  return h;
}
