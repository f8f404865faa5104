/* The function around a code address, from the unwind tables its object
 * carries (ehframe.c): how the frame-record walk learns whether a function
 * sets up a record (unwind.c, examine) without asking libunwind.
 *
 * libunwind answers the same question (unw_get_proc_info_by_ip) by listing
 * the loaded objects with dl_iterate_phdr under the loader's lock, with
 * every signal blocked around it: two system calls and a lock per new
 * return address, about 6 us on this project's machine. Here the loader's
 * lock-free record of the object (_dl_find_object, glibc 2.35) gives its
 * .eh_frame_hdr, whose sorted table is searched in place: no lock, no
 * system call, no allocation. */
#ifndef MT_TRACER_EHFRAME_H
#define MT_TRACER_EHFRAME_H

#include <stdint.h>

typedef struct mt__fde_range {
  uintptr_t start, end; /* [start, end): the code one FDE describes */
} mt__fde_range;

/* The FDE range holding pc: 1 and *out when one holds it; 0 when the
 * object's table says none does (code without unwind information); -1
 * when it cannot tell (pc in no object the loader knows, an object without
 * a search table, encodings other than those compilers emit on x86-64, a
 * table pointing out of its object, or a C library older than 2.35): the
 * caller asks libunwind then. Reads only the object's own mapped tables;
 * safe wherever a sample is taken. */
int mt__fde_range_of(uintptr_t pc, mt__fde_range *out);

#endif
