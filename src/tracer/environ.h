/* The tracer's reads and edits of the process environment (environ.c):
 * on `environ` itself, not through getenv/setenv/unsetenv, which the
 * program may define for itself (bash does). Not thread-safe: called when
 * tracing starts. */
#ifndef MT_TRACER_ENVIRON_H
#define MT_TRACER_ENVIRON_H

#include <stddef.h>

#define MT__ENV_HIDDEN __attribute__((visibility("hidden")))

/* Whether the environment entry `entry` ("NAME=value") is name's. */
MT__ENV_HIDDEN int mt__env_is(const char *entry, const char *name);
/* Whether the LD_PRELOAD value `value` names `entry`. */
MT__ENV_HIDDEN int mt__preload_has(const char *value, const char *entry);

/* The value of `name` in the environment, or NULL. */
MT__ENV_HIDDEN const char *mt__env_get(const char *name);

/* Takes MEMTRACE and this library's own LD_PRELOAD entries out of the
 * environment, so that exec'd children neither trace into the same
 * destination nor load the interposer for nothing; the other LD_PRELOAD
 * entries stay, in order. The first entry taken out is copied to `entry`
 * ("" if none). */
MT__ENV_HIDDEN void mt__env_drop_tracing(char *entry, size_t entry_size);

#endif
