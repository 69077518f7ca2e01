/* it_cluster_ctl.c — distributed mode's control plane with three real
 * `streamvisor serve` processes on loopback and the real broker
 * (docs/cluster.md "Leader"; SCALE-OUT.md §8 T9 and T11), over the node
 * harness clusterkit.h.
 *
 *   test_leader_failover (T9): mutations (create, cancel, drain, resume of
 *     small at-least-once jobs) are sent round-robin to every node while
 *     the leader is killed -9 or frozen (SIGSTOP past the session
 *     timeout, then SIGCONT), alternately; a mutation answered 503 or not
 *     at all is sent again to the next node, as a client would. Afterwards
 *     every node's GET /v1/jobs lists the same jobs in the same states;
 *     every name was created exactly once (retried submits return the
 *     same job: "existing"; the same name with another plan id is a 409),
 *     each 2xx submit's id is that job, each 2xx
 *     cancel left the job cancelled everywhere; the `leader` records of
 *     the jobs topic (read here with read_committed) have strictly
 *     increasing epochs and no record carries an epoch lower than one
 *     before it; every node counts 0 such records. 2 failovers and 40
 *     mutations by default; SV_CLUSTER_LONG=1: 10 failovers, 200.
 *   test_drain_resume (T11): the exactly-once passthrough job on three
 *     nodes, input flowing; drain (final_watermark false, then true) sent
 *     to a node that does not lead (forwarded), resume sent to another:
 *     a node answers `checkpointed` only once every member reported it
 *     and their final partitions cover every partition (asserted at the
 *     first such answer), resume carries on (the three share again), and
 *     the output is exact (0 dup / 0 missing, read_committed). A restart
 *     sent to a node that does not lead restarts the member of every node
 *     (each node's attempt goes up).
 *
 * Every wait is for a condition with a deadline. */
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "core/util.h"
#include "tests/integration/clusterkit.h"
#include "tests/integration/testkit.h"

/* GET path on node i as JSON (NULL: no answer or not 200). */
static json_t *node_get(cluster_t *cl, int i, const char *path)
{
	node_t *n = &cl->n[i];
	if (n->pid <= 0 || n->stopped)
		return NULL;
	char *resp = NULL;
	int st = cr_http_do(n->port, "GET", path, NULL, &resp, 3000);
	json_t *o = st == 200 && resp ? json_loads(resp, 0, NULL) : NULL;
	free(resp);
	return o;
}

/* The node that leads now (its own /v1/cluster says so), or -1. */
static int leader_now(cluster_t *cl)
{
	for (int i = 0; i < cl->nn; i++) {
		json_t *o = node_get(cl, i, "/v1/cluster");
		bool me = o &&
			json_is_true(json_object_get(o, "this_node_leads"));
		json_decref(o);
		if (me)
			return i;
	}
	return -1;
}

static int wait_leader(cluster_t *cl, int timeout_ms, const char *what)
{
	int64_t t0 = sv_mono_ms(), deadline = t0 + timeout_ms;
	for (;;) {
		int l = leader_now(cl);
		if (l >= 0) {
			printf("[%s %6.1fs] %s: %s leads after %" PRId64
			       " ms\n",
			       cl->c->test, cr_secs(cl->c), what, cl->n[l].id,
			       sv_mono_ms() - t0);
			fflush(stdout);
			return l;
		}
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c, "%s: no leader within %d ms", what,
				timeout_ms);
		usleep(100000);
	}
}

/* ---- T9 ---- */

typedef struct tjob {
	char name[64];
	char id[64]; /* from the first 2xx submit */
	bool cancelled; /* a cancel was answered 2xx */
	bool cancel_maybe; /* a cancel was sent and may have taken effect */
	int submits_ok, existing;
} tjob_t;

typedef struct t9 {
	cluster_t *cl;
	int rr; /* the next node */
	int sent, ok, retried, unavailable;
} t9_t;

/* Send one mutation round-robin, again on 503 / no answer (to the next
 * node) until a 2xx or another final status; returns it, *body the
 * answer. want409_retry: 409 is also retried (resume before every
 * partition reported). */
