/* it_cluster_bounded.c — bounded jobs in distributed mode with real
 * `streamvisor serve` processes on loopback and the real broker
 * (docs/cluster.md "Bounded jobs"; SCALE-OUT.md §8 T10).
 *
 * The input is the crash rig's records (crashkit.h fmt_record: seq, k,
 * ts) on a topic of its own with 8 partitions (record i in partition
 * i mod 8, so partition p ends at offset n/8), written before the submit;
 * more records (seq >= n) are written after it, past the end offsets the
 * submit fixed, and must not show up (they count as `unexpected`). The job
 * is a passthrough (`filter`) into a Kafka topic, read by each member at
 * source.rate_per_s so that it lasts long enough to kill a node in the
 * middle, submitted to one node only.
 *
 *   test_bounded_kill (T10): an exactly-once bounded job over 8 partitions
 *     on 3 nodes; n3 is killed -9 midway while it has output in an open
 *     transaction. n1 and n2 take its partitions after the session
 *     timeout and finish them; the job is `completed` on n1 and n2, then
 *     on n3 once restarted (from its data dir: it learns it from the
 *     group's committed offsets), and on each node exactly once (its logs
 *     hold one transition to completed). The end offsets in every node's
 *     status are the input's end, the group's committed offsets equal them,
 *     and the read_committed output holds every input record once and
 *     nothing else (0/0/0/0); the read_uncommitted view must hold
 *     duplicates (the kill left aborted output), the negative control.
 *     Once by default, 3 times with SV_CLUSTER_LONG=1.
 *   test_bounded_alo_rebalance: the same job at_least_once, started on n1
 *     alone; n2 joins midway, so n1 gives partitions back through the
 *     at-least-once revoke (flush, synchronous offset commit, then the
 *     acknowledgement); completed on both; 0 missing, 0 wrong, 0
 *     unexpected, duplicates allowed (reported). First, a windowed
 *     bounded job is refused with 422.
 *   test_parallel2_share: the crash rig's exactly-once passthrough (4
 *     partitions) at parallelism 2 on n1 and n2: four static members
 *     <node>-t<k>, one partition each, each under its own transactional
 *     id; n2 killed -9 with output open and restarted; exact.
 *   test_restart_cluster_wide: the passthrough with on_invalid fail and
 *     restart.max_attempts 4 on two nodes, an invalid record on each
 *     node's partitions: both give up, after at most 5 failed attempts
 *     in all (per-node counting would allow 8).
 *
 * Every wait is for a condition with a deadline. Figures are printed as
 * `[ cluster ]` lines. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "tests/integration/clusterkit.h"
#include "tests/integration/testkit.h"

#define BPARTS 8
#define N_IN 12000 /* records before the submit (a multiple of BPARTS) */
#define N_AFTER 800 /* records after it, past the end offsets */
/* records per second per member: slow enough that the first node,
 * which runs the job about a second before the others adopted it from
 * the registry, leaves most of every partition to its later owner */
#define RATE 600

