/* The mapping that holds an address, as the kernel has it (stackmap.c):
 * how a sample finds the stack its thread runs on, and whether code
 * outside every loaded object can be read. */
#ifndef MT_TRACER_STACKMAP_H
#define MT_TRACER_STACKMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mt__mapping {
  uintptr_t lo, hi; /* [lo, hi): every byte readable and writable */
  /* 1 if a stack here ends at lo and faults past it: a mapping without
   * access lies right below (the guard the C library puts under a
   * thread's stack), or this is the main thread's stack (the kernel keeps
   * a gap under it). 0: lo may be far below the stack's end (a stack the
   * program allocated itself, among other data). */
  int guarded;
} mt__mapping;

/* The writable mapping holding addr: 1 and *out, or 0 (not mapped, not
 * writable, or /proc/self/maps unreadable: no descriptor left, no procfs).
 *
 * Safe anywhere a sample can be taken: it takes no lock of the C library,
 * allocates nothing, and makes raw system calls (no cancellation point, no
 * interposed wrapper). It does not ask the C library for the thread's
 * stack: pthread_getattr_np holds the thread's own lock while it allocates,
 * and a sample taken in there would wait for itself (the JVM asks it as
 * each thread starts). Costs about five system calls on Linux 6.11 and
 * later (PROCMAP_QUERY), else a read of the whole map. */
int mt__mapping_of(uintptr_t addr, mt__mapping *out);

/* Whether every byte of [addr, addr + len) can be read: it lies in
 * readable mappings (adjacent ones joined, as above). 1 or 0 (as above,
 * or len 0, or the range wrapping). Safe where mt__mapping_of is: how a
 * walk reads code that lies in no loaded object (a JIT's) without
 * faulting, whatever address a corrupt stack gave it. */
int mt__readable(uintptr_t addr, size_t len);

/* The mapping holding an address, whatever it allows, and the file it
 * maps: [lo, hi), the file offset at lo, the file's device and inode (0:
 * anonymous memory), and whether it is executable. */
typedef struct mt__file_mapping {
  uintptr_t lo, hi;
  uint64_t offset, inode;
  unsigned dev_major, dev_minor;
  int exec;
} mt__file_mapping;

/* 1 and *out, or 0 (not mapped, or /proc/self/maps unreadable). As safe
 * as mt__mapping_of. For the symbolizer: code of a loaded file mapped
 * again where the loader does not know it (node's V8 maps its builtins,
 * from node's own text, next to the code it compiles). */
int mt__file_mapping_of(uintptr_t addr, mt__file_mapping *out);

/* The first mapping, in address order, whose path `match` takes (returns
 * 1 for), given the mapping, its path (NUL-terminated, in `path`, a
 * buffer of cap bytes: paths that do not fit are skipped) and ctx: 1, the
 * mapping in *out and its path in `path`; or 0 (none, or the map
 * unreadable). Mappings without a path are skipped too; pseudo-paths
 * ("[heap]") are given. Reads the map's text: for the symbolizer, at the
 * rare times it looks for a file among the mappings (a C++ runtime, a
 * JIT's jitdump), not for samples. */
typedef int mt__map_match(const mt__file_mapping *m, const char *path, void *ctx);
int mt__maps_find(mt__map_match *match, void *ctx, char *path, size_t cap, mt__file_mapping *out);

/* The same from the map's text alone, as before Linux 6.11 (for tests). */
int mt__file_mapping_of_text(uintptr_t addr, mt__file_mapping *out);
int mt__mapping_of_text(uintptr_t addr, mt__mapping *out);
int mt__readable_text(uintptr_t addr, size_t len);

#endif
