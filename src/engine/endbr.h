/* MT__ENDBR: the instruction that opens a function written in assembly
 * (the interposer's malloc and free, the tracer's stack switch) when the
 * build enables indirect-branch tracking (-fcf-protection: __CET__ bit 0),
 * so that indirect calls and jumps may land on it; else nothing. */
#ifndef MT_ENGINE_ENDBR_H
#define MT_ENGINE_ENDBR_H

#if defined(__CET__) && (__CET__ & 1)
#define MT__ENDBR "endbr64\n"
#else
#define MT__ENDBR ""
#endif

#endif
