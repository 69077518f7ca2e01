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
#include <jansson.h>

#include "ingress/coverage.h"
#include "ingress/plan.h"
#include "ingress/spec.h"
#include "supervisor/drivers.h"

#define DRV sv_registry_drivers()

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
	sv_error_t *err = sv_jobspec_parse_json(good, strlen(good), DRV, &spec);
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
	assert_null(sv_jobspec_parse_json(good, strlen(good), DRV, &a));
	assert_null(sv_jobspec_parse_json(same, strlen(same), DRV, &b));
	assert_string_equal(a->plan_id, b->plan_id);
	/* protobuf form of the same spec: same plan id */
	assert_null(sv_jobspec_parse_proto(a->packed, a->packed_len, DRV, &c));
	assert_string_equal(a->plan_id, c->plan_id);
	/* JSON round trip */
	char *json = sv_jobspec_to_json(a);
	sv_jobspec_t *d;
	assert_null(sv_jobspec_parse_json(json, strlen(json), DRV, &d));
	assert_string_equal(a->plan_id, d->plan_id);
	free(json);
	/* a Kafka source's rate_per_s survives the round trip (the stored
	 * definition is this JSON) */
	{
		const char *rated =
			"{\"name\": \"r\", \"source\": {\"topic\": \"in\", "
			"\"rate_per_s\": 500}, \"schema\": [{\"name\": \"id\", "
			"\"type\": \"int64\"}], \"sink\": {\"kind\": "
			"\"null\"}}";
		sv_jobspec_t *r1, *r2;
		assert_null(
			sv_jobspec_parse_json(rated, strlen(rated), DRV, &r1));
		char *rj = sv_jobspec_to_json(r1);
		assert_non_null(strstr(rj, "\"rate_per_s\":500"));
		assert_null(sv_jobspec_parse_json(rj, strlen(rj), DRV, &r2));
		assert_string_equal(r1->plan_id, r2->plan_id);
		assert_int_equal(r2->msg->source->rate_per_s, 500);
		free(rj);
		sv_jobspec_destroy(r1);
		sv_jobspec_destroy(r2);
	}
	/* a different plan: different id */
	const char *other =
		"{\"name\": \"orders\", \"source\": {\"topic\": \"in\"},"
		" \"schema\": [{\"name\": \"id\", \"type\": \"int64\"}],"
		" \"sink\": {\"topic\": \"out2\"}}";
	sv_jobspec_t *e;
	assert_null(sv_jobspec_parse_json(other, strlen(other), DRV, &e));
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
	assert_null(sv_jobspec_parse_json(text, strlen(text),
					  sv_registry_drivers(), &a));
	assert_int_equal(sv_jobspec_parallelism(a), 4);
	assert_true(sv_jobspec_wm_per_partition(a));
	snprintf(text, sizeof(text), PAR_SPEC, 2, "partition");
	assert_null(sv_jobspec_parse_json(text, strlen(text),
					  sv_registry_drivers(), &b));
	assert_string_equal(a->plan_id, b->plan_id);
	snprintf(text, sizeof(text), PAR_SPEC, 2, "job");
	assert_null(sv_jobspec_parse_json(text, strlen(text),
					  sv_registry_drivers(), &c));
	assert_string_not_equal(b->plan_id, c->plan_id);
	assert_false(sv_jobspec_wm_per_partition(c));
	char *json = sv_jobspec_to_json(a);
	assert_null(sv_jobspec_parse_json(json, strlen(json),
					  sv_registry_drivers(), &d));
	assert_string_equal(a->plan_id, d->plan_id);
	assert_int_equal(sv_jobspec_parallelism(d), 4);
	assert_int_equal(d->msg->source->rate_per_s, 500);
	assert_int_equal(d->msg->source->n_partitioned_by, 1);
	free(json);
	sv_jobspec_destroy(a);
	sv_jobspec_destroy(b);
	sv_jobspec_destroy(c);
	sv_jobspec_destroy(d);

	/* resources.memory_mb is not part of the plan id either and survives
	 * the round trip */
	const char *res = "{\"name\": \"p\", \"parallelism\": 2,"
			  " \"resources\": {\"memory_mb\": 64},"
			  " \"source\": {\"topic\": \"in\"}, \"schema\":"
			  " [{\"name\": \"k\", \"type\": \"string\"}],"
			  " \"sink\": {\"topic\": \"o\"}}";
	const char *nores = "{\"name\": \"p\", \"parallelism\": 2,"
			    " \"source\": {\"topic\": \"in\"}, \"schema\":"
			    " [{\"name\": \"k\", \"type\": \"string\"}],"
			    " \"sink\": {\"topic\": \"o\"}}";
	assert_null(sv_jobspec_parse_json(res, strlen(res),
					  sv_registry_drivers(), &a));
	assert_null(sv_jobspec_parse_json(nores, strlen(nores),
					  sv_registry_drivers(), &b));
	assert_string_equal(a->plan_id, b->plan_id);
	assert_int_equal(sv_jobspec_memory_budget(a), 64LL << 20);
	assert_int_equal(sv_jobspec_memory_budget(b), 0);
	json = sv_jobspec_to_json(a);
	assert_null(sv_jobspec_parse_json(json, strlen(json),
					  sv_registry_drivers(), &c));
	assert_int_equal(sv_jobspec_memory_budget(c), 64LL << 20);
	free(json);
	sv_jobspec_destroy(a);
	sv_jobspec_destroy(b);
	sv_jobspec_destroy(c);

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
		/* a memory budget below 16 MB a member, not an integer, a
		 * field it does not have */
		{"{\"name\": \"p\", \"parallelism\": 2, \"resources\": "
		 "{\"memory_mb\": 20}, \"source\": {\"topic\": \"in\"}, "
		 "\"schema\": [{\"name\": \"k\", \"type\": \"string\"}], "
		 "\"sink\": {\"topic\": \"o\"}}",
		 "resources.memory_mb"},
		{"{\"name\": \"p\", \"resources\": {\"memory_mb\": \"64\"}, "
		 "\"source\": {\"topic\": \"in\"}, \"schema\": "
		 "[{\"name\": \"k\", \"type\": \"string\"}], \"sink\": "
		 "{\"topic\": \"o\"}}",
		 "resources.memory_mb"},
		{"{\"name\": \"p\", \"resources\": {\"cpus\": 2}, "
		 "\"source\": {\"topic\": \"in\"}, \"schema\": "
		 "[{\"name\": \"k\", \"type\": \"string\"}], \"sink\": "
		 "{\"topic\": \"o\"}}",
		 "resources.cpus"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sv_jobspec_t *x = NULL;
		sv_error_t *err = sv_jobspec_parse_json(
			bad[i][0], strlen(bad[i][0]), sv_registry_drivers(),
			&x);
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
	sv_error_t *err = sv_jobspec_parse_json(json, strlen(json), DRV, &spec);
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
	/* kind-specific fields, from the drivers' descriptors */
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"kind\": \"generator\", "
		 "\"topic\": \"t\"}%s, \"sink\": {\"kind\": \"null\"}}",
		 base_tail);
	expect_error(buf, "source.topic",
		     "a generator source has no topic (kafka sources do)");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"mode\": \"bounded\", \"source\": "
		 "{\"kind\": \"generator\"}%s, \"sink\": {\"kind\": "
		 "\"null\"}}",
		 base_tail);
	expect_error(buf, "source.count",
		     "is required for a generator source in a bounded job");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"topic\": \"t\", "
		 "\"start\": \"middle\"}%s, \"sink\": {\"kind\": \"null\"}}",
		 base_tail);
	expect_error(buf, "source.start",
		     "unknown start 'middle' (expected earliest or latest)");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"kind\": \"generator\", "
		 "\"generator\": \"tpch\"}%s, \"sink\": {\"kind\": "
		 "\"null\"}}",
		 base_tail);
	expect_error(buf, "source.generator",
		     "unknown generator 'tpch' (expected sequence or nexmark)");
	snprintf(buf, sizeof(buf),
		 "{\"name\": \"x\", \"source\": {\"kind\": \"files\"}%s, "
		 "\"sink\": {\"kind\": \"null\"}}",
		 base_tail);
	expect_error(buf, "source.kind",
		     "unknown source kind 'files' (expected kafka or "
		     "generator)");
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

