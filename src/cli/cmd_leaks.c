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

#include "emit.h"
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
  emit_groups g;
  mt_estimate *bytes, *objects;
  uint64_t *oldest, *newest;
} leaks;

static int order(const void *px, const void *py, void *ctx) {
  const leaks *l = ctx;
  uint32_t x = *(const uint32_t *)px, y = *(const uint32_t *)py;
  if (l->oldest[x] != l->oldest[y]) return l->oldest[x] < l->oldest[y] ? -1 : 1;
  if (l->bytes[x].value != l->bytes[y].value) return l->bytes[x].value > l->bytes[y].value ? -1 : 1;
  int c = emit_group_name_cmp(l->a, &l->g, x, y);
  if (c) return c;
  return x < y ? -1 : x > y;
}

/* Each group's oldest and newest allocation. Only objects never collected
 * whose stack passed the filter are visited; the stack conditions (--inside)
 * are already settled by the tally, so the per-object test uses a filter
 * without them (a filter with them recomputes its stack table per call). */
static void ages(leaks *l, const mt_filter *f) {
  const mt_analysis *a = l->a;
  mt_filter objf = *f;
  objf.inside = objf.not_inside = NULL;
  size_t nobj = mt_analysis_object_count(a);
  /* printed stack -> group, for the groups only (not the stack count) */
  mt__u64map group_of = {0};
  for (size_t g = 0; g < l->g.n; g++) {
    l->oldest[g] = MT_NEVER;
    l->newest[g] = 0;
    if (mt__u64map_put(&group_of, l->g.rep[g], (uint32_t)g)) emit_nomem(&mt_cmd_leaks);
  }
  for (size_t i = 0; i < nobj; i++) {
    mt_object o = mt_analysis_object(a, i);
    if (o.free_time != MT_NEVER) continue;
    uint32_t *ix = mt__u64map_get(&group_of, emit_canon(&l->g, o.stack));
    if (!ix || !mt_analysis_matches(a, &objf, i)) continue;
    uint32_t g = *ix - 1;
    if (o.alloc_time < l->oldest[g]) l->oldest[g] = o.alloc_time;
    if (o.alloc_time > l->newest[g]) l->newest[g] = o.alloc_time;
  }
  mt__u64map_free(&group_of);
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
  size_t nstacks = mt_analysis_stack_count(a);
  mt_tally *per_stack = malloc(nstacks * sizeof *per_stack), total;
  if (!per_stack) emit_nomem(cmd);
  if (mt_analysis_tally_stacks(a, &f, per_stack, &total) != MT_OK ||
      emit_group_stacks(a, per_stack, &l.g) != 0)
    emit_nomem(cmd);

  size_t n = l.g.n;
  l.bytes = emit_xrealloc(cmd, NULL, n * sizeof *l.bytes);
  l.objects = emit_xrealloc(cmd, NULL, n * sizeof *l.objects);
  l.oldest = emit_xrealloc(cmd, NULL, n * sizeof *l.oldest);
  l.newest = emit_xrealloc(cmd, NULL, n * sizeof *l.newest);
  uint32_t *idx = emit_xrealloc(cmd, NULL, n * sizeof *idx);
  for (size_t g = 0; g < n; g++) {
    l.bytes[g] = mt_estimate_bytes(a, emit_group_tally(&l.g, g));
    l.objects[g] = mt_estimate_objects(a, emit_group_tally(&l.g, g));
    idx[g] = (uint32_t)g;
  }
  ages(&l, &f);
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
                    mt_cli_duration(b1, sizeof b1, (double)(end - l.oldest[g])));
      if (l.newest[g] != l.oldest[g])
        mt_out_printf(&out, " (the newest %s before)",
                      mt_cli_duration(b1, sizeof b1, (double)(end - l.newest[g])));
      mt_out_char(&out, '\n');
      size_t nf = emit_stack_frames(a, l.g.rep[g], depth, &fr, &frcap);
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
      if (k < nf) mt_out_printf(&out, "      ... %zu more frames\n", nf - k);
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
      emit_json_num(&out, (double)l.oldest[g] / 1e6);
      mt_out_str(&out, ", \"newest_alloc_s\": ");
      emit_json_num(&out, (double)l.newest[g] / 1e6);
      mt_out_str(&out, ", \"age_s\": ");
      emit_json_num(&out, (double)(end - l.oldest[g]) / 1e6);
      size_t nf = emit_stack_frames(a, l.g.rep[g], depth, &fr, &frcap);
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
  free(l.oldest);
  free(l.newest);
  emit_groups_free(&l.g);
  free(per_stack);
  mt_analysis_free(a);
  return 0;
}

const mt_command mt_cmd_leaks = {
    "leaks", "objects never collected, by allocation stack, longest-lived first", usage, run};
