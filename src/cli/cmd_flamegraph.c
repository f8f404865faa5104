/* memtrace flamegraph: allocations as folded stacks ("a;b;c SAMPLES"), the
 * input of flamegraph.pl and speedscope; the output of memtrace's
 * `flamegraph` tool, byte for byte.
 *
 * An allocation's stack is the function name (defname) of every location of
 * every frame, outermost first, each name kept at its first occurrence only
 * (memtrace also merges consecutive repeats, which that already removes).
 * Stacks are counted in a tree of names; the output walks it depth first,
 * children in byte order of their names, and prints every node that ends
 * some allocation's stack and is at least two names deep.
 *
 * Speed: a backtrace mostly repeats the previous one's outer frames, so the
 * tree node reached after each frame is kept and only the new frames are
 * walked. Names are numbered; the names on the path to the current node are
 * kept by depth, and a name's last depth tells in O(1) whether it is on the
 * path. A node's children are a list, most recently used first (they are
 * sorted for the output only); a node with many also indexes them in a hash
 * table. A trace of 10M events with 9M distinct stacks takes about 4 s of
 * CPU and 400 MB.
 *
 * With any option of our own (a weight, a filter, --inverted), the trace is
 * loaded into an analysis instead, the objects passing the filter are walked
 * in one pass over their backtraces, and each node's weight is an estimate
 * from the library's tallies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis_cli.h"
#include "cli.h"
#include "output.h"
#include "progress.h"
#include "tables.h"

static const char usage[] =
    "usage: memtrace flamegraph TRACE\n"
    "\n"
    "Prints TRACE's allocations as folded stacks, one line per distinct stack:\n"
    "  OUTERMOST;...;ALLOCATING_FUNCTION SAMPLES\n"
    "for flamegraph.pl, inferno or speedscope. A stack lists function names\n"
    "from the outermost caller, each name at its first occurrence only; lines\n"
    "come in byte order of their names.\n"
    "\n"
    "The output is that of memtrace's `flamegraph` tool, byte for byte.\n"
    "\n"
    "Options of memtrace-c (each makes the tool load the trace for queries):\n"
    "  --weight W        samples (memtrace's, the default), bytes (estimated\n"
    "                    bytes allocated) or objects (estimated allocations)\n"
    "  --inverted        callees first: the allocating function at the root\n"
    MT_CLI_FILTER_HELP
    "For instance, what is still live at the end (leaks), in bytes:\n"
    "  memtrace flamegraph --live-at-end --weight bytes TRACE\n";

#define NONE UINT32_MAX

typedef struct node {
  uint64_t samples;
  uint32_t name, depth; /* the root has depth 0 and no name */
  uint32_t parent;
  uint32_t first_child, next_sibling; /* children, most recently used first */
  uint32_t nkids;
} node;

/* A node's children are found by walking its list, except for nodes of more
 * than WIDE children: those are found in a hash table of edges. */
enum { WIDE = 8 };

static void die_nomem(void) {
  fputs("memtrace flamegraph: out of memory\n", stderr);
  exit(1);
}

/* The edges from wide nodes, (parent << 32 | name) -> child: open
 * addressing, linear probing, key and value side by side. */
typedef struct edge {
  uint64_t key;
  uint32_t child; /* NONE: an empty slot */
} edge;

typedef struct edge_table {
  edge *slots;
  size_t cap, count;
} edge_table;

static edge *edge_find(edge_table *t, uint64_t key) {
  static edge none = {0, NONE};
  if (t->cap == 0) return &none;
  size_t mask = t->cap - 1, i = (size_t)mt__hash64(key) & mask;
  while (t->slots[i].child != NONE && t->slots[i].key != key) i = (i + 1) & mask;
  return &t->slots[i];
}

/* Sets the empty slot e (from edge_find) to key -> child. */
static void edge_add(edge_table *t, edge *e, uint64_t key, uint32_t child) {
  if ((t->count + 1) * 2 > t->cap) {
    edge_table g = {NULL, t->cap ? t->cap * 2 : 4096, 0};
    g.slots = malloc(g.cap * sizeof *g.slots);
    if (!g.slots) die_nomem();
    for (size_t i = 0; i < g.cap; i++) g.slots[i].child = NONE;
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].child != NONE) *edge_find(&g, t->slots[i].key) = t->slots[i];
    g.count = t->count;
    free(t->slots);
    *t = g;
    e = edge_find(t, key);
  }
  *e = (edge){key, child};
  t->count++;
}

