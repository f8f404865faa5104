/* Direct jumps from the interposer's malloc and free to the next
 * allocator's, or the next allocator's first instructions in their place.
 *
 * The wrappers forward a call with `jmp *slot(%rip)`: the next allocator
 * is known only once the library is loaded. An indirect jump through
 * memory cost more than the rest of the wrapper (see preload.c for the
 * figures), so once the slots hold their final values the constructor
 * rewrites each jump into `jmp rel32`, the way the dynamic loader would
 * have bound a direct call had the target been known at link time.
 *
 * The rewrite is safe while other threads run the wrapper (a library's
 * constructor may have started some): the jump sits alone in an aligned
 * 8-byte word, written with one store, so an instruction fetch sees either
 * the old jump or the new one, and both go where the slot says, which never
 * changes again. The page stays executable throughout. Where it cannot be
 * done (the target more than 2 GiB away; the system refusing writable code,
 * as SELinux's execmod and PaX do), the indirect jump stays: slower, not
 * wrong.
 *
 * Attached to a running process, the next allocator is the C library's
 * trampoline: its first instructions, moved, and a jump back into it
 * (hotpatch.h). There the site takes the trampoline's instructions
 * themselves, fixed for the site, and a wrapper reaches the C library
 * with one jump, as under memtrace run. That write is not atomic; it is
 * made before the attacher's jumps and slots exist, when no thread can
 * run the wrapper. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "hotpatch.h"
#include "preload.h"

enum { JMP_MEM0 = 0xff, JMP_MEM1 = 0x25, JMP_REL32 = 0xe9, INT3 = 0xcc };

/* Whether site holds exactly `jmp *slot(%rip)`: the displacement counts
 * from the instruction's end. */
static int jumps_through(const unsigned char *s, void *const *slot) {
  int32_t disp;
  memcpy(&disp, s + 2, sizeof disp);
  return s[0] == JMP_MEM0 && s[1] == JMP_MEM1 && (uintptr_t)(s + 6) + (intptr_t)disp == (uintptr_t)slot;
}

int mt__jump_direct(void *site, void *const *slot) {
  unsigned char *s = site;
  if ((uintptr_t)s & 7 || !jumps_through(s, slot)) return -1;
  intptr_t rel = (intptr_t)*slot - (intptr_t)(s + 5);
  if (rel != (int32_t)rel) return -1;
  unsigned char word[8];
  memcpy(word, s, sizeof word); /* keeps the two bytes after the jump */
  int32_t rel32 = (int32_t)rel;
  word[0] = JMP_REL32;
  memcpy(word + 1, &rel32, sizeof rel32);
  word[5] = INT3;
  uint64_t w;
  memcpy(&w, word, sizeof w);

  /* the word lies in one page */
  if (mt__protect_code(s, sizeof w, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return -1;
  __atomic_store_n((uint64_t *)(void *)s, w, __ATOMIC_SEQ_CST);
  /* Back to read and execute. Should that fail, the page stays writable
   * too: nothing else changes. */
  (void)mt__protect_code(s, sizeof w, PROT_READ | PROT_EXEC);
  return 0;
}

int mt__jump_inline(void *site, void *const *slot, const mt__patch *p) {
  unsigned char *s = site;
  if (!jumps_through(s, slot) || *slot != p->trampoline) return -1;
  if (mt__protect_code(s, MT__SITE_ROOM, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return -1;
  /* all or nothing: what does not fit is not written */
  int rc = mt__patch_inline(p, s, MT__SITE_ROOM) ? 0 : -1;
  __builtin___clear_cache((char *)s, (char *)s + MT__SITE_ROOM);
  (void)mt__protect_code(s, MT__SITE_ROOM, PROT_READ | PROT_EXEC);
  return rc;
}
