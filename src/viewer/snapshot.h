/* A loaded trace as the viewer serves it: the analysis, plus a call tree
 * (memtrace/calltree.h, consecutive frames of a function merged) and an
 * index of its stacks built once at load, so that every filtered view is a
 * pass over the objects and the tree's nodes, never over the trace.
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
#include "memtrace/stats.h"
#include "memtrace/calltree.h"

/* A trace followed as it grows (--follow, --listen): one analysis and its
 * call tree, changed by the loader under the write side of `rw` while the
 * snapshots made of it answer under its read side. Refcounted: the
 * loader and each snapshot hold a reference. */
typedef struct mt_vshared {
  pthread_rwlock_t rw;
  int refs; /* atomic */
  mt_follow *fw;
  mt_calltree *tree;     /* of every backtrace (MT_TREE_EXTENSIBLE), or NULL */
  mt_calltree **retired; /* trees replaced, freed with the whole */
  size_t nretired;
} mt_vshared;

/* A shared analysis of fw (taken), no tree yet; one reference. NULL when
 * out of memory (fw is then closed). */
mt_vshared *mt_vshared_new(mt_follow *fw);
void mt_vshared_ref(mt_vshared *sh);
void mt_vshared_unref(mt_vshared *sh);

typedef struct mt_vsnap {
  mt_analysis *a;
  mt_calltree *tree; /* once built (mt_vsnap_wait); shared: mt_vsnap_tree */
  mt_vshared *shared; /* a followed trace's, or NULL: a and tree owned */
  /* the differential view's base trace(s), or NULL: loaded once, owned by
   * the loader (mt_vlive), shared by every snapshot */
  const mt_analysis *base;
  const mt_calltree *base_tree;
  const char *base_name;
  mt_rss *rss; /* the resident memory recorded beside the trace, or NULL (owned) */
  int refs;          /* atomic */
  uint64_t generation;
  const char *name; /* the trace's name as shown */
  size_t nobj;
  double duration; /* seconds */
  /* the tree's state: 0 being built, 1 built, -1 failed (out of memory) */
  int state;
  pthread_mutex_t lock; /* state, cache */
  pthread_cond_t built;
  pthread_cond_t answered; /* a pending cache entry was settled */
  struct mt_vcache_entry *cache; /* most recent first */
} mt_vsnap;

/* A snapshot of a loaded analysis (which the snapshot then owns), its tree
 * not built yet. Returns NULL when out of memory (the analysis is then
 * freed). */
mt_vsnap *mt_vsnap_new(mt_analysis *a, const char *name, uint64_t generation);
/* A snapshot of a followed trace as it is now (a reference to sh taken),
 * its tree built. NULL when out of memory. */
mt_vsnap *mt_vsnap_new_shared(mt_vshared *sh, const char *name, uint64_t generation);
/* The call tree the answers use (after mt_vsnap_wait; of a shared
 * snapshot, between mt_vsnap_read_begin and _end). */
const mt_calltree *mt_vsnap_tree(const mt_vsnap *s);
/* Around every use of a snapshot's analysis or tree by an answer: a
 * shared one holds its lock's read side meanwhile (not to be nested);
 * nothing for the others. */
void mt_vsnap_read_begin(const mt_vsnap *s);
void mt_vsnap_read_end(const mt_vsnap *s);
/* Builds the call tree (once) and wakes the waiters; 0 or -1 (out of
 * memory: the waiters then fail too). */
int mt_vsnap_build(mt_vsnap *s);
/* Indexes the analysis' stacks (mt_analysis_index_stacks) for the rankings
 * by stack, leaks and paths, which meanwhile compute without it; after the
 * tree, so that the flame graph comes first. */
void mt_vsnap_index(mt_vsnap *s);
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

void mt_vsnap_ref(mt_vsnap *s);
void mt_vsnap_unref(mt_vsnap *s);

/* MEMTRACE_VIEW_DEBUG=1: stage and request timings on stderr. */
int mt_vdebug(void);


#endif
