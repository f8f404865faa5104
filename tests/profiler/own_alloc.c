/* An allocator of one's own, as a program or library linking one in
 * exports it: malloc and its kin, here forwarding to the C library's
 * allocator under its internal names. Linked into prog_own_malloc, and
 * built as libmt_own_alloc.so, preloaded ahead of the interposer
 * (e2e.sh, own-malloc). */
#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t n, size_t size) { return __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
