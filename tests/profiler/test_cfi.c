/* mt__cfi_step (cfi.h) against libunwind, which reads the same call-frame
 * information: over the code of every object loaded in this process, at
 * addresses a few bytes apart, a frame interrupted there (registers made
 * up, the stack a buffer of words pointing into itself) is stepped by both;
 * wherever ours steps, libunwind gives the same caller (return address,
 * rsp, rbp), and wherever ours finds the outermost frame, libunwind ends
 * its walk too; stepped again, from the rows kept, the same. Then the
 * stack's bounds: a step never reads outside them, whatever the stack
 * holds; and the rows kept, shared by threads stepping at once. */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <cmocka.h>

#include "code_segments.h"
#include "tracer/unwind/cfi.h"
#include "tracer/unwind/unwind.h"

#define PER_SEGMENT 4000
#define STACK_WORDS 8192

static uintptr_t stack[STACK_WORDS];

/* Where the frames made up at a pc keep rsp and rbp: mid-stack, and a
 * little above. */
#define FRAME_SP ((uintptr_t)&stack[STACK_WORDS / 2])
#define FRAME_FP ((uintptr_t)&stack[STACK_WORDS / 2 + 40])

/* Steps a frame interrupted at pc, on the made-up stack, within all of it. */
static int step_at(uintptr_t pc, mt__cfi_frame *f) {
  *f = (mt__cfi_frame){pc, FRAME_SP, FRAME_FP, 1};
  return mt__cfi_step(f, (uintptr_t)stack, (uintptr_t)(stack + STACK_WORDS));
}

static int same_frame(const mt__cfi_frame *a, const mt__cfi_frame *b) {
  return a->pc == b->pc && a->sp == b->sp && a->fp == b->fp && a->interrupted == b->interrupted;
}

/* Every word of the stack points a little above itself: wherever a rule
 * says a register was saved, its value is another place in the stack. */
static void fill_stack(void) {
  for (size_t i = 0; i < STACK_WORDS; i++)
    stack[i] = (uintptr_t)&stack[i < STACK_WORDS - 64 ? i + 1 + i % 61 : i];
}

static void agrees_with_libunwind(void **state) {
  (void)state;
  assert_int_equal(mt__unw_load(), 0); /* the profiler's libunwind functions forward to it */
  void *dw = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL); /* more compilers' tables */
  list_code();
  assert_true(nsegs >= 3);
  fill_stack();
  size_t stepped = 0, outermost = 0, unknown = 0, no_info = 0, lu_failed = 0, differ = 0;
  for (size_t k = 0; k < nsegs; k++) {
    const segment *s = &segs[k];
    size_t step = (s->hi - s->lo) / PER_SEGMENT > 13 ? (s->hi - s->lo) / PER_SEGMENT : 13;
    for (uintptr_t pc = s->lo + 3; pc < s->hi; pc += step) {
      mt__cfi_frame f;
      int ours = step_at(pc, &f);
      if (ours < 0) { /* -1, or no FDE holds pc */
        if (ours == MT__CFI_NO_INFO) no_info++;
        else unknown++;
        continue;
      }
      ucontext_t uc;
      memset(&uc, 0, sizeof uc);
      uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
      uc.uc_mcontext.gregs[REG_RSP] = (greg_t)FRAME_SP;
      uc.uc_mcontext.gregs[REG_RBP] = (greg_t)FRAME_FP;
      unw_cursor_t c;
      /* a signal frame: its pc is the instruction itself, as ours */
      if (unw_init_local2(&c, (unw_context_t *)&uc, UNW_INIT_SIGNAL_FRAME) != 0) {
        lu_failed++;
        continue;
      }
      int theirs = unw_step(&c);
      if (ours == 0) {
        outermost++;
        if (theirs > 0) {
          unw_word_t ip = 0;
          unw_get_reg(&c, UNW_REG_IP, &ip);
          if (ip != 0 && differ++ < 5)
            print_error("%s+%#lx: outermost for us, libunwind steps to %#lx\n", s->name,
                        (unsigned long)(pc - s->lo), (unsigned long)ip);
        }
        continue;
      }
      stepped++;
      mt__cfi_frame again; /* from the rows kept, now */
      assert_int_equal(step_at(pc, &again), 1);
      assert_true(same_frame(&again, &f));
      if (theirs <= 0) {
        lu_failed++;
        continue;
      }
      unw_word_t ip = 0, usp = 0, ufp = 0;
      unw_get_reg(&c, UNW_REG_IP, &ip);
      unw_get_reg(&c, UNW_REG_SP, &usp);
      unw_get_reg(&c, UNW_X86_64_RBP, &ufp);
      if (ip != f.pc || usp != f.sp || ufp != f.fp) {
        if (differ++ < 5)
          print_error("%s+%#lx: ours pc %#lx sp %#lx fp %#lx, libunwind's %#lx %#lx %#lx\n",
                      s->name, (unsigned long)(pc - s->lo), (unsigned long)f.pc,
                      (unsigned long)f.sp, (unsigned long)f.fp, (unsigned long)ip,
                      (unsigned long)usp, (unsigned long)ufp);
      }
    }
  }
  print_message("%zu segments: %zu stepped, %zu outermost, %zu without an FDE, %zu not ours to "
                "step, %zu libunwind could not step, %zu differ\n",
                nsegs, stepped, outermost, no_info, unknown, lu_failed, differ);
  assert_int_equal(differ, 0);
  assert_true(stepped > 10000);
  assert_true(lu_failed * 100 < stepped); /* where it fails, nothing to compare */
  if (dw) dlclose(dw);
}

