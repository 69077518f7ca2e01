/* distributed.c — the supervisor's side of distributed mode
 * (docs/cluster.md; the Kafka side is cluster/dist.c).
 *
 * sv_supervisor_start_dist starts the job registry once HTTP is bound (the
 * node's URL is known then). A submit on this node writes the job to the
 * registry first and creates it after the broker acknowledged, so a job
 * that exists anywhere is in the registry; the registry's reader posts
 * every job record as a submit command carrying the record's id
 * (sv_supervisor_adopt): the supervisor thread creates the job with that
 * id, or does nothing when it has it. A cancel is written as the job's
 * record with target "cancelled" before the node cancels, and every node
 * that reads it cancels its copy (a command marked replicated, which is
 * not written back). What distributed mode runs is
 * checked at submit (sv_dist_check_spec): a kafka source read as a group
 * member (parallelism members per node), filter, select, window and
 * dedup steps; window and dedup state moves between nodes through the
 * job's state topic (worker.c), so those need exactly_once, parallelism 1
 * and steps keyed by the declared source.partitioned_by (one task per
 * partition). Streams and bounded jobs (stateless), whose end offsets the
 * leader fixes once, at submit, in the job's registry record
 * (sv_dist_bound_job). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster/dist.h"
#include "cluster/status.h"
#include "core/log.h"
#include "core/util.h"
#include "supervisor/metrics.h"
#include "supervisor/observe.h"
#include "ingress/spec.h"
#include "ingress/stages.h"
#include "supervisor/supervisor_int.h"

sv_error_t *sv_dist_check_spec(const sv_supervisor_t *sv,
			       const sv_jobspec_t *spec)
{
	if (!sv->conf.dist.name)
		return NULL;
	const Streamvisor__JobSpec *js = spec->msg;
	if (strcmp(js->source->kind, "kafka"))
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "distributed mode runs kafka sources "
				     "only, not '%s'",
				     js->source->kind),
			"source.kind");
	bool keyed = false;
	int first_keyed = -1;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		Streamvisor__Step__StepCase k = js->pipeline[i]->step_case;
		if (k == STREAMVISOR__STEP__STEP_FILTER ||
		    k == STREAMVISOR__STEP__STEP_SELECT)
			continue;
		char field[64];
		snprintf(field, sizeof(field), "pipeline[%zu]", i);
		if (sv_jobspec_bounded(spec))
			return sv_error_set_field(
				sv_error_new(SV_ERR_COVERAGE,
					     "distributed mode runs bounded "
					     "jobs of stateless steps (filter, "
					     "select) only: a bounded job's "
					     "final windows fire at the end of "
					     "each partition, on whichever "
					     "node finishes it, which is not "
					     "built for state that moves "
					     "between nodes (docs/cluster.md)"),
				field);
		if (k == STREAMVISOR__STEP__STEP_WINDOW ||
		    k == STREAMVISOR__STEP__STEP_DEDUP) {
			keyed = true;
			if (first_keyed < 0)
				first_keyed = (int)i;
			continue;
		}
		return sv_error_set_field(
			sv_error_new(SV_ERR_COVERAGE,
				     "distributed mode runs filter, select, "
				     "window and dedup steps; a %s step is "
				     "not distributed yet (docs/cluster.md)",
				     k == STREAMVISOR__STEP__STEP_JOIN
					     ? "join"
					     : "order"),
			field);
	}
	if (!keyed)
		return NULL;
	if (sv_jobspec_parallelism(spec) != 1)
		return sv_error_set_field(
			sv_error_new(SV_ERR_COVERAGE,
				     "distributed mode moves the state of "
				     "pipeline[%d] between nodes for one "
				     "member per node (parallelism 1); "
				     "parallelism %d runs stateless jobs "
				     "only: more nodes give more members",
				     first_keyed, sv_jobspec_parallelism(spec)),
			"parallelism");
	/* task state moves between nodes through the state topic, inside
	 * the checkpoint's transaction */
	if (strcmp(js->delivery, "exactly_once"))
		return sv_error_set_field(
			sv_error_new(SV_ERR_COVERAGE,
				     "distributed mode moves window and dedup "
				     "state between nodes inside the "
				     "checkpoint's transaction: such a job "
				     "needs delivery exactly_once"),
			"delivery");
	/* one task per partition: every keyed step must follow the
	 * source's partitioning, as at parallelism > 1 (no repartition
	 * across nodes) */
	Streamvisor__JobSpec as_parallel = *js;
	as_parallel.parallelism = 2;
	const char *key;
	int at = sv_stages_split_at(&as_parallel, &key);
	if (at >= 0) {
		char field[64];
		snprintf(field, sizeof(field), "pipeline[%d]", at);
		return sv_error_set_field(
			sv_error_new(SV_ERR_COVERAGE,
				     "distributed mode runs one task per "
				     "source partition: the keyed step must "
				     "follow source.partitioned_by (declare "
				     "it, keyed by the step's key%s%s)",
				     key ? ", e.g. " : "", key ? key : ""),
			field);
	}
	return NULL;
}

