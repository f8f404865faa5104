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
 * while requests still hold the old.
 *
 * A snapshot is made in two steps so that the answers which need no call
 * tree (info, summary, timeline, sites, histograms) are served while the
 * tree is built: mt_vsnap_new (cheap), then mt_vsnap_build (the tree);
 * whatever needs the tree calls mt_vsnap_wait first.
 *
 * Each snapshot also keeps a few recent JSON answers (mt_vsnap_cache_*),
 * keyed by endpoint and canonical query: a new generation is a new
 * snapshot, so a cache never outlives the data it was computed from. */
#ifndef MT_VIEWER_SNAPSHOT_H
#define MT_VIEWER_SNAPSHOT_H

#include <pthread.h>
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
  uint32_t *ffirst, *fnext; /* children lists: first child, next sibling (0 ends) */
  uint32_t *samples; /* per object: its samples (UINT32_MAX: look it up) */
  size_t nfn;      /* analysis functions; id nfn is "(unknown)" */
  double duration; /* seconds */
  mt_tally all;    /* every object */
  /* the tree's state: 0 being built, 1 built, -1 failed (out of memory) */
  int tree;
  pthread_mutex_t lock; /* tree, cache */
  pthread_cond_t built;
  pthread_cond_t answered; /* a pending cache entry was settled */
  struct mt_vcache_entry *cache; /* most recent first */
  void *scratch; /* a per-node scratch block kept between answers (lock) */
} mt_vsnap;

/* A snapshot of a loaded analysis (which the snapshot then owns), its tree
 * not built yet. Returns NULL when out of memory (the analysis is then
 * freed). */
mt_vsnap *mt_vsnap_new(mt_analysis *a, const char *name, uint64_t generation);
/* Builds the fnode tree (once) and wakes the waiters; 0 or -1 (out of
 * memory: the waiters then fail too). */
int mt_vsnap_build(mt_vsnap *s);
/* Waits until the tree is built: 0, or -1 if it could not be. */
int mt_vsnap_wait(const mt_vsnap *s);

/* The answer cache, with one computation per key at a time: returns 1
 * with a copy of the cached answer in *text (*len its length); or 0 when
 * the caller is to compute it (the key is then pending: other callers wait
 * for it), and must then call mt_vsnap_cache_end, with the answer or NULL
 * if it has none; or -1 when out of memory (compute, do not call end). */
int mt_vsnap_cache_begin(const mt_vsnap *s, const char *key, char **text, size_t *len);
/* Stores an answer for a key begun (a copy is kept; the oldest answers go
 * past a few entries) and wakes the callers waiting for it. */
void mt_vsnap_cache_end(const mt_vsnap *s, const char *key, const char *text, size_t len);

/* Scratch for an answer that needs a few arrays per tree node (the flame
 * graph: 16 bytes per node, 190 MB on a tree of 12M nodes): the block the
 * last answer gave back when there is one, else a new one; contents
 * undefined. Fresh memory of that size per answer cost more in page faults
 * than the answer itself. NULL when out of memory. Give it back with
 * mt_vsnap_scratch_put (one block is kept, the others freed). */
void *mt_vsnap_scratch_get(const mt_vsnap *s);
void mt_vsnap_scratch_put(const mt_vsnap *s, void *p);
#define MT_VSNAP_SCRATCH_PER_NODE 16

void mt_vsnap_ref(mt_vsnap *s);
void mt_vsnap_unref(mt_vsnap *s);

/* MEMTRACE_VIEW_DEBUG=1: stage and request timings on stderr. */
int mt_vdebug(void);
/* Monotonic seconds. */
double mt_vnow(void);

const char *mt_vsnap_fn_name(const mt_vsnap *s, uint32_t fn);
const char *mt_vsnap_fn_file(const mt_vsnap *s, uint32_t fn);

#endif