static int mutate(t9_t *t, const char *method, const char *path,
		  const char *body, char **resp, bool retry409)
{
	cluster_t *cl = t->cl;
	int64_t deadline = sv_mono_ms() + 60000;
	t->sent++;
	for (int tries = 0;; tries++) {
		int i = t->rr++ % cl->nn;
		if (cl->n[i].pid <= 0)
			continue;
		*resp = NULL;
		int st = cl->n[i].stopped ? -1
					  : cr_http_do(cl->n[i].port, method,
						       path, body, resp, 15000);
		if (st >= 200 && st < 300) {
			t->ok++;
			return st;
		}
		if (st == 503)
			t->unavailable++;
		if (st > 0 && st != 503 && !(st == 409 && retry409))
			return st;
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c, "%s %s: no answer but %d for 60 s: %s",
				method, path, st, *resp ? *resp : "");
		free(*resp);
		*resp = NULL;
		t->retried++;
		usleep(st == 409 ? 300000 : 100000);
	}
}

static char *small_spec(cluster_t *cl, const char *base, const char *name)
{
	json_t *o = json_loads(base, 0, NULL);
	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "delivery", json_string("at_least_once"));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	(void)cl;
	return s;
}

/* SIGSTOP node i past the session timeout (its leadership moves), then
 * SIGCONT; or kill -9 it and start it again. */
static void failover(t9_t *t, int l, bool freeze, int64_t *ms)
{
	cluster_t *cl = t->cl;
	node_t *n = &cl->n[l];
	int64_t t0 = sv_mono_ms();
	if (freeze) {
		kill(n->pid, SIGSTOP);
		n->stopped = true;
		printf("[%s %6.1fs] SIGSTOP leader %s\n", cl->c->test,
		       cr_secs(cl->c), n->id);
	} else {
		cl_node_kill(cl, l);
		printf("[%s %6.1fs] kill -9 leader %s\n", cl->c->test,
		       cr_secs(cl->c), n->id);
	}
	fflush(stdout);
	int nl = wait_leader(cl, 40000,
			     freeze ? "leader frozen" : "leader killed");
	if (nl == l)
		cr_fail(cl->c, "the frozen or killed node still leads");
	*ms = sv_mono_ms() - t0;
	if (freeze) {
		kill(n->pid, SIGCONT);
		n->stopped = false;
	} else {
		cl_node_start(cl, l, NULL, NULL);
	}
}

/* Every record of the jobs topic, read_committed: leader epochs strictly
 * increase and no record's epoch is below one read before it. */
