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
 * member, parallelism 1 per node, filter, select, window and dedup steps;
 * window and dedup state moves between nodes through the job's state
 * topic (worker.c), so those need exactly_once and steps keyed by the
 * declared source.partitioned_by (one task per partition). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/dist.h"
#include "core/log.h"
#include "core/util.h"
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
	if (sv_jobspec_bounded(spec))
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "distributed mode does not run bounded "
				     "jobs yet"),
			"mode");
	if (sv_jobspec_parallelism(spec) != 1)
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "distributed mode runs one member per "
				     "node (parallelism 1): more nodes give "
				     "more members"),
			"parallelism");
	bool keyed = false;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		Streamvisor__Step__StepCase k = js->pipeline[i]->step_case;
		if (k == STREAMVISOR__STEP__STEP_FILTER ||
		    k == STREAMVISOR__STEP__STEP_SELECT)
			continue;
		if (k == STREAMVISOR__STEP__STEP_WINDOW ||
		    k == STREAMVISOR__STEP__STEP_DEDUP) {
			keyed = true;
			continue;
		}
		char field[64];
		snprintf(field, sizeof(field), "pipeline[%zu]", i);
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

static sv_error_t *apply(void *opaque, const char *job_id,
			 const char *spec_json, const char *target)
{
	sv_supervisor_t *sv = opaque;
	if (!strcmp(target, "cancelled")) {
		cmd_t c = {.type = SV_CMD_ACTION,
			   .id = job_id,
			   .replicated = true,
			   .u.act.action = SV_ACTION_CANCEL};
		char *json = NULL;
		sv_error_t *err = sv_call(sv, &c, &json);
		free(json);
		/* not here, or already ended: nothing to do */
		if (err &&
		    (err->category == SV_ERR_NOT_FOUND ||
		     err->category == SV_ERR_CONFLICT)) {
			sv_error_destroy(err);
			err = NULL;
		}
		return err;
	}
	return sv_supervisor_adopt(sv, job_id, spec_json);
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
	sv_dist_conf_t c = {
		.name = dc->name,
		.node_id = dc->node_id,
		.url = dc->advertised_url ? dc->advertised_url : url,
		.kafka = kafka,
		.replication_factor = (int)dc->replication_factor,
		.apply = apply,
		.opaque = sv,
	};
	sv_dist_t *d = NULL;
	sv_error_t *err = sv_dist_start(&c, &d);
	if (err)
		return err;
	pthread_mutex_lock(&sv->lock);
	sv->dist = d;
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

sv_error_t *sv_dist_publish(sv_supervisor_t *sv, const char *job_id,
			    const sv_jobspec_t *spec, const char *target)
{
	if (!sv->dist)
		return NULL;
	char *json = sv_jobspec_to_json(spec);
	sv_error_t *err = sv_dist_publish_job(sv->dist, job_id, json, target);
	free(json);
	return err;
}

void sv_dist_release(sv_supervisor_t *sv)
{
	pthread_mutex_lock(&sv->lock);
	sv_dist_t *d = sv->dist;
	sv->dist = NULL;
	pthread_mutex_unlock(&sv->lock);
	sv_dist_stop(d);
}
