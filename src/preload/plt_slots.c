/* The PLT slots of the objects already loaded, bound straight to the
 * wrappers, in a process this library was loaded into late (memtrace
 * attach).
 *
 * Attached, a call reaches a wrapper through the jump over the allocator's
 * first bytes (preload_redirect.c), then the allocator through the
 * trampoline and its jump back: two taken jumps more than under memtrace
 * run, where the dynamic loader binds the program's PLT slots to the
 * wrappers. The attacher removes the first: a PLT slot (a GOT word of an
 * R_X86_64_JUMP_SLOT relocation) that holds the entry of a redirected
 * function, or that the loader would bind to it on the first call (lazy
 * binding), gets the wrapper that the entry's jump leads to. The rule
 * makes a rebound call do exactly what the jump would have done, minus
 * the jump.
 *
 * Only PLT slots move: they serve calls alone. An address of a function
 * taken in code (R_X86_64_GLOB_DAT, or a non-PIE program's PLT entry)
 * stays the allocator's, so a pointer to malloc taken before the attach
 * still equals one taken after it. Calls through such pointers, the C
 * library's internal calls through its GOT, and the calls of objects
 * loaded after the attach still go through the jump: slower, not wrong.
 * This library's own slots stay too.
 *
 * This file lists the slots; the attacher writes them, every thread
 * stopped, after the jumps: a slot rebound before the jumps exist could
 * hand out a sampled block that a call through the entry would give to the
 * allocator. They stay rebound after the detach, as the jumps stay: the
 * wrappers then only forward. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

#include "preload.h"

typedef struct ctx {
  const mt__rebind *rb;
  size_t n;
  /* per entry: the loader binds its name to it (asked before the walk:
   * dlsym takes the loader's lock, which a dlopen holds while it waits for
   * the lock the walk holds) */
  const uint8_t *binds_name;
  uintptr_t self; /* an address in this library */
  mt__slot_list *out;
  /* per slot listed: the object's name when the slot is unbound yet (its
   * binding is checked after the walk), else NULL; and its entry */
  const char *unbound_in[MT__ATTACH_MAX_SLOTS];
  size_t entry_of[MT__ATTACH_MAX_SLOTS];
  /* the names, copied: an object another thread closes after the walk
   * takes its own with it */
  char names[16384];
  size_t names_used;
  const char *name_here; /* the object being walked's copy, or NULL */
} ctx;

/* The copy of the walked object's name, made at its first unbound slot;
 * NULL when there is no room (its unbound slots then keep the jump). */
static const char *name_copy(ctx *c, const struct dl_phdr_info *info) {
  if (c->name_here) return c->name_here;
  size_t len = strlen(info->dlpi_name) + 1;
  if (len > sizeof c->names - c->names_used) return NULL;
  c->name_here = memcpy(c->names + c->names_used, info->dlpi_name, len);
  c->names_used += len;
  return c->name_here;
}

/* Whether [p, p + len) lies in one of the object's loaded segments. */
static int mapped(const struct dl_phdr_info *info, uintptr_t p, size_t len) {
  for (ElfW(Half) k = 0; k < info->dlpi_phnum; k++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && p >= lo && len <= ph->p_memsz && p - lo <= ph->p_memsz - len)
      return 1;
  }
  return 0;
}

/* What an object's dynamic section says of its PLT relocations. */
typedef struct dyn_tables {
  uintptr_t rel, symtab, strtab;
  size_t relsz, strsz;
  ElfW(Sxword) kind;
} dyn_tables;

/* A dynamic entry's address: the loader adds the load address to those of
 * a writable dynamic section, but not to every object's (the vDSO's). */
