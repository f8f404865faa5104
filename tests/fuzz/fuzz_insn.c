/* libFuzzer target: the x86-64 instruction length decoder of the
 * allocator redirection (src/preload/hotpatch.h).
 *
 * The input is decoded instruction by instruction, as the redirection
 * walks a function. Each decoded instruction must lie within what was
 * given and within 15 bytes; its fixups (a rip-relative displacement, a
 * branch's) inside it, the branch kinds with a displacement and the others
 * without; and decoding exactly its own bytes must give the same answer,
 * so the decoder read nothing past it. Anything else aborts; the sanitizers
 * catch reads out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preload/hotpatch.h"

static void check(const uint8_t *code, size_t avail) {
  mt__insn in, again;
  if (mt__insn_decode(code, avail, &in) != 0) return;
  if (in.len == 0 || in.len > 15 || in.len > avail) abort();
  if (in.disp_at >= 0 && (unsigned)in.disp_at + 4 > in.len) abort();
  int branch = in.kind == MT__INSN_JMP || in.kind == MT__INSN_JCC || in.kind == MT__INSN_CALL ||
               in.kind == MT__INSN_OTHER_BRANCH;
  if (branch != (in.rel_at >= 0)) abort();
  if (branch && (in.rel_size != 1 && in.rel_size != 4)) abort();
  if (branch && (unsigned)in.rel_at + in.rel_size != in.len) abort();
  /* its own bytes alone, copied to a buffer of exactly that size */
  uint8_t *own = malloc(in.len);
  if (!own) return;
  memcpy(own, code, in.len);
  if (mt__insn_decode(own, in.len, &again) != 0 || again.len != in.len || again.kind != in.kind ||
      again.disp_at != in.disp_at || again.rel_at != in.rel_at || again.rel_size != in.rel_size ||
      again.opcode != in.opcode)
    abort();
  free(own);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a function's bytes: every instruction in turn, as long as they decode */
  for (size_t at = 0; at < size;) {
    mt__insn in;
    check(data + at, size - at);
    if (mt__insn_decode(data + at, size - at, &in) != 0) break;
    at += in.len;
  }
  return 0;
}
