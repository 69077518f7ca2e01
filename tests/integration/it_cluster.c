/* it_cluster.c — distributed mode with several real `streamvisor serve`
 * processes on loopback and the real broker (docs/cluster.md; the test
 * plan is SCALE-OUT.md §8).
 *
 * Each node is a child process with its own config (a `distributed:`
 * section with the run's own cluster name and a fixed node id), data dir
 * and log. The input is the crash rig's (crashkit.h): sequence-numbered
 * records on 4 partitions, produced while the nodes run; the job is its
 * exactly-once passthrough into a Kafka topic, submitted to one node only
 * (the registry topic gives it to the others). The output is read with
 * read_committed once the job's group has committed the input's end and
 * checked for 0 duplicated / 0 missing / 0 wrong / 0 unexpected; the
 * read_uncommitted view, which shows aborted transactions, is the negative
 * control where a kill must leave duplicates.
 *
 *   test_share_kill_restart: two nodes share the job's partitions (2 and
 *     2); node 1 is killed -9 while it has output in an open transaction;
 *     node 2 takes all 4 partitions (after the session timeout) and the
 *     output stays exactly once; node 1 restarts with the same data dir
 *     (the same node id, the same static member) and the two share again;
 *     at the end a cancel sent to node 2 cancels the job on both.
 *   test_crash_loop: kill -9 a random node of two every 1-5 s; restart it
 *     within the session timeout (a static member's rejoin) or after it
 *     (its partitions moved meanwhile), alternately; exact. 30 kills,
 *     with SV_CLUSTER_LONG=1 only (skipped by default).
 *   test_scale: 1 -> 2 -> 3 -> 2 -> 1 nodes while input flows (joins by
 *     starting a node, leaves by SIGTERM, the graceful shutdown); n1
 *     acknowledges a revoke after a checkpoint at every change; exact.
 *     One cycle by default, 10 with SV_CLUSTER_LONG=1.
 *   test_zombie_sigstop: node 1 is frozen (SIGSTOP) past the session
 *     timeout while it has output in an open transaction, node 2 takes
 *     over and commits, node 1 resumes (SIGCONT): it is told its
 *     assignment was lost or its commit is refused; the output is exact.
 *   test_zombie_delay / test_zombie_delay_groupid_only: node 1's worker is
 *     stuck right after reading its group metadata in a checkpoint
 *     (STREAMVISOR_DELAY_AT=after_group_metadata:16000) past
 *     max.poll.interval.ms (7 s); node 2 takes over and commits; node 1
 *     wakes and sends its offsets. With the consumer's own metadata the
 *     broker refuses them (commits_fenced) and the output is exact; with
 *     group-id-only metadata (STREAMVISOR_TEST_GROUPID_CGMD=1, today's
 *     standalone metadata) they are accepted and the read_committed output
 *     has duplicates: the negative control that shows the first can fail.
 *   test_rebalance_during_checkpoint (T8): every checkpoint of node 1
 *     waits 3 s before its prepare (STREAMVISOR_DELAY_AT=before_prepare);
 *     node 2 is started while node 1, alone, is inside one. From both
 *     nodes' observations: node 1's checkpoint_completed of it comes
 *     before node 1's revoke_acked, which comes before node 2's
 *     partitions_assigned, and the two split the partitions; exact. Once
 *     by default, 10 times with SV_CLUSTER_LONG=1.
 *
 * Every wait is for a condition with a deadline. Figures (kill → takeover,
 * revoke_ack_ms) are printed as `[ cluster ]` lines. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "tests/integration/clusterkit.h"
#include "tests/integration/testkit.h"

/* ---- two nodes share a job; one is killed -9, then restarted ---- */

