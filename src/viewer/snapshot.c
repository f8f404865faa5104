#include "snapshot.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int mt_vdebug(void) {
  static int v = -1;
  if (v < 0) {
    const char *e = getenv("MEMTRACE_VIEW_DEBUG");
    v = e && *e && strcmp(e, "0") != 0;
  }
  return v;
}

double mt_vnow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}


typedef struct build {
  mt_vsnap *s;
  size_t cap;
  /* children as lists (first child, next sibling), most recent first: the
   * node looked up is nearly always a recent one, so this beats a hash
   * table whose every probe misses the cache */
  uint32_t *first, *next;
  /* the previous backtrace, and the fnode path after each of its codes */
  uint32_t *prev;
  size_t prev_n, prev_cap;
  uint32_t *at_code;    /* fnode after code k */
  uint32_t *depth_code; /* path length after code k */
  uint32_t *path;       /* fnodes of the current path (root excluded) */
  size_t path_n, path_cap;
  uint32_t *on_path; /* per function: occurrences on the current path */
  /* (fnode, code) -> fnode after the code, for codes that add at most one
   * node: a direct-mapped cache that spares the children lists' walks when
   * a program's few thousand stacks recur in a random order */
  struct memo {
    uint32_t from, code, to;
  } *memo;
  uint32_t *leaf; /* per distinct backtrace: its fnode */
  int oom;
} build;

#define MEMO_BITS 18

static int grow_nodes(build *b) {
  size_t nc = b->cap * 2;
  mt_vsnap *s = b->s;
  uint32_t *p = realloc(s->fparent, nc * sizeof *p);
  if (p) s->fparent = p;
  uint32_t *f = realloc(s->ffn, nc * sizeof *f);
  if (f) s->ffn = f;
  uint32_t *l = realloc(s->fline, nc * sizeof *l);
  if (l) s->fline = l;
  uint8_t *o = realloc(s->fouter, nc);
  if (o) s->fouter = o;
  uint32_t *fc = realloc(b->first, nc * sizeof *fc);
  if (fc) b->first = fc;
  uint32_t *nx = realloc(b->next, nc * sizeof *nx);
  if (nx) b->next = nx;
  if (!p || !f || !l || !o || !fc || !nx) return -1;
  b->cap = nc;
  return 0;
}

/* The child of `parent` for function fn (a new node if need be). */
static uint32_t child(build *b, uint32_t parent, uint32_t fn, uint32_t line) {
  mt_vsnap *s = b->s;
  uint32_t prev = UINT32_MAX;
  for (uint32_t c = b->first[parent]; c; prev = c, c = b->next[c]) {
    if (s->ffn[c] != fn) continue;
    if (prev != UINT32_MAX) { /* to the front of the list */
      b->next[prev] = b->next[c];
      b->next[c] = b->first[parent];
      b->first[parent] = c;
    }
    return c;
  }
  if (s->nf == b->cap && grow_nodes(b)) return UINT32_MAX;
  uint32_t id = (uint32_t)s->nf++;
  s->fparent[id] = parent;
  s->ffn[id] = fn;
  s->fline[id] = line;
  s->fouter[id] = b->on_path[fn] == 0;
  b->first[id] = 0;
  b->next[id] = b->first[parent];
  b->first[parent] = id;
  return id;
}

static int push(build *b, uint32_t node) {
  if (b->path_n == b->path_cap) {
    size_t nc = b->path_cap ? b->path_cap * 2 : 256;
    uint32_t *p = realloc(b->path, nc * sizeof *p);
    if (!p) return -1;
    b->path = p;
    b->path_cap = nc;
  }
  b->path[b->path_n++] = node;
  b->on_path[b->s->ffn[node]]++;
  return 0;
}

static int each(void *ctx, size_t bt, const uint32_t *codes, size_t n) {
  build *b = ctx;
  mt_vsnap *s = b->s;
  if (n > b->prev_cap) {
    size_t nc = n * 2;
    uint32_t *p = realloc(b->prev, nc * sizeof *p);
    if (p) b->prev = p;
    uint32_t *a = realloc(b->at_code, nc * sizeof *a);
    if (a) b->at_code = a;
    uint32_t *d = realloc(b->depth_code, nc * sizeof *d);
    if (d) b->depth_code = d;
    if (!p || !a || !d) return b->oom = 1;
    b->prev_cap = nc;
  }
  /* Consecutive backtraces share long prefixes: only the fresh codes are
   * expanded and interned. */
  size_t c = 0;
  while (c < n && c < b->prev_n && codes[c] == b->prev[c]) c++;
  uint32_t cur = c ? b->at_code[c - 1] : 0;
  size_t depth = c ? b->depth_code[c - 1] : 0;
  while (b->path_n > depth) b->on_path[s->ffn[b->path[--b->path_n]]]--;
  for (size_t k = c; k < n; k++) {
    struct memo *m = &b->memo[((uint64_t)cur * 0x9E3779B97F4A7C15u ^ codes[k] * 0xC2B2AE3D27D4EB4Fu) >>
                              (64 - MEMO_BITS)];
    if (m->from == cur && m->code == codes[k] && m->to != UINT32_MAX) {
      if (m->to != cur) {
        cur = m->to;
        if (push(b, cur)) return b->oom = 1;
      }
      b->prev[k] = codes[k];
      b->at_code[k] = cur;
      b->depth_code[k] = (uint32_t)b->path_n;
      continue;
    }
    uint32_t from = cur;
    size_t before = b->path_n;
    size_t nfr;
    /* codes the trace never described are left out, as memtrace's own
     * flame graphs do */
    const mt_frame *fr = mt_analysis_code_frames(s->a, codes[k], &nfr);
    for (size_t i = 0; i < nfr; i++) {
      if (cur != 0 && s->ffn[cur] == fr[i].function) continue; /* merged */
      cur = child(b, cur, fr[i].function, fr[i].line);
      if (cur == UINT32_MAX || push(b, cur)) return b->oom = 1;
    }
    if (b->path_n - before <= 1) *m = (struct memo){from, codes[k], cur};
    b->prev[k] = codes[k];
    b->at_code[k] = cur;
    b->depth_code[k] = (uint32_t)b->path_n;
  }
  b->prev_n = n;
  b->leaf[bt] = cur;
  return 0;
}

