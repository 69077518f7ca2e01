/* it_joins.c — joins end to end against the real broker (docs/joins.md).
 *
 * Every input is a pure function of its index, produced before the job
 * starts; each input partition ends with a sentinel far in the future
 * whose watermark closes everything (and whose own output is not
 * compared). Then:
 *   - interval: orders joined with payments within [-50, +100] ms, inner,
 *     Kafka → Kafka exactly_once; the read_committed output must be the
 *     brute-force set of pairs, each once; the status document and
 *     /metrics show both inputs (positions, lag, per-side state);
 *   - lookup: orders with their customer's name as of the order's time
 *     from a keyed table topic with updates and tombstones (null values,
 *     time = message timestamp), left join, exactly_once; each order once
 *     with the brute-force answer;
 *   - hash: a bounded left join of two topics (duplicate and null keys),
 *     GET /result against the relational answer computed here and against
 *     DataFusion's (join_datafusion.py, the test venv);
 *   - copartition: topics of 4 and 2 partitions at parallelism 2: 422;
 *   - kill loops: the interval and the lookup job in a supervisor process
 *     killed with SIGKILL at the checkpoint steps (STREAMVISOR_KILL_AT)
 *     and at random moments, restarted each time: output still exactly
 *     the brute-force answer, each once (both inputs' offsets restored and
 *     committed in one transaction); and the interval job at parallelism 2
 *     over inputs keyed by the customer (4 partitions each).
 * The sources are rate-limited in the kill case so the job spans several
 * checkpoints. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "core/partition.h"
#include "core/util.h"
#include "tests/integration/crashkit.h"
#include "tests/integration/testkit.h"

#define J_BASE 1700000000000LL
#define J_SENTINEL (J_BASE + 100000000LL)
#define J_KEYS 20
#define N_ORD 3000
#define N_PAY 3000
#define LOWER -50
#define UPPER 100
#define N_VER 30

/* ---- producing: keys, null values and timestamps ---- */

static rd_kafka_t *producer(void)
{
	char err[256];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "bootstrap.servers", tk_bootstrap(), err,
			      sizeof(err)) ||
	    rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err)))
		fail_msg("producer conf: %s", err);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err,
				      sizeof(err));
	if (!rk)
		fail_msg("producer: %s", err);
	return rk;
}

static void send1(rd_kafka_t *rk, const char *topic, int32_t part,
		  const char *key, const char *value, int64_t ts)
{
	for (;;) {
		rd_kafka_resp_err_t e = rd_kafka_producev(
			rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
			RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
			RD_KAFKA_V_VALUE((void *)value,
					 value ? strlen(value) : 0),
			RD_KAFKA_V_TIMESTAMP(ts),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_END);
		if (!e)
			return;
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			fail_msg("produce to %s: %s", topic,
				 rd_kafka_err2str(e));
		rd_kafka_poll(rk, 50);
	}
}

static void producer_done(rd_kafka_t *rk)
{
	if (rd_kafka_flush(rk, 30000))
		fail_msg("producer flush timed out");
	rd_kafka_destroy(rk);
}

/* ---- the inputs ---- */

static int cust_of(int64_t i, uint64_t salt)
{
	return (int)(mix64((uint64_t)i ^ salt) % J_KEYS);
}
static int64_t jitter(int64_t i, uint64_t salt)
{
	return (int64_t)(mix64((uint64_t)i * 31 + salt) % 40);
}
/* two records 10 ms apart per partition, disorder < 40 ms < the bound */
static int64_t ord_ts(int64_t i)
{
	return J_BASE + i * 5 + jitter(i, 1);
}
static int64_t pay_ts(int64_t j)
{
	return J_BASE + j * 5 + jitter(j, 2);
}

/* A key of partition p of nparts whose text starts with "zz" (the
 * sentinels of a keyed topic). */
static void sentinel_key(int p, int nparts, char *buf, size_t len)
{
	for (int k = 0;; k++) {
		snprintf(buf, len, "zz%d", k);
		if (sv_partition_of(buf, strlen(buf), nparts) == p)
			return;
	}
}

/* Orders (payments: pid) of the interval join over nparts partitions:
 * round-robin, or (keyed) where Kafka's default partitioner puts the
 * customer, as source.partitioned_by ["cust"] declares; then one sentinel
 * per partition. */
static void produce_stream(const char *topic, int nparts, bool keyed,
			   bool payments)
{
	rd_kafka_t *rk = producer();
	char v[160], key[16];
	int n = payments ? N_PAY : N_ORD;
	for (int64_t i = 0; i < n; i++) {
		int c = payments ? cust_of(i, 22) : cust_of(i, 11);
		int64_t ts = payments ? pay_ts(i) : ord_ts(i);
		snprintf(key, sizeof(key), "c%02d", c);
		snprintf(v, sizeof(v),
			 "{\"%s\":%lld,\"cust\":\"%s\",\"ts\":%lld}",
			 payments ? "pid" : "id", (long long)i, key,
			 (long long)ts);
		int32_t p = keyed ? sv_partition_of(key, strlen(key), nparts)
				  : (int32_t)(i % nparts);
		send1(rk, topic, p, keyed ? key : NULL, v, ts);
	}
	for (int p = 0; p < nparts; p++) {
		if (keyed)
			sentinel_key(p, nparts, key, sizeof(key));
		else
			snprintf(key, sizeof(key), "zz");
		snprintf(v, sizeof(v),
			 "{\"%s\":%d,\"cust\":\"%s\",\"ts\":%lld}",
			 payments ? "pid" : "id", -1 - p, key,
			 (long long)J_SENTINEL);
		send1(rk, topic, p, keyed ? key : NULL, v, J_SENTINEL);
	}
	producer_done(rk);
}

