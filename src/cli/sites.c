#include "sites.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tables.h"

/* ---- stacks ------------------------------------------------------------------ */

int emit_trie_init(emit_trie *t) {
  memset(t, 0, sizeof *t);
  t->cap = 1024;
  t->parent = malloc(t->cap * sizeof *t->parent);
  t->code = malloc(t->cap * sizeof *t->code);
  if (!t->parent || !t->code) {
    emit_trie_free(t);
    return -1;
  }
  t->parent[0] = t->code[0] = 0;
  t->n = 1;
  return 0;
}

static int trie_child(emit_trie *t, uint32_t parent, uint32_t code, uint32_t *out) {
  uint64_t key = (uint64_t)parent << 32 | code;
  uint32_t *ix = mt__u64map_get(&t->index, key);
  if (ix) {
    *out = *ix - 1;
    return 0;
  }
  if (t->n >= UINT32_MAX - 1) return -1;
  if (t->n == t->cap) {
    size_t cap = t->cap * 2;
    uint32_t *p = realloc(t->parent, cap * sizeof *p);
    if (!p) return -1;
    t->parent = p;
    uint32_t *c = realloc(t->code, cap * sizeof *c);
    if (!c) return -1;
    t->code = c;
    t->cap = cap;
  }
  t->parent[t->n] = parent;
  t->code[t->n] = code;
  if (mt__u64map_put(&t->index, key, (uint32_t)t->n)) return -1;
  *out = (uint32_t)t->n++;
  return 0;
}

int emit_trie_add(emit_trie *t, const uint32_t *codes, size_t n, uint32_t *node) {
  /* consecutive backtraces share prefixes: start after the shared part */
  size_t k = 0;
  while (k < n && k < t->last_n && codes[k] == t->last_codes[k]) k++;
  if (n > t->last_cap) {
    size_t cap = n * 2;
    uint32_t *l = realloc(t->last, cap * sizeof *l);
    if (!l) return -1;
    t->last = l;
    uint32_t *c = realloc(t->last_codes, cap * sizeof *c);
    if (!c) return -1;
    t->last_codes = c;
    t->last_cap = cap;
  }
  uint32_t at = k ? t->last[k - 1] : 0;
  for (size_t i = k; i < n; i++) {
    if (trie_child(t, at, codes[i], &at)) {
      t->last_n = 0; /* the saved path is incomplete */
      return -1;
    }
    t->last[i] = at;
    t->last_codes[i] = codes[i];
  }
  t->last_n = n;
  *node = at;
  return 0;
}

void emit_trie_done(emit_trie *t) {
  free(t->last);
  free(t->last_codes);
  mt__u64map_free(&t->index);
  t->last = t->last_codes = NULL;
  t->last_n = t->last_cap = 0;
}

void emit_trie_free(emit_trie *t) {
  free(t->parent);
  free(t->code);
  free(t->last);
  free(t->last_codes);
  mt__u64map_free(&t->index);
  memset(t, 0, sizeof *t);
}

static inline uint32_t st_parent(const emit_stacks *st, uint32_t s) {
  return st->trie ? st->trie->parent[s] : mt_analysis_stack_parent(st->a, s);
}
static inline uint32_t st_code(const emit_stacks *st, uint32_t s) {
  return st->trie ? st->trie->code[s] : mt_analysis_stack_code(st->a, s);
}

/* Walks a stack's printed frames innermost first without storing them. */
typedef struct frame_iter {
  const emit_stacks *st;
  uint32_t stack;         /* the next stack node to expand */
  const mt_frame *frames; /* the current code's locations (outermost first) */
  size_t left;            /* of them, still to give (from the end) */
  /* or, with st NULL, a backtrace as code ids: codes[0..ncodes) are still
   * to expand, from the end */
  const mt_analysis *a;
  const uint32_t *codes;
  size_t ncodes;
} frame_iter;

