/* evidence.c — a job's IncQL evidence (docs/incql.md): its plan target and
 * RFC 033 coverage records, decided at submit, and an RFC 032 execution
 * observation for every attempt (operation execute), every attempt's sink
 * writes (write) and a bounded job's collected result (collect), built when
 * the attempt ends, in IncQL's record shape and id rules
 * (NOTES-incql.md §3). Streamvisor's own facts — job id, attempt,
 * checkpoints, offsets, watermark, lag, commit outcome and the delivery
 * guarantee claimed — travel without new fields: as evidence_refs and
 * trace_ids ("streamvisor:job:<id>:attempt:<n>") and as diagnostics with
 * stable codes (streamvisor.*). Served by GET
 * /v1/jobs/{id}/execution-observations. The records of a job are kept in
 * memory, at most MAX_OBS (the oldest dropped).
 * thread: supervisor. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "ingress/coverage.h"
#include "supervisor/drivers.h"
#include "supervisor/supervisor_int.h"

#define MAX_OBS 300

struct sv_evidence {
	json_t *plan_target;
	json_t *coverage; /* array of records */
	json_t *observations; /* array, oldest first */
	int64_t started_ns; /* wall clock, the running attempt's start */
	int64_t started_mono_ns;
};

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

sv_coverage_env_t sv_coverage_env(sv_supervisor_t *sv)
{
	sv_coverage_env_t env = {sv_dev_default(sv), sv->store != NULL,
				 sv_registry_drivers()};
	return env;
}

static sv_evidence_t *evidence_new(json_t *plan_target, json_t *coverage)
{
	sv_evidence_t *ev = sv_calloc(1, sizeof(*ev));
	ev->plan_target = plan_target;
	ev->coverage = coverage ? coverage : json_array();
	ev->observations = json_array();
	return ev;
}

void sv_evidence_destroy(sv_evidence_t *ev)
{
	if (!ev)
		return;
	json_decref(ev->plan_target);
	json_decref(ev->coverage);
	json_decref(ev->observations);
	free(ev);
}

sv_error_t *sv_evidence_plan_error(sv_error_t *err, const sv_jobspec_t *spec)
{
	json_t *pt = sv_coverage_plan_target(spec, NULL);
	sv_coverage_plan_error(err, pt);
	json_decref(pt);
	return err;
}

sv_error_t *sv_evidence_check(sv_supervisor_t *sv, const sv_jobspec_t *spec,
			      const sv_plan_t *plan, sv_evidence_t **out)
{
	*out = NULL;
	sv_coverage_env_t env = sv_coverage_env(sv);
	json_t *pt = sv_coverage_plan_target(spec, plan);
	json_t *recs = NULL;
	sv_error_t *err = sv_coverage_check(spec, plan, pt, &env, &recs);
	if (err) {
		json_decref(pt);
		json_decref(recs);
		return err;
	}
	*out = evidence_new(pt, recs);
	return NULL;
}

/* A job recovered from the store has no evidence yet: decide it again
 * (the same spec and configuration give the same records). */
static sv_evidence_t *evidence_of(sv_supervisor_t *sv, sv_job_t *job)
{
	if (job->ev)
		return job->ev;
	sv_plan_t *plan = NULL;
	sv_error_t *err = sv_plan_build(job->spec, &plan);
	sv_error_destroy(err);
	sv_coverage_env_t env = sv_coverage_env(sv);
	json_t *pt = sv_coverage_plan_target(job->spec, plan);
	json_t *recs = sv_coverage_for_job(job->spec, plan, pt, &env);
	sv_plan_destroy(plan);
	job->ev = evidence_new(pt, recs);
	return job->ev;
}

void sv_evidence_answer(sv_supervisor_t *sv, sv_job_t *job, json_t *answer)
{
	sv_evidence_t *ev = evidence_of(sv, job);
	json_object_set(answer, "plan_target", ev->plan_target);
	json_object_set(answer, "coverage", ev->coverage);
}

