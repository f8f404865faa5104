/* A gzip stream written to a file descriptor, for the pprof export.
 *
 * Two compressors, opened by the first stream rather than linked (every
 * other command, `memtrace run` among them, would pay to load them):
 * - libdeflate (libdeflate.so.0), when present: the bytes are gathered in
 *   chunks of GZ_CHUNK and each chunk is written as one gzip member. A
 *   file of several members is one gzip file (RFC 1952, section 2.2) that
 *   gzip, zcat, Go's compress/gzip (pprof, Pyroscope, Parca, Grafana) and
 *   Python's gzip read whole. libdeflate compresses a whole buffer at a
 *   time, about twice as fast as zlib at its fastest level, and a little
 *   smaller (docs/benchmarks.md, "The pprof export's compressor").
 * - zlib (libz.so.1) otherwise, or when the environment says
 *   MEMTRACE_COMPRESSOR=zlib: one member, streamed.
 *
 * Errors are sticky: after the first failure (a write error, out of
 * memory) every call does nothing, and gz_finish returns the error. */
#ifndef MT_CLI_GZIP_OUT_H
#define MT_CLI_GZIP_OUT_H

#include <stddef.h>
#include <stdint.h>

enum { GZ_CHUNK = 1 << 20 };

typedef struct gz_out gz_out;

/* Loads a compressor, once: 0, or -1 with why in err (n bytes) when
 * neither libdeflate nor zlib can be loaded. */
int gz_load(char *err, size_t n);
/* The compressor gz_load found: "libdeflate" or "zlib"; NULL before it. */
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
