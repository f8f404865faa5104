/* Backtraces for samples: AUTO (the default) walks the frame-pointer chain
 * and steps through functions without a frame record by their call-frame
 * information (cfi.h); libunwind's cached walk is its last resort, and a
 * mode of its own. Every step is checked against the thread's stack. */
#define UNW_LOCAL_ONLY
#include "unwind.h"

#include "bigstack.h"
#include "cfi.h"
#include "ehframe.h"
#include "stackmap.h"
#include "unwlib.h"
#include "tracer/events.h"

#include <stdatomic.h>
#include <link.h>
#include <string.h>

/* Set at each session's start, while a thread of the last session may
 * still be walking (a sample taken just before the stop): atomic. */
static _Atomic int mode_now;

static inline mt__unwind_mode unwind_mode(void) {
  return (mt__unwind_mode)atomic_load_explicit(&mode_now, memory_order_relaxed);
}

/* Address ranges whose frames a sample hides: the profiler itself (its
 * shared object's text), and C++'s allocation functions, so that the
 * innermost frame is the code that asked for memory. Each session's start
 * fills the set not in use and then publishes it: a walk still under way
 * keeps reading the one it found. Ranges found later (cxxrt.h) are
 * appended to the published set, each written before the count. */
#define MAX_HIDDEN 64
typedef struct hidden_set {
  _Atomic size_t n; /* entries below it are written: appends publish it */
  struct range {
    uintptr_t lo, hi;
  } r[MAX_HIDDEN];
} hidden_set;
static hidden_set hidden_sets[2];
static _Atomic(hidden_set *) hidden_now = &hidden_sets[0];

/* Writers (a session's start, the naming of codes) hold the tracer's lock. */
static void hide(hidden_set *h, uintptr_t lo, uintptr_t hi) {
  size_t n = atomic_load_explicit(&h->n, memory_order_relaxed);
  if (n >= MAX_HIDDEN || lo >= hi) return;
  for (size_t i = 0; i < n; i++)
    if (h->r[i].lo == lo && h->r[i].hi == hi) return;
  h->r[n] = (struct range){lo, hi};
  atomic_store_explicit(&h->n, n + 1, memory_order_release);
}

void mt__unwind_hide(uintptr_t lo, uintptr_t hi) {
  hide(atomic_load_explicit(&hidden_now, memory_order_relaxed), lo, hi);
}

_Atomic int mt__unwind_late;

void mt__unwind_hide_late(uintptr_t lo, uintptr_t hi) {
  mt__unwind_hide(lo, hi);
  atomic_store(&mt__unwind_late, 1);
}

static inline int is_hidden(uintptr_t pc) {
  const hidden_set *h = atomic_load_explicit(&hidden_now, memory_order_acquire);
  size_t n = atomic_load_explicit(&h->n, memory_order_acquire);
  for (size_t i = 0; i < n; i++)
    if (pc - 1 >= h->r[i].lo && pc - 1 < h->r[i].hi) return 1;
  return 0;
}

int mt__unwind_is_hidden(uintptr_t pc) { return is_hidden(pc); }

typedef struct segment_query {
  uintptr_t addr;
  int exec_only;
  mt__segment *out;
} segment_query;

static int find_segment(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  segment_query *q = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (q->exec_only && !(ph->p_flags & PF_X))) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (q->addr >= lo && q->addr - lo < ph->p_memsz) {
      *q->out = (mt__segment){info->dlpi_addr, lo, lo + ph->p_memsz};
      return 1;
    }
  }
  return 0;
}

int mt__segment_of(uintptr_t addr, int exec_only, mt__segment *out) {
  segment_query q = {addr, exec_only, out};
  return dl_iterate_phdr(find_segment, &q);
}

_Atomic unsigned long mt__unwind_lu_walks;

void mt__unwind_init(mt__unwind_mode m) {
  atomic_store_explicit(&mode_now, (int)m, memory_order_relaxed);
  hidden_set *h = atomic_load_explicit(&hidden_now, memory_order_relaxed) == &hidden_sets[0]
                      ? &hidden_sets[1]
                      : &hidden_sets[0];
  atomic_store_explicit(&h->n, 0, memory_order_relaxed);
  mt__segment self; /* the profiler's own code */
  if (mt__segment_of((uintptr_t)&mt__unwind_init, 1, &self)) hide(h, self.lo, self.hi);
  mt__unwind_forget();
  atomic_store_explicit(&hidden_now, h, memory_order_release); /* C++'s: mt__cxxrt_probe */
  if (m == MT__UNWIND_LIBUNWIND && mt__unw_ready()) {
    uintptr_t warm[64]; /* loads the tables of what is mapped now */
    unw_backtrace((void **)warm, 64);
  }
}

/* The interposer's frame, where the walk starts. Initial-exec: in a
 * preloaded object the default model calls __tls_get_addr at every
 * access. */
