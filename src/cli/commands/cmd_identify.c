/* memtrace identify: what a trace is and how its program allocated (rates
 * by heap, promotion, sizes); the output of memtrace's `identify` tool,
 * byte for byte. The file is named as given on the command line.
 *
 * Rates are samples / sample rate x bytes per word, over the time of the
 * last event. An object's samples are remembered from its allocation until
 * its promotion or collection (minor heap objects) or its collection (major
 * heap objects of more than one sample: the others count one), as memtrace
 * does.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "objmap.h"
#include "output.h"
#include "progress.h"

static const char usage[] =
    "usage: memtrace identify TRACE\n"
    "\n"
    "Describes TRACE: its size, program, start time, host, word size, pid,\n"
    "sampling rate, GC parameters and context; then the program's allocation\n"
    "rates on the minor and major heaps, the share of minor allocations that\n"
    "were promoted, the distribution of sizes and the run time.\n"
    "\n"
    "The output is that of memtrace's `identify` tool, byte for byte.\n";

/* memtrace identify's byte sizes: about three significant digits. */
static void print_bytes(mt_out *o, double n) {
  const char *unit;
  if (n < 1000.) {
    mt_out_printf(o, "%3.0f B", n);
    return;
  }
  if (n < 1000. * 1024.) {
    n = n / 1024.;
    unit = "kB";
  } else if (n < 1000. * 1024. * 1024.) {
    n = n / 1024. / 1024.;
    unit = "MB";
  } else if (n < 1000. * 1024. * 1024. * 1024.) {
    n = n / 1024. / 1024. / 1024.;
    unit = "GB";
  } else {
    n = n / 1024. / 1024. / 1024. / 1024.;
    unit = "TB";
  }
  mt_out_printf(o, "%3.*f %s", n < 10. ? 1 : 0, n, unit);
}

/* The header: the trace file and the program it traced. */
static void print_header(mt_out *out, const char *path, uint64_t size, const mt_trace_info *info) {
  mt_out_printf(out, "Trace file %s (", path);
  print_bytes(out, (double)size);
  mt_out_str(out, ")\n");
  static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  /* Unix.gmtime of the start in seconds, a float truncated */
  time_t start = (time_t)((double)(int64_t)info->start_time * 1e-6);
  struct tm tm;
  if (!gmtime_r(&start, &tm)) memset(&tm, 0, sizeof tm);
  mt_out_printf(out, "   of %s\n", info->executable_name);
  mt_out_printf(out, "   at %s %s %d %02d:%02d:%02d %d UTC\n", days[tm.tm_wday % 7],
                months[tm.tm_mon % 12], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                tm.tm_year + 1900);
  mt_out_printf(out, "   on host %s (%u-bit), pid %" PRId64 ", sample rate %.1e\n",
                info->host_name, info->word_size, (int64_t)info->pid, info->sample_rate);
  mt_out_printf(out, "   with OCaml GC params %s\n", info->runtime_params);
  if (info->context[0]) mt_out_printf(out, "   with context: %s\n", info->context);
  mt_out_str(out, "Trace statistics:\n");
}

/* Samples by what happened to them, as memtrace's identify counts them. */
typedef struct counts {
  int64_t tmax; /* the last event's time, us since the start */
  int64_t minor_alloc, minor_collect, promote, major_alloc, major_collect;
  int64_t dist4, dist16, dist256, szmax;
} counts;