typedef struct state {
  const mt_reader *r;
  mt__strtab strings;
  mt__u64map name_ids; /* interned pointer -> name number */
  const char **names;
  uint32_t *name_depth; /* per name: the depth it last had on the path */
  size_t nnames, names_cap;
  mt__u64map code_index; /* location code -> its names, in code_off/code_len */
  uint32_t *code_names;
  size_t ncode_names, code_names_cap;
  uint32_t *code_off, *code_len;
  size_t ncodes, codes_cap;
  node *nodes;
  size_t nnodes, nodes_cap;
  edge_table wide_children; /* (node << 32 | name) -> child node */
  uint32_t *path;      /* the names on the path to the current node */
  size_t path_cap;
} state;

static void *grow_array(void *p, size_t *cap, size_t need, size_t elem) {
  if (mt__grow(&p, cap, need, elem, 256) != 0) die_nomem();
  return p;
}

static uint32_t name_id(state *s, const char *str) {
  const char *p = mt__strtab_intern(&s->strings, str, strlen(str));
  if (!p) die_nomem();
  uint32_t *id = mt__u64map_get(&s->name_ids, (uint64_t)(uintptr_t)p);
  if (id) return *id - 1;
  size_t cap = s->names_cap;
  s->names = grow_array(s->names, &cap, s->nnames + 1, sizeof *s->names);
  s->name_depth = grow_array(s->name_depth, &s->names_cap, s->nnames + 1, sizeof *s->name_depth);
  uint32_t n = (uint32_t)s->nnames++;
  s->names[n] = p;
  s->name_depth[n] = NONE;
  if (mt__u64map_put(&s->name_ids, (uint64_t)(uintptr_t)p, n) != 0) die_nomem();
  return n;
}

/* The names of a code's locations, outermost first. Codes the trace has not
 * named (yet) have none and are not remembered. */
static const uint32_t *names_of(state *s, uint64_t code, size_t *n) {
  uint32_t *ix = mt__u64map_get(&s->code_index, code);
  if (ix) {
    *n = s->code_len[*ix - 1];
    return s->code_names + s->code_off[*ix - 1];
  }
  size_t nlocs = 0;
  const mt_location *l = mt_reader_lookup(s->r, code, &nlocs);
  if (!l) nlocs = 0;
  if (!mt_reader_has_code(s->r, code)) {
    *n = 0;
    return NULL;
  }
  size_t cap = s->codes_cap;
  s->code_off = grow_array(s->code_off, &cap, s->ncodes + 1, sizeof *s->code_off);
  s->code_len = grow_array(s->code_len, &s->codes_cap, s->ncodes + 1, sizeof *s->code_len);
  s->code_names = grow_array(s->code_names, &s->code_names_cap, s->ncode_names + nlocs,
                             sizeof *s->code_names);
  uint32_t c = (uint32_t)s->ncodes++;
  s->code_off[c] = (uint32_t)s->ncode_names;
  s->code_len[c] = (uint32_t)nlocs;
  for (size_t i = 0; i < nlocs; i++) s->code_names[s->ncode_names++] = name_id(s, l[i].defname);
  if (mt__u64map_put(&s->code_index, code, c) != 0) die_nomem();
  *n = nlocs;
  return s->code_names + s->code_off[c];
}

static uint32_t new_node(state *s, uint32_t parent, uint32_t name, uint32_t depth) {
  s->nodes = grow_array(s->nodes, &s->nodes_cap, s->nnodes + 1, sizeof *s->nodes);
  uint32_t n = (uint32_t)s->nnodes++;
  s->nodes[n] = (node){0, name, depth, parent, NONE, NONE, 0};
  return n;
}

