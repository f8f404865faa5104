/* The tracker: the engine's callbacks, whose events of sampled blocks are
 * queued per thread and written in batches (events.c), and the codes
 * they carry. Internal (mt__ prefix). */
#ifndef MT_TRACER_EVENTS_H
#define MT_TRACER_EVENTS_H

#include <stdint.h>

#include "memtrace/engine.h"

/* A location code: a return address, with the generation of the loaded
 * code in the top bits (bumped when a library is unloaded: an address may
 * then hold another function, and a code is described once). */
#define MT__GEN_SHIFT 48 /* user-space addresses fit below bit 47 */
#define MT__PC_MASK ((UINT64_C(1) << MT__GEN_SHIFT) - 1)
/* The most frames a sample keeps. */
#define MT__MAX_DEPTH 4096

/* The engine's tracker callbacks. */
void *mt__tr_on_alloc(void *ctx, const mt_alloc_info *info);
void *mt__tr_on_promote(void *ctx, void *handle);
void mt__tr_on_dealloc(void *ctx, void *handle);

/* Writes every thread's queued events (the session's lock held). */
void mt__tr_flush_queues(void);
/* Once per process, before the first session (lock held). */
void mt__tr_events_init(void);
/* At session start: the loaded libraries as they are now. */
void mt__tr_libraries_baseline(void);
/* In a forked child (lock held): the queues hold the parent's events;
 * drop them, and free the other threads' queues. */
void mt__tr_queues_after_fork(void);

/* The interposer's dlclose, as events.c counts it (interposer.h), for the
 * tracer's other readers: read-only outside events.c. */
typedef struct mt__dlcloses {
  _Atomic unsigned count; /* calls returned: a library may have gone */
  int hooked;             /* the interposer's dlclose is in place */
} mt__dlcloses;
extern const mt__dlcloses *const mt__dlclose __attribute__((visibility("hidden")));

#endif
