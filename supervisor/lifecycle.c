/* lifecycle.c — a job's attempts and states (DESIGN.md §3): starting an
 * attempt (with the cluster profiles its drivers need), what happens when
 * it ends, applying the restart policy (the decision is the pure
 * sv_restart_decide of restart.c), and running <-> lagging. Every state
 * change goes through sv_transition(), which refuses what the lifecycle
 * table (transitions.c) does not allow, and logs and observes old state,
 * new state, reason and attempt. The operator's actions are actions.c.
 * thread: supervisor. */
#define _GNU_SOURCE
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "supervisor/drivers.h"
#include "supervisor/restart.h"
#include "supervisor/supervisor_int.h"
#include "supervisor/transitions.h"

void sv_transition(sv_job_t *job, sv_jobstate_t to, const char *reason)
{
	sv_logctx_t lc = {job->id, job->attempt};
	if (!sv_transition_allowed(job->state, to)) {
		/* a bug: the lifecycle table (transitions.c) says no */
		sv_log(&lc, SV_LOG_ERROR, "lifecycle",
		       "transition %s -> %s is not in the lifecycle table (%s)",
		       sv_jobstate_name(job->state), sv_jobstate_name(to),
		       reason);
		assert(!"transition not in the lifecycle table");
	}
	sv_log(&lc, SV_LOG_INFO, "lifecycle", "state %s -> %s (%s)",
	       sv_jobstate_name(job->state), sv_jobstate_name(to), reason);
	sv_obslog_add(job->obs, job->attempt, "state_transition",
		      json_pack("{s:s, s:s, s:s}", "from",
				sv_jobstate_name(job->state), "to",
				sv_jobstate_name(to), "reason", reason));
	job->state = to;
	job->state_since_ms = sv_now_ms();
}

void sv_observe_error(sv_job_t *job, const sv_error_t *err)
{
	sv_obslog_add(
		job->obs, job->attempt, "error",
		json_pack("{s:s, s:s?, s:s, s:b, s:b}", "category",
			  sv_errcat_name(err->category), "backend_error_kind",
			  sv_errcat_backend_kind(err->category, err->field),
			  "message", err->message, "retriable", err->retriable,
			  "fatal", err->fatal));
}

static void done_cb(void *opaque, sv_worker_t *w)
{
	sv_supervisor_t *sv = opaque;
	(void)w;
	pthread_mutex_lock(&sv->lock);
	sv->worker_event = true;
	pthread_cond_signal(&sv->wake);
	pthread_mutex_unlock(&sv->lock);
}

/* The profile of one section whose driver reaches a cluster
 * (SV_DRIVER_CLUSTER); NULL for the others. */
static sv_error_t *resolve_one(sv_supervisor_t *sv, sv_driver_role_t role,
			       const char *kind, const char *name,
			       const char *field, const sv_cluster_t **out)
{
	*out = NULL;
	const sv_driver_t *drv = sv_drivers_find(sv_registry_drivers(), role,
						 kind);
	if (!sv_driver_has(drv, SV_DRIVER_CLUSTER))
		return NULL;
	*out = sv_svconf_cluster(&sv->conf, name);
	if (!*out) {
		sv_error_t *err = sv_error_new(
			SV_ERR_BINDING, "unknown cluster profile '%s'", name);
		return sv_error_set_field(err, field);
	}
	return NULL;
}

sv_error_t *sv_resolve_clusters(sv_supervisor_t *sv,
				const Streamvisor__JobSpec *js,
				sv_clusters_t *out)
{
	const Streamvisor__Sink *dl = js->dead_letter, *ls = js->late_sink;
	sv_error_t *err;
	*out = (sv_clusters_t){0};
	if ((err = resolve_one(sv, SV_DRIVER_SOURCE, js->source->kind,
			       js->source->cluster, "source.cluster",
			       &out->source)) ||
	    (err = resolve_one(sv, SV_DRIVER_SINK, js->sink->kind,
			       js->sink->cluster, "sink.cluster",
			       &out->sink)) ||
	    (dl &&
	     (err = resolve_one(sv, SV_DRIVER_SINK, dl->kind, dl->cluster,
				"dead_letter.cluster", &out->dlq))) ||
	    (ls &&
	     (err = resolve_one(sv, SV_DRIVER_SINK, ls->kind, ls->cluster,
				"late_sink.cluster", &out->late))))
		return err;
	for (size_t i = 0; i < js->n_pipeline; i++) {
		const Streamvisor__Step *st = js->pipeline[i];
		if (st->step_case != STREAMVISOR__STEP__STEP_JOIN ||
		    !st->join->source)
			continue;
		char field[64];
		snprintf(field, sizeof(field),
			 "pipeline[%zu].join.source.cluster", i);
		if ((err = resolve_one(
			     sv, SV_DRIVER_SOURCE, st->join->source->kind,
			     st->join->source->cluster, field, &out->join)))
			return err;
	}
	return NULL;
}