/* orders (left) with their customer (right, a table) */
static void join_spec(char *buf, size_t cap, const char *mode,
		      const char *join_body)
{
	snprintf(buf, cap,
		 "{\"name\": \"x\", \"mode\": \"%s\","
		 " \"source\": {\"topic\": \"orders\"},"
		 " \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
		 "   {\"name\": \"cust\", \"type\": \"string\"},"
		 "   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
		 " \"event_time\": {\"field\": \"ts\"},"
		 " \"pipeline\": [{\"join\": {%s}}],"
		 " \"sink\": {\"topic\": \"o\"}}",
		 mode, join_body);
}

#define CUSTOMERS                                                   \
	"\"source\": {\"topic\": \"customers\"},"                   \
	" \"schema\": [{\"name\": \"cust\", \"type\": \"string\"}," \
	"   {\"name\": \"id\", \"type\": \"int64\"},"               \
	"   {\"name\": \"name\", \"type\": \"string\"},"            \
	"   {\"name\": \"cts\", \"type\": \"timestamp_ms\"}],"      \
	" \"event_time\": {\"field\": \"cts\"},"                    \
	" \"on\": {\"left\": [\"cust\"], \"right\": [\"cust\"]}"

static void test_join_spec(void **state)
{
	(void)state;
	char buf[2048];
	join_spec(buf, sizeof(buf), "stream",
		  "\"type\": \"lookup\", " CUSTOMERS
		  ", \"take\": {\"customer\": \"name\"}, \"kind\": \"left\"");
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = sv_jobspec_parse_json(buf, strlen(buf), DRV, &spec);
	if (err)
		fail_msg("%s", err->message);
	const Streamvisor__Join *j = spec->msg->pipeline[0]->join;
	assert_string_equal(j->time, "event"); /* the default */
	assert_string_equal(j->kind, "left");
	assert_string_equal(j->source->start, "earliest");
	sv_plan_t *plan = NULL;
	assert_null(sv_plan_build(spec, &plan));
	/* the worker runs it: stateful_join_support is covered */
	sv_coverage_env_t env = {false, true, DRV};
	json_t *pt = sv_coverage_plan_target(spec, plan);
	err = sv_coverage_check(spec, plan, pt, &env, NULL);
	json_decref(pt);
	if (err)
		fail_msg("%s", err->message);
	const sv_schema_t *out = sv_pipeline_out_schema(plan->pipeline);
	/* left columns, then the take columns */
	assert_int_equal(out->nfields, 4);
	assert_string_equal(out->fields[3].name, "customer");
	assert_true(out->fields[3].nullable); /* a left join */
	assert_int_equal(plan->join_step, 0);
	assert_int_equal(plan->right_event_time_col, 3);
	assert_int_equal(plan->right_schema->nfields, 4);
	sv_plan_destroy(plan);
	/* the JSON form goes round to the same plan */
	char *text = sv_jobspec_to_json(spec);
	sv_jobspec_t *again = NULL;
	assert_null(sv_jobspec_parse_json(text, strlen(text), DRV, &again));
	assert_string_equal(again->plan_id, spec->plan_id);
	free(text);
	sv_jobspec_destroy(again);
	/* and so does the protobuf form */
	assert_null(sv_jobspec_parse_proto(spec->packed, spec->packed_len, DRV,
					   &again));
	assert_string_equal(again->plan_id, spec->plan_id);
	assert_string_equal(again->msg->pipeline[0]->join->take[0]->column,
			    "name");
	sv_jobspec_destroy(again);
	sv_jobspec_destroy(spec);
}

