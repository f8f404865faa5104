/* Code a JIT compiler replaced at the same addresses: a code of its own.
 *
 * The format describes a code once for the whole trace, and a code is its
 * return address (with the generation's bits, events.c). A runtime that
 * frees compiled code and compiles other code at the same addresses (V8's
 * code space after a collection, a JVM's code cache) writes a perf map
 * line for the new code (perfmap.h); its samples would show the old name.
 * So the addresses named through the map are watched (symbols.h), and one
 * the map names otherwise gets an alias: a code with bit 47 set (which no
 * user-space address has, below the generation's bits), described anew,
 * that the samples' codes are mapped to as they are written.
 *
 * When: the map's new lines were all written after the last poll (which
 * read it whole), so a sample taken before that poll keeps the old code,
 * a later one takes the alias. The map is polled whenever events are
 * written (a thread's queue, or every queue: the sweep, stop, exit,
 * dlclose), so that between two polls is at most about the age a queue
 * reaches (1 ms while samples come): the window where a sample of the old
 * code, taken just before it was replaced, is named as the new one.
 *
 * Everything here runs with the session's lock held. Internal (mt__
 * prefix). */
#ifndef MT_TRACER_JITCODES_H
#define MT_TRACER_JITCODES_H

#include <stddef.h>
#include <stdint.h>

#define MT__JIT_ALIAS_BIT (UINT64_C(1) << 47)

/* Whether any code has an alias: until then the samples' codes are
 * written as they are. */
extern int mt__jit_aliased __attribute__((visibility("hidden")));

/* Whether the process has a perf map (or code in no module, watched): then
 * a sample's codes are named as it is written, not when the writer's
 * packet ends, so that the map is read close to when the sample was taken.
 * Set by the polls. */
extern int mt__jit_watching __attribute__((visibility("hidden")));

/* Reads the perf map's new lines and aliases the watched codes it names
 * otherwise; now: the time (mt__clock_us). gen: the codes' generation
 * bits (events.h). Nothing watched, nothing is read; else
 * a stat of the map when it has not grown. */
void mt__jit_poll(uint64_t now, uint64_t gen);

/* codes[0..n) as a sample taken at `time` is written: each aliased code as
 * its alias then, into out (n entries). Returns out. */
const uint64_t *mt__jit_map(const uint64_t *codes, size_t n, uint64_t time, uint64_t *out);

/* The return address a code stands for. */
uint64_t mt__jit_code_pc(uint64_t code);

/* Forgets the aliases (the generation changed: every code is described
 * again). Alias codes are never given twice. */
void mt__jit_reset(void);

#endif
