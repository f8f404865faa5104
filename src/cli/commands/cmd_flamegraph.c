/* memtrace flamegraph: allocations as folded stacks ("a;b;c SAMPLES"), the
 * input of flamegraph.pl and speedscope; the output of memtrace's
 * `flamegraph` tool, byte for byte.
 *
 * An allocation's stack is the function name (defname) of every location of
 * every frame, outermost first, each name kept at its first occurrence only
 * (memtrace also merges consecutive repeats, which that already removes):
 * a call tree (memtrace/calltree.h) with MT_TREE_FIRST_OCCURRENCE, keyed by
 * name. The output walks it depth first, children in byte order of their
 * names, and prints every node that ends some allocation's stack and is at
 * least two names deep.
 *
 * Without options of our own the trace is read as a stream into the tree
 * (names numbered as they come, each backtrace sharing its prefix of codes
 * with the previous one), so memory follows distinct stacks, not objects.
 * With a weight, a filter or --inverted, the trace is loaded into an
 * analysis, the tree built from the backtraces of the objects passing the
 * filter, and each node's weight is an estimate from the library's
 * tallies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/containers.h"
#include "cli.h"
#include "code_table.h"
#include "memtrace/calltree.h"
#include "output.h"
#include "progress.h"

static const char usage[] =
    "usage: memtrace flamegraph [OPTIONS] TRACE...\n"
    "\n"
    "Prints TRACE's allocations as folded stacks, one line per distinct stack:\n"
    "  OUTERMOST;...;ALLOCATING_FUNCTION SAMPLES\n"
    "for flamegraph.pl, inferno or speedscope. A stack lists function names\n"
    "from the outermost caller, each name at its first occurrence only; lines\n"
    "come in byte order of their names.\n"
    "\n"
    "The output is that of memtrace's `flamegraph` tool, byte for byte.\n"
    "\n"
    "Several traces (files, or directories of .ctf files: a process tree, a\n"
    "fleet) make one graph: a stack's weight is the sum of its weights in\n"
    "each trace (samples count as they are; bytes and objects are estimates,\n"
    "each trace's at its own rate).\n"
    "\n"
    "Options of memtrace-c (each makes the tool load the trace for queries):\n"
    "  --weight W        samples (memtrace's, the default), bytes (estimated\n"
    "                    bytes allocated) or objects (estimated allocations)\n"
    "  --inverted        callees first: the allocating function at the root\n"
    MT_FILTER_OPTIONS_HELP
    "For instance, what is still live at the end (leaks), in bytes:\n"
    "  memtrace flamegraph --live-at-end --weight bytes TRACE\n";

enum { W_SAMPLES, W_BYTES, W_OBJECTS };

/* ---- output ---- */

/* Where folded lines go: printed as they come (one trace), or gathered
 * and summed (several). */
typedef struct sink {
  void (*line)(struct sink *k, const char *text, size_t len, uint64_t weight);
  mt_out *out;
  /* several traces: each distinct stack's text, interned, and its weight */
  mt__strtab texts;
  mt__u64map index; /* interned text -> number + 1 */
  const char **text;
  uint64_t *weight;
  size_t n, cap, wcap;
} sink;

typedef struct folded {
  const mt_calltree *t;
  const uint64_t *weight; /* per node */
  const char *(*name)(const void *ctx, uint32_t fn);
  const void *ctx;
} folded;

/* qsort has no context argument */
static const folded *sort_by;

static int by_name(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return strcmp(sort_by->name(sort_by->ctx, mt_calltree_function(sort_by->t, a)),
                sort_by->name(sort_by->ctx, mt_calltree_function(sort_by->t, b)));
}

static void *xrealloc(void *p, size_t n) { return mt_cli_xrealloc(&mt_cmd_flamegraph, p, n); }

