/* views.c — what the supervisor shows: the job status document, plan
 * summaries, previews, results, observations, Prometheus metrics and
 * /v1/info. thread: supervisor (sv_supervisor_info: any). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "ingress/coverage.h"
#include "supervisor/drivers.h"
#include "supervisor/history.h"
#include "supervisor/join_views.h"
#include "supervisor/metrics.h"
#include "supervisor/supervisor_int.h"

static json_t *error_json(const sv_error_t *err)
{
	if (!err)
		return json_null();
	const char *kind = sv_errcat_backend_kind(err->category, err->field);
	json_t *o = json_pack("{s:s, s:s?, s:s, s:i}", "category",
			      sv_errcat_name(err->category), "kind", kind,
			      "message", err->message, "attempt", err->attempt);
	if (err->field)
		json_object_set_new(o, "field", json_string(err->field));
	return o;
}

/* Per member (worker thread): its transactional id, checkpoint timings and
 * busy/idle time (Flink's busyTimeMsPerSecond, here as totals and the
 * share of busy time over the attempt). */
static json_t *members_json(sv_job_t *job, int par, const char *node)
{
	json_t *a = json_array();
	bool txn = !strcmp(job->spec->msg->delivery, "exactly_once");
	for (int k = 0; k < par; k++) {
		const sv_member_stats_t *ms = job->worker
			? sv_worker_member_stats(job->worker, k)
			: NULL;
		char txn_id[200];
		if (node) /* distributed: one per node and thread */
			snprintf(txn_id, sizeof(txn_id),
				 "streamvisor-%s-%s-t%d", job->id, node, k);
		else
			snprintf(txn_id, sizeof(txn_id), "streamvisor-%s-%d",
				 job->id, k);
		json_t *m = json_pack("{s:i, s:o}", "member", k,
				      "transactional_id",
				      txn ? json_string(txn_id) : json_null());
		if (ms) {
			uint64_t busy = atomic_load(&ms->busy_us);
			uint64_t idle = atomic_load(&ms->idle_us);
			uint64_t cks = atomic_load(&ms->checkpoints);
			int64_t last = atomic_load(&ms->last_checkpoint);
			json_object_set_new(
				m, "records_in",
				json_integer((json_int_t)atomic_load(
					&ms->records_in)));
			json_object_set_new(
				m, "busy_ms",
				json_integer((json_int_t)(busy / 1000)));
			json_object_set_new(
				m, "idle_ms",
				json_integer((json_int_t)(idle / 1000)));
			json_object_set_new(
				m, "busy_ratio",
				busy + idle ? json_real((double)busy /
							(double)(busy + idle))
					    : json_null());
			json_object_set_new(
				m, "checkpoint",
				json_pack(
					"{s:o, s:I, s:I, s:I}", "last_id",
					last >= 0 ? json_integer(last)
						  : json_null(),
					"count", (json_int_t)cks,
					"last_duration_ms",
					(json_int_t)atomic_load(
						&ms->last_checkpoint_duration_ms),
					"avg_duration_ms",
					(json_int_t)(cks ? atomic_load(
								   &ms->ck_sum_us) /
								     1000 / cks
							 : 0)));
		}
		json_array_append_new(a, m);
	}
	return a;
}

/* The job's memory (docs/performance.md "Memory budget"): its budget
 * (resources.memory_mb, or null) and an estimate of what the running
 * attempt holds, operator state plus the Kafka clients' queues plus a
 * bounded job's kept result. */
static json_t *memory_json(const sv_job_t *job, const sv_progress_t *pr)
{
	int64_t budget = sv_jobspec_memory_budget(job->spec);
	return json_pack("{s:o, s:I, s:I, s:I, s:I}", "budget_bytes",
			 budget ? json_integer(budget) : json_null(),
			 "estimate_bytes",
			 (json_int_t)(pr->state_bytes + pr->kafka_bytes +
				      pr->result_bytes),
			 "state_bytes", (json_int_t)pr->state_bytes,
			 "kafka_queued_bytes", (json_int_t)pr->kafka_bytes,
			 "result_bytes", (json_int_t)pr->result_bytes);
}

