# mt_make_corpus writes the seed corpora of tests/fuzz (see make_corpus.c).
# It is built with the rest but never run by the tests: the corpora are
# committed. `cmake --build BUILD --target fuzz_corpus` regenerates them in
# the source tree.
include_guard(GLOBAL)

# tests/CMakeLists.txt defines it, but the fuzz build may have no tests.
if(NOT DEFINED MT_SHARED_TRACES)
  set(MT_SHARED_TRACES "${PROJECT_SOURCE_DIR}/../shared/traces")
endif()

add_executable(mt_make_corpus ${CMAKE_CURRENT_LIST_DIR}/make_corpus.c)
target_link_libraries(mt_make_corpus PRIVATE memtrace_static)

add_custom_target(fuzz_corpus
  COMMAND mt_make_corpus ${MT_SHARED_TRACES} ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus
          ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus_roundtrip
  COMMENT "Regenerating tests/fuzz/corpus and tests/fuzz/corpus_roundtrip"
  VERBATIM)
