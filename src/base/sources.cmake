# base: containers, hashing, RNG, JSON, library binding, sockets; depends on
# nothing but libc. The core list is what the interposer links too (libc
# only, no libm).
set(MT_BASE_CORE_SOURCES src/base/containers.c src/base/private_file.c)
set(MT_BASE_OTHER_SOURCES
  src/base/dlbind.c
  src/base/human.c
  src/base/json.c
  src/base/tcp_listen.c)
