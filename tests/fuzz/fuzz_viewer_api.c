/* libFuzzer target: the viewer's API (src/viewer/params.h, answers.h) on
 * any query string.
 *
 * The HTTP server hands each request's decoded parameters to mt_vquery_set
 * and, if every one is accepted, the query to one endpoint's answer. Here
 * the input is that request: its first byte picks the endpoint, the rest is
 * "key=value&key=value..." (no '=': a key without a value, as the HTTP layer gives
 * it). The answers run on a snapshot, its call tree built as the server
 * has it, of one of three traces made once with the writer (the first
 * byte's bits 3-4 pick it): a small one (every source, sizes of 1 word to
 * a million, promotions, objects collected or not, codes named with
 * inlined frames, a recursion, codes never named), one with no event, and
 * one of a single object that lives no time in a trace of no duration.
 *
 * Checked: a refused parameter says why, in a message that names it; an
 * accepted query gets an answer (flame: -2 only for a focus that is no
 * function) that is one well-formed JSON object; memory safety (ASan,
 * UBSan, leaks). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "answers.h"
#include "json_check.h"
#include "memtrace/analysis.h"
#include "memtrace/format.h"

#define MAX_PARAMS 48


/* ---- the trace ---- */

/* Codes 1..12: 0 mod 4 never named; the others one to three frames
 * (inlined ones first), over a few files and functions, a name with bytes
 * that JSON must escape. */
static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  static const char *const fns[] = {"main", "parse", "Lexer.token", "alloc_node",
                                    "std::vector<int>::push_back", "q\"uote\\d\x01"};
  static mt_location out[3];
  (void)ctx;
  size_t count = code % 4 == 0 ? 0 : code % 3 + 1;
  for (size_t i = 0; i < count; i++)
    out[i] = (mt_location){i % 2 ? "src/b.c" : "src/a.ml", fns[(code + i) % 6],
                           (uint32_t)(10 * code + i), (uint32_t)i, (uint32_t)(i + 5)};
  *locs = count ? out : NULL;
  *n = count;
  return 0;
}

/* Trace `kind`: 0, 400 allocations over ~1 s; 1, none at all; 2, one
 * object, allocated and collected at the trace's first microsecond (a
 * trace of no duration). */
static int make_trace(int fd, int kind) {
  mt_trace_info info = {.sample_rate = 1e-4, .word_size = 64, .executable_name = "/bin/fuzz",
                        .host_name = "h", .runtime_params = "", .pid = 7,
                        .start_time = 1600000000000000ull, .context = ""};
  mt_writer_options opt = {.version = 2, .fd = fd, .resolve = resolve};
  mt_writer *w;
  if (mt_writer_open(&w, &info, &opt) != MT_OK) return -1;
  uint64_t rng = 0x9e3779b97f4a7c15ull, t = info.start_time, live[64] = {0};
  int rc = MT_OK, n = kind == 0 ? 400 : kind == 2 ? 1 : 0;
  for (int i = 0; i < n && rc == MT_OK; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    if (kind == 0) t += rng % 5000; /* equal times too */
    uint64_t bt[8];
    size_t len = 1 + rng % 8;
    for (size_t k = 0; k < len; k++) bt[k] = 1 + (rng >> (4 * k)) % 12;
    if (i % 17 == 0) bt[len - 1] = bt[0]; /* a recursion */
    uint64_t words = i % 50 == 0 ? 1000000 : 1 + (rng >> 20) % 300, id;
    mt_source src = (mt_source)((rng >> 40) % 3);
    rc = mt_writer_alloc(w, t, 0, words, 1 + (rng >> 44) % 3, src, bt, len, &id);
    if (kind == 2) {
      if (rc == MT_OK) rc = mt_writer_collect(w, t, 0, id);
      break;
    }
    size_t slot = (rng >> 50) % 64;
    if (rc == MT_OK && src == MT_SOURCE_MINOR && rng % 3 == 0)
      rc = mt_writer_promote(w, t + 10, 0, id);
    if (rc == MT_OK && live[slot]) rc = mt_writer_collect(w, t + 20, 0, live[slot] - 1);
    live[slot] = id + 1;
  }
  int closed = mt_writer_close(w);
  return rc == MT_OK && closed == MT_OK ? 0 : -1;
}

static mt_vsnap *load_snapshot(int kind) {
  int fd = memfd_create("fuzz-trace", 0);
  if (fd < 0 || make_trace(fd, kind) != 0) abort();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  mt_analysis *a;
  if (mt_analysis_load(&a, path, NULL, NULL) != MT_OK) abort();
  close(fd);
  mt_vsnap *s = mt_vsnap_new(a, "fuzz", 1);
  if (!s || mt_vsnap_build(s) != 0) abort();
  return s;
}

/* The three traces, each compared with the next (the differential
 * answers). */
static mt_vsnap *snapshot(int kind) {
  static mt_vsnap *s[3];
  if (!s[0]) {
    for (int k = 0; k < 3; k++) s[k] = load_snapshot(k);
    for (int k = 0; k < 3; k++) {
      s[k]->base = s[(k + 1) % 3]->a;
      s[k]->base_tree = s[(k + 1) % 3]->tree;
      s[k]->base_name = "fuzz-base";
    }
  }
  return s[kind];
}

/* ---- one request ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const mt_vendpoint *ep = &mt_vendpoints[data[0] % MT_VANSWERS]; /* as the server's */
  /* bits 3-4: the trace (3: the first again) */
  mt_vsnap *s = snapshot((data[0] >> 3) % 4 % 3);
  /* the parameters, NUL-terminated in a copy, as the HTTP layer hands them over */
  char *text = malloc(size);
  memcpy(text, data + 1, size - 1);
  text[size - 1] = 0;
  mt_vquery q;
  mt_vquery_init(&q);
  char err[512];
  int accepted = 1, n = 0;
  for (char *p = text, *next; p && n < MAX_PARAMS; p = next, n++) {
    next = strchr(p, '&');
    if (next) *next++ = 0;
    char *eq = strchr(p, '=');
    if (eq) *eq++ = 0;
    err[0] = 0;
    if (mt_vquery_set(&q, ep->params, p, eq, err, sizeof err) != 0) {
      if (!err[0] || strlen(err) >= sizeof err) abort(); /* a refusal says why */
      char quoted[104]; /* naming the parameter, quoted (at most 100 bytes of it) */
      if (strlen(p) <= 100 && (snprintf(quoted, sizeof quoted, "'%s'", p), !strstr(err, quoted)))
        abort();
      accepted = 0;
      break;
    }
  }
  if (accepted) {
    mt_json j;
    mt_json_init(&j);
    int rc = ep->answer(s, &q, &j);
    int flame = ep->answer == mt_vanswer_flame, leaks = ep->answer == mt_vanswer_leaks;
    if (rc != 0 && !(flame && rc == -2 && q.focus >= 0) &&
        !(leaks && rc == -3 && q.f.collected == MT_COLLECTED_IN))
      abort();
    if (rc == 0) {
      size_t len;
      char *out = mt_json_take(&j, &len);
      if (!out) abort();
      size_t at;
      if (!fuzz_json_ok(out, len, &at)) {
        fprintf(stderr, "not JSON at byte %zu of %zu: ...%.80s\n", at, len,
                out + (at > 40 ? at - 40 : 0));
        abort();
      }
      free(out);
    }
    mt_json_free(&j);
  }
  free(text);
  return 0;
}
