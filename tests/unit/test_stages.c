/* test_stages.c — the repartition pieces that need no broker
 * (docs/repartition.md): the sv-row codec (core/rowcodec.h) round-trips
 * every type and null and refuses foreign or damaged payloads; watermark
 * records are recognised and are not rows; the planner (ingress/stages.h)
 * splits at the first keyed step off source.partitioned_by, derives the
 * two stage specs, and refuses what this build does not repartition; the
 * stage-1 minimum over upstream tasks (supervisor/stage.h) waits for every
 * upstream task and never goes back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "core/rowcodec.h"
#include "core/watermark.h"
#include "ingress/coverage.h"
#include "ingress/stages.h"
#include "supervisor/drivers.h"
#include "supervisor/stage.h"

#define DRV sv_registry_drivers()

static sv_schema_t *schema5(void)
{
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "id", SV_T_INT64, false);
	sv_schema_add(s, "k", SV_T_STRING, true);
	sv_schema_add(s, "x", SV_T_FLOAT64, true);
	sv_schema_add(s, "ok", SV_T_BOOL, true);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, true);
	return s;
}

static void test_roundtrip(void **state)
{
	(void)state;
	sv_schema_t *s = schema5();
	char big[300];
	memset(big, 'z', sizeof(big));
	sv_value_t rows[3][5] = {
		{sv_int(-7), sv_str("r01", 3), sv_float(0.1), sv_bool(true),
		 sv_ts(1700000000123LL)},
		{sv_int(INT64_MAX), sv_null(), sv_null(), sv_null(), sv_null()},
		{sv_int(INT64_MIN), sv_str(big, sizeof(big)), sv_float(-1e300),
		 sv_bool(false), sv_ts(-1)},
	};
	sv_decoder_t *dec = sv_decoder_new(SV_FMT_ROW, s);
	sv_batch_t b;
	sv_batch_init(&b, s);
	sv_buf_t buf;
	sv_buf_init(&buf);
	char reason[200];
	for (int r = 0; r < 3; r++) {
		sv_buf_reset(&buf);
		sv_rowcodec_encode(s, rows[r], &buf);
		sv_rowmeta_t *meta;
		assert_int_equal(sv_decoder_decode(dec, buf.data, buf.len, &b,
						   &meta, reason,
						   sizeof(reason)),
				 0);
		for (int c = 0; c < 5; c++)
			assert_true(sv_value_equal(
				&sv_batch_row(&b, b.nrows - 1)[c],
				&rows[r][c]));
		/* every truncation is refused, and adds no row */
		for (size_t cut = 0; cut < buf.len; cut++) {
			size_t before = b.nrows;
			assert_int_equal(sv_decoder_decode(dec, buf.data, cut,
							   &b, &meta, reason,
							   sizeof(reason)),
					 -1);
			assert_int_equal(b.nrows, before);
		}
	}
	/* a null in the non-nullable id is refused, naming the column */
	sv_value_t bad[5] = {sv_null(), sv_null(), sv_null(), sv_null(),
			     sv_null()};
	sv_buf_reset(&buf);
	sv_rowcodec_encode(s, bad, &buf);
	sv_rowmeta_t *meta;
	assert_int_equal(sv_decoder_decode(dec, buf.data, buf.len, &b, &meta,
					   reason, sizeof(reason)),
			 -1);
	assert_non_null(strstr(reason, "'id'"));
	/* JSON is not sv-row */
	assert_int_equal(sv_decoder_decode(dec, "{\"id\":1}", 8, &b, &meta,
					   reason, sizeof(reason)),
			 -1);
	/* a watermark record is recognised, and is not a row */
	char wm[SV_ROWCODEC_WM_LEN];
	sv_rowcodec_watermark(wm, 3, 8, 1700000000999LL);
	int32_t src, n;
	int64_t v;
	assert_true(sv_rowcodec_is_watermark(wm, sizeof(wm), &src, &n, &v));
	assert_int_equal(src, 3);
	assert_int_equal(n, 8);
	assert_int_equal(v, 1700000000999LL);
	size_t before = b.nrows;
	assert_int_equal(sv_decoder_decode(dec, wm, sizeof(wm), &b, &meta,
					   reason, sizeof(reason)),
			 -1);
	assert_int_equal(b.nrows, before);
	assert_false(sv_rowcodec_is_watermark(buf.data, buf.len, &src, &n, &v));
	sv_buf_release(&buf);
	sv_batch_release(&b);
	sv_decoder_destroy(dec);
	sv_schema_destroy(s);
}

