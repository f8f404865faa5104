/* What memtrace attach checks of a process before it touches it
 * (target.h). */
#include "target.h"

#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_symbols.h"

/* A line "Key:\tvalue" of /proc/PID/status, as a number (-1: none). */
static long status_field(pid_t pid, const char *key) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  size_t k = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, k) == 0 && line[k] == ':') {
      v = strtol(line + k + 1, NULL, 10);
      break;
    }
  if (f) fclose(f);
  return v;
}

static void comm_of(pid_t pid, char *out, size_t n) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(out, (int)n, f)) snprintf(out, n, "?");
  else out[strcspn(out, "\n")] = 0;
  if (f) fclose(f);
}

/* Whether two /proc/.../ns links name different namespaces (unknown: no). */
static int other_namespace(pid_t pid, const char *ns) {
  char mine[64], theirs[64];
  struct stat a, b;
  snprintf(mine, sizeof mine, "/proc/self/ns/%s", ns);
  snprintf(theirs, sizeof theirs, "/proc/%d/ns/%s", (int)pid, ns);
  return stat(mine, &a) == 0 && stat(theirs, &b) == 0 && a.st_ino != b.st_ino;
}

int mt_attach_check_target(pid_t pid, char *name, size_t name_n, char *why, size_t n) {
  char path[64], exe[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d", (int)pid);
  if (access(path, F_OK) != 0) {
    snprintf(why, n, "no process %d", (int)pid);
    return -1;
  }
  long tgid = status_field(pid, "Tgid");
  if (tgid > 0 && tgid != pid) {
    snprintf(why, n, "%d is a thread of process %ld: attach to %ld", (int)pid, tgid, tgid);
    return -1;
  }
  comm_of(pid, name, name_n);
  if (pid == getpid()) {
    snprintf(why, n, "process %d is memtrace attach itself", (int)pid);
    return -1;
  }
  snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
  ssize_t len = readlink(path, exe, sizeof exe - 1);
  if (len > 0) {
    exe[len] = 0;
    const char *slash = strrchr(exe, '/');
    snprintf(name, name_n, "%s", slash ? slash + 1 : exe);
  }
  long tracer = status_field(pid, "TracerPid");
  if (tracer > 0) {
    char tname[64];
    comm_of((pid_t)tracer, tname, sizeof tname);
    snprintf(why, n, "process %d (%s) is being traced by process %ld (%s), a debugger or tracer: "
             "only one may trace it at a time; detach that one first", (int)pid, name, tracer, tname);
    return -1;
  }
  if (other_namespace(pid, "pid") || other_namespace(pid, "mnt")) {
    snprintf(why, n, "process %d (%s) runs in another %s namespace (a container?): run memtrace "
             "attach inside it, where the process's files and pids are its own",
             (int)pid, name, other_namespace(pid, "pid") ? "PID" : "mount");
    return -1;
  }
  /* the program: 64-bit x86-64, linked with the C library */
  FILE *f = fopen(path, "rb");
  Elf64_Ehdr eh;
  if (f) {
    size_t got = fread(&eh, 1, sizeof eh, f);
    fclose(f);
    if (got >= EI_NIDENT && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        (eh.e_ident[EI_CLASS] != ELFCLASS64 || (got == sizeof eh && eh.e_machine != EM_X86_64))) {
      snprintf(why, n, "process %d (%s) is a %s program: memtrace attach traces 64-bit x86-64 ones",
               (int)pid, name, eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "non-x86-64");
      return -1;
    }
  }
  uint64_t base;
  char mapped[PATH_MAX];
  if (access(path, F_OK) == 0 && mt_maps_object(pid, "libc.so.6", &base, mapped, sizeof mapped) != 0) {
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
    if (access(maps, R_OK) == 0) {
      snprintf(why, n, "process %d (%s) does not use the C library's shared object (a statically "
               "linked program, or another C library): there is no dynamic loader to load the "
               "profiler with", (int)pid, name);
      return -1;
    }
  }
  return 0;
}

char mt_attach_proc_state(pid_t pid) {
  char path[64], stat[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t k = fread(stat, 1, sizeof stat - 1, f);
  fclose(f);
  stat[k] = 0;
  const char *close = strrchr(stat, ')'); /* the name may hold anything */
  return close && close[1] == ' ' ? close[2] : 0;
}

static long read_number(const char *path) {
  FILE *f = fopen(path, "r");
  long v = -1;
  if (f && fscanf(f, "%ld", &v) != 1) v = -1;
  if (f) fclose(f);
  return v;
}

void mt_attach_explain_eperm(long owner, long me, long scope, const char *detail, char *why,
                             size_t n) {
  if (owner >= 0 && owner != me && me != 0) {
    snprintf(why, n, "not permitted: it belongs to user %ld and memtrace runs as user %ld: attach "
             "as that user, or as root", owner, me);
  } else if (scope == 3) {
    snprintf(why, n, "not permitted: kernel.yama.ptrace_scope is 3, which forbids attaching to "
             "any process until the next reboot");
  } else if (scope == 2 && me != 0) {
    snprintf(why, n, "not permitted: kernel.yama.ptrace_scope is 2 (only with CAP_SYS_PTRACE): "
             "attach as root, or give memtrace the capability (setcap cap_sys_ptrace+ep)");
  } else if (scope == 1 && me != 0) {
    snprintf(why, n, "not permitted: kernel.yama.ptrace_scope is 1 (a process may only be traced "
             "by its ancestors): attach as root, give memtrace CAP_SYS_PTRACE (setcap "
             "cap_sys_ptrace+ep), or allow it with sysctl kernel.yama.ptrace_scope=0");
  } else {
    snprintf(why, n, "not permitted (%s): the process may not be dumpable (a set-user-ID "
             "program, or one that called prctl(PR_SET_DUMPABLE, 0)), or memtrace lacks "
             "CAP_SYS_PTRACE in its namespace", detail);
  }
}

void mt_attach_explain_ptrace(pid_t pid, int err, const char *detail, char *why, size_t n) {
  if (err == ESRCH) {
    snprintf(why, n, "it exited");
    return;
  }
  if (err != EPERM) {
    snprintf(why, n, "%s", detail);
    return;
  }
  mt_attach_explain_eperm(status_field(pid, "Uid"), (long)geteuid(),
                          read_number("/proc/sys/kernel/yama/ptrace_scope"), detail, why, n);
}