static uint32_t child(state *s, uint32_t parent, uint32_t name) {
  node *nodes = s->nodes;
  uint64_t key = (uint64_t)parent << 32 | name;
  if (nodes[parent].nkids > WIDE) {
    edge *e = edge_find(&s->wide_children, key);
    if (e->child != NONE) return e->child;
  } else {
    uint32_t before = NONE;
    for (uint32_t c = nodes[parent].first_child; c != NONE; before = c, c = nodes[c].next_sibling) {
      if (nodes[c].name != name) continue;
      if (before != NONE) { /* to the front */
        nodes[before].next_sibling = nodes[c].next_sibling;
        nodes[c].next_sibling = nodes[parent].first_child;
        nodes[parent].first_child = c;
      }
      return c;
    }
  }
  uint32_t n = new_node(s, parent, name, s->nodes[parent].depth + 1);
  node *p = &s->nodes[parent];
  s->nodes[n].next_sibling = p->first_child;
  p->first_child = n;
  if (++p->nkids == WIDE + 1) { /* now wide: index every child */
    for (uint32_t c = n; c != NONE; c = s->nodes[c].next_sibling) {
      uint64_t k = (uint64_t)parent << 32 | s->nodes[c].name;
      edge_add(&s->wide_children, edge_find(&s->wide_children, k), k, c);
    }
  } else if (p->nkids > WIDE + 1) {
    edge_add(&s->wide_children, edge_find(&s->wide_children, key), key, n);
  }
  return n;
}

/* ---- output ---- */

/* Children are sorted by name (String.compare: bytes, like strcmp). */
static const char **sort_names;
static const node *sort_nodes;

static int by_name(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return strcmp(sort_names[sort_nodes[x].name], sort_names[sort_nodes[y].name]);
}

static void print_tree(state *s, mt_out *o) {
  size_t n = s->nnodes;
  uint32_t *first = calloc(n + 1, sizeof *first);
  uint32_t *kids = malloc((n ? n : 1) * sizeof *kids);
  if (!first || !kids) die_nomem();
  for (size_t v = 1; v < n; v++) first[s->nodes[v].parent + 1]++;
  for (size_t v = 0; v < n; v++) first[v + 1] += first[v];
  uint32_t *fill = malloc((n + 1) * sizeof *fill);
  if (!fill) die_nomem();
  memcpy(fill, first, (n + 1) * sizeof *fill);
  for (size_t v = 1; v < n; v++) kids[fill[s->nodes[v].parent]++] = (uint32_t)v;
  free(fill);
  sort_names = s->names;
  sort_nodes = s->nodes;
  for (size_t v = 0; v < n; v++)
    if (first[v + 1] - first[v] > 1)
      qsort(kids + first[v], first[v + 1] - first[v], sizeof *kids, by_name);

  /* Depth first, each node before its children. `text` holds the path's
   * names joined by ';'; text_end[d] is where depth d's name ends. */
  size_t max_depth = 0;
  for (size_t v = 0; v < n; v++)
    if (s->nodes[v].depth > max_depth) max_depth = s->nodes[v].depth;
  uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
  size_t *text_end = malloc((max_depth + 1) * sizeof *text_end);
  char *text = NULL;
  size_t text_cap = 0, sp = 0;
  if (!stack || !text_end) die_nomem();
  text_end[0] = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    uint32_t v = stack[--sp];
    const node *nd = &s->nodes[v];
    if (v != 0) {
      const char *name = s->names[nd->name];
      size_t len = strlen(name), at = text_end[nd->depth - 1];
      text = grow_array(text, &text_cap, at + len + 2, 1);
      if (nd->depth > 1) text[at++] = ';';
      memcpy(text + at, name, len);
      text_end[nd->depth] = at + len;
    }
    if (nd->samples > 0 && nd->depth >= 2) {
      mt_out_write(o, text, text_end[nd->depth]);
      mt_out_char(o, ' ');
      mt_out_u64(o, nd->samples, 0, ' ');
      mt_out_char(o, '\n');
    }
    for (uint32_t k = first[v + 1]; k-- > first[v];) stack[sp++] = kids[k];
  }
  free(stack);
  free(text_end);
  free(text);
  free(first);
  free(kids);
}

