/* A program with a malloc of its own, ahead of the interposer's (as one
 * linking an allocator in statically): memtrace must say that its
 * allocations are not traced (e2e.sh, own-malloc). This one forwards to
 * the C library's allocator under its internal names. */
#include <stddef.h>
#include <stdio.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t n, size_t size) { return __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }

int main(void) {
  for (int i = 0; i < 1000; i++) {
    volatile char *p = malloc(1000);
    p[0] = 1;
    free((void *)p);
  }
  puts("own malloc done");
  return 0;
}
