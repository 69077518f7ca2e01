/* it_cluster_state.c — task state moves between nodes through Kafka
 * (docs/cluster.md "State between nodes"; SCALE-OUT.md §8 T5).
 *
 * The crash rig's exactly-once tumbling window (eo-window: count, sum,
 * min and max per key and 5 s window) runs in distributed mode on two
 * real `streamvisor serve` nodes over the keyed input (each record in the
 * partition Kafka's partitioner gives its key, source.partitioned_by
 * ["k"]), so each node holds one task per partition it is assigned. A
 * random node is killed -9 every 1-5 s, preferably while it has window
 * output in an open transaction, and restarted either within the session
 * timeout (a static rejoin: its own partitions come back and it restores
 * them from its local cache) or once the other node holds every partition
 * (the other node restored the victim's partitions from the state topic;
 * when the victim returns, the eager rebalance moves two partitions back,
 * whose state it reads from the topic, written by the other node).
 *
 * After the kills the input ends with one sentinel per partition (its
 * event time fires every window); once the job's group committed the
 * input's end, the output is read with read_committed and checked against
 * the offline window computation: 0 duplicated / 0 missing / 0 wrong /
 * 0 unexpected. The read_uncommitted view, which shows the killed
 * transactions' window rows next to their re-fired copies, is the negative
 * control: it must have duplicates. The nodes' logs must show restores
 * from the cache and from the state topic, at least one each, and at
 * least one restore from the state topic that applied a delta (the
 * snapshots are incremental, docs/cluster.md: every other restart within
 * the session runs without its local cache, STREAMVISOR_TEST_NO_STATE_CACHE,
 * so its own partitions' chains are read from the topic); their bytes,
 * seconds and deltas are printed as `[ cluster ]` lines.
 *
 * 3 kills by default; SV_CLUSTER_LONG=1 gives 30; SV_CLUSTER_NODES=3 runs
 * it on three nodes.
 *
 * test_budget_and_refusals: one node with
 * distributed.state_budget_bytes_per_s 1 refuses the window job with
 * at_least_once delivery (422, delivery) and without partitioned_by (422,
 * pipeline[1]), runs it as it should be, and fails it at its first
 * checkpoint with the error naming the budget and the measured volume. */
#define _GNU_SOURCE
#include <dirent.h>
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

/* The window job's spec as distributed mode runs it: parallelism 1 per
 * node, the source partitioned by k (the keyed input of cr_par > 1), and a
 * dedup on (k, seq) within 20 s of event time before the window. seq is
 * unique, so the dedup passes every record (the window's expected output
 * is unchanged), but it holds a state of about 5000 entries per task of
 * which each checkpoint (500 ms, about 1000 records) adds and expires
 * only a few percent: its task records are mostly short deltas, so the
 * chains on the state topic run several deltas long, and a restored dedup
 * state with one entry too many would drop a replayed record (missing). */
static char *window_spec(crash_t *c, cjob_t *j)
{
	char *s = cr_job_spec(c, j);
	json_error_t je;
	json_t *o = json_loads(s, 0, &je);
	if (!o)
		cr_fail(c, "the rig's spec is not JSON: %s", je.text);
	free(s);
	json_object_set_new(o, "parallelism", json_integer(1));
	json_object_set_new(json_object_get(o, "source"), "partitioned_by",
			    json_pack("[s]", "k"));
	json_array_insert_new(json_object_get(o, "pipeline"), 1,
			      json_pack("{s:{s:[s, s], s:i}}", "dedup", "key",
					"k", "seq", "within_ms", 20000));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

typedef struct restores {
	int cache, topic, memory;
	int64_t bytes[2];
	int64_t ms[2], ms_max[2];
	int with_deltas[2], deltas[2], deltas_max[2];
	int sanitizer; /* reports of an asan build's nodes */
} restores_t;

/* Count the restores the nodes' logs report ("partition P: restored the
 * snapshot tagged 'T' from the local cache|state topic (B bytes, M ms,
 * next offset O, D deltas applied)"). */
static restores_t scan_restores(crash_t *c)
{
	restores_t r = {0};
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/logs", c->root);
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strstr(de->d_name, ".log"))
			continue;
		char path[1200];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		char *text = cr_slurp(path, NULL);
		for (char *p = text; p &&
		     (p = strstr(p,
				 "restored the "
				 "snapshot tagged"));
		     p++) {
			char *eol = strchr(p, '\n');
			char *from = strstr(p, "' from the ");
			if (!from || (eol && from > eol))
				continue;
			from += strlen("' from the ");
			int k = !strncmp(from, "local cache", 11) ? 0 : 1;
			long long b = 0, ms = 0;
			char *paren = strchr(from, '(');
			if (paren &&
			    sscanf(paren, "(%lld bytes, %lld ms", &b, &ms) ==
				    2) {
				r.bytes[k] += b;
				r.ms[k] += ms;
				if (ms > r.ms_max[k])
					r.ms_max[k] = ms;
			}
			char *dl = paren ? strstr(paren, " deltas applied)")
					 : NULL;
			if (dl && (!eol || dl < eol)) {
				char *num = dl;
				while (num > paren && num[-1] >= '0' &&
				       num[-1] <= '9')
					num--;
				int nd = atoi(num);
				r.deltas[k] += nd;
				r.with_deltas[k] += nd > 0;
				if (nd > r.deltas_max[k])
					r.deltas_max[k] = nd;
			}
			*(k == 0 ? &r.cache : &r.topic) += 1;
		}
		for (char *p = text;
		     p && (p = strstr(p, "resumed the suspended task")); p++)
			r.memory++;
		for (char *p = text; p && (p = strstr(p, "Sanitizer")); p++)
			r.sanitizer++;
		for (char *p = text; p && (p = strstr(p, "runtime error: "));
		     p++)
			r.sanitizer++;
		free(text);
	}
	if (d)
		closedir(d);
	return r;
}

