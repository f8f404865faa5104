/* A small program to profile (`make demo`): a word-frequency table built
 * from generated text, with a cache that never frees its entries (a leak
 * for `memtrace leaks` to find), and short-lived scratch buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  char *word;
  long count;
  struct entry *next;
} entry;

#define BUCKETS 4096
static entry *table[BUCKETS];
static char **cache; /* grows and is never freed */
static size_t cache_len, cache_cap;

static unsigned hash(const char *s) {
  unsigned h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h % BUCKETS;
}

__attribute__((noinline)) static entry *new_entry(const char *w) {
  entry *e = malloc(sizeof *e);
  e->word = strdup(w);
  e->count = 0;
  return e;
}

__attribute__((noinline)) static void count_word(const char *w) {
  unsigned h = hash(w);
  for (entry *e = table[h]; e; e = e->next)
    if (strcmp(e->word, w) == 0) {
      e->count++;
      return;
    }
  entry *e = new_entry(w);
  e->count = 1;
  e->next = table[h];
  table[h] = e;
}

__attribute__((noinline)) static void remember(const char *w) {
  if (cache_len == cache_cap) {
    cache_cap = cache_cap ? cache_cap * 2 : 1024;
    cache = realloc(cache, cache_cap * sizeof *cache);
  }
  cache[cache_len++] = strdup(w); /* the leak */
}

__attribute__((noinline)) static void process_line(unsigned *seed) {
  char *line = malloc(4096); /* scratch, freed at once */
  size_t n = 0;
  for (int w = 0; w < 40; w++) {
    *seed = *seed * 1103515245u + 12345u;
    int len = 2 + (int)((*seed >> 16) % 7);
    for (int i = 0; i < len; i++) line[n++] = (char)('a' + (*seed >> (i + 3)) % 6);
    line[n++] = ' ';
  }
  line[n] = 0;
  for (char *save, *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    count_word(w);
    if (*seed % 97 == 0) remember(w);
  }
  free(line);
}

int main(int argc, char **argv) {
  long lines = argc > 1 ? atol(argv[1]) : 200000;
  unsigned seed = 42;
  for (long i = 0; i < lines; i++) process_line(&seed);
  long distinct = 0;
  for (int b = 0; b < BUCKETS; b++)
    for (entry *e = table[b]; e; e = e->next) distinct++;
  printf("%ld lines, %ld distinct words, %zu remembered\n", lines, distinct, cache_len);
  return 0;
}
