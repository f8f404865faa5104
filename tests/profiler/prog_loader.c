/* Allocating and freeing while the dynamic loader's lock is held: two
 * threads list the loaded objects with dl_iterate_phdr, whose callback
 * (run under the loader's lock) allocates and frees, while a third opens
 * and closes a library, allocating through it and on its own. A sample
 * in the callback used to deadlock against another thread's sample
 * (libunwind's lock and the loader's, taken in opposite orders).
 * Usage: prog_loader LIBRARY (libmt_dl_test.so). Prints the true count,
 * bytes and live blocks of its sites, as prog_sites does: loader_opened
 * (the third thread's own); the callback's allocations (loader_listed)
 * are not sampled, and the blocks allocated before and freed in a
 * callback (loader_kept) must be seen freed. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LISTINGS 20000
#define KEPT 64

static const char *library;
static atomic_int listing = 2;
static void *kept[KEPT];
static atomic_int next_kept;
static long opened;

static void *check(void *p) {
  if (!p) {
    puts("ERROR allocation failed");
    exit(1);
  }
  return p;
}

__attribute__((noinline)) static char *loader_listed(const char *name) {
  return check(strdup(name ? name : ""));
}

__attribute__((noinline)) static void *loader_kept(void) { return check(malloc(256)); }

__attribute__((noinline)) static void *loader_opened(void) { return check(malloc(112)); }

/* under the loader's lock */
static int listed(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  free(loader_listed(info->dlpi_name));
  int k = atomic_fetch_add(&next_kept, 1);
  if (k < KEPT) free(kept[k]);
  return 0;
}

static void *lister(void *arg) {
  (void)arg;
  for (int i = 0; i < LISTINGS; i++) dl_iterate_phdr(listed, NULL);
  atomic_fetch_sub(&listing, 1);
  return NULL;
}

static void *opener(void *arg) {
  (void)arg;
  while (atomic_load(&listing) > 0) {
    void *h = dlopen(library, RTLD_NOW);
    if (!h) {
      printf("ERROR dlopen: %s\n", dlerror());
      exit(1);
    }
    void *(*site)(size_t) = (void *(*)(size_t))dlsym(h, "dl_site");
    if (!site) {
      puts("ERROR dlsym");
      exit(1);
    }
    free(check(site(64)));
    dlclose(h);
    free(loader_opened());
    opened++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    puts("ERROR usage: prog_loader LIBRARY");
    return 2;
  }
  library = argv[1];
  for (int i = 0; i < KEPT; i++) kept[i] = loader_kept();
  pthread_t t[3];
  if (pthread_create(&t[0], NULL, lister, NULL) || pthread_create(&t[1], NULL, opener, NULL) ||
      pthread_create(&t[2], NULL, lister, NULL)) {
    puts("ERROR pthread_create");
    return 1;
  }
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  printf("loader_kept %d %d 0\nloader_opened %ld %ld 0\n", KEPT, KEPT * 256, opened, opened * 112);
  return 0;
}
