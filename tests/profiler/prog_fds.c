/* A program that handles file descriptors as daemons do, to check that the
 * profiler neither takes the numbers its opens would get nor writes into
 * its files, whatever it does to the descriptors it did not open.
 * Usage: prog_fds MODE [OUT]
 *   first-fd    prints the number its first open returns
 *   close-all   closes every descriptor from 3 up, then writes OUT
 *   dup-over    opens OUT, puts it at every other open number from 3 up
 *               (dup2), then writes OUT and checks those are still open
 *   stderr-file closes descriptor 2, opens OUT (which gets it), writes OUT
 * OUT gets 100 lines "line K", with allocations between them (to be
 * sampled and written to the trace meanwhile). Prints ERROR on failure. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOP 1024

static void churn(int n) {
  for (int i = 0; i < n; i++) {
    volatile char *p = malloc(64 + (size_t)(i % 7) * 100);
    if (!p) {
      puts("ERROR allocation failed");
      exit(1);
    }
    p[0] = 1;
    free((void *)p);
  }
}

static void write_lines(int fd) {
  for (int k = 0; k < 100; k++) {
    char line[32];
    int n = snprintf(line, sizeof line, "line %d\n", k);
    if (write(fd, line, (size_t)n) != n) {
      printf("ERROR writing line %d\n", k);
      exit(1);
    }
    churn(2000);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "first-fd";
  const char *out = argc > 2 ? argv[2] : "fds.out";
  churn(20000); /* a trace well under way */
  if (strcmp(mode, "first-fd") == 0) {
    int fd = open("/dev/null", O_RDONLY);
    printf("%d\n", fd);
    return 0;
  }
  if (strcmp(mode, "close-all") == 0) {
    for (int fd = 3; fd < TOP; fd++) close(fd);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      puts("ERROR cannot create the output");
      return 1;
    }
    write_lines(fd);
    close(fd);
    return 0;
  }
  if (strcmp(mode, "dup-over") == 0) {
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      puts("ERROR cannot create the output");
      return 1;
    }
    static int mine[TOP];
    int n = 0;
    for (int k = 3; k < TOP; k++)
      if (k != fd && fcntl(k, F_GETFD) >= 0 && dup2(fd, k) == k) mine[n++] = k;
    write_lines(fd);
    for (int i = 0; i < n; i++)
      if (fcntl(mine[i], F_GETFD) < 0) printf("ERROR descriptor %d was closed behind my back\n", mine[i]);
    printf("replaced %d\n", n);
    return 0;
  }
  if (strcmp(mode, "stderr-file") == 0) {
    close(2);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd != 2) {
      printf("ERROR the output got descriptor %d, not 2\n", fd);
      return 1;
    }
    write_lines(fd);
    return 0;
  }
  printf("ERROR unknown mode %s\n", mode);
  return 2;
}
