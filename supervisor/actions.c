/* actions.c — what operators ask of a job (DESIGN.md §3, §5): cancel,
 * drain, resume, restart, checkpoint now; and the drain deadline. An action
 * that is not valid in the job's state is a 409 naming both.
 * thread: supervisor (sv_do_*, sv_ck_ready), except sv_action_parse, which
 * runs on the caller's thread before the command is posted. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "ingress/coverage.h"
#include "ingress/stages.h"
#include "supervisor/drivers.h"
#include "supervisor/supervisor_int.h"
#include "supervisor/transitions.h"

#define DRAIN_DEFAULT_TIMEOUT_MS 60000
#define CHECKPOINT_WAIT_MS 120000 /* POST checkpoints */

/* An action that needs the checkpoint store, on a supervisor without a
 * data directory. */
static sv_error_t *no_store(sv_job_t *job, const char *message)
{
	return sv_error_set_job(sv_error_new(SV_ERR_CONFIG, "%s", message),
				job->id, job->attempt);
}

static sv_error_t *body_error(const cmd_t *c, const char *field,
			      const char *msg)
{
	sv_error_t *err = sv_error_new(SV_ERR_SUBMISSION, "%s: field '%s': %s",
				       sv_action_name(c->u.act.action), field,
				       msg);
	sv_error_set_field(err, field);
	return sv_error_set_job(err, c->id, 0);
}

/* The action's JSON body as an object ({} when empty); NULL + *err when it
 * is not an object or has a key not in `keys`. */
