/* it_windows.c — windows and dedup end to end against the real broker.
 *
 * One input topic (4 partitions) of keyed events whose event times move
 * forward with bounded disorder, ended by one sentinel per partition whose
 * event time is far in the future and which the first filter drops: its
 * watermark closes every window, the way Flink's end-of-input watermark
 * does. Then:
 *   - a keyed tumbling window (count, sum, min, max, count(x)) must give the
 *     exact aggregates the test computes itself, in stream mode and in
 *     bounded mode, read back from the output topic with read_committed;
 *     the bounded job's GET /result must hold the same rows;
 *   - semantic equivalence: sliding, session and dedup plans run as
 *     `stream` and as `bounded` over the same input give the same output
 *     multiset.
 * Every job is submitted over HTTP to an in-process supervisor. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/integration/testkit.h"

#define N_EVENTS 8000
#define N_KEYS 50
#define BASE_MS 1700000000000LL
#define STEP_MS 5 /* event time advance per record */
#define JITTER_MS 300 /* disorder, below the out-of-orderness bound */
#define OOO_MS 1000
#define WINDOW_MS 10000

typedef struct event {
	int64_t id, ts, v, d;
	bool v_null;
	char k[8], s[8];
} event_t;

typedef struct fixture {
	tk_service_t svc;
	char *in_topic;
	event_t *ev;
} fixture_t;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t rng_state = 42;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int setup(void **state)
{
	fixture_t *f = calloc(1, sizeof(*f));
	f->in_topic = tk_unique("it-win-events");
	tk_create_topic(f->in_topic, 4);
	f->ev = calloc(N_EVENTS, sizeof(event_t));
	char **payloads = calloc(N_EVENTS + 4, sizeof(char *));
	for (int i = 0; i < N_EVENTS; i++) {
		event_t *e = &f->ev[i];
		e->id = i;
		e->ts = BASE_MS + (int64_t)i * STEP_MS +
			(int64_t)(rnd() % JITTER_MS);
		e->v = (int64_t)((i * 7919) % 1000) - 100;
		e->v_null = i % 97 == 0;
		e->d = i / 3; /* three records per dedup key, a few ms apart */
		snprintf(e->k, sizeof(e->k), "k%02d", (int)(rnd() % N_KEYS));
		/* bursts: each session key is active for 200 records (~1 s),
		 * then silent far longer than the session gap */
		snprintf(e->s, sizeof(e->s), "s%02d", (i / 200) % 7);
		char v[24];
		if (e->v_null)
			strcpy(v, "null");
		else
			snprintf(v, sizeof(v), "%lld", (long long)e->v);
		if (asprintf(&payloads[i],
			     "{\"id\":%d,\"k\":\"%s\",\"s\":\"%s\","
			     "\"v\":%s,\"d\":%lld,\"ts\":%lld}",
			     i, e->k, e->s, v, (long long)e->d,
			     (long long)e->ts) < 0)
			abort();
	}
	/* one sentinel per partition (tk_produce sends record i to i % 4) */
	for (int i = 0; i < 4; i++)
		if (asprintf(&payloads[N_EVENTS + i],
			     "{\"id\":-1,\"k\":\"end\","
			     "\"s\":\"end\",\"v\":0,\"d\":-1,\"ts\":%lld}",
			     BASE_MS + 1000000000LL) < 0)
			abort();
	tk_produce(f->in_topic, (const char *const *)payloads, N_EVENTS + 4);
	for (int i = 0; i < N_EVENTS + 4; i++)
		free(payloads[i]);
	free(payloads);
	tk_service_start(&f->svc);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture_t *f = *state;
	tk_service_stop(&f->svc);
	free(f->in_topic);
	free(f->ev);
	free(f);
	return 0;
}

/* A job over the events with the given pipeline steps (after the filter
 * that drops the sentinels). */
static char *job_spec(fixture_t *f, const char *name, const char *mode,
		      const char *steps, const char *out_topic)
{
	char *s;
	if (asprintf(&s,
		     "{\"name\": \"%s\", \"mode\": \"%s\","
		     " \"source\": {\"kind\": \"kafka\", \"topic\": \"%s\"},"
		     " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
		     "   {\"name\": \"k\", \"type\": \"string\"},"
		     "   {\"name\": \"s\", \"type\": \"string\"},"
		     "   {\"name\": \"v\", \"type\": \"int64\"},"
		     "   {\"name\": \"d\", \"type\": \"int64\"},"
		     "   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		     " \"event_time\": {\"field\": \"ts\","
		     "   \"max_out_of_orderness_ms\": %d},"
		     " \"pipeline\": [{\"filter\": \"id >= 0\"}, %s],"
		     " \"sink\": {\"kind\": \"kafka\", \"topic\": \"%s\"}}",
		     name, mode, f->in_topic, OOO_MS, steps, out_topic) < 0)
		abort();
	return s;
}