static json_t *last_checkpoint_json(sv_job_t *job)
{
	if (job->worker)
		sv_refresh_last_checkpoint(job);
	if (job->last_ck.id < 0)
		return json_null();
	return json_pack(
		"{s:I, s:s, s:o, s:o, s:o}", "id", (json_int_t)job->last_ck.id,
		"status", "committed", "completed_at",
		sv_iso_json(job->last_ck.completed_ms), "duration_ms",
		job->last_ck.completed_ms
			? json_integer(job->last_ck.duration_ms)
			: json_null(),
		"bytes",
		job->last_ck.completed_ms ? json_integer(job->last_ck.bytes)
					  : json_null());
}

/* Distributed mode (docs/cluster.md): this node and its members' group
 * events in the current attempt. */
static json_t *dist_json(const sv_supervisor_t *sv, const sv_job_t *job)
{
	const sv_worker_stats_t *st = job->worker ? sv_worker_stats(job->worker)
						  : NULL;
	uint64_t out = st ? atomic_load(&st->records_out) : 0;
	uint64_t done = st ? atomic_load(&st->records_out_committed) : 0;
	json_t *restores = json_pack(
		"{s:I, s:I, s:I}", "cache",
		(json_int_t)(st ? atomic_load(
					  &st->state_restores[SV_RESTORE_CACHE])
				: 0),
		"topic",
		(json_int_t)(st ? atomic_load(
					  &st->state_restores[SV_RESTORE_TOPIC])
				: 0),
		"memory",
		(json_int_t)(st ? atomic_load(
					  &st->state_restores[SV_RESTORE_MEMORY])
				: 0));
	json_t *o = json_pack(
		"{s:o, s:I, s:f, s:I}", "state_restores", restores,
		"state_restore_bytes",
		(json_int_t)(st ? atomic_load(&st->state_restore_bytes) : 0),
		"state_restore_seconds",
		st ? (double)atomic_load(&st->state_restore_ms) / 1000.0 : 0.0,
		"state_bytes_per_s",
		(json_int_t)(st ? atomic_load(&st->state_bytes_per_s) : 0));
	json_t *base = json_pack(
		"{s:s, s:I, s:I, s:I, s:I}", "node",
		sv->conf.dist.node_id ? sv->conf.dist.node_id : "",
		"records_out_uncommitted",
		(json_int_t)(out > done ? out - done : 0), "rebalances",
		(json_int_t)(st ? atomic_load(&st->rebalances) : 0),
		"partitions_lost",
		(json_int_t)(st ? atomic_load(&st->partitions_lost) : 0),
		"commits_fenced",
		(json_int_t)(st ? atomic_load(&st->commits_fenced) : 0));
	json_object_update(base, o);
	json_decref(o);
	return base;
}

static void job_labels(sv_buf_t *l, const sv_job_t *job);

/* Distributed mode's group events of each job's current attempt on this
 * node (counters that restart with an attempt), labelled with the node. */
static void dist_metrics(sv_supervisor_t *sv, sv_buf_t *b, sv_buf_t *l)
{
	static const struct {
		const char *name, *help;
	} fams[] = {
		{"streamvisor_rebalances_total",
		 "revokes the job's member gave back after a checkpoint or a "
		 "lost assignment (distributed mode)"},
		{"streamvisor_partitions_lost_total",
		 "assignments the job's member lost (distributed mode)"},
		{"streamvisor_commits_fenced_total",
		 "commits the group refused: stale generation (distributed "
		 "mode)"},
	};
	for (size_t f = 0; f < SV_ARRAY_LEN(fams); f++) {
		sv_prom_family(b, fams[f].name, "counter", fams[f].help);
		for (size_t i = 0; i < sv->njobs; i++) {
			sv_job_t *job = sv->jobs[i];
			if (!job->worker)
				continue;
			const sv_worker_stats_t *st = sv_worker_stats(
				job->worker);
			uint64_t n = f == 0 ? atomic_load(&st->rebalances)
				: f == 1    ? atomic_load(&st->partitions_lost)
					    : atomic_load(&st->commits_fenced);
			job_labels(l, job);
			sv_prom_label(l, "node", sv->conf.dist.node_id);
			sv_prom_sample(b, fams[f].name, l->data, (double)n);
		}
	}
	static const char *const from[] = {"cache", "topic", "memory"};
	sv_prom_family(b, "streamvisor_state_restores_total", "counter",
		       "task states restored on assign, by where from: the "
		       "local cache, the state topic, or a suspended task "
		       "kept in memory (distributed mode)");
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (!job->worker)
			continue;
		const sv_worker_stats_t *st = sv_worker_stats(job->worker);
		for (int k = 0; k < 3; k++) {
			job_labels(l, job);
			sv_prom_label(l, "from", from[k]);
			sv_prom_label(l, "node", sv->conf.dist.node_id);
			sv_prom_sample(
				b, "streamvisor_state_restores_total", l->data,
				(double)atomic_load(&st->state_restores[k]));
		}
	}
	sv_prom_family(b, "streamvisor_state_restore_bytes_total", "counter",
		       "bytes of task state restored on assign (distributed "
		       "mode)");
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (!job->worker)
			continue;
		const sv_worker_stats_t *st = sv_worker_stats(job->worker);
		job_labels(l, job);
		sv_prom_label(l, "node", sv->conf.dist.node_id);
		sv_prom_sample(b, "streamvisor_state_restore_bytes_total",
			       l->data,
			       (double)atomic_load(&st->state_restore_bytes));
	}
}

