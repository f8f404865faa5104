/* Trace destinations: a file path (%p = pid), tcp:HOST:PORT (connect to a
 * listener) or listen:[HOST:]PORT (serve one client at a time). */
#ifndef MT_TRACER_DEST_H
#define MT_TRACER_DEST_H

#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef enum { MT__DEST_FILE, MT__DEST_TCP, MT__DEST_LISTEN } mt__dest_kind;

typedef struct mt__dest {
  mt__dest_kind kind;
  char path[PATH_MAX]; /* FILE: as given (anchored), %p unexpanded
                          (mt__trace_path_expand, trace_file.h) */
  char host[256];      /* TCP, LISTEN (default 127.0.0.1) */
  char port[16];
  int per_process;     /* FILE: the path has %p */
} mt__dest;

/* s into out (n bytes), a relative file path made absolute against the
 * working directory now: a process that changes directory, or its child,
 * still writes where the path meant when tracing started (a forked child
 * opens its %p file at its first sample; `memtrace run -o 'b.%p.ctf' --
 * make -C src` execs programs in other directories). Sockets, absolute
 * paths, and a path too long to anchor are copied as they are. out may be
 * s. */
void mt__dest_anchor(const char *s, char *out, size_t n);
/* Parses `s` (a file path anchored as by mt__dest_anchor); on failure
 * returns -1 with a message in err. */
int mt__dest_parse(const char *s, mt__dest *d, char *err, size_t errlen);
/* Opens the file, connects (timeout 5 s) or listens; returns an fd, or -1
 * with a message. A file is emptied and locked (flock) for as long as the
 * fd is open: a file another process holds so is refused. */
int mt__dest_open(const mt__dest *d, char *err, size_t errlen);
/* A trace's socket gives up on a peer that reads nothing for this long
 * (SO_SNDTIMEO): a stopped or unreachable listener made every sampling
 * thread wait in send, under the tracer's lock, for ever (or for TCP's
 * retransmissions, a quarter of an hour). The write then fails with
 * ETIMEDOUT, and tracing stops with its message. */
#define MT__SEND_TIMEOUT_S 10
void mt__dest_send_timeout(int fd);
/* What fd writes to, for mt__dest_write: asked once per descriptor, not
 * at every write (a failed send per packet cost a system call). */
enum { MT__SINK_FILE, MT__SINK_PIPE, MT__SINK_SOCKET, MT__SINK_OTHER };
int mt__dest_sink_kind(int fd);
/* The profiler's descriptors and the program's. A program may close every
 * descriptor it did not open (daemons do, before or after forking), or
 * dup2 onto any number: the number of the trace's descriptor may then name
 * one of the program's files. So the trace's descriptor is moved above
 * the numbers a program's own opens take (its first open still returns 3,
 * as without the profiler), and before each write, and before closing it,
 * the tracer checks that the number still names the file it opened. */
typedef struct mt__fd_id {
  dev_t dev;
  ino_t ino;
} mt__fd_id;
/* fd moved to a high number (512, or half the descriptor limit if that is
 * lower), close-on-exec; fd itself if it cannot be moved. */
int mt__dest_park(int fd);
/* A descriptor of the profiler's own: fd parked, and what it names
 * recorded in id (zeros if fstat fails: then no number ever matches, and
 * nothing is written to or closed at it). Returns the descriptor to use. */
int mt__dest_adopt(int fd, mt__fd_id *id);
/* Whether fd still names the file recorded in id. */
int mt__dest_same(int fd, const mt__fd_id *id);
/* Closes fd if it still names that file (else it is the program's now). */
void mt__dest_close(int fd, const mt__fd_id *id);
/* Writes all of buf to fd, of that kind (mt__dest_sink_kind), never
 * raising a signal at the program: to a socket with send and MSG_NOSIGNAL
 * (and its send timeout), to a pipe with SIGPIPE held back, to a regular
 * file only within RLIMIT_FSIZE (else -EFBIG, nothing written, no
 * SIGXFSZ). Returns 0 or -errno. */
int mt__dest_write(int fd, int kind, const void *buf, size_t len);

#endif
