/* Rust's symbol names (rustdemangle.h). v0 read from its grammar (RFC
 * 2603, "Rust Symbol Name Mangling v0"): a recursive reader that prints as
 * it goes; a back-reference ("B" and a base-62 offset from after "_R")
 * re-reads an earlier part of the name in place. The older scheme at the
 * end of the file. */
#include "rustdemangle.h"

#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 200 /* nesting of paths and types */
/* Productions read past one per character of the name: what its
 * back-references may cost. A fixed number, not one drawn from the room
 * for the output (sixteen per byte of the largest caller's 4 KiB once
 * was), so that whether a name is read never depends on `cap`: a
 * name read at one size of buffer is read the same at any larger one. */
#define MAX_EXTRA_STEPS (16ul * 4096)

typedef struct rd {
  const char *s; /* the name after "_R" */
  size_t n, pos;
  char *out;
  size_t cap, len;
  int bad;             /* malformed, unsupported, or out of room */
  int depth;           /* recursion */
  unsigned long steps; /* bounds the work of back-references */
  unsigned lifetimes;  /* bound by the binders around */
  int quiet;           /* reading without printing (an impl's own path) */
} rd;

static int fail(rd *r) {
  r->bad = 1;
  return 0;
}

static void put(rd *r, const char *p, size_t k) {
  if (r->bad || r->quiet) return;
  if (k >= r->cap - r->len) {
    fail(r);
    return;
  }
  memcpy(r->out + r->len, p, k);
  r->len += k;
}

static void put_str(rd *r, const char *p) { put(r, p, strlen(p)); }

static void putu(rd *r, uint64_t v) {
  char b[24];
  int k = sizeof b;
  do b[--k] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  put(r, b + k, sizeof b - (size_t)k);
}

static int peek(const rd *r) { return r->pos < r->n ? (unsigned char)r->s[r->pos] : 0; }

static int eat(rd *r, char c) {
  if (peek(r) != c) return 0;
  r->pos++;
  return 1;
}

/* <base-62-number>: "_" is 0, digits then "_" are their value plus 1. */
static uint64_t base62(rd *r) {
  if (eat(r, '_')) return 0;
  uint64_t v = 0;
  for (;;) {
    int c = peek(r), d;
    if (c == '_') break;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'z') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'Z') d = c - 'A' + 36;
    else return fail(r);
    if (v > (UINT64_MAX - (uint64_t)d) / 62) return fail(r);
    v = v * 62 + (uint64_t)d;
    r->pos++;
  }
  r->pos++;
  if (v == UINT64_MAX) return fail(r);
  return v + 1;
}

/* [<disambiguator>] = ["s" <base-62-number>] */
static uint64_t disambiguator(rd *r) { return eat(r, 's') ? base62(r) + 1 : 0; }

static size_t decimal(rd *r) {
  int c = peek(r);
  if (c < '0' || c > '9') return fail(r);
  r->pos++;
  if (c == '0') return 0;
  size_t v = (size_t)(c - '0');
  while ((c = peek(r)) >= '0' && c <= '9') {
    if (v > (SIZE_MAX - 9) / 10) return fail(r);
    v = v * 10 + (size_t)(c - '0');
    r->pos++;
  }
  return v;
}

/* <undisambiguated-identifier>: its bytes, in place. */
static int ident(rd *r, const char **p, size_t *k) {
  if (peek(r) == 'u') return fail(r); /* Punycode: not printed */
  size_t len = decimal(r);
  if (r->bad) return 0;
  eat(r, '_'); /* separates digits in the name from the length */
  if (len > r->n - r->pos) return fail(r);
  *p = r->s + r->pos, *k = len;
  r->pos += len;
  return 1;
}

/* Work bound and nesting bound, checked at each production, and the end
 * of the name (every production reads at least one character, so a name
 * read once takes at most n steps; only back-references read more). */
static int enter(rd *r) {
  if (r->bad || ++r->depth > MAX_DEPTH || ++r->steps > r->n + MAX_EXTRA_STEPS || !peek(r))
    return fail(r);
  return 1;
}

