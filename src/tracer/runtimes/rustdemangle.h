/* Rust's symbol names made readable for the trace's locations
 * (rustdemangle.c): mangling v0 ("_R...", that of rustc's recent standard
 * libraries, and of any crate built with -C symbol-mangling-version=v0),
 * and the older scheme, still the default for other crates: C++'s form
 * with escapes, ending in a hash ("_ZN...17h<16 hex digits>E"). */
#ifndef MT_TRACER_RUSTDEMANGLE_H
#define MT_TRACER_RUSTDEMANGLE_H

#include <stddef.h>

/* Writes the readable form of the Rust symbol `sym` into out (cap bytes,
 * NUL-terminated), as rustc's own short form has it: paths as Rust writes
 * them, generic arguments, impls as <Type as Trait>, closures as
 * {closure#N}; without crate disambiguators and hashes (which tell two
 * versions of a crate or item apart): "std::rt::lang_start_internal::
 * {closure#0}". A vendor suffix (".llvm.123") is dropped.
 *
 * Returns the length written, or -1: not a Rust name (a C++ name among
 * them: it has no hash last), malformed, a form it does not print
 * (Punycode identifiers, structured constants, a v0 encoding version other
 * than 0), nested beyond its bound, or longer than cap. The caller then
 * keeps the symbol as it is, or gives it to the C++ demangler. Input is untrusted (any binary's
 * symbol table): every read is bounded, every back-reference points
 * strictly backwards, recursion is bounded, and time is linear in the
 * name's length (back-references add a fixed bound). The answer does not
 * depend on cap except for "longer than cap": a name read into n + 1
 * bytes reads the same into any more.
 * No allocation, no global state: safe from any thread. */
long mt__rust_demangle(const char *sym, char *out, size_t cap);

#endif
