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
 * member (parallelism members per node), stateless steps only (filter,
 * select), since task state does not move between nodes yet; streams and
 * bounded jobs, whose end offsets are fixed here once, at submit, and
 * carried in the job's registry record (sv_dist_bound_job). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/dist.h"
#include "core/log.h"
#include "core/util.h"
#include "ingress/spec.h"
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
					     "node finishes it, so its task "
					     "state would have to move between "
					     "nodes, which it does not yet "
					     "(docs/cluster.md)"),
				field);
		return sv_error_set_field(
			sv_error_new(SV_ERR_COVERAGE,
				     "distributed mode runs stateless steps "
				     "(filter, select) only: operator state "
				     "does not move between nodes yet "
				     "(docs/cluster.md)"),
			field);
	}
	return NULL;
}

static sv_error_t *apply(void *opaque, const char *job_id,
			 const char *spec_json, const char *target,
			 const int64_t *ends, size_t nends)
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
	return sv_supervisor_adopt(sv, job_id, spec_json, ends, nends);
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
			    const sv_jobspec_t *spec, const char *target,
			    const int64_t *ends, size_t nends)
{
	if (!sv->dist)
		return NULL;
	char *json = sv_jobspec_to_json(spec);
	sv_error_t *err = sv_dist_publish_job_ends(sv->dist, job_id, json,
						   target, ends, nends);
	free(json);
	return err;
}

/* Bounded jobs across nodes: the end offsets are fixed once, when the job
 * is first written to the registry, and every node reads them from the
 * job's record, so every member stops each partition at the same offset
 * whichever node reads it (SCALE-OUT.md §5.2 gives this to the leader;
 * with no leader yet, the node that accepts the submit takes them). */
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

/* The count lives in the registry topic, one record per job and node
 * (attempts/<job>/<node>, written only by that node), until the status
 * topic of SCALE-OUT.md §5.1 takes it. A node's own count restarts with
 * its window; a count another node wrote before a healthy period stays
 * until its window ends. */
int sv_dist_restart_count(sv_supervisor_t *sv, const sv_job_t *job,
			  int max_attempts, int64_t window_ms, int64_t now,
			  sv_restart_decision_t *d)
{
	if (!sv->dist)
		return 0;
	int elsewhere = sv_dist_attempts_elsewhere(sv->dist, job->id, now,
						   window_ms);
	if (d->verdict == SV_RESTART_RETRY &&
	    d->next.attempts_in_window + elsewhere >= max_attempts)
		d->verdict = SV_RESTART_EXHAUSTED;
	sv_error_t *err = sv_dist_publish_attempts(sv->dist, job->id,
						   d->next.window_start_ms,
						   d->next.attempts_in_window);
	if (err) { /* the others count without it: logged, not fatal */
		sv_logctx_t lc = {job->id, job->attempt};
		sv_log(&lc, SV_LOG_WARN, "cluster",
		       "cannot write the failed-attempt count: %s",
		       err->message);
		sv_error_destroy(err);
	}
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

void sv_dist_release(sv_supervisor_t *sv)
{
	pthread_mutex_lock(&sv->lock);
	sv_dist_t *d = sv->dist;
	sv->dist = NULL;
	pthread_mutex_unlock(&sv->lock);
	sv_dist_stop(d);
}