static void test_share_kill_restart(void **state)
{
	cluster_t *cl = cl_new(state, "share_kill", 11, 2);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	cl_node_start(cl, 0, NULL, NULL);
	cl_node_start(cl, 1, NULL, NULL);
	char *spec = cr_job_spec(c, j);
	j->id = cl_submit(cl, 0, spec); /* to node 1 only */
	free(spec);
	int both[] = {2, 2};
	cl_wait_split(cl, j->id, both, 30000,
		      "shared (submitted to n1 only; n2 has it from the "
		      "registry)");

	cr_producer_start(&c->prod, c->in_topic, 24000, 2000);
	cl_wait_uncommitted(cl, 0, j->id, 100);
	int64_t t_kill = sv_mono_ms();
	cl_node_kill(cl, 0);
	printf("[%s %6.1fs] kill -9 n1 (output in an open transaction)\n",
	       c->test, cr_secs(c));
	int only2[] = {-1, 4};
	int64_t take = cl_wait_split(cl, j->id, only2, 40000,
				     "n2 took n1's partitions");
	/* the first output of the new owner for n1's partitions: its
	 * checkpoint committed beyond where the group stood at the kill */
	printf("[ cluster ] kill -9 -> other node holds every partition: "
	       "%" PRId64 " ms (session.timeout.ms %d)\n",
	       take, SESSION_MS);
	int64_t ends0[PARTS] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
	int64_t at[PARTS], now[PARTS];
	cr_group_at_end(c, j, ends0, at);
	int64_t deadline = sv_mono_ms() + 30000;
	for (;;) {
		cr_group_at_end(c, j, ends0, now);
		bool moved = true;
		for (int p = 0; p < PARTS; p++)
			moved = moved && now[p] > at[p];
		if (moved)
			break;
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"n2 did not commit every partition within "
				"30 s of the takeover");
		usleep(100000);
	}
	printf("[ cluster ] kill -9 -> new owner committed output of every "
	       "partition: %" PRId64 " ms\n",
	       sv_mono_ms() - t_kill);

	/* n1 comes back: same data dir, same node id, same static member */
	cl_node_start(cl, 0, NULL, NULL);
	cl_wait_split(cl, j->id, both, 40000, "n1 back, shared again");
	char path[800];
	snprintf(path, sizeof(path), "%s/node_id", cl->n[0].dir);
	char *kept = cr_slurp(path, NULL);
	if (!kept || strncmp(kept, "n1\n", 3))
		cr_fail(c, "node id file %s holds '%s', not n1", path,
			kept ? kept : "(none)");
	free(kept);

	tally_t unc,
		t = cl_finish(cl, j, &unc, "asserted",
			      "negative control: duplicates asserted");
	int64_t rb = cl_node_dist(cl, 1, j->id, "rebalances");
	int64_t fenced = cl_node_dist(cl, 1, j->id, "commits_fenced");
	printf("[ cluster ] n2: revokes acknowledged after a checkpoint "
	       "%" PRId64 ", commits fenced %" PRId64 "\n",
	       rb, fenced);
	if (!cr_exact(&t))
		cr_fail(c,
			"exactly-once output is not exact across the kill "
			"(SUMMARY above)");
	if (!unc.dup)
		cr_fail(c,
			"negative control: the kill left no aborted output "
			"(read_uncommitted has no duplicates), so the "
			"check above proved nothing");
	if (rb < 2)
		cr_fail(c,
			"n2 acknowledged %" PRId64 " revokes, expected 2 or "
			"more (n1's departure and return)",
			rb);
	/* a cancel sent to n2 (the job was submitted to n1) reaches both
	 * through the registry */
	char cpath[200], *resp = NULL;
	snprintf(cpath, sizeof(cpath), "/v1/jobs/%s/cancel", j->id);
	int st = cl_mutate(cl, 1, "POST", cpath, "{}", &resp, 30000);
	if (st != 200)
		cr_fail(c, "cancel on n2: %d %s", st, resp ? resp : "");
	free(resp);
	int64_t t_cancel = sv_mono_ms(), deadline_c = t_cancel + 15000;
	for (bool both_done = false; !both_done;) {
		both_done = true;
		for (int i = 0; i < 2; i++) {
			json_t *o = cl_node_job(cl, i, j->id);
			const char *state = o
				? json_string_value(json_object_get(o, "state"))
				: NULL;
			both_done = both_done && state &&
				!strcmp(state, "cancelled");
			json_decref(o);
		}
		if (!both_done && sv_mono_ms() > deadline_c)
			cr_fail(c,
				"the cancel sent to n2 did not cancel the "
				"job on both nodes within 15 s");
		if (!both_done)
			usleep(100000);
	}
	printf("[ cluster ] cancel sent to n2: cancelled on both nodes after "
	       "%" PRId64 " ms\n",
	       sv_mono_ms() - t_cancel);
	c->passed = true;
	cl_free(cl);
}

