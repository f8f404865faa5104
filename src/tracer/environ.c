/* The tracer's reads and edits of the process environment.
 *
 * They work on `environ` itself, never through getenv, setenv or unsetenv:
 * a program may define those for itself, and its definitions then serve
 * every library too. bash does, to keep its shell variables in step:
 * called from this library's constructor, before bash's main has read any
 * variable, its unsetenv changed nothing, so bash exported MEMTRACE and
 * the interposer to every program it ran, and each of them opened the
 * same trace with O_TRUNC (a bash script's trace came out with a hole of
 * zeros where the children's writes had cut it). Edits are made in place,
 * as the C library's unsetenv makes them, so that a main that reads its
 * envp argument sees them too. */
#include "environ.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

int mt__env_is(const char *entry, const char *name) {
  size_t n = strlen(name);
  return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

/* The entry of `name`, or NULL. */
static char **entry_of(const char *name) {
  for (char **e = environ; e && *e; e++)
    if (mt__env_is(*e, name)) return e;
  return NULL;
}

/* The next entry of an LD_PRELOAD value from *p on (the loader takes ':'
 * and ' ' as separators, and skips empty entries): its length, with *p at
 * its start; 0 at the end. The caller moves *p past it. */
static size_t next_preload(const char **p) {
  *p += strspn(*p, ": ");
  return strcspn(*p, ": ");
}

int mt__preload_has(const char *value, const char *entry) {
  size_t n = strlen(entry);
  for (size_t k; (k = next_preload(&value)); value += k)
    if (k == n && strncmp(value, entry, n) == 0) return 1;
  return 0;
}

const char *mt__env_get(const char *name) {
  char **e = entry_of(name);
  return e ? *e + strlen(name) + 1 : NULL;
}

/* Removes every entry of `name`, moving the later ones back. */
static void env_remove(const char *name) {
  char **e;
  while ((e = entry_of(name)))
    do e[0] = e[1];
    while (*e++);
}

/* Whether path names the file st describes. */
static int same_file(const char *path, const struct stat *st) {
  struct stat o;
  return stat(path, &o) == 0 && o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

/* With MEMTRACE gone, exec'd children would still load this library (and
 * libdw, libunwind...) through LD_PRELOAD and run every malloc and free
 * through it, untraced: its start-up in each, and its call layer in a
 * malloc-bound one (docs/benchmarks.md, "Process trees"). So this
 * library's own entries leave LD_PRELOAD too; the others stay, in order.
 * The new value is a string of its own, never freed: the environment may
 * hold it to the end. */
static void drop_self_from_preload(char *entry, size_t entry_size) {
  static const char name[] = "LD_PRELOAD=";
  char **slot = entry_of("LD_PRELOAD");
  const char *v = slot ? *slot + sizeof name - 1 : NULL;
  Dl_info self;
  struct stat st;
  if (!v || !*v || !dladdr((void *)&drop_self_from_preload, &self) || !self.dli_fname ||
      stat(self.dli_fname, &st) != 0)
    return;
  size_t len = strlen(v);
  char *out = malloc(sizeof name + len), *tok = malloc(len + 1);
  if (!out || !tok) {
    free(out);
    free(tok);
    return;
  }
  memcpy(out, name, sizeof name - 1);
  size_t n = sizeof name - 1;
  int dropped = 0;
  for (size_t k; (k = next_preload(&v)); v += k) {
    memcpy(tok, v, k);
    tok[k] = 0;
    if (strcmp(tok, self.dli_fname) == 0 || same_file(tok, &st)) {
      if (!dropped) snprintf(entry, entry_size, "%s", tok);
      dropped = 1;
    } else {
      if (n > sizeof name - 1) out[n++] = ':';
      memcpy(out + n, tok, k);
      n += k;
    }
  }
  out[n] = 0;
  free(tok);
  if (!dropped) {
    free(out);
  } else if (n > sizeof name - 1) {
    *slot = out;
  } else {
    free(out);
    env_remove("LD_PRELOAD");
  }
}

void mt__env_drop_tracing(char *entry, size_t entry_size) {
  if (entry_size) entry[0] = 0;
  env_remove("MEMTRACE");
  drop_self_from_preload(entry, entry_size);
}
