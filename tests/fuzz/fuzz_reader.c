/* libFuzzer target: the trace reader on arbitrary bytes.
 *
 * The input is served through a memfd, as a trace file would be, and read to
 * its end. Everything the reader hands out (trace_info strings, backtraces,
 * locations, messages) is touched so that AddressSanitizer sees any stale or
 * out-of-bounds pointer, and the documented contracts of format.h are
 * checked. Sanitizers report memory errors and leaks; FUZZ_CHECK reports
 * broken contracts.
 *
 * Also compiled without libFuzzer into the replay test (tests/fuzz_replay),
 * so it must stay plain C that any compiler builds. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/format_internal.h"
#include "fuzz_util.h"
#include "memtrace/format.h"

/* Reading a byte of each string is not enough: strlen walks to the
 * terminator, so an unterminated or freed string is caught. */
static size_t touch_string(const char *s) {
  FUZZ_CHECK(s != NULL);
  return strlen(s);
}

static void check_info(const mt_trace_info *in) {
  touch_string(in->executable_name);
  touch_string(in->host_name);
  touch_string(in->runtime_params);
  touch_string(in->context);
  FUZZ_CHECK(in->sample_rate > 0 && in->sample_rate <= 1);
  FUZZ_CHECK(in->version >= 1 && in->version <= MT_FORMAT_VERSION_MAX);
}

static void check_code(const mt_reader *r, uint64_t code) {
  size_t n = 12345; /* must be overwritten */
  const mt_location *l = mt_reader_lookup(r, code, &n);
  FUZZ_CHECK((l == NULL) == (n == 0));
  if (l) FUZZ_CHECK(mt_reader_has_code(r, code));
  for (size_t i = 0; i < n; i++) {
    touch_string(l[i].filename);
    touch_string(l[i].defname);
    /* The widths format.h documents for each field. */
    FUZZ_CHECK(l[i].line <= 0xfffff);
    FUZZ_CHECK(l[i].start_char <= 0xff);
    FUZZ_CHECK(l[i].end_char <= 0x3ff);
  }
}

static void check_event(const mt_reader *r, const mt_event *ev) {
  FUZZ_CHECK(ev->kind == MT_EVENT_ALLOC || ev->kind == MT_EVENT_PROMOTE ||
             ev->kind == MT_EVENT_COLLECT);
  if (ev->kind != MT_EVENT_ALLOC) return;
  FUZZ_CHECK(ev->source == MT_SOURCE_MINOR || ev->source == MT_SOURCE_MAJOR ||
             ev->source == MT_SOURCE_EXTERNAL);
  size_t len = ev->backtrace_len;
  if (len == 0) return;
  FUZZ_CHECK(ev->backtrace != NULL);
  /* Both ends of the array: ASan then knows all of it lies in one live
   * block, without reading every frame of a very long backtrace. */
  volatile uint64_t ends = ev->backtrace[0] ^ ev->backtrace[len - 1];
  (void)ends;
  /* Only the frames after the common prefix are new: the others were looked
   * up with the domain's previous allocation. Looking up every frame of
   * every event would cost the harness O(prefix) per event where the reader
   * spends O(1), and a few bytes of input could stall the fuzzer. A prefix
   * longer than the backtrace (the reader kept the previous one) has no new
   * frames. */
  size_t from = ev->common_prefix < len ? ev->common_prefix : len;
  for (size_t i = from; i < len; i++) check_code(r, ev->backtrace[i]);
}

/* The input read twice as one trace (mt_reader_open_many, as a process
 * tree's traces are): every event is one of the two traces', with its
 * trace in the domain's upper bits and codes that look up in it; errors
 * stop it as they stop one reader. */
static void check_many(int fd) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const char *paths[2] = {path, path};
  mt_reader *r = NULL;
  int rc = mt_reader_open_many(&r, paths, 2);
  if (rc != MT_OK) {
    FUZZ_CHECK(rc < 0 && (r != NULL || rc == MT_ERR_NOMEM));
    if (r) FUZZ_CHECK(touch_string(mt_reader_error(r)) > 0);
    mt_reader_close(r);
    return;
  }
  check_info(mt_reader_info(r));
  FUZZ_CHECK(mt_reader_trace_count(r) == 2);
  mt_event ev;
  uint64_t last = 0, last_of[2] = {0, 0};
  while ((rc = mt_reader_next(r, &ev)) == 1) {
    uint32_t k = ev.domain >> 16;
    FUZZ_CHECK(k < 2);
    /* merged by time: an event is never earlier than the one before it,
     * unless its own trace went back in time there */
    FUZZ_CHECK(ev.time >= last || ev.time < last_of[k]);
    last = last_of[k] = ev.time;
    check_event(r, &ev);
  }
  if (rc < 0) FUZZ_CHECK(touch_string(mt_reader_error(r)) > 0 && mt_reader_next(r, &ev) == rc);
  for (size_t k = 0; k < 4; k++) (void)mt_reader_trace_finished(r, k);
  mt_reader_close(r);
}

/* A second descriptor of the memory file fd, at its start (the reader's
 * position is its own). */