json_t *sv_job_json(sv_supervisor_t *sv, sv_job_t *job, bool full)
{
	const Streamvisor__JobSpec *js = job->spec->msg;
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(job->id));
	json_object_set_new(o, "name", json_string(js->name));
	json_object_set_new(o, "mode", json_string(js->mode));
	json_object_set_new(o, "state",
			    json_string(sv_jobstate_name(job->state)));
	json_object_set_new(o, "attempt", json_integer(job->attempt));
	json_object_set_new(o, "plan_id", json_string(job->spec->plan_id));
	json_t *sub = sv_jobspec_substrait_json(job->spec);
	if (sub) /* the submitted Substrait plan's identity */
		json_object_set_new(o, "substrait", sub);
	if (!full)
		return o;
	json_object_set_new(o, "delivery", json_string(js->delivery));
	json_object_set_new(o, "created_at", sv_iso_json(job->created_at_ms));
	json_object_set_new(o, "state_since", sv_iso_json(job->state_since_ms));
	json_object_set_new(o, "restarts", json_integer(job->restarts));
	json_object_set_new(o, "next_attempt_at",
			    job->state == SV_JOB_RESTARTING
				    ? sv_iso_json(job->next_attempt_at_ms)
				    : json_null());
	json_object_set_new(o, "error", error_json(job->error));

	sv_progress_t pr;
	sv_job_progress(job, &pr);
	int64_t wm = pr.watermark_ms;
	sv_partpos_t *pos = NULL;
	size_t npos = job->worker ? sv_worker_positions(job->worker, &pos) : 0;
	json_object_set_new(o, "watermark_ms",
			    wm == INT64_MIN ? json_null() : json_integer(wm));
	int par = sv_jobspec_parallelism(job->spec);
	json_object_set_new(o, "parallelism", json_integer(par));
	json_object_set_new(o, "members",
			    members_json(job, par, sv->conf.dist.node_id));
	if (sv->conf.dist.name) {
		json_t *d = dist_json(sv, job);
		json_t *ends = sv_dist_ends_json(job);
		if (ends) /* a bounded job's, fixed at submit */
			json_object_set_new(d, "end_offsets", ends);
		json_object_set_new(o, "distributed", d);
	}
	json_t *stages = job->worker
		? sv_worker_stages_json(job->worker, NULL, NULL)
		: NULL;
	if (stages)
		json_object_set_new(o, "stages", stages);
	json_t *parts = json_array();
	int64_t lag_records = 0;
	for (size_t i = 0; i < npos; i++) {
		int64_t lag = sv_partpos_lag(&pos[i]);
		lag_records += lag;
		json_t *p = json_pack(
			"{s:s, s:i, s:I, s:I, s:I, s:i}", "topic",
			js->source->topic ? js->source->topic : "", "partition",
			pos[i].partition, "next_offset",
			(json_int_t)pos[i].next_offset, "end_offset",
			(json_int_t)pos[i].end_offset, "lag_records",
			(json_int_t)lag, "member",
			sv->conf.dist.name && job->worker
				? sv_worker_member_of(job->worker,
						      pos[i].partition)
				: pos[i].partition >= 0 ? pos[i].partition % par
							: 0);
		if (sv->conf.dist.name) /* the partitions this node reads */
			json_object_set_new(p, "node",
					    json_string(sv->conf.dist.node_id));
		json_array_append_new(parts, p);
	}
	free(pos);
	json_t *lag = json_object();
	json_object_set_new(lag, "records", json_integer(lag_records));
	json_object_set_new(
		lag, "seconds",
		wm == INT64_MIN
			? json_null()
			: json_real(fmax(0.0,
					 (double)(sv_now_ms() - wm) / 1000.0)));
	/* wall clock minus the event time of the newest record read: known
	 * as soon as one record is, unlike the watermark */
	int64_t ev = pr.last_event_ms;
	json_object_set_new(
		lag, "event_seconds",
		ev == INT64_MIN
			? json_null()
			: json_real(fmax(0.0,
					 (double)(sv_now_ms() - ev) / 1000.0)));
	json_object_set_new(o, "lag", lag);
	json_object_set_new(o, "partitions", parts);
	json_object_set_new(o, "join", sv_join_status_json(job));
	json_object_set_new(o, "last_checkpoint", last_checkpoint_json(job));
	json_object_set_new(o, "records_in", json_integer((json_int_t)pr.n.in));
	json_object_set_new(o, "records_out",
			    json_integer((json_int_t)pr.n.out));
	json_object_set_new(o, "records_late",
			    json_integer((json_int_t)pr.n.late));
	json_object_set_new(o, "records_invalid",
			    json_integer((json_int_t)pr.n.invalid));
	json_object_set_new(o, "state_size",
			    json_pack("{s:I, s:I}", "bytes",
				      (json_int_t)pr.state_bytes, "keys",
				      (json_int_t)pr.state_keys));
	json_object_set_new(o, "memory", memory_json(job, &pr));
	sv_job_history_status(job, o);
	return o;
}

