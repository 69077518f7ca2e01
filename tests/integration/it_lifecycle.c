/* it_lifecycle.c — operators' controls end to end against the real broker
 * (DESIGN.md §3, §5; issue 5), and the observations they leave (issue 6):
 *   - drain mid-stream ends `checkpointed`; resume continues from the final
 *     checkpoint: every input record in the output exactly once, none lost,
 *     none repeated; a second drain with final_watermark fires every open
 *     window (exact aggregates computed here);
 *   - POST checkpoints answers {"id": n} once n committed; GET lists it;
 *   - restart from "latest" / a chosen checkpoint; bad bodies name the field;
 *     actions invalid in the state are 409 naming action and state;
 *   - the restart policy shows `restarting` with next_attempt_at;
 *   - a throttled job with a backlog is `lagging`, then `running` again;
 *   - the observation log of that run, field by field, paged with ?after=. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/integration/testkit.h"

#define BASE_MS 1700000000000LL

typedef struct fixture {
	tk_service_t svc;
} fixture_t;

static int setup(void **state)
{
	fixture_t *f = calloc(1, sizeof(*f));
	tk_service_start(&f->svc);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture_t *f = *state;
	tk_service_stop(&f->svc);
	free(f);
	return 0;
}

/* n records {"id", "k", "ts"}: ids from first, event time 10 ms apart. */
static void produce_range(const char *topic, int first, int n)
{
	char **p = calloc((size_t)n, sizeof(char *));
	for (int i = 0; i < n; i++) {
		int id = first + i;
		if (asprintf(&p[i], "{\"id\":%d,\"k\":\"k%d\",\"ts\":%lld}", id,
			     id % 7, BASE_MS + (long long)id * 10) < 0)
			abort();
	}
	tk_produce(topic, (const char *const *)p, (size_t)n);
	for (int i = 0; i < n; i++)
		free(p[i]);
	free(p);
}

/* POST /v1/jobs/{id}/<action> with body; returns the status code and the
 * parsed answer in *out (caller decrefs; may be NULL). */
static int action(fixture_t *f, const char *id, const char *what,
		  const char *body, json_t **out)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/jobs/%s/%s", id, what);
	int status;
	json_t *r = tk_http_json(f->svc.port, "POST", path, body, &status);
	if (out)
		*out = r;
	else
		json_decref(r);
	return status;
}

static json_t *get(fixture_t *f, const char *path)
{
	int status;
	json_t *r = tk_http_json(f->svc.port, "GET", path, NULL, &status);
	if (status != 200)
		fail_msg("GET %s: HTTP %d", path, status);
	return r;
}

static bool in_at_least(json_t *st, void *arg)
{
	return json_integer_value(json_object_get(st, "records_in")) >=
		(json_int_t)(size_t)arg;
}

static const char *err_message(json_t *r)
{
	return json_string_value(
		json_object_get(json_object_get(r, "error"), "message"));
}

static char *passthrough_spec(const char *name, const char *in, const char *out,
			      int rate)
{
	char *s;
	if (asprintf(&s,
		     "{\"name\": \"%s\", \"source\": {\"kind\": \"kafka\", "
		     "\"topic\": \"%s\","
		     "   \"rate_per_s\": %d},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
		     "   {\"name\": \"k\", \"type\": \"string\"},"
		     "   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		     " \"event_time\": {\"field\": \"ts\"},"
		     " \"pipeline\": [{\"select\": {\"id\": \"id\"}}],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\"},"
		     " \"checkpoint\": {\"interval_ms\": 600000}}",
		     name, in, rate, out) < 0)
		abort();
	return s;
}

/* Every id in [0, n) exactly once in lines. */
static void check_exactly_once(char **lines, size_t got, int n)
{
	int *seen = calloc((size_t)n, sizeof(int));
	size_t dup = 0, bad = 0;
	for (size_t i = 0; i < got; i++) {
		json_error_t jerr;
		json_t *o = json_loads(lines[i], 0, &jerr);
		json_int_t id = o ? json_integer_value(json_object_get(o, "id"))
				  : -1;
		json_decref(o);
		if (id < 0 || id >= n)
			bad++;
		else if (seen[id]++)
			dup++;
	}
	size_t missing = 0;
	for (int i = 0; i < n; i++)
		missing += !seen[i];
	free(seen);
	if (dup || missing || bad)
		fail_msg("output: %zu rows, %zu duplicates, %zu missing, %zu "
			 "unexpected",
			 got, dup, missing, bad);
}

