/* ptrace(2) calls inside another process (inject.h). */
#include "inject.h"

#include <cpuid.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "target.h"

#define RED_ZONE 128
#define SCRATCH 4096
#define EFLAGS_DF 0x400u

/* The legacy region both FXSAVE and XSAVE layouts begin with, and XSAVE's
 * header: the fields a call's clean state sets. */
#define FP_FCW 0    /* u16 x87 control word          */
#define FP_FSW 2    /* u16 x87 status word           */
#define FP_FTW 4    /* u8 abridged tags: 0, all empty */
#define FP_MXCSR 24 /* u32                           */
#define FP_XSTATE_BV 512
#define FP_LEGACY 512

/* The size of the thread's XSAVE area as the kernel gives it through
 * ptrace: at most what CPUID says every supported feature takes. */
static size_t xsave_cap(void) {
  unsigned a, b, c, d;
  if (__get_cpuid_count(0xd, 0, &a, &b, &c, &d) && c >= FP_LEGACY + 64) return c;
  return 16384;
}

/* Saves worker t's floating-point and vector state into in->fp: the whole
 * XSAVE area where the kernel has one, else the FXSAVE area. The function
 * calls made in the thread change it (strlen's and memcpy's vector
 * registers, among others), and the code it was taken from may be holding
 * values there: x87 and SSE registers are not saved over a stop as a call
 * site saves them. 0, or -1 with errno. */
static int save_fp(mt_inject *in, pid_t t) {
  size_t cap = xsave_cap();
  if (cap < sizeof(struct user_fpregs_struct)) cap = sizeof(struct user_fpregs_struct);
  unsigned char *buf = malloc(cap);
  if (!buf) return errno = ENOMEM, -1;
  struct iovec v = {buf, cap};
  if (ptrace(PTRACE_GETREGSET, t, (void *)(long)NT_X86_XSTATE, &v) == 0 && v.iov_len >= FP_LEGACY + 64) {
    in->fp_xsave = 1, in->fp_len = v.iov_len;
  } else if (ptrace(PTRACE_GETFPREGS, t, 0, buf) == 0) {
    in->fp_xsave = 0, in->fp_len = sizeof(struct user_fpregs_struct);
  } else {
    int e = errno;
    free(buf);
    return errno = e, -1;
  }
  free(in->fp);
  in->fp = buf;
  return 0;
}

/* Gives the worker the floating-point state buf (in->fp's layout and
 * length): 0, or -1. */
static int put_fp(const mt_inject *in, unsigned char *buf) {
  if (!in->fp_xsave) return ptrace(PTRACE_SETFPREGS, in->worker, 0, buf) == 0 ? 0 : -1;
  struct iovec v = {buf, in->fp_len};
  return ptrace(PTRACE_SETREGSET, in->worker, (void *)(long)NT_X86_XSTATE, &v) == 0 ? 0 : -1;
}

/* The state a function may expect on entry: the saved one with the x87
 * stack empty, no exception flags, and the control words at their
 * defaults (round to nearest, exceptions masked, 64-bit x87 precision). */
static int put_clean_fp(const mt_inject *in) {
  unsigned char *buf = malloc(in->fp_len);
  if (!buf) return -1;
  memcpy(buf, in->fp, in->fp_len);
  uint16_t fcw = 0x037f, fsw = 0;
  uint32_t mxcsr = 0x1f80;
  memcpy(buf + FP_FCW, &fcw, sizeof fcw);
  memcpy(buf + FP_FSW, &fsw, sizeof fsw);
  buf[FP_FTW] = 0;
  memcpy(buf + FP_MXCSR, &mxcsr, sizeof mxcsr);
  if (in->fp_xsave) { /* x87 and SSE taken from the buffer, not their initial state */
    uint64_t bv;
    memcpy(&bv, buf + FP_XSTATE_BV, sizeof bv);
    bv |= 3;
    memcpy(buf + FP_XSTATE_BV, &bv, sizeof bv);
  }
  int rc = put_fp(in, buf);
  free(buf);
  return rc;
}