/* A row as canonical text: keys sorted, compact. */
static char *canon_json(json_t *o)
{
	return json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
}

static char **canon_lines(char **lines, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		json_error_t jerr;
		json_t *o = json_loads(lines[i], 0, &jerr);
		if (!o)
			fail_msg("output row %zu is not JSON: %s", i, lines[i]);
		out[i] = canon_json(o);
		json_decref(o);
	}
	qsort(out, n, sizeof(char *), cmp_str);
	return out;
}

static void assert_same_multiset(char **a, size_t na, char **b, size_t nb,
				 const char *what)
{
	if (na != nb)
		fail_msg("%s: %zu rows vs %zu rows", what, na, nb);
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			fail_msg("%s: row %zu differs:\n  %s\n  %s", what, i,
				 a[i], b[i]);
}

/* The tumbling aggregates, computed here from the events. */
typedef struct agg {
	char k[8];
	int64_t start, n, sum, mn, mx, c;
} agg_t;

static char **expected_tumbling(fixture_t *f, size_t *n_out)
{
	agg_t *a = calloc(N_EVENTS, sizeof(agg_t));
	size_t na = 0;
	for (int i = 0; i < N_EVENTS; i++) {
		const event_t *e = &f->ev[i];
		int64_t start = e->ts - e->ts % WINDOW_MS;
		size_t j;
		for (j = 0; j < na; j++)
			if (a[j].start == start && !strcmp(a[j].k, e->k))
				break;
		if (j == na) {
			na++;
			strcpy(a[j].k, e->k);
			a[j].start = start;
			a[j].mn = INT64_MAX;
			a[j].mx = INT64_MIN;
		}
		a[j].n++;
		if (!e->v_null) {
			a[j].sum += e->v;
			a[j].c++;
			if (e->v < a[j].mn)
				a[j].mn = e->v;
			if (e->v > a[j].mx)
				a[j].mx = e->v;
		}
	}
	char **out = calloc(na, sizeof(char *));
	for (size_t j = 0; j < na; j++) {
		json_t *o = json_pack(
			"{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "k", a[j].k,
			"window_start", (json_int_t)a[j].start, "window_end",
			(json_int_t)(a[j].start + WINDOW_MS), "n",
			(json_int_t)a[j].n, "total", (json_int_t)a[j].sum, "lo",
			(json_int_t)a[j].mn, "hi", (json_int_t)a[j].mx, "nv",
			(json_int_t)a[j].c);
		out[j] = canon_json(o);
		json_decref(o);
	}
	free(a);
	qsort(out, na, sizeof(char *), cmp_str);
	*n_out = na;
	return out;
}

/* All input read and at least `arg` rows written. Both: a plan whose
 * output is complete early (dedup sees every key in three of the four
 * partitions) must still have read everything before the counters are
 * compared. */
static bool out_reached(json_t *st, void *arg)
{
	return json_integer_value(json_object_get(st, "records_out")) >=
		(json_int_t)(size_t)arg &&
		json_integer_value(json_object_get(st, "records_in")) >=
		N_EVENTS + 4;
}

static void cancel(fixture_t *f, const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
	int status;
	json_decref(tk_http_json(f->svc.port, "POST", path, NULL, &status));
	assert_int_equal(status, 200);
	json_decref(tk_wait_state(f->svc.port, id, "cancelled", 30000));
}

/* Run steps as a bounded job; returns the canonical output rows read from
 * its output topic. */
static char **run_bounded(fixture_t *f, const char *name, const char *steps,
			  size_t *n_out, json_t **status_out)
{
	char *out_topic = tk_unique("it-win-out");
	tk_create_topic(out_topic, 2);
	char *spec = job_spec(f, name, "bounded", steps, out_topic);
	char *id = tk_submit(f->svc.port, spec);
	json_t *st = tk_wait_state(f->svc.port, id, "completed", 120000);
	size_t want = (size_t)json_integer_value(
		json_object_get(st, "records_out"));
	char **lines;
	size_t n = tk_consume(out_topic, want, 60000, true, &lines);
	char **rows = canon_lines(lines, n);
	tk_free_lines(lines, n);
	*n_out = n;
	if (status_out) {
		json_object_set_new(st, "id_", json_string(id));
		*status_out = st;
	} else {
		json_decref(st);
	}
	free(id);
	free(spec);
	free(out_topic);
	return rows;
}

/* Run steps as a stream job until it has written `expect` rows; returns
 * its output rows. */
