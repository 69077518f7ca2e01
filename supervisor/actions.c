/* actions.c — what operators ask of a job (DESIGN.md §3, §5): cancel,
 * drain, resume, restart, checkpoint now; and the drain deadline. An action
 * that is not valid in the job's state is a 409 naming both.
 * thread: supervisor (sv_do_*), except the waiting of
 * sv_supervisor_checkpoint_wait, which runs on the caller's thread. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "supervisor/supervisor_int.h"
#include "supervisor/transitions.h"

#define DRAIN_DEFAULT_TIMEOUT_MS 60000

static void wait_worker_end(sv_job_t *job)
{
	/* a worker stops at its next batch boundary */
	while (sv_worker_end(job->worker) == SV_WORKER_RUNNING) {
		struct timespec ts = {0, 5 * 1000000};
		nanosleep(&ts, NULL);
	}
}

/* An action that needs the checkpoint store, on a supervisor without a
 * data directory. */
static sv_error_t *no_store(sv_job_t *job, const char *message)
{
	return sv_error_set_job(sv_error_new(SV_ERR_CONFIG, "%s", message),
				job->id, job->attempt);
}

static sv_error_t *body_error(sv_job_t *job, const char *action,
			      const char *field, const char *msg)
{
	sv_error_t *err = sv_error_new(SV_ERR_SUBMISSION, "%s: field '%s': %s",
				       action, field, msg);
	sv_error_set_field(err, field);
	return sv_error_set_job(err, job->id, job->attempt);
}

/* The action's JSON body as an object ({} when empty); NULL + *err when it
 * is not an object or has a key not in `keys`. */