static void produce_orders(const char *topic)
{
	produce_stream(topic, 2, false, false);
}

static void produce_payments(const char *topic)
{
	produce_stream(topic, 2, false, true);
}

/* The interval join's answer: "id:pid" for every pair with equal keys and
 * LOWER <= pay - ord <= UPPER, sorted. */
static size_t interval_expected(char ***out)
{
	size_t n = 0, cap = 1024;
	char **v = malloc(cap * sizeof(*v));
	for (int64_t i = 0; i < N_ORD; i++)
		for (int64_t j = 0; j < N_PAY; j++) {
			int64_t d = pay_ts(j) - ord_ts(i);
			if (d < LOWER || d > UPPER ||
			    cust_of(i, 11) != cust_of(j, 22))
				continue;
			if (n == cap)
				v = realloc(v, (cap *= 2) * sizeof(*v));
			if (asprintf(&v[n++], "%lld:%lld", (long long)i,
				     (long long)j) < 0)
				abort();
		}
	*out = v;
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "id:pid" of the output lines, sentinel pairs left out. */
static size_t interval_got(char **lines, size_t n, char ***out)
{
	char **v = calloc(n ? n : 1, sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		json_error_t je;
		json_t *o = json_loads(lines[i], 0, &je);
		if (!o)
			fail_msg("output line is not JSON: %s", lines[i]);
		json_int_t id = json_integer_value(json_object_get(o, "id"));
		json_int_t pid = json_integer_value(json_object_get(o, "pid"));
		const char *cust = json_string_value(
			json_object_get(o, "cust"));
		json_int_t pts = json_integer_value(json_object_get(o, "pts"));
		if (id >= 0) {
			if (pts != pay_ts(pid))
				fail_msg("wrong row: %s", lines[i]);
			if (!cust || strcmp(cust, "c00") < 0)
				fail_msg("wrong row: %s", lines[i]);
			if (asprintf(&v[k++], "%lld:%lld", (long long)id,
				     (long long)pid) < 0)
				abort();
		}
		json_decref(o);
	}
	*out = v;
	return k;
}

/* Sorted multisets equal; prints what differs first. */
static void assert_same(char **got, size_t ng, char **want, size_t nw,
			const char *what)
{
	qsort(got, ng, sizeof(*got), cmp_str);
	qsort(want, nw, sizeof(*want), cmp_str);
	size_t dup = 0, missing = 0, extra = 0;
	for (size_t i = 1; i < ng; i++)
		dup += !strcmp(got[i], got[i - 1]);
	size_t a = 0, b = 0;
	while (a < ng || b < nw) {
		int c = a == ng ? 1 : b == nw ? -1 : strcmp(got[a], want[b]);
		if (c == 0) {
			a++;
			b++;
		} else if (c < 0) {
			if (extra++ < 3)
				fprintf(stderr, "%s: unexpected %s\n", what,
					got[a]);
			a++;
		} else {
			if (missing++ < 3)
				fprintf(stderr, "%s: missing %s\n", what,
					want[b]);
			b++;
		}
	}
	printf("[%s] expected %zu, got %zu: duplicates %zu, missing %zu, "
	       "unexpected %zu\n",
	       what, nw, ng, dup, missing, extra);
	fflush(stdout);
	if (dup || missing || extra)
		fail_msg("%s: output differs from the expected answer", what);
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The interval join job; rate > 0 limits both sources; par > 1 runs it
 * at that parallelism over inputs keyed by the customer. */
static char *interval_spec(const char *name, const char *left,
			   const char *right, const char *out, int rate,
			   int par)
{
	char rl[128] = "", pl[64] = "";
	if (rate)
		snprintf(rl, sizeof(rl), ", \"rate_per_s\": %d", rate);
	if (par > 1) {
		size_t n = strlen(rl);
		snprintf(rl + n, sizeof(rl) - n,
			 ", \"partitioned_by\": [\"cust\"]");
		snprintf(pl, sizeof(pl), " \"parallelism\": %d,", par);
	}
	char *s;
	if (asprintf(&s,
		     "{\"name\": \"%s\",%s \"source\": {\"topic\": \"%s\"%s},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
		     "  {\"name\": \"cust\", \"type\": \"string\"},"
		     "  {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		     " \"event_time\": {\"field\": \"ts\", "
		     "\"max_out_of_orderness_ms\": 100},"
		     " \"pipeline\": [{\"join\": {\"type\": \"interval\","
		     "  \"source\": {\"topic\": \"%s\"%s},"
		     "  \"schema\": [{\"name\": \"pid\", \"type\": \"int64\"},"
		     "   {\"name\": \"cust\", \"type\": \"string\"},"
		     "   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		     "  \"event_time\": {\"field\": \"ts\", "
		     "\"max_out_of_orderness_ms\": 100},"
		     "  \"on\": {\"left\": [\"cust\"], \"right\": [\"cust\"]},"
		     "  \"lower_ms\": %d, \"upper_ms\": %d,"
		     "  \"take\": {\"pid\": \"pid\", \"pts\": \"ts\"}}}],"
		     " \"sink\": {\"topic\": \"%s\"},"
		     " \"delivery\": \"exactly_once\","
		     " \"checkpoint\": {\"interval_ms\": 300}}",
		     name, pl, left, rl, right, rl, LOWER, UPPER, out) < 0)
		abort();
	return s;
}

/* ---- interval ---- */

static bool joined_all(json_t *st, void *arg)
{
	json_t *join = json_object_get(st, "join");
	return json_integer_value(json_object_get(join, "records_in")) >=
		(json_int_t)(intptr_t)arg &&
		json_integer_value(json_object_get(json_object_get(join, "lag"),
						   "records")) == 0 &&
		json_integer_value(json_object_get(st, "records_in")) >=
		(json_int_t)(intptr_t)arg;
}

static void test_interval(void **state)
{
	(void)state;
	tk_service_t svc;
	tk_service_start(&svc);
	char *left = tk_unique("it-join-orders");
	char *right = tk_unique("it-join-payments");
	char *out = tk_unique("it-join-iv-out");
	tk_create_topic(left, 2);
	tk_create_topic(right, 2);
	tk_create_topic(out, 2);
	produce_orders(left);
	produce_payments(right);
	char **want;
	size_t nw = interval_expected(&want);
	char *spec = interval_spec("it-join-interval", left, right, out, 0, 1);
	char *id = tk_submit(svc.port, spec);
	free(spec);
	/* the sentinel pairs: 2 x 2 rows with cust zz */
	char **lines;
	size_t nl = tk_consume(out, nw + 4, 60000, true, &lines);
	char **got;
	size_t ng = interval_got(lines, nl, &got);
	assert_same(got, ng, want, nw, "interval exactly_once");
	/* both inputs in the status document */
	json_t *st = tk_wait_status(svc.port, id, joined_all,
				    (void *)(intptr_t)(N_PAY + 2), 30000,
				    "both inputs read");
	json_t *join = json_object_get(st, "join");
	assert_string_equal(json_string_value(json_object_get(join, "topic")),
			    right);
	assert_int_equal(json_array_size(json_object_get(join, "partitions")),
			 2);
	assert_int_equal(json_array_size(json_object_get(st, "partitions")), 2);
	assert_true(json_is_integer(json_object_get(join, "watermark_ms")));
	json_t *sides = json_object_get(join, "state");
	assert_non_null(json_object_get(sides, "left"));
	assert_non_null(json_object_get(sides, "right"));
	/* after the sentinels everything is freed but the sentinels */
	assert_true(json_integer_value(json_object_get(
			    json_object_get(sides, "right"), "rows")) <= 2);
	char *dump = json_dumps(join, JSON_COMPACT);
	printf("[interval] status join: %s\n", dump);
	free(dump);
	json_decref(st);
	/* the checkpoint records hold both inputs' offsets */
	char path[256];
	snprintf(path, sizeof(path), "/v1/jobs/%s/checkpoints", id);
	int hs;
	json_t *hist = tk_http_json(svc.port, "GET", path, NULL, &hs);
	assert_int_equal(hs, 200);
	json_t *ck0 = json_array_get(json_object_get(hist, "checkpoints"), 0);
	json_t *offs = json_object_get(ck0, "offsets");
	size_t nright = 0, nleft = 0;
	for (size_t k = 0; k < json_array_size(offs); k++) {
		json_t *o = json_array_get(offs, k);
		const char *in = json_string_value(json_object_get(o, "input"));
		const char *tp = json_string_value(json_object_get(o, "topic"));
		if (!strcmp(in, "join") && !strcmp(tp, right))
			nright++;
		if (!strcmp(in, "source") && !strcmp(tp, left))
			nleft++;
	}
	assert_int_equal(nleft, 2);
	assert_int_equal(nright, 2);
	json_decref(hist);
	char *metrics = NULL;
	assert_int_equal(tk_http(svc.port, "GET", "/metrics", NULL, &metrics),
			 200);
	assert_non_null(strstr(metrics, "streamvisor_join_state_rows{"));
	assert_non_null(strstr(metrics, "input=\"right\""));
	assert_non_null(strstr(metrics, "streamvisor_join_lag_records{"));
	free(metrics);
	free_strs(lines, nl);
	free_strs(got, ng);
	free_strs(want, nw);
	free(id);
	free(left);
	free(right);
	free(out);
	tk_service_stop(&svc);
}

/* ---- lookup ---- */

typedef struct version {
	int64_t t;
	bool tomb;
} version_t;

static int64_t ver_t(int v, int c)
{
	return J_BASE + (int64_t)v * 1000 + c * 10;
}
static bool ver_tomb(int v, int c)
{
	return (v * J_KEYS + c) % 7 == 3;
}
static int64_t lk_ts(int64_t i)
{
	return J_BASE + i * 10 + jitter(i, 3);
}

static void produce_table(const char *topic)
{
	rd_kafka_t *rk = producer();
	char v[160], key[16];
	for (int ver = 0; ver < N_VER; ver++)
		for (int c = 0; c < J_KEYS; c++) {
			snprintf(key, sizeof(key), "c%02d", c);
			int32_t p = sv_partition_of(key, strlen(key), 2);
			int64_t t = ver_t(ver, c);
			if (ver_tomb(ver, c)) {
				send1(rk, topic, p, key, NULL, t);
				continue;
			}
			snprintf(v, sizeof(v),
				 "{\"cust\":\"%s\",\"name\":\"n%02d-%d\","
				 "\"cts\":%lld}",
				 key, c, ver, (long long)t);
			send1(rk, topic, p, key, v, t);
		}
	/* the table's sentinels come a second after the orders' (ts
	 * J_SENTINEL), past their out-of-orderness, so the table's watermark
	 * passes the orders' sentinels and those are answered too (as no
	 * match): the two extra output rows tk_consume waits for, which say
	 * every order before them is answered (at J_SENTINEL they waited
	 * forever, and each consume waited out its whole timeout) */
	for (int p = 0; p < 2; p++) {
		sentinel_key(p, 2, key, sizeof(key));
		snprintf(v, sizeof(v),
			 "{\"cust\":\"%s\",\"name\":\"end\",\"cts\":%lld}", key,
			 (long long)(J_SENTINEL + 1000));
		send1(rk, topic, p, key, v, J_SENTINEL + 1000);
	}
	producer_done(rk);
}

static void produce_lookup_orders(const char *topic)
{
	rd_kafka_t *rk = producer();
	char v[160];
	for (int64_t i = 0; i < N_ORD; i++) {
		snprintf(v, sizeof(v),
			 "{\"id\":%lld,\"cust\":\"c%02d\",\"ts\":%lld}",
			 (long long)i, cust_of(i, 33), (long long)lk_ts(i));
		send1(rk, topic, (int32_t)(i % 2), NULL, v, lk_ts(i));
	}
	for (int p = 0; p < 2; p++) {
		snprintf(v, sizeof(v),
			 "{\"id\":%d,\"cust\":\"zz\",\"ts\":%lld}", -1 - p,
			 (long long)J_SENTINEL);
		send1(rk, topic, p, NULL, v, J_SENTINEL);
	}
	producer_done(rk);
}

/* "id:name" (or "id:null") of order i: its customer's latest version at
 * or before the order's time; a tombstone or none is no match. */
static char *lookup_answer(int64_t i)
{
	int c = cust_of(i, 33);
	int best = -1;
	for (int ver = 0; ver < N_VER; ver++)
		if (ver_t(ver, c) <= lk_ts(i))
			best = ver;
	char *s;
	if (best < 0 || ver_tomb(best, c)) {
		if (asprintf(&s, "%lld:null", (long long)i) < 0)
			abort();
	} else if (asprintf(&s, "%lld:n%02d-%d", (long long)i, c, best) < 0) {
		abort();
	}
	return s;
}

/* The event-time left lookup join of orders against the customers table;
 * rate: the orders' rate_per_s (0: as fast as they come). */
static char *lookup_spec(const char *name, const char *left, const char *table,
			 const char *out, int rate)
{
	char rl[64] = "";
	if (rate)
		snprintf(rl, sizeof(rl), ", \"rate_per_s\": %d", rate);
	char *spec;
	if (asprintf(
		    &spec,
		    "{\"name\": \"%s\", \"source\": {\"topic\": "
		    "\"%s\"%s},"
		    " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
		    "  {\"name\": \"cust\", \"type\": \"string\"},"
		    "  {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		    " \"event_time\": {\"field\": \"ts\", "
		    "\"max_out_of_orderness_ms\": 100},"
		    " \"pipeline\": [{\"join\": {\"type\": \"lookup\", "
		    "\"kind\": \"left\","
		    "  \"source\": {\"topic\": \"%s\"},"
		    "  \"schema\": [{\"name\": \"cust\", \"type\": \"string\"},"
		    "   {\"name\": \"name\", \"type\": \"string\"},"
		    "   {\"name\": \"cts\", \"type\": \"timestamp_ms\"}],"
		    "  \"event_time\": {\"field\": \"cts\", "
		    "\"max_out_of_orderness_ms\": 100},"
		    "  \"on\": {\"left\": [\"cust\"], \"right\": [\"cust\"]},"
		    "  \"take\": {\"name\": \"name\"}}}],"
		    " \"sink\": {\"topic\": \"%s\"},"
		    " \"delivery\": \"exactly_once\","
		    " \"checkpoint\": {\"interval_ms\": 300}}",
		    name, left, rl, table, out) < 0)
		abort();
	return spec;
}

/* The output lines as "id:name" (sentinels, id < 0, left out). */
static size_t lookup_got(char **lines, size_t nl, char ***out)
{
	char **got = calloc(nl ? nl : 1, sizeof(*got));
	size_t ng = 0;
	for (size_t k = 0; k < nl; k++) {
		json_error_t je;
		json_t *o = json_loads(lines[k], 0, &je);
		if (!o)
			fail_msg("output line is not JSON: %s", lines[k]);
		json_int_t oid = json_integer_value(json_object_get(o, "id"));
		const char *name = json_string_value(
			json_object_get(o, "name"));
		if (oid >= 0 &&
		    asprintf(&got[ng++], "%lld:%s", (long long)oid,
			     name ? name : "null") < 0)
			abort();
		json_decref(o);
	}
	*out = got;
	return ng;
}

static void test_lookup(void **state)
{
	(void)state;
	tk_service_t svc;
	tk_service_start(&svc);
	char *left = tk_unique("it-join-lk-orders");
	char *table = tk_unique("it-join-customers");
	char *out = tk_unique("it-join-lk-out");
	tk_create_topic(left, 2);
	tk_create_topic(table, 2);
	tk_create_topic(out, 2);
	produce_lookup_orders(left);
	produce_table(table);
	char *spec = lookup_spec("it-join-lookup", left, table, out, 0);
	char *id = tk_submit(svc.port, spec);
	free(spec);
	char **want = calloc(N_ORD, sizeof(*want));
	size_t nulls = 0;
	for (int64_t i = 0; i < N_ORD; i++) {
		want[i] = lookup_answer(i);
		nulls += strstr(want[i], ":null") != NULL;
	}
	char **lines;
	size_t nl = tk_consume(out, N_ORD + 2, 60000, true, &lines);
	char **got;
	size_t ng = lookup_got(lines, nl, &got);
	printf("[lookup] %zu orders, %zu without a customer row (none yet or "
	       "a tombstone)\n",
	       (size_t)N_ORD, nulls);
	assert_true(nulls > 100 && nulls < N_ORD / 2); /* not vacuous */
	assert_same(got, ng, want, N_ORD, "lookup exactly_once");
	json_t *st = tk_wait_status(svc.port, id, joined_all,
				    (void *)(intptr_t)(2), 30000,
				    "both inputs read");
	json_t *right = json_object_get(
		json_object_get(json_object_get(st, "join"), "state"), "right");
	/* the table holds the live keys (tombstoned ones are forgotten) */
	json_int_t keys = json_integer_value(json_object_get(right, "keys"));
	printf("[lookup] table state: %lld keys\n", (long long)keys);
	assert_true(keys > 0 && keys <= J_KEYS + 2);
	json_decref(st);
	free_strs(lines, nl);
	free_strs(got, ng);
	free_strs(want, N_ORD);
	free(id);
	free(left);
	free(table);
	free(out);
	tk_service_stop(&svc);
}

/* ---- bounded hash join ---- */

#define N_EMP 600
#define N_DEPT 40

static bool emp_dept_null(int e)
{
	return e % 17 == 0;
}
static int emp_dept(int e)
{
	return (int)(mix64((uint64_t)e + 7) % 50); /* 40..49: no dept */
}
/* dept d appears once, d % 10 == 5 twice (two rows, names a and b) */
static int dept_rows(int d)
{
	return d % 10 == 5 ? 2 : 1;
}

/* The same join computed by DataFusion from the same input (written as
 * CSV): its rows must be the job's (tests/integration/join_datafusion.py,
 * the test venv of deploy/install-deps.sh). */
static void datafusion_check(char **got, size_t ng)
{
	const char *bd = getenv("SV_BUILD_DIR");
	const char *src = getenv("SV_SOURCE_DIR");
	char py[1024], dir[1024];
	snprintf(py, sizeof(py), "%s/../venv/bin/python", bd ? bd : "build");
	if (access(py, X_OK))
		fail_msg("test venv python not found at %s (run "
			 "deploy/install-deps.sh)",
			 py);
	snprintf(dir, sizeof(dir), "%s/it-joins-df-XXXXXX", bd ? bd : "/tmp");
	if (!mkdtemp(dir))
		fail_msg("mkdtemp %s", dir);
	char emp[1100], dept[1100], cmd[4096];
	snprintf(emp, sizeof(emp), "%s/emp.csv", dir);
	snprintf(dept, sizeof(dept), "%s/dept.csv", dir);
	FILE *f = fopen(emp, "w");
	fprintf(f, "eid,dept\n");
	for (int e = 0; e < N_EMP; e++)
		if (emp_dept_null(e))
			fprintf(f, "%d,\n", e);
		else
			fprintf(f, "%d,%d\n", e, emp_dept(e));
	fclose(f);
	f = fopen(dept, "w");
	fprintf(f, "dept,dname\n");
	for (int d = 0; d < N_DEPT; d++)
		for (int r = 0; r < dept_rows(d); r++)
			fprintf(f, "%d,d%d%c\n", d, d, 'a' + r);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "'%s' '%s/tests/integration/join_datafusion.py' '%s' '%s'", py,
		 src ? src : ".", emp, dept);
	FILE *p = popen(cmd, "r");
	if (!p)
		fail_msg("cannot run %s", cmd);
	size_t cap = 1024, n = 0;
	char **df = malloc(cap * sizeof(*df));
	char line[256];
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (n == cap)
			df = realloc(df, (cap *= 2) * sizeof(*df));
		df[n++] = strdup(line);
	}
	int rc = pclose(p);
	unlink(emp);
	unlink(dept);
	rmdir(dir);
	if (rc != 0)
		fail_msg("%s failed (%d)", cmd, rc);
	char **copy = calloc(ng ? ng : 1, sizeof(*copy));
	for (size_t i = 0; i < ng; i++)
		copy[i] = strdup(got[i]);
	assert_same(copy, ng, df, n, "bounded hash join vs DataFusion");
	free_strs(copy, ng);
	free_strs(df, n);
}

