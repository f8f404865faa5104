/* memtrace attach's reasons for a refused ptrace (src/cli/attach/target.c):
 * each case of Yama's ptrace_scope, another user's process, and what is
 * left, told from the values that decide them (a machine has one scope, so
 * the end-to-end test sees one of them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "target.h"

static char why[1024];

static const char *explain(long owner, long me, long scope) {
  mt_attach_explain_eperm(owner, me, scope, "Operation not permitted", why, sizeof why);
  return why;
}

static void test_another_user(void **state) {
  (void)state;
  assert_string_equal(explain(0, 1000, 0), "not permitted: it belongs to user 0 and memtrace runs "
                                           "as user 1000: attach as that user, or as root");
  /* the owner's rule comes first, whatever the scope */
  assert_non_null(strstr(explain(1001, 1000, 1), "belongs to user 1001"));
}

static void test_yama_scopes(void **state) {
  (void)state;
  assert_non_null(strstr(explain(1000, 1000, 1), "kernel.yama.ptrace_scope is 1 (a process may only be traced by its ancestors)"));
  assert_non_null(strstr(why, "sysctl kernel.yama.ptrace_scope=0"));
  assert_non_null(strstr(explain(1000, 1000, 2), "kernel.yama.ptrace_scope is 2 (only with CAP_SYS_PTRACE)"));
  assert_non_null(strstr(why, "setcap cap_sys_ptrace+ep"));
  /* 3 forbids root too */
  assert_non_null(strstr(explain(0, 0, 3), "ptrace_scope is 3, which forbids attaching to any process until the next reboot"));
  assert_non_null(strstr(explain(1000, 1000, 3), "ptrace_scope is 3"));
}

static void test_root_and_the_rest(void **state) {
  (void)state;
  /* root passes scopes 1 and 2: what is left is the process itself */
  const char *rest = "not permitted (Operation not permitted): the process may not be dumpable";
  assert_non_null(strstr(explain(1000, 0, 1), rest));
  assert_non_null(strstr(explain(1000, 0, 2), rest));
  assert_non_null(strstr(explain(1000, 1000, 0), rest));
  assert_non_null(strstr(explain(1000, 1000, -1), rest)); /* no Yama */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_another_user),
      cmocka_unit_test(test_yama_scopes),
      cmocka_unit_test(test_root_and_the_rest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