static void test_drain_resume_no_loss_no_repeat(void **state)
{
	fixture_t *f = *state;
	char *in = tk_unique("it-lc-in"), *out = tk_unique("it-lc-out");
	tk_create_topic(in, 4);
	tk_create_topic(out, 2);
	produce_range(in, 0, 6000);
	char *spec = passthrough_spec("lc-drain", in, out, 3000);
	char *id = tk_submit(f->svc.port, spec);
	json_decref(tk_wait_status(f->svc.port, id, in_at_least, (void *)1000,
				   60000, "1000 records read"));

	/* resume is only for checkpointed jobs */
	json_t *r;
	assert_int_equal(action(f, id, "resume", NULL, &r), 409);
	assert_non_null(strstr(err_message(r), "cannot resume job"));
	assert_non_null(strstr(err_message(r), "it is running"));
	json_decref(r);
	/* a bad drain body names the field */
	assert_int_equal(action(f, id, "drain", "{\"final_watermark\": 1}", &r),
			 400);
	assert_non_null(strstr(err_message(r), "final_watermark"));
	json_decref(r);
	assert_int_equal(action(f, id, "drain", "{\"timeot_ms\": 5}", &r), 400);
	assert_non_null(strstr(err_message(r), "timeot_ms"));
	json_decref(r);

	assert_int_equal(
		action(f, id, "drain", "{\"timeout_ms\": 30000}", NULL), 200);
	json_t *st = tk_wait_state(f->svc.port, id, "checkpointed", 60000);
	json_int_t in1 = json_integer_value(json_object_get(st, "records_in"));
	json_t *lc = json_object_get(st, "last_checkpoint");
	assert_true(json_is_object(lc));
	assert_string_equal(json_string_value(json_object_get(lc, "status")),
			    "committed");
	json_int_t ck1 = json_integer_value(json_object_get(lc, "id"));
	json_decref(st);
	assert_true(in1 >= 1000 && in1 < 6000); /* drained mid-stream */
	/* checkpointed: nothing runs; drain again is a conflict */
	assert_int_equal(action(f, id, "drain", NULL, &r), 409);
	assert_non_null(strstr(err_message(r), "it is checkpointed"));
	json_decref(r);

	assert_int_equal(action(f, id, "resume", NULL, NULL), 200);
	json_decref(tk_wait_status(f->svc.port, id, in_at_least, (void *)6000,
				   60000, "all 6000 records read"));
	assert_int_equal(
		action(f, id, "drain", "{\"final_watermark\": true}", NULL),
		200);
	st = tk_wait_state(f->svc.port, id, "checkpointed", 60000);
	/* nothing read twice: the resumed attempt started at the drain's
	 * offsets */
	assert_int_equal(json_integer_value(json_object_get(st, "records_in")),
			 6000);
	assert_true(json_integer_value(json_object_get(
			    json_object_get(st, "last_checkpoint"), "id")) >
		    ck1);
	json_decref(st);

	char **lines;
	size_t n = tk_consume(out, 6000, 60000, true, &lines);
	check_exactly_once(lines, n, 6000);
	tk_free_lines(lines, n);

	/* the observations of this run, field by field */
	char path[200];
	snprintf(path, sizeof(path), "/v1/jobs/%s/observations?limit=1000", id);
	json_t *page = get(f, path);
	json_t *obs = json_object_get(page, "observations");
	assert_true(json_array_size(obs) >= 8);
	json_t *first = json_array_get(obs, 0);
	assert_string_equal(json_string_value(json_object_get(first, "kind")),
			    "job_submitted");
	assert_string_equal(
		json_string_value(json_object_get(first, "backend_kind")),
		"streamvisor");
	assert_non_null(
		json_string_value(json_object_get(first, "backend_version")));
	assert_non_null(json_string_value(
		json_object_get(first, "supervisor_identity")));
	assert_int_equal(
		strlen(json_string_value(json_object_get(first, "plan_id"))),
		64);
	json_t *pp = json_object_get(first, "physical_plan");
	assert_int_equal(json_integer_value(json_object_get(pp, "parallelism")),
			 1);
	json_t *ops = json_object_get(pp, "operators");
	assert_int_equal(json_array_size(ops), 3); /* source, select, sink */
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ops, 1), "operator")),
			    "select");
	int transitions = 0, attempts = 0, ck_done = 0, drains = 0;
	json_int_t last_seq = 0;
	bool saw_checkpointed = false;
	for (size_t i = 0; i < json_array_size(obs); i++) {
		json_t *o = json_array_get(obs, i);
		json_int_t seq = json_integer_value(json_object_get(o, "seq"));
		assert_true(seq > last_seq); /* newest last, increasing */
		last_seq = seq;
		assert_string_equal(
			json_string_value(json_object_get(o, "job_id")), id);
		assert_non_null(json_string_value(json_object_get(o, "time")));
		assert_true(json_is_integer(json_object_get(o, "attempt")));
		const char *kind = json_string_value(
			json_object_get(o, "kind"));
		if (!strcmp(kind, "state_transition")) {
			transitions++;
			assert_non_null(
				json_string_value(json_object_get(o, "from")));
			assert_non_null(json_string_value(
				json_object_get(o, "reason")));
			const char *to = json_string_value(
				json_object_get(o, "to"));
			if (!strcmp(to, "checkpointed")) {
				saw_checkpointed = true;
				assert_non_null(strstr(
					json_string_value(
						json_object_get(o, "reason")),
					"drained"));
			}
		} else if (!strcmp(kind, "attempt_started")) {
			attempts++;
		} else if (!strcmp(kind, "checkpoint_completed")) {
			ck_done++;
			assert_true(json_integer_value(json_object_get(
					    o, "checkpoint_id")) > 0);
			assert_true(json_is_integer(
				json_object_get(o, "duration_ms")));
			assert_true(
				json_is_integer(json_object_get(o, "bytes")));
		} else if (!strcmp(kind, "drain")) {
			drains++;
		}
	}
	assert_true(saw_checkpointed);
	assert_int_equal(attempts, 2); /* first, resume */
	assert_true(ck_done >= 2); /* one per drain */
	assert_true(drains >= 4); /* requested + checkpointed, twice */
	assert_true(transitions >= 5);
	/* paging: after=<seq> gives only newer ones */
	json_int_t mid = json_integer_value(
		json_object_get(json_array_get(obs, 3), "seq"));
	json_decref(page);
	snprintf(path, sizeof(path),
		 "/v1/jobs/%s/observations?after=%lld&limit=2", id,
		 (long long)mid);
	page = get(f, path);
	obs = json_object_get(page, "observations");
	assert_int_equal(json_array_size(obs), 2);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(obs, 0), "seq")),
			 mid + 1);
	assert_int_equal(
		json_integer_value(json_object_get(page, "next_after")),
		mid + 2);
	json_decref(page);

	free(spec);
	free(id);
	free(in);
	free(out);
}