static uintptr_t dyn_address(const struct dl_phdr_info *info, ElfW(Addr) p) {
  return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

/* The entry a slot should hold: k, or -1; *unbound when the slot is not
 * bound yet. A slot bound already holds the entry itself; one never called
 * yet (lazy binding) holds the address of the object's own PLT code, and
 * is a candidate when its symbol is undefined in the object, bears the
 * entry's name, and the loader's global lookup of that name gives the
 * entry. */
static long which(const ctx *c, const struct dl_phdr_info *info, uintptr_t was, const char *name,
                  int *unbound) {
  *unbound = 0;
  for (size_t k = 0; k < c->n; k++)
    if (was == (uintptr_t)c->rb[k].entry) return (long)k;
  if (!name || !mapped(info, was, 1)) return -1;
  *unbound = 1;
  for (size_t k = 0; k < c->n; k++)
    if (strcmp(name, c->rb[k].name) == 0) return c->binds_name[k] ? (long)k : -1;
  return -1;
}

/* The name of relocation r's symbol when the object leaves it undefined
 * (it is bound elsewhere), else NULL. */
static const char *undefined_name(const struct dl_phdr_info *info, const dyn_tables *t,
                                  const ElfW(Rela) *r) {
  if (!t->symtab || !t->strtab) return NULL;
  const ElfW(Sym) *sym = (const ElfW(Sym) *)t->symtab + ELF64_R_SYM(r->r_info);
  if (!mapped(info, (uintptr_t)sym, sizeof *sym) || sym->st_shndx != SHN_UNDEF ||
      sym->st_name >= t->strsz)
    return NULL;
  return (const char *)t->strtab + sym->st_name;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  ctx *c = arg;
  (void)size;
  if (mapped(info, c->self, 1)) return 0;
  c->name_here = NULL;
  const ElfW(Dyn) *dyn = NULL;
  for (ElfW(Half) k = 0; k < info->dlpi_phnum; k++)
    if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[k].p_vaddr);
  if (!dyn) return 0;
  dyn_tables t = {0};
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_JMPREL) t.rel = dyn_address(info, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_PLTRELSZ) t.relsz = dyn->d_un.d_val;
    else if (dyn->d_tag == DT_PLTREL) t.kind = dyn->d_un.d_val;
    else if (dyn->d_tag == DT_SYMTAB) t.symtab = dyn_address(info, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB) t.strtab = dyn_address(info, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRSZ) t.strsz = dyn->d_un.d_val;
  }
  if (!t.rel || t.kind != DT_RELA || !mapped(info, t.rel, t.relsz)) return 0;
  if (t.strtab && !mapped(info, t.strtab, t.strsz)) t.strtab = 0;
  const ElfW(Rela) *r = (const ElfW(Rela) *)t.rel;
  for (size_t i = 0; i < t.relsz / sizeof *r; i++) {
    if (ELF64_R_TYPE(r[i].r_info) != R_X86_64_JUMP_SLOT) continue;
    uintptr_t at = info->dlpi_addr + r[i].r_offset;
    if (!mapped(info, at, sizeof(uintptr_t))) continue;
    uintptr_t was = __atomic_load_n((const uintptr_t *)at, __ATOMIC_RELAXED);
    int unbound;
    long k = which(c, info, was, undefined_name(info, &t, &r[i]), &unbound);
    const char *object = unbound ? name_copy(c, info) : NULL;
    if (k < 0 || (unbound && !object)) continue;
    size_t j = c->out->n;
    if (j == MT__ATTACH_MAX_SLOTS) return 1; /* the rest keep the jump */
    c->out->slots[j].at = at;
    c->out->slots[j].was = was;
    c->out->slots[j].to = (uintptr_t)c->rb[k].wrapper;
    c->unbound_in[j] = object;
    c->entry_of[j] = (size_t)k;
    c->out->n++;
  }
  return 0;
}

/* Whether the object named `object` ("" for the program) looks `name` up
 * as the entry in its own scope too: an object opened with RTLD_DEEPBIND
 * binds first to its own dependencies, which may define another malloc. */
static int binds_in_object(const char *object, const mt__rebind *rb) {
  void *h = dlopen(object && object[0] ? object : NULL, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  int same = dlsym(h, rb->name) == rb->entry;
  dlclose(h);
  return same;
}

void mt__plt_slots(const mt__rebind *rb, size_t n, mt__slot_list *out) {
  static ctx c; /* 22 KiB: off the stack of the thread the attacher borrows */
  uint8_t binds_name[MT__REBIND_MAX];
  if (n > MT__REBIND_MAX) n = MT__REBIND_MAX;
  for (size_t k = 0; k < n; k++) binds_name[k] = dlsym(RTLD_DEFAULT, rb[k].name) == rb[k].entry;
  memset(&c, 0, sizeof c);
  c.rb = rb;
  c.n = n;
  c.binds_name = binds_name;
  c.self = (uintptr_t)&mt__plt_slots;
  c.out = out;
  out->n = 0;
  dl_iterate_phdr(visit, &c);
  /* the unbound slots' objects asked after the walk, which holds the
   * loader's lock that dlopen waits for */
  size_t kept = 0;
  for (size_t j = 0; j < out->n; j++)
    if (!c.unbound_in[j] || binds_in_object(c.unbound_in[j], &rb[c.entry_of[j]]))
      out->slots[kept++] = out->slots[j];
  out->n = (uint32_t)kept;
}