mt_vsnap *mt_vsnap_new(mt_analysis *a, const char *name, uint64_t generation) {
  mt_vsnap *s = calloc(1, sizeof *s);
  if (!s) {
    mt_analysis_free(a);
    return NULL;
  }
  s->a = a;
  s->refs = 1;
  s->generation = generation;
  s->name = name;
  s->nobj = mt_analysis_object_count(a);
  s->nfn = mt_analysis_function_count(a);
  s->duration = (double)mt_analysis_duration(a) / 1e6;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->built, NULL);
  pthread_cond_init(&s->answered, NULL);
  s->samples = malloc((s->nobj + 1) * sizeof *s->samples);
  if (!s->samples) {
    mt_analysis_free(a);
    free(s);
    return NULL;
  }
  for (size_t i = 0; i < s->nobj; i++) {
    mt_tally t = {0};
    mt_tally_object(a, i, &t);
    mt_tally_add(&s->all, &t);
    s->samples[i] = t.samples < UINT32_MAX ? (uint32_t)t.samples : UINT32_MAX;
  }
  return s;
}

static int build_tree(mt_vsnap *s) {
  build b = {0};
  s->leaf = calloc(s->nobj + 1, sizeof *s->leaf);
  b.s = s;
  b.cap = 1024;
  s->fparent = malloc(b.cap * sizeof *s->fparent);
  s->ffn = malloc(b.cap * sizeof *s->ffn);
  s->fline = malloc(b.cap * sizeof *s->fline);
  s->fouter = malloc(b.cap);
  b.on_path = calloc(s->nfn + 1, sizeof *b.on_path);
  b.first = malloc(b.cap * sizeof *b.first);
  b.next = malloc(b.cap * sizeof *b.next);
  b.memo = malloc(sizeof *b.memo << MEMO_BITS);
  if (b.memo) memset(b.memo, 0xff, sizeof *b.memo << MEMO_BITS);
  int rc = -1;
  if (!s->leaf || !s->fparent || !s->ffn || !s->fline || !s->fouter || !b.on_path || !b.first ||
      !b.next || !b.memo)
    goto done;
  b.first[0] = 0;
  s->fparent[0] = 0;
  s->ffn[0] = UINT32_MAX;
  s->fline[0] = 0;
  s->fouter[0] = 0;
  s->nf = 1;
  /* Once per distinct backtrace (a program's few thousand stacks, not its
   * millions of objects), then each object takes its backtrace's node. */
  size_t nbt = mt_analysis_backtrace_count(s->a);
  b.leaf = malloc((nbt + 1) * sizeof *b.leaf);
  if (!b.leaf) goto done;
  if (mt_analysis_each_distinct_backtrace(s->a, each, &b) != MT_OK || b.oom) goto done;
  for (size_t i = 0; i < s->nobj; i++)
    s->leaf[i] = b.leaf[mt_analysis_object_backtrace_id(s->a, i)];
  /* the children lists stay: the flame graph descends the tree */
  s->ffirst = b.first;
  s->fnext = b.next;
  b.first = b.next = NULL;
  rc = 0;
done:
  free(b.leaf);
  free(b.memo);
  free(b.first);
  free(b.next);
  free(b.prev);
  free(b.at_code);
  free(b.depth_code);
  free(b.path);
  free(b.on_path);
  return rc;
}

