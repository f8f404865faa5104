/* Binding a library's functions by name (dlbind.h). */
#include "dlbind.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int mt_dl_bind(const char *soname, const mt_dl_fn *fns, size_t n, const char *open_hint,
               const char *symbol_hint, char *err, size_t errlen) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(err, errlen, "cannot load %s (%s); %s", soname, dlerror(), open_hint);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    void *f = dlsym(h, fns[i].name);
    memcpy(fns[i].slot, &f, sizeof f); /* POSIX: an object pointer converts to a function's */
    if (!f) {
      snprintf(err, errlen, "%s has no %s: %s", soname, fns[i].name, symbol_hint);
      for (size_t j = 0; j < n; j++) memset(fns[j].slot, 0, sizeof f);
      dlclose(h);
      return -1;
    }
  }
  return 0; /* kept loaded: the functions are called until exit */
}
