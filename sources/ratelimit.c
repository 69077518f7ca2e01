/* ratelimit.c — see ratelimit.h. */
#include "sources/ratelimit.h"

#include <errno.h>
#include <time.h>

#include "core/util.h"

#define ROW 1000000000LL /* one row, in row-nanoseconds */

void sv_ratelimit_init(sv_ratelimit_t *rl, int64_t rate)
{
	rl->rate = rate > 0 ? rate : 0;
	rl->tokens = 0;
	rl->cap = rl->rate / 10 > 1 ? rl->rate / 10 * ROW : ROW;
	rl->last_ns = sv_mono_ns();
}

static void refill(sv_ratelimit_t *rl)
{
	int64_t now = sv_mono_ns();
	int64_t dt = now - rl->last_ns;
	rl->last_ns = now;
	if (dt <= 0)
		return;
	if (dt > ROW) /* the bucket holds at most 100 ms anyway */
		dt = ROW;
	rl->tokens += dt * rl->rate;
	if (rl->tokens > rl->cap)
		rl->tokens = rl->cap;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / ROW, .tv_nsec = ns % ROW};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

size_t sv_ratelimit_allow(sv_ratelimit_t *rl, size_t max, int timeout_ms)
{
	if (!rl->rate)
		return max;
	refill(rl);
	if (rl->tokens < ROW && timeout_ms != 0) {
		int64_t need = (ROW - rl->tokens + rl->rate - 1) / rl->rate;
		if (timeout_ms > 0 && need > (int64_t)timeout_ms * 1000000LL)
			need = (int64_t)timeout_ms * 1000000LL;
		sleep_ns(need);
		refill(rl);
	}
	size_t ok = (size_t)(rl->tokens / ROW);
	return ok < max ? ok : max;
}

void sv_ratelimit_take(sv_ratelimit_t *rl, size_t n)
{
	if (rl->rate)
		rl->tokens -= (int64_t)n * ROW;
}