int mt_vsnap_build(mt_vsnap *s) {
  pthread_mutex_lock(&s->lock);
  int st = s->tree;
  pthread_mutex_unlock(&s->lock);
  if (st) return st > 0 ? 0 : -1;
  int rc = build_tree(s);
  pthread_mutex_lock(&s->lock);
  s->tree = rc ? -1 : 1;
  pthread_cond_broadcast(&s->built);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int mt_vsnap_wait(const mt_vsnap *cs) {
  mt_vsnap *s = (mt_vsnap *)cs; /* the lock and condition only */
  pthread_mutex_lock(&s->lock);
  while (s->tree == 0) pthread_cond_wait(&s->built, &s->lock);
  int st = s->tree;
  pthread_mutex_unlock(&s->lock);
  return st > 0 ? 0 : -1;
}

/* ---- the answer cache ---- */

#define CACHE_ENTRIES 16
#define CACHE_BYTES (64u << 20)

typedef struct mt_vcache_entry {
  struct mt_vcache_entry *next;
  char *key, *text; /* text NULL: being computed */
  size_t len;
} mt_vcache_entry;

static void entry_free(mt_vcache_entry *e) {
  free(e->key);
  free(e->text);
  free(e);
}

static mt_vcache_entry **find(mt_vsnap *s, const char *key) {
  mt_vcache_entry **p = &s->cache;
  while (*p && strcmp((*p)->key, key) != 0) p = &(*p)->next;
  return p;
}

int mt_vsnap_cache_begin(const mt_vsnap *cs, const char *key, char **text, size_t *len) {
  mt_vsnap *s = (mt_vsnap *)cs; /* the cache is the mutable part */
  pthread_mutex_lock(&s->lock);
  mt_vcache_entry **p;
  while (*(p = find(s, key)) && !(*p)->text) pthread_cond_wait(&s->answered, &s->lock);
  mt_vcache_entry *e = *p;
  int rc;
  if (e) { /* a hit: a copy, and the entry becomes the most recent */
    *text = malloc(e->len + 1);
    rc = *text ? 1 : -1;
    if (*text) {
      memcpy(*text, e->text, e->len + 1);
      *len = e->len;
    }
    *p = e->next;
    e->next = s->cache;
    s->cache = e;
  } else if ((e = calloc(1, sizeof *e)) && (e->key = strdup(key))) {
    e->next = s->cache; /* pending */
    s->cache = e;
    rc = 0;
  } else {
    free(e);
    rc = -1;
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

void mt_vsnap_cache_end(const mt_vsnap *cs, const char *key, const char *text, size_t len) {
  mt_vsnap *s = (mt_vsnap *)cs;
  char *copy = text && len <= CACHE_BYTES / 4 ? malloc(len + 1) : NULL;
  if (copy) {
    memcpy(copy, text, len);
    copy[len] = 0;
  }
  pthread_mutex_lock(&s->lock);
  mt_vcache_entry **p = find(s, key), *e = *p;
  if (e && !e->text) {
    if (copy) {
      e->text = copy;
      e->len = len;
      copy = NULL;
    } else { /* no answer: the waiters compute it themselves */
      *p = e->next;
      entry_free(e);
    }
  }
  /* drop the least recently used answers past the limits (pending ones
   * stay: their computers will settle them) */
  size_t n = 0, bytes = 0;
  for (p = &s->cache; *p;) {
    e = *p;
    if (e->text && (++n > CACHE_ENTRIES || (bytes += e->len) > CACHE_BYTES)) {
      *p = e->next;
      entry_free(e);
    } else {
      p = &e->next;
    }
  }
  pthread_cond_broadcast(&s->answered);
  pthread_mutex_unlock(&s->lock);
  free(copy);
}

void mt_vsnap_ref(mt_vsnap *s) { __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED); }

void *mt_vsnap_scratch_get(const mt_vsnap *cs) {
  mt_vsnap *s = (mt_vsnap *)cs; /* the lock and the scratch slot only */
  pthread_mutex_lock(&s->lock);
  void *p = s->scratch;
  s->scratch = NULL;
  pthread_mutex_unlock(&s->lock);
  return p ? p : malloc((s->nf + 1) * MT_VSNAP_SCRATCH_PER_NODE);
}

void mt_vsnap_scratch_put(const mt_vsnap *cs, void *p) {
  mt_vsnap *s = (mt_vsnap *)cs;
  pthread_mutex_lock(&s->lock);
  if (!s->scratch) {
    s->scratch = p;
    p = NULL;
  }
  pthread_mutex_unlock(&s->lock);
  free(p);
}

void mt_vsnap_unref(mt_vsnap *s) {
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  mt_analysis_free(s->a);
  free(s->leaf);
  free(s->fparent);
  free(s->ffn);
  free(s->fline);
  free(s->fouter);
  free(s->ffirst);
  free(s->fnext);
  free(s->samples);
  free(s->scratch);
  while (s->cache) {
    mt_vcache_entry *e = s->cache;
    s->cache = e->next;
    entry_free(e);
  }
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->built);
  pthread_cond_destroy(&s->answered);
  free(s);
}

const char *mt_vsnap_fn_name(const mt_vsnap *s, uint32_t fn) {
  return fn < s->nfn ? mt_analysis_function_name(s->a, fn) : "(unknown)";
}

const char *mt_vsnap_fn_file(const mt_vsnap *s, uint32_t fn) {
  return fn < s->nfn ? mt_analysis_function_file(s->a, fn) : "";
}
