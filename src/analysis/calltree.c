/* Call trees (memtrace/calltree.h): the one builder of trees of function
 * calls, fed by an analysis' backtraces or by any source of frames.
 *
 * A node's children are a list, most recently used first: the node looked
 * up is nearly always a recent one, so this beats a hash table whose every
 * probe misses the cache. A node with many children also indexes them by
 * function in a hash table. From an analysis, each distinct backtrace is
 * walked once, sharing its prefix of codes with the previous one, and a
 * direct-mapped memo of (node, code) -> node spares the lists' walks when a
 * program's few thousand stacks recur in a random order. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "calltree_internal.h"

#define NONE UINT32_MAX
/* Children past this many are indexed by function. */
#define WIDE 8
#define MEMO_BITS 18

/* Walking an analysis' backtraces into a tree: the previous backtrace
 * walked and the path position after each of its codes. Kept in the tree
 * (t->ext) when it may be extended. */
typedef struct mt__tree_feed {
  mt_calltree *t;
  const mt__query *q;
  const uint8_t *used; /* per backtrace id, or NULL: all */
  uint32_t *prev;      /* the previous backtrace walked */
  size_t prev_n, prev_cap;
  size_t *mark;        /* path position after each of its codes */
  size_t mark_cap;
  size_t depth;        /* the path's depth after the last backtrace */
  int oom;
} feed;

static int grow_nodes(mt_calltree *t) {
  size_t nc = t->cap ? t->cap * 2 : 1024;
  /* the lines, last, once there are any (start_lines) */
  void **const cols[] = {(void **)&t->parent, (void **)&t->fn,    (void **)&t->first,
                         (void **)&t->next,   (void **)&t->nkids, (void **)&t->outer,
                         (void **)&t->line};
  const size_t sizes[] = {sizeof *t->parent, sizeof *t->fn,    sizeof *t->first,
                          sizeof *t->next,   sizeof *t->nkids, sizeof *t->outer,
                          sizeof *t->line};
  if (mt__realloc_columns(cols, sizes, t->line ? 7 : 6, nc, realloc)) return -1;
  t->cap = nc;
  return 0;
}

/* The first node with a line: from then on every node has one. */
static int start_lines(mt_calltree *t) {
  if (!(t->line = calloc(t->cap, sizeof *t->line))) return -1;
  return 0;
}

mt_calltree *mt_calltree_new(int rule, int inverted) {
  mt_calltree *t = calloc(1, sizeof *t);
  if (!t || grow_nodes(t)) {
    mt_calltree_free(t);
    return NULL;
  }
  t->rule = rule & MT_TREE_FIRST_OCCURRENCE;
  t->inverted = inverted;
  t->parent[0] = NONE;
  t->fn[0] = NONE;
  t->first[0] = NONE;
  t->next[0] = NONE;
  t->nkids[0] = 0;
  t->outer[0] = 0;
  t->n = 1;
  pthread_mutex_init(&t->lock, NULL);
  return t;
}

void mt_calltree_free(mt_calltree *t) {
  if (!t) return;
  free(t->parent);
  free(t->fn);
  free(t->line);
  free(t->first);
  free(t->next);
  free(t->nkids);
  free(t->outer);
  free(t->path);
  free(t->pos);
  free(t->leaf);
  free(t->memo);
  free(t->canon);
  if (t->ext) {
    free(t->ext->prev);
    free(t->ext->mark);
    free(t->ext);
  }
  free(t->scratch);
  mt__u64map_free(&t->wide);
  if (t->cap) pthread_mutex_destroy(&t->lock);
  free(t);
}

size_t mt_calltree_size(const mt_calltree *t) { return t->n; }
uint32_t mt_calltree_parent(const mt_calltree *t, uint32_t v) { return t->parent[v]; }
uint32_t mt_calltree_function(const mt_calltree *t, uint32_t v) { return t->fn[v]; }
uint32_t mt_calltree_line(const mt_calltree *t, uint32_t v) { return t->line ? t->line[v] : 0; }
uint32_t mt_calltree_first_child(const mt_calltree *t, uint32_t v) { return t->first[v]; }
uint32_t mt_calltree_next_sibling(const mt_calltree *t, uint32_t v) { return t->next[v]; }