static int iter_next(frame_iter *it, emit_frame *out) {
  const mt_analysis *a = it->st ? it->st->a : it->a;
  for (;;) {
    if (it->left) {
      const mt_frame *f = &it->frames[--it->left];
      out->function = mt_analysis_function_name(a, f->function);
      out->file = mt_analysis_function_file(a, f->function);
      out->line = f->line;
      out->code = 0;
      return 1;
    }
    uint32_t c;
    if (!it->st) {
      if (it->ncodes == 0) return 0;
      c = it->codes[--it->ncodes];
    } else {
      if (it->stack == 0) return 0;
      c = st_code(it->st, it->stack);
      it->stack = st_parent(it->st, it->stack);
    }
    size_t n;
    it->frames = mt_analysis_code_frames(a, c, &n);
    it->left = n;
    if (n == 0) {
      out->function = out->file = NULL;
      out->line = 0;
      out->code = mt_analysis_code_value(a, c);
      return 1;
    }
  }
}

static size_t iter_frames(frame_iter it, size_t max, emit_frame **buf, size_t *cap) {
  emit_frame f;
  size_t n = 0;
  while (iter_next(&it, &f)) {
    if (max == 0 || n < max) {
      if (n == *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *buf = realloc(*buf, *cap * sizeof **buf);
        if (!*buf) {
          fprintf(stderr, "memtrace: out of memory\n");
          exit(1);
        }
      }
      (*buf)[n] = f;
    }
    n++;
  }
  return n;
}

size_t emit_stack_frames(const emit_stacks *st, uint32_t stack, size_t max, emit_frame **buf,
                         size_t *cap) {
  frame_iter it = {st, stack, NULL, 0, NULL, NULL, 0};
  return iter_frames(it, max, buf, cap);
}

size_t emit_codes_frames(const mt_analysis *a, const uint32_t *codes, size_t n, size_t max,
                         emit_frame **buf, size_t *cap) {
  frame_iter it = {NULL, 0, NULL, 0, a, codes, n};
  return iter_frames(it, max, buf, cap);
}

void emit_frame_text(emit_str *b, const emit_frame *f) {
  if (f->function) emit_str_printf(b, "%s (%s:%" PRIu32 ")", f->function, f->file, f->line);
  else emit_str_printf(b, "#%" PRIx64, f->code);
}

void emit_json_frame(mt_out *o, const emit_frame *f) {
  if (!f->function) {
    char hex[24];
    snprintf(hex, sizeof hex, "%" PRIx64, f->code);
    mt_out_str(o, "{\"code\": ");
    emit_json_str(o, hex);
    mt_out_char(o, '}');
    return;
  }
  mt_out_str(o, "{\"function\": ");
  emit_json_str(o, f->function);
  mt_out_str(o, ", \"file\": ");
  emit_json_str(o, f->file);
  mt_out_printf(o, ", \"line\": %" PRIu32 "}", f->line);
}