void sv_evidence_attempt_started(sv_supervisor_t *sv, sv_job_t *job)
{
	sv_evidence_t *ev = evidence_of(sv, job);
	ev->started_ns = wall_ns();
	ev->started_mono_ns = sv_mono_ns();
}

/* ---- building one observation ---- */

typedef struct obs {
	json_t *diags, *refs, *traces;
} obs_t;

static void diag(obs_t *o, const json_t *target, const char *severity,
		 const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void diag(obs_t *o, const json_t *target, const char *severity,
		 const char *code, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	json_array_append_new(o->diags,
			      json_pack("{s:s, s:s, s:s, s:O}", "severity",
					severity, "code", code, "message", msg,
					"target", target));
	free(msg);
}

static void ref(obs_t *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void ref(obs_t *o, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	json_array_append_new(o->refs, json_string(s));
	free(s);
}

static const char *str_of(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* IncQL's _execution_observation(): ids, attempt and session targets. */
static json_t *observation(const sv_evidence_t *ev, const char *op,
			   const char *status, int64_t ended_ns,
			   int64_t duration_ns, json_t *row_count, obs_t *o)
{
	const json_t *pt = ev->plan_target;
	const char *ptid = str_of(pt, "target_id");
	const char *plan_id = str_of(pt, "plan_id");
	const char *scope = str_of(pt, "scope_id");
	const char *path = str_of(pt, "path");
	char *aid = NULL, *apath = NULL, *aname = NULL, *sid = NULL,
	     *spath = NULL, *sname = NULL;
	if (asprintf(&aid, "%s:execution-attempt:%s:%s:%lld", ptid, op,
		     SV_ADAPTER_NAME, (long long)ev->started_ns) < 0 ||
	    asprintf(&apath, "%s/execution-attempt/%s", path, op) < 0 ||
	    asprintf(&aname, "%s:%s", op, SV_ADAPTER_NAME) < 0 ||
	    asprintf(&sid, "%s:client-session:%s", ptid, SV_ADAPTER_NAME) < 0 ||
	    asprintf(&spath, "%s/client-session/%s", path, SV_ADAPTER_NAME) <
		    0 ||
	    asprintf(&sname, "session:%s", SV_ADAPTER_NAME) < 0)
		abort();
	json_t *at = sv_target_new("execution_attempt", aid, plan_id, scope,
				   apath, aname, -1, -1);
	json_t *st = sv_target_new("client_session", sid, plan_id, scope, spath,
				   sname, -1, -1);
	json_t *rec = json_pack(
		"{s:s, s:o, s:O, s:[o], s:s, s:s, s:s, s:s, s:n, s:n, s:I, "
		"s:I, s:I, s:o, s:n, s:O, s:O, s:O, s:O}",
		"observation_id", aid, "attempt_target", at, "plan_target", pt,
		"context_targets", st, "operation", op, "status", status,
		"backend_name", SV_ADAPTER_NAME, "adapter_version",
		SV_VERSION_STRING, "requested_semantic_profile_id",
		"observed_semantic_profile_id", "started_at_unix_nanoseconds",
		(json_int_t)ev->started_ns, "ended_at_unix_nanoseconds",
		(json_int_t)ended_ns, "duration_nanoseconds",
		(json_int_t)duration_ns, "row_count",
		row_count ? row_count : json_null(), "byte_count", "trace_ids",
		o->traces, "diagnostics", o->diags, "coverage_records",
		ev->coverage, "evidence_refs", o->refs);
	free(aid);
	free(apath);
	free(aname);
	free(sid);
	free(spath);
	free(sname);
	return rec;
}

static void append(sv_evidence_t *ev, json_t *rec)
{
	if (json_array_size(ev->observations) >= MAX_OBS)
		json_array_remove(ev->observations, 0);
	json_array_append_new(ev->observations, rec);
}

/* IncQL's SessionErrorKind / BackendErrorKind for a failure, beside our
 * finer category (core/error.c). */
static void failure_diags(obs_t *o, const json_t *pt, const sv_error_t *err)
{
	const char *kind = sv_errcat_backend_kind(err->category, err->field);
	diag(o, pt, "error", kind ? kind : "backend_execution_error", "%s",
	     err->message);
	char code[64];
	snprintf(code, sizeof(code), "streamvisor.error.%s",
		 sv_errcat_name(err->category));
	diag(o, pt, "error", code, "%s error%s", sv_errcat_name(err->category),
	     err->retriable && !err->fatal ? " (retriable)" : "");
}

/* The facts of the attempt every observation of it carries. */
static void attempt_facts(obs_t *o, sv_job_t *job, const json_t *pt)
{
	const Streamvisor__JobSpec *js = job->spec->msg;
	json_array_append_new(o->traces,
			      json_pack("s+", "streamvisor:job:", job->id));
	char t[120];
	snprintf(t, sizeof(t), "streamvisor:job:%s:attempt:%d", job->id,
		 job->attempt);
	json_array_append_new(o->traces, json_string(t));
	ref(o, "streamvisor:job:%s", job->id);
	ref(o, "streamvisor:job:%s:attempt:%d", job->id, job->attempt);
	ref(o, "streamvisor:plan:%s", job->spec->plan_id);
	diag(o, pt, "info", "streamvisor.job", "job %s attempt %d (%s)",
	     job->id, job->attempt, js->mode);
	if (!job->worker)
		return;
	const sv_worker_stats_t *st = sv_worker_stats(job->worker);
	diag(o, pt, "info", "streamvisor.records",
	     "records read %llu, written %llu, late %llu, invalid %llu",
	     (unsigned long long)atomic_load(&st->records_in),
	     (unsigned long long)atomic_load(&st->records_out),
	     (unsigned long long)atomic_load(&st->records_late),
	     (unsigned long long)atomic_load(&st->records_invalid));
	int64_t restored = atomic_load(&st->restored_checkpoint);
	if (restored >= 0) {
		diag(o, pt, "info", "streamvisor.checkpoint.restored",
		     "restored checkpoint %lld", (long long)restored);
		ref(o, "streamvisor:job:%s:checkpoint:%lld", job->id,
		    (long long)restored);
	}
	int64_t last = atomic_load(&st->last_checkpoint);
	uint64_t n = atomic_load(&st->checkpoints);
	if (n > 0 && last >= 0) {
		diag(o, pt, "info", "streamvisor.checkpoint.committed",
		     "%llu checkpoints committed, the last %lld",
		     (unsigned long long)n, (long long)last);
		if (last != restored)
			ref(o, "streamvisor:job:%s:checkpoint:%lld", job->id,
			    (long long)last);
	}
	uint64_t nf = atomic_load(&st->checkpoint_failures);
	if (nf)
		diag(o, pt, "warning", "streamvisor.checkpoint.failed",
		     "%llu checkpoints failed", (unsigned long long)nf);
	sv_partpos_t *pos = NULL;
	size_t npos = sv_worker_positions(job->worker, &pos);
	int64_t lag = 0;
	const char *topic = js->source->topic && *js->source->topic
		? js->source->topic
		: js->source->kind;
	for (size_t i = 0; i < npos; i++) {
		int64_t l = sv_partpos_lag(&pos[i]);
		lag += l;
		diag(o, pt, "info", "streamvisor.source.offset",
		     "%s partition %d: next offset %lld, end offset %lld, lag "
		     "%lld records",
		     topic, pos[i].partition, (long long)pos[i].next_offset,
		     (long long)pos[i].end_offset, (long long)l);
		ref(o, "streamvisor:job:%s:source:%s:%d:offset:%lld", job->id,
		    topic, pos[i].partition, (long long)pos[i].next_offset);
	}
	free(pos);
	int64_t wm = atomic_load(&st->watermark_ms);
	if (wm != INT64_MIN)
		diag(o, pt, "info", "streamvisor.watermark",
		     "watermark %lld ms since the epoch", (long long)wm);
	if (npos)
		diag(o, pt, "info", "streamvisor.lag",
		     "lag %lld records behind the end of the source",
		     (long long)lag);
}

static obs_t obs_new(void)
{
	obs_t o = {json_array(), json_array(), json_array()};
	return o;
}

static void obs_release(obs_t *o)
{
	json_decref(o->diags);
	json_decref(o->refs);
	json_decref(o->traces);
}

/* The write of an attempt: commit outcome (RFC 055 terms) and the
 * guarantee claimed (exactly-once only with RFC 054's evidence). */
static void write_facts(sv_supervisor_t *sv, obs_t *o, sv_job_t *job,
			const json_t *pt, sv_worker_end_t end,
			const sv_error_t *err, uint64_t out, uint64_t committed,
			int64_t last_ck)
{
	const Streamvisor__JobSpec *js = job->spec->msg;
	const char *sink = js->sink->kind;
	/* what the sink can do, from its driver (core/driver.h): a
	 * transaction that carries the source positions (kafka) commits
	 * atomically with them; one without (file) publishes atomically */
	const sv_driver_t *drv = sv_drivers_find(sv_registry_drivers(),
						 SV_DRIVER_SINK, sink);
	bool txn_offsets = sv_driver_has(drv, SV_DRIVER_TXN_OFFSETS);
	bool eo = !strcmp(js->delivery, "exactly_once");
	bool txn_sink = sv_driver_has(drv, SV_DRIVER_TRANSACTIONAL);
	bool dev = sv_driver_has(drv, SV_DRIVER_CLUSTER) &&
		sv_dev_default(sv) && !strcmp(js->sink->cluster, "default");
	bool transactional = eo && sv->store && txn_sink;
	bool claim_eo = transactional && !dev;
	diag(o, pt, "info", "streamvisor.sink", "sink %s%s%s", sink,
	     js->sink->topic && *js->sink->topic ? " topic " : "",
	     js->sink->topic && *js->sink->topic ? js->sink->topic : "");
	/* what the attempt wrote beyond its last commit point is aborted
	 * (a transaction) or in the sink without a commit (at-least-once,
	 * replayed by the next attempt) */
	const char *outcome;
	bool ok_end = end == SV_WORKER_COMPLETED || end == SV_WORKER_DRAINED;
	bool indefinite = err &&
		(err->category == SV_ERR_SINK_COMMIT ||
		 err->category == SV_ERR_COMMIT);
	uint64_t pending = out > committed ? out - committed : 0;
	if (ok_end)
		outcome = "committed";
	else if (out == 0)
		outcome = end == SV_WORKER_STOPPED ? "committed" : "failed";
	else if (indefinite)
		outcome = "unknown_outcome";
	else if (pending == 0)
		outcome = "committed";
	else if (!transactional)
		outcome = "unknown_outcome";
	else
		outcome = committed > 0 ? "partially_committed" : "failed";
	char code[80];
	snprintf(code, sizeof(code), "streamvisor.write.commit_outcome.%s",
		 outcome);
	static const struct {
		const char *outcome, *severity, *text;
	} texts[] = {
		{"committed", "info",
		 "every record the attempt wrote is committed"},
		{"partially_committed", "warning",
		 "output up to the attempt's last checkpoint is committed; "
		 "what it wrote after that was in the open transaction, which "
		 "was aborted: the next attempt replays it"},
		{"failed", "error",
		 "nothing of the attempt's output is committed: no record "
		 "reached the sink, or its transaction was aborted"},
		{"unknown_outcome", "warning",
		 "records written after the last commit point may be in the "
		 "sink without a commit, or a commit's outcome is not known: "
		 "the "
		 "next attempt replays them (at-least-once: duplicates "
		 "possible) or recovery decides"},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(texts); i++)
		if (!strcmp(texts[i].outcome, outcome))
			diag(o, pt, texts[i].severity, code, "%s",
			     texts[i].text);
	snprintf(code, sizeof(code), "streamvisor.write.delivery.%s",
		 claim_eo ? "exactly_once" : "at_least_once");
	diag(o, pt, "info", code, "%s",
	     claim_eo     ? "exactly-once: source replay from checkpointed "
			    "positions, a transactional sink and checkpoint "
			    "commit"
		     : eo ? "at-least-once only: delivery 'exactly_once' was "
			    "asked but the evidence for it is incomplete (see "
			    "the sink_commit_guarantee coverage record)"
			  : "at-least-once: the sink is flushed before the "
			    "source positions are committed; a failure replays "
			    "records");
	const char *cg = !transactional ? "best_effort"
		: txn_offsets           ? "atomic_transaction"
					: "atomic_publication";
	snprintf(code, sizeof(code), "streamvisor.write.commit_guarantee.%s",
		 cg);
	diag(o, pt, "info", code, "commit guarantee %s", cg);
	if (claim_eo) {
		ref(o,
		    "streamvisor:job:%s:exactly_once_evidence:replay:%s_"
		    "positions",
		    job->id, js->source->kind);
		ref(o,
		    "streamvisor:job:%s:exactly_once_evidence:transactional_"
		    "sink:%s_%s",
		    job->id, sink,
		    txn_offsets ? "transactions" : "two_phase_commit");
		if (last_ck >= 0)
			ref(o,
			    "streamvisor:job:%s:exactly_once_evidence:"
			    "checkpoint_commit:%lld",
			    job->id, (long long)last_ck);
	}
}

void sv_evidence_attempt_ended(sv_supervisor_t *sv, sv_job_t *job,
			       sv_worker_end_t end, const sv_error_t *err)
{
	sv_evidence_t *ev = evidence_of(sv, job);
	if (!ev->started_ns)
		sv_evidence_attempt_started(sv, job);
	int64_t ended = wall_ns();
	int64_t dur = sv_mono_ns() - ev->started_mono_ns;
	if (dur < 0)
		dur = 0;
	const json_t *pt = ev->plan_target;
	bool cancelled = end == SV_WORKER_STOPPED ||
		(end == SV_WORKER_FAILED && job->cancel_requested);
	const char *status = end == SV_WORKER_FAILED && !cancelled ? "failure"
		: cancelled                                        ? "cancelled"
								   : "success";
	uint64_t out = 0, committed = 0;
	int64_t last_ck = -1;
	if (job->worker) {
		const sv_worker_stats_t *st = sv_worker_stats(job->worker);
		out = atomic_load(&st->records_out);
		committed = atomic_load(&st->records_out_committed);
		last_ck = atomic_load(&st->last_checkpoint);
	}
	/* execute: the attempt itself (IncQL's execute has no row count) */
	obs_t o = obs_new();
	attempt_facts(&o, job, pt);
	if (err && end == SV_WORKER_FAILED)
		failure_diags(&o, pt, err);
	append(ev, observation(ev, "execute", status, ended, dur, NULL, &o));
	obs_release(&o);
	/* write: what the attempt handed to its sink */
	if (job->worker) {
		o = obs_new();
		attempt_facts(&o, job, pt);
		write_facts(sv, &o, job, pt, end, err, out, committed, last_ck);
		if (err && end == SV_WORKER_FAILED)
			failure_diags(&o, pt, err);
		append(ev,
		       observation(ev, "write", status, ended, dur,
				   json_integer((json_int_t)out), &o));
		obs_release(&o);
	}
	/* collect: a bounded job's result, materialized when it completed */
	if (end == SV_WORKER_COMPLETED && sv_jobspec_bounded(job->spec) &&
	    job->result) {
		o = obs_new();
		attempt_facts(&o, job, pt);
		diag(&o, pt, "info", "streamvisor.result",
		     "%zu rows collected%s (GET /v1/jobs/%s/result)",
		     job->result_rows,
		     job->result_truncated ? ", truncated" : "", job->id);
		append(ev,
		       observation(ev, "collect", "success", ended, dur,
				   json_integer((json_int_t)job->result_rows),
				   &o));
		obs_release(&o);
	}
	ev->started_ns = 0;
}

sv_error_t *sv_do_execution_observations(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return sv_no_job(c->id);
	sv_evidence_t *ev = evidence_of(sv, job);
	c->json = sv_json_dump(json_pack("{s:s, s:O, s:O}", "id", job->id,
					 "plan_target", ev->plan_target,
					 "observations", ev->observations));
	return NULL;
}
