#include "snapshot.h"

#include <stdlib.h>
#include <string.h>

int mt_vdebug(void) {
  /* asked by every connection's thread: the first ones may all read the
   * environment, and store the same answer */
  static int v = -1;
  int got = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (got < 0) {
    const char *e = getenv("MEMTRACE_VIEW_DEBUG");
    got = e && *e && strcmp(e, "0") != 0;
    __atomic_store_n(&v, got, __ATOMIC_RELAXED);
  }
  return got;
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
  s->duration = (double)mt_analysis_duration(a) / 1e6;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->built, NULL);
  pthread_cond_init(&s->answered, NULL);
  return s;
}

mt_vshared *mt_vshared_new(mt_follow *fw) {
  mt_vshared *sh = calloc(1, sizeof *sh);
  pthread_rwlockattr_t at;
  pthread_rwlockattr_init(&at);
  /* a stream of requests must not keep the loader out */
  pthread_rwlockattr_setkind_np(&at, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  if (!sh || pthread_rwlock_init(&sh->rw, &at) != 0) {
    pthread_rwlockattr_destroy(&at);
    free(sh);
    mt_follow_close(fw);
    return NULL;
  }
  pthread_rwlockattr_destroy(&at);
  sh->fw = fw;
  sh->refs = 1;
  return sh;
}

void mt_vshared_ref(mt_vshared *sh) { __atomic_add_fetch(&sh->refs, 1, __ATOMIC_RELAXED); }

void mt_vshared_unref(mt_vshared *sh) {
  if (!sh || __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  mt_calltree_free(sh->tree);
  for (size_t i = 0; i < sh->nretired; i++) mt_calltree_free(sh->retired[i]);
  free(sh->retired);
  mt_follow_close(sh->fw);
  pthread_rwlock_destroy(&sh->rw);
  free(sh);
}

mt_vsnap *mt_vsnap_new_shared(mt_vshared *sh, const char *name, uint64_t generation) {
  mt_vsnap *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  mt_vshared_ref(sh);
  s->shared = sh;
  s->a = mt_follow_analysis(sh->fw);
  s->refs = 1;
  s->generation = generation;
  s->name = name;
  s->nobj = mt_analysis_object_count(s->a);
  s->duration = (double)mt_analysis_duration(s->a) / 1e6;
  s->state = 1; /* the loader keeps the tree */
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->built, NULL);
  pthread_cond_init(&s->answered, NULL);
  return s;
}

const mt_calltree *mt_vsnap_tree(const mt_vsnap *s) {
  return s->shared ? s->shared->tree : s->tree;
}

void mt_vsnap_read_begin(const mt_vsnap *s) {
  if (s->shared) pthread_rwlock_rdlock(&s->shared->rw);
}

void mt_vsnap_read_end(const mt_vsnap *s) {
  if (s->shared) pthread_rwlock_unlock(&s->shared->rw);
}

int mt_vsnap_build(mt_vsnap *s) {
  pthread_mutex_lock(&s->lock);
  int st = s->state;
  pthread_mutex_unlock(&s->lock);
  if (st) return st > 0 ? 0 : -1;
  mt_calltree *t = NULL;
  int rc = mt_calltree_build(s->a, NULL, MT_TREE_MERGE_ADJACENT, 0, &t) == MT_OK ? 0 : -1;
  pthread_mutex_lock(&s->lock);
  s->tree = t;
  s->state = rc ? -1 : 1;
  pthread_cond_broadcast(&s->built);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

void mt_vsnap_index(mt_vsnap *s) {
  (void)mt_analysis_index_stacks(s->a); /* out of memory: answers go without */
}

int mt_vsnap_wait(const mt_vsnap *cs) {
  mt_vsnap *s = (mt_vsnap *)cs; /* the lock and condition only */
  pthread_mutex_lock(&s->lock);
  while (s->state == 0) pthread_cond_wait(&s->built, &s->lock);
  int st = s->state;
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

void mt_vsnap_unref(mt_vsnap *s) {
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->shared) {
    mt_vshared_unref(s->shared);
  } else {
    mt_calltree_free(s->tree);
    mt_analysis_free(s->a);
  }
  mt_rss_free(s->rss);
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
