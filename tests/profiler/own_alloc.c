/* An allocator of one's own, as a program or library linking one in
 * exports it: malloc and its kin, here forwarding to the C library's
 * allocator under its internal names. Linked into prog_own_malloc and
 * prog_sites_own, and built as libmt_own_alloc.so, preloaded ahead of the
 * interposer, which redirects its functions to its own wrappers (e2e.sh,
 * own-malloc). Built with -DOWN_ALLOC_MINIMAL (libmt_own_alloc_min.so):
 * without malloc_usable_size, which the interposer needs to redirect an
 * allocator: it is then left alone, and said to be. */
#include <dlfcn.h>
#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void *__libc_valloc(size_t n);
void *__libc_pvalloc(size_t n);
void __libc_free(void *p);

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t n, size_t size) { return __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }

#ifndef OWN_ALLOC_MINIMAL
void *memalign(size_t align, size_t n) { return __libc_memalign(align, n); }
void *aligned_alloc(size_t align, size_t n) { return __libc_memalign(align, n); }
void *valloc(size_t n) { return __libc_valloc(n); }
void *pvalloc(size_t n) { return __libc_pvalloc(n); }
int posix_memalign(void **out, size_t align, size_t n) {
  void *p = __libc_memalign(align, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
/* the C library's own, asked of the C library itself (RTLD_NEXT would
 * find the interposer's) */
size_t malloc_usable_size(void *p) {
  static size_t (*libc_usable)(void *);
  if (!libc_usable) {
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    *(void **)&libc_usable = libc ? dlsym(libc, "malloc_usable_size") : NULL;
  }
  return libc_usable ? libc_usable(p) : 0;
}
#endif
