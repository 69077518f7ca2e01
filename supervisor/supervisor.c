/* supervisor.c — the job table and its thread (see supervisor.h).
 *
 * Callers on other threads (HTTP handlers, tests) build a command, append it
 * to the queue and wait on its completion; the supervisor thread runs each
 * command's function against the job table, then ticks: it notices attempts
 * that ended (workers only flip an atomic and wake us), applies the restart
 * policy, and starts attempts whose backoff has passed. Every state change
 * goes through sv_transition(), which logs old state, new state, reason and
 * attempt. */
#define _GNU_SOURCE
#include "supervisor/supervisor_int.h"

#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "sinks/sink.h"
#include "sources/source.h"
#include "supervisor/drivers.h"
#include "supervisor/history.h"
#include "supervisor/job.h"
#include "supervisor/metrics.h"
#include "ingress/coverage.h"
#include "ingress/plan.h"
#include "ingress/spec.h"
#include "ingress/stages.h"
#include "supervisor/stage.h"

#define TICK_MS 100


static const char *const state_names[SV_JOB__COUNT] = {
	"pending",    "running", "lagging",   "draining",  "checkpointed",
	"restarting", "failed",  "cancelled", "completed",
};

const char *sv_jobstate_name(sv_jobstate_t st)
{
	return (unsigned)st < SV_JOB__COUNT ? state_names[st] : "unknown";
}

/* ---- configuration ---- */

static void copy_conf(sv_svconf_t *dst, const sv_svconf_t *src)
{
	sv_svconf_init(dst);
	free(dst->listen_host);
	free(dst->data_dir);
	dst->listen_host = src->listen_host ? sv_strdup(src->listen_host)
					    : NULL;
	dst->listen_port = src->listen_port;
	dst->shutdown_timeout_ms = src->shutdown_timeout_ms;
	dst->data_dir = src->data_dir ? sv_strdup(src->data_dir) : NULL;
	dst->secrets_path = src->secrets_path ? sv_strdup(src->secrets_path)
					      : NULL;
	dst->identity = src->identity ? sv_strdup(src->identity) : NULL;
	sv_svconf_copy_security(dst, src);
	sv_distconf_copy(&dst->dist, &src->dist);
	for (size_t i = 0; i < src->nclusters; i++) {
		const sv_cluster_t *c = &src->clusters[i];
		sv_svconf_set_cluster(dst, c->name, c->bootstrap,
				      c->dev_embedded);
		sv_cluster_t *d = (sv_cluster_t *)sv_svconf_cluster(dst,
								    c->name);
		d->nprops = c->nprops;
		d->props = sv_calloc(c->nprops ? c->nprops : 1,
				     sizeof(sv_kv_t));
		for (size_t k = 0; k < c->nprops; k++) {
			d->props[k].key = sv_strdup(c->props[k].key);
			d->props[k].value = sv_strdup(c->props[k].value);
		}
	}
}

/* ---- time formatting ---- */

json_t *sv_iso_json(int64_t ms)
{
	if (ms <= 0)
		return json_null();
	char buf[40];
	sv_format_iso8601(ms, buf, sizeof(buf));
	return json_string(buf);
}

char *sv_json_dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* ---- jobs ---- */

sv_job_t *sv_find_job(sv_supervisor_t *sv, const char *id)
{
	for (size_t i = 0; i < sv->njobs; i++)
		if (!strcmp(sv->jobs[i]->id, id))
			return sv->jobs[i];
	return NULL;
}

sv_error_t *sv_no_job(const char *id)
{
	sv_error_t *err = sv_error_new(SV_ERR_NOT_FOUND,
				       "job '%s' does not exist", id);
	return sv_error_set_job(err, id, 0);
}

static void new_job_id(char *out, size_t len)
{
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t x = (uint64_t)sv_mono_ns() ^
			(uint64_t)sv_now_ms() << 20;
		memcpy(r, &x, sizeof(r));
	}
	snprintf(out, len, "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
		 r[3], r[4], r[5], r[6], r[7]);
}

/* Once no attempt has run for IDLE_TRIM_MS, give back what the last ones
 * left: the allocator's free pages and the code pages they faulted in
 * (docs/performance.md "An idle supervisor"). Once per idle spell. */
