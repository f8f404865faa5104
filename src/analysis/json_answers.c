/* The answers as JSON documents (memtrace/json.h; docs/json.md is the
 * schema): one renderer per answer, for the command line and the viewer. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memtrace/calltree.h"
#include "memtrace/json.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"

static const char *const source_names[3] = {"minor", "major", "external"};

static double pct(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }
static double share(double part, double whole) { return whole > 0 ? part / whole : 0; }

void mt_json_estimate(mt_json *j, const mt_estimate *e) {
  mt_json_obj(j);
  mt_json_key(j, "value");
  mt_json_num(j, e->value);
  mt_json_key(j, "lo");
  mt_json_num(j, e->lo);
  mt_json_key(j, "hi");
  mt_json_num(j, e->hi);
  mt_json_end_obj(j);
}

static void key_estimate(mt_json *j, const char *key, mt_estimate e) {
  mt_json_key(j, key);
  mt_json_estimate(j, &e);
}

/* "bytes", "objects", "samples", "sampled_objects" of a tally. */
static void tally_members(mt_json *j, const mt_sampling *s, const mt_tally *t) {
  key_estimate(j, "bytes", mt_sampling_bytes(s, t));
  key_estimate(j, "objects", mt_sampling_objects(s, t));
  mt_json_key(j, "samples");
  mt_json_uint(j, t->samples);
  mt_json_key(j, "sampled_objects");
  mt_json_uint(j, t->objects);
}

/* The same with the estimates already made (several traces at different
 * rates: their bytes are not one sampling's). */
static void estimate_members(mt_json *j, mt_estimate bytes, mt_estimate objects,
                             const mt_tally *t) {
  key_estimate(j, "bytes", bytes);
  key_estimate(j, "objects", objects);
  mt_json_key(j, "samples");
  mt_json_uint(j, t->samples);
  mt_json_key(j, "sampled_objects");
  mt_json_uint(j, t->objects);
}

static void key_seconds(mt_json *j, const char *key, uint64_t us) {
  mt_json_key(j, key);
  mt_json_num(j, (double)us / 1e6);
}

void mt_json_filter(mt_json *j, const mt_filter *f) {
  mt_json_obj(j);
  if (f->alloc_from) key_seconds(j, "allocated_from_s", f->alloc_from);
  if (f->alloc_to != MT_NEVER) key_seconds(j, "allocated_to_s", f->alloc_to);
  if (f->live != MT_LIVE_ANY) {
    mt_json_key(j, "live");
    mt_json_str(j, f->live == MT_LIVE_AT ? "at" : f->live == MT_LIVE_AT_PEAK ? "peak" : "end");
    if (f->live == MT_LIVE_AT) key_seconds(j, "live_at_s", f->live_at);
  }
  if (f->collected != MT_COLLECTED_ANY) {
    mt_json_key(j, "collected");
    mt_json_str(j, f->collected == MT_COLLECTED_NEVER ? "never" : "in");
    if (f->collected == MT_COLLECTED_IN) {
      key_seconds(j, "collected_from_s", f->collect_from);
      if (f->collect_to != MT_NEVER) key_seconds(j, "collected_to_s", f->collect_to);
    }
  }
  if (f->size_min) {
    mt_json_key(j, "size_min");
    mt_json_uint(j, f->size_min);
  }
  if (f->size_max != UINT64_MAX) {
    mt_json_key(j, "size_max");
    mt_json_uint(j, f->size_max);
  }
  if (f->lifetime_min) key_seconds(j, "lifetime_min_s", f->lifetime_min);
  if (f->lifetime_max != UINT64_MAX) key_seconds(j, "lifetime_max_s", f->lifetime_max);
  if (f->sources) {
    mt_json_key(j, "sources");
    mt_json_arr(j);
    static const char *const names[5] = {"minor", "major", "external", "mapping", "heap"};
    for (int s = 0; s < 5; s++)
      if (f->sources & (1u << s)) mt_json_str(j, names[s]);
    mt_json_end_arr(j);
  }
  const char *texts[] = {f->inside, f->not_inside, f->hide};
  const char *keys[] = {"inside", "not_inside", "hide"};
  for (int k = 0; k < 3; k++)
    if (texts[k] && texts[k][0]) {
      mt_json_key(j, keys[k]);
      mt_json_str(j, texts[k]);
    }
  mt_json_end_obj(j);
}

