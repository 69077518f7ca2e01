/* test_restart.c — the restart policy (supervisor/restart.h) as a pure
 * function: the verdict for every error category and flag combination, the
 * backoff sequence and its cap, the jitter bounds over the random value,
 * the counting window and its boundary, the reset after a healthy attempt,
 * and that the function reads nothing but its arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "supervisor/restart.h"

#define T0 1700000000000LL /* any wall-clock time */

/* The job spec's defaults (ingress/spec.c). */
static const sv_restart_policy_t defaults = {
	.max_attempts = 10,
	.initial_backoff_ms = 500,
	.max_backoff_ms = 60000,
	.multiplier = 2.0,
	.window_ms = 600000,
	.reset_after_ms = 300000,
};

static const sv_errclass_t runtime = {SV_ERR_RUNTIME, true, false};

/* The rule as docs/architecture.md states it, written independently of
 * restart.c: retried when retriable and not fatal, or a fatal sink_commit
 * error. */
static bool documented_retry(sv_errcat_t cat, bool retriable, bool fatal)
{
	if (cat == SV_ERR_SINK_COMMIT && fatal)
		return true;
	return retriable && !fatal;
}

static void test_verdict_every_class(void **state)
{
	(void)state;
	const sv_restart_state_t fresh = {0};
	for (int cat = 0; cat < SV_ERR__COUNT; cat++)
		for (int flags = 0; flags < 4; flags++) {
			sv_errclass_t ec = {(sv_errcat_t)cat, flags & 1,
					    (flags & 2) != 0};
			sv_restart_decision_t d = sv_restart_decide(
				&defaults, &fresh, ec, T0, T0 + 10, 7);
			bool retry = documented_retry(ec.category, ec.retriable,
						      ec.fatal);
			if (d.verdict !=
			    (retry ? SV_RESTART_RETRY : SV_RESTART_FAIL))
				fail_msg("category %s retriable %d fatal %d: "
					 "verdict %d",
					 sv_errcat_name(ec.category),
					 ec.retriable, ec.fatal, d.verdict);
			/* the failure is counted either way */
			assert_int_equal(d.next.attempts_in_window, 1);
			assert_int_equal(d.next.window_start_ms, T0 + 10);
			if (!retry) {
				assert_int_equal(d.wait_ms, 0);
				assert_int_equal(d.next.backoff_ms, 0);
			}
		}
	/* the default flags of each category (sv_error_new) */
	for (int cat = 0; cat < SV_ERR__COUNT; cat++) {
		sv_error_t *err = sv_error_new((sv_errcat_t)cat, "x");
		sv_restart_decision_t d = sv_restart_decide(
			&defaults, &fresh, sv_errclass_of(err), T0, T0, 0);
		assert_int_equal(d.verdict == SV_RESTART_RETRY,
				 sv_errcat_retriable((sv_errcat_t)cat));
		sv_error_destroy(err);
	}
}

/* Backoff base doubles from 500 to the 60 s cap; with rnd = 0 the wait is
 * b/2 exactly, with rnd = b/2 it is b. */
static void test_backoff_sequence_and_cap(void **state)
{
	(void)state;
	sv_restart_policy_t p = defaults;
	p.max_attempts = 1000;
	static const int64_t want[] = {500,   1000,  2000,  4000,  8000,
				       16000, 32000, 60000, 60000, 60000};
	sv_restart_state_t st = {0};
	int64_t now = T0;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		sv_restart_decision_t lo = sv_restart_decide(&p, &st, runtime,
							     now - 5, now, 0);
		sv_restart_decision_t hi = sv_restart_decide(
			&p, &st, runtime, now - 5, now,
			(uint32_t)(want[i] / 2));
		assert_int_equal(lo.verdict, SV_RESTART_RETRY);
		assert_int_equal(lo.next.backoff_ms, want[i]);
		assert_int_equal(lo.wait_ms, want[i] / 2);
		assert_int_equal(lo.at_ms, now + want[i] / 2);
		assert_int_equal(hi.wait_ms, want[i]);
		assert_int_equal(lo.next.attempts_in_window, (int)i + 1);
		st = lo.next;
		now += 1000;
	}
	/* multiplier 1: constant; 1.5: truncated toward zero */
	p.multiplier = 1.0;
	st = (sv_restart_state_t){.window_start_ms = T0, .backoff_ms = 700};
	assert_int_equal(
		sv_restart_decide(&p, &st, runtime, 0, T0, 0).next.backoff_ms,
		700);
	p.multiplier = 1.5;
	st.backoff_ms = 333;
	assert_int_equal(
		sv_restart_decide(&p, &st, runtime, 0, T0, 0).next.backoff_ms,
		499);
}