static void print_tree(const folded *fo, sink *o) {
  const mt_calltree *t = fo->t;
  size_t n = mt_calltree_size(t);
  /* children of each node, sorted by name, in one array */
  uint32_t *first = calloc(n + 1, sizeof *first), *kids = xrealloc(NULL, n * sizeof *kids);
  uint32_t *fill = xrealloc(NULL, (n + 1) * sizeof *fill), *depth = xrealloc(NULL, n * sizeof *depth);
  if (!first) mt_cli_nomem(&mt_cmd_flamegraph);
  depth[0] = 0;
  for (size_t v = 1; v < n; v++) {
    first[mt_calltree_parent(t, (uint32_t)v) + 1]++;
    depth[v] = depth[mt_calltree_parent(t, (uint32_t)v)] + 1;
  }
  for (size_t v = 0; v < n; v++) first[v + 1] += first[v];
  memcpy(fill, first, (n + 1) * sizeof *fill);
  for (size_t v = 1; v < n; v++) kids[fill[mt_calltree_parent(t, (uint32_t)v)]++] = (uint32_t)v;
  free(fill);
  sort_by = fo;
  for (size_t v = 0; v < n; v++)
    if (first[v + 1] - first[v] > 1) qsort(kids + first[v], first[v + 1] - first[v], sizeof *kids, by_name);

  /* Depth first, each node before its children. `text` holds the path's
   * names joined by ';'; text_end[d] is where depth d's name ends. */
  size_t max_depth = 0;
  for (size_t v = 0; v < n; v++)
    if (depth[v] > max_depth) max_depth = depth[v];
  uint32_t *stack = xrealloc(NULL, n * sizeof *stack);
  size_t *text_end = xrealloc(NULL, (max_depth + 1) * sizeof *text_end);
  char *text = NULL;
  size_t text_cap = 0, sp = 0;
  text_end[0] = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    uint32_t v = stack[--sp];
    uint32_t d = depth[v];
    if (v != 0) {
      const char *name = fo->name(fo->ctx, mt_calltree_function(t, v));
      size_t len = strlen(name), at = text_end[d - 1];
      if (at + len + 2 > text_cap) {
        text_cap = (at + len + 2) * 2;
        text = xrealloc(text, text_cap);
      }
      if (d > 1) text[at++] = ';';
      memcpy(text + at, name, len);
      text_end[d] = at + len;
    }
    if (fo->weight[v] > 0 && d >= 2) o->line(o, text, text_end[d], fo->weight[v]);
    for (uint32_t k = first[v + 1]; k-- > first[v];) stack[sp++] = kids[k];
  }
  free(stack);
  free(text_end);
  free(text);
  free(first);
  free(kids);
  free(depth);
}

static void print(const mt_calltree *t, const uint64_t *weight,
                  const char *(*name)(const void *, uint32_t), const void *ctx, sink *o) {
  folded fo = {t, weight, name, ctx};
  print_tree(&fo, o);
}

static void write_line(sink *k, const char *text, size_t len, uint64_t weight) {
  mt_out_write(k->out, text, len);
  mt_out_char(k->out, ' ');
  mt_out_u64(k->out, weight, 0, ' ');
  mt_out_char(k->out, '\n');
}

static void add_line(sink *k, const char *text, size_t len, uint64_t weight) {
  const char *p = mt__strtab_intern(&k->texts, text, len);
  if (!p) mt_cli_nomem(&mt_cmd_flamegraph);
  uint32_t *ix = mt__u64map_get(&k->index, (uint64_t)(uintptr_t)p);
  if (ix) {
    k->weight[*ix - 1] += weight;
    return;
  }
  size_t cap = k->cap;
  if (mt__reserve((void **)&k->text, k->n, &cap, sizeof *k->text) ||
      mt__reserve((void **)&k->weight, k->n, &k->wcap, sizeof *k->weight) ||
      mt__u64map_put(&k->index, (uint64_t)(uintptr_t)p, (uint32_t)k->n))
    mt_cli_nomem(&mt_cmd_flamegraph);
  k->cap = cap;
  k->text[k->n] = p;
  k->weight[k->n++] = weight;
}

/* The order of one trace's output: name by name in byte order, a stack
 * before the stacks it is a prefix of. */
static int by_names(const void *x, const void *y, void *texts) {
  const char *a = ((const char **)texts)[*(const uint32_t *)x];
  const char *b = ((const char **)texts)[*(const uint32_t *)y];
  for (;; a++, b++) {
    int ea = *a == ';' || !*a, eb = *b == ';' || !*b;
    if (ea || eb) {
      if (ea && eb && *a && *b) continue; /* both names end: the next ones */
      if (ea && eb) return *a ? 1 : *b ? -1 : 0;
      return ea ? -1 : 1; /* a name before the names it is a prefix of */
    }
    if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
  }
}

static void print_gathered(sink *k) {
  uint32_t *order = mt_cli_xrealloc(&mt_cmd_flamegraph, NULL, (k->n + 1) * sizeof *order);
  for (size_t i = 0; i < k->n; i++) order[i] = (uint32_t)i;
  qsort_r(order, k->n, sizeof *order, by_names, k->text);
  for (size_t i = 0; i < k->n; i++)
    write_line(k, k->text[order[i]], strlen(k->text[order[i]]), k->weight[order[i]]);
  free(order);
}

/* ---- from an analysis ---- */

static const char *function_name(const void *a, uint32_t fn) {
  return mt_analysis_function_name(a, fn);
}

