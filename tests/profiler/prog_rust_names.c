/* Allocation sites named as Rust names them (asm labels give the symbols
 * Rust's manglings: v0, and the older scheme with its hash), so that the
 * profiler's Rust demangling is tested without a Rust compiler: with debug
 * info (DW_AT_linkage_name) and without (the symbol table).
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

int main(void) {
  for (int i = 0; i < ROUNDS; i++) {
    free(v0_site(96));
    free(v0_impl(200));
    free(legacy_site(304));
  }
  printf("mycrate::sites::make %d %d 0\n", ROUNDS, ROUNDS * 96);
  printf("<mycrate::sites::Pool as core::default::Default>::default %d %d 0\n", ROUNDS, ROUNDS * 200);
  printf("mycrate::sites::make_old %d %d 0\n", ROUNDS, ROUNDS * 304);
  return 0;
}
