/* test_notify.c — sd_notify by hand (supervisor/notify.c): the datagram
 * reaches a socket named by $NOTIFY_SOCKET, as a path and as an abstract
 * name; without the variable nothing is sent; a relative name is refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "supervisor/notify.h"

/* A datagram socket bound to name (a path or "@abstract"). */
static int bound(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(
		bind(fd, (struct sockaddr *)&sa,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)),
		0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[64] = {0};
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_int_equal(n, (ssize_t)strlen(want));
	assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/sv-notify.XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	int fd = bound(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(sv_notify("READY=1"), 1);
	expect_datagram(fd, "READY=1");
	assert_int_equal(sv_notify("STOPPING=1"), 1);
	expect_datagram(fd, "STOPPING=1");
	close(fd);
	unlink(path);
	rmdir(dir);
	/* the socket is gone: an error, not a crash */
	assert_int_equal(sv_notify("READY=1"), -1);
	unsetenv("NOTIFY_SOCKET");
}

static void test_abstract_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "@sv-notify-test-%d", (int)getpid());
	int fd = bound(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(sv_notify("READY=1"), 1);
	expect_datagram(fd, "READY=1");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_no_socket(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sv_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(sv_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "relative/name", 1);
	assert_int_equal(sv_notify("READY=1"), -1);
	assert_int_equal(errno, EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_socket),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_no_socket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
