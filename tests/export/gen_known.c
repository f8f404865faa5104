/* Writes a small trace at sample rate 1 whose every figure is known, for
 * the export tests: at rate 1 every word is sampled, so each object stands
 * for exactly itself (1 object, nsamples x 8 bytes) and the expected pprof
 * values can be written down by hand (export.sh lists them).
 *
 *   mt_export_gen_known OUT
 *
 * Codes (locations outermost first):
 *   0x1000  main (main.c:10:2-8)
 *   0x2000  parse (parse.c:20:4-9), with lex (lex.c:5:0-3) inlined into it
 *   0x3000  alloc_node (tree.c:30:6-20)
 *   0x4000  (no locations)
 *   0x5000  helper (main.c:40:2-30)
 * Objects (time after the start in us, words, samples, source, stack):
 *   A  10   4   5 minor    main parse/lex alloc_node   collected at 100
 *   B  20   4   5 minor    main parse/lex alloc_node   never collected
 *   C  30 100 100 external main parse/lex alloc_node   never collected
 *   D  40   2   3 major    main 0x4000                 collected at 200
 *   E  50   1   2 minor    (no backtrace)              never collected
 *   F  60   3   4 minor    main helper helper          collected at 300
 *   G  70   8   9 major    main helper                 never collected
 * The trace ends at 300 us; the live heap peaks at 70 us (all 128 samples). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memtrace/format.h"

#define START 1700000000000000ull /* us since the epoch */

static const mt_location loc_main[] = {{"main.c", "main", 10, 2, 8}};
static const mt_location loc_parse[] = {{"parse.c", "parse", 20, 4, 9},
                                        {"lex.c", "lex", 5, 0, 3}};
static const mt_location loc_node[] = {{"tree.c", "alloc_node", 30, 6, 20}};
static const mt_location loc_helper[] = {{"main.c", "helper", 40, 2, 30}};

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  (void)ctx;
  *locs = NULL;
  *n = 0;
  switch (code) {
  case 0x1000: *locs = loc_main, *n = 1; break;
  case 0x2000: *locs = loc_parse, *n = 2; break;
  case 0x3000: *locs = loc_node, *n = 1; break;
  case 0x5000: *locs = loc_helper, *n = 1; break;
  default: break; /* 0x4000: a code the tracer could not describe */
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  mt_trace_info info = {0};
  info.sample_rate = 1.0;
  info.word_size = 64;
  info.executable_name = "/usr/bin/known-program";
  info.host_name = "testhost";
  info.runtime_params = "";
  info.pid = 4242;
  info.start_time = START;
  info.context = "";
  mt_writer_options opt = {0};
  opt.fd = fd;
  opt.resolve = resolve;
  mt_writer *w;
  if (mt_writer_open(&w, &info, &opt) != MT_OK) {
    fprintf(stderr, "%s\n", mt_writer_error(w));
    return 1;
  }
  static const uint64_t tree[] = {0x1000, 0x2000, 0x3000}, undescribed[] = {0x1000, 0x4000},
                        helper2[] = {0x1000, 0x5000, 0x5000}, helper1[] = {0x1000, 0x5000};
  uint64_t a, b, c, d, e, f, g;
  int rc = 0;
  rc |= mt_writer_alloc(w, START + 10, 0, 4, 5, MT_SOURCE_MINOR, tree, 3, &a);
  rc |= mt_writer_alloc(w, START + 20, 0, 4, 5, MT_SOURCE_MINOR, tree, 3, &b);
  rc |= mt_writer_alloc(w, START + 30, 0, 100, 100, MT_SOURCE_EXTERNAL, tree, 3, &c);
  rc |= mt_writer_alloc(w, START + 40, 0, 2, 3, MT_SOURCE_MAJOR, undescribed, 2, &d);
  rc |= mt_writer_alloc(w, START + 50, 0, 1, 2, MT_SOURCE_MINOR, NULL, 0, &e);
  rc |= mt_writer_alloc(w, START + 60, 0, 3, 4, MT_SOURCE_MINOR, helper2, 3, &f);
  rc |= mt_writer_alloc(w, START + 70, 0, 8, 9, MT_SOURCE_MAJOR, helper1, 2, &g);
  rc |= mt_writer_collect(w, START + 100, 0, a);
  rc |= mt_writer_collect(w, START + 200, 0, d);
  rc |= mt_writer_collect(w, START + 300, 0, f);
  (void)b, (void)c, (void)e, (void)g;
  if (rc != MT_OK || mt_writer_close(w) != MT_OK || close(fd) != 0) {
    fprintf(stderr, "writing %s failed\n", argv[1]);
    return 1;
  }
  return 0;
}