static json_t *parse_body(const cmd_t *c, const char *body, size_t len,
			  const char *const *keys, sv_error_t **err)
{
	*err = NULL;
	if (!body || !len)
		return json_object();
	json_error_t jerr;
	json_t *o = json_loadb(body, len, 0, &jerr);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		*err = sv_error_set_job(
			sv_error_new(SV_ERR_SUBMISSION,
				     "%s: body must be a JSON object%s%s",
				     sv_action_name(c->u.act.action),
				     o ? "" : ": ", o ? "" : jerr.text),
			c->id, 0);
		return NULL;
	}
	const char *k;
	json_t *v;
	json_object_foreach (o, k, v) {
		bool known = false;
		for (const char *const *p = keys; *p; p++)
			known |= !strcmp(k, *p);
		if (!known) {
			*err = body_error(c, k, "unknown field");
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

sv_error_t *sv_action_parse(cmd_t *c, const char *body, size_t len)
{
	static const char *const none[] = {NULL};
	static const char *const drain[] = {"final_watermark", "timeout_ms",
					    NULL};
	static const char *const restart[] = {"from_checkpoint", "ignore_state",
					      "parallelism", NULL};
	c->u.act.from_checkpoint = -1;
	const char *const *keys = c->u.act.action == SV_ACTION_DRAIN ? drain
		: c->u.act.action == SV_ACTION_RESTART               ? restart
								     : none;
	sv_error_t *err;
	json_t *o = parse_body(c, body, len, keys, &err);
	if (!o)
		return err;
	if (c->u.act.action == SV_ACTION_DRAIN) {
		json_t *fw = json_object_get(o, "final_watermark");
		json_t *to = json_object_get(o, "timeout_ms");
		if (fw && !json_is_boolean(fw))
			err = body_error(c, "final_watermark",
					 "expected true or false");
		else if (to &&
			 (!json_is_integer(to) || json_integer_value(to) <= 0))
			err = body_error(c, "timeout_ms",
					 "expected a positive integer "
					 "(milliseconds)");
		c->u.act.final_watermark = fw && json_is_true(fw);
		c->u.act.timeout_ms = to ? json_integer_value(to) : 0;
	} else if (c->u.act.action == SV_ACTION_RESTART) {
		json_t *from = json_object_get(o, "from_checkpoint");
		json_t *ign = json_object_get(o, "ignore_state");
		if (from && json_is_integer(from) &&
		    json_integer_value(from) >= 0)
			c->u.act.from_checkpoint = json_integer_value(from);
		else if (from &&
			 !(json_is_string(from) &&
			   !strcmp(json_string_value(from), "latest")))
			err = body_error(c, "from_checkpoint",
					 "expected a checkpoint id or "
					 "\"latest\"");
		if (!err && ign && !json_is_boolean(ign))
			err = body_error(c, "ignore_state",
					 "expected true or false");
		c->u.act.ignore_state = ign && json_is_true(ign);
		json_t *par = json_object_get(o, "parallelism");
		if (!err && par &&
		    (!json_is_integer(par) || json_integer_value(par) < 1 ||
		     json_integer_value(par) > 256))
			err = body_error(c, "parallelism",
					 "expected an integer from 1 to 256");
		c->u.act.parallelism = par && !err
			? (int)json_integer_value(par)
			: 0;
	}
	json_decref(o);
	return err;
}

static sv_error_t *do_cancel(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	sv_error_t *err = sv_action_check(job, SV_ACTION_CANCEL);
	if (err)
		return err;
	/* distributed: every node cancels (docs/cluster.md) */
	if (!c->replicated &&
	    (err = sv_dist_publish(sv, job->id, job->spec, "cancelled")))
		return err;
	job->cancel_requested = true;
	job->pending_start = false;
	if (job->worker) {
		sv_worker_stop(job->worker);
		sv_worker_wait(job->worker);
		sv_on_worker_end(sv, job);
	}
	/* the attempt may have ended on its own first (completed) */
	if (!sv_jobstate_terminal(job->state))
		sv_transition(job, SV_JOB_CANCELLED, "cancelled by request");
	sv_persist_job(sv, job);
	c->json = sv_json_dump(sv_job_json(sv, job, false));
	return NULL;
}

static sv_error_t *publish_drain(sv_supervisor_t *sv, sv_job_t *job,
				 bool final_wm, int64_t timeout)
{
	json_t *x = json_pack("{s:b, s:I}", "final_watermark", final_wm,
			      "drain_timeout_ms", (json_int_t)timeout);
	sv_error_t *err = sv_dist_publish_ext(sv, job->id, job->spec,
					      "draining", x);
	json_decref(x);
	return err;
}

static sv_error_t *do_drain(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	sv_error_t *err = sv_action_check(job, SV_ACTION_DRAIN);
	if (err)
		return err;
	/* running, but the attempt is ending (a drain that timed out) */
	if (!job->worker || job->pending_start)
		return sv_conflict(job, "drain");
	if (!sv->store)
		return no_store(job,
				"drain needs checkpoints, and this "
				"supervisor has no data directory");
	bool final_wm = c->u.act.final_watermark;
	const char *rp_key;
	if (final_wm && sv_stages_split_at(job->spec->msg, &rp_key) >= 0)
		/* stage 1 may not have read all stage 0 committed: firing
		 * its windows now would be early (docs/repartition.md) */
		return sv_error_new(SV_ERR_COVERAGE,
				    "drain with final_watermark is not "
				    "available for a repartitioned job (its "
				    "second stage may not have read all its "
				    "first stage committed); drain without it "
				    "keeps the window state");
	int64_t timeout = c->u.act.timeout_ms ? c->u.act.timeout_ms
					      : DRAIN_DEFAULT_TIMEOUT_MS;
	/* distributed: every node drains its member (docs/cluster.md) */
	if (!c->replicated && (err = publish_drain(sv, job, final_wm, timeout)))
		return err;
	job->drain_deadline_ms = sv_now_ms() + timeout;
	sv_worker_drain(job->worker, final_wm);
	char reason[160];
	snprintf(reason, sizeof(reason),
		 "drain requested (final_watermark %s, "
		 "timeout %lld ms)",
		 final_wm ? "true" : "false", (long long)timeout);
	sv_obslog_add(job->obs, job->attempt, "drain",
		      json_pack("{s:s, s:b, s:I}", "outcome", "requested",
				"final_watermark", final_wm, "timeout_ms",
				(json_int_t)timeout));
	sv_transition(job, SV_JOB_DRAINING, reason);
	c->json = sv_json_dump(sv_job_json(sv, job, false));
	return NULL;
}

/* A drain past its deadline goes back to running: the worker is stopped
 * and a new attempt continues from the last committed checkpoint (which is
 * the drain's own if it got that far). Never stuck in draining. */
void sv_check_drain(sv_supervisor_t *sv, sv_job_t *job, int64_t now)
{
	(void)sv;
	if (job->state != SV_JOB_DRAINING || !job->drain_deadline_ms ||
	    now < job->drain_deadline_ms)
		return;
	job->drain_deadline_ms = 0;
	job->pending_start = true;
	if (job->worker)
		sv_worker_stop(job->worker);
	sv_obslog_add(job->obs, job->attempt, "drain",
		      json_pack("{s:s}", "outcome", "timed_out"));
	sv_transition(job, SV_JOB_RUNNING,
		      "drain timed out; continuing from "
		      "the last committed checkpoint");
}

static sv_error_t *do_resume(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	sv_error_t *err = sv_action_check(job, SV_ACTION_RESUME);
	if (err)
		return err;
	if (job->worker)
		return sv_conflict(job, "resume");
	/* distributed: once every partition reported its final checkpoint,
	 * every node resumes its member */
	if (!c->replicated &&
	    ((err = sv_dist_check_resume(sv, job)) ||
	     (err = sv_dist_publish(sv, job->id, job->spec, "running"))))
		return err;
	sv_start_attempt(sv, job);
	c->json = sv_json_dump(sv_job_json(sv, job, false));
	return NULL;
}

/* The job's spec with parallelism par, validated as a submitted one. */
static sv_error_t *rescale_spec(const sv_job_t *job, int par,
				sv_jobspec_t **out)
{
	char *text = sv_jobspec_to_json(job->spec);
	json_error_t jerr;
	json_t *o = json_loads(text, 0, &jerr);
	free(text);
	if (!o)
		return sv_error_new(SV_ERR_RUNTIME, "cannot re-read the spec");
	json_object_set_new(o, "parallelism", json_integer(par));
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	sv_error_t *err = sv_jobspec_parse_json(text, strlen(text),
						sv_registry_drivers(), out);
	free(text);
	if (!err)
		err = sv_coverage_parallel_check(*out);
	if (!err && strcmp((*out)->plan_id, job->spec->plan_id))
		err = sv_error_new(SV_ERR_RUNTIME,
				   "the rescaled spec has another plan id");
	if (err) {
		sv_jobspec_destroy(*out);
		*out = NULL;
		if (err->category == SV_ERR_SUBMISSION ||
		    err->category == SV_ERR_COVERAGE)
			sv_error_set_field(
				err, err->field ? err->field : "parallelism");
	}
	return err;
}

/* A distributed restart: a record naming it (its version) that every
 * node applies once. Checkpoint ids are each node's own, so only the
 * latest is meaningful across nodes. */
static sv_error_t *publish_restart(sv_supervisor_t *sv, sv_job_t *job,
				   bool ignore)
{
	int64_t v = sv_dist_version(sv, job->id) + 1;
	json_t *x = json_pack("{s:I, s:b}", "restart", (json_int_t)v,
			      "ignore_state", ignore);
	sv_error_t *err = sv_dist_publish_ext(sv, job->id, job->spec, "running",
					      x);
	json_decref(x);
	if (!err) /* this node restarts now, not again when it reads it */
		sv_dist_restart_seen(sv, job->id, v);
	return err;
}

static sv_error_t *do_restart(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	sv_error_t *err = sv_action_check(job, SV_ACTION_RESTART);
	if (err)
		return err;
	if (sv->dist && !c->replicated &&
	    (c->u.act.from_checkpoint >= 0 || c->u.act.parallelism > 0))
		return sv_error_set_field(
			sv_error_set_job(
				sv_error_new(SV_ERR_SUBMISSION,
					     "restart: in distributed mode "
					     "every node restarts from its "
					     "latest checkpoint, at "
					     "parallelism 1"),
				job->id, job->attempt),
			c->u.act.from_checkpoint >= 0 ? "from_checkpoint"
						      : "parallelism");
	if (!sv->store)
		return no_store(job,
				"restart needs checkpoints, and this "
				"supervisor has no data directory");
	int64_t ck = c->u.act.from_checkpoint;
	bool ignore = c->u.act.ignore_state;
	if (ck < 0) {
		Streamvisor__CheckpointRecord *rec = NULL;
		err = sv_ckstore_latest_committed(sv->store, job->id, INT64_MAX,
						  &rec);
		if (!err && rec)
			ck = rec->id;
		sv_ckstore_free_record(rec);
		if (err)
			return sv_error_set_job(err, job->id, job->attempt);
	} else {
		Streamvisor__CheckpointRecord *rec = NULL;
		err = sv_ckstore_get(sv->store, job->id, ck, &rec);
		bool ok = !err && rec &&
			rec->status ==
				STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED;
		sv_ckstore_free_record(rec);
		if (err)
			return sv_error_set_job(err, job->id, job->attempt);
		if (!ok)
			return sv_error_set_job(
				sv_error_new(SV_ERR_NOT_FOUND,
					     "checkpoint %lld of job '%s' does "
					     "not exist or did "
					     "not commit",
					     (long long)ck, job->id),
				job->id, job->attempt);
	}
	/* a rescale: the same spec with another parallelism (not part of the
	 * plan id: the per-partition checkpoints regroup) */
	sv_jobspec_t *rescaled = NULL;
	int par = c->u.act.parallelism;
	if (par > 0 && par != sv_jobspec_parallelism(job->spec) &&
	    (err = rescale_spec(job, par, &rescaled)))
		return sv_error_set_job(err, job->id, job->attempt);
	job->restart_from = ck; /* -1: no checkpoint yet: empty state */
	/* Parallel jobs restarted at "latest": the recovery rule, per
	 * partition, once the attempt has stopped. Members commit on their
	 * own, so one may commit a newer checkpoint between here and the stop;
	 * restoring its partitions from the older id would replay committed
	 * output. */
	if (c->u.act.from_checkpoint < 0 &&
	    (sv_jobspec_parallelism(job->spec) > 1 || (rescaled && par > 1)))
		job->restart_from = -1;
	/* distributed: every node restarts its member (from its latest) */
	if (!c->replicated && (err = publish_restart(sv, job, ignore)))
		return err;
	job->restart_ignore_state = ignore;
	job->attempts_in_window = 0;
	job->backoff_ms = 0;
	char reason[160];
	snprintf(reason, sizeof(reason),
		 "restart requested from checkpoint "
		 "%lld%s",
		 (long long)ck, ignore ? " (positions only)" : "");
	sv_obslog_add(
		job->obs, job->attempt, "restart_requested",
		json_pack("{s:I, s:b, s:i}", "from_checkpoint", (json_int_t)ck,
			  "ignore_state", ignore, "parallelism",
			  rescaled ? par : sv_jobspec_parallelism(job->spec)));
	if (job->worker) {
		job->pending_start = true;
		sv_worker_stop(job->worker);
		sv_worker_wait(job->worker);
		sv_on_worker_end(sv, job);
	}
	job->pending_start = false;
	/* the attempt may have ended on its own while it stopped (a bounded
	 * job completing): a terminal job is not restarted */
	if (sv_jobstate_terminal(job->state)) {
		sv_jobspec_destroy(rescaled);
		return sv_conflict(job, "restart");
	}
	if (rescaled) {
		/* the worker that borrowed the old spec is gone */
		sv_jobspec_destroy(job->spec);
		job->spec = rescaled;
		sv_persist_job(sv, job);
	}
	sv_log(&(sv_logctx_t){job->id, job->attempt}, SV_LOG_INFO, "lifecycle",
	       "%s", reason);
	sv_start_attempt(sv, job);
	c->json = sv_json_dump(sv_job_json(sv, job, false));
	return NULL;
}

/* POST checkpoints: ask the worker and park the command; sv_ck_ready
 * completes it when the worker reports the checkpoint that serves it. */
static sv_error_t *do_checkpoint(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	sv_error_t *err = sv_action_check(job, SV_ACTION_CHECKPOINT);
	if (err)
		return err;
	if (!job->worker)
		return sv_conflict(job, "checkpoint");
	if (!sv->store)
		return no_store(job,
				"checkpoints need a data directory, and "
				"this supervisor has none");
	c->ticket = sv_worker_request_checkpoint(job->worker);
	c->attempt = job->attempt;
	c->deadline_ms = sv_now_ms() + CHECKPOINT_WAIT_MS;
	c->park = true;
	return NULL;
}

sv_error_t *sv_do_action(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return sv_no_job(c->id);
	switch (c->u.act.action) {
	case SV_ACTION_CANCEL:
		return do_cancel(sv, job, c);
	case SV_ACTION_DRAIN:
		return do_drain(sv, job, c);
	case SV_ACTION_RESUME:
		return do_resume(sv, job, c);
	case SV_ACTION_RESTART:
		return do_restart(sv, job, c);
	case SV_ACTION_CHECKPOINT:
		return do_checkpoint(sv, job, c);
	case SV_ACTION__COUNT:
		break;
	}
	return sv_error_new(SV_ERR_NOT_FOUND, "unknown action %d",
			    (int)c->u.act.action);
}

bool sv_ck_ready(sv_supervisor_t *sv, cmd_t *c, int64_t now)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job || !job->worker || job->attempt != c->attempt) {
		const sv_error_t *e = job ? job->error : NULL;
		c->err = sv_error_set_job(
			sv_error_new(SV_ERR_CHECKPOINT,
				     "the attempt ended before the checkpoint "
				     "committed%s%s",
				     e ? ": " : "", e ? e->message : ""),
			c->id, job ? job->attempt : 0);
		return true;
	}
	const sv_worker_stats_t *st = sv_worker_stats(job->worker);
	if (atomic_load(&st->checkpoint_served) >= c->ticket) {
		c->json = sv_json_dump(json_pack(
			"{s:I}", "id",
			(json_int_t)atomic_load(&st->last_checkpoint)));
		return true;
	}
	if (now > c->deadline_ms) {
		c->err = sv_error_set_job(
			sv_error_new(SV_ERR_CHECKPOINT,
				     "checkpoint of job '%s' did not commit "
				     "within %d ms",
				     c->id, CHECKPOINT_WAIT_MS),
			c->id, job->attempt);
		return true;
	}
	return false;
}

