/* memtrace top: allocation sites ranked by estimated bytes or objects.
 *
 * The objects passing the filter are tallied in one pass per site code
 * (emit_tally_sites: mt_analysis_tally_sites, or one pass over the
 * backtraces for --inside/--not-inside; no stack tree either way) and the
 * entries grouped by function or line, their tallies summed; with --by
 * stack, stack_rank groups the objects by printed stack from their
 * backtraces and sums the tallies of the groups shown (no stack tree
 * either; the total is the per-site one). Estimates and
 * intervals come from each group's summed tally, never from combining
 * per-entry intervals (tallies add; intervals do not). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sites.h"
#include "stack_rank.h"

static const char usage[] =
    "usage: memtrace top [OPTIONS] TRACE\n"
    "\n"
    "Ranks TRACE's allocation sites by the bytes (or objects) they allocated,\n"
    "estimated from the samples, each with its 95% confidence interval.\n"
    "A site is the innermost source location of an allocation's stack\n"
    "(skipping up to 2 frames the trace has no location for).\n"
    "\n"
    "Options:\n"
    "  --by function|line|stack\n"
    "                         group by the site's function (name and file; the\n"
    "                         default), by its line, or by the whole stack\n"
    "  --sort bytes|objects   rank by estimated bytes (default) or objects\n"
    "  -n N                   show the first N sites (default 20; 0: all)\n"
    "  --depth N              with --by stack: frames shown per stack\n"
    "                         (default 10; 0: all)\n"
    "  --format table|csv|json\n"
    "                         output format (default table)\n"
    "\n" MT_CLI_FILTER_HELP
    "\n"
    "The table starts with the totals of the objects passing the filter and\n"
    "their share of the whole trace, then one row per site: rank, estimated\n"
    "bytes and their 95% interval, the share of the filtered total (of the\n"
    "ranking quantity), estimated objects and their interval, samples, site.\n"
    "Intervals read 'exact' when the trace sampled every word (rate 1).\n"
    "Stacks print innermost frame (the allocation point) first.\n"
    "\n"
    "CSV columns: rank, site, function, file, line, bytes, bytes_lo,\n"
    "bytes_hi, bytes_percent, objects, objects_lo, objects_hi,\n"
    "objects_percent, samples, sampled_objects, and with --by stack, stack\n"
    "(frames innermost first, separated by ' <- '). JSON holds the same\n"
    "fields plus the totals and the filter.\n"
    "\n"
    "Ties are broken by site name, so the output is deterministic.\n";

typedef struct top {
  const mt_analysis *a;
  int by, by_objects;
  emit_groups g;
  /* --by stack: the rows shown, from stack_rank; else NULL and the rows
   * are groups of g */
  stack_rank_row *rows;
  uint32_t *codes;
  size_t codes_cap;
} top;

/* Memory for one pass of stack_rank's groups. */
#define TOP_RANK_BUDGET (24u << 20)

/* Ranks on the tallies: within one trace the bytes estimate is samples
 * times a constant and the objects estimate is the tally's ht, so no
 * estimate is computed for the groups that are not shown. */
static int order(const void *px, const void *py, void *ctx) {
  const top *t = ctx;
  uint32_t x = *(const uint32_t *)px, y = *(const uint32_t *)py;
  const mt_tally *tx = emit_group_tally(&t->g, x), *ty = emit_group_tally(&t->g, y);
  if (t->by_objects ? tx->ht != ty->ht : tx->samples != ty->samples) {
    if (t->by_objects) return tx->ht > ty->ht ? -1 : 1;
    return tx->samples > ty->samples ? -1 : 1;
  }
  int c = emit_group_name_cmp(t->a, &t->g, x, y);
  if (c) return c;
  return x < y ? -1 : x > y;
}

static double pct(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }

/* Row r's tally and site: of a stack_rank row (--by stack) or of a group
 * of sites; and, by stack, its frames (see emit_stack_frames). */
