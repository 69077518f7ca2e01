/* coverage.c — adapter coverage records (see coverage.h). One table says
 * how this build answers every capability name of the vocabulary (IncQL's
 * 18 and RFC 048's 9); sv_coverage_for_job() walks a job spec the way
 * IncQL's inspect_plan walks a Prism plan (null_semantics for the plan,
 * row_filter per filter, extension_function per step with registered calls,
 * ordered_execution for ordered aggregates) and adds RFC 048's streaming
 * requirements per step, each on a SemanticTarget built by IncQL's id rules
 * ("{plan_id}:target:{kind}:{path}"). A few answers depend on the job
 * (exactly-once sink and source, the development cluster, first/last) and
 * are decided where the requirement is inferred. Records are built only by
 * sv_coverage_record_new(), so the shape and the ids cannot drift. */
#define _GNU_SOURCE
#include "ingress/coverage.h"
#include "ingress/stages.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/expr.h"
#include "core/util.h"
#include "ingress/substrait.h"

typedef struct cap {
	const char *name;
	bool draft; /* RFC 048 (Draft), not in IncQL's enum */
	const char *state;
	const char *note; /* how streamvisor covers it, or why not */
} cap_t;

static const cap_t caps[] = {
	/* IncQL's AdapterRequirementCapability, in its order */
	{"extension_function", false, "covered",
	 "every function of the expression registry and every window "
	 "aggregate runs as streamvisor implements it; a name not in the "
	 "registry is refused at submit (422), never evaluated as null"},
	{"variant_semantics", false, "uncovered",
	 "there is no variant or semi-structured value type"},
	{"decimal_semantics", false, "uncovered",
	 "there is no decimal type: numbers are int64 or float64"},
	{"null_semantics", false, "partially_covered",
	 "three-valued logic and null propagation as SQL; but int64 "
	 "overflow, division by zero and a failing cast give null where "
	 "IncQL's strict forms fail"},
	{"lineage_preservation", false, "uncovered",
	 "no column lineage is kept across operators"},
	{"audit_emission", false, "uncovered", "no audit events are emitted"},
	{"row_filter", false, "covered",
	 "a filter step evaluates its boolean expression per row; null is "
	 "false"},
	{"column_mask", false, "uncovered", "no column masking"},
	{"aggregate_threshold", false, "uncovered",
	 "no minimum group size is enforced"},
	{"region_binding", false, "unknown", NULL},
	{"ordered_execution", false, "partially_covered",
	 "bounded jobs sort with the order step (ORDER BY/LIMIT, at the end "
	 "of input); streams have no sort operator: rows keep their order "
	 "within a source partition, and first/last order by event time "
	 "with equal event times in arrival order, which differs across "
	 "partitions"},
	{"snapshot_capture", false, "unknown", NULL},
	{"canonical_digest", false, "unknown", NULL},
	{"cross_relation_reconciliation", false, "unknown", NULL},
	{"incremental_watermark", false, "unknown", NULL},
	{"verification_event_stream", false, "unknown", NULL},
	{"waiver_recording", false, "unknown", NULL},
	{"cryptographic_query_proof", false, "unknown", NULL},
	/* RFC 048's streaming names (Draft) */
	{"source_offset_tracking", true, "covered",
	 "per-partition next and end offsets are tracked for Kafka and "
	 "generator sources and committed to the job's consumer group "
	 "(streamvisor-<job id>) after the sink flushed"},
	{"watermark_support", true, "covered",
	 "event time from event_time.field with bounded out-of-orderness; "
	 "per-partition watermarks combined as the minimum, idle partitions "
	 "excluded after idle_timeout_ms"},
	{"stateful_window_support", true, "covered",
	 "keyed tumbling, sliding (pane-based) and session windows and "
	 "dedup with in-memory state, written into checkpoints"},
	{"stateful_join_support", true, "partially_covered",
	 "interval, lookup (event or processing time) and bounded hash "
	 "joins of the job's source with a second source (the join step's), "
	 "both inputs' offsets in the checkpoint and in one Kafka "
	 "transaction, with checkpointed, bounded state per input "
	 "(docs/joins.md). At most one join per job; at parallelism > 1 the "
	 "two inputs must be co-partitioned on the join key (same partition "
	 "count, each source's partitioned_by its join key column), else "
	 "422: there is no repartitioning for joins. A Substrait JoinRel "
	 "(inner or left equi-join) maps onto a bounded hash join; a JoinRel "
	 "of two streams is refused (no time bound)"},
	{"checkpoint_recovery", true, "covered",
	 "periodic and on-demand checkpoints in RocksDB (synced, WAL on, "
	 "lost commits detected); a new attempt or a restarted supervisor "
	 "restores operator state, watermarks and source positions"},
	{"sink_commit_guarantee", true, "covered",
	 "exactly_once: Kafka transactions with the source offsets and the "
	 "checkpoint id committed in them, or the file sink's two-phase "
	 "commit; at_least_once: the sink is flushed before the positions "
	 "are committed"},
	{"replay_support", true, "covered",
	 "a new attempt replays from the restored checkpoint's offsets; "
	 "restart can choose a checkpoint or keep positions only"},
	{"late_data_policy", true, "covered",
	 "records behind the watermark are dropped and counted, or sent to "
	 "the late_sink (late: side_output)"},
	{"streaming_lifecycle_observations", true, "covered",
	 "lifecycle states in the status document, the observation log "
	 "(GET /v1/jobs/{id}/observations) and RFC 032 execution "
	 "observations per attempt (GET /v1/jobs/{id}/execution-"
	 "observations)"},
};