static sv_jobspec_t *parse(const char *pipeline, const char *extra_source,
			   const char *mode, int parallelism)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"t\", \"mode\": \"%s\", \"parallelism\": %d,"
		 " \"source\": {\"kind\": \"kafka\", \"topic\": \"in\"%s},"
		 " \"schema\": [{\"name\": \"seq\", \"type\": \"int64\"},"
		 "   {\"name\": \"k\", \"type\": \"string\"},"
		 "   {\"name\": \"v\", \"type\": \"int64\"},"
		 "   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		 " \"event_time\": {\"field\": \"ts\","
		 "   \"max_out_of_orderness_ms\": 100},"
		 " \"pipeline\": [%s],"
		 " \"sink\": {\"kind\": \"kafka\", \"topic\": \"out\"},"
		 " \"delivery\": \"exactly_once\"}",
		 mode, parallelism, extra_source, pipeline);
	sv_jobspec_t *spec;
	sv_error_t *err = sv_jobspec_parse_json(buf, strlen(buf), DRV, &spec);
	if (err)
		fail_msg("%s: %s", buf, err->message);
	return spec;
}

#define WIN_K                                                       \
	"{\"window\": {\"type\": \"tumbling\", \"size_ms\": 1000, " \
	"\"key\": [\"k\"], \"aggregates\": {\"n\": \"count()\"}}}"

static void test_split(void **state)
{
	(void)state;
	const char *key;
	sv_jobspec_t *spec = parse(
		"{\"filter\": \"seq >= 0\"}, "
		"{\"select\": {\"k\": \"k\", \"ts\": \"ts\", "
		"\"v2\": \"v * 2\"}}, " WIN_K,
		"", "stream", 2);
	assert_int_equal(sv_stages_split_at(spec->msg, &key), 2);
	assert_string_equal(key, "k");
	char why[256];
	assert_false(sv_stages_refused(spec, 2, why, sizeof(why)));
	sv_jobspec_t *s0, *s1;
	assert_null(sv_stages_derive(spec, "j1", &s0, &s1));
	assert_int_equal(s0->msg->n_pipeline, 2);
	assert_string_equal(s0->msg->sink->topic, "_streamvisor.j1.rp0");
	assert_string_equal(s0->msg->sink->key, "k");
	assert_string_equal(s0->msg->sink->format, SV_STAGES_FORMAT);
	assert_int_equal(s1->msg->n_pipeline, 1);
	assert_string_equal(s1->msg->source->topic, "_streamvisor.j1.rp0");
	assert_string_equal(s1->msg->source->partitioned_by[0], "k");
	/* stage 1's schema is stage 0's output: k, ts, v2 */
	assert_int_equal(s1->msg->n_schema, 3);
	assert_string_equal(s1->msg->schema[2]->name, "v2");
	assert_string_equal(s1->msg->sink->topic, "out");
	sv_jobspec_destroy(s0);
	sv_jobspec_destroy(s1);
	sv_jobspec_destroy(spec);

	/* parallelism 1 and a key that follows partitioned_by: no split */
	spec = parse(WIN_K, "", "stream", 1);
	assert_int_equal(sv_stages_split_at(spec->msg, &key), -1);
	sv_jobspec_destroy(spec);
	spec = parse(WIN_K, ", \"partitioned_by\": [\"k\"]", "stream", 2);
	assert_int_equal(sv_stages_split_at(spec->msg, &key), -1);
	sv_jobspec_destroy(spec);

	/* bounded: stage 0 bounded, stage 1 reads until stage 0 ended */
	spec = parse(WIN_K, "", "bounded", 2);
	assert_false(sv_stages_refused(spec, 0, why, sizeof(why)));
	assert_null(sv_stages_derive(spec, "j3", &s0, &s1));
	assert_string_equal(s0->msg->mode, "bounded");
	assert_string_equal(s1->msg->mode, "stream");
	sv_jobspec_destroy(s0);
	sv_jobspec_destroy(s1);
	sv_jobspec_destroy(spec);

	/* refused: two columns, a second repartition, the event time
	 * dropped before the split */
	spec = parse("{\"dedup\": {\"key\": [\"k\", \"v\"], \"within_ms\": "
		     "10}}",
		     "", "stream", 2);
	assert_true(sv_stages_refused(spec, 0, why, sizeof(why)));
	sv_jobspec_destroy(spec);
	spec = parse(
		"{\"dedup\": {\"key\": [\"v\"], \"within_ms\": 10}}, " WIN_K,
		"", "stream", 2);
	assert_true(sv_stages_refused(spec, 0, why, sizeof(why)));
	assert_non_null(strstr(why, "second repartition"));
	sv_jobspec_destroy(spec);
	spec = parse("{\"select\": {\"k\": \"k\"}}, {\"dedup\": {\"key\": "
		     "[\"k\"], \"within_ms\": 10}}",
		     "", "stream", 2);
	sv_error_t *err = sv_stages_derive(spec, "j2", &s0, &s1);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "event-time column 'ts'"));
	sv_error_destroy(err);
	/* and the submit-time coverage check says so (422) */
	err = sv_coverage_parallel_check(spec);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_COVERAGE);
	assert_non_null(strstr(err->message, "event-time column 'ts'"));
	sv_error_destroy(err);
	sv_jobspec_destroy(spec);
	/* a repartitionable one passes it */
	spec = parse(WIN_K, "", "stream", 4);
	assert_null(sv_coverage_parallel_check(spec));
	sv_jobspec_destroy(spec);
}