/* Wait up to timeout_ms for node i to hold output in an open transaction
 * (window rows fired since its last checkpoint); whether it did. */
static bool wait_uncommitted(cluster_t *cl, int i, const char *id,
			     int timeout_ms)
{
	int64_t deadline = sv_mono_ms() + timeout_ms;
	while (sv_mono_ms() < deadline) {
		if (cl_node_dist(cl, i, id, "records_out_uncommitted") > 0)
			return true;
		usleep(20000);
	}
	return false;
}

/* Wait up to timeout_ms for an open transaction's records to be on the
 * output topic's log (some partition's high watermark past its last
 * stable offset): records only queued in the producer leave nothing
 * aborted behind a kill. Whether they were. */
static bool wait_open_on_log(crash_t *c, const char *topic, int timeout_ms)
{
	rd_kafka_t *rc = cr_client(c, RD_KAFKA_CONSUMER, NULL, "read_committed",
				   false);
	rd_kafka_t *ru = cr_client(c, RD_KAFKA_CONSUMER, NULL,
				   "read_uncommitted", false);
	bool open = false;
	int64_t deadline = sv_mono_ms() + timeout_ms;
	while (!open && sv_mono_ms() < deadline) {
		for (int p = 0; p < 2 && !open; p++) {
			int64_t lo, lso, hw;
			if (!rd_kafka_query_watermark_offsets(rc, topic, p, &lo,
							      &lso, 5000) &&
			    !rd_kafka_query_watermark_offsets(ru, topic, p, &lo,
							      &hw, 5000))
				open = hw > lso;
		}
		if (!open)
			usleep(20000);
	}
	rd_kafka_destroy(rc);
	rd_kafka_destroy(ru);
	return open;
}

