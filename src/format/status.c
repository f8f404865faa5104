#include "memtrace/format.h"

const char *mt_status_name(int status) {
  switch (status) {
  case MT_OK: return "ok";
  case MT_ERR_IO: return "input/output error";
  case MT_ERR_CORRUPT: return "corrupt trace";
  case MT_ERR_VERSION: return "unsupported format version";
  case MT_ERR_NOMEM: return "out of memory";
  case MT_ERR_INVALID: return "invalid call";
  case MT_ERR_FORKED: return "process forked";
  case MT_ERR_CLOSED: return "writer stopped by an earlier error";
  default: return "unknown status";
  }
}

#ifndef MT_VERSION_STRING
#define MT_VERSION_STRING "0.0.0"
#endif
const char *mt_version(void) { return MT_VERSION_STRING; }