__thread uintptr_t mt__unwind_from __attribute__((tls_model("initial-exec")));

/* The stack the thread runs on: the mapping that holds it (stackmap.h),
 * asked of the kernel at the thread's first sample, not of the C library
 * (pthread_getattr_np can wait for itself when the sample is taken inside
 * it). Every step of a walk stays in [stack_lo, stack_hi). Below
 * stack_floor the stack may end without a guard (a stack the program
 * allocated itself, in a mapping with other data): no room is known there,
 * and libunwind runs on the tracer's stack. The mapping is asked again
 * when a sample's stack pointer lies outside it (the main thread's stack
 * has grown, a coroutine runs on a stack of its own), at most MAX_ASKS
 * times per thread: a program that switches stacks all the time then
 * walks from the last one found (and from the others, through libunwind
 * as before, in the modes that have it). */
static __thread uintptr_t stack_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t stack_hi __attribute__((tls_model("initial-exec")));
static __thread uintptr_t stack_floor __attribute__((tls_model("initial-exec")));
static __thread unsigned stack_asks __attribute__((tls_model("initial-exec")));
#define MAX_ASKS 16
/* Bounds no frame record passes (the walks check fp <= stack_hi - 16). */
#define NO_STACK 16

static void find_stack_job(void *sp) {
  mt__mapping m;
  if (mt__mapping_of(*(uintptr_t *)sp, &m)) {
    stack_lo = m.lo, stack_hi = m.hi;
    stack_floor = m.guarded ? m.lo : m.hi;
  } else if (stack_hi <= NO_STACK) { /* nothing known yet */
    stack_lo = stack_hi = stack_floor = NO_STACK;
  }
}

/* On the tracer's stack: the kernel's map is read a few hundred bytes
 * deeper than a walk goes, and whether the thread's stack has the room is
 * what is being asked. Never the tracer's own stack for the thread's. */
static __attribute__((noinline, cold)) void find_stack(uintptr_t sp) {
  if (stack_asks >= MAX_ASKS || mt__big_stack_holds(sp)) return;
  stack_asks++;
  mt__on_big_stack(find_stack_job, &sp);
}

/* Makes the bounds those of the stack sp is on. */
static inline void know_stack(uintptr_t sp) {
  if (__builtin_expect(sp - stack_lo >= stack_hi - stack_lo, 0)) find_stack(sp);
}

/* A stack with less than this below the sample's frame is short (thread
 * pools and coroutine runtimes give 16 to 64 KiB), and so is one not known
 * (a coroutine's): the tracer's deeper work then runs on its own stack
 * (bigstack.h). */
#define SHORT_STACK (32u << 10)

static int stack_short(void) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  know_stack(sp);
  return !(sp >= stack_floor + SHORT_STACK && sp < stack_hi);
}

/* The same from a walk under way (its stack known), and from the big
 * stack, which is no room of the thread's: then short. */
static int room_short(void) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  return !(sp >= stack_floor + SHORT_STACK && sp < stack_hi);
}

int mt__stack_short(void) { return stack_short(); }

/* ---- AUTO: which return addresses lie in functions with frame records ---- */

/* A return address r is in function F; the walk found r in the frame record
 * of F's callee, and goes on to the record at the rbp value F had. If F set
 * up its own record, that is F's, and the walk misses nothing; if not, rbp
 * is F's caller's record (F's frame is skipped) or garbage. Verdicts per
 * return address, in a lock-free cache: an address has a slot of its
 * own and, second, the other slot of its aligned pair (the same cache
 * line). Direct-mapped, two addresses of one slot evicted each other, and
 * where both verdicts took a fallback walk to learn (an entry point and a
 * function that sets up its record late) every walk through them fell
 * back (profiler.unwind failed so about one run in 150, the addresses
 * laid out by ASLR). An entry is the address itself for V_RECORD, by far
 * the most common verdict, so the walk's test is one compare (two when
 * the entry sits in the second slot); the other verdicts are the address
 * in the low 48 bits and the verdict above (never equal to an address:
 * user space lies below 2^48). 0 is empty. Any entry read is a verdict of
 * the address it holds: writers racing can only lose one. */
enum { V_RECORD = 1, V_NONE = 2, V_ENTRY = 3, V_NOREC = 4, V_TRAMP = 5 }; /* ENTRY:
    no record, but only the C library's entry points lie beyond; NOREC: no
    record, for sure (both learned from libunwind, see learn_records);
    TRAMP: in a CPython perf trampoline (see trampoline_step), for good */
#define VERDICT_BITS 14
#define ADDR_MASK ((UINT64_C(1) << 48) - 1)
#define OUTER_SLACK 3 /* start_thread, clone3; __libc_start_call_main,
                         __libc_start_main, _start */
static _Alignas(16) _Atomic uint64_t verdicts[1u << VERDICT_BITS];
static _Atomic unsigned verdicts_closes;

