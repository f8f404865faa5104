/* Which objects a query selects, and the call tree after `hide`. */
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "tables.h"

int mt_vsel_make(const mt_vsnap *s, const mt_vquery *q, mt_vsel *sel) {
  memset(sel, 0, sizeof *sel);
  sel->mask = malloc(s->nobj + 1);
  if (!sel->mask) return -1;
  /* The analysis would build its code-level stack tree for inside /
   * not_inside (costly on traces whose stacks are all distinct): those two
   * are decided here on the function-level tree instead. */
  mt_filter f = q->f;
  f.inside = f.not_inside = NULL;
  if (mt_analysis_select(s->a, &f, sel->mask, NULL) != MT_OK) goto oom;
  int in = q->f.inside != NULL, out = q->f.not_inside != NULL;
  if (in || out) {
    uint8_t *fnm = calloc(s->nfn + 1, 1), *has = malloc(s->nf);
    if (!fnm || !has) {
      free(fnm);
      free(has);
      goto oom;
    }
    for (size_t k = 0; k <= s->nfn; k++) {
      const char *name = mt_vsnap_fn_name(s, (uint32_t)k);
      fnm[k] = (uint8_t)((in && strstr(name, q->f.inside)) |
                         (out && strstr(name, q->f.not_inside)) << 1);
    }
    has[0] = 0;
    for (size_t v = 1; v < s->nf; v++) has[v] = has[s->fparent[v]] | fnm[s->ffn[v]];
    for (size_t i = 0; i < s->nobj; i++) {
      uint8_t h = has[s->leaf[i]];
      if ((in && !(h & 1)) || (out && (h & 2))) sel->mask[i] = 0;
    }
    free(fnm);
    free(has);
  }
  for (size_t i = 0; i < s->nobj; i++)
    if (sel->mask[i]) {
      sel->count++;
      mt_tally_object(s->a, i, &sel->total);
    }
  return 0;
oom:
  mt_vsel_free(sel);
  return -1;
}

void mt_vsel_free(mt_vsel *sel) {
  free(sel->mask);
  sel->mask = NULL;
}

int mt_vtree_make(const mt_vsnap *s, const mt_vquery *q, mt_vtree *t) {
  memset(t, 0, sizeof *t);
  if (q->nhide == 0) {
    t->n = s->nf;
    t->parent = s->fparent;
    t->fn = s->ffn;
    t->line = s->fline;
    return 0;
  }
  uint8_t *hid = calloc(s->nfn + 1, 1);
  uint32_t *map = malloc(s->nf * sizeof *map);
  uint32_t *own = malloc(3 * s->nf * sizeof *own);
  mt__u64map m = {0};
  if (!hid || !map || !own) goto oom;
  for (size_t k = 0; k <= s->nfn; k++)
    hid[k] = (uint8_t)mt_vquery_hidden(q, mt_vsnap_fn_name(s, (uint32_t)k));
  uint32_t *par = own, *fn = own + s->nf, *line = own + 2 * s->nf;
  size_t n = 1;
  par[0] = 0;
  fn[0] = UINT32_MAX;
  line[0] = 0;
  map[0] = 0;
  for (size_t v = 1; v < s->nf; v++) {
    uint32_t p = map[s->fparent[v]], f = s->ffn[v];
    /* hidden frames vanish; their callers and callees become adjacent and
     * merge when they are the same function */
    if (hid[f] || (p != 0 && fn[p] == f)) {
      map[v] = p;
      continue;
    }
    int fresh;
    uint32_t id = mt__u64map_intern(&m, (uint64_t)p << 32 | f, (uint32_t)n, &fresh);
    if (id == UINT32_MAX) goto oom;
    if (fresh) {
      par[n] = p;
      fn[n] = f;
      line[n] = s->fline[v];
      n++;
    }
    map[v] = id;
  }
  mt__u64map_free(&m);
  free(hid);
  t->n = n;
  t->parent = par;
  t->fn = fn;
  t->line = line;
  t->map = map;
  t->own = own;
  return 0;
oom:
  mt__u64map_free(&m);
  free(hid);
  free(map);
  free(own);
  return -1;
}

void mt_vtree_free(mt_vtree *t) {
  free(t->map);
  free(t->own);
  memset(t, 0, sizeof *t);
}

void mt_vjson_est(mt_json *j, mt_estimate e) {
  mt_json_obj(j);
  mt_json_key(j, "v");
  mt_json_num(j, e.value);
  mt_json_key(j, "lo");
  mt_json_num(j, e.lo);
  mt_json_key(j, "hi");
  mt_json_num(j, e.hi);
  mt_json_end_obj(j);
}

void mt_vjson_tally(mt_json *j, const mt_vsnap *s, const mt_tally *t) {
  mt_json_key(j, "bytes");
  mt_vjson_est(j, mt_estimate_bytes(s->a, t));
  mt_json_key(j, "objects");
  mt_vjson_est(j, mt_estimate_objects(s->a, t));
}
