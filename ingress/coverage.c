/* coverage.c — the capability table (see coverage.h). Static rows for the
 * RFC 048 streaming capabilities, one row per operator, and one per function
 * of the expression registry (read from core, so it cannot drift). */
#include "ingress/coverage.h"

#include <jansson.h>
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
	{"parallel_execution", "covered",
	 "parallelism N runs N worker threads, each with its own consumer, "
	 "transactional producer and per-partition tasks; keyed steps must "
	 "follow source.partitioned_by (checked per record)"},
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

/* Whether key names every column of partitioned_by (so records with the
 * same key are in the same source partition). */
static bool follows_partitioning(const Streamvisor__Source *s, char **key,
				 size_t nkey)
{
	if (!s->n_partitioned_by)
		return false;
	for (size_t i = 0; i < s->n_partitioned_by; i++) {
		bool found = false;
		for (size_t j = 0; j < nkey; j++)
			if (!strcmp(key[j], s->partitioned_by[i]))
				found = true;
		if (!found)
			return false;
	}
	return true;
}

/* At parallelism > 1 a task sees one partition: a keyed step is correct
 * only when its key follows the source partitioning (SCALE-OUT.md §4);
 * the repartition stage that would lift this does not exist yet. */
static sv_error_t *check_copartitioned(const Streamvisor__JobSpec *js)
{
	if (js->parallelism <= 1)
		return NULL;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		const Streamvisor__Step *st = js->pipeline[i];
		char **key = NULL;
		size_t nkey = 0;
		const char *what;
		if (st->step_case == STREAMVISOR__STEP__STEP_WINDOW) {
			key = st->window->key;
			nkey = st->window->n_key;
			what = "window";
		} else if (st->step_case == STREAMVISOR__STEP__STEP_DEDUP) {
			key = st->dedup->key;
			nkey = st->dedup->n_key;
			what = "dedup";
		} else {
			continue;
		}
		if (follows_partitioning(js->source, key, nkey))
			continue;
		char field[64], msg[512];
		snprintf(field, sizeof(field), "pipeline[%zu].%s", i, what);
		snprintf(msg, sizeof(msg),
			 "the %s at pipeline[%zu] is keyed on columns that do "
			 "not include source.partitioned_by%s; at parallelism "
			 "%d each task sees one partition, so its groups would "
			 "be split (declare source.partitioned_by, or use "
			 "parallelism 1)",
			 what, i,
			 js->source->n_partitioned_by ? "" : " (none declared)",
			 js->parallelism);
		return refuse("parallel_keyed_steps",
			      "a keyed step runs inside a task only when its "
			      "key follows the source partitioning; there is "
			      "no repartition stage yet",
			      field, msg);
	}
	return NULL;
}

sv_error_t *sv_coverage_check(const sv_jobspec_t *spec)
{
	const Streamvisor__JobSpec *js = spec->msg;
	sv_error_t *err = check_copartitioned(js);
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