/* "filter" and "filter_text". */
static void filter_members(mt_json *j, const mt_filter *f) {
  char small[512];
  size_t n = mt_filter_describe(f, small, sizeof small);
  char *text = n < sizeof small ? small : malloc(n + 1);
  if (text && text != small) mt_filter_describe(f, text, n + 1);
  mt_json_key(j, "filter");
  mt_json_filter(j, f);
  mt_json_key(j, "filter_text");
  mt_json_str(j, text ? text : small);
  if (text != small) free(text);
}

void mt_json_info(mt_json *j, const mt_analysis *a) {
  const mt_trace_info *in = &a->info;
  mt_json_key(j, "executable");
  mt_json_str(j, in->executable_name);
  mt_json_key(j, "pid");
  mt_json_uint(j, in->pid);
  mt_json_key(j, "host");
  mt_json_str(j, in->host_name);
  mt_json_key(j, "start_time");
  mt_json_uint(j, in->start_time);
  mt_json_key(j, "word_size");
  mt_json_uint(j, in->word_size);
  mt_json_key(j, "context");
  mt_json_str(j, in->context);
  mt_json_key(j, "runtime_params");
  mt_json_str(j, in->runtime_params);
  mt_json_key(j, "sample_rate");
  mt_json_num(j, in->sample_rate);
  mt_json_key(j, "bytes_per_sample");
  mt_json_num(j, a->word_bytes / in->sample_rate);
  key_seconds(j, "duration", a->duration);
  mt_json_key(j, "sampled_objects"); /* all of the trace's, whatever the load kept */
  mt_json_uint(j, a->all.objects);
  mt_json_key(j, "warning");
  mt_json_str(j, mt_analysis_warning(a));
  /* an OCaml trace's minor and major heaps; false for a native program's */
  mt_json_key(j, "runtime_heaps");
  mt_json_bool(j, mt_analysis_has_runtime_heap(a));
  /* anonymous mappings among the objects (their own frame innermost) */
  mt_json_key(j, "mappings");
  mt_json_bool(j, mt_analysis_has_mappings(a));
  mt_json_key(j, "version");
  char v[64];
  snprintf(v, sizeof v, "memtrace-c %s", mt_version());
  mt_json_str(j, v);
  mt_sampling s = mt_analysis_sampling(a);
  mt_json_key(j, "total");
  mt_json_obj(j);
  tally_members(j, &s, &a->all);
  mt_json_end_obj(j);
  mt_tally pk = {0};
  pk.samples = a->peak_samples;
  mt_json_key(j, "peak");
  mt_json_obj(j);
  key_seconds(j, "time", a->peak_time);
  key_estimate(j, "bytes", mt_sampling_bytes(&s, &pk));
  mt_json_end_obj(j);
}

