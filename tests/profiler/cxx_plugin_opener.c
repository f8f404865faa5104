/* A library whose constructor opens the C++ library named by
 * $MT_TEST_PLUGIN with RTLD_LOCAL. A program linked with it (prog_cxx_early)
 * has that C++ runtime loaded, out of the global scope, before the
 * interposer's constructor starts tracing: the loader runs this one first. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *plugin;

__attribute__((constructor)) static void open_plugin(void) {
  const char *path = getenv("MT_TEST_PLUGIN");
  if (path && !(plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL))) fprintf(stderr, "%s\n", dlerror());
}

void *mt_test_early_plugin(void) { return plugin; }
