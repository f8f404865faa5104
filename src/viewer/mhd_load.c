/* Why dlopen: linking libmicrohttpd into the memtrace executable brings in
 * gnutls, p11-kit, libtasn1, nettle, gmp, idn2... and every command paid for
 * loading them and for their constructors (gnutls parses ASN.1 at start-up),
 * several times what the command itself takes to start (docs/benchmarks.md,
 * "Loading libraries"). That fixed cost would land on every `memtrace run`,
 * which the profiler's overhead budget counts.
 * Only `memtrace view` needs HTTP, so only it loads the library. */
#include "mhd_load.h"

#include "base/dlbind.h"

#include <pthread.h>
#include <stdio.h>

mt_mhd_api mt_mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512]; /* empty once loaded */

static void load(void) {
  const mt_dl_fn fns[] = {
      {"MHD_start_daemon", &mt_mhd.start_daemon},
      {"MHD_stop_daemon", &mt_mhd.stop_daemon},
      {"MHD_queue_response", &mt_mhd.queue_response},
      {"MHD_create_response_from_buffer", &mt_mhd.create_response_from_buffer},
      {"MHD_destroy_response", &mt_mhd.destroy_response},
      {"MHD_add_response_header", &mt_mhd.add_response_header},
      {"MHD_get_connection_values", &mt_mhd.get_connection_values},
      {"MHD_lookup_connection_value", &mt_mhd.lookup_connection_value},
      {"MHD_get_connection_info", &mt_mhd.get_connection_info},
  };
  /* kept loaded on success: the server's threads run in it until exit */
  mt_dl_bind(MT_MHD_SONAME, fns, sizeof fns / sizeof *fns,
             "memtrace view needs GNU libmicrohttpd: install it (Debian/Ubuntu: apt-get install "
             "libmicrohttpd12)",
             "not the libmicrohttpd memtrace was built for; install libmicrohttpd12", failure,
             sizeof failure);
}

int mt_mhd_load(char *err, size_t n) {
  pthread_once(&once, load);
  if (!failure[0]) return 0;
  snprintf(err, n, "%s", failure);
  return -1;
}
