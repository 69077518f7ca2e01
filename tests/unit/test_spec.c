/* test_spec.c — job spec parsing: good specs with defaults filled in and a
 * stable plan id, JSON and protobuf forms equivalent, and bad specs whose
 * errors name the field and what is wrong. Also the plan builder's errors
 * for expressions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingress/plan.h"
#include "ingress/spec.h"

static const char *good =
	"{\"name\": \"orders\", \"source\": {\"topic\": \"in\"},"
	" \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
	"   {\"name\": \"region\", \"type\": \"string\", \"nullable\": false},"
	"   {\"name\": \"amount\", \"type\": \"float64\"},"
	"   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
	" \"pipeline\": [{\"filter\": \"amount > 0\"},"
	"   {\"select\": {\"region\": \"region\", \"cents\": \"amount * "
	"100\"}}],"
	" \"sink\": {\"topic\": \"out\", \"key\": \"region\"}}";

static void test_good_spec_defaults(void **state)
{
	(void)state;
	sv_jobspec_t *spec;
	sv_error_t *err = sv_jobspec_parse_json(good, strlen(good), &spec);
	assert_null(err);
	const Streamvisor__JobSpec *js = spec->msg;
	assert_string_equal(js->name, "orders");
	assert_string_equal(js->mode, "stream");
	assert_string_equal(js->delivery, "at_least_once");
	assert_string_equal(js->source->kind, "kafka");
	assert_string_equal(js->source->cluster, "default");
	assert_string_equal(js->source->start, "earliest");
	assert_string_equal(js->source->format, "json");
	assert_string_equal(js->sink->kind, "kafka");
	assert_string_equal(js->on_invalid, "skip");
	assert_int_equal(js->checkpoint->interval_ms, 5000);
	assert_int_equal(js->checkpoint->retain, 3);
	assert_int_equal(js->restart->max_attempts, 10);
	assert_int_equal(js->n_schema, 4);
	assert_true(js->schema[1]->not_null);
	assert_false(js->schema[0]->not_null);
	assert_int_equal(js->n_pipeline, 2);
	assert_int_equal(js->pipeline[1]->select->n_items, 2);
	/* select keeps the order written */
	assert_string_equal(js->pipeline[1]->select->items[0]->name, "region");
	assert_string_equal(js->pipeline[1]->select->items[1]->name, "cents");
	assert_int_equal(strlen(spec->plan_id), 64);
	sv_jobspec_destroy(spec);
}

static void test_plan_id_is_canonical(void **state)
{
	(void)state;
	/* same meaning, other spelling: explicit defaults, whitespace */
	const char *same =
		"{\"name\":\"orders\",\"mode\":\"stream\",\"delivery\":\"at_"
		"least_once\","
		"\"source\":{\"kind\":\"kafka\",\"cluster\":\"default\","
		"\"topic\":\"in\","
		"\"start\":\"earliest\",\"format\":\"json\"},"
		"\"schema\":[{\"name\":\"id\",\"type\":\"int64\",\"nullable\":"
		"true},"
		"{\"name\":\"region\",\"type\":\"string\",\"nullable\":false},"
		"{\"name\":\"amount\",\"type\":\"float64\"},"
		"{\"name\":\"ts\",\"type\":\"timestamp_ms\"}],"
		"\"pipeline\":[{\"filter\":\"amount > 0\"},"
		"{\"select\":{\"region\":\"region\",\"cents\":\"amount * "
		"100\"}}],"
		"\"sink\":{\"topic\":\"out\",\"key\":\"region\",\"kind\":"
		"\"kafka\"},"
		"\"checkpoint\":{\"interval_ms\":5000}}";
	sv_jobspec_t *a, *b, *c;
	assert_null(sv_jobspec_parse_json(good, strlen(good), &a));
	assert_null(sv_jobspec_parse_json(same, strlen(same), &b));
	assert_string_equal(a->plan_id, b->plan_id);
	/* protobuf form of the same spec: same plan id */
	assert_null(sv_jobspec_parse_proto(a->packed, a->packed_len, &c));
	assert_string_equal(a->plan_id, c->plan_id);
	/* JSON round trip */
	char *json = sv_jobspec_to_json(a);
	sv_jobspec_t *d;
	assert_null(sv_jobspec_parse_json(json, strlen(json), &d));
	assert_string_equal(a->plan_id, d->plan_id);
	free(json);
	/* a different plan: different id */
	const char *other =
		"{\"name\": \"orders\", \"source\": {\"topic\": \"in\"},"
		" \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}],"
		" \"sink\": {\"topic\": \"out2\"}}";
	sv_jobspec_t *e;
	assert_null(sv_jobspec_parse_json(other, strlen(other), &e));
	assert_string_not_equal(a->plan_id, e->plan_id);
	sv_jobspec_destroy(a);
	sv_jobspec_destroy(b);
	sv_jobspec_destroy(c);
	sv_jobspec_destroy(d);
	sv_jobspec_destroy(e);
}

