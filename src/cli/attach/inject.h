/* Running code inside another process through ptrace(2), for memtrace
 * attach: one of its threads (the worker) is taken aside to call functions
 * there, as a debugger's `call` does, while the others run on; for the
 * moments when code must change under no thread's feet, every thread is
 * stopped. x86-64 only. */
#ifndef MT_CLI_ATTACH_INJECT_H
#define MT_CLI_ATTACH_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "safe_point.h"

typedef struct mt_inject {
  pid_t pid;
  pid_t worker;                  /* the thread that makes the calls        */
  struct user_regs_struct saved; /* its registers when it was taken        */
  unsigned char *fp;             /* and its floating-point and vector state */
  size_t fp_len;                 /* (XSAVE layout, or FXSAVE's: fp_xsave)  */
  int fp_xsave;
  pid_t *others;                 /* every other thread, while stopped      */
  size_t nothers, cap;
  char err[512];                 /* why the last call failed               */
} mt_inject;

/* Takes a thread of pid aside (PTRACE_SEIZE, then a stop) at a safe point
 * (safe_point.h; any point when sp is NULL): the main thread, if it is
 * alive and at one, else the first other thread found at one; threads
 * found elsewhere are let go and tried again, every millisecond, for up to
 * timeout_ms. 0, or -1 with the reason in in->err and errno: from ptrace
 * for the main thread (EPERM, ESRCH), or EAGAIN when no thread came to a
 * safe point in time. */
int mt_inject_begin(mt_inject *in, pid_t pid, const mt_safe_points *sp, int timeout_ms);

/* Calls fn(args[0..nargs)) on the worker (at most 6 integer arguments)
 * and waits for it to return, up to timeout_ms: 0 and *ret (rax), or -1
 * (the process died, the call faulted, or it did not return in time).
 * The call starts as a function call must: the direction flag clear, the
 * x87 stack empty, the control words at their defaults. Signals the worker
 * gets meanwhile are delivered to it. */
int mt_inject_call(mt_inject *in, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
                   int timeout_ms);

/* The process's memory (the worker taken): 0, or -1. */
int mt_inject_read(mt_inject *in, uint64_t addr, void *buf, size_t n);
int mt_inject_write(mt_inject *in, uint64_t addr, const void *buf, size_t n);
/* A scratch area on the worker's stack, below its red zone: where strings
 * for calls go (n bytes at most 4096). */
uint64_t mt_inject_scratch(const mt_inject *in, size_t n);

/* Stops every other thread too (those that start meanwhile included):
 * 0, or -1. */
int mt_inject_stop_all(mt_inject *in);
/* Whether any thread's instruction pointer (the worker's as it was taken)
 * lies in [lo, hi). */
int mt_inject_any_pc_in(mt_inject *in, uint64_t lo, uint64_t hi);
/* Writes code (read-only pages included) while every thread is stopped:
 * 0, or -1. */
int mt_inject_write_code(mt_inject *in, uint64_t addr, const void *bytes, size_t n);
/* Lets the other threads run and go (PTRACE_DETACH). */
void mt_inject_release_all(mt_inject *in);

/* Gives the worker its registers back, the floating-point and vector
 * ones included, and lets it go. */
void mt_inject_end(mt_inject *in);

#endif