/* A new child of `parent` for function fn; NONE when out of memory. Out of
 * line: most lookups find the child. */
static __attribute__((noinline)) uint32_t new_child(mt_calltree *t, uint32_t parent, uint32_t fn,
                                                    uint32_t line, int outer) {
  if (t->n == t->cap && grow_nodes(t)) return NONE;
  if (t->n >= NONE - 1) return NONE;
  if (line && !t->line && start_lines(t)) return NONE;
  uint32_t id = (uint32_t)t->n++;
  t->parent[id] = parent;
  t->fn[id] = fn;
  if (t->line) t->line[id] = line;
  t->outer[id] = (uint8_t)outer;
  t->first[id] = NONE;
  t->nkids[id] = 0;
  t->next[id] = t->first[parent];
  t->first[parent] = id;
  uint32_t k = t->nkids[parent] < UINT8_MAX ? ++t->nkids[parent] : UINT8_MAX;
  if (k == WIDE + 1) { /* now wide: index every child */
    for (uint32_t c = id; c != NONE; c = t->next[c])
      if (mt__u64map_put(&t->wide, (uint64_t)parent << 32 | t->fn[c], c)) return NONE;
  } else if (k > WIDE + 1 && mt__u64map_put(&t->wide, (uint64_t)parent << 32 | fn, id)) {
    return NONE;
  }
  return id;
}

/* The child of `parent` for function fn, a new node if need be; NONE when
 * out of memory. */
static __attribute__((noinline)) uint32_t wide_child(mt_calltree *t, uint32_t parent,
                                                     uint32_t fn, uint32_t line, int outer) {
  uint32_t *c = mt__u64map_get(&t->wide, (uint64_t)parent << 32 | fn);
  return c ? *c - 1 : new_child(t, parent, fn, line, outer);
}

static inline uint32_t child(mt_calltree *t, uint32_t parent, uint32_t fn, uint32_t line,
                             int outer) {
  if (t->nkids[parent] > WIDE) return wide_child(t, parent, fn, line, outer);
  uint32_t before = NONE;
  for (uint32_t c = t->first[parent]; c != NONE; before = c, c = t->next[c]) {
    if (t->fn[c] != fn) continue;
    if (before != NONE) { /* to the front */
      t->next[before] = t->next[c];
      t->next[c] = t->first[parent];
      t->first[parent] = c;
    }
    return c;
  }
  return new_child(t, parent, fn, line, outer);
}

/* ---- the cursor ------------------------------------------------------------- */

size_t mt_calltree_mark(const mt_calltree *t) { return t->depth; }

/* Rewinding only shortens the path: a function's first position (pos) is
 * checked against the path when read, so nothing needs undoing. */
void mt_calltree_rewind(mt_calltree *t, size_t mark) {
  if (mark < t->depth) t->depth = mark;
}

static uint32_t current(const mt_calltree *t) { return t->depth ? t->path[t->depth - 1].node : 0; }

/* Room for one more step, and pos covering fn. Out of line: the pushes'
 * common case needs neither. */
static __attribute__((noinline)) int room(mt_calltree *t, uint32_t fn) {
  if (mt__reserve((void **)&t->path, t->depth, &t->path_cap, sizeof *t->path)) return -1;
  if (fn < t->pos_cap) return 0;
  size_t old = t->pos_cap;
  if (mt__grow((void **)&t->pos, &t->pos_cap, (size_t)fn + 1, sizeof *t->pos, 1024)) return -1;
  memset(t->pos + old, 0, (t->pos_cap - old) * sizeof *t->pos);
  return 0;
}

/* Whether fn is kept on the current path: its outermost kept step, if
 * still on the path and not since overwritten. A rewind below that step
 * removed every later one too, so the answer is exact under either rule. */