static void test_hash_bounded(void **state)
{
	(void)state;
	tk_service_t svc;
	tk_service_start(&svc);
	char *emp = tk_unique("it-join-emp");
	char *dept = tk_unique("it-join-dept");
	char *out = tk_unique("it-join-hash-out");
	tk_create_topic(emp, 2);
	tk_create_topic(dept, 3);
	tk_create_topic(out, 1);
	rd_kafka_t *rk = producer();
	char v[160];
	for (int e = 0; e < N_EMP; e++) {
		if (emp_dept_null(e))
			snprintf(v, sizeof(v), "{\"eid\":%d,\"dept\":null}", e);
		else
			snprintf(v, sizeof(v), "{\"eid\":%d,\"dept\":%d}", e,
				 emp_dept(e));
		send1(rk, emp, e % 2, NULL, v, J_BASE + e);
	}
	int n = 0;
	for (int d = 0; d < N_DEPT; d++)
		for (int r = 0; r < dept_rows(d); r++) {
			snprintf(v, sizeof(v),
				 "{\"dept\":%d,\"dname\":\"d%d%c\"}", d, d,
				 'a' + r);
			send1(rk, dept, n++ % 3, NULL, v, J_BASE + d);
		}
	producer_done(rk);
	char *spec;
	if (asprintf(&spec,
		     "{\"name\": \"it-join-hash\", \"mode\": \"bounded\","
		     " \"source\": {\"topic\": \"%s\"},"
		     " \"schema\": [{\"name\": \"eid\", \"type\": \"int64\"},"
		     "  {\"name\": \"dept\", \"type\": \"int64\"}],"
		     " \"pipeline\": [{\"join\": {\"type\": \"hash\", "
		     "\"kind\": \"left\","
		     "  \"source\": {\"topic\": \"%s\"},"
		     "  \"schema\": [{\"name\": \"dept\", \"type\": \"int64\"},"
		     "   {\"name\": \"dname\", \"type\": \"string\"}],"
		     "  \"on\": {\"left\": [\"dept\"], \"right\": "
		     "[\"dept\"]}}}],"
		     " \"sink\": {\"topic\": \"%s\"},"
		     " \"delivery\": \"exactly_once\"}",
		     emp, dept, out) < 0)
		abort();
	char *id = tk_submit(svc.port, spec);
	free(spec);
	json_decref(tk_wait_state(svc.port, id, "completed", 60000));
	/* SELECT eid, e.dept, dname FROM emp e LEFT JOIN dept d
	 * ON e.dept = d.dept */
	size_t cap = N_EMP * 2, nw = 0;
	char **want = calloc(cap, sizeof(*want));
	for (int e = 0; e < N_EMP; e++) {
		int d = emp_dept(e);
		bool match = !emp_dept_null(e) && d < N_DEPT;
		if (!match) {
			if (emp_dept_null(e) ? asprintf(&want[nw++],
							"%d:null:null", e) < 0
					     : asprintf(&want[nw++],
							"%d:%d:null", e, d) < 0)
				abort();
			continue;
		}
		for (int r = 0; r < dept_rows(d); r++)
			if (asprintf(&want[nw++], "%d:%d:d%d%c", e, d, d,
				     'a' + r) < 0)
				abort();
	}
	char path[256];
	snprintf(path, sizeof(path), "/v1/jobs/%s/result", id);
	int status;
	json_t *res = tk_http_json(svc.port, "GET", path, NULL, &status);
	assert_int_equal(status, 200);
	json_t *rows = json_object_get(res, "rows");
	size_t ng = json_array_size(rows);
	char **got = calloc(ng ? ng : 1, sizeof(*got));
	for (size_t k = 0; k < ng; k++) {
		json_t *o = json_array_get(rows, k);
		json_t *dv = json_object_get(o, "dept");
		const char *dn = json_string_value(json_object_get(o, "dname"));
		char dtxt[24] = "null";
		if (json_is_integer(dv))
			snprintf(dtxt, sizeof(dtxt), "%lld",
				 (long long)json_integer_value(dv));
		if (asprintf(&got[k], "%lld:%s:%s",
			     (long long)json_integer_value(
				     json_object_get(o, "eid")),
			     dtxt, dn ? dn : "null") < 0)
			abort();
	}
	assert_same(got, ng, want, nw, "bounded hash join (result)");
	datafusion_check(got, ng);
	/* and the output topic holds the same rows, committed */
	char **lines;
	size_t nl = tk_consume(out, nw, 30000, true, &lines);
	assert_int_equal(nl, nw);
	free_strs(lines, nl);
	json_decref(res);
	free_strs(got, ng);
	free_strs(want, nw);
	free(id);
	free(emp);
	free(dept);
	free(out);
	tk_service_stop(&svc);
}