/* Whether another element of a list ended by "E" follows (after the
 * first, `sep` is printed before it). */
static int next_item(rd *r, int i, const char *sep) {
  if (r->bad || eat(r, 'E')) return 0;
  if (r->pos >= r->n) return fail(r);
  if (i) put_str(r, sep);
  return 1;
}

static void leave(rd *r) { r->depth--; }

static void path(rd *r, int in_value);
static void type(rd *r);

/* After a "B": reads the <base-62-number> and goes there, strictly back
 * of the 'B'; *back is where to return. */
static int jump_back(rd *r, size_t *back) {
  size_t at = r->pos - 1; /* the 'B' */
  uint64_t to = base62(r);
  if (r->bad || to >= at) return fail(r);
  *back = r->pos;
  r->pos = (size_t)to;
  return 1;
}

/* "B" <base-62-number>: the reader jumps back and returns. */
static int backref(rd *r, void (*read)(rd *, int), int arg) {
  size_t back;
  if (!jump_back(r, &back)) return 0;
  if (!r->quiet) read(r, arg); /* nothing printed: no need to read it */
  r->pos = back;
  return 1;
}

static void path_arg(rd *r, int in_value) { path(r, in_value); }
static void type_arg(rd *r, int unused) {
  (void)unused;
  type(r);
}

/* A lifetime bound by an enclosing binder: 'a for the innermost... */
static void lifetime(rd *r, uint64_t i) {
  if (i == 0) {
    put_str(r, "'_");
    return;
  }
  if (i > r->lifetimes) {
    fail(r);
    return;
  }
  uint64_t depth = r->lifetimes - i;
  if (depth < 26) {
    char b[2] = {'\'', (char)('a' + depth)};
    put(r, b, 2);
  } else {
    put_str(r, "'_");
    putu(r, depth);
  }
}

/* [<binder>] = ["G" <base-62-number>]: "for<'a, 'b> " */
static unsigned binder(rd *r) {
  if (!eat(r, 'G')) return 0;
  uint64_t k = base62(r) + 1;
  if (r->bad || k > 64 || r->lifetimes + k > 1024) return (unsigned)fail(r);
  put_str(r, "for<");
  for (uint64_t i = 0; i < k; i++) {
    if (i) put_str(r, ", ");
    r->lifetimes++;
    lifetime(r, 1);
  }
  put_str(r, "> ");
  return (unsigned)k;
}

static const char *basic_type(int c) {
  switch (c) {
  case 'a': return "i8";
  case 'b': return "bool";
  case 'c': return "char";
  case 'd': return "f64";
  case 'e': return "str";
  case 'f': return "f32";
  case 'h': return "u8";
  case 'i': return "isize";
  case 'j': return "usize";
  case 'l': return "i32";
  case 'm': return "u32";
  case 'n': return "i128";
  case 'o': return "u128";
  case 's': return "i16";
  case 't': return "u16";
  case 'u': return "()";
  case 'v': return "...";
  case 'x': return "i64";
  case 'y': return "u64";
  case 'z': return "!";
  case 'p': return "_";
  default: return NULL;
  }
}

/* <const>: "p" (a placeholder), a back-reference, or a basic type and its
 * value as hex digits: printed as Rust writes the value. */
