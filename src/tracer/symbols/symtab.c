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
#include <string.h>

/* 24 bytes a symbol: the C library's 3,000 take 72 KB. What the lookup
 * needs of the few symbols it looks at (name, binding, section index) is
 * read again from the module's table by index: a table of everything,
 * with a temporary copy for the sort, came to 340 KB, 85 fresh pages, more
 * than half of what naming the first code of a process cost (page faults
 * dominate it on virtual machines). */
typedef struct entry {
  uint64_t start;
  uint64_t reach; /* max end (start + size) of this and all lower entries */
  uint32_t sym;   /* index in the module's symbol table */
  uint32_t size;  /* st_size; BIG_SIZE: read it from the table */
} entry;

#define BIG_SIZE UINT32_MAX

struct mt__symtab {
  Dwfl_Module *mod; /* for the symbols themselves and the section of an address */
  entry *e;
  size_t n;
  uint32_t nsyms;  /* dwfl_module_getsymtab */
  uint32_t start0; /* first index of the first group */
  int has_second;  /* the table has a second group */
};

/* What the rules compare, read for a symbol the lookup considers. */
typedef struct symbol {
  uint64_t start, size;
  const char *name;
  uint32_t order;  /* position in elfutils' reading order */
  uint8_t rank;    /* binding preference, higher wins */
  uint8_t second;  /* in the second group (locals) */
  uint8_t special; /* special section: names only its own address */
} symbol;

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

static uint32_t order_of(const mt__symtab *t, uint32_t i) {
  return i >= t->start0 ? i - t->start0 : (t->nsyms - t->start0) + (i - 1);
}

static int is_second(const mt__symtab *t, const entry *e) { return e->sym < t->start0; }

static void read_symbol(const mt__symtab *t, const entry *e, symbol *out) {
  GElf_Sym sym = {0};
  GElf_Addr value;
  GElf_Word shndx = 0;
  out->name = dwfl_module_getsym_info(t->mod, (int)e->sym, &sym, &value, &shndx, NULL, NULL);
  out->start = e->start;
  out->size = sym.st_size;
  out->order = order_of(t, e->sym);
  out->rank = (uint8_t)rank_of(sym.st_info);
  out->second = (uint8_t)is_second(t, e);
  out->special = shndx >= SHN_LORESERVE; /* includes (GElf_Word)-1: not loaded */
}

static uint64_t size_of(const mt__symtab *t, const entry *e) {
  if (e->size != BIG_SIZE) return e->size;
  GElf_Sym sym = {0};
  GElf_Addr value;
  GElf_Word shndx;
  dwfl_module_getsym_info(t->mod, (int)e->sym, &sym, &value, &shndx, NULL, NULL);
  return sym.st_size;
}

/* The kept symbols are sorted by start (entries of equal start in any
 * order: where the rules break ties, the lookup compares the symbols'
 * reading order, order_of) as 8-byte keys, (start - lowest start) above
 * the symbol's position in the kept list, by a least-significant-digit
 * radix sort of the start's bits only, then gathered into entries: the
 * keys scatter a third of the bytes the 24-byte entries would. A
 * comparison sort, each comparison through the reading-order tie-break,
 * would be a visible part of a traced process's fixed cost, which nearly
 * always builds the C library's table. */
#define RADIX_MAX_BITS 11

static unsigned bits_of(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0; }

/* Sorts k[0, n) by bits [low, low + width); tmp holds n keys. */
static void radix_sort(uint64_t *k, uint64_t *tmp, size_t n, unsigned low, unsigned width) {
  unsigned passes = (width + RADIX_MAX_BITS - 1) / RADIX_MAX_BITS;
  if (passes == 0) return;
  unsigned digit = (width + passes - 1) / passes; /* balanced: 27 bits in three 9s */
  uint32_t at[1u << RADIX_MAX_BITS];
  const uint64_t mask = (1u << digit) - 1;
  uint64_t *from = k, *to = tmp;
  for (unsigned p = 0, shift = low; p < passes; p++, shift += digit) {
    memset(at, 0, (mask + 1) * sizeof *at);
    for (size_t i = 0; i < n; i++) at[(from[i] >> shift) & mask]++;
    uint32_t sum = 0;
    for (size_t d = 0; d <= mask; d++) {
      uint32_t count = at[d];
      at[d] = sum;
      sum += count;
    }
    for (size_t i = 0; i < n; i++) to[at[(from[i] >> shift) & mask]++] = from[i];
    uint64_t *swap = from;
    from = to;
    to = swap;
  }
  if (from != k) memcpy(k, from, n * sizeof *k);
}

