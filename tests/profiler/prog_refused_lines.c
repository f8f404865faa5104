/* Allocates through the two functions of refused_lines.S, whose line
 * tables the tracer's own reader refuses (e2e.sh, refused-lines). */
#include <stdio.h>
#include <stdlib.h>

void *refused_seq_alloc(size_t n);
void *refused_define_alloc(size_t n);

int main(void) {
  for (int i = 0; i < 4; i++) {
    void *a = refused_seq_alloc(1000), *b = refused_define_alloc(2000);
    if (!a || !b) {
      fprintf(stderr, "prog_refused_lines: out of memory\n");
      return 1;
    }
    free(a);
    free(b);
  }
  return 0;
}
