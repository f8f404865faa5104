/* A program with a malloc of its own (own_alloc.c), ahead of the
 * interposer's, as one linking an allocator in statically: memtrace must
 * say that its allocations are not traced (e2e.sh, own-malloc). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  for (int i = 0; i < 1000; i++) {
    volatile char *p = malloc(1000);
    p[0] = 1;
    free((void *)p);
  }
  puts("own malloc done");
  return 0;
}
