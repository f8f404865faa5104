/* "Did you mean": the nearest of a list of words to a misspelled one. */
#ifndef MT_CLI_SUGGEST_H
#define MT_CLI_SUGGEST_H

#include <stddef.h>

/* The candidate nearest to `word` by edit distance (insertions, deletions,
 * substitutions and swaps of neighbours), when it is near enough to be
 * what was meant (at most a third of the word's letters off, and at least
 * one); else NULL. */
const char *mt_cli_suggest(const char *word, const char *const *candidates, size_t n);

/* The options a usage text names ("--by", "-n": a word starting with one
 * dash and a letter, or two dashes), each once, in order, into names[0..max);
 * returns their count. */
#define MT_CLI_OPTION_MAX 64
size_t mt_cli_usage_options(const char *usage, char (*names)[MT_CLI_OPTION_MAX + 1], size_t max);

/* The same among the long and short options a usage text names ("--by",
 * "-n"), for an unknown option `word` (its "=VALUE" part ignored); the
 * option into out[0..n), or NULL. */
const char *mt_cli_suggest_option(const char *usage, const char *word, char *out, size_t n);

#endif
