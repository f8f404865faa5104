/* A gzip stream: libdeflate's members, or zlib's one stream (gzip_out.h). */
#include "gzip_out.h"

#include "base/dlbind.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- the compressors, opened once ---- */

/* libdeflate's functions, declared here so that building needs no header
 * of it: its compressor is an opaque pointer. */
static struct {
  void *(*alloc_compressor)(int level);
  size_t (*gzip_compress)(void *c, const void *in, size_t n, void *out, size_t avail);
  size_t (*gzip_compress_bound)(void *c, size_t n);
  void (*free_compressor)(void *c);
} ld;

static struct {
  int (*deflate_init2_)(z_streamp, int, int, int, int, int, const char *, int);
  int (*deflate)(z_streamp, int);
  int (*deflate_end)(z_streamp);
} zl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *chosen; /* "libdeflate", "zlib", or NULL: neither loads */
static char failure[1280];

static void load(void) {
  /* MEMTRACE_COMPRESSOR=zlib: zlib even where libdeflate is (its tests) */
  const char *want = getenv("MEMTRACE_COMPRESSOR");
  int zlib_only = want && strcmp(want, "zlib") == 0;
  char why_ld[480] = "not wanted (MEMTRACE_COMPRESSOR=zlib)";
  const mt_dl_fn lfns[] = {{"libdeflate_alloc_compressor", &ld.alloc_compressor},
                           {"libdeflate_gzip_compress", &ld.gzip_compress},
                           {"libdeflate_gzip_compress_bound", &ld.gzip_compress_bound},
                           {"libdeflate_free_compressor", &ld.free_compressor}};
  if (!zlib_only && mt_dl_bind("libdeflate.so.0", lfns, sizeof lfns / sizeof *lfns, "", "not a libdeflate",
                 why_ld, sizeof why_ld) == 0) {
    chosen = "libdeflate";
    return;
  }
  char why_zl[480];
  const mt_dl_fn zfns[] = {{"deflateInit2_", &zl.deflate_init2_},
                           {"deflate", &zl.deflate},
                           {"deflateEnd", &zl.deflate_end}};
  if (mt_dl_bind("libz.so.1", zfns, sizeof zfns / sizeof *zfns, "", "not a zlib", why_zl,
                 sizeof why_zl) == 0) {
    chosen = "zlib";
    return;
  }
  snprintf(failure, sizeof failure,
           "pprof profiles are gzip-compressed, with libdeflate or zlib, and neither loads "
           "(%s; %s): install one (Debian/Ubuntu: apt-get install libdeflate0 zlib1g)",
           why_ld, why_zl);
}

int gz_load(char *err, size_t n) {
  pthread_once(&once, load);
  if (chosen) return 0;
  snprintf(err, n, "%s", failure);
  return -1;
}

const char *gz_compressor(void) { return chosen; }

/* ---- the stream ---- */

struct gz_out {
  int fd, err;
  uint64_t written;
  void *ld; /* libdeflate's compressor; NULL with zlib */
  uint8_t *in;
  size_t in_len;   /* bytes gathered in `in` (libdeflate: GZ_CHUNK of room) */
  uint8_t *out;    /* compressed bytes: a member's bound, or zlib's window */
  size_t out_cap;
  z_stream z;
  int z_live;
};

static void fail(gz_out *g, int err) {
  if (!g->err) g->err = err;
}

static void write_all(gz_out *g, const uint8_t *buf, size_t n) {
  while (n && !g->err) {
    ssize_t w = write(g->fd, buf, n);
    if (w < 0) {
      if (errno != EINTR) fail(g, errno);
      continue;
    }
    buf += w;
    n -= (size_t)w;
    g->written += (uint64_t)w;
  }
}