/* ---- kill ---- */

/* Start an incarnation and submit (first one) or wait for the job to be
 * back; returns once it is running. */
static void start_incarnation(crash_t *c, const char *kill_at)
{
	cr_start(c, kill_at);
	cr_wait_port(c, 30000);
	printf("[kill] incarnation %d%s%s\n", c->incarnation,
	       kill_at ? " with STREAMVISOR_KILL_AT=" : "",
	       kill_at ? kill_at : "");
	fflush(stdout);
}

static void wait_killed(crash_t *c, const char *point)
{
	int st;
	if (!cr_reap(c, 60000, &st))
		cr_fail(c, "the supervisor was not killed at %s within 60 s",
			point);
	char d[96];
	printf("[kill] incarnation %d ended at %s: %s\n", c->incarnation, point,
	       cr_describe_exit(st, d, sizeof(d)));
	fflush(stdout);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		cr_fail(c, "expected a SIGKILL at %s", point);
}

/* The kill loop of it_crash for both streaming joins: a supervisor killed
 * by SIGKILL at checkpoint steps (each at its second hit, so every
 * incarnation makes progress first), then at random moments
 * (SV_CRASH_SEED), restarted on the same data dir each time; the last
 * incarnation runs to the end. The exactly-once output must be the
 * brute-force answer: 0 duplicated, 0 missing, 0 wrong. By default the two
 * joins share the five kill points between them and take one random kill
 * each (make test's time); SV_CRASH_LONG=1 runs every point and 10 random
 * kills for each. */
