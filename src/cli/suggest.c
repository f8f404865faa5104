/* Did you mean (suggest.h). */
#include "suggest.h"

#include <stdlib.h>
#include <string.h>

enum { LONGEST = 64 };

/* Optimal string alignment distance of a[0..la) and b[0..lb), both at most
 * LONGEST long. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb) {
  static size_t d[LONGEST + 1][LONGEST + 1];
  for (size_t i = 0; i <= la; i++) d[i][0] = i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

static const char *nearest(const char *word, size_t len, const char *const *cands, size_t n) {
  if (len == 0 || len > LONGEST) return NULL;
  size_t limit = len / 3 ? len / 3 : 1, best = limit + 1;
  const char *found = NULL;
  for (size_t i = 0; i < n; i++) {
    size_t lc = strlen(cands[i]);
    if (lc > LONGEST || (lc > len ? lc - len : len - lc) > limit) continue;
    size_t dist = distance(word, len, cands[i], lc);
    if (dist < best) best = dist, found = cands[i];
  }
  return found;
}

const char *mt_cli_suggest(const char *word, const char *const *candidates, size_t n) {
  return nearest(word, strlen(word), candidates, n);
}

size_t mt_cli_usage_options(const char *usage, char (*names)[MT_CLI_OPTION_MAX + 1], size_t max) {
  size_t k = 0;
  for (const char *p = usage; *p && k < max; p++) {
    /* an option starts a word: "-n", "--by" after a space, '(' or '[' */
    if (*p != '-' || (p > usage && !strchr(" ([,\n", p[-1]))) continue;
    size_t len = strspn(p, "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
    int shaped = p[1] == '-' ? len >= 3 && p[2] != '-' : len == 2;
    if (shaped && len <= MT_CLI_OPTION_MAX) {
      memcpy(names[k], p, len);
      names[k][len] = 0;
      int seen = 0;
      for (size_t i = 0; i < k && !seen; i++) seen = strcmp(names[i], names[k]) == 0;
      k += !seen;
    }
    p += len ? len - 1 : 0;
  }
  return k;
}

const char *mt_cli_suggest_option(const char *usage, const char *word, char *out, size_t n) {
  enum { MAX_OPTIONS = 128 };
  char names[MAX_OPTIONS][MT_CLI_OPTION_MAX + 1];
  const char *cands[MAX_OPTIONS];
  size_t k = mt_cli_usage_options(usage, names, MAX_OPTIONS);
  for (size_t i = 0; i < k; i++) cands[i] = names[i];
  const char *found = nearest(word, strcspn(word, "="), cands, k);
  if (!found) return NULL;
  size_t len = strlen(found);
  if (len >= n) return NULL;
  memcpy(out, found, len + 1);
  return out;
}
