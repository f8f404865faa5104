/* Runs the C++ library that cxx_plugin_opener's constructor opened, before
 * tracing started: its sites must be the library's own code, demangled,
 * without operator new's frames, as when it is opened later
 * (prog_cxx_plugin). */
#include <dlfcn.h>
#include <stdio.h>

void *mt_test_early_plugin(void);

int main(void) {
  void *h = mt_test_early_plugin();
  if (!h) return 1;
  ((void (*)(void))dlsym(h, "plugin_work"))();
  puts("plugin done");
  return 0;
}