static void test_drain_final_watermark_fires_windows(void **state)
{
	fixture_t *f = *state;
	char *in = tk_unique("it-lc-win"), *out = tk_unique("it-lc-win-out");
	tk_create_topic(in, 4);
	tk_create_topic(out, 1);
	/* 2000 records, 10 ms apart: 20 s of event time, 1 s windows */
	produce_range(in, 0, 2000);
	char *spec;
	if (asprintf(&spec,
		     "{\"name\": \"lc-window\", \"source\": {\"kind\": "
		     "\"kafka\", \"topic\": \"%s\"},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
		     "   {\"name\": \"k\", \"type\": \"string\"},"
		     "   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		     " \"event_time\": {\"field\": \"ts\", "
		     "\"max_out_of_orderness_ms\": 100},"
		     " \"pipeline\": [{\"window\": {\"type\": \"tumbling\", "
		     "\"size_ms\": 1000,"
		     "   \"key\": [\"k\"], \"aggregates\": {\"n\": "
		     "\"count()\", \"s\": \"sum(id)\"}}}],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\"},"
		     " \"checkpoint\": {\"interval_ms\": 1000}}",
		     in, out) < 0)
		abort();
	char *id = tk_submit(f->svc.port, spec);
	json_decref(tk_wait_status(f->svc.port, id, in_at_least, (void *)2000,
				   60000, "all records read"));
	/* on demand checkpoint: answered once committed, then listed */
	json_t *r;
	assert_int_equal(action(f, id, "checkpoints", NULL, &r), 200);
	json_int_t ck = json_integer_value(json_object_get(r, "id"));
	assert_true(ck > 0);
	json_decref(r);
	char path[160];
	snprintf(path, sizeof(path), "/v1/jobs/%s/checkpoints", id);
	json_t *list = get(f, path);
	json_t *cks = json_object_get(list, "checkpoints");
	assert_true(json_array_size(cks) >= 1);
	json_t *c0 = json_array_get(cks, 0);
	assert_true(json_integer_value(json_object_get(c0, "id")) >= ck);
	assert_string_equal(json_string_value(json_object_get(c0, "status")),
			    "committed");
	assert_int_equal(json_array_size(json_object_get(c0, "offsets")), 4);
	assert_true(json_is_integer(json_object_get(c0, "duration_ms")));
	assert_true(json_is_integer(json_object_get(c0, "watermark_ms")));
	json_decref(list);

	assert_int_equal(
		action(f, id, "drain", "{\"final_watermark\": true}", NULL),
		200);
	json_decref(tk_wait_state(f->svc.port, id, "checkpointed", 60000));
	/* every window fired: 20 windows x 7 keys, exact counts and sums */
	char **lines;
	size_t n = tk_consume(out, 140, 60000, true, &lines);
	assert_int_equal(n, 140);
	long long total_n = 0, total_s = 0;
	for (size_t i = 0; i < n; i++) {
		json_error_t jerr;
		json_t *o = json_loads(lines[i], 0, &jerr);
		assert_non_null(o);
		json_int_t ws = json_integer_value(
			json_object_get(o, "window_start"));
		const char *k = json_string_value(json_object_get(o, "k"));
		long long en = 0, es = 0;
		for (int idv = 0; idv < 2000; idv++) {
			long long ts = BASE_MS + idv * 10LL;
			char kk[8];
			snprintf(kk, sizeof(kk), "k%d", idv % 7);
			if (ts - ts % 1000 == ws && !strcmp(kk, k)) {
				en++;
				es += idv;
			}
		}
		assert_int_equal(json_integer_value(json_object_get(o, "n")),
				 en);
		assert_int_equal(json_integer_value(json_object_get(o, "s")),
				 es);
		total_n += en;
		total_s += es;
		json_decref(o);
	}
	assert_int_equal(total_n, 2000);
	tk_free_lines(lines, n);
	free(spec);
	free(id);
	free(in);
	free(out);
}