/* The physical plan as observations report it: one chain of operators,
 * run by `parallelism` members (one instance per task at more than 1). */
json_t *sv_plan_summary(const sv_jobspec_t *spec, const sv_plan_t *plan)
{
	const Streamvisor__JobSpec *js = spec->msg;
	json_t *ops = json_array();
	json_array_append_new(ops,
			      json_pack("{s:s, s:s}", "operator", "source",
					"kind", js->source->kind));
	for (size_t i = 0; i < sv_pipeline_len(plan->pipeline); i++)
		json_array_append_new(
			ops,
			json_pack(
				"{s:s}", "operator",
				sv_pipeline_op(plan->pipeline, i)->ops->name));
	json_array_append_new(ops,
			      json_pack("{s:s, s:s}", "operator", "sink",
					"kind", js->sink->kind));
	return json_pack("{s:s, s:s, s:s?, s:i, s:s, s:o}", "mode", js->mode,
			 "source_kind", js->source->kind, "source_topic",
			 js->source->topic && *js->source->topic
				 ? js->source->topic
				 : NULL,
			 "parallelism", sv_jobspec_parallelism(spec),
			 "delivery", js->delivery, "operators", ops);
}

uint64_t sv_query_uint(const char *query, const char *key, uint64_t def)
{
	size_t kl = strlen(key);
	for (const char *p = query; p && *p;) {
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			char *end;
			unsigned long long v = strtoull(p + kl + 1, &end, 10);
			return v > 0 && (*end == '\0' || *end == '&') ? v : def;
		}
		p = strchr(p, '&');
		p = p ? p + 1 : NULL;
	}
	return def;
}

static json_t *lines_to_array(const char *lines)
{
	json_t *a = json_array();
	const char *p = lines;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		json_t *row = json_loadb(p, n, 0, NULL);
		json_array_append_new(a, row ? row : json_stringn(p, n));
		p += n + (nl ? 1 : 0);
	}
	return a;
}

