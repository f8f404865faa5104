#include <stdlib.h>
__attribute__((noinline)) void *dl_site(size_t n) { return malloc(n); }
void dl_work(void) { for (int i = 0; i < 300; i++) free(dl_site(1000)); }
