/* memtrace dump: one line per event, in the format of memtrace's dump_trace
 * (or, with --compact, the one the ocaml-alloc-stats notebook parses).
 *
 * Speed comes from formatting each location code once (its text is cached)
 * and from consecutive backtraces sharing a prefix: the text of the shared
 * frames is kept from the previous line, and only the new frames are
 * appended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "output.h"
#include "base/containers.h"

static const char usage[] =
    "usage: memtrace dump [--compact] TRACE\n"
    "\n"
    "Prints every event of TRACE, one per line.\n"
    "\n"
    "Default format (memtrace's dump_trace, byte for byte):\n"
    "  TIME ID alloc|alloc_major|alloc_ext NSAMPLES len=LENGTH PREFIX: BACKTRACE\n"
    "  TIME ID promote\n"
    "  TIME ID collect\n"
    "TIME is microseconds since the trace start, ID the object id (both %010d),\n"
    "PREFIX the number of frames shared with the previous allocation (% 4d),\n"
    "BACKTRACE the frames from caller to callee, each ' $CODE' when the trace\n"
    "has no location for it, else ' FUNCTION@FILE:LINE:START-END' per inlined\n"
    "location.\n"
    "\n"
    "--compact: 'TIME ID a|A|AE LENGTH' for minor, major and external\n"
    "allocations (LENGTH in words), 'TIME ID P' for promotions, 'TIME ID C' for\n"
    "collections.\n";

typedef struct text_cache {
  mt__u64map index; /* code -> entry */
  size_t *off, *len;
  size_t n, cap;
  char *text;
  size_t text_len, text_cap;
} text_cache;

static void die_nomem(void) {
  fputs("memtrace dump: out of memory\n", stderr);
  exit(1);
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) die_nomem();
  return q;
}

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*cap - *len < n) {
    size_t nc = *cap ? *cap : 4096;
    while (nc - *len < n) nc *= 2;
    *buf = xrealloc(*buf, nc);
    *cap = nc;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
}

static void append_u64(char **buf, size_t *len, size_t *cap, uint64_t v) {
  char tmp[24];
  append(buf, len, cap, tmp, mt_fmt_u64(tmp, v));
}

/* Appends the text of one frame (with its leading space) to buf. */
static void format_frame(const mt_reader *r, uint64_t code, char **buf, size_t *len,
                         size_t *cap) {
  size_t n;
  const mt_location *l = mt_reader_lookup(r, code, &n);
  if (n == 0) {
    /* memtrace prints the code as an OCaml (63-bit) int */
    int64_t v = (int64_t)(code << 1) >> 1;
    append(buf, len, cap, " $", 2);
    if (v < 0) {
      append(buf, len, cap, "-", 1);
      append_u64(buf, len, cap, (uint64_t)0 - (uint64_t)v);
    } else {
      append_u64(buf, len, cap, (uint64_t)v);
    }
    return;
  }
  for (size_t i = 0; i < n; i++) {
    append(buf, len, cap, " ", 1);
    append(buf, len, cap, l[i].defname, strlen(l[i].defname));
    append(buf, len, cap, "@", 1);
    append(buf, len, cap, l[i].filename, strlen(l[i].filename));
    append(buf, len, cap, ":", 1);
    append_u64(buf, len, cap, l[i].line);
    append(buf, len, cap, ":", 1);
    append_u64(buf, len, cap, l[i].start_char);
    append(buf, len, cap, "-", 1);
    append_u64(buf, len, cap, l[i].end_char);
  }
}

/* The text of a code, formatted once. Codes without a location event yet
 * are not cached: one may still come. */
