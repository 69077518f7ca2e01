/* test_transitions.c — the lifecycle table (supervisor/transitions.h)
 * without a broker: every action in every state against the table of
 * docs/api.md (the state it leads to, or the 409 text), every state change
 * against DESIGN.md §3's lifecycle, and the same answers from a running
 * supervisor (generator source, null sink) walked through running, draining,
 * checkpointed, running and cancelled. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "supervisor/transitions.h"
#include "tests/unit/local_sv.h"

#define P SV_JOB_PENDING
#define R SV_JOB_RUNNING
#define L SV_JOB_LAGGING
#define D SV_JOB_DRAINING
#define K SV_JOB_CHECKPOINTED
#define S SV_JOB_RESTARTING
#define F SV_JOB_FAILED
#define X SV_JOB_CANCELLED
#define C SV_JOB_COMPLETED
#define NO (-1) /* 409 */

/* docs/api.md, "Actions by state": rows are actions, columns the states
 * in enum order (pending running lagging draining checkpointed restarting
 * failed cancelled completed); an entry is the state the action leads to. */
static const int documented[SV_ACTION__COUNT][SV_JOB__COUNT] = {
	[SV_ACTION_CANCEL] = {X, X, X, X, X, X, NO, NO, NO},
	[SV_ACTION_DRAIN] = {NO, D, D, NO, NO, NO, NO, NO, NO},
	[SV_ACTION_RESUME] = {NO, NO, NO, NO, R, NO, NO, NO, NO},
	[SV_ACTION_RESTART] = {NO, R, R, NO, R, R, R, NO, NO},
	[SV_ACTION_CHECKPOINT] = {NO, R, L, NO, NO, NO, NO, NO, NO},
};

static void test_every_action_in_every_state(void **state)
{
	(void)state;
	static const char *const verbs[] = {"cancel", "drain", "resume",
					    "restart", "checkpoint"};
	for (int a = 0; a < SV_ACTION__COUNT; a++) {
		assert_string_equal(sv_action_verb((sv_action_t)a), verbs[a]);
		for (int st = 0; st < SV_JOB__COUNT; st++) {
			sv_job_t job = {.state = (sv_jobstate_t)st,
					.attempt = 3};
			snprintf(job.id, sizeof(job.id), "job-%d-%d", a, st);
			sv_jobstate_t to = SV_JOB__COUNT;
			bool ok = sv_action_allowed(job.state, (sv_action_t)a,
						    &to);
			sv_error_t *err = sv_action_check(&job, (sv_action_t)a);
			if (documented[a][st] == NO) {
				if (ok || !err)
					fail_msg("%s in %s: allowed, want 409",
						 verbs[a],
						 sv_jobstate_name(job.state));
				char want[128];
				snprintf(want, sizeof(want),
					 "cannot %s job '%s': it is %s",
					 verbs[a], job.id,
					 sv_jobstate_name(job.state));
				assert_string_equal(err->message, want);
				assert_int_equal(err->category,
						 SV_ERR_CONFLICT);
				assert_int_equal(
					sv_errcat_http_status(err->category),
					409);
				assert_string_equal(err->job_id, job.id);
				assert_int_equal(err->attempt, 3);
				sv_error_destroy(err);
				continue;
			}
			if (!ok || err)
				fail_msg("%s in %s: refused, want %s", verbs[a],
					 sv_jobstate_name(job.state),
					 sv_jobstate_name(documented[a][st]));
			assert_int_equal(to, documented[a][st]);
			/* the state it leads to is a change the table
			 * allows */
			if (to != job.state)
				assert_true(
					sv_transition_allowed(job.state, to));
		}
	}
	/* out of range */
	assert_false(sv_action_allowed(SV_JOB__COUNT, SV_ACTION_CANCEL, NULL));
	assert_false(sv_action_allowed(SV_JOB_RUNNING, SV_ACTION__COUNT, NULL));
	assert_string_equal(sv_action_verb(SV_ACTION__COUNT), "unknown");
}

/* DESIGN.md §3 and the code paths that take each edge
 * (supervisor/transitions.c says which). */
static const struct {
	sv_jobstate_t from;
	const sv_jobstate_t to[10];
	int n;
} lifecycle[] = {
	{P, {R, F, X, P}, 4},
	{R, {R, L, D, S, F, C, X, P}, 8},
	{L, {R, D, S, F, C, X, P}, 7},
	{D, {K, R, S, F, C, X, P}, 7},
	{K, {R, F, X, K}, 4},
	{S, {R, F, X, P}, 4},
	{F, {R, F}, 2},
	{X, {0}, 0},
	{C, {0}, 0},
};