void mt_json_summary(mt_json *j, const mt_analysis *a, const mt_filter *f) {
  mt_tally t;
  mt_sampling s = mt_analysis_sampling(a);
  if (mt_analysis_tally(a, f, &t) != MT_OK) {
    j->oom = 1;
    return;
  }
  tally_members(j, &s, &t);
  mt_json_key(j, "share");
  mt_json_num(j, share((double)t.samples, (double)a->all.samples));
  filter_members(j, f);
  /* the names no function has: a condition that selects or hides nothing */
  mt_filter_name names[MT_FILTER_NAMES_MAX];
  size_t n = mt_filter_unmatched(a, f, names, MT_FILTER_NAMES_MAX);
  mt_json_key(j, "unmatched");
  mt_json_arr(j);
  for (size_t k = 0; k < n; k++) {
    mt_json_obj(j);
    mt_json_key(j, "parameter");
    mt_json_str(j, names[k].param);
    mt_json_key(j, "name");
    mt_json_strn(j, names[k].name, names[k].len);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
}

/* ---- rankings ------------------------------------------------------------------ */

static void frame_json(mt_json *j, const mt_stack_frame *f) {
  mt_json_obj(j);
  if (!f->function) {
    char hex[24];
    snprintf(hex, sizeof hex, "%" PRIx64, f->code);
    mt_json_key(j, "code");
    mt_json_str(j, hex);
  } else {
    mt_json_key(j, "function");
    mt_json_str(j, f->function);
    mt_json_key(j, "file");
    mt_json_str(j, f->file);
    mt_json_key(j, "line");
    mt_json_uint(j, f->line);
  }
  mt_json_end_obj(j);
}

static void frames_members(mt_json *j, const mt_rank_row *row) {
  mt_json_key(j, "frames_total");
  mt_json_uint(j, row->frames_total);
  mt_json_key(j, "frames");
  mt_json_arr(j);
  for (size_t k = 0; k < row->nframes; k++) frame_json(j, &row->frames[k]);
  mt_json_end_arr(j);
}

/* A row's first members: its rank, and its trace's index among the ranked
 * ones when there are several. */
static void row_start(mt_json *j, size_t i, int by_process, size_t trace) {
  mt_json_obj(j);
  mt_json_key(j, "rank");
  mt_json_uint(j, i + 1);
  if (by_process) {
    mt_json_key(j, "trace_index");
    mt_json_uint(j, trace);
  }
}

/* A location's function and file, and its line when sites are lines. */
static void site_members(mt_json *j, const mt_site *site, int with_line) {
  mt_json_key(j, "function");
  mt_json_str(j, site->function);
  mt_json_key(j, "file");
  mt_json_str(j, site->file);
  if (with_line) {
    mt_json_key(j, "line");
    mt_json_uint(j, site->line);
  }
}

static const char *by_name(int by) {
  return by == MT_BY_LINE ? "line" : by == MT_BY_STACK ? "stack" : "function";
}

void mt_json_ranking(mt_json *j, const mt_ranking *r, const mt_filter *f) {
  int with_line = r->by != MT_BY_FUNCTION;
  mt_json_key(j, "by");
  mt_json_str(j, by_name(r->by));
  mt_json_key(j, "sort");
  mt_json_str(j, r->order == MT_ORDER_OBJECTS ? "objects" : "bytes");
  filter_members(j, f);
  mt_json_key(j, "total");
  mt_json_obj(j);
  estimate_members(j, r->total_bytes, r->total_objects, &r->total);
  mt_json_key(j, "bytes_percent_of_trace");
  mt_json_num(j, pct(r->total_bytes.value, r->trace_bytes.value));
  mt_json_key(j, "objects_percent_of_trace");
  mt_json_num(j, pct(r->total_objects.value, r->trace_objects.value));
  mt_json_end_obj(j);
  mt_json_key(j, "trace_total");
  mt_json_obj(j);
  estimate_members(j, r->trace_bytes, r->trace_objects, &r->trace_total);
  mt_json_end_obj(j);
  mt_json_key(j, "sites_total");
  mt_json_uint(j, r->groups);
  mt_json_key(j, "shown");
  mt_json_uint(j, r->nrows);
  mt_json_key(j, "sites");
  mt_json_arr(j);
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    char site[1024];
    row_start(j, i, r->by_process, row->trace);
    mt_json_key(j, "site");
    size_t need = strlen(row->site.function) + strlen(row->site.file) + 40;
    char *text = need <= sizeof site ? site : malloc(need);
    mt_json_str(j, mt_site_text(&row->site, with_line, text ? text : site,
                                text ? need : sizeof site));
    if (text && text != site) free(text);
    if (row->site.kind == MT_SITE_LOCATION) {
      site_members(j, &row->site, with_line);
    } else if (row->site.kind == MT_SITE_CODE) {
      char hex[24];
      snprintf(hex, sizeof hex, "%" PRIx64, row->site.code);
      mt_json_key(j, "code");
      mt_json_str(j, hex);
    }
    key_estimate(j, "bytes", row->bytes);
    mt_json_key(j, "bytes_percent");
    mt_json_num(j, pct(row->bytes.value, r->total_bytes.value));
    key_estimate(j, "objects", row->objects);
    mt_json_key(j, "objects_percent");
    mt_json_num(j, pct(row->objects.value, r->total_objects.value));
    mt_json_key(j, "samples");
    mt_json_uint(j, row->tally.samples);
    mt_json_key(j, "sampled_objects");
    mt_json_uint(j, row->tally.objects);
    if (r->by == MT_BY_STACK) frames_members(j, row);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
}

void mt_json_leaks(mt_json *j, const mt_ranking *r, const mt_filter *f) {
  mt_filter lf;
  mt_leaks_filter(f, &lf);
  key_seconds(j, "end_s", r->duration);
  filter_members(j, &lf);
  mt_json_key(j, "total");
  mt_json_obj(j);
  estimate_members(j, r->total_bytes, r->total_objects, &r->total);
  mt_json_end_obj(j);
  mt_json_key(j, "stacks_total");
  mt_json_uint(j, r->groups);
  mt_json_key(j, "shown");
  mt_json_uint(j, r->nrows);
  mt_json_key(j, "stacks");
  mt_json_arr(j);
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    row_start(j, i, r->by_process, row->trace);
    estimate_members(j, row->bytes, row->objects, &row->tally);
    key_seconds(j, "oldest_alloc_s", row->oldest);
    key_seconds(j, "newest_alloc_s", row->newest);
    /* several traces: times are each trace's own, and an age has no one end */
    if (r->ntraces <= 1) key_seconds(j, "age_s", r->duration - row->oldest);
    frames_members(j, row);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
}

/* ---- diff ----------------------------------------------------------------------- */

static void change_json(mt_json *j, double base, double now) {
  mt_json_obj(j);
  mt_json_key(j, "value");
  mt_json_num(j, now - base);
  mt_json_key(j, "percent");
  if (base > 0) mt_json_num(j, 100 * (now - base) / base);
  else mt_json_null(j);
  mt_json_end_obj(j);
}

static const char *diff_site_text(const mt_diff *d, const mt_diff_row *r, char *buf, size_t n) {
  if (r->site.kind == MT_SITE_CODE) snprintf(buf, n, "(no location)");
  else if (r->site.kind == MT_SITE_NONE) snprintf(buf, n, "(no backtrace)");
  else mt_site_text(&r->site, d->by == MT_BY_LINE, buf, n);
  return buf;
}

void mt_json_diff(mt_json *j, const mt_diff *d, const mt_filter *f, size_t limit,
                  const char *base_name, const char *new_name) {
  const char *names[2] = {base_name, new_name}, *sides[2] = {"base", "new"};
  size_t shown = limit && limit < d->nrows ? limit : d->nrows;
  mt_json_key(j, "by");
  mt_json_str(j, by_name(d->by));
  filter_members(j, f);
  mt_json_key(j, "rule");
  mt_json_str(j, "significant when the 95% intervals of the bytes do not overlap");
  for (int k = 0; k < 2; k++) {
    mt_json_key(j, sides[k]);
    mt_json_obj(j);
    mt_json_key(j, "trace");
    mt_json_str(j, names[k]);
    mt_json_key(j, "sample_rate");
    mt_json_num(j, d->sampling[k].rate);
    tally_members(j, &d->sampling[k], &d->total[k]);
    mt_json_end_obj(j);
  }
  mt_json_key(j, "change");
  mt_json_obj(j);
  mt_json_key(j, "bytes");
  change_json(j, d->total_bytes[0].value, d->total_bytes[1].value);
  mt_json_key(j, "objects");
  change_json(j, d->total_objects[0].value, d->total_objects[1].value);
  mt_json_key(j, "significant");
  mt_json_bool(j, d->total_significant);
  mt_json_end_obj(j);
  mt_json_key(j, "sites_total");
  mt_json_uint(j, d->nrows);
  mt_json_key(j, "significant");
  mt_json_uint(j, d->nsignificant);
  mt_json_key(j, "shown");
  mt_json_uint(j, shown);
  mt_json_key(j, "sites");
  mt_json_arr(j);
  for (size_t i = 0; i < shown; i++) {
    const mt_diff_row *r = &d->rows[i];
    size_t need = strlen(r->site.function) + strlen(r->site.file) + 40;
    char *text = malloc(need);
    row_start(j, i, 0, 0);
    mt_json_key(j, "site");
    if (text) mt_json_str(j, diff_site_text(d, r, text, need));
    else j->oom = 1;
    free(text);
    if (r->site.kind == MT_SITE_LOCATION) site_members(j, &r->site, d->by == MT_BY_LINE);
    mt_json_key(j, "significant");
    mt_json_bool(j, r->significant);
    for (int k = 0; k < 2; k++) {
      mt_json_key(j, sides[k]);
      mt_json_obj(j);
      estimate_members(j, r->side[k].bytes, r->side[k].objects, &r->side[k].tally);
      mt_json_end_obj(j);
    }
    mt_json_key(j, "change");
    mt_json_obj(j);
    mt_json_key(j, "bytes");
    change_json(j, r->side[0].bytes.value, r->side[1].bytes.value);
    mt_json_key(j, "objects");
    change_json(j, r->side[0].objects.value, r->side[1].objects.value);
    mt_json_end_obj(j);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
}

/* ---- statistics ------------------------------------------------------------------ */

/* A tally's figures as members, with its shares of `whole` when given. */
static void stats_tally(mt_json *j, const mt_sampling *s, const mt_tally *t,
                        const mt_tally *whole) {
  mt_json_key(j, "sampled_objects");
  mt_json_uint(j, t->objects);
  mt_json_key(j, "samples");
  mt_json_uint(j, t->samples);
  key_estimate(j, "objects", mt_sampling_objects(s, t));
  key_estimate(j, "bytes", mt_sampling_bytes(s, t));
  if (whole) {
    mt_json_key(j, "objects_share");
    mt_json_num(j, share(mt_tally_ht(t), mt_tally_ht(whole)));
    mt_json_key(j, "bytes_share");
    mt_json_num(j, share((double)t->samples, (double)whole->samples));
  }
}

static void moments_json(mt_json *j, const char *key, const mt_moments *m, uint64_t max) {
  double var = mt_moments_variance(m);
  mt_json_key(j, key);
  mt_json_obj(j);
  mt_json_key(j, "count");
  mt_json_num(j, m->n);
  mt_json_key(j, "mean");
  mt_json_num(j, m->mean);
  mt_json_key(j, "variance");
  mt_json_num(j, var);
  mt_json_key(j, "stddev");
  mt_json_num(j, sqrt(var));
  mt_json_key(j, "max");
  mt_json_uint(j, max);
  mt_json_end_obj(j);
}

static void group_json(mt_json *j, const mt_stats *s, const mt_stats_group *g) {
  const mt_sampling *sp = &s->sampling;
  key_seconds(j, "from_s", g->from);
  key_seconds(j, "to_s", g->to);
  stats_tally(j, sp, &g->all, NULL);
  mt_json_key(j, "size_histogram");
  mt_json_arr(j);
  for (int b = 0; b < MT_STATS_SIZE_BINS; b++) {
    uint64_t lo, hi;
    mt_stats_size_bin(b, &lo, &hi);
    mt_json_obj(j);
    mt_json_key(j, "bin");
    mt_json_str(j, mt_stats_size_name(b));
    mt_json_key(j, "min_words");
    mt_json_uint(j, lo);
    mt_json_key(j, "max_words");
    if (hi == UINT64_MAX) mt_json_null(j);
    else mt_json_uint(j, hi);
    stats_tally(j, sp, &g->size[b], &g->all);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
  mt_tally big = g->size[2];
  mt_tally_add(&big, &g->size[3]);
  mt_json_key(j, "over_256_words");
  mt_json_obj(j);
  stats_tally(j, sp, &big, &g->all);
  mt_json_end_obj(j);
  mt_json_key(j, "size_words");
  mt_json_obj(j);
  moments_json(j, "sampled", &g->sampled, g->sampled.max);
  moments_json(j, "estimated", &g->population, g->sampled.max);
  mt_json_end_obj(j);
  mt_json_key(j, "lifetime_histogram");
  mt_json_arr(j);
  for (int k = 0; k < s->nlife; k++) {
    char lab[32];
    uint64_t lo, hi;
    mt_stats_life_name(k, lab, sizeof lab);
    mt_stats_life_bin(k, &lo, &hi);
    mt_json_obj(j);
    mt_json_key(j, "bin");
    mt_json_str(j, lab);
    mt_json_key(j, "from_us");
    mt_json_uint(j, lo);
    mt_json_key(j, "to_us");
    if (hi == UINT64_MAX) mt_json_null(j);
    else mt_json_uint(j, hi);
    stats_tally(j, sp, &g->life[k], &g->all);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
  mt_json_key(j, "never_collected");
  mt_json_obj(j);
  stats_tally(j, sp, &g->never, &g->all);
  mt_json_end_obj(j);
  mt_json_key(j, "sources");
  mt_json_obj(j);
  for (int k = 0; k < 3; k++) {
    mt_json_key(j, source_names[k]);
    mt_json_obj(j);
    stats_tally(j, sp, &g->source[k], &g->all);
    mt_json_end_obj(j);
  }
  mt_json_end_obj(j);
  const mt_tally *mi = &g->source[MT_SOURCE_MINOR], *pr = &g->promoted;
  mt_json_key(j, "promotion");
  mt_json_obj(j);
  stats_tally(j, sp, pr, NULL);
  mt_json_key(j, "rate");
  mt_json_num(j, mi->objects ? share(mt_tally_ht(pr), mt_tally_ht(mi)) : NAN);
  mt_json_key(j, "rate_bytes");
  mt_json_num(j, mi->objects ? share((double)pr->samples, (double)mi->samples) : NAN);
  mt_json_key(j, "rate_sampled");
  mt_json_num(j, mi->objects ? share((double)pr->objects, (double)mi->objects) : NAN);
  mt_json_end_obj(j);
}

void mt_json_stats(mt_json *j, const mt_stats *s, const mt_filter *f) {
  mt_json_key(j, "sample_rate");
  mt_json_num(j, s->sampling.rate);
  mt_json_key(j, "word_bytes");
  mt_json_num(j, s->sampling.word_bytes);
  key_seconds(j, "duration_s", s->duration);
  filter_members(j, f);
  mt_json_key(j, "estimators");
  mt_json_obj(j);
  mt_json_key(j, "objects");
  mt_json_str(j, "Horvitz-Thompson: sum of 1/P, P = 1-(1-rate)^w, w = length+1 (minor, major) "
                 "or length (external)");
  mt_json_key(j, "bytes");
  mt_json_str(j, "samples / rate x word_bytes");
  mt_json_key(j, "size_words.estimated");
  mt_json_str(j, "1/P-weighted mean and variance (divided by the sum of weights); max is the "
                 "largest sampled");
  mt_json_key(j, "size_words.sampled");
  mt_json_str(j, "unweighted over sampled objects (variance divided by the count)");
  mt_json_key(j, "intervals");
  mt_json_str(j, "95%");
  mt_json_end_obj(j);
  mt_json_key(j, "all");
  mt_json_obj(j);
  group_json(j, s, &s->all);
  mt_json_end_obj(j);
  if (s->nchunks > 1) {
    mt_json_key(j, "chunks");
    mt_json_arr(j);
    for (size_t k = 0; k < s->nchunks; k++) {
      mt_json_obj(j);
      group_json(j, s, &s->chunks[k]);
      mt_json_end_obj(j);
    }
    mt_json_end_arr(j);
  }
}

void mt_json_histograms(mt_json *j, const mt_stats *s) {
  for (int h = 0; h < 2; h++) {
    const mt_tally *bins = h ? s->life_fine : s->size_log2;
    int nb = h ? MT_STATS_LIFE_FINE_BINS : MT_STATS_SIZE_LOG2_BINS, lo = nb, hi = -1;
    for (int b = 0; b < nb; b++)
      if (bins[b].objects) {
        if (b < lo) lo = b;
        hi = b;
      }
    mt_json_key(j, h ? "lifetime" : "size");
    mt_json_arr(j);
    for (int b = lo; b <= hi; b++) {
      double from, to;
      if (h) mt_stats_life_fine_bin(b, &from, &to);
      else mt_stats_size_log2_bin(b, &from, &to);
      mt_json_obj(j);
      mt_json_key(j, "lo");
      mt_json_num(j, from);
      mt_json_key(j, "hi");
      mt_json_num(j, to);
      tally_members(j, &s->sampling, &bins[b]);
      mt_json_end_obj(j);
    }
    mt_json_end_arr(j);
  }
  mt_json_key(j, "live_at_end");
  mt_json_obj(j);
  tally_members(j, &s->sampling, &s->all.never);
  mt_json_end_obj(j);
}

/* ---- the live heap ------------------------------------------------------------------ */

void mt_json_timeline(mt_json *j, const mt_timeline *t, const mt_filter *f) {
  filter_members(j, f);
  mt_json_key(j, "from");
  mt_json_int(j, 0);
  key_seconds(j, "to", t->duration);
  mt_json_key(j, "bins");
  mt_json_uint(j, t->nbins);
  mt_json_key(j, "time");
  mt_json_arr(j);
  for (size_t b = 0; b < t->nbins; b++) mt_json_num(j, t->end[b] / 1e6);
  mt_json_end_arr(j);
  const double *all[3] = {t->min, t->max, t->live};
  static const char *const keys[3] = {"min", "max", "end"};
  mt_json_key(j, "all");
  mt_json_obj(j);
  for (int k = 0; k < 3; k++) {
    mt_json_key(j, keys[k]);
    mt_json_arr(j);
    for (size_t b = 0; b < t->nbins; b++) mt_json_num(j, round(all[k][b]));
    mt_json_end_arr(j);
  }
  mt_json_end_obj(j);
  mt_json_key(j, "filtered");
  mt_json_arr(j);
  for (size_t b = 0; b < t->nbins; b++) mt_json_num(j, round(t->filtered[b]));
  mt_json_end_arr(j);
  mt_json_key(j, "peak");
  mt_json_obj(j);
  key_seconds(j, "time", t->peak_time);
  key_estimate(j, "bytes", t->peak_bytes);
  if (!t->peak_exact) { /* the highest bin end */
    mt_json_key(j, "exact");
    mt_json_bool(j, 0);
  }
  mt_json_end_obj(j);
  if (t->ntraces > 1) {
    mt_json_key(j, "start_us");
    mt_json_uint(j, t->start);
  }
  if (t->rss_total) { /* recorded beside the trace by memtrace run */
    const double *rss[3] = {t->rss_anon, t->rss_file, t->rss_total};
    static const char *const names[3] = {"anon", "file", "total"};
    mt_json_key(j, "rss");
    mt_json_obj(j);
    for (int k = 0; k < 3; k++) {
      mt_json_key(j, names[k]);
      mt_json_arr(j);
      for (size_t b = 0; b < t->nbins; b++) mt_json_num(j, rss[k][b]);
      mt_json_end_arr(j);
    }
    mt_json_end_obj(j);
  }
}

/* ---- call trees ------------------------------------------------------------------ */

static void function_ref(mt_json *j, const mt_analysis *a, uint32_t fn) {
  mt_json_obj(j);
  mt_json_key(j, "id");
  mt_json_uint(j, fn);
  mt_json_key(j, "name");
  mt_json_str(j, fn < a->nfn ? a->fn_name[fn] : "(unknown)");
  mt_json_key(j, "file");
  mt_json_str(j, fn < a->nfn ? a->fn_file[fn] : "");
  mt_json_end_obj(j);
}

static void tally_object(mt_json *j, const mt_sampling *s, const mt_tally *t) {
  mt_json_obj(j);
  key_estimate(j, "bytes", mt_sampling_bytes(s, t));
  key_estimate(j, "objects", mt_sampling_objects(s, t));
  mt_json_end_obj(j);
}

/* The base trace of a differential flame graph: each node's tally there,
 * at its sampling. */
typedef struct flame_base {
  const mt_sampling *s;
  const mt_tally *t;
} flame_base;

/* A node's object up to its children's array, which stays open; with a
 * base, the node's figures there and the change, by `diff`'s rule. */
static void node_open(mt_json *j, const mt_sampling *s, const mt_flame_node *n,
                      const flame_base *base, size_t i) {
  mt_json_obj(j);
  mt_json_key(j, "fn");
  mt_json_int(j, n->function == UINT32_MAX ? -1 : (int64_t)n->function);
  mt_estimate bytes = mt_sampling_bytes(s, &n->total);
  key_estimate(j, "bytes", bytes);
  key_estimate(j, "objects", mt_sampling_objects(s, &n->total));
  mt_json_key(j, "self");
  tally_object(j, s, &n->self);
  if (base) {
    mt_estimate was = mt_sampling_bytes(base->s, &base->t[i]);
    mt_json_key(j, "base");
    tally_object(j, base->s, &base->t[i]);
    mt_json_key(j, "change");
    mt_json_str(j, bytes.lo > was.hi ? "grown" : bytes.hi < was.lo ? "shrunk" : "same");
  }
  mt_json_key(j, "children");
  mt_json_arr(j);
}

/* A tree, depth first, without recursion: a stack as deep as the trace's
 * (a recursion alternating two functions is not merged) would overflow a
 * request thread's stack. The way back up is the parent. */
static void tree_json(mt_json *j, const mt_sampling *s, const mt_flame_node *nd,
                      const flame_base *base) {
  node_open(j, s, &nd[0], base, 0);
  uint32_t v = 0, c = nd[0].first_child;
  for (;;) {
    if (c != UINT32_MAX) {
      node_open(j, s, &nd[c], base, c);
      v = c;
      c = nd[c].first_child;
      continue;
    }
    mt_json_end_arr(j); /* v's children written */
    mt_json_end_obj(j);
    if (v == 0) break;
    c = nd[v].next_sibling;
    v = nd[v].parent;
  }
}

void mt_json_flame_diff(mt_json *j, const mt_analysis *a, const mt_flame *g,
                        const mt_analysis *base, const mt_tally *base_total,
                        const mt_tally *base_callees, const mt_tally *base_callers) {
  mt_sampling s = mt_analysis_sampling(a), sb = base ? mt_analysis_sampling(base) : s;
  flame_base bc = {&sb, base_callees}, br = {&sb, base_callers};
  mt_json_key(j, "total");
  mt_json_obj(j);
  tally_members(j, &s, &g->total);
  mt_json_end_obj(j);
  if (base) {
    mt_json_key(j, "base_total");
    mt_json_obj(j);
    tally_members(j, &sb, base_total);
    mt_json_end_obj(j);
  }
  mt_json_key(j, "functions");
  mt_json_arr(j);
  for (size_t k = 0; k < g->nfunctions; k++)
    if (g->named[k]) function_ref(j, a, (uint32_t)k);
  mt_json_end_arr(j);
  mt_json_key(j, "callees");
  tree_json(j, &s, g->callees, base ? &bc : NULL);
  mt_json_key(j, "callers");
  if (g->callers) tree_json(j, &s, g->callers, base && base_callers ? &br : NULL);
  else mt_json_null(j);
}

void mt_json_flame(mt_json *j, const mt_analysis *a, const mt_flame *g) {
  mt_json_flame_diff(j, a, g, NULL, NULL, NULL, NULL);
}

void mt_json_functions(mt_json *j, const mt_analysis *a, const mt_function_row *rows,
                       size_t n, const mt_filter *f) {
  mt_sampling s = mt_analysis_sampling(a);
  mt_json_key(j, "functions");
  mt_json_arr(j);
  for (size_t k = 0; k < n; k++) {
    mt_json_obj(j);
    mt_json_key(j, "id");
    mt_json_uint(j, rows[k].function);
    mt_json_key(j, "name");
    mt_json_str(j, a->fn_name[rows[k].function]);
    mt_json_key(j, "file");
    mt_json_str(j, a->fn_file[rows[k].function]);
    mt_json_key(j, "self");
    tally_object(j, &s, &rows[k].self);
    mt_json_key(j, "total");
    tally_object(j, &s, &rows[k].total);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
  mt_tally t;
  if (mt_analysis_tally(a, f, &t) != MT_OK) j->oom = 1;
  mt_json_key(j, "total");
  mt_json_obj(j);
  tally_members(j, &s, &t);
  mt_json_end_obj(j);
}
