/* coverage.c — the capability table (see coverage.h). Static rows for the
 * RFC 048 streaming capabilities, one row per operator, and one per function
 * of the expression registry (read from core, so it cannot drift). */
#include "ingress/coverage.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "ingress/plan.h"

typedef struct cap {
	const char *name;
	const char *status;
	const char *reason;
} cap_t;

static const cap_t caps[] = {
	{"source_offset_tracking", "covered",
	 "per-partition next and end offsets are tracked for Kafka and "
	 "generator sources and committed to the job's consumer group "
	 "(streamvisor-<job id>) after the sink flushed"},
	{"watermark_support", "covered",
	 "event time from event_time.field with bounded out-of-orderness; "
	 "per-partition watermarks combined as the minimum, idle partitions "
	 "excluded after idle_timeout_ms"},
	{"stateful_window_support", "covered",
	 "keyed tumbling, sliding (pane-based) and session windows and dedup "
	 "with in-memory state"},
	{"stateful_join_support", "partial",
	 "interval, lookup (event or processing time) and bounded hash "
	 "joins exist as operators with checkpointed, bounded state "
	 "(core/join.c, docs/joins.md) and a join step is parsed and planned "
	 "at submit; a job with one is refused with 422 because the worker "
	 "does not read a second input yet. The two inputs will have to be "
	 "co-partitioned on the join key (same partition count, keyed by "
	 "it): there is no repartitioning for joins"},
	{"checkpoint_recovery", "covered",
	 "periodic and on-demand checkpoints in RocksDB (synced, WAL on, "
	 "lost commits detected); a new attempt or a restarted supervisor "
	 "restores operator state, watermarks and source positions"},
	{"sink_commit_guarantee", "covered",
	 "exactly_once: Kafka transactions with the source offsets and the "
	 "checkpoint id committed in them, or the file sink's two-phase "
	 "commit; at_least_once: the sink is flushed before the checkpoint"},
	{"replay_support", "covered",
	 "a new attempt replays from the restored checkpoint's offsets; "
	 "restart can choose a checkpoint or keep positions only"},
	{"late_data_policy", "covered",
	 "late records are dropped and counted, or sent to the late_sink "
	 "(side_output)"},
	{"streaming_lifecycle_observations", "uncovered",
	 "job states are reported in the status document; the observation "
	 "log is not implemented"},
};

static const cap_t operators[] = {
	{"operator:filter", "covered", "boolean expression over the row"},
	{"operator:select", "covered", "projection with expressions"},
	{"operator:window", "covered", "tumbling, sliding, session"},
	{"operator:dedup", "covered", "first record per key within a bound"},
	{"operator:join", "partial",
	 "interval, lookup and hash (bounded) equi-joins, inner and left; "
	 "not runnable in a job until the worker reads a second input"},
};

static json_t *record(const char *name, const char *status, const char *reason)
{
	return json_pack("{s:s, s:s, s:s}", "capability", name, "status",
			 status, "reason", reason);
}

char *sv_coverage_json(bool dev_cluster)
{
	json_t *a = json_array();
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		const cap_t *c = &caps[i];
		if (dev_cluster && !strcmp(c->name, "sink_commit_guarantee"))
			json_array_append_new(
				a,
				record(c->name, "partial",
				       "the 'default' cluster is the embedded "
				       "development "
				       "cluster (librdkafka's mock), which "
				       "does not filter "
				       "aborted transactions: read_committed "
				       "readers may "
				       "see them"));
		else
			json_array_append_new(
				a, record(c->name, c->status, c->reason));
	}
	for (size_t i = 0; i < sizeof(operators) / sizeof(operators[0]); i++)
		json_array_append_new(a,
				      record(operators[i].name,
					     operators[i].status,
					     operators[i].reason));
	for (size_t i = 0; i < sv_func_count(); i++) {
		char name[96];
		snprintf(name, sizeof(name), "function:%s", sv_func_name(i));
		json_array_append_new(
			a,
			record(name, "covered", "in the expression registry"));
	}
	char *s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

static sv_error_t *refuse(const char *cap, const char *reason,
			  const char *field, const char *message)
{
	json_t *a = json_array();
	json_array_append_new(a, record(cap, "uncovered", reason));
	char *details = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	sv_error_t *err = sv_error_new(SV_ERR_COVERAGE, "%s", message);
	sv_error_set_field(err, field);
	sv_error_set_details(err, details);
	free(details);
	return err;
}

/* A join step: a spec error in it (a clash, an unknown column) is a 400
 * first, so the plan is built; then the refusal of the runtime. */
static sv_error_t *check_join(const sv_jobspec_t *spec)
{
	const Streamvisor__JobSpec *js = spec->msg;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		if (js->pipeline[i]->step_case != STREAMVISOR__STEP__STEP_JOIN)
			continue;
		sv_plan_t *plan = NULL;
		sv_error_t *err = sv_plan_build(spec, &plan);
		sv_plan_destroy(plan);
		if (err)
			return err;
		char field[64];
		snprintf(field, sizeof(field), "pipeline[%zu].join", i);
		return refuse("stateful_join_support",
			      "the join operators are built, but the worker "
			      "does not read a join's second input yet (its "
			      "source, offsets and checkpoint)",
			      field,
			      "a join step needs a second input at run time, "
			      "which this build does not wire yet: the spec "
			      "is valid but cannot run");
	}
	return NULL;
}

sv_error_t *sv_coverage_check(const sv_jobspec_t *spec)
{
	const Streamvisor__JobSpec *js = spec->msg;
	sv_error_t *err = check_join(spec);
	if (err)
		return err;
	if (strcmp(js->delivery, "exactly_once"))
		return NULL;
	const char *sink = js->sink->kind;
	if (strcmp(sink, "kafka") && strcmp(sink, "file"))
		return refuse("sink_commit_guarantee",
			      "only the kafka and file "
			      "sinks commit transactionally",
			      "sink.kind",
			      "delivery 'exactly_once' needs a transactional "
			      "sink (kafka or file)");
	if (!strcmp(sink, "kafka") && strcmp(js->source->kind, "kafka"))
		return refuse("sink_commit_guarantee",
			      "exactly_once into Kafka "
			      "carries the checkpoint id in the source's "
			      "consumer-group offsets; a generator source has "
			      "none",
			      "source.kind",
			      "delivery 'exactly_once' "
			      "into a kafka sink needs a kafka source");
	return NULL;
}
