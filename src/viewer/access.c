#include "access.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int mt_vaccess_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return 0;
}

static int fill(unsigned char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    got += (size_t)r;
  }
  if (got == n) return 0;
  /* a kernel without getrandom (before 3.17) */
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  return got == n ? 0 : -1;
}

int mt_vaccess_new_token(char *hex, char *err, size_t errlen) {
  unsigned char raw[MT_VTOKEN_BYTES];
  if (fill(raw, sizeof raw)) {
    snprintf(err, errlen, "cannot read random bytes for the access token: %s", strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < sizeof raw; i++) sprintf(hex + 2 * i, "%02x", raw[i]);
  hex[MT_VTOKEN_LEN] = 0;
  return 0;
}

int mt_vaccess_token_equal(const char *given, const char *token) {
  if (!given) return 0;
  size_t n = strlen(token);
  /* the length is no secret (the token's is fixed); the bytes are */
  if (strlen(given) != n) return 0;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < n; i++) diff |= (unsigned char)(given[i] ^ token[i]);
  return diff == 0;
}
