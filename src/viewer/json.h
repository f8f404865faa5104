/* A small JSON writer into a growable buffer, for the viewer's answers.
 *
 * Strings are escaped (quotes, backslash, control characters) and invalid
 * UTF-8 becomes U+FFFD, so any name a trace holds gives valid JSON;
 * non-finite numbers are written as null. With `script_safe`, "</" is
 * written "<\/" so the text can sit inside an HTML <script> element.
 * An allocation failure sets `oom` and later writes do nothing: check it
 * once at the end. Commas are inserted automatically between values. */
#ifndef MT_VIEWER_JSON_H
#define MT_VIEWER_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef struct mt_json {
  char *buf;
  size_t len, cap;
  int oom;
  int script_safe;
  int need_comma; /* a value was written at this level */
  int after_key;  /* a key was just written: no comma before the value */
} mt_json;

void mt_json_init(mt_json *j);
void mt_json_free(mt_json *j);
/* Hands the text (NUL-terminated) to the caller; the writer is reset. */
char *mt_json_take(mt_json *j, size_t *len);

void mt_json_obj(mt_json *j);   /* { */
void mt_json_end_obj(mt_json *j);
void mt_json_arr(mt_json *j);   /* [ */
void mt_json_end_arr(mt_json *j);
void mt_json_key(mt_json *j, const char *key);
void mt_json_str(mt_json *j, const char *s);      /* NULL writes null */
void mt_json_strn(mt_json *j, const char *s, size_t n);
void mt_json_num(mt_json *j, double v);           /* %.17g trimmed; NaN/inf: null */
void mt_json_int(mt_json *j, int64_t v);
void mt_json_uint(mt_json *j, uint64_t v);
void mt_json_bool(mt_json *j, int v);
void mt_json_null(mt_json *j);
/* Inserts already-valid JSON text as one value. */
void mt_json_raw(mt_json *j, const char *text, size_t n);

#endif