/* r's slot; the other of its pair is r's second. */
static size_t verdict_home(uintptr_t r) {
  return ((uint64_t)r * 0x9e3779b97f4a7c15ull) >> (64 - VERDICT_BITS);
}

#define SLOT(i) atomic_load_explicit(&verdicts[i], memory_order_relaxed)

/* Whether entry e is a verdict of address r. */
static inline int of_address(uint64_t e, uintptr_t r) {
  return e && (e & ADDR_MASK) == ((uint64_t)r & ADDR_MASK);
}

/* Whether any verdict was stored: forgetting an untouched cache would map
 * its 128 KiB of zero pages (a fault each, dear on a virtual machine). */
static _Atomic int verdicts_used;

/* r's cache entry for verdict v (see above). */
static inline uint64_t verdict_entry(uintptr_t r, unsigned v) {
  return v == V_RECORD ? (uint64_t)r : ((uint64_t)r & ADDR_MASK) | (uint64_t)v << 56;
}

/* r's verdict v: over r's entry if there is one (the one lookups find
 * first), else into r's slot, the entry there moving to the second. A
 * trampoline's stays: what the walks teach (learn_records) assumes frame
 * records, which a trampoline's step does not follow. */
static void verdict_put(uintptr_t r, unsigned v) {
  if (!atomic_load_explicit(&verdicts_used, memory_order_relaxed))
    atomic_store_explicit(&verdicts_used, 1, memory_order_relaxed);
  size_t i = verdict_home(r);
  uint64_t e0 = SLOT(i), e = verdict_entry(r, v), tramp = verdict_entry(r, V_TRAMP);
  if (e0 == tramp) return;
  if (!of_address(e0, r)) {
    uint64_t e1 = SLOT(i ^ 1);
    if (e1 == tramp) return;
    if (of_address(e1, r)) {
      atomic_store_explicit(&verdicts[i ^ 1], e, memory_order_relaxed);
      return;
    }
    if (e0) atomic_store_explicit(&verdicts[i ^ 1], e0, memory_order_relaxed);
  }
  atomic_store_explicit(&verdicts[i], e, memory_order_relaxed);
}

/* r's cached entry, or 0. */
static inline uint64_t entry_of(uintptr_t r) {
  size_t i = verdict_home(r);
  uint64_t e = SLOT(i);
  return of_address(e, r) ? e : of_address(e = SLOT(i ^ 1), r) ? e : 0;
}

/* Whether r's cached verdict is v. */
static inline int has_verdict(uintptr_t r, unsigned v) {
  return entry_of(r) == verdict_entry(r, v);
}

/* CPython's perf trampolines (3.12 and 3.13 on x86-64, `-X perf`: the
 * interpreter copies one per code object into anonymous executable memory
 * and names it in the perf map, py::function): [endbr64;] sub $8,%rsp;
 * call *%rcx; add $8,%rsp; ret. No frame record (rbp is still the
 * caller's) and no unwind tables, so neither a record step nor libunwind
 * can pass one; its shape gives the step: the return address 8 bytes above
 * rsp. (Later versions keep a record: push %rbp; mov %rsp,%rbp, which
 * record_step follows.) Told by the 11 bytes around the return address,
 * read only once the kernel says they are mapped readable (a corrupt stack
 * may give any address), once an address: the verdict is kept (TRAMP),
 * whether the record walk (examine) or the call-frame walk
 * (trampoline_step) meets it first: a CPython built with frame pointers
 * has records on both sides of its trampolines. */
static int is_trampoline(uintptr_t pc) { /* pc in no loaded object */
  static const unsigned char before[] = {0x48, 0x83, 0xec, 0x08, 0xff}; /* sub; call *%r.. */
  static const unsigned char after[] = {0x48, 0x83, 0xc4, 0x08, 0xc3};  /* add; ret */
  if (pc < 6 || !mt__readable(pc - 6, 11)) return 0;
  const unsigned char *p = (const unsigned char *)(pc - 6);
  return memcmp(p, before, sizeof before) == 0 && (p[5] & 0xf8) == 0xd0 && /* modrm: a register */
         memcmp(p + 6, after, sizeof after) == 0;
}

/* Whether the function around return address r starts by setting up a
 * frame record: [endbr64] push %rbp; ...; mov %rsp,%rbp. Its start comes from
 * the unwind tables; code they do not cover counts as without. */
