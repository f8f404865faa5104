/* A gzip stream written to a file descriptor, for the pprof export.
 *
 * Three compressors, the fastest that loads, opened by the first stream
 * rather than linked (every other command, `memtrace run` among them,
 * would pay to load them); MEMTRACE_COMPRESSOR=isal|libdeflate|zlib
 * names the one to use:
 * - ISA-L's igzip (libisal.so.2; the build needs its header): one gzip
 *   member, streamed; about three times as fast as libdeflate at their
 *   fastest levels, for a file about 5% larger (docs/benchmarks.md, "The
 *   pprof export's compressor").
 * - libdeflate (libdeflate.so.0): the bytes are gathered in chunks of
 *   GZ_CHUNK and each chunk is written as one gzip member. A file of
 *   several members is one gzip file (RFC 1952, section 2.2) that gzip,
 *   zcat, Go's compress/gzip (pprof, Pyroscope, Parca, Grafana) and
 *   Python's gzip read whole.
 * - zlib (libz.so.1): one member, streamed.
 *
 * Errors are sticky: after the first failure (a write error, out of
 * memory) every call does nothing, and gz_finish returns the error. */
#ifndef MT_CLI_GZIP_OUT_H
#define MT_CLI_GZIP_OUT_H

#include <stddef.h>
#include <stdint.h>

enum { GZ_CHUNK = 1 << 20 };

typedef struct gz_out gz_out;

/* Loads a compressor, once: 0, or -1 with why in err (n bytes) when none
 * loads, or not the one MEMTRACE_COMPRESSOR names. */
int gz_load(char *err, size_t n);
/* The compressor gz_load found: "isal", "libdeflate" or "zlib"; NULL
 * before it. */
const char *gz_compressor(void);
/* A stream to fd (not closed) at the compressor's `level` (1 fastest).
 * NULL when out of memory or when no compressor loads. */
gz_out *gz_open(int fd, int level);
/* Appends n bytes. */
void gz_write(gz_out *g, const void *data, size_t n);
/* Writes what is gathered and the end of the stream: 0, or the first
 * error (an errno value). */
int gz_finish(gz_out *g);
/* The first error so far, or 0. */
int gz_error(const gz_out *g);
/* Bytes written to fd so far. */
uint64_t gz_written(const gz_out *g);
void gz_free(gz_out *g);

#endif
