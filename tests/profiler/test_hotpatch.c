/* The redirection of functions in memory (src/preload/hotpatch.c): the
 * instruction decoder on known encodings, functions of hotpatch_cases.S
 * redirected to wrappers that call their trampolines, and trampolines
 * written elsewhere (mt__patch_inline, and a wrapper's site taking one:
 * mt__jump_inline, src/preload/jumps.c).
 *
 *   test_hotpatch                    the unit tests
 *   test_hotpatch decode FILE < RANGES
 *       for each line "START END" (file offsets of a function's code),
 *       decodes FILE's bytes there instruction by instruction and prints
 *       "START END: OFFSET..." with each instruction's start, or "?" where
 *       the decoder refused one (the rest of that function is then not
 *       decoded): tests/profiler/decode_vs_objdump.py compares them with
 *       objdump's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "preload/hotpatch.h"
#include "preload/preload.h"

/* ---- the decoder ---- */

typedef struct known {
  const char *what;
  uint8_t bytes[16];
  unsigned len;
  mt__insn_kind kind;
  int disp_at, rel_at;
} known;

static const known knowns[] = {
    {"push rbp", {0x55}, 1, MT__INSN_PLAIN, -1, -1},
    {"push r15", {0x41, 0x57}, 2, MT__INSN_PLAIN, -1, -1},
    {"mov rbp,rsp", {0x48, 0x89, 0xe5}, 3, MT__INSN_PLAIN, -1, -1},
    {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}, 4, MT__INSN_PLAIN, -1, -1},
    {"mov rax,[rip+x]", {0x48, 0x8b, 0x05, 1, 2, 3, 4}, 7, MT__INSN_PLAIN, 3, -1},
    {"mov rax,fs:0x28", {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, 9, MT__INSN_PLAIN, -1, -1},
    {"test byte [rip+x],1", {0xf6, 0x05, 1, 2, 3, 4, 0x01}, 7, MT__INSN_PLAIN, 2, -1},
    {"mov dword [rsp+8],imm32", {0xc7, 0x44, 0x24, 0x08, 1, 2, 3, 4}, 8, MT__INSN_PLAIN, -1, -1},
    {"mov word [rax],imm16", {0x66, 0xc7, 0x00, 1, 2}, 5, MT__INSN_PLAIN, -1, -1},
    {"movabs rax,imm64", {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, MT__INSN_PLAIN, -1, -1},
    {"nopw 0(rax,rax)", {0x66, 0x0f, 0x1f, 0x44, 0, 0}, 6, MT__INSN_PLAIN, -1, -1},
    {"lea rdi,[rip+x]", {0x48, 0x8d, 0x3d, 1, 2, 3, 4}, 7, MT__INSN_PLAIN, 3, -1},
    {"cmp [rbx+rcx*8+0x10],imm8", {0x48, 0x83, 0x7c, 0xcb, 0x10, 0x05}, 6, MT__INSN_PLAIN, -1, -1},
    {"pshufd xmm0,xmm1,imm8", {0x66, 0x0f, 0x70, 0xc1, 0x1b}, 5, MT__INSN_PLAIN, -1, -1},
    {"pshufb xmm0,[rip+x]", {0x66, 0x0f, 0x38, 0x00, 0x05, 1, 2, 3, 4}, 9, MT__INSN_PLAIN, 5, -1},
    {"vzeroupper", {0xc5, 0xf8, 0x77}, 3, MT__INSN_PLAIN, -1, -1},
    {"vbroadcastss xmm0,[rip+x]", {0xc4, 0xe2, 0x79, 0x18, 0x05, 1, 2, 3, 4}, 9, MT__INSN_PLAIN, 5, -1},
    {"vpalignr ymm0,ymm1,ymm2,imm8", {0xc4, 0xe3, 0x75, 0x0f, 0xc2, 0x04}, 6, MT__INSN_PLAIN, -1, -1},
    {"call rel32", {0xe8, 1, 2, 3, 4}, 5, MT__INSN_CALL, -1, 1},
    {"jmp rel32", {0xe9, 1, 2, 3, 4}, 5, MT__INSN_JMP, -1, 1},
    {"jmp rel8", {0xeb, 0x10}, 2, MT__INSN_JMP, -1, 1},
    {"je rel8", {0x74, 0x05}, 2, MT__INSN_JCC, -1, 1},
    {"jne rel32", {0x0f, 0x85, 1, 2, 3, 4}, 6, MT__INSN_JCC, -1, 2},
    {"bnd jmp rel32", {0xf2, 0xe9, 1, 2, 3, 4}, 6, MT__INSN_JMP, -1, 2},
    {"ret", {0xc3}, 1, MT__INSN_RET, -1, -1},
    {"jmp *[rip+x]", {0xff, 0x25, 1, 2, 3, 4}, 6, MT__INSN_RET, 2, -1},
    {"call *rax", {0xff, 0xd0}, 2, MT__INSN_PLAIN, -1, -1},
    {"loop rel8", {0xe2, 0xfe}, 2, MT__INSN_OTHER_BRANCH, -1, 1},
    {"ud2", {0x0f, 0x0b}, 2, MT__INSN_PLAIN, -1, -1},
    {"syscall", {0x0f, 0x05}, 2, MT__INSN_PLAIN, -1, -1},
    {"lock cmpxchg [rdi],rsi", {0xf0, 0x48, 0x0f, 0xb1, 0x37}, 5, MT__INSN_PLAIN, -1, -1},
    {"imul eax,[rbp-4],imm32", {0x69, 0x45, 0xfc, 1, 2, 3, 4}, 7, MT__INSN_PLAIN, -1, -1},
};

static void test_known_encodings(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof knowns / sizeof *knowns; k++) {
    const known *w = &knowns[k];
    mt__insn in;
    if (mt__insn_decode(w->bytes, sizeof w->bytes, &in) != 0) fail_msg("%s: refused", w->what);
    if (in.len != w->len || in.kind != w->kind || in.disp_at != w->disp_at || in.rel_at != w->rel_at)
      fail_msg("%s: len %u kind %d disp_at %d rel_at %d; want %u %d %d %d", w->what, in.len, in.kind,
               in.disp_at, in.rel_at, w->len, w->kind, w->disp_at, w->rel_at);
    /* cut short by a byte, it is refused, not read past its end */
    assert_int_equal(mt__insn_decode(w->bytes, w->len - 1, &in), -1);
  }
}

