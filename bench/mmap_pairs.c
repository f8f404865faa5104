/* bench/mmap_pairs N [BYTES]: N anonymous mappings of BYTES (4096) bytes,
 * each written once (a page fault, as a real use would take) and unmapped:
 * the load of bench/mappings.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 4096;
  unsigned long sum = 0;
  for (long i = 0; i < n; i++) {
    volatile char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      perror("mmap_pairs: mmap");
      return 1;
    }
    p[0] = (char)i;
    sum += (unsigned char)p[0];
    if (munmap((void *)p, bytes) != 0) {
      perror("mmap_pairs: munmap");
      return 1;
    }
  }
  printf("%lu\n", sum);
  return 0;
}
