/* Shared by the interposer's fast wrappers (preload.c) and its slow paths
 * (preload_slow.c). */
#ifndef MT_PRELOAD_H
#define MT_PRELOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach_abi.h"
#include "engine/engine_internal.h"

/* The next allocator's functions. They start as bootstrap stubs that look
 * the real ones up, so the wrappers never test for NULL. */
#define MT__HIDDEN __attribute__((visibility("hidden")))
/* hidden: the wrappers jump through them with one rip-relative load */
extern MT__HIDDEN void *(*mt__real_malloc)(size_t);
extern MT__HIDDEN void *(*mt__real_calloc)(size_t, size_t);
extern MT__HIDDEN void *(*mt__real_realloc)(void *, size_t);
extern MT__HIDDEN void (*mt__real_free)(void *);
extern MT__HIDDEN int (*mt__real_posix_memalign)(void **, size_t, size_t);
extern MT__HIDDEN void *(*mt__real_aligned_alloc)(size_t, size_t);
extern MT__HIDDEN void *(*mt__real_memalign)(size_t, size_t);
extern MT__HIDDEN void *(*mt__real_valloc)(size_t);
extern MT__HIDDEN void *(*mt__real_pvalloc)(size_t);
extern MT__HIDDEN void (*mt__real_free_sized)(void *, size_t);
extern MT__HIDDEN void (*mt__real_free_aligned_sized)(void *, size_t, size_t);
extern MT__HIDDEN size_t (*mt__real_usable_size)(void *);

/* The C library's mmap, munmap and mremap (preload_mmap.c): found at load;
 * in an attached process, their trampolines (preload_redirect.c). */
extern MT__HIDDEN void *(*mt__real_mmap)(void *, size_t, int, int, int, off_t);
extern MT__HIDDEN int (*mt__real_munmap)(void *, size_t);
extern MT__HIDDEN void *(*mt__real_mremap)(void *, size_t, size_t, int, ...);

/* The C library's _exit in an attached process: its trampoline
 * (preload_redirect.c), past the jump to this library's _exit; else NULL. */
extern MT__HIDDEN void (*mt__real__exit)(int);

/* Where the interposer keeps a sampled block's handle: in a header.
 *
 * A sampled block is allocated with room for MT__HDR bytes (or its
 * alignment, if larger) in front of what the program gets, and the
 * header's last word, just before the program's bytes, holds
 * `secret ^ address`. A free compares the word before the block with it.
 * Off a page boundary that word lies in the block's own page, so it can be
 * read whatever the allocator; for the C library's blocks it is the
 * chunk's size field, which the free is about to read anyway (no other
 * cache line, no table, no lock), and a size never equals a random 64-bit
 * secret mixed with an address.
 *
 * A pointer on a page boundary (NULL too) takes a slower test. With the C
 * library's allocator next (`on`), the word before any of its blocks is
 * its chunk header: the same test. With another allocator next (jemalloc,
 * tcmalloc) that word may lie in an unmapped page: the interposer then
 * never places a header's block on a page boundary. Either way, sampled
 * blocks of page-aligned requests (valloc, memalign(4096)...) are kept in
 * the engine's table and filter, without a header: a header would cost
 * them a whole alignment in front (2 MiB for a huge-page-aligned block).
 *
 * The bootstrap arena's blocks carry the magic word too (and are marked in
 * the filter): a free finds them in both modes. */
typedef struct mt__hdr {
  void *handle;    /* the tracker's (NULL: not tracked, or reported freed) */
  uint32_t epoch;  /* the engine session that sampled the block */
  uint32_t off;    /* program's pointer - the block's start */
  uint64_t unused;
  uint64_t magic;  /* secret ^ program's pointer */
} mt__hdr;
#define MT__HDR sizeof(mt__hdr) /* 32: keeps malloc's 16-byte alignment */
#define MT__PAGE 4096u          /* the smallest page there is */

extern MT__HIDDEN struct mt__hdr_mode {
  uint64_t secret;
  int on; /* the C library's allocator is next */
} mt__hdr_mode;

static inline mt__hdr *mt__hdr_of(const void *p) { return (mt__hdr *)p - 1; }

static inline int mt__has_magic(const void *p) {
  return ((const uint64_t *)p)[-1] == (mt__hdr_mode.secret ^ (uintptr_t)p);
}

/* Whether p may be one of the interposer's blocks (sampled, or from the
 * bootstrap arena): the fast test of every free, realloc and
 * malloc_usable_size. */
static inline int mt__maybe_ours(const void *p) {
  if (__builtin_expect(((uintptr_t)p & (MT__PAGE - 1)) != 0, 1)) return mt__has_magic(p);
  return p && ((mt__hdr_mode.on && mt__has_magic(p)) || mt__maybe_tracked((uintptr_t)p));
}

/* This library's malloc (a hidden alias: the name `malloc` in here binds
 * to whichever definition comes first, the program's if it has one). */
extern MT__HIDDEN char mt__own_malloc[];