static void test_refused_encodings(void **state) {
  (void)state;
  static const uint8_t refused[][8] = {
      {0x62, 0xf1, 0x7d, 0x48, 0x6f, 0x00}, /* EVEX */
      {0x0f, 0x0f, 0xc1, 0xb4},             /* 3DNow! */
      {0x8f, 0xe8, 0x78, 0xc2, 0xc1, 0x05}, /* XOP */
      {0x06},                               /* push es: not in 64-bit code */
      {0xa1, 1, 2, 3, 4, 5, 6, 7},          /* moffs */
      {0xc7, 0xf8, 1, 2, 3, 4},             /* xbegin */
  };
  for (size_t k = 0; k < sizeof refused / sizeof *refused; k++) {
    mt__insn in;
    if (mt__insn_decode(refused[k], sizeof refused[k], &in) != -1)
      fail_msg("encoding %zu decoded (len %u)", k, in.len);
  }
}

/* ---- redirection ---- */

#define CASE(name) extern int name(int); extern const char name##_end[];
CASE(hp_rip_load) CASE(hp_short_jcc) CASE(hp_tail_jmp) CASE(hp_call) CASE(hp_vex)
CASE(hp_endbr) CASE(hp_loop_back) CASE(hp_too_short) CASE(hp_far)
#undef CASE

static int (*orig[8])(int);
#define WRAP(k)                                    \
  static int wrap##k(int x) { return orig[k](x) + 1000; }
WRAP(0) WRAP(1) WRAP(2) WRAP(3) WRAP(4) WRAP(5) WRAP(6) WRAP(7)
#undef WRAP
static int (*const wraps[8])(int) = {wrap0, wrap1, wrap2, wrap3, wrap4, wrap5, wrap6, wrap7};