static int say(mt_inject *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(mt_inject *in, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(in->err, sizeof in->err, fmt, ap);
  va_end(ap);
  return -1;
}

/* Waits for thread tid's stop by PTRACE_INTERRUPT, delivering the signals
 * it stops for meanwhile: 0, or -1 (it is gone). */
static int wait_interrupted(pid_t tid) {
  for (;;) {
    int st;
    if (waitpid(tid, &st, __WALL) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (!WIFSTOPPED(st)) return -1;
    if (st >> 16 == PTRACE_EVENT_STOP) return 0;
    ptrace(PTRACE_CONT, tid, 0, (void *)(long)WSTOPSIG(st)); /* a signal of its own */
  }
}

/* Seizes thread t and stops it: 0 and its registers, or -1 with errno
 * (from ptrace; ESRCH when it is gone). */
static int take(pid_t t, struct user_regs_struct *r) {
  if (ptrace(PTRACE_SEIZE, t, 0, 0) != 0) return -1;
  if (ptrace(PTRACE_INTERRUPT, t, 0, 0) != 0 || wait_interrupted(t) != 0 ||
      ptrace(PTRACE_GETREGS, t, 0, r) != 0) {
    ptrace(PTRACE_DETACH, t, 0, 0);
    errno = ESRCH;
    return -1;
  }
  return 0;
}

/* Thread t, taken with registers r, as the worker if it is at a safe
 * point (any point without sp): 1; else let go: 0; -1 with errno if its
 * floating-point state cannot be read (it is let go). */
static int keep_if_safe(mt_inject *in, const mt_safe_points *sp, pid_t t,
                        const struct user_regs_struct *r) {
  if (sp && !mt_safe_point(sp, r)) {
    ptrace(PTRACE_DETACH, t, 0, 0);
    return 0;
  }
  if (save_fp(in, t) != 0) {
    int e = errno;
    ptrace(PTRACE_DETACH, t, 0, 0);
    errno = e;
    return -1;
  }
  in->worker = t, in->saved = *r;
  return 1;
}

/* Tries each thread of the process once, the main one first: 1 with the
 * worker taken, 0 if none was at a safe point, -1 with errno if the main
 * thread cannot be seized (not permitted, gone) or the worker's
 * floating-point state cannot be read. */
static int take_one_at_safe_point(mt_inject *in, const mt_safe_points *sp) {
  struct user_regs_struct r;
  if (mt_attach_proc_state(in->pid) != 'Z') { /* a main thread that exited can make no call */
    if (take(in->pid, &r) != 0) return -1;
    int kept = keep_if_safe(in, sp, in->pid, &r);
    if (kept) return kept;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)in->pid);
  DIR *d = opendir(path);
  if (!d) return errno = ESRCH, -1;
  int got = 0;
  for (struct dirent *e; !got && (e = readdir(d));) {
    pid_t t = (pid_t)atoi(e->d_name);
    if (t > 0 && t != in->pid && take(t, &r) == 0) got = keep_if_safe(in, sp, t, &r);
  }
  int e = errno;
  closedir(d);
  errno = e;
  return got;
}

int mt_inject_begin(mt_inject *in, pid_t pid, const mt_safe_points *sp, int timeout_ms) {
  memset(in, 0, sizeof *in);
  in->pid = pid;
  double until = mt_monotonic_seconds() + timeout_ms / 1e3; /* the rounds' own time counts too */
  for (;;) {
    int got = take_one_at_safe_point(in, sp);
    if (got > 0) return 0;
    if (got < 0) {
      int e = errno;
      if (e == ESRCH) say(in, "the process ended as it was stopped");
      else say(in, "ptrace: %s", strerror(e));
      errno = e;
      return -1;
    }
    if (mt_monotonic_seconds() >= until) {
      say(in, "none of its threads came, within %.1f s, to a point where it can make the "
          "profiler's calls without risk: each was inside the C library, the loader or the "
          "allocator, whose locks it may hold (or waiting there for one), or had less than "
          "%u KiB of stack left for the calls", timeout_ms / 1e3, MT_SAFE_POINT_STACK >> 10);
      errno = EAGAIN;
      return -1;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

uint64_t mt_inject_scratch(const mt_inject *in, size_t n) {
  (void)n;
  return (in->saved.rsp - RED_ZONE - SCRATCH) & ~(uint64_t)15;
}

static void pause_briefly(void) {
  struct timespec ts = {0, 200000};
  nanosleep(&ts, NULL);
}

int mt_inject_call(mt_inject *in, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
                   int timeout_ms) {
  struct user_regs_struct r = in->saved;
  /* below the scratch area; 16-aligned, less the return address a call
   * would have pushed: 0, where the function's return faults */
  uint64_t sp = ((mt_inject_scratch(in, SCRATCH) - 256) & ~(uint64_t)15) - 8, zero = 0;
  if (mt_inject_write(in, sp, &zero, sizeof zero)) return say(in, "cannot write the stack");
  unsigned long long *regs[6] = {&r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9};
  for (int k = 0; k < nargs && k < 6; k++) *regs[k] = args[k];
  r.rsp = sp;
  r.rip = fn;
  r.rax = 0;
  r.orig_rax = (unsigned long long)-1; /* no system call to restart under the call */
  r.eflags &= ~(unsigned long long)EFLAGS_DF;
  if (ptrace(PTRACE_SETREGS, in->worker, 0, &r) != 0 || put_clean_fp(in) != 0 ||
      ptrace(PTRACE_CONT, in->worker, 0, 0) != 0)
    return say(in, "ptrace: %s", strerror(errno));
  for (long waited_us = 0;;) {
    int st;
    pid_t w = waitpid(in->worker, &st, __WALL | WNOHANG);
    if (w < 0 && errno != EINTR) return say(in, "the process ended during the call");
    if (w <= 0) {
      if ((waited_us += 200) > (long)timeout_ms * 1000) {
        ptrace(PTRACE_INTERRUPT, in->worker, 0, 0);
        wait_interrupted(in->worker);
        return say(in, "the call did not return within %d ms", timeout_ms);
      }
      pause_briefly();
      continue;
    }
    if (!WIFSTOPPED(st)) return say(in, "the process ended during the call");
    int sig = WSTOPSIG(st);
    if (st >> 16 == PTRACE_EVENT_STOP) { /* a group stop: the call goes on */
      ptrace(PTRACE_CONT, in->worker, 0, 0);
      continue;
    }
    if (sig == SIGSEGV) {
      struct user_regs_struct now;
      if (ptrace(PTRACE_GETREGS, in->worker, 0, &now) != 0) return say(in, "ptrace: %s", strerror(errno));
      if (now.rip == 0) {
        *ret = now.rax;
        return 0;
      }
      return say(in, "the call faulted at %#llx", now.rip);
    }
    ptrace(PTRACE_CONT, in->worker, 0, (void *)(long)sig); /* the program's signal */
  }
}

int mt_inject_read(mt_inject *in, uint64_t addr, void *buf, size_t n) {
  struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};
  if (process_vm_readv(in->pid, &local, 1, &remote, 1, 0) == (ssize_t)n) return 0;
  for (size_t k = 0; k < n; k += sizeof(long)) { /* word by word, through ptrace */
    errno = 0;
    long w = ptrace(PTRACE_PEEKDATA, in->worker, (void *)(uintptr_t)(addr + k), 0);
    if (errno) return -1;
    memcpy((char *)buf + k, &w, n - k < sizeof w ? n - k : sizeof w);
  }
  return 0;
}

/* Word by word through ptrace, which writes read-only pages too. */
static int poke(mt_inject *in, uint64_t addr, const void *buf, size_t n) {
  for (size_t k = 0; k < n;) {
    uint64_t at = (addr + k) & ~(uint64_t)7;
    size_t skip = (size_t)(addr + k - at), take = 8 - skip < n - k ? 8 - skip : n - k;
    errno = 0;
    long w = ptrace(PTRACE_PEEKDATA, in->worker, (void *)(uintptr_t)at, 0);
    if (errno) return -1;
    memcpy((char *)&w + skip, (const char *)buf + k, take);
    if (ptrace(PTRACE_POKEDATA, in->worker, (void *)(uintptr_t)at, (void *)w) != 0) return -1;
    k += take;
  }
  return 0;
}

int mt_inject_write(mt_inject *in, uint64_t addr, const void *buf, size_t n) {
  struct iovec local = {(void *)buf, n}, remote = {(void *)(uintptr_t)addr, n};
  if (process_vm_writev(in->pid, &local, 1, &remote, 1, 0) == (ssize_t)n) return 0;
  return poke(in, addr, buf, n);
}

int mt_inject_write_code(mt_inject *in, uint64_t addr, const void *bytes, size_t n) {
  return poke(in, addr, bytes, n);
}

static int stopped_already(const mt_inject *in, pid_t t) {
  if (t == in->worker) return 1;
  for (size_t k = 0; k < in->nothers; k++)
    if (in->others[k] == t) return 1;
  return 0;
}

int mt_inject_stop_all(mt_inject *in) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)in->pid);
  for (int found = 1; found;) { /* again: threads started meanwhile */
    found = 0;
    DIR *d = opendir(path);
    if (!d) return say(in, "cannot list the threads: %s", strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
      pid_t t = (pid_t)atoi(e->d_name);
      if (t <= 0 || stopped_already(in, t)) continue;
      if (ptrace(PTRACE_SEIZE, t, 0, 0) != 0) continue; /* gone already */
      if (ptrace(PTRACE_INTERRUPT, t, 0, 0) != 0 || wait_interrupted(t) != 0) continue;
      if (in->nothers == in->cap) {
        size_t cap = in->cap ? 2 * in->cap : 64;
        pid_t *v = realloc(in->others, cap * sizeof *v);
        if (!v) {
          ptrace(PTRACE_DETACH, t, 0, 0);
          closedir(d);
          return say(in, "out of memory");
        }
        in->others = v;
        in->cap = cap;
      }
      in->others[in->nothers++] = t;
      found = 1;
    }
    closedir(d);
  }
  return 0;
}

int mt_inject_any_pc_in(mt_inject *in, uint64_t lo, uint64_t hi) {
  if (in->saved.rip >= lo && in->saved.rip < hi) return 1;
  for (size_t k = 0; k < in->nothers; k++) {
    struct user_regs_struct r;
    if (ptrace(PTRACE_GETREGS, in->others[k], 0, &r) == 0 && r.rip >= lo && r.rip < hi) return 1;
  }
  return 0;
}

void mt_inject_release_all(mt_inject *in) {
  for (size_t k = 0; k < in->nothers; k++) ptrace(PTRACE_DETACH, in->others[k], 0, 0);
  in->nothers = 0;
}

void mt_inject_end(mt_inject *in) {
  mt_inject_release_all(in);
  free(in->others);
  in->others = NULL;
  in->cap = 0;
  ptrace(PTRACE_SETREGS, in->worker, 0, &in->saved);
  if (in->fp) put_fp(in, in->fp);
  free(in->fp);
  in->fp = NULL;
  ptrace(PTRACE_DETACH, in->worker, 0, 0);
}
