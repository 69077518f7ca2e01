/* persist.c — job definitions in the checkpoint store, so that after a
 * supervisor restart (clean or kill -9) every job that was not terminal
 * comes back by itself with its id, attempt count and spec, and continues
 * from its last committed checkpoint (the worker's recovery decides which).
 *
 * A record is JSON: {"id", "created_at_ms", "state", "attempt", "restarts",
 * "spec": <the canonical spec as JSON>}. It is rewritten when an attempt
 * starts or ends and when the job reaches a terminal state.
 * thread: supervisor (sv_persist_load: before the thread starts). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "supervisor/drivers.h"
#include "supervisor/supervisor_int.h"

void sv_persist_job(sv_supervisor_t *sv, sv_job_t *job)
{
	if (!sv->store)
		return;
	char *spec = sv_jobspec_to_json(job->spec);
	json_error_t jerr;
	json_t *sj = json_loads(spec, 0, &jerr);
	free(spec);
	json_t *o = json_pack("{s:s, s:I, s:s, s:i, s:i, s:o}", "id", job->id,
			      "created_at_ms", (json_int_t)job->created_at_ms,
			      "state", sv_jobstate_name(job->state), "attempt",
			      job->attempt, "restarts", job->restarts, "spec",
			      sj ? sj : json_null());
	json_t *ends = sv_dist_ends_json(job);
	if (ends) /* a distributed bounded job's (docs/cluster.md) */
		json_object_set_new(o, "end_offsets", ends);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	sv_error_t *err = sv_ckstore_put_job(sv->store, job->id, text,
					     strlen(text));
	free(text);
	if (err) {
		/* the job keeps running; a restart would not bring it back */
		sv_log(&(sv_logctx_t){job->id, job->attempt}, SV_LOG_ERROR,
		       "persist", "cannot store the job definition: %s",
		       err->message);
		sv_error_destroy(err);
	}
}

void sv_persist_forget(sv_supervisor_t *sv, const char *id, bool checkpoints)
{
	if (!sv->store)
		return;
	sv_error_t *err = sv_ckstore_delete_job(sv->store, id, checkpoints);
	if (err) {
		sv_log(&(sv_logctx_t){id, 0}, SV_LOG_ERROR, "persist",
		       "cannot delete the stored job: %s", err->message);
		sv_error_destroy(err);
	}
}

static sv_jobstate_t state_by_name(const char *name)
{
	for (int s = 0; s < SV_JOB__COUNT; s++)
		if (name && !strcmp(name, sv_jobstate_name((sv_jobstate_t)s)))
			return (sv_jobstate_t)s;
	return SV_JOB_PENDING;
}

static sv_error_t *load_one(void *opaque, const char *id, const char *data,
			    size_t len)
{
	sv_supervisor_t *sv = opaque;
	json_error_t jerr;
	json_t *o = json_loadb(data, len, 0, &jerr);
	json_t *sj = o ? json_object_get(o, "spec") : NULL;
	char *spec_text = sj ? json_dumps(sj, JSON_COMPACT) : NULL;
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = spec_text
		? sv_jobspec_parse_json(spec_text, strlen(spec_text),
					sv_registry_drivers(), &spec)
		: sv_error_new(SV_ERR_CHECKPOINT,
			       "stored job '%s' is not a job "
			       "record",
			       id);
	free(spec_text);
	if (err) {
		json_decref(o);
		sv_error_t *e = sv_error_new(SV_ERR_CHECKPOINT,
					     "stored job '%s' "
					     "cannot be read back: %s",
					     id, err->message);
		sv_error_destroy(err);
		return e;
	}
	sv_job_t *job = sv_calloc(1, sizeof(*job));
	snprintf(job->id, sizeof(job->id), "%s", id);
	job->spec = spec;
	job->created_at_ms = json_integer_value(
		json_object_get(o, "created_at_ms"));
	job->attempt = (int)json_integer_value(json_object_get(o, "attempt"));
	job->restarts = (int)json_integer_value(json_object_get(o, "restarts"));
	sv_dist_ends_load(job, json_object_get(o, "end_offsets"));
	job->last_ck.id = -1;
	job->restart_from = -1;
	job->state_since_ms = sv_now_ms();
	job->obs = sv_obslog_new(job->id, SV_OBSLOG_DEFAULT_CAP);
	/* the last committed checkpoint, for the status before the first
	 * attempt restores it */
	sv_ckrec_t *ck = NULL;
	sv_error_t *cerr = sv_ckstore_latest_committed(sv->store, job->id,
						       INT64_MAX, &ck);
	sv_error_destroy(cerr); /* the attempt's recovery reports it loudly */
	if (ck) {
		job->last_ck.id = ck->id;
		job->last_ck.completed_ms = ck->started_at_ms + ck->duration_ms;
		job->last_ck.duration_ms = ck->duration_ms;
		job->last_ck.bytes = ck->bytes;
		sv_ckstore_free_record(ck);
	}
	sv_jobstate_t was = state_by_name(
		json_string_value(json_object_get(o, "state")));
	json_decref(o);
	job->state = was;
	if (!sv_jobstate_terminal(was)) {
		/* checkpointed stays checkpointed (resume continues it) */
		sv_jobstate_t to = was == SV_JOB_CHECKPOINTED
			? SV_JOB_CHECKPOINTED
			: SV_JOB_PENDING;
		sv_transition(
			job, to,
			to == SV_JOB_CHECKPOINTED
				? "supervisor restarted; resume continues from "
				  "the final checkpoint"
				: "supervisor restarted; the job continues "
				  "from "
				  "its last committed checkpoint");
	}
	sv->jobs = sv_realloc(sv->jobs, (sv->njobs + 1) * sizeof(*sv->jobs));
	sv->jobs[sv->njobs++] = job;
	sv_log(&(sv_logctx_t){job->id, job->attempt}, SV_LOG_INFO, "persist",
	       "job '%s' recovered (was %s)", spec->msg->name,
	       sv_jobstate_name(was));
	return NULL;
}

sv_error_t *sv_persist_load(sv_supervisor_t *sv)
{
	if (!sv->store)
		return NULL;
	return sv_ckstore_each_job(sv->store, load_one, sv);
}