static const mt_tally *row_tally(const top *t, const uint32_t *idx, size_t r) {
  return t->rows ? &t->rows[r].tally : emit_group_tally(&t->g, idx[r]);
}
static emit_site row_site(const top *t, const uint32_t *idx, size_t r) {
  if (t->rows) return emit_code_site(t->a, mt_analysis_backtrace_site(t->a, t->rows[r].bt));
  return emit_group_site(t->a, &t->g, idx[r]);
}
static size_t row_frames(top *t, size_t r, size_t depth, emit_frame **fr, size_t *cap) {
  size_t n;
  while ((n = mt_analysis_backtrace_codes(t->a, t->rows[r].bt, t->codes, t->codes_cap)) >
         t->codes_cap) {
    t->codes_cap = n;
    t->codes = emit_xrealloc(&mt_cmd_top, t->codes, n * sizeof *t->codes);
  }
  return emit_codes_frames(t->a, t->codes, n, depth, fr, cap);
}

/* The frames of row r's stack into b, `sep` between frames. */
static const char *stack_text(emit_str *b, top *t, size_t r, size_t depth,
                              const char *sep, emit_frame **fr, size_t *cap) {
  size_t total = row_frames(t, r, depth, fr, cap);
  size_t shown = depth && total > depth ? depth : total;
  emit_str_clear(b);
  for (size_t i = 0; i < shown; i++) {
    if (i) emit_str_printf(b, "%s", sep);
    emit_frame_text(b, &(*fr)[i]);
  }
  if (shown < total)
    emit_str_printf(b, "%s... %zu more frame%s", shown ? sep : "", total - shown,
                    emit_plural(total - shown));
  return emit_str_get(b);
}

static void csv_row(mt_out *o, const top *t, const mt_tally *tally, const emit_site *sp,
                    size_t rank, const mt_estimate *tb, const mt_estimate *to, const char *site,
                    const char *stack) {
  mt_estimate eb = mt_estimate_bytes(t->a, tally), eo = mt_estimate_objects(t->a, tally);
  emit_site s = *sp;
  mt_out_printf(o, "%zu,", rank);
  emit_csv_str(o, site);
  mt_out_char(o, ',');
  if (s.kind == EMIT_SITE_LOCATION) {
    emit_csv_str(o, mt_analysis_function_name(t->a, s.function));
    mt_out_char(o, ',');
    emit_csv_str(o, mt_analysis_function_file(t->a, s.function));
    mt_out_char(o, ',');
    if (t->by != EMIT_BY_FUNCTION) mt_out_printf(o, "%" PRIu32, s.line);
  } else {
    mt_out_str(o, ",,");
  }
  const mt_estimate *b = &eb, *ob = &eo;
  double v[] = {b->value,  b->lo,   b->hi, pct(b->value, tb->value), ob->value,
                ob->lo,    ob->hi,  pct(ob->value, to->value)};
  for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
    mt_out_char(o, ',');
    emit_csv_num(o, v[k]);
  }
  mt_out_printf(o, ",%" PRIu64 ",%" PRIu64, tally->samples, tally->objects);
  if (stack) {
    mt_out_char(o, ',');
    emit_csv_str(o, stack);
  }
  mt_out_char(o, '\n');
}

