/* Trace files: private, never through a link (private_file.h). */
#include "private_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Paths whose links the system makes, pointing at what a process already
 * has open: following them writes nowhere new. */
static int system_link(const char *path) {
  return strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0;
}

int mt_private_link_refused(const char *path) {
  struct stat st;
  return !system_link(path) && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

int mt_open_private(const char *path, int extra, char *err, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | extra, 0600);
  if (fd >= 0 || errno != ELOOP) {
    if (fd < 0) {
      int e = errno;
      snprintf(err, n, "cannot create %s: %s", path, strerror(e));
      errno = e;
    }
    return fd;
  }
  struct stat st;
  if (!system_link(path) || lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) {
    snprintf(err, n, "refusing to write through the symbolic link %s (give the path it points to)",
             path);
    errno = ELOOP;
    return -1;
  }
  fd = open(path, O_WRONLY | O_CLOEXEC | (extra & ~O_TRUNC));
  if (fd < 0) {
    int e = errno;
    snprintf(err, n, "cannot open %s: %s", path, strerror(e));
    errno = e;
    return -1;
  }
  if ((extra & O_TRUNC) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0) {
    int e = errno;
    snprintf(err, n, "cannot empty %s: %s", path, strerror(e));
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}