sv_error_t *sv_do_get(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = sv_find_job(sv, c->id);
	if (!job)
		return sv_no_job(c->id);
	size_t lim = c->u.view.limit;
	switch (c->u.view.view) {
	case SV_VIEW_CHECKPOINTS:
		return sv_do_checkpoint_list(sv, c);
	case SV_VIEW_PREVIEW: {
		size_t limit = lim ? lim : 10;
		char *lines = job->worker
			? sv_worker_preview(job->worker, limit)
			: sv_strdup("");
		c->json = sv_json_dump(json_pack("{s:s, s:o}", "id", job->id,
						 "rows",
						 lines_to_array(lines)));
		free(lines);
		return NULL;
	}
	case SV_VIEW_OBSERVATIONS: {
		json_t *page = sv_obslog_page(job->obs, c->u.view.after,
					      lim ? lim : 100);
		json_object_set_new(page, "id", json_string(job->id));
		c->json = sv_json_dump(page);
		return NULL;
	}
	case SV_VIEW_HISTORY:
		c->json = sv_json_dump(sv_job_history_json(
			job, (int64_t)c->u.view.after, lim ? lim : SIZE_MAX));
		return NULL;
	case SV_VIEW_EXECUTION_OBSERVATIONS:
		return sv_do_execution_observations(sv, c);
	case SV_VIEW_RESULT: {
		if (!sv_jobspec_bounded(job->spec))
			return sv_error_set_job(
				sv_error_new(SV_ERR_CONFLICT,
					     "job '%s' is a stream: collect on "
					     "an unbounded "
					     "stream is refused; use preview",
					     job->id),
				job->id, job->attempt);
		if (job->state != SV_JOB_COMPLETED)
			return sv_error_set_job(
				sv_error_new(SV_ERR_CONFLICT,
					     "result of bounded job '%s' is "
					     "available once it "
					     "is completed; it is %s",
					     job->id,
					     sv_jobstate_name(job->state)),
				job->id, job->attempt);
		size_t limit = lim ? lim : SIZE_MAX;
		const char *p = job->result ? job->result : "";
		size_t n = 0, len = 0;
		while (n < limit && p[len]) {
			const char *nl = strchr(p + len, '\n');
			len = nl ? (size_t)(nl - p) + 1 : strlen(p);
			n++;
		}
		char *lines = sv_strndup(p, len);
		c->json = sv_json_dump(
			json_pack("{s:s, s:I, s:b, s:o}", "id", job->id,
				  "row_count", (json_int_t)n, "truncated",
				  job->result_truncated || n < job->result_rows,
				  "rows", lines_to_array(lines)));
		free(lines);
		return NULL;
	}
	case SV_VIEW__COUNT:
		break;
	}
	return sv_error_new(SV_ERR_NOT_FOUND, "unknown view %d",
			    (int)c->u.view.view);
}

static void job_labels(sv_buf_t *l, const sv_job_t *job)
{
	sv_buf_reset(l);
	sv_prom_label(l, "job", job->id);
	sv_prom_label(l, "name", job->spec->msg->name);
}

/* Per member of every running job: busy and idle seconds (rate() of the
 * busy counter is Flink's busyTimeMsPerSecond / 1000), checkpoints and
 * their total duration. */
static void member_metrics(sv_supervisor_t *sv, sv_buf_t *b, sv_buf_t *l)
{
	static const char *const names[][3] = {
		{"streamvisor_member_busy_seconds_total", "counter",
		 "time a member (worker thread) spent processing"},
		{"streamvisor_member_idle_seconds_total", "counter",
		 "time a member waited for input"},
		{"streamvisor_member_checkpoints_total", "counter",
		 "checkpoints a member committed"},
		{"streamvisor_member_checkpoint_seconds_total", "counter",
		 "time a member spent taking its checkpoints"},
		{"streamvisor_member_last_checkpoint_duration_seconds", "gauge",
		 "duration of a member's last checkpoint"},
	};
	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		sv_prom_family(b, names[f][0], names[f][1], names[f][2]);
		for (size_t i = 0; i < sv->njobs; i++) {
			sv_job_t *job = sv->jobs[i];
			if (!job->worker)
				continue;
			int par = sv_worker_parallelism(job->worker);
			for (int k = 0; k < par; k++) {
				const sv_member_stats_t *ms =
					sv_worker_member_stats(job->worker, k);
				double v = 0;
				switch (f) {
				case 0:
					v = (double)atomic_load(&ms->busy_us) /
						1e6;
					break;
				case 1:
					v = (double)atomic_load(&ms->idle_us) /
						1e6;
					break;
				case 2:
					v = (double)atomic_load(
						&ms->checkpoints);
					break;
				case 3:
					v = (double)atomic_load(
						    &ms->ck_sum_us) /
						1e6;
					break;
				default:
					v = (double)atomic_load(
						    &ms->last_checkpoint_duration_ms) /
						1e3;
				}
				char member[16];
				snprintf(member, sizeof(member), "%d", k);
				job_labels(l, job);
				sv_prom_label(l, "member", member);
				sv_prom_sample(b, names[f][0], l->data, v);
			}
		}
	}
}

/* Repartitioned jobs (docs/repartition.md): rows and bytes written to
 * the internal topic, and what stage 1 has not read of it yet. One family
 * at a time, each with its samples grouped under it. */