/* parallelism is not part of the plan id; partitioned_by, the watermark
 * scope and a kafka source's rate_per_s are, and all of them survive the
 * JSON round trip of a stored definition (same plan id back). */
static void test_parallel_fields(void **state)
{
	(void)state;
#define PAR_SPEC                                                        \
	"{\"name\": \"p\", \"parallelism\": %d,"                        \
	" \"source\": {\"topic\": \"in\", \"partitioned_by\": [\"k\"]," \
	"   \"rate_per_s\": 500},"                                      \
	" \"schema\": [{\"name\": \"k\", \"type\": \"string\"},"        \
	"   {\"name\": \"ts\", \"type\": \"int64\"}],"                  \
	" \"event_time\": {\"field\": \"ts\", \"watermark_scope\": "    \
	"\"%s\"},"                                                      \
	" \"sink\": {\"topic\": \"out\"}}"
	char text[1024];
	sv_jobspec_t *a, *b, *c, *d;
	snprintf(text, sizeof(text), PAR_SPEC, 4, "partition");
	assert_null(sv_jobspec_parse_json(text, strlen(text), &a));
	assert_int_equal(sv_jobspec_parallelism(a), 4);
	assert_true(sv_jobspec_wm_per_partition(a));
	snprintf(text, sizeof(text), PAR_SPEC, 2, "partition");
	assert_null(sv_jobspec_parse_json(text, strlen(text), &b));
	assert_string_equal(a->plan_id, b->plan_id);
	snprintf(text, sizeof(text), PAR_SPEC, 2, "job");
	assert_null(sv_jobspec_parse_json(text, strlen(text), &c));
	assert_string_not_equal(b->plan_id, c->plan_id);
	assert_false(sv_jobspec_wm_per_partition(c));
	char *json = sv_jobspec_to_json(a);
	assert_null(sv_jobspec_parse_json(json, strlen(json), &d));
	assert_string_equal(a->plan_id, d->plan_id);
	assert_int_equal(sv_jobspec_parallelism(d), 4);
	assert_int_equal(d->msg->source->rate_per_s, 500);
	assert_int_equal(d->msg->source->n_partitioned_by, 1);
	free(json);
	sv_jobspec_destroy(a);
	sv_jobspec_destroy(b);
	sv_jobspec_destroy(c);
	sv_jobspec_destroy(d);

	/* refused: unknown partitioned_by column, two columns, parallelism
	 * with a generator or a file sink, out of range */
	static const char *const bad[][2] = {
		{"{\"name\": \"p\", \"source\": {\"topic\": \"in\","
		 " \"partitioned_by\": [\"x\"]}, \"schema\": [{\"name\": "
		 "\"k\", \"type\": \"string\"}], \"sink\": {\"topic\": \"o\"}}",
		 "source.partitioned_by"},
		{"{\"name\": \"p\", \"source\": {\"topic\": \"in\","
		 " \"partitioned_by\": [\"k\", \"k\"]}, \"schema\": "
		 "[{\"name\": \"k\", \"type\": \"string\"}], \"sink\": "
		 "{\"topic\": \"o\"}}",
		 "source.partitioned_by"},
		{"{\"name\": \"p\", \"parallelism\": 2, \"source\": "
		 "{\"kind\": \"generator\"}, \"schema\": [{\"name\": \"k\", "
		 "\"type\": \"string\"}], \"sink\": {\"kind\": \"null\"}}",
		 "parallelism"},
		{"{\"name\": \"p\", \"parallelism\": 2, \"source\": "
		 "{\"topic\": \"in\"}, \"schema\": [{\"name\": \"k\", "
		 "\"type\": \"string\"}], \"sink\": {\"kind\": \"file\", "
		 "\"path\": \"/tmp/x\"}}",
		 "parallelism"},
		{"{\"name\": \"p\", \"parallelism\": 300, \"source\": "
		 "{\"topic\": \"in\"}, \"schema\": [{\"name\": \"k\", "
		 "\"type\": \"string\"}], \"sink\": {\"topic\": \"o\"}}",
		 "parallelism"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sv_jobspec_t *x = NULL;
		sv_error_t *err = sv_jobspec_parse_json(bad[i][0],
							strlen(bad[i][0]), &x);
		assert_non_null(err);
		assert_string_equal(err->field, bad[i][1]);
		sv_error_destroy(err);
	}
}

static const char *base_tail =
	", \"schema\": [{\"name\": \"a\", \"type\": \"int64\"}]";

static void expect_error(const char *json, const char *field,
			 const char *needle)
{
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = sv_jobspec_parse_json(json, strlen(json), &spec);
	if (!err)
		fail_msg("accepted bad spec: %s", json);
	assert_null(spec);
	assert_int_equal(err->category, SV_ERR_SUBMISSION);
	if (field) {
		if (!err->field || strcmp(err->field, field))
			fail_msg("spec %s: field %s, want %s (%s)", json,
				 err->field ? err->field : "(none)", field,
				 err->message);
	}
	if (!strstr(err->message, needle))
		fail_msg("spec %s: message '%s' lacks '%s'", json, err->message,
			 needle);
	sv_error_destroy(err);
}

static void test_bad_specs(void **state)
{
	(void)state;
	char buf[1024];
	expect_error("not json", NULL, "not valid JSON");
	expect_error("[1]", NULL, "must be a JSON object");
	expect_error("{}", "name", "is required");
	expect_error("{\"name\": 5}", "name", "expected a string, got integer");
	expect_error("{\"name\": \"x\", \"colour\": 1}", "colour",
		     "unknown field");
	expect_error("{\"name\": \"x\", \"source\": 3}", "source",
		     "expected an object, got integer");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topik\": \"t\"}%s,"
		 " \"sink\": {\"topic\": \"o\"}}",
		 base_tail);
	expect_error(buf, "source.topik", "unknown field");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {}%s,"
		 " \"sink\": {\"topic\": \"o\"}}",
		 base_tail);
	expect_error(buf, "source.topic", "is required");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s}",
		 base_tail);
	expect_error(buf, "sink", "is required");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s,"
		 " \"sink\": {}}",
		 base_tail);
	expect_error(buf, "sink.topic", "is required");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"mode\": \"batch\", "
		 "\"source\": {\"topic\": \"t\"}%s, \"sink\": {\"topic\": "
		 "\"o\"}}",
		 base_tail);
	expect_error(buf, "mode", "unknown mode 'batch'");
	expect_error(
		"{\"name\": \"x\", \"source\": {\"topic\": \"t\"}, \"schema\": "
		"[{\"name\": \"a\", \"type\": \"int\"}], \"sink\": {\"topic\": "
		"\"o\"}}",
		"schema[0].type", "unknown type 'int'");
	expect_error(
		"{\"name\": \"x\", \"source\": {\"topic\": \"t\"}, \"schema\": "
		"[{\"name\": \"a\", \"type\": \"int64\"}, {\"name\": \"a\", "
		"\"type\": \"string\"}], \"sink\": {\"topic\": \"o\"}}",
		"schema[1].name", "duplicate column 'a'");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s,"
		 " \"pipeline\": [{\"map\": \"a\"}], \"sink\": {\"topic\": "
		 "\"o\"}}",
		 base_tail);
	expect_error(buf, "pipeline[0].map", "unknown step");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s,"
		 " \"pipeline\": [{\"filter\": 3}], \"sink\": {\"topic\": "
		 "\"o\"}}",
		 base_tail);
	expect_error(buf, "pipeline[0].filter",
		     "expected an expression string");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s,"
		 " \"checkpoint\": {\"interval_ms\": \"5s\"}, \"sink\": "
		 "{\"topic\": \"o\"}}",
		 base_tail);
	expect_error(buf, "checkpoint.interval_ms", "expected an integer");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s,"
		 " \"pipeline\": [{\"window\": {\"type\": \"tumbling\", "
		 "\"size_ms\": 10,"
		 " \"key\": [\"a\"], \"aggregates\": {\"n\": \"count()\"}}}],"
		 " \"sink\": {\"topic\": \"o\"}}",
		 base_tail);
	expect_error(buf, "event_time", "is required by the event-time window");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s,"
		 " \"on_invalid\": \"dead_letter\", \"sink\": {\"topic\": "
		 "\"o\"}}",
		 base_tail);
	expect_error(buf, "dead_letter", "is required when on_invalid");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\"}%s,"
		 " \"event_time\": {\"field\": \"zz\"}, \"sink\": {\"topic\": "
		 "\"o\"}}",
		 base_tail);
	expect_error(buf, "event_time.field", "unknown column 'zz'");
}