static const char *const target_kinds[] = {
	"plan",
	"ingress_request",
	"client_session",
	"ingress_node",
	"ingress_expression",
	"analyzer_binding",
	"authored_prism_node",
	"rewritten_prism_node",
	"relation_output",
	"field",
	"scalar_expression",
	"aggregate_measure",
	"window_expression",
	"generator_output",
	"read_root",
	"governed_attribute",
	"quality_assertion",
	"quality_observation",
	"policy_checkpoint",
	"policy_decision",
	"adapter_requirement",
	"coverage_record",
	"semantic_profile",
	"profile_assessment",
	"execution_attempt",
};

static const cap_t *cap_find(const char *name)
{
	for (size_t i = 0; name && i < SV_ARRAY_LEN(caps); i++)
		if (!strcmp(caps[i].name, name))
			return &caps[i];
	return NULL;
}

bool sv_coverage_capability_known(const char *capability)
{
	return cap_find(capability) != NULL;
}

bool sv_coverage_capability_is_draft(const char *capability)
{
	const cap_t *c = cap_find(capability);
	return c && c->draft;
}

bool sv_coverage_target_kind_known(const char *kind)
{
	for (size_t i = 0; kind && i < SV_ARRAY_LEN(target_kinds); i++)
		if (!strcmp(target_kinds[i], kind))
			return true;
	return false;
}

static bool one_of(const char *v, const char *const *set)
{
	for (; v && *set; set++)
		if (!strcmp(v, *set))
			return true;
	return false;
}

json_t *sv_target_new(const char *kind, const char *target_id,
		      const char *plan_id, const char *scope_id,
		      const char *path, const char *name, int64_t node_id,
		      int64_t ordinal)
{
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "kind", kind,
		"target_id", target_id, "plan_id", plan_id, "scope_id",
		scope_id, "path", path, "name", name, "node_id",
		node_id < 0 ? json_null() : json_integer(node_id), "ordinal",
		ordinal < 0 ? json_null() : json_integer(ordinal));
}

json_t *sv_coverage_target_from_proto(const Streamvisor__SemanticTarget *t)
{
	return sv_target_new(t->kind, t->target_id, t->plan_id, t->scope_id,
			     t->path, t->name, t->has_node_id ? t->node_id : -1,
			     t->has_ordinal ? t->ordinal : -1);
}

