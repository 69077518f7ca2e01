/* it_kafka_contract.c — the librdkafka 2.0.2 contract that distributed mode
 * (SCALE-OUT.md §5, test T0 of §8) rests on, asserted against the real
 * broker. Nothing of streamvisor's own is under test here except that the
 * transactional producers are built from a cluster profile the way the
 * Kafka sink builds them (kafka/client.h); consumers are plain librdkafka
 * because case C needs a rebalance callback. If a librdkafka or broker
 * upgrade changes one of these facts, this test says which before the
 * design silently breaks:
 *
 *  - B2: offsets sent with a consumer's group metadata from before a
 *    rebalance are refused with ILLEGAL_GENERATION, an abortable (not
 *    fatal) error; the abort succeeds and the producer carries on.
 *  - B4: metadata made from the group id alone
 *    (rd_kafka_consumer_group_metadata_new, today's sink) is accepted into
 *    a live group: no fencing at all. This documents the hazard.
 *  - B5: a static member that stopped polling past max.poll.interval.ms
 *    drops its member id; offsets sent with the metadata it then reports
 *    are refused with FENCED_INSTANCE_ID (the broker still maps its
 *    instance id: static members send no LeaveGroup). Once its session
 *    expired and the other member owns every partition, both that metadata
 *    and the one of its last generation (spike B6) are refused with
 *    UNKNOWN_MEMBER_ID. Every refusal is abortable, not fatal.
 *  - C: a rebalance callback that defers the unassign (cooperative-sticky:
 *    incremental_unassign; eager range, the design's assignor on 2.0.2:
 *    assign(NULL)): the other member gets partitions only after the deferred
 *    unassign, never while the revoke is outstanding, and meanwhile
 *    neither member consumes a record (the rebalance pauses the partitions
 *    the revoking member keeps as well).
 *  - D: rd_kafka_committed() of a read_committed consumer blocks while a
 *    pending transaction holds the group's offsets, then returns them with
 *    their metadata intact; a read_uncommitted consumer (negative control)
 *    does not wait and sees no offset.
 *
 * Timeouts are short (session 6 s, max poll 7 s, heartbeat 0.5 s) so the
 * whole test takes well under a minute; every topic, group and
 * transactional id is unique to the run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "core/util.h"
#include "kafka/client.h"
#include "tests/integration/testkit.h"

#define PARTS 4
#define SESSION_MS "6000"
#define MAX_POLL_MS "7000"
#define MAX_POLL 7000
#define JOIN_DEADLINE_MS 30000
#define DEFER_MS 2500 /* case C: how long the revoke stays outstanding */
#define HOLD_MS 2500 /* case D: how long the transaction stays pending */

static sv_cluster_t cluster;
static const sv_logctx_t logctx = {.job_id = "it-kafka-contract"};

/* ---- clients ---- */

/* A transactional producer from the cluster profile, as the sink makes
 * one; init_transactions done. */
static rd_kafka_t *txn_producer(const char *txn_id)
{
	const sv_kafka_prop_t fixed[] = {
		{"enable.idempotence", "true"},
		{"transactional.id", txn_id},
		{"transaction.timeout.ms", "60000"},
	};
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_PRODUCER,
		.cluster = &cluster,
		.client_id = "it-kafka-contract",
		.role = "transactional producer",
		.log = &logctx,
		.fixed = fixed,
		.nfixed = SV_ARRAY_LEN(fixed),
	};
	rd_kafka_t *p = NULL;
	sv_error_t *err = sv_kafka_client_new(&kc, &p);
	if (err)
		fail_msg("producer: %s", err->message);
	rd_kafka_error_t *e = rd_kafka_init_transactions(p, 30000);
	if (e)
		fail_msg("init_transactions: %s", rd_kafka_error_string(e));
	return p;
}

typedef struct consumer_opts {
	const char *instance_id; /* group.instance.id, NULL: dynamic */
	const char *strategy; /* NULL: range */
	const char *isolation; /* NULL: read_committed */
	void (*rebalance_cb)(rd_kafka_t *, rd_kafka_resp_err_t,
			     rd_kafka_topic_partition_list_t *, void *);
	void *opaque;
} consumer_opts_t;