/* At parallelism > 1 a join needs both inputs partitioned by its key:
 * 422 coverage naming the field that is not, until then. */
static void test_join_parallel(void **state)
{
	(void)state;
	struct {
		const char *lpart, *rpart, *field;
	} cases[] = {
		{"", "", "source.partitioned_by"},
		{", \"partitioned_by\": [\"id\"]", "", "source.partitioned_by"},
		{", \"partitioned_by\": [\"cust\"]", "",
		 "pipeline[0].join.source.partitioned_by"},
		{", \"partitioned_by\": [\"cust\"]",
		 ", \"partitioned_by\": [\"cust\"]", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[2048];
		snprintf(
			buf, sizeof(buf),
			"{\"name\": \"x\", \"parallelism\": 2,"
			" \"source\": {\"topic\": \"orders\"%s},"
			" \"schema\": [{\"name\": \"id\", \"type\": \"int64\"},"
			"   {\"name\": \"cust\", \"type\": \"string\"},"
			"   {\"name\": \"ts\", \"type\": \"timestamp_ms\"}],"
			" \"event_time\": {\"field\": \"ts\"},"
			" \"pipeline\": [{\"join\": {\"type\": \"lookup\","
			"  \"source\": {\"topic\": \"customers\"%s},"
			"  \"schema\": [{\"name\": \"cust\", \"type\": "
			"\"string\"}, {\"name\": \"name\", \"type\": "
			"\"string\"}, {\"name\": \"cts\", \"type\": "
			"\"timestamp_ms\"}],"
			"  \"event_time\": {\"field\": \"cts\"},"
			"  \"on\": {\"left\": [\"cust\"], \"right\": "
			"[\"cust\"]},"
			"  \"take\": {\"n\": \"name\"}}}],"
			" \"sink\": {\"topic\": \"o\"}}",
			cases[i].lpart, cases[i].rpart);
		sv_jobspec_t *spec = NULL;
		sv_error_t *err = sv_jobspec_parse_json(buf, strlen(buf), DRV,
							&spec);
		if (err)
			fail_msg("case %zu: %s", i, err->message);
		err = sv_coverage_parallel_check(spec);
		if (!cases[i].field) {
			if (err)
				fail_msg("case %zu: %s", i, err->message);
		} else {
			if (!err)
				fail_msg("case %zu: accepted", i);
			assert_int_equal(err->category, SV_ERR_COVERAGE);
			assert_string_equal(err->field, cases[i].field);
			assert_non_null(strstr(err->details_json,
					       "stateful_join_support"));
			assert_non_null(
				strstr(err->message, "co-partitioned")
					? err->message
					: strstr(err->message,
						 "keyed by the join key"));
		}
		sv_error_destroy(err);
		sv_jobspec_destroy(spec);
	}
}

static void test_join_spec_errors(void **state)
{
	(void)state;
	struct {
		const char *mode, *body, *field, *needle;
	} cases[] = {
		/* a clash is a 400 naming both columns */
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS
		 ", \"take\": {\"id\": \"id\"}",
		 "pipeline[0].join.take.id",
		 "'id' (right column 'id') clashes with left column 'id'"},
		/* without take every right column comes, cust excepted
		 * (paired with the left key of that name): id clashes */
		{"stream", "\"type\": \"lookup\", " CUSTOMERS,
		 "pipeline[0].join.take",
		 "right column 'id' clashes with left column 'id'"},
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS
		 ", \"take\": {\"n\": \"nope\"}",
		 "pipeline[0].join.take.n", "'nope' is not a column"},
		{"stream",
		 "\"type\": \"interval\", " CUSTOMERS
		 ", \"take\": {\"n\": \"name\"}, \"lower_ms\": 0",
		 "pipeline[0].join.upper_ms", "is required"},
		{"stream",
		 "\"type\": \"interval\", " CUSTOMERS
		 ", \"lower_ms\": 5, \"upper_ms\": 1",
		 "pipeline[0].join.lower_ms", "must not exceed"},
		{"stream", "\"type\": \"hash\", " CUSTOMERS,
		 "pipeline[0].join.type", "needs mode 'bounded'"},
		{"stream", "\"type\": \"nested\", " CUSTOMERS,
		 "pipeline[0].join.type", "unknown join type 'nested'"},
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS ", \"kind\": \"full\"",
		 "pipeline[0].join.kind", "unknown join kind 'full'"},
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS ", \"time\": \"wall\"",
		 "pipeline[0].join.time", "unknown time 'wall'"},
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS
		 ", \"on\": {\"left\": [\"cust\", \"id\"], "
		 "\"right\": [\"cust\"]}",
		 "pipeline[0].join.on", NULL},
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS
		 ", \"take\": {\"n\": \"name\"}, \"lower_ms\": 1",
		 "pipeline[0].join.lower_ms", "only an interval join"},
		{"stream",
		 "\"type\": \"lookup\", \"source\": {\"topic\": "
		 "\"c\"}, \"schema\": [{\"name\": \"cust\", "
		 "\"type\": \"string\"}], \"on\": {\"left\": "
		 "[\"cust\"], \"right\": [\"cust\"]}",
		 "pipeline[0].join.event_time", "is required"},
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS
		 ", \"take\": {\"n\": \"name\"}, \"on\": {\"left\": "
		 "[\"ts\"], \"right\": [\"cust\"]}",
		 "pipeline[0].join.on", "is timestamp_ms on the left"},
		{"stream",
		 "\"type\": \"lookup\", " CUSTOMERS
		 ", \"take\": {\"n\": \"name\"}, \"on\": {\"left\": "
		 "[\"zz\"], \"right\": [\"cust\"]}",
		 "pipeline[0].join.on.left", "'zz' is not a column"},
		/* the job's own topic: both inputs' offsets would share the
		 * group's one entry per partition */
		{"stream",
		 "\"type\": \"lookup\", \"source\": {\"topic\": \"orders\"},"
		 " \"schema\": [{\"name\": \"cust\", \"type\": \"string\"}],"
		 " \"on\": {\"left\": [\"cust\"], \"right\": [\"cust\"]}",
		 "pipeline[0].join.source.topic", "is the job's source topic"},
	};
	/* the 'on' of CUSTOMERS is replaced where a case has its own */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[1024], buf[2048];
		snprintf(body, sizeof(body), "%s", cases[i].body);
		char *second = strstr(body, "\"on\"");
		if (second && strstr(second + 4, "\"on\"")) {
			/* drop the first "on": {...} */
			char *end = strchr(second, '}');
			memmove(second, end + 2, strlen(end + 2) + 1);
		}
		join_spec(buf, sizeof(buf), cases[i].mode, body);
		sv_jobspec_t *spec = NULL;
		sv_error_t *err = sv_jobspec_parse_json(buf, strlen(buf), DRV,
							&spec);
		if (!err) { /* the plan's 400s come before coverage */
			sv_plan_t *plan = NULL;
			err = sv_plan_build(spec, &plan);
			sv_plan_destroy(plan);
		}
		if (!err || err->category != SV_ERR_SUBMISSION)
			fail_msg("case %zu: %s", i,
				 err ? err->message : "accepted");
		if (strcmp(err->field, cases[i].field))
			fail_msg("case %zu: field '%s', expected '%s' (%s)", i,
				 err->field, cases[i].field, err->message);
		if (cases[i].needle && !strstr(err->message, cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s'", i, err->message,
				 cases[i].needle);
		sv_error_destroy(err);
		sv_jobspec_destroy(spec);
	}
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
		assert_null(
			sv_jobspec_parse_json(buf, strlen(buf), DRV, &spec));
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
	assert_null(sv_jobspec_parse_json(good, strlen(good), DRV, &spec));
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
		cmocka_unit_test(test_join_spec),
		cmocka_unit_test(test_join_spec_errors),
		cmocka_unit_test(test_join_parallel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
