/* it_stateless.c — the walking skeleton end to end against the real broker:
 * 10,000 JSON records (plus malformed ones) on a 4-partition topic, a
 * filter+select job submitted over HTTP, the output topic read back by an
 * independent consumer and compared as a multiset with what the test
 * computes itself; status counters must agree; cancel ends in `cancelled`.
 * The same pipeline in bounded mode ends `completed` with the same output,
 * and with a 64 MB memory budget (resources.memory_mb) the status and the
 * metrics carry the budget and an estimate under it. An exactly-once job
 * with a 10-minute checkpoint interval commits its output long before
 * that: an attempt's first checkpoint comes once it caught up. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/testkit.h"

#define N_RECORDS 10000
#define N_BAD 20

static const char *const regions[] = {"EU", "US", "APAC", "LatAm", "Africa"};

typedef struct fixture {
	tk_service_t svc;
	char *in_topic;
	char *dlq_topic;
	char **expected; /* canonical tuples, sorted */
	size_t nexpected;
} fixture_t;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Canonical text of an output row, independent of JSON formatting. */
static char *canon(int64_t id, const char *region, double amount2, bool big)
{
	char *s;
	if (asprintf(&s, "%lld|%s|%.17g|%d", (long long)id, region, amount2,
		     big) < 0)
		abort();
	return s;
}

static int setup(void **state)
{
	fixture_t *f = calloc(1, sizeof(*f));
	f->in_topic = tk_unique("it-orders");
	f->dlq_topic = tk_unique("it-orders-dlq");
	tk_create_topic(f->in_topic, 4);
	tk_create_topic(f->dlq_topic, 1);

	char **payloads = calloc(N_RECORDS + N_BAD, sizeof(char *));
	f->expected = calloc(N_RECORDS, sizeof(char *));
	for (int i = 0; i < N_RECORDS; i++) {
		const char *region = regions[i % 5];
		double amount = (double)(i % 300) - 50.0 + 0.25;
		const char *status = i % 3 == 0 ? "completed" : "pending";
		if (asprintf(&payloads[i],
			     "{\"id\":%d,\"region\":\"%s\",\"amount\":%.2f,"
			     "\"status\":\"%s\",\"ts\":%lld}",
			     i, region, amount, status,
			     1700000000000LL + i) < 0)
			abort();
		if (!strcmp(status, "completed") && amount > 0)
			f->expected[f->nexpected++] = canon(
				i, region, amount * 2, amount > 100);
	}
	for (int i = 0; i < N_BAD; i++) {
		const char *bad[] = {"not json", "{\"id\":\"seven\"}",
				     "{\"id\":1,", "[1,2,3]",
				     "{\"id\":1,\"amount\":true}"};
		payloads[N_RECORDS + i] = strdup(bad[i % 5]);
	}
	tk_produce(f->in_topic, (const char *const *)payloads,
		   N_RECORDS + N_BAD);
	for (int i = 0; i < N_RECORDS + N_BAD; i++)
		free(payloads[i]);
	free(payloads);
	qsort(f->expected, f->nexpected, sizeof(char *), cmp_str);
	tk_service_start(&f->svc);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture_t *f = *state;
	tk_service_stop(&f->svc);
	tk_free_lines(f->expected, f->nexpected);
	free(f->in_topic);
	free(f->dlq_topic);
	free(f);
	return 0;
}

static char *job_spec(fixture_t *f, const char *name, const char *mode,
		      const char *out_topic)
{
	char *s;
	if (asprintf(
		    &s,
		    "{\"name\": \"%s\", \"mode\": \"%s\","
		    " \"source\": {\"kind\": \"kafka\", \"cluster\": "
		    "\"default\","
		    "   \"topic\": \"%s\", \"format\": \"json\", \"start\": "
		    "\"earliest\"},"
		    " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
		    "   {\"name\": \"region\", \"type\": \"string\"},"
		    "   {\"name\": \"amount\", \"type\": \"float64\"},"
		    "   {\"name\": \"status\", \"type\": \"string\"},"
		    "   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		    " \"pipeline\": ["
		    "   {\"filter\": \"status == 'completed' && amount > 0\"},"
		    "   {\"select\": {\"id\": \"id\", \"region\": \"region\","
		    "     \"amount2\": \"amount * 2\", \"big\": \"amount > "
		    "100\"}}],"
		    " \"sink\": {\"kind\": \"kafka\", \"cluster\": \"default\","
		    "   \"topic\": \"%s\", \"format\": \"json\", \"key\": "
		    "\"region\"},"
		    " \"dead_letter\": {\"kind\": \"kafka\", \"topic\": "
		    "\"%s\"},"
		    " \"delivery\": \"at_least_once\"}",
		    name, mode, f->in_topic, out_topic, f->dlq_topic) < 0)
		abort();
	return s;
}