static bool terminal_name(const char *st)
{
	return !strcmp(st, "completed") || !strcmp(st, "failed") ||
		!strcmp(st, "cancelled");
}

void sv_dist_restart_seen(sv_supervisor_t *sv, const char *job_id,
			  int64_t restart)
{
	pthread_mutex_lock(&sv->lock);
	if (sv->dist_restarts)
		json_object_set_new(sv->dist_restarts, job_id,
				    json_integer(restart));
	pthread_mutex_unlock(&sv->lock);
}

/* A replicated action on this node's copy; "not here" and "not in a
 * state for it" are nothing to do (the record is the cluster's word). */
static sv_error_t *act(sv_supervisor_t *sv, const char *job_id, sv_action_t a,
		       bool final_wm, int64_t timeout_ms)
{
	cmd_t c = {.type = SV_CMD_ACTION,
		   .id = job_id,
		   .replicated = true,
		   .u.act = {.action = a,
			     .final_watermark = final_wm,
			     .timeout_ms = timeout_ms,
			     .from_checkpoint = -1}};
	char *json = NULL;
	sv_error_t *err = sv_call(sv, &c, &json);
	free(json);
	if (err &&
	    (err->category == SV_ERR_NOT_FOUND ||
	     err->category == SV_ERR_CONFLICT)) {
		sv_error_destroy(err);
		err = NULL;
	}
	return err;
}

/* The job's state on this node, or NULL (not here); the caller frees. */
static char *local_state(sv_supervisor_t *sv, const char *job_id)
{
	char *json = NULL;
	sv_error_t *err = sv_supervisor_status(sv, job_id, &json);
	if (err) {
		sv_error_destroy(err);
		return NULL;
	}
	json_t *o = json_loads(json, 0, NULL);
	free(json);
	const char *st = json_string_value(json_object_get(o, "state"));
	char *r = st ? sv_strdup(st) : NULL;
	json_decref(o);
	return r;
}

/* A record's `end_offsets` (an array, index = partition) into *ends (the
 * caller's); returns the count, 0 when absent or not all integers. */
static size_t record_ends(const json_t *a, int64_t **ends)
{
	*ends = NULL;
	size_t n = json_is_array(a) ? json_array_size(a) : 0;
	for (size_t i = 0; i < n; i++)
		if (!json_is_integer(json_array_get(a, i)) ||
		    json_integer_value(json_array_get(a, i)) < 0)
			return 0;
	if (!n)
		return 0;
	*ends = sv_calloc(n, sizeof(**ends));
	for (size_t i = 0; i < n; i++)
		(*ends)[i] = json_integer_value(json_array_get(a, i));
	return n;
}

/* Registry thread: a job record to this node's copy. */
static sv_error_t *apply_record(void *opaque, const json_t *rec)
{
	sv_supervisor_t *sv = opaque;
	const char *id = json_string_value(json_object_get(rec, "id"));
	const char *spec = json_string_value(json_object_get(rec, "spec"));
	const char *target = json_string_value(json_object_get(rec, "target"));
	if (!target)
		target = "running";
	char *st = local_state(sv, id);
	sv_error_t *err = NULL;
	if (!strcmp(target, "deleted")) {
		if (st && !terminal_name(st))
			err = act(sv, id, SV_ACTION_CANCEL, false, 0);
		if (st && !err) {
			cmd_t c = {.type = SV_CMD_DELETE,
				   .id = id,
				   .replicated = true};
			char *json = NULL;
			err = sv_call(sv, &c, &json);
			free(json);
			if (err && err->category == SV_ERR_NOT_FOUND) {
				sv_error_destroy(err);
				err = NULL;
			}
		}
	} else if (!st) {
		int64_t *ends = NULL;
		size_t nends = record_ends(json_object_get(rec, "end_offsets"),
					   &ends);
		err = sv_supervisor_adopt_as(sv, id, spec, target, ends, nends);
		free(ends);
	} else if (!strcmp(target, "cancelled")) {
		err = act(sv, id, SV_ACTION_CANCEL, false, 0);
	} else if (!strcmp(target, "draining")) {
		if (!strcmp(st, "running") || !strcmp(st, "lagging"))
			err = act(sv, id, SV_ACTION_DRAIN,
				  json_is_true(json_object_get(
					  rec, "final_watermark")),
				  json_integer_value(json_object_get(
					  rec, "drain_timeout_ms")));
	} else if (!strcmp(target, "running")) {
		json_int_t rs = json_integer_value(
			json_object_get(rec, "restart"));
		pthread_mutex_lock(&sv->lock);
		json_int_t done = json_integer_value(
			json_object_get(sv->dist_restarts, id));
		pthread_mutex_unlock(&sv->lock);
		if (!strcmp(st, "checkpointed")) {
			err = act(sv, id, SV_ACTION_RESUME, false, 0);
		} else if (rs > 0 && done != rs && !terminal_name(st)) {
			/* a restart record, once per node */
			cmd_t c = {.type = SV_CMD_ACTION,
				   .id = id,
				   .replicated = true,
				   .u.act = {.action = SV_ACTION_RESTART,
					     .from_checkpoint = -1,
					     .ignore_state = json_is_true(
						     json_object_get(
							     rec,
							     "ignore_state"))}};
			char *json = NULL;
			err = sv_call(sv, &c, &json);
			free(json);
			if (err && err->category == SV_ERR_CONFLICT) {
				sv_error_destroy(err);
				err = NULL;
			}
		}
		if (rs > 0)
			sv_dist_restart_seen(sv, id, rs);
	}
	free(st);
	return err;
}