void sv_start_attempt(sv_supervisor_t *sv, sv_job_t *job)
{
	const Streamvisor__JobSpec *js = job->spec->msg;
	sv_worker_conf_t wc = {
		.job_id = job->id,
		.attempt = job->attempt + 1,
		.spec = job->spec,
		.done = done_cb,
		.opaque = sv,
	};
	/* Profiles were checked at submit; the config cannot change since. */
	sv_clusters_t cl;
	sv_error_destroy(sv_resolve_clusters(sv, js, &cl));
	wc.source_cluster = cl.source;
	wc.sink_cluster = cl.sink;
	wc.dlq_cluster = cl.dlq;
	wc.late_cluster = cl.late;
	wc.join_cluster = cl.join;
	job->attempt++;
	job->attempt_started_ms = sv_now_ms();
	wc.obs = job->obs;
	wc.store = sv->store;
	wc.file_roots = &sv->file_roots;
	wc.restore_from = job->restart_from;
	if (sv->conf.dist.name) { /* docs/cluster.md */
		wc.node_id = sv->conf.dist.node_id;
		wc.session_timeout_ms = (int)sv->conf.dist.session_timeout_ms;
		wc.max_poll_interval_ms =
			(int)sv->conf.dist.max_poll_interval_ms;
		wc.end_offsets = job->end_offsets;
		wc.nend_offsets = job->nend_offsets;
		wc.dist_name = sv->conf.dist.name;
		wc.replication_factor = (int)sv->conf.dist.replication_factor;
		wc.state_budget_bytes_per_s =
			(int64_t)sv->conf.dist.state_budget_bytes_per_s;
	}
	wc.ignore_state = job->restart_ignore_state;
	job->restart_from = -1;
	job->restart_ignore_state = false;
	job->drain_deadline_ms = 0;
	int par = sv_jobspec_parallelism(job->spec);
	json_t *members = json_array();
	for (int k = 0; k < par; k++)
		json_array_append_new(members, json_integer(k));
	sv_obslog_add(job->obs, job->attempt, "attempt_started",
		      json_pack("{s:i, s:i, s:o}", "restarts", job->restarts,
				"parallelism", par, "members", members));
	sv_evidence_attempt_started(sv, job);
	sv_error_t *err = sv_worker_start(&wc, &job->worker);
	if (err) {
		sv_error_destroy(job->error);
		job->error = sv_error_set_job(err, job->id, job->attempt);
		sv_evidence_attempt_ended(sv, job, SV_WORKER_FAILED, err);
		sv_transition(job, SV_JOB_FAILED, err->message);
		sv_persist_job(sv, job);
		return;
	}
	sv_transition(job, SV_JOB_RUNNING,
		      job->attempt == 1 ? "first attempt started"
					: "attempt started");
	sv_persist_job(sv, job);
}

/* Take the worker's last checkpoint into the job's view. */
void sv_refresh_last_checkpoint(sv_job_t *job)
{
	const sv_worker_stats_t *st = sv_worker_stats(job->worker);
	int64_t id = atomic_load(&st->last_checkpoint);
	int64_t at = atomic_load(&st->last_checkpoint_ms);
	if (id >= 0 && at > 0 && at >= job->last_ck.completed_ms) {
		job->last_ck.id = id;
		job->last_ck.completed_ms = at;
		job->last_ck.duration_ms = atomic_load(
			&st->last_checkpoint_duration_ms);
		job->last_ck.bytes = atomic_load(&st->last_checkpoint_bytes);
	} else if (id >= 0 && job->last_ck.id < 0) {
		job->last_ck.id = id; /* restored, not taken by this process */
	}
}

/* Add a worker's counters to c. */
static void add_counts(sv_counts_t *c, const sv_worker_stats_t *st)
{
	c->in += atomic_load(&st->records_in);
	c->out += atomic_load(&st->records_out);
	c->invalid += atomic_load(&st->records_invalid);
	c->late += atomic_load(&st->records_late);
	c->checkpoints += atomic_load(&st->checkpoints);
	c->ck_failures += atomic_load(&st->checkpoint_failures);
	c->ck_sum_us += atomic_load(&st->ck_sum_us);
	for (int b = 0; b <= SV_CK_BUCKETS; b++)
		c->ck_hist[b] += atomic_load(&st->ck_hist[b]);
}

