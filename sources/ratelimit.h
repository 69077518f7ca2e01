/* ratelimit.h — source.rate_per_s for every source driver: a token bucket
 * over the monotonic clock, in rows. It starts empty, fills at `rate` rows
 * per second and holds at most 100 ms worth (at least one row), so over
 * any interval of length T since it was set up at most rate × T rows pass.
 * thread: the source's (one worker). */
#ifndef SV_RATELIMIT_H
#define SV_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct sv_ratelimit {
	int64_t rate; /* rows per second; 0: unlimited */
	int64_t tokens; /* in row-nanoseconds */
	int64_t cap;
	int64_t last_ns;
} sv_ratelimit_t;

/* rate 0 (or less) disables the limit. */
void sv_ratelimit_init(sv_ratelimit_t *rl, int64_t rate);
/* At most max rows the bucket allows now, waiting up to timeout_ms (< 0:
 * as long as it takes) for the first one; max when unlimited. */
size_t sv_ratelimit_allow(sv_ratelimit_t *rl, size_t max, int timeout_ms);
/* n rows were emitted. */
void sv_ratelimit_take(sv_ratelimit_t *rl, size_t n);

#endif