static const char *const kill_points[] = {
	"before_prepare:2", "after_prepare:2", "after_send_offsets:2",
	"after_commit:2", "after_mark_committed:2"};

/* Kill at points[i] for each i with i % step == first (step 1: all),
 * then nrandom random kills, then the last incarnation. */
static void kill_at(crash_t *c, const char *spec, const char *const *points,
		    size_t npoints, size_t step, size_t first, int nrandom)
{
	bool submitted = false;
	for (size_t i = 0; i < npoints; i++) {
		if (i % step != first)
			continue;
		start_incarnation(c, points[i]);
		if (!submitted) {
			int status;
			char *raw = NULL;
			json_t *r = cr_http_json(c, "POST", "/v1/jobs", spec,
						 &status, &raw);
			if (status != 201)
				cr_fail(c, "submit: %d %s", status,
					raw ? raw : "");
			free(raw);
			json_decref(r);
			submitted = true;
		}
		wait_killed(c, points[i]);
	}
	for (int k = 0; k < nrandom; k++) {
		start_incarnation(c, NULL);
		/* a moment of the running job, not a synchronization */
		int ms = 200 + (int)(rnd(&c->rng) % 900);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		cr_sigkill(c);
		printf("[kill] incarnation %d killed after %d ms\n",
		       c->incarnation, ms);
	}
	start_incarnation(c, NULL);
}

