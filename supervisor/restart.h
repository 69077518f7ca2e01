/* restart.h — the restart policy as a pure function (DESIGN.md §3).
 *
 * When an attempt fails, sv_restart_decide() says what happens next from the
 * job's policy, the policy state it kept since the last failure, the class
 * of the error (category and flags, never its text), the time and a random
 * value for the jitter. It reads no clock, draws no random number and
 * touches no job: the caller (supervisor/lifecycle.c) supplies both and
 * applies the decision, so every branch is testable on its own
 * (tests/unit/test_restart.c). */
#ifndef SV_RESTART_H
#define SV_RESTART_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"

/* A job spec's "restart" section, defaults filled in (ingress/spec.c). */
typedef struct sv_restart_policy {
	int max_attempts; /* failures within window_ms that exhaust it */
	int64_t initial_backoff_ms;
	int64_t max_backoff_ms;
	double multiplier;
	int64_t window_ms;
	int64_t reset_after_ms; /* healthy running that forgets the failures */
} sv_restart_policy_t;

/* What the policy remembers between failures (all 0 before the first). */
typedef struct sv_restart_state {
	int64_t window_start_ms; /* start of the counting window, 0: none */
	int attempts_in_window; /* failures counted in the window */
	int64_t backoff_ms; /* the last backoff (before jitter), 0: none */
} sv_restart_state_t;

/* The class of an attempt's error: all the policy looks at. */
typedef struct sv_errclass {
	sv_errcat_t category;
	bool retriable;
	bool fatal;
} sv_errclass_t;

static inline sv_errclass_t sv_errclass_of(const sv_error_t *err)
{
	return (sv_errclass_t){err->category, err->retriable, err->fatal};
}

typedef enum sv_restart_verdict {
	SV_RESTART_RETRY = 0, /* restarting: next attempt at at_ms */
	SV_RESTART_FAIL, /* failed with the error itself (not retriable) */
	SV_RESTART_EXHAUSTED, /* failed with retry_exhausted */
} sv_restart_verdict_t;

typedef struct sv_restart_decision {
	sv_restart_verdict_t verdict;
	int64_t wait_ms; /* RETRY: the jittered wait, in [b/2, b] */
	int64_t at_ms; /* RETRY: now + wait_ms */
	sv_restart_state_t next; /* the policy state after this failure */
} sv_restart_decision_t;

/* Decide after a failed attempt that started at attempt_started_ms (0:
 * unknown) and failed at now, with error class ec. rnd is any uniformly
 * random 32-bit value (the jitter's only source). Rules, in order:
 *   1. an attempt that ran healthy for reset_after_ms forgets the earlier
 *      failures and the backoff;
 *   2. a failure more than window_ms after the window opened opens a new
 *      window; the failure is counted in it;
 *   3. a fatal or non-retriable error fails the job — except a fatal
 *      sink_commit error (a fenced producer, a broken transaction), which
 *      ends that producer, not the job: a new attempt opens a new one and
 *      recovery decides what committed;
 *   4. max_attempts failures in the window exhaust the policy;
 *   5. otherwise the backoff b is initial_backoff_ms, then the last one
 *      times multiplier, at most max_backoff_ms; the wait is b/2 plus
 *      rnd mod (b/2 + 1).
 * thread: any (pure). */
sv_restart_decision_t sv_restart_decide(const sv_restart_policy_t *p,
					const sv_restart_state_t *st,
					sv_errclass_t ec,
					int64_t attempt_started_ms, int64_t now,
					uint32_t rnd);

#endif