static unsigned examine(uintptr_t r) {
  mt__fde_range fr;
  int found = mt__fde_range_of(r - 1, &fr); /* libunwind's answer, without its lock */
  if (found == 0) return V_NONE;
  if (found < 0) {
    if (is_trampoline(r)) return V_TRAMP; /* in no object: generated code */
    unw_proc_info_t pi;
    if (!mt__unw_ready()) return V_NONE;
    if (unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)(r - 1), &pi, NULL) != 0 ||
        !pi.start_ip || r - 1 < pi.start_ip || r - 1 >= pi.end_ip)
      return V_NONE;
    fr.start = (uintptr_t)pi.start_ip;
    fr.end = (uintptr_t)pi.end_ip;
  }
  const unsigned char *p = (const unsigned char *)fr.start;
  size_t left = (size_t)(fr.end - fr.start);
  if (left >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) p += 4, left -= 4;
  if (left < 4 || p[0] != 0x55) return V_NONE;
  /* the compiler may schedule an instruction or two between the two */
  for (size_t i = 1; i + 3 <= left && i < 16; i++)
    if (p[i] == 0x48 && p[i + 1] == 0x89 && p[i + 2] == 0xe5) return V_RECORD;
  return V_NONE;
}

typedef struct examination {
  uintptr_t r;
  unsigned v;
} examination;

static void examine_job(void *e) { ((examination *)e)->v = examine(((examination *)e)->r); }

/* examine, on the big stack when the thread's is short: the unwind tables'
 * search, libunwind's, or the kernel's map go a few hundred bytes deeper
 * than the walk. */
static __attribute__((noinline)) unsigned examine_where_room(uintptr_t r) {
  if (!room_short()) return examine(r);
  examination e = {r, V_NONE};
  mt__on_big_stack(examine_job, &e);
  return e.v;
}

static unsigned verdict(uintptr_t r) {
  uint64_t e = entry_of(r);
  if (e) return e == (uint64_t)r ? V_RECORD : (unsigned)(e >> 56);
  unsigned v = examine_where_room(r);
  verdict_put(r, v);
  return v;
}

static size_t skip_hidden(const uintptr_t *pcs, size_t n) {
  size_t skip = 0;
  while (skip < n && is_hidden(pcs[skip])) skip++;
  return skip;
}

/* Frames `from` to n of libunwind's walk (past the leading hidden ones),
 * into buf. */
static size_t copy_out(const uintptr_t *pcs, size_t from, size_t n, uint64_t *buf, size_t cap) {
  size_t out = 0;
  for (size_t i = from; i < n && out < cap; i++) buf[out++] = pcs[i];
  return out;
}

enum { EXTRA = 32, MAX_WALK = 4096 + EXTRA }; /* room for the frames we drop */

/* Frames to ask libunwind for, to keep cap past the hidden ones. */
static size_t walk_want(size_t cap) { return cap + EXTRA < MAX_WALK ? cap + EXTRA : MAX_WALK; }

/* ---- libunwind's walks, on a short stack ----
 *
 * A thread may have little stack left: thread pools and coroutine runtimes
 * give 16 to 64 KiB. libunwind's walk needs several KiB of its own, more
 * the first time a thread or the process takes a path (the loader's lazy
 * binding saves the vector registers: ~3 KiB on AVX-512), and the walk's
 * frame buffer is sized by the depth asked (2 KiB at 256). A program whose
 * 16 KiB threads called malloc from the C library's stdio died of SIGSEGV
 * in the loader under libunwind, at its 17th walk (the first through
 * unw_backtrace). So when less than SHORT_STACK is left below the sample's
 * frame, or the thread's stack is not known (a coroutine's), the thread's
 * registers are captured here and the walk runs from them on the tracer's
 * big stack (bigstack.c), one step at a time: libunwind reads the thread's
 * stack through the captured frame, which stays live below. The registers
 * go into a buffer of the tracer's, under the big stack's lock: a context
 * is about 1 KiB, much of a short stack. */

/* A libunwind walk and what is made of it, to run on either stack. */
typedef struct lu_job {
  void (*run)(struct lu_job *);
  unw_context_t *uc; /* the thread's registers, captured by run_far; NULL:
                        the walk starts where it runs */
  uintptr_t fp;      /* fallback: where AUTO's walk started */
  uintptr_t rec;     /* fallback: the record holding the return address
                        where it stopped (the last in buf) */
  uint64_t *buf;
  size_t cap, n;
  int trust;
  size_t out; /* frames left in buf */
} lu_job;

static size_t lu_walk(lu_job *j, uintptr_t *pcs, size_t want) {
  return j->uc ? mt__unw_walk_from(j->uc, pcs, want)
               : mt__unw_walk(pcs, want, unwind_mode() == MT__UNWIND_LIBUNWIND);
}

static void run_job(void *j) { ((lu_job *)j)->run(j); }

/* The registers of the walk run far (under the big stack's lock). */
static unw_context_t far_uc;

/* The job on the big stack, from registers captured in this frame, which
 * stays live while it runs. */
static __attribute__((noinline)) void run_far(lu_job *j) {
  int locked = mt__big_stack_lock();
  if (unw_getcontext(&far_uc) == 0) {
    j->uc = &far_uc;
    mt__on_big_stack_locked(run_job, j);
  } else {
    j->run(j);
  }
  mt__big_stack_unlock(locked);
}