static void frame_text(text_cache *c, const mt_reader *r, uint64_t code,
                       char **buf, size_t *len, size_t *cap) {
  uint32_t *ix = mt__u64map_get(&c->index, code);
  if (ix) {
    append(buf, len, cap, c->text + c->off[*ix - 1], c->len[*ix - 1]);
    return;
  }
  if (!mt_reader_has_code(r, code)) {
    format_frame(r, code, buf, len, cap);
    return;
  }
  size_t start = c->text_len;
  format_frame(r, code, &c->text, &c->text_len, &c->text_cap);
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 1024;
    c->off = xrealloc(c->off, c->cap * sizeof *c->off);
    c->len = xrealloc(c->len, c->cap * sizeof *c->len);
  }
  c->off[c->n] = start;
  c->len[c->n] = c->text_len - start;
  if (mt__u64map_put(&c->index, code, (uint32_t)c->n) != 0) die_nomem();
  c->n++;
  append(buf, len, cap, c->text + start, c->text_len - start);
}

static const char *source_name(mt_source s, int compact) {
  static const char *full[] = {"alloc", "alloc_major", "alloc_ext"};
  static const char *small[] = {"a", "A", "AE"};
  return compact ? small[s] : full[s];
}

static int run(int argc, char **argv) {
  int compact = 0;
  const char *path;
  const mt_option options[] = {{"--compact", NULL, MT_OPT_FLAG, &compact, NULL, 1, 0, 0},
                               {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, &path, 1, 1, "TRACE", 0, 0, NULL};
  mt_cli_parse(&mt_cmd_dump, argc, argv, &spec);

  mt_reader *r = mt_cli_open(path);
  uint64_t start = mt_reader_info(r)->start_time;
  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  text_cache cache = {0};
  /* The previous backtrace and where each of its frames' text begins. */
  uint64_t *prev = NULL;
  size_t prev_len = 0, prev_cap = 0, *frame_off = xrealloc(NULL, sizeof *frame_off);
  frame_off[0] = 0;
  char *bt_text = NULL;
  size_t bt_len = 0, bt_cap = 0;

  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    mt_out_u64(&out, ev.time - start, 10, '0');
    mt_out_char(&out, ' ');
    mt_out_u64(&out, ev.obj_id, 10, '0');
    if (ev.kind == MT_EVENT_PROMOTE) {
      mt_out_str(&out, compact ? " P\n" : " promote\n");
      continue;
    }
    if (ev.kind == MT_EVENT_COLLECT) {
      mt_out_str(&out, compact ? " C\n" : " collect\n");
      continue;
    }
    mt_out_char(&out, ' ');
    mt_out_str(&out, source_name(ev.source, compact));
    mt_out_char(&out, ' ');
    if (compact) {
      mt_out_u64(&out, ev.length, 0, ' ');
      mt_out_char(&out, '\n');
      continue;
    }
    mt_out_u64(&out, ev.nsamples, 0, ' ');
    mt_out_str(&out, " len=");
    mt_out_u64(&out, ev.length, 0, ' ');
    mt_out_str(&out, "  "); /* a separator, then "% 4d"'s sign space */
    mt_out_u64(&out, ev.common_prefix, 3, ' ');
    mt_out_char(&out, ':');

    size_t n = ev.backtrace_len, k = 0;
    while (k < n && k < prev_len && ev.backtrace[k] == prev[k]) k++;
    if (n > prev_cap) {
      prev_cap = n * 2;
      prev = xrealloc(prev, prev_cap * sizeof *prev);
      frame_off = xrealloc(frame_off, (prev_cap + 1) * sizeof *frame_off);
    }
    bt_len = frame_off[k];
    for (size_t i = k; i < n; i++) {
      prev[i] = ev.backtrace[i];
      frame_text(&cache, r, ev.backtrace[i], &bt_text, &bt_len, &bt_cap);
      frame_off[i + 1] = bt_len;
    }
    prev_len = n;
    mt_out_write(&out, bt_text ? bt_text : "", bt_len);
    mt_out_char(&out, '\n');
  }
  mt_out_flush(&out);
  mt_cli_finish(r, rc);
  mt_out_free(&out);
  free(prev);
  free(frame_off);
  free(bt_text);
  free(cache.off);
  free(cache.len);
  free(cache.text);
  mt__u64map_free(&cache.index);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_dump = {"dump", "print every event of a trace", usage, run};
