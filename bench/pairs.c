/* N malloc+free pairs of 32 bytes: the unit whose instruction count the
 * benchmark compares with and without the interposer (callgrind). */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  void *volatile p;
  for (long i = 0; i < n; i++) {
    p = malloc(32);
    free(p);
  }
  (void)p;
  return 0;
}
