/* Stacks, frames and sites, shared by the site-ranking tools (top, leaks,
 * diff, export): a trie of the few stacks a tool needs, a stack's frames
 * (inlined ones included), a stack's site by function or line, filters on
 * stacks without the analysis' stack tree, and grouping a trace's stacks
 * into sites.
 *
 * Ordering rule used by every tool: a total order with names as the last
 * tie-break, so the same trace and options always give the same output. */
#ifndef MT_CLI_SITES_H
#define MT_CLI_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "emit.h"

/* ---- stacks ------------------------------------------------------------------ */

/* A trie of backtraces, for tools that need the stacks of a few objects
 * only: the analysis' own stack tree holds every object's and costs time
 * and memory in the number of distinct stacks of the whole trace. Node 0 is
 * the empty stack; a node's parent has a smaller id. Codes are code ids. */
typedef struct emit_trie {
  uint32_t *parent, *code;
  size_t n, cap;
  mt__u64map index;    /* parent << 32 | code -> node */
  uint32_t *last;      /* nodes of the previous backtrace, to share its prefix */
  uint32_t *last_codes;
  size_t last_n, last_cap;
} emit_trie;

/* Returns 0, or -1 when out of memory. */
int emit_trie_init(emit_trie *t);
/* The node of a backtrace (code ids, outermost first), added if new. */
int emit_trie_add(emit_trie *t, const uint32_t *codes, size_t n, uint32_t *node);
/* Frees what only adding needs (the index): nodes and codes stay. */
void emit_trie_done(emit_trie *t);
void emit_trie_free(emit_trie *t);

/* Where stack ids come from: the analysis' stack tree (trie NULL), or a
 * trie over the analysis' codes. */
typedef struct emit_stacks {
  const mt_analysis *a;
  const emit_trie *trie;
} emit_stacks;

/* One printed frame: a source location, or a code the trace never
 * described (function NULL). */
typedef struct emit_frame {
  const char *function, *file;
  uint32_t line;
  uint64_t code;
} emit_frame;

/* The frames of a stack, innermost (the allocation point) first: each
 * code's inlined locations innermost first, then its caller's. Stores at
 * most `max` frames (0: all) into *buf (grown as needed) and returns how
 * many the stack has in all. */
size_t emit_stack_frames(const emit_stacks *st, uint32_t stack, size_t max, emit_frame **buf,
                         size_t *cap);
/* As emit_stack_frames, for a backtrace given as code ids (outermost
 * first), without any stack tree. */
size_t emit_codes_frames(const mt_analysis *a, const uint32_t *codes, size_t n, size_t max,
                         emit_frame **buf, size_t *cap);
/* Appends "function (file:line)", or "#code" in hex for an undescribed
 * code. */
void emit_frame_text(emit_str *b, const emit_frame *f);
/* Writes a frame as a JSON object. */
void emit_json_frame(mt_out *o, const emit_frame *f);
/* Orders two stacks by their printed frames, innermost first (strcmp of
 * function, then file, then line; an undescribed code after any location,
 * by code value; a stack that ends first sorts first). */
int emit_stack_cmp(const emit_stacks *st, uint32_t x, uint32_t y);
/* As emit_stack_cmp, for two backtraces given as code ids. */
int emit_codes_cmp(const mt_analysis *a, const uint32_t *x, size_t nx, const uint32_t *y,
                   size_t ny);

/* ---- sites ------------------------------------------------------------------ */

/* What a group of stacks is named by. */
typedef struct emit_site {
  int kind;             /* EMIT_SITE_* */
  uint32_t function;    /* function id (EMIT_SITE_LOCATION) */
  uint32_t line;        /* with --by line and --by stack (the site's line) */
  uint64_t code;        /* EMIT_SITE_CODE: the stack's last code value */
} emit_site;
enum {
  EMIT_SITE_LOCATION = 0, /* the site has a source location */
  EMIT_SITE_CODE = 1,     /* no location within the last frames: a code */
  EMIT_SITE_NONE = 2      /* the empty stack: no backtrace at all */
};

/* The allocation site of a stack (mt_analysis_stack_site), falling back to
 * the last code, or none for the empty stack. */
emit_site emit_stack_site(const mt_analysis *a, uint32_t stack);
/* The site of a site code (mt_analysis_tally_sites' index: a code id, or
 * the code count for the empty backtrace): the innermost location of the
 * code, or the code itself when the trace never described it. Same rule as
 * emit_stack_site. */
emit_site emit_code_site(const mt_analysis *a, uint32_t code);
/* Appends a site's text: "function (file)", with ":line" when with_line;
 * "#code" (hex); "(no backtrace)". */
