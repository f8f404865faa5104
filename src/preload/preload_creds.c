/* The interposer's wrappers of the calls that give up privileges: the
 * set*id family, setgroups and chroot. A forked child traced to its own
 * file (%p) opens that file at its first sample; a server's worker that
 * drops to an unprivileged user (nginx's, to nobody) before it allocates
 * could then no longer create it, and its trace was lost. So the trace
 * opens just before such a call, with the credentials the child was
 * started with (src/tracer/session.c). The calls themselves are the C
 * library's, unchanged. A change made by a raw system call is not seen. */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <sys/types.h>
#include <unistd.h>

#include "preload.h"
#include "tracer/interposer.h"

#define EXPORT __attribute__((visibility("default")))

static struct {
  int (*setuid)(uid_t);
  int (*seteuid)(uid_t);
  int (*setreuid)(uid_t, uid_t);
  int (*setresuid)(uid_t, uid_t, uid_t);
  int (*setgid)(gid_t);
  int (*setegid)(gid_t);
  int (*setregid)(gid_t, gid_t);
  int (*setresgid)(gid_t, gid_t, gid_t);
  int (*setgroups)(size_t, const gid_t *);
  int (*chroot)(const char *);
} real;

void mt__creds_resolve(void) {
  *(void **)&real.setuid = dlsym(RTLD_NEXT, "setuid");
  *(void **)&real.seteuid = dlsym(RTLD_NEXT, "seteuid");
  *(void **)&real.setreuid = dlsym(RTLD_NEXT, "setreuid");
  *(void **)&real.setresuid = dlsym(RTLD_NEXT, "setresuid");
  *(void **)&real.setgid = dlsym(RTLD_NEXT, "setgid");
  *(void **)&real.setegid = dlsym(RTLD_NEXT, "setegid");
  *(void **)&real.setregid = dlsym(RTLD_NEXT, "setregid");
  *(void **)&real.setresgid = dlsym(RTLD_NEXT, "setresgid");
  *(void **)&real.setgroups = dlsym(RTLD_NEXT, "setgroups");
  *(void **)&real.chroot = dlsym(RTLD_NEXT, "chroot");
}

/* The C library's `fn`, called after the trace is open; ENOSYS if the
 * library has none (never with glibc). */
#define CALL(fn, ...)                                \
  do {                                               \
    if (!real.fn) mt__creds_resolve();               \
    if (!real.fn) {                                  \
      errno = ENOSYS;                                \
      return -1;                                     \
    }                                                \
    mt__tr_before_credentials();                     \
    return real.fn(__VA_ARGS__);                     \
  } while (0)

EXPORT int setuid(uid_t u) { CALL(setuid, u); }
EXPORT int seteuid(uid_t u) { CALL(seteuid, u); }
EXPORT int setreuid(uid_t r, uid_t e) { CALL(setreuid, r, e); }
EXPORT int setresuid(uid_t r, uid_t e, uid_t s) { CALL(setresuid, r, e, s); }
EXPORT int setgid(gid_t g) { CALL(setgid, g); }
EXPORT int setegid(gid_t g) { CALL(setegid, g); }
EXPORT int setregid(gid_t r, gid_t e) { CALL(setregid, r, e); }
EXPORT int setresgid(gid_t r, gid_t e, gid_t s) { CALL(setresgid, r, e, s); }
EXPORT int setgroups(size_t n, const gid_t *list) { CALL(setgroups, n, list); }
EXPORT int chroot(const char *path) { CALL(chroot, path); }
