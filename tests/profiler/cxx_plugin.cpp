// A C++ library that a C program opens with RTLD_LOCAL (as Python opens its
// extension modules): the C++ runtime comes with it, after tracing started.
namespace plugin {
__attribute__((noinline)) long *site(int n) { return new long[n]; }
}  // namespace plugin
extern "C" void plugin_work(void) {
  for (int i = 0; i < 300; i++) delete[] plugin::site(100);
}
