/* memtrace leaks: the objects a trace never saw collected, grouped by
 * allocation stack, longest-lived first.
 *
 * "Never collected" is the filter condition MT_COLLECTED_NEVER, which leaves
 * the filter's live-time condition free: `--live-at-peak` then asks which of
 * the never-collected objects were already allocated at the peak. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sites.h"
#include "tables.h"

static const char usage[] =
    "usage: memtrace leaks [OPTIONS] TRACE\n"
    "\n"
    "Lists the objects TRACE never saw collected, grouped by allocation stack,\n"
    "with their estimated bytes and count (95% intervals), longest-lived first:\n"
    "groups are ordered by their oldest allocation (then bytes, then stack).\n"
    "\n"
    "Never collected means still live at the end of the trace. In a garbage-\n"
    "collected program most such objects are simply alive at exit (globals,\n"
    "caches, the data the program was working on), not leaks; a leak shows as\n"
    "a group that is old, large, and keeps growing across runs or with time\n"
    "(compare --time windows, or two traces with memtrace diff --live-at-end).\n"
    "\n"
    "Options:\n"
    "  -n N                   show the first N groups (default 20; 0: all)\n"
    "  --depth N              frames shown per stack (default 10; 0: all)\n"
    "  --format table|json    output format (default table)\n"
    "\n" MT_CLI_FILTER_HELP
    "(--live-at-end, --never-collected are implied; --collected is refused.)\n"
    "\n"
    "Each group shows its age, the time from its oldest allocation to the end\n"
    "of the trace ('allocated 12.3 s before the end'), and its stack, innermost\n"
    "frame (the allocation point) first, as 'function (file:line)'; '#hex' is\n"
    "a code the trace has no location for. Stacks whose frames print the same\n"
    "are one group.\n";

typedef struct leaks {
  const mt_analysis *a;
  /* the stacks of the objects passing the filter only: a trie filled from
   * one pass over their backtraces, so the trace's whole stack tree is
   * never built */
  emit_trie trie;
  emit_stack_cond cond; /* --inside/--not-inside, decided here (no tree) */
  /* per trie node holding objects (a "slot"; few next to all nodes) */
  mt__u64map slot_of;       /* node -> slot */
  uint32_t *node;
  mt_tally *tally;
  uint64_t *oldest, *newest; /* allocation times */
  size_t nslots, cap;
  emit_groups g;
  mt_estimate *bytes, *objects; /* per group */
} leaks;

static int on_backtrace(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  leaks *l = ctx;
  uint32_t node, slot;
  if (!emit_stack_cond_pass(&l->cond, codes, n)) return 0;
  if (emit_trie_add(&l->trie, codes, n, &node)) return MT_ERR_NOMEM;
  uint32_t *ix = mt__u64map_get(&l->slot_of, node);
  if (ix) {
    slot = *ix - 1;
  } else {
    if (l->nslots == l->cap) {
      size_t cap = l->cap ? l->cap * 2 : 1024;
      uint32_t *nd = realloc(l->node, cap * sizeof *nd);
      if (nd) l->node = nd;
      mt_tally *t = realloc(l->tally, cap * sizeof *t);
      if (t) l->tally = t;
      uint64_t *o = realloc(l->oldest, cap * sizeof *o);
      if (o) l->oldest = o;
      uint64_t *w = realloc(l->newest, cap * sizeof *w);
      if (w) l->newest = w;
      if (!nd || !t || !o || !w) return MT_ERR_NOMEM;
      l->cap = cap;
    }
    slot = (uint32_t)l->nslots++;
    if (mt__u64map_put(&l->slot_of, node, slot)) return MT_ERR_NOMEM;
    l->node[slot] = node;
    memset(&l->tally[slot], 0, sizeof l->tally[slot]);
    l->oldest[slot] = MT_NEVER;
    l->newest[slot] = 0;
  }
  mt_tally_object(l->a, i, &l->tally[slot]);
  uint64_t t = mt_analysis_object(l->a, i).alloc_time;
  if (t < l->oldest[slot]) l->oldest[slot] = t;
  if (t > l->newest[slot]) l->newest[slot] = t;
  return 0;
}