static int frame_cmp(const emit_frame *x, const emit_frame *y) {
  if (!x->function || !y->function) {
    if (x->function) return -1;
    if (y->function) return 1;
    return x->code < y->code ? -1 : x->code > y->code;
  }
  int c = strcmp(x->function, y->function);
  if (!c) c = strcmp(x->file, y->file);
  if (!c) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

static int iter_cmp(frame_iter ix, frame_iter iy) {
  for (;;) {
    emit_frame fx, fy;
    int hx = iter_next(&ix, &fx), hy = iter_next(&iy, &fy);
    if (!hx || !hy) return hx - hy;
    int c = frame_cmp(&fx, &fy);
    if (c) return c;
  }
}

int emit_stack_cmp(const emit_stacks *st, uint32_t x, uint32_t y) {
  frame_iter ix = {st, x, NULL, 0, NULL, NULL, 0}, iy = {st, y, NULL, 0, NULL, NULL, 0};
  return iter_cmp(ix, iy);
}

int emit_codes_cmp(const mt_analysis *a, const uint32_t *x, size_t nx, const uint32_t *y,
                   size_t ny) {
  frame_iter ix = {NULL, 0, NULL, 0, a, x, nx}, iy = {NULL, 0, NULL, 0, a, y, ny};
  return iter_cmp(ix, iy);
}

/* ---- sites ------------------------------------------------------------------ */

emit_site emit_stack_site(const mt_analysis *a, uint32_t stack) {
  emit_site s = {EMIT_SITE_NONE, 0, 0, 0};
  mt_frame f;
  if (stack == 0) return s;
  if (mt_analysis_stack_site(a, stack, &f) == 0) {
    s.kind = EMIT_SITE_LOCATION;
    s.function = f.function;
    s.line = f.line;
  } else {
    s.kind = EMIT_SITE_CODE;
    s.code = mt_analysis_code_value(a, mt_analysis_stack_code(a, stack));
  }
  return s;
}

void emit_site_text(emit_str *b, const mt_analysis *a, const emit_site *s, int with_line) {
  if (s->kind == EMIT_SITE_NONE) emit_str_printf(b, "(no backtrace)");
  else if (s->kind == EMIT_SITE_CODE) emit_str_printf(b, "#%" PRIx64, s->code);
  else if (with_line)
    emit_str_printf(b, "%s (%s:%" PRIu32 ")", mt_analysis_function_name(a, s->function),
                    mt_analysis_function_file(a, s->function), s->line);
  else
    emit_str_printf(b, "%s (%s)", mt_analysis_function_name(a, s->function),
                    mt_analysis_function_file(a, s->function));
}

emit_site emit_code_site(const mt_analysis *a, uint32_t code) {
  emit_site s = {EMIT_SITE_NONE, 0, 0, 0};
  if (code >= mt_analysis_code_count(a)) return s;
  size_t n;
  const mt_frame *fr = mt_analysis_code_frames(a, code, &n);
  if (n) {
    s.kind = EMIT_SITE_LOCATION;
    s.function = fr[n - 1].function;
    s.line = fr[n - 1].line;
  } else {
    s.kind = EMIT_SITE_CODE;
    s.code = mt_analysis_code_value(a, code);
  }
  return s;
}

/* ---- stack conditions without the stack tree --------------------------------- */

static int code_has(const mt_analysis *a, uint32_t c, const char *needle) {
  size_t n;
  const mt_frame *fr = mt_analysis_code_frames(a, c, &n);
  for (size_t i = 0; i < n; i++)
    if (strstr(mt_analysis_function_name(a, fr[i].function), needle)) return 1;
  return 0;
}

int emit_stack_cond_init(const mt_analysis *a, const mt_filter *f, mt_filter *rest,
                         emit_stack_cond *c) {
  *rest = *f;
  rest->inside = rest->not_inside = NULL;
  memset(c, 0, sizeof *c);
  c->in = f->inside && f->inside[0];
  c->out = f->not_inside && f->not_inside[0];
  if (!c->in && !c->out) return 0;
  size_t ncodes = mt_analysis_code_count(a);
  c->code_bits = calloc(ncodes + 1, 1);
  if (!c->code_bits) return -1;
  for (size_t k = 0; k < ncodes; k++)
    c->code_bits[k] = (uint8_t)((c->in && code_has(a, (uint32_t)k, f->inside)) |
                                (c->out && code_has(a, (uint32_t)k, f->not_inside)) << 1);
  return 0;
}

int emit_stack_cond_pass(const emit_stack_cond *c, const uint32_t *codes, size_t n) {
  if (!c->in && !c->out) return 1;
  unsigned has = 0;
  for (size_t i = 0; i < n; i++) has |= c->code_bits[codes[i]];
  return (!c->in || (has & 1)) && (!c->out || !(has & 2));
}

void emit_stack_cond_free(emit_stack_cond *c) {
  free(c->code_bits);
  memset(c, 0, sizeof *c);
}

typedef struct site_pass {
  const mt_analysis *a;
  const emit_stack_cond *cond;
  mt_tally *per_code;
  size_t ncodes;
} site_pass;

static int tally_site(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  site_pass *p = ctx;
  if (!emit_stack_cond_pass(p->cond, codes, n)) return 0;
  uint32_t c = mt_analysis_object_site(p->a, i);
  mt_tally_object(p->a, i, &p->per_code[c == MT_NO_CODE ? p->ncodes : c]);
  return 0;
}

int emit_tally_sites(const mt_analysis *a, const mt_filter *f, mt_tally *per_code,
                     mt_tally *total) {
  mt_filter rest;
  emit_stack_cond cond;
  if (emit_stack_cond_init(a, f, &rest, &cond)) return MT_ERR_NOMEM;
  if (!cond.in && !cond.out) return mt_analysis_tally_sites(a, f, per_code, total);
  size_t ncodes = mt_analysis_code_count(a);
  memset(per_code, 0, (ncodes + 1) * sizeof *per_code);
  site_pass p = {a, &cond, per_code, ncodes};
  int rc = mt_analysis_each_backtrace(a, &rest, tally_site, &p);
  emit_stack_cond_free(&cond);
  if (rc != MT_OK) return rc;
  if (total) {
    mt_tally sum = {0};
    for (size_t c = 0; c <= ncodes; c++) mt_tally_add(&sum, &per_code[c]);
    *total = sum;
  }
  return MT_OK;
}

/* The grouping key of the site of code id `code`: locations by function
 * (and line), undescribed codes by id, the empty backtrace alone. Function
 * ids are far below 2^31, so the top bit separates locations from codes. */
static uint64_t site_key(const emit_site *s, int by, uint32_t code) {
  if (s->kind == EMIT_SITE_NONE) return UINT64_MAX;
  if (s->kind == EMIT_SITE_CODE) return 1ull << 63 | code;
  return (uint64_t)s->function << 32 | (by == EMIT_BY_LINE ? s->line : 0);
}

/* For --by stack: merges the stacks that print alike. Stacks are distinct
 * code paths, but distinct paths can print the same frames: two codes whose
 * locations have the same functions and lines (columns are not printed),
 * or a code with inlined locations against the same locations as separate
 * codes. Neither can happen when no code has a twin and none has several
 * locations; then nothing is done. Otherwise every stack gets a hash of its
 * printed frames (from its parent's: parents have smaller ids), the stacks
 * with objects are radix-sorted by hash (millions of them: a comparison
 * sort costs seconds), and within a run of equal hashes the stacks that
 * really print alike are merged into the smallest: its per_stack entry
 * receives their tallies, and g->canon maps them to it. */
typedef struct hashed {
  uint64_t hash;
  uint32_t stack;
} hashed;

/* Stable LSD radix sort by hash, 16 bits a pass; tmp has n entries. */
static void radix_sort(hashed *v, hashed *tmp, size_t n) {
  static size_t count[1 << 16];
  for (int shift = 0; shift < 64; shift += 16) {
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) count[(v[i].hash >> shift) & 0xffff]++;
    size_t sum = 0;
    for (size_t d = 0; d < 1 << 16; d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) tmp[count[(v[i].hash >> shift) & 0xffff]++] = v[i];
    hashed *t = v;
    v = tmp;
    tmp = t;
  }
  /* four passes: the sorted data is back in the caller's array */
}