/* ---- the filtered mode ---- */

enum { W_SAMPLES, W_BYTES, W_OBJECTS };

typedef struct filtered {
  state *s;
  const mt_analysis *a;
  uint32_t **code_names; /* per code id: its names, outermost first */
  size_t *code_nnames;
  mt_tally *tallies; /* per node */
  size_t tallies_cap;
  uint32_t *names; /* the object's names after the first-occurrence rule */
  size_t names_cap;
  int inverted;
} filtered;

static int add_object(void *ctx, size_t obj, const uint32_t *codes, size_t n) {
  filtered *fl = ctx;
  state *s = fl->s;
  /* names of every location of every frame, each at its first occurrence */
  size_t k = 0;
  uint32_t depth = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t c = codes[i];
    if (!fl->code_names[c]) {
      size_t nf;
      const mt_frame *fr = mt_analysis_code_frames(fl->a, c, &nf);
      fl->code_names[c] = malloc((nf + 1) * sizeof **fl->code_names);
      if (!fl->code_names[c]) die_nomem();
      for (size_t j = 0; j < nf; j++)
        fl->code_names[c][j] = name_id(s, mt_analysis_function_name(fl->a, fr[j].function));
      fl->code_nnames[c] = nf;
    }
    for (size_t j = 0; j < fl->code_nnames[c]; j++) {
      uint32_t name = fl->code_names[c][j], d = s->name_depth[name];
      if (d < depth && s->path[d] == name) continue; /* already on the path */
      s->path = grow_array(s->path, &s->path_cap, depth + 1, sizeof *s->path);
      s->path[depth] = name;
      s->name_depth[name] = depth;
      fl->names = grow_array(fl->names, &fl->names_cap, k + 1, sizeof *fl->names);
      fl->names[k++] = name;
      depth++;
    }
  }
  uint32_t cur = 0;
  for (size_t j = 0; j < k; j++) cur = child(s, cur, fl->names[fl->inverted ? k - 1 - j : j]);
  if (s->nnodes > fl->tallies_cap) {
    size_t old = fl->tallies_cap;
    fl->tallies = grow_array(fl->tallies, &fl->tallies_cap, s->nnodes, sizeof *fl->tallies);
    memset(fl->tallies + old, 0, (fl->tallies_cap - old) * sizeof *fl->tallies);
  }
  mt_tally_object(fl->a, obj, &fl->tallies[cur]);
  return 0;
}

static int run_filtered(const char *path, const mt_filter *f, int weight, int inverted) {
  mt_analysis *a = mt_cli_load(path);
  state s = {0};
  new_node(&s, NONE, NONE, 0); /* the root */
  size_t ncodes = mt_analysis_code_count(a);
  filtered fl = {&s, a, calloc(ncodes + 1, sizeof(uint32_t *)),
                 calloc(ncodes + 1, sizeof(size_t)), NULL, 0, NULL, 0, inverted};
  if (!fl.code_names || !fl.code_nnames) die_nomem();
  if (mt_analysis_each_backtrace(a, f, add_object, &fl) != MT_OK) die_nomem();
  for (size_t i = 0; i < s.nnodes && i < fl.tallies_cap; i++) {
    const mt_tally *t = &fl.tallies[i];
    double v = weight == W_SAMPLES ? (double)t->samples
               : weight == W_BYTES ? mt_estimate_bytes(a, t).value
                                   : mt_estimate_objects(a, t).value;
    s.nodes[i].samples = (uint64_t)(v + 0.5);
  }
  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  print_tree(&s, &out);
  mt_out_flush(&out);
  mt_out_free(&out);
  for (size_t c = 0; c <= ncodes; c++) free(fl.code_names[c]);
  free(fl.code_names);
  free(fl.code_nnames);
  free(fl.tallies);
  free(fl.names);
  free(s.names);
  free(s.name_depth);
  free(s.nodes);
  free(s.path);
  free(s.wide_children.slots);
  mt__u64map_free(&s.name_ids);
  mt__strtab_free(&s.strings);
  mt_analysis_free(a);
  return 0;
}