/* ---- the status topic: this node's records ---- */

static json_t *int_array_of(json_t *parts)
{
	json_t *a = json_array();
	size_t k;
	json_t *p;
	json_array_foreach (parts, k, p)
		json_array_append_new(
			a,
			json_integer(json_integer_value(
				json_object_get(p, "partition"))));
	return a;
}

/* The source partitions of the job's latest committed checkpoint here
 * (a new array). */
static json_t *final_parts(sv_supervisor_t *sv, const char *id)
{
	json_t *a = json_array();
	char *json = NULL;
	sv_error_t *err = sv_supervisor_get(sv, id, SV_VIEW_CHECKPOINTS,
					    "limit=5", &json);
	if (err) {
		sv_error_destroy(err);
		return a;
	}
	json_t *o = json_loads(json, 0, NULL);
	free(json);
	size_t k;
	json_t *ck;
	json_array_foreach (json_object_get(o, "checkpoints"), k, ck) {
		const char *st = json_string_value(
			json_object_get(ck, "status"));
		if (!st || strcmp(st, "committed"))
			continue;
		size_t pk;
		json_t *p;
		json_array_foreach (json_object_get(ck, "offsets"), pk, p) {
			const char *in = json_string_value(
				json_object_get(p, "input"));
			if (in && !strcmp(in, "source"))
				json_array_append(
					a, json_object_get(p, "partition"));
		}
		break;
	}
	json_decref(o);
	return a;
}

/* Status thread, on a node that does not lead: bring each local copy to
 * its record's target once more. A record applied while the copy could
 * not take it (a drain while its attempt was still starting, a resume
 * while its drain was still ending) is taken now; the states differ only
 * in what the action itself changes. The leader is left alone: it changes
 * its copy before its own record is read back. */
static void reconcile(sv_supervisor_t *sv, json_t *list, json_t *recs)
{
	size_t k;
	json_t *j;
	json_array_foreach (json_object_get(list, "jobs"), k, j) {
		const char *id = json_string_value(json_object_get(j, "id"));
		const char *st = json_string_value(json_object_get(j, "state"));
		json_t *rec = id ? json_object_get(recs, id) : NULL;
		const char *target = json_string_value(
			json_object_get(rec, "target"));
		if (!st || !target)
			continue;
		bool live = !strcmp(st, "running") || !strcmp(st, "lagging");
		if ((!strcmp(target, "cancelled") && !terminal_name(st)) ||
		    (!strcmp(target, "draining") && live) ||
		    (!strcmp(target, "running") &&
		     !strcmp(st, "checkpointed")) ||
		    !strcmp(target, "deleted")) {
			sv_error_t *err = apply_record(sv, rec);
			if (err) {
				sv_logctx_t lc = {id, 0};
				sv_log(&lc, SV_LOG_WARN, "cluster",
				       "bringing the job to '%s': %s", target,
				       err->message);
				sv_error_destroy(err);
			}
		}
	}
}