static void test_join_is_coverage(void **state)
{
	(void)state;
	const char *j = "{\"name\": \"x\", \"source\": {\"topic\": \"t\"},"
			" \"schema\": [{\"name\": \"a\", \"type\": \"int64\"}],"
			" \"pipeline\": [{\"join\": {\"with\": \"u\"}}],"
			" \"sink\": {\"topic\": \"o\"}}";
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = sv_jobspec_parse_json(j, strlen(j), &spec);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_COVERAGE);
	assert_string_equal(err->field, "pipeline[0].join");
	assert_non_null(strstr(err->details_json, "stateful_join_support"));
	assert_int_equal(sv_errcat_http_status(err->category), 422);
	sv_error_destroy(err);
}

static void test_plan_errors(void **state)
{
	(void)state;
	struct {
		const char *step;
		sv_errcat_t cat;
		const char *field;
		const char *needle;
	} cases[] = {
		{"{\"filter\": \"nope > 1\"}", SV_ERR_SUBMISSION,
		 "pipeline[0].filter", "unknown column 'nope'"},
		{"{\"filter\": \"a +\"}", SV_ERR_SUBMISSION,
		 "pipeline[0].filter", "position"},
		{"{\"filter\": \"zap(a)\"}", SV_ERR_COVERAGE,
		 "pipeline[0].filter", "function 'zap' is not in the registry"},
		{"{\"select\": {\"b\": \"a * 2\", \"c\": \"missing\"}}",
		 SV_ERR_SUBMISSION, "pipeline[0].select",
		 "unknown column 'missing'"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[1024];
		snprintf(buf, sizeof(buf),
			 "{\"name\": \"x\", \"source\": {\"topic\": "
			 "\"t\"}%s, \"pipeline\": [%s], \"sink\": {\"topic\": "
			 "\"o\"}}",
			 base_tail, cases[i].step);
		sv_jobspec_t *spec;
		assert_null(sv_jobspec_parse_json(buf, strlen(buf), &spec));
		sv_plan_t *plan = NULL;
		sv_error_t *err = sv_plan_build(spec, &plan);
		if (!err)
			fail_msg("case %zu accepted", i);
		assert_null(plan);
		assert_int_equal(err->category, cases[i].cat);
		assert_string_equal(err->field, cases[i].field);
		if (!strstr(err->message, cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s'", i, err->message,
				 cases[i].needle);
		sv_error_destroy(err);
		sv_jobspec_destroy(spec);
	}
	/* a good plan: output schema as selected */
	sv_jobspec_t *spec;
	assert_null(sv_jobspec_parse_json(good, strlen(good), &spec));
	sv_plan_t *plan;
	assert_null(sv_plan_build(spec, &plan));
	const sv_schema_t *out = sv_pipeline_out_schema(plan->pipeline);
	assert_int_equal(out->nfields, 2);
	assert_string_equal(out->fields[0].name, "region");
	assert_int_equal(out->fields[1].type, SV_T_FLOAT64);
	assert_int_equal(plan->sink_key_col, 0);
	sv_plan_destroy(plan);
	sv_jobspec_destroy(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_spec_defaults),
		cmocka_unit_test(test_plan_id_is_canonical),
		cmocka_unit_test(test_parallel_fields),
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_plan_errors),
		cmocka_unit_test(test_join_is_coverage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
