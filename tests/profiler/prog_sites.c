/* Allocates known bytes at known sites through every allocation function,
 * then prints the truth ("SITE count bytes live") for the checker. Sites
 * are noinline functions named site_*; sizes are multiples of 8 so that
 * bytes = words x 8 exactly. Usage: prog_sites [SCALE [no-pvalloc]]
 * (no-pvalloc: for allocators without pvalloc, such as jemalloc, whose
 * free would then be handed the C library's block). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
static volatile int sink;
static void touch(void *p) { if (p) sink += *(volatile char *)p; }

/* What the program must see whether or not a block is sampled: its
 * alignment, its usable size, its bytes kept across realloc. */
static int errors;
static void check(void *p, size_t n, size_t align, const char *what) {
  if (!p) { printf("ERROR %s: NULL\n", what); errors++; return; }
  if (align == 16 && n < 16) align = 8; /* an allocator may align small blocks less */
  if ((uintptr_t)p % align) { printf("ERROR %s: %p not aligned to %zu\n", what, p, align); errors++; }
  if (malloc_usable_size(p) < n) { printf("ERROR %s: usable size %zu < %zu\n", what, malloc_usable_size(p), n); errors++; }
}
static void fill(void *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) ((unsigned char *)p)[i] = (unsigned char)(seed + i * 7);
}
static void same(const void *p, size_t n, unsigned seed, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)p)[i] != (unsigned char)(seed + i * 7)) {
      printf("ERROR %s: byte %zu changed\n", what, i);
      errors++;
      return;
    }
}

typedef struct truth { const char *name; unsigned long count, bytes, live; } truth;
static truth T[16];
static int nt;
static truth *site(const char *name) {
  for (int i = 0; i < nt; i++) if (strcmp(T[i].name, name) == 0) return &T[i];
  T[nt].name = name;
  return &T[nt++];
}
static void note(const char *name, size_t bytes, int live) {
  truth *t = site(name);
  t->count++;
  t->bytes += bytes;
  t->live += live;
}

NOINLINE void *site_malloc(size_t n) { return malloc(n); }
NOINLINE void *site_calloc(size_t n) { return calloc(n / 8, 8); }
NOINLINE void *site_realloc(void *p, size_t n) { return realloc(p, n); }
NOINLINE void *site_reallocarray(void *p, size_t n) { return reallocarray(p, n / 8, 8); }
NOINLINE void *site_posix_memalign(size_t n) { void *p = NULL; return posix_memalign(&p, 64, n) ? NULL : p; }
NOINLINE void *site_aligned_alloc(size_t n) { return aligned_alloc(64, n); }
NOINLINE void *site_memalign(size_t n) { return memalign(32, n); }
NOINLINE void *site_valloc(size_t n) { return valloc(n); }
NOINLINE void *site_pvalloc(size_t n) { return pvalloc(n); }
NOINLINE void *site_errno(size_t n) { return malloc(n); }

int main(int argc, char **argv) {
  int scale = argc > 1 ? atoi(argv[1]) : 1;
  int pv = !(argc > 2 && strcmp(argv[2], "no-pvalloc") == 0);
  static void *keep[100000];
  int nkeep = 0;
  /* the profiler's work inside malloc and free (its first samples, writing
   * the trace) leaves the program's errno as it was */
  for (int i = 0; i < 20000; i++) {
    errno = EILSEQ;
    void *p = site_errno(1024); note("site_errno", 1024, 0);
    int e1 = errno;
    free(p);
    if (e1 != EILSEQ || errno != EILSEQ) {
      printf("ERROR errno: %d after malloc, %d after free, not %d\n", e1, errno, EILSEQ);
      errors++;
      break;
    }
  }
  for (int r = 0; r < scale; r++) {
    for (int i = 0; i < 1000; i++) {
      size_t n = 8 * (1 + i % 50);
      void *p = site_malloc(n); touch(p);
      check(p, n, 16, "malloc");
      int live = i % 10 == 0;
      note("site_malloc", n, live);
      if (live && nkeep < 100000) keep[nkeep++] = p; else free(p);
    }
    for (int i = 0; i < 300; i++) {
      size_t n = 8 * (1 + i % 20);
      void *p = site_calloc(n); touch(p);
      check(p, n, 16, "calloc");
      for (size_t k = 0; k < n; k++) if (((char *)p)[k]) { printf("ERROR calloc: not zeroed\n"); errors++; break; }
      free(p);
      note("site_calloc", n, 0);
    }
    for (int i = 0; i < 200; i++) {
      /* the first block is site_malloc's; each realloc is a new block */
      size_t n = 64;
      void *p = site_malloc(n); note("site_malloc", n, 0);
      fill(p, n, (unsigned)i);
      p = site_realloc(p, 4096); note("site_realloc", 4096, 0); touch(p);
      check(p, 4096, 16, "realloc");
      same(p, n, (unsigned)i, "realloc");
      fill(p, 4096, (unsigned)i + 1);
      p = site_reallocarray(p, 8192); note("site_reallocarray", 8192, 0); touch(p);
      check(p, 8192, 16, "reallocarray");
      same(p, 4096, (unsigned)i + 1, "reallocarray");
      free(p);
    }
    for (int i = 0; i < 100; i++) {
      void *p;
      p = site_posix_memalign(128); note("site_posix_memalign", 128, 0); check(p, 128, 64, "posix_memalign"); free(p);
      p = site_aligned_alloc(256); note("site_aligned_alloc", 256, 0); check(p, 256, 64, "aligned_alloc"); free(p);
      p = site_memalign(96); note("site_memalign", 96, 0); check(p, 96, 32, "memalign"); free(p);
      p = site_valloc(4096); note("site_valloc", 4096, 0); check(p, 4096, 4096, "valloc"); free(p);
      if (pv) { p = site_pvalloc(4096); note("site_pvalloc", 4096, 0); check(p, 4096, 4096, "pvalloc"); free(p); }
    }
  }
  /* a block grown by realloc far past the C library's mmap threshold (it
   * may move it with mremap) keeps its bytes; so does a shrunk one */
  {
    size_t n = 64 << 10;
    unsigned char *p = site_malloc(n); note("site_malloc", n, 0);
    fill(p, n, 3);
    for (int k = 0; k < 5; k++) {
      p = site_realloc(p, n * 4); note("site_realloc", n * 4, 0);
      check(p, n * 4, 16, "realloc big");
      same(p, n, 3, "realloc big");
      fill(p, n * 4, 3);
      n *= 4;
    }
    p = site_realloc(p, 40); note("site_realloc", 40, 0);
    check(p, 40, 16, "realloc shrink");
    same(p, 40, 3, "realloc shrink");
    free(p);
  }
  for (int i = 0; i < nkeep; i++) touch(keep[i]); /* still live at exit */
  for (int i = 0; i < nt; i++) printf("%s %lu %lu %lu\n", T[i].name, T[i].count, T[i].bytes, T[i].live);
  return errors ? 1 : 0;
}
