/* A gzip stream: ISA-L's or zlib's one stream, or libdeflate's members
 * (gzip_out.h). */
#include "gzip_out.h"

#include "base/dlbind.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#if defined(__has_include)
#if __has_include(<isa-l/igzip_lib.h>)
#include <isa-l/igzip_lib.h>
#define GZ_HAVE_ISAL 1
#endif
#endif

/* ---- the compressors, opened once ---- */

/* libdeflate's functions, declared here so that building needs no header
 * of it: its compressor is an opaque pointer. */
static struct {
  void *(*alloc_compressor)(int level);
  size_t (*gzip_compress)(void *c, const void *in, size_t n, void *out, size_t avail);
  size_t (*gzip_compress_bound)(void *c, size_t n);
  void (*free_compressor)(void *c);
} ld;

#ifdef GZ_HAVE_ISAL
/* ISA-L's igzip, laid out by its header: its stream is a struct of the
 * soname's ABI (libisal.so.2). */
static struct {
  void (*deflate_init)(struct isal_zstream *);
  int (*deflate)(struct isal_zstream *);
} isal;
#endif

static struct {
  int (*deflate_init2_)(z_streamp, int, int, int, int, int, const char *, int);
  int (*deflate)(z_streamp, int);
  int (*deflate_end)(z_streamp);
} zl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *chosen; /* "isal", "libdeflate", "zlib", or NULL: none loads */
static char failure[1800];

/* Binds the compressor `name`: 0, or -1 with why. */
static int bind_one(const char *name, char *why, size_t n) {
  if (strcmp(name, "isal") == 0) {
#ifdef GZ_HAVE_ISAL
    const mt_dl_fn fns[] = {{"isal_deflate_init", &isal.deflate_init},
                            {"isal_deflate", &isal.deflate}};
    return mt_dl_bind("libisal.so.2", fns, sizeof fns / sizeof *fns, "", "not an ISA-L", why, n);
#else
    snprintf(why, n, "built without ISA-L's header (Debian/Ubuntu: libisal-dev)");
    return -1;
#endif
  }
  if (strcmp(name, "libdeflate") == 0) {
    const mt_dl_fn fns[] = {{"libdeflate_alloc_compressor", &ld.alloc_compressor},
                            {"libdeflate_gzip_compress", &ld.gzip_compress},
                            {"libdeflate_gzip_compress_bound", &ld.gzip_compress_bound},
                            {"libdeflate_free_compressor", &ld.free_compressor}};
    return mt_dl_bind("libdeflate.so.0", fns, sizeof fns / sizeof *fns, "", "not a libdeflate", why,
                      n);
  }
  const mt_dl_fn fns[] = {{"deflateInit2_", &zl.deflate_init2_},
                          {"deflate", &zl.deflate},
                          {"deflateEnd", &zl.deflate_end}};
  return mt_dl_bind("libz.so.1", fns, sizeof fns / sizeof *fns, "", "not a zlib", why, n);
}