/* Write seq first..first+n-1 (record i in partition i mod BPARTS). */
static void produce_seq(const char *topic, int64_t first, int64_t n)
{
	char **v = sv_calloc((size_t)n, sizeof(char *));
	for (int64_t i = 0; i < n; i++) {
		char buf[160];
		fmt_record(buf, sizeof(buf), first + i);
		v[i] = sv_strdup(buf);
	}
	tk_produce(topic, (const char *const *)v, (size_t)n);
	for (int64_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static char *bounded_spec(crash_t *c, cjob_t *j, const char *in)
{
	char *s;
	if (asprintf(&s,
		     "{\"name\": \"%s-%s\", \"mode\": \"bounded\","
		     " \"source\": {\"kind\": \"kafka\", \"topic\": \"%s\","
		     "   \"rate_per_s\": %d},"
		     " \"schema\": [{\"name\": \"seq\", \"type\": \"int64\"},"
		     "   {\"name\": \"k\", \"type\": \"string\"},"
		     "   {\"name\": \"ts\", \"type\": \"int64\"}],"
		     " \"pipeline\": [{\"filter\": \"seq >= 0\"}],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\","
		     "   \"transaction_timeout_ms\": 10000},"
		     " \"delivery\": \"%s\","
		     " \"checkpoint\": {\"interval_ms\": %d, \"retain\": 3},"
		     " \"restart\": {\"max_attempts\": 100,"
		     "   \"initial_backoff_ms\": 100, \"max_backoff_ms\": "
		     "2000}}",
		     c->test, j->label, in, RATE, j->out,
		     j->exactly_once ? "exactly_once" : "at_least_once",
		     CK_MS) < 0)
		abort();
	return s;
}

static const char *node_state(cluster_t *cl, int i, const char *id, char *buf,
			      size_t len)
{
	json_t *o = cl_node_job(cl, i, id);
	const char *s = o ? json_string_value(json_object_get(o, "state"))
			  : NULL;
	snprintf(buf, len, "%s", s ? s : "?");
	json_decref(o);
	return buf;
}

/* Until every node in mask reports the job completed; ms waited. A
 * terminal state other than completed fails at once. */
static int64_t wait_completed(cluster_t *cl, const char *id, unsigned mask,
			      int timeout_ms)
{
	int64_t t0 = sv_mono_ms(), deadline = t0 + timeout_ms;
	for (;;) {
		bool all = true;
		char got[160] = "";
		size_t off = 0;
		for (int i = 0; i < cl->nn; i++) {
			if (!(mask & (1u << i)))
				continue;
			char st[24];
			node_state(cl, i, id, st, sizeof(st));
			all = all && !strcmp(st, "completed");
			if (!strcmp(st, "failed") || !strcmp(st, "cancelled"))
				cr_fail(cl->c, "node %s: the job is %s",
					cl->n[i].id, st);
			off += (size_t)snprintf(got + off, sizeof(got) - off,
						"%s%s=%s", off ? " " : "",
						cl->n[i].id, st);
		}
		if (all)
			return sv_mono_ms() - t0;
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c,
				"the job was not completed within %d ms "
				"(%s)",
				timeout_ms, got);
		usleep(100000);
	}
}

/* Transitions to completed in every log of node i (all incarnations). */
static int completions(cluster_t *cl, int i, const char *id)
{
	int n = 0;
	for (int inc = 1; inc <= cl->n[i].incarnation; inc++) {
		char path[800];
		snprintf(path, sizeof(path), "%s/logs/%s-%02d.log", cl->c->root,
			 cl->n[i].id, inc);
		char *s = cr_slurp(path, NULL);
		for (const char *p = s; p && (p = strstr(p, "-> completed"));
		     p++) {
			/* the line is the job's: its id is on it */
			const char *bol = p;
			while (bol > s && bol[-1] != '\n')
				bol--;
			if (memmem(bol, (size_t)(p - bol), id, strlen(id)))
				n++;
		}
		free(s);
	}
	return n;
}

/* The node's view of the end offsets equals want[] (BPARTS). */
static void check_ends(cluster_t *cl, int i, const char *id,
		       const int64_t *want)
{
	json_t *o = cl_node_job(cl, i, id);
	json_t *a = o ? json_object_get(json_object_get(o, "distributed"),
					"end_offsets")
		      : NULL;
	if (json_array_size(a) != BPARTS)
		cr_fail(cl->c, "node %s shows %zu end offsets, not %d",
			cl->n[i].id, json_array_size(a), BPARTS);
	for (int p = 0; p < BPARTS; p++)
		if (json_integer_value(json_array_get(a, (size_t)p)) != want[p])
			cr_fail(cl->c,
				"node %s: end offset of partition %d is "
				"%" PRId64 ", the input ended at %" PRId64,
				cl->n[i].id, p,
				(int64_t)json_integer_value(
					json_array_get(a, (size_t)p)),
				want[p]);
	json_decref(o);
}

/* The group's committed offsets on the input equal want[]. */
static void check_group(crash_t *c, const char *id, const char *in,
			const int64_t *want)
{
	char group[200];
	snprintf(group, sizeof(group), "streamvisor-%s", id);
	rd_kafka_t *rk = cr_client(c, RD_KAFKA_CONSUMER, group,
				   "read_committed", false);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
		BPARTS);
	for (int p = 0; p < BPARTS; p++)
		rd_kafka_topic_partition_list_add(l, in, p);
	rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 10000);
	for (int p = 0; !e && p < BPARTS; p++)
		if (l->elems[p].offset != want[p])
			cr_fail(c,
				"group offset of partition %d is %" PRId64
				", not the end offset %" PRId64,
				p, l->elems[p].offset, want[p]);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_destroy(rk);
	if (e)
		cr_fail(c, "committed(): %s", rd_kafka_err2str(e));
}

