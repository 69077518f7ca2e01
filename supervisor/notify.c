/* notify.c — sd_notify's wire protocol by hand: one datagram holding
 * "KEY=VALUE" lines, sent to the AF_UNIX socket named by $NOTIFY_SOCKET (a
 * path, or an abstract name when it starts with '@'). serve sends READY=1
 * once the HTTP API listens and the stored jobs are loaded, and STOPPING=1
 * when a signal starts the shutdown, so `systemctl start` returns when the
 * service answers and a stop is reported as one. Without the variable
 * nothing is sent: the same binary runs outside systemd. */
#define _GNU_SOURCE
#include "supervisor/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sv_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	ssize_t w = sendto(
		fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
	int saved = errno;
	close(fd);
	errno = saved;
	return w < 0 ? -1 : 1;
}