static void run_filtered(const char *path, const mt_filter *f, int weight, int inverted,
                         sink *o, mt_cli_names *names) {
  /* samples and bytes are sums of whole numbers, the same folded by
   * backtrace: a fold holds a tally per backtrace, not every object */
  int fold = weight != W_OBJECTS && f->live != MT_LIVE_AT_PEAK;
  mt_analysis *a = mt_cli_load_folded(path, fold ? f : NULL);
  mt_calltree *t;
  if (mt_calltree_build(a, f, MT_TREE_FIRST_OCCURRENCE | MT_TREE_BY_NAME, inverted, &t) != MT_OK)
    mt_cli_nomem(&mt_cmd_flamegraph);
  size_t n = mt_calltree_size(t);
  mt_tally *tallies = xrealloc(NULL, n * sizeof *tallies);
  uint64_t *w = xrealloc(NULL, n * sizeof *w);
  if (mt_calltree_tally(t, a, f, tallies) != MT_OK) mt_cli_nomem(&mt_cmd_flamegraph);
  for (size_t v = 0; v < n; v++) {
    double x = weight == W_SAMPLES ? (double)tallies[v].samples
               : weight == W_BYTES ? mt_estimate_bytes(a, &tallies[v]).value
                                   : mt_estimate_objects(a, &tallies[v]).value;
    w[v] = (uint64_t)(x + 0.5);
  }
  print(t, w, function_name, a, o);
  free(tallies);
  free(w);
  mt_calltree_free(t);
  mt_cli_names_look(names, a);
  mt_analysis_free(a);
}

/* ---- from the stream: memtrace's own tool ---- */

typedef struct names {
  const mt_reader *r;
  mt__strtab strings;
  mt__u64map ids;          /* interned name pointer -> number */
  const char **name;       /* by number */
  size_t n, cap;
  code_table codes;        /* location code -> its names, in code_names */
  uint32_t *code_names;
  size_t ncode_names, code_names_cap;
} names;

/* A code's numbers in the table of codes (code_table.h): where its names
 * start in code_names, and how many. */
enum { OFF, LEN };

static uint32_t name_id(names *s, const char *str) {
  const char *p = mt__strtab_intern(&s->strings, str, strlen(str));
  if (!p) mt_cli_nomem(&mt_cmd_flamegraph);
  uint32_t *id = mt__u64map_get(&s->ids, (uint64_t)(uintptr_t)p);
  if (id) return *id - 1;
  if (mt__reserve((void **)&s->name, s->n, &s->cap, sizeof *s->name) ||
      mt__u64map_put(&s->ids, (uint64_t)(uintptr_t)p, (uint32_t)s->n))
    mt_cli_nomem(&mt_cmd_flamegraph);
  s->name[s->n] = p;
  return (uint32_t)s->n++;
}

/* The names of a code's locations, outermost first. Codes the trace has not
 * named (yet) have none and are not remembered. */
static const uint32_t *names_of(names *s, uint64_t code, size_t *n) {
  const code_slot *known = code_find(&s->codes, code);
  if (known->v[OFF] != CODE_TABLE_EMPTY) {
    *n = known->v[LEN];
    return s->code_names + known->v[OFF];
  }
  size_t nlocs = 0;
  const mt_location *l = mt_reader_lookup(s->r, code, &nlocs);
  if (!l) nlocs = 0;
  if (!mt_reader_has_code(s->r, code)) {
    *n = 0;
    return NULL;
  }
  if (s->ncode_names + nlocs >= CODE_TABLE_EMPTY ||
      mt__grow((void **)&s->code_names, &s->code_names_cap, s->ncode_names + nlocs + 1,
               sizeof *s->code_names, 256))
    mt_cli_nomem(&mt_cmd_flamegraph);
  uint32_t off = (uint32_t)s->ncode_names;
  for (size_t i = 0; i < nlocs; i++) s->code_names[s->ncode_names++] = name_id(s, l[i].defname);
  if (!code_add(&s->codes, code, off, (uint32_t)nlocs)) mt_cli_nomem(&mt_cmd_flamegraph);
  *n = nlocs;
  return s->code_names + off;
}

static const char *stream_name(const void *ctx, uint32_t fn) {
  return ((const names *)ctx)->name[fn];
}

/* w[0..*len) extended with zeros to w[0..need), grown by doubling: only the
 * part in use is ever written, so the spare capacity costs no memory. */
static uint64_t *zero_to(uint64_t *w, size_t *len, size_t *cap, size_t need) {
  if (need <= *len) return w;
  if (mt__grow((void **)&w, cap, need, sizeof *w, 1024)) mt_cli_nomem(&mt_cmd_flamegraph);
  memset(w + *len, 0, (need - *len) * sizeof *w);
  *len = need;
  return w;
}

