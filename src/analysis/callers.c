/* A site's main callers and, under a language runtime, the program's own
 * function (memtrace/rank.h, mt_rank_callers).
 *
 * The innermost frame is often an allocator's wrapper (xmalloc, a
 * language runtime's, a library's: Perl_safesysmalloc, _PyObject_Malloc),
 * which says little on its own. So under a site the answer follows the
 * heaviest caller, then that caller's heaviest caller, out to a few
 * levels, with the share of the site's samples that came that way. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "rank_store.h"

#define UNDESCRIBED (UINT64_C(1) << 63) /* a key's flag: a code id, not a function */

/* The functions calling out from a backtrace's site, innermost first, as
 * keys (a function id, or UNDESCRIBED | code id for a code the trace
 * never named): up to `max`, a function repeated next to itself counted
 * once. The site is found as the loader finds it: the innermost location
 * of the last code that has one, past at most two undescribed codes. */
static size_t callers_of(const mt__query *q, const uint32_t *codes, size_t nc, uint64_t *out,
                         size_t max) {
  const mt_analysis *a = q->a;
  size_t n = 0, undescribed = 0;
  uint64_t last = UINT64_MAX; /* the site's function, then the last caller's */
  for (size_t k = nc; k-- > 0 && n < max;) {
    uint32_t code = codes[k];
    size_t nf = a->code_n[code];
    const mt_frame *fr = &a->frames[a->code_first[code]];
    if (last == UINT64_MAX) {
      if (nf == 0) {
        if (++undescribed > 2) return 0;
        continue;
      }
      last = fr[--nf].function;
    } else if (nf == 0) {
      out[n++] = last = UNDESCRIBED | code;
      continue;
    }
    /* a function calling itself, or inlined into a function of its name,
     * shows once */
    for (; nf > 0 && n < max; nf--) {
      uint32_t f = fr[nf - 1].function;
      if (f != last && !mt__query_hidden(q, f)) out[n++] = last = f;
    }
  }
  return n;
}

/* Function names a language runtime gives the code it compiles, in its
 * perf map or jitdump: CPython's "py::", V8's "JS:" and its older kinds. */
static int compiled_by_runtime(const char *name) {
  static const char *const kinds[] = {"py::", "JS:", "LazyCompile:", "Function:", "Script:",
                                      "Eval:"};
  for (size_t i = 0; name && i < sizeof kinds / sizeof *kinds; i++)
    if (strncmp(name, kinds[i], strlen(kinds[i])) == 0) return 1;
  return 0;
}

/* Whether a function so named is the runtime's own, written in the
 * program's language: node's built-in modules ("node:buffer",
 * "node:internal/..."), CPython's frozen import machinery ("<frozen
 * importlib._bootstrap>"). */
static int runtime_library(const char *file) {
  return file && (strncmp(file, "node:", 5) == 0 || strncmp(file, "<frozen ", 8) == 0);
}

/* The innermost function the runtime compiled, past the runtime's library
 * when the stack has another; UINT32_MAX when none. */
static uint32_t program_function(const mt_analysis *a, const uint32_t *codes, size_t nc) {
  uint32_t library = UINT32_MAX;
  for (size_t k = nc; k-- > 0;) {
    size_t nf = a->code_n[codes[k]];
    const mt_frame *fr = &a->frames[a->code_first[codes[k]]];
    for (; nf > 0; nf--) {
      uint32_t f = fr[nf - 1].function;
      if (!compiled_by_runtime(a->fn_name[f])) continue;
      if (!runtime_library(a->fn_file[f])) return f;
      if (library == UINT32_MAX) library = f;
    }
  }
  return library;
}

/* The samples of each backtrace of the shown rows' objects. */
typedef struct way {
  uint32_t bt, row;
  double samples;
  uint64_t key[MT_CALLERS_MAX];
  size_t n;
  uint32_t program; /* program_function, or UINT32_MAX */
} way;

typedef struct pass {
  const mt_analysis *a;
  int by_line;
  mt__u64map row_of;   /* site key -> row */
  mt__u64map way_of;   /* backtrace id -> way */
  way *ways;
  size_t nways, cap;
  int oom;
} pass;

static int visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  pass *p = ctx;
  const mt_analysis *a = p->a;
  uint32_t bt = a->bt[i];
  uint32_t *row = mt__u64map_get(&p->row_of, mt__site_key(a, a->bt_site[bt], p->by_line));
  if (!row) return 0;
  int fresh;
  uint32_t w = mt__u64map_intern(&p->way_of, bt, (uint32_t)p->nways, &fresh);
  if (w == UINT32_MAX || (fresh && mt__reserve((void **)&p->ways, p->nways, &p->cap, sizeof *p->ways)))
    return p->oom = 1;
  if (fresh) p->ways[p->nways++] = (way){bt, *row - 1, 0, {0}, 0, UINT32_MAX};
  p->ways[w].samples += (double)mt__obj_samples(a, i);
  return 0;
}

/* The key with the most samples among a row's ways at a level (those
 * still on the path), the lowest key among equals. */