static char **run_stream(fixture_t *f, const char *name, const char *steps,
			 size_t expect, size_t *n_out)
{
	char *out_topic = tk_unique("it-win-out");
	tk_create_topic(out_topic, 2);
	char *spec = job_spec(f, name, "stream", steps, out_topic);
	char *id = tk_submit(f->svc.port, spec);
	json_t *st = tk_wait_status(f->svc.port, id, out_reached,
				    (void *)expect, 120000, "window output");
	assert_string_equal(json_string_value(json_object_get(st, "state")),
			    "running");
	assert_int_equal(json_integer_value(json_object_get(st, "records_in")),
			 N_EVENTS + 4);
	assert_int_equal(
		json_integer_value(json_object_get(st, "records_late")), 0);
	/* the sentinels moved the watermark far ahead */
	assert_true(json_integer_value(json_object_get(st, "watermark_ms")) >
		    BASE_MS + N_EVENTS * STEP_MS);
	json_decref(st);
	char **lines;
	size_t n = tk_consume(out_topic, expect, 60000, true, &lines);
	char **rows = canon_lines(lines, n);
	tk_free_lines(lines, n);
	cancel(f, id);
	*n_out = n;
	free(id);
	free(spec);
	free(out_topic);
	return rows;
}

static const char *tumbling_steps =
	"{\"window\": {\"type\": \"tumbling\", \"size_ms\": 10000,"
	" \"key\": [\"k\"], \"aggregates\": {\"n\": \"count()\","
	" \"total\": \"sum(v)\", \"lo\": \"min(v)\", \"hi\": \"max(v)\","
	" \"nv\": \"count(v)\"}}}";

static void test_tumbling_exact(void **state)
{
	fixture_t *f = *state;
	size_t ne;
	char **expected = expected_tumbling(f, &ne);
	assert_true(ne > N_KEYS);

	size_t ns;
	char **stream = run_stream(f, "it-tumbling-stream", tumbling_steps, ne,
				   &ns);
	assert_same_multiset(stream, ns, expected, ne, "tumbling (stream)");

	size_t nb;
	json_t *st;
	char **bounded = run_bounded(f, "it-tumbling-bounded", tumbling_steps,
				     &nb, &st);
	assert_same_multiset(bounded, nb, expected, ne, "tumbling (bounded)");

	/* GET /result of the bounded job holds the same rows */
	char path[160];
	snprintf(path, sizeof(path), "/v1/jobs/%s/result",
		 json_string_value(json_object_get(st, "id_")));
	int status;
	json_t *res = tk_http_json(f->svc.port, "GET", path, NULL, &status);
	assert_int_equal(status, 200);
	json_t *rows = json_object_get(res, "rows");
	assert_int_equal(json_array_size(rows), ne);
	assert_false(json_is_true(json_object_get(res, "truncated")));
	char **got = calloc(ne, sizeof(char *));
	for (size_t i = 0; i < ne; i++)
		got[i] = canon_json(json_array_get(rows, i));
	qsort(got, ne, sizeof(char *), cmp_str);
	assert_same_multiset(got, ne, expected, ne, "tumbling (result)");
	tk_free_lines(got, ne);
	json_decref(res);
	json_decref(st);

	tk_free_lines(stream, ns);
	tk_free_lines(bounded, nb);
	tk_free_lines(expected, ne);
}

/* Bounded first (its output count tells the stream job when it is done),
 * then stream; the two multisets must be equal. */
static void equivalence(fixture_t *f, const char *name, const char *steps)
{
	char bname[64], sname[64];
	snprintf(bname, sizeof(bname), "%s-bounded", name);
	snprintf(sname, sizeof(sname), "%s-stream", name);
	size_t nb, ns;
	char **bounded = run_bounded(f, bname, steps, &nb, NULL);
	assert_true(nb > 0);
	char **stream = run_stream(f, sname, steps, nb, &ns);
	assert_same_multiset(stream, ns, bounded, nb, name);
	tk_free_lines(stream, ns);
	tk_free_lines(bounded, nb);
}

static void test_equivalence_sliding(void **state)
{
	equivalence(*state, "it-sliding",
		    "{\"window\": {\"type\": \"sliding\", \"size_ms\": 3000,"
		    " \"slide_ms\": 1000, \"key\": [\"k\"], \"aggregates\":"
		    " {\"n\": \"count()\", \"avg_v\": \"avg(v)\", \"hi\": "
		    "\"max(v)\","
		    " \"dv\": \"count_distinct(v)\"}}}");
}

static void test_equivalence_session(void **state)
{
	equivalence(*state, "it-session",
		    "{\"window\": {\"type\": \"session\", \"gap_ms\": 2000,"
		    " \"key\": [\"s\"], \"aggregates\": {\"n\": \"count()\","
		    " \"total\": \"sum(v)\"}}}");
}

static void test_equivalence_dedup(void **state)
{
	equivalence(*state, "it-dedup",
		    "{\"dedup\": {\"key\": [\"d\"], \"within_ms\": 5000}},"
		    " {\"select\": {\"d\": \"d\"}}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tumbling_exact),
		cmocka_unit_test(test_equivalence_sliding),
		cmocka_unit_test(test_equivalence_session),
		cmocka_unit_test(test_equivalence_dedup),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