static void test_restart_and_bad_bodies(void **state)
{
	fixture_t *f = *state;
	char *in = tk_unique("it-lc-rs"), *out = tk_unique("it-lc-rs-out");
	tk_create_topic(in, 2);
	tk_create_topic(out, 1);
	produce_range(in, 0, 500);
	char *spec = passthrough_spec("lc-restart", in, out, 0);
	char *id = tk_submit(f->svc.port, spec);
	json_decref(tk_wait_status(f->svc.port, id, in_at_least, (void *)500,
				   60000, "records read"));
	json_t *r;
	assert_int_equal(action(f, id, "checkpoints", NULL, &r), 200);
	json_int_t ck = json_integer_value(json_object_get(r, "id"));
	json_decref(r);
	assert_int_equal(action(f, id, "restart", "{\"bogus\": 1}", &r), 400);
	assert_non_null(strstr(err_message(r), "bogus"));
	json_decref(r);
	assert_int_equal(
		action(f, id, "restart", "{\"ignore_state\": \"yes\"}", &r),
		400);
	assert_non_null(strstr(err_message(r), "ignore_state"));
	json_decref(r);
	assert_int_equal(
		action(f, id, "restart", "{\"from_checkpoint\": 987654}", &r),
		404);
	assert_non_null(strstr(err_message(r), "987654"));
	json_decref(r);
	assert_int_equal(action(f, id, "restart",
				"{\"from_checkpoint\": \"latest\"}", &r),
			 200);
	json_decref(r);
	json_t *st = tk_wait_state(f->svc.port, id, "running", 30000);
	assert_int_equal(json_integer_value(json_object_get(st, "attempt")), 2);
	json_decref(st);
	char body[64];
	snprintf(body, sizeof(body),
		 "{\"from_checkpoint\": %lld, "
		 "\"ignore_state\": true}",
		 (long long)ck);
	assert_int_equal(action(f, id, "restart", body, NULL), 200);
	st = tk_wait_state(f->svc.port, id, "running", 30000);
	assert_int_equal(json_integer_value(json_object_get(st, "attempt")), 3);
	json_decref(st);
	/* cancel keeps the last checkpoint; then every action is a 409 */
	assert_int_equal(action(f, id, "cancel", NULL, NULL), 200);
	assert_int_equal(action(f, id, "restart", NULL, &r), 409);
	assert_non_null(strstr(err_message(r), "it is cancelled"));
	json_decref(r);
	char path[160];
	snprintf(path, sizeof(path), "/v1/jobs/%s/checkpoints", id);
	json_t *list = get(f, path);
	assert_true(json_array_size(json_object_get(list, "checkpoints")) >= 1);
	json_decref(list);
	/* delete forgets the job; its checkpoints go only when asked */
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	int status;
	r = tk_http_json(f->svc.port, "DELETE", path, NULL, &status);
	assert_int_equal(status, 200);
	assert_true(json_is_true(json_object_get(r, "deleted")));
	assert_false(json_is_true(json_object_get(r, "checkpoints_deleted")));
	json_decref(r);
	char *gone = NULL;
	assert_int_equal(tk_http(f->svc.port, "GET", path, NULL, &gone), 404);
	free(gone);
	free(spec);
	free(id);
	free(in);
	free(out);
}

