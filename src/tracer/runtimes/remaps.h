/* Code of a loaded object's file mapped again, where the loader does not
 * know it: node's V8 maps its embedded builtins (a part of node's own
 * text) a second time next to the code it compiles, so that calls between
 * the two are short. Samples there were "??": no module holds them. Named
 * as the same bytes in the object are: the mapping's file (device and
 * inode) is a loaded object's, its file offset falls in one of the
 * object's executable segments (its ELF's program headers), and that
 * gives the address. Internal (mt__ prefix).
 *
 * The mappings looked up are kept, a few (their ranges, and whether each
 * is a loaded file's), so that each costs its lookup once: a system call
 * or three (PROCMAP_QUERY), else a read of /proc/self/maps; then a stat of
 * each module's file while looking for its owner. For the symbolizer,
 * under the tracer's lock, on the big stack: no lock of the loader's. */
#ifndef MT_TRACER_REMAPS_H
#define MT_TRACER_REMAPS_H

#include <stdint.h>

#define MT__REMAPS 16

typedef struct mt__remaps {
  struct {
    uintptr_t lo, hi; /* [lo, hi); hi 0: an empty slot */
    uint64_t delta;   /* the object's address less this one (mod 2^64) */
    int same;         /* 0: not a loaded file's code */
  } v[MT__REMAPS];
  unsigned next; /* the slot the next lookup takes */
} mt__remaps;

/* The address in a module of dwfl (the symbolizer's list of the loaded
 * objects) holding the code mapped again at addr: 1 and *same, or 0 (addr
 * is in no such mapping: anonymous memory, a JIT's, not mapped, or a file
 * no module was loaded from). */
typedef struct Dwfl Dwfl;
int mt__remap_of(mt__remaps *r, Dwfl *dwfl, uint64_t addr, uint64_t *same);

/* Forgets the mappings kept (objects were unloaded). */
void mt__remaps_clear(mt__remaps *r);

#endif
