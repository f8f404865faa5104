/* A program built without PIE that takes malloc's address (e2e.sh,
 * own-malloc): its `malloc` symbol is then undefined but has a value, the
 * program's own PLT entry, which the loader gives every lookup of malloc
 * (so that every library's pointer to it equals the program's). It defines
 * no malloc: memtrace must not say it does, and must trace the calls made
 * through the pointer as well as the direct ones. */
#include <stdio.h>
#include <stdlib.h>

void *(*volatile take_malloc)(size_t);

int main(void) {
  take_malloc = malloc; /* in code: an absolute address, the PLT entry's */
  for (int i = 0; i < 100; i++) {
    volatile char *p = take_malloc(777); /* through the pointer */
    volatile char *q = malloc(555);      /* a direct call */
    p[0] = q[0] = 1;
    free((void *)p);
    free((void *)q);
  }
  puts("no-pie malloc done");
  return 0;
}
