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
    /* type, partial and split units: no code of their own here (a split
     * unit's is its skeleton's) */
    if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton) continue;
    Dwarf_Addr base, start, end;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(&die, off, &base, &start, &end)) > 0) {
      if (start >= end) continue;
      if (mt__reserve((void **)&t->v, t->n, &cap, sizeof *t->v)) goto done;
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
  if (mt__reserve((void **)&u->v, u->n, &u->cap, sizeof *u->v)) return NULL;
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

/* A unit's ranges, sorted and merged: disjoint. */
typedef struct span {
  uint64_t lo, hi; /* [lo, hi) */
} span;

struct mt__units_held {
  span *v;
  size_t n;
};

static int by_span_lo(const void *a, const void *b) {
  const span *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

static int read_held(Dwarf_Die *cu, mt__units_held *h) {
  size_t cap = 0;
  Dwarf_Addr base, lo, hi;
  *h = (mt__units_held){NULL, 0};
  for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;) {
    if (lo >= hi) continue;
    if (mt__reserve((void **)&h->v, h->n, &cap, sizeof *h->v)) return free(h->v), -1;
    h->v[h->n++] = (span){lo, hi};
  }
  if (h->n > 1) qsort(h->v, h->n, sizeof *h->v, by_span_lo);
  size_t m = 0; /* merged */
  for (size_t i = 0; i < h->n; i++) {
    if (m && h->v[i].lo <= h->v[m - 1].hi) {
      if (h->v[i].hi > h->v[m - 1].hi) h->v[m - 1].hi = h->v[i].hi;
    } else {
      h->v[m++] = h->v[i];
    }
  }
  h->n = m;
  return 0;
}

static int held_has(const mt__units_held *h, uint64_t pc) {
  size_t lo = 0, hi = h->n; /* spans [0, lo) start at or below pc */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (h->v[mid].lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && pc < h->v[lo - 1].hi;
}

int mt__units_hold(mt__units *u, Dwarf_Die *cu, Dwarf_Addr pc) {
  uint64_t key = (uint64_t)(uintptr_t)cu->addr;
  uint32_t *ix = mt__u64map_get(&u->held_index, key);
  if (ix) return held_has(&u->held[*ix - 1], pc); /* stored + 1 */
  mt__units_held h;
  if (read_held(cu, &h) != 0) return 0;
  int has = held_has(&h, pc);
  if (mt__reserve((void **)&u->held, u->nheld, &u->held_cap, sizeof *u->held))
    return free(h.v), has;
  if (mt__u64map_put(&u->held_index, key, (uint32_t)u->nheld) != 0) return free(h.v), has;
  u->held[u->nheld++] = h;
  return has;
}

void mt__units_clear(mt__units *u) {
  for (size_t i = 0; i < u->n; i++) free(u->v[i].v);
  for (size_t i = 0; i < u->nheld; i++) free(u->held[i].v);
  free(u->held);
  mt__u64map_free(&u->held_index);
  free(u->v);
  *u = (mt__units){0};
}
