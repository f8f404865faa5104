/* Allocates known bytes at known sites through every allocation function,
 * then prints the truth ("SITE count bytes live") for the checker. Sites
 * are noinline functions named site_*; sizes are multiples of 8 so that
 * bytes = words x 8 exactly. Usage: prog_sites [SCALE] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
static volatile int sink;
static void touch(void *p) { if (p) sink += *(volatile char *)p; }

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

int main(int argc, char **argv) {
  int scale = argc > 1 ? atoi(argv[1]) : 1;
  static void *keep[100000];
  int nkeep = 0;
  for (int r = 0; r < scale; r++) {
    for (int i = 0; i < 1000; i++) {
      size_t n = 8 * (1 + i % 50);
      void *p = site_malloc(n); touch(p);
      int live = i % 10 == 0;
      note("site_malloc", n, live);
      if (live && nkeep < 100000) keep[nkeep++] = p; else free(p);
    }
    for (int i = 0; i < 300; i++) {
      size_t n = 8 * (1 + i % 20);
      void *p = site_calloc(n); touch(p); free(p);
      note("site_calloc", n, 0);
    }
    for (int i = 0; i < 200; i++) {
      /* the first block is site_malloc's; each realloc is a new block */
      size_t n = 64;
      void *p = site_malloc(n); note("site_malloc", n, 0);
      p = site_realloc(p, 4096); note("site_realloc", 4096, 0); touch(p);
      p = site_reallocarray(p, 8192); note("site_reallocarray", 8192, 0); touch(p);
      free(p);
    }
    for (int i = 0; i < 100; i++) {
      void *p;
      p = site_posix_memalign(128); note("site_posix_memalign", 128, 0); free(p);
      p = site_aligned_alloc(256); note("site_aligned_alloc", 256, 0); free(p);
      p = site_memalign(96); note("site_memalign", 96, 0); free(p);
      p = site_valloc(4096); note("site_valloc", 4096, 0); free(p);
      p = site_pvalloc(4096); note("site_pvalloc", 4096, 0); free(p);
    }
  }
  for (int i = 0; i < nkeep; i++) touch(keep[i]); /* still live at exit */
  for (int i = 0; i < nt; i++) printf("%s %lu %lu %lu\n", T[i].name, T[i].count, T[i].bytes, T[i].live);
  return 0;
}