static void constant(rd *r, int unused) {
  (void)unused;
  if (!enter(r)) return;
  int c = peek(r);
  if (eat(r, 'p')) {
    put_str(r, "_");
  } else if (eat(r, 'B')) {
    backref(r, constant, 0);
  } else {
    r->pos++;
    int neg = 0;
    if (c && strchr("asilxn", c)) neg = eat(r, 'n'); /* signed */
    else if (!c || !strchr("hjmtyobc", c)) fail(r);     /* unsigned, bool, char */
    uint64_t v = 0;
    size_t digits = 0, from = r->pos;
    int d;
    while (!r->bad && (d = peek(r)) != '_') {
      if (d >= '0' && d <= '9') d -= '0';
      else if (d >= 'a' && d <= 'f') d -= 'a' - 10;
      else {
        fail(r);
        break;
      }
      digits++;
      v = v << 4 | (uint64_t)d;
      r->pos++;
    }
    if (!r->bad && !eat(r, '_')) fail(r);
    if (digits > 16) { /* beyond 64 bits: in hex, as written */
      if (c == 'b' || c == 'c') fail(r);
      if (neg) put_str(r, "-");
      put_str(r, "0x");
      put(r, r->s + from, digits);
      leave(r);
      return;
    }
    if (c == 'b') {
      if (v > 1) fail(r);
      put_str(r, v ? "true" : "false");
    } else if (c == 'c') {
      if (v < 0x20 || v > 0x7e || v == '\'' || v == '\\') fail(r); /* plain ASCII only */
      char b[3] = {'\'', (char)v, '\''};
      put(r, b, 3);
    } else {
      if (neg) put_str(r, "-");
      putu(r, v);
    }
  }
  leave(r);
}

/* {<generic-arg>} "E", after the "<" */
static void generic_args(rd *r) {
  for (int i = 0; next_item(r, i, ", "); i++) {
    if (eat(r, 'L')) lifetime(r, base62(r));
    else if (eat(r, 'K')) constant(r, 0);
    else type(r);
  }
}

/* A path with its generic arguments left open ("Trait<A"), so that a dyn
 * trait's associated types can go in: returns 1 if "<" is open. */
static int path_open(rd *r) {
  if (!enter(r)) return 0;
  int open = 0;
  if (eat(r, 'I')) {
    path(r, 0);
    put_str(r, "<");
    generic_args(r);
    open = 1;
  } else if (eat(r, 'B')) {
    size_t back;
    if (jump_back(r, &back)) {
      open = path_open(r);
      r->pos = back;
    }
  } else {
    path(r, 0);
  }
  leave(r);
  return open;
}

/* <dyn-bounds> = [<binder>] {<dyn-trait>} "E", each trait a path and its
 * bindings ("p" <undisambiguated-identifier> <type>). */
static void dyn_bounds(rd *r) {
  unsigned bound = binder(r);
  for (int i = 0; next_item(r, i, " + "); i++) {
    int open = path_open(r);
    while (!r->bad && eat(r, 'p')) {
      const char *p;
      size_t k;
      if (!ident(r, &p, &k)) break;
      put_str(r, open ? ", " : "<");
      open = 1;
      put(r, p, k);
      put_str(r, " = ");
      type(r);
    }
    if (open) put_str(r, ">");
  }
  r->lifetimes -= bound;
}

/* <fn-sig> = [<binder>] ["U"] ["K" <abi>] {<type>} "E" <type> */
static void fn_sig(rd *r) {
  unsigned bound = binder(r);
  if (eat(r, 'U')) put_str(r, "unsafe ");
  if (eat(r, 'K')) {
    put_str(r, "extern \"");
    if (eat(r, 'C')) {
      put_str(r, "C");
    } else {
      const char *p;
      size_t k;
      if (ident(r, &p, &k)) /* '_' stands for '-' in an ABI's name */
        for (size_t i = 0; i < k; i++) put(r, p[i] == '_' ? "-" : p + i, 1);
    }
    put_str(r, "\" ");
  }
  put_str(r, "fn(");
  for (int i = 0; next_item(r, i, ", "); i++) type(r);
  put_str(r, ")");
  if (eat(r, 'u')) { /* returns (): nothing shown */
  } else {
    put_str(r, " -> ");
    type(r);
  }
  r->lifetimes -= bound;
}

