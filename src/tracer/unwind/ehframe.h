/* The function around a code address, from the unwind tables its object
 * carries (ehframe.c): how the frame-record walk learns whether a function
 * sets up a record (unwind.c, examine), and where cfi.c finds the
 * call-frame instructions that step through a function without one,
 * without asking libunwind.
 *
 * libunwind answers the same question (unw_get_proc_info_by_ip) by listing
 * the loaded objects with dl_iterate_phdr under the loader's lock, with
 * every signal blocked around it: two system calls and a lock per new
 * return address. Here the loader's
 * lock-free record of the object (_dl_find_object, glibc 2.35) gives its
 * .eh_frame_hdr, whose sorted table is searched in place: no lock, no
 * system call, no allocation. */
#ifndef MT_TRACER_EHFRAME_H
#define MT_TRACER_EHFRAME_H

#include <stdint.h>

typedef struct mt__fde_range {
  uintptr_t start, end; /* [start, end): the code one FDE describes */
} mt__fde_range;

/* An FDE and what its CIE says, everything checked to lie in the object's
 * mapping (every pointer below points into [obj_lo, obj_hi)). */
typedef struct mt__fde {
  uintptr_t start, end;                     /* the code it describes */
  const unsigned char *cie_insns, *cie_end; /* the CIE's initial instructions */
  const unsigned char *insns, *insns_end;   /* the FDE's own */
  uint64_t code_align;
  int64_t data_align;
  unsigned ra_reg;   /* the column holding the return address */
  uint8_t enc;       /* the FDE's pointer encoding (DW_CFA_set_loc's operand) */
  int signal;        /* "S": a signal frame's trampoline */
  uintptr_t hdr;     /* the object's .eh_frame_hdr (datarel pointers) */
  const unsigned char *obj_lo, *obj_hi;
} mt__fde;

/* The FDE holding pc: 1 and *out when one holds it; 0 when the object's
 * table says none does (code without unwind information); -1 when it
 * cannot tell (pc in no object the loader knows, an object without a
 * search table, encodings other than those compilers emit on x86-64, a
 * table pointing out of its object, or a C library older than 2.35): the
 * caller asks libunwind then. Reads only the object's own mapped tables;
 * safe wherever a sample is taken. */
int mt__fde_of(uintptr_t pc, mt__fde *out);

/* The same in an object's tables given: its .eh_frame_hdr at hdr, every
 * read within [lo, end) (the object's mapping). mt__fde_of's search once
 * it knows the object; also for the fuzzer (tests/fuzz/fuzz_cfi.c). */
int mt__fde_in(const unsigned char *hdr, const unsigned char *lo, const unsigned char *end,
               uintptr_t pc, mt__fde *out);

/* The same, for the range alone. */
int mt__fde_range_of(uintptr_t pc, mt__fde_range *out);

#endif
