// A C++ library that a C program opens with RTLD_LOCAL (as Python opens its
// extension modules): the C++ runtime comes with it, after tracing started.
// plugin_raw_work allocates with malloc only, as Java's libjvm does: no code
// of the C++ runtime is ever on a sampled stack.
#include <cstdlib>
namespace plugin {
__attribute__((noinline)) long *site(int n) { return new long[n]; }
__attribute__((noinline)) void *raw(int n) { return std::malloc(n); }
}  // namespace plugin
extern "C" void plugin_work(void) {
  for (int i = 0; i < 300; i++) delete[] plugin::site(100);
}
extern "C" void plugin_raw_work(void) {
  for (int i = 0; i < 2000; i++) std::free(plugin::raw(8000));
}