static int heaviest(const way *ways, const size_t *members, size_t nm, size_t level,
                    int program, mt__u64map *index, double *sums, uint64_t *best, double *best_w) {
  size_t nkeys = 0;
  *best_w = 0;
  *best = UINT64_MAX;
  for (size_t m = 0; m < nm; m++) {
    const way *w = &ways[members[m]];
    uint64_t key;
    if (program) {
      if (w->program == UINT32_MAX) continue;
      key = w->program;
    } else {
      if (w->n <= level) continue;
      key = w->key[level];
    }
    int fresh;
    uint32_t ix = mt__u64map_intern(index, key, (uint32_t)nkeys, &fresh);
    if (ix == UINT32_MAX) return -1;
    if (fresh) sums[nkeys++] = 0;
    double sum = sums[ix] += w->samples;
    if (sum > *best_w || (sum == *best_w && key < *best)) *best = key, *best_w = sum;
  }
  mt__u64map_free(index);
  return 0;
}

static void name_key(const mt_analysis *a, uint64_t key, mt_caller *c) {
  if (key & UNDESCRIBED) {
    c->function = c->file = NULL;
    c->code = a->code_val[(uint32_t)key];
  } else {
    c->function = a->fn_name[(uint32_t)key];
    c->file = a->fn_file[(uint32_t)key];
    c->code = 0;
  }
}

/* A row's callers and program function, from its ways (members). */
static int explain(const mt_analysis *a, way *ways, size_t *members, size_t nm, size_t levels,
                   double *sums, mt_site_callers *out) {
  mt__u64map index = {0};
  double site = 0, w;
  uint64_t best;
  for (size_t m = 0; m < nm; m++) site += ways[members[m]].samples;
  memset(out, 0, sizeof *out);
  if (!(site > 0)) return 0;
  size_t live = nm; /* members[0..live): the ways on the path so far */
  for (size_t level = 0; level < levels; level++) {
    if (heaviest(ways, members, live, level, 0, &index, sums, &best, &w)) return -1;
    if (w <= 0) break;
    size_t kept = 0; /* the ways through `best` move to the front */
    for (size_t m = 0; m < live; m++) {
      const way *x = &ways[members[m]];
      if (x->n > level && x->key[level] == best) {
        size_t t = members[m];
        members[m] = members[kept];
        members[kept++] = t;
      }
    }
    live = kept;
    name_key(a, best, &out->callers[out->ncallers]);
    out->callers[out->ncallers++].share = w / site;
  }
  if (heaviest(ways, members, nm, 0, 1, &index, sums, &best, &w)) return -1;
  if (w > 0) {
    out->program_function = a->fn_name[(uint32_t)best];
    out->program_file = a->fn_file[(uint32_t)best];
    out->program_share = w / site;
  }
  return 0;
}

static int by_row(const void *x, const void *y) {
  const way *a = x, *b = y;
  if (a->row != b->row) return a->row < b->row ? -1 : 1;
  return a->bt < b->bt ? -1 : a->bt > b->bt;
}

int mt_rank_callers(const mt_analysis *a, const mt_filter *f, mt_ranking *r, size_t levels) {
  if (r->by == MT_BY_STACK || !r->store->row_code) return MT_ERR_INVALID;
  if (levels > MT_CALLERS_MAX) levels = MT_CALLERS_MAX;
  pass p = {a, r->by == MT_BY_LINE, {0}, {0}, NULL, 0, 0, 0};
  mt__query q;
  uint32_t *codes = NULL;
  size_t *members = NULL, cap = 0;
  double *sums = NULL;
  int rc = MT_ERR_NOMEM;
  free(r->store->callers);
  r->store->callers = calloc(r->nrows + 1, sizeof *r->store->callers);
  if (!r->store->callers) return rc;
  int qrc = mt__query_init(&q, a, f);
  if (qrc != MT_OK) return qrc;
  for (size_t i = 0; i < r->nrows; i++)
    if (mt__u64map_put(&p.row_of, mt__site_key(a, r->store->row_code[i], p.by_line),
                       (uint32_t)i))
      goto out;
  mt__scan(&q, 0, a->nobj, visit, &p);
  if (p.oom) goto out;
  for (size_t k = 0; k < p.nways; k++) {
    way *w = &p.ways[k];
    size_t n = mt__bt_codes_grow(a, w->bt, &codes, &cap);
    if (n == SIZE_MAX) goto out;
    w->n = callers_of(&q, codes, n, w->key, levels);
    w->program = program_function(a, codes, n);
  }
  if (p.nways) qsort(p.ways, p.nways, sizeof *p.ways, by_row);
  members = malloc((p.nways + 1) * sizeof *members);
  sums = malloc((p.nways + 1) * sizeof *sums);
  if (!members || !sums) goto out;
  for (size_t k = 0, next; k < p.nways; k = next) {
    size_t nm = 0;
    for (next = k; next < p.nways && p.ways[next].row == p.ways[k].row; next++) members[nm++] = next;
    if (explain(a, p.ways, members, nm, levels, sums, &r->store->callers[p.ways[k].row])) goto out;
  }
  for (size_t i = 0; i < r->nrows; i++) r->rows[i].callers = &r->store->callers[i];
  rc = MT_OK;
out:
  mt__query_free(&q);
  mt__u64map_free(&p.row_of);
  mt__u64map_free(&p.way_of);
  free(p.ways);
  free(codes);
  free(members);
  free(sums);
  return rc;
}