/* libdeflate: n bytes (at most GZ_CHUNK) as one member. */
static void member(gz_out *g, const uint8_t *data, size_t n) {
  if (g->err || n == 0) return;
  size_t got = ld.gzip_compress(g->ld, data, n, g->out, g->out_cap);
  if (got == 0) { /* cannot happen with the bound's room */
    fail(g, EIO);
    return;
  }
  write_all(g, g->out, got);
}

/* zlib: n bytes through deflate with `flush`, writing what comes out. */
static void deflate_bytes(gz_out *g, const uint8_t *data, size_t n, int flush) {
  g->z.next_in = (Bytef *)data;
  g->z.avail_in = (uInt)n; /* at most GZ_CHUNK */
  while (!g->err) {
    g->z.next_out = g->out;
    g->z.avail_out = (uInt)g->out_cap;
    int rc = zl.deflate(&g->z, flush);
    if (rc == Z_STREAM_ERROR) {
      fail(g, EIO);
      return;
    }
    write_all(g, g->out, g->out_cap - g->z.avail_out);
    if (flush == Z_FINISH ? rc == Z_STREAM_END : g->z.avail_out != 0) return;
  }
}

gz_out *gz_open(int fd, int level) {
  pthread_once(&once, load);
  if (!chosen) return NULL;
  gz_out *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->fd = fd;
  if (ld.alloc_compressor) {
    g->ld = ld.alloc_compressor(level);
    g->in = malloc(GZ_CHUNK);
    g->out_cap = g->ld ? ld.gzip_compress_bound(g->ld, GZ_CHUNK) : 0;
    g->out = g->out_cap ? malloc(g->out_cap) : NULL;
    if (!g->ld || !g->in || !g->out) goto fail;
    return g;
  }
  g->out_cap = 64 * 1024;
  g->out = malloc(g->out_cap);
  /* windowBits 15 + 16: a gzip header and trailer rather than zlib's. */
  if (!g->out || zl.deflate_init2_(&g->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, (int)sizeof(z_stream)) != Z_OK)
    goto fail;
  g->z_live = 1;
  return g;
fail:
  gz_free(g);
  return NULL;
}

void gz_write(gz_out *g, const void *data, size_t n) {
  const uint8_t *d = data;
  if (!g->ld) {
    for (size_t piece; n && !g->err; d += piece, n -= piece) {
      piece = n < GZ_CHUNK ? n : GZ_CHUNK;
      deflate_bytes(g, d, piece, Z_NO_FLUSH);
    }
    return;
  }
  while (n && !g->err) {
    if (g->in_len == 0 && n >= GZ_CHUNK) { /* a whole chunk: no copy */
      member(g, d, GZ_CHUNK);
      d += GZ_CHUNK;
      n -= GZ_CHUNK;
      continue;
    }
    size_t k = GZ_CHUNK - g->in_len < n ? GZ_CHUNK - g->in_len : n;
    memcpy(g->in + g->in_len, d, k);
    g->in_len += k;
    d += k;
    n -= k;
    if (g->in_len == GZ_CHUNK) {
      member(g, g->in, g->in_len);
      g->in_len = 0;
    }
  }
}

int gz_finish(gz_out *g) {
  if (g->ld) {
    /* an empty stream is still one (empty) member: a gzip file */
    if (g->in_len || g->written == 0) {
      size_t got = ld.gzip_compress(g->ld, g->in, g->in_len, g->out, g->out_cap);
      if (got == 0) fail(g, EIO);
      else write_all(g, g->out, got);
    }
    g->in_len = 0;
  } else if (!g->err) {
    deflate_bytes(g, NULL, 0, Z_FINISH);
  }
  return g->err;
}

int gz_error(const gz_out *g) { return g->err; }

uint64_t gz_written(const gz_out *g) { return g->written; }

void gz_free(gz_out *g) {
  if (!g) return;
  if (g->ld) ld.free_compressor(g->ld);
  if (g->z_live) zl.deflate_end(&g->z);
  free(g->in);
  free(g->out);
  free(g);
}