static int run(int argc, char **argv) {
  const char *path = NULL;
  mt_filter f;
  mt_filter_init(&f);
  int weight = W_SAMPLES, inverted = 0, ours = 0;
  for (int i = 1; i < argc; i++) {
    if (mt_cli_is_help(argv[i])) return mt_cli_help(&mt_cmd_flamegraph);
    if (strcmp(argv[i], "--") == 0 && i + 1 < argc && !path) path = argv[++i];
    else if (strcmp(argv[i], "--inverted") == 0) inverted = ours = 1;
    else if (strncmp(argv[i], "--weight", 8) == 0 && (argv[i][8] == 0 || argv[i][8] == '=')) {
      const char *w = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[++i] : "");
      if (strcmp(w, "samples") == 0) weight = W_SAMPLES;
      else if (strcmp(w, "bytes") == 0) weight = W_BYTES;
      else if (strcmp(w, "objects") == 0) weight = W_OBJECTS;
      else mt_cli_usage_error(&mt_cmd_flamegraph, "--weight takes samples, bytes or objects, not '%s'", w);
      ours = 1;
    } else if (mt_cli_filter_option(&mt_cmd_flamegraph, argc, argv, &i, &f)) ours = 1;
    else if (argv[i][0] == '-' && argv[i][1])
      mt_cli_usage_error(&mt_cmd_flamegraph, "unknown option '%s'", argv[i]);
    else if (!path) path = argv[i];
    else mt_cli_usage_error(&mt_cmd_flamegraph, "unexpected argument '%s'", argv[i]);
  }
  if (!path) mt_cli_usage_error(&mt_cmd_flamegraph, "missing TRACE");
  if (ours) return run_filtered(path, &f, weight, inverted);

  mt_reader *r = mt_cli_open(path);
  state s = {0};
  s.r = r;
  new_node(&s, NONE, NONE, 0); /* the root */

  /* The previous backtrace and the node reached after each of its frames. */
  uint64_t *prev = NULL;
  uint32_t *node_after = NULL;
  size_t prev_len = 0, prev_cap = 0;
  mt_progress progress;
  mt_progress_start(&progress, r, "flamegraph");
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    mt_progress_tick(&progress);
    if (ev.kind != MT_EVENT_ALLOC) continue;
    const uint64_t *bt = ev.backtrace;
    size_t n = ev.backtrace_len;
    if (n > prev_cap) {
      size_t cap = prev_cap;
      prev = grow_array(prev, &cap, n, sizeof *prev);
      node_after = grow_array(node_after, &prev_cap, n, sizeof *node_after);
    }
    size_t k = 0;
    while (k < n && k < prev_len && bt[k] == prev[k]) k++;
    uint32_t cur = k ? node_after[k - 1] : 0;
    uint32_t depth = s.nodes[cur].depth;
    for (size_t i = k; i < n; i++) {
      size_t nn;
      const uint32_t *names = names_of(&s, bt[i], &nn);
      for (size_t j = 0; j < nn; j++) {
        uint32_t name = names[j], d = s.name_depth[name];
        if (d < depth && s.path[d] == name) continue; /* already on the path */
        s.path = grow_array(s.path, &s.path_cap, depth + 1, sizeof *s.path);
        s.path[depth] = name;
        s.name_depth[name] = depth;
        cur = child(&s, cur, name);
        depth++;
      }
      prev[i] = bt[i];
      node_after[i] = cur;
    }
    prev_len = n;
    s.nodes[cur].samples += ev.nsamples;
  }
  mt_progress_end(&progress);
  mt_cli_finish(r, rc);

  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  print_tree(&s, &out);
  mt_out_flush(&out);
  mt_out_free(&out);

  free(prev);
  free(node_after);
  free(s.names);
  free(s.name_depth);
  free(s.code_names);
  free(s.code_off);
  free(s.code_len);
  free(s.nodes);
  free(s.path);
  free(s.wide_children.slots);
  mt__u64map_free(&s.code_index);
  mt__u64map_free(&s.name_ids);
  mt__strtab_free(&s.strings);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_flamegraph = {
    "flamegraph", "allocations as folded stacks for flame graphs", usage, run};
