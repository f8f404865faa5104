/* mt__fde_range_of (ehframe.h) against libunwind, which reads the same
 * tables: over the code of every object loaded in this process (this
 * program, the C library, libunwind, liblzma, libdw's libraries...), at
 * addresses a few bytes apart, wherever ours answers, libunwind's
 * unw_get_proc_info_by_ip gives the same function range, and where ours
 * says no FDE holds the address, libunwind finds none either. */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "code_segments.h"
#include "tracer/unwind/ehframe.h"
#include "tracer/unwind/unwind.h"

#define STRIDE 37 /* bytes between the addresses asked: odd, to meet every alignment */
#define PER_SEGMENT 40000


static void agrees_with_libunwind(void **state) {
  (void)state;
  assert_int_equal(mt__unw_load(), 0); /* the profiler's libunwind functions forward to it */
  /* libdw's libraries too: more compilers' and linkers' tables */
  void *dw = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  list_code();
  assert_true(nsegs >= 3);
  size_t found = 0, none = 0, unknown = 0, main_unknown = 0;
  for (size_t k = 0; k < nsegs; k++) {
    const segment *s = &segs[k];
    size_t step = (s->hi - s->lo) / PER_SEGMENT > STRIDE ? (s->hi - s->lo) / PER_SEGMENT : STRIDE;
    for (uintptr_t pc = s->lo; pc < s->hi; pc += step) {
      mt__fde_range r = {0, 0};
      int ours = mt__fde_range_of(pc, &r);
      unw_proc_info_t pi;
      memset(&pi, 0, sizeof pi);
      int theirs = unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)pc, &pi, NULL) == 0 &&
                   pi.start_ip <= pc && pc < pi.end_ip;
      if (ours == 1) {
        found++;
        if (!theirs || r.start != pi.start_ip || r.end != pi.end_ip)
          fail_msg("%s+0x%lx: ours [0x%lx, 0x%lx), libunwind's %s [0x%lx, 0x%lx)", s->name,
                   (unsigned long)(pc - s->lo), (unsigned long)r.start, (unsigned long)r.end,
                   theirs ? "" : "(none)", (unsigned long)pi.start_ip, (unsigned long)pi.end_ip);
      } else if (ours == 0) {
        none++;
        if (theirs)
          fail_msg("%s+0x%lx: ours none, libunwind's [0x%lx, 0x%lx)", s->name,
                   (unsigned long)(pc - s->lo), (unsigned long)pi.start_ip,
                   (unsigned long)pi.end_ip);
      } else {
        unknown++;
        if (strcmp(s->name, "(main)") == 0) main_unknown++;
      }
    }
  }
  printf("# %zu segments: %zu addresses in an FDE, %zu in none, %zu left to libunwind\n", nsegs,
         found, none, unknown);
  /* this program's tables, as every object's here, are the linker's usual
   * ones: all answered without libunwind */
  assert_int_equal(main_unknown, 0);
  assert_true(found > 50000);
  assert_true(unknown < found / 100);
  if (dw) dlclose(dw);
}

static void outside_any_object(void **state) {
  (void)state;
  mt__fde_range r;
  char *heap = malloc(64);
  char stack[16];
  assert_int_equal(mt__fde_range_of(0, &r), -1);
  assert_int_equal(mt__fde_range_of((uintptr_t)heap, &r), -1);
  assert_int_equal(mt__fde_range_of((uintptr_t)stack, &r), -1);
  free(heap);
}

/* the range of a function of this program holds its own start */
__attribute__((noinline)) static int known_function(int x) { return x * 3 + 1; }

static void own_function(void **state) {
  (void)state;
  mt__fde_range r;
  uintptr_t f = (uintptr_t)&known_function;
  assert_int_equal(mt__fde_range_of(f, &r), 1);
  assert_true(r.start == f);
  assert_true(r.end > f);
  assert_int_equal(known_function(1), 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(agrees_with_libunwind),
      cmocka_unit_test(outside_any_object),
      cmocka_unit_test(own_function),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
