/* memtrace leaks: the objects a trace never saw freed (collected), grouped
 * by allocation stack, most bytes first: mt_leaks, rendered as text or
 * JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/human.h"
#include "cli.h"
#include "memtrace/rank.h"
#include "table.h"

static const char usage[] =
    "usage: memtrace leaks [OPTIONS] TRACE...\n"
    "\n"
    "Lists the objects TRACE never saw freed (collected, in a garbage-collected\n"
    "program), grouped by allocation stack, with their estimated bytes and\n"
    "count (95% intervals), most bytes first.\n"
    "\n"
    "Never freed means still live at the end of the trace. In a garbage-\n"
    "collected program most such objects are simply alive at exit (globals,\n"
    "caches, the data the program was working on), not leaks; a leak shows as\n"
    "a group that is old, large, and keeps growing across runs or with time\n"
    "(compare --time windows, or two traces with memtrace diff --live-at-end).\n"
    "\n"
    "Options:\n"
    "  -n N                   show the first N groups (default 20; 0: all)\n"
    "  --depth N              frames shown per stack (default 10; 0: all)\n"
    "  --sort bytes|objects|oldest\n"
    "                         most estimated bytes first (default), most\n"
    "                         objects, or oldest allocation first (then bytes)\n"
    "  --format table|json    output format (default table)\n"
    "  --by-process           several traces: keep each trace's stacks apart,\n"
    "                         labelled [executable pid]\n"
    "\n" MT_FILTER_OPTIONS_HELP
    "(--live-at-end, --never-collected are implied; --collected is refused.)\n"
    "\n"
    "Each group shows when its objects were allocated, in seconds from the\n"
    "trace's start as the viewer shows them ('allocated at 1.2 s to 4.5 s'),\n"
    "with the oldest one's age at the end of the trace, and its stack, innermost\n"
    "frame (the allocation point) first, as 'function (file:line)'; '#hex' is\n"
    "a code the trace has no location for. Stacks whose frames print the same\n"
    "are one group.\n"
    "\n"
    "Several traces (files, or directories of .ctf files: a process tree, a\n"
    "fleet) are read as one, on every core: the stacks that print the same are\n"
    "one group across them, their estimates added (each trace's at its own\n"
    "rate); times are since each trace's start.\n";

enum { FORMAT_TABLE, FORMAT_JSON };

static void frame_line(mt_out *o, mt_str *line, const mt_stack_frame *f) {
  mt_str_clear(line);
  if (f->function) mt_str_printf(line, "%s (%s:%" PRIu32 ")", f->function, f->file, f->line);
  else mt_str_printf(line, "#%" PRIx64, f->code);
  mt_out_str(o, "      ");
  /* names come from the trace: keep control characters off the terminal */
  for (char *p = line->s; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  mt_out_str(o, line->s);
  mt_out_char(o, '\n');
}