/* The wait stays in [b/2, b] and covers it, over every residue of rnd. */
static void test_jitter_bounds(void **state)
{
	(void)state;
	static const int64_t bases[] = {0, 1, 2, 3, 10, 501, 60000};
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		int64_t b = bases[i];
		sv_restart_policy_t p = defaults;
		p.initial_backoff_ms = b;
		p.max_backoff_ms = b;
		const sv_restart_state_t st = {0};
		int64_t span = b / 2 + 1;
		bool seen[60001] = {false};
		for (int64_t r = 0; r < 2 * span; r++) {
			sv_restart_decision_t d = sv_restart_decide(
				&p, &st, runtime, 0, T0, (uint32_t)r);
			assert_true(d.wait_ms >= b / 2);
			assert_true(d.wait_ms <= b);
			assert_int_equal(d.wait_ms, b / 2 + r % span);
			seen[d.wait_ms] = true;
		}
		/* every value of [b/2, 2 * (b/2)] is reached (b - 1 is the
		 * top for an odd b) */
		for (int64_t w = b / 2; w <= 2 * (b / 2); w++)
			assert_true(seen[w]);
		/* the largest random value */
		sv_restart_decision_t d = sv_restart_decide(&p, &st, runtime, 0,
							    T0, UINT32_MAX);
		assert_true(d.wait_ms >= b / 2 && d.wait_ms <= b);
	}
	/* a backoff beyond 32 bits: no truncated (zero) modulus */
	sv_restart_policy_t p = defaults;
	p.initial_backoff_ms = p.max_backoff_ms = 1LL << 40;
	const sv_restart_state_t st = {0};
	sv_restart_decision_t d = sv_restart_decide(&p, &st, runtime, 0, T0,
						    UINT32_MAX);
	assert_int_equal(d.wait_ms, (1LL << 39) + UINT32_MAX);
}

/* max_attempts failures within the window exhaust the policy; one more
 * failure just past the window opens a new one. */
static void test_window(void **state)
{
	(void)state;
	sv_restart_policy_t p = defaults;
	p.max_attempts = 3;
	p.window_ms = 10000;
	sv_restart_state_t st = {0};
	sv_restart_decision_t d;
	d = sv_restart_decide(&p, &st, runtime, 0, T0, 0);
	assert_int_equal(d.verdict, SV_RESTART_RETRY);
	assert_int_equal(d.next.window_start_ms, T0);
	st = d.next;
	d = sv_restart_decide(&p, &st, runtime, 0, T0 + 4000, 0);
	assert_int_equal(d.verdict, SV_RESTART_RETRY);
	assert_int_equal(d.next.attempts_in_window, 2);
	st = d.next;
	/* exactly window_ms after the window opened: still inside */
	d = sv_restart_decide(&p, &st, runtime, 0, T0 + 10000, 0);
	assert_int_equal(d.verdict, SV_RESTART_EXHAUSTED);
	assert_int_equal(d.next.attempts_in_window, 3);
	/* one millisecond later: a new window, counted from 1 */
	d = sv_restart_decide(&p, &st, runtime, 0, T0 + 10001, 0);
	assert_int_equal(d.verdict, SV_RESTART_RETRY);
	assert_int_equal(d.next.attempts_in_window, 1);
	assert_int_equal(d.next.window_start_ms, T0 + 10001);
	/* the new window keeps the backoff growing (only a reset clears it) */
	assert_int_equal(d.next.backoff_ms, 2000);
	/* max_attempts 1: the first failure exhausts it */
	p.max_attempts = 1;
	const sv_restart_state_t fresh = {0};
	assert_int_equal(
		sv_restart_decide(&p, &fresh, runtime, 0, T0, 0).verdict,
		SV_RESTART_EXHAUSTED);
	/* a non-retriable error fails before the count is looked at */
	const sv_errclass_t cfg = {SV_ERR_CONFIG, false, false};
	assert_int_equal(sv_restart_decide(&p, &fresh, cfg, 0, T0, 0).verdict,
			 SV_RESTART_FAIL);
}

/* An attempt that ran reset_after_ms forgets the failures and the backoff;
 * one that ran a millisecond less does not; 0 (unknown start) never does. */