/* The id of node i's last committed checkpoint of the job (-1: none). */
static int64_t last_ck(cluster_t *cl, int i, const char *id)
{
	json_t *o = cl_node_job(cl, i, id);
	json_t *ck = o ? json_object_get(o, "last_checkpoint") : NULL;
	int64_t v = json_is_object(ck) ? cr_jint(ck, "id", -1) : -1;
	json_decref(o);
	return v;
}

/* Until the group's committed offsets of every partition are past at. */
static void wait_committed_past(cluster_t *cl, cjob_t *j, const int64_t *at,
				int timeout_ms, const char *what)
{
	int64_t ends0[PARTS] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
	int64_t now[PARTS];
	int64_t deadline = sv_mono_ms() + timeout_ms;
	for (;;) {
		cr_group_at_end(cl->c, j, ends0, now);
		bool moved = true;
		for (int p = 0; p < PARTS; p++)
			moved = moved && now[p] > at[p];
		if (moved)
			return;
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c, "%s: not within %d ms", what,
				timeout_ms);
		usleep(100000);
	}
}

/* ---- kill -9 a random node every 1-5 s, restart it soon or late ---- */

static void test_crash_loop(void **state)
{
	/* long mode only (make test's time budget): by default kills of a
	 * node are covered by test_share_kill_restart (stateless) and
	 * it_cluster_state's crash loop (3 kills, with state) */
	if (!env_on("SV_CLUSTER_LONG")) {
		printf("[crash_loop] skipped: SV_CLUSTER_LONG=1 runs it (30 "
		       "kills)\n");
		skip();
	}
	cluster_t *cl = cl_new(state, "crash_loop", 31, 2);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	cl_node_start(cl, 0, NULL, NULL);
	cl_node_start(cl, 1, NULL, NULL);
	char *spec = cr_job_spec(c, j);
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	int both[] = {2, 2};
	cl_wait_split(cl, j->id, both, 30000, "shared");
	int kills = 30;
	cr_producer_start(&c->prod, c->in_topic, 4000000, 2000);
	int within = 0, beyond = 0;
	for (int k = 0; k < kills; k++) {
		usleep((useconds_t)(1000 + rnd(&c->rng) % 4000) * 1000);
		int victim = (int)(rnd(&c->rng) % 2), other = 1 - victim;
		/* every other kill waits out the session timeout */
		bool late = k % 2 == 1;
		int64_t rb0 = cl_node_dist(cl, other, j->id, "rebalances");
		cl_node_kill(cl, victim);
		int down_ms = (int)(rnd(&c->rng) % 3000);
		if (late)
			printf("[%s %6.1fs] kill -9 %s; restart once the other "
			       "node holds every partition (beyond the session "
			       "timeout)\n",
			       c->test, cr_secs(c), cl->n[victim].id);
		else
			printf("[%s %6.1fs] kill -9 %s; restart after %d ms "
			       "(within the session timeout)\n",
			       c->test, cr_secs(c), cl->n[victim].id, down_ms);
		fflush(stdout);
		if (late) {
			int alone[] = {-1, -1};
			alone[other] = 4;
			cl_wait_split(cl, j->id, alone, 30000,
				      "the other node holds every partition");
		} else {
			usleep((useconds_t)down_ms * 1000);
		}
		cl_node_start(cl, victim, NULL, NULL);
		cl_wait_split(cl, j->id, both, 40000, "shared again");
		int64_t rb1 = cl_node_dist(cl, other, j->id, "rebalances");
		printf("[ cluster ] kill %d (%s): the other node gave back "
		       "partitions %" PRId64 " time(s) meanwhile\n",
		       k + 1, late ? "beyond session" : "within session",
		       rb1 - rb0);
		*(late ? &beyond : &within) += 1;
	}
	atomic_store(&c->prod.stop, true);
	tally_t unc,
		t = cl_finish(cl, j, &unc, "asserted",
			      "negative control: duplicates asserted");
	printf("[ cluster ] KILLS within session %d, beyond %d\n", within,
	       beyond);
	if (!cr_exact(&t))
		cr_fail(c,
			"exactly-once output is not exact after %d kills "
			"(SUMMARY above)",
			kills);
	if (!unc.dup)
		cr_fail(c, "negative control: %d kills left no aborted output",
			kills);
	c->passed = true;
	cl_free(cl);
}

/* ---- scale 1 -> 2 -> 3 -> 2 -> 1 nodes while input flows ---- */

