/* test_coverage.c — ingress/coverage.c: the one record builder (exact
 * RFC 033 shape, ids, null optionals, IncQL's diagnostics per state,
 * vocabulary refused), the 422 policy (required uncovered/unknown refuse;
 * partially_covered and preferred unknown do not), the job's plan target
 * (client's, plan id, derived as IncQL derives it) and the plan id, which
 * does not change with the client's evidence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingress/coverage.h"
#include "ingress/plan.h"
#include "ingress/spec.h"
#include "supervisor/drivers.h"

#define DRV sv_registry_drivers()

static void test_record_shape(void **state)
{
	(void)state;
	json_t *t = sv_target_new("relation_output", "p:target:step:0", "p",
				  "pipeline", "pipeline/0", "filter", 0, -1);
	json_t *r = sv_coverage_record_new(t, "row_filter", "required",
					   "filters need it", "covered",
					   "ignored when covered");
	char *s = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(
		s,
		"{\"coverage_id\":\"p:target:step:0:adapter-requirement:row_"
		"filter:coverage:streamvisor\",\"requirement\":{"
		"\"requirement_id\":\"p:target:step:0:adapter-requirement:row_"
		"filter\",\"target\":{\"kind\":\"relation_output\","
		"\"target_id\":\"p:target:step:0\",\"plan_id\":\"p\","
		"\"scope_id\":\"pipeline\",\"path\":\"pipeline/0\",\"name\":"
		"\"filter\",\"node_id\":0,\"ordinal\":null},\"capability\":"
		"\"row_filter\",\"guarantee\":\"required\",\"reason\":"
		"\"filters need it\",\"evidence_refs\":[]},\"adapter_name\":"
		"\"streamvisor\",\"adapter_version\":\"" SV_VERSION_STRING
		"\",\"semantic_profile_id\":null,\"state\":\"covered\","
		"\"diagnostics\":[],\"evidence_refs\":[]}");
	free(s);
	json_decref(r);

	/* IncQL's texts per state, then ours after ": " */
	static const struct {
		const char *state, *sev, *code, *msg, *want;
	} cases[] = {
		{"partially_covered", "warning", "adapter_coverage.partial",
		 NULL,
		 "streamvisor coverage for row_filter is function- or "
		 "plan-shape-specific"},
		{"uncovered", "error", "adapter_coverage.uncovered", "no way",
		 "streamvisor does not currently cover row_filter as an "
		 "adapter guarantee: no way"},
		{"unknown", "warning", "adapter_coverage.unknown", NULL,
		 "streamvisor coverage for row_filter has not been "
		 "classified"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = sv_coverage_record_new(t, "row_filter", "preferred", "x",
					   cases[i].state, cases[i].msg);
		json_t *d = json_array_get(json_object_get(r, "diagnostics"),
					   0);
		assert_int_equal(
			json_array_size(json_object_get(r, "diagnostics")), 1);
		assert_string_equal(
			json_string_value(json_object_get(d, "severity")),
			cases[i].sev);
		assert_string_equal(
			json_string_value(json_object_get(d, "code")),
			cases[i].code);
		assert_string_equal(
			json_string_value(json_object_get(d, "message")),
			cases[i].want);
		assert_true(json_equal(json_object_get(d, "target"), t));
		json_decref(r);
	}
	/* outside the vocabulary: no record */
	assert_null(sv_coverage_record_new(t, "function:lower", "required", "x",
					   "covered", NULL));
	assert_null(sv_coverage_record_new(t, "row_filter", "required", "x",
					   "partial", NULL));
	assert_null(sv_coverage_record_new(t, "row_filter", "must", "x",
					   "covered", NULL));
	assert_true(sv_coverage_capability_is_draft("watermark_support"));
	assert_false(sv_coverage_capability_is_draft("row_filter"));
	json_decref(t);
}

static void test_policy(void **state)
{
	(void)state;
	json_t *t = sv_target_new("plan", "p", "p", "plan", "p", "plan", -1,
				  -1);
	json_t *a = json_array();
	json_array_append_new(
		a,
		sv_coverage_record_new(t, "row_filter", "required", "x",
				       "partially_covered", NULL));
	json_array_append_new(a,
			      sv_coverage_record_new(t, "region_binding",
						     "preferred", "x",
						     "unknown", NULL));
	json_array_append_new(a,
			      sv_coverage_record_new(t, "column_mask",
						     "optional", "x",
						     "uncovered", NULL));
	assert_null(sv_coverage_refusal(a));
	json_array_append_new(a,
			      sv_coverage_record_new(t, "decimal_semantics",
						     "required", "x", "unknown",
						     NULL));
	const json_t *bad = sv_coverage_refusal(a);
	assert_non_null(bad);
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(bad, "requirement"), "capability")),
		"decimal_semantics");
	json_decref(a);
	a = json_array();
	json_array_append_new(a,
			      sv_coverage_record_new(t, "row_filter",
						     "required", "x",
						     "uncovered", NULL));
	assert_non_null(sv_coverage_refusal(a));
	json_decref(a);
	json_decref(t);
}

