/* The traces in a directory (cli.h). Its own file: both executables use
 * it (the `memtrace run` side reads a directory of base traces). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_list(char **list, size_t n) {
  for (size_t i = 0; i < n; i++) free(list[i]);
  free(list);
}

long mt_cli_trace_dir(const char *dir, char ***out) {
  *out = NULL;
  struct stat st;
  if (stat(dir, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) return -1;
  char **list = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".ctf") != 0) continue;
    char **grown = n < cap ? list : realloc(list, (cap = cap ? 2 * cap : 16) * sizeof *list);
    char *path = grown ? malloc(strlen(dir) + len + 2) : NULL;
    if (!path) {
      free_list(grown ? grown : list, n);
      closedir(d);
      errno = ENOMEM;
      return -1;
    }
    list = grown;
    strcpy(path, dir);
    strcat(strcat(path, "/"), e->d_name);
    list[n++] = path;
  }
  closedir(d);
  if (n) qsort(list, n, sizeof *list, by_name);
  *out = list;
  return (long)n;
}
