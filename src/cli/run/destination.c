/* Whether a trace can be written where a destination says (destination.h). */
#include "destination.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/private_file.h"
#include "format/trace_file.h"

int mt_cli_check_destination(const char *pattern, char *why, size_t n) {
  if (mt__trace_dest_is_socket(pattern)) return 0;
  char path[PATH_MAX], dir[PATH_MAX];
  mt__trace_path_expand(pattern, (long)getpid(), path, sizeof path);
  snprintf(dir, sizeof dir, "%s", pattern);
  const char *d = dirname(dir);
  if (strchr(d, '%')) return 0;
  if (mt_private_link_refused(path)) {
    snprintf(why, n, "refusing to write the trace through the symbolic link %s (give the path it "
             "points to)", path);
    return -1;
  }
  struct stat st;
  int exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    snprintf(why, n, "%s is a directory", pattern);
    return -1;
  }
  /* a trace another traced process is writing: the program would run
   * untraced */
  if (exists && mt__trace_file_busy(path)) {
    snprintf(why, n, "%s is being written by another traced process", path);
    return -1;
  }
  if (access(d, W_OK | X_OK) != 0) {
    snprintf(why, n, "cannot create %s: %s: %s", pattern, d, strerror(errno));
    return -1;
  }
  return 0;
}

