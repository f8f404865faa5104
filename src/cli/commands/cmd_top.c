/* memtrace top: allocation sites (or stacks) ranked by estimated bytes or
 * objects: mt_rank, rendered as a table, CSV or JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/human.h"
#include "cli.h"
#include "memtrace/rank.h"
#include "table.h"

static const char usage[] =
    "usage: memtrace top [OPTIONS] TRACE...\n"
    "\n"
    "Ranks TRACE's allocation sites by the bytes (or objects) they allocated,\n"
    "estimated from the samples, each with its 95% confidence interval.\n"
    "Several traces (files, or directories of .ctf files: the traces of a\n"
    "process tree, `memtrace run -o 'x.%p.ctf'`) rank as one: sites matched\n"
    "by function and file (and line), their figures added (each trace's\n"
    "estimates at its own rate). --by stack takes one trace.\n"
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
    "  --by-process           with several traces: a site of each process is a\n"
    "                         row of its own, named by executable and pid\n"
    "  --format table|csv|json\n"
    "                         output format (default table)\n"
    "\n" MT_FILTER_OPTIONS_HELP
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
    "fields plus the totals and the filter (docs/json.md).\n"
    "\n"
    "Ties are broken by site name, so the output is deterministic.\n";

enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };

/* The rows' stack (by stack) as text: frames joined by sep, then "... N
 * more frames" when cut. */
static const char *stack_text(mt_str *b, const mt_rank_row *row, const char *sep) {
  mt_str_clear(b);
  for (size_t i = 0; i < row->nframes; i++) {
    const mt_stack_frame *f = &row->frames[i];
    if (i) mt_str_printf(b, "%s", sep);
    if (f->function) mt_str_printf(b, "%s (%s:%" PRIu32 ")", f->function, f->file, f->line);
    else mt_str_printf(b, "#%" PRIx64, f->code);
  }
  size_t more = row->frames_total - row->nframes;
  if (more)
    mt_str_printf(b, "%s... %zu more frame%s", row->nframes ? sep : "", more,
                  mt_human_plural(more));
  return mt_str_get(b);
}

static const char *site_text(mt_str *b, const mt_site *s, int with_line) {
  mt_str_clear(b);
  size_t need = strlen(s->function) + strlen(s->file) + 48;
  char *buf = malloc(need);
  if (!buf) mt_cli_nomem(&mt_cmd_top);
  mt_str_printf(b, "%s", mt_site_text(s, with_line, buf, need));
  free(buf);
  return mt_str_get(b);
}

static double pct(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }

/* native: a native program's trace, told in its words ("freed"). */