static void type(rd *r) {
  if (!enter(r)) return;
  int c = peek(r);
  const char *basic = basic_type(c);
  if (basic) {
    r->pos++;
    put_str(r, basic);
    leave(r);
    return;
  }
  r->pos++;
  switch (c) {
  case 'A':
  case 'S':
    put_str(r, "[");
    type(r);
    if (c == 'A') {
      put_str(r, "; ");
      constant(r, 0);
    }
    put_str(r, "]");
    break;
  case 'T': {
    put_str(r, "(");
    int i = 0;
    for (; next_item(r, i, ", "); i++) type(r);
    put_str(r, i == 1 ? ",)" : ")");
    break;
  }
  case 'R':
  case 'Q':
    put_str(r, "&");
    if (eat(r, 'L')) {
      uint64_t l = base62(r);
      if (l) {
        lifetime(r, l);
        put_str(r, " ");
      }
    }
    if (c == 'Q') put_str(r, "mut ");
    type(r);
    break;
  case 'P':
    put_str(r, "*const ");
    type(r);
    break;
  case 'O':
    put_str(r, "*mut ");
    type(r);
    break;
  case 'F':
    fn_sig(r);
    break;
  case 'D':
    put_str(r, "dyn ");
    dyn_bounds(r);
    if (!eat(r, 'L')) {
      fail(r);
      break;
    }
    uint64_t l = base62(r);
    if (l) {
      put_str(r, " + ");
      lifetime(r, l);
    }
    break;
  case 'B':
    backref(r, type_arg, 0);
    break;
  default: /* a path, in a type's place */
    r->pos--;
    path(r, 0);
  }
  leave(r);
}

/* <path>; in_value: generic arguments written "::<...>" (a value's path),
 * else "<...>" (a type's). */
static void path(rd *r, int in_value) {
  if (!enter(r)) return;
  int c = peek(r);
  r->pos++;
  switch (c) {
  case 'C': { /* the crate's root: its name, without its disambiguator */
    const char *p;
    size_t k;
    disambiguator(r);
    if (ident(r, &p, &k)) put(r, p, k);
    break;
  }
  case 'N': {
    int ns = peek(r);
    if (!((ns >= 'a' && ns <= 'z') || (ns >= 'A' && ns <= 'Z'))) {
      fail(r);
      break;
    }
    r->pos++;
    path(r, in_value);
    uint64_t dis = disambiguator(r);
    const char *p;
    size_t k;
    if (!ident(r, &p, &k)) break;
    if (ns >= 'a' && ns <= 'z') { /* a name of the source */
      if (k) {
        put_str(r, "::");
        put(r, p, k);
      }
    } else { /* something the compiler made: a closure, a shim */
      put_str(r, "::{");
      if (ns == 'C') put_str(r, "closure");
      else if (ns == 'S') put_str(r, "shim");
      else put(r, &(char){(char)ns}, 1);
      if (k) {
        put_str(r, ":");
        put(r, p, k);
      }
      put_str(r, "#");
      putu(r, dis);
      put_str(r, "}");
    }
    break;
  }
  case 'M': /* <Type>: an inherent impl; its own path is not printed */
  case 'X': /* <Type as Trait>: a trait's impl */
  case 'Y': /* <Type as Trait>: a trait's item */
    if (c != 'Y') {
      disambiguator(r);
      r->quiet++;
      path(r, 0);
      r->quiet--;
    }
    put_str(r, "<");
    type(r);
    if (c != 'M') {
      put_str(r, " as ");
      path(r, 0);
    }
    put_str(r, ">");
    break;
  case 'I':
    path(r, in_value);
    put_str(r, in_value ? "::<" : "<");
    generic_args(r);
    put_str(r, ">");
    break;
  case 'B':
    backref(r, path_arg, in_value);
    break;
  default:
    fail(r);
  }
  leave(r);
}

/* ---- the older scheme: "_ZN" {<length><bytes>} "E", C++'s form, its last
 * element "h" and 16 hex digits (a hash of the crate and the item); the
 * elements' characters outside [A-Za-z0-9_] escaped: "$LT$" for '<',
 * "$u7b$" for '{', ".." for "::" (of a path in <...>). */

static int is_hash(const char *p, size_t k) {
  if (k != 17 || p[0] != 'h') return 0;
  for (size_t i = 1; i < k; i++)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return 0;
  return 1;
}