static void repartition_metrics(sv_supervisor_t *sv, sv_buf_t *b, sv_buf_t *l)
{
	static const char *const fams[][3] = {
		{"streamvisor_repartition_records_total", "counter",
		 "rows stage 0 wrote to the repartition topic"},
		{"streamvisor_repartition_bytes_total", "counter",
		 "bytes stage 0 wrote to the repartition topic"},
		{"streamvisor_repartition_lag_records", "gauge",
		 "repartition topic records stage 1 has not read"},
	};
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		sv_prom_family(b, fams[f][0], fams[f][1], fams[f][2]);
		for (size_t i = 0; i < sv->njobs; i++) {
			sv_job_t *job = sv->jobs[i];
			const char *topic;
			uint64_t lag;
			json_t *st = job->worker
				? sv_worker_stages_json(job->worker, &topic,
							&lag)
				: NULL;
			if (!st)
				continue;
			double v = f == 0
				? (double)atomic_load(
					  &sv_worker_stats(job->worker)
						   ->records_repartitioned)
				: f == 1
				? (double)json_integer_value(json_object_get(
					  json_array_get(st, 0), "bytes_out"))
				: (double)lag;
			json_decref(st);
			job_labels(l, job);
			sv_prom_label(l, "topic", topic);
			sv_prom_sample(b, fams[f][0], l->data, v);
		}
	}
}