#define IDLE_TRIM_MS 5000
static void idle_footprint(sv_supervisor_t *sv, int64_t now)
{
	bool running = false;
	for (size_t i = 0; i < sv->njobs && !running; i++)
		running = sv->jobs[i]->worker != NULL;
	if (running) {
		sv->idle_since_ms = -1; /* an attempt runs */
		return;
	}
	if (sv->idle_since_ms == -1)
		sv->idle_since_ms = now;
	if (sv->idle_since_ms <= 0 || now - sv->idle_since_ms < IDLE_TRIM_MS)
		return;
	sv->idle_since_ms = 0;
	if (getenv("STREAMVISOR_KEEP_CODE_PAGES"))
		return;
	malloc_trim(0);
	size_t rel = sv_mem_release_code();
	sv_log(NULL, SV_LOG_DEBUG, "supervisor",
	       "no job running: gave back free heap and %zu KiB of code "
	       "pages",
	       rel / 1024);
}

static void tick(sv_supervisor_t *sv)
{
	if (sv->shutting_down)
		return; /* jobs stay as they are in the store */
	int64_t now = sv_now_ms();
	idle_footprint(sv, now);
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (job->worker &&
		    sv_worker_end(job->worker) != SV_WORKER_RUNNING)
			sv_on_worker_end(sv, job);
		sv_watch_progress(job, now);
		sv_job_history_tick(job, now);
		sv_check_drain(sv, job, now);
		if (job->pending_start && !job->worker) {
			job->pending_start = false;
			/* the stopping attempt may have completed on its own */
			if (!sv_jobstate_terminal(job->state))
				sv_start_attempt(sv, job);
		}
		if (job->state == SV_JOB_RESTARTING && !job->worker &&
		    now >= job->next_attempt_at_ms)
			sv_start_attempt(sv, job);
		if (job->state == SV_JOB_PENDING && !job->worker)
			sv_start_attempt(sv, job);
	}
}

/* ---- JSON views ---- */

/* ---- commands (run on the supervisor thread) ---- */

/* exactly_once: the sink's target must allow our transactions (kafka: the
 * broker's maximum transaction timeout), asked now rather than at the
 * first transaction. */
static sv_error_t *check_transactions(const Streamvisor__JobSpec *js,
				      const sv_clusters_t *cl)
{
	const sv_sink_ops_t *ops = sv_sink_find(js->sink->kind);
	if (strcmp(js->delivery, "exactly_once") || !ops || !ops->check_txn)
		return NULL;
	return ops->check_txn(cl->sink, sv_sink_txn_timeout_ms(js->sink),
			      "sink.transaction_timeout_ms");
}

/* Path-bearing sinks (SV_DRIVER_PATH: sink, dead_letter, late_sink) only
 * under file_sink_roots (sinks/confine.h): a 400 naming <field>.path. */
static sv_error_t *check_file_sinks(sv_supervisor_t *sv,
				    const Streamvisor__JobSpec *js)
{
	const struct {
		const Streamvisor__Sink *s;
		const char *field;
	} sinks[] = {
		{js->sink, "sink"},
		{js->dead_letter, "dead_letter"},
		{js->late_sink, "late_sink"},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(sinks); i++) {
		const Streamvisor__Sink *s = sinks[i].s;
		const sv_sink_ops_t *ops = s ? sv_sink_find(s->kind) : NULL;
		if (!ops || !sv_driver_has(ops->driver, SV_DRIVER_PATH))
			continue;
		sv_error_t *err = sv_fileroots_check(
			&sv->file_roots, sinks[i].field, s->path,
			s->path ? strlen(s->path) : 0);
		if (err)
			return err;
	}
	return NULL;
}

/* A join at parallelism > 1: both topics with the same partition count
 * (when both exist already; otherwise the job's start checks it). */
static sv_error_t *check_join_partitions(const Streamvisor__JobSpec *js,
					 const sv_clusters_t *cl, int nleft)
{
	for (size_t i = 0; i < js->n_pipeline && nleft > 0 && cl->join; i++) {
		const Streamvisor__Step *st = js->pipeline[i];
		if (st->step_case != STREAMVISOR__STEP__STEP_JOIN ||
		    !st->join->source || !st->join->source->topic)
			continue;
		const char *topic = st->join->source->topic;
		const sv_source_ops_t *ops = sv_source_find(
			st->join->source->kind);
		if (!ops || !ops->partition_count)
			continue;
		int nright = ops->partition_count(cl->join, topic);
		if (nright <= 0 || nright == nleft)
			continue;
		char field[96], msg[512];
		snprintf(field, sizeof(field),
			 "pipeline[%zu].join.source.topic", i);
		snprintf(msg, sizeof(msg),
			 "the join at pipeline[%zu] reads topic '%s' with %d "
			 "partitions and the job's source topic '%s' has %d: "
			 "at parallelism %d the two inputs must be "
			 "co-partitioned (same partition count), or use "
			 "parallelism 1",
			 i, topic, nright, js->source->topic, nleft,
			 js->parallelism);
		return sv_coverage_refuse(
			"stateful_join_support",
			"at parallelism > 1 a join needs co-partitioned "
			"inputs; there is no repartitioning for joins",
			field, msg);
	}
	return NULL;
}