static sv_jobspec_t *parse(const char *json)
{
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = sv_jobspec_parse_json(json, strlen(json), DRV, &spec);
	if (err)
		fail_msg("%s", err->message);
	return spec;
}

#define BASE                                                                \
	"\"name\": \"j\", \"mode\": \"bounded\", \"source\": {\"kind\": "   \
	"\"generator\", \"generator\": \"sequence\", \"count\": 5}, "       \
	"\"schema\": [{\"name\": \"id\", \"type\": \"int64\"}, {\"name\": " \
	"\"ts\", \"type\": \"timestamp_ms\"}], \"sink\": {\"kind\": "       \
	"\"memory\"}"

static void test_plan_target(void **state)
{
	(void)state;
	sv_coverage_env_t env = {false, true, DRV};
	/* derived as IncQL's _substrait_plan_target: a filter root is not a
	 * read, so root kind "Unknown" and no table name */
	sv_jobspec_t *spec = parse("{" BASE ", \"pipeline\": [{\"filter\": "
				   "\"id > 1\"}]}");
	sv_plan_t *plan = NULL;
	assert_null(sv_plan_build(spec, &plan));
	json_t *pt = sv_coverage_plan_target(spec, plan);
	assert_string_equal(json_string_value(json_object_get(pt, "target_id")),
			    "substrait:root:Unknown::id,ts");
	assert_string_equal(json_string_value(json_object_get(pt, "path")),
			    "root/Unknown");
	json_t *recs = sv_coverage_for_job(spec, plan, pt, &env);
	/* null_semantics for the plan, row_filter on the step */
	json_t *r0 = json_array_get(recs, 0), *r1 = json_array_get(recs, 1);
	assert_string_equal(
		json_string_value(json_object_get(r0, "coverage_id")),
		"substrait:root:Unknown::id,ts:adapter-requirement:null_"
		"semantics:coverage:streamvisor");
	assert_string_equal(
		json_string_value(json_object_get(r1, "coverage_id")),
		"substrait:root:Unknown::id,ts:target:pipeline-step:0:"
		"adapter-requirement:row_filter:coverage:streamvisor");
	assert_null(sv_coverage_refusal(recs));
	json_decref(recs);
	json_decref(pt);
	sv_plan_destroy(plan);
	char plan_id[65];
	memcpy(plan_id, spec->plan_id, sizeof(plan_id));
	sv_jobspec_destroy(spec);

	/* the client's plan id: IncQL's Prism plan target; the plan id of the
	 * spec does not change with it, and it survives the JSON round trip */
	spec = parse("{" BASE ", \"pipeline\": [{\"filter\": \"id > 1\"}], "
		     "\"plan_id\": \"prism:store-1:tip-2\", \"requirements\": "
		     "[{\"capability\": \"region_binding\"}]}");
	assert_string_equal(spec->plan_id, plan_id);
	pt = sv_coverage_plan_target(spec, NULL);
	char *s = json_dumps(pt, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s,
			    "{\"kind\":\"plan\",\"target_id\":\"prism:"
			    "store-1:tip-2\",\"plan_id\":\"prism:store-"
			    "1:tip-2\",\"scope_id\":\"plan\",\"path\":"
			    "\"prism:store-1:tip-2\",\"name\":\"plan\","
			    "\"node_id\":null,\"ordinal\":null}");
	free(s);
	json_t *got = NULL;
	sv_error_t *err = sv_coverage_check(spec, NULL, pt, &env, &got);
	assert_non_null(err); /* required unknown */
	assert_int_equal(err->category, SV_ERR_COVERAGE);
	assert_string_equal(err->field, "requirements[0]");
	assert_non_null(strstr(err->details_json, "\"unknown\""));
	sv_error_destroy(err);
	json_decref(got);
	char *text = sv_jobspec_to_json(spec);
	sv_jobspec_t *back = parse(text);
	free(text);
	assert_string_equal(back->plan_id, plan_id);
	assert_string_equal(back->msg->evidence->plan_target->target_id,
			    "prism:store-1:tip-2");
	assert_string_equal(back->msg->evidence->requirements[0]->guarantee,
			    "required");
	sv_jobspec_destroy(back);
	/* the protobuf form carries the same evidence */
	assert_null(sv_jobspec_parse_proto(spec->packed, spec->packed_len, DRV,
					   &back));
	assert_string_equal(back->plan_id, plan_id);
	assert_string_equal(back->msg->evidence->plan_target->scope_id, "plan");
	assert_string_equal(back->msg->evidence->requirements[0]->capability,
			    "region_binding");
	sv_jobspec_destroy(back);
	json_decref(pt);
	sv_jobspec_destroy(spec);
}