/* first: which half of the points runs by default (0: even, 1: odd) */
static void kill_loop(crash_t *c, const char *spec, size_t first)
{
	bool all = env_on("SV_CRASH_LONG");
	kill_at(c, spec, kill_points, SV_ARRAY_LEN(kill_points), all ? 1 : 2,
		all ? 0 : first, all ? 10 : 1);
}

/* Parallelism 2 over inputs keyed by the customer (4 partitions each):
 * member k's tasks join left partition p with right partition p; a kill
 * after the offsets went into a member's transaction, and one after a
 * member's commit, then the rest: the output is still exactly the pairs
 * (per-task snapshots carry both inputs' offsets). */
static void test_kill_parallel(void **state)
{
	crash_t *c = cr_new(state, "joins_kill_p2", 16);
	char *left = tk_unique("it-join-p-orders");
	char *right = tk_unique("it-join-p-payments");
	char *out = tk_unique("it-join-p-out");
	tk_create_topic(left, 4);
	tk_create_topic(right, 4);
	tk_create_topic(out, 2);
	produce_stream(left, 4, true, false);
	produce_stream(right, 4, true, true);
	char **want;
	size_t nw = interval_expected(&want);
	char *spec = interval_spec("it-join-kill-p2", left, right, out, 1000,
				   2);
	static const char *const points[] = {"after_send_offsets:4",
					     "after_commit:3"};
	kill_at(c, spec, points, SV_ARRAY_LEN(points), 1, 0, 0);
	char **lines;
	/* one sentinel pair per partition */
	size_t nl = tk_consume(out, nw + 4, 90000, true, &lines);
	char **got;
	size_t ng = interval_got(lines, nl, &got);
	assert_same(got, ng, want, nw,
		    "interval exactly_once at parallelism 2, 2 kills");
	if (!cr_log_contains(c, "restored checkpoint"))
		cr_fail(c, "the last incarnation restored no checkpoint");
	/* a task's join state is a full snapshot or one plus its deltas
	 * (whichever the chain rules gave at the kill): said, not asserted */
	printf("[kill_p2] the last incarnation restored a delta chain: %s\n",
	       cr_log_contains(c, "its state a delta on") ? "yes" : "no");
	c->passed = true;
	free_strs(lines, nl);
	free_strs(got, ng);
	free_strs(want, nw);
	free(spec);
	free(left);
	free(right);
	free(out);
}