static bool is_restarting(json_t *st, void *arg)
{
	(void)arg;
	return !strcmp(json_string_value(json_object_get(st, "state")),
		       "restarting");
}

static void test_restart_policy_visible(void **state)
{
	fixture_t *f = *state;
	char *missing = tk_unique("it-lc-missing");
	char *spec;
	if (asprintf(
		    &spec,
		    "{\"name\": \"lc-policy\", \"source\": {\"topic\": \"%s\"},"
		    " \"schema\": [{\"name\": \"a\", \"type\": \"int64\"}],"
		    " \"sink\": {\"topic\": \"%s\"},"
		    " \"restart\": {\"max_attempts\": 3, "
		    "\"initial_backoff_ms\": 3000,"
		    "   \"max_backoff_ms\": 4000}}",
		    missing, missing) < 0)
		abort();
	char *id = tk_submit(f->svc.port, spec);
	json_t *st = tk_wait_status(f->svc.port, id, is_restarting, NULL, 60000,
				    "restarting");
	assert_true(json_is_string(json_object_get(st, "next_attempt_at")));
	json_t *err = json_object_get(st, "error");
	assert_string_equal(json_string_value(json_object_get(err, "category")),
			    "binding");
	assert_true(json_integer_value(json_object_get(err, "attempt")) >= 1);
	assert_true(json_integer_value(json_object_get(st, "restarts")) >= 1);
	json_decref(st);
	st = tk_wait_state(f->svc.port, id, "failed", 60000);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(st, "error"), "category")),
			    "retry_exhausted");
	json_decref(st);
	free(spec);
	free(id);
	free(missing);
}

static bool lagging(json_t *st, void *arg)
{
	(void)arg;
	return !strcmp(json_string_value(json_object_get(st, "state")),
		       "lagging");
}

static void test_lagging_and_back(void **state)
{
	fixture_t *f = *state;
	char *in = tk_unique("it-lc-lag"), *out = tk_unique("it-lc-lag-out");
	tk_create_topic(in, 2);
	tk_create_topic(out, 1);
	produce_range(in, 0, 4000);
	char *spec;
	if (asprintf(&spec,
		     "{\"name\": \"lc-lag\", \"source\": {\"kind\": \"kafka\", "
		     "\"topic\": \"%s\","
		     "   \"rate_per_s\": 1000},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\"},"
		     " \"lag\": {\"max_records\": 1500, \"grace_ms\": 500}}",
		     in, out) < 0)
		abort();
	char *id = tk_submit(f->svc.port, spec);
	json_t *st = tk_wait_status(f->svc.port, id, lagging, NULL, 30000,
				    "lagging");
	assert_true(json_integer_value(json_object_get(
			    json_object_get(st, "lag"), "records")) > 1500);
	json_decref(st);
	st = tk_wait_state(f->svc.port, id, "running", 30000);
	assert_true(json_integer_value(json_object_get(
			    json_object_get(st, "lag"), "records")) <= 1500);
	json_decref(st);
	assert_int_equal(action(f, id, "cancel", NULL, NULL), 200);
	free(spec);
	free(id);
	free(in);
	free(out);
}

