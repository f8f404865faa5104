/* What `memtrace attach` (src/cli/attach) and the interposer loaded late
 * into a running process (preload_attach.c) exchange through the
 * process's memory: the attacher writes the settings into the library's
 * mt__attach_area, calls mt__attach_begin in the process, reads back the
 * status, the jumps to write over the allocator's first bytes and the PLT
 * slots to bind to the wrappers, and later calls mt__attach_end. Both
 * sides are built from this header; the version guards against a library
 * of another build. */
#ifndef MT_PRELOAD_ATTACH_ABI_H
#define MT_PRELOAD_ATTACH_ABI_H

#include <stdint.h>

#define MT__ATTACH_VERSION 2
#define MT__ATTACH_MAX_JUMPS 64
#define MT__ATTACH_MAX_SLOTS 512

typedef struct mt__jump_list {
  uint32_t n;
  struct {
    uint64_t at;  /* where, in the process */
    uint32_t len; /* how many of bytes */
    uint8_t bytes[20];
  } jumps[MT__ATTACH_MAX_JUMPS];
} mt__jump_list;

/* PLT slots (GOT words) to rebind, each written only if it still holds
 * `was` (the dynamic loader may bind it meanwhile). */
typedef struct mt__slot_list {
  uint32_t n;
  struct {
    uint64_t at;  /* the slot, in the process */
    uint64_t was; /* the allocator's function it holds */
    uint64_t to;  /* the wrapper that function's jump leads to */
  } slots[MT__ATTACH_MAX_SLOTS];
} mt__slot_list;

typedef struct mt__attach_args {
  uint32_t version; /* MT__ATTACH_VERSION, written by the attacher */
  /* in: as MEMTRACE, MEMTRACE_RATE, MEMTRACE_UNWIND, MEMTRACE_DEPTH,
   * MEMTRACE_FORMAT ("" for the defaults) */
  char destination[4096];
  char rate[32], unwind[16], depth[16], format[4];
  char context[256];
  /* out */
  int32_t status;  /* 0: tracing; else a negative mt status */
  char error[512]; /* why not */
  mt__jump_list jumps;
  mt__slot_list slots;
} mt__attach_args;

#endif