static void test_scale(void **state)
{
	cluster_t *cl = cl_new(state, "scale", 29, 3);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	cl_node_start(cl, 0, NULL, NULL);
	char *spec = cr_job_spec(c, j);
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	int one[] = {4, -1, -1};
	cl_wait_split(cl, j->id, one, 30000, "1 node");
	int cycles = env_on("SV_CLUSTER_LONG") ? 10 : 1;
	cr_producer_start(&c->prod, c->in_topic, 2000000, 2000);
	int two[] = {2, 2, -1};
	int three[] = {-2, -2, -2};
	for (int k = 0; k < cycles; k++) {
		printf("[%s %6.1fs] cycle %d of %d: 1 -> 2 -> 3 -> 2 -> 1\n",
		       c->test, cr_secs(c), k + 1, cycles);
		cl_node_start(cl, 1, NULL, NULL);
		cl_wait_split(cl, j->id, two, 30000, "2 nodes");
		cl_node_start(cl, 2, NULL, NULL);
		cl_wait_split(cl, j->id, three, 30000, "3 nodes");
		/* a static member sends no LeaveGroup: its partitions move
		 * after the session timeout */
		cl_node_term(cl, 2, 20000);
		cl_wait_split(cl, j->id, two, 30000, "2 nodes (n3 stopped)");
		cl_node_term(cl, 1, 20000);
		cl_wait_split(cl, j->id, one, 30000, "1 node (n2 stopped)");
	}
	atomic_store(&c->prod.stop, true); /* the input ends here */
	tally_t unc,
		t = cl_finish(cl, j, &unc, "asserted",
			      "graceful leaves: reported, not asserted");
	int64_t rb = cl_node_dist(cl, 0, j->id, "rebalances");
	printf("[ cluster ] n1: revokes acknowledged after a checkpoint "
	       "%" PRId64 "\n",
	       rb);
	if (!cr_exact(&t))
		cr_fail(c,
			"exactly-once output is not exact across the "
			"scaling (SUMMARY above)");
	if (rb < 4)
		cr_fail(c,
			"n1 acknowledged %" PRId64 " revokes, expected one "
			"per membership change (4)",
			rb);
	c->passed = true;
	cl_free(cl);
}

/* ---- a frozen node (SIGSTOP) past the session timeout, then resumed ---- */

static void test_zombie_sigstop(void **state)
{
	cluster_t *cl = cl_new(state, "zombie_stop", 17, 2);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	cl_node_start(cl, 0, NULL, NULL);
	cl_node_start(cl, 1, NULL, NULL);
	char *spec = cr_job_spec(c, j);
	j->id = cl_submit(cl, 1, spec);
	free(spec);
	int both[] = {2, 2};
	cl_wait_split(cl, j->id, both, 30000, "shared");
	cr_producer_start(&c->prod, c->in_topic, 20000, 2000);
	cl_wait_uncommitted(cl, 0, j->id, 100);
	kill(cl->n[0].pid, SIGSTOP);
	cl->n[0].stopped = true;
	printf("[%s %6.1fs] SIGSTOP n1 (output in an open transaction)\n",
	       c->test, cr_secs(c));
	int64_t ends0[PARTS] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
	int64_t at[PARTS];
	cr_group_at_end(c, j, ends0, at);
	int only2[] = {-1, 4};
	cl_wait_split(cl, j->id, only2, 40000,
		      "n2 took the frozen n1's partitions");
	wait_committed_past(cl, j, at, 30000, "n2 committed every partition");
	kill(cl->n[0].pid, SIGCONT);
	cl->n[0].stopped = false;
	printf("[%s %6.1fs] SIGCONT n1\n", c->test, cr_secs(c));
	cl_wait_split(cl, j->id, both, 40000, "n1 rejoined, shared again");
	int64_t fenced = cl_node_dist(cl, 0, j->id, "commits_fenced");
	int64_t lost = cl_node_dist(cl, 0, j->id, "partitions_lost");
	printf("[ cluster ] SIGSTOPped n1 after SIGCONT: commits fenced "
	       "%" PRId64 ", assignments lost %" PRId64 "\n",
	       fenced, lost);
	tally_t unc,
		t = cl_finish(cl, j, &unc, "asserted",
			      "negative control: duplicates asserted");
	if (!cr_exact(&t))
		cr_fail(c,
			"exactly-once output is not exact after the frozen "
			"node resumed (SUMMARY above)");
	if (!unc.dup)
		cr_fail(c,
			"negative control: the freeze left no aborted "
			"output (read_uncommitted has no duplicates)");
	if (fenced + lost < 1)
		cr_fail(c,
			"the resumed node was neither fenced nor told its "
			"assignment was lost");
	c->passed = true;
	cl_free(cl);
}