static json_t *parse_body(sv_job_t *job, cmd_t *c, const char *const *keys,
			  sv_error_t **err)
{
	*err = NULL;
	if (!c->body || !c->len)
		return json_object();
	json_error_t jerr;
	json_t *o = json_loadb(c->body, c->len, 0, &jerr);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		*err = sv_error_set_job(
			sv_error_new(SV_ERR_SUBMISSION,
				     "%s: body must be a JSON object%s%s",
				     c->what, o ? "" : ": ",
				     o ? "" : jerr.text),
			job->id, job->attempt);
		return NULL;
	}
	const char *k;
	json_t *v;
	json_object_foreach (o, k, v) {
		bool known = false;
		for (const char *const *p = keys; *p; p++)
			known |= !strcmp(k, *p);
		if (!known) {
			*err = body_error(job, c->what, k, "unknown field");
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static sv_error_t *do_cancel(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	sv_error_t *err = sv_jobaction_check(job, SV_JOBACTION_CANCEL);
	if (err)
		return err;
	job->cancel_requested = true;
	job->pending_start = false;
	if (job->worker) {
		sv_worker_stop(job->worker);
		wait_worker_end(job);
		sv_on_worker_end(sv, job);
	}
	/* the attempt may have ended on its own first (completed) */
	if (!sv_jobstate_terminal(job->state))
		sv_transition(job, SV_JOB_CANCELLED, "cancelled by request");
	sv_persist_job(sv, job);
	c->json = sv_json_dump(sv_job_json(sv, job, false));
	return NULL;
}

static sv_error_t *do_drain(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	static const char *const keys[] = {"final_watermark", "timeout_ms",
					   NULL};
	sv_error_t *err = sv_jobaction_check(job, SV_JOBACTION_DRAIN);
	if (err)
		return err;
	/* running, but the attempt is ending (a drain that timed out) */
	if (!job->worker || job->pending_start)
		return sv_conflict(job, "drain");
	if (!sv->store)
		return no_store(job,
				"drain needs checkpoints, and this "
				"supervisor has no data directory");
	json_t *o = parse_body(job, c, keys, &err);
	if (!o)
		return err;
	json_t *fw = json_object_get(o, "final_watermark");
	json_t *to = json_object_get(o, "timeout_ms");
	if (fw && !json_is_boolean(fw))
		err = body_error(job, "drain", "final_watermark",
				 "expected true "
				 "or false");
	else if (to && (!json_is_integer(to) || json_integer_value(to) <= 0))
		err = body_error(job, "drain", "timeout_ms",
				 "expected a positive "
				 "integer (milliseconds)");
	if (err) {
		json_decref(o);
		return err;
	}
	bool final_wm = fw && json_is_true(fw);
	int64_t timeout = to ? json_integer_value(to)
			     : DRAIN_DEFAULT_TIMEOUT_MS;
	json_decref(o);
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
	sv_error_t *err = sv_jobaction_check(job, SV_JOBACTION_RESUME);
	if (err)
		return err;
	if (job->worker)
		return sv_conflict(job, "resume");
	sv_start_attempt(sv, job);
	c->json = sv_json_dump(sv_job_json(sv, job, false));
	return NULL;
}

static sv_error_t *do_restart(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	static const char *const keys[] = {"from_checkpoint", "ignore_state",
					   NULL};
	sv_error_t *err = sv_jobaction_check(job, SV_JOBACTION_RESTART);
	if (err)
		return err;
	if (!sv->store)
		return no_store(job,
				"restart needs checkpoints, and this "
				"supervisor has no data directory");
	json_t *o = parse_body(job, c, keys, &err);
	if (!o)
		return err;
	json_t *from = json_object_get(o, "from_checkpoint");
	json_t *ign = json_object_get(o, "ignore_state");
	int64_t ck = -1;
	if (from && json_is_integer(from) && json_integer_value(from) >= 0) {
		ck = json_integer_value(from);
	} else if (from &&
		   !(json_is_string(from) &&
		     !strcmp(json_string_value(from), "latest"))) {
		err = body_error(job, "restart", "from_checkpoint",
				 "expected a "
				 "checkpoint id or \"latest\"");
	}
	if (!err && ign && !json_is_boolean(ign))
		err = body_error(job, "restart", "ignore_state",
				 "expected true or "
				 "false");
	bool ignore = ign && json_is_true(ign);
	json_decref(o);
	if (err)
		return err;
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
	job->restart_from = ck; /* -1: no checkpoint yet: empty state */
	job->restart_ignore_state = ignore;
	job->attempts_in_window = 0;
	job->backoff_ms = 0;
	char reason[160];
	snprintf(reason, sizeof(reason),
		 "restart requested from checkpoint "
		 "%lld%s",
		 (long long)ck, ignore ? " (positions only)" : "");
	sv_obslog_add(job->obs, job->attempt, "restart_requested",
		      json_pack("{s:I, s:b}", "from_checkpoint", (json_int_t)ck,
				"ignore_state", ignore));
	if (job->worker) {
		job->pending_start = true;
		sv_worker_stop(job->worker);
		wait_worker_end(job);
		sv_on_worker_end(sv, job);
	}
	job->pending_start = false;
	sv_log(&(sv_logctx_t){job->id, job->attempt}, SV_LOG_INFO, "lifecycle",
	       "%s", reason);
	sv_start_attempt(sv, job);
	c->json = sv_json_dump(sv_job_json(sv, job, false));
	return NULL;
}

/* POST checkpoints: ask the worker; the caller waits (ck_poll). */
static sv_error_t *do_checkpoint(sv_supervisor_t *sv, sv_job_t *job, cmd_t *c)
{
	(void)sv;
	sv_error_t *err = sv_jobaction_check(job, SV_JOBACTION_CHECKPOINT);
	if (err)
		return err;
	if (!job->worker)
		return sv_conflict(job, "checkpoint");
	if (!sv->store)
		return no_store(job,
				"checkpoints need a data directory, and "
				"this supervisor has none");
	uint64_t ticket = sv_worker_request_checkpoint(job->worker);
	c->json = sv_json_dump(json_pack("{s:I, s:i}", "ticket",
					 (json_int_t)ticket, "attempt",
					 job->attempt));
	return NULL;
}

sv_error_t *sv_do_action(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return sv_no_job(c->id);
	if (!strcmp(c->what, "cancel"))
		return do_cancel(sv, job, c);
	if (!strcmp(c->what, "drain"))
		return do_drain(sv, job, c);
	if (!strcmp(c->what, "resume"))
		return do_resume(sv, job, c);
	if (!strcmp(c->what, "restart"))
		return do_restart(sv, job, c);
	if (!strcmp(c->what, "checkpoints"))
		return do_checkpoint(sv, job, c);
	return sv_error_new(SV_ERR_NOT_FOUND, "unknown action '%s'", c->what);
}

/* Poll for the checkpoint of c->query = "<ticket>:<attempt>": c->json is
 * {"done": bool, "id": n} or an error when the attempt ended first. */
sv_error_t *sv_do_ck_poll(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return sv_no_job(c->id);
	unsigned long long ticket = 0;
	int attempt = 0;
	sscanf(c->query, "%llu:%d", &ticket, &attempt);
	if (!job->worker || job->attempt != attempt) {
		const sv_error_t *e = job->error;
		return sv_error_set_job(
			sv_error_new(SV_ERR_CHECKPOINT,
				     "the attempt ended before the checkpoint "
				     "committed%s%s",
				     e ? ": " : "", e ? e->message : ""),
			job->id, job->attempt);
	}
	const sv_worker_stats_t *st = sv_worker_stats(job->worker);
	bool done = atomic_load(&st->checkpoint_served) >= ticket;
	c->json = sv_json_dump(
		json_pack("{s:b, s:I}", "done", done, "id",
			  (json_int_t)atomic_load(&st->last_checkpoint)));
	return NULL;
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
		sv_error_t *err = sv_ckstore_list(sv->store, job->id,
						  sv_query_limit(c->query, 100),
						  &recs, &n);
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
						"{s:s, s:i, s:I, s:o}", "topic",
						r->offsets[k]->topic,
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