/* exactly_once into Kafka: a transaction timeout above the broker's
 * transaction.max.timeout.ms is refused at submit, naming both. */
static void test_txn_timeout_checked_at_submit(void **state)
{
	fixture_t *f = *state;
	char *in = tk_unique("it-lc-txn");
	tk_create_topic(in, 1);
#define TXN_SPEC                                                       \
	"{\"name\": \"lc-txn-%d\", \"source\": {\"kind\": \"kafka\", " \
	"\"topic\": \"%s\"},"                                          \
	" \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}],"      \
	" \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\","          \
	"   \"transaction_timeout_ms\": %lld},"                        \
	" \"delivery\": \"exactly_once\"}"
	char *spec;
	if (asprintf(&spec, TXN_SPEC, 1, in, in, 100000000LL) < 0)
		abort();
	char *body = NULL;
	int status = tk_http(f->svc.port, "POST", "/v1/jobs", spec, &body);
	if (status != 400 || !strstr(body, "transaction.max.timeout.ms") ||
	    !strstr(body, "100000000") ||
	    !strstr(body, "transaction_timeout_ms"))
		fail_msg("got %d %s", status, body);
	free(body);
	free(spec);
	if (asprintf(&spec, TXN_SPEC, 2, in, in, 30000LL) < 0)
		abort();
	char *id = tk_submit(f->svc.port, spec);
	assert_int_equal(action(f, id, "cancel", NULL, NULL), 200);
	free(id);
	free(spec);
	free(in);
}

/* Every action in states where it is not valid: 409 naming the action,
 * the job and the state. */
static void expect_conflicts(fixture_t *f, const char *id, const char *state,
			     const char *const *actions)
{
	for (const char *const *a = actions; *a; a++) {
		json_t *r;
		int status = action(f, id, *a, NULL, &r);
		const char *msg = err_message(r);
		char want[160];
		const char *verb = !strcmp(*a, "checkpoints") ? "checkpoint"
							      : *a;
		snprintf(want, sizeof(want), "cannot %s job '%s': it is %s",
			 verb, id, state);
		if (status != 409 || !msg || !strstr(msg, want))
			fail_msg("%s in %s: HTTP %d '%s', want 409 '%s'", *a,
				 state, status, msg ? msg : "", want);
		json_decref(r);
	}
}

static bool has_transition(fixture_t *f, const char *id, const char *from,
			   const char *to, const char *reason_part)
{
	char path[200];
	snprintf(path, sizeof(path), "/v1/jobs/%s/observations?limit=1000", id);
	json_t *page = get(f, path);
	json_t *obs = json_object_get(page, "observations");
	bool found = false;
	for (size_t i = 0; i < json_array_size(obs) && !found; i++) {
		json_t *o = json_array_get(obs, i);
		const char *k = json_string_value(json_object_get(o, "kind"));
		if (strcmp(k, "state_transition"))
			continue;
		const char *fr = json_string_value(json_object_get(o, "from"));
		const char *t = json_string_value(json_object_get(o, "to"));
		const char *why = json_string_value(
			json_object_get(o, "reason"));
		found = !strcmp(fr, from) && !strcmp(t, to) &&
			(!reason_part || strstr(why, reason_part));
	}
	json_decref(page);
	return found;
}

/* Every transition of DESIGN.md §3 through the HTTP API (the ones not
 * already driven by the tests above), each seen in the observations, and
 * every invalid action's 409. */