/* ---- a member stuck in a checkpoint past max.poll.interval.ms ---- */

#define DELAY_MS 16000 /* > max poll 7 s + session 6 s + a takeover */

static void zombie_delay(void **state, const char *test, bool groupid_only)
{
	cluster_t *cl = cl_new(state, test, groupid_only ? 23 : 19, 2);
	crash_t *c = cl->c;
	/* the stuck member's transaction must outlive the delay, so that
	 * only the group can refuse its commit */
	cjob_t *j = cr_add_job(c, "eo-pass", J_PASS, S_KAFKA, true);
	j->sink_extra = "\"transaction_timeout_ms\": 30000";
	/* n1: every checkpoint that holds partitions sleeps DELAY_MS right
	 * after its group metadata was read; max poll 7 s */
	FILE *f = fopen(cl->n[0].config, "a");
	fprintf(f, "  max_poll_interval_ms: 7000\n");
	fclose(f);
	cl_node_start(cl, 1, NULL, NULL);
	char *spec = cr_job_spec(c, j);
	j->id = cl_submit(cl, 1, spec);
	free(spec);
	int alone[] = {-1, 4};
	cl_wait_split(cl, j->id, alone, 30000, "n2 alone");
	cr_producer_start(&c->prod, c->in_topic, 30000, 2000);
	char env[64];
	snprintf(env, sizeof(env),
		 "STREAMVISOR_DELAY_AT=after_group_metadata:%d", DELAY_MS);
	cl_node_start(cl, 0, env,
		      groupid_only ? "STREAMVISOR_TEST_GROUPID_CGMD=1" : NULL);
	int both[] = {2, 2};
	cl_wait_split(cl, j->id, both, 30000,
		      "n1 joined (stuck at its first "
		      "checkpoint from now on)");
	int64_t ends0[PARTS] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
	int64_t at[PARTS];
	cr_group_at_end(c, j, ends0, at);
	cl_wait_split(cl, j->id, alone, 40000,
		      "n2 took the stuck member's partitions");
	wait_committed_past(cl, j, at, 30000, "n2 committed every partition");
	/* the stuck member wakes and tries to commit: refused, or (without
	 * fencing) a checkpoint newer than the one it was stuck in */
	int64_t before = last_ck(cl, 0, j->id);
	int64_t deadline = sv_mono_ms() + 30000;
	int64_t fenced = 0, ck = -1;
	for (;;) {
		fenced = cl_node_dist(cl, 0, j->id, "commits_fenced");
		ck = last_ck(cl, 0, j->id);
		if (groupid_only ? ck > before : fenced >= 1)
			break;
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"the stuck member's commit: neither fenced "
				"nor committed within 30 s");
		usleep(100000);
	}
	if (!groupid_only) { /* the same count in /metrics, with the node */
		char *m = NULL;
		cr_http_do(cl->n[0].port, "GET", "/metrics", NULL, &m, 5000);
		const char *line = m
			? strstr(m, "\nstreamvisor_commits_fenced_total{")
			: NULL;
		const char *eol = line ? strchr(line + 1, '\n') : NULL;
		const char *sp = eol ? memrchr(line, ' ', (size_t)(eol - line))
				     : NULL;
		if (!line || !eol || !strstr(line, "node=\"n1\"") ||
		    strstr(line, "node=\"n1\"") > eol || !sp ||
		    atof(sp + 1) < 1)
			cr_fail(c,
				"/metrics of n1 has no "
				"streamvisor_commits_fenced_total >= 1 "
				"labelled node=\"n1\"");
		free(m);
	}
	printf("[ cluster ] stuck member woke: %s\n",
	       groupid_only ? "its commit was ACCEPTED (group-id-only metadata)"
			    : "its commit was refused (rebalance class)");
	/* it would be stuck again at every checkpoint: kill it and start it
	 * without the delay; the same transactional id aborts what it left
	 * open */
	cl_node_kill(cl, 0);
	cl_node_start(cl, 0, NULL, NULL);
	int both2[] = {2, 2};
	cl_wait_split(cl, j->id, both2, 40000, "n1 back without the delay");
	tally_t unc,
		t = cl_finish(cl, j, &unc,
			      groupid_only ? "negative control: duplicates "
					     "asserted"
					   : "asserted",
			      "aborted output shown, not asserted");
	if (groupid_only) {
		if (!t.dup)
			cr_fail(c,
				"negative control: with group-id-only "
				"metadata the zombie's commit left no "
				"duplicates");
	} else if (!cr_exact(&t)) {
		cr_fail(c,
			"exactly-once output is not exact after the stuck "
			"member's commit (SUMMARY above)");
	}
	c->passed = true;
	cl_free(cl);
}