static void test_bad_evidence(void **state)
{
	(void)state;
	static const struct {
		const char *extra, *field;
	} cases[] = {
		{"\"plan_id\": \"a\", \"plan_target\": {\"kind\": \"plan\", "
		 "\"target_id\": \"a\"}",
		 "plan_id"},
		{"\"plan_target\": {\"kind\": \"table\", \"target_id\": \"a\"}",
		 "plan_target.kind"},
		{"\"plan_target\": {\"kind\": \"plan\"}",
		 "plan_target.target_id"},
		{"\"requirements\": [{\"capability\": \"partial\"}]",
		 "requirements[0].capability"},
		{"\"requirements\": [{\"capability\": \"row_filter\", "
		 "\"guarantee\": \"must\"}]",
		 "requirements[0].guarantee"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[1024];
		snprintf(buf, sizeof(buf), "{" BASE ", %s}", cases[i].extra);
		sv_jobspec_t *spec = NULL;
		sv_error_t *err = sv_jobspec_parse_json(buf, strlen(buf), DRV,
							&spec);
		if (!err || !err->field || strcmp(err->field, cases[i].field))
			fail_msg("case %zu: %s", i,
				 err ? err->message : "accepted");
		assert_int_equal(err->category, SV_ERR_SUBMISSION);
		sv_error_destroy(err);
	}
}

/* rows named by family (the Substrait ingress's) map onto the vocabulary */
static void test_named_rows(void **state)
{
	(void)state;
	static const struct {
		const char *name, *status, *cap, *state, *kind;
	} cases[] = {
		{"substrait_function:md5", "uncovered", "extension_function",
		 "uncovered", "scalar_expression"},
		{"substrait_rel:aggregate", "partial",
		 "stateful_window_support", "partially_covered",
		 "relation_output"},
		{"substrait_rel:join", "uncovered", "stateful_join_support",
		 "uncovered", "relation_output"},
		{"substrait_type:decimal", "uncovered", "decimal_semantics",
		 "uncovered", "field"},
		{"operator:window:global", "covered", "stateful_window_support",
		 "covered", "relation_output"},
		{"watermark_support", "covered", "watermark_support", "covered",
		 "plan"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r = sv_coverage_record(cases[i].name, cases[i].status,
					       "because");
		assert_non_null(r);
		json_t *req = json_object_get(r, "requirement");
		assert_string_equal(
			json_string_value(json_object_get(req, "capability")),
			cases[i].cap);
		assert_string_equal(
			json_string_value(json_object_get(r, "state")),
			cases[i].state);
		json_t *t = json_object_get(req, "target");
		assert_string_equal(
			json_string_value(json_object_get(t, "kind")),
			cases[i].kind);
		if (strcmp(cases[i].kind, "plan"))
			assert_string_equal(
				json_string_value(json_object_get(t, "name")),
				cases[i].name);
		json_decref(r);
	}
	assert_null(sv_coverage_record("nonsense", "covered", "x"));
	sv_error_t *err = sv_coverage_refuse(
		"substrait_function:md5", "not in the registry",
		"plan.substrait", "md5 is refused");
	assert_int_equal(err->category, SV_ERR_COVERAGE);
	assert_string_equal(err->field, "plan.substrait");
	json_t *d = json_loads(err->details_json, 0, NULL);
	assert_int_equal(json_array_size(d), 1);
	assert_non_null(strstr(err->details_json,
			       "\"plan_id\":\"plan:unavailable:execute:"));
	assert_non_null(strstr(err->details_json,
			       "as an adapter guarantee: not in the registry"));
	json_decref(d);
	sv_error_destroy(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_shape),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_plan_target),
		cmocka_unit_test(test_bad_evidence),
		cmocka_unit_test(test_named_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