/* The slot of a group's stack (which holds objects, so has one). */
static uint32_t group_slot(const leaks *l, uint32_t g) {
  return *mt__u64map_get(&l->slot_of, l->g.rep[g]) - 1;
}
static uint64_t group_oldest(const leaks *l, uint32_t g) { return l->oldest[group_slot(l, g)]; }
static uint64_t group_newest(const leaks *l, uint32_t g) { return l->newest[group_slot(l, g)]; }

static int order(const void *px, const void *py, void *ctx) {
  const leaks *l = ctx;
  uint32_t x = *(const uint32_t *)px, y = *(const uint32_t *)py;
  uint64_t ox = group_oldest(l, x), oy = group_oldest(l, y);
  if (ox != oy) return ox < oy ? -1 : 1;
  if (l->bytes[x].value != l->bytes[y].value) return l->bytes[x].value > l->bytes[y].value ? -1 : 1;
  int c = emit_group_name_cmp(l->a, &l->g, x, y);
  if (c) return c;
  return x < y ? -1 : x > y;
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_leaks;
  const char *path = NULL, *v;
  int format = EMIT_TABLE;
  size_t limit = 20, depth = 10;
  leaks l = {0};
  mt_filter f;
  mt_filter_init(&f);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (mt_cli_is_help(o)) return mt_cli_help(cmd);
    if (mt_cli_filter_option(cmd, argc, argv, &i, &f)) continue;
    if ((v = emit_option_value(cmd, argc, argv, &i, "--format")))
      format = emit_format_option(cmd, v, EMIT_TABLE | EMIT_JSON);
    else if ((v = emit_option_value(cmd, argc, argv, &i, "--depth")))
      depth = emit_count_option(cmd, "--depth", v);
    else if ((v = emit_option_value(cmd, argc, argv, &i, "-n")))
      limit = emit_count_option(cmd, "-n", v);
    else if (strcmp(o, "--") == 0 && i + 1 < argc && !path) path = argv[++i];
    else if (o[0] == '-' && o[1]) mt_cli_usage_error(cmd, "unknown option '%s'", o);
    else if (!path) path = o;
    else mt_cli_usage_error(cmd, "unexpected argument '%s'", o);
  }
  if (!path) mt_cli_usage_error(cmd, "missing TRACE");
  if (f.collected == MT_COLLECTED_IN)
    mt_cli_usage_error(cmd, "--collected contradicts leaks (objects never collected)");
  /* --live-at-end is what leaks means; as a live condition it would also
   * displace --live-at / --live-at-peak, so it is expressed as
   * "never collected" instead. */
  if (f.live == MT_LIVE_AT_END) f.live = MT_LIVE_ANY;
  f.collected = MT_COLLECTED_NEVER;

  mt_analysis *a = mt_cli_load(path);
  l.a = a;
  mt_filter rest;
  if (emit_trie_init(&l.trie) || emit_stack_cond_init(a, &f, &rest, &l.cond)) emit_nomem(cmd);
  int rc = mt_analysis_each_backtrace(a, &rest, on_backtrace, &l);
  if (rc != MT_OK) emit_nomem(cmd);
  emit_trie_done(&l.trie);
  /* per node for the grouping (which merges stacks printing alike) */
  mt_tally total = {0}, *per_node = calloc(l.trie.n, sizeof *per_node);
  if (!per_node) emit_nomem(cmd);
  for (size_t k = 0; k < l.nslots; k++) {
    per_node[l.node[k]] = l.tally[k];
    mt_tally_add(&total, &l.tally[k]);
  }
  emit_stacks st = {a, &l.trie};
  if (emit_group_stacks(&st, l.trie.n, per_node, &l.g) != 0) emit_nomem(cmd);
  /* fold the ages of merged stacks into the stack they joined */
  for (size_t k = 0; k < l.nslots && l.g.canon; k++) {
    uint32_t to = emit_canon(&l.g, l.node[k]);
    if (to == l.node[k]) continue;
    uint32_t s = *mt__u64map_get(&l.slot_of, to) - 1;
    if (l.oldest[k] < l.oldest[s]) l.oldest[s] = l.oldest[k];
    if (l.newest[k] > l.newest[s]) l.newest[s] = l.newest[k];
  }

  size_t n = l.g.n;
  l.bytes = emit_xrealloc(cmd, NULL, n * sizeof *l.bytes);
  l.objects = emit_xrealloc(cmd, NULL, n * sizeof *l.objects);
  uint32_t *idx = emit_xrealloc(cmd, NULL, n * sizeof *idx);
  for (size_t g = 0; g < n; g++) {
    l.bytes[g] = mt_estimate_bytes(a, emit_group_tally(&l.g, g));
    l.objects[g] = mt_estimate_objects(a, emit_group_tally(&l.g, g));
    idx[g] = (uint32_t)g;
  }
  qsort_r(idx, n, sizeof *idx, order, &l);
  size_t shown = limit && limit < n ? limit : n;

  uint64_t end = mt_analysis_duration(a);
  mt_estimate tb = mt_estimate_bytes(a, &total), to = mt_estimate_objects(a, &total);
  char b1[64], b2[64], b3[64], b4[64];
  emit_str fstr = {0}, line = {0};
  const char *ftext = emit_filter_text(&fstr, &f);
  emit_frame *fr = NULL;
  size_t frcap = 0;
  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);

  if (format == EMIT_TABLE) {
    mt_out_printf(&out, "Objects of %s never collected (still live at the end of the trace, "
                        "%s after its start)\n",
                  path, mt_cli_duration(b1, sizeof b1, (double)end));
    mt_out_printf(&out, "Sample rate: %g; filter: %s\n", mt_analysis_info(a)->sample_rate,
                  ftext);
    mt_out_printf(&out, "Total: %s %s in %s objects %s from %" PRIu64 " sample%s, %zu stack%s\n",
                  emit_bytes(b1, sizeof b1, tb.value), emit_interval_note(b2, sizeof b2, tb, 1),
                  emit_count(b3, sizeof b3, to.value), emit_interval_note(b4, sizeof b4, to, 0),
                  total.samples, emit_plural(total.samples), n, emit_plural(n));
    if (n == 0) mt_out_str(&out, "No object matching the filter was left uncollected.\n");
    else
      mt_out_printf(&out, "Showing %zu of %zu stacks, oldest allocation first; stacks "
                          "innermost frame first.\n",
                    shown, n);
    for (size_t r = 0; r < shown; r++) {
      uint32_t g = idx[r];
      uint64_t samples = emit_group_tally(&l.g, g)->samples;
      mt_out_printf(&out, "\n#%zu  %s %s in %s objects %s (%" PRIu64 " sample%s)\n", r + 1,
                    emit_bytes(b1, sizeof b1, l.bytes[g].value),
                    emit_interval_note(b2, sizeof b2, l.bytes[g], 1),
                    emit_count(b3, sizeof b3, l.objects[g].value),
                    emit_interval_note(b4, sizeof b4, l.objects[g], 0), samples,
                    emit_plural(samples));
      mt_out_printf(&out, "    allocated %s before the end",
                    mt_cli_duration(b1, sizeof b1, (double)(end - group_oldest(&l, g))));
      if (group_newest(&l, g) != group_oldest(&l, g))
        mt_out_printf(&out, " (the newest %s before)",
                      mt_cli_duration(b1, sizeof b1, (double)(end - group_newest(&l, g))));
      mt_out_char(&out, '\n');
      size_t nf = emit_stack_frames(&st, l.g.rep[g], depth, &fr, &frcap);
      size_t k = depth && nf > depth ? depth : nf;
      if (nf == 0) mt_out_str(&out, "      (no backtrace)\n");
      for (size_t j = 0; j < k; j++) {
        emit_str_clear(&line);
        emit_frame_text(&line, &fr[j]);
        mt_out_str(&out, "      ");
        /* names come from the trace: keep control characters off the terminal */
        for (char *p = line.s; *p; p++)
          if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        mt_out_str(&out, line.s);
        mt_out_char(&out, '\n');
      }
      if (k < nf) mt_out_printf(&out, "      ... %zu more frame%s\n", nf - k, emit_plural(nf - k));
    }
  } else {
    mt_out_str(&out, "{\n  \"command\": \"leaks\",\n  \"trace\": ");
    emit_json_str(&out, path);
    mt_out_str(&out, ",\n  \"sample_rate\": ");
    emit_json_num(&out, mt_analysis_info(a)->sample_rate);
    mt_out_str(&out, ",\n  \"end_s\": ");
    emit_json_num(&out, (double)end / 1e6);
    mt_out_str(&out, ",\n  \"filter\": ");
    emit_json_filter(&out, &f);
    mt_out_str(&out, ",\n  \"filter_text\": ");
    emit_json_str(&out, ftext);
    mt_out_str(&out, ",\n  \"total\": {\"bytes\": ");
    emit_json_estimate(&out, tb);
    mt_out_str(&out, ", \"objects\": ");
    emit_json_estimate(&out, to);
    mt_out_printf(&out, ", \"samples\": %" PRIu64 ", \"sampled_objects\": %" PRIu64 "}",
                  total.samples, total.objects);
    mt_out_printf(&out, ",\n  \"stacks_total\": %zu,\n  \"shown\": %zu,\n  \"stacks\": [", n,
                  shown);
    for (size_t r = 0; r < shown; r++) {
      uint32_t g = idx[r];
      mt_out_printf(&out, "%s\n    {\"rank\": %zu, \"bytes\": ", r ? "," : "", r + 1);
      emit_json_estimate(&out, l.bytes[g]);
      mt_out_str(&out, ", \"objects\": ");
      emit_json_estimate(&out, l.objects[g]);
      mt_out_printf(&out, ",\n     \"samples\": %" PRIu64 ", \"sampled_objects\": %" PRIu64,
                    emit_group_tally(&l.g, g)->samples, emit_group_tally(&l.g, g)->objects);
      mt_out_str(&out, ", \"oldest_alloc_s\": ");
      emit_json_num(&out, (double)group_oldest(&l, g) / 1e6);
      mt_out_str(&out, ", \"newest_alloc_s\": ");
      emit_json_num(&out, (double)group_newest(&l, g) / 1e6);
      mt_out_str(&out, ", \"age_s\": ");
      emit_json_num(&out, (double)(end - group_oldest(&l, g)) / 1e6);
      size_t nf = emit_stack_frames(&st, l.g.rep[g], depth, &fr, &frcap);
      size_t k = depth && nf > depth ? depth : nf;
      mt_out_printf(&out, ",\n     \"frames_total\": %zu, \"frames\": [", nf);
      for (size_t j = 0; j < k; j++) {
        if (j) mt_out_str(&out, ", ");
        emit_json_frame(&out, &fr[j]);
      }
      mt_out_str(&out, "]}");
    }
    mt_out_str(&out, shown ? "\n  ]\n}\n" : "]\n}\n");
  }
  mt_out_flush(&out);
  mt_out_free(&out);
  free(fr);
  free(idx);
  emit_str_free(&fstr);
  emit_str_free(&line);
  free(l.bytes);
  free(l.objects);
  free(l.node);
  free(l.tally);
  free(l.oldest);
  free(l.newest);
  free(per_node);
  mt__u64map_free(&l.slot_of);
  emit_stack_cond_free(&l.cond);
  emit_groups_free(&l.g);
  emit_trie_free(&l.trie);
  mt_analysis_free(a);
  return 0;
}

const mt_command mt_cmd_leaks = {
    "leaks", "objects never collected, by allocation stack, longest-lived first", usage, run};
