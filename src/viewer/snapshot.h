/* A loaded trace as the viewer serves it: the analysis plus a function-level
 * call tree built once at load, so that every filtered view is a pass over
 * the objects and the tree's nodes, never over the trace.
 *
 * The tree ("fnodes"): each object's backtrace with every code expanded
 * into its inlined frames (outermost first), consecutive frames of one
 * function merged, interned as (parent fnode, function) pairs. Node 0 is the
 * root (the empty stack); a parent's id is smaller than its children's, so
 * one reverse pass over the ids adds subtree weights up. Codes the trace
 * never described become the pseudo-function `nfn` ("(unknown)").
 *
 * Snapshots are refcounted: in live mode a new one replaces the current one
 * while requests still hold the old. */
#ifndef MT_VIEWER_SNAPSHOT_H
#define MT_VIEWER_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/analysis.h"

typedef struct mt_vsnap {
  mt_analysis *a;
  int refs; /* atomic */
  uint64_t generation;
  const char *name; /* the trace's name as shown */
  size_t nobj;
  uint32_t *leaf; /* per object: its fnode */
  size_t nf;      /* fnodes, root included */
  uint32_t *fparent, *ffn, *fline;
  uint8_t *fouter; /* 1 if no ancestor has the same function */
  size_t nfn;      /* analysis functions; id nfn is "(unknown)" */
  double duration; /* seconds */
  mt_tally all;    /* every object */
} mt_vsnap;

/* Builds the fnode tree over a loaded analysis (which the snapshot then
 * owns). Returns NULL when out of memory (the analysis is then freed). */
mt_vsnap *mt_vsnap_new(mt_analysis *a, const char *name, uint64_t generation);
void mt_vsnap_ref(mt_vsnap *s);
void mt_vsnap_unref(mt_vsnap *s);

const char *mt_vsnap_fn_name(const mt_vsnap *s, uint32_t fn);
const char *mt_vsnap_fn_file(const mt_vsnap *s, uint32_t fn);

#endif