static void test_kill_loop_interval(void **state)
{
	crash_t *c = cr_new(state, "joins_loop_interval", 17);
	char *left = tk_unique("it-join-li-orders");
	char *right = tk_unique("it-join-li-payments");
	char *out = tk_unique("it-join-li-out");
	tk_create_topic(left, 2);
	tk_create_topic(right, 2);
	tk_create_topic(out, 2);
	produce_orders(left);
	produce_payments(right);
	char **want;
	size_t nw = interval_expected(&want);
	char *spec = interval_spec("it-join-loop-interval", left, right, out,
				   1000, 1);
	kill_loop(c, spec, 0);
	char **lines;
	size_t nl = tk_consume(out, nw + 4, 90000, true, &lines);
	char **got;
	size_t ng = interval_got(lines, nl, &got);
	assert_same(got, ng, want, nw, "interval exactly_once, kill loop");
	c->passed = true;
	free_strs(lines, nl);
	free_strs(got, ng);
	free_strs(want, nw);
	free(spec);
	free(left);
	free(right);
	free(out);
}

static void test_kill_loop_lookup(void **state)
{
	crash_t *c = cr_new(state, "joins_loop_lookup", 18);
	char *left = tk_unique("it-join-ll-orders");
	char *table = tk_unique("it-join-ll-customers");
	char *out = tk_unique("it-join-ll-out");
	tk_create_topic(left, 2);
	tk_create_topic(table, 2);
	tk_create_topic(out, 2);
	produce_lookup_orders(left);
	produce_table(table);
	char *spec = lookup_spec("it-join-loop-lookup", left, table, out, 1000);
	char **want = calloc(N_ORD, sizeof(*want));
	for (int64_t i = 0; i < N_ORD; i++)
		want[i] = lookup_answer(i);
	kill_loop(c, spec, 1);
	char **lines;
	size_t nl = tk_consume(out, N_ORD + 2, 90000, true, &lines);
	char **got;
	size_t ng = lookup_got(lines, nl, &got);
	assert_same(got, ng, want, N_ORD, "lookup exactly_once, kill loop");
	c->passed = true;
	free_strs(lines, nl);
	free_strs(got, ng);
	free_strs(want, N_ORD);
	free(spec);
	free(left);
	free(table);
	free(out);
}

