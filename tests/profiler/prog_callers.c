/* Known caller paths under two allocation sites, for `memtrace run`'s
 * summary (which names each site's heaviest callers):
 *   xmalloc, 1,000 blocks of 1 KiB: 600 from leaf_a <- mid_1 <- main,
 *     150 from leaf_a <- mid_2 <- main, 250 from leaf_b <- main;
 *   site_deep, 100 blocks of 2 KiB from rec <- rec <- rec <- rec <- main.
 * Every block is freed. Built at -O1: no call below is a tail call. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
static void *volatile keep;

NOINLINE void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fputs("out of memory\n", stderr);
    exit(1);
  }
  return p;
}

NOINLINE void leaf_a(void) {
  keep = xmalloc(1024);
  free(keep);
}
NOINLINE void leaf_b(void) {
  keep = xmalloc(1024);
  free(keep);
}
NOINLINE void mid_1(void) {
  for (int i = 0; i < 600; i++)
    leaf_a();
}
NOINLINE void mid_2(void) {
  for (int i = 0; i < 150; i++)
    leaf_a();
}

NOINLINE void *site_deep(void) {
  void *p = malloc(2048);
  keep = p;
  return p;
}
NOINLINE void rec(int k) {
  if (k > 0)
    rec(k - 1);
  else
    free(site_deep());
  keep = NULL;
}

int main(void) {
  mid_1();
  mid_2();
  for (int i = 0; i < 250; i++)
    leaf_b();
  for (int i = 0; i < 100; i++)
    rec(3);
  return 0;
}
