#include "live.h"

#include <signal.h>

#include "answers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"

/* Prints progress on a terminal; cancels the load once the server stops. */
static int progress(void *ctx, uint64_t done, uint64_t total) {
  static double last;
  mt_vlive *l = ctx;
  if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) return 1;
  double t = mt_monotonic_seconds();
  if (l->tty && total && t - last > 0.1) {
    last = t;
    fprintf(stderr, "\rmemtrace view: loading %5.1f%% of %.1f MB", 100.0 * done / total,
            total / 1e6);
  }
  return 0;
}

/* Makes s (its reference taken) the snapshot served: the trace's, or
 * (preview non-NULL: what the page says of it) a preview of a long trace,
 * refused once the trace's own is served. 0, or -1 for a refused preview
 * (s untouched). */
static int install_as(mt_vlive *l, mt_vsnap *s, const char *preview) {
  pthread_mutex_lock(&l->lock);
  if (preview && __atomic_load_n(&l->complete, __ATOMIC_RELAXED)) {
    pthread_mutex_unlock(&l->lock);
    return -1;
  }
  mt_vsnap *old = l->snap;
  l->snap = s;
  l->state = preview ? "partial" : "ready";
  snprintf(l->message, sizeof l->message, "%s", preview ? preview : "");
  if (!preview) __atomic_store_n(&l->complete, 1, __ATOMIC_RELAXED); /* no preview replaces it */
  pthread_cond_broadcast(&l->changed);
  pthread_mutex_unlock(&l->lock);
  mt_vsnap_unref(old);
  return 0;
}

void mt_vlive_install(mt_vlive *l, mt_vsnap *s) { install_as(l, s, NULL); }

void mt_vlive_set_state(mt_vlive *l, const char *state, const char *msg) {
  pthread_mutex_lock(&l->lock);
  l->state = state;
  snprintf(l->message, sizeof l->message, "%s", msg ? msg : "");
  pthread_mutex_unlock(&l->lock);
}

/* One load into a new snapshot (its tree not built); NULL with *err set
 * on failure. */
void mt_vlive_name(char *buf, size_t size, const char *const *paths, size_t n) {
  if (n > 1) snprintf(buf, size, "%zu traces", n);
  else if (n) snprintf(buf, size, "%s", strrchr(paths[0], '/') ? strrchr(paths[0], '/') + 1 : paths[0]);
  else if (size) buf[0] = 0;
}

/* The base trace(s) of the differential view, once: 0, or -1 with *err. */
static int load_base(mt_vlive *l, char *err, size_t n) {
  if (!l->nbase || l->base) return 0;
  mt_analysis *b;
  if (mt_analysis_load_many(&b, l->base_paths, l->nbase, NULL, NULL) != MT_OK) {
    snprintf(err, n, "--base: %s", b ? mt_analysis_error(b) : "out of memory");
    mt_analysis_free(b);
    return -1;
  }
  if (mt_calltree_build(b, NULL, MT_TREE_MERGE_ADJACENT, 0, &l->base_tree) != MT_OK) {
    snprintf(err, n, "--base: out of memory");
    mt_analysis_free(b);
    return -1;
  }
  l->base = b;
  return 0;
}

/* A load of the trace(s), with fn as its progress (progress, on l: the
 * whole load, printing on a terminal when l->tty). */
static mt_vsnap *load(mt_vlive *l, const char *path, mt_progress_fn fn, void *ctx, char *err,
                      size_t n) {
  mt_analysis *a;
  double t0 = mt_monotonic_seconds();
  if (load_base(l, err, n)) return NULL;
  int rc = l->npaths > 1 ? mt_analysis_load_many(&a, l->paths, l->npaths, fn, ctx)
                         : mt_analysis_load(&a, path, fn, ctx);
  if (mt_vdebug())
    fprintf(stderr, "memtrace view: [debug] load%s %.3f s\n", fn == progress ? "" : " (preview)",
            mt_monotonic_seconds() - t0);
  if (fn == progress && l->tty) fputs("\r\033[K", stderr);
  if (rc != MT_OK) {
    snprintf(err, n, "%s", a ? mt_analysis_error(a) : "out of memory");
    mt_analysis_free(a);
    return NULL;
  }
  pthread_mutex_lock(&l->lock);
  uint64_t gen = ++l->generation;
  pthread_mutex_unlock(&l->lock);
  mt_vsnap *s = mt_vsnap_new(a, l->name, gen);
  if (!s) snprintf(err, n, "%s: out of memory", path);
  if (s) {
    s->base = l->base;
    s->base_tree = l->base_tree;
    s->base_name = l->base_name;
    /* memtrace run's resident-memory record beside the trace (of several
     * traces: beside the first that has one); none is no error */
    for (size_t i = 0; i < (l->npaths > 1 ? l->npaths : 1) && !s->rss; i++)
      mt_rss_load(l->npaths > 1 ? l->paths[i] : path, &s->rss);
  }
  return s;
}

