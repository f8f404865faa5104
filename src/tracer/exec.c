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
 * same destination (the same pid: the same file, rewritten). Without %p
 * only the tracing process's own exec follows: a forked child stops
 * tracing at fork. With %p every process traces to its own file: a
 * forked child keeps tracing and follows its exec; a vfork child, which
 * shares the parent's memory and must not touch its tracer, hands the
 * settings to what it execs; so do the children of posix_spawn, which
 * execs inside the C library.
 *
 * The new environment is built in a mapping of its own (mmap is
 * async-signal-safe: exec may be called from a signal handler), which a
 * failed exec unmaps; in a vfork child, whose memory is its parent's (a
 * mapping would stay there), on the exec wrapper's stack. */
#include "exec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "environ.h"
#include "interposer.h"
#include "runnotes.h"
#include "session.h"

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

/* What envp says about the settings: its length, its LD_PRELOAD value
 * (NULL: none), whether that already names this library. */
typedef struct env_scan {
  size_t n, k;     /* envp's entries, the kept settings */
  const char *old; /* envp's LD_PRELOAD value */
  int keep_old;    /* it names this library already */
} env_scan;

static const char pre_name[] = "LD_PRELOAD=";

/* The bytes envp plus the kept settings take, or 0 when envp names
 * MEMTRACE itself (the caller decided: a nested `memtrace run`). */
static size_t env_size(char *const envp[], env_scan *sc) {
  *sc = (env_scan){0};
  for (; envp && envp[sc->n]; sc->n++) {
    if (mt__env_is(envp[sc->n], "MEMTRACE")) return 0;
    if (mt__env_is(envp[sc->n], "LD_PRELOAD")) sc->old = envp[sc->n] + sizeof pre_name - 1;
  }
  while (follow.vars[sc->k]) sc->k++;
  sc->keep_old = sc->old && mt__preload_has(sc->old, follow.preload);
  size_t pre_len = sc->keep_old ? 0
                                : sizeof pre_name + strlen(follow.preload) +
                                      (sc->old && *sc->old ? 1 + strlen(sc->old) : 0);
  return MT__EXEC_ENV_HEAD + (sc->n + sc->k + 2) * sizeof(char *) + pre_len;
}

/* Builds envp plus the kept settings at base (env_size bytes). */
static char **env_fill(char *base, char *const envp[], const env_scan *sc) {
  char **env = (char **)(base + MT__EXEC_ENV_HEAD), *str = (char *)(env + sc->n + sc->k + 2);
  size_t m = 0;
  for (size_t i = 0; i < sc->n; i++)
    if (sc->keep_old || !mt__env_is(envp[i], "LD_PRELOAD")) env[m++] = envp[i];
  for (size_t j = 0; j < sc->k; j++) {
    size_t i = 0;
    while (i < sc->n && !same_name(envp[i], follow.vars[j])) i++;
    if (i == sc->n) env[m++] = follow.vars[j]; /* the caller's own value wins */
  }
  if (!sc->keep_old) {
    char *p = stpcpy(str, pre_name);
    p = stpcpy(p, follow.preload);
    if (sc->old && *sc->old) {
      *p++ = ':';
      stpcpy(p, sc->old);
    }
    env[m++] = str;
  }
  env[m] = NULL;
  return env;
}

/* Whether this process follows what it execs: it is the one tracing, or
 * (with %p) a vfork child of it, which traces to a file of its own once it
 * has exec'd. *per_process: the destination has %p. */
static int following(int *vfork_child, int *per_process) {
  uint64_t me = (uint64_t)getpid(), tracer;
  int active = mt__tr_tracing(&tracer, per_process);
  *vfork_child = me != tracer;
  return follow.on && active &&
         (me == tracer || (*per_process && (uint64_t)getppid() == tracer));
}

size_t mt__before_exec(char *const envp[], int *vfork_child) {
  mt__trace_before_exit();
  env_scan sc;
  int per_process, follows = following(vfork_child, &per_process);
  /* A vfork child of the tracing process (dash runs its commands so): no
   * fork handler told of it. Told at each exec it tries (a shell tries
   * each directory of PATH): memtrace run counts its pid once. */
  uint64_t tracer;
  if (*vfork_child && mt__tr_tracing(&tracer, &per_process) && (uint64_t)getppid() == tracer)
    mt__runnotes_child(follows, (long)getpid());
  return follows ? env_size(envp, &sc) : 0;
}

size_t mt__before_spawn(char *const envp[]) {
  int child, per_process;
  env_scan sc;
  return following(&child, &per_process) && !child && per_process ? env_size(envp, &sc) : 0;
}

char **mt__exec_env(void *buf, size_t size, char *const envp[]) {
  env_scan sc;
  if (env_size(envp, &sc) != size) return NULL; /* changed meanwhile */
  char *base = buf;
  if (!base) {
    base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
  }
  *(size_t *)base = buf ? 0 : size; /* what mt__exec_done unmaps */
  return env_fill(base, envp, &sc);
}

void mt__exec_done(char **env) {
  if (!env) return;
  char *base = (char *)env - MT__EXEC_ENV_HEAD;
  if (!*(size_t *)base) return;
  int saved = errno;
  munmap(base, *(size_t *)base);
  errno = saved;
}
