/* Units by address from the unit DIEs' own ranges (units.h). */
#include "units.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct unit_range {
  uint64_t lo, hi; /* [lo, hi), in the DWARF's addresses */
  uint64_t reach;  /* the highest hi of this and every range before it */
  Dwarf_Die die;
} unit_range;

struct mt__units_table {
  Dwarf *dw;
  unit_range *v; /* sorted by lo */
  size_t n;
};

static int by_lo(const void *a, const void *b) {
  const unit_range *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Every unit with code: its ranges (a failed allocation leaves the table
 * with what it has). */
static void build(mt__units_table *t) {
  size_t cap = 0;
  Dwarf_CU *cu = NULL;
  Dwarf_Half version;
  uint8_t unit_type;
  Dwarf_Die die;
  while (dwarf_get_units(t->dw, cu, &cu, &version, &unit_type, &die, NULL) == 0) {
    if (unit_type != DW_UT_compile) continue; /* type, partial and split units hold no code of their own here */
    Dwarf_Addr base, start, end;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(&die, off, &base, &start, &end)) > 0) {
      if (start >= end) continue;
      if (t->n == cap) {
        size_t nc = cap ? cap * 2 : 64;
        unit_range *v = realloc(t->v, nc * sizeof *v);
        if (!v) goto done;
        t->v = v;
        cap = nc;
      }
      t->v[t->n++] = (unit_range){start, end, 0, die};
    }
  }
done:
  if (t->n > 1) qsort(t->v, t->n, sizeof *t->v, by_lo);
  uint64_t reach = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (t->v[i].hi > reach) reach = t->v[i].hi;
    t->v[i].reach = reach;
  }
}

static const mt__units_table *table_of(mt__units *u, Dwarf *dw) {
  for (size_t i = 0; i < u->n; i++)
    if (u->v[i].dw == dw) return &u->v[i];
  if (u->n == u->cap) {
    size_t nc = u->cap ? u->cap * 2 : 8;
    mt__units_table *v = realloc(u->v, nc * sizeof *v);
    if (!v) return NULL;
    u->v = v;
    u->cap = nc;
  }
  mt__units_table *t = &u->v[u->n++];
  *t = (mt__units_table){dw, NULL, 0};
  build(t);
  return t;
}

Dwarf_Die *mt__units_at(mt__units *u, Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Die *cu,
                        Dwarf_Addr *bias) {
  Dwarf *dw = dwfl_module_getdwarf(mod, bias);
  const mt__units_table *t = dw ? table_of(u, dw) : NULL;
  if (!t) return NULL;
  uint64_t pc = addr - *bias;
  size_t lo = 0, hi = t->n; /* ranges [0, lo) start at or below pc */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->v[mid].lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i-- > 0 && t->v[i].reach > pc;)
    if (pc < t->v[i].hi) {
      *cu = t->v[i].die;
      return cu;
    }
  return NULL;
}

int mt__unit_holds(Dwarf_Die *cu, Dwarf_Addr pc) {
  Dwarf_Addr base, lo, hi;
  for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;)
    if (pc >= lo && pc < hi) return 1;
  return 0;
}

void mt__units_clear(mt__units *u) {
  for (size_t i = 0; i < u->n; i++) free(u->v[i].v);
  free(u->v);
  *u = (mt__units){0};
}