static void test_zombie_delay(void **state)
{
	zombie_delay(state, "zombie_delay", false);
}

static void test_zombie_delay_groupid_only(void **state)
{
	zombie_delay(state, "zombie_delay_neg", true);
}

/* ---- a node joins while the only member is inside a checkpoint ---- */

/* Node i's observations of the job recorded at or after since_ms (wall
 * clock ms), oldest first, all pages (caller frees); NULL: no answer. */
static json_t *obs_since(cluster_t *cl, int i, const char *id, int64_t since_ms)
{
	json_t *all = json_array();
	int64_t after = 0;
	for (;;) {
		char path[200], *resp = NULL;
		snprintf(path, sizeof(path),
			 "/v1/jobs/%s/observations?after=%" PRId64
			 "&limit=1000",
			 id, after);
		int st = cr_http_do(cl->n[i].port, "GET", path, NULL, &resp,
				    5000);
		json_t *o = st == 200 ? json_loads(resp, 0, NULL) : NULL;
		free(resp);
		json_t *a = o ? json_object_get(o, "observations") : NULL;
		if (!json_is_array(a)) {
			json_decref(o);
			json_decref(all);
			return NULL;
		}
		size_t k;
		json_t *r;
		json_array_foreach (a, k, r) {
			if (cr_jint(r, "time_ms", 0) >= since_ms)
				json_array_append(all, r);
		}
		int64_t next = cr_jint(o, "next_after", after);
		size_t n = json_array_size(a);
		json_decref(o);
		if (!n || next <= after)
			return all;
		after = next;
	}
}

static bool obs_is(json_t *r, const char *kind)
{
	const char *k = json_string_value(json_object_get(r, "kind"));
	return k && !strcmp(k, kind);
}

/* Index of the first record of obs from index `from` of the kind (and
 * with checkpoint_id ck unless ck < 0), or -1. */
static int obs_find(json_t *obs, int from, const char *kind, int64_t ck)
{
	for (size_t k = (size_t)(from < 0 ? 0 : from); k < json_array_size(obs);
	     k++) {
		json_t *r = json_array_get(obs, k);
		if (obs_is(r, kind) &&
		    (ck < 0 || cr_jint(r, "checkpoint_id", -1) == ck))
			return (int)k;
	}
	return -1;
}

/* Until n1's newest checkpoint_started has not completed and began at
 * most 300 ms ago (it is in the delay before its prepare): its id. */
static int64_t wait_fresh_checkpoint(cluster_t *cl, const char *id)
{
	int64_t deadline = sv_mono_ms() + 30000;
	for (;;) {
		int64_t now = sv_now_ms();
		json_t *obs = obs_since(cl, 0, id, now - 5000);
		int64_t ck = -1;
		for (size_t k = 0; obs && k < json_array_size(obs); k++) {
			json_t *r = json_array_get(obs, k);
			if (obs_is(r, "checkpoint_started") &&
			    now - cr_jint(r, "time_ms", 0) <= 300)
				ck = cr_jint(r, "checkpoint_id", -1);
			else if (obs_is(r, "checkpoint_started") ||
				 ((obs_is(r, "checkpoint_completed") ||
				   obs_is(r, "checkpoint_failed")) &&
				  cr_jint(r, "checkpoint_id", -1) == ck))
				ck = -1;
		}
		json_decref(obs);
		if (ck >= 0)
			return ck;
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c,
				"n1 began no checkpoint within 30 s (each "
				"should take the 3 s delay)");
		usleep(50000);
	}
}

