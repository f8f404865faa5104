/* Location codes -> two numbers of a tool's own (memtrace's hotspots: a
 * code's location entry and function; its flamegraph: where a code's names
 * are): open addressing with linear probing, each slot 16 bytes holding the
 * code and both numbers, so that a lookup reads one cache line (a map of
 * keys and values apart reads two). These tools look a code up for every
 * new frame of every allocation. */
#ifndef MT_CLI_CODE_TABLE_H
#define MT_CLI_CODE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"

#define CODE_TABLE_EMPTY UINT32_MAX

typedef struct code_slot {
  uint64_t code;
  uint32_t v[2]; /* v[0] CODE_TABLE_EMPTY: an empty slot */
} code_slot;

typedef struct code_table {
  code_slot *slots; /* cap slots, a power of two, at most half full */
  size_t cap, count;
} code_table;

/* Where code is in a table with slots, or the empty slot where it would
 * go. */
static inline size_t code_probe(const code_table *t, uint64_t code) {
  size_t mask = t->cap - 1;
  size_t i = (size_t)mt__hash64(code) & mask;
  while (t->slots[i].v[0] != CODE_TABLE_EMPTY && t->slots[i].code != code) i = (i + 1) & mask;
  return i;
}

/* The slot of code, or an empty one (v[0] CODE_TABLE_EMPTY) when the
 * table lacks it. */
static inline const code_slot *code_find(const code_table *t, uint64_t code) {
  static const code_slot none = {0, {CODE_TABLE_EMPTY, CODE_TABLE_EMPTY}};
  return t->cap ? &t->slots[code_probe(t, code)] : &none;
}

/* Adds code, which the table lacks, with its numbers (v0 not
 * CODE_TABLE_EMPTY); its slot, or NULL when out of memory (the table is
 * unchanged). */
code_slot *code_add(code_table *t, uint64_t code, uint32_t v0, uint32_t v1);
void code_table_free(code_table *t);

#endif