/* Whether some code has a twin (another code with the same functions and
 * lines) or several locations. */
static int may_print_alike(const mt_analysis *a, int *result) {
  size_t ncodes = mt_analysis_code_count(a);
  mt__strtab keys = {0};
  mt__u64map seen = {0};
  char *text = NULL;
  size_t text_cap = 0;
  int rc = -1;
  *result = 0;
  for (size_t c = 0; c < ncodes && !*result; c++) {
    size_t n;
    const mt_frame *fr = mt_analysis_code_frames(a, (uint32_t)c, &n);
    if (n == 0) continue;
    if (n > 1) {
      *result = 1;
      break;
    }
    size_t need = 24, len;
    if (need > text_cap) {
      char *t = realloc(text, need);
      if (!t) goto out;
      text = t;
      text_cap = need;
    }
    len = (size_t)snprintf(text, text_cap, "%" PRIu32 ":%" PRIu32, fr[0].function, fr[0].line);
    const char *k = mt__strtab_intern(&keys, text, len);
    if (!k) goto out;
    if (mt__u64map_get(&seen, (uint64_t)(uintptr_t)k)) *result = 1;
    else if (mt__u64map_put(&seen, (uint64_t)(uintptr_t)k, 0)) goto out;
  }
  rc = 0;
out:
  free(text);
  mt__strtab_free(&keys);
  mt__u64map_free(&seen);
  return rc;
}