/* parallelism at most the source's partition count, as its driver tells
 * it (partition_count: when the topic exists already; otherwise the job's
 * start checks it). */
static sv_error_t *check_parallelism(const Streamvisor__JobSpec *js,
				     const sv_clusters_t *cl)
{
	const sv_source_ops_t *ops = sv_source_find(js->source->kind);
	if (js->parallelism <= 1 || !ops || !ops->partition_count)
		return NULL;
	int n = ops->partition_count(cl->source, js->source->topic);
	if (n > 0 && js->parallelism > n)
		return sv_error_set_field(
			sv_error_new(SV_ERR_SUBMISSION,
				     "field 'parallelism': %d is more than "
				     "the %d partitions of topic '%s'",
				     js->parallelism, n, js->source->topic),
			"parallelism");
	return check_join_partitions(js, cl, n);
}

/* Parse and check a submitted spec as far as a job could start: clusters,
 * the plan built, coverage (the evidence), transactions. On success *specp,
 * *evp and *summaryp are the caller's. POST /v1/jobs and its dry run share
 * it. */
static sv_error_t *check_spec(sv_supervisor_t *sv, cmd_t *c,
			      sv_jobspec_t **specp, sv_evidence_t **evp,
			      json_t **summaryp)
{
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = c->u.submit.protobuf
		? sv_jobspec_parse_proto((const uint8_t *)c->u.submit.body,
					 c->u.submit.len, sv_registry_drivers(),
					 &spec)
		: sv_jobspec_parse_json(c->u.submit.body, c->u.submit.len,
					sv_registry_drivers(), &spec);
	if (err)
		return err;
	const Streamvisor__JobSpec *js = spec->msg;
	sv_clusters_t cl;
	if ((err = sv_resolve_clusters(sv, js, &cl)) ||
	    (err = check_file_sinks(sv, js))) {
		sv_jobspec_destroy(spec);
		return err;
	}
	sv_plan_t *plan = NULL;
	sv_evidence_t *ev = NULL;
	if ((err = sv_plan_build(spec, &plan)) ||
	    (err = sv_evidence_check(sv, spec, plan, &ev)) ||
	    (err = sv_coverage_parallel_check(spec)) ||
	    (err = check_transactions(js, &cl)) ||
	    (err = sv_dist_check_spec(sv, spec)) ||
	    (err = check_parallelism(js, &cl))) {
		sv_evidence_plan_error(err, spec);
		sv_evidence_destroy(ev);
		sv_plan_destroy(plan);
		sv_jobspec_destroy(spec);
		return err;
	}
	*summaryp = sv_plan_summary(spec, plan);
	sv_plan_destroy(plan);
	*specp = spec;
	*evp = ev;
	return NULL;
}

/* POST /v1/jobs?dry_run=true: the translated spec and its coverage. */
static sv_error_t *do_dry_run(sv_supervisor_t *sv, cmd_t *c)
{
	sv_jobspec_t *spec = NULL;
	sv_evidence_t *ev = NULL;
	json_t *summary = NULL;
	sv_error_t *err = check_spec(sv, c, &spec, &ev, &summary);
	if (err)
		return err;
	char *text = sv_jobspec_translated_json(spec);
	json_t *o = json_pack("{s:o, s:s, s:o}", "spec",
			      json_loads(text, 0, NULL), "plan_id",
			      spec->plan_id, "physical_plan", summary);
	free(text);
	/* the job's coverage records (as a submit answers them), then the
	 * Substrait translation's partial records */
	sv_job_t tmp = {.spec = spec, .ev = ev};
	sv_evidence_answer(sv, &tmp, o);
	json_t *cov = json_object_get(o, "coverage");
	json_t *part = spec->coverage_json
		? json_loads(spec->coverage_json, 0, NULL)
		: NULL;
	if (json_is_array(cov) && part)
		json_array_extend(cov, part);
	json_decref(part);
	json_t *sub = sv_jobspec_substrait_json(spec);
	if (sub)
		json_object_set_new(o, "substrait", sub);
	c->json = sv_json_dump(o);
	sv_evidence_destroy(tmp.ev);
	sv_jobspec_destroy(spec);
	return NULL;
}

