/* Call chains for test_unwind, in a library of their own (the unwinder
 * hides the frames of the object it is linked into: the test program).
 * Built at -O2 with frame pointers: its functions read a global before
 * their push %rbp, which the unwinder's look at their first bytes rejects,
 * though they do set up their frame record before calling. uc_no_record
 * sets up none: walking frame records through it skips its caller. Built
 * a second time without frame pointers (mt_unwind_cases_nofp): no function
 * has a record, and every walk goes by call-frame steps. In both, with
 * `no_record` 2, some chains go on in a signal handler (a signal frame,
 * over the C library's raise), and through a frame sized at run time (its
 * CFA follows rbp even without frame pointers). And chains through CPython's
 * perf trampolines, which keep no record and have no unwind tables. */
#include <signal.h>
#include <stdint.h>
#include <string.h>

typedef void (*unwind_case_leaf)(void);

static unwind_case_leaf at_leaf;
static uint64_t state;
static int with_no_record, with_trampolines;

static unsigned rnd(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (unsigned)(state >> 32);
}

void uc_f0(int);
void uc_f1(int);
void uc_f2(int);
void uc_f3(int);

/* No frame record: calls on without one (tail calls are prevented). */
__attribute__((noinline, optimize("omit-frame-pointer"))) void uc_no_record(int depth) {
  if (rnd() & 1)
    uc_f1(depth);
  else
    uc_f2(depth);
  __asm__ volatile("" ::: "memory");
}

/* uc_via calls itself a few times, then via_no_record (no record either),
 * all from one (indirect) call: the frame a walk of records skips when it
 * passes via_no_record has the same return address as the next one. */
typedef void (*via_fn)(int depth, int left);
void uc_via(int depth, int left);

__attribute__((noinline, optimize("omit-frame-pointer"))) static void via_no_record(int depth,
                                                                                   int left) {
  (void)left;
  if (rnd() & 1)
    uc_f1(depth);
  else
    uc_f2(depth);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void uc_via(int depth, int left) {
  via_fn next = left > 0 ? uc_via : via_no_record;
  __asm__ volatile("" : "+r"(next)); /* an indirect call, always */
  next(depth, left - 1);
  __asm__ volatile("" ::: "memory");
}

/* A frame sized at run time. */
__attribute__((noinline)) void uc_sized(int depth) {
  char room[16 + (rnd() & 255)];
  room[0] = (char)depth;
  __asm__ volatile("" : : "r"(room) : "memory"); /* kept */
  if (rnd() & 1)
    uc_f1(depth);
  else
    uc_f2(depth);
  __asm__ volatile("" ::: "memory");
}

/* CPython's perf trampolines (copied by the test into anonymous
 * executable memory, as CPython does: unwind_cases_trampolines), with and
 * without endbr64, called as CPython calls one: the evaluator (which keeps
 * a frame record in a CPython built with frame pointers) in rcx, the
 * fourth argument. */
typedef void (*trampoline_fn)(int depth, void *, void *, void (*callee)(int));
static trampoline_fn trampolines[2];
static void (*around_trampoline)(int entering); /* the test's reference walks */

void unwind_cases_trampolines(void *bare, void *cet, void (*around)(int entering)) {
  trampolines[0] = (trampoline_fn)bare;
  trampolines[1] = (trampoline_fn)cet;
  around_trampoline = around;
}

__attribute__((noinline)) static void tramp_callee(int depth) {
  if (rnd() & 1)
    uc_f1(depth);
  else
    uc_f2(depth);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void uc_tramp(int depth) {
  around_trampoline(1);
  trampolines[rnd() & 1](depth, NULL, NULL, tramp_callee);
  around_trampoline(0);
}

/* The chain goes on in a handler of SIGUSR1, raised here. */
static volatile int in_handler_depth;

static void on_signal(int sig) {
  (void)sig;
  uc_f3(in_handler_depth);
}

static volatile sig_atomic_t in_handler;

static void on_signal_outer(int sig);

__attribute__((noinline)) void uc_raise(int depth) {
  if (in_handler) { /* one signal frame at a time */
    uc_f1(depth);
  } else {
    in_handler_depth = depth;
    raise(SIGUSR1);
  }
  __asm__ volatile("" ::: "memory");
}

static int signals; /* handled so far */

int unwind_cases_signals(void) { return signals; }

static void on_signal_outer(int sig) {
  signals++;
  in_handler = 1;
  on_signal(sig);
  in_handler = 0;
}

/* Each function calls the next from two places, to random depths; a leaf
 * calls back into the test one to three times from the same frame. */
#define LEVEL(name, a, b)                                                      \
  __attribute__((noinline)) void name(int depth) {                            \
    unsigned r = rnd();                                                        \
    if (depth <= 0) {                                                          \
      for (unsigned i = 0; i <= r % 3; i++) at_leaf();                         \
      return;                                                                  \
    }                                                                          \
    if (with_trampolines && r % 4 == 0)                                        \
      uc_tramp(depth - 1);                                                     \
    else if (with_no_record && r % 5 == 0)                                     \
      uc_no_record(depth - 1);                                                 \
    else if (with_no_record && r % 5 == 1)                                     \
      uc_via(depth - 1, 1 + (int)(r >> 8) % 3);                                \
    else if (with_no_record > 1 && r % 11 == 2)                                \
      uc_sized(depth - 1);                                                     \
    else if (with_no_record > 1 && r % 11 == 3)                                \
      uc_raise(depth - 1);                                                     \
    else if (r & 8)                                                            \
      a(depth - 1);                                                            \
    else                                                                       \
      b(depth - 1);                                                            \
    __asm__ volatile("" ::: "memory");                                         \
  }
LEVEL(uc_f0, uc_f1, uc_f3)
LEVEL(uc_f1, uc_f2, uc_f0)
LEVEL(uc_f2, uc_f3, uc_f1)
LEVEL(uc_f3, uc_f0, uc_f2)

/* `rounds` call chains, 1 to 14 deep. no_record: 0, chains of functions
 * with records; 1, through functions without too; 2, and through signal
 * handlers and frames sized at run time; 3, functions with records and
 * CPython trampolines. */
void unwind_cases_run(unwind_case_leaf leaf, uint64_t seed, int rounds, int no_record) {
  if (no_record > 1) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal_outer;
    sigaction(SIGUSR1, &sa, NULL);
  }
  at_leaf = leaf;
  state = seed | 1;
  with_no_record = no_record < 3 ? no_record : 0;
  with_trampolines = no_record == 3;
  for (int r = 0; r < rounds; r++) {
    int depth = 1 + (int)(rnd() % 14);
    if (rnd() & 1)
      uc_f0(depth);
    else
      uc_f3(depth);
  }
}
