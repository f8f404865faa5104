// C++ allocations through operator new/delete (scalar, array, aligned,
// nothrow) and the standard containers. Sites are noinline functions.
#include <cstdio>
#include <new>
#include <string>
#include <vector>

struct alignas(64) Big { char data[256]; };

__attribute__((noinline)) int *site_new() { return new int[4]; }
__attribute__((noinline)) Big *site_aligned() { return new Big; }
__attribute__((noinline)) double *site_nothrow() { return new (std::nothrow) double[16]; }
__attribute__((noinline)) void site_vector(std::vector<long> &v) {
  v.reserve(512);
  asm volatile("" ::: "memory"); // no tail call: keep this frame on the stack
}

int main() {
  for (int i = 0; i < 1000; i++) { int *p = site_new(); p[0] = i; delete[] p; }
  for (int i = 0; i < 200; i++) { Big *b = site_aligned(); b->data[0] = 1; delete b; }
  for (int i = 0; i < 300; i++) { double *d = site_nothrow(); d[0] = 1; delete[] d; }
  for (int i = 0; i < 100; i++) { std::vector<long> v; site_vector(v); v.push_back(i); }
  std::printf("cxx done\n");
  return 0;
}
