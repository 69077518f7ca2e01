/* coverage.c — the capability table (see coverage.h). Static rows for the
 * RFC 048 streaming capabilities, one row per operator, and one per function
 * of the expression registry (read from core, so it cannot drift). */
#include "ingress/coverage.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
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
	{"operator:join", "uncovered", "no join operator exists"},
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

sv_error_t *sv_coverage_check(const sv_jobspec_t *spec,
			      const sv_drivers_t *drivers)
{
	const Streamvisor__JobSpec *js = spec->msg;
	if (strcmp(js->delivery, "exactly_once"))
		return NULL;
	const sv_driver_t *snk = sv_drivers_find(drivers, SV_DRIVER_SINK,
						 js->sink->kind);
	const sv_driver_t *src = sv_drivers_find(drivers, SV_DRIVER_SOURCE,
						 js->source->kind);
	char kinds[160], reason[256], msg[256];
	if (!sv_driver_has(snk, SV_DRIVER_TRANSACTIONAL)) {
		sv_drivers_list(drivers, SV_DRIVER_SINK,
				SV_DRIVER_TRANSACTIONAL, NULL, kinds,
				sizeof(kinds));
		snprintf(reason, sizeof(reason),
			 "only the %s sinks commit transactionally", kinds);
		snprintf(msg, sizeof(msg),
			 "delivery 'exactly_once' needs a transactional "
			 "sink (%s)",
			 kinds);
		return refuse("sink_commit_guarantee", reason, "sink.kind",
			      msg);
	}
	if (sv_driver_has(snk, SV_DRIVER_TXN_OFFSETS) &&
	    !sv_driver_has(src, SV_DRIVER_GROUP)) {
		sv_drivers_list(drivers, SV_DRIVER_SOURCE, SV_DRIVER_GROUP,
				NULL, kinds, sizeof(kinds));
		snprintf(reason, sizeof(reason),
			 "exactly_once into a %s sink carries the checkpoint "
			 "id in the source's consumer-group offsets; a %s "
			 "source has none",
			 snk->kind, js->source->kind);
		snprintf(msg, sizeof(msg),
			 "delivery 'exactly_once' into a %s sink needs a "
			 "source with a consumer group (%s)",
			 snk->kind, kinds);
		return refuse("sink_commit_guarantee", reason, "source.kind",
			      msg);
	}
	return NULL;
}
