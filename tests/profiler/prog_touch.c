/* Allocates and touches MB mebibytes in ten steps, 60 ms apart, then frees
 * them: resident memory that grows while the program runs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 100, step = mb / 10 * 1048576;
  void *blocks[10];
  struct timespec nap = {0, 60000000};
  for (int i = 0; i < 10; i++) {
    blocks[i] = malloc(step);
    if (!blocks[i]) return 1;
    memset(blocks[i], i + 1, step);
    nanosleep(&nap, NULL);
  }
  for (int i = 0; i < 10; i++) free(blocks[i]);
  return 0;
}