static void table(mt_out *o, const char *path, const mt_ranking *r, const mt_filter *f,
                  int native, const mt_cli_trace_set *t) {
  char b1[64], b2[96], b3[64], b4[96], *ftext = mt_cli_filter_words(f, native);
  int by_objects = r->order == MT_ORDER_OBJECTS;
  const mt_estimate *tb = &r->total_bytes, *to = &r->total_objects;
  mt_out_printf(o, "Top allocation sites of %s by estimated %s, grouped by %s\n", path,
                by_objects ? "objects" : "bytes",
                r->by == MT_BY_LINE ? "line" : r->by == MT_BY_STACK ? "stack" : "function");
  char rates[160];
  mt_out_printf(o, "%s; filter: %s\n", mt_cli_rates_text(rates, sizeof rates, t), ftext);
  free(ftext);
  mt_out_printf(o, "Total: %s %s in %s objects %s from %" PRIu64 " sample%s",
                mt_human_bytes(b1, sizeof b1, tb->value),
                mt_human_interval_note(b2, sizeof b2, tb->value, tb->lo, tb->hi, 1),
                mt_human_count(b3, sizeof b3, to->value),
                mt_human_interval_note(b4, sizeof b4, to->value, to->lo, to->hi, 0),
                r->total.samples, mt_human_plural(r->total.samples));
  if (!mt_filter_selects_all(f))
    mt_out_printf(o, " = %s of the trace's bytes (%s), %s of its objects\n",
                  mt_human_percent(b1, sizeof b1, tb->value, r->trace_bytes.value),
                  mt_human_bytes(b2, sizeof b2, r->trace_bytes.value),
                  mt_human_percent(b3, sizeof b3, to->value, r->trace_objects.value));
  else
    mt_out_str(o, t->n > 1 ? " (every object of the traces)\n" : " (the whole trace)\n");
  if (r->groups == 0) {
    mt_out_str(o, "No allocations match the filter.\n");
    return;
  }
  mt_out_printf(o, "Showing %zu of %zu %s.\n\n", r->nrows, r->groups,
                r->by == MT_BY_STACK ? "stacks" : "sites");
  static const char *const heads[] = {"rank",    "bytes",        "95% interval", "%",
                                      "objects", "95% interval", "samples",      "site"};
  mt_table tab;
  mt_str site = {0};
  mt_table_init(&tab, 8, heads, "rrlrrlrl");
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    const mt_estimate *eb = &row->bytes, *eo = &row->objects;
    char rank[24], bytes[32], bi[96], share[16], objs[32], oi[96], samples[24];
    snprintf(rank, sizeof rank, "%zu", i + 1);
    snprintf(samples, sizeof samples, "%" PRIu64, row->tally.samples);
    const char *cells[] = {
        rank,
        mt_human_bytes(bytes, sizeof bytes, eb->value),
        mt_human_interval(bi, sizeof bi, eb->value, eb->lo, eb->hi, 1),
        mt_human_percent(share, sizeof share, by_objects ? eo->value : eb->value,
                         by_objects ? to->value : tb->value),
        mt_human_count(objs, sizeof objs, eo->value),
        mt_human_interval(oi, sizeof oi, eo->value, eo->lo, eo->hi, 0),
        samples,
        r->by == MT_BY_STACK ? stack_text(&site, row, "\n")
                             : site_text(&site, &row->site, r->by == MT_BY_LINE)};
    char proc[128], *with = NULL;
    if (r->by_process) { /* the process first */
      with = malloc(strlen(cells[7]) + sizeof proc);
      if (with) {
        mt_cli_process_text(proc, sizeof proc, t, row->trace);
        sprintf(with, "%s%s", proc, cells[7]);
        cells[7] = with;
      }
    }
    mt_table_row(&tab, cells);
    free(with);
  }
  mt_table_print(&tab, o, "");
  mt_table_free(&tab);
  mt_str_free(&site);
}