static sv_error_t *do_submit(sv_supervisor_t *sv, cmd_t *c)
{
	sv_jobspec_t *spec = NULL;
	sv_evidence_t *ev = NULL;
	json_t *summary = NULL;
	sv_error_t *err = check_spec(sv, c, &spec, &ev, &summary);
	if (err)
		return err;
	const Streamvisor__JobSpec *js = spec->msg;
	if (c->id && sv_find_job(sv, c->id)) {
		/* a registry record of a job this node has (distributed) */
		sv_jobspec_destroy(spec);
		sv_evidence_destroy(ev);
		json_decref(summary);
		return NULL;
	}
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *o = sv->jobs[i];
		if (!c->id && !sv_jobstate_terminal(o->state) &&
		    !strcmp(o->spec->msg->name, js->name) &&
		    sv_dist_same_submit(sv, o, spec)) {
			/* a retried submit (distributed): the same job */
			sv_jobspec_destroy(spec);
			sv_evidence_destroy(ev);
			json_decref(summary);
			json_t *answer = sv_job_json(sv, o, false);
			json_object_set_new(answer, "existing", json_true());
			c->json = sv_json_dump(answer);
			return NULL;
		}
		if (!sv_jobstate_terminal(o->state) &&
		    !strcmp(o->spec->msg->name, js->name)) {
			err = sv_error_new(SV_ERR_CONFLICT,
					   "job name '%s' is in use "
					   "by job '%s' (%s)",
					   js->name, o->id,
					   sv_jobstate_name(o->state));
			sv_jobspec_destroy(spec);
			sv_evidence_destroy(ev);
			json_decref(summary);
			return sv_error_set_field(err, "name");
		}
	}
	sv_job_t *job = sv_calloc(1, sizeof(*job));
	if (c->id)
		snprintf(job->id, sizeof(job->id), "%s", c->id);
	else
		new_job_id(job->id, sizeof(job->id));
	/* distributed: in the registry before it exists here, so every node
	 * runs it (docs/cluster.md); a bounded job with its end offsets */
	job->spec = spec;
	if ((err = sv_dist_bound_job(sv, job, c->id != NULL, c->u.submit.ends,
				     c->u.submit.nends)) ||
	    (!c->id && (err = sv_dist_publish_submit(sv, job)))) {
		free(job->end_offsets);
		free(job);
		sv_jobspec_destroy(spec);
		sv_evidence_destroy(ev);
		json_decref(summary);
		return err;
	}
	job->ev = ev;
	job->created_at_ms = job->state_since_ms = sv_now_ms();
	job->state = SV_JOB_PENDING;
	job->last_ck.id = -1;
	job->obs = sv_obslog_new(job->id, SV_OBSLOG_DEFAULT_CAP);
	json_t *facts = json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:o}", "backend_kind", "streamvisor",
		"backend_version", SV_VERSION_STRING, "supervisor_identity",
		sv->conf.identity ? sv->conf.identity : "", "name", js->name,
		"plan_id", spec->plan_id, "physical_plan", summary);
	json_t *sub = sv_jobspec_substrait_json(spec);
	if (sub) /* RFC 032's submitted logical plan identity */
		json_object_set_new(facts, "substrait", sub);
	sv_obslog_add(job->obs, 0, "job_submitted", facts);
	sv->jobs = sv_realloc(sv->jobs, (sv->njobs + 1) * sizeof(*sv->jobs));
	sv->jobs[sv->njobs++] = job;
	sv_logctx_t lc = {job->id, 0};
	sv_log(&lc, SV_LOG_INFO, "lifecycle", "job '%s' submitted, plan %s",
	       js->name, spec->plan_id);
	json_t *answer = sv_job_json(sv, job, false);
	sv_evidence_answer(sv, job, answer);
	c->json = sv_json_dump(answer);
	job->restart_from = -1;
	/* distributed: a record that is not running any more (this node was
	 * away): the job as the cluster has it, with nothing to run here */
	const char *t = c->adopt_target;
	if (t && (!strcmp(t, "cancelled") || !strcmp(t, "draining"))) {
		if (!strcmp(t, "cancelled")) {
			sv_transition(job, SV_JOB_CANCELLED,
				      "cancelled, as the job registry has it");
		} else {
			sv_transition(job, SV_JOB_RUNNING,
				      "adopted from the job registry");
			sv_transition(job, SV_JOB_DRAINING,
				      "drained on the other nodes");
			sv_transition(job, SV_JOB_CHECKPOINTED,
				      "nothing to drain on this node");
		}
		sv_persist_job(sv, job);
		return NULL;
	}
	sv_persist_job(sv, job);
	sv_start_attempt(sv, job);
	return NULL;
}