static void set(rd_kafka_conf_t *kc, const char *k, const char *v)
{
	char errstr[256];
	if (rd_kafka_conf_set(kc, k, v, errstr, sizeof(errstr)) !=
	    RD_KAFKA_CONF_OK)
		fail_msg("conf %s: %s", k, errstr);
}

static rd_kafka_t *consumer(const char *group, const consumer_opts_t *o)
{
	rd_kafka_conf_t *kc = rd_kafka_conf_new();
	char errstr[256];
	set(kc, "bootstrap.servers", tk_bootstrap());
	set(kc, "group.id", group);
	set(kc, "session.timeout.ms", SESSION_MS);
	set(kc, "max.poll.interval.ms", MAX_POLL_MS);
	set(kc, "heartbeat.interval.ms", "500");
	set(kc, "enable.auto.commit", "false");
	set(kc, "auto.offset.reset", "earliest");
	set(kc, "isolation.level",
	    o && o->isolation ? o->isolation : "read_committed");
	set(kc, "partition.assignment.strategy",
	    o && o->strategy ? o->strategy : "range");
	if (o && o->instance_id)
		set(kc, "group.instance.id", o->instance_id);
	if (o && o->rebalance_cb) {
		rd_kafka_conf_set_rebalance_cb(kc, o->rebalance_cb);
		rd_kafka_conf_set_opaque(kc, o->opaque);
	}
	rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr,
				     sizeof(errstr));
	if (!c)
		fail_msg("consumer: %s", errstr);
	rd_kafka_poll_set_consumer(c);
	return c;
}

static void subscribe(rd_kafka_t *c, const char *topic)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
		1);
	rd_kafka_topic_partition_list_add(l, topic, RD_KAFKA_PARTITION_UA);
	assert_int_equal(rd_kafka_subscribe(c, l), RD_KAFKA_RESP_ERR_NO_ERROR);
	rd_kafka_topic_partition_list_destroy(l);
}

static void close_consumer(rd_kafka_t *c)
{
	rd_kafka_consumer_close(c);
	rd_kafka_destroy(c);
}

/* Serve a consumer's queue once; returns 1 if a record arrived (it is
 * dropped), else 0. */
static int pump(rd_kafka_t *c, int ms)
{
	rd_kafka_message_t *m = rd_kafka_consumer_poll(c, ms);
	int got = m && !m->err;
	if (m)
		rd_kafka_message_destroy(m);
	return got;
}

static int assigned(rd_kafka_t *c)
{
	rd_kafka_topic_partition_list_t *l = NULL;
	if (rd_kafka_assignment(c, &l))
		return -1;
	int n = l->cnt;
	rd_kafka_topic_partition_list_destroy(l);
	return n;
}

/* Poll every consumer of cs until want[i] partitions are assigned to each
 * (-1: any number > 0); fails after JOIN_DEADLINE_MS. */
static void wait_assigned(rd_kafka_t **cs, const int *want, int n,
			  const char *what)
{
	int64_t deadline = sv_mono_ms() + JOIN_DEADLINE_MS;
	for (;;) {
		bool all = true;
		for (int i = 0; i < n; i++) {
			pump(cs[i], 100);
			int a = assigned(cs[i]);
			if (want[i] < 0 ? a <= 0 : a != want[i])
				all = false;
		}
		if (all)
			return;
		if (sv_mono_ms() > deadline)
			fail_msg("%s: no such assignment after %d ms", what,
				 JOIN_DEADLINE_MS);
	}
}

static rd_kafka_topic_partition_list_t *offsets(const char *topic, int64_t off,
						const char *md)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
		PARTS);
	for (int i = 0; i < PARTS; i++) {
		rd_kafka_topic_partition_t *tp =
			rd_kafka_topic_partition_list_add(l, topic, i);
		tp->offset = off;
		if (md) {
			tp->metadata = strdup(md);
			tp->metadata_size = strlen(md);
		}
	}
	return l;
}