static void test_redirect(void **state) {
  (void)state;
  struct {
    int (*f)(int);
    const char *end;
    int movable;
  } fns[8] = {{hp_rip_load, hp_rip_load_end, 1}, {hp_short_jcc, hp_short_jcc_end, 1},
              {hp_tail_jmp, hp_tail_jmp_end, 1}, {hp_call, hp_call_end, 1},
              {hp_vex, hp_vex_end, 1},           {hp_endbr, hp_endbr_end, 1},
              {hp_loop_back, hp_loop_back_end, 0}, {hp_too_short, hp_too_short_end, 0}};
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int k = 0; k < 8; k++) {
    if ((uintptr_t)fns[k].f < lo) lo = (uintptr_t)fns[k].f;
    if ((uintptr_t)fns[k].end > hi) hi = (uintptr_t)fns[k].end;
  }
  mt__island *is = mt__island_near(lo, hi);
  assert_non_null(is);
  mt__patch patches[8];
  size_t n = 0;
  for (int k = 0; k < 8; k++) {
    size_t size = (size_t)(fns[k].end - (const char *)fns[k].f);
    int rc = mt__patch_prepare(is, (void *)fns[k].f, size, (void *)wraps[k], &patches[n]);
    if (rc != (fns[k].movable ? 0 : -1)) fail_msg("function %d: prepare gave %d", k, rc);
    if (rc == 0) *(void **)&orig[k] = patches[n++].trampoline;
  }
  assert_int_equal(n, 6);
  assert_int_equal(mt__patch_apply(is, patches, n), 0);
  assert_int_equal(hp_rip_load(5), 1105);    /* the moved load reads hp_counter */
  assert_int_equal(hp_short_jcc(0), 999);    /* the moved branch, taken */
  assert_int_equal(hp_short_jcc(4), 1005);   /* and not taken */
  assert_int_equal(hp_tail_jmp(5), 2105);    /* on to hp_rip_load, redirected too */
  assert_int_equal(hp_call(1), 1008);        /* the moved call returns to the trampoline */
  if (__builtin_cpu_supports("avx")) assert_int_equal(hp_vex(4), 1007);
  assert_int_equal(hp_endbr(1), 1006);
  assert_int_equal(hp_loop_back(4), 10);     /* refused: unchanged */
  assert_int_equal(hp_too_short(0) + 0, hp_too_short(0));
}

/* A page mapped within rel32 reach of [lo, hi), executable and writable. */
static uint8_t *near_page(uintptr_t lo, uintptr_t hi) {
  for (uintptr_t k = 1; k < 1024; k++) {
    uintptr_t at = ((hi + (1u << 20) - 1) & ~(uintptr_t)((1u << 20) - 1)) + k * (1u << 20);
    intptr_t d = (intptr_t)(at + 4096 - lo);
    if (d != (int32_t)d) break;
    void *p = mmap((void *)at, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == (void *)at) return p;
    if (p != MAP_FAILED) munmap(p, 4096);
  }
  return NULL;
}

/* Trampolines written elsewhere run as the function itself: their moved
 * instructions fixed for the new place, then the jump back past the moved
 * bytes. (The functions are left unpatched: test_redirect patches them.) */