static sv_error_t *do_list(sv_supervisor_t *sv, cmd_t *c)
{
	json_t *a = json_array();
	for (size_t i = 0; i < sv->njobs; i++)
		json_array_append_new(a, sv_job_json(sv, sv->jobs[i], c->full));
	c->json = sv_json_dump(json_pack("{s:o}", "jobs", a));
	return NULL;
}

static sv_error_t *do_status(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return sv_no_job(c->id);
	if (job->worker && sv_worker_end(job->worker) != SV_WORKER_RUNNING)
		sv_on_worker_end(sv, job);
	c->json = sv_json_dump(sv_job_json(sv, job, true));
	return NULL;
}

void sv_job_free(sv_job_t *job)
{
	sv_jobspec_destroy(job->spec);
	sv_error_destroy(job->error);
	free(job->result);
	free(job->end_offsets);
	sv_obslog_destroy(job->obs);
	sv_history_destroy(job->history);
	sv_evidence_destroy(job->ev);
	free(job);
}

/* A repartitioned job's purge also removes its internal topic and stage
 * 1's checkpoints (docs/repartition.md). */
static void purge_stages(sv_supervisor_t *sv, sv_job_t *job)
{
	const char *key;
	if (sv_stages_split_at(job->spec->msg, &key) < 0)
		return;
	char *topic = sv_stages_topic(job->id);
	char s1[200];
	snprintf(s1, sizeof(s1), "%s-s1", job->id);
	sv_persist_forget(sv, s1, true);
	sv_clusters_t cl;
	sv_error_t *err = sv_resolve_clusters(sv, job->spec->msg, &cl);
	if (!err)
		err = sv_stage_delete_topic(cl.source, topic);
	sv_log(&(sv_logctx_t){job->id, 0}, err ? SV_LOG_ERROR : SV_LOG_INFO,
	       "supervisor", "%s repartition topic '%s'%s%s",
	       err ? "cannot delete the" : "deleted the", topic,
	       err ? ": " : "", err ? err->message : "");
	sv_error_destroy(err);
	free(topic);
}

static sv_error_t *do_delete(sv_supervisor_t *sv, cmd_t *c)
{
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (strcmp(job->id, c->id))
			continue;
		if (!sv_jobstate_terminal(job->state))
			return sv_conflict(job, "delete");
		/* distributed: every node deletes its copy */
		sv_error_t *err = c->replicated
			? NULL
			: sv_dist_publish(sv, job->id, job->spec, "deleted");
		if (err)
			return err;
		bool purge = c->u.del.purge;
		c->json = sv_json_dump(json_pack("{s:s, s:b, s:b}", "id",
						 job->id, "deleted", 1,
						 "checkpoints_deleted", purge));
		sv_persist_forget(sv, job->id, purge);
		if (purge)
			purge_stages(sv, job);
		sv_job_free(job);
		memmove(&sv->jobs[i], &sv->jobs[i + 1],
			(sv->njobs - i - 1) * sizeof(*sv->jobs));
		sv->njobs--;
		return NULL;
	}
	return sv_no_job(c->id);
}

/* What runs each command type on the supervisor thread. */
static cmd_fn *const handlers[SV_CMD__COUNT] = {
	[SV_CMD_SUBMIT] = do_submit,
	[SV_CMD_DRY_RUN] = do_dry_run,
	[SV_CMD_LIST] = do_list,
	[SV_CMD_STATUS] = do_status,
	[SV_CMD_DELETE] = do_delete,
	[SV_CMD_ACTION] = sv_do_action,
	[SV_CMD_VIEW] = sv_do_get,
	[SV_CMD_METRICS] = sv_do_metrics,
	[SV_CMD_SHUTDOWN] = sv_do_shutdown,
};

/* Complete the parked commands whose answer is ready; called with
 * sv->lock held, after the tick. */
static void complete_parked(sv_supervisor_t *sv)
{
	int64_t now = sv_now_ms();
	for (cmd_t **pp = &sv->parked; *pp;) {
		cmd_t *c = *pp;
		if (!sv->stop && !sv_ck_ready(sv, c, now)) {
			pp = &c->next;
			continue;
		}
		if (sv->stop && !c->json && !c->err)
			c->err = sv_error_new(SV_ERR_RUNTIME,
					      "supervisor is stopping");
		*pp = c->next;
		c->done = true;
		pthread_cond_broadcast(&sv->reply);
	}
}

