/* restart.c — the restart policy (see restart.h): exponential backoff with
 * jitter in [b/2, b], a bounded number of failures within a window, and a
 * reset after a healthy period. A pure function of its inputs; the caller
 * owns the clock, the random source and the job. */
#include "supervisor/restart.h"

sv_restart_decision_t sv_restart_decide(const sv_restart_policy_t *p,
					const sv_restart_state_t *st,
					sv_errclass_t ec,
					int64_t attempt_started_ms, int64_t now,
					uint32_t rnd)
{
	sv_restart_decision_t d = {.verdict = SV_RESTART_RETRY, .next = *st};
	sv_restart_state_t *n = &d.next;

	if (attempt_started_ms &&
	    now - attempt_started_ms >= p->reset_after_ms) {
		n->attempts_in_window = 0;
		n->backoff_ms = 0;
	}
	if (!n->window_start_ms || now - n->window_start_ms > p->window_ms) {
		n->window_start_ms = now;
		n->attempts_in_window = 0;
	}
	n->attempts_in_window++;

	bool sink_fatal = ec.category == SV_ERR_SINK_COMMIT && ec.fatal;
	if (!sink_fatal && (!ec.retriable || ec.fatal)) {
		d.verdict = SV_RESTART_FAIL;
		return d;
	}
	if (n->attempts_in_window >= p->max_attempts) {
		d.verdict = SV_RESTART_EXHAUSTED;
		return d;
	}
	int64_t b = n->backoff_ms
		? (int64_t)((double)n->backoff_ms * p->multiplier)
		: p->initial_backoff_ms;
	if (b > p->max_backoff_ms)
		b = p->max_backoff_ms;
	if (b < 0)
		b = 0;
	n->backoff_ms = b;
	/* in 64 bits: a backoff above 2^33 ms must not truncate the modulus */
	d.wait_ms = b / 2 + (int64_t)((uint64_t)rnd % (uint64_t)(b / 2 + 1));
	d.at_ms = now + d.wait_ms;
	return d;
}