/* begin; send offsets with cgmd. Returns the error (caller destroys). */
static rd_kafka_error_t *send_offsets(
	rd_kafka_t *p, const char *topic, int64_t off,
	const rd_kafka_consumer_group_metadata_t *g)
{
	rd_kafka_error_t *e = rd_kafka_begin_transaction(p);
	if (e)
		fail_msg("begin_transaction: %s", rd_kafka_error_string(e));
	rd_kafka_topic_partition_list_t *l = offsets(topic, off, NULL);
	e = rd_kafka_send_offsets_to_transaction(p, l, g, 30000);
	rd_kafka_topic_partition_list_destroy(l);
	return e;
}

/* The error is one of codes, abortable and not fatal; the abort succeeds. */
static void expect_fenced(rd_kafka_t *p, rd_kafka_error_t *e,
			  const rd_kafka_resp_err_t *codes, int ncodes,
			  const char *what)
{
	if (!e)
		fail_msg("%s: send_offsets_to_transaction accepted", what);
	rd_kafka_resp_err_t code = rd_kafka_error_code(e);
	bool known = false;
	for (int i = 0; i < ncodes; i++)
		known |= code == codes[i];
	if (!known)
		fail_msg("%s: unexpected error %s (%s)", what,
			 rd_kafka_error_name(e), rd_kafka_error_string(e));
	printf("[ contract ] %s: %s abortable=%d fatal=%d\n", what,
	       rd_kafka_error_name(e), rd_kafka_error_txn_requires_abort(e),
	       rd_kafka_error_is_fatal(e));
	assert_true(rd_kafka_error_txn_requires_abort(e));
	assert_false(rd_kafka_error_is_fatal(e));
	rd_kafka_error_destroy(e);
	e = rd_kafka_abort_transaction(p, 30000);
	if (e)
		fail_msg("%s: abort failed: %s", what,
			 rd_kafka_error_string(e));
}

static void commit_ok(rd_kafka_t *p, rd_kafka_error_t *e, const char *what)
{
	if (e)
		fail_msg("%s: send_offsets_to_transaction: %s", what,
			 rd_kafka_error_string(e));
	e = rd_kafka_commit_transaction(p, 30000);
	if (e)
		fail_msg("%s: commit: %s", what, rd_kafka_error_string(e));
}

/* The offset committed for the group on partition 0 of topic. */
static int64_t committed0(rd_kafka_t *c, const char *topic)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
		1);
	rd_kafka_topic_partition_list_add(l, topic, 0);
	assert_int_equal(rd_kafka_committed(c, l, 20000),
			 RD_KAFKA_RESP_ERR_NO_ERROR);
	int64_t off = l->elems[0].offset;
	rd_kafka_topic_partition_list_destroy(l);
	return off;
}

/* ---- B2 and B4: one live group of two dynamic members ---- */

static void test_b2_stale_generation_b4_groupid_only(void **state)
{
	(void)state;
	char *topic = tk_unique("it-contract-b");
	char *group = tk_unique("streamvisor-it-contract-b");
	char *txn = tk_unique("streamvisor-it-contract-b");
	tk_create_topic(topic, PARTS);
	rd_kafka_t *p = txn_producer(txn);

	rd_kafka_t *c[2] = {consumer(group, NULL), NULL};
	subscribe(c[0], topic);
	wait_assigned(c, (const int[]){PARTS}, 1, "c1 alone");
	rd_kafka_consumer_group_metadata_t *before =
		rd_kafka_consumer_group_metadata(c[0]);

	/* B1 as the baseline: current metadata of the owner is accepted */
	commit_ok(p, send_offsets(p, topic, 1, before), "B1 current metadata");

	c[1] = consumer(group, NULL);
	subscribe(c[1], topic);
	wait_assigned(c, (const int[]){PARTS / 2, PARTS / 2}, 2,
		      "c1 and c2 after the rebalance");

	/* B2: metadata from before the rebalance */
	const rd_kafka_resp_err_t b2[] = {RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION};
	expect_fenced(p, send_offsets(p, topic, 2, before), b2, 1,
		      "B2 pre-rebalance metadata");
	assert_int_equal(committed0(c[1], topic), 1);

	/* the producer carries on: c1's fresh metadata is accepted */
	rd_kafka_consumer_group_metadata_t *fresh =
		rd_kafka_consumer_group_metadata(c[0]);
	commit_ok(p, send_offsets(p, topic, 3, fresh), "after the abort");
	assert_int_equal(committed0(c[1], topic), 3);

	/* B4: group id only, into the live group: accepted, not fenced */
	rd_kafka_consumer_group_metadata_t *bare =
		rd_kafka_consumer_group_metadata_new(group);
	commit_ok(p, send_offsets(p, topic, 4, bare),
		  "B4 group-id-only metadata (the hazard)");
	assert_int_equal(committed0(c[1], topic), 4);
	printf("[ contract ] B4 group-id-only metadata: accepted "
	       "(committed 4 into the live group)\n");

	rd_kafka_consumer_group_metadata_destroy(bare);
	rd_kafka_consumer_group_metadata_destroy(fresh);
	rd_kafka_consumer_group_metadata_destroy(before);
	close_consumer(c[1]);
	close_consumer(c[0]);
	sv_kafka_client_destroy(p);
	free(txn);
	free(group);
	free(topic);
}