/* ---- the thread ---- */

/* The audit trail: a job action a principal asked for leaves an
 * observation saying what was asked and how it ended; the principal is
 * added by sv_obslog_add (observe.h), as for every observation the action
 * itself adds. Submit has job_submitted; a deleted job keeps no log (the
 * audit log line in http.c has it). */
static void audit_action(sv_supervisor_t *sv, cmd_t *c)
{
	if (!c->principal || c->type != SV_CMD_ACTION || !c->id)
		return;
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return;
	sv_obslog_add(
		job->obs, job->attempt, "action_requested",
		json_pack("{s:s, s:s}", "action",
			  sv_action_name(c->u.act.action), "outcome",
			  c->err ? sv_errcat_name(c->err->category) : "ok"));
}

static void *sv_main(void *arg)
{
	sv_supervisor_t *sv = arg;
	pthread_mutex_lock(&sv->lock);
	while (!sv->stop) {
		while (sv->head) {
			cmd_t *c = sv->head;
			sv->head = c->next;
			if (!sv->head)
				sv->tail = NULL;
			pthread_mutex_unlock(&sv->lock);
			sv_obs_set_principal(c->principal); /* audit trail */
			c->err = handlers[c->type](sv, c);
			audit_action(sv, c);
			sv_obs_set_principal(NULL);
			pthread_mutex_lock(&sv->lock);
			if (c->park && !c->err) {
				c->next = sv->parked;
				sv->parked = c;
			} else {
				c->done = true;
				pthread_cond_broadcast(&sv->reply);
			}
		}
		sv->worker_event = false;
		pthread_mutex_unlock(&sv->lock);
		tick(sv);
		pthread_mutex_lock(&sv->lock);
		complete_parked(sv);
		if (sv->head || sv->worker_event || sv->stop)
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&sv->wake, &sv->lock, &ts);
	}
	complete_parked(sv);
	pthread_mutex_unlock(&sv->lock);
	/* stop every attempt; jobs stay as they are */
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (job->worker) {
			sv_worker_stop(job->worker);
			sv_worker_destroy(job->worker);
			job->worker = NULL;
		}
	}
	return NULL;
}

static sv_error_t *call(sv_supervisor_t *sv, cmd_t *c, char **json)
{
	c->done = false;
	c->next = NULL;
	c->principal = sv_obs_principal(); /* the caller's; it waits */
	pthread_mutex_lock(&sv->lock);
	if (sv->stop) {
		pthread_mutex_unlock(&sv->lock);
		return sv_error_new(SV_ERR_RUNTIME, "supervisor is stopping");
	}
	if (sv->tail)
		sv->tail->next = c;
	else
		sv->head = c;
	sv->tail = c;
	pthread_cond_signal(&sv->wake);
	while (!c->done)
		pthread_cond_wait(&sv->reply, &sv->lock);
	pthread_mutex_unlock(&sv->lock);
	if (json)
		*json = c->json;
	else
		free(c->json);
	return c->err;
}

/* The first steps of a (re)start, for the recovery timeline
 * (docs/performance.md "Exactly-once recovery"): how long ago the process
 * started (/proc/self/stat's start time, 10 ms ticks), the store's open
 * and the job table's load. */
static void log_start(const sv_supervisor_t *sv, int64_t open_ms,
		      int64_t load_ms)
{
	long long age = -1;
	FILE *f = fopen("/proc/self/stat", "r");
	char buf[1024];
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	unsigned long long start = 0;
	struct timespec ts;
	/* after the command name: state, then fields 4..22 (starttime) */
	if (p &&
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
		   "%*d %*d %*d %*d %*d %*d %llu",
		   &start) == 1 &&
	    !clock_gettime(CLOCK_BOOTTIME, &ts))
		age = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
			(long long)(start * 1000 /
				    (unsigned long long)sysconf(_SC_CLK_TCK));
	sv_log(NULL, SV_LOG_INFO, "supervisor",
	       "data dir opened in %lld ms, %zu job(s) loaded in %lld ms "
	       "(process started %lld ms ago)",
	       (long long)open_ms, sv->njobs, (long long)load_ms, age);
}

