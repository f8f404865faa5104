/* A program whose main thread memtrace attach takes aside in the middle of
 * floating-point and vector work (e2e.sh, attach): the calls the attacher
 * makes there (dlopen, the start and the stop of tracing) use the vector
 * registers, and the thread must find its own again when it runs on.
 *
 * In blocks of about 20 ms, the thread loads a distinct pattern into every
 * vector register (ymm0-15 with AVX, else xmm0-15), two values onto the x87
 * stack, and non-default control words (MXCSR rounding toward zero, x87
 * precision of 53 bits); it spins, then stores them all and compares them
 * with what it loaded (prog_attach_regs_spin.S). The spin is the program's
 * own code, so the attacher finds the thread there. Usage:
 * prog_attach_regs SECONDS. It prints "ready", then "regs: N blocks, E
 * changed" and exits 0 if E is 0, else 1, after the first change found.
 * x86-64 only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPIN 40000000L   /* turns of a one-cycle loop: about 20 ms */
#define MXCSR_RZ 0x7f80u /* the default 0x1f80, rounding toward zero */
#define FCW_53 0x027fu   /* the default 0x037f, precision of 53 bits */

typedef struct {
  uint8_t v[16][32]; /* the vector registers, 32 bytes each with AVX */
  double x87[2];     /* the x87 stack's top two values               */
  uint32_t mxcsr;
  uint16_t fcw;
} regs;
_Static_assert(__builtin_offsetof(regs, x87) == 512 && __builtin_offsetof(regs, mxcsr) == 528 &&
                   __builtin_offsetof(regs, fcw) == 532,
               "the layout prog_attach_regs_spin.S reads");

void spin_avx(const regs *in, regs *out, long n);
void spin_sse(const regs *in, regs *out, long n);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The first difference between what was loaded and what was stored, or
 * NULL; `width` bytes of each vector register count. */
static const char *changed(const regs *in, const regs *out, int width, char *why, size_t n) {
  for (int k = 0; k < 16; k++)
    if (memcmp(in->v[k], out->v[k], (size_t)width)) return snprintf(why, n, "vector register %d", k), why;
  if (memcmp(in->x87, out->x87, sizeof in->x87)) return "the x87 stack";
  if (in->mxcsr != out->mxcsr) return snprintf(why, n, "MXCSR %#x, not %#x", out->mxcsr, in->mxcsr), why;
  if (in->fcw != out->fcw) return snprintf(why, n, "the x87 control word %#x, not %#x", out->fcw, in->fcw), why;
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3;
  int avx = __builtin_cpu_supports("avx");
  int width = avx ? 32 : 16;
  regs in, out;
  memset(&in, 0, sizeof in);
  for (int k = 0; k < 16; k++)
    for (int b = 0; b < 32; b++) in.v[k][b] = (uint8_t)(0x11 * (k + 1) + 3 * b);
  in.x87[0] = 3.25, in.x87[1] = -1e300;
  in.mxcsr = MXCSR_RZ, in.fcw = FCW_53;
  printf("ready\n");
  fflush(stdout);
  long blocks = 0, errors = 0;
  char why[96];
  for (double end = now() + seconds; now() < end; blocks++) {
    memset(&out, 0, sizeof out);
    (avx ? spin_avx : spin_sse)(&in, &out, SPIN);
    const char *w = changed(&in, &out, width, why, sizeof why);
    if (w && ++errors == 1) printf("changed in block %ld: %s\n", blocks, w);
  }
  printf("regs: %ld blocks, %ld changed\n", blocks, errors);
  return errors ? 1 : 0;
}
