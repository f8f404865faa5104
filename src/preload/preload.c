/* libmemtrace_preload.so: the LD_PRELOAD malloc interposer's fast paths.
 *
 * Each wrapper first spends the block's words from the thread's countdown;
 * while no sample point is reached (nearly always) it tail-calls the next
 * allocator: a thread-local subtraction, a branch and a jump. A free
 * compares the word before the block with a sampled block's magic word
 * (preload.h) and jumps to the next free. Everything else is in
 * preload_slow.c. This file is compiled without frame pointers so the
 * wrappers stay a few instructions; the slow paths keep them for the
 * frame-pointer unwinder. */
#include <errno.h>
#include <stdint.h>

#include "engine/endbr.h"
#include "engine/engine_internal.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifdef MT__DIRECT_JUMPS
/* malloc and free, the two calls of nearly every program's every block,
 * are written out in assembly: the instructions the C versions below
 * compile to, laid out so that each one's jump to the next allocator,
 * `jmp *slot(%rip)`, starts an aligned room of MT__SITE_ROOM bytes
 * (mt__malloc_site, mt__free_site). The constructor rewrites both into
 * direct jumps (jumps.c): on a malloc-bound program most of the
 * interposer's cost is this call layer, and an indirect jump costs more of
 * it than a direct one (docs/benchmarks.md, "The interposer"). Attached,
 * the room takes the C library's trampoline itself (jumps.c). A free's
 * slow paths are in C: a pointer on a page boundary (NULL too) takes
 * mt__maybe_ours's slower test, one whose word before it holds the magic
 * goes to the sampled block's free. */
__asm__(".text\n"
        ".set MT__SITE_ROOM, " MT__STR(MT__SITE_ROOM) "\n"
        ".p2align 4\n"
        ".globl malloc\n"
        ".type malloc, @function\n"
        "malloc:\n"
        ".globl mt__own_malloc\n"
        ".hidden mt__own_malloc\n"
        "mt__own_malloc:\n" MT__ENDBR
        /* {disp32}: 3 bytes longer, so that the site below needs no
         * padding (a nop on the path) to be aligned */
        "  {disp32} leaq 7(%rdi), %rdx\n"
        "  shrq $3, %rdx\n" /* the block's words */
        "  movq mt__tls@gottpoff(%rip), %rax\n"
        "  subq %rdx, %fs:(%rax)\n" /* the countdown: mt__tls's first field */
        "  jle 1f\n"
        "  .p2align 3\n"
        ".globl mt__malloc_site\n"
        ".hidden mt__malloc_site\n"
        "mt__malloc_site:\n"
        "  jmp *mt__real_malloc(%rip)\n"
        "  .fill MT__SITE_ROOM - 6, 1, 0xcc\n"
        "1:\n"
        "  jmp mt__malloc_sampled\n"
        ".size malloc, .-malloc\n"
        "\n"
        ".p2align 4\n"
        ".globl free\n"
        ".type free, @function\n"
        "free:\n" MT__ENDBR
        "  testl $0xfff, %edi\n"
        "  je 2f\n"
        "  movq mt__hdr_mode(%rip), %rax\n" /* the secret: its first field */
        "  xorq %rdi, %rax\n"
        "  cmpq %rax, -8(%rdi)\n"
        "  je 3f\n"
        "  .p2align 3\n"
        ".globl mt__free_site\n"
        ".hidden mt__free_site\n"
        "mt__free_site:\n"
        "  jmp *mt__real_free(%rip)\n"
        "  .fill MT__SITE_ROOM - 6, 1, 0xcc\n"
        "2:\n"
        "  jmp mt__free_on_page\n"
        "3:\n"
        "  jmp mt__free_headed\n"
        ".size free, .-free\n");

void mt__free_on_page(void *p) {
  if (mt__maybe_ours(p)) {
    mt__free_ours(p, 0, 0, MT__FREE);
    return;
  }
  mt__real_free(p);
}

void mt__free_headed(void *p) { mt__free_ours(p, 0, 0, MT__FREE); }
#else
EXPORT void *malloc(size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_malloc(n);
sampled:
  return mt__malloc_sampled(n);
}
__asm__(".globl mt__own_malloc\n.hidden mt__own_malloc\n.set mt__own_malloc, malloc\n");

EXPORT void free(void *p) {
  if (UNLIKELY(mt__maybe_ours(p))) {
    mt__free_ours(p, 0, 0, MT__FREE);
    return;
  }
  mt__real_free(p);
}
#endif

EXPORT void *calloc(size_t n, size_t m) {
  size_t bytes;
  if (UNLIKELY(__builtin_mul_overflow(n, m, &bytes))) {
    errno = ENOMEM;
    return NULL;
  }
  MT__SPEND_OR_GOTO(bytes, sampled);
  return mt__real_calloc(n, m);
sampled:
  return mt__calloc_sampled(n, m, bytes);
}

EXPORT void *realloc(void *p, size_t n) {
  if (UNLIKELY(mt__maybe_ours(p))) return mt__realloc_ours(p, n);
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_realloc(p, n);
sampled: /* a tail call, as everywhere here: no frame of ours to unwind */
  return mt__realloc_sampled(p, n);
}

EXPORT void *reallocarray(void *p, size_t n, size_t m) {
  size_t bytes;
  if (__builtin_mul_overflow(n, m, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, bytes);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_posix_memalign(out, align, n);
sampled:
  return mt__posix_memalign_sampled(out, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_aligned_alloc(align, n);
sampled:
  return mt__aligned_sampled(MT__ALIGNED_ALLOC, align, n);
}

EXPORT void *memalign(size_t align, size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_memalign(align, n);
sampled:
  return mt__aligned_sampled(MT__MEMALIGN, align, n);
}

EXPORT void *valloc(size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_valloc(n);
sampled:
  return mt__aligned_sampled(MT__VALLOC, 0, n);
}

EXPORT void *pvalloc(size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_pvalloc(n);
sampled:
  return mt__aligned_sampled(MT__PVALLOC, 0, n);
}

/* C23's sized frees: forwarded to the C library's when it has them. */
EXPORT void free_sized(void *p, size_t n) {
  if (UNLIKELY(mt__maybe_ours(p))) {
    mt__free_ours(p, n, 0, MT__FREE_SIZED);
    return;
  }
  mt__real_free_sized(p, n);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t n) {
  if (UNLIKELY(mt__maybe_ours(p))) {
    mt__free_ours(p, n, align, MT__FREE_ALIGNED_SIZED);
    return;
  }
  mt__real_free_aligned_sized(p, align, n);
}

/* A sampled block's usable size is its allocation's less the header. */
EXPORT size_t malloc_usable_size(void *p) {
  if (UNLIKELY(mt__maybe_ours(p))) return mt__usable_size_ours(p);
  return mt__real_usable_size(p);
}
