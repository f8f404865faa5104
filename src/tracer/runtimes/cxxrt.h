/* The C++ runtime in a traced process (libstdc++, or LLVM's libc++ and
 * libc++abi): its allocation functions, whose frames a sample hides so that
 * the innermost frame is the code that asked for memory, and its demangler,
 * which names C++ functions. Internal (mt__ prefix).
 *
 * A runtime is found two ways. Only the first takes the dynamic loader's
 * lock, and no sample is taken then; a sample must not wait for it under
 * the tracer's lock (a thread in a library's constructor may hold the
 * loader's lock and wait for the tracer's):
 *   - at a session's start: by name, in the global scope and among the
 *     loaded objects (listed, then opened by path with RTLD_NOLOAD: a
 *     runtime loaded by a library opened with RTLD_LOCAL, as Python opens
 *     its extension modules);
 *   - when a code in a runtime loaded since is first named: in its symbol
 *     table, through libdw (a C program that dlopens a C++ library, or
 *     Java's launcher loading libjvm). Only with the interposer's dlclose,
 *     which keeps such a runtime loaded (mt__cxxrt_pin) before any library
 *     can be closed: its addresses stay the runtime's for the process's
 *     life. Samples queued before then lose those frames when written
 *     (events.c names a sample's innermost code first). A library whose
 *     code calls malloc itself, never through the runtime's (Java's
 *     libjvm), puts no code of it on a sampled stack: when one of its
 *     names comes out mangled, symbols.c finds the runtime in
 *     /proc/self/maps (mt__cxxrt_unlearned) and learns it so. */
#ifndef MT_TRACER_CXXRT_H
#define MT_TRACER_CXXRT_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

/* At a session's start, after mt__unwind_init, outside any sample. */
void mt__cxxrt_probe(void);

/* From the naming of a code in `mod`, whose file is `path`: learns the
 * runtime if `path` is one not yet known. */
void mt__cxxrt_learn(Dwfl_Module *mod, const char *path);

/* Keeps a runtime learned by mt__cxxrt_learn loaded for good. The
 * interposer's dlclose calls it before the real dlclose, outside the
 * loader's lock and the tracer's. */
void mt__cxxrt_pin(void);

/* `name` demangled (malloc'd: the caller frees it), or NULL when it is not
 * a C++ name or no demangler is known. */
char *mt__cxxrt_demangle(const char *name);

/* Whether a demangler is known. */
int mt__cxxrt_has_demangler(void);

/* An address mapped from a runtime not searched yet (/proc/self/maps, read
 * without the loader's lock), or 0. A library whose code calls malloc
 * itself (Java's libjvm) never puts the runtime's code on a sampled stack,
 * and its names stayed mangled: symbols.c looks for the runtime this way
 * when a name comes out mangled, and learns it (mt__cxxrt_learn). */
uintptr_t mt__cxxrt_unlearned(void);

#endif