static int merge_printed_alike(const emit_stacks *st, size_t nstacks, mt_tally *per_stack,
                               emit_groups *g) {
  const mt_analysis *a = st->a;
  size_t ncand = 0;
  int maybe;
  if (nstacks < 2) return 0;
  if (may_print_alike(a, &maybe)) return -1;
  if (!maybe) return 0;
  uint64_t *h = malloc(nstacks * sizeof *h);
  hashed *cand = NULL, *tmp = NULL;
  int rc = -1;
  if (!h) goto out;
  h[0] = 0x5bd1e995;
  for (size_t s = 1; s < nstacks; s++) {
    /* over the printed frames: function and line of each location, or the
     * value of an undescribed code */
    uint32_t c = st_code(st, (uint32_t)s);
    uint64_t x = h[st_parent(st, (uint32_t)s)];
    size_t n;
    const mt_frame *fr = mt_analysis_code_frames(a, c, &n);
    if (n == 0) x = mt__hash64(x * 0x100000001b3ull + (mt_analysis_code_value(a, c) ^ 0xc0de));
    for (size_t i = 0; i < n; i++)
      x = mt__hash64(x * 0x100000001b3ull + ((uint64_t)fr[i].function << 32 | fr[i].line));
    h[s] = x;
    ncand += per_stack[s].objects != 0;
  }
  cand = malloc((ncand + 1) * sizeof *cand);
  tmp = malloc((ncand + 1) * sizeof *tmp);
  if (!cand || !tmp) goto out;
  ncand = 0;
  for (size_t s = 1; s < nstacks; s++)
    if (per_stack[s].objects) cand[ncand++] = (hashed){h[s], (uint32_t)s};
  free(h);
  h = NULL;
  radix_sort(cand, tmp, ncand); /* stable: stack ids ascend within a hash */
  for (size_t i = 0; i < ncand;) {
    size_t j = i + 1;
    while (j < ncand && cand[j].hash == cand[i].hash) j++;
    /* each joins the first earlier one printing alike (a hash collision
     * merely fails that test) */
    for (size_t x = i + 1; x < j; x++)
      for (size_t y = i; y < x; y++) {
        if (emit_stack_cmp(st, cand[y].stack, cand[x].stack) != 0) continue;
        uint32_t to = emit_canon(g, cand[y].stack), from = cand[x].stack;
        mt_tally_add(&per_stack[to], &per_stack[from]);
        memset(&per_stack[from], 0, sizeof per_stack[from]);
        if (mt__u64map_put(&g->canon_map, from, to)) goto out;
        g->canon = &g->canon_map;
        break;
      }
    i = j;
  }
  rc = 0;
out:
  free(h);
  free(cand);
  free(tmp);
  return rc;
}

static int add_group(emit_groups *g, size_t *cap, uint32_t stack, const mt_tally *t,
                     const emit_site *site) {
  if (g->n == *cap) {
    *cap = *cap ? *cap * 2 : 256;
    if (site) {
      emit_site *s = realloc(g->site, *cap * sizeof *s);
      if (!s) return -1;
      g->site = s;
      mt_tally *nt = realloc(g->tally, *cap * sizeof *nt);
      if (!nt) return -1;
      g->tally = nt;
    } else {
      uint32_t *r = realloc(g->rep, *cap * sizeof *r);
      if (!r) return -1;
      g->rep = r;
    }
  }
  if (site) {
    g->site[g->n] = *site;
    g->tally[g->n] = *t;
  } else {
    g->rep[g->n] = stack;
  }
  g->n++;
  return 0;
}

