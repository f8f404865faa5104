/* memtrace diff: per-site change in estimated bytes and objects between two
 * traces: mt_diff, each trace loaded (as top loads it: sums by site where
 * the filter allows), added and freed before the next is loaded, rendered
 * as a table, CSV or JSON. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/human.h"
#include "cli.h"
#include "memtrace/rank.h"
#include "table.h"

static const char usage[] =
    "usage: memtrace diff [OPTIONS] BASE NEW\n"
    "\n"
    "Compares two traces site by site: the estimated bytes (and objects) each\n"
    "allocation site allocated in BASE and in NEW, and the change. Sites are\n"
    "matched by function name and file (with --by line, and line), never by\n"
    "code addresses, which differ between runs. Sites whose last frames have\n"
    "no location are pooled as '(no location)'.\n"
    "\n"
    "A change is significant (marked *) when the 95% confidence intervals of\n"
    "the site's bytes in BASE and in NEW do not overlap. This is conservative:\n"
    "it rarely flags a change that sampling alone explains, and may miss small\n"
    "real ones. A site absent from one trace has 0 bytes there, with the\n"
    "interval of zero samples ([0, 3.7 / rate x word size]), so a site must\n"
    "be clearly sampled to count as new or gone. Significant changes come\n"
    "first, then by the size of the change in bytes, then by site name.\n"
    "\n"
    "BASE or NEW may be a directory: its .ctf files (a process tree's, from\n"
    "memtrace run -o 'DIR/x.%p.ctf', or a fleet's) are one side, their\n"
    "figures added; one side's traces must share their sample rate.\n"
    "\n"
    "Options:\n"
    "  --by function|line     match sites by function (default) or line\n"
    "  -n N                   show the first N sites (default 20; 0: all)\n"
    "  --format table|csv|json\n"
    "                         output format (default table)\n"
    "\n" MT_FILTER_OPTIONS_HELP
    "(Filters apply to both traces; times are from each trace's start.)\n"
    "\n"
    "CSV columns: rank, site, function, file, line, significant (1 or 0),\n"
    "base_bytes, base_bytes_lo, base_bytes_hi, new_bytes, new_bytes_lo,\n"
    "new_bytes_hi, change_bytes, change_percent (empty when BASE has none),\n"
    "base_objects, base_objects_lo, base_objects_hi, new_objects,\n"
    "new_objects_lo, new_objects_hi, change_objects, base_samples,\n"
    "new_samples.\n";

enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };

static const char *site_text(mt_str *b, const mt_diff *d, const mt_diff_row *r) {
  mt_str_clear(b);
  if (r->site.kind == MT_SITE_CODE) mt_str_printf(b, "(no location)");
  else if (r->site.kind == MT_SITE_NONE) mt_str_printf(b, "(no backtrace)");
  else if (d->by == MT_BY_LINE)
    mt_str_printf(b, "%s (%s:%" PRIu32 ")", r->site.function, r->site.file, r->site.line);
  else mt_str_printf(b, "%s (%s)", r->site.function, r->site.file);
  return mt_str_get(b);
}

static const char *change_pct(char *buf, size_t n, double base, double now) {
  if (base > 0) snprintf(buf, n, "%+.1f%%", 100 * (now - base) / base);
  else snprintf(buf, n, now > 0 ? "new" : "-");
  return buf;
}

static void table(mt_out *o, const char *const paths[2], const mt_diff *d, const mt_filter *f,
                  size_t shown) {
  char b[8][96], *ftext = mt_cli_filter_text(f);
  const mt_estimate *tb = d->total_bytes;
  mt_out_printf(o, "Allocation sites, %s -> %s, estimated bytes, matched by %s\n", paths[0],
                paths[1], d->by == MT_BY_LINE ? "line" : "function");
  for (int k = 0; k < 2; k++)
    mt_out_printf(o, "%s %s %s in %s objects (sample rate %g)\n", k ? "New: " : "Base:",
                  mt_human_bytes(b[0], sizeof b[0], tb[k].value),
                  mt_human_interval_note(b[1], sizeof b[1], tb[k].value, tb[k].lo, tb[k].hi, 1),
                  mt_human_count(b[2], sizeof b[2], d->total_objects[k].value),
                  d->sampling[k].rate);
  mt_out_printf(o, "Change: %s (%s), %s; filter: %s\n",
                mt_human_signed_bytes(b[0], sizeof b[0], tb[1].value - tb[0].value),
                change_pct(b[1], sizeof b[1], tb[0].value, tb[1].value),
                d->total_significant ? "significant" : "not significant", ftext);
  free(ftext);
  mt_out_printf(o,
                "%zu sites, %zu with a significant change (*: the 95%% intervals of the "
                "bytes do not overlap); showing %zu.\n\n",
                d->nrows, d->nsignificant, shown);
  static const char *const heads[] = {"",           "change",    "%",
                                      "base bytes", "95% interval", "new bytes",
                                      "95% interval", "base objects", "new objects", "site"};
  mt_table tab;
  mt_str site = {0};
  mt_table_init(&tab, 10, heads, "lrrrlrlrrl");
  for (size_t i = 0; i < shown; i++) {
    const mt_diff_row *r = &d->rows[i];
    const mt_estimate *s0 = &r->side[0].bytes, *s1 = &r->side[1].bytes;
    const char *cells[] = {r->significant ? "*" : "",
                           mt_human_signed_bytes(b[0], sizeof b[0], s1->value - s0->value),
                           change_pct(b[1], sizeof b[1], s0->value, s1->value),
                           mt_human_bytes(b[2], sizeof b[2], s0->value),
                           mt_human_interval(b[3], sizeof b[3], s0->value, s0->lo, s0->hi, 1),
                           mt_human_bytes(b[4], sizeof b[4], s1->value),
                           mt_human_interval(b[5], sizeof b[5], s1->value, s1->lo, s1->hi, 1),
                           mt_human_count(b[6], sizeof b[6], r->side[0].objects.value),
                           mt_human_count(b[7], sizeof b[7], r->side[1].objects.value),
                           site_text(&site, d, r)};
    mt_table_row(&tab, cells);
  }
  if (shown) mt_table_print(&tab, o, "");
  mt_table_free(&tab);
  mt_str_free(&site);
}

static void csv_estimate(mt_out *o, const mt_estimate *e) {
  double v[3] = {e->value, e->lo, e->hi};
  for (int k = 0; k < 3; k++) {
    mt_out_char(o, ',');
    mt_csv_num(o, v[k]);
  }
}

static void csv(mt_out *o, const mt_diff *d, size_t shown) {
  mt_str site = {0};
  mt_out_str(o, "rank,site,function,file,line,significant,base_bytes,base_bytes_lo,base_bytes_hi,"
                "new_bytes,new_bytes_lo,new_bytes_hi,change_bytes,change_percent,base_objects,"
                "base_objects_lo,base_objects_hi,new_objects,new_objects_lo,new_objects_hi,"
                "change_objects,base_samples,new_samples\n");
  for (size_t i = 0; i < shown; i++) {
    const mt_diff_row *r = &d->rows[i];
    const mt_diff_side *s0 = &r->side[0], *s1 = &r->side[1];
    mt_out_printf(o, "%zu,", i + 1);
    mt_csv_str(o, site_text(&site, d, r));
    mt_out_char(o, ',');
    mt_csv_str(o, r->site.function);
    mt_out_char(o, ',');
    mt_csv_str(o, r->site.file);
    mt_out_char(o, ',');
    if (d->by == MT_BY_LINE && r->site.kind == MT_SITE_LOCATION)
      mt_out_printf(o, "%" PRIu32, r->site.line);
    mt_out_printf(o, ",%d", r->significant);
    csv_estimate(o, &s0->bytes);
    csv_estimate(o, &s1->bytes);
    mt_out_char(o, ',');
    mt_csv_num(o, s1->bytes.value - s0->bytes.value);
    mt_out_char(o, ',');
    if (s0->bytes.value > 0)
      mt_csv_num(o, 100 * (s1->bytes.value - s0->bytes.value) / s0->bytes.value);
    csv_estimate(o, &s0->objects);
    csv_estimate(o, &s1->objects);
    mt_out_char(o, ',');
    mt_csv_num(o, s1->objects.value - s0->objects.value);
    mt_out_printf(o, ",%" PRIu64 ",%" PRIu64 "\n", s0->tally.samples, s1->tally.samples);
  }
  mt_str_free(&site);
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_diff;
  int by = MT_BY_FUNCTION, format = FORMAT_TABLE;
  size_t limit = 20;
  const char *paths[2];
  mt_filter f;
  mt_filter_init(&f);
  const mt_option options[] = {
      {"--by", NULL, MT_OPT_CHOICE, &by, "function|line", 0, 0, 0},
      {"--format", NULL, MT_OPT_CHOICE, &format, "table|csv|json", 0, 0, 0},
      {"-n", NULL, MT_OPT_COUNT, &limit, NULL, 0, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, paths, 2, 2, "BASE and NEW traces", 0, 0, NULL};
  mt_cli_parse(cmd, argc, argv, &spec);

  mt_diff *d;
  if (mt_diff_new(by, &d) != MT_OK) mt_cli_nomem(cmd);
  mt_rank_spec rs = {by, MT_ORDER_BYTES, 0, 0}; /* mt_diff_add's */
  mt_keep keep = mt_cli_rank_keep(&f, &rs);
  mt_cli_names names; /* each trace is freed once added */
  mt_cli_names_init(&names, &f);
  for (int k = 0; k < 2; k++) {
    /* a side is a trace, or a directory of them (a process tree's): each
     * loaded, added and freed in turn */
    char **side;
    size_t n = mt_cli_traces(cmd, &paths[k], 1, &side);
    for (size_t i = 0; i < n; i++) {
      mt_analysis *a = mt_cli_load_keep(side[i], keep, &f);
      int rc = mt_diff_add(d, k, a, &f);
      if (rc == MT_ERR_INVALID && keep == MT_KEEP_SITES) { /* see mt_rank_folds */
        mt_analysis_free(a);
        a = mt_cli_load(side[i]);
        rc = mt_diff_add(d, k, a, &f);
      }
      if (rc == MT_ERR_INVALID) {
        fprintf(stderr, "memtrace diff: %s: its sample rate (%g) is not that of the other "
                        "traces of %s (%g): one side's traces must share their rate\n",
                side[i], mt_analysis_info(a)->sample_rate, paths[k], d->sampling[k].rate);
        return 1;
      }
      if (rc != MT_OK) mt_cli_nomem(cmd);
      mt_cli_names_look(&names, a);
      mt_analysis_free(a);
      free(side[i]);
    }
    free(side);
  }
  mt_cli_names_warn(cmd, &names);
  mt_diff_finish(d);
  size_t shown = limit && limit < d->nrows ? limit : d->nrows;
  if (format == FORMAT_JSON) {
    mt_json j;
    mt_cli_json_begin(&j, cmd, NULL, NULL);
    mt_json_diff(&j, d, &f, limit, paths[0], paths[1]);
    mt_cli_json_end(&j, cmd);
  } else {
    mt_out out;
    mt_out_init(&out, STDOUT_FILENO);
    if (format == FORMAT_CSV) csv(&out, d, shown);
    else table(&out, paths, d, &f, shown);
    mt_out_flush(&out);
    mt_out_free(&out);
  }
  mt_diff_free(d);
  return 0;
}

const mt_command mt_cmd_diff = {
    "diff", "per-site change in estimated bytes and objects between two traces", usage, run};
