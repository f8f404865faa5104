/* The first N stacks of a trace by bytes or objects, in bounded memory,
 * without the analysis' stack tree (for top --by stack).
 *
 * The stack tree and a tally per stack cost ~150 bytes per distinct stack:
 * a gigabyte on a trace whose 5 million objects nearly all have their own
 * stack. Here objects are grouped by a 64-bit fingerprint of their printed
 * frames (so stacks that print alike are one group, as emit_group_stacks
 * makes them), computed from each object's backtrace in a sequential pass
 * (mt_analysis_each_backtrace). The groups are counted in a hash table of
 * 20 bytes a group; when the trace has more distinct backtraces than a
 * table of the memory budget holds, the fingerprints are split into 2^k
 * ranges and the pass is repeated per range. A bounded heap keeps the best
 * N groups over all passes; a last pass sums their full tallies.
 *
 * Two groups whose printed frames differ share a fingerprint with
 * probability ~g^2 / 2^65 for g groups, as the analysis' own backtrace
 * interning accepts. */
#ifndef MT_CLI_STACK_RANK_H
#define MT_CLI_STACK_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/analysis.h"

typedef struct stack_rank_row {
  mt_tally tally; /* the group's objects passing the filter */
  uint32_t bt;    /* a backtrace id of the group (they all print alike) */
} stack_rank_row;

/* Ranks the groups of the objects passing f by samples (or, with
 * by_objects, by the Horvitz-Thompson object count), ties broken by the
 * printed frames as emit_stack_cmp orders them. Fills *rows with the
 * first `limit` (0: all) groups in order (*nrows of them; free it) and
 * *ngroups with the number of groups. Uses at most about `budget` bytes
 * for the groups of one pass. Returns 0, or -1 when out of memory. */
int stack_rank(const mt_analysis *a, const mt_filter *f, int by_objects, size_t limit,
               size_t budget, stack_rank_row **rows, size_t *nrows, size_t *ngroups);

#endif
