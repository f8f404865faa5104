/* libmicrohttpd, loaded when `memtrace view` starts its server rather than
 * linked into the memtrace executable: see mhd_load.c for why. The types and
 * constants still come from <microhttpd.h>; the functions the server calls
 * are reached through mt_mhd. */
#ifndef MT_VIEWER_MHD_LOAD_H
#define MT_VIEWER_MHD_LOAD_H

#include <microhttpd.h>

/* The soname loaded: the ABI <microhttpd.h> describes (Debian: libmicrohttpd12). */
#define MT_MHD_SONAME "libmicrohttpd.so.12"

typedef struct mt_mhd_api {
  __typeof__(MHD_start_daemon) *start_daemon;
  __typeof__(MHD_stop_daemon) *stop_daemon;
  __typeof__(MHD_queue_response) *queue_response;
  __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
  __typeof__(MHD_destroy_response) *destroy_response;
  __typeof__(MHD_add_response_header) *add_response_header;
  __typeof__(MHD_get_connection_values) *get_connection_values;
  __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
  __typeof__(MHD_get_connection_info) *get_connection_info;
} mt_mhd_api;

/* Valid after mt_mhd_load() returned 0. */
extern mt_mhd_api mt_mhd;

/* Loads the library and its functions (once; later calls return the first
 * result). 0, or -1 with a message naming the library and what to install
 * in err. */
int mt_mhd_load(char *err, size_t n);

#endif
