/* Opens a C++ library with RTLD_LOCAL (argv[1]) and runs it: its sites must
 * be the library's own code, demangled, without operator new's frames.
 * With a second argument `raw`: its code that allocates with malloc only. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  const char *work = argc > 2 && strcmp(argv[2], "raw") == 0 ? "plugin_raw_work" : "plugin_work";
  ((void (*)(void))dlsym(h, work))();
  puts("plugin done");
  return 0;
}
