/* Traces whose hotspots output depends on the order of bindings inside one
 * bucket of OCaml's hash tables (see tests/compat/README.md):
 *   make_ties OUT NFUNCS AL1 AL2 FN1 FN2 M
 * Functions 0..NFUNCS-1 are made first, in order, by one one-frame
 * allocation each (function i is the only location of code i); then M
 * allocations of each of the backtraces [FN1, AL1] and [FN2, AL2], taking
 * turns: AL1 and AL2 tie, and so do their callers. *
 * Not built: kept to say how tests/compat/data was made (see its README).
 * Build: cc -I include FILE.c libmemtrace_static.a */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "memtrace/format.h"

static mt_location *locs;
static char (*names)[16];

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  *l = &locs[code - 0x1000];
  *n = 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 8) return 2;
  int nf = atoi(argv[2]), al1 = atoi(argv[3]), al2 = atoi(argv[4]);
  int fn1 = atoi(argv[5]), fn2 = atoi(argv[6]), m = atoi(argv[7]);
  locs = calloc(nf, sizeof *locs);
  names = calloc(nf, sizeof *names);
  for (int i = 0; i < nf; i++) {
    snprintf(names[i], sizeof names[i], "F%d", i);
    locs[i] = (mt_location){"ties.ml", names[i], (uint32_t)i + 1, 2, 9};
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  mt_trace_info info = {.sample_rate = 1e-5, .word_size = 64, .executable_name = "/bin/ties",
                        .host_name = "host", .runtime_params = "", .pid = 7,
                        .start_time = 1700000000000000ull, .context = ""};
  mt_writer_options opt = {.version = 2, .fd = fd, .resolve = resolve};
  mt_writer *w;
  if (mt_writer_open(&w, &info, &opt) != MT_OK) return 1;
  uint64_t t = info.start_time;
  for (int i = 0; i < nf; i++) {
    uint64_t bt[1] = {0x1000 + (uint64_t)i};
    mt_writer_alloc(w, t++, 0, 3, 1, MT_SOURCE_MINOR, bt, 1, NULL);
  }
  for (int i = 0; i < m; i++) {
    uint64_t a[2] = {0x1000 + (uint64_t)fn1, 0x1000 + (uint64_t)al1};
    uint64_t b[2] = {0x1000 + (uint64_t)fn2, 0x1000 + (uint64_t)al2};
    mt_writer_alloc(w, t++, 0, 3, 1, MT_SOURCE_MINOR, a, 2, NULL);
    mt_writer_alloc(w, t++, 0, 3, 1, MT_SOURCE_MINOR, b, 2, NULL);
  }
  if (mt_writer_close(w) != MT_OK) return 1;
  return close(fd);
}