static void test_transitions_and_conflicts(void **state)
{
	fixture_t *f = *state;
	char *in = tk_unique("it-lc-tr"), *out = tk_unique("it-lc-tr-out");
	tk_create_topic(in, 4);
	tk_create_topic(out, 1);
	produce_range(in, 0, 4000);
	char *spec = passthrough_spec("lc-transitions", in, out, 1000);
	char *id = tk_submit(f->svc.port, spec);
	json_decref(tk_wait_status(f->svc.port, id, in_at_least, (void *)500,
				   60000, "records read"));
	assert_true(has_transition(f, id, "pending", "running", NULL));
	static const char *const in_running[] = {"resume", NULL};
	expect_conflicts(f, id, "running", in_running);

	/* draining -> running: the drain's checkpoint is made slow, its
	 * timeout short */
	setenv("STREAMVISOR_DELAY_AT", "before_prepare:2500", 1);
	assert_int_equal(action(f, id, "drain", "{\"timeout_ms\": 300}", NULL),
			 200);
	static const char *const in_draining[] = {"drain", "resume", "restart",
						  "checkpoints", NULL};
	expect_conflicts(f, id, "draining", in_draining);
	json_t *st = tk_wait_state(f->svc.port, id, "running", 30000);
	json_decref(st);
	unsetenv("STREAMVISOR_DELAY_AT");
	assert_true(has_transition(f, id, "draining", "running",
				   "drain timed out"));
	/* the slow drain still committed its checkpoint; the next attempt
	 * continues from it */
	json_decref(tk_wait_status(f->svc.port, id, in_at_least, (void *)4000,
				   60000, "all records read"));

	/* running -> draining -> checkpointed, then the checkpointed 409s */
	assert_int_equal(action(f, id, "drain", NULL, NULL), 200);
	json_decref(tk_wait_state(f->svc.port, id, "checkpointed", 60000));
	static const char *const in_ckd[] = {"drain", "checkpoints", NULL};
	expect_conflicts(f, id, "checkpointed", in_ckd);
	/* checkpointed -> cancelled */
	assert_int_equal(action(f, id, "cancel", NULL, NULL), 200);
	assert_true(has_transition(f, id, "checkpointed", "cancelled", NULL));
	static const char *const in_cancelled[] = {
		"cancel", "drain", "resume", "restart", "checkpoints", NULL};
	expect_conflicts(f, id, "cancelled", in_cancelled);
	/* output exactly once across the timed-out drain and the real one */
	char **lines;
	size_t n = tk_consume(out, 4000, 60000, true, &lines);
	check_exactly_once(lines, n, 4000);
	tk_free_lines(lines, n);
	free(spec);
	free(id);

	/* running -> completed (bounded), then its 409s */
	char *bspec;
	if (asprintf(&bspec,
		     "{\"name\": \"lc-bounded\", \"mode\": \"bounded\","
		     " \"source\": {\"kind\": \"kafka\", \"topic\": \"%s\"},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\"}}",
		     in, out) < 0)
		abort();
	id = tk_submit(f->svc.port, bspec);
	json_decref(tk_wait_state(f->svc.port, id, "completed", 60000));
	assert_true(has_transition(f, id, "running", "completed", NULL));
	static const char *const in_completed[] = {
		"cancel", "drain", "resume", "restart", "checkpoints", NULL};
	expect_conflicts(f, id, "completed", in_completed);
	free(bspec);
	free(id);

	/* a restart racing a bounded job's completion (found by
	 * schemathesis): 200 when it came first, 409 when the job completed
	 * while it stopped; the supervisor never starts a completed job */
	static const char quick[] =
		"{\"name\": \"lc-race\", \"mode\": \"bounded\","
		" \"source\": {\"kind\": \"generator\", \"count\": 100},"
		" \"schema\": [{\"name\": \"seq\", \"type\": \"int64\"}],"
		" \"sink\": {\"kind\": \"null\"}}";
	int saw[2] = {0, 0};
	for (int i = 0; i < 20; i++) {
		id = tk_submit(f->svc.port, quick);
		int status = action(f, id, "restart", NULL, NULL);
		if (status != 200 && status != 409)
			fail_msg("restart racing completion: HTTP %d", status);
		saw[status == 409]++;
		json_decref(tk_wait_state(f->svc.port, id, "completed", 30000));
		free(id);
	}
	print_message("restart vs completion: %d restarted, %d too late\n",
		      saw[0], saw[1]);
	free(in);
	free(out);
}