/* Parse output rows into canonical tuples, sort, compare with expected. */
static void check_output(fixture_t *f, char **lines, size_t n)
{
	char **got = calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		json_error_t jerr;
		json_t *o = json_loads(lines[i], 0, &jerr);
		assert_non_null(o);
		assert_int_equal(json_object_size(o), 4);
		/* output columns in the order written in the select */
		const char *first = json_object_iter_key(json_object_iter(o));
		assert_string_equal(first, "id");
		got[i] = canon(json_integer_value(json_object_get(o, "id")),
			       json_string_value(json_object_get(o, "region")),
			       json_number_value(json_object_get(o, "amount2")),
			       json_is_true(json_object_get(o, "big")));
		json_decref(o);
	}
	qsort(got, n, sizeof(char *), cmp_str);
	assert_int_equal(n, f->nexpected);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(got[i], f->expected[i]);
	tk_free_lines(got, n);
}

static bool out_reached(json_t *st, void *arg)
{
	return json_integer_value(json_object_get(st, "records_out")) >=
		(json_int_t)(size_t)arg;
}

static void test_stream_filter_select(void **state)
{
	fixture_t *f = *state;
	char *out_topic = tk_unique("it-orders-out");
	tk_create_topic(out_topic, 4);
	char *spec = job_spec(f, "it-stream", "stream", out_topic);
	int status;
	json_t *r = tk_http_json(f->svc.port, "POST", "/v1/jobs", spec,
				 &status);
	assert_int_equal(status, 201);
	const char *id = json_string_value(json_object_get(r, "id"));
	assert_non_null(id);
	assert_string_equal(json_string_value(json_object_get(r, "name")),
			    "it-stream");
	assert_int_equal(
		strlen(json_string_value(json_object_get(r, "plan_id"))), 64);

	json_t *st = tk_wait_status(f->svc.port, id, out_reached,
				    (void *)(size_t)f->nexpected, 120000,
				    "all expected output");
	assert_string_equal(json_string_value(json_object_get(st, "state")),
			    "running");
	assert_string_equal(json_string_value(json_object_get(st, "mode")),
			    "stream");
	assert_int_equal(json_integer_value(json_object_get(st, "records_in")),
			 N_RECORDS);
	assert_int_equal(json_integer_value(json_object_get(st, "records_out")),
			 f->nexpected);
	assert_int_equal(
		json_integer_value(json_object_get(st, "records_invalid")),
		N_BAD);
	assert_true(json_is_null(json_object_get(st, "error")));
	/* every partition read to its end */
	json_t *parts = json_object_get(st, "partitions");
	assert_int_equal(json_array_size(parts), 4);
	json_decref(st);

	char **lines;
	size_t n = tk_consume(out_topic, f->nexpected, 60000, true, &lines);
	check_output(f, lines, n);
	tk_free_lines(lines, n);

	/* the malformed records went to the dead-letter topic, as they came */
	n = tk_consume(f->dlq_topic, N_BAD, 30000, true, &lines);
	assert_int_equal(n, N_BAD);
	size_t not_json = 0;
	for (size_t i = 0; i < n; i++)
		not_json += !strcmp(lines[i], "not json");
	assert_int_equal(not_json, N_BAD / 5);
	tk_free_lines(lines, n);

	char path[128];
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
	json_t *c = tk_http_json(f->svc.port, "POST", path, NULL, &status);
	assert_int_equal(status, 200);
	json_decref(c);
	st = tk_wait_state(f->svc.port, id, "cancelled", 30000);
	json_decref(st);
	/* cancelling again is a conflict that names the state */
	char *body;
	status = tk_http(f->svc.port, "POST", path, NULL, &body);
	assert_int_equal(status, 409);
	assert_non_null(strstr(body, "cancelled"));
	free(body);
	json_decref(r);
	free(spec);
	free(out_topic);
}