static size_t run_walk(lu_job *j) {
  if (__builtin_expect(stack_short(), 0)) run_far(j);
  else j->run(j);
  return j->out;
}

/* libunwind's backtrace, without the hidden frames. */
static void by_libunwind_job(lu_job *j) {
  size_t want = walk_want(j->cap);
  uintptr_t pcs[want]; /* sized to the depth asked */
  size_t n = lu_walk(j, pcs, want);
  j->out = copy_out(pcs, skip_hidden(pcs, n), n, j->buf, j->cap);
}

static size_t by_libunwind(uint64_t *buf, size_t cap) {
  if (!mt__unw_ready()) return 0;
  lu_job j = {.run = by_libunwind_job, .buf = buf, .cap = cap};
  return run_walk(&j);
}

/* Whether the record at fp continues the chain with the one at next: higher
 * up the stack (so the walk ends), below the highest place a record can
 * have (`top`), and aligned. */
static inline int climbs(uintptr_t fp, uintptr_t next, uintptr_t top) {
  return next > fp && next <= top && !(next & 7);
}

/* Whether the chain goes on past the record at fp: the next record climbs
 * and holds a return address. */
static inline int goes_on(uintptr_t fp, uintptr_t next, uintptr_t top) {
  return climbs(fp, next, top) && ((uintptr_t *)next)[1] != 0;
}

/* Whether ret is known to lie in a function with a record of its own. */
static inline int known_record(uintptr_t ret) {
  size_t i = verdict_home(ret);
  return SLOT(i) == (uint64_t)ret || SLOT(i ^ 1) == (uint64_t)ret;
}

/* Whether the walk may go on from the record at fp (or end there, if the
 * chain does), ret not being known to lie in a function with a record:
 * yes (1) if ret is a known entry point (V_ENTRY) and the chain ends there
 * (the outermost frame of every walk, which may_go_on answers before
 * calling here), or if examining ret finds a record after all. If not,
 * sets *trust (see walk). */
static __attribute__((noinline)) int judge(uintptr_t fp, uintptr_t next, uintptr_t ret,
                                           uintptr_t top, int *trust) {
  int more = goes_on(fp, next, top);
  unsigned v = verdict(ret);
  if (v == V_RECORD || (v == V_ENTRY && !more)) return 1;
  *trust = !more ? -1 : v == V_TRAMP ? 2 : 0;
  return 0;
}

/* Whether the walk may go on from the record at fp (see judge): the
 * known cases inline, from one cache line. A record-less frame known as an
 * entry point ends the chain of nearly every walk (clone3, _start); a call
 * to judge there cost a sample about 30 instructions. */
static inline int may_go_on(uintptr_t fp, uintptr_t ret, uintptr_t top, int *trust) {
  size_t i = verdict_home(ret);
  uint64_t e0 = SLOT(i), e1;
  if (__builtin_expect(e0 == (uint64_t)ret, 1) || (e1 = SLOT(i ^ 1)) == (uint64_t)ret) return 1;
  uintptr_t next = ((uintptr_t *)fp)[0];
  uint64_t entry = verdict_entry(ret, V_ENTRY);
  if ((e0 == entry || e1 == entry) && !goes_on(fp, next, top)) return 1;
  return judge(fp, next, ret, top, trust);
}

/* The return address of the function that called a CPython trampoline
 * (is_trampoline) whose callee's record, at fp, holds the return address
 * into it: above that one, the trampoline's 8 bytes, then its caller's.
 * rbp passes through the trampoline, so the record saved there is its
 * caller's; it must lie above those slots. 0 if not so. */
static uintptr_t trampoline_caller(uintptr_t fp, uintptr_t top) {
  if (fp + 16 > top || !climbs(fp + 24, ((uintptr_t *)fp)[0], top)) return 0;
  return ((uintptr_t *)fp)[3];
}

enum { WALK_RECORDS = 0, WALK_AUTO = 1, WALK_LEARN = 2 }; /* walk's check */

/* The frame-pointer walk, from the record at fp, straight into buf: the
 * leading hidden frames are dropped (only those: the check stops at the
 * first frame kept), and the walk goes while the records climb.
 *
 * With `check` WALK_AUTO, every return address passed must lie in a
 * function that sets up its own record, else the next record is not its
 * caller's. *trust: 1 if every one does (or the one that does not is the
 * chain's last, known as an entry point); else the walk stops there, with
 * that address last in buf, and *trust is 0, or -1 if the chain ended at
 * it (it may be an entry point), or 2 if it is in a CPython trampoline
 * (past_trampolines). *trust is 0 too, with nothing walked, when fp is not
 * on the stack known (a coroutine's, once the thread has asked MAX_ASKS
 * times). When it stops so, *rec is the record holding that last address.
 * With WALK_LEARN (learn_records), nothing is checked, but trampolines
 * known as such are stepped as past_trampolines does. The second loop is
 * most of a sample's unwinding: about twenty instructions per frame. */
