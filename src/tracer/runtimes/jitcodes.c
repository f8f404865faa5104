/* Aliases of codes a JIT compiler replaced (jitcodes.h). */
#include "jitcodes.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perfmap.h"
#include "base/containers.h"
#include "tracer/events.h"
#include "tracer/session.h"
#include "tracer/unwind/bigstack.h"

typedef struct alias {
  uint64_t since;  /* samples from this time on take `now` */
  uint64_t now;    /* the alias */
  uint64_t before; /* what older samples take: the code, or an older alias */
} alias;

int mt__jit_aliased;
int mt__jit_watching;

static mt__u64map by_code; /* a code (address and generation) -> aliases[] */
static alias *aliases;
static size_t naliases, aliases_cap;
static uint64_t *alias_pc; /* an alias's serial (its low 47 bits) -> its return address */
static size_t npc = 1, pc_cap; /* serial 0 is never given */
static uint64_t last_poll;

typedef struct poll_ctx {
  uint64_t since, gen;
} poll_ctx;

/* pc's code gets a new alias (symbols.c found its map line changed). Out
 * of memory, it keeps what it had: its samples then show the older name. */
static void on_renamed(void *arg, uint64_t pc) {
  const poll_ctx *p = arg;
  uint64_t code = (pc & MT__PC_MASK & ~MT__JIT_ALIAS_BIT) | p->gen;
  if (npc > MT__JIT_ALIAS_BIT - 1 || mt__reserve((void **)&alias_pc, npc, &pc_cap, sizeof *alias_pc))
    return;
  uint32_t *ix = mt__u64map_get(&by_code, code);
  alias *a;
  if (ix) {
    a = &aliases[*ix - 1]; /* stored + 1 */
  } else {
    if (naliases >= UINT32_MAX - 1 ||
        mt__reserve((void **)&aliases, naliases, &aliases_cap, sizeof *aliases) ||
        mt__u64map_put(&by_code, code, (uint32_t)naliases))
      return;
    a = &aliases[naliases++];
    *a = (alias){0, code, code};
  }
  alias_pc[npc] = pc;
  *a = (alias){p->since, p->gen | MT__JIT_ALIAS_BIT | npc++, a->now};
  mt__jit_aliased = 1;
}

/* Whether the process has a perf map (or a jitdump named a code), looked
 * at most every LOOK_US until it has: a runtime writes it as it starts
 * compiling, and from then on the samples' codes are named as they are
 * written, so that its first code named is watched from its first sample
 * (else: from the writer's next packet, up to a second later). */
#define LOOK_US 10000
static uint64_t last_look;
static int map_seen;

static int has_map(uint64_t now) { /* little stack: on the sampling thread's */
  if (!map_seen && (int64_t)(now - last_look) >= LOOK_US) {
    last_look = now;
    char path[64];
    struct stat st;
    mt__perfmap_path(path, sizeof path);
    map_seen = (stat(path, &st) == 0 && S_ISREG(st.st_mode)) ||
               (mt__tr_symbols() && mt__symbols_jitdump_found(mt__tr_symbols()));
  }
  return map_seen;
}

static void poll_on(void *arg) { mt__symbols_jit_poll(mt__tr_symbols(), on_renamed, arg); }

void mt__jit_poll(uint64_t now, uint64_t gen) {
  int watched = mt__tr_symbols() && mt__symbols_jit_watched(mt__tr_symbols());
  mt__jit_watching = watched || has_map(now);
  if (!watched) {
    last_poll = now; /* no line read after this named watched code */
    return;
  }
  poll_ctx p = {last_poll, gen};
  last_poll = now;
  /* reading and naming on the tracer's own stack, not the sampling
   * thread's (which may be a small one) */
  mt__on_big_stack(poll_on, &p);
}

const uint64_t *mt__jit_map(const uint64_t *codes, size_t n, uint64_t time, uint64_t *out) {
  for (size_t i = 0; i < n; i++) {
    uint32_t *ix = mt__u64map_get(&by_code, codes[i]);
    const alias *a = ix ? &aliases[*ix - 1] : NULL;
    out[i] = !a ? codes[i] : (int64_t)(time - a->since) >= 0 ? a->now : a->before;
  }
  return out;
}

uint64_t mt__jit_code_pc(uint64_t code) {
  if (!(code & MT__JIT_ALIAS_BIT)) return code & MT__PC_MASK;
  uint64_t serial = code & (MT__JIT_ALIAS_BIT - 1);
  return serial < npc ? alias_pc[serial] : 0;
}

void mt__jit_reset(void) {
  mt__u64map_free(&by_code);
  naliases = 0;
  mt__jit_aliased = mt__jit_watching = 0;
}