void sv_job_progress(sv_job_t *job, sv_progress_t *p)
{
	memset(p, 0, sizeof(*p));
	p->n = job->done;
	p->watermark_ms = job->last_watermark_ms ? job->last_watermark_ms
						 : INT64_MIN;
	p->last_event_ms = INT64_MIN;
	if (!job->worker)
		return;
	const sv_worker_stats_t *st = sv_worker_stats(job->worker);
	add_counts(&p->n, st);
	p->state_bytes = atomic_load(&st->state_bytes);
	p->state_keys = atomic_load(&st->state_keys);
	p->kafka_bytes = atomic_load(&st->kafka_bytes);
	p->result_bytes = atomic_load(&st->result_bytes);
	int64_t w = atomic_load(&st->watermark_ms);
	if (w != INT64_MIN)
		p->watermark_ms = w;
	p->last_event_ms = atomic_load(&st->last_event_ms);
	sv_refresh_last_checkpoint(job);
}

int64_t sv_job_lag_records(sv_job_t *job)
{
	if (!job->worker)
		return 0;
	sv_partpos_t *pos;
	size_t n = sv_worker_positions(job->worker, &pos);
	int64_t lag = 0;
	for (size_t i = 0; i < n; i++)
		lag += sv_partpos_lag(&pos[i]);
	free(pos);
	return lag;
}

static void absorb_counters(sv_job_t *job)
{
	const sv_worker_stats_t *st = sv_worker_stats(job->worker);
	add_counts(&job->done, st);
	int64_t wm = atomic_load(&st->watermark_ms);
	if (wm != INT64_MIN)
		job->last_watermark_ms = wm;
	sv_refresh_last_checkpoint(job);
}

/* Apply the restart policy (supervisor/restart.h) to a failed attempt. */
static void schedule_restart(sv_supervisor_t *sv, sv_job_t *job,
			     const sv_error_t *err)
{
	const Streamvisor__Restart *rp = job->spec->msg->restart;
	const sv_restart_policy_t policy = {
		.max_attempts = rp->max_attempts,
		.initial_backoff_ms = rp->initial_backoff_ms,
		.max_backoff_ms = rp->max_backoff_ms,
		.multiplier = rp->multiplier,
		.window_ms = rp->window_ms,
		.reset_after_ms = rp->reset_after_ms,
	};
	const sv_restart_state_t st = {
		.window_start_ms = job->window_start_ms,
		.attempts_in_window = job->attempts_in_window,
		.backoff_ms = job->backoff_ms,
	};
	int64_t now = sv_now_ms();
	uint32_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)now;
	sv_restart_decision_t d = sv_restart_decide(
		&policy, &st, sv_errclass_of(err), job->attempt_started_ms, now,
		r);
	/* distributed: counted over every node's attempts */
	int elsewhere = sv_dist_restart_count(sv, job, policy.max_attempts,
					      policy.window_ms, now, &d);
	job->window_start_ms = d.next.window_start_ms;
	job->attempts_in_window = d.next.attempts_in_window;
	job->backoff_ms = d.next.backoff_ms;
	if (d.verdict == SV_RESTART_FAIL) {
		sv_transition(job, SV_JOB_FAILED, err->message);
		return;
	}
	if (d.verdict == SV_RESTART_EXHAUSTED) {
		sv_error_t *ex = sv_error_new(
			SV_ERR_RETRY_EXHAUSTED,
			"gave up after %d attempts%s: %s",
			job->attempts_in_window + elsewhere,
			elsewhere ? " (over the cluster's nodes)" : "",
			err->message);
		sv_error_set_job(ex, job->id, job->attempt);
		sv_error_destroy(job->error);
		job->error = ex;
		sv_transition(job, SV_JOB_FAILED, ex->message);
		return;
	}
	job->next_attempt_at_ms = d.at_ms;
	job->restarts++;
	sv_obslog_add(job->obs, job->attempt, "restart_scheduled",
		      json_pack("{s:I, s:I, s:i, s:s}", "backoff_ms",
				(json_int_t)d.wait_ms, "next_attempt_at_ms",
				(json_int_t)job->next_attempt_at_ms, "restarts",
				job->restarts, "category",
				sv_errcat_name(err->category)));
	char reason[512];
	snprintf(reason, sizeof(reason),
		 "%s error, next attempt in %lld ms: %s",
		 sv_errcat_name(err->category), (long long)d.wait_ms,
		 err->message);
	sv_transition(job, SV_JOB_RESTARTING, reason);
}

