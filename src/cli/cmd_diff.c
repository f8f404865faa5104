/* memtrace diff: per-site change in estimated bytes and objects between two
 * traces.
 *
 * Sites are matched by function name and file (and line with --by line),
 * never by code values, which differ between runs. Each trace is loaded,
 * reduced to per-site estimates and freed before the next is loaded, so the
 * memory needed is that of the larger trace, not of both. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sites.h"
#include "tables.h"

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
    "Options:\n"
    "  --by function|line     match sites by function (default) or line\n"
    "  -n N                   show the first N sites (default 20; 0: all)\n"
    "  --format table|csv|json\n"
    "                         output format (default table)\n"
    "\n" MT_CLI_FILTER_HELP
    "(Filters apply to both traces; times are from each trace's start.)\n"
    "\n"
    "CSV columns: rank, site, function, file, line, significant (1 or 0),\n"
    "base_bytes, base_bytes_lo, base_bytes_hi, new_bytes, new_bytes_lo,\n"
    "new_bytes_hi, change_bytes, change_percent (empty when BASE has none),\n"
    "base_objects, base_objects_lo, base_objects_hi, new_objects,\n"
    "new_objects_lo, new_objects_hi, change_objects, base_samples,\n"
    "new_samples.\n";

enum { SITE_LOCATION = 0, SITE_NONE_KNOWN = 1, SITE_NO_BACKTRACE = 2 };

typedef struct side {
  mt_tally tally;
  mt_estimate bytes, objects;
  int present;
} side;

typedef struct row {
  int kind;
  const char *function, *file; /* interned */
  uint32_t line;
  side s[2];
  int significant;
} row;

typedef struct diff {
  int by;
  row *rows;
  size_t n, cap;
  mt__strtab strings;
  mt__u64map index; /* interned key -> row */
  emit_str key;      /* scratch for row_for */
  mt_tally total[2];
  mt_estimate total_bytes[2], total_objects[2], empty_bytes[2], empty_objects[2];
  double rate[2];
} diff;

static const char *intern(diff *d, const char *s, size_t n) {
  const char *p = mt__strtab_intern(&d->strings, s, n);
  if (!p) emit_nomem(&mt_cmd_diff);
  return p;
}

/* The row of a site, created on first sight. */
static row *row_for(diff *d, const mt_analysis *a, const emit_site *s) {
  const char *fn = "", *file = "";
  int kind = SITE_LOCATION;
  emit_str_clear(&d->key);
  if (s->kind == EMIT_SITE_LOCATION) {
    fn = mt_analysis_function_name(a, s->function);
    file = mt_analysis_function_file(a, s->function);
    /* names never hold a newline in practice (the analysis keys functions
     * the same way) */
    emit_str_printf(&d->key, "%s\n%s", fn, file);
    if (d->by == EMIT_BY_LINE) emit_str_printf(&d->key, "\n%" PRIu32, s->line);
  } else {
    kind = s->kind == EMIT_SITE_CODE ? SITE_NONE_KNOWN : SITE_NO_BACKTRACE;
    emit_str_printf(&d->key, "\n%d", kind);
  }
  const char *k = intern(d, d->key.s, d->key.len);
  uint32_t *ix = mt__u64map_get(&d->index, (uint64_t)(uintptr_t)k);
  if (ix) return &d->rows[*ix - 1];
  if (d->n == d->cap) {
    d->cap = d->cap ? d->cap * 2 : 256;
    d->rows = emit_xrealloc(&mt_cmd_diff, d->rows, d->cap * sizeof *d->rows);
  }
  row *r = &d->rows[d->n];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->function = intern(d, fn, strlen(fn));
  r->file = intern(d, file, strlen(file));
  r->line = d->by == EMIT_BY_LINE ? s->line : 0;
  if (mt__u64map_put(&d->index, (uint64_t)(uintptr_t)k, (uint32_t)d->n)) emit_nomem(&mt_cmd_diff);
  d->n++;
  return r;
}

/* Loads one trace, adds its per-site tallies as side k, estimates them, and
 * frees the trace. */