/* Status thread: node/<id> and member/<job>/<node>-t0. */
static json_t *collect(void *opaque)
{
	sv_supervisor_t *sv = opaque;
	/* the records before the states: a state read after a record is at
	 * least as new as that record's drain */
	json_t *recs = sv_dist_records(sv->dist);
	cmd_t c = {.type = SV_CMD_LIST, .full = true};
	char *json = NULL;
	sv_error_t *err = sv_call(sv, &c, &json);
	if (err) {
		sv_error_destroy(err);
		json_decref(recs);
		return NULL;
	}
	json_t *list = json_loads(json, 0, NULL);
	free(json);
	const char *node = sv->conf.dist.node_id;
	json_t *out = json_object();
	json_t *members = json_array(), *here = json_array();
	size_t k;
	json_t *j;
	json_array_foreach (json_object_get(list, "jobs"), k, j) {
		const char *id = json_string_value(json_object_get(j, "id"));
		const char *state = json_string_value(
			json_object_get(j, "state"));
		if (!id || !state)
			continue;
		json_t *parts = json_object_get(j, "partitions");
		json_t *ids = int_array_of(parts);
		bool checkpointed = !strcmp(state, "checkpointed");
		/* a drained member has stopped reading: its final checkpoint
		 * says which partitions it covers */
		if (checkpointed) {
			json_decref(ids);
			ids = final_parts(sv, id);
		}
		json_t *positions = json_array();
		size_t pk;
		json_t *p;
		json_array_foreach (parts, pk, p)
			json_array_append_new(
				positions,
				json_pack("{s:O?, s:O?, s:O?}", "partition",
					  json_object_get(p, "partition"),
					  "next_offset",
					  json_object_get(p, "next_offset"),
					  "lag_records",
					  json_object_get(p, "lag_records")));
		json_t *lck = json_object_get(j, "last_checkpoint");
		char member[200], key[400];
		snprintf(member, sizeof(member), "%s-t0", node);
		snprintf(key, sizeof(key), "member/%s/%s", id, member);
		json_t *lag = json_object_get(json_object_get(j, "lag"),
					      "records");
		json_object_set_new(
			out, key,
			json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:O?, s:O?, "
				  "s:b, s:b, s:s?}",
				  "job", id, "node", node, "member", member,
				  "state", state, "partitions", ids,
				  "positions", positions, "lag_records",
				  lag ? lag : json_null(), "last_checkpoint",
				  json_is_object(lck)
					  ? json_object_get(lck, "id")
					  : json_null(),
				  "draining", !strcmp(state, "draining"),
				  "checkpointed", checkpointed, "topic",
				  json_string_value(json_object_get(
					  json_array_get(parts, 0), "topic"))));
		json_object_set_new(
			json_object_get(out, key), "version",
			json_integer(json_integer_value(json_object_get(
				json_object_get(recs, id), "version"))));
		if (!terminal_name(state) && !checkpointed)
			json_array_append_new(members, json_string(member));
		if (!terminal_name(state))
			json_array_append_new(here, json_string(id));
	}
	size_t njobs = json_array_size(json_object_get(list, "jobs"));
	char *lnode = NULL;
	int64_t epoch = 0;
	bool leads = sv_dist_leader(sv->dist, &lnode, NULL, &epoch);
	free(lnode);
	if (!leads)
		reconcile(sv, list, recs);
	json_decref(list);
	json_decref(recs);
	pthread_mutex_lock(&sv->lock);
	if (sv->dist_attempts)
		json_object_update(out, sv->dist_attempts);
	pthread_mutex_unlock(&sv->lock);
	char key[200];
	snprintf(key, sizeof(key), "node/%s", node);
	json_object_set_new(
		out, key,
		json_pack("{s:s, s:s, s:b, s:I, s:I, s:o, s:o}", "node", node,
			  "url", sv->dist_url ? sv->dist_url : "", "leader",
			  leads, "epoch", (json_int_t)(leads ? epoch : 0),
			  "jobs", (json_int_t)njobs, "members", members,
			  "job_ids", here));
	return out;
}

