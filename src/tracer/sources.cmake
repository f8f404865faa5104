# tracer: the engine's tracker, backtraces and their names, sessions and
# sinks. Sessions and sinks at the top; a sub-folder per subsystem.
set(MT_TRACER_SOURCES
  # sessions (the public API), the tracker's event queues, destinations,
  # the environment, exec and spawn, the event clock, `memtrace run`'s notes
  src/tracer/session.c src/tracer/events.c src/tracer/dest.c src/tracer/environ.c
  src/tracer/exec.c src/tracer/clock.c src/tracer/runnotes.c src/tracer/toggle.c
  # unwinding: frame records, call-frame steps by .eh_frame, libunwind as
  # the last resort, the kernel's map of the stacks, the tracer's own stack
  src/tracer/unwind/unwind.c src/tracer/unwind/cfi.c src/tracer/unwind/ehframe.c
  src/tracer/unwind/unwlib.c src/tracer/unwind/stackmap.c src/tracer/unwind/bigstack.c
  # symbols and DWARF: codes to names, files, lines and inlined frames
  src/tracer/symbols/symbols.c src/tracer/symbols/symtab.c src/tracer/symbols/units.c
  src/tracer/symbols/dwline.c src/tracer/symbols/srclines.c src/tracer/symbols/scopes.c
  src/tracer/symbols/dwlib.c
  # language runtimes and JIT compilers: C++ and Rust names, perf maps and
  # jitdumps, remapped code, codes a JIT replaced
  src/tracer/runtimes/cxxrt.c src/tracer/runtimes/rustrt.c src/tracer/runtimes/rustdemangle.c
  src/tracer/runtimes/perfmap.c src/tracer/runtimes/remaps.c src/tracer/runtimes/jitcodes.c)
# None: the tracer's sources include each other by their path under src/
# ("tracer/unwind/cfi.h"), as every module does, and their own folder's
# headers by name.
set(MT_TRACER_INCLUDES)