/* The forwarding jumps of malloc and free are made direct at start-up
 * (preload.c, jumps.c) where the wrappers are written in assembly. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__)
#define MT__DIRECT_JUMPS 1
/* each an aligned room of MT__SITE_ROOM bytes starting with
 * `jmp *slot(%rip)` (preload.c) */
#define MT__SITE_ROOM 32
#define MT__STR_(x) #x
#define MT__STR(x) MT__STR_(x)
extern MT__HIDDEN unsigned char mt__malloc_site[], mt__free_site[];
/* free's slow paths: a pointer on a page boundary (NULL too), and a
 * pointer whose word before it holds the magic */
void mt__free_on_page(void *p);
void mt__free_headed(void *p);
#endif

/* Makes malloc's and free's forwarding jumps direct, once the slots hold
 * their final values (preload_slow.c): "direct", "mixed" or "indirect". */
MT__HIDDEN const char *mt__make_jumps_direct(void);

/* Rewrites the `jmp *slot(%rip)` at `site` (an aligned 8-byte word) into a
 * direct jump to *slot, which must never change again. 0: done; -1: left
 * as it was (not such a jump, *slot more than 2 GiB away, or the system
 * refused to make the code writable). Safe while other threads run it. */
int mt__jump_direct(void *site, void *const *slot);

/* Writes over the `jmp *slot(%rip)` at `site` (a room of MT__SITE_ROOM
 * bytes) the trampoline of patch p, whose address *slot holds: the moved
 * instructions run in place and jump back into the function. 0: done;
 * -1: left as it was. Not safe while another thread runs the site: for a
 * library loaded late, before any call can reach its wrappers. */
struct mt__patch;
int mt__jump_inline(void *site, void *const *slot, const struct mt__patch *p);

/* Slow paths: the countdown ran out (the block is allocated here, then
 * reported), or the filter says the block may be tracked. */
void *mt__malloc_sampled(size_t n);
void *mt__calloc_sampled(size_t n, size_t m, size_t bytes);
void *mt__realloc_sampled(void *p, size_t n);
void *mt__aligned_sampled(int kind, size_t align, size_t n);
int mt__posix_memalign_sampled(void **out, size_t align, size_t n);
void mt__free_ours(void *p, size_t size, size_t align, int kind);
void *mt__realloc_ours(void *p, size_t n);
size_t mt__usable_size_ours(void *p);

/* preload_exec.c: looks up the C library's exec functions (at load). */
MT__HIDDEN void mt__exec_resolve(void);

/* preload_creds.c: looks up the C library's set*id, setgroups, chroot (at
 * load). */
MT__HIDDEN void mt__creds_resolve(void);

/* preload_redirect.c: redirects the malloc family of the allocator bound
 * ahead of this library (the program's own, or a library's loaded before
 * it) to this library's wrappers, the mt__real_* slots then reaching it.
 * NULL when done; else why not (nothing was changed). At load, before the
 * jumps are made direct. */
MT__HIDDEN const char *mt__redirect_allocator(void);

/* The same for a process this library was loaded into late, every call
 * already bound (memtrace attach: preload_attach.c): prepares everything
 * but the jumps over the allocator's first bytes, which the attacher
 * writes with every thread stopped, and lists them in *out. The first call
 * decides; later ones list the same jumps. NULL, or why not. */
MT__HIDDEN const char *mt__redirect_plan(mt__jump_list *out);
/* After mt__redirect_plan: how malloc's and free's jumps were made. */
MT__HIDDEN const char *mt__redirect_jumps(void);
/* After mt__redirect_plan: the PLT slots of the objects loaded now that
 * hold a redirected function, each with its wrapper (plt_slots.c). */
MT__HIDDEN void mt__redirect_slots(mt__slot_list *out);

/* plt_slots.c: a redirected function (its name, its entry), and the
 * wrapper its jump leads to. */
typedef struct mt__rebind {
  const char *name;
  const void *entry, *wrapper;
} mt__rebind;
/* Lists in *out the PLT slots (R_X86_64_JUMP_SLOT) of every object loaded
 * but this library that hold one of the n entries (at most
 * MT__REBIND_MAX), each with the entry's wrapper; at most
 * MT__ATTACH_MAX_SLOTS (the others keep the jump). */
#define MT__REBIND_MAX 128
MT__HIDDEN void mt__plt_slots(const mt__rebind *rb, size_t n, mt__slot_list *out);

/* Whether this library was loaded into a running program (dlopen'ed by
 * memtrace attach) rather than at its start: then no call is bound to it,
 * and it stays inert until the attacher starts it. */
MT__HIDDEN int mt__loaded_late(void);

/* preload_mmap.c: looks up the C library's mmap, munmap and mremap, and
 * the code whose mappings are not the program's (at load). */
MT__HIDDEN void mt__mmap_resolve(void);

/* preload_loader.c: looks up the C library's dl_iterate_phdr (at load). */
MT__HIDDEN void mt__loader_resolve(void);

enum { MT__ALIGNED_ALLOC, MT__MEMALIGN, MT__VALLOC, MT__PVALLOC };
enum { MT__FREE, MT__FREE_SIZED, MT__FREE_ALIGNED_SIZED };

#endif