/* One join of n2 while n1 is in checkpoint `ck`: 1 when the join came
 * during it and the order was checked, 0 when it came after it ended (the
 * join is tried again), fails the test when the order is wrong. */
static int rebalance_once(cluster_t *cl, cjob_t *j, int rep)
{
	crash_t *c = cl->c;
	int64_t ck = wait_fresh_checkpoint(cl, j->id);
	int64_t t0 = sv_now_ms();
	cl_node_start(cl, 1, NULL, NULL);
	int both[] = {2, 2};
	cl_wait_split(cl, j->id, both, 30000, "n2 joined");
	/* everything up to n2's assignment is in both logs once the split
	 * shows; n1's own assignment after the revoke too */
	json_t *o1 = obs_since(cl, 0, j->id, t0 - 5000);
	json_t *o2 = obs_since(cl, 1, j->id, t0);
	if (!o1 || !o2)
		cr_fail(c, "no observations from n%d", o1 ? 2 : 1);
	/* n2 joins the group when its source is bound */
	int b2 = obs_find(o2, 0, "source_bound", -1);
	int a2 = obs_find(o2, 0, "partitions_assigned", -1);
	int s1 = obs_find(o1, 0, "checkpoint_started", ck);
	int c1 = obs_find(o1, s1, "checkpoint_completed", ck);
	if (b2 < 0 || a2 < 0 || s1 < 0 || c1 < 0)
		cr_fail(c,
			"missing observations: n2 source_bound %d, n2 "
			"partitions_assigned %d, n1 checkpoint %" PRId64
			" started %d completed %d",
			b2, a2, ck, s1, c1);
	int64_t t_join = cr_jint(json_array_get(o2, (size_t)b2), "time_ms", 0);
	int64_t t_s1 = cr_jint(json_array_get(o1, (size_t)s1), "time_ms", 0);
	int64_t t_c1 = cr_jint(json_array_get(o1, (size_t)c1), "time_ms", 0);
	if (t_join < t_s1 || t_join >= t_c1) {
		printf("[%s %6.1fs] rep %d: n2 joined %" PRId64
		       " ms after checkpoint %" PRId64 " of n1 began, %" PRId64
		       " ms after it ended: not during it, again\n",
		       c->test, cr_secs(c), rep, t_join - t_s1, ck,
		       t_join - t_c1);
		json_decref(o1);
		json_decref(o2);
		return 0;
	}
	/* n1: the first revoke (or loss) after the join */
	int r1 = -1;
	for (size_t k = 0; k < json_array_size(o1) && r1 < 0; k++) {
		json_t *r = json_array_get(o1, k);
		if ((obs_is(r, "revoke_acked") ||
		     obs_is(r, "assignment_lost") ||
		     obs_is(r, "commit_fenced")) &&
		    cr_jint(r, "time_ms", 0) >= t_join)
			r1 = (int)k;
	}
	json_t *rv = r1 >= 0 ? json_array_get(o1, (size_t)r1) : NULL;
	if (!rv || !obs_is(rv, "revoke_acked"))
		cr_fail(c, "n1: after n2 joined, expected revoke_acked, got %s",
			rv ? json_string_value(json_object_get(rv, "kind"))
			   : "nothing");
	int64_t t_r1 = cr_jint(rv, "time_ms", 0);
	json_t *as = json_array_get(o2, (size_t)a2);
	int64_t t_a2 = cr_jint(as, "time_ms", 0);
	json_t *p2 = json_object_get(as, "partitions");
	/* n1's own assignment after the revoke: the partitions it kept */
	int a1 = obs_find(o1, r1, "partitions_assigned", -1);
	json_t *p1 = a1 >= 0
		? json_object_get(json_array_get(o1, (size_t)a1), "partitions")
		: NULL;
	/* the new owner starts where n1's last checkpoint before the
	 * acknowledgement (the revoke's own) left the moved partitions:
	 * their committed offsets carry its tag */
	int64_t last = -1;
	for (int k = 0; k < r1; k++) {
		json_t *r = json_array_get(o1, (size_t)k);
		if (obs_is(r, "checkpoint_completed"))
			last = cr_jint(r, "checkpoint_id", -1);
	}
	char want_tag[64];
	snprintf(want_tag, sizeof(want_tag), "n1-t0:%" PRId64, last);
	size_t k;
	json_t *v;
	json_array_foreach (json_object_get(as, "committed"), k, v) {
		const char *tag = json_string_value(json_object_get(v, "tag"));
		if (!tag || strcmp(tag, want_tag))
			cr_fail(c,
				"n2 took partition %" PRId64
				" at tag '%s', not n1's last checkpoint "
				"before the revoke ('%s')",
				cr_jint(v, "partition", -1),
				tag ? tag : "(none)", want_tag);
	}
	unsigned m1 = 0, m2 = 0;
	json_array_foreach (p1, k, v)
		m1 |= 1u << (unsigned)json_integer_value(v);
	json_array_foreach (p2, k, v)
		m2 |= 1u << (unsigned)json_integer_value(v);
	printf("[ cluster ] rep %d: n1 checkpoint %" PRId64 " began %" PRId64
	       " ms before n2 joined, completed %" PRId64
	       " ms after; n1 saw the revoke %" PRId64
	       " ms after that, acknowledged it after checkpoint %" PRId64
	       " (revoke_ack_ms %" PRId64 ") at +%" PRId64
	       " ms; n2 partitions_assigned +%" PRId64
	       " ms (0x%x at tag %s, n1 kept 0x%x)\n",
	       rep, ck, t_join - t_s1, t_c1 - t_join,
	       t_r1 - cr_jint(rv, "revoke_ack_ms", 0) - t_c1, last,
	       cr_jint(rv, "revoke_ack_ms", -1), t_r1 - t_join, t_a2 - t_join,
	       m2, want_tag, m1);
	if (c1 > r1 || t_c1 > t_r1)
		cr_fail(c,
			"n1 acknowledged the revoke before its checkpoint "
			"%" PRId64 " completed",
			ck);
	if (t_r1 > t_a2)
		cr_fail(c,
			"n2 took partitions (0x%x) %" PRId64
			" ms before n1 acknowledged the revoke",
			m2, t_r1 - t_a2);
	if (!m2 || !m1 || (m1 & m2) || (m1 | m2) != (1u << PARTS) - 1)
		cr_fail(c,
			"the partitions did not move as a split: n1 0x%x, "
			"n2 0x%x",
			m1, m2);
	json_decref(o1);
	json_decref(o2);
	return 1;
}