static int build(mt_vsnap *s) {
  double t0 = mt_monotonic_seconds();
  int rc = mt_vsnap_build(s);
  if (mt_vdebug()) fprintf(stderr, "memtrace view: [debug] call tree %.3f s\n", mt_monotonic_seconds() - t0);
  return rc;
}

void mt_vlive_index_stacks(mt_vsnap *s) {
  double t0 = mt_monotonic_seconds();
  mt_vsnap_index(s);
  if (mt_vdebug()) fprintf(stderr, "memtrace view: [debug] stacks indexed %.3f s\n", mt_monotonic_seconds() - t0);
}

/* The page's first view is the unfiltered flame graph: computed here, on
 * the loader's thread, while the page reads info and timeline. */
static void precompute(mt_vsnap *s) { /* MT_VFLAME_KEY begun */
  double t0 = mt_monotonic_seconds();
  mt_vquery q;
  mt_vquery_init(&q);
  mt_json j;
  mt_json_init(&j);
  size_t len;
  char *text = mt_vanswer_flame(s, &q, &j) == 0 ? mt_json_take(&j, &len) : NULL;
  mt_json_free(&j);
  mt_vsnap_cache_end(s, MT_VFLAME_KEY, text, len);
  free(text);
  if (mt_vdebug()) fprintf(stderr, "memtrace view: [debug] flame precomputed %.3f s\n", mt_monotonic_seconds() - t0);
}

int mt_vlive_load_once(mt_vlive *l, const char *path, const char *name) {
  char err[1024];
  l->path = path;
  l->name = name;
  l->tty = isatty(2);
  mt_vsnap *s = load(l, path, progress, l, err, sizeof err);
  if (s && build(s) == 0) mt_vlive_index_stacks(s);
  else if (s) {
    snprintf(err, sizeof err, "%s: out of memory", path);
    mt_vsnap_unref(s);
    s = NULL;
  }
  if (!s) {
    fprintf(stderr, "memtrace view: %s\n", err);
    return -1;
  }
  const char *w = mt_analysis_warning(s->a);
  if (w) fprintf(stderr, "memtrace view: warning: %s\n", w);
  mt_vlive_install(l, s);
  return 0;
}

/* Installs s, the whole trace's snapshot or (preview non-NULL: what the
 * page says of it) a preview of a long trace, and prepares its first
 * answers: info, summary, timeline... are answered from then on, the rest
 * once the call tree is built; the unfiltered flame graph, the page's
 * first view, is computed here meanwhile. Takes the caller's reference to
 * s. 0, or -1 for a preview that came after the whole trace (dropped). */
static int show(mt_vlive *l, mt_vsnap *s, const char *preview) {
  mt_vsnap_ref(s);
  /* the unfiltered flame graph is pending from the start: its requests
   * wait for this thread's answer instead of computing their own */
  char *t;
  size_t tl;
  int claimed = mt_vsnap_cache_begin(s, MT_VFLAME_KEY, &t, &tl) == 0;
  if (install_as(l, s, preview)) { /* the caller's reference and ours */
    if (claimed) mt_vsnap_cache_end(s, MT_VFLAME_KEY, NULL, 0);
    mt_vsnap_unref(s);
    mt_vsnap_unref(s);
    return -1;
  }
  int built = build(s) == 0;
  if (built && claimed && !__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) precompute(s);
  else if (claimed) mt_vsnap_cache_end(s, MT_VFLAME_KEY, NULL, 0);
  if (built && !__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) mt_vlive_index_stacks(s);
  mt_vsnap_unref(s);
  return 0;
}

/* ---- previews of a long trace (docs/viewer.md, "Command lines") ----
 *
 * While the whole trace loads on one core, the other loads ever longer
 * prefixes of it, each shown until the next (or the whole) replaces it:
 * the first bytes (64 MiB: a second or two), then four times as many, as
 * long as that is at most half the trace. Each preview re-reads from the
 * start (the format cannot be read from the middle: its backtraces are
 * coded against what came before), so the previews cost at most as much
 * again as the whole load, on a core that would be idle. */
#define PREVIEW_FIRST ((uint64_t)64 << 20)

typedef struct prefix {
  mt_vlive *l;
  uint64_t limit; /* bytes */
} prefix;

