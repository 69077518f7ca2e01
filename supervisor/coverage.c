/* coverage.c — the capability table (see coverage.h). Static rows for the
 * RFC 048 streaming capabilities, one row per operator, and one per function
 * of the expression registry (read from core, so it cannot drift). */
#include "supervisor/coverage.h"

#include <jansson.h>
#include <string.h>

#include "core/expr.h"

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
	{"stateful_join_support", "uncovered", "no join operator exists"},
	{"checkpoint_recovery", "uncovered",
	 "no checkpoint store yet: a restarted attempt resumes from the "
	 "consumer group's committed offsets with empty operator state"},
	{"sink_commit_guarantee", "partial",
	 "at_least_once only: output is flushed before offsets are committed; "
	 "exactly_once (Kafka transactions) is not implemented"},
	{"replay_support", "partial",
	 "a new attempt re-reads from the last committed offsets, so output "
	 "written after the last commit may repeat (at-least-once)"},
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
	{"operator:join", "uncovered", "no join operator exists"},
};

static json_t *record(const char *name, const char *status, const char *reason)
{
	return json_pack("{s:s, s:s, s:s}", "capability", name, "status", status,
			 "reason", reason);
}

char *sv_coverage_json(bool dev_cluster)
{
	json_t *a = json_array();
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		const cap_t *c = &caps[i];
		if (dev_cluster && !strcmp(c->name, "sink_commit_guarantee"))
			json_array_append_new(a, record(c->name, "partial",
				"at_least_once only; and the 'default' cluster is "
				"the embedded development cluster, which has no "
				"transactional isolation"));
		else
			json_array_append_new(a, record(c->name, c->status, c->reason));
	}
	for (size_t i = 0; i < sizeof(operators) / sizeof(operators[0]); i++)
		json_array_append_new(a, record(operators[i].name,
			operators[i].status, operators[i].reason));
	for (size_t i = 0; i < sv_func_count(); i++) {
		char name[96];
		snprintf(name, sizeof(name), "function:%s", sv_func_name(i));
		json_array_append_new(a, record(name, "covered",
						"in the expression registry"));
	}
	char *s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

sv_error_t *sv_coverage_check(const sv_jobspec_t *spec)
{
	const Streamvisor__JobSpec *js = spec->msg;
	if (!strcmp(js->delivery, "exactly_once")) {
		json_t *a = json_array();
		json_array_append_new(a, record("sink_commit_guarantee",
			"partial", "exactly_once delivery (Kafka transactions) is "
			"not implemented yet; use at_least_once"));
		char *details = json_dumps(a, JSON_COMPACT);
		json_decref(a);
		sv_error_t *err = sv_error_new(SV_ERR_COVERAGE,
			"delivery 'exactly_once' needs capability "
			"'sink_commit_guarantee', which is not covered");
		sv_error_set_field(err, "delivery");
		sv_error_set_details(err, details);
		free(details);
		return err;
	}
	return NULL;
}
