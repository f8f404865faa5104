/* Code of a loaded object's file mapped again (remaps.h). */
#include "remaps.h"

#include <link.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "stackmap.h"

typedef struct owner_search {
  const mt__file_mapping *m;
  uint64_t offset;      /* the file offset of the address asked */
  uintptr_t seg_lo, seg_hi; /* the segment's part of the mapping, found */
  uint64_t target;      /* the address in the object */
  int first, found;
} owner_search;

/* Each loaded object: the one whose file is the mapping's, with an
 * executable segment holding the offset. The program itself comes first,
 * without a name: its file is /proc/self/exe. */
static int find_owner(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  owner_search *o = data;
  int first = o->first;
  o->first = 0;
  const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name
                     : first                                ? "/proc/self/exe"
                                                            : NULL;
  struct stat st;
  if (!name || stat(name, &st) != 0 || (uint64_t)st.st_ino != o->m->inode ||
      major(st.st_dev) != o->m->dev_major || minor(st.st_dev) != o->m->dev_minor)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || o->offset < ph->p_offset ||
        o->offset - ph->p_offset >= ph->p_filesz)
      continue;
    o->target = (uint64_t)info->dlpi_addr + ph->p_vaddr + (o->offset - ph->p_offset);
    /* the mapping's part within the segment: [lo, hi) of the same bytes */
    uint64_t m_lo = o->m->lo, m_hi = o->m->hi, off0 = o->m->offset;
    uint64_t seg_start = m_lo + (ph->p_offset > off0 ? ph->p_offset - off0 : 0);
    uint64_t seg_end = m_lo + (ph->p_offset + ph->p_filesz - off0);
    o->seg_lo = (uintptr_t)(seg_start > m_lo ? seg_start : m_lo);
    o->seg_hi = (uintptr_t)(seg_end < m_hi ? seg_end : m_hi);
    o->found = 1;
    return 1;
  }
  return 0;
}

int mt__remap_of(mt__remaps *r, uint64_t addr, uint64_t *same) {
  for (unsigned i = 0; i < MT__REMAPS; i++)
    if (r->v[i].hi && addr >= r->v[i].lo && addr < r->v[i].hi) {
      if (!r->v[i].same) return 0;
      *same = addr + r->v[i].delta;
      return 1;
    }
  mt__file_mapping m;
  if (!mt__file_mapping_of((uintptr_t)addr, &m)) return 0; /* not mapped: not kept */
  owner_search o = {.m = &m, .offset = m.offset + (addr - m.lo), .first = 1};
  if (m.exec && m.inode) dl_iterate_phdr(find_owner, &o);
  unsigned k = r->next++ % MT__REMAPS;
  if (o.found) {
    r->v[k].lo = o.seg_lo, r->v[k].hi = o.seg_hi;
    r->v[k].delta = o.target - addr;
    r->v[k].same = 1;
    *same = o.target;
    return 1;
  }
  r->v[k].lo = m.lo, r->v[k].hi = m.hi;
  r->v[k].delta = 0;
  r->v[k].same = 0;
  return 0;
}

void mt__remaps_clear(mt__remaps *r) { memset(r, 0, sizeof *r); }