/* ---- B5: a static member past max.poll.interval.ms ---- */

static void test_b5_static_member_past_max_poll(void **state)
{
	(void)state;
	char *topic = tk_unique("it-contract-b5");
	char *group = tk_unique("streamvisor-it-contract-b5");
	char *txn = tk_unique("streamvisor-it-contract-b5");
	tk_create_topic(topic, PARTS);
	rd_kafka_t *p = txn_producer(txn);

	consumer_opts_t o1 = {.instance_id = "node-1-thread-0"};
	consumer_opts_t o2 = {.instance_id = "node-2-thread-0"};
	rd_kafka_t *c[2] = {consumer(group, &o1), consumer(group, &o2)};
	subscribe(c[0], topic);
	subscribe(c[1], topic);
	wait_assigned(c, (const int[]){-1, -1}, 2, "two static members");
	rd_kafka_consumer_group_metadata_t *last =
		rd_kafka_consumer_group_metadata(c[0]);
	commit_ok(p, send_offsets(p, topic, 1, last), "B5 baseline");

	/* c1 stops polling (its background thread still heartbeats); only
	 * c2 is served. Once max.poll.interval.ms passed, librdkafka drops
	 * c1's member id; a static member sends no LeaveGroup, so the broker
	 * still maps its instance id until the session times out. */
	const rd_kafka_resp_err_t fenced[] = {
		RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID};
	const rd_kafka_resp_err_t unknown[] = {
		RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID};
	int64_t t0 = sv_mono_ms();
	for (;;) {
		char *mid = rd_kafka_memberid(c[0]);
		bool gone = !mid || !*mid;
		if (mid)
			rd_kafka_mem_free(c[0], mid);
		if (gone)
			break;
		pump(c[1], 100);
		if (sv_mono_ms() > t0 + JOIN_DEADLINE_MS)
			fail_msg("B5: c1 kept its member id");
	}
	int64_t left = sv_mono_ms() - t0;
	printf("[ contract ] B5 c1 dropped its member id %lld ms after it "
	       "stopped polling\n",
	       (long long)left);
	assert_true(left >= MAX_POLL - 1000);
	/* the metadata it reports now, never having polled again (B5) */
	rd_kafka_consumer_group_metadata_t *now =
		rd_kafka_consumer_group_metadata(c[0]);
	expect_fenced(p, send_offsets(p, topic, 2, now), fenced, 1,
		      "B5 zombie past max poll, current metadata");

	rd_kafka_t *c2only[1] = {c[1]};
	wait_assigned(c2only, (const int[]){PARTS}, 1,
		      "c2 owns all after c1 stopped polling");
	int64_t took = sv_mono_ms() - t0;
	printf("[ contract ] B5 c2 had all partitions %lld ms after c1 "
	       "stopped polling\n",
	       (long long)took);
	assert_true(took >= MAX_POLL - 1000);
	/* after the session expired: the metadata of its last generation
	 * (B6) and the current one */
	expect_fenced(p, send_offsets(p, topic, 3, last), unknown, 1,
		      "B5 zombie out of the group, last-generation metadata");
	expect_fenced(p, send_offsets(p, topic, 4, now), unknown, 1,
		      "B5 zombie out of the group, current metadata");
	assert_int_equal(committed0(c[1], topic), 1);

	rd_kafka_consumer_group_metadata_destroy(now);
	rd_kafka_consumer_group_metadata_destroy(last);
	close_consumer(c[1]);
	close_consumer(c[0]);
	sv_kafka_client_destroy(p);
	free(txn);
	free(group);
	free(topic);
}