static void test_state_crash_loop(void **state)
{
	cr_par = 2; /* keyed input: partitioned_by ["k"] holds */
	const char *nv = getenv("SV_CLUSTER_NODES");
	int nodes = nv && atoi(nv) == 3 ? 3 : 2;
	cluster_t *cl = cl_new(state, "state_loop", 41, nodes);
	crash_t *c = cl->c;
	cjob_t *j = cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	/* a crashed node's open transaction holds its partitions (and their
	 * committed offsets) until it times out */
	j->sink_extra = "\"transaction_timeout_ms\": 10000";
	for (int i = 0; i < nodes; i++)
		cl_node_start(cl, i, NULL, NULL);
	char *spec = window_spec(c, j);
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	/* 2 nodes: 2 + 2 partitions; 3 nodes: at least one each */
	int both[NODES_MAX] = {2, 2, -1};
	if (nodes == 3)
		both[0] = both[1] = both[2] = -2;
	cl_wait_split(cl, j->id, both, 30000, "shared");
	bool lng = getenv("SV_CLUSTER_LONG") && *getenv("SV_CLUSTER_LONG") &&
		strcmp(getenv("SV_CLUSTER_LONG"), "0");
	int kills = lng ? 30 : 3;
	cr_producer_start(&c->prod, c->in_topic, 4000000, 2000);
	int within = 0, beyond = 0, hot = 0;
	int64_t take_ms_max = 0, back_ms_max = 0, out_ms_max = 0;
	for (int k = 0; k < kills; k++) {
		usleep((useconds_t)(1000 + rnd(&c->rng) % 4000) * 1000);
		int victim = (int)(rnd(&c->rng) % (uint64_t)nodes);
		bool late = k % 2 == 1; /* every other kill: beyond */
		bool open = wait_uncommitted(cl, victim, j->id, 4000) &&
			wait_open_on_log(c, j->out, 2000);
		hot += open;
		cl_node_kill(cl, victim);
		int64_t t_kill = sv_mono_ms();
		int64_t none[PARTS] = {INT64_MAX, INT64_MAX, INT64_MAX,
				       INT64_MAX};
		int64_t at[PARTS];
		cr_group_at_end(c, j, none, at);
		int down_ms = (int)(rnd(&c->rng) % 3000);
		printf("[%s %6.1fs] kill -9 %s (%s); restart %s\n", c->test,
		       cr_secs(c), cl->n[victim].id,
		       open ? "window rows in an open transaction"
			    : "no open output seen",
		       late ? "once the other node holds every partition"
			    : "within the session timeout");
		fflush(stdout);
		if (late) {
			/* the others hold every partition (2 nodes: the
			 * other all 4) */
			int alone[NODES_MAX] = {-2, -2, -2};
			for (int i = nodes; i < NODES_MAX; i++)
				alone[i] = -1;
			alone[victim] = -1;
			if (nodes == 2)
				alone[1 - victim] = 4;
			int64_t w = cl_wait_split(cl, j->id, alone, 40000,
						  "the other node holds every "
						  "partition");
			int64_t took = sv_mono_ms() - t_kill;
			if (took > take_ms_max)
				take_ms_max = took;
			/* its first committed output of every partition:
			 * the group offsets moved past the kill's */
			int64_t now[PARTS], dl = sv_mono_ms() + 30000;
			for (;;) {
				cr_group_at_end(c, j, none, now);
				bool moved = true;
				for (int p = 0; p < PARTS; p++)
					moved = moved && now[p] > at[p];
				if (moved)
					break;
				if (sv_mono_ms() > dl)
					cr_fail(c,
						"the new owner committed "
						"no output of every "
						"partition within 30 s");
				usleep(50000);
			}
			int64_t out_ms = sv_mono_ms() - t_kill;
			if (out_ms > out_ms_max)
				out_ms_max = out_ms;
			printf("[ cluster ] kill %d: the other node holds "
			       "every partition %" PRId64 " ms after the "
			       "kill (waited %" PRId64 " ms), committed "
			       "output of every partition after %" PRId64
			       " ms\n",
			       k + 1, took, w, out_ms);
		} else {
			usleep((useconds_t)down_ms * 1000);
		}
		/* every other restart within the session never reads its
		 * local cache: its own partitions come from the state topic
		 * (the chains it wrote itself, deltas on a full); the others
		 * keep the cache path (a chain in its local store) */
		bool no_cache = !late && within % 2 == 1;
		cl_node_start(cl, victim,
			      no_cache ? "STREAMVISOR_TEST_NO_STATE_CACHE=1"
				       : NULL,
			      NULL);
		int64_t w = cl_wait_split(cl, j->id, both, 60000,
					  "shared again");
		if (w > back_ms_max)
			back_ms_max = w;
		*(late ? &beyond : &within) += 1;
	}
	atomic_store(&c->prod.stop, true);
	cr_wait_input(c);
	int64_t ends[PARTS], got[PARTS];
	cr_put_sentinels(c, ends);
	int64_t deadline = sv_mono_ms() + 90000;
	while (!cr_group_at_end(c, j, ends, got)) {
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"group offsets %" PRId64 ",%" PRId64 ",%" PRId64
				",%" PRId64 " did not reach the input's end "
				"%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64,
				got[0], got[1], got[2], got[3], ends[0],
				ends[1], ends[2], ends[3]);
		usleep(200000);
	}
	tally_t t = cr_check_output(c, j, true);
	cr_summary(c, j, "read_committed", &t, "asserted");
	tally_t unc = cr_check_output(c, j, false);
	cr_summary(c, j, "read_uncommitted", &unc,
		   "negative control: duplicates asserted");
	restores_t r = scan_restores(c);
	printf("[ cluster ] KILLS %d on %d nodes (within session %d, beyond "
	       "%d; %d with window rows in an open transaction)\n",
	       kills, nodes, within, beyond, hot);
	printf("[ cluster ] RESTORES cache %d (%" PRId64 " bytes, %" PRId64
	       " ms in all, max %" PRId64 " ms), topic %d (%" PRId64
	       " bytes, %" PRId64 " ms in all, max %" PRId64
	       " ms), suspended tasks resumed %d\n",
	       r.cache, r.bytes[0], r.ms[0], r.ms_max[0], r.topic, r.bytes[1],
	       r.ms[1], r.ms_max[1], r.memory);
	printf("[ cluster ] DELTAS restores that applied deltas: cache %d (%d "
	       "deltas, at most %d in one), topic %d (%d deltas, at most %d in "
	       "one)\n",
	       r.with_deltas[0], r.deltas[0], r.deltas_max[0], r.with_deltas[1],
	       r.deltas[1], r.deltas_max[1]);
	printf("[ cluster ] kill -9 -> the other node holds every partition: "
	       "max %" PRId64 " ms, has committed output of every partition: "
	       "max %" PRId64 " ms; restart -> shared again: max %" PRId64
	       " ms\n",
	       take_ms_max, out_ms_max, back_ms_max);
	if (!cr_exact(&t))
		cr_fail(c,
			"exactly-once window output is not exact after %d "
			"kills (SUMMARY above)",
			kills);
	if (!unc.dup)
		cr_fail(c,
			"negative control: %d kills left no aborted window "
			"rows in read_uncommitted",
			kills);
	if (r.cache < 1 || r.topic < 1)
		cr_fail(c,
			"restores: %d from the local cache, %d from the "
			"state topic; each must happen at least once",
			r.cache, r.topic);
	if (r.sanitizer)
		cr_fail(c, "the nodes' logs have %d sanitizer reports",
			r.sanitizer);
	if (r.with_deltas[1] < 1)
		cr_fail(c,
			"no restore from the state topic applied a delta "
			"(%d topic restores): the incremental chain was not "
			"exercised",
			r.topic);
	c->passed = true;
	cl_free(cl);
}

