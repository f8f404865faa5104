/* A module's symbols sorted by address, answering as dwfl_module_addrname.
 *
 * The rules elfutils (0.188, libdwfl/dwfl_module_addrsym.c, addrinfo
 * flavour) applies, as facts, which the lookup below reproduces:
 *
 * - A symbol is considered when it has a name, is defined, is not a
 *   section, file or TLS symbol, and its address (the resolved address
 *   dwfl_module_getsym_info gives) is <= addr.
 * - The table is read in two groups: first the non-local symbols (indices
 *   from dwfl_module_getsymtab_first_global on; all of them but the null
 *   entry when that is 0), then the local ones, only when the first group
 *   named nothing and had no sizeless symbol exactly at addr.
 * - Within a group, the sized symbols containing addr compete, in table
 *   order: a newcomer replaces the current pick when the pick starts
 *   lower, or binds more weakly (GLOBAL > WEAK > LOCAL > other); when both
 *   start at the same place and bind alike, the smaller one wins. (Not a
 *   total order: the table order matters, so we keep it.)
 * - Without a containing sized symbol, a sizeless one (an assembly label)
 *   may name addr: it must lie at or above the end of every symbol
 *   considered so far (of both groups when both were read) — so it is the
 *   highest one and nothing sized covers it — and in the same section as
 *   addr (a symbol of a special section — absolute, common, not loaded —
 *   only names its own address). Among several at that address, the last
 *   read wins.
 * - On architectures with function descriptors (ppc64 ELFv1), elfutils
 *   also tries each function's descriptor address; not done here.
 *
 * Lookup: binary search for the symbols at or below addr; the sized ones
 * containing addr are found walking down while the running maximum of the
 * ends ("reach") exceeds addr — usually one or two steps. */
#include "symtab.h"

#include <stdlib.h>

typedef struct entry {
  uint64_t start, size;
  uint64_t reach;       /* max end (start + size) of this and all lower entries */
  uint64_t reach_first; /* the same over the first group's entries only */
  const char *name;
  const void *scn;  /* section of start (Elf_Scn *), for sizeless entries */
  uint32_t order;   /* position in elfutils' reading order */
  uint8_t rank;     /* binding preference, higher wins */
  uint8_t second;   /* in the second group (locals) */
  uint8_t special;  /* special section: names only its own address */
} entry;

struct mt__symtab {
  Dwfl_Module *mod; /* for the section of a looked-up address */
  entry *e;
  size_t n;
  int has_second; /* the table has a second group */
};

/* Beyond these, a lookup asks elfutils (never seen in practice: that many
 * sized symbols would have to overlap one address). */
#define MAX_CONTAINING 32
#define MAX_WALK 4096

static int rank_of(unsigned char info) {
  switch (GELF_ST_BIND(info)) {
  case STB_GLOBAL: return 3;
  case STB_WEAK: return 2;
  case STB_LOCAL: return 1;
  default: return 0;
  }
}

static int by_start(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static const void *section_of(Dwfl_Module *mod, uint64_t addr) {
  Dwarf_Addr a = addr, bias;
  return dwfl_module_address_section(mod, &a, &bias);
}

mt__symtab *mt__symtab_build(Dwfl_Module *mod) {
  mt__symtab *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->mod = mod;
  int n = dwfl_module_getsymtab(mod);
  int first_global = n > 0 ? dwfl_module_getsymtab_first_global(mod) : -1;
  if (n <= 1 || first_global < 0) return t; /* elfutils names nothing either */
  t->e = malloc((size_t)n * sizeof *t->e);
  if (!t->e) {
    free(t);
    return NULL;
  }
  int start0 = first_global > 1 ? first_global : 1;
  t->has_second = first_global > 1;
  for (int i = 1; i < n; i++) {
    GElf_Sym sym;
    GElf_Addr value;
    GElf_Word shndx;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
    if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || value == 0) continue;
    int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;
    entry *e = &t->e[t->n++];
    e->start = value;
    e->size = sym.st_size;
    e->name = name;
    e->rank = (uint8_t)rank_of(sym.st_info);
    e->second = i < start0;
    e->order = (uint32_t)(i >= start0 ? i - start0 : (n - start0) + (i - 1));
    e->special = shndx >= SHN_LORESERVE; /* includes (GElf_Word)-1: not loaded */
    e->scn = e->size == 0 && !e->special ? section_of(mod, value) : NULL;
  }
  qsort(t->e, t->n, sizeof *t->e, by_start);
  uint64_t reach = 0, reach_first = 0;
  for (size_t i = 0; i < t->n; i++) {
    entry *e = &t->e[i];
    uint64_t end = e->start + e->size;
    if (end > reach) reach = end;
    if (!e->second && end > reach_first) reach_first = end;
    e->reach = reach;
    e->reach_first = reach_first;
  }
  return t;
}

void mt__symtab_free(mt__symtab *t) {
  if (!t) return;
  free(t->e);
  free(t);
}

