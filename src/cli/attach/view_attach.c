/* memtrace view --attach (view_attach.h). */
#include "view_attach.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int mt_attach_free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {0};
  socklen_t len = sizeof a;
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int port = -1;
  if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0) close(s);
  return port;
}

/* Whether a socket listens on 127.0.0.1:port (/proc/net/tcp: state 0A),
 * asked without connecting: the viewer takes the first connection for the
 * program's stream. */
static int listening(int port) {
  FILE *f = fopen("/proc/net/tcp", "r");
  char line[256], want[32];
  snprintf(want, sizeof want, "0100007F:%04X", port);
  int yes = 0;
  while (f && !yes && fgets(line, sizeof line, f)) {
    char local[64], remote[64], state[8];
    if (sscanf(line, " %*d: %63s %63s %7s", local, remote, state) == 3)
      yes = strcmp(local, want) == 0 && strcmp(state, "0A") == 0;
  }
  if (f) fclose(f);
  return yes;
}

int mt_attach_spawn_for_view(pid_t pid, const char *rate, int port, pid_t *child) {
  pid_t c = fork();
  if (c < 0) return -1;
  if (c > 0) {
    *child = c;
    return 0;
  }
  for (int i = 0; i < 400 && !listening(port); i++) {
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  char dest[64], pidtext[32];
  snprintf(dest, sizeof dest, "tcp:127.0.0.1:%d", port);
  snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
  char *argv[8] = {"attach", "-o", dest};
  int argc = 3;
  if (rate) argv[argc++] = "--rate", argv[argc++] = (char *)rate;
  argv[argc++] = pidtext;
  argv[argc] = NULL;
  fflush(stdout);
  _exit(mt_cmd_attach.run(argc, argv));
}