/* Submit checks of distributed mode, and the state budget: one node with
 * distributed.state_budget_bytes_per_s 1 fails the window job at its first
 * checkpoint with state, naming the budget and the measured volume. */
static void test_budget_and_refusals(void **state)
{
	cr_par = 2;
	cluster_t *cl = cl_new(state, "state_budget", 43, 1);
	crash_t *c = cl->c;
	FILE *f = fopen(cl->n[0].config, "a"); /* distributed: is last */
	if (!f)
		cr_fail(c, "cannot append to %s", cl->n[0].config);
	fputs("  state_budget_bytes_per_s: 1\n", f);
	fclose(f);
	cjob_t *j = cr_add_job(c, "eo-window", J_WINDOW, S_KAFKA, true);
	j->sink_extra = "\"transaction_timeout_ms\": 10000";
	cl_node_start(cl, 0, NULL, NULL);
	char *spec = window_spec(c, j);
	static const struct {
		const char *what, *field;
	} refused[] = {
		{"at_least_once", "delivery"},
		{"no partitioned_by", "pipeline[1]"},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		json_t *o = json_loads(spec, 0, NULL);
		if (i == 0)
			json_object_set_new(o, "delivery",
					    json_string("at_least_once"));
		else
			json_object_del(json_object_get(o, "source"),
					"partitioned_by");
		char *bad = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		char *resp = NULL;
		int st;
		/* 503 while the cluster has no leader yet: retried */
		int64_t until = sv_mono_ms() + 40000;
		while ((st = cr_http_do(cl->n[0].port, "POST", "/v1/jobs", bad,
					&resp, 15000)) == 503 &&
		       sv_mono_ms() < until) {
			free(resp);
			resp = NULL;
			usleep(200000);
		}
		printf("[%s] refused (%s): %d %.300s\n", c->test,
		       refused[i].what, st, resp ? resp : "");
		char want[80];
		snprintf(want, sizeof(want), "\"%s\"", refused[i].field);
		if (st < 400 || st >= 500 || !resp || !strstr(resp, want))
			cr_fail(c,
				"distributed mode accepted or misnamed a job "
				"with %s: %d %s",
				refused[i].what, st, resp ? resp : "");
		free(resp);
		free(bad);
	}
	j->id = cl_submit(cl, 0, spec);
	free(spec);
	cr_producer_start(&c->prod, c->in_topic, 20000, 2000);
	int64_t deadline = sv_mono_ms() + 30000;
	char *text = NULL;
	for (;;) {
		json_t *o = cl_node_job(cl, 0, j->id);
		const char *st = json_string_value(json_object_get(o, "state"));
		if (st && !strcmp(st, "failed")) {
			text = json_dumps(o, JSON_COMPACT);
			json_decref(o);
			break;
		}
		json_decref(o);
		if (sv_mono_ms() > deadline)
			cr_fail(c,
				"the job over its state budget did not "
				"fail within 30 s");
		usleep(100000);
	}
	atomic_store(&c->prod.stop, true);
	const char *msg = strstr(text,
				 "distributed.state_budget_bytes_per_s: "
				 "checkpoint");
	printf("[%s] failed: %.400s\n", c->test, msg ? msg : text);
	if (!msg || !strstr(msg, "bytes/s, over the budget of 1 bytes/s"))
		cr_fail(c,
			"the failure does not name the budget and the "
			"measured volume");
	free(text);
	c->passed = true;
	cl_free(cl);
}

int main(void)
{
	cl_test_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_budget_and_refusals,
					  cl_teardown),
		cmocka_unit_test_teardown(test_state_crash_loop, cl_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