static int64_t node_int(cluster_t *cl, int i, const char *id, const char *k)
{
	json_t *o = cl_node_job(cl, i, id);
	int64_t v = o ? cr_jint(o, k, -1) : -1;
	json_decref(o);
	return v;
}

/* ---- T10: exactly once over 8 partitions on 3 nodes, one killed ---- */

static void bounded_kill_once(void **state, int run)
{
	char name[32];
	snprintf(name, sizeof(name), "bounded_kill%d", run);
	cluster_t *cl = cl_new(state, sv_strdup(name), 31 + (unsigned)run, 3);
	crash_t *c = cl->c;
	char *in = tk_unique("it-bounded-in");
	tk_create_topic(in, BPARTS);
	produce_seq(in, 0, N_IN);
	c->n = N_IN;
	int64_t ends[BPARTS];
	for (int p = 0; p < BPARTS; p++)
		ends[p] = N_IN / BPARTS;
	cjob_t *j = cr_add_job(c, "eo-bounded", J_PASS, S_KAFKA, true);
	for (int i = 0; i < 3; i++)
		cl_node_start(cl, i, NULL, NULL);
	char *spec = bounded_spec(c, j, in);
	int64_t t_submit = sv_mono_ms();
	j->id = cl_submit(cl, 0, spec); /* to n1 only */
	free(spec);
	/* past the end offsets the submit fixed: never part of the job */
	produce_seq(in, N_IN, N_AFTER);
	printf("[%s %6.1fs] submitted %s to n1; %d records after it\n", c->test,
	       cr_secs(c), j->id, N_AFTER);

	/* midway: n3 has read a share and has output in an open
	 * transaction */
	int64_t deadline = sv_mono_ms() + 40000;
	while (node_int(cl, 2, j->id, "records_in") < N_IN / 10) {
		if (sv_mono_ms() > deadline)
			cr_fail(c, "n3 did not read %d records within 40 s",
				N_IN / 10);
		usleep(50000);
	}
	cl_wait_uncommitted(cl, 2, j->id, 50);
	int64_t n3_in = node_int(cl, 2, j->id, "records_in");
	int64_t t_kill = sv_mono_ms();
	cl_node_kill(cl, 2);
	printf("[%s %6.1fs] kill -9 n3 after it read %" PRId64
	       " records (output in an open transaction)\n",
	       c->test, cr_secs(c), n3_in);
	for (int i = 0; i < 2; i++)
		check_ends(cl, i, j->id, ends);

	wait_completed(cl, j->id, 0x3, 120000);
	int64_t now = sv_mono_ms();
	printf("[ cluster ] bounded, 8 partitions, 3 nodes, n3 killed -9: "
	       "submit -> completed on n1 and n2 %" PRId64
	       " ms; kill -> completed %" PRId64 " ms (session.timeout.ms "
	       "%d, transaction_timeout_ms 10000)\n",
	       now - t_submit, now - t_kill, SESSION_MS);
	/* n3 comes back on its data dir: it learns the job is complete from
	 * the group's committed offsets */
	int64_t t_back = sv_mono_ms();
	cl_node_start(cl, 2, NULL, NULL);
	wait_completed(cl, j->id, 0x4, 60000);
	printf("[ cluster ] n3 restarted -> completed on n3 %" PRId64 " ms\n",
	       sv_mono_ms() - t_back);
	check_ends(cl, 2, j->id, ends);
	for (int i = 0; i < 3; i++) {
		int n = completions(cl, i, j->id);
		if (n != 1)
			cr_fail(c,
				"node %s logged %d transitions to completed, "
				"not 1",
				cl->n[i].id, n);
	}
	check_group(c, j->id, in, ends);

	tally_t t = cr_check_output(c, j, true);
	cr_summary(c, j, "read_committed", &t, "asserted");
	tally_t unc = cr_check_output(c, j, false);
	cr_summary(c, j, "read_uncommitted", &unc,
		   "negative control: duplicates asserted");
	if (!cr_exact(&t))
		cr_fail(c,
			"the bounded exactly-once output is not exact "
			"(SUMMARY above)");
	if (!unc.dup)
		cr_fail(c,
			"negative control: the kill left no aborted output "
			"(read_uncommitted has no duplicates), so the check "
			"above proved nothing");
	free(in);
	c->passed = true;
	cl_free(cl); /* the rig's teardown frees the rest */
}