sv_error_t *sv_supervisor_start_dist(sv_supervisor_t *sv, const char *url)
{
	const sv_distconf_t *dc = &sv->conf.dist;
	if (!dc->name)
		return NULL;
	const sv_cluster_t *kafka = sv_svconf_cluster(&sv->conf, dc->cluster);
	if (!kafka)
		return sv_error_set_field(
			sv_error_new(SV_ERR_CONFIG,
				     "distributed.cluster names cluster "
				     "profile '%s', which the config does not "
				     "define",
				     dc->cluster),
			"distributed.cluster");
	if (kafka->dev_embedded)
		return sv_error_set_field(
			sv_error_new(SV_ERR_CONFIG,
				     "distributed mode needs a real Kafka "
				     "cluster, not the embedded development "
				     "one"),
			"distributed.cluster");
	const char *my_url = dc->advertised_url ? dc->advertised_url : url;
	sv_dist_conf_t c = {
		.name = dc->name,
		.node_id = dc->node_id,
		.url = my_url,
		.kafka = kafka,
		.replication_factor = (int)dc->replication_factor,
		.apply_record = apply_record,
		.opaque = sv,
		.session_timeout_ms = (int)dc->session_timeout_ms,
	};
	sv_obs_set_node(dc->node_id);
	sv->dist_parts = json_object();
	sv->dist_restarts = json_object();
	sv->dist_url = sv_strdup(my_url ? my_url : "");
	sv_dist_t *d = NULL;
	sv_error_t *err = sv_dist_start(&c, &d);
	if (err)
		return err;
	pthread_mutex_lock(&sv->lock);
	sv->dist = d;
	pthread_mutex_unlock(&sv->lock);
	sv_status_conf_t sc = {
		.name = dc->name,
		.node_id = dc->node_id,
		.kafka = kafka,
		.replication_factor = (int)dc->replication_factor,
		.collect = collect,
		.opaque = sv,
	};
	sv_status_t *st = NULL;
	if ((err = sv_status_start(&sc, &st)))
		return err;
	pthread_mutex_lock(&sv->lock);
	sv->status = st;
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

sv_error_t *sv_dist_publish_ext(sv_supervisor_t *sv, const char *job_id,
				const sv_jobspec_t *spec, const char *target,
				const json_t *extra)
{
	if (!sv->dist)
		return NULL;
	char *json = sv_jobspec_to_json(spec);
	json_t *x = extra ? json_deep_copy(extra) : json_object();
	/* member records say which version they report on: a checkpointed
	 * of the drain before a resume does not count for the next drain */
	json_object_set_new(x, "version",
			    json_integer(sv_dist_version(sv, job_id) + 1));
	json_object_set_new(x, "name", json_string(spec->msg->name));
	json_object_set_new(x, "plan_id", json_string(spec->plan_id));
	/* a bounded job's end offsets stay in every later record */
	json_t *prev = sv_dist_job_record(sv->dist, job_id);
	json_t *ends = json_object_get(prev, "end_offsets");
	if (ends && !json_object_get(x, "end_offsets"))
		json_object_set(x, "end_offsets", ends);
	json_decref(prev);
	sv_error_t *err = sv_dist_publish_record(sv->dist, job_id, json, target,
						 x);
	json_decref(x);
	free(json);
	return err;
}

sv_error_t *sv_dist_publish(sv_supervisor_t *sv, const char *job_id,
			    const sv_jobspec_t *spec, const char *target)
{
	return sv_dist_publish_ext(sv, job_id, spec, target, NULL);
}

sv_error_t *sv_dist_publish_submit(sv_supervisor_t *sv, const sv_job_t *job)
{
	json_t *ends = sv_dist_ends_json(job);
	json_t *x = ends ? json_pack("{s:o}", "end_offsets", ends) : NULL;
	sv_error_t *err = sv_dist_publish_ext(sv, job->id, job->spec, "running",
					      x);
	json_decref(x);
	return err;
}

int64_t sv_dist_version(sv_supervisor_t *sv, const char *job_id)
{
	if (!sv->dist)
		return 0;
	json_t *r = sv_dist_job_record(sv->dist, job_id);
	int64_t n = json_integer_value(json_object_get(r, "version"));
	json_decref(r);
	return n;
}

bool sv_dist_same_submit(const sv_supervisor_t *sv, const sv_job_t *job,
			 const sv_jobspec_t *spec)
{
	return sv->dist && !strcmp(job->spec->plan_id, spec->plan_id);
}

/* ---- the cluster's view (status topic) ---- */

static bool node_alive(json_t *nodes, const char *node)
{
	char key[200];
	snprintf(key, sizeof(key), "node/%s", node);
	json_t *n = json_object_get(nodes, key);
	return n &&
		json_integer_value(json_object_get(n, "age_ms")) <
		SV_STATUS_ALIVE_MS;
}

/* The job's source topic, from its registry record (the caller's), or
 * NULL. */
static char *job_topic(sv_supervisor_t *sv, const char *id)
{
	json_t *r = sv_dist_job_record(sv->dist, id);
	const char *spec = json_string_value(json_object_get(r, "spec"));
	json_t *o = spec ? json_loads(spec, 0, NULL) : NULL;
	const char *t = json_string_value(
		json_object_get(json_object_get(o, "source"), "topic"));
	char *out = t ? sv_strdup(t) : NULL;
	json_decref(o);
	json_decref(r);
	return out;
}

/* The job as the member records of live nodes say: {state, checkpointed,
 * partitions_total, partitions: [{partition, node, member}], members}.
 * *state_out: "checkpointed" when every partition reported its final
 * checkpoint, "draining" when some member still drains or not every
 * partition reported, else NULL. */
static json_t *job_view(sv_supervisor_t *sv, const char *id,
			const char **state_out)
{
	char prefix[300];
	snprintf(prefix, sizeof(prefix), "member/%s/", id);
	json_t *recs = sv_status_view(sv->status, prefix);
	json_t *nodes = sv_status_view(sv->status, "node/");
	json_t *rec = sv_dist_job_record(sv->dist, id);
	int64_t seq = json_integer_value(json_object_get(rec, "version"));
	const char *target = json_string_value(json_object_get(rec, "target"));
	bool draining = target && !strcmp(target, "draining");
	json_decref(rec);
	json_t *members = json_array(), *parts = json_array();
	json_t *covered = json_object(); /* partition → reported final */
	int maxp = -1, n_live = 0, n_ck = 0, n_drain = 0;
	const char *topic = NULL;
	const char *k;
	json_t *m;
	json_object_foreach (recs, k, m) {
		const char *node = json_string_value(
			json_object_get(m, "node"));
		bool alive = node && node_alive(nodes, node);
		json_object_set_new(m, "alive", json_boolean(alive));
		json_array_append(members, m);
		if (!alive)
			continue;
		n_live++;
		const char *st = json_string_value(json_object_get(m, "state"));
		/* a checkpointed of an earlier drain is not this drain's */
		bool ck = draining && st && !strcmp(st, "checkpointed") &&
			json_integer_value(json_object_get(m, "version")) ==
				seq;
		n_ck += ck;
		n_drain += st && !strcmp(st, "draining");
		if (!topic)
			topic = json_string_value(json_object_get(m, "topic"));
		size_t pk;
		json_t *p;
		json_array_foreach (json_object_get(m, "partitions"), pk, p) {
			int pn = (int)json_integer_value(p);
			if (pn > maxp)
				maxp = pn;
			if (ck && pn >= 0) {
				char pk_s[24];
				snprintf(pk_s, sizeof(pk_s), "%d", pn);
				json_object_set_new(covered, pk_s, json_true());
			}
			if (!ck)
				json_array_append_new(
					parts,
					json_pack(
						"{s:i, s:s, s:i, s:O?}",
						"partition", pn, "node", node,
						"member", 0, "member_id",
						json_object_get(m, "member")));
		}
	}
	/* every live node that has the job must have reported on it */
	int n_have = 0;
	json_object_foreach (nodes, k, m) {
		if (json_integer_value(json_object_get(m, "age_ms")) >=
		    SV_STATUS_ALIVE_MS)
			continue;
		size_t jk;
		json_t *jid;
		json_array_foreach (json_object_get(m, "job_ids"), jk, jid)
			n_have += json_is_string(jid) &&
				!strcmp(json_string_value(jid), id);
	}
	char *src_topic = topic ? NULL : job_topic(sv, id);
	if (!topic)
		topic = src_topic;
	int total = topic ? sv_status_partitions(sv->status, topic) : -1;
	if (total <= 0)
		total = maxp + 1;
	/* the partitions are 0..total-1: every one of them reported */
	bool all = total > 0 && maxp < total &&
		json_object_size(covered) == (size_t)total;
	json_decref(covered);
	const char *state = NULL;
	if (n_live && n_ck == n_live && n_live >= n_have && all)
		state = "checkpointed";
	else if (n_drain || n_ck)
		state = "draining";
	*state_out = state;
	json_t *o = json_pack(
		"{s:s?, s:b, s:i, s:o, s:o}", "state", state, "checkpointed",
		state && !strcmp(state, "checkpointed"), "partitions_total",
		total, "partitions", parts, "members", members);
	free(src_topic);
	json_decref(recs);
	json_decref(nodes);
	return o;
}

sv_error_t *sv_dist_check_resume(sv_supervisor_t *sv, const sv_job_t *job)
{
	if (!sv->dist)
		return NULL;
	const char *state = NULL;
	json_t *v = job_view(sv, job->id, &state);
	json_decref(v);
	if (state && !strcmp(state, "checkpointed"))
		return NULL;
	return sv_error_set_job(
		sv_error_new(SV_ERR_CONFLICT,
			     "job '%s' is not checkpointed on every node yet: "
			     "not every partition reported its final "
			     "checkpoint (GET /v1/jobs/%s, cluster.state)",
			     job->id, job->id),
		job->id, job->attempt);
}

sv_route_t sv_supervisor_route(sv_supervisor_t *sv, char **url, char **node)
{
	*url = *node = NULL;
	if (!sv->dist)
		return SV_ROUTE_LOCAL;
	if (sv_dist_leader(sv->dist, node, url, NULL))
		return SV_ROUTE_LOCAL;
	json_t *nodes = sv_status_view(sv->status, "node/");
	char key[200];
	snprintf(key, sizeof(key), "node/%s", *node ? *node : "");
	bool known = json_object_get(nodes, key) != NULL;
	bool alive = !known || node_alive(nodes, *node);
	json_decref(nodes);
	if (!*url || !**url || !*node ||
	    !strcmp(*node, sv->conf.dist.node_id) || !alive) {
		free(*url);
		free(*node);
		*url = *node = NULL;
		return SV_ROUTE_NONE;
	}
	return SV_ROUTE_FORWARD;
}

int64_t sv_supervisor_jobs_offset(sv_supervisor_t *sv)
{
	return sv->dist ? sv_dist_applied_offset(sv->dist) : -1;
}

sv_error_t *sv_supervisor_cluster(sv_supervisor_t *sv, char **json)
{
	*json = NULL;
	if (!sv->dist) { /* standalone: a cluster of none */
		*json = sv_json_dump(
			json_pack("{s:s, s:n, s:n, s:b, s:n, s:[]}", "mode",
				  "standalone", "cluster", "node",
				  "this_node_leads", false, "leader", "nodes"));
		return NULL;
	}
	char *lnode = NULL, *lurl = NULL;
	int64_t epoch = 0;
	bool leads = sv_dist_leader(sv->dist, &lnode, &lurl, &epoch);
	json_t *view = sv_status_view(sv->status, "node/");
	json_t *nodes = json_array();
	const char *k;
	json_t *n;
	json_object_foreach (view, k, n) {
		const char *id = json_string_value(json_object_get(n, "node"));
		json_int_t age = json_integer_value(
			json_object_get(n, "age_ms"));
		json_array_append_new(
			nodes,
			json_pack(
				"{s:s, s:O?, s:b, s:b, s:I, s:O?, s:O?, s:O?}",
				"id", id ? id : "", "url",
				json_object_get(n, "url"), "alive",
				age < SV_STATUS_ALIVE_MS, "leader",
				id && lnode && !strcmp(id, lnode), "age_ms",
				age, "jobs", json_object_get(n, "jobs"),
				"members", json_object_get(n, "members"),
				"alive_at", json_object_get(n, "at_ms")));
	}
	json_decref(view);
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:I, s:b, s:o, s:o, s:o}", "mode",
		"distributed", "cluster", sv->conf.dist.name, "node",
		sv->conf.dist.node_id, "jobs_offset",
		(json_int_t)sv_dist_applied_offset(sv->dist), "this_node_leads",
		leads, "leader",
		lnode ? json_pack("{s:s, s:s, s:I}", "node", lnode, "url",
				  lurl ? lurl : "", "epoch", (json_int_t)epoch)
		      : json_null(),
		"nodes", nodes, "registry", sv_dist_registry_json(sv->dist));
	free(lnode);
	free(lurl);
	*json = sv_json_dump(o);
	return NULL;
}