static void reduce(diff *d, int k, const char *path, const mt_filter *f) {
  mt_analysis *a = mt_cli_load(path);
  /* per site code: no stack tree needed */
  mt_tally *per_code = malloc((mt_analysis_code_count(a) + 1) * sizeof *per_code);
  emit_groups g;
  if (!per_code || emit_tally_sites(a, f, per_code, &d->total[k]) != MT_OK ||
      emit_group_sites(a, d->by, per_code, &g) != 0)
    emit_nomem(&mt_cmd_diff);
  for (size_t i = 0; i < g.n; i++) {
    emit_site s = g.site[i];
    row *r = row_for(d, a, &s);
    r->s[k].present = 1;
    mt_tally_add(&r->s[k].tally, emit_group_tally(&g, i));
  }
  emit_groups_free(&g);
  free(per_code);
  /* estimates while this trace's rate and word size are at hand; sites it
   * lacks get the estimate of an empty tally (0, with zero samples' upper
   * bound) */
  mt_tally zero = {0};
  d->empty_bytes[k] = mt_estimate_bytes(a, &zero);
  d->empty_objects[k] = mt_estimate_objects(a, &zero);
  d->total_bytes[k] = mt_estimate_bytes(a, &d->total[k]);
  d->total_objects[k] = mt_estimate_objects(a, &d->total[k]);
  d->rate[k] = mt_analysis_info(a)->sample_rate;
  for (size_t i = 0; i < d->n; i++) {
    side *s = &d->rows[i].s[k];
    if (!s->present) continue;
    s->bytes = mt_estimate_bytes(a, &s->tally);
    s->objects = mt_estimate_objects(a, &s->tally);
  }
  mt_analysis_free(a);
}

static int disjoint(mt_estimate x, mt_estimate y) { return x.hi < y.lo || y.hi < x.lo; }

