/* Code of a loaded object's file mapped again (remaps.h). The objects are
 * the symbolizer's modules (libdwfl's list, its ELF for their program
 * headers), not the loader's: dl_iterate_phdr takes the loader's lock,
 * which a thread waiting for the tracer's may hold (events.c), and this
 * runs under the tracer's. */
#include "remaps.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "tracer/unwind/stackmap.h"

typedef struct owner_search {
  const mt__file_mapping *m;
  uint64_t offset;          /* the file offset of the address asked */
  uintptr_t seg_lo, seg_hi; /* the segment's part of the mapping, found */
  uint64_t target;          /* the address in the object */
  int found;
} owner_search;

/* Module mod, loaded from `name`: whether its file is the mapping's and
 * one of its executable segments holds the offset (then o is filled). */
static int owns(owner_search *o, Dwfl_Module *mod, const char *name) {
  struct stat st;
  if (!name || name[0] != '/' || stat(name, &st) != 0 || (uint64_t)st.st_ino != o->m->inode ||
      major(st.st_dev) != o->m->dev_major || minor(st.st_dev) != o->m->dev_minor)
    return 0;
  GElf_Addr bias = 0;
  Elf *elf = dwfl_module_getelf(mod, &bias);
  size_t n = 0;
  if (!elf || elf_getphdrnum(elf, &n) != 0) return 0;
  for (size_t i = 0; i < n; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
        o->offset < ph.p_offset || o->offset - ph.p_offset >= ph.p_filesz)
      continue;
    o->target = bias + ph.p_vaddr + (o->offset - ph.p_offset);
    /* the mapping's part within the segment: [lo, hi) of the same bytes */
    uint64_t m_lo = o->m->lo, m_hi = o->m->hi, off0 = o->m->offset;
    uint64_t seg_start = m_lo + (ph.p_offset > off0 ? ph.p_offset - off0 : 0);
    uint64_t seg_end = m_lo + (ph.p_offset + ph.p_filesz - off0);
    o->seg_lo = (uintptr_t)(seg_start > m_lo ? seg_start : m_lo);
    o->seg_hi = (uintptr_t)(seg_end < m_hi ? seg_end : m_hi);
    return o->found = 1;
  }
  return 0;
}

static int each_module(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr start,
                       void *arg) {
  (void)user, (void)start;
  return owns(arg, mod, name) ? DWARF_CB_ABORT : DWARF_CB_OK;
}

int mt__remap_of(mt__remaps *r, Dwfl *dwfl, uint64_t addr, uint64_t *same) {
  for (unsigned i = 0; i < MT__REMAPS; i++)
    if (r->v[i].hi && addr >= r->v[i].lo && addr < r->v[i].hi) {
      if (!r->v[i].same) return 0;
      *same = addr + r->v[i].delta;
      return 1;
    }
  mt__file_mapping m;
  if (!dwfl || !mt__file_mapping_of((uintptr_t)addr, &m)) return 0; /* not kept */
  owner_search o = {.m = &m, .offset = m.offset + (addr - m.lo)};
  if (m.exec && m.inode) dwfl_getmodules(dwfl, each_module, &o, 0);
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