void sv_supervisor_cluster_job(sv_supervisor_t *sv, const char *id, char **json)
{
	if (!sv->dist || !*json)
		return;
	json_t *o = json_loads(*json, 0, NULL);
	if (!o)
		return;
	const char *state = NULL;
	json_t *v = job_view(sv, id, &state);
	const char *local = json_string_value(json_object_get(o, "state"));
	/* a drain is over when every partition reported, not when this
	 * node's member did */
	if (local &&
	    (!strcmp(local, "draining") || !strcmp(local, "checkpointed"))) {
		json_object_set_new(o, "node_state", json_string(local));
		json_object_set_new(o, "state",
				    json_string(state ? state : "draining"));
	}
	/* the partitions other nodes read, from their member records */
	json_t *parts = json_object_get(o, "partitions");
	size_t k;
	json_t *p;
	json_array_foreach (parts, k, p) {
		char member[200];
		snprintf(member, sizeof(member), "%s-t0",
			 sv->conf.dist.node_id);
		json_object_set_new(p, "member_id", json_string(member));
	}
	json_array_foreach (json_object_get(v, "partitions"), k, p) {
		const char *node = json_string_value(
			json_object_get(p, "node"));
		if (!node || !strcmp(node, sv->conf.dist.node_id))
			continue;
		json_object_set_new(p, "remote", json_true());
		json_array_append(parts, p);
	}
	json_object_set_new(o, "cluster", v);
	free(*json);
	*json = sv_json_dump(o);
}