/* ---- C: deferred unassign in a cooperative rebalance ---- */

typedef struct member {
	const char *name;
	bool defer; /* keep a revoke outstanding instead of unassigning */
	rd_kafka_topic_partition_list_t *pending; /* the deferred revoke */
	int64_t revoked_at, unassigned_at, first_assign_at;
} member_t;

static bool cooperative(rd_kafka_t *rk)
{
	return strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
}

/* Take assigned partitions, or give up revoked ones: incrementally under
 * the cooperative protocol, the whole assignment under the eager one. */
static rd_kafka_error_t *take(rd_kafka_t *rk,
			      rd_kafka_topic_partition_list_t *parts)
{
	if (cooperative(rk))
		return rd_kafka_incremental_assign(rk, parts);
	rd_kafka_resp_err_t err = rd_kafka_assign(rk, parts);
	return err ? rd_kafka_error_new(err, "assign") : NULL;
}

static rd_kafka_error_t *give_up(rd_kafka_t *rk,
				 rd_kafka_topic_partition_list_t *parts)
{
	if (cooperative(rk))
		return rd_kafka_incremental_unassign(rk, parts);
	rd_kafka_resp_err_t err = rd_kafka_assign(rk, NULL);
	return err ? rd_kafka_error_new(err, "unassign") : NULL;
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
			 rd_kafka_topic_partition_list_t *parts, void *opaque)
{
	member_t *m = opaque;
	rd_kafka_error_t *e = NULL;
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		if (parts->cnt > 0 && m->first_assign_at == 0)
			m->first_assign_at = sv_mono_ms();
		e = take(rk, parts);
	} else if (m->defer && !m->pending && parts->cnt > 0 &&
		   !rd_kafka_assignment_lost(rk)) {
		m->revoked_at = sv_mono_ms();
		m->pending = rd_kafka_topic_partition_list_copy(parts);
	} else {
		e = give_up(rk, parts);
	}
	if (e) {
		fprintf(stderr, "%s: rebalance: %s\n", m->name,
			rd_kafka_error_string(e));
		rd_kafka_error_destroy(e);
	}
}

/* c1 owns every partition, c2 joins, c1 keeps the revoke (revoked
 * partitions) outstanding for DEFER_MS. */