static const char *str_of(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

json_t *sv_coverage_record_new(const json_t *target, const char *capability,
			       const char *guarantee, const char *reason,
			       const char *state, const char *message)
{
	static const char *const guarantees[] = {"required", "preferred",
						 "optional", NULL};
	static const char *const states[] = {"covered", "partially_covered",
					     "uncovered", "unknown", NULL};
	if (!json_is_object(target) ||
	    !sv_coverage_capability_known(capability) ||
	    !one_of(guarantee, guarantees) || !one_of(state, states) || !reason)
		return NULL;
	char *req_id = NULL, *cov_id = NULL, *text = NULL;
	if (asprintf(&req_id, "%s:adapter-requirement:%s",
		     str_of(target, "target_id"), capability) < 0 ||
	    asprintf(&cov_id, "%s:coverage:%s", req_id, SV_ADAPTER_NAME) < 0)
		abort();
	json_t *diags = json_array();
	if (strcmp(state, "covered")) {
		/* IncQL's _coverage_diagnostics(), then our specifics */
		const char *sev = "warning", *code;
		char *base = NULL;
		int rc;
		if (!strcmp(state, "partially_covered")) {
			code = "adapter_coverage.partial";
			rc = asprintf(&base,
				      "%s coverage for %s is function- or "
				      "plan-shape-specific",
				      SV_ADAPTER_NAME, capability);
		} else if (!strcmp(state, "uncovered")) {
			sev = "error";
			code = "adapter_coverage.uncovered";
			rc = asprintf(&base,
				      "%s does not currently cover %s as an "
				      "adapter guarantee",
				      SV_ADAPTER_NAME, capability);
		} else {
			code = "adapter_coverage.unknown";
			rc = asprintf(&base,
				      "%s coverage for %s has not been "
				      "classified",
				      SV_ADAPTER_NAME, capability);
		}
		if (rc < 0 ||
		    asprintf(&text, "%s%s%s", base, message ? ": " : "",
			     message ? message : "") < 0)
			abort();
		free(base);
		json_array_append_new(diags,
				      json_pack("{s:s, s:s, s:s, s:O}",
						"severity", sev, "code", code,
						"message", text, "target",
						target));
	}
	json_t *req = json_pack("{s:s, s:O, s:s, s:s, s:s, s:[]}",
				"requirement_id", req_id, "target", target,
				"capability", capability, "guarantee",
				guarantee, "reason", reason, "evidence_refs");
	json_t *rec = json_pack(
		"{s:s, s:o, s:s, s:s, s:n, s:s, s:o, s:[]}", "coverage_id",
		cov_id, "requirement", req, "adapter_name", SV_ADAPTER_NAME,
		"adapter_version", SV_VERSION_STRING, "semantic_profile_id",
		"state", state, "diagnostics", diags, "evidence_refs");
	free(req_id);
	free(cov_id);
	free(text);
	return rec;
}

json_t *sv_coverage_add_evidence(json_t *rec, const char *ref)
{
	json_t *refs = json_object_get(json_object_get(rec, "requirement"),
				       "evidence_refs");
	if (refs && ref)
		json_array_append_new(refs, json_string(ref));
	return rec;
}

const json_t *sv_coverage_refusal(const json_t *records)
{
	size_t i;
	const json_t *rec;
	json_array_foreach (records, i, rec) {
		const json_t *req = json_object_get(rec, "requirement");
		const char *state = str_of(rec, "state");
		if (!strcmp(str_of(req, "guarantee"), "required") &&
		    (!strcmp(state, "uncovered") || !strcmp(state, "unknown")))
			return rec;
	}
	return NULL;
}

/* ---- a job's requirements ---- */

typedef struct infer {
	json_t *records;
	json_t *fields; /* coverage_id -> spec field, for the 422 */
	const char *plan_id; /* of the plan target */
	const char *spec_ref; /* "streamvisor:plan:<sha256>" */
} infer_t;

/* Add a requirement once per (target, capability), as IncQL's
 * _append_adapter_requirement_once; state NULL takes the table's. */
static void add(infer_t *in, const json_t *target, const char *cap,
		const char *guarantee, const char *reason, const char *state,
		const char *message, const char *field, const char *ref)
{
	const cap_t *c = cap_find(cap);
	if (!state) {
		state = c->state;
		if (!message && strcmp(state, "covered"))
			message = c->note;
	}
	json_t *rec = sv_coverage_record_new(target, cap, guarantee, reason,
					     state, message);
	const char *id = str_of(rec, "coverage_id");
	size_t i;
	json_t *o;
	json_array_foreach (in->records, i, o)
		if (!strcmp(str_of(o, "coverage_id"), id)) {
			json_decref(rec);
			return;
		}
	sv_coverage_add_evidence(rec, ref ? ref : in->spec_ref);
	if (field)
		json_object_set_new(in->fields, id, json_string(field));
	json_array_append_new(in->records, rec);
}

/* IncQL's _target_id(): "{plan_id}:target:{kind}:{path}". */
static json_t *sub_target(const infer_t *in, const char *kind,
			  const char *id_kind, const char *id_path,
			  const char *scope, const char *path, const char *name,
			  int64_t node_id, int64_t ordinal)
{
	char *tid = NULL;
	if (asprintf(&tid, "%s:target:%s:%s", in->plan_id, id_kind, id_path) <
	    0)
		abort();
	json_t *t = sv_target_new(kind, tid, in->plan_id, scope, path, name,
				  node_id, ordinal);
	free(tid);
	return t;
}

/* Whether expression text calls a function of the registry. */
static bool calls_function(const char *text)
{
	char quote = 0;
	for (const char *p = text; p && *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			continue;
		}
		if (*p == '\'' || *p == '"' || *p == '`') {
			quote = *p;
			continue;
		}
		if (!(isalpha((unsigned char)*p) || *p == '_') ||
		    (p > text &&
		     (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
			continue;
		const char *e = p;
		while (isalnum((unsigned char)*e) || *e == '_')
			e++;
		const char *q = e;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q == '(') {
			char name[64];
			size_t n = (size_t)(e - p);
			if (n < sizeof(name)) {
				memcpy(name, p, n);
				name[n] = '\0';
				if (sv_func_exists(name))
					return true;
			}
		}
		p = e - 1;
	}
	return false;
}

static const char *source_name(const Streamvisor__JobSpec *js)
{
	if (js->source->topic && *js->source->topic)
		return js->source->topic;
	return js->source->generator && *js->source->generator
		? js->source->generator
		: js->source->kind;
}

json_t *sv_coverage_plan_target(const sv_jobspec_t *spec, const sv_plan_t *plan)
{
	const Streamvisor__JobSpec *js = spec->msg;
	if (js->evidence && js->evidence->plan_target)
		return sv_coverage_target_from_proto(js->evidence->plan_target);
	char *id = NULL;
	if (!plan) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
		if (asprintf(&id, "plan:unavailable:execute:%lld", ns) < 0)
			abort();
		json_t *t = sv_target_new("plan", id, id, "plan-unavailable",
					  "unavailable/execute",
					  "plan_unavailable", -1, -1);
		free(id);
		return t;
	}
	/* IncQL's _substrait_plan_target() over the job's equivalent plan:
	 * the root is the read only when there are no steps (read_kind_name
	 * and read_named_table_name look at the root relation alone). */
	bool read_root = js->n_pipeline == 0;
	const char *root_kind = read_root ? "NamedTable" : "Unknown";
	const char *src = read_root ? source_name(js) : "";
	sv_buf_t cols;
	sv_buf_init(&cols);
	const sv_schema_t *out = sv_pipeline_out_schema(plan->pipeline);
	for (size_t i = 0; i < out->nfields; i++)
		sv_buf_printf(&cols, "%s%s", i ? "," : "", out->fields[i].name);
	char *path = NULL;
	if (asprintf(&id, "substrait:root:%s:%s:%s", root_kind, src,
		     cols.data ? cols.data : "") < 0 ||
	    asprintf(&path, "root/%s", root_kind) < 0)
		abort();
	json_t *t = sv_target_new("plan", id, id, "substrait-plan", path,
				  *src ? src : root_kind, -1, -1);
	free(id);
	free(path);
	sv_buf_release(&cols);
	return t;
}

static void infer_step(infer_t *in, const Streamvisor__JobSpec *js, size_t i)
{
	static const char *const kinds[] = {
		[STREAMVISOR__STEP__STEP_FILTER] = "filter",
		[STREAMVISOR__STEP__STEP_SELECT] = "select",
		[STREAMVISOR__STEP__STEP_WINDOW] = "window",
		[STREAMVISOR__STEP__STEP_DEDUP] = "dedup",
		[STREAMVISOR__STEP__STEP_ORDER] = "order",
		[STREAMVISOR__STEP__STEP_JOIN] = "join",
	};
	const Streamvisor__Step *st = js->pipeline[i];
	if ((size_t)st->step_case >= SV_ARRAY_LEN(kinds) ||
	    !kinds[st->step_case])
		return;
	const char *kind = kinds[st->step_case];
	char idp[32], path[40], field[64], ref[200];
	snprintf(idp, sizeof(idp), "%zu", i);
	snprintf(path, sizeof(path), "pipeline/%zu", i);
	snprintf(field, sizeof(field), "pipeline[%zu].%s", i, kind);
	snprintf(ref, sizeof(ref), "%s:pipeline[%zu]", in->spec_ref, i);
	json_t *t = sub_target(in, "relation_output", "pipeline-step", idp,
			       "pipeline", path, kind, (int64_t)i, -1);
	bool calls = false;
	switch (st->step_case) {
	case STREAMVISOR__STEP__STEP_FILTER:
		add(in, t, "row_filter", "required",
		    "filter nodes require adapter row-filter execution", NULL,
		    NULL, field, ref);
		calls = calls_function(st->filter);
		break;
	case STREAMVISOR__STEP__STEP_SELECT:
		for (size_t j = 0; j < st->select->n_items; j++)
			calls |= calls_function(st->select->items[j]->expr);
		break;
	case STREAMVISOR__STEP__STEP_WINDOW: {
		const Streamvisor__Window *w = st->window;
		add(in, t, "stateful_window_support", "required",
		    "window steps keep keyed window state across records "
		    "and checkpoints",
		    NULL, NULL, field, ref);
		/* a global window fires at the end of input only: no
		 * record is ever late for it */
		if (strcmp(w->time, "processing") && strcmp(w->type, "global"))
			add(in, t, "late_data_policy", "required",
			    "an event-time window decides what happens to "
			    "records behind the watermark (late: drop or "
			    "side_output)",
			    NULL, NULL, field, ref);
		/* aggregate measures are registered applications, as IncQL
		 * counts them (_node_has_direct_function_application) */
		calls = w->n_aggregates > 0;
		for (size_t j = 0; j < w->n_aggregates; j++) {
			const char *e = w->aggregates[j]->expr;
			while (*e == ' ')
				e++;
			if (strncmp(e, "first", 5) && strncmp(e, "last", 4))
				continue;
			char mp[160];
			snprintf(mp, sizeof(mp), "step-%zu/%s", i,
				 w->aggregates[j]->name);
			json_t *m = sub_target(
				in, "aggregate_measure", "aggregate-measure",
				mp, "pipeline", path, w->aggregates[j]->name,
				(int64_t)i, (int64_t)j);
			add(in, m, "ordered_execution", "required",
			    "ordered aggregate inputs require ordered adapter "
			    "execution",
			    "partially_covered",
			    "first/last order by event time; equal event "
			    "times are taken in arrival order, which is not "
			    "deterministic across source partitions",
			    field, ref);
			json_decref(m);
		}
		break;
	}
	case STREAMVISOR__STEP__STEP_JOIN:
		add(in, t, "stateful_join_support", "required",
		    "a join step keeps state of both inputs to match records",
		    "covered", NULL, field, ref);
		break;
	case STREAMVISOR__STEP__STEP_DEDUP:
		add(in, t, "stateful_window_support", "required",
		    "dedup keeps per-key state for within_ms (RFC 048 has "
		    "no dedup name; bounded keyed state is reported here)",
		    NULL, NULL, field, ref);
		break;
	case STREAMVISOR__STEP__STEP_ORDER:
		add(in, t, "ordered_execution", "required",
		    "an order step (ORDER BY/LIMIT) requires ordered adapter "
		    "execution",
		    "covered", NULL, field, ref);
		for (size_t j = 0; j < st->order->n_keys; j++)
			calls |= calls_function(st->order->keys[j]->expr);
		break;
	default:
		break;
	}
	if (calls)
		add(in, t, "extension_function", "required",
		    "registered helper calls in this node require adapter "
		    "function-extension coverage",
		    NULL, NULL, field, ref);
	json_decref(t);
}

/* sink_commit_guarantee for exactly_once: what the sink and source allow. */
static void infer_sink(infer_t *in, const Streamvisor__JobSpec *js,
		       const json_t *pt, const sv_coverage_env_t *env)
{
	if (strcmp(js->delivery, "exactly_once"))
		return;
	const char *reason = "delivery 'exactly_once' needs the sink to "
			     "commit atomically with the source positions "
			     "and the checkpoint";
	const sv_driver_t *snk = sv_drivers_find(env->drivers, SV_DRIVER_SINK,
						 js->sink->kind);
	const sv_driver_t *src = sv_drivers_find(env->drivers, SV_DRIVER_SOURCE,
						 js->source->kind);
	char kinds[160], msg[400];
	if (!sv_driver_has(snk, SV_DRIVER_TRANSACTIONAL)) {
		snprintf(msg, sizeof(msg),
			 "delivery 'exactly_once' needs a transactional sink "
			 "(%s)",
			 sv_drivers_list(env->drivers, SV_DRIVER_SINK,
					 SV_DRIVER_TRANSACTIONAL, NULL, kinds,
					 sizeof(kinds)));
		add(in, pt, "sink_commit_guarantee", "required", reason,
		    "uncovered", msg, "sink.kind", NULL);
	} else if (sv_driver_has(snk, SV_DRIVER_TXN_OFFSETS) &&
		   !sv_driver_has(src, SV_DRIVER_GROUP)) {
		snprintf(msg, sizeof(msg),
			 "delivery 'exactly_once' into a %s sink needs a "
			 "source with a consumer group (%s): the checkpoint "
			 "id travels in the source's consumer-group offsets, "
			 "and a %s source has none",
			 snk->kind,
			 sv_drivers_list(env->drivers, SV_DRIVER_SOURCE,
					 SV_DRIVER_GROUP, NULL, kinds,
					 sizeof(kinds)),
			 js->source->kind);
		add(in, pt, "sink_commit_guarantee", "required", reason,
		    "uncovered", msg, "source.kind", NULL);
	} else if (sv_driver_has(snk, SV_DRIVER_CLUSTER) && env->dev_cluster &&
		   !strcmp(js->sink->cluster, "default"))
		add(in, pt, "sink_commit_guarantee", "required", reason,
		    "partially_covered",
		    "the 'default' cluster is the embedded development "
		    "cluster (librdkafka's mock), which does not filter "
		    "aborted transactions: read_committed readers may see "
		    "them",
		    "sink.cluster", NULL);
	else
		add(in, pt, "sink_commit_guarantee", "required", reason,
		    "covered", NULL, "delivery", NULL);
}

static json_t *infer(const sv_jobspec_t *spec, const json_t *pt,
		     const sv_coverage_env_t *env, json_t **fields)
{
	const Streamvisor__JobSpec *js = spec->msg;
	char spec_ref[100];
	snprintf(spec_ref, sizeof(spec_ref), "streamvisor:plan:%s",
		 spec->plan_id);
	infer_t in = {json_array(), json_object(), str_of(pt, "plan_id"),
		      spec_ref};
	bool stream = !sv_jobspec_bounded(spec);
	add(&in, pt, "null_semantics", "required",
	    "plan execution requires adapter null semantics for scalar and "
	    "relational evaluation",
	    NULL, NULL, NULL, NULL);

	const char *src = source_name(js);
	char path[300];
	snprintf(path, sizeof(path), "read-root/%s", src);
	json_t *rt = sub_target(&in, "read_root", "read-root", src, "read-root",
				path, src, -1, -1);
	/* a bounded read of a log with offsets still tracks them */
	if (stream ||
	    sv_driver_has(sv_drivers_find(env->drivers, SV_DRIVER_SOURCE,
					  js->source->kind),
			  SV_DRIVER_GROUP))
		add(&in, rt, "source_offset_tracking", "required",
		    stream ? "a stream continues from its tracked source "
			     "positions after a restart"
			   : "a bounded read ends at the end offsets taken "
			     "when it starts",
		    NULL, NULL, "source", NULL);
	bool eo = !strcmp(js->delivery, "exactly_once");
	if (stream || eo)
		add(&in, rt, "replay_support", eo ? "required" : "preferred",
		    eo ? "exactly-once output replays the source from the "
			 "committed checkpoint after a failure"
		       : "an attempt after a failure replays the source from "
			 "the last committed position",
		    NULL, NULL, "source", NULL);
	json_decref(rt);

	if (js->event_time && js->event_time->field && *js->event_time->field) {
		int64_t ord = -1;
		for (size_t i = 0; i < js->n_schema; i++)
			if (!strcmp(js->schema[i]->name, js->event_time->field))
				ord = (int64_t)i;
		char idp[200], fp[64];
		snprintf(idp, sizeof(idp), "source/field-%lld/%s",
			 (long long)ord, js->event_time->field);
		snprintf(fp, sizeof(fp), "source/field/%lld", (long long)ord);
		json_t *ft = sub_target(&in, "field", "field", idp, "read-root",
					fp, js->event_time->field, -1, ord);
		add(&in, ft, "watermark_support", "required",
		    "event_time.field: the watermark over this column decides "
		    "when windows fire and which records are late",
		    NULL, NULL, "event_time.field", NULL);
		json_decref(ft);
	}
	for (size_t i = 0; i < js->n_pipeline; i++)
		infer_step(&in, js, i);
	infer_sink(&in, js, pt, env);
	if (stream) {
		add(&in, pt, "checkpoint_recovery", "preferred",
		    "a long-running job should recover its state and "
		    "positions after a failure",
		    env->have_store ? NULL : "uncovered",
		    env->have_store ? NULL
				    : "this supervisor has no data directory, "
				      "so no checkpoints are taken",
		    NULL, NULL);
		add(&in, pt, "streaming_lifecycle_observations", "preferred",
		    "a stream's lifecycle is observed while it runs", NULL,
		    NULL, NULL, NULL);
	}
	/* the client's explicit requirements (IncQL's check_coverage) */
	const Streamvisor__Evidence *ev = js->evidence;
	for (size_t i = 0; ev && i < ev->n_requirements; i++) {
		const Streamvisor__Requirement *q = ev->requirements[i];
		json_t *t = q->target ? sv_coverage_target_from_proto(q->target)
				      : json_incref((json_t *)pt);
		char f[48];
		snprintf(f, sizeof(f), "requirements[%zu]", i);
		size_t before = json_array_size(in.records);
		add(&in, t, q->capability, q->guarantee, q->reason, NULL, NULL,
		    f, q->n_evidence_refs ? q->evidence_refs[0] : NULL);
		json_t *rec = json_array_size(in.records) > before
			? json_array_get(in.records, before)
			: NULL;
		for (size_t k = 1; rec && k < q->n_evidence_refs; k++)
			sv_coverage_add_evidence(rec, q->evidence_refs[k]);
		json_decref(t);
	}
	if (fields)
		*fields = in.fields;
	else
		json_decref(in.fields);
	return in.records;
}

json_t *sv_coverage_for_job(const sv_jobspec_t *spec, const sv_plan_t *plan,
			    const json_t *plan_target,
			    const sv_coverage_env_t *env)
{
	(void)plan;
	return infer(spec, plan_target, env, NULL);
}

sv_error_t *sv_coverage_check(const sv_jobspec_t *spec, const sv_plan_t *plan,
			      const json_t *plan_target,
			      const sv_coverage_env_t *env, json_t **records)
{
	(void)plan;
	json_t *fields = NULL;
	json_t *recs = infer(spec, plan_target, env, &fields);
	const json_t *bad = sv_coverage_refusal(recs);
	sv_error_t *err = NULL;
	if (bad) {
		const json_t *req = json_object_get(bad, "requirement");
		const json_t *d = json_array_get(
			json_object_get(bad, "diagnostics"), 0);
		err = sv_error_new(SV_ERR_COVERAGE,
				   "required capability '%s' is %s: %s",
				   str_of(req, "capability"),
				   str_of(bad, "state"), str_of(d, "message"));
		const char *field = json_string_value(
			json_object_get(fields, str_of(bad, "coverage_id")));
		if (field)
			sv_error_set_field(err, field);
		char *details = json_dumps(recs, JSON_COMPACT);
		sv_error_set_details(err, details);
		free(details);
	}
	json_decref(fields);
	if (records)
		*records = recs;
	else
		json_decref(recs);
	return err;
}

sv_error_t *sv_coverage_plan_error(sv_error_t *err, const json_t *plan_target)
{
	if (!err || err->category != SV_ERR_COVERAGE || err->details_json)
		return err;
	/* the step the field names: "pipeline[2].select.total" */
	long step = -1;
	if (err->field && !strncmp(err->field, "pipeline[", 9))
		step = strtol(err->field + 9, NULL, 10);
	const char *plan_id = str_of(plan_target, "plan_id");
	json_t *t;
	if (step >= 0) {
		char tid[400], path[40];
		snprintf(tid, sizeof(tid), "%s:target:pipeline-step:%ld",
			 plan_id, step);
		snprintf(path, sizeof(path), "pipeline/%ld", step);
		const char *kind = strchr(err->field, '.');
		char name[32] = "step";
		if (kind)
			snprintf(name, sizeof(name), "%.*s",
				 (int)strcspn(kind + 1, ".["), kind + 1);
		t = sv_target_new("relation_output", tid, plan_id, "pipeline",
				  path, name, step, -1);
	} else {
		t = json_incref((json_t *)plan_target);
	}
	json_t *rec = sv_coverage_record_new(
		t, "extension_function", "required",
		"registered helper calls in this node require adapter "
		"function-extension coverage",
		"uncovered", err->message);
	json_decref(t);
	json_t *a = json_array();
	json_array_append_new(a, rec);
	char *d = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	sv_error_set_details(err, d);
	free(d);
	return err;
}

/* ---- GET /v1/info ---- */

#define INFO_PLAN "streamvisor:capabilities"

/* Rows named "<family>:<name>": the capability a family's row answers. */
static const struct {
	const char *prefix; /* "family:name" (exact) or "family:" (any) */
	const char *cap, *kind;
} families[] = {
	{"substrait_rel:filter", "row_filter", "relation_output"},
	{"operator:filter", "row_filter", "relation_output"},
	{"substrait_rel:aggregate", "stateful_window_support",
	 "relation_output"},
	{"substrait_rel:aggregate_distinct", "stateful_window_support",
	 "relation_output"},
	{"substrait_rel:window", "stateful_window_support", "relation_output"},
	{"operator:window", "stateful_window_support", "relation_output"},
	{"operator:window:global", "stateful_window_support",
	 "relation_output"},
	{"operator:dedup", "stateful_window_support", "relation_output"},
	{"substrait_rel:join", "stateful_join_support", "relation_output"},
	{"substrait_rel:cross", "stateful_join_support", "relation_output"},
	{"substrait_rel:set", "stateful_join_support", "relation_output"},
	{"operator:join", "stateful_join_support", "relation_output"},
	{"substrait_rel:sort", "ordered_execution", "relation_output"},
	{"substrait_rel:fetch", "ordered_execution", "relation_output"},
	{"operator:order", "ordered_execution", "relation_output"},
	{"substrait_rel:read", "source_offset_tracking", "read_root"},
	{"substrait_rel:write", "sink_commit_guarantee", "relation_output"},
	{"substrait_expression:window_function", "ordered_execution",
	 "window_expression"},
	{"substrait_type:decimal", "decimal_semantics", "field"},
	{"substrait_type:struct", "variant_semantics", "field"},
	{"substrait_type:list", "variant_semantics", "field"},
	{"substrait_type:map", "variant_semantics", "field"},
	{"substrait_type:", "null_semantics", "field"},
	{"substrait_expression:", "null_semantics", "scalar_expression"},
	{"substrait_rel:", "extension_function", "relation_output"},
	{"substrait_function:", "extension_function", "scalar_expression"},
	{"function:", "extension_function", "scalar_expression"},
	{"operator:", "null_semantics", "relation_output"},
	{"plan_ingress:", "extension_function", "plan"},
	{"substrait_literal:", "null_semantics", "scalar_expression"},
	{"substrait_read:", "source_offset_tracking", "read_root"},
	{"function_option:", "extension_function", "scalar_expression"},
	{"substrait_field:", "extension_function", "plan"},
	{"substrait_plan:", "extension_function", "plan"},
	{"substrait_advanced_extension:", "extension_function", "plan"},
};

static json_t *named_record(const char *plan, const char *name,
			    const char *status, const char *reason)
{
	const char *cap = NULL, *kind = "plan";
	if (sv_coverage_capability_known(name)) {
		cap = name;
	} else {
		for (size_t i = 0; !cap && i < SV_ARRAY_LEN(families); i++) {
			size_t n = strlen(families[i].prefix);
			bool any = families[i].prefix[n - 1] == ':';
			if (any ? !strncmp(name, families[i].prefix, n)
				: !strcmp(name, families[i].prefix)) {
				cap = families[i].cap;
				kind = families[i].kind;
			}
		}
	}
	if (!cap)
		return NULL;
	const char *state = status && !strcmp(status, "partial")
		? "partially_covered"
		: status;
	char *tid = NULL, *path = NULL;
	if (!strcmp(kind, "plan")) {
		tid = sv_strdup(plan);
		path = sv_strdup("capabilities");
	} else if (asprintf(&tid, "%s:target:%s", plan, name) < 0 ||
		   asprintf(&path, "capabilities/%s", name) < 0) {
		abort();
	}
	json_t *t = sv_target_new(kind, tid, plan, "adapter-capabilities", path,
				  name, -1, -1);
	json_t *rec = sv_coverage_record_new(
		t, cap, "required", "a plan that contains it needs it", state,
		state && strcmp(state, "covered") ? reason : NULL);
	json_decref(t);
	free(tid);
	free(path);
	return rec;
}

json_t *sv_coverage_record(const char *name, const char *status,
			   const char *reason)
{
	return named_record(INFO_PLAN, name, status, reason);
}

sv_error_t *sv_coverage_refuse(const char *name, const char *reason,
			       const char *field, const char *message)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char plan[80];
	snprintf(plan, sizeof(plan), "plan:unavailable:execute:%lld",
		 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	json_t *a = json_array();
	json_t *rec = named_record(plan, name, "uncovered", reason);
	if (rec)
		json_array_append_new(a, rec);
	char *details = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	sv_error_t *err = sv_error_new(SV_ERR_COVERAGE, "%s", message);
	sv_error_set_field(err, field);
	sv_error_set_details(err, details);
	free(details);
	return err;
}

/* ---- parallelism (docs/parallelism.md) ---- */

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

/* A join at parallelism > 1: task p joins left partition p with right
 * partition p, which is right only when both topics are partitioned by
 * the join key (one column each side). */
static sv_error_t *join_parallel_check(const Streamvisor__JobSpec *js, size_t i,
				       const Streamvisor__Join *j)
{
	char field[96], msg[640];
	const char *why = NULL;
	const Streamvisor__Source *l = js->source, *r = j->source;
	if (j->n_on_left != 1) {
		snprintf(field, sizeof(field), "pipeline[%zu].join.on", i);
		why = "the join has more than one key column";
	} else if (l->n_partitioned_by != 1 ||
		   strcmp(l->partitioned_by[0], j->on_left[0])) {
		snprintf(field, sizeof(field), "source.partitioned_by");
		why = "source.partitioned_by is not the left join key";
	} else if (!r || r->n_partitioned_by != 1 ||
		   strcmp(r->partitioned_by[0], j->on_right[0])) {
		snprintf(field, sizeof(field),
			 "pipeline[%zu].join.source.partitioned_by", i);
		why = "the join source's partitioned_by is not the right join "
		      "key";
	}
	if (!why)
		return NULL;
	snprintf(msg, sizeof(msg),
		 "the join at pipeline[%zu] cannot run at parallelism %d: %s. "
		 "Each task joins partition p of one input with partition p "
		 "of the other, so both topics must be keyed by the join key "
		 "(declare source.partitioned_by [\"%s\"] and "
		 "pipeline[%zu].join.source.partitioned_by [\"%s\"], both "
		 "topics with the same partition count), or use parallelism 1",
		 i, js->parallelism, why, j->n_on_left ? j->on_left[0] : "?", i,
		 j->n_on_right ? j->on_right[0] : "?");
	return sv_coverage_refuse(
		"stateful_join_support",
		"at parallelism > 1 a join needs co-partitioned inputs; there "
		"is no repartitioning for joins",
		field, msg);
}

sv_error_t *sv_coverage_parallel_check(const sv_jobspec_t *spec)
{
	const Streamvisor__JobSpec *js = spec->msg;
	if (js->parallelism <= 1)
		return NULL;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		const Streamvisor__Step *st = js->pipeline[i];
		if (st->step_case == STREAMVISOR__STEP__STEP_JOIN) {
			sv_error_t *err = join_parallel_check(js, i, st->join);
			if (err)
				return err;
			continue;
		}
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
		/* the first such step is repartitioned through an internal
		 * topic when this build can (docs/repartition.md) */
		char why[256];
		bool refused = sv_stages_refused(spec, (int)i, why,
						 sizeof(why));
		if (!refused) {
			/* and the stage specs can be made (the event-time
			 * column still there at the split) */
			sv_jobspec_t *s0, *s1;
			sv_error_t *err = sv_stages_derive(spec, "submit", &s0,
							   &s1);
			sv_jobspec_destroy(s0);
			sv_jobspec_destroy(s1);
			if (!err)
				return NULL;
			snprintf(why, sizeof(why), "%s", err->message);
			sv_error_destroy(err);
		}
		char field[64], msg[768];
		snprintf(field, sizeof(field), "pipeline[%zu].%s", i, what);
		snprintf(msg, sizeof(msg),
			 "the %s at pipeline[%zu] is keyed on columns that do "
			 "not include source.partitioned_by%s, and at "
			 "parallelism %d it cannot be repartitioned: %s "
			 "(declare source.partitioned_by, or use parallelism "
			 "1)",
			 what, i,
			 js->source->n_partitioned_by ? "" : " (none declared)",
			 js->parallelism, why);
		return sv_coverage_refuse(
			"stateful_window_support",
			"at parallelism > 1 a keyed step runs inside a task "
			"when its key follows source.partitioned_by, and "
			"after a repartition through an internal topic "
			"otherwise; this one cannot be repartitioned",
			field, msg);
	}
	return NULL;
}