/* Bounded jobs across nodes: the end offsets are fixed once, when the job
 * is first written to the registry, and every node reads them from the
 * job's record, so every member stops each partition at the same offset
 * whichever node reads it: the leader takes them when it writes the
 * job's first record (a submit on another node is forwarded to it),
 * SCALE-OUT.md §5.2. */
sv_error_t *sv_dist_bound_job(sv_supervisor_t *sv, sv_job_t *job, bool adopted,
			      const int64_t *ends, size_t nends)
{
	if (!sv->conf.dist.name || !sv_jobspec_bounded(job->spec))
		return NULL;
	if (adopted && !nends)
		return sv_error_new(SV_ERR_SUBMISSION,
				    "the registry record of bounded job '%s' "
				    "has no end_offsets",
				    job->id);
	if (nends) {
		job->end_offsets = sv_calloc(nends, sizeof(*ends));
		memcpy(job->end_offsets, ends, nends * sizeof(*ends));
		job->nend_offsets = nends;
		return NULL;
	}
	const Streamvisor__JobSpec *js = job->spec->msg;
	const sv_cluster_t *kafka = sv_svconf_cluster(&sv->conf,
						      js->source->cluster);
	if (!kafka)
		return sv_error_set_field(
			sv_error_new(SV_ERR_BINDING,
				     "cluster profile '%s' is not defined",
				     js->source->cluster),
			"source.cluster");
	sv_error_t *err = sv_dist_end_offsets(kafka, js->source->topic,
					      &job->end_offsets,
					      &job->nend_offsets);
	if (err)
		return err;
	int64_t total = 0;
	for (size_t p = 0; p < job->nend_offsets; p++)
		total += job->end_offsets[p];
	sv_logctx_t lc = {job->id, 0};
	sv_log(&lc, SV_LOG_INFO, "cluster",
	       "bounded job: end offsets of topic '%s' fixed at submit over "
	       "%zu partitions (%lld offsets in all)",
	       js->source->topic, job->nend_offsets, (long long)total);
	return NULL;
}

/* The count lives in the status topic (cluster/status.h), one record per
 * job and node, `attempts/<job>/<node>` → {job, node, window_start_ms,
 * attempts}, written only by that node by its status thread at once
 * (sv_status_kick: ~100 ms). A node's own count restarts with its
 * window; a count another node wrote before a healthy period stays until
 * its window ends. */
