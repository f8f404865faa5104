/* A library the memtrace command opens only when a command needs it, not
 * linked: the pprof export's compressor (ISA-L, libdeflate or zlib).
 * Linked, every command would pay to load them, `memtrace run` among
 * them. */
#ifndef MT_BASE_DLBIND_H
#define MT_BASE_DLBIND_H

#include <stddef.h>

/* A function of the library, and where its address goes (a function
 * pointer's address). */
typedef struct mt_dl_fn {
  const char *name;
  void *slot;
} mt_dl_fn;

/* Opens `soname` and sets every slot of fns[0..n): 0. Or -1, the slots all
 * NULL and the library closed, with why in err (errlen bytes): "cannot load
 * SONAME (the loader's reason); OPEN_HINT", or "SONAME has no FUNCTION:
 * SYMBOL_HINT". */
int mt_dl_bind(const char *soname, const mt_dl_fn *fns, size_t n, const char *open_hint,
               const char *symbol_hint, char *err, size_t errlen);

#endif
