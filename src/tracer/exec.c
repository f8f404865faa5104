/* The tracer when its process execs.
 *
 * exec replaces the process image without running exit handlers: the
 * events still queued and the writer's unfinished packet would be lost
 * (a program that allocated, then exec'd, left an empty trace). So they
 * are written first, as before _exit.
 *
 * Following execs (MEMTRACE_FOLLOW_EXEC=1, file destinations; `memtrace
 * run` asks for it): tracing start took MEMTRACE and this library out of
 * the environment, so that children do not trace into the same file. The
 * process's own exec is no child: a wrapper script's `exec prog` or a
 * version manager's shim hands its pid over to the program the user meant
 * to profile. Its new image gets the settings back and traces into the
 * same destination (the same pid: the same file, rewritten). Only the
 * tracing process's own exec follows: a forked child stops tracing at
 * fork (unless %p gives it a file of its own, which it then keeps across
 * its exec), and a vfork child, which shares the parent's memory, is
 * never touched.
 *
 * The new environment is built in a mapping of its own: mmap is
 * async-signal-safe (exec may be called from a signal handler), and a
 * failed exec unmaps it. */
#include "exec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracer_state.h"

#define tr mt__tr

static struct {
  int on;
  char **vars;   /* MEMTRACE and MEMTRACE_*, as at start, NULL-terminated */
  char *preload; /* this library's LD_PRELOAD entry */
} follow;

/* The length of an environment entry's name (up to '='). */
static size_t name_len(const char *entry) { return strcspn(entry, "="); }

static int same_name(const char *a, const char *b) {
  size_t n = name_len(a);
  return n == name_len(b) && strncmp(a, b, n) == 0;
}

static int is_var(const char *entry, const char *name) {
  size_t n = strlen(name);
  return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

void mt__exec_follow_keep(const char *destination, const char *preload_entry) {
  extern char **environ;
  static const char name[] = "MEMTRACE=";
  size_t k = 1;
  for (char **e = environ; e && *e; e++) k += strncmp(*e, "MEMTRACE_", 9) == 0;
  char **vars = calloc(k + 1, sizeof *vars); /* NULL-terminated as it fills */
  char *pre = strdup(preload_entry);
  int ok = vars && pre && (vars[0] = malloc(sizeof name + strlen(destination)));
  if (ok) stpcpy(stpcpy(vars[0], name), destination);
  size_t i = 1;
  for (char **e = environ; ok && e && *e && i < k; e++)
    if (strncmp(*e, "MEMTRACE_", 9) == 0) ok = (vars[i++] = strdup(*e)) != NULL;
  if (!ok) {
    for (size_t j = 0; vars && j < k; j++) free(vars[j]);
    free(vars);
    free(pre);
    return;
  }
  follow.vars = vars;
  follow.preload = pre;
}

void mt__exec_follow_on(int on) { follow.on = on && follow.vars && follow.preload[0]; }

/* Whether the LD_PRELOAD value v already names entry. */
static int preloads(const char *v, const char *entry) {
  size_t n = strlen(entry);
  for (const char *p = v; *p;) {
    size_t k = strcspn(p, ": ");
    if (k == n && strncmp(p, entry, n) == 0) return 1;
    p += k;
    if (*p) p++;
  }
  return 0;
}

/* envp with the kept settings added, or NULL when envp names MEMTRACE
 * itself (the caller decided: a nested `memtrace run`) or no memory. */
static char **follow_env(char *const envp[]) {
  static const char pre_name[] = "LD_PRELOAD=";
  size_t n = 0, k = 0;
  const char *old = NULL;
  for (; envp && envp[n]; n++) {
    if (is_var(envp[n], "MEMTRACE")) return NULL;
    if (is_var(envp[n], "LD_PRELOAD")) old = envp[n] + sizeof pre_name - 1;
  }
  while (follow.vars[k]) k++;
  int keep_old = old && preloads(old, follow.preload);
  size_t pre_len = keep_old ? 0
                            : sizeof pre_name + strlen(follow.preload) +
                                  (old && *old ? 1 + strlen(old) : 0);
  size_t head = sizeof(size_t) * 2; /* the mapping's size, and alignment */
  size_t size = head + (n + k + 2) * sizeof(char *) + pre_len;
  char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  *(size_t *)base = size;
  char **env = (char **)(base + head), *str = (char *)(env + n + k + 2);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (keep_old || !is_var(envp[i], "LD_PRELOAD")) env[m++] = envp[i];
  for (size_t j = 0; j < k; j++) {
    size_t i = 0;
    while (i < n && !same_name(envp[i], follow.vars[j])) i++;
    if (i == n) env[m++] = follow.vars[j]; /* the caller's own value wins */
  }
  if (!keep_old) {
    char *p = str;
    memcpy(p, pre_name, sizeof pre_name - 1);
    p += sizeof pre_name - 1;
    p = stpcpy(p, follow.preload);
    if (old && *old) {
      *p++ = ':';
      p = stpcpy(p, old);
    }
    env[m++] = str;
  }
  env[m] = NULL;
  return env;
}

char **mt__before_exec(char *const envp[]) {
  mt__trace_before_exit();
  if (!follow.on || !__atomic_load_n(&tr.active, __ATOMIC_RELAXED) ||
      __atomic_load_n(&tr.tracing_pid, __ATOMIC_RELAXED) != (uint64_t)getpid())
    return NULL;
  return follow_env(envp);
}

void mt__exec_failed(char **env) {
  if (!env) return;
  int saved = errno;
  char *base = (char *)env - sizeof(size_t) * 2;
  munmap(base, *(size_t *)base);
  errno = saved;
}