/* Whatever the stack holds and wherever the bounds are, a step reads only
 * inside them (ASan's build checks each read) and only climbs. */
static void stays_in_bounds(void **state) {
  (void)state;
  list_code();
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  size_t steps = 0;
  for (int round = 0; round < 20000; round++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const segment *s = &segs[rng % nsegs];
    uintptr_t span = s->hi - s->lo;
    size_t lo_i = (rng >> 8) % 64, hi_i = STACK_WORDS - (rng >> 16) % 64;
    /* the bounds: a window of the buffer, not always aligned */
    uintptr_t lo = (uintptr_t)&stack[lo_i] + ((rng >> 24) & 1) * 4;
    uintptr_t hi = (uintptr_t)&stack[hi_i] - ((rng >> 25) & 1) * 4;
    for (size_t i = 0; i < STACK_WORDS; i++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      switch (rng % 4) {
      case 0: stack[i] = s->lo + (rng >> 8) % span; break;      /* code */
      case 1: stack[i] = (uintptr_t)&stack[(rng >> 8) % STACK_WORDS]; break;
      case 2: stack[i] = rng; break;                             /* garbage */
      default: stack[i] = 0; break;
      }
    }
    mt__cfi_frame f = {s->lo + (rng >> 3) % span, (uintptr_t)&stack[lo_i + (rng >> 40) % 512],
                       (uintptr_t)&stack[(rng >> 20) % STACK_WORDS], (int)(rng >> 63)};
    for (int k = 0; k < 64; k++) {
      uintptr_t before = f.sp;
      int r = mt__cfi_step(&f, lo, hi);
      assert_true(r == MT__CFI_NO_INFO || (r >= -1 && r <= 1));
      if (r != 1) break;
      steps++;
      assert_true(f.sp > before);
      assert_true(f.sp <= hi);
      if (!f.pc) break;
    }
  }
  print_message("%zu steps on random stacks\n", steps);
  assert_true(steps > 1000);
}

/* Threads stepping the same frames at once, through the rows kept (their
 * entries overwritten by one another: more addresses than entries), each
 * get what a step computes with nothing kept. */
#define SHARED_PCS 4096
static uintptr_t shared_pc[SHARED_PCS];
static mt__cfi_frame expected[SHARED_PCS];
static int expected_rc[SHARED_PCS];

static void *step_shared(void *arg) {
  long bad = 0;
  unsigned k = (unsigned)(uintptr_t)arg;
  for (int round = 0; round < 200; round++)
    for (unsigned i = 0; i < SHARED_PCS; i++, k += 7) {
      unsigned j = k % SHARED_PCS;
      mt__cfi_frame f;
      int rc = step_at(shared_pc[j], &f);
      if (rc != expected_rc[j] || (rc == 1 && !same_frame(&f, &expected[j]))) bad++;
    }
  return (void *)bad;
}

