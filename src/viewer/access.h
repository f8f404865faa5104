/* Who may use a viewer bound beyond loopback (docs/viewer.md, "Access"):
 * whoever holds the random token its URL carries, as Jupyter does. */
#ifndef MT_VIEWER_ACCESS_H
#define MT_VIEWER_ACCESS_H

#include <stddef.h>
#include <sys/socket.h>

/* Random bytes of a token, and its text: that many bytes in hex. */
#define MT_VTOKEN_BYTES 24
#define MT_VTOKEN_LEN (2 * MT_VTOKEN_BYTES)

/* Whether an address is loopback: 127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104. */
int mt_vaccess_loopback(const struct sockaddr *sa);

/* A new token from the kernel's random source (getrandom, else
 * /dev/urandom) into hex (MT_VTOKEN_LEN + 1 bytes). 0, or -1 with why in
 * err. */
int mt_vaccess_new_token(char *hex, char *err, size_t errlen);

/* Whether `given` (NULL: none) is the token, in a time that does not
 * depend on where they differ. */
int mt_vaccess_token_equal(const char *given, const char *token);

#endif