static void deferred_unassign(const char *strategy, const char *protocol,
			      int revoked)
{
	char *topic = tk_unique("it-contract-c");
	char *group = tk_unique("streamvisor-it-contract-c");
	tk_create_topic(topic, PARTS);
	member_t m1 = {.name = "c1", .defer = true}, m2 = {.name = "c2"};
	consumer_opts_t o1 = {.strategy = strategy,
			      .rebalance_cb = rebalance_cb,
			      .opaque = &m1};
	consumer_opts_t o2 = {.strategy = strategy,
			      .rebalance_cb = rebalance_cb,
			      .opaque = &m2};
	rd_kafka_t *c[2] = {consumer(group, &o1), NULL};
	subscribe(c[0], topic);
	wait_assigned(c, (const int[]){PARTS}, 1, "c1 alone");
	assert_string_equal(rd_kafka_rebalance_protocol(c[0]), protocol);

	c[1] = consumer(group, &o2);
	subscribe(c[1], topic);
	/* both polled until c1's revoke is outstanding */
	int64_t deadline = sv_mono_ms() + JOIN_DEADLINE_MS;
	while (!m1.pending) {
		pump(c[0], 100);
		pump(c[1], 100);
		if (sv_mono_ms() > deadline)
			fail_msg("C %s: c1 got no revoke", strategy);
	}
	assert_int_equal(m1.pending->cnt, revoked);
	/* records on every partition while the revoke is outstanding */
	const char *recs[2 * PARTS];
	for (int i = 0; i < 2 * PARTS; i++)
		recs[i] = "{}";
	tk_produce(topic, recs, 2 * PARTS);
	/* the revoke stays outstanding for DEFER_MS while both keep polling:
	 * c2 must get nothing in that window, and c1 no record either (the
	 * rebalance pauses every partition it still has) */
	int during = 0, after = 0;
	while (sv_mono_ms() < m1.revoked_at + DEFER_MS) {
		during += pump(c[0], 100);
		during += pump(c[1], 100);
		assert_int_equal(assigned(c[1]), 0);
		assert_int_equal(m2.first_assign_at, 0);
	}
	rd_kafka_error_t *e = give_up(c[0], m1.pending);
	if (e)
		fail_msg("C %s: deferred unassign: %s", strategy,
			 rd_kafka_error_string(e));
	m1.unassigned_at = sv_mono_ms();
	m1.defer = false;
	wait_assigned(c, (const int[]){PARTS / 2, PARTS / 2}, 2,
		      "C: c2 after the deferred unassign");
	/* then every record arrives, at one member or the other */
	deadline = sv_mono_ms() + JOIN_DEADLINE_MS;
	while (during + after < 2 * PARTS && sv_mono_ms() < deadline) {
		after += pump(c[0], 100);
		after += pump(c[1], 100);
	}
	printf("[ contract ] C %s: revoke of %d at +0 ms, deferred unassign "
	       "at +%lld ms, c2 assigned at +%lld ms; records consumed "
	       "while the revoke was outstanding: %d, after: %d\n",
	       strategy, revoked, (long long)(m1.unassigned_at - m1.revoked_at),
	       (long long)(m2.first_assign_at - m1.revoked_at), during, after);
	assert_int_equal(during, 0);
	assert_int_equal(after, 2 * PARTS);
	assert_true(m2.first_assign_at >= m1.unassigned_at);

	rd_kafka_topic_partition_list_destroy(m1.pending);
	close_consumer(c[1]);
	close_consumer(c[0]);
	free(group);
	free(topic);
}

static void test_c_deferred_unassign_cooperative(void **state)
{
	(void)state;
	deferred_unassign("cooperative-sticky", "COOPERATIVE", PARTS / 2);
}

/* The assignor the design uses on 2.0.2: the whole assignment is revoked,
 * and the deferred call is rd_kafka_assign(NULL). */
static void test_c_deferred_unassign_eager(void **state)
{
	(void)state;
	deferred_unassign("range", "EAGER", PARTS);
}

/* ---- D: committed() waits for a pending transaction's offsets ---- */

typedef struct fetch {
	rd_kafka_t *c;
	const char *topic;
	rd_kafka_resp_err_t err;
	int64_t offset;
	char metadata[64];
	int64_t returned_at;
	pthread_mutex_t mu;
	bool done;
} fetch_t;

static void *fetch_committed(void *arg)
{
	fetch_t *f = arg;
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(
		1);
	rd_kafka_topic_partition_list_add(l, f->topic, 0);
	rd_kafka_resp_err_t err = rd_kafka_committed(f->c, l, 20000);
	pthread_mutex_lock(&f->mu);
	f->err = err;
	f->offset = l->elems[0].offset;
	if (l->elems[0].metadata)
		snprintf(f->metadata, sizeof(f->metadata), "%.*s",
			 (int)l->elems[0].metadata_size,
			 (const char *)l->elems[0].metadata);
	f->returned_at = sv_mono_ms();
	f->done = true;
	pthread_mutex_unlock(&f->mu);
	rd_kafka_topic_partition_list_destroy(l);
	return NULL;
}

static bool fetch_done(fetch_t *f)
{
	pthread_mutex_lock(&f->mu);
	bool d = f->done;
	pthread_mutex_unlock(&f->mu);
	return d;
}

