/* Anonymous mappings made, split, moved and leaked at known sites; prints
 * the truth for the anonymous-mapping sites at rate 1, one line per site:
 * name, objects, bytes, objects never unmapped (as prog_sites does for the
 * heap). By the interposer's rules (src/preload/preload_mmap.c): a mapping
 * counts its whole pages; a partial unmap ends the mapping and starts an
 * object for each piece that stays, at the same site; mremap ends the old
 * mapping and starts one at its caller. Mappings the interposer does not
 * count (a file's, PROT_NONE, malloc's own) have no line.
 *
 * Usage: prog_maps [ROUNDS [fork]]: ROUNDS times the whole set (default 1);
 * with "fork", a child made after the first round unmaps an inherited
 * mapping and maps its own, then execs `true` (its trace: the caller's). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096u
#define NOINLINE __attribute__((noinline))

typedef struct site {
  const char *name;
  uint64_t objects, bytes, live;
} site;

enum { WHOLE, LEAK, SPLIT, SPAN, FIXED_OVER, GROW_MAP, GROW_REMAP, SHRINK, THREADS, NSITES };
static site sites[NSITES] = {
    {"site_whole", 0, 0, 0},      {"site_leak", 0, 0, 0},   {"site_split", 0, 0, 0},
    {"site_span", 0, 0, 0},       {"site_fixed_over", 0, 0, 0}, {"site_grow_map", 0, 0, 0},
    {"site_grow_remap", 0, 0, 0}, {"site_shrink", 0, 0, 0}, {"site_thread", 0, 0, 0}};
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void count(int s, uint64_t objects, uint64_t bytes, int64_t live) {
  pthread_mutex_lock(&lock);
  sites[s].objects += objects;
  sites[s].bytes += bytes;
  sites[s].live += (uint64_t)live;
  pthread_mutex_unlock(&lock);
}

static char *must(void *p, const char *what) {
  if (p == MAP_FAILED) {
    perror(what);
    exit(1);
  }
  return p;
}

/* a macro: the site of a mapping is the function that called mmap */
#define anon(len, flags) \
  must(mmap(NULL, (len), PROT_READ | PROT_WRITE, (flags) | MAP_ANONYMOUS, -1, 0), "mmap")

NOINLINE static void site_whole(void) {
  size_t len[] = {PG, 16 * PG, 256 * PG};
  for (int i = 0; i < 3; i++) {
    char *p = anon(len[i], MAP_PRIVATE);
    p[0] = 1;
    munmap(p, len[i]);
    count(WHOLE, 1, len[i], 0);
  }
}

NOINLINE static void site_leak(void) {
  anon(5000, MAP_PRIVATE)[4999] = 1; /* whole pages: 8192 */
  anon(16 * PG, MAP_SHARED)[0] = 1;
  count(LEAK, 2, 2 * PG + 16 * PG, 2);
}

NOINLINE static void site_split(void) {
  char *p = anon(10 * PG, MAP_PRIVATE);
  munmap(p + 4 * PG, 2 * PG); /* pieces [0, 4) and [6, 10) */
  munmap(p, 4 * PG);
  count(SPLIT, 3, 10 * PG + 4 * PG + 4 * PG, 1);
}

/* Two mappings side by side in a reservation (PROT_NONE: not counted),
 * then one unmap across their boundary: each leaves a piece. */
NOINLINE static void site_span(char *reserve) {
  must(mmap(reserve, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
       "mmap fixed");
  must(mmap(reserve + 8 * PG, 8 * PG, PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
       "mmap fixed");
  munmap(reserve + 4 * PG, 8 * PG);
  count(SPAN, 4, 16 * PG + 8 * PG, 2);
}

NOINLINE static char *site_fixed_over(void) { return anon(8 * PG, MAP_PRIVATE); }

/* A file mapped over the middle of a counted mapping: that part is gone. */
NOINLINE static void file_over(char *p, int fd) {
  must(mmap(p + 3 * PG, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0), "mmap file");
  count(FIXED_OVER, 3, 8 * PG + 3 * PG + 3 * PG, 2);
}

NOINLINE static char *site_grow_map(void) { return anon(2 * PG, MAP_PRIVATE); }
NOINLINE static char *site_grow_remap(char *p) {
  return must(mremap(p, 2 * PG, 32 * PG, MREMAP_MAYMOVE), "mremap");
}
NOINLINE static char *site_shrink(char *p) { return must(mremap(p, 32 * PG, 4 * PG, 0), "mremap"); }

NOINLINE static void uncounted(int fd) {
  char *f = must(mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0), "mmap file");
  char *none = must(mmap(NULL, 64 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), "mmap none");
  char *volatile big = malloc(16u << 20); /* the C library maps it itself */
  big[0] = f[0];
  free(big);
  munmap(f, PG);
  munmap(none, 64 * PG);
}

NOINLINE static void *site_thread(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  char *kept[8];
  for (int i = 0; i < 1000; i++) {
    size_t len = (1 + (i + id) % 4) * PG;
    char *p = anon(len, MAP_PRIVATE);
    p[0] = 1;
    if (i % 125 == 0) {
      kept[i / 125] = p;
      count(THREADS, 1, len, 1);
    } else {
      munmap(p, len);
      count(THREADS, 1, len, 0);
    }
  }
  (void)kept;
  return NULL;
}

static void round_of(int fd) {
  site_whole();
  site_leak();
  site_split();
  char *reserve = must(mmap(NULL, 16 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), "reserve");
  site_span(reserve);
  file_over(site_fixed_over(), fd);
  char *g = site_grow_map();
  count(GROW_MAP, 1, 2 * PG, 0);
  g = site_grow_remap(g);
  g[31 * PG] = 1;
  g = site_shrink(g);
  count(GROW_REMAP, 1, 32 * PG, 0);
  count(SHRINK, 1, 4 * PG, 1);
  uncounted(fd);
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, site_thread, (void *)i);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 1, forks = argc > 2 && strcmp(argv[2], "fork") == 0;
  char path[] = "/tmp/prog_maps.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, 4 * PG) != 0) {
    perror("temporary file");
    return 1;
  }
  unlink(path);
  for (int r = 0; r < rounds; r++) {
    round_of(fd);
    if (forks && r == 0) {
      char *inherited = site_fixed_over(); /* mapped before the fork */
      count(FIXED_OVER, 1, 8 * PG, 1);
      pid_t c = fork();
      if (c == 0) {
        munmap(inherited, 8 * PG);
        site_leak();
        execlp("true", "true", (char *)NULL);
        _exit(127);
      }
      int st;
      if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "prog_maps: the child failed\n");
        return 1;
      }
    }
  }
  for (int s = 0; s < NSITES; s++)
    if (sites[s].objects)
      printf("%s %llu %llu %llu\n", sites[s].name, (unsigned long long)sites[s].objects,
             (unsigned long long)sites[s].bytes, (unsigned long long)sites[s].live);
  return 0;
}