static inline __attribute__((always_inline)) size_t walk(uintptr_t fp, uint64_t *buf, size_t cap,
                                                         const int check, int *trust,
                                                         uintptr_t *rec) {
  const uintptr_t top = stack_hi - 16; /* a record's highest place */
  uintptr_t next, ret;
  size_t n = 0;
  *trust = 1;
  if (fp < stack_lo || fp > top || (fp & 7) || !cap) {
    *trust = 0; /* not on the stack known (AUTO: libunwind's walk) */
    return 0;
  }
  for (;;) { /* the leading hidden frames */
    next = ((uintptr_t *)fp)[0], ret = ((uintptr_t *)fp)[1];
    if (!ret) return 0;
    int hidden = is_hidden(ret);
    if (check == WALK_AUTO && !may_go_on(fp, ret, top, trust)) {
      if (!hidden) buf[n++] = ret;
      *rec = fp;
      return n;
    }
    if (!hidden) break;
    if (!climbs(fp, next, top)) return 0;
    fp = next;
  }
  /* One record's address carried from frame to frame: the loop keeps few
   * registers (its saved rbp is read again only off the usual path). */
  uint64_t *out = buf, *end = buf + cap;
  for (;;) {
    *out++ = ret;
    if (out == end || !climbs(fp, next, top)) break;
    fp = next;
    ret = ((uintptr_t *)fp)[1];
    if (!ret) break;
    if (check == WALK_AUTO && !may_go_on(fp, ret, top, trust)) {
      *out++ = ret;
      *rec = fp;
      break;
    }
    if (check == WALK_LEARN && has_verdict(ret, V_TRAMP)) {
      uintptr_t caller = trampoline_caller(fp, top);
      if (caller && end - out >= 2) *out++ = ret, ret = caller;
    }
    next = ((uintptr_t *)fp)[0];
  }
  return (size_t)(out - buf);
}

/* The AUTO walk stopped at buf[n-1], a return address into a CPython
 * trampoline, in the record at *rec (*trust 2): the walk of records goes
 * on past it, at the return address of the function that called it (in a
 * CPython built with frame pointers, as Fedora's and Ubuntu's are, the
 * evaluator called through the trampoline keeps a record, so the walk
 * meets every trampoline). That address must lie in a function that keeps
 * a record, as any other; if not, the walk stops there (*trust 0 or -1),
 * the record at *rec still holding the trampoline's: cfi_walk steps it
 * again. Out of line: the walk's loop keeps its registers. */
static __attribute__((noinline)) size_t past_trampolines(uint64_t *buf, size_t n, size_t cap,
                                                         int *trust, uintptr_t *rec) {
  const uintptr_t top = stack_hi - 16;
  while (*trust == 2) {
    uintptr_t fp = *rec, caller;
    *trust = 0;
    if (n >= cap || !(caller = trampoline_caller(fp, top))) return n;
    buf[n++] = caller;
    if (!may_go_on(fp, caller, top, trust)) {
      if (*trust == 2) *trust = 0; /* a trampoline calling one: not CPython's way */
      return n;
    }
    if (n == cap) {
      *trust = 1;
      return n;
    }
    n += walk(((uintptr_t *)fp)[0], buf + n, cap - n, WALK_AUTO, trust, rec);
  }
  return n;
}

/* The AUTO walk stopped at buf[n-1]: a return address whose function does
 * not start by setting up a frame record (examine), the chain going on.
 * Many such functions do set one up before their calls: the compiler
 * scheduled an instruction before the push %rbp, or shrink-wrapped the
 * prologue past an early exit (about one in twelve calling functions of
 * this project's own code at -O2 -fno-omit-frame-pointer). Every sample
 * through them would take libunwind's walk, about twice as dear.
 *
 * So this sample's libunwind walk (lu, nlu frames) teaches: walking the
 * chain on regardless (into buf, which the caller overwrites), frame k+1 is
 * read from the record of frame k's function; had it none, the walk would
 * skip its caller (or more), and from there on give libunwind's frames
 * shifted. If the whole walk gives libunwind's frames (but for up to
 * OUTER_SLACK outermost ones), each return address passed is stored as
 * RECORD, unless libunwind's two frames after it are the same (a call
 * recursing from one place hides a skip: then the walks agree from there
 * on, if the walk was cut at cap inside the run). If the walks part
 * right after buf[n-1], its function has no record there: NOREC, and it is
 * not tried again. */