static void test_upstream_min(void **state)
{
	(void)state;
	sv_schema_t *s = schema5();
	sv_batch_t b;
	sv_batch_init(&b, s);
	sv_stage_in_t *si = sv_stage_in_new(1);
	int32_t task_of[2] = {-1, 0}; /* partition 1 is task 0 */
	char rec[SV_ROWCODEC_WM_LEN];
	sv_rowcodec_watermark(rec, 0, 2, 500);
	sv_batch_reject(&b, 1, 10, rec, sizeof(rec), "wm");
	sv_batch_reject(&b, 1, 11, "junk", 4, "not sv-row");
	assert_int_equal(sv_stage_in_take(si, &b, task_of, 2), 1);
	assert_int_equal(b.nrejects, 1); /* the other reject stays */
	assert_string_equal(b.rejects[0].reason, "not sv-row");
	/* one of two upstream tasks heard: no watermark yet */
	assert_int_equal(sv_stage_in_watermark(si, 0), SV_WATERMARK_NONE);
	sv_batch_reset(&b);
	sv_rowcodec_watermark(rec, 1, 2, 300);
	sv_batch_reject(&b, 1, 12, rec, sizeof(rec), "wm");
	sv_rowcodec_watermark(rec, 0, 2, 100); /* older: ignored */
	sv_batch_reject(&b, 1, 13, rec, sizeof(rec), "wm");
	assert_int_equal(sv_stage_in_take(si, &b, task_of, 2), 2);
	assert_int_equal(sv_stage_in_watermark(si, 0), 300);
	sv_batch_reset(&b);
	sv_rowcodec_watermark(rec, 1, 2, 900);
	sv_batch_reject(&b, 1, 14, rec, sizeof(rec), "wm");
	sv_stage_in_take(si, &b, task_of, 2);
	assert_int_equal(sv_stage_in_watermark(si, 0), 500);
	assert_false(sv_stage_in_ended(si));
	/* both upstream tasks end (a bounded job): the task has all */
	sv_batch_reset(&b);
	sv_rowcodec_watermark(rec, 0, 2, SV_STAGE_WM_END);
	sv_batch_reject(&b, 1, 15, rec, sizeof(rec), "wm");
	sv_stage_in_take(si, &b, task_of, 2);
	assert_false(sv_stage_in_ended(si));
	sv_batch_reset(&b);
	sv_rowcodec_watermark(rec, 1, 2, SV_STAGE_WM_END);
	sv_batch_reject(&b, 1, 16, rec, sizeof(rec), "wm");
	sv_stage_in_take(si, &b, task_of, 2);
	assert_true(sv_stage_in_ended(si));
	sv_stage_in_destroy(si);
	sv_batch_release(&b);
	sv_schema_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_upstream_min),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