static void kept_rows_shared_by_threads(void **state) {
  (void)state;
  list_code();
  fill_stack();
  size_t n = 0, stepped = 0;
  for (size_t k = 0; k < nsegs && n < SHARED_PCS; k++)
    for (uintptr_t pc = segs[k].lo + 5; pc < segs[k].hi && n < SHARED_PCS; pc += 97) {
      mt__cfi_forget(); /* computed from the tables */
      mt__cfi_frame f;
      expected_rc[n] = step_at(pc, &f);
      stepped += expected_rc[n] == 1;
      expected[n] = f;
      shared_pc[n++] = pc;
    }
  assert_true(n == SHARED_PCS && stepped > SHARED_PCS / 2);
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, step_shared, (void *)(i * 1000));
  long bad = 0;
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += (long)r;
  }
  assert_int_equal(bad, 0);
}

/* Whether pc's frame steps, by a row that is then kept (stepping it again
 * reads no table). */
static int steps_kept(uintptr_t pc) {
  mt__cfi_frame f;
  if (step_at(pc, &f) != 1) return 0;
  unsigned long before = atomic_load(&mt__cfi_uncached);
  step_at(pc, &f);
  return atomic_load(&mt__cfi_uncached) == before;
}

/* Two addresses whose rows share a set of the kept rows are both kept (a
 * table kept one a set made two such frames of one walk read the tables
 * at every walk); a third of the set evicts the oldest. */
static void kept_rows_two_a_set(void **state) {
  (void)state;
  list_code();
  fill_stack();
  uintptr_t pc[3];
  size_t n = 0;
  for (size_t k = 0; k < nsegs && n < 3; k++)
    for (uintptr_t p = segs[k].lo + 3; p < segs[k].hi && n < 3; p += 13)
      if ((n == 0 || mt__cfi_cache_set(p) == mt__cfi_cache_set(pc[0])) && steps_kept(p))
        pc[n++] = p;
  assert_int_equal(n, 3);
  mt__cfi_frame f;
  mt__cfi_forget();
  unsigned long u0 = atomic_load(&mt__cfi_uncached);
  step_at(pc[0], &f);
  step_at(pc[1], &f);
  assert_int_equal(atomic_load(&mt__cfi_uncached) - u0, 2);
  for (int round = 0; round < 3; round++) {
    step_at(pc[0], &f);
    step_at(pc[1], &f);
  }
  assert_int_equal(atomic_load(&mt__cfi_uncached) - u0, 2); /* both kept */
  step_at(pc[2], &f); /* evicts pc[0], the older */
  step_at(pc[1], &f);
  assert_int_equal(atomic_load(&mt__cfi_uncached) - u0, 3);
  step_at(pc[0], &f);
  assert_int_equal(atomic_load(&mt__cfi_uncached) - u0, 4);
}

static void refuses_what_it_cannot_step(void **state) {
  (void)state;
  fill_stack();
  uintptr_t lo = (uintptr_t)stack, hi = (uintptr_t)(stack + STACK_WORDS);
  /* no FDE: the caller's to decide (libunwind, or frame records) */
  mt__cfi_frame none = {0, lo + 64, lo + 128, 0};
  assert_int_equal(mt__cfi_step(&none, lo, hi), MT__CFI_NO_INFO);
  mt__cfi_frame heap = {(uintptr_t)malloc(16), lo + 64, lo + 128, 1};
  assert_int_equal(mt__cfi_step(&heap, lo, hi), MT__CFI_NO_INFO);
  free((void *)heap.pc);
  /* a real function's frame, its CFA past the stack's end: refused,
   * the frame unchanged */
  mt__cfi_frame top = {(uintptr_t)fill_stack + 1, hi, hi - 8, 1};
  mt__cfi_frame was = top;
  assert_int_equal(mt__cfi_step(&top, lo, hi), -1);
  assert_true(same_frame(&top, &was));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(agrees_with_libunwind),
      cmocka_unit_test(stays_in_bounds),
      cmocka_unit_test(kept_rows_shared_by_threads),
      cmocka_unit_test(kept_rows_two_a_set),
      cmocka_unit_test(refuses_what_it_cannot_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