static void test_bounded_kill(void **state)
{
	int runs = env_on("SV_CLUSTER_LONG") ? 3 : 1;
	for (int r = 0; r < runs; r++) {
		if (r) /* the previous run's rig */
			cr_teardown(state);
		bounded_kill_once(state, r + 1);
	}
}

/* ---- at-least-once in group mode: revoke -> flush -> commit -> ack ---- */

static void test_bounded_alo_rebalance(void **state)
{
	cluster_t *cl = cl_new(state, "bounded_alo", 41, 2);
	crash_t *c = cl->c;
	char *in = tk_unique("it-bounded-in");
	tk_create_topic(in, BPARTS);
	produce_seq(in, 0, N_IN);
	c->n = N_IN;
	cjob_t *j = cr_add_job(c, "alo-bounded", J_PASS, S_KAFKA, false);
	cl_node_start(cl, 0, NULL, NULL);
	char *spec = bounded_spec(c, j, in);
	/* a windowed bounded job is refused: its final windows would need
	 * task state moved between nodes */
	char *win = sv_strdup(spec), *at = strstr(win, "{\"filter\"");
	char *wspec;
	if (!at ||
	    asprintf(&wspec,
		     "%.*s{\"filter\": \"seq >= 0\"}, {\"window\": "
		     "{\"type\": \"tumbling\", \"time\": \"processing\", "
		     "\"size_ms\": 5000, "
		     "\"key\": [\"k\"], \"aggregates\": {\"n\": "
		     "\"count()\"}}}%s",
		     (int)(at - win), win, strstr(at, "}]") + 1) < 0)
		abort();
	char *resp = NULL;
	int st = cl_mutate(cl, 0, "POST", "/v1/jobs", wspec, &resp, 40000);
	if (st != 422 || !resp || !strstr(resp, "pipeline[1]") ||
	    !strstr(resp, "bounded"))
		cr_fail(c, "a windowed bounded job in distributed mode: %d %s",
			st, resp ? resp : "");
	printf("[%s %6.1fs] windowed bounded job refused: 422 %.160s\n",
	       c->test, cr_secs(c), resp);
	free(resp);
	free(wspec);
	free(win);
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	produce_seq(in, N_IN, N_AFTER);
	int64_t deadline = sv_mono_ms() + 40000;
	while (node_int(cl, 0, j->id, "records_in") < N_IN / 6) {
		if (sv_mono_ms() > deadline)
			cr_fail(c, "n1 did not read %d records within 40 s",
				N_IN / 6);
		usleep(50000);
	}
	cl_node_start(cl, 1, NULL, NULL); /* joins midway: n1 revokes */
	int64_t rb0 = -1;
	deadline = sv_mono_ms() + 30000;
	while ((rb0 = cl_node_dist(cl, 0, j->id, "rebalances")) < 1) {
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"n1 acknowledged no revoke within 30 s of "
				"n2's join");
		usleep(50000);
	}
	wait_completed(cl, j->id, 0x3, 120000);
	tally_t t = cr_check_output(c, j, false);
	cr_summary(c, j, "read_uncommitted", &t,
		   "asserted: 0 missing, 0 wrong, 0 unexpected; duplicates "
		   "allowed");
	printf("[ cluster ] at_least_once bounded, n2 joined midway: n1 "
	       "acknowledged %" PRId64 " revoke(s) after flush and commit; "
	       "duplicates %zu\n",
	       rb0, t.dup);
	if (t.missing || t.wrong || t.unexpected || t.got < t.expected)
		cr_fail(c,
			"at-least-once output lost or invented records "
			"(SUMMARY above)");
	free(in);
	c->passed = true;
}