static void test_bounded_completes(void **state)
{
	fixture_t *f = *state;
	char *out_topic = tk_unique("it-orders-bounded");
	tk_create_topic(out_topic, 2);
	char *spec = job_spec(f, "it-bounded", "bounded", out_topic);
	int status;
	json_t *r = tk_http_json(f->svc.port, "POST", "/v1/jobs", spec,
				 &status);
	assert_int_equal(status, 201);
	const char *id = json_string_value(json_object_get(r, "id"));
	json_t *st = tk_wait_state(f->svc.port, id, "completed", 120000);
	assert_string_equal(json_string_value(json_object_get(st, "mode")),
			    "bounded");
	assert_int_equal(json_integer_value(json_object_get(st, "records_in")),
			 N_RECORDS);
	assert_int_equal(json_integer_value(json_object_get(st, "records_out")),
			 f->nexpected);
	assert_int_equal(
		json_integer_value(json_object_get(st, "records_invalid")),
		N_BAD);
	json_decref(st);
	char **lines;
	size_t n = tk_consume(out_topic, f->nexpected, 60000, true, &lines);
	check_output(f, lines, n);
	tk_free_lines(lines, n);
	json_decref(r);
	free(spec);
	free(out_topic);
}

/* The stream job again with resources.memory_mb 64: the same output, and
 * the status' memory (budget, and an estimate of state plus the Kafka
 * queues) stays under the budget; the metrics carry both. Not a speed
 * test: the bound is the budget itself. */
static void test_memory_budget(void **state)
{
	fixture_t *f = *state;
	char *out_topic = tk_unique("it-orders-budget");
	tk_create_topic(out_topic, 2);
	char *text = job_spec(f, "it-budget", "stream", out_topic);
	json_error_t jerr;
	json_t *js = json_loads(text, 0, &jerr);
	assert_non_null(js);
	json_object_set_new(js, "resources",
			    json_pack("{s:i}", "memory_mb", 64));
	char *spec = json_dumps(js, JSON_COMPACT);
	json_decref(js);
	char *id = tk_submit(f->svc.port, spec);
	json_t *st = tk_wait_status(f->svc.port, id, out_reached,
				    (void *)(size_t)f->nexpected, 120000,
				    "all expected output");
	json_t *mem = json_object_get(st, "memory");
	assert_non_null(mem);
	assert_int_equal(
		json_integer_value(json_object_get(mem, "budget_bytes")),
		64 << 20);
	json_int_t est = json_integer_value(
		json_object_get(mem, "estimate_bytes"));
	assert_true(
		json_is_integer(json_object_get(mem, "kafka_queued_bytes")));
	assert_true(est >= 0 && est < (64 << 20));
	json_decref(st);
	char *body = NULL;
	assert_int_equal(tk_http(f->svc.port, "GET", "/metrics", NULL, &body),
			 200);
	assert_non_null(strstr(body, "streamvisor_memory_budget_bytes{"));
	assert_non_null(strstr(body, "streamvisor_memory_bytes{"));
	free(body);
	char **lines;
	size_t n = tk_consume(out_topic, f->nexpected, 60000, true, &lines);
	check_output(f, lines, n);
	tk_free_lines(lines, n);
	char path[128];
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
	int status;
	json_decref(tk_http_json(f->svc.port, "POST", path, NULL, &status));
	assert_int_equal(status, 200);
	json_decref(tk_wait_state(f->svc.port, id, "cancelled", 30000));
	free(id);
	free(spec);
	free(text);
	free(out_topic);
}

static bool checkpointed(json_t *st, void *arg)
{
	(void)arg;
	json_t *ck = json_object_get(st, "last_checkpoint");
	return json_integer_value(json_object_get(ck, "id")) >= 1;
}

/* delivery exactly_once, checkpoint interval 10 minutes: the output is
 * committed and readable with read_committed within the test's deadline, a fraction of the
 * interval, because the attempt's first checkpoint is taken as soon as
 * it caught up with its input (supervisor/worker.c
 * first_checkpoint_due). Not a speed test: without that rule the
 * output would wait the whole interval. */
static void test_exactly_once_first_checkpoint(void **state)
{
	fixture_t *f = *state;
	char *out_topic = tk_unique("it-orders-eo");
	tk_create_topic(out_topic, 2);
	char *text = job_spec(f, "it-eo-first", "stream", out_topic);
	json_error_t jerr;
	json_t *js = json_loads(text, 0, &jerr);
	assert_non_null(js);
	json_object_set_new(js, "delivery", json_string("exactly_once"));
	json_object_set_new(js, "checkpoint",
			    json_pack("{s:i}", "interval_ms", 600000));
	char *spec = json_dumps(js, JSON_COMPACT);
	json_decref(js);
	char *id = tk_submit(f->svc.port, spec);
	json_decref(tk_wait_status(f->svc.port, id, checkpointed, NULL, 120000,
				   "a first committed checkpoint"));
	char **lines;
	size_t n = tk_consume(out_topic, f->nexpected, 60000, true, &lines);
	check_output(f, lines, n);
	tk_free_lines(lines, n);
	char path[128];
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
	int status;
	json_decref(tk_http_json(f->svc.port, "POST", path, NULL, &status));
	assert_int_equal(status, 200);
	json_decref(tk_wait_state(f->svc.port, id, "cancelled", 30000));
	free(id);
	free(spec);
	free(text);
	free(out_topic);
}