/* Wait until f returned or ms passed; true if it returned. */
static bool wait_fetch(fetch_t *f, int ms)
{
	int64_t deadline = sv_mono_ms() + ms;
	while (!fetch_done(f) && sv_mono_ms() < deadline) {
		pump(f->c, 50);
	}
	return fetch_done(f);
}

static void test_d_committed_waits_for_pending_txn(void **state)
{
	(void)state;
	char *topic = tk_unique("it-contract-d");
	char *group = tk_unique("streamvisor-it-contract-d");
	char *txn = tk_unique("streamvisor-it-contract-d");
	tk_create_topic(topic, PARTS);
	rd_kafka_t *p = txn_producer(txn);

	/* a pending transaction holds the group's offsets 77 */
	rd_kafka_error_t *e = rd_kafka_begin_transaction(p);
	assert_null(e);
	rd_kafka_topic_partition_list_t *l = offsets(topic, 77,
						     "streamvisor:ck=tagD");
	rd_kafka_consumer_group_metadata_t *g =
		rd_kafka_consumer_group_metadata_new(group);
	e = rd_kafka_send_offsets_to_transaction(p, l, g, 30000);
	if (e)
		fail_msg("D: send offsets: %s", rd_kafka_error_string(e));
	rd_kafka_topic_partition_list_destroy(l);

	/* negative control: read_uncommitted does not wait, sees nothing */
	consumer_opts_t ou = {.isolation = "read_uncommitted"};
	fetch_t fu = {.c = consumer(group, &ou), .topic = topic};
	pthread_mutex_init(&fu.mu, NULL);
	int64_t t0 = sv_mono_ms();
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, fetch_committed, &fu), 0);
	assert_true(wait_fetch(&fu, 15000));
	pthread_join(th, NULL);
	assert_int_equal(fu.err, RD_KAFKA_RESP_ERR_NO_ERROR);
	assert_true(fu.offset < 0);
	printf("[ contract ] D read_uncommitted committed() returned %lld "
	       "after %lld ms (not waiting)\n",
	       (long long)fu.offset, (long long)(fu.returned_at - t0));
	close_consumer(fu.c);

	/* read_committed: committed() waits for the transaction */
	fetch_t fc = {.c = consumer(group, NULL), .topic = topic};
	pthread_mutex_init(&fc.mu, NULL);
	t0 = sv_mono_ms();
	assert_int_equal(pthread_create(&th, NULL, fetch_committed, &fc), 0);
	if (wait_fetch(&fc, HOLD_MS))
		fail_msg("D: committed() returned %lld while the transaction "
			 "was pending",
			 (long long)fc.offset);
	int64_t commit_at = sv_mono_ms();
	e = rd_kafka_commit_transaction(p, 30000);
	if (e)
		fail_msg("D: commit: %s", rd_kafka_error_string(e));
	assert_true(wait_fetch(&fc, 15000));
	pthread_join(th, NULL);
	printf("[ contract ] D read_committed committed() blocked %lld ms, "
	       "returned %lld ms after the commit started: offset %lld "
	       "metadata '%s'\n",
	       (long long)(fc.returned_at - t0),
	       (long long)(fc.returned_at - commit_at), (long long)fc.offset,
	       fc.metadata);
	assert_int_equal(fc.err, RD_KAFKA_RESP_ERR_NO_ERROR);
	assert_true(fc.returned_at >= commit_at);
	assert_int_equal(fc.offset, 77);
	assert_string_equal(fc.metadata, "streamvisor:ck=tagD");
	close_consumer(fc.c);

	pthread_mutex_destroy(&fc.mu);
	pthread_mutex_destroy(&fu.mu);
	rd_kafka_consumer_group_metadata_destroy(g);
	sv_kafka_client_destroy(p);
	free(txn);
	free(group);
	free(topic);
}

int main(void)
{
	cluster.name = "default";
	cluster.bootstrap = (char *)tk_bootstrap();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_b2_stale_generation_b4_groupid_only),
		cmocka_unit_test(test_b5_static_member_past_max_poll),
		cmocka_unit_test(test_c_deferred_unassign_cooperative),
		cmocka_unit_test(test_c_deferred_unassign_eager),
		cmocka_unit_test(test_d_committed_waits_for_pending_txn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
