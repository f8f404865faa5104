/* The interposer loaded late into a running process by `memtrace attach`
 * (src/cli/attach), which calls these functions there through ptrace.
 *
 * Loaded with dlopen, the library binds nothing: every call of the
 * program's is already bound to the allocator it had. mt__attach_begin
 * prepares the redirection of that allocator's functions to this
 * library's wrappers (preload_redirect.c), as for an allocator linked into
 * a program, starts tracing, and lists the PLT slots that can reach the
 * wrappers straight (plt_slots.c); the attacher then writes the jumps over
 * the functions' first bytes, and the slots, with every thread stopped.
 * mt__attach_end stops tracing. The jumps and slots stay: sampled blocks
 * live on in the program, and their frees must still find their headers;
 * with tracing stopped the wrappers only forward. A later attach starts
 * tracing again over the same jumps, and binds the slots of objects
 * loaded since. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace/format.h"
#include "memtrace/tracer.h"
#include "preload.h"
#include "tracer/interposer.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT mt__attach_args mt__attach_area;

static int fail(mt__attach_args *a, int status, const char *why) {
  a->status = status;
  snprintf(a->error, sizeof a->error, "%s", why);
  return status;
}

EXPORT int mt__attach_begin(void) {
  mt__attach_args *a = &mt__attach_area;
  a->jumps.n = 0;
  a->slots.n = 0;
  a->error[0] = 0;
  if (a->version != MT__ATTACH_VERSION)
    return fail(a, MT_ERR_INVALID, "the attacher and the library are of different builds");
  if (mt_trace_is_tracing())
    return fail(a, MT_ERR_INVALID, "it is being traced by memtrace already");
  if (mt__loaded_late()) {
    const char *why = mt__redirect_plan(&a->jumps);
    if (why) {
      static char text[256];
      snprintf(text, sizeof text, "its allocator cannot be redirected: %s", why);
      return fail(a, MT_ERR_INVALID, text);
    }
    static char settings[96];
    if (!settings[0]) {
      snprintf(settings, sizeof settings, "blocks=%s, jumps=%s, allocator=redirected, attached",
               mt__hdr_mode.on ? "header" : "header-off-page", mt__redirect_jumps());
      mt__tr_set_interposer(settings);
    }
  }
  a->destination[sizeof a->destination - 1] = a->context[sizeof a->context - 1] = 0;
  mt_trace_options o = {0};
  o.destination = a->destination;
  o.rate = a->rate[0] ? strtod(a->rate, NULL) : 0;
  o.context = a->context[0] ? a->context : NULL;
  o.unwind = strcmp(a->unwind, "fp") == 0 ? MT_UNWIND_FRAME_POINTERS
             : strcmp(a->unwind, "libunwind") == 0 ? MT_UNWIND_LIBUNWIND
                                                  : MT_UNWIND_AUTO;
  o.max_depth = a->depth[0] ? (size_t)strtoul(a->depth, NULL, 10) : 0;
  o.format_version = a->format[0] ? a->format[0] - '0' : 0;
  int rc = mt_trace_start(&o);
  if (rc != MT_OK) return fail(a, rc, mt_trace_error());
  /* listed after the start: a slot the loader binds meanwhile is listed
   * too, or left to the jump */
  if (a->jumps.n) mt__redirect_slots(&a->slots);
  a->status = 0;
  return 0;
}

EXPORT int mt__attach_end(void) {
  mt__attach_args *a = &mt__attach_area;
  int rc = mt_trace_is_tracing() ? mt_trace_stop() : MT_OK;
  a->status = rc;
  snprintf(a->error, sizeof a->error, "%s", rc == MT_OK ? "" : mt_trace_error());
  return rc;
}