static json_int_t obs_int(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* A sink topic that does not exist (and is not auto-created): restarting
 * with growing backoff, then failed with retry_exhausted; the
 * observations show each attempt and each backoff. Also restarting ->
 * cancelled and failed's 409s. */
static void test_missing_sink_backoff(void **state)
{
	fixture_t *f = *state;
	char *in = tk_unique("it-lc-ms"), *missing = tk_unique("it-lc-nosink");
	tk_create_topic(in, 1);
	produce_range(in, 0, 10);
	char *spec;
	if (asprintf(&spec,
		     "{\"name\": \"lc-nosink\", \"source\": {\"kind\": "
		     "\"kafka\", \"topic\": \"%s\"},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\"},"
		     " \"restart\": {\"max_attempts\": 4, "
		     "\"initial_backoff_ms\": 300,"
		     "   \"max_backoff_ms\": 5000, \"multiplier\": 2.0}}",
		     in, missing) < 0)
		abort();
	char *id = tk_submit(f->svc.port, spec);
	json_t *st = tk_wait_state(f->svc.port, id, "failed", 60000);
	json_t *err = json_object_get(st, "error");
	assert_string_equal(json_string_value(json_object_get(err, "category")),
			    "retry_exhausted");
	assert_non_null(strstr(
		json_string_value(json_object_get(err, "message")), missing));
	assert_int_equal(json_integer_value(json_object_get(st, "attempt")), 4);
	json_decref(st);
	char path[200];
	snprintf(path, sizeof(path), "/v1/jobs/%s/observations?limit=1000", id);
	json_t *page = get(f, path);
	json_t *obs = json_object_get(page, "observations");
	int attempts = 0, errors = 0;
	json_int_t backoff[8];
	int nb = 0;
	for (size_t i = 0; i < json_array_size(obs); i++) {
		json_t *o = json_array_get(obs, i);
		const char *k = json_string_value(json_object_get(o, "kind"));
		if (!strcmp(k, "attempt_started")) {
			attempts++;
			assert_int_equal(obs_int(o, "attempt"), attempts);
		} else if (!strcmp(k, "error")) {
			errors++;
			assert_string_equal(json_string_value(json_object_get(
						    o, "category")),
					    "binding");
		} else if (!strcmp(k, "restart_scheduled") && nb < 8) {
			backoff[nb++] = obs_int(o, "backoff_ms");
		}
	}
	assert_int_equal(attempts, 4);
	assert_int_equal(errors, 4);
	assert_int_equal(nb, 3);
	/* full jitter within [b/2, b] of 300, 600, 1200 */
	assert_true(backoff[0] >= 150 && backoff[0] <= 300);
	assert_true(backoff[1] >= 300 && backoff[1] <= 600);
	assert_true(backoff[2] >= 600 && backoff[2] <= 1200);
	assert_true(backoff[1] >= backoff[0] && backoff[2] >= backoff[1]);
	assert_true(has_transition(f, id, "running", "restarting", "binding"));
	assert_true(has_transition(f, id, "restarting", "running", NULL));
	assert_true(has_transition(f, id, "restarting", "failed", NULL) ||
		    has_transition(f, id, "running", "failed",
				   "gave up after 4 attempts"));
	json_decref(page);
	static const char *const in_failed[] = {"cancel", "drain", "resume",
						"checkpoints", NULL};
	expect_conflicts(f, id, "failed", in_failed);
	free(spec);
	free(id);

	/* restarting -> cancelled */
	if (asprintf(&spec,
		     "{\"name\": \"lc-nosink-2\", \"source\": {\"kind\": "
		     "\"kafka\", \"topic\": \"%s\"},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\"},"
		     " \"restart\": {\"initial_backoff_ms\": 20000}}",
		     in, missing) < 0)
		abort();
	id = tk_submit(f->svc.port, spec);
	json_decref(tk_wait_status(f->svc.port, id, is_restarting, NULL, 30000,
				   "restarting"));
	assert_int_equal(action(f, id, "cancel", NULL, NULL), 200);
	assert_true(has_transition(f, id, "restarting", "cancelled", NULL));
	free(spec);
	free(id);
	free(in);
	free(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_resume_no_loss_no_repeat),
		cmocka_unit_test(test_drain_final_watermark_fires_windows),
		cmocka_unit_test(test_restart_and_bad_bodies),
		cmocka_unit_test(test_restart_policy_visible),
		cmocka_unit_test(test_lagging_and_back),
		cmocka_unit_test(test_txn_timeout_checked_at_submit),
		cmocka_unit_test(test_transitions_and_conflicts),
		cmocka_unit_test(test_missing_sink_backoff),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