static void count(mt_reader *r, const mt_trace_info *info, counts *c) {
  mt_objmap minor_live = {0};              /* id -> samples, until promoted or collected */
  mt_objmap major_live_multisampled = {0}; /* id -> samples, when more than one */
  mt_progress progress;
  mt_progress_start(&progress, r, "identify");
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    mt_progress_tick(&progress);
    c->tmax = (int64_t)(ev.time - info->start_time);
    uint64_t ns;
    switch (ev.kind) {
    case MT_EVENT_ALLOC:
      ns = ev.nsamples;
      if (ev.source != MT_SOURCE_MINOR) {
        c->major_alloc += (int64_t)ns;
        if (ns > 1) mt_objmap_put(&major_live_multisampled, ev.obj_id, ns);
      } else {
        c->minor_alloc += (int64_t)ns;
        mt_objmap_put(&minor_live, ev.obj_id, ns);
      }
      if (ev.length <= 4) c->dist4 += (int64_t)ns;
      if (ev.length <= 16) c->dist16 += (int64_t)ns;
      if (ev.length <= 256) c->dist256 += (int64_t)ns;
      if ((int64_t)ev.length > c->szmax) c->szmax = (int64_t)ev.length;
      break;
    case MT_EVENT_PROMOTE:
      /* memtrace asserts the object is a live minor one; we count it as a
       * one-sample object otherwise */
      if (!mt_objmap_remove(&minor_live, ev.obj_id, &ns)) ns = 1;
      c->promote += (int64_t)ns;
      if (ns > 1) mt_objmap_put(&major_live_multisampled, ev.obj_id, ns);
      break;
    case MT_EVENT_COLLECT:
      if (mt_objmap_remove(&minor_live, ev.obj_id, &ns)) {
        c->minor_collect += (int64_t)ns;
      } else {
        if (!mt_objmap_remove(&major_live_multisampled, ev.obj_id, &ns)) ns = 1;
        c->major_collect += (int64_t)ns;
      }
      break;
    }
  }
  mt_progress_end(&progress);
  mt_cli_finish(r, rc);
  mt_objmap_free(&minor_live);
  mt_objmap_free(&major_live_multisampled);
}

static void print_stats(mt_out *out, const mt_trace_info *info, const counts *c) {
  /* The same float operations, in the same order, as memtrace. */
  double duration = (double)c->tmax * 1e-6;
  double word_bytes = (double)(info->word_size / 8);
#define BYTES(ns) ((double)(ns) / info->sample_rate * word_bytes)
  double minor_alloc_b = BYTES(c->minor_alloc), promote_b = BYTES(c->promote);
  double major_alloc_b = BYTES(c->major_alloc), major_collect_b = BYTES(c->major_collect);
  double total_alloc = minor_alloc_b + major_alloc_b;
  double dist4_b = BYTES(c->dist4), dist16_b = BYTES(c->dist16), dist256_b = BYTES(c->dist256);
#undef BYTES
  mt_out_str(out, "   Minor: ");
  print_bytes(out, minor_alloc_b / duration);
  mt_out_printf(out, "/s allocations, %.1f%% promoted\n", 100. * promote_b / minor_alloc_b);
  mt_out_str(out, "   Major: ");
  print_bytes(out, (major_alloc_b + promote_b) / duration);
  mt_out_str(out, "/s allocations (");
  print_bytes(out, major_alloc_b / duration);
  mt_out_str(out, "/s direct), ");
  print_bytes(out, major_collect_b / duration);
  mt_out_str(out, "/s collections\n");
  mt_out_printf(out, "   Sizes (by word): %.0f%% <= 4w, %.0f%% <= 16w, %.0f%% <= 256w. Max: ",
                100. * dist4_b / total_alloc, 100. * dist16_b / total_alloc,
                100. * dist256_b / total_alloc);
  print_bytes(out, (double)(c->szmax * (int64_t)info->word_size / 8));
  mt_out_printf(out, "\n   Runtime: %.3f s\n", duration);
}

static int run(int argc, char **argv) {
  const char *path;
  mt_cli_spec spec = {NULL, NULL, &path, 1, 1, "TRACE", 0, 0, NULL};
  mt_cli_parse(&mt_cmd_identify, argc, argv, &spec);
  mt_reader *r = mt_cli_open(path);
  const mt_trace_info *info = mt_reader_info(r);
  uint64_t done, size;
  mt_reader_progress(r, &done, &size);
  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  /* the header is out before the trace is read, as memtrace's */
  print_header(&out, path, size, info);
  mt_out_flush(&out);
  counts c = {0};
  count(r, info, &c);
  print_stats(&out, info, &c);
  mt_out_flush(&out);
  mt_out_free(&out);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_identify = {
    "identify", "what a trace is, and its program's allocation rates", usage, run};