/* One element's text, unescaped: 0 if an escape is not Rust's. */
static int legacy_element(rd *r, const char *p, size_t k) {
  static const struct {
    const char *esc;
    char c;
  } named[] = {{"SP", '@'}, {"BP", '*'}, {"RF", '&'}, {"LT", '<'}, {"GT", '>'},
               {"LP", '('}, {"RP", ')'}, {"C", ','}};
  size_t i = 0;
  if (k >= 2 && p[0] == '_' && p[1] == '$') i = 1; /* "_$": a leading escape */
  while (i < k && !r->bad) {
    if (p[i] == '.') {
      if (i + 1 < k && p[i + 1] == '.') {
        put_str(r, "::");
        i += 2;
      } else {
        put_str(r, ".");
        i++;
      }
      continue;
    }
    if (p[i] != '$') {
      put(r, p + i, 1);
      i++;
      continue;
    }
    size_t end = i + 1;
    while (end < k && p[end] != '$') end++;
    if (end >= k) return 0;
    const char *e = p + i + 1;
    size_t el = end - i - 1;
    char c = 0;
    for (size_t n = 0; n < sizeof named / sizeof *named; n++)
      if (strlen(named[n].esc) == el && memcmp(named[n].esc, e, el) == 0) c = named[n].c;
    if (!c && el >= 2 && el <= 3 && e[0] == 'u') { /* $uXX$: an ASCII character */
      unsigned v = 0;
      for (size_t n = 1; n < el; n++) {
        int d = e[n];
        if (d >= '0' && d <= '9') d -= '0';
        else if (d >= 'a' && d <= 'f') d -= 'a' - 10;
        else return 0;
        v = v << 4 | (unsigned)d;
      }
      if (v >= 0x20 && v < 0x7f) c = (char)v;
    }
    if (!c) return 0;
    put(r, &c, 1);
    i = end + 1;
  }
  return 1;
}

static long legacy(const char *sym, char *out, size_t cap) {
  rd r = {.s = sym + 3, .out = out, .cap = cap};
  r.n = strlen(r.s); /* '.' is in elements too: a vendor's suffix follows "E" */
  /* the elements: the last one must be the hash, then "E" ends the name */
  size_t at = 0, count = 0;
  const char *last = NULL;
  size_t last_k = 0;
  while (peek(&r) != 'E') {
    const char *p;
    size_t k;
    int c = peek(&r); /* 0 at the end: not a digit */
    if (c < '1' || c > '9') return -1;
    size_t len = decimal(&r);
    if (r.bad || len > r.n - r.pos) return -1;
    p = r.s + r.pos, k = len;
    r.pos += len;
    last = p, last_k = k, count++;
  }
  r.pos++;
  if (count < 2 || !is_hash(last, last_k) || (r.pos < r.n && r.s[r.pos] != '.')) return -1;
  r.pos = at;
  for (size_t i = 0; i + 1 < count; i++) {
    size_t len = decimal(&r);
    if (i) put_str(&r, "::");
    if (!legacy_element(&r, r.s + r.pos, len)) return -1;
    r.pos += len;
  }
  if (r.bad) return -1;
  out[r.len] = 0;
  return (long)r.len;
}

long mt__rust_demangle(const char *sym, char *out, size_t cap) {
  if (!sym || !out || cap == 0 || sym[0] != '_') return -1;
  if (sym[1] == 'Z' && sym[2] == 'N') return legacy(sym, out, cap);
  if (sym[1] != 'R') return -1;
  rd r = {.s = sym + 2, .out = out, .cap = cap};
  /* the name ends at a vendor's suffix ('.' or '$' and anything) */
  size_t n = 0;
  while (r.s[n] && r.s[n] != '.' && r.s[n] != '$') n++;
  r.n = n;
  int c = peek(&r);
  if (c >= '0' && c <= '9') return -1; /* an encoding version: none but 0 */
  path(&r, 1);
  if (!r.bad && r.pos < r.n) { /* the instantiating crate: not printed */
    r.quiet = 1;
    path(&r, 0);
  }
  if (r.bad || r.pos != r.n) return -1;
  out[r.len] = 0;
  return (long)r.len;
}