static void test_inline(void **state) {
  (void)state;
  int (*const fs[6])(int) = {hp_rip_load, hp_short_jcc, hp_tail_jmp, hp_call, hp_vex, hp_endbr};
  const char *ends[6] = {hp_rip_load_end, hp_short_jcc_end, hp_tail_jmp_end,
                         hp_call_end,     hp_vex_end,       hp_endbr_end};
  uintptr_t lo = (uintptr_t)hp_rip_load, hi = (uintptr_t)hp_endbr_end;
  mt__island *is = mt__island_near(lo, hi);
  uint8_t *page = near_page(lo, hi);
  assert_non_null(is);
  assert_non_null(page);
  memset(page, 0xcc, 4096);
  mt__patch p[6];
  int (*copy[6])(int);
  for (int k = 0; k < 6; k++) {
    size_t size = (size_t)(ends[k] - (const char *)fs[k]);
    assert_int_equal(mt__patch_prepare(is, (void *)fs[k], size, (void *)wraps[k], &p[k]), 0);
    *(void **)&orig[k] = p[k].trampoline;
    uint8_t *at = page + 64 * k;
    assert_int_equal(mt__patch_inline(&p[k], at, 4), 0); /* no room: nothing written */
    assert_int_equal(at[0], 0xcc);
    assert_true(mt__patch_inline(&p[k], at, 32) > 0);
    *(void **)&copy[k] = at;
  }
  assert_int_equal(mt__island_seal(is), 0);
  assert_int_equal(copy[0](5), 105); /* the moved load reads hp_counter */
  assert_int_equal(copy[1](0), -1);  /* the moved branch, taken */
  assert_int_equal(copy[1](4), 5);   /* and not taken */
  assert_int_equal(copy[2](5), 105); /* on to hp_rip_load */
  assert_int_equal(copy[3](1), 8);        /* the moved call returns to the copy */
  if (__builtin_cpu_supports("avx")) assert_int_equal(copy[4](4), 7);
  assert_int_equal(copy[5](1), 6);

  /* a wrapper's site, `jmp *slot(%rip)` with room after it, slot holding
   * the trampoline: the site becomes the trampoline */
  uint8_t *site = page + 512, *slot = page + 1024;
  memcpy(slot, &p[3].trampoline, sizeof(void *));
  int32_t disp = (int32_t)(slot - (site + 6));
  site[0] = 0xff, site[1] = 0x25;
  memcpy(site + 2, &disp, 4);
  int (*through)(int);
  *(void **)&through = site;
  assert_int_equal(through(1), 8);
  /* a slot not holding the patch's trampoline: refused, unchanged */
  assert_int_equal(mt__jump_inline(site, (void *const *)(void *)slot, &p[0]), -1);
  assert_int_equal(site[0], 0xff);
  assert_int_equal(mt__jump_inline(site, (void *const *)(void *)slot, &p[3]), 0);
  assert_int_not_equal(site[0], 0xff);
  assert_int_equal(through(1), 8);
  assert_int_equal(mt__jump_inline(site, (void *const *)(void *)slot, &p[3]), -1); /* done */
  munmap(page, 4096);
}

/* A wrapper out of rel32 reach of its function: the jump goes through
 * the island's `jmp *wrapper`. The wrapper is code written into a page
 * mapped 8 GiB away: it jumps on to the trampoline (*far_orig). */
static int (*far_orig)(int);

static void test_redirect_far(void **state) {
  (void)state;
  uintptr_t self = (uintptr_t)hp_far, hint = (self + (8ull << 30)) & ~(uintptr_t)0xfff;
  uint8_t *far = mmap((void *)hint, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(far != MAP_FAILED);
  intptr_t d = (intptr_t)((uintptr_t)far - self);
  if (d == (int32_t)d) skip(); /* the kernel put it near after all */
  uint64_t slot = (uint64_t)(uintptr_t)&far_orig;
  far[0] = 0x48, far[1] = 0xb8; /* movabs $slot, %rax */
  memcpy(far + 2, &slot, 8);
  far[10] = 0xff, far[11] = 0x20; /* jmp *(%rax) */
  mt__island *is = mt__island_near((uintptr_t)hp_far, (uintptr_t)hp_far_end);
  assert_non_null(is);
  mt__patch p;
  size_t size = (size_t)(hp_far_end - (const char *)hp_far);
  assert_int_equal(mt__patch_prepare(is, (void *)hp_far, size, far, &p), 0);
  assert_true(p.jump != far); /* through the island */
  *(void **)&far_orig = p.trampoline;
  assert_int_equal(mt__patch_apply(is, &p, 1), 0);
  assert_int_equal(hp_far(1), 10);
  munmap(far, 4096);
}

/* ---- decode FILE < RANGES ---- */

static int decode_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
  rewind(f);
  if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "%s: cannot read\n", path);
    return 1;
  }
  fclose(f);
  unsigned long start, end;
  while (scanf("%lx %lx", &start, &end) == 2) {
    if (end > (unsigned long)size || start >= end) continue;
    printf("%lx %lx:", start, end);
    for (unsigned long at = start; at < end;) {
      mt__insn in;
      if (mt__insn_decode(data + at, end - at, &in)) {
        printf(" ?%lx", at);
        break;
      }
      printf(" %lx", at);
      at += in.len;
    }
    printf("\n");
  }
  free(data);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "decode") == 0) return decode_file(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_encodings),
      cmocka_unit_test(test_refused_encodings),
      cmocka_unit_test(test_inline), /* before test_redirect patches the functions */
      cmocka_unit_test(test_redirect),
      cmocka_unit_test(test_redirect_far),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