static __attribute__((noinline, cold)) void learn_records(uintptr_t fp, uint64_t *buf, size_t n,
                                                         size_t cap, const uintptr_t *lu,
                                                         size_t nlu) {
  int t;
  uintptr_t rec;
  size_t nw = walk(fp, buf, cap < nlu ? cap : nlu, WALK_LEARN, &t, &rec);
  if (nw < n || memcmp(buf, lu, n * sizeof *buf) != 0) return; /* not the same walk */
  if (nw > n && buf[n] != lu[n]) {
    verdict_put(buf[n - 1], V_NOREC);
    return;
  }
  if (nlu - nw > OUTER_SLACK || memcmp(buf, lu, nw * sizeof *buf) != 0) return;
  for (size_t k = n - 1; k + 1 < nw; k++)
    if (!known_record(buf[k]) && (k + 2 >= nlu || lu[k + 1] != lu[k + 2]))
      verdict_put(buf[k], V_RECORD);
}

_Atomic unsigned long mt__unwind_fallbacks;

/* The return address in the outermost record of the chain from fp, where
 * a frame-record walk would end; 0 if there is none. */
static uintptr_t chain_end(uintptr_t fp) {
  const uintptr_t top = stack_hi - 16;
  uintptr_t last = 0;
  if (fp < stack_lo || fp > top || (fp & 7)) return 0;
  for (size_t k = 0; k < MAX_WALK; k++) {
    uintptr_t next = ((uintptr_t *)fp)[0], ret = ((uintptr_t *)fp)[1];
    if (!ret) break;
    last = ret;
    if (!climbs(fp, next, top)) break;
    fp = next;
  }
  return last;
}

/* The frame a frame record at rec returns to: the return address it
 * holds, rsp just above it, and the caller's rbp it saved. */
static mt__cfi_frame frame_above(uintptr_t rec) {
  const uintptr_t *r = (const uintptr_t *)rec;
  return (mt__cfi_frame){r[1], rec + 16, r[0], 0};
}

/* A step through code without unwind tables (a JIT's, hand-written), as
 * through a function that keeps a frame record: the record at rbp holds
 * the caller's rbp and the return address. 1, or -1 where rbp cannot be a
 * record (off the stack, below rsp, misaligned). */
static int record_step(mt__cfi_frame *f) {
  uintptr_t fp = f->fp;
  if (fp < f->sp || fp < stack_lo || stack_hi < 16 || fp > stack_hi - 16 || (fp & 7)) return -1;
  *f = frame_above(fp);
  return 1;
}

/* Whether pc (a return address) lies in an object the loader knows:
 * not in generated code (a JIT compiler's, in an anonymous mapping). */
static int in_object(uintptr_t pc) {
  mt__fde_range r;
  return mt__fde_range_of(pc - 1, &r) >= 0;
}

/* The step through a trampoline: 1, or 0 if f's pc is in none (its
 * verdict, examined once an address, cached) or f's rsp cannot be read. */
static int trampoline_step(mt__cfi_frame *f) {
  uintptr_t sp = f->sp;
  if (f->interrupted || verdict(f->pc) != V_TRAMP) return 0;
  if (sp < stack_lo || (sp & 7) || stack_hi < 16 || sp > stack_hi - 16) return 0;
  f->pc = ((const uintptr_t *)sp)[1]; /* [sp]: the trampoline's 8 bytes */
  f->sp = sp + 16;
  return 1;
}

/* The walk on from where AUTO's stopped (the return address in the record
 * at j->rec, whose function keeps no record: buf[n-1], or a hidden frame's
 * when none was kept yet, as operator new's; or the trampoline's, buf[n-2],
 * that function being its caller), by call-frame steps (cfi.h),
 * into pcs (buf's n frames first, leading hidden frames left out): how
 * many, or 0 where a step cannot be taken (libunwind's turn). The
 * function's rsp is just above that record (its callee's: rbp, then the
 * return address), its rbp the one saved there. Generated code that keeps
 * no record (and is no CPython trampoline) ends the walk: it has no
 * unwind tables, so libunwind cannot step it either. */
static size_t cfi_walk(const lu_job *j, uintptr_t *pcs, size_t want) {
  size_t n = j->n;
  if (!j->rec || n > want) return 0; /* not on the stack known */
  mt__cfi_frame f = frame_above(j->rec);
  /* stopped past a trampoline, at its caller: the record holds the former */
  if (n >= 2 && f.pc == j->buf[n - 2] && f.pc != j->buf[n - 1]) trampoline_step(&f);
  if (n ? f.pc != j->buf[n - 1] : !is_hidden(f.pc)) return 0; /* not where walk stopped */
  for (size_t i = 0; i < n; i++) pcs[i] = j->buf[i];
  for (size_t steps = 0; n < want && steps < MAX_WALK; steps++) {
    int r = mt__cfi_step(&f, stack_lo, stack_hi);
    if (r == MT__CFI_NO_INFO) { /* as libunwind does there, but for trampolines */
      r = trampoline_step(&f) ? 1 : record_step(&f);
      if (r < 0 && !in_object(f.pc)) break;
    }
    if (r < 0) return 0;
    if (r == 0 || !f.pc) break;
    if (n || !is_hidden(f.pc)) pcs[n++] = f.pc;
  }
  return n;
}

