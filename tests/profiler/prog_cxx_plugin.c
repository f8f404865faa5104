/* Opens a C++ library with RTLD_LOCAL (argv[1]) and runs it: its sites must
 * be the library's own code, demangled, without operator new's frames. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  ((void (*)(void))dlsym(h, "plugin_work"))();
  puts("plugin done");
  return 0;
}