/* ---- more than one member per node: parallelism 2 on 2 nodes ---- */

/* Node i's partitions by member: bit p of mask[k] when member k holds
 * partition p; fails when one names a member past 1. */
static void node_members(cluster_t *cl, int i, const char *id, unsigned mask[2])
{
	mask[0] = mask[1] = 0;
	json_t *o = cl_node_job(cl, i, id);
	json_t *parts = o ? json_object_get(o, "partitions") : NULL;
	size_t k;
	json_t *pe;
	json_array_foreach (parts, k, pe) {
		int64_t m = cr_jint(pe, "member", -1);
		if (m < 0 || m > 1)
			cr_fail(cl->c,
				"node %s: partition %d has member %" PRId64,
				cl->n[i].id, (int)cr_jint(pe, "partition", 0),
				m);
		mask[m] |= 1u << cr_jint(pe, "partition", 0);
	}
	json_decref(o);
}

static void test_parallel2_share(void **state)
{
	cluster_t *cl = cl_new(state, "par2_share", 51, 2);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	cl_node_start(cl, 0, NULL, NULL);
	cl_node_start(cl, 1, NULL, NULL);
	char *spec = cr_job_spec(c, j);
	char *par = strstr(spec, "\"parallelism\": 1");
	if (!par)
		cr_fail(c, "the rig's spec has no parallelism 1: %s", spec);
	par[strlen("\"parallelism\": ")] = '2';
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	int both[] = {2, 2};
	cl_wait_split(cl, j->id, both, 30000,
		      "4 members (n1-t0, n1-t1, n2-t0, n2-t1) over 4 "
		      "partitions");
	/* every member holds one partition, under its own transactional
	 * id */
	for (int i = 0; i < 2; i++) {
		unsigned m[2];
		int64_t deadline = sv_mono_ms() + 20000;
		for (node_members(cl, i, j->id, m); !m[0] || !m[1];
		     node_members(cl, i, j->id, m)) {
			if (sv_mono_ms() > deadline)
				cr_fail(c,
					"node %s: members hold 0x%x and 0x%x, "
					"not one partition each",
					cl->n[i].id, m[0], m[1]);
			usleep(100000);
		}
		json_t *o = cl_node_job(cl, i, j->id);
		json_t *ms = json_object_get(o, "members");
		for (int k = 0; k < 2; k++) {
			char want[200];
			snprintf(want, sizeof(want), "streamvisor-%s-%s-t%d",
				 j->id, cl->n[i].id, k);
			const char *got = json_string_value(
				json_object_get(json_array_get(ms, (size_t)k),
						"transactional_id"));
			if (!got || strcmp(got, want))
				cr_fail(c,
					"node %s member %d: transactional id "
					"%s, not %s",
					cl->n[i].id, k, got ? got : "(none)",
					want);
		}
		json_decref(o);
		printf("[%s %6.1fs] %s: t0 holds 0x%x, t1 holds 0x%x\n",
		       c->test, cr_secs(c), cl->n[i].id, m[0], m[1]);
	}
	cr_producer_start(&c->prod, c->in_topic, 12000, 2000);
	/* n2 is killed -9 with output open and restarted at once: its
	 * static members t0 and t1 rejoin, and their init_transactions
	 * abort what each left open */
	cl_wait_uncommitted(cl, 1, j->id, 50);
	cl_node_kill(cl, 1);
	printf("[%s %6.1fs] kill -9 n2 (output in open transactions); "
	       "restarted at once\n",
	       c->test, cr_secs(c));
	cl_node_start(cl, 1, NULL, NULL);
	cl_wait_split(cl, j->id, both, 40000, "n2 back, shared again");
	tally_t unc,
		t = cl_finish(cl, j, &unc, "asserted",
			      "negative control: duplicates asserted");
	if (!cr_exact(&t))
		cr_fail(c,
			"exactly-once output at parallelism 2 on 2 nodes is "
			"not exact (SUMMARY above)");
	if (!unc.dup)
		cr_fail(c, "negative control: the kill left no aborted output");
	c->passed = true;
}

