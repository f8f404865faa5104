/* The tracer as the malloc interposer (src/preload) calls it: from its
 * wrappers of the process's ends and of dlclose, and as it starts. Its
 * exec wrappers have exec.h. Internal (mt__ prefix). */
#ifndef MT_TRACER_INTERPOSER_H
#define MT_TRACER_INTERPOSER_H

#define MT__TR_HIDDEN __attribute__((visibility("hidden")))

/* The code of the frame the interposer puts innermost in the stack of a
 * sampled anonymous mapping (the symbolizer names it MT_MAPPING_FILENAME's
 * location): an address in the first 64 KiB, which Linux maps for no one
 * (vm.mmap_min_addr), so no return address is ever this. */
#define MT__MAPPING_PC 0x6d6du

/* session.c: one line on stderr, written with write(2) (the allocating
 * thread may be inside stdio). */
MT__TR_HIDDEN void mt__tr_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* session.c: before tracing starts, how the interposer keeps the sampled
 * blocks' handles ("blocks=header", or "blocks=header-off-page" when
 * another allocator than the C library's is next) and how malloc and free
 * jump to the next allocator ("jumps=direct" or "jumps=indirect"), for the
 * trace's runtime parameters. The string must outlive the process's
 * sessions. Not called: no interposer (a program embedding the profiler). */
MT__TR_HIDDEN void mt__tr_set_interposer(const char *settings);

/* session.c: writes this process's buffered events (before _exit, exec,
 * abort), if the tracer's lock is free: it never waits (the caller may be
 * a signal handler that interrupted the lock's holder). 0: the lock was
 * held, and nothing was written. */
MT__TR_HIDDEN int mt__trace_before_exit(void);

/* session.c: before the process changes its credentials or its root
 * (setuid, chroot: a server's worker dropping privileges), a forked
 * child whose trace is not open yet (%p destinations open it at the first
 * sample) opens it now, while it still may create the file. Nothing in a
 * vfork child (the session is another process's). */
MT__TR_HIDDEN void mt__tr_before_credentials(void);

/* events.c: the interposer wraps dlclose (said once, at its load). Then
 * the tracer looks for unloaded libraries only after a dlclose, and
 * queues every sample (see the top of events.c). */
MT__TR_HIDDEN void mt__tr_dlclose_hooked(void);
/* events.c: before the real dlclose, unless nested in another (the loader
 * holds its lock there, and a holder of the tracer's lock may be waiting
 * for it): writes what is queued and describes its codes while their
 * library is surely loaded, then keeps loaded a C++ runtime that the
 * naming found (cxxrt.h), which this dlclose could otherwise unload. */
MT__TR_HIDDEN void mt__tr_before_dlclose(void);
/* events.c: after the real dlclose, nested or not: a library may be gone. */
MT__TR_HIDDEN void mt__tr_after_dlclose(void);

#endif