void sv_on_worker_end(sv_supervisor_t *sv, sv_job_t *job)
{
	sv_worker_end_t end = sv_worker_end(job->worker);
	absorb_counters(job);
	if (end == SV_WORKER_FAILED) {
		sv_error_destroy(job->error);
		job->error = sv_error_copy(sv_worker_error(job->worker));
		sv_observe_error(job, job->error);
	}
	if (end == SV_WORKER_COMPLETED && sv_jobspec_bounded(job->spec)) {
		free(job->result);
		job->result = sv_worker_result(job->worker, SIZE_MAX,
					       &job->result_rows,
					       &job->result_truncated);
	}
	sv_evidence_attempt_ended(sv, job, end,
				  end == SV_WORKER_FAILED ? job->error : NULL);
	sv_worker_destroy(job->worker);
	job->worker = NULL;
	char reason[256];
	switch (end) {
	case SV_WORKER_COMPLETED:
		sv_transition(job, SV_JOB_COMPLETED,
			      "input ended and all output "
			      "was committed");
		break;
	case SV_WORKER_DRAINED:
		snprintf(reason, sizeof(reason),
			 "drained: final checkpoint %lld "
			 "committed",
			 (long long)job->last_ck.id);
		sv_obslog_add(job->obs, job->attempt, "drain",
			      json_pack("{s:s, s:I}", "outcome", "checkpointed",
					"checkpoint_id",
					(json_int_t)job->last_ck.id));
		if (job->state == SV_JOB_DRAINING && !job->pending_start) {
			sv_transition(job, SV_JOB_CHECKPOINTED, reason);
		} else {
			/* the drain had timed out; its checkpoint stands and
			 * the next attempt continues from it */
			sv_log(&(sv_logctx_t){job->id, job->attempt},
			       SV_LOG_INFO, "lifecycle", "%s after its timeout",
			       reason);
			job->pending_start = true;
		}
		break;
	case SV_WORKER_STOPPED:
		if (!job->pending_start)
			sv_transition(job, SV_JOB_CANCELLED,
				      "cancelled by request");
		break;
	default:
		if (job->cancel_requested) {
			sv_transition(job, SV_JOB_CANCELLED,
				      "cancelled by request");
		} else {
			job->pending_start = false;
			schedule_restart(sv, job, job->error);
		}
		break;
	}
	sv_persist_job(sv, job);
}

/* Watermark and lag samples for the observations; running <-> lagging
 * while the lag stays above the job's thresholds for the grace period. */
void sv_watch_progress(sv_job_t *job, int64_t now)
{
	if (!job->worker ||
	    (job->state != SV_JOB_RUNNING && job->state != SV_JOB_LAGGING))
		return;
	sv_progress_t pr;
	sv_job_progress(job, &pr);
	int64_t wm = pr.watermark_ms;
	int64_t records = sv_job_lag_records(job);
	double seconds = wm == INT64_MIN ? -1 : (double)(now - wm) / 1000.0;
	if (now - job->last_sample_ms >= SAMPLE_MS) {
		job->last_sample_ms = now;
		sv_obslog_add(job->obs, job->attempt, "watermark_sample",
			      json_pack("{s:o, s:o}", "watermark_ms",
					wm == INT64_MIN ? json_null()
							: json_integer(wm),
					"watermark_lag_s",
					seconds < 0 ? json_null()
						    : json_real(seconds)));
		sv_obslog_add(job->obs, job->attempt, "lag_sample",
			      json_pack("{s:I, s:o}", "records",
					(json_int_t)records, "seconds",
					seconds < 0 ? json_null()
						    : json_real(seconds)));
	}
	const Streamvisor__Lag *lp = job->spec->msg->lag;
	bool over = (lp->max_records > 0 && records > lp->max_records) ||
		(lp->max_seconds > 0 && seconds > (double)lp->max_seconds);
	if (!over) {
		job->lag_since_ms = 0;
		if (job->state == SV_JOB_LAGGING)
			sv_transition(job, SV_JOB_RUNNING, "lag recovered");
		return;
	}
	if (!job->lag_since_ms)
		job->lag_since_ms = now;
	if (job->state == SV_JOB_RUNNING &&
	    now - job->lag_since_ms >= lp->grace_ms) {
		char reason[200];
		snprintf(reason, sizeof(reason),
			 "lag of %lld records, %.1f s "
			 "above the thresholds (%lld records, %lld s) for %lld "
			 "ms",
			 (long long)records, seconds < 0 ? 0 : seconds,
			 (long long)lp->max_records, (long long)lp->max_seconds,
			 (long long)(now - job->lag_since_ms));
		sv_transition(job, SV_JOB_LAGGING, reason);
	}
}

sv_error_t *sv_conflict(sv_job_t *job, const char *action)
{
	sv_error_t *err = sv_error_new(SV_ERR_CONFLICT,
				       "cannot %s job '%s': it is %s", action,
				       job->id, sv_jobstate_name(job->state));
	return sv_error_set_job(err, job->id, job->attempt);
}