int emit_group_sites(const mt_analysis *a, int by, const mt_tally *per_code, emit_groups *g) {
  size_t ncodes = mt_analysis_code_count(a), cap = 0;
  mt__u64map groups = {0};
  memset(g, 0, sizeof *g);
  g->by = by;
  /* codes first, the empty backtrace (index ncodes) last */
  for (size_t c = 0; c <= ncodes; c++) {
    if (per_code[c].objects == 0) continue;
    emit_site site = emit_code_site(a, (uint32_t)c);
    uint64_t key = site_key(&site, by, (uint32_t)c);
    uint32_t *ix = mt__u64map_get(&groups, key);
    if (ix) {
      mt_tally_add(&g->tally[*ix - 1], &per_code[c]);
      continue;
    }
    if (add_group(g, &cap, 0, &per_code[c], &site) ||
        mt__u64map_put(&groups, key, (uint32_t)(g->n - 1))) {
      mt__u64map_free(&groups);
      emit_groups_free(g);
      return -1;
    }
  }
  mt__u64map_free(&groups);
  return 0;
}

int emit_group_stacks(const emit_stacks *st, size_t nstacks, mt_tally *per_stack,
                      emit_groups *g) {
  size_t cap = 0;
  memset(g, 0, sizeof *g);
  g->by = EMIT_BY_STACK;
  g->per_stack = per_stack;
  g->stacks = *st;
  if (merge_printed_alike(st, nstacks, per_stack, g)) goto fail;
  for (size_t s = 0; s < nstacks; s++)
    if (per_stack[s].objects && add_group(g, &cap, (uint32_t)s, NULL, NULL)) goto fail;
  return 0;
fail:
  emit_groups_free(g);
  return -1;
}

void emit_groups_free(emit_groups *g) {
  free(g->rep);
  free(g->site);
  free(g->tally);
  mt__u64map_free(&g->canon_map);
  memset(g, 0, sizeof *g);
}

/* Sifts idx[i] down a heap ordered so that the root is the greatest. */
static void sift_down(uint32_t *h, size_t n, size_t i,
                      int (*cmp)(const void *, const void *, void *), void *ctx) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && cmp(&h[l], &h[m], ctx) > 0) m = l;
    if (r < n && cmp(&h[r], &h[m], ctx) > 0) m = r;
    if (m == i) return;
    uint32_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

void emit_select(uint32_t *idx, size_t n, size_t k,
                 int (*cmp)(const void *, const void *, void *), void *ctx) {
  if (k == 0 || k >= n) {
    qsort_r(idx, n, sizeof *idx, cmp, ctx);
    return;
  }
  /* idx[0..k) is a heap of the k first seen so far, greatest at the root;
   * a later element enters when it comes before the root */
  for (size_t i = k / 2; i-- > 0;) sift_down(idx, k, i, cmp, ctx);
  for (size_t i = k; i < n; i++) {
    if (cmp(&idx[i], &idx[0], ctx) >= 0) continue;
    uint32_t t = idx[0];
    idx[0] = idx[i];
    idx[i] = t;
    sift_down(idx, k, 0, cmp, ctx);
  }
  qsort_r(idx, k, sizeof *idx, cmp, ctx);
}

static int site_cmp(const mt_analysis *a, const emit_site *x, const emit_site *y, int by) {
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->kind == EMIT_SITE_CODE) return x->code < y->code ? -1 : x->code > y->code;
  if (x->kind == EMIT_SITE_NONE) return 0;
  int c = strcmp(mt_analysis_function_name(a, x->function),
                 mt_analysis_function_name(a, y->function));
  if (!c)
    c = strcmp(mt_analysis_function_file(a, x->function),
               mt_analysis_function_file(a, y->function));
  if (!c && by == EMIT_BY_LINE) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

int emit_group_name_cmp(const mt_analysis *a, const emit_groups *g, uint32_t x, uint32_t y) {
  if (g->by == EMIT_BY_STACK) return emit_stack_cmp(&g->stacks, g->rep[x], g->rep[y]);
  return site_cmp(a, &g->site[x], &g->site[y], g->by);
}