static int by_start(const void *a, const void *b) {
  const entry *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* e[0, n) from the kept symbols (their starts in keys[], sym[] and size[],
 * in table order), sorted by start; keys and tmp hold n each. Starts
 * spanning too much for the keys (an absolute symbol near the top of the
 * address space: a module's code spans less than 2^47 bytes) are sorted by
 * qsort. */
static void sort_into(entry *e, size_t n, uint64_t *keys, uint64_t *tmp, const uint32_t *sym,
                      const uint32_t *size) {
  if (n == 0) return;
  uint64_t lo = keys[0], hi = lo;
  for (size_t i = 1; i < n; i++) {
    if (keys[i] < lo) lo = keys[i];
    if (keys[i] > hi) hi = keys[i];
  }
  unsigned low = bits_of(n - 1), width = bits_of(hi - lo);
  if (low + width > 64) {
    for (size_t i = 0; i < n; i++) e[i] = (entry){.start = keys[i], .sym = sym[i], .size = size[i]};
    qsort(e, n, sizeof *e, by_start);
    return;
  }
  for (size_t i = 0; i < n; i++) keys[i] = (keys[i] - lo) << low | i;
  radix_sort(keys, tmp, n, low, width);
  const uint64_t pos = low ? (1ull << low) - 1 : 0;
  for (size_t j = 0; j < n; j++) {
    size_t i = (size_t)(keys[j] & pos);
    e[j] = (entry){.start = lo + (keys[j] >> low), .sym = sym[i], .size = size[i]};
  }
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
  /* one block: keys (the kept symbols' starts, in table order, then the
   * sort's keys), the sort's second buffer, each kept symbol's index and
   * size */
  size_t cap = (size_t)n;
  uint64_t *keys = malloc(cap * (2 * sizeof(uint64_t) + 2 * sizeof(uint32_t)));
  t->e = malloc(cap * sizeof *t->e);
  if (!keys || !t->e) {
    free(keys);
    mt__symtab_free(t);
    return NULL;
  }
  uint64_t *tmp = keys + cap;
  uint32_t *sym_at = (uint32_t *)(tmp + cap), *size_at = sym_at + cap;
  t->nsyms = (uint32_t)n;
  t->start0 = (uint32_t)(first_global > 1 ? first_global : 1);
  t->has_second = first_global > 1;
  size_t kept = 0;
  for (int i = 1; i < n; i++) {
    GElf_Sym sym;
    GElf_Addr value;
    GElf_Word shndx;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
    if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || value == 0) continue;
    int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;
    keys[kept] = value;
    sym_at[kept] = (uint32_t)i;
    size_at[kept] = sym.st_size < BIG_SIZE ? (uint32_t)sym.st_size : BIG_SIZE;
    kept++;
  }
  sort_into(t->e, kept, keys, tmp, sym_at, size_at);
  free(keys);
  t->n = kept;
  uint64_t reach = 0;
  for (size_t i = 0; i < t->n; i++) {
    entry *e = &t->e[i];
    uint64_t end = e->start + size_of(t, e);
    if (end > reach) reach = end;
    e->reach = reach;
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
static const symbol *best_containing(const symbol *cand, size_t n, int second) {
  const symbol *best = NULL;
  uint32_t last = 0;
  /* in reading order: repeatedly take the next higher order (n is tiny) */
  for (;;) {
    const symbol *next = NULL;
    for (size_t i = 0; i < n; i++)
      if (cand[i].second == second && (!best || cand[i].order > last) &&
          (!next || cand[i].order < next->order))
        next = &cand[i];
    if (!next) return best;
    last = next->order;
    if (!best || best->start < next->start || best->rank < next->rank ||
        (best->start == next->start && best->rank == next->rank && best->size > next->size))
      best = next;
  }
}

/* The highest end of the first group's symbols among entries [0, k): only
 * asked for an address no sized symbol names, so computed then. */
static uint64_t reach_first(const mt__symtab *t, size_t k) {
  uint64_t reach = 0;
  for (size_t i = 0; i < k; i++) {
    const entry *e = &t->e[i];
    if (is_second(t, e)) continue;
    uint64_t end = e->start + size_of(t, e);
    if (end > reach) reach = end;
  }
  return reach;
}

/* The name of the sizeless symbol naming addr, given the highest end `top`
 * of the symbols read (entries [0, k) are those at or below addr). */
static const char *best_sizeless(const mt__symtab *t, size_t k, uint64_t addr, uint64_t top,
                                 int with_second) {
  if (top == 0) return NULL;
  size_t lo = 0, hi = k; /* first entry starting at or above top */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->e[mid].start < top) lo = mid + 1;
    else hi = mid;
  }
  symbol best = {0}, s;
  int found = 0, have_scn = 0;
  const void *addr_scn = NULL;
  for (size_t i = lo; i < k && t->e[i].start == top; i++) {
    const entry *e = &t->e[i];
    if (e->size != 0 || (is_second(t, e) && !with_second)) continue;
    read_symbol(t, e, &s);
    if (s.special) {
      if (s.start != addr) continue;
    } else {
      if (!have_scn) {
        addr_scn = section_of(t->mod, addr);
        have_scn = 1;
      }
      if (section_of(t->mod, s.start) != addr_scn) continue;
    }
    if (!found || s.order > best.order) best = s;
    found = 1;
  }
  return found ? best.name : NULL;
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

  symbol cand[MAX_CONTAINING];
  size_t nc = 0, walked = 0;
  for (size_t i = k; i-- > 0 && t->e[i].reach > addr;) {
    const entry *e = &t->e[i];
    if (e->size != 0 && addr - e->start < size_of(t, e)) {
      if (nc == MAX_CONTAINING) return dwfl_module_addrname(t->mod, addr);
      read_symbol(t, e, &cand[nc++]);
    }
    if (++walked == MAX_WALK) return dwfl_module_addrname(t->mod, addr);
  }

  const symbol *c = best_containing(cand, nc, 0);
  if (c) return c->name;
  /* a sizeless first-group symbol exactly at addr: the locals are not read */
  int exact = 0;
  for (size_t i = k; i-- > 0 && t->e[i].start == addr;)
    if (t->e[i].size == 0 && !is_second(t, &t->e[i])) exact = 1;
  if (!t->has_second || exact)
    return best_sizeless(t, k, addr, t->has_second ? reach_first(t, k) : t->e[k - 1].reach, 0);
  c = best_containing(cand, nc, 1);
  if (c) return c->name;
  return best_sizeless(t, k, addr, t->e[k - 1].reach, 1);
}

const char *mt__symtabs_name(mt__symtabs *s, Dwfl_Module *mod, uint64_t addr) {
  mt__symtab **t;
  uint32_t *ix = mt__u64map_get(&s->index, (uint64_t)(uintptr_t)mod);
  if (ix) {
    t = &s->tables[*ix - 1]; /* stored + 1 */
  } else {
    if (s->n == s->cap) {
      size_t nc = s->cap ? s->cap * 2 : 16;
      mt__symtab **p = realloc(s->tables, nc * sizeof *p);
      if (!p) return dwfl_module_addrname(mod, addr);
      s->tables = p;
      s->cap = nc;
    }
    if (mt__u64map_put(&s->index, (uint64_t)(uintptr_t)mod, (uint32_t)s->n))
      return dwfl_module_addrname(mod, addr);
    t = &s->tables[s->n++];
    *t = NULL;
  }
  if (!*t && !(*t = mt__symtab_build(mod))) return dwfl_module_addrname(mod, addr);
  return mt__symtab_name(*t, addr);
}

void mt__symtabs_clear(mt__symtabs *s) {
  for (size_t i = 0; i < s->n; i++) mt__symtab_free(s->tables[i]);
  free(s->tables);
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
