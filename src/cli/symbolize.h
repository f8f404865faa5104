/* Names for a trace's anonymous frames, after the program has ended. The
 * tracer names a code in no symbol (a stripped program's, a library's
 * local function) "MODULE+0xOFFSET", with the module's path as the file.
 * Its separate debug information, found by build id in /usr/lib/debug
 * or, with DEBUGINFOD_URLS set, fetched from debuginfod servers (elfutils'
 * client, bounded by DEBUGINFOD_TIMEOUT), gives its function, file, line
 * and inlined calls. Done on the trace, never on the program's allocation
 * path: `memtrace symbolize` and `memtrace run` when DEBUGINFOD_URLS is
 * set. */
#ifndef MT_CLI_SYMBOLIZE_H
#define MT_CLI_SYMBOLIZE_H

#include <stddef.h>

#include "memtrace/format.h"

typedef struct mt_cli_symbolizer mt_cli_symbolizer;

/* Opens libdw. 0, or -1 with why in err[0..n). */
int mt_cli_symbolizer_new(mt_cli_symbolizer **out, char *err, size_t n);
void mt_cli_symbolizer_free(mt_cli_symbolizer *s);

/* A code's locations in[0..n) with names where they were anonymous: 1 and
 * *out, *nout (outermost first; valid until the next call) when named, else
 * 0 and in, n as given. A module's debug information is looked for once. */
int mt_cli_symbolize(mt_cli_symbolizer *s, const mt_location *in, size_t n,
                     const mt_location **out, size_t *nout);

/* How many codes got names. */
size_t mt_cli_symbolizer_named(const mt_cli_symbolizer *s);

#endif