static int prefix_progress(void *ctx, uint64_t done, uint64_t total) {
  prefix *p = ctx;
  (void)total;
  if (__atomic_load_n(&p->l->stop, __ATOMIC_RELAXED) ||
      __atomic_load_n(&p->l->complete, __ATOMIC_RELAXED))
    return 1; /* cancelled: no longer wanted */
  return done >= p->limit ? MT_PROGRESS_END : 0;
}

/* The first preview's bytes: MEMTRACE_VIEW_PREVIEW_BYTES (0: none), else
 * PREVIEW_FIRST. */
static uint64_t preview_first(void) {
  const char *e = getenv("MEMTRACE_VIEW_PREVIEW_BYTES");
  return e && *e ? strtoull(e, NULL, 10) : PREVIEW_FIRST;
}

static uint64_t input_bytes(const mt_vlive *l) {
  uint64_t total = 0;
  for (size_t i = 0; i < (l->npaths > 1 ? l->npaths : 1); i++) {
    struct stat st;
    if (stat(l->npaths > 1 ? l->paths[i] : l->path, &st) == 0 && S_ISREG(st.st_mode))
      total += (uint64_t)st.st_size;
  }
  return total;
}

static void *previews(void *arg) {
  mt_vlive *l = arg;
  uint64_t total = input_bytes(l);
  for (uint64_t limit = preview_first(); limit && limit <= total / 2; limit *= 4) {
    prefix p = {l, limit};
    char err[1024], msg[200];
    mt_vsnap *s = load(l, l->path, prefix_progress, &p, err, sizeof err);
    if (!s) break; /* cancelled, or the whole load will say why */
    snprintf(msg, sizeof msg,
             "showing the first %.0f%% of the trace (%.1f s) while the rest loads",
             100.0 * (double)limit / (double)total, s->duration);
    if (show(l, s, msg)) break;
  }
  return NULL;
}

static void *load_bg(void *arg) {
  mt_vlive *l = arg;
  char err[1024];
  /* tests: a slow load, to see the server answer while loading */
  const char *delay = getenv("MEMTRACE_VIEW_TEST_DELAY");
  if (delay) usleep((useconds_t)(atof(delay) * 1e6));
  mt_vsnap *s = load(l, l->path, progress, l, err, sizeof err);
  if (!s && __atomic_load_n(&l->stop, __ATOMIC_RELAXED)) return NULL; /* cancelled */
  if (!s) {
    fprintf(stderr, "memtrace view: %s\n", err);
    pthread_mutex_lock(&l->lock);
    l->failed = 1;
    l->state = "error";
    snprintf(l->message, sizeof l->message, "%s", err);
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
    pthread_kill(l->main_thread, SIGTERM);
    return NULL;
  }
  const char *w = mt_analysis_warning(s->a);
  if (w) fprintf(stderr, "memtrace view: warning: %s\n", w);
  show(l, s, NULL);
  return NULL;
}

int mt_vlive_load_bg(mt_vlive *l, const char *path, const char *name) {
  l->path = path;
  l->name = name;
  l->main_thread = pthread_self();
  l->state = "loading";
  l->tty = isatty(2);
  l->running = 1;
  if (pthread_create(&l->thread, NULL, load_bg, l) != 0) return l->running = 0, -1;
  /* a differential view loads its base once, on the whole load's thread */
  uint64_t first = preview_first();
  l->previewing = !l->nbase && first && input_bytes(l) >= 4 * first &&
                  pthread_create(&l->preview_thread, NULL, previews, l) == 0;
  return 0;
}

void mt_vlive_stop(mt_vlive *l) {
  pthread_mutex_lock(&l->lock);
  __atomic_store_n(&l->stop, 1, __ATOMIC_RELAXED);
  pthread_cond_broadcast(&l->changed);
  pthread_mutex_unlock(&l->lock);
  if (l->running) pthread_join(l->thread, NULL);
  if (l->previewing) pthread_join(l->preview_thread, NULL);
  l->running = l->previewing = 0;
  mt_vsnap_unref(l->snap);
  l->snap = NULL;
  mt_calltree_free(l->base_tree);
  mt_analysis_free(l->base);
  l->base_tree = NULL;
  l->base = NULL;
}

mt_vsnap *mt_vlive_get(mt_vlive *l) {
  pthread_mutex_lock(&l->lock);
  while (!l->live && l->running && !l->snap && !l->failed && !l->stop)
    pthread_cond_wait(&l->changed, &l->lock);
  mt_vsnap *s = l->snap;
  if (s) mt_vsnap_ref(s);
  pthread_mutex_unlock(&l->lock);
  return s;
}
