/* Location codes -> two numbers: growing the table (code_table.h). */
#include "code_table.h"

#include <stdlib.h>

code_slot *code_add(code_table *t, uint64_t code, uint32_t v0, uint32_t v1) {
  if ((t->count + 1) * 2 > t->cap) {
    code_table g = {NULL, t->cap ? t->cap * 2 : 1024, t->count};
    g.slots = malloc(g.cap * sizeof *g.slots);
    if (!g.slots) return NULL;
    for (size_t i = 0; i < g.cap; i++) g.slots[i].v[0] = CODE_TABLE_EMPTY;
    for (size_t i = 0; i < t->cap; i++) {
      const code_slot *o = &t->slots[i];
      if (o->v[0] != CODE_TABLE_EMPTY) g.slots[code_probe(&g, o->code)] = *o;
    }
    free(t->slots);
    *t = g;
  }
  code_slot *c = &t->slots[code_probe(t, code)];
  *c = (code_slot){code, {v0, v1}};
  t->count++;
  return c;
}

void code_table_free(code_table *t) {
  free(t->slots);
  t->slots = NULL;
  t->cap = t->count = 0;
}