static void test_bad_specs(void **state)
{
	fixture_t *f = *state;
	struct {
		const char *body;
		int status;
		const char *needle;
	} cases[] = {
		{"{\"name\": 1}", 400, "field 'name': expected a string"},
		{"{\"name\": \"x\", \"sauce\": {}}", 400,
		 "field 'sauce': unknown field"},
		{"{\"name\": \"x\", \"source\": {\"kind\": \"kafka\"}, "
		 "\"schema\": "
		 "[{\"name\": \"a\", \"type\": \"int64\"}], \"sink\": "
		 "{\"topic\": \"t\"}}",
		 400, "field 'source.topic': is required"},
		{"{\"name\": \"x\", \"source\": {\"topic\": \"t\"}, "
		 "\"schema\": "
		 "[{\"name\": \"a\", \"type\": \"int64\"}], \"pipeline\": "
		 "[{\"filter\": "
		 "\"b > 1\"}], \"sink\": {\"topic\": \"t\"}}",
		 400, "unknown column 'b'"},
		{"{\"name\": \"x\", \"source\": {\"topic\": \"t\", "
		 "\"cluster\": \"nope\"}, "
		 "\"schema\": [{\"name\": \"a\", \"type\": \"int64\"}], "
		 "\"sink\": "
		 "{\"topic\": \"t\"}}",
		 400, "unknown cluster profile 'nope'"},
		{"{\"name\": \"x\", \"source\": {\"topic\": \"t\"}, "
		 "\"schema\": "
		 "[{\"name\": \"a\", \"type\": \"int64\"}], \"pipeline\": "
		 "[{\"filter\": "
		 "\"frobnicate(a)\"}], \"sink\": {\"topic\": \"t\"}}",
		 422, "function 'frobnicate' is not in the registry"},
		{"{\"name\": \"x\", \"resources\": {\"memory_mb\": 4}, "
		 "\"source\": {\"topic\": \"t\"}, \"schema\": "
		 "[{\"name\": \"a\", \"type\": \"int64\"}], \"sink\": "
		 "{\"topic\": \"t\"}}",
		 400, "field 'resources.memory_mb': 4 is below the minimum"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *body = NULL;
		int status = tk_http(f->svc.port, "POST", "/v1/jobs",
				     cases[i].body, &body);
		if (status != cases[i].status || !strstr(body, cases[i].needle))
			fail_msg("case %zu: got %d %s, want %d containing '%s'",
				 i, status, body, cases[i].status,
				 cases[i].needle);
		free(body);
	}
}

static void test_missing_topic_is_binding_error(void **state)
{
	fixture_t *f = *state;
	char *missing = tk_unique("it-no-such-topic");
	char *spec;
	if (asprintf(&spec,
		     "{\"name\": \"it-missing\", \"source\": {\"topic\": "
		     "\"%s\"},"
		     " \"schema\": [{\"name\": \"a\", \"type\": \"int64\"}],"
		     " \"sink\": {\"topic\": \"%s\"},"
		     " \"restart\": {\"max_attempts\": 2, "
		     "\"initial_backoff_ms\": 50,"
		     "   \"max_backoff_ms\": 100}}",
		     missing, f->dlq_topic) < 0)
		abort();
	int status;
	json_t *r = tk_http_json(f->svc.port, "POST", "/v1/jobs", spec,
				 &status);
	assert_int_equal(status, 201);
	const char *id = json_string_value(json_object_get(r, "id"));
	json_t *st = tk_wait_state(f->svc.port, id, "failed", 60000);
	json_t *err = json_object_get(st, "error");
	assert_string_equal(json_string_value(json_object_get(err, "category")),
			    "retry_exhausted");
	assert_non_null(
		strstr(json_string_value(json_object_get(err, "message")),
		       "does not exist"));
	json_decref(st);
	json_decref(r);
	free(spec);
	free(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_stream_filter_select),
		cmocka_unit_test(test_bounded_completes),
		cmocka_unit_test(test_memory_budget),
		cmocka_unit_test(test_exactly_once_first_checkpoint),
		cmocka_unit_test(test_missing_topic_is_binding_error),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