static void json_tally(mt_out *o, const mt_analysis *a, const mt_tally *t) {
  mt_out_str(o, "{\"bytes\": ");
  emit_json_estimate(o, mt_estimate_bytes(a, t));
  mt_out_str(o, ", \"objects\": ");
  emit_json_estimate(o, mt_estimate_objects(a, t));
  mt_out_printf(o, ", \"samples\": %" PRIu64 ", \"sampled_objects\": %" PRIu64, t->samples,
                t->objects);
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_top;
  const char *path = NULL, *v;
  int format = EMIT_TABLE;
  size_t limit = 20, depth = 10;
  top t = {0};
  mt_filter f;
  mt_filter_init(&f);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (mt_cli_is_help(o)) return mt_cli_help(cmd);
    if (mt_cli_filter_option(cmd, argc, argv, &i, &f)) continue;
    if ((v = emit_option_value(cmd, argc, argv, &i, "--by"))) t.by = emit_by_option(cmd, v, 1);
    else if ((v = emit_option_value(cmd, argc, argv, &i, "--sort"))) {
      if (strcmp(v, "bytes") == 0) t.by_objects = 0;
      else if (strcmp(v, "objects") == 0) t.by_objects = 1;
      else mt_cli_usage_error(cmd, "--sort takes bytes or objects, not '%s'", v);
    } else if ((v = emit_option_value(cmd, argc, argv, &i, "--format")))
      format = emit_format_option(cmd, v, EMIT_TABLE | EMIT_CSV | EMIT_JSON);
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

  mt_analysis *a = mt_cli_load(path);
  t.a = a;
  /* The stack tree is never built (it costs time and memory in the number
   * of distinct stacks: a gigabyte for millions). The totals and the sites
   * come from the tallies per site code; by stack, the first N stacks from
   * stack_rank, in bounded memory. */
  size_t ntallies = mt_analysis_code_count(a) + 1;
  mt_tally *tallies = malloc(ntallies * sizeof *tallies), all, total;
  if (!tallies) emit_nomem(cmd);
  /* The whole trace's total first, for the filtered total's share. */
  mt_filter none;
  mt_filter_init(&none);
  int filtered = !emit_filter_is_all(&f);
  if ((filtered && emit_tally_sites(a, &none, tallies, &all) != MT_OK) ||
      emit_tally_sites(a, &f, tallies, &total) != MT_OK)
    emit_nomem(cmd);
  if (!filtered) all = total;

  size_t n, shown;
  uint32_t *idx = NULL;
  if (t.by == EMIT_BY_STACK) {
    free(tallies);
    tallies = NULL;
    /* the tests set a small budget to exercise the passes on small traces */
    const char *env = getenv("MEMTRACE_STACK_RANK_BUDGET");
    size_t budget = env && *env ? (size_t)strtoull(env, NULL, 10) : TOP_RANK_BUDGET;
    if (stack_rank(a, &f, t.by_objects, limit, budget, &t.rows, &shown, &n))
      emit_nomem(cmd);
  } else {
    if (emit_group_sites(a, t.by, tallies, &t.g) != 0) emit_nomem(cmd);
    n = t.g.n;
    idx = emit_xrealloc(cmd, NULL, (n + 1) * sizeof *idx);
    for (size_t g = 0; g < n; g++) idx[g] = (uint32_t)g;
    emit_select(idx, n, limit, order, &t);
    shown = limit && limit < n ? limit : n;
  }

  mt_estimate tb = mt_estimate_bytes(a, &total), to = mt_estimate_objects(a, &total);
  mt_estimate ab = mt_estimate_bytes(a, &all), ao = mt_estimate_objects(a, &all);
  const mt_estimate *key_total = t.by_objects ? &to : &tb;
  char b1[64], b2[64], b3[64], b4[64];
  emit_str fstr = {0}, site = {0}, stack = {0};
  const char *ftext = emit_filter_text(&fstr, &f);
  emit_frame *fr = NULL;
  size_t frcap = 0;
  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);

  if (format == EMIT_TABLE) {
    mt_out_printf(&out, "Top allocation sites of %s by estimated %s, grouped by %s\n", path,
                  t.by_objects ? "objects" : "bytes", emit_by_name(t.by));
    mt_out_printf(&out, "Sample rate: %g; filter: %s\n", mt_analysis_info(a)->sample_rate,
                  ftext);
    mt_out_printf(&out, "Total: %s %s in %s objects %s from %" PRIu64 " sample%s",
                  emit_bytes(b1, sizeof b1, tb.value), emit_interval_note(b2, sizeof b2, tb, 1),
                  emit_count(b3, sizeof b3, to.value), emit_interval_note(b4, sizeof b4, to, 0),
                  total.samples, emit_plural(total.samples));
    if (filtered)
      mt_out_printf(&out, " = %s of the trace's bytes (%s), %s of its objects\n",
                    emit_percent(b1, sizeof b1, tb.value, ab.value),
                    emit_bytes(b2, sizeof b2, ab.value),
                    emit_percent(b3, sizeof b3, to.value, ao.value));
    else
      mt_out_str(&out, " (the whole trace)\n");
    if (n == 0) {
      mt_out_str(&out, "No allocations match the filter.\n");
    } else {
      mt_out_printf(&out, "Showing %zu of %zu %s.\n\n", shown, n,
                    t.by == EMIT_BY_STACK ? "stacks" : "sites");
      static const char *const heads[] = {"rank", "bytes",   "95% interval", "%",
                                          "objects", "95% interval", "samples", "site"};
      emit_table tab;
      emit_table_init(&tab, 8, heads, "rrlrrlrl");
      for (size_t r = 0; r < shown; r++) {
        const mt_tally *tally = row_tally(&t, idx, r);
        mt_estimate eb = mt_estimate_bytes(a, tally), eo = mt_estimate_objects(a, tally);
        char rank[24], bytes[32], bi[80], share[16], objs[32], oi[80], samples[24];
        snprintf(rank, sizeof rank, "%zu", r + 1);
        snprintf(samples, sizeof samples, "%" PRIu64, tally->samples);
        emit_str_clear(&site);
        if (t.by == EMIT_BY_STACK) {
          stack_text(&site, &t, r, depth, "\n", &fr, &frcap);
        } else {
          emit_site s = row_site(&t, idx, r);
          emit_site_text(&site, a, &s, t.by == EMIT_BY_LINE);
        }
        const char *cells[] = {rank,
                               emit_bytes(bytes, sizeof bytes, eb.value),
                               emit_interval(bi, sizeof bi, eb, 1),
                               emit_percent(share, sizeof share,
                                            t.by_objects ? eo.value : eb.value, key_total->value),
                               emit_count(objs, sizeof objs, eo.value),
                               emit_interval(oi, sizeof oi, eo, 0),
                               samples,
                               emit_str_get(&site)};
        emit_table_row(&tab, cells);
      }
      emit_table_print(&tab, &out, "");
      emit_table_free(&tab);
    }
  } else if (format == EMIT_CSV) {
    mt_out_str(&out, "rank,site,function,file,line,bytes,bytes_lo,bytes_hi,bytes_percent,"
                     "objects,objects_lo,objects_hi,objects_percent,samples,sampled_objects");
    mt_out_str(&out, t.by == EMIT_BY_STACK ? ",stack\n" : "\n");
    for (size_t r = 0; r < shown; r++) {
      emit_site s = row_site(&t, idx, r);
      emit_str_clear(&site);
      emit_site_text(&site, a, &s, t.by != EMIT_BY_FUNCTION);
      csv_row(&out, &t, row_tally(&t, idx, r), &s, r + 1, &tb, &to, emit_str_get(&site),
              t.by == EMIT_BY_STACK
                  ? stack_text(&stack, &t, r, depth, " <- ", &fr, &frcap)
                  : NULL);
    }
  } else {
    const mt_trace_info *info = mt_analysis_info(a);
    mt_out_str(&out, "{\n  \"command\": \"top\",\n  \"trace\": ");
    emit_json_str(&out, path);
    mt_out_str(&out, ",\n  \"sample_rate\": ");
    emit_json_num(&out, info->sample_rate);
    mt_out_printf(&out, ",\n  \"by\": \"%s\",\n  \"sort\": \"%s\",\n  \"filter\": ",
                  emit_by_name(t.by), t.by_objects ? "objects" : "bytes");
    emit_json_filter(&out, &f);
    mt_out_str(&out, ",\n  \"filter_text\": ");
    emit_json_str(&out, ftext);
    mt_out_str(&out, ",\n  \"total\": ");
    json_tally(&out, a, &total);
    mt_out_str(&out, ", \"bytes_percent_of_trace\": ");
    emit_json_num(&out, pct(tb.value, ab.value));
    mt_out_str(&out, ", \"objects_percent_of_trace\": ");
    emit_json_num(&out, pct(to.value, ao.value));
    mt_out_str(&out, "},\n  \"trace_total\": ");
    json_tally(&out, a, &all);
    mt_out_printf(&out, "},\n  \"sites_total\": %zu,\n  \"shown\": %zu,\n  \"sites\": [", n,
                  shown);
    for (size_t r = 0; r < shown; r++) {
      const mt_tally *tally = row_tally(&t, idx, r);
      mt_estimate eb = mt_estimate_bytes(a, tally), eo = mt_estimate_objects(a, tally);
      emit_site s = row_site(&t, idx, r);
      emit_str_clear(&site);
      emit_site_text(&site, a, &s, t.by != EMIT_BY_FUNCTION);
      mt_out_printf(&out, "%s\n    {\"rank\": %zu, \"site\": ", r ? "," : "", r + 1);
      emit_json_str(&out, emit_str_get(&site));
      if (s.kind == EMIT_SITE_LOCATION) {
        mt_out_str(&out, ", \"function\": ");
        emit_json_str(&out, mt_analysis_function_name(a, s.function));
        mt_out_str(&out, ", \"file\": ");
        emit_json_str(&out, mt_analysis_function_file(a, s.function));
        if (t.by != EMIT_BY_FUNCTION) mt_out_printf(&out, ", \"line\": %" PRIu32, s.line);
      } else if (s.kind == EMIT_SITE_CODE) {
        mt_out_printf(&out, ", \"code\": \"%" PRIx64 "\"", s.code);
      }
      mt_out_str(&out, ",\n     \"bytes\": ");
      emit_json_estimate(&out, eb);
      mt_out_str(&out, ", \"bytes_percent\": ");
      emit_json_num(&out, pct(eb.value, tb.value));
      mt_out_str(&out, ",\n     \"objects\": ");
      emit_json_estimate(&out, eo);
      mt_out_str(&out, ", \"objects_percent\": ");
      emit_json_num(&out, pct(eo.value, to.value));
      mt_out_printf(&out, ",\n     \"samples\": %" PRIu64 ", \"sampled_objects\": %" PRIu64,
                    tally->samples, tally->objects);
      if (t.by == EMIT_BY_STACK) {
        size_t nf = row_frames(&t, r, depth, &fr, &frcap);
        size_t k = depth && nf > depth ? depth : nf;
        mt_out_printf(&out, ",\n     \"frames_total\": %zu, \"frames\": [", nf);
        for (size_t j = 0; j < k; j++) {
          if (j) mt_out_str(&out, ", ");
          emit_json_frame(&out, &fr[j]);
        }
        mt_out_char(&out, ']');
      }
      mt_out_char(&out, '}');
    }
    mt_out_str(&out, shown ? "\n  ]\n}\n" : "]\n}\n");
  }
  mt_out_flush(&out);
  mt_out_free(&out);
  free(fr);
  free(idx);
  emit_str_free(&fstr);
  emit_str_free(&site);
  emit_str_free(&stack);
  emit_groups_free(&t.g);
  free(t.rows);
  free(t.codes);
  free(tallies);
  mt_analysis_free(a);
  return 0;
}

const mt_command mt_cmd_top = {
    "top", "allocation sites ranked by estimated bytes or objects, with 95% intervals",
    usage, run};
