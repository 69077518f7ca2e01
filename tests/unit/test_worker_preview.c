/* test_worker_preview.c — the worker's preview ring (supervisor/worker.c):
 * after an attempt over a generator, GET preview's rows are exactly the
 * last output rows, newest last, encoded as the sink encodes them (the ring
 * keeps cells and copies of their strings, and encodes only when asked);
 * a limit takes the newest; an attempt with fewer rows than the ring shows
 * them all. No broker. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/codec.h"
#include "core/util.h"
#include "sources/source.h"
#include "supervisor/drivers.h"
#include "supervisor/worker.h"

#define SCHEMA                                                            \
	"[{\"name\": \"id\", \"type\": \"int64\"}, {\"name\": \"name\", " \
	"\"type\": \"string\"}, {\"name\": \"amount\", \"type\": "        \
	"\"float64\"}, {\"name\": \"ts\", \"type\": \"timestamp_ms\"}]"

typedef struct done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
} done_t;

static void on_done(void *opaque, sv_worker_t *w)
{
	done_t *d = opaque;
	(void)w;
	pthread_mutex_lock(&d->lock);
	d->done = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* The JSON lines of rows [from, n) of the job's output: the generator's
 * rows for the spec's schema and s, the id as text (a string the select
 * computes, not one of the source's). */
static char *expected_lines(const sv_schema_t *schema, int64_t n, int64_t from)
{
	sv_schema_t *os = sv_schema_copy(schema);
	sv_schema_add(os, "s", SV_T_STRING, true);
	sv_source_conf_t sc = {.kind = "generator",
			       .job_id = "t",
			       .attempt = 1,
			       .schema = schema,
			       .generator = "sequence",
			       .count = n,
			       .format = SV_FMT_JSON};
	sv_source_t *src;
	assert_null(sv_source_open(&sc, &src));
	sv_batch_t b;
	sv_batch_init(&b, schema);
	bool eof = false;
	while (!eof && (int64_t)b.nrows < n)
		assert_null(sv_source_poll(src, &b, 2048, 0, &eof));
	assert_int_equal(b.nrows, n);
	sv_buf_t out;
	sv_buf_init(&out);
	for (int64_t r = from; r < n; r++) {
		sv_value_t row[5];
		memcpy(row, sv_batch_row(&b, (size_t)r), 4 * sizeof(*row));
		char id[24];
		int len = snprintf(id, sizeof(id), "%lld",
				   (long long)row[0].v.i);
		row[4] = sv_str(id, (uint32_t)len);
		sv_json_encode_row(os, row, &out);
		sv_buf_putc(&out, '\n');
	}
	sv_schema_destroy(os);
	sv_batch_release(&b);
	sv_source_close(src);
	return sv_buf_detach(&out);
}

/* Run an attempt over n generated rows; returns the ended worker. */
static sv_worker_t *run(int64_t n, sv_jobspec_t **spec, sv_obslog_t **obs)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "{\"name\": \"p\", \"source\": {\"kind\": \"generator\", "
		 "\"count\": %lld}, \"schema\": %s, \"pipeline\": "
		 "[{\"select\": {\"id\": \"id\", \"name\": \"name\", "
		 "\"amount\": \"amount\", \"ts\": \"ts\", \"s\": \"cast(id as "
		 "string)\"}}], \"sink\": {\"kind\": \"null\"}}",
		 (long long)n, SCHEMA);
	sv_error_t *err = sv_jobspec_parse_json(text, strlen(text),
						sv_registry_drivers(), spec);
	if (err)
		fail_msg("%s", err->message);
	static done_t d = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   false};
	d.done = false;
	*obs = sv_obslog_new("p", 64);
	sv_worker_conf_t wc = {.job_id = "p",
			       .attempt = 1,
			       .spec = *spec,
			       .obs = *obs,
			       .restore_from = -1,
			       .done = on_done,
			       .opaque = &d};
	sv_worker_t *w;
	assert_null(sv_worker_start(&wc, &w));
	pthread_mutex_lock(&d.lock);
	while (!d.done)
		pthread_cond_wait(&d.cond, &d.lock);
	pthread_mutex_unlock(&d.lock);
	assert_int_equal(sv_worker_end(w), SV_WORKER_COMPLETED);
	assert_int_equal(atomic_load(&sv_worker_stats(w)->records_out), n);
	return w;
}

static void check(int64_t n)
{
	sv_jobspec_t *spec;
	sv_obslog_t *obs;
	sv_worker_t *w = run(n, &spec, &obs);
	sv_schema_t *schema = sv_schema_new();
	sv_schema_add(schema, "id", SV_T_INT64, true);
	sv_schema_add(schema, "name", SV_T_STRING, true);
	sv_schema_add(schema, "amount", SV_T_FLOAT64, true);
	sv_schema_add(schema, "ts", SV_T_TIMESTAMP, true);
	int64_t shown = n < 100 ? n : 100;
	char *want = expected_lines(schema, n, n - shown);
	char *got = sv_worker_preview(w, 1000);
	assert_string_equal(got, want);
	free(got);
	free(want);
	want = expected_lines(schema, n, n - (n < 7 ? n : 7));
	got = sv_worker_preview(w, 7);
	assert_string_equal(got, want);
	free(got);
	free(want);
	sv_schema_destroy(schema);
	sv_worker_destroy(w);
	sv_obslog_destroy(obs);
	sv_jobspec_destroy(spec);
}

/* More rows than the ring, over several batches: the worker polls 2048
 * rows, so the last 100 of 4146 span the last two batches. */
static void test_last_rows(void **state)
{
	(void)state;
	check(4146);
}

static void test_fewer_rows_than_ring(void **state)
{
	(void)state;
	check(42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_last_rows),
		cmocka_unit_test(test_fewer_rows_than_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