static inline int on_path(const mt_calltree *t, uint32_t fn) {
  uint32_t p = t->pos[fn];
  return p && p <= t->depth && t->path[p - 1].fn == fn;
}

/* A step keeping fn, at node; `seen`: fn is on the path already. */
static inline void step_kept(mt_calltree *t, uint32_t node, uint32_t fn, uint32_t line, int seen) {
  if (!seen) t->pos[fn] = (uint32_t)t->depth + 1;
  t->path[t->depth++] = (mt__tree_step){node, fn, line, fn};
}

static int push_kept(mt_calltree *t, uint32_t node, uint32_t fn, uint32_t line) {
  if (__builtin_expect(t->depth == t->path_cap || fn >= t->pos_cap, 0) && room(t, fn)) return -1;
  step_kept(t, node, fn, line, on_path(t, fn));
  return 0;
}

int mt_calltree_push(mt_calltree *t, uint32_t fn, uint32_t line) {
  if (fn == NONE) return MT_ERR_INVALID;
  if (__builtin_expect(t->depth == t->path_cap || fn >= t->pos_cap, 0) && room(t, fn))
    return MT_ERR_NOMEM;
  uint32_t cur = 0, last = NONE;
  if (t->depth) {
    const mt__tree_step *top = &t->path[t->depth - 1];
    cur = top->node;
    last = top->last;
  }
  int seen = on_path(t, fn);
  int kept = t->rule == MT_TREE_FIRST_OCCURRENCE ? !seen : last != fn;
  if (!kept) { /* merged or skipped: the path stays at cur */
    t->path[t->depth++] = (mt__tree_step){cur, NONE, 0, last};
    return MT_OK;
  }
  uint32_t node = cur;
  if (!t->inverted && (node = child(t, cur, fn, line, !seen)) == NONE) return MT_ERR_NOMEM;
  step_kept(t, node, fn, line, seen);
  return MT_OK;
}

/* An inverted tree's path: the kept frames from the innermost. */
static __attribute__((noinline)) uint32_t end_inverted(mt_calltree *t) {
  uint32_t node = 0;
  for (size_t k = t->depth; k-- > 0;) {
    const mt__tree_step *s = &t->path[k];
    if (s->fn != NONE && (node = child(t, node, s->fn, s->line, 1)) == NONE) return NONE;
  }
  return node;
}

uint32_t mt_calltree_end(mt_calltree *t) { return t->inverted ? end_inverted(t) : current(t); }

/* ---- from an analysis ----------------------------------------------------------- */

/* One code's frames. The memo holds the node after a code from a node,
 * for codes that keep at most one frame: then the node says all (its path
 * holds the functions the rule looks at). */
static int push_code(mt_calltree *t, const mt__query *q, uint32_t code) {
  const mt_analysis *a = q->a;
  uint32_t from = current(t);
  struct mt__tree_memo *m = NULL;
  if (t->memo) {
    m = &t->memo[((uint64_t)from * 0x9E3779B97F4A7C15u ^ code * 0xC2B2AE3D27D4EB4Fu) >>
                 (64 - MEMO_BITS)];
    if (m->from == from && m->code == code && m->to != NONE) {
      if (m->to == from) return MT_OK;
      return push_kept(t, m->to, t->fn[m->to], mt_calltree_line(t, m->to)) ? MT_ERR_NOMEM
                                                                                : MT_OK;
    }
  }
  size_t depth_before = t->depth, kept = 0;
  const mt_frame *fr = &a->frames[a->code_first[code]];
  for (uint32_t i = 0; i < a->code_n[code]; i++) {
    uint32_t fn = fr[i].function;
    if (mt__query_hidden(q, fn)) continue;
    if (mt_calltree_push(t, t->canon ? t->canon[fn] : fn, fr[i].line) != MT_OK)
      return MT_ERR_NOMEM;
  }
  for (size_t k = depth_before; k < t->depth; k++) kept += t->path[k].fn != NONE;
  if (m && kept <= 1) *m = (struct mt__tree_memo){from, code, current(t)};
  return MT_OK;
}