static int name_cmp(const row *x, const row *y) {
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  int c = strcmp(x->function, y->function);
  if (!c) c = strcmp(x->file, y->file);
  if (!c) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

static int order(const void *px, const void *py, void *ctx) {
  const diff *d = ctx;
  const row *x = &d->rows[*(const uint32_t *)px], *y = &d->rows[*(const uint32_t *)py];
  if (x->significant != y->significant) return x->significant ? -1 : 1;
  double cx = fabs(x->s[1].bytes.value - x->s[0].bytes.value);
  double cy = fabs(y->s[1].bytes.value - y->s[0].bytes.value);
  if (cx != cy) return cx > cy ? -1 : 1;
  return name_cmp(x, y);
}

static const char *site_text(emit_str *b, const diff *d, const row *r) {
  emit_str_clear(b);
  if (r->kind == SITE_NONE_KNOWN) emit_str_printf(b, "(no location)");
  else if (r->kind == SITE_NO_BACKTRACE) emit_str_printf(b, "(no backtrace)");
  else if (d->by == EMIT_BY_LINE) emit_str_printf(b, "%s (%s:%" PRIu32 ")", r->function, r->file, r->line);
  else emit_str_printf(b, "%s (%s)", r->function, r->file);
  return b->s;
}

static const char *change_pct(char *buf, size_t n, double base, double now) {
  if (base > 0) snprintf(buf, n, "%+.1f%%", 100 * (now - base) / base);
  else snprintf(buf, n, now > 0 ? "new" : "-");
  return buf;
}

static void csv_est(mt_out *o, mt_estimate e) {
  mt_out_char(o, ',');
  emit_csv_num(o, e.value);
  mt_out_char(o, ',');
  emit_csv_num(o, e.lo);
  mt_out_char(o, ',');
  emit_csv_num(o, e.hi);
}

static void json_side(mt_out *o, const char *name, const side *s) {
  mt_out_printf(o, "\"%s\": {\"bytes\": ", name);
  emit_json_estimate(o, s->bytes);
  mt_out_str(o, ", \"objects\": ");
  emit_json_estimate(o, s->objects);
  mt_out_printf(o, ", \"samples\": %" PRIu64 ", \"sampled_objects\": %" PRIu64 "}",
                s->tally.samples, s->tally.objects);
}

static void json_change(mt_out *o, double base, double now) {
  mt_out_str(o, "{\"value\": ");
  emit_json_num(o, now - base);
  mt_out_str(o, ", \"percent\": ");
  if (base > 0) emit_json_num(o, 100 * (now - base) / base);
  else mt_out_str(o, "null");
  mt_out_char(o, '}');
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_diff;
  const char *paths[2] = {NULL, NULL}, *v;
  int format = EMIT_TABLE, npaths = 0;
  size_t limit = 20;
  diff d;
  memset(&d, 0, sizeof d);
  mt_filter f;
  mt_filter_init(&f);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (mt_cli_is_help(o)) return mt_cli_help(cmd);
    if (mt_cli_filter_option(cmd, argc, argv, &i, &f)) continue;
    if ((v = emit_option_value(cmd, argc, argv, &i, "--by"))) d.by = emit_by_option(cmd, v, 0);
    else if ((v = emit_option_value(cmd, argc, argv, &i, "--format")))
      format = emit_format_option(cmd, v, EMIT_TABLE | EMIT_CSV | EMIT_JSON);
    else if ((v = emit_option_value(cmd, argc, argv, &i, "-n")))
      limit = emit_count_option(cmd, "-n", v);
    else if (strcmp(o, "--") == 0) {
      while (++i < argc) {
        if (npaths == 2) mt_cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
        paths[npaths++] = argv[i];
      }
    } else if (o[0] == '-' && o[1]) mt_cli_usage_error(cmd, "unknown option '%s'", o);
    else if (npaths < 2) paths[npaths++] = o;
    else mt_cli_usage_error(cmd, "unexpected argument '%s'", o);
  }
  if (npaths < 2) mt_cli_usage_error(cmd, "needs BASE and NEW traces");

  reduce(&d, 0, paths[0], &f);
  reduce(&d, 1, paths[1], &f);
  size_t nsig = 0;
  uint32_t *idx = emit_xrealloc(cmd, NULL, d.n * sizeof *idx);
  for (size_t i = 0; i < d.n; i++) {
    row *r = &d.rows[i];
    for (int k = 0; k < 2; k++)
      if (!r->s[k].present) {
        r->s[k].bytes = d.empty_bytes[k];
        r->s[k].objects = d.empty_objects[k];
      }
    r->significant = disjoint(r->s[0].bytes, r->s[1].bytes);
    nsig += (size_t)r->significant;
    idx[i] = (uint32_t)i;
  }
  qsort_r(idx, d.n, sizeof *idx, order, &d);
  size_t shown = limit && limit < d.n ? limit : d.n;
  int total_sig = disjoint(d.total_bytes[0], d.total_bytes[1]);

  char b[8][64];
  emit_str fstr = {0}, site = {0};
  const char *ftext = emit_filter_text(&fstr, &f);
  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  if (format == EMIT_TABLE) {
    mt_out_printf(&out, "Allocation sites, %s -> %s, estimated bytes, matched by %s\n",
                  paths[0], paths[1], emit_by_name(d.by));
    for (int k = 0; k < 2; k++)
      mt_out_printf(&out, "%s %s %s in %s objects (sample rate %g)\n",
                    k ? "New: " : "Base:", emit_bytes(b[0], sizeof b[0], d.total_bytes[k].value),
                    emit_interval_note(b[1], sizeof b[1], d.total_bytes[k], 1),
                    emit_count(b[2], sizeof b[2], d.total_objects[k].value), d.rate[k]);
    mt_out_printf(&out, "Change: %s (%s), %s; filter: %s\n",
                  emit_signed_bytes(b[0], sizeof b[0],
                                    d.total_bytes[1].value - d.total_bytes[0].value),
                  change_pct(b[1], sizeof b[1], d.total_bytes[0].value, d.total_bytes[1].value),
                  total_sig ? "significant" : "not significant", ftext);
    mt_out_printf(&out,
                  "%zu sites, %zu with a significant change (*: the 95%% intervals of the "
                  "bytes do not overlap); showing %zu.\n\n",
                  d.n, nsig, shown);
    static const char *const heads[] = {"",          "change",       "%",       "base bytes",
                                        "95% interval", "new bytes", "95% interval",
                                        "base objects", "new objects", "site"};
    emit_table tab;
    emit_table_init(&tab, 10, heads, "lrrrlrlrrl");
    for (size_t i = 0; i < shown; i++) {
      const row *r = &d.rows[idx[i]];
      const side *s0 = &r->s[0], *s1 = &r->s[1];
      const char *cells[] = {
          r->significant ? "*" : "",
          emit_signed_bytes(b[0], sizeof b[0], s1->bytes.value - s0->bytes.value),
          change_pct(b[1], sizeof b[1], s0->bytes.value, s1->bytes.value),
          emit_bytes(b[2], sizeof b[2], s0->bytes.value),
          emit_interval(b[3], sizeof b[3], s0->bytes, 1),
          emit_bytes(b[4], sizeof b[4], s1->bytes.value),
          emit_interval(b[5], sizeof b[5], s1->bytes, 1),
          emit_count(b[6], sizeof b[6], s0->objects.value),
          emit_count(b[7], sizeof b[7], s1->objects.value),
          site_text(&site, &d, r)};
      emit_table_row(&tab, cells);
    }
    if (shown) emit_table_print(&tab, &out, "");
    emit_table_free(&tab);
  } else if (format == EMIT_CSV) {
    mt_out_str(&out,
               "rank,site,function,file,line,significant,base_bytes,base_bytes_lo,base_bytes_hi,"
               "new_bytes,new_bytes_lo,new_bytes_hi,change_bytes,change_percent,base_objects,"
               "base_objects_lo,base_objects_hi,new_objects,new_objects_lo,new_objects_hi,"
               "change_objects,base_samples,new_samples\n");
    for (size_t i = 0; i < shown; i++) {
      const row *r = &d.rows[idx[i]];
      const side *s0 = &r->s[0], *s1 = &r->s[1];
      mt_out_printf(&out, "%zu,", i + 1);
      emit_csv_str(&out, site_text(&site, &d, r));
      mt_out_char(&out, ',');
      emit_csv_str(&out, r->function);
      mt_out_char(&out, ',');
      emit_csv_str(&out, r->file);
      mt_out_char(&out, ',');
      if (d.by == EMIT_BY_LINE && r->kind == SITE_LOCATION) mt_out_printf(&out, "%" PRIu32, r->line);
      mt_out_printf(&out, ",%d", r->significant);
      csv_est(&out, s0->bytes);
      csv_est(&out, s1->bytes);
      mt_out_char(&out, ',');
      emit_csv_num(&out, s1->bytes.value - s0->bytes.value);
      mt_out_char(&out, ',');
      if (s0->bytes.value > 0)
        emit_csv_num(&out, 100 * (s1->bytes.value - s0->bytes.value) / s0->bytes.value);
      csv_est(&out, s0->objects);
      csv_est(&out, s1->objects);
      mt_out_char(&out, ',');
      emit_csv_num(&out, s1->objects.value - s0->objects.value);
      mt_out_printf(&out, ",%" PRIu64 ",%" PRIu64 "\n", s0->tally.samples, s1->tally.samples);
    }
  } else {
    mt_out_str(&out, "{\n  \"command\": \"diff\",\n  \"by\": ");
    emit_json_str(&out, emit_by_name(d.by));
    mt_out_str(&out, ",\n  \"filter\": ");
    emit_json_filter(&out, &f);
    mt_out_str(&out, ",\n  \"filter_text\": ");
    emit_json_str(&out, ftext);
    mt_out_str(&out, ",\n  \"rule\": \"significant when the 95% intervals of the bytes do not "
                     "overlap\"");
    for (int k = 0; k < 2; k++) {
      mt_out_printf(&out, ",\n  \"%s\": {\"trace\": ", k ? "new" : "base");
      emit_json_str(&out, paths[k]);
      mt_out_str(&out, ", \"sample_rate\": ");
      emit_json_num(&out, d.rate[k]);
      mt_out_str(&out, ", \"bytes\": ");
      emit_json_estimate(&out, d.total_bytes[k]);
      mt_out_str(&out, ", \"objects\": ");
      emit_json_estimate(&out, d.total_objects[k]);
      mt_out_printf(&out, ", \"samples\": %" PRIu64 ", \"sampled_objects\": %" PRIu64 "}",
                    d.total[k].samples, d.total[k].objects);
    }
    mt_out_str(&out, ",\n  \"change\": {\"bytes\": ");
    json_change(&out, d.total_bytes[0].value, d.total_bytes[1].value);
    mt_out_str(&out, ", \"objects\": ");
    json_change(&out, d.total_objects[0].value, d.total_objects[1].value);
    mt_out_printf(&out, ", \"significant\": %s}", total_sig ? "true" : "false");
    mt_out_printf(&out, ",\n  \"sites_total\": %zu,\n  \"significant\": %zu,\n  \"shown\": %zu",
                  d.n, nsig, shown);
    mt_out_str(&out, ",\n  \"sites\": [");
    for (size_t i = 0; i < shown; i++) {
      const row *r = &d.rows[idx[i]];
      mt_out_printf(&out, "%s\n    {\"rank\": %zu, \"site\": ", i ? "," : "", i + 1);
      emit_json_str(&out, site_text(&site, &d, r));
      if (r->kind == SITE_LOCATION) {
        mt_out_str(&out, ", \"function\": ");
        emit_json_str(&out, r->function);
        mt_out_str(&out, ", \"file\": ");
        emit_json_str(&out, r->file);
        if (d.by == EMIT_BY_LINE) mt_out_printf(&out, ", \"line\": %" PRIu32, r->line);
      }
      mt_out_printf(&out, ", \"significant\": %s,\n     ", r->significant ? "true" : "false");
      json_side(&out, "base", &r->s[0]);
      mt_out_str(&out, ",\n     ");
      json_side(&out, "new", &r->s[1]);
      mt_out_str(&out, ",\n     \"change\": {\"bytes\": ");
      json_change(&out, r->s[0].bytes.value, r->s[1].bytes.value);
      mt_out_str(&out, ", \"objects\": ");
      json_change(&out, r->s[0].objects.value, r->s[1].objects.value);
      mt_out_str(&out, "}}");
    }
    mt_out_str(&out, shown ? "\n  ]\n}\n" : "]\n}\n");
  }
  mt_out_flush(&out);
  mt_out_free(&out);
  free(idx);
  emit_str_free(&fstr);
  emit_str_free(&site);
  emit_str_free(&d.key);
  free(d.rows);
  mt__strtab_free(&d.strings);
  mt__u64map_free(&d.index);
  return 0;
}

const mt_command mt_cmd_diff = {
    "diff", "per-site change in estimated bytes and objects between two traces", usage, run};