static void run_stream(const char *path, sink *o) {
  mt_reader *r = mt_cli_open(path);
  mt_reader_skip(r, 1u << MT_EVENT_PROMOTE | 1u << MT_EVENT_COLLECT); /* allocations alone */
  names s = {0};
  s.r = r;
  mt_calltree *t = mt_calltree_new(MT_TREE_FIRST_OCCURRENCE, 0);
  uint64_t *w = NULL, *prev = NULL;
  uint32_t prev_domain = UINT32_MAX;
  size_t w_len = 0, w_cap = 0, prev_len = 0, prev_cap = 0, *mark = NULL, mark_cap = 0;
  if (!t) mt_cli_nomem(&mt_cmd_flamegraph);
  mt_progress progress;
  mt_progress_start(&progress, r, "flamegraph");
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    mt_progress_tick(&progress);
    if (ev.kind != MT_EVENT_ALLOC) continue;
    size_t n = ev.backtrace_len, k = 0;
    if (mt__grow((void **)&prev, &prev_cap, n + 1, sizeof *prev, 64) ||
        mt__grow((void **)&mark, &mark_cap, n + 1, sizeof *mark, 64))
      mt_cli_nomem(&mt_cmd_flamegraph);
    /* The previous backtrace's frames are shared up to its first new code:
     * the reader says how many when it was the same domain's (the trace
     * encodes each backtrace against that one; the count may exceed both
     * lengths where a writer cut a backtrace short), else they are
     * compared. */
    if (ev.domain == prev_domain) {
      k = ev.common_prefix;
      if (k > n) k = n;
      if (k > prev_len) k = prev_len;
    } else {
      while (k < n && k < prev_len && ev.backtrace[k] == prev[k]) k++;
      prev_domain = ev.domain;
    }
    mt_calltree_rewind(t, k ? mark[k - 1] : 0);
    for (size_t i = k; i < n; i++) {
      size_t nn;
      const uint32_t *ns = names_of(&s, ev.backtrace[i], &nn);
      for (size_t j = 0; j < nn; j++)
        if (mt_calltree_push(t, ns[j], 0) != MT_OK) mt_cli_nomem(&mt_cmd_flamegraph);
      prev[i] = ev.backtrace[i];
      mark[i] = mt_calltree_mark(t);
    }
    prev_len = n;
    uint32_t leaf = mt_calltree_end(t);
    if (leaf == UINT32_MAX) mt_cli_nomem(&mt_cmd_flamegraph);
    if (leaf >= w_len) w = zero_to(w, &w_len, &w_cap, (size_t)leaf + 1);
    w[leaf] += ev.nsamples;
  }
  mt_progress_end(&progress);
  mt_cli_finish(r, rc);
  w = zero_to(w, &w_len, &w_cap, mt_calltree_size(t));
  print(t, w, stream_name, &s, o);
  free(w);
  free(prev);
  free(mark);
  free(s.name);
  free(s.code_names);
  mt__u64map_free(&s.ids);
  code_table_free(&s.codes);
  mt__strtab_free(&s.strings);
  mt_calltree_free(t);
  mt_reader_close(r);
}

static int run(int argc, char **argv) {
  static const char *args[MT_CLI_MAX_TRACES];
  int weight = -1, inverted = 0;
  mt_filter f, none;
  mt_filter_init(&f);
  mt_filter_init(&none);
  const mt_option options[] = {
      {"--weight", NULL, MT_OPT_CHOICE, &weight, "samples|bytes|objects", 0, 0, 0},
      {"--inverted", NULL, MT_OPT_FLAG, &inverted, NULL, 1, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(&mt_cmd_flamegraph, argc, argv, &spec);
  char **paths;
  size_t n = mt_cli_traces(&mt_cmd_flamegraph, args, nargs, &paths);
  int ours = weight >= 0 || inverted || memcmp(&f, &none, sizeof f) != 0;
  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  sink k;
  memset(&k, 0, sizeof k);
  k.out = &out;
  k.line = n == 1 ? write_line : add_line;
  mt_cli_names names; /* each trace is freed once folded */
  mt_cli_names_init(&names, &f);
  for (size_t i = 0; i < n; i++) {
    if (ours) run_filtered(paths[i], &f, weight < 0 ? W_SAMPLES : weight, inverted, &k, &names);
    else run_stream(paths[i], &k);
    free(paths[i]);
  }
  free(paths);
  mt_cli_names_warn(&mt_cmd_flamegraph, &names);
  if (n > 1) print_gathered(&k);
  mt_out_flush(&out);
  mt_out_free(&out);
  free(k.text);
  free(k.weight);
  mt__u64map_free(&k.index);
  mt__strtab_free(&k.texts);
  return 0;
}

const mt_command mt_cmd_flamegraph = {
    "flamegraph", "allocations as folded stacks for flame graphs", usage, run};
