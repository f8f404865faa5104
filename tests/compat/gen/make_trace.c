/* Makes small traces that stress the corners of memtrace's hotspots and
 * flamegraph: codes without locations (at the allocation point and in the
 * outer frames), inlined frames, several codes per function, recursion,
 * backtraces that are prefixes of the previous one, more (caller,
 * allocator) pairs than the heavy-hitters summary holds, ties everywhere.
 *   make_trace OUT SEED NALLOCS NFUNCS [MAXDEPTH [HOT]] *
 * Not built: kept to say how tests/compat/data was made (see its README).
 * Build: cc -I include FILE.c libmemtrace_static.a */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "memtrace/format.h"

static uint64_t st;
static uint64_t rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return st; }
static uint32_t below(uint32_t n) { return (uint32_t)(rnd() % n); }

enum { MAXCODES = 4096 };
static mt_location locs[MAXCODES][3];
static size_t nlocs[MAXCODES];
static uint32_t succ[MAXCODES][3]; /* a call graph: the usual callees of a code */
static char names[2048][48], files[64][32];

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  uint64_t c = code - 0x400000;
  *l = nlocs[c] ? locs[c] : NULL;
  *n = nlocs[c];
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 5) return 2;
  st = strtoull(argv[2], 0, 10) * 2654435761u + 88172645463325252ull;
  int nallocs = atoi(argv[3]), nfuncs = atoi(argv[4]);
  size_t maxdepth = argc > 5 ? (size_t)atoi(argv[5]) : 200;
  int hot = argc > 6 ? atoi(argv[6]) : nfuncs; /* functions 0..hot-1 call each other */
  int ncodes = nfuncs * 3 > MAXCODES ? MAXCODES : nfuncs * 3;
  for (int f = 0; f < 64; f++) snprintf(files[f], sizeof files[f], "src/file%02d.ml", f);
  for (int f = 0; f < nfuncs; f++) snprintf(names[f], sizeof names[f], "Mod%d.fn_%c%d", f % 7, 'a' + (f * 7) % 26, f);
  /* code c belongs to function c / 3 (its last location); some codes have
   * no location, some have inlined ones before it */
  for (int c = 0; c < ncodes; c++) {
    int r = below(10);
    nlocs[c] = r < 2 ? 0 : r < 7 ? 1 : r < 9 ? 2 : 3;
    for (size_t k = 0; k < nlocs[c]; k++) {
      int f = k + 1 == nlocs[c] ? c / 3 : (below(4) == 0 ? (int)below(8) : (int)below(nfuncs));
      locs[c][k].defname = names[f];
      locs[c][k].filename = files[f % 64];
      locs[c][k].line = 1 + below(3000);
      locs[c][k].start_char = below(80);
      locs[c][k].end_char = locs[c][k].start_char + below(40);
    }
  }
  for (int c = 0; c < ncodes; c++) /* the usual callees: by function */
    for (int k = 0; k < 3; k++)
      succ[c][k] = (c / 3 < hot ? (c / 3 * 7 + k * 13 + 1) % hot : (int)below(ncodes / 3)) * 3 + below(3);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  mt_trace_info info = {.sample_rate = 1e-4, .word_size = 64, .executable_name = "/bin/corner",
                        .host_name = "host", .runtime_params = "s=256k", .pid = 4242,
                        .start_time = 1700000000000000ull, .context = ""};
  mt_writer_options opt = {.version = 2, .fd = fd, .resolve = resolve};
  mt_writer *w;
  if (mt_writer_open(&w, &info, &opt) != MT_OK) return 1;
  uint64_t stack[200], t = info.start_time;
  size_t depth = 0;
  uint64_t live[4096]; int nlive = 0;
  for (int a = 0; a < nallocs; a++) {
    /* return a few frames (possibly none: a prefix of the last backtrace,
     * or all: a fresh one), then call a few */
    int pop = below(5) == 0 ? (int)depth : (int)below(4);
    if ((size_t)pop > depth) pop = (int)depth;
    depth -= pop;
    int push = depth == 0 ? 1 + (int)below(12) : (below(6) == 0 ? 0 : (int)below(4));
    for (int k = 0; k < push && depth < maxdepth; k++) {
      uint64_t code;
      if (depth > 2 && below(8) == 0) code = stack[depth - 1 - below(3)]; /* recursion */
      else if (depth > 0 && below(20) < 19) code = 0x400000 + succ[stack[depth - 1] - 0x400000][below(2)];
      else if (depth == 0 && below(10) < 7) code = 0x400000 + below(hot * 3);
      else code = 0x400000 + below(ncodes);
      stack[depth++] = code;
    }
    if (depth == 0) stack[depth++] = 0x400000 + below(ncodes);
    t += below(50);
    int src = below(10) == 0 ? (below(2) ? MT_SOURCE_MAJOR : MT_SOURCE_EXTERNAL) : MT_SOURCE_MINOR;
    uint64_t len = src == MT_SOURCE_MINOR ? 1 + below(20) : 100 + below(50000);
    uint64_t ns = src == MT_SOURCE_MINOR ? 1 + (below(8) == 0) : 1 + below(6);
    uint64_t id;
    if (mt_writer_alloc(w, t, 0, len, ns, src, stack, depth, &id) != MT_OK) return 1;
    if (src == MT_SOURCE_MINOR && nlive < 4096) live[nlive++] = id;
    if (below(30) == 0 && nlive > 0) { /* a minor GC */
      for (int i = 0; i < nlive; i++) {
        if (below(3) == 0) mt_writer_promote(w, t, 0, live[i]);
        else mt_writer_collect(w, t, 0, live[i]);
      }
      nlive = 0;
    }
  }
  mt_writer_close(w);
  close(fd);
  return 0;
}