static void check_epochs(cluster_t *cl, int *leaders, int64_t *max_epoch)
{
	crash_t *c = cl->c;
	char topic[300];
	snprintf(topic, sizeof(topic), "_streamvisor.%s.jobs", cl->name);
	lines_t recs = {0};
	cr_read_topic(c, topic, true, &recs);
	int64_t last_leader = 0, hi = 0, n = 0;
	*leaders = 0;
	for (size_t k = 0; k < recs.n; k++) {
		json_t *o = json_loads(recs.v[k], 0, NULL);
		if (!o)
			continue;
		json_int_t e = json_integer_value(json_object_get(o, "epoch"));
		/* the leader record is the one without a job */
		bool is_leader = !json_object_get(o, "id");
		n++;
		if (!json_object_get(o, "epoch"))
			cr_fail(c, "record %zu has no leader epoch: %s", k,
				recs.v[k]);
		if (e < hi)
			cr_fail(c,
				"record %zu carries epoch %lld, below %" PRId64
				" before it: %s",
				k, (long long)e, hi, recs.v[k]);
		hi = e;
		if (is_leader) {
			if (e <= last_leader)
				cr_fail(c,
					"leader epoch %lld (record %zu) does "
					"not increase (%" PRId64 " before)",
					(long long)e, k, last_leader);
			last_leader = e;
			(*leaders)++;
		}
		json_decref(o);
	}
	cr_lines_free(&recs);
	*max_epoch = last_leader;
	printf("[ cluster ] jobs topic: %" PRId64
	       " records, %d leader records, epochs strictly increase to "
	       "%" PRId64 ", none below an earlier one\n",
	       n, *leaders, last_leader);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* name → (id, state) on node i, as one sorted line per job. */
static char *listing(cluster_t *cl, int i)
{
	json_t *o = node_get(cl, i, "/v1/jobs");
	if (!o)
		return NULL;
	json_t *jobs = json_object_get(o, "jobs");
	size_t n = json_array_size(jobs);
	char **lines = sv_calloc(n + 1, sizeof(char *));
	for (size_t k = 0; k < n; k++) {
		json_t *j = json_array_get(jobs, k);
		const char *st = json_string_value(json_object_get(j, "state"));
		/* a live job is live everywhere; lagging is a local detail */
		if (st && (!strcmp(st, "lagging") || !strcmp(st, "pending")))
			st = "running";
		if (asprintf(&lines[k], "%s %s %s",
			     json_string_value(json_object_get(j, "name")),
			     json_string_value(json_object_get(j, "id")),
			     st ? st : "?") < 0)
			abort();
	}
	qsort(lines, n, sizeof(char *), str_cmp);
	sv_buf_t b;
	sv_buf_init(&b);
	for (size_t k = 0; k < n; k++) {
		sv_buf_printf(&b, "%s\n", lines[k]);
		free(lines[k]);
	}
	free(lines);
	json_decref(o);
	char *s = sv_strdup(b.len ? b.data : "");
	sv_buf_release(&b);
	return s;
}

static void test_leader_failover(void **state)
{
	bool lng = env_on("SV_CLUSTER_LONG");
	int want_mut = lng ? 200 : 40, failovers = lng ? 10 : 2;
	cluster_t *cl = cl_new(state, "leader_failover", 21, 3);
	crash_t *c = cl->c;
	cjob_t *j = cr_add_job(c, "t9", J_PASS, S_KAFKA, false);
	for (int i = 0; i < 3; i++)
		cl_node_start(cl, i, NULL, NULL);
	wait_leader(cl, 40000, "start");
	char *base = cr_job_spec(c, j);
	int maxjobs = want_mut / 2 + 2;
	tjob_t *jobs = sv_calloc((size_t)maxjobs, sizeof(*jobs));
	t9_t t = {.cl = cl};
	int njobs = 0, done_fail = 0, kills = 0, stops = 0;
	int64_t fo_ms[16] = {0};
	int every = want_mut / (failovers + 1);
	int next_fail = every;
	while (t.sent < want_mut) {
		tjob_t *tj = &jobs[njobs++];
		snprintf(tj->name, sizeof(tj->name), "t9-%03d", njobs);
		char *spec = small_spec(cl, base, tj->name), *resp = NULL;
		/* a client resubmits a submit it got no answer for */
		int st = mutate(&t, "POST", "/v1/jobs", spec, &resp, false);
		if (st != 201)
			cr_fail(c, "submit %s: %d %s", tj->name, st,
				resp ? resp : "");
		json_t *o = json_loads(resp, 0, NULL);
		snprintf(tj->id, sizeof(tj->id), "%s",
			 json_string_value(json_object_get(o, "id")));
		tj->submits_ok++;
		json_decref(o);
		free(resp);
		/* the same submit again (a client's retry after a lost
		 * answer): the same job */
		if (njobs % 4 == 1) {
			st = mutate(&t, "POST", "/v1/jobs", spec, &resp, false);
			o = resp ? json_loads(resp, 0, NULL) : NULL;
			const char *id2 = json_string_value(
				json_object_get(o, "id"));
			if (st != 201 || !id2 || strcmp(id2, tj->id))
				cr_fail(c,
					"resubmit of %s: %d %s (first id %s)",
					tj->name, st, resp ? resp : "", tj->id);
			tj->existing++;
			json_decref(o);
			free(resp);
		}
		/* the same name with another plan (another filter): refused */
		if (njobs == 2) {
			json_t *sp = json_loads(spec, 0, NULL);
			json_object_set_new(
				json_array_get(json_object_get(sp, "pipeline"),
					       0),
				"filter", json_string("seq >= 1"));
			char *other = json_dumps(sp, JSON_COMPACT);
			json_decref(sp);
			st = mutate(&t, "POST", "/v1/jobs", other, &resp,
				    false);
			if (st != 409)
				cr_fail(c,
					"%s with another plan id: %d %s, want "
					"409",
					tj->name, st, resp ? resp : "");
			printf("[ cluster ] %s submitted again with another "
			       "plan id: 409\n",
			       tj->name);
			free(resp);
			free(other);
		}
		free(spec);
		char path[200];
		if (njobs % 5 == 2) {
			/* drain a running job (its members on the three
			 * nodes), then resume once every partition reported */
			int all3[] = {-2, -2, -2};
			cl_wait_split(cl, tj->id, all3, 40000,
				      "running on 3 before the drain");
			snprintf(path, sizeof(path), "/v1/jobs/%s/drain",
				 tj->id);
			st = mutate(&t, "POST", path,
				    njobs % 2 ? "{\"final_watermark\": true}"
					      : "{}",
				    &resp, true);
			free(resp);
			if (st == 200) {
				snprintf(path, sizeof(path),
					 "/v1/jobs/%s/resume", tj->id);
				st = mutate(&t, "POST", path, "{}", &resp,
					    true);
				if (st != 200)
					cr_fail(c, "resume %s: %d %s", tj->id,
						st, resp ? resp : "");
				free(resp);
			}
		}
		snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", tj->id);
		tj->cancel_maybe = true;
		st = mutate(&t, "POST", path, "{}", &resp, false);
		/* 409: an earlier try of this cancel took effect, its answer
		 * was lost (asserted below: cancelled everywhere) */
		if (st == 200)
			tj->cancelled = true;
		else if (st != 409)
			cr_fail(c, "cancel %s: %d %s", tj->id, st,
				resp ? resp : "");
		free(resp);
		if (t.sent >= next_fail && done_fail < failovers) {
			int l = leader_now(cl);
			if (l < 0)
				l = wait_leader(cl, 40000, "before failover");
			bool freeze = done_fail % 2 == 1;
			failover(&t, l, freeze, &fo_ms[done_fail]);
			printf("[ cluster ] failover %d (%s): new leader in "
			       "%" PRId64 " ms\n",
			       done_fail + 1, freeze ? "SIGSTOP" : "kill -9",
			       fo_ms[done_fail]);
			kills += !freeze;
			stops += freeze;
			done_fail++;
			next_fail += every;
		}
	}
	printf("[ cluster ] %d mutations sent (%d 2xx), %d resent after 503 "
	       "or no answer (%d 503s), %d jobs, %d failovers (%d kill -9, "
	       "%d SIGSTOP)\n",
	       t.sent, t.ok, t.retried, t.unavailable, njobs, done_fail, kills,
	       stops);
	if (done_fail < failovers)
		cr_fail(c, "only %d failovers", done_fail);

	fflush(stdout);
	/* convergence: the same listing on every node */
	int64_t deadline = sv_mono_ms() + 40000;
	char *first = NULL;
	for (;;) {
		bool same = true;
		free(first);
		first = listing(cl, 0);
		for (int i = 1; i < 3 && same; i++) {
			char *o = listing(cl, i);
			same = first && o && !strcmp(first, o);
			free(o);
		}
		if (same)
			break;
		if (sv_mono_ms() > deadline)
			cr_fail(c, "the nodes' GET /v1/jobs differ after 40 s");
		usleep(300000);
	}
	/* exactly once: one job per name, the acknowledged one, cancelled */
	for (int k = 0; k < njobs; k++) {
		tjob_t *tj = &jobs[k];
		char needle[200];
		snprintf(needle, sizeof(needle), "%s ", tj->name);
		int seen = 0;
		for (const char *p = first; (p = strstr(p, needle)); p++)
			seen += p == first || p[-1] == '\n';
		snprintf(needle, sizeof(needle), "%s %s cancelled\n", tj->name,
			 tj->id);
		if (seen != 1 || !strstr(first, needle))
			cr_fail(c,
				"job %s: listed %d times, want once as '%s "
				"%s cancelled':\n%s",
				tj->name, seen, tj->name, tj->id, first);
	}
	free(first);
	int leaders = 0;
	int64_t max_epoch = 0;
	check_epochs(cl, &leaders, &max_epoch);
	if (leaders < failovers + 1)
		cr_fail(c, "%d leader records for %d failovers", leaders,
			failovers);
	for (int i = 0; i < 3; i++) {
		json_t *o = node_get(cl, i, "/v1/cluster");
		json_t *reg = json_object_get(o, "registry");
		if (!o || cr_jint(reg, "stale_epoch_records", -1) != 0)
			cr_fail(c, "node %s: stale_epoch_records %" PRId64,
				cl->n[i].id,
				cr_jint(reg, "stale_epoch_records", -1));
		json_decref(o);
	}
	printf("[ cluster ] T9: %d jobs listed alike on 3 nodes, each once, "
	       "each cancelled; leader epochs 1..%" PRId64 "\n",
	       njobs, max_epoch);
	free(base);
	free(jobs);
	c->passed = true;
}

/* ---- T11 ---- */

/* Until a node answers state `checkpointed` for the job; at that answer
 * every member of the cluster view is checkpointed and their final
 * partitions cover all PARTS. Returns ms waited; *early: a node answered
 * `draining` while its own copy was checkpointed already. */
static int64_t wait_checkpointed(cluster_t *cl, const char *id, bool *early)
{
	int64_t t0 = sv_mono_ms(), deadline = t0 + 40000;
	*early = false;
	for (;;) {
		for (int i = 0; i < cl->nn; i++) {
			json_t *o = cl_node_job(cl, i, id);
			const char *st = json_string_value(
				json_object_get(o, "state"));
			const char *ns = json_string_value(
				json_object_get(o, "node_state"));
			if (st && ns && !strcmp(st, "draining") &&
			    !strcmp(ns, "checkpointed"))
				*early = true;
			if (st && !strcmp(st, "checkpointed")) {
				json_t *cv = json_object_get(o, "cluster");
				json_t *ms = json_object_get(cv, "members");
				unsigned cover = 0;
				int live = 0;
				size_t k;
				json_t *m;
				json_array_foreach (ms, k, m) {
					if (!json_is_true(json_object_get(
						    m, "alive")))
						continue;
					live++;
					const char *mst = json_string_value(
						json_object_get(m, "state"));
					if (!mst || strcmp(mst, "checkpointed"))
						cr_fail(cl->c,
							"%s answers "
							"checkpointed while "
							"member %s is %s",
							cl->n[i].id,
							json_string_value(
								json_object_get(
									m,
									"membe"
									"r")),
							mst ? mst : "?");
					size_t pk;
					json_t *p;
					json_array_foreach (
						json_object_get(m,
								"partitions"),
						pk, p)
						cover |= 1u
							<< json_integer_value(
								   p);
				}
				if (live != 3 || cover != (1u << PARTS) - 1) {
					char *dump = json_dumps(cv,
								JSON_COMPACT);
					cr_fail(cl->c,
						"%s answers checkpointed with "
						"%d members covering 0x%x: %s",
						cl->n[i].id, live, cover, dump);
				}
				if (getenv("SV_CTL_DEBUG")) {
					char *d = json_dumps(cv, JSON_COMPACT);
					printf("%s\n", d);
					free(d);
				}
				json_decref(o);
				int64_t w = sv_mono_ms() - t0;
				printf("[%s %6.1fs] checkpointed on %s after "
				       "%" PRId64
				       " ms: 3 members, partitions 0x%x\n",
				       cl->c->test, cr_secs(cl->c), cl->n[i].id,
				       w, cover);
				return w;
			}
			json_decref(o);
		}
		if (sv_mono_ms() > deadline)
			cr_fail(cl->c, "job %s not checkpointed within 40 s",
				id);
		usleep(100000);
	}
}

static void drain_resume(cluster_t *cl, const char *id, bool final_wm)
{
	crash_t *c = cl->c;
	int l = wait_leader(cl, 30000, "drain");
	int other = (l + 1) % 3, third = (l + 2) % 3;
	char path[200], *resp = NULL;
	snprintf(path, sizeof(path), "/v1/jobs/%s/drain", id);
	int st = cl_mutate(cl, other, "POST", path,
			   final_wm ? "{\"final_watermark\": true}"
				    : "{\"final_watermark\": false}",
			   &resp, 30000);
	if (st != 200)
		cr_fail(c, "drain via %s: %d %s", cl->n[other].id, st,
			resp ? resp : "");
	free(resp);
	printf("[%s %6.1fs] drain (final_watermark %s) sent to %s (the "
	       "leader is %s)\n",
	       c->test, cr_secs(c), final_wm ? "true" : "false",
	       cl->n[other].id, cl->n[l].id);
	bool early = false;
	int64_t ms = wait_checkpointed(cl, id, &early);
	printf("[ cluster ] drain final_watermark=%s: checkpointed "
	       "cluster-wide after %" PRId64
	       " ms; a node's own copy checkpointed before the rest: %s\n",
	       final_wm ? "true" : "false", ms, early ? "seen" : "not seen");
	snprintf(path, sizeof(path), "/v1/jobs/%s/resume", id);
	int64_t deadline = sv_mono_ms() + 20000;
	do {
		st = cl_mutate(cl, third, "POST", path, "{}", &resp, 30000);
		if (st != 200) {
			free(resp);
			resp = NULL;
			usleep(300000);
		}
	} while (st == 409 && sv_mono_ms() < deadline);
	if (st != 200)
		cr_fail(c, "resume via %s: %d %s", cl->n[third].id, st,
			resp ? resp : "");
	free(resp);
	int all3[] = {-2, -2, -2};
	cl_wait_split(cl, id, all3, 40000, "resumed, shared by 3 again");
}

/* The job's attempt on node i (-1: no answer). */
static int64_t attempt_on(cluster_t *cl, int i, const char *id)
{
	json_t *o = cl_node_job(cl, i, id);
	int64_t a = o ? cr_jint(o, "attempt", -1) : -1;
	json_decref(o);
	return a;
}

/* A restart sent to a node that does not lead: every node starts a new
 * attempt of its member, once. */
static void restart_all(cluster_t *cl, const char *id)
{
	crash_t *c = cl->c;
	int l = wait_leader(cl, 30000, "restart");
	int other = (l + 1) % 3;
	int64_t before[3];
	for (int i = 0; i < 3; i++)
		before[i] = attempt_on(cl, i, id);
	char path[200], *resp = NULL;
	snprintf(path, sizeof(path), "/v1/jobs/%s/restart", id);
	int st = cl_mutate(cl, other, "POST", path, "{}", &resp, 30000);
	if (st != 200)
		cr_fail(c, "restart via %s: %d %s", cl->n[other].id, st,
			resp ? resp : "");
	free(resp);
	int64_t deadline = sv_mono_ms() + 30000;
	for (int i = 0; i < 3; i++)
		while (attempt_on(cl, i, id) <= before[i]) {
			if (sv_mono_ms() > deadline)
				cr_fail(c, "%s did not restart its member",
					cl->n[i].id);
			usleep(100000);
		}
	printf("[%s %6.1fs] restart sent to %s: attempts %" PRId64 ",%" PRId64
	       ",%" PRId64 " -> %" PRId64 ",%" PRId64 ",%" PRId64 "\n",
	       c->test, cr_secs(c), cl->n[other].id, before[0], before[1],
	       before[2], attempt_on(cl, 0, id), attempt_on(cl, 1, id),
	       attempt_on(cl, 2, id));
	int all3[] = {-2, -2, -2};
	cl_wait_split(cl, id, all3, 40000, "restarted, shared by 3 again");
}

/* The leader's metrics say it leads, labelled with its node id; every
 * observation of a follower's copy names that node. */
static void check_node_ids(cluster_t *cl, const char *id)
{
	crash_t *c = cl->c;
	int l = wait_leader(cl, 30000, "metrics");
	char *m = NULL, want[200];
	cr_http_do(cl->n[l].port, "GET", "/metrics", NULL, &m, 5000);
	snprintf(want, sizeof(want),
		 "streamvisor_cluster_leader{node=\"%s\"} 1", cl->n[l].id);
	if (!m || !strstr(m, want))
		cr_fail(c, "the leader's /metrics lacks '%s'", want);
	free(m);
	int f = (l + 1) % 3;
	char path[200];
	snprintf(path, sizeof(path), "/v1/jobs/%s/observations?limit=500", id);
	json_t *o = node_get(cl, f, path);
	size_t k, n = 0;
	json_t *ob;
	json_array_foreach (json_object_get(o, "observations"), k, ob) {
		const char *node = json_string_value(
			json_object_get(ob, "node"));
		if (!node || strcmp(node, cl->n[f].id))
			cr_fail(c, "an observation on %s names node '%s'",
				cl->n[f].id, node ? node : "(none)");
		n++;
	}
	json_decref(o);
	if (!n)
		cr_fail(c, "no observations on %s", cl->n[f].id);
	printf("[ cluster ] %s's metrics say it leads; %zu observations on %s "
	       "carry its node id\n",
	       cl->n[l].id, n, cl->n[f].id);
}

static void test_drain_resume(void **state)
{
	cluster_t *cl = cl_new(state, "drain_resume", 23, 3);
	crash_t *c = cl->c;
	cjob_t *j = cl_add_job(cl);
	for (int i = 0; i < 3; i++)
		cl_node_start(cl, i, NULL, NULL);
	wait_leader(cl, 40000, "start");
	char *spec = cr_job_spec(c, j);
	j->id = cl_submit(cl, 1, spec);
	free(spec);
	int all3[] = {-2, -2, -2};
	cl_wait_split(cl, j->id, all3, 40000, "shared by 3");
	cr_producer_start(&c->prod, c->in_topic, 12000, 1500);
	drain_resume(cl, j->id, false);
	drain_resume(cl, j->id, true);
	restart_all(cl, j->id);
	check_node_ids(cl, j->id);
	tally_t unc, t = cl_finish(cl, j, &unc, "asserted", "shown");
	if (!cr_exact(&t))
		cr_fail(c,
			"output not exact across drains and resumes "
			"(SUMMARY above)");
	c->passed = true;
}

int main(void)
{
	cl_test_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_drain_resume, cl_teardown),
		cmocka_unit_test_teardown(test_leader_failover, cl_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