json_t *sv_coverage_info(const sv_coverage_env_t *env)
{
	json_t *recs = json_array();
	json_t *notes = json_object();
	json_t *pt = sv_target_new("plan", INFO_PLAN, INFO_PLAN,
				   "adapter-capabilities", "capabilities",
				   "any plan", -1, -1);
	json_t *incql = json_array(), *draft = json_array();
	for (size_t i = 0; i < SV_ARRAY_LEN(caps); i++) {
		const cap_t *c = &caps[i];
		const char *state = c->state, *msg = c->note;
		if (env->dev_cluster &&
		    !strcmp(c->name, "sink_commit_guarantee")) {
			state = "partially_covered";
			msg = "the 'default' cluster is the embedded "
			      "development cluster (librdkafka's mock), which "
			      "does not filter aborted transactions: "
			      "read_committed readers may see them";
		}
		json_array_append_new(c->draft ? draft : incql,
				      json_string(c->name));
		json_t *rec = sv_coverage_record_new(
			pt, c->name, "required",
			c->draft ? "a streaming capability of RFC 048 (Draft "
				   "vocabulary, not yet in IncQL's "
				   "AdapterRequirementCapability enum)"
				 : "a capability of IncQL's "
				   "AdapterRequirementCapability enum",
			state, strcmp(state, "covered") ? msg : NULL);
		json_array_append_new(recs, rec);
		if (c->note)
			json_object_set_new(notes, c->name,
					    json_string(c->note));
	}
	static const struct {
		const char *op, *cap, *state, *why;
	} ops[] = {
		{"filter", "row_filter", "covered", NULL},
		{"window", "stateful_window_support", "covered", NULL},
		{"dedup", "stateful_window_support", "covered", NULL},
		{"window:global", "stateful_window_support", "covered", NULL},
		{"order", "ordered_execution", "covered", NULL},
		{"join", "stateful_join_support", "covered", NULL},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(ops); i++) {
		char tid[96], path[64];
		snprintf(tid, sizeof(tid), INFO_PLAN ":target:operator:%s",
			 ops[i].op);
		snprintf(path, sizeof(path), "capabilities/operator/%s",
			 ops[i].op);
		json_t *t = sv_target_new("relation_output", tid, INFO_PLAN,
					  "adapter-capabilities", path,
					  ops[i].op, -1, -1);
		json_array_append_new(
			recs,
			sv_coverage_record_new(
				t, ops[i].cap, "required",
				"a pipeline step of this kind needs it",
				ops[i].state, ops[i].why));
		json_decref(t);
	}
	for (size_t i = 0; i < sv_func_count(); i++) {
		char tid[160], path[128];
		snprintf(tid, sizeof(tid), INFO_PLAN ":target:function:%s",
			 sv_func_name(i));
		snprintf(path, sizeof(path), "capabilities/function/%s",
			 sv_func_name(i));
		json_t *t = sv_target_new("scalar_expression", tid, INFO_PLAN,
					  "adapter-capabilities", path,
					  sv_func_name(i), -1, -1);
		json_array_append_new(
			recs,
			sv_coverage_record_new(
				t, "extension_function", "required",
				"an expression calling this registry "
				"function needs it",
				"covered", NULL));
		json_decref(t);
	}
	sv_substrait_coverage_rows(recs); /* plan_ingress:substrait and the
					   * Substrait rel/function/type rows */
	json_decref(pt);
	return json_pack(
		"{s:o, s:{s:o, s:o, s:s}, s:o}", "capabilities", recs,
		"vocabulary", "incql", incql, "rfc048_draft", draft, "note",
		"the rfc048_draft names come from IncQL RFC 048, which is "
		"Draft: they are not yet values of IncQL's "
		"AdapterRequirementCapability enum and may change",
		"notes", notes);
}