static int feed_backtrace(void *ctx, size_t bt, const uint32_t *codes, size_t n) {
  feed *fd = ctx;
  mt_calltree *t = fd->t;
  if (fd->used && !fd->used[bt]) return 0;
  if (n > fd->prev_cap) {
    if (mt__grow((void **)&fd->prev, &fd->prev_cap, n, sizeof *fd->prev, 64) ||
        mt__grow((void **)&fd->mark, &fd->mark_cap, n, sizeof *fd->mark, 64))
      return fd->oom = 1;
  }
  /* consecutive backtraces share long prefixes: only the fresh codes are
   * walked */
  size_t k = 0;
  while (k < n && k < fd->prev_n && codes[k] == fd->prev[k]) k++;
  mt_calltree_rewind(t, k ? fd->mark[k - 1] : 0);
  for (size_t i = k; i < n; i++) {
    if (push_code(t, fd->q, codes[i]) != MT_OK) return fd->oom = 1;
    fd->prev[i] = codes[i];
    fd->mark[i] = mt_calltree_mark(t);
  }
  fd->prev_n = n;
  uint32_t leaf = mt_calltree_end(t);
  if (leaf == NONE) return fd->oom = 1;
  t->leaf[bt] = leaf;
  return 0;
}

/* Function ids by name: each function's, the lowest id of its name (names
 * are interned: equal names are one pointer). */
static int canonical_names(const mt_analysis *a, mt_calltree *t) {
  mt__u64map first = {0};
  if (!(t->canon = malloc((a->nfn + 1) * sizeof *t->canon))) return -1;
  for (size_t k = 0; k < a->nfn; k++) {
    int fresh;
    uint32_t id = mt__u64map_intern(&first, (uint64_t)(uintptr_t)a->fn_name[k], (uint32_t)k, &fresh);
    if (id == NONE) {
      mt__u64map_free(&first);
      return -1;
    }
    t->canon[k] = id;
  }
  mt__u64map_free(&first);
  return 0;
}

static int mark_used(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  void **c = ctx;
  const mt_analysis *a = c[0];
  ((uint8_t *)c[1])[a->bt[i]] = 1;
  return 0;
}

int mt_calltree_build(const mt_analysis *a, const mt_filter *f, int rule, int inverted,
                      mt_calltree **out) {
  *out = NULL;
  mt_filter all;
  mt_filter_init(&all);
  mt__query q;
  int qrc = mt__query_init_tallies(&q, a, f ? f : &all);
  if (qrc != MT_OK) return qrc;
  mt_calltree *t = mt_calltree_new(rule, inverted);
  feed fd = {t, &q, NULL, NULL, 0, 0, NULL, 0, 0, 0};
  uint8_t *used = NULL;
  int rc = MT_ERR_NOMEM;
  int extensible = (rule & MT_TREE_EXTENSIBLE) && !inverted && !(rule & MT_TREE_BY_NAME) &&
                   (!f || mt_filter_selects_all(f));
  if (!t || !(t->leaf = malloc((a->nbt + 1) * sizeof *t->leaf))) goto out;
  t->nbt = a->nbt;
  t->leaf_cap = a->nbt + 1;
  memset(t->leaf, 0xff, (a->nbt + 1) * sizeof *t->leaf); /* NONE: not in the tree */
  if (!inverted && (t->memo = malloc(sizeof *t->memo << MEMO_BITS)))
    memset(t->memo, 0xff, sizeof *t->memo << MEMO_BITS);
  if ((rule & MT_TREE_BY_NAME) && canonical_names(a, t)) goto out;
  if (f && !mt_filter_selects_all(f)) {
    if (!(used = calloc(a->nbt + 1, 1))) goto out;
    void *ctx[2] = {(void *)a, used};
    mt__scan(&q, 0, a->nobj, mark_used, ctx);
    fd.used = used;
  }
  if (mt_analysis_each_distinct_backtrace(a, feed_backtrace, &fd) != MT_OK || fd.oom) goto out;
  fd.depth = t->depth;
  mt_calltree_rewind(t, 0);
  free(t->canon);
  t->canon = NULL;
  if (extensible && (t->ext = malloc(sizeof *t->ext))) {
    fd.q = NULL; /* the query is the build's: extend makes its own */
    *t->ext = fd;
    fd.prev = NULL;
    fd.mark = NULL;
  } else {
    free(t->memo);
    t->memo = NULL;
  }
  *out = t;
  t = NULL;
  rc = MT_OK;
out:
  mt__query_free(&q);
  mt_calltree_free(t);
  free(used);
  free(fd.prev);
  free(fd.mark);
  return rc;
}