/* ---- the restart policy counts attempts over the nodes ---- */

#define MAX_ATTEMPTS 4

static void test_restart_cluster_wide(void **state)
{
	cluster_t *cl = cl_new(state, "restart_wide", 61, 2);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	/* backoff above the status topic's propagation (~100-300 ms) */
	j->restart = "{\"max_attempts\": 4, \"initial_backoff_ms\": 500, "
		     "\"max_backoff_ms\": 1000, \"window_ms\": 600000}";
	cl_node_start(cl, 0, NULL, NULL);
	cl_node_start(cl, 1, NULL, NULL);
	char *spec0 = cr_job_spec(c, j), *spec;
	char *dl = strstr(spec0, "\"delivery\"");
	if (!dl ||
	    asprintf(&spec, "%.*s\"on_invalid\": \"fail\", %s",
		     (int)(dl - spec0), spec0, dl) < 0)
		abort();
	free(spec0);
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	int both[] = {2, 2};
	cl_wait_split(cl, j->id, both, 30000, "shared");
	/* an invalid record in partitions 0 and 3: one on each node, so
	 * every attempt on either node fails */
	char rec1[160], rec2[160];
	fmt_record(rec1, sizeof(rec1), 1);
	fmt_record(rec2, sizeof(rec2), 2);
	const char *bad[] = {"not json", rec1, rec2, "not json either"};
	tk_produce(c->in_topic, bad, 4);
	int64_t deadline = sv_mono_ms() + 90000;
	int64_t failures = 0;
	for (;;) {
		bool both_failed = true;
		failures = 0;
		for (int i = 0; i < 2; i++) {
			char st[24];
			node_state(cl, i, j->id, st, sizeof(st));
			both_failed = both_failed && !strcmp(st, "failed");
			int64_t r = node_int(cl, i, j->id, "restarts");
			failures += r >= 0 ? r + 1 : 0;
		}
		if (both_failed)
			break;
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"the job did not fail on both nodes within "
				"90 s");
		usleep(100000);
	}
	int exhausted = 0;
	for (int i = 0; i < 2; i++) {
		json_t *o = cl_node_job(cl, i, j->id);
		json_t *e = json_object_get(o, "error");
		const char *cat = json_string_value(
			json_object_get(e, "category"));
		printf("[%s %6.1fs] %s: failed after %" PRId64
		       " restarts: %s: %.160s\n",
		       c->test, cr_secs(c), cl->n[i].id,
		       cr_jint(o, "restarts", -1), cat ? cat : "?",
		       json_string_value(json_object_get(e, "message")));
		exhausted += cat && !strcmp(cat, "retry_exhausted");
		json_decref(o);
	}
	printf("[ cluster ] restart policy max_attempts %d over 2 nodes: "
	       "%" PRId64
	       " failed attempts in all (per-node counting allows %d)\n",
	       MAX_ATTEMPTS, failures, 2 * MAX_ATTEMPTS);
	if (!exhausted)
		cr_fail(c, "no node gave up with retry_exhausted");
	/* at most one more per node than max: the two nodes fail in
	 * lockstep (the same poison record), and each decides on its own
	 * failure before it can read the other's failure of that moment
	 * (3 + 3 with max 4); per-node counting gives 8 */
	if (failures > MAX_ATTEMPTS + 2)
		cr_fail(c,
			"%" PRId64
			" failed attempts over the nodes: the policy "
			"counted per node, not cluster-wide",
			failures);
	c->passed = true;
}

int main(void)
{
	cl_test_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bounded_kill, cl_teardown),
		cmocka_unit_test_teardown(test_bounded_alo_rebalance,
					  cl_teardown),
		cmocka_unit_test_teardown(test_parallel2_share, cl_teardown),
		cmocka_unit_test_teardown(test_restart_cluster_wide,
					  cl_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