static void load(void) {
  /* The fastest first; MEMTRACE_COMPRESSOR names the one to use (the
   * tests compare them). */
  static const char *const names[] = {"isal", "libdeflate", "zlib"};
  const char *want = getenv("MEMTRACE_COMPRESSOR");
  if (want && *want) {
    size_t k = 0;
    while (k < 3 && strcmp(want, names[k]) != 0) k++;
    char why[480];
    if (k == 3)
      snprintf(failure, sizeof failure,
               "MEMTRACE_COMPRESSOR=%.64s: not a compressor (isal, libdeflate or zlib)", want);
    else if (bind_one(names[k], why, sizeof why) == 0)
      chosen = names[k];
    else
      snprintf(failure, sizeof failure, "MEMTRACE_COMPRESSOR=%.64s, which does not load: %s", want,
               why);
    return;
  }
  char why[3][480];
  for (size_t k = 0; k < 3; k++)
    if (bind_one(names[k], why[k], sizeof why[k]) == 0) {
      chosen = names[k];
      return;
    }
  snprintf(failure, sizeof failure,
           "pprof profiles are gzip-compressed, with ISA-L, libdeflate or zlib, and none loads "
           "(%s; %s; %s): install one (Debian/Ubuntu: apt-get install libisal2 libdeflate0 "
           "zlib1g)",
           why[0], why[1], why[2]);
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
#ifdef GZ_HAVE_ISAL
  struct isal_zstream *is; /* ISA-L's stream, or NULL */
  uint8_t *is_level;       /* its level's buffer */
#endif
  void *ld; /* libdeflate's compressor, or NULL */
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

#ifdef GZ_HAVE_ISAL
/* ISA-L: n bytes through isal_deflate (the last call with end_of_stream
 * set), writing what comes out. */
static void isal_bytes(gz_out *g, const uint8_t *data, size_t n, int end) {
  struct isal_zstream *z = g->is;
  z->next_in = (uint8_t *)data;
  z->avail_in = (uint32_t)n; /* at most GZ_CHUNK */
  z->end_of_stream = (uint16_t)end;
  while (!g->err) {
    z->next_out = g->out;
    z->avail_out = (uint32_t)g->out_cap;
    if (isal.deflate(z) != COMP_OK) {
      fail(g, EIO);
      return;
    }
    write_all(g, g->out, g->out_cap - z->avail_out);
    if (end ? z->internal_state.state == ZSTATE_END : z->avail_in == 0 && z->avail_out != 0)
      return;
  }
}

/* An ISA-L stream at `level` (its 1 to 3; the caller's fastest, 1, is its
 * 1): 0, or -1. */
static int isal_open(gz_out *g, int level) {
  int lv = level <= 1 ? 1 : level <= 5 ? 2 : 3;
  static const uint32_t level_size[4] = {0, ISAL_DEF_LVL1_DEFAULT, ISAL_DEF_LVL2_DEFAULT,
                                         ISAL_DEF_LVL3_DEFAULT};
  g->out_cap = 64 * 1024;
  g->out = malloc(g->out_cap);
  g->is = malloc(sizeof *g->is);
  g->is_level = malloc(level_size[lv]);
  if (!g->out || !g->is || !g->is_level) return -1;
  isal.deflate_init(g->is);
  g->is->level = (uint32_t)lv;
  g->is->level_buf = g->is_level;
  g->is->level_buf_size = level_size[lv];
  g->is->gzip_flag = IGZIP_GZIP;
  g->is->flush = NO_FLUSH;
  return 0;
}
#endif

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
#ifdef GZ_HAVE_ISAL
  if (strcmp(chosen, "isal") == 0) {
    if (isal_open(g, level)) goto fail;
    return g;
  }
#endif
  if (strcmp(chosen, "libdeflate") == 0) {
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

/* A streaming compressor (ISA-L's or zlib's, not libdeflate's): n bytes
 * (at most GZ_CHUNK) through it, the last call with `end` set. */
static void stream_bytes(gz_out *g, const uint8_t *data, size_t n, int end) {
#ifdef GZ_HAVE_ISAL
  if (g->is) {
    isal_bytes(g, data, n, end);
    return;
  }
#endif
  deflate_bytes(g, data, n, end ? Z_FINISH : Z_NO_FLUSH);
}

void gz_write(gz_out *g, const void *data, size_t n) {
  const uint8_t *d = data;
  if (!g->ld) {
    for (size_t piece; n && !g->err; d += piece, n -= piece) {
      piece = n < GZ_CHUNK ? n : GZ_CHUNK;
      stream_bytes(g, d, piece, 0);
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
    stream_bytes(g, NULL, 0, 1);
  }
  return g->err;
}

int gz_error(const gz_out *g) { return g->err; }

uint64_t gz_written(const gz_out *g) { return g->written; }

void gz_free(gz_out *g) {
  if (!g) return;
  if (g->ld) ld.free_compressor(g->ld);
  if (g->z_live) zl.deflate_end(&g->z);
#ifdef GZ_HAVE_ISAL
  free(g->is);
  free(g->is_level);
#endif
  free(g->in);
  free(g->out);
  free(g);
}