/* At parallelism 2, topics of 4 and 2 partitions are not co-partitioned:
 * 422 at submit naming the join source's topic. */
static void test_copartition_refused(void **state)
{
	(void)state;
	tk_service_t svc;
	tk_service_start(&svc);
	char *left = tk_unique("it-join-c-orders");
	char *right = tk_unique("it-join-c-payments");
	tk_create_topic(left, 4);
	tk_create_topic(right, 2);
	char *spec = interval_spec("it-join-copart", left, right, "o", 0, 2);
	int status;
	json_t *r = tk_http_json(svc.port, "POST", "/v1/jobs", spec, &status);
	assert_int_equal(status, 422);
	json_t *e = json_object_get(r, "error");
	assert_string_equal(json_string_value(json_object_get(e, "category")),
			    "coverage");
	assert_string_equal(json_string_value(json_object_get(e, "field")),
			    "pipeline[0].join.source.topic");
	const char *msg = json_string_value(json_object_get(e, "message"));
	printf("[copartition] 422: %s\n", msg);
	assert_non_null(strstr(msg, "co-partitioned"));
	json_decref(r);
	free(spec);
	free(left);
	free(right);
	tk_service_stop(&svc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_hash_bounded),
		cmocka_unit_test(test_copartition_refused),
		cmocka_unit_test_teardown(test_kill_parallel, cr_teardown),
		cmocka_unit_test_teardown(test_kill_loop_interval, cr_teardown),
		cmocka_unit_test_teardown(test_kill_loop_lookup, cr_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
