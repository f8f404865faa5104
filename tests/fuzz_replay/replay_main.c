/* Replays fuzz inputs through a libFuzzer target without libFuzzer, so that
 * the seed corpora and the reproducers of past crashes run with every test
 * run (and under the sanitizers when the build has MT_SANITIZE=ON).
 *
 *   replay [--optional=]DIR...
 *
 * Every regular file of each DIR (not recursive; dot files skipped) is
 * passed to LLVMFuzzerTestOneInput in a child process of its own, so one
 * crash, abort, leak report or hang fails that input only and the others
 * still run. A DIR given as --optional=DIR may be missing. Ends with the
 * line "N passed, M failed"; exits 1 if M > 0 or nothing was run. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_util.h"

/* Per input, far beyond what any input needs (libFuzzer's -timeout is 10 s
 * and sanitized replays are slower than fuzzing only by a small factor). */
#define TIMEOUT_SECONDS 120

static int read_file(const char *path, uint8_t **data, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  int err = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        err = ENOMEM;
        break;
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) err = EIO;
  fclose(f);
  if (err) {
    free(buf);
    errno = err;
    return -1;
  }
  *data = buf;
  *size = len;
  return 0;
}

/* Runs one input in a child. Returns 1 if it passed. */
static int replay(const char *path) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "FAIL %s: fork: %s\n", path, strerror(errno));
    return 0;
  }
  if (pid == 0) {
    alarm(TIMEOUT_SECONDS);
    uint8_t *data = NULL;
    size_t size = 0;
    if (read_file(path, &data, &size) != 0) {
      fprintf(stderr, "%s: cannot read: %s\n", path, strerror(errno));
      _exit(2);
    }
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    exit(0); /* exit, not _exit: LeakSanitizer checks at exit */
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "FAIL %s: waitpid: %s\n", path, strerror(errno));
      return 0;
    }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 1;
  if (WIFSIGNALED(status))
    fprintf(stderr, "FAIL %s: killed by signal %d%s\n", path, WTERMSIG(status),
            WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
  else
    fprintf(stderr, "FAIL %s: exit status %d\n", path, WEXITSTATUS(status));
  return 0;
}

static int skip_entry(const struct dirent *e) { return e->d_name[0] != '.'; }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s [--optional=]DIR...\n", argv[0]);
    return 2;
  }
  unsigned passed = 0, failed = 0;
  for (int i = 1; i < argc; i++) {
    const char *dir = argv[i];
    int optional = strncmp(dir, "--optional=", 11) == 0;
    if (optional) dir += 11;
    struct dirent **list;
    int n = scandir(dir, &list, skip_entry, alphasort);
    if (n < 0) {
      if (optional && errno == ENOENT) continue;
      fprintf(stderr, "FAIL %s: %s\n", dir, strerror(errno));
      failed++;
      continue;
    }
    for (int k = 0; k < n; k++) {
      char path[4096];
      struct stat st;
      snprintf(path, sizeof path, "%s/%s", dir, list[k]->d_name);
      /* Subdirectories hold other targets' inputs (crashes/roundtrip). */
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        if (replay(path)) passed++;
        else failed++;
      }
      free(list[k]);
    }
    free(list);
  }
  if (passed + failed == 0) fprintf(stderr, "no inputs found\n");
  printf("%u passed, %u failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