static void test_reset_after_healthy(void **state)
{
	(void)state;
	sv_restart_policy_t p = defaults;
	p.max_attempts = 3;
	const sv_restart_state_t tired = {.window_start_ms = T0,
					  .attempts_in_window = 2,
					  .backoff_ms = 8000};
	int64_t now = T0 + 400000; /* within the 600 s window */
	sv_restart_decision_t d;
	d = sv_restart_decide(&p, &tired, runtime, now - 300000, now, 0);
	assert_int_equal(d.verdict, SV_RESTART_RETRY);
	assert_int_equal(d.next.attempts_in_window, 1);
	assert_int_equal(d.next.backoff_ms, 500);
	assert_int_equal(d.next.window_start_ms, T0);
	d = sv_restart_decide(&p, &tired, runtime, now - 299999, now, 0);
	assert_int_equal(d.verdict, SV_RESTART_EXHAUSTED);
	assert_int_equal(d.next.attempts_in_window, 3);
	d = sv_restart_decide(&p, &tired, runtime, 0, now, 0);
	assert_int_equal(d.verdict, SV_RESTART_EXHAUSTED);
}

/* Same inputs, same output; the input state is not written. */
static void test_pure(void **state)
{
	(void)state;
	sv_restart_state_t st = {.window_start_ms = T0,
				 .attempts_in_window = 4,
				 .backoff_ms = 4000};
	const sv_restart_state_t copy = st;
	sv_restart_decision_t a = sv_restart_decide(&defaults, &st, runtime,
						    T0 + 5, T0 + 9, 12345);
	sv_restart_decision_t b = sv_restart_decide(&defaults, &st, runtime,
						    T0 + 5, T0 + 9, 12345);
	assert_memory_equal(&st, &copy, sizeof(st));
	assert_int_equal(a.verdict, b.verdict);
	assert_int_equal(a.wait_ms, b.wait_ms);
	assert_int_equal(a.at_ms, b.at_ms);
	assert_memory_equal(&a.next, &b.next, sizeof(a.next));
	assert_int_equal(a.next.backoff_ms, 8000);
	assert_int_equal(a.wait_ms, 4000 + 12345 % 4001);
}

/* Invariants over long random failure sequences. */
static void test_random_sequences(void **state)
{
	(void)state;
	uint64_t s = 88172645463325252ULL;
	for (int run = 0; run < 200; run++) {
		sv_restart_policy_t p = defaults;
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		p.max_attempts = 1 + (int)(s % 8);
		p.initial_backoff_ms = 1 + (int64_t)(s >> 8) % 1000;
		p.max_backoff_ms = p.initial_backoff_ms +
			(int64_t)(s >> 20) % 100000;
		p.multiplier = 1.0 + (double)((s >> 40) % 30) / 10.0;
		p.window_ms = 1000 + (int64_t)(s >> 12) % 60000;
		p.reset_after_ms = 1000 + (int64_t)(s >> 24) % 60000;
		sv_restart_state_t st = {0};
		int64_t now = T0;
		for (int i = 0; i < 50; i++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			int64_t ran = (int64_t)(s % 70000);
			now += ran + 1;
			sv_restart_decision_t d = sv_restart_decide(
				&p, &st, runtime, now - ran, now, (uint32_t)s);
			assert_true(d.next.attempts_in_window >= 1);
			assert_true(d.next.attempts_in_window <=
				    p.max_attempts);
			assert_true(now - d.next.window_start_ms <=
				    p.window_ms);
			if (d.verdict == SV_RESTART_EXHAUSTED) {
				assert_int_equal(d.next.attempts_in_window,
						 p.max_attempts);
				break; /* the job is failed */
			}
			assert_int_equal(d.verdict, SV_RESTART_RETRY);
			int64_t b = d.next.backoff_ms;
			assert_true(b >= p.initial_backoff_ms &&
				    b <= p.max_backoff_ms);
			assert_true(d.wait_ms >= b / 2 && d.wait_ms <= b);
			assert_int_equal(d.at_ms, now + d.wait_ms);
			st = d.next;
			now = d.at_ms;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_every_class),
		cmocka_unit_test(test_backoff_sequence_and_cap),
		cmocka_unit_test(test_jitter_bounds),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_reset_after_healthy),
		cmocka_unit_test(test_pure),
		cmocka_unit_test(test_random_sequences),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
