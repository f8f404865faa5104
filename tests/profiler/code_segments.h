/* The executable segments of every object loaded in the test's process:
 * where test_ehframe and test_cfi ask about code addresses. */
#ifndef MT_TESTS_CODE_SEGMENTS_H
#define MT_TESTS_CODE_SEGMENTS_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_SEGMENTS 256

typedef struct segment {
  uintptr_t lo, hi;
  char name[128];
} segment;

static segment segs[MAX_SEGMENTS];
static size_t nsegs;

static int list_code_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  for (int i = 0; i < info->dlpi_phnum && nsegs < MAX_SEGMENTS; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    segment *s = &segs[nsegs++];
    s->lo = info->dlpi_addr + ph->p_vaddr;
    s->hi = s->lo + ph->p_memsz;
    snprintf(s->name, sizeof s->name, "%s", info->dlpi_name[0] ? info->dlpi_name : "(main)");
  }
  return 0;
}

/* Lists them anew into segs[0, nsegs). */
static inline void list_code(void) {
  nsegs = 0;
  dl_iterate_phdr(list_code_cb, NULL);
}

#endif