static void test_every_transition(void **state)
{
	(void)state;
	assert_int_equal(sizeof(lifecycle) / sizeof(lifecycle[0]),
			 SV_JOB__COUNT);
	int allowed = 0;
	for (size_t i = 0; i < SV_JOB__COUNT; i++) {
		assert_int_equal(lifecycle[i].from, (sv_jobstate_t)i);
		for (int to = 0; to < SV_JOB__COUNT; to++) {
			bool want = false;
			for (int k = 0; k < lifecycle[i].n; k++)
				want |= (int)lifecycle[i].to[k] == to;
			bool got = sv_transition_allowed((sv_jobstate_t)i,
							 (sv_jobstate_t)to);
			if (got != want)
				fail_msg("%s -> %s: table says %d, want %d",
					 sv_jobstate_name((sv_jobstate_t)i),
					 sv_jobstate_name((sv_jobstate_t)to),
					 got, want);
			allowed += got;
		}
	}
	assert_int_equal(allowed, 36);
	/* nothing leaves cancelled or completed; nothing enters pending but
	 * recovery (from a state that is not terminal) */
	for (int st = 0; st < SV_JOB__COUNT; st++) {
		assert_false(sv_transition_allowed(X, (sv_jobstate_t)st));
		assert_false(sv_transition_allowed(C, (sv_jobstate_t)st));
		if (sv_jobstate_terminal((sv_jobstate_t)st) ||
		    st == SV_JOB_CHECKPOINTED)
			assert_false(
				sv_transition_allowed((sv_jobstate_t)st, P));
	}
	assert_false(sv_transition_allowed(SV_JOB__COUNT, R));
	assert_false(sv_transition_allowed(R, SV_JOB__COUNT));
}

/* ---- the same answers from a running supervisor ---- */

static int setup_sv(void **state)
{
	*state = local_sv_start();
	return *state ? 0 : -1;
}

static int teardown_sv(void **state)
{
	local_sv_stop(*state);
	return 0;
}

/* Run action: want_state NULL wants the 409 naming state_named; else the
 * job must reach want_state. */
static void expect_action(local_sv_t *l, const char *id, sv_action_t a,
			  const char *want_state, const char *state_named)
{
	char *json = NULL;
	const char *action = sv_action_name(a);
	sv_error_t *err = sv_supervisor_action(l->sv, id, a, NULL, 0, &json);
	if (!want_state) {
		if (!err)
			fail_msg("%s answered %s, want a 409", action, json);
		char want[160];
		snprintf(want, sizeof(want), "cannot %s job '%s': it is %s",
			 a == SV_ACTION_CHECKPOINT ? "checkpoint" : action, id,
			 state_named);
		assert_string_equal(err->message, want);
		assert_int_equal(sv_errcat_http_status(err->category), 409);
		sv_error_destroy(err);
		return;
	}
	if (err)
		fail_msg("%s: %s", action, err->message);
	free(json);
	if (!local_sv_wait_state(l, id, want_state, 20000))
		fail_msg("after %s the job is not %s", action, want_state);
}

static void test_supervisor_walk(void **state)
{
	local_sv_t *l = *state;
	const char *spec =
		"{\"name\": \"walk\", \"source\": {\"kind\": \"generator\", "
		"\"rate_per_s\": 2000}, \"schema\": [{\"name\": \"id\", "
		"\"type\": \"int64\"}], \"sink\": {\"kind\": \"null\"}, "
		"\"checkpoint\": {\"interval_ms\": 200}}";
	sv_error_t *err;
	char *id = local_sv_submit(l, spec, &err);
	if (!id)
		fail_msg("submit: %s", err->message);
	assert_true(local_sv_wait_state(l, id, "running", 20000));
	expect_action(l, id, SV_ACTION_RESUME, NULL, "running");
	expect_action(l, id, SV_ACTION_CHECKPOINT, "running", NULL);
	/* drain: draining, then checkpointed once the final checkpoint
	 * committed */
	char *json = NULL;
	err = sv_supervisor_action(l->sv, id, SV_ACTION_DRAIN, NULL, 0, &json);
	if (err)
		fail_msg("drain: %s", err->message);
	free(json);
	assert_true(local_sv_wait_state(l, id, "checkpointed", 20000));
	expect_action(l, id, SV_ACTION_DRAIN, NULL, "checkpointed");
	expect_action(l, id, SV_ACTION_CHECKPOINT, NULL, "checkpointed");
	expect_action(l, id, SV_ACTION_RESUME, "running", NULL);
	expect_action(l, id, SV_ACTION_RESTART, "running", NULL);
	expect_action(l, id, SV_ACTION_CANCEL, "cancelled", NULL);
	for (int a = 0; a < SV_ACTION__COUNT; a++)
		expect_action(l, id, (sv_action_t)a, NULL, "cancelled");
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_action_in_every_state),
		cmocka_unit_test(test_every_transition),
		cmocka_unit_test_setup_teardown(test_supervisor_walk, setup_sv,
						teardown_sv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