static void test_rebalance_during_checkpoint(void **state)
{
	cluster_t *cl = cl_new(state, "rebalance_ckpt", 37, 2);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	/* every checkpoint of n1 waits 3 s before its prepare */
	cl_node_start(cl, 0, "STREAMVISOR_DELAY_AT=before_prepare:3000", NULL);
	char *spec = cr_job_spec(c, j);
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	int alone[] = {4, -1};
	cl_wait_split(cl, j->id, alone, 30000, "n1 alone");
	cr_producer_start(&c->prod, c->in_topic, 4000000, 2000);
	int reps = env_on("SV_CLUSTER_LONG") ? 10 : 1, done = 0, tries = 0;
	while (done < reps) {
		if (++tries > reps + 3)
			cr_fail(c,
				"n2 joined outside n1's checkpoint %d "
				"times",
				tries - 1 - done);
		done += rebalance_once(cl, j, done + 1);
		/* n2 leaves (a static member: after the session timeout) */
		cl_node_term(cl, 1, 20000);
		cl_wait_split(cl, j->id, alone, 30000, "n1 alone again");
	}
	atomic_store(&c->prod.stop, true);
	tally_t unc,
		t = cl_finish(cl, j, &unc, "asserted",
			      "no kill: reported, not asserted");
	printf("[ cluster ] REBALANCES during a checkpoint %d (joins %d)\n",
	       done, tries);
	if (!cr_exact(&t))
		cr_fail(c,
			"exactly-once output is not exact across the "
			"rebalances during checkpoints (SUMMARY above)");
	c->passed = true;
	cl_free(cl);
}

int main(void)
{
	cl_test_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_share_kill_restart, cl_teardown),
		cmocka_unit_test_teardown(test_crash_loop, cl_teardown),
		cmocka_unit_test_teardown(test_scale, cl_teardown),
		cmocka_unit_test_teardown(test_zombie_sigstop, cl_teardown),
		cmocka_unit_test_teardown(test_zombie_delay, cl_teardown),
		cmocka_unit_test_teardown(test_zombie_delay_groupid_only,
					  cl_teardown),
		cmocka_unit_test_teardown(test_rebalance_during_checkpoint,
					  cl_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