/* GET checkpoints: the store's records, newest first. */
sv_error_t *sv_do_checkpoint_list(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return sv_no_job(c->id);
	json_t *a = json_array();
	if (sv->store) {
		Streamvisor__CheckpointRecord **recs = NULL;
		size_t n = 0;
		sv_error_t *err = sv_ckstore_list(
			sv->store, job->id,
			c->u.view.limit ? c->u.view.limit : 100, &recs, &n);
		if (err) {
			json_decref(a);
			return sv_error_set_job(err, job->id, job->attempt);
		}
		for (size_t i = 0; i < n; i++) {
			const Streamvisor__CheckpointRecord *r = recs[i];
			static const char *const st[] = {
				"prepared", "committed", "aborted"};
			json_t *offs = json_array();
			for (size_t k = 0; k < r->n_offsets; k++)
				json_array_append_new(
					offs,
					json_pack(
						"{s:s, s:s, s:i, s:I, s:o}",
						"input",
						r->offsets[k]->input ? "join"
								     : "source",
						"topic", r->offsets[k]->topic,
						"partition",
						r->offsets[k]->partition,
						"next_offset",
						(json_int_t)r->offsets[k]
							->next_offset,
						"watermark_ms",
						r->offsets[k]->watermark_ms ==
								INT64_MIN
							? json_null()
							: json_integer(
								  r->offsets[k]
									  ->watermark_ms)));
			bool done = r->status ==
				STREAMVISOR__CHECKPOINT_RECORD__STATUS__COMMITTED;
			json_array_append_new(
				a,
				json_pack(
					"{s:I, s:s, s:i, s:o, s:o, s:I, s:I, "
					"s:o, s:o}",
					"id", (json_int_t)r->id, "status",
					r->status <= 2 ? st[r->status]
						       : "unknown",
					"attempt", r->attempt, "started_at",
					sv_iso_json(r->started_at_ms),
					"completed_at",
					done ? sv_iso_json(r->started_at_ms +
							   r->duration_ms)
					     : json_null(),
					"duration_ms",
					(json_int_t)r->duration_ms, "bytes",
					(json_int_t)r->bytes, "watermark_ms",
					r->watermark_ms == INT64_MIN
						? json_null()
						: json_integer(r->watermark_ms),
					"offsets", offs));
			sv_ckstore_free_record(recs[i]);
		}
		free(recs);
	}
	c->json = sv_json_dump(
		json_pack("{s:s, s:o}", "id", job->id, "checkpoints", a));
	return NULL;
}