sv_error_t *sv_supervisor_new(const sv_svconf_t *conf, sv_supervisor_t **out)
{
	sv_supervisor_t *sv = sv_calloc(1, sizeof(*sv));
	copy_conf(&sv->conf, conf);
	sv->file_roots = (sv_fileroots_t){
		.roots = sv->conf.file_sink_roots,
		.n = sv->conf.nfile_sink_roots,
		.unconfined = sv->conf.file_sinks_unconfined,
	};
	if (!sv->conf.identity) {
		char host[128] = "localhost";
		gethostname(host, sizeof(host) - 1);
		char id[200];
		snprintf(id, sizeof(id), "%s:%d", host, sv->conf.listen_port);
		sv->conf.identity = sv_strdup(id);
	}
	sv->started_ms = sv_now_ms();
	sv_error_t *err = NULL;
	if (sv->conf.data_dir && *sv->conf.data_dir) {
		char *dir;
		if (asprintf(&dir, "%s/checkpoints", sv->conf.data_dir) < 0)
			abort();
		int64_t t0 = sv_mono_ms();
		err = sv_ckstore_open(dir, &sv->store);
		free(dir);
		int64_t t1 = sv_mono_ms();
		if (!err)
			err = sv_persist_load(sv);
		if (!err)
			log_start(sv, t1 - t0, sv_mono_ms() - t1);
	}
	if (err) {
		for (size_t i = 0; i < sv->njobs; i++)
			sv_job_free(sv->jobs[i]);
		free(sv->jobs);
		sv_ckstore_close(sv->store);
		sv_svconf_release(&sv->conf);
		free(sv);
		return err;
	}
	pthread_mutex_init(&sv->lock, NULL);
	pthread_mutex_init(&sv->http_lock, NULL);
	pthread_cond_init(&sv->wake, NULL);
	pthread_cond_init(&sv->reply, NULL);
	if (pthread_create(&sv->thread, NULL, sv_main, sv) != 0) {
		sv_ckstore_close(sv->store);
		sv_svconf_release(&sv->conf);
		free(sv);
		return sv_error_new(SV_ERR_RUNTIME,
				    "cannot start supervisor thread");
	}
	*out = sv;
	return NULL;
}

void sv_supervisor_destroy(sv_supervisor_t *sv)
{
	if (!sv)
		return;
	sv_dist_release(sv); /* its reader posts commands */
	pthread_mutex_lock(&sv->lock);
	sv->stop = true;
	pthread_cond_signal(&sv->wake);
	pthread_mutex_unlock(&sv->lock);
	pthread_join(sv->thread, NULL);
	for (size_t i = 0; i < sv->njobs; i++)
		sv_job_free(sv->jobs[i]);
	free(sv->jobs);
	sv_ckstore_close(sv->store);
	sv_svconf_release(&sv->conf);
	pthread_mutex_destroy(&sv->lock);
	pthread_mutex_destroy(&sv->http_lock);
	pthread_cond_destroy(&sv->wake);
	pthread_cond_destroy(&sv->reply);
	free(sv);
}

sv_error_t *sv_supervisor_submit(sv_supervisor_t *sv, const char *body,
				 size_t len, bool protobuf, char **json)
{
	cmd_t c = {
		.type = SV_CMD_SUBMIT,
		.u.submit = {.body = body, .len = len, .protobuf = protobuf}};
	return call(sv, &c, json);
}

sv_error_t *sv_call(sv_supervisor_t *sv, cmd_t *c, char **json)
{
	return call(sv, c, json);
}

sv_error_t *sv_supervisor_adopt(sv_supervisor_t *sv, const char *job_id,
				const char *spec_json)
{
	return sv_supervisor_adopt_as(sv, job_id, spec_json, NULL, NULL, 0);
}

sv_error_t *sv_supervisor_adopt_as(sv_supervisor_t *sv, const char *job_id,
				   const char *spec_json, const char *target,
				   const int64_t *ends, size_t nends)
{
	cmd_t c = {.type = SV_CMD_SUBMIT,
		   .id = job_id,
		   .adopt_target = target,
		   .u.submit = {.body = spec_json,
				.len = strlen(spec_json),
				.ends = ends,
				.nends = nends}};
	char *json = NULL;
	sv_error_t *err = call(sv, &c, &json);
	free(json);
	return err;
}

