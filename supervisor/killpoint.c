/* killpoint.c — see killpoint.h. */
#include "supervisor/killpoint.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char point_name[64];
static long target = 1;
static atomic_long hits;

static void parse(void)
{
	const char *v = getenv("STREAMVISOR_KILL_AT");
	if (!v || !*v)
		return;
	snprintf(point_name, sizeof(point_name), "%s", v);
	char *colon = strchr(point_name, ':');
	if (colon) {
		*colon = '\0';
		target = strtol(colon + 1, NULL, 10);
		if (target < 1)
			target = 1;
	}
}

void sv_killpoint(const char *point)
{
	pthread_once(&once, parse);
	if (!point_name[0] || strcmp(point, point_name))
		return;
	if (atomic_fetch_add(&hits, 1) + 1 < target)
		return;
	fprintf(stderr,
		"streamvisor: kill point %s reached (STREAMVISOR_KILL_AT)"
		", SIGKILL\n",
		point);
	kill(getpid(), SIGKILL);
	pause();
}

void sv_delaypoint(const char *point)
{
	const char *v = getenv("STREAMVISOR_DELAY_AT");
	if (!v || !*v)
		return;
	size_t n = strlen(point);
	if (strncmp(v, point, n) || v[n] != ':')
		return;
	long ms = strtol(v + n + 1, NULL, 10);
	if (ms <= 0)
		return;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}
