# The readers of bytes from outside that need nothing but their own sources,
# each fuzzed alone (tests/fuzz/fuzz_NAME.c): the tracer's readers of what
# the profiled program maps or writes (Rust's symbol names, DWARF line
# tables, unwind tables and the steps by them, a JIT's perf map), the
# instruction decoder of the allocator redirection (insn), and the viewer's
# HTTP head parser (http_head).
# Included by tests/fuzz (the libFuzzer targets) and tests/fuzz_replay (the
# corpora replayed in every test run), so that the two list the same.
set(MT_FUZZ_TRACER_TARGETS rustdemangle dwline cfi perfmap insn http_head)
set(mt_fuzz_tracer_rustdemangle src/tracer/runtimes/rustdemangle.c)
set(mt_fuzz_tracer_dwline src/tracer/symbols/dwline.c src/base/containers.c)
set(mt_fuzz_tracer_cfi src/tracer/unwind/cfi.c src/tracer/unwind/ehframe.c)
set(mt_fuzz_tracer_perfmap src/tracer/runtimes/perfmap.c src/tracer/unwind/stackmap.c
  src/base/containers.c)
set(mt_fuzz_tracer_insn src/preload/hotpatch.c)
set(mt_fuzz_tracer_http_head src/viewer/http_head.c)

# mt_fuzz_tracer_target(TARGET NAME HARNESS...): TARGET built from the
# harness files given and NAME's sources, with the tracer's include paths.
function(mt_fuzz_tracer_target target name)
  list(TRANSFORM mt_fuzz_tracer_${name} PREPEND "${PROJECT_SOURCE_DIR}/" OUTPUT_VARIABLE srcs)
  add_executable(${target} ${ARGN} ${srcs})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
endfunction()