void emit_site_text(emit_str *b, const mt_analysis *a, const emit_site *s, int with_line);

/* ---- stack conditions without the stack tree --------------------------------- */

/* --inside / --not-inside decided on an object's backtrace (code ids), as
 * the analysis decides them on its stack tree: some location of some frame
 * has a function name containing `inside`; none contains `not_inside`. The
 * analysis builds the whole tree to answer them (seconds and hundreds of
 * megabytes on large traces); one pass over the backtraces needs neither. */
typedef struct emit_stack_cond {
  uint8_t *code_bits; /* per code: 1 matches inside, 2 matches not_inside */
  int in, out;        /* which conditions are set */
} emit_stack_cond;

/* Splits f: *rest gets f without its stack conditions, *c those. Returns
 * 0, or -1 when out of memory. c->in and c->out are 0 when f has none. */
int emit_stack_cond_init(const mt_analysis *a, const mt_filter *f, mt_filter *rest,
                         emit_stack_cond *c);
int emit_stack_cond_pass(const emit_stack_cond *c, const uint32_t *codes, size_t n);
void emit_stack_cond_free(emit_stack_cond *c);

/* As mt_analysis_tally_sites, deciding --inside / --not-inside on the
 * backtraces (see above) rather than on the analysis' stack tree. */
int emit_tally_sites(const mt_analysis *a, const mt_filter *f, mt_tally *per_code,
                     mt_tally *total);

/* Objects grouped by site (--by function or line: from the per-site-code
 * tallies of mt_analysis_tally_sites, which needs no stack tree) or by
 * stack (--by stack: from mt_analysis_tally_stacks; stacks whose frames
 * print the same are one group). Only entries with sampled objects are
 * grouped. */
typedef struct emit_groups {
  int by;
  size_t n;              /* groups */
  emit_site *site;       /* --by function/line: each group's site */
  mt_tally *tally;       /* --by function/line: each group's summed tally */
  uint32_t *rep;         /* --by stack: each group's smallest stack id,
                            ascending; its tally is per_stack[rep] */
  const mt_tally *per_stack;
  emit_stacks stacks;    /* --by stack: where the ids come from */
  /* --by stack: stacks with objects merged into another printing alike (the
   * smallest such stack id) -> that stack; canon is NULL when none were */
  mt__u64map canon_map, *canon;
} emit_groups;

/* Return 0, or -1 when out of memory. */
int emit_group_sites(const mt_analysis *a, int by, const mt_tally *per_code, emit_groups *g);
/* per_stack has one tally per stack of st (nstacks of them). Stacks
 * printing alike have their tallies moved into the first one's entry of
 * per_stack, which must then outlive the groups; no array of the stack
 * count is kept beyond that (traces can hold tens of millions of stacks).
 * emit_canon gives the group's stack of any stack with objects. */
int emit_group_stacks(const emit_stacks *st, size_t nstacks, mt_tally *per_stack,
                      emit_groups *g);
void emit_groups_free(emit_groups *g);
static inline const mt_tally *emit_group_tally(const emit_groups *g, size_t i) {
  return g->tally ? &g->tally[i] : &g->per_stack[g->rep[i]];
}
/* A group's site: its own (--by function/line), or its stack's (of the
 * analysis' stack tree). */
static inline emit_site emit_group_site(const mt_analysis *a, const emit_groups *g, size_t i) {
  return g->site ? g->site[i] : emit_stack_site(a, g->rep[i]);
}
/* --by stack: the printed stack of a stack (a group's rep). */
static inline uint32_t emit_canon(const emit_groups *g, uint32_t stack) {
  uint32_t *to = g->canon ? mt__u64map_get(g->canon, stack) : NULL;
  return to ? *to - 1 : stack;
}
/* Orders two groups by their names (site, or printed frames). */
int emit_group_name_cmp(const mt_analysis *a, const emit_groups *g, uint32_t x, uint32_t y);
/* The analysis' own stack tree as an emit_stacks. */
static inline emit_stacks emit_tree(const mt_analysis *a) {
  emit_stacks st = {a, NULL};
  return st;
}

/* Puts the first k elements of idx[0..n) in the order of cmp (qsort_r
 * style) at its front, sorted; k = 0 or k >= n sorts everything. A bounded
 * heap: n log k comparisons, so showing the top 20 of millions of stacks
 * does not order them all. */
void emit_select(uint32_t *idx, size_t n, size_t k,
                 int (*cmp)(const void *, const void *, void *), void *ctx);

#endif
