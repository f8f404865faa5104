/* libFuzzer target: what every tool and the viewer do with a trace file
 * after the reader: the analysis (include/memtrace/analysis.h) loading it,
 * the viewer's snapshot and call tree (src/viewer/snapshot.h), and each of
 * the viewer's answers (answers.h) on it.
 *
 * The input is a trace, served through a memfd as in fuzz_reader.c. A load
 * that fails must say why; one that succeeds gives a snapshot whose tree
 * builds, and every endpoint answers with one well-formed JSON object,
 * unfiltered and filtered (live at the peak, inside the first function's
 * name, the flame graph focused on it). The reader's own contracts are
 * fuzz_reader.c's; here, memory safety and UBSan over the layers above it.
 * Also compiled into the replay test, plain C. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "answers.h"
#include "fuzz_util.h"
#include "json_check.h"
#include "memtrace/analysis.h"

static void check_answer(int rc, mt_json *j) {
  FUZZ_CHECK(rc == 0);
  size_t len;
  char *text = mt_json_take(j, &len);
  FUZZ_CHECK(text != NULL);
  size_t at;
  if (!fuzz_json_ok(text, len, &at))
    fprintf(stderr, "not JSON at byte %zu of %zu: ...%.80s\n", at, len, text + (at > 40 ? at - 40 : 0));
  FUZZ_CHECK(fuzz_json_ok(text, len, &at));
  free(text);
  mt_json_free(j);
}

static void answer_all(const mt_vsnap *s, const mt_vquery *q) {
  for (size_t k = 0; k < MT_VANSWERS; k++) {
    mt_json j;
    mt_json_init(&j);
    check_answer(mt_vendpoints[k].answer(s, q, &j), &j);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = fuzz_memfd(data, size);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  mt_analysis *a = NULL;
  int rc = mt_analysis_load(&a, path, NULL, NULL);
  close(fd);
  if (rc != MT_OK) {
    FUZZ_CHECK(rc < 0);
    FUZZ_CHECK(a != NULL || rc == MT_ERR_NOMEM);
    if (a) FUZZ_CHECK(strlen(mt_analysis_error(a)) > 0);
    mt_analysis_free(a);
    return 0;
  }
  mt_vsnap *s = mt_vsnap_new(a, "fuzz", 1); /* owns a from here */
  FUZZ_CHECK(s != NULL);
  FUZZ_CHECK(mt_vsnap_build(s) == 0);
  /* the differential answers: the trace against itself */
  s->base = s->a;
  s->base_tree = s->tree;
  s->base_name = "fuzz";
  mt_json j;
  mt_json_init(&j);
  check_answer(mt_vanswer_info(s, 0, &j), &j);
  mt_vquery q;
  mt_vquery_init(&q);
  answer_all(s, &q);
  /* filtered: live at the peak, inside the first function (if any) */
  char err[512];
  FUZZ_CHECK(mt_vquery_set(&q, MT_VP_FILTER, "live", "peak", err, sizeof err) == 0);
  if (mt_analysis_function_count(s->a) > 0) {
    char name[MT_VQ_MAX_STR + 1];
    snprintf(name, sizeof name, "%s", mt_analysis_function_name(s->a, 0));
    if (name[0] && !strchr(name, ','))
      FUZZ_CHECK(mt_vquery_set(&q, MT_VP_FILTER, "inside", name, err, sizeof err) == 0);
    FUZZ_CHECK(mt_vquery_set(&q, MT_VP_FILTER | MT_VP_FLAME, "focus", "0", err, sizeof err) == 0);
  }
  answer_all(s, &q);
  mt_vsnap_unref(s);
  return 0;
}