sv_error_t *sv_do_metrics(sv_supervisor_t *sv, cmd_t *c)
{
	sv_buf_t b, l;
	sv_buf_init(&b);
	sv_buf_init(&l);

	sv_prom_family(&b, "streamvisor_up", "gauge",
		       "1 while the supervisor serves");
	sv_prom_sample(&b, "streamvisor_up", NULL, 1);
	sv_dist_metrics(sv, &b); /* distributed mode's leader gauges */
	sv_prom_family(&b, "streamvisor_jobs", "gauge", "jobs by state");
	for (int s = 0; s < SV_JOB__COUNT; s++) {
		size_t n = 0;
		for (size_t i = 0; i < sv->njobs; i++)
			n += sv->jobs[i]->state == (sv_jobstate_t)s;
		sv_buf_reset(&l);
		sv_prom_label(&l, "state", sv_jobstate_name((sv_jobstate_t)s));
		sv_prom_sample(&b, "streamvisor_jobs", l.data, (double)n);
	}

	sv_prom_family(&b, "streamvisor_job_state", "gauge",
		       "1 for the job's current state, 0 for the others");
	for (size_t i = 0; i < sv->njobs; i++) {
		for (int s = 0; s < SV_JOB__COUNT; s++) {
			job_labels(&l, sv->jobs[i]);
			sv_prom_label(&l, "state",
				      sv_jobstate_name((sv_jobstate_t)s));
			sv_prom_sample(&b, "streamvisor_job_state", l.data,
				       sv->jobs[i]->state == (sv_jobstate_t)s);
		}
	}
	/* one value per job and family; NAN: no sample for that job */
	enum {
		F_ATTEMPT,
		F_RESTARTS,
		F_IN,
		F_OUT,
		F_INVALID,
		F_LATE,
		F_SBYTES,
		F_SKEYS,
		F_MEM,
		F_MEMBUDGET,
		F_WM,
		F_LAG_S,
		F_EVLAG_S,
		F_CKS,
		F_CKFAIL,
		F_CKBYTES,
		F_CKAGE,
		F_COMMITS,
		F_COMMITFAIL,
		F__N
	};
	static const struct {
		const char *name, *type, *help;
	} fams[F__N] = {
		{"streamvisor_job_attempt", "gauge", "current attempt number"},
		{"streamvisor_job_restarts_total", "counter",
		 "restarts of the job"},
		{"streamvisor_records_in_total", "counter", "records read"},
		{"streamvisor_records_out_total", "counter", "records written"},
		{"streamvisor_records_invalid_total", "counter",
		 "input records that could not be decoded"},
		{"streamvisor_records_late_total", "counter",
		 "records behind the watermark (dropped or side output)"},
		{"streamvisor_state_bytes", "gauge", "operator state size"},
		{"streamvisor_state_keys", "gauge",
		 "keys held in operator state"},
		{"streamvisor_memory_bytes", "gauge",
		 "the job's memory estimate: operator state and the Kafka "
		 "clients' queues"},
		{"streamvisor_memory_budget_bytes", "gauge",
		 "the job's memory budget (resources.memory_mb)"},
		{"streamvisor_watermark_seconds", "gauge",
		 "the job's event-time watermark, as seconds since the epoch"},
		{"streamvisor_source_lag_seconds", "gauge",
		 "wall clock minus the job's watermark"},
		{"streamvisor_source_event_lag_seconds", "gauge",
		 "wall clock minus the event time of the newest record read"},
		{"streamvisor_checkpoints_total", "counter",
		 "checkpoints committed"},
		{"streamvisor_checkpoint_failures_total", "counter",
		 "checkpoints that failed"},
		{"streamvisor_checkpoint_size_bytes", "gauge",
		 "size of the last committed checkpoint"},
		{"streamvisor_last_checkpoint_age_seconds", "gauge",
		 "time since the last committed checkpoint completed"},
		{"streamvisor_sink_commits_total", "counter",
		 "sink commits (transactions or offset commits) that "
		 "succeeded"},
		{"streamvisor_sink_commit_failures_total", "counter",
		 "sink commits that failed"},
	};
	size_t nj = sv->njobs;
	double *v = sv_calloc((nj ? nj : 1) * F__N, sizeof(double));
	uint64_t *hist = sv_calloc((nj ? nj : 1) * (SV_CK_BUCKETS + 2),
				   sizeof(uint64_t));
	int64_t now = sv_now_ms();
	for (size_t i = 0; i < nj; i++) {
		sv_job_t *job = sv->jobs[i];
		double *jv = &v[i * F__N];
		uint64_t *h = &hist[i * (SV_CK_BUCKETS + 2)];
		sv_progress_t pr;
		sv_job_progress(job, &pr);
		for (int k = 0; k <= SV_CK_BUCKETS; k++)
			h[k] = pr.n.ck_hist[k];
		h[SV_CK_BUCKETS + 1] = pr.n.ck_sum_us;
		int64_t wm = pr.watermark_ms;
		jv[F_ATTEMPT] = job->attempt;
		jv[F_RESTARTS] = job->restarts;
		jv[F_IN] = (double)pr.n.in;
		jv[F_OUT] = (double)pr.n.out;
		jv[F_INVALID] = (double)pr.n.invalid;
		jv[F_LATE] = (double)pr.n.late;
		jv[F_SBYTES] = (double)pr.state_bytes;
		jv[F_SKEYS] = (double)pr.state_keys;
		jv[F_MEM] = (double)(pr.state_bytes + pr.kafka_bytes +
				     pr.result_bytes);
		int64_t budget = sv_jobspec_memory_budget(job->spec);
		jv[F_MEMBUDGET] = budget ? (double)budget : NAN;
		jv[F_WM] = wm == INT64_MIN ? NAN : (double)wm / 1000.0;
		jv[F_LAG_S] = wm == INT64_MIN
			? NAN
			: fmax(0.0, (double)(now - wm) / 1000.0);
		int64_t ev = pr.last_event_ms;
		jv[F_EVLAG_S] = ev == INT64_MIN
			? NAN
			: fmax(0.0, (double)(now - ev) / 1000.0);
		jv[F_CKS] = (double)pr.n.checkpoints;
		jv[F_CKFAIL] = (double)pr.n.ck_failures;
		jv[F_CKBYTES] = job->last_ck.completed_ms
			? (double)job->last_ck.bytes
			: NAN;
		jv[F_CKAGE] = job->last_ck.completed_ms
			? (double)(now - job->last_ck.completed_ms) / 1000.0
			: NAN;
		bool txn = !strcmp(job->spec->msg->delivery, "exactly_once");
		jv[F_COMMITS] = (double)pr.n.checkpoints;
		jv[F_COMMITFAIL] = txn ? (double)pr.n.ck_failures : 0;
	}
	for (int f = 0; f < F__N; f++) {
		sv_prom_family(&b, fams[f].name, fams[f].type, fams[f].help);
		for (size_t i = 0; i < nj; i++) {
			if (isnan(v[i * F__N + f]))
				continue;
			job_labels(&l, sv->jobs[i]);
			sv_prom_sample(&b, fams[f].name, l.data,
				       v[i * F__N + f]);
		}
	}
	sv_prom_family(&b, "streamvisor_checkpoint_duration_seconds",
		       "histogram", "time to take and commit a checkpoint");
	for (size_t i = 0; i < nj; i++) {
		const uint64_t *h = &hist[i * (SV_CK_BUCKETS + 2)];
		for (int k = 0; k <= SV_CK_BUCKETS; k++) {
			char le[32];
			if (k < SV_CK_BUCKETS)
				snprintf(le, sizeof(le), "%g",
					 sv_ck_buckets_s[k]);
			else
				snprintf(le, sizeof(le), "+Inf");
			job_labels(&l, sv->jobs[i]);
			sv_prom_label(&l, "le", le);
			sv_prom_sample(
				&b, "streamvisor_checkpoint_duration_seconds_bucket",
				l.data, (double)h[k]);
		}
		job_labels(&l, sv->jobs[i]);
		sv_prom_sample(&b,
			       "streamvisor_checkpoint_duration_seconds_sum",
			       l.data, (double)h[SV_CK_BUCKETS + 1] / 1e6);
		sv_prom_sample(&b,
			       "streamvisor_checkpoint_duration_seconds_count",
			       l.data, (double)h[SV_CK_BUCKETS]);
	}
	free(v);
	free(hist);
	if (sv->conf.dist.name)
		dist_metrics(sv, &b, &l);
	sv_prom_family(&b, "streamvisor_source_lag_records", "gauge",
		       "records behind the end of each source partition");
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (!job->worker)
			continue;
		sv_partpos_t *pos;
		size_t n = sv_worker_positions(job->worker, &pos);
		for (size_t p = 0; p < n; p++) {
			if (pos[p].end_offset < 0)
				continue;
			job_labels(&l, job);
			const char *topic = job->spec->msg->source->topic;
			sv_prom_label(&l, "topic",
				      topic && *topic ? topic : "-");
			char part[16];
			snprintf(part, sizeof(part), "%d", pos[p].partition);
			sv_prom_label(&l, "partition", part);
			sv_prom_sample(&b, "streamvisor_source_lag_records",
				       l.data, (double)sv_partpos_lag(&pos[p]));
		}
		free(pos);
	}
	member_metrics(sv, &b, &l);
	sv_join_metrics(sv, &b, &l);
	repartition_metrics(sv, &b, &l);
	sv_prom_family(&b, "streamvisor_http_requests_total", "counter",
		       "HTTP requests served");
	pthread_mutex_lock(&sv->http_lock);
	for (size_t i = 0; i < sv->nhttp; i++) {
		char code[8];
		snprintf(code, sizeof(code), "%d", sv->http[i].status);
		sv_buf_reset(&l);
		sv_prom_label(&l, "method", sv->http[i].method);
		sv_prom_label(&l, "code", code);
		sv_prom_sample(&b, "streamvisor_http_requests_total", l.data,
			       (double)sv->http[i].n);
	}
	pthread_mutex_unlock(&sv->http_lock);
	sv_buf_release(&l);
	c->json = sv_buf_detach(&b);
	return NULL;
}

