# preload: the LD_PRELOAD interposer.
set(MT_PRELOAD_SOURCES src/preload/preload.c src/preload/preload_slow.c
  src/preload/preload_exec.c src/preload/preload_creds.c src/preload/preload_loader.c src/preload/preload_mmap.c
  src/preload/preload_redirect.c src/preload/preload_attach.c src/preload/hotpatch.c src/preload/jumps.c src/preload/plt_slots.c)