static int open_at_start(int fd) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int fd2 = open(path, O_RDONLY | O_CLOEXEC);
  FUZZ_CHECK(fd2 >= 0);
  return fd2;
}

/* A digest of everything an event says. */
static uint64_t digest(uint64_t h, const mt_event *ev) {
  uint64_t v[] = {ev->kind, ev->time, ev->obj_id, ev->length, ev->nsamples, ev->source,
                  ev->domain, ev->backtrace_len};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) h = (h ^ v[i]) * 0x100000001b3ull;
  for (size_t i = 0; i < ev->backtrace_len; i++) h = (h ^ ev->backtrace[i]) * 0x100000001b3ull;
  return h;
}

/* The input followed as it is written in three steps (cut at a third and
 * two thirds, anywhere): the reader gives the events a read of the whole
 * gives (want: their digest and count), and ends alike (rc). */
static void check_follow(const uint8_t *data, size_t size, uint64_t want, uint64_t nwant,
                         int want_rc) {
  int fd = memfd_create("fuzz-follow", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0);
  size_t cuts[3] = {size / 3, 2 * size / 3, size}, at = 0;
  mt_reader *r = NULL;
  uint64_t h = 0xcbf29ce484222325ull, n = 0;
  int rc = 0, fd2 = -1;
  for (size_t k = 0; k < 3; k++) {
    fuzz_write_all(fd, data + at, cuts[k] - at);
    at = cuts[k];
    if (!r) {
      /* no whole first packet yet: open again once more is written */
      fd2 = open_at_start(fd);
      if (mt_reader_open_fd(&r, fd2, "fuzz-follow") != MT_OK) {
        mt_reader_close(r);
        r = NULL;
        close(fd2);
        continue;
      }
      FUZZ_CHECK(mt_reader_follow(r, 1) == MT_OK);
    }
    if (k == 2) mt_reader_follow(r, 0); /* the writer is done */
    mt_event ev;
    while ((rc = mt_reader_next(r, &ev)) == 1) {
      h = digest(h, &ev);
      n++;
    }
    if (rc < 0) break;
  }
  if (r) { /* an input no reader opens was refused by the whole read too */
    FUZZ_CHECK(rc == want_rc);
    FUZZ_CHECK(n == nwant && h == want);
    mt_reader_close(r);
    close(fd2);
  }
  close(fd);
}

/* The input read again through the reader's checked path alone
 * (mt__reader_checked_only): the fast path must give the same events and
 * stop at the same error, with the same message and offset (want_*: the
 * read with both paths). */
static void check_paths_agree(int fd, uint64_t want, uint64_t nwant, int want_rc,
                              const char *want_err, uint64_t want_off) {
  int fd2 = open_at_start(fd);
  mt_reader *r = NULL;
  FUZZ_CHECK(mt_reader_open_fd(&r, fd2, "fuzz-input") == MT_OK);
  mt__reader_checked_only(r);
  mt_event ev;
  uint64_t h = 0xcbf29ce484222325ull, n = 0;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) == 1) {
    h = digest(h, &ev);
    n++;
  }
  FUZZ_CHECK(rc == want_rc && n == nwant && h == want);
  FUZZ_CHECK(strcmp(mt_reader_error(r), want_err) == 0);
  FUZZ_CHECK(mt_reader_error_offset(r) == want_off);
  mt_reader_close(r);
  close(fd2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = fuzz_memfd(data, size);
  mt_reader *r = NULL;
  int rc = mt_reader_open_fd(&r, fd, "fuzz-input");
  if (rc != MT_OK) {
    FUZZ_CHECK(rc < 0);
    /* Only a failed allocation may leave no reader to ask. */
    FUZZ_CHECK(r != NULL || rc == MT_ERR_NOMEM);
    if (r) FUZZ_CHECK(touch_string(mt_reader_error(r)) > 0);
    mt_reader_close(r);
    close(fd);
    return 0;
  }
  check_info(mt_reader_info(r));

  mt_event ev;
  uint64_t h = 0xcbf29ce484222325ull, n = 0;
  while ((rc = mt_reader_next(r, &ev)) == 1) {
    check_event(r, &ev);
    h = digest(h, &ev);
    n++;
  }

  const char *warning = mt_reader_warning(r);
  if (warning) touch_string(warning);
  uint64_t done = 0, total = 0;
  mt_reader_progress(r, &done, &total);
  FUZZ_CHECK(total == size); /* a memfd is a regular file: its size is known */
  FUZZ_CHECK(done <= total);
  if (rc < 0) {
    FUZZ_CHECK(touch_string(mt_reader_error(r)) > 0);
    /* A stopped reader stays stopped, with the same status. */
    FUZZ_CHECK(mt_reader_next(r, &ev) == rc);
  } else {
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(touch_string(mt_reader_error(r)) == 0);
    /* No warning means "the whole trace was read". */
    if (!warning) FUZZ_CHECK(done == total);
  }
  char err[1024];
  snprintf(err, sizeof err, "%s", mt_reader_error(r));
  uint64_t err_off = mt_reader_error_offset(r);
  mt_reader_close(r);
  check_paths_agree(fd, h, n, rc, err, err_off);
  check_many(fd);
  check_follow(data, size, h, n, rc);
  close(fd);
  return 0;
}
