/* A program memtrace attach traces for a window (e2e.sh, attach). It
 * allocates blocks before the window (site before_alloc), says "ready" and
 * waits for SIGUSR1, blocked in sigwait; in the window, 8 threads allocate
 * blocks (window_alloc), hand half of them to the next thread, which frees
 * them, free the blocks made before, reallocate some of those
 * (window_realloc, then freed) and keep some (window_keep) past the
 * window; it says "window done" and waits for SIGUSR2, then frees the kept
 * blocks, allocates more, and prints the truth for the window's sites at
 * rate 1 ("SITE objects bytes live-at-the-window's-end"); the window also
 * maps 8 anonymous regions (window_map), unmaps 4 and one made before it.
 * Before "ready" and after "window done" it prints which object its PLT
 * slots of malloc, free and valloc reach ("plt NAME OBJECT"): valloc is
 * first called after the window, so its slot is unbound before it under
 * lazy binding. Usage:
 * prog_attach [LIBRARY]: with LIBRARY (libmt_dl_test.so), the window also
 * opens it, calls its dl_work (300 blocks of 1000 bytes at dl_site) and
 * closes it, three times. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NOINLINE __attribute__((noinline))
#define THREADS 8
#define PER_THREAD 500
#define BEFORE 1000
#define REALLOCS 100
#define KEEP 10

static void *before[BEFORE], *kept[THREADS][KEEP], *maps[8];
static int errors;

/* handed from thread k to thread k + 1 */
static struct {
  pthread_mutex_t lock;
  void *v[PER_THREAD];
  int n;
} handoff[THREADS];

NOINLINE static void *before_alloc(size_t n) { return malloc(n); }
NOINLINE static void *window_alloc(size_t n) { return malloc(n); }
NOINLINE static void *window_keep(size_t n) { return malloc(n); }
NOINLINE static void *window_realloc(void *p, size_t n) { return realloc(p, n); }
NOINLINE static void *window_map(size_t n) {
  return mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void *worker(void *arg) {
  int k = (int)(long)arg, next = (k + 1) % THREADS;
  for (int i = 0; i < PER_THREAD; i++) {
    char *p = window_alloc(2000);
    memset(p, k, 2000);
    if (i % 2) {
      free(p);
      continue;
    }
    pthread_mutex_lock(&handoff[next].lock);
    handoff[next].v[handoff[next].n++] = p;
    pthread_mutex_unlock(&handoff[next].lock);
  }
  for (int i = 0; i < KEEP; i++) kept[k][i] = window_keep(48);
  return NULL;
}

/* The object that this program's PLT slot of `name` leads to (its file's
 * base name), found from its dynamic section. */
static int find_slot(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  const char *name = ((const char **)arg)[0];
  const ElfW(Dyn) *dyn = NULL;
  for (int k = 0; k < info->dlpi_phnum; k++)
    if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[k].p_vaddr);
  const ElfW(Rela) *rel = NULL;
  const ElfW(Sym) *sym = NULL;
  const char *str = NULL;
  size_t relsz = 0;
  for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_JMPREL) rel = (const ElfW(Rela) *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_PLTRELSZ) relsz = dyn->d_un.d_val;
    if (dyn->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_STRTAB) str = (const char *)dyn->d_un.d_ptr;
  }
  for (size_t i = 0; rel && sym && str && i < relsz / sizeof *rel; i++)
    if (strcmp(str + sym[ELF64_R_SYM(rel[i].r_info)].st_name, name) == 0)
      ((void **)arg)[1] = *(void **)(info->dlpi_addr + rel[i].r_offset);
  return 1; /* the program alone: the first object */
}

static void print_plt(const char *name) {
  const void *arg[2] = {name, NULL};
  dl_iterate_phdr(find_slot, arg);
  Dl_info di;
  const char *file = arg[1] && dladdr(arg[1], &di) && di.dli_fname ? di.dli_fname : "?";
  const char *base = strrchr(file, '/');
  printf("plt %s %s\n", name, base ? base + 1 : file);
}

static void print_plts(void) {
  print_plt("malloc");
  print_plt("free");
  print_plt("valloc");
}

static void wait_for(int sig) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  int got;
  sigwait(&set, &got);
}

int main(int argc, char **argv) {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &block, NULL);
  for (int i = 0; i < BEFORE; i++) memset(before[i] = before_alloc(1000), 1, 1000);
  void *early = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  for (int k = 0; k < THREADS; k++) pthread_mutex_init(&handoff[k].lock, NULL);
  void *volatile one = malloc(1); /* free's slot bound before the attach */
  free(one);
  print_plts();
  printf("ready\n");
  fflush(stdout);
  wait_for(SIGUSR1);
  pthread_t t[THREADS];
  for (long k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, worker, (void *)k);
  for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
  for (int k = 0; k < THREADS; k++)
    for (int i = 0; i < handoff[k].n; i++) free(handoff[k].v[i]);
  /* the blocks from before: their usable size, reallocation and free */
  for (int i = 0; i < BEFORE; i++) {
    if (malloc_usable_size(before[i]) < 1000) errors++;
    if (i < REALLOCS) {
      char *q = window_realloc(before[i], 1008);
      if (!q || q[999] != 1) errors++;
      free(q);
    } else {
      free(before[i]);
    }
  }
  /* mappings: 8 made, 4 unmapped in the window, 4 after it; one from
   * before the window unmapped in it */
  for (int i = 0; i < 8; i++) {
    maps[i] = window_map(65536);
    if (maps[i] == MAP_FAILED) errors++;
    else memset(maps[i], 1, 65536);
  }
  for (int i = 0; i < 4; i++) munmap(maps[i], 65536);
  munmap(early, 65536);
  for (int r = 0; argc > 1 && r < 3; r++) { /* a library opened and closed in the window */
    void *h = dlopen(argv[1], RTLD_NOW);
    void (*work)(void) = h ? (void (*)(void))dlsym(h, "dl_work") : NULL;
    if (!work) errors++;
    else work();
    if (h) dlclose(h);
  }
  print_plts();
  printf("window done\n");
  fflush(stdout);
  wait_for(SIGUSR2);
  free(valloc(64));
  for (int k = 0; k < THREADS; k++)
    for (int i = 0; i < KEEP; i++) {
      if (malloc_usable_size(kept[k][i]) < 48) errors++;
      kept[k][i] = realloc(kept[k][i], 64);
      free(kept[k][i]);
    }
  for (int i = 0; i < 10000; i++) free(malloc((size_t)(i % 100) * 8 + 8));
  for (int i = 4; i < 8; i++) munmap(maps[i], 65536);
  printf("window_alloc %d %d 0\n", THREADS * PER_THREAD, THREADS * PER_THREAD * 2000);
  printf("window_realloc %d %d 0\n", REALLOCS, REALLOCS * 1008);
  printf("window_keep %d %d %d\n", THREADS * KEEP, THREADS * KEEP * 48, THREADS * KEEP);
  if (argc > 1) printf("dl_site 900 900000 0\n");
  printf("window_map 8 524288 4\n");
  printf("done, %d errors\n", errors);
  return errors != 0;
}
