/* Known caller paths under two allocation sites, for `memtrace run`'s
 * summary (which names each site's heaviest callers):
 *   xmalloc, 1,000 blocks of 1 KiB: 600 from leaf_a <- mid_1 <- main,
 *     150 from leaf_a <- mid_2 <- main, 250 from leaf_b <- main;
 *   site_deep, 100 blocks of 2 KiB from rec <- rec <- rec <- rec <- main;
 *   site_kept, 10 blocks of 4 KiB, allocated first and never freed.
 * Every other block is freed at once: the live heap peaks at 42 KiB.
 * Built at -O1: no call below is a tail call. */
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

NOINLINE void *site_kept(void) {
  void *p = malloc(4096);
  keep = p;
  return p;
}
static void *volatile kept[10];

int main(void) {
  for (int i = 0; i < 10; i++) kept[i] = site_kept();
  mid_1();
  mid_2();
  for (int i = 0; i < 250; i++)
    leaf_b();
  for (int i = 0; i < 100; i++)
    rec(3);
  return 0;
}