static void csv(mt_out *o, const mt_ranking *r) {
  mt_str site = {0}, stack = {0};
  mt_out_str(o, "rank,site,function,file,line,bytes,bytes_lo,bytes_hi,bytes_percent,"
                "objects,objects_lo,objects_hi,objects_percent,samples,sampled_objects");
  mt_out_str(o, r->by == MT_BY_STACK ? ",stack\n" : "\n");
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    const mt_site *s = &row->site;
    mt_out_printf(o, "%zu,", i + 1);
    mt_csv_str(o, site_text(&site, s, r->by != MT_BY_FUNCTION));
    mt_out_char(o, ',');
    if (s->kind == MT_SITE_LOCATION) {
      mt_csv_str(o, s->function);
      mt_out_char(o, ',');
      mt_csv_str(o, s->file);
      mt_out_char(o, ',');
      if (r->by != MT_BY_FUNCTION) mt_out_printf(o, "%" PRIu32, s->line);
    } else {
      mt_out_str(o, ",,");
    }
    double v[] = {row->bytes.value,   row->bytes.lo,   row->bytes.hi,
                  pct(row->bytes.value, r->total_bytes.value),
                  row->objects.value, row->objects.lo, row->objects.hi,
                  pct(row->objects.value, r->total_objects.value)};
    for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
      mt_out_char(o, ',');
      mt_csv_num(o, v[k]);
    }
    mt_out_printf(o, ",%" PRIu64 ",%" PRIu64, row->tally.samples, row->tally.objects);
    if (r->by == MT_BY_STACK) {
      mt_out_char(o, ',');
      mt_csv_str(o, stack_text(&stack, row, " <- "));
    }
    mt_out_char(o, '\n');
  }
  mt_str_free(&site);
  mt_str_free(&stack);
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_top;
  int by = MT_BY_FUNCTION, sort = 0, format = FORMAT_TABLE, by_process = 0;
  size_t limit = 20, depth = 10;
  static const char *args[MT_CLI_MAX_TRACES];
  mt_filter f;
  mt_filter_init(&f);
  const mt_option options[] = {
      {"--by", NULL, MT_OPT_CHOICE, &by, "function|line|stack", 0, 0, 0},
      {"--sort", NULL, MT_OPT_CHOICE, &sort, "bytes|objects", 0, 0, 0},
      {"--format", NULL, MT_OPT_CHOICE, &format, "table|csv|json", 0, 0, 0},
      {"-n", NULL, MT_OPT_COUNT, &limit, NULL, 0, 0, 0},
      {"--depth", NULL, MT_OPT_COUNT, &depth, NULL, 0, 0, 0},
      {"--by-process", NULL, MT_OPT_FLAG, &by_process, NULL, 1, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(cmd, argc, argv, &spec);

  mt_rank_spec rs = {by, sort ? MT_ORDER_OBJECTS : MT_ORDER_BYTES, limit, depth};
  mt_keep keep = mt_cli_rank_keep(&f, &rs);
  mt_cli_trace_set t;
  mt_cli_load_set(cmd, args, nargs, keep, &f, &t);
  mt_cli_warn_unmatched(cmd, &f, (const mt_analysis *const *)t.as, t.n);
  if (by == MT_BY_STACK && (t.n > 1 || by_process))
    mt_cli_usage_error(cmd, "--by stack ranks one trace (%zu given)", t.n);
  mt_ranking *r;
  int rc = mt_rank_traces((const mt_analysis *const *)t.as, t.n, &f, &rs, by_process, &r);
  if (rc == MT_ERR_INVALID && keep == MT_KEEP_SITES) { /* see mt_rank_folds */
    mt_cli_free_set(&t);
    mt_cli_load_set(cmd, args, nargs, MT_KEEP_ALL, NULL, &t);
    rc = mt_rank_traces((const mt_analysis *const *)t.as, t.n, &f, &rs, by_process, &r);
  }
  if (rc != MT_OK) mt_cli_nomem(cmd);
  char many[128];
  snprintf(many, sizeof many, "%zu traces (%s ...)", t.n, t.paths[0]);
  const char *what = t.n == 1 ? t.paths[0] : many;
  if (format == FORMAT_JSON) {
    mt_json j;
    mt_cli_json_begin(&j, cmd, t.n == 1 ? t.paths[0] : NULL, t.n == 1 ? t.as[0] : NULL);
    if (t.n > 1 || by_process) mt_cli_json_set(&j, &t);
    mt_json_ranking(&j, r, &f);
    mt_cli_json_end(&j, cmd);
  } else {
    mt_out out;
    mt_out_init(&out, STDOUT_FILENO);
    int native = 1;
    for (size_t i = 0; i < t.n; i++) native &= !mt_analysis_has_runtime_heap(t.as[i]);
    if (format == FORMAT_CSV) csv(&out, r);
    else table(&out, what, r, &f, native, &t);
    mt_out_flush(&out);
    mt_out_free(&out);
  }
  mt_ranking_free(r);
  mt_cli_free_set(&t);
  return 0;
}

const mt_command mt_cmd_top = {
    "top", "allocation sites ranked by estimated bytes or objects, with 95% intervals",
    usage, run};