static int attempts_elsewhere(sv_supervisor_t *sv, const char *job_id,
			      int64_t now, int64_t window_ms)
{
	char prefix[300];
	snprintf(prefix, sizeof(prefix), "attempts/%s/", job_id);
	json_t *view = sv_status_view(sv->status, prefix);
	int n = 0;
	const char *k;
	json_t *r;
	json_object_foreach (view, k, r) {
		const char *node = json_string_value(
			json_object_get(r, "node"));
		int64_t start = json_integer_value(
			json_object_get(r, "window_start_ms"));
		if (node && strcmp(node, sv->conf.dist.node_id) &&
		    now - start < window_ms)
			n += (int)json_integer_value(
				json_object_get(r, "attempts"));
	}
	json_decref(view);
	return n;
}

int sv_dist_restart_count(sv_supervisor_t *sv, const sv_job_t *job,
			  int max_attempts, int64_t window_ms, int64_t now,
			  sv_restart_decision_t *d)
{
	if (!sv->dist)
		return 0;
	int elsewhere = attempts_elsewhere(sv, job->id, now, window_ms);
	if (d->verdict == SV_RESTART_RETRY &&
	    d->next.attempts_in_window + elsewhere >= max_attempts)
		d->verdict = SV_RESTART_EXHAUSTED;
	char key[300];
	snprintf(key, sizeof(key), "attempts/%s/%s", job->id,
		 sv->conf.dist.node_id);
	pthread_mutex_lock(&sv->lock);
	if (!sv->dist_attempts)
		sv->dist_attempts = json_object();
	json_object_set_new(sv->dist_attempts, key,
			    json_pack("{s:s, s:s, s:I, s:i}", "job", job->id,
				      "node", sv->conf.dist.node_id,
				      "window_start_ms",
				      (json_int_t)d->next.window_start_ms,
				      "attempts", d->next.attempts_in_window));
	pthread_mutex_unlock(&sv->lock);
	sv_status_kick(sv->status);
	return elsewhere;
}

json_t *sv_dist_ends_json(const sv_job_t *job)
{
	if (!job->nend_offsets)
		return NULL;
	json_t *a = json_array();
	for (size_t p = 0; p < job->nend_offsets; p++)
		json_array_append_new(a, json_integer(job->end_offsets[p]));
	return a;
}

void sv_dist_ends_load(sv_job_t *job, const json_t *a)
{
	size_t n = json_is_array(a) ? json_array_size(a) : 0;
	if (!n)
		return;
	job->end_offsets = sv_calloc(n, sizeof(*job->end_offsets));
	job->nend_offsets = n;
	for (size_t p = 0; p < n; p++)
		job->end_offsets[p] = json_integer_value(json_array_get(a, p));
}

void sv_dist_metrics(sv_supervisor_t *sv, sv_buf_t *b)
{
	if (!sv->dist)
		return;
	json_t *r = sv_dist_registry_json(sv->dist);
	sv_buf_t l;
	sv_buf_init(&l);
	sv_prom_label(&l, "node", sv->conf.dist.node_id);
	static const struct {
		const char *name, *type, *help, *key;
	} m[] = {
		{"streamvisor_cluster_leader", "gauge",
		 "1 while this node leads the streamvisor cluster",
		 "this_node_leads"},
		{"streamvisor_cluster_leader_epoch", "gauge",
		 "the newest leader epoch in the job registry", "leader_epoch"},
		{"streamvisor_cluster_elected_total", "counter",
		 "times this node became leader", "times_elected"},
		{"streamvisor_cluster_leader_writes_total", "counter",
		 "job registry records this node committed as leader",
		 "leader_writes"},
		{"streamvisor_cluster_jobs_offset", "gauge",
		 "the job registry offset this node's view is read to",
		 "jobs_offset"},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(m); i++) {
		json_t *v = json_object_get(r, m[i].key);
		double x = json_is_boolean(v) ? (json_is_true(v) ? 1 : 0)
					      : (double)json_integer_value(v);
		sv_prom_family(b, m[i].name, m[i].type, m[i].help);
		sv_prom_sample(b, m[i].name, l.data, x);
	}
	sv_buf_release(&l);
	json_decref(r);
}

void sv_dist_release(sv_supervisor_t *sv)
{
	pthread_mutex_lock(&sv->lock);
	sv_dist_t *d = sv->dist;
	sv_status_t *st = sv->status;
	sv->dist = NULL;
	sv->status = NULL;
	pthread_mutex_unlock(&sv->lock);
	/* the status thread asks the supervisor thread: first */
	sv_status_stop(st);
	sv_dist_stop(d);
	json_decref(sv->dist_parts);
	sv->dist_parts = NULL;
	json_decref(sv->dist_attempts);
	sv->dist_attempts = NULL;
	json_decref(sv->dist_restarts);
	sv->dist_restarts = NULL;
	free(sv->dist_url);
	sv->dist_url = NULL;
}