sv_error_t *sv_supervisor_dry_run(sv_supervisor_t *sv, const char *body,
				  size_t len, bool protobuf, char **json)
{
	cmd_t c = {
		.type = SV_CMD_DRY_RUN,
		.u.submit = {.body = body, .len = len, .protobuf = protobuf}};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_list(sv_supervisor_t *sv, char **json)
{
	cmd_t c = {.type = SV_CMD_LIST};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_status(sv_supervisor_t *sv, const char *id,
				 char **json)
{
	cmd_t c = {.type = SV_CMD_STATUS, .id = id};
	return call(sv, &c, json);
}

static const char *const action_names[SV_ACTION__COUNT] = {
	[SV_ACTION_CANCEL] = "cancel",          [SV_ACTION_DRAIN] = "drain",
	[SV_ACTION_RESUME] = "resume",          [SV_ACTION_RESTART] = "restart",
	[SV_ACTION_CHECKPOINT] = "checkpoints",
};

static const char *const view_names[SV_VIEW__COUNT] = {
	[SV_VIEW_CHECKPOINTS] = "checkpoints",
	[SV_VIEW_OBSERVATIONS] = "observations",
	[SV_VIEW_PREVIEW] = "preview",
	[SV_VIEW_RESULT] = "result",
	[SV_VIEW_HISTORY] = "history",
	[SV_VIEW_EXECUTION_OBSERVATIONS] = "execution-observations",
};

const char *sv_action_name(sv_action_t action)
{
	return (unsigned)action < SV_ACTION__COUNT ? action_names[action]
						   : "unknown";
}

const char *sv_view_name(sv_view_t view)
{
	return (unsigned)view < SV_VIEW__COUNT ? view_names[view] : "unknown";
}

sv_error_t *sv_supervisor_action(sv_supervisor_t *sv, const char *id,
				 sv_action_t action, const char *body,
				 size_t len, char **json)
{
	cmd_t c = {.type = SV_CMD_ACTION, .id = id, .u.act.action = action};
	if ((unsigned)action >= SV_ACTION__COUNT)
		return sv_error_new(SV_ERR_NOT_FOUND, "unknown action %d",
				    (int)action);
	sv_error_t *err = sv_action_parse(&c, body, len);
	if (err) {
		*json = NULL;
		return err;
	}
	return call(sv, &c, json);
}

int sv_supervisor_shutdown(sv_supervisor_t *sv, int64_t timeout_ms)
{
	sv_dist_release(sv);
	cmd_t c = {.type = SV_CMD_SHUTDOWN,
		   .u.shutdown.timeout_ms = timeout_ms};
	char *left = NULL;
	sv_error_t *err = call(sv, &c, &left);
	int n = left ? atoi(left) : 0;
	free(left);
	sv_error_destroy(err);
	return n;
}

sv_error_t *sv_supervisor_get(sv_supervisor_t *sv, const char *id,
			      sv_view_t view, const char *query, char **json)
{
	cmd_t c = {.type = SV_CMD_VIEW,
		   .id = id,
		   .u.view = {.view = view,
			      .limit = sv_query_uint(query, "limit", 0),
			      /* history: samples after this time (ms) */
			      .after = sv_query_uint(query,
						     view == SV_VIEW_HISTORY
							     ? "since"
							     : "after",
						     0)}};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_delete(sv_supervisor_t *sv, const char *id,
				 const char *query, char **json)
{
	bool purge = false;
	for (const char *p = query; p && *p;) {
		purge |= !strncmp(p, "purge=true", 10) &&
			(p[10] == '\0' || p[10] == '&');
		p = strchr(p, '&');
		p = p ? p + 1 : NULL;
	}
	cmd_t c = {.type = SV_CMD_DELETE, .id = id, .u.del.purge = purge};
	return call(sv, &c, json);
}

void sv_supervisor_count_http(sv_supervisor_t *sv, const char *method,
			      int status)
{
	pthread_mutex_lock(&sv->http_lock);
	size_t i;
	for (i = 0; i < sv->nhttp; i++)
		if (sv->http[i].status == status &&
		    !strcmp(sv->http[i].method, method))
			break;
	if (i == sv->nhttp && sv->nhttp < SV_ARRAY_LEN(sv->http)) {
		snprintf(sv->http[i].method, sizeof(sv->http[i].method), "%s",
			 method);
		sv->http[i].status = status;
		sv->nhttp++;
	}
	if (i < sv->nhttp)
		sv->http[i].n++;
	pthread_mutex_unlock(&sv->http_lock);
}

/* ---- metrics ---- */

char *sv_supervisor_metrics(sv_supervisor_t *sv)
{
	cmd_t c = {.type = SV_CMD_METRICS};
	char *text = NULL;
	sv_error_t *err = call(sv, &c, &text);
	if (err) {
		sv_error_destroy(err);
		return sv_strdup("");
	}
	return text;
}