bool sv_dev_default(sv_supervisor_t *sv)
{
	const sv_cluster_t *d = sv_svconf_cluster(&sv->conf, "default");
	return d && d->dev_embedded;
}

char *sv_supervisor_info(sv_supervisor_t *sv)
{
	sv_coverage_env_t env = {sv_dev_default(sv), sv->store != NULL,
				 sv_registry_drivers()};
	json_t *cov = sv_coverage_info(&env);
	json_t *clusters = json_array();
	for (size_t i = 0; i < sv->conf.nclusters; i++)
		json_array_append_new(
			clusters,
			json_pack("{s:s, s:b}", "name",
				  sv->conf.clusters[i].name, "development",
				  sv->conf.clusters[i].dev_embedded));
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:o, s:o, s:s, s:s, s:O, s:O, s:O}",
		"backend_kind", "streamvisor", "backend_version",
		SV_VERSION_STRING, "supervisor_identity", sv->conf.identity,
		"started_at", sv_iso_json(sv->started_ms), "clusters", clusters,
		"adapter_name", SV_ADAPTER_NAME, "adapter_version",
		SV_VERSION_STRING, "capabilities",
		json_object_get(cov, "capabilities"), "capability_vocabulary",
		json_object_get(cov, "vocabulary"), "capability_notes",
		json_object_get(cov, "notes"));
	json_decref(cov);
	return sv_json_dump(o);
}