size_t mt__symtab_count(const mt__symtab *t) { return t->n; }

/* The pick among one group's containing symbols (cand[], any order). */
static const entry *best_containing(const entry **cand, size_t n, int second) {
  const entry *best = NULL;
  uint32_t last = 0;
  /* in reading order: repeatedly take the next higher order (n is tiny) */
  for (;;) {
    const entry *next = NULL;
    for (size_t i = 0; i < n; i++)
      if (cand[i]->second == second && (!best || cand[i]->order > last) &&
          (!next || cand[i]->order < next->order))
        next = cand[i];
    if (!next) return best;
    last = next->order;
    if (!best || best->start < next->start || best->rank < next->rank ||
        (best->start == next->start && best->rank == next->rank && best->size > next->size))
      best = next;
  }
}

/* The sizeless symbol naming addr, given the highest end `top` of the
 * symbols read (entries [0, k) are those at or below addr). */
static const entry *best_sizeless(const mt__symtab *t, size_t k, uint64_t addr, uint64_t top,
                                  int with_second) {
  if (top == 0) return NULL;
  size_t lo = 0, hi = k; /* first entry starting at or above top */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->e[mid].start < top) lo = mid + 1;
    else hi = mid;
  }
  const entry *best = NULL;
  int have_scn = 0;
  const void *addr_scn = NULL;
  for (size_t i = lo; i < k && t->e[i].start == top; i++) {
    const entry *e = &t->e[i];
    if (e->size != 0 || (e->second && !with_second)) continue;
    if (e->special) {
      if (e->start != addr) continue;
    } else {
      if (!have_scn) {
        addr_scn = section_of(t->mod, addr);
        have_scn = 1;
      }
      if (e->scn != addr_scn) continue;
    }
    if (!best || e->order > best->order) best = e;
  }
  return best;
}

const char *mt__symtab_name(const mt__symtab *t, uint64_t addr) {
  size_t lo = 0, hi = t->n; /* k = entries starting at or below addr */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->e[mid].start <= addr) lo = mid + 1;
    else hi = mid;
  }
  size_t k = lo;
  if (k == 0) return NULL;

  const entry *cand[MAX_CONTAINING];
  size_t nc = 0, walked = 0;
  for (size_t i = k; i-- > 0 && t->e[i].reach > addr;) {
    const entry *e = &t->e[i];
    if (e->size != 0 && addr - e->start < e->size) {
      if (nc == MAX_CONTAINING) return dwfl_module_addrname(t->mod, addr);
      cand[nc++] = e;
    }
    if (++walked == MAX_WALK) return dwfl_module_addrname(t->mod, addr);
  }

  const entry *e = best_containing(cand, nc, 0);
  if (e) return e->name;
  /* a sizeless first-group symbol exactly at addr: the locals are not read */
  int exact = 0;
  for (size_t i = k; i-- > 0 && t->e[i].start == addr;)
    if (t->e[i].size == 0 && !t->e[i].second) exact = 1;
  if (!t->has_second || exact) {
    e = best_sizeless(t, k, addr, t->e[k - 1].reach_first, 0);
    return e ? e->name : NULL;
  }
  e = best_containing(cand, nc, 1);
  if (e) return e->name;
  e = best_sizeless(t, k, addr, t->e[k - 1].reach, 1);
  return e ? e->name : NULL;
}

const char *mt__symtabs_name(mt__symtabs *s, Dwfl_Module *mod, uint64_t addr) {
  uint32_t *ix = mt__u64map_get(&s->index, (uint64_t)(uintptr_t)mod);
  if (ix) return mt__symtab_name(s->tabs[*ix - 1], addr); /* stored + 1 */
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 16;
    mt__symtab **p = realloc(s->tabs, nc * sizeof *p);
    if (!p) return dwfl_module_addrname(mod, addr);
    s->tabs = p;
    s->cap = nc;
  }
  mt__symtab *t = mt__symtab_build(mod);
  if (!t) return dwfl_module_addrname(mod, addr);
  if (mt__u64map_put(&s->index, (uint64_t)(uintptr_t)mod, (uint32_t)s->n)) {
    mt__symtab_free(t);
    return dwfl_module_addrname(mod, addr);
  }
  s->tabs[s->n++] = t;
  return mt__symtab_name(t, addr);
}

void mt__symtabs_clear(mt__symtabs *s) {
  for (size_t i = 0; i < s->n; i++) mt__symtab_free(s->tabs[i]);
  free(s->tabs);
  mt__u64map_free(&s->index);
  *s = (mt__symtabs){0};
}

int mt__dwfl_embedded_only(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr base,
                           const char *file, const char *debuglink, GElf_Word crc,
                           char **debuginfo_file) {
  (void)mod, (void)user, (void)name, (void)base, (void)file, (void)debuglink, (void)crc;
  (void)debuginfo_file;
  return -1;
}