/* The AUTO walk stopped at buf[n-1] (trust as walk sets it): this sample
 * is walked on by call-frame steps, or by libunwind. Out of line: the
 * walk's loop keeps its registers. */
static void fallback_job(lu_job *j) {
  /* A frame without a record (the last of buf): the walk goes on from it
   * by call-frame steps, or is libunwind's from the start. If that frame
   * ended the chain and the walk agrees up to it, with only a few frames
   * beyond, it is an entry point: later walks may end there. */
  uint64_t *buf = j->buf;
  size_t n = j->n, cap = j->cap;
  uintptr_t last = n ? buf[n - 1] : 0;
  int ended = j->trust < 0 && n && n < cap;
  size_t want = walk_want(cap);
  uintptr_t lu[want];
  size_t nl = cfi_walk(j, lu, want), sl = 0;
  if (!nl) {
    if (!mt__unw_ready()) { /* not loaded, or another thread is starting it */
      j->out = n;
      return;
    }
    atomic_fetch_add_explicit(&mt__unwind_lu_walks, 1, memory_order_relaxed);
    nl = lu_walk(j, lu, want);
    sl = skip_hidden(lu, nl);
  }
  /* What the walk teaches holds only if it reached the stack's root, not
   * generated code that no walker can pass: a few frames short of a root
   * would otherwise make the frame it stopped at an entry point (with
   * CPython's perf trampolines, every later stack through that function
   * was cut there). */
  int rooted = nl > sl && in_object(lu[nl - 1]);
  if (rooted && ended && nl - sl >= n && nl - sl - n <= OUTER_SLACK &&
      memcmp(buf, lu + sl, n * sizeof *buf) == 0)
    verdict_put(last, V_ENTRY);
  else if (rooted && j->trust == 0 && n && !has_verdict(last, V_NOREC) &&
           !has_verdict(last, V_TRAMP))
    learn_records(j->fp, buf, n, cap, lu + sl, nl - sl);
  j->out = copy_out(lu, sl, nl, buf, cap);
  if (!rooted) return;
  /* The frame-record walks end where the chain of records does: in the C
   * library's frame that calls main, or a thread's start. This one ends
   * there too, else the stacks that took libunwind's walk would have
   * roots the others lack (_start, __libc_start_main, clone3), and a flame
   * graph two trees. Only the outermost few frames are ever dropped. (Where
   * a function without a record used rbp for data, the chain is broken:
   * only an entry point learnt before ends the stack then, so a thread's
   * first such samples may keep their roots.) */
  uintptr_t end = chain_end(j->fp);
  for (size_t i = 0; i + 1 < j->out; i++)
    if (buf[i] == end || has_verdict(buf[i], V_ENTRY)) {
      if (j->out - i - 1 <= OUTER_SLACK) j->out = i + 1;
      break;
    }
}

static __attribute__((noinline)) size_t fallback(uintptr_t fp, uintptr_t rec, uint64_t *buf,
                                                 size_t cap, size_t n, int trust) {
  atomic_fetch_add_explicit(&mt__unwind_fallbacks, 1, memory_order_relaxed);
  lu_job j = {.run = fallback_job, .fp = fp, .rec = rec, .buf = buf, .cap = cap, .n = n,
              .trust = trust};
  return run_walk(&j);
}

size_t mt__unwind(void *ctx, uint64_t *buf, size_t cap) {
  (void)ctx;
  if (unwind_mode() == MT__UNWIND_LIBUNWIND) return by_libunwind(buf, cap);
  know_stack((uintptr_t)__builtin_frame_address(0));
  /* The interposer names its own frame: the walk starts at the program's. */
  uintptr_t from = mt__unwind_from;
  uintptr_t fp = from ? from : (uintptr_t)__builtin_frame_address(0);
  int trust;
  uintptr_t rec = 0;
  if (unwind_mode() == MT__UNWIND_FRAME_POINTERS) return walk(fp, buf, cap, WALK_RECORDS, &trust, &rec);
  /* after a dlclose, other code may come to the same addresses */
  unsigned closes = atomic_load_explicit(&mt__dlclose->count, memory_order_relaxed);
  if (closes != verdicts_closes) {
    verdicts_closes = closes;
    mt__unwind_forget();
  }
  size_t n = walk(fp, buf, cap, WALK_AUTO, &trust, &rec);
  if (trust == 1) return n;
  if (trust == 2) {
    n = past_trampolines(buf, n, cap, &trust, &rec);
    if (trust == 1) return n;
  }
  return fallback(fp, rec, buf, cap, n, trust);
}

void mt__unwind_forget(void) {
  mt__cfi_forget();
  if (!atomic_load_explicit(&verdicts_used, memory_order_relaxed)) return;
  for (size_t i = 0; i < sizeof verdicts / sizeof *verdicts; i++)
    atomic_store_explicit(&verdicts[i], 0, memory_order_relaxed);
}
