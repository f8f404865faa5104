/* Allocation sites named as Rust names them (asm labels give the symbols
 * Rust's manglings: v0, and the older scheme with its hash), so that the
 * profiler's Rust demangling is tested without a Rust compiler: with debug
 * info (DW_AT_linkage_name) and without (the symbol table). Two sites
 * call malloc through Rust's allocation layer (rustrt.h), which samples
 * leave out: inlined (alloc::alloc::alloc), and as functions of their own
 * (the shims __rustc::__rust_alloc and __rdl_alloc).
 * Usage: prog_rust_names. Prints each site's true count, bytes and live
 * blocks, as prog_sites does, under the names a Rust user reads. */
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 100

static void *check(void *p) {
  if (!p) {
    puts("ERROR allocation failed");
    exit(1);
  }
  return p;
}

/* mycrate::sites::make */
__attribute__((noinline)) void *v0_site(size_t n) __asm__("_RNvNtCs1a2b3c_7mycrate5sites4make");
__attribute__((noinline)) void *v0_site(size_t n) { return check(malloc(n)); }

/* <mycrate::sites::Pool as core::default::Default>::default */
__attribute__((noinline)) void *v0_impl(size_t n) __asm__(
    "_RNvXs_NtCs1a2b3c_7mycrate5sitesNtB4_4PoolNtNtCs9z8y7x_4core7default7Default7default");
__attribute__((noinline)) void *v0_impl(size_t n) { return check(malloc(n)); }

/* mycrate::sites::make_old (the hash is left out) */
__attribute__((noinline)) void *legacy_site(size_t n) __asm__(
    "_ZN7mycrate5sites8make_old17h0123456789abcdefE");
__attribute__((noinline)) void *legacy_site(size_t n) { return check(malloc(n)); }

/* alloc::alloc::alloc, inlined into its caller (external inline: its DWARF
 * keeps the linkage name) */
extern void *layer_inlined(size_t n) __asm__("_RNvNtCs4d5e6f_5alloc5alloc5alloc");
__attribute__((always_inline)) inline void *layer_inlined(size_t n) {
  void *p = malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

/* mycrate::sites::grow: its code calls malloc from the inlined layer */
__attribute__((noinline)) void *grow_site(size_t n) __asm__("_RNvNtCs1a2b3c_7mycrate5sites4grow");
__attribute__((noinline)) void *grow_site(size_t n) { return check(layer_inlined(n)); }

/* __rdl_alloc (its C name: the standard library's, unmangled in older
 * versions) and __rustc::__rust_alloc, functions of their own */
__attribute__((noinline)) void *__rdl_alloc(size_t n) {
  void *p = malloc(n);
  __asm__ volatile("" ::: "memory"); /* a call, not a jump: a frame of its own */
  return p;
}
__attribute__((noinline)) void *rust_alloc_shim(size_t n) __asm__("_RNvCs4d5e6f_7___rustc12___rust_alloc");
__attribute__((noinline)) void *rust_alloc_shim(size_t n) {
  void *p = __rdl_alloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

/* mycrate::sites::boxed */
__attribute__((noinline)) void *boxed_site(size_t n) __asm__("_RNvNtCs1a2b3c_7mycrate5sites5boxed");
__attribute__((noinline)) void *boxed_site(size_t n) { return check(rust_alloc_shim(n)); }

int main(void) {
  for (int i = 0; i < ROUNDS; i++) {
    free(v0_site(96));
    free(v0_impl(200));
    free(legacy_site(304));
    free(grow_site(48));
    free(boxed_site(64));
  }
  printf("mycrate::sites::make %d %d 0\n", ROUNDS, ROUNDS * 96);
  printf("<mycrate::sites::Pool as core::default::Default>::default %d %d 0\n", ROUNDS, ROUNDS * 200);
  printf("mycrate::sites::make_old %d %d 0\n", ROUNDS, ROUNDS * 304);
  printf("mycrate::sites::grow %d %d 0\n", ROUNDS, ROUNDS * 48);
  printf("mycrate::sites::boxed %d %d 0\n", ROUNDS, ROUNDS * 64);
  return 0;
}