int mt_calltree_extend(mt_calltree *t, const mt_analysis *a) {
  if (!t->ext || a->nbt < t->nbt) return MT_ERR_INVALID;
  if (a->nbt == t->nbt) return MT_OK;
  size_t cap = t->leaf_cap;
  if (mt__grow((void **)&t->leaf, &cap, a->nbt + 1, sizeof *t->leaf, 1024)) return MT_ERR_NOMEM;
  memset(t->leaf + t->leaf_cap, 0xff, (cap - t->leaf_cap) * sizeof *t->leaf);
  t->leaf_cap = cap;
  mt_filter all;
  mt_filter_init(&all);
  mt__query q;
  int rc = mt__query_init_tallies(&q, a, &all);
  if (rc != MT_OK) return rc;
  /* the walk goes on where the build (or the last extension) left it */
  feed *fd = t->ext;
  fd->q = &q;
  t->depth = fd->depth;
  uint32_t *cur = NULL;
  size_t ncur = 0;
  for (size_t b = t->nbt; b < a->nbt && !fd->oom; b++) {
    size_t n = mt__bt_codes_grow(a, (uint32_t)b, &cur, &ncur);
    if (n == SIZE_MAX) fd->oom = 1;
    else feed_backtrace(fd, b, cur, n);
  }
  free(cur);
  fd->q = NULL;
  mt__query_free(&q);
  if (fd->oom) return MT_ERR_NOMEM; /* the tree no longer extends */
  fd->depth = t->depth;
  mt_calltree_rewind(t, 0);
  t->nbt = a->nbt;
  return MT_OK;
}

int mt_calltree_tally(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                      mt_tally *per_node) {
  mt__query q;
  if (!t->leaf) return MT_ERR_NOMEM;
  int qrc = mt__query_init_tallies(&q, a, f);
  if (qrc != MT_OK) return qrc;
  memset(per_node, 0, t->n * sizeof *per_node);
  for (size_t i = q.lo; i < q.hi; i++) {
    uint32_t v = mt__passing_leaf(&q, t, i);
    if (v != NONE) mt__tally_object(a, i, &per_node[v]);
  }
  mt__query_free(&q);
  return MT_OK;
}

/* ---- scratch ------------------------------------------------------------------ */

void *mt__calltree_scratch_get(const mt_calltree *ct, size_t bytes) {
  mt_calltree *t = (mt_calltree *)ct; /* the lock and the scratch slot only */
  pthread_mutex_lock(&t->lock);
  void *p = t->scratch_bytes >= bytes ? t->scratch : NULL;
  if (p) t->scratch = NULL, t->scratch_bytes = 0;
  pthread_mutex_unlock(&t->lock);
  return p ? p : malloc(bytes ? bytes : 1);
}

void mt__calltree_scratch_put(const mt_calltree *ct, void *p, size_t bytes) {
  mt_calltree *t = (mt_calltree *)ct;
  pthread_mutex_lock(&t->lock);
  if (!t->scratch) {
    t->scratch = p;
    t->scratch_bytes = bytes;
    p = NULL;
  }
  pthread_mutex_unlock(&t->lock);
  free(p);
}
