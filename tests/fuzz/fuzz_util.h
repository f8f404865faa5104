/* Helpers shared by the fuzz targets and the replay driver. */
#ifndef MT_FUZZ_UTIL_H
#define MT_FUZZ_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A harness check: abort() so that libFuzzer (or the replay driver, which
 * runs each input in a child process) records the input as a failure. Not
 * assert(): it must hold in every build type. */
#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* Writes data[0..size) at fd's position; failing is the harness's fault. */
static inline void fuzz_write_all(int fd, const void *data, size_t size) {
  const uint8_t *p = data;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    FUZZ_CHECK(n > 0);
    p += n;
    size -= (size_t)n;
  }
}

/* A memory file holding data[0..size), positioned at its start. The reader
 * then sees a regular file, as for a trace on disk (so its size is known),
 * and nothing touches the file system. Failing here is the harness's fault
 * (leaked descriptors, no memory), never the input's: abort. */
static inline int fuzz_memfd(const void *data, size_t size) {
  int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0);
  fuzz_write_all(fd, data, size);
  FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
  return fd;
}

/* The entry point every target defines (libFuzzer's interface). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