/* native: a native program's trace (every block external) says "freed". */
static void text(mt_out *o, const char *path, const mt_ranking *r, const mt_filter *f, int native,
                 const mt_cli_trace_set *t) {
  char b1[64], b2[96], b3[64], b4[96];
  mt_filter lf;
  mt_leaks_filter(f, &lf);
  char *ftext = mt_cli_filter_words(&lf, native);
  uint64_t end = r->duration;
  const mt_estimate *tb = &r->total_bytes, *to = &r->total_objects;
  int many = r->ntraces > 1;
  if (many)
    mt_out_printf(o, "Objects of %s never %s (still live at the end of their traces)\n", path,
                  native ? "freed" : "collected");
  else
    mt_out_printf(o, "Objects of %s never %s (still live at the end of the trace, "
                     "%s after its start)\n",
                  path, native ? "freed" : "collected",
                  mt_human_duration(b1, sizeof b1, (double)end));
  char rates[160];
  mt_out_printf(o, "%s; filter: %s\n", mt_cli_rates_text(rates, sizeof rates, t), ftext);
  free(ftext);
  mt_out_printf(o, "Total: %s %s in %s objects %s from %" PRIu64 " sample%s, %zu stack%s\n",
                mt_human_bytes(b1, sizeof b1, tb->value),
                mt_human_interval_note(b2, sizeof b2, tb->value, tb->lo, tb->hi, 1),
                mt_human_count(b3, sizeof b3, to->value),
                mt_human_interval_note(b4, sizeof b4, to->value, to->lo, to->hi, 0),
                r->total.samples, mt_human_plural(r->total.samples), r->groups,
                mt_human_plural(r->groups));
  if (r->groups == 0) mt_out_str(o, "No object matching the filter was left uncollected.\n");
  else
    mt_out_printf(o, "Showing %zu of %zu stacks, %s first; stacks innermost frame first.\n",
                  r->nrows, r->groups,
                  r->order == MT_ORDER_OLDEST    ? "oldest allocation"
                  : r->order == MT_ORDER_OBJECTS ? "most objects"
                                                 : "most bytes");
  mt_str line = {0};
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    const mt_estimate *eb = &row->bytes, *eo = &row->objects;
    char proc[160] = "";
    if (r->by_process) mt_cli_process_text(proc, sizeof proc, t, row->trace);
    mt_out_printf(o, "\n#%zu  %s%s %s in %s object%s %s (%" PRIu64 " sample%s)\n", i + 1, proc,
                  mt_human_bytes(b1, sizeof b1, eb->value),
                  mt_human_interval_note(b2, sizeof b2, eb->value, eb->lo, eb->hi, 1),
                  mt_human_count(b3, sizeof b3, eo->value),
                  mt_human_plural((unsigned long long)(eo->value + 0.5)),
                  mt_human_interval_note(b4, sizeof b4, eo->value, eo->lo, eo->hi, 0),
                  row->tally.samples, mt_human_plural(row->tally.samples));
    /* times as the viewer's columns give them: oldest, newest, age */
    char t0[32], t1[32];
    mt_human_duration(t0, sizeof t0, (double)row->oldest);
    mt_human_duration(t1, sizeof t1, (double)row->newest);
    if (many && row->newest != row->oldest)
      mt_out_printf(o, "    allocated at %s to %s into %s trace%s\n", t0, t1,
                    r->by_process ? "its" : "their", r->by_process ? "" : "s");
    else if (many)
      mt_out_printf(o, "    allocated at %s into %s trace%s\n", t0, r->by_process ? "its" : "their",
                    r->by_process ? "" : "s");
    else if (row->newest != row->oldest)
      mt_out_printf(o, "    allocated at %s to %s; the oldest %s before the end\n", t0, t1,
                    mt_human_duration(b1, sizeof b1, (double)(end - row->oldest)));
    else
      mt_out_printf(o, "    allocated at %s, %s before the end\n", t0,
                    mt_human_duration(b1, sizeof b1, (double)(end - row->oldest)));
    if (row->frames_total == 0) mt_out_str(o, "      (no backtrace)\n");
    for (size_t k = 0; k < row->nframes; k++) frame_line(o, &line, &row->frames[k]);
    size_t more = row->frames_total - row->nframes;
    if (more) mt_out_printf(o, "      ... %zu more frame%s\n", more, mt_human_plural(more));
  }
  mt_str_free(&line);
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_leaks;
  int format = FORMAT_TABLE, sort = 0, by_process = 0;
  size_t limit = 20, depth = 10;
  static const char *args[MT_CLI_MAX_TRACES];
  mt_filter f;
  mt_filter_init(&f);
  const mt_option options[] = {
      {"--format", NULL, MT_OPT_CHOICE, &format, "table|json", 0, 0, 0},
      {"-n", NULL, MT_OPT_COUNT, &limit, NULL, 0, 0, 0},
      {"--depth", NULL, MT_OPT_COUNT, &depth, NULL, 0, 0, 0},
      {"--sort", NULL, MT_OPT_CHOICE, &sort, "bytes|objects|oldest", 0, 0, 0},
      {"--by-process", NULL, MT_OPT_FLAG, &by_process, NULL, 1, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(cmd, argc, argv, &spec);
  if (f.collected == MT_COLLECTED_IN)
    mt_cli_usage_error(cmd, "--collected contradicts leaks (objects never collected)");

  mt_cli_trace_set t; /* leaks are the objects never collected: only those are kept */
  mt_cli_load_set(cmd, args, nargs, MT_KEEP_LIVE, NULL, &t);
  mt_cli_warn_unmatched(cmd, &f, (const mt_analysis *const *)t.as, t.n);
  mt_ranking *r;
  static const mt_rank_order orders[] = {MT_ORDER_BYTES, MT_ORDER_OBJECTS, MT_ORDER_OLDEST};
  int rc = mt_leaks_traces((const mt_analysis *const *)t.as, t.n, &f, orders[sort], limit,
                           depth, by_process, &r);
  if (rc != MT_OK) mt_cli_nomem(cmd);
  char many[128];
  snprintf(many, sizeof many, "%zu traces (%s ...)", t.n, t.paths[0]);
  const char *what = t.n == 1 ? t.paths[0] : many;
  int native = 1;
  for (size_t i = 0; i < t.n; i++) native &= !mt_analysis_has_runtime_heap(t.as[i]);
  if (format == FORMAT_JSON) {
    mt_json j;
    mt_cli_json_begin(&j, cmd, t.n == 1 ? t.paths[0] : NULL, t.n == 1 ? t.as[0] : NULL);
    if (t.n > 1 || by_process) mt_cli_json_set(&j, &t);
    mt_json_leaks(&j, r, &f);
    mt_cli_json_end(&j, cmd);
  } else {
    mt_out out;
    mt_out_init(&out, STDOUT_FILENO);
    text(&out, what, r, &f, native, &t);
    mt_out_flush(&out);
    mt_out_free(&out);
  }
  mt_ranking_free(r);
  mt_cli_free_set(&t);
  return 0;
}

const mt_command mt_cmd_leaks = {
    "leaks", "objects never freed (collected), by allocation stack, most bytes first", usage, run};
