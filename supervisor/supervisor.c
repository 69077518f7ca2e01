/* supervisor.c — the job table and its thread (see supervisor.h).
 *
 * Callers on other threads (HTTP handlers, tests) build a command, append it
 * to the queue and wait on its completion; the supervisor thread runs each
 * command's function against the job table, then ticks: it notices attempts
 * that ended (workers only flip an atomic and wake us), applies the restart
 * policy, and starts attempts whose backoff has passed. Every state change
 * goes through transition(), which logs old state, new state, reason and
 * attempt. */
#define _GNU_SOURCE
#include "supervisor/supervisor.h"

#include <jansson.h>
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
#include "supervisor/coverage.h"
#include "supervisor/job.h"
#include "supervisor/metrics.h"
#include "supervisor/plan.h"
#include "supervisor/spec.h"

#define TICK_MS 100
#define SAMPLE_MS 5000 /* watermark and lag samples */

typedef struct cmd cmd_t;
typedef sv_error_t *(cmd_fn)(sv_supervisor_t *sv, cmd_t *c);

struct cmd {
	cmd_fn *fn;
	const char *id, *what, *body, *query;
	size_t len;
	bool protobuf;
	char *json;
	sv_error_t *err;
	bool done;
	cmd_t *next;
};

struct sv_supervisor {
	sv_svconf_t conf;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;  /* supervisor waits: commands, worker ends */
	pthread_cond_t reply; /* callers wait: their command is done */
	cmd_t *head, *tail;
	bool stop;
	bool worker_event;
	/* job table: supervisor thread only */
	sv_job_t **jobs;
	size_t njobs;
	/* HTTP request counters by method and status class */
	pthread_mutex_t http_lock;
	struct http_count {
		char method[8];
		int status;
		uint64_t n;
	} http[64];
	size_t nhttp;
	int64_t started_ms;
};

static const char *const state_names[SV_JOB__COUNT] = {
	"pending", "running", "lagging", "draining", "checkpointed",
	"restarting", "failed", "cancelled", "completed",
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
	dst->listen_host = src->listen_host ? sv_strdup(src->listen_host) : NULL;
	dst->listen_port = src->listen_port;
	dst->data_dir = src->data_dir ? sv_strdup(src->data_dir) : NULL;
	dst->secrets_path = src->secrets_path ? sv_strdup(src->secrets_path) : NULL;
	dst->identity = src->identity ? sv_strdup(src->identity) : NULL;
	for (size_t i = 0; i < src->nclusters; i++) {
		const sv_cluster_t *c = &src->clusters[i];
		sv_svconf_set_cluster(dst, c->name, c->bootstrap, c->dev_embedded);
		sv_cluster_t *d = (sv_cluster_t *)sv_svconf_cluster(dst, c->name);
		d->nprops = c->nprops;
		d->props = sv_calloc(c->nprops ? c->nprops : 1, sizeof(sv_kv_t));
		for (size_t k = 0; k < c->nprops; k++) {
			d->props[k].key = sv_strdup(c->props[k].key);
			d->props[k].value = sv_strdup(c->props[k].value);
		}
	}
}

/* ---- time formatting ---- */

static json_t *iso_time(int64_t ms)
{
	if (ms <= 0)
		return json_null();
	char buf[40];
	sv_format_iso8601(ms, buf, sizeof(buf));
	return json_string(buf);
}

static char *dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* ---- jobs ---- */

static sv_job_t *find_job(sv_supervisor_t *sv, const char *id)
{
	for (size_t i = 0; i < sv->njobs; i++)
		if (!strcmp(sv->jobs[i]->id, id))
			return sv->jobs[i];
	return NULL;
}

static sv_error_t *no_job(const char *id)
{
	sv_error_t *err = sv_error_new(SV_ERR_NOT_FOUND, "job '%s' does not exist",
				       id);
	return sv_error_set_job(err, id, 0);
}

static void transition(sv_job_t *job, sv_jobstate_t to, const char *reason)
{
	sv_logctx_t lc = {job->id, job->attempt};
	sv_log(&lc, SV_LOG_INFO, "lifecycle", "state %s -> %s (%s)",
	       sv_jobstate_name(job->state), sv_jobstate_name(to), reason);
	sv_obslog_add(job->obs, job->attempt, "state_transition",
		      json_pack("{s:s, s:s, s:s}", "from",
				sv_jobstate_name(job->state), "to",
				sv_jobstate_name(to), "reason", reason));
	job->state = to;
	job->state_since_ms = sv_now_ms();
}

static void observe_error(sv_job_t *job, const sv_error_t *err)
{
	sv_obslog_add(job->obs, job->attempt, "error",
		      json_pack("{s:s, s:s, s:b, s:b}", "category",
				sv_errcat_name(err->category), "message",
				err->message, "retriable", err->retriable,
				"fatal", err->fatal));
}

static void new_job_id(char *out, size_t len)
{
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t x = (uint64_t)sv_mono_ns() ^ (uint64_t)sv_now_ms() << 20;
		memcpy(r, &x, sizeof(r));
	}
	snprintf(out, len, "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
		 r[3], r[4], r[5], r[6], r[7]);
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

static sv_error_t *resolve_cluster(sv_supervisor_t *sv, const char *kind,
				   const char *name, const char *field,
				   const sv_cluster_t **out)
{
	*out = NULL;
	if (strcmp(kind, "kafka"))
		return NULL;
	*out = sv_svconf_cluster(&sv->conf, name);
	if (!*out) {
		sv_error_t *err = sv_error_new(SV_ERR_BINDING,
			"unknown cluster profile '%s'", name);
		return sv_error_set_field(err, field);
	}
	return NULL;
}

static void start_attempt(sv_supervisor_t *sv, sv_job_t *job)
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
	resolve_cluster(sv, js->source->kind, js->source->cluster, "source.cluster",
			&wc.source_cluster);
	resolve_cluster(sv, js->sink->kind, js->sink->cluster, "sink.cluster",
			&wc.sink_cluster);
	if (js->dead_letter)
		resolve_cluster(sv, js->dead_letter->kind, js->dead_letter->cluster,
				"dead_letter.cluster", &wc.dlq_cluster);
	if (js->late_sink)
		resolve_cluster(sv, js->late_sink->kind, js->late_sink->cluster,
				"late_sink.cluster", &wc.late_cluster);
	job->attempt++;
	job->attempt_started_ms = sv_now_ms();
	wc.obs = job->obs;
	sv_obslog_add(job->obs, job->attempt, "attempt_started",
		      json_pack("{s:i}", "restarts", job->restarts));
	sv_error_t *err = sv_worker_start(&wc, &job->worker);
	if (err) {
		sv_error_destroy(job->error);
		job->error = sv_error_set_job(err, job->id, job->attempt);
		transition(job, SV_JOB_FAILED, err->message);
		return;
	}
	transition(job, SV_JOB_RUNNING, job->attempt == 1 ? "first attempt started"
							  : "attempt started");
}

static void absorb_counters(sv_job_t *job)
{
	const sv_worker_stats_t *st = sv_worker_stats(job->worker);
	job->done_in += atomic_load(&st->records_in);
	job->done_out += atomic_load(&st->records_out);
	job->done_invalid += atomic_load(&st->records_invalid);
	job->done_late += atomic_load(&st->records_late);
	int64_t wm = atomic_load(&st->watermark_ms);
	if (wm != INT64_MIN)
		job->last_watermark_ms = wm;
}

/* Restart policy: exponential backoff with jitter, bounded attempts within a
 * window, reset after a healthy period. Decides from category and flags. */
static void schedule_restart(sv_job_t *job, const sv_error_t *err)
{
	const Streamvisor__Restart *rp = job->spec->msg->restart;
	int64_t now = sv_now_ms();
	if (job->attempt_started_ms &&
	    now - job->attempt_started_ms >= rp->reset_after_ms) {
		job->attempts_in_window = 0;
		job->backoff_ms = 0;
	}
	if (!job->window_start_ms || now - job->window_start_ms > rp->window_ms) {
		job->window_start_ms = now;
		job->attempts_in_window = 0;
	}
	job->attempts_in_window++;
	if (!err->retriable || err->fatal) {
		transition(job, SV_JOB_FAILED, err->message);
		return;
	}
	if (job->attempts_in_window >= rp->max_attempts) {
		sv_error_t *ex = sv_error_new(SV_ERR_RETRY_EXHAUSTED,
			"gave up after %d attempts: %s", job->attempts_in_window,
			err->message);
		sv_error_set_job(ex, job->id, job->attempt);
		sv_error_destroy(job->error);
		job->error = ex;
		transition(job, SV_JOB_FAILED, ex->message);
		return;
	}
	int64_t b = job->backoff_ms ? (int64_t)(job->backoff_ms * rp->multiplier)
				    : rp->initial_backoff_ms;
	if (b > rp->max_backoff_ms)
		b = rp->max_backoff_ms;
	job->backoff_ms = b;
	/* full jitter in [b/2, b] keeps the growth visible and spreads herds */
	uint32_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)now;
	int64_t wait = b / 2 + (int64_t)(r % (uint32_t)(b / 2 + 1));
	job->next_attempt_at_ms = now + wait;
	job->restarts++;
	sv_obslog_add(job->obs, job->attempt, "restart_scheduled",
		      json_pack("{s:I, s:I, s:i, s:s}", "backoff_ms",
				(json_int_t)wait, "next_attempt_at_ms",
				(json_int_t)job->next_attempt_at_ms, "restarts",
				job->restarts, "category",
				sv_errcat_name(err->category)));
	char reason[512];
	snprintf(reason, sizeof(reason), "%s error, next attempt in %lld ms: %s",
		 sv_errcat_name(err->category), (long long)wait, err->message);
	transition(job, SV_JOB_RESTARTING, reason);
}

static void on_worker_end(sv_supervisor_t *sv, sv_job_t *job)
{
	(void)sv;
	sv_worker_end_t end = sv_worker_end(job->worker);
	absorb_counters(job);
	if (end == SV_WORKER_FAILED) {
		sv_error_destroy(job->error);
		job->error = sv_error_copy(sv_worker_error(job->worker));
		observe_error(job, job->error);
	}
	if (end == SV_WORKER_COMPLETED && sv_jobspec_bounded(job->spec)) {
		free(job->result);
		job->result = sv_worker_result(job->worker, SIZE_MAX,
					       &job->result_rows,
					       &job->result_truncated);
	}
	sv_worker_destroy(job->worker);
	job->worker = NULL;
	switch (end) {
	case SV_WORKER_COMPLETED:
		transition(job, SV_JOB_COMPLETED, "input ended and all output "
			   "was committed");
		break;
	case SV_WORKER_STOPPED:
		transition(job, SV_JOB_CANCELLED, "cancelled by request");
		break;
	default:
		if (job->cancel_requested)
			transition(job, SV_JOB_CANCELLED, "cancelled by request");
		else
			schedule_restart(job, job->error);
		break;
	}
}

/* Records behind the end of the source, summed over partitions; *wm the
 * job's watermark (INT64_MIN when none yet). */
static int64_t job_lag(sv_job_t *job, int64_t *wm)
{
	*wm = job->last_watermark_ms ? job->last_watermark_ms : INT64_MIN;
	if (!job->worker)
		return 0;
	int64_t w = atomic_load(&sv_worker_stats(job->worker)->watermark_ms);
	if (w != INT64_MIN)
		*wm = w;
	sv_partpos_t *pos;
	size_t n = sv_worker_positions(job->worker, &pos);
	int64_t lag = 0;
	for (size_t i = 0; i < n; i++)
		if (pos[i].end_offset >= 0 && pos[i].next_offset >= 0 &&
		    pos[i].end_offset > pos[i].next_offset)
			lag += pos[i].end_offset - pos[i].next_offset;
	free(pos);
	return lag;
}

/* Watermark and lag samples for the observations; running <-> lagging
 * while the lag stays above the job's thresholds for the grace period. */
static void watch_progress(sv_job_t *job, int64_t now)
{
	if (!job->worker || (job->state != SV_JOB_RUNNING &&
			     job->state != SV_JOB_LAGGING))
		return;
	int64_t wm;
	int64_t records = job_lag(job, &wm);
	double seconds = wm == INT64_MIN ? -1 : (double)(now - wm) / 1000.0;
	if (now - job->last_sample_ms >= SAMPLE_MS) {
		job->last_sample_ms = now;
		sv_obslog_add(job->obs, job->attempt, "watermark_sample",
			json_pack("{s:o, s:o}", "watermark_ms", wm == INT64_MIN
				  ? json_null() : json_integer(wm),
				  "watermark_lag_s", seconds < 0 ? json_null()
				  : json_real(seconds)));
		sv_obslog_add(job->obs, job->attempt, "lag_sample",
			json_pack("{s:I, s:o}", "records", (json_int_t)records,
				  "seconds", seconds < 0 ? json_null()
				  : json_real(seconds)));
	}
	const Streamvisor__Lag *lp = job->spec->msg->lag;
	bool over = (lp->max_records > 0 && records > lp->max_records) ||
		    (lp->max_seconds > 0 && seconds > (double)lp->max_seconds);
	if (!over) {
		job->lag_since_ms = 0;
		if (job->state == SV_JOB_LAGGING)
			transition(job, SV_JOB_RUNNING, "lag recovered");
		return;
	}
	if (!job->lag_since_ms)
		job->lag_since_ms = now;
	if (job->state == SV_JOB_RUNNING && now - job->lag_since_ms >= lp->grace_ms) {
		char reason[200];
		snprintf(reason, sizeof(reason), "lag of %lld records, %.1f s "
			 "above the thresholds (%lld records, %lld s) for %lld ms",
			 (long long)records, seconds < 0 ? 0 : seconds,
			 (long long)lp->max_records, (long long)lp->max_seconds,
			 (long long)(now - job->lag_since_ms));
		transition(job, SV_JOB_LAGGING, reason);
	}
}

static void tick(sv_supervisor_t *sv)
{
	int64_t now = sv_now_ms();
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (job->worker && sv_worker_end(job->worker) != SV_WORKER_RUNNING)
			on_worker_end(sv, job);
		watch_progress(job, now);
		if (job->state == SV_JOB_RESTARTING && !job->worker &&
		    now >= job->next_attempt_at_ms)
			start_attempt(sv, job);
		if (job->state == SV_JOB_PENDING && !job->worker)
			start_attempt(sv, job);
	}
}

/* ---- JSON views ---- */

static json_t *error_json(const sv_error_t *err)
{
	if (!err)
		return json_null();
	json_t *o = json_pack("{s:s, s:s, s:i}", "category",
			      sv_errcat_name(err->category), "message",
			      err->message, "attempt", err->attempt);
	if (err->field)
		json_object_set_new(o, "field", json_string(err->field));
	return o;
}

static json_t *job_json(sv_supervisor_t *sv, sv_job_t *job, bool full)
{
	(void)sv;
	const Streamvisor__JobSpec *js = job->spec->msg;
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(job->id));
	json_object_set_new(o, "name", json_string(js->name));
	json_object_set_new(o, "mode", json_string(js->mode));
	json_object_set_new(o, "state", json_string(sv_jobstate_name(job->state)));
	json_object_set_new(o, "attempt", json_integer(job->attempt));
	json_object_set_new(o, "plan_id", json_string(job->spec->plan_id));
	if (!full)
		return o;
	json_object_set_new(o, "delivery", json_string(js->delivery));
	json_object_set_new(o, "created_at", iso_time(job->created_at_ms));
	json_object_set_new(o, "state_since", iso_time(job->state_since_ms));
	json_object_set_new(o, "restarts", json_integer(job->restarts));
	json_object_set_new(o, "next_attempt_at",
		job->state == SV_JOB_RESTARTING ? iso_time(job->next_attempt_at_ms)
						: json_null());
	json_object_set_new(o, "error", error_json(job->error));

	uint64_t in = job->done_in, out = job->done_out;
	uint64_t invalid = job->done_invalid, late = job->done_late;
	uint64_t sbytes = 0, skeys = 0;
	int64_t wm = job->last_watermark_ms ? job->last_watermark_ms : INT64_MIN;
	sv_partpos_t *pos = NULL;
	size_t npos = 0;
	if (job->worker) {
		const sv_worker_stats_t *st = sv_worker_stats(job->worker);
		in += atomic_load(&st->records_in);
		out += atomic_load(&st->records_out);
		invalid += atomic_load(&st->records_invalid);
		late += atomic_load(&st->records_late);
		sbytes = atomic_load(&st->state_bytes);
		skeys = atomic_load(&st->state_keys);
		int64_t w = atomic_load(&st->watermark_ms);
		if (w != INT64_MIN)
			wm = w;
		npos = sv_worker_positions(job->worker, &pos);
	}
	json_object_set_new(o, "watermark_ms",
			    wm == INT64_MIN ? json_null() : json_integer(wm));
	json_t *parts = json_array();
	int64_t lag_records = 0;
	for (size_t i = 0; i < npos; i++) {
		int64_t lag = pos[i].end_offset >= 0 && pos[i].next_offset >= 0
			? pos[i].end_offset - pos[i].next_offset : 0;
		if (lag < 0)
			lag = 0;
		lag_records += lag;
		json_t *p = json_pack("{s:s, s:i, s:I, s:I, s:I}", "topic",
			js->source->topic ? js->source->topic : "",
			"partition", pos[i].partition,
			"next_offset", (json_int_t)pos[i].next_offset,
			"end_offset", (json_int_t)pos[i].end_offset,
			"lag_records", (json_int_t)lag);
		json_array_append_new(parts, p);
	}
	free(pos);
	json_t *lag = json_object();
	json_object_set_new(lag, "records", json_integer(lag_records));
	json_object_set_new(lag, "seconds", wm == INT64_MIN ? json_null()
		: json_real(fmax(0.0, (double)(sv_now_ms() - wm) / 1000.0)));
	json_object_set_new(o, "lag", lag);
	json_object_set_new(o, "partitions", parts);
	json_object_set_new(o, "last_checkpoint", json_null());
	json_object_set_new(o, "records_in", json_integer((json_int_t)in));
	json_object_set_new(o, "records_out", json_integer((json_int_t)out));
	json_object_set_new(o, "records_late", json_integer((json_int_t)late));
	json_object_set_new(o, "records_invalid", json_integer((json_int_t)invalid));
	json_object_set_new(o, "state_size", json_pack("{s:I, s:I}", "bytes",
		(json_int_t)sbytes, "keys", (json_int_t)skeys));
	return o;
}

/* ---- commands (run on the supervisor thread) ---- */

/* The physical plan as observations report it: one chain of operators at
 * parallelism 1 (one worker thread per job). */
static json_t *plan_summary(const sv_jobspec_t *spec, const sv_plan_t *plan)
{
	const Streamvisor__JobSpec *js = spec->msg;
	json_t *ops = json_array();
	json_array_append_new(ops, json_pack("{s:s, s:s}", "operator", "source",
		"kind", js->source->kind));
	for (size_t i = 0; i < sv_pipeline_len(plan->pipeline); i++)
		json_array_append_new(ops, json_pack("{s:s}", "operator",
			sv_pipeline_op(plan->pipeline, i)->ops->name));
	json_array_append_new(ops, json_pack("{s:s, s:s}", "operator", "sink",
		"kind", js->sink->kind));
	return json_pack("{s:s, s:s, s:s?, s:i, s:s, s:o}", "mode", js->mode,
		"source_kind", js->source->kind, "source_topic",
		js->source->topic && *js->source->topic ? js->source->topic : NULL,
		"parallelism", 1, "delivery", js->delivery, "operators", ops);
}

static sv_error_t *do_submit(sv_supervisor_t *sv, cmd_t *c)
{
	sv_jobspec_t *spec = NULL;
	sv_error_t *err = c->protobuf
		? sv_jobspec_parse_proto((const uint8_t *)c->body, c->len, &spec)
		: sv_jobspec_parse_json(c->body, c->len, &spec);
	if (err)
		return err;
	const Streamvisor__JobSpec *js = spec->msg;
	const sv_cluster_t *cl;
	if ((err = resolve_cluster(sv, js->source->kind, js->source->cluster,
				   "source.cluster", &cl)) ||
	    (err = resolve_cluster(sv, js->sink->kind, js->sink->cluster,
				   "sink.cluster", &cl)) ||
	    (js->dead_letter &&
	     (err = resolve_cluster(sv, js->dead_letter->kind,
				    js->dead_letter->cluster,
				    "dead_letter.cluster", &cl))) ||
	    (js->late_sink &&
	     (err = resolve_cluster(sv, js->late_sink->kind, js->late_sink->cluster,
				    "late_sink.cluster", &cl))) ||
	    (err = sv_coverage_check(spec))) {
		sv_jobspec_destroy(spec);
		return err;
	}
	sv_plan_t *plan = NULL;
	if ((err = sv_plan_build(spec, &plan))) {
		if (err->category == SV_ERR_COVERAGE && !err->details_json) {
			json_t *a = json_array();
			json_array_append_new(a, json_pack("{s:s, s:s, s:s}",
				"capability", err->field ? err->field : "plan",
				"status", "uncovered", "reason", err->message));
			char *d = dump(a);
			sv_error_set_details(err, d);
			free(d);
		}
		sv_jobspec_destroy(spec);
		return err;
	}
	json_t *summary = plan_summary(spec, plan);
	sv_plan_destroy(plan);
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *o = sv->jobs[i];
		if (!sv_jobstate_terminal(o->state) &&
		    !strcmp(o->spec->msg->name, js->name)) {
			err = sv_error_new(SV_ERR_CONFLICT, "job name '%s' is in use "
					   "by job '%s' (%s)", js->name, o->id,
					   sv_jobstate_name(o->state));
			sv_jobspec_destroy(spec);
			json_decref(summary);
			return sv_error_set_field(err, "name");
		}
	}
	sv_job_t *job = sv_calloc(1, sizeof(*job));
	new_job_id(job->id, sizeof(job->id));
	job->spec = spec;
	job->created_at_ms = job->state_since_ms = sv_now_ms();
	job->state = SV_JOB_PENDING;
	job->obs = sv_obslog_new(job->id, SV_OBSLOG_DEFAULT_CAP);
	sv_obslog_add(job->obs, 0, "job_submitted",
		json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "backend_kind",
			  "streamvisor", "backend_version", SV_VERSION_STRING,
			  "supervisor_identity", sv->conf.identity ?
			  sv->conf.identity : "", "name", js->name, "plan_id",
			  spec->plan_id, "physical_plan", summary));
	sv->jobs = sv_realloc(sv->jobs, (sv->njobs + 1) * sizeof(*sv->jobs));
	sv->jobs[sv->njobs++] = job;
	sv_logctx_t lc = {job->id, 0};
	sv_log(&lc, SV_LOG_INFO, "lifecycle", "job '%s' submitted, plan %s",
	       js->name, spec->plan_id);
	c->json = dump(job_json(sv, job, false));
	start_attempt(sv, job);
	return NULL;
}

static sv_error_t *do_list(sv_supervisor_t *sv, cmd_t *c)
{
	json_t *a = json_array();
	for (size_t i = 0; i < sv->njobs; i++)
		json_array_append_new(a, job_json(sv, sv->jobs[i], false));
	c->json = dump(json_pack("{s:o}", "jobs", a));
	return NULL;
}

static sv_error_t *do_status(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = find_job(sv, c->id);
	if (!job)
		return no_job(c->id);
	if (job->worker && sv_worker_end(job->worker) != SV_WORKER_RUNNING)
		on_worker_end(sv, job);
	c->json = dump(job_json(sv, job, true));
	return NULL;
}

static void job_free(sv_job_t *job)
{
	sv_jobspec_destroy(job->spec);
	sv_error_destroy(job->error);
	free(job->result);
	sv_obslog_destroy(job->obs);
	free(job);
}

static sv_error_t *conflict(sv_job_t *job, const char *action)
{
	sv_error_t *err = sv_error_new(SV_ERR_CONFLICT,
		"cannot %s job '%s': it is %s", action, job->id,
		sv_jobstate_name(job->state));
	return sv_error_set_job(err, job->id, job->attempt);
}

static sv_error_t *do_action(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = find_job(sv, c->id);
	if (!job)
		return no_job(c->id);
	if (!strcmp(c->what, "cancel")) {
		if (sv_jobstate_terminal(job->state))
			return conflict(job, "cancel");
		job->cancel_requested = true;
		if (job->worker) {
			sv_worker_stop(job->worker);
			/* Wait here so cancel answers with the final state;
			 * a worker stops at its next batch boundary. */
			while (sv_worker_end(job->worker) == SV_WORKER_RUNNING) {
				struct timespec ts = {0, 5 * 1000000};
				nanosleep(&ts, NULL);
			}
			on_worker_end(sv, job);
		}
		if (job->state != SV_JOB_CANCELLED)
			transition(job, SV_JOB_CANCELLED, "cancelled by request");
		c->json = dump(job_json(sv, job, false));
		return NULL;
	}
	static const char *const later[] = {"drain", "resume", "restart",
		"checkpoints", NULL};
	for (const char *const *a = later; *a; a++)
		if (!strcmp(c->what, *a))
			return sv_error_set_job(sv_error_new(SV_ERR_COVERAGE,
				"action '%s' is not implemented yet", c->what),
				job->id, job->attempt);
	return sv_error_new(SV_ERR_NOT_FOUND, "unknown action '%s'", c->what);
}

static size_t query_limit(const char *query, size_t def)
{
	if (!query)
		return def;
	const char *p = strstr(query, "limit=");
	if (!p || (p != query && p[-1] != '&'))
		return def;
	long v = strtol(p + 6, NULL, 10);
	return v > 0 ? (size_t)v : def;
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

static sv_error_t *do_get(sv_supervisor_t *sv, cmd_t *c)
{
	sv_job_t *job = find_job(sv, c->id);
	if (!job)
		return no_job(c->id);
	if (!strcmp(c->what, "preview")) {
		size_t limit = query_limit(c->query, 10);
		char *lines = job->worker ? sv_worker_preview(job->worker, limit)
					  : sv_strdup("");
		c->json = dump(json_pack("{s:s, s:o}", "id", job->id, "rows",
					 lines_to_array(lines)));
		free(lines);
		return NULL;
	}
	if (!strcmp(c->what, "observations")) {
		uint64_t after = 0;
		const char *a = c->query ? strstr(c->query, "after=") : NULL;
		if (a && (a == c->query || a[-1] == '&'))
			after = strtoull(a + 6, NULL, 10);
		json_t *page = sv_obslog_page(job->obs, after,
					      query_limit(c->query, 100));
		json_object_set_new(page, "id", json_string(job->id));
		c->json = dump(page);
		return NULL;
	}
	if (!strcmp(c->what, "result")) {
		if (!sv_jobspec_bounded(job->spec))
			return sv_error_set_job(sv_error_new(SV_ERR_CONFLICT,
				"job '%s' is a stream: collect on an unbounded "
				"stream is refused; use preview", job->id),
				job->id, job->attempt);
		if (job->state != SV_JOB_COMPLETED)
			return sv_error_set_job(sv_error_new(SV_ERR_CONFLICT,
				"result of bounded job '%s' is available once it "
				"is completed; it is %s", job->id,
				sv_jobstate_name(job->state)), job->id, job->attempt);
		size_t limit = query_limit(c->query, SIZE_MAX);
		const char *p = job->result ? job->result : "";
		size_t n = 0, len = 0;
		while (n < limit && p[len]) {
			const char *nl = strchr(p + len, '\n');
			len = nl ? (size_t)(nl - p) + 1 : strlen(p);
			n++;
		}
		char *lines = sv_strndup(p, len);
		c->json = dump(json_pack("{s:s, s:I, s:b, s:o}", "id", job->id,
			"row_count", (json_int_t)n, "truncated",
			job->result_truncated || n < job->result_rows,
			"rows", lines_to_array(lines)));
		free(lines);
		return NULL;
	}
	return sv_error_set_job(sv_error_new(SV_ERR_COVERAGE,
		"'%s' is not implemented yet", c->what), job->id, job->attempt);
}

static sv_error_t *do_delete(sv_supervisor_t *sv, cmd_t *c)
{
	for (size_t i = 0; i < sv->njobs; i++) {
		sv_job_t *job = sv->jobs[i];
		if (strcmp(job->id, c->id))
			continue;
		if (!sv_jobstate_terminal(job->state))
			return conflict(job, "delete");
		c->json = dump(json_pack("{s:s, s:b}", "id", job->id, "deleted", 1));
		job_free(job);
		memmove(&sv->jobs[i], &sv->jobs[i + 1],
			(sv->njobs - i - 1) * sizeof(*sv->jobs));
		sv->njobs--;
		return NULL;
	}
	return no_job(c->id);
}

static sv_error_t *do_metrics(sv_supervisor_t *sv, cmd_t *c);

/* ---- the thread ---- */

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
			c->err = c->fn(sv, c);
			pthread_mutex_lock(&sv->lock);
			c->done = true;
			pthread_cond_broadcast(&sv->reply);
		}
		sv->worker_event = false;
		pthread_mutex_unlock(&sv->lock);
		tick(sv);
		pthread_mutex_lock(&sv->lock);
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

sv_error_t *sv_supervisor_new(const sv_svconf_t *conf, sv_supervisor_t **out)
{
	sv_supervisor_t *sv = sv_calloc(1, sizeof(*sv));
	copy_conf(&sv->conf, conf);
	if (!sv->conf.identity) {
		char host[128] = "localhost";
		gethostname(host, sizeof(host) - 1);
		char id[200];
		snprintf(id, sizeof(id), "%s:%d", host, sv->conf.listen_port);
		sv->conf.identity = sv_strdup(id);
	}
	sv->started_ms = sv_now_ms();
	pthread_mutex_init(&sv->lock, NULL);
	pthread_mutex_init(&sv->http_lock, NULL);
	pthread_cond_init(&sv->wake, NULL);
	pthread_cond_init(&sv->reply, NULL);
	if (pthread_create(&sv->thread, NULL, sv_main, sv) != 0) {
		sv_svconf_release(&sv->conf);
		free(sv);
		return sv_error_new(SV_ERR_RUNTIME, "cannot start supervisor thread");
	}
	*out = sv;
	return NULL;
}

void sv_supervisor_destroy(sv_supervisor_t *sv)
{
	if (!sv)
		return;
	pthread_mutex_lock(&sv->lock);
	sv->stop = true;
	pthread_cond_signal(&sv->wake);
	pthread_mutex_unlock(&sv->lock);
	pthread_join(sv->thread, NULL);
	for (size_t i = 0; i < sv->njobs; i++)
		job_free(sv->jobs[i]);
	free(sv->jobs);
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
	cmd_t c = {.fn = do_submit, .body = body, .len = len, .protobuf = protobuf};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_list(sv_supervisor_t *sv, char **json)
{
	cmd_t c = {.fn = do_list};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_status(sv_supervisor_t *sv, const char *id,
				 char **json)
{
	cmd_t c = {.fn = do_status, .id = id};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_action(sv_supervisor_t *sv, const char *id,
				 const char *action, const char *body,
				 size_t len, char **json)
{
	cmd_t c = {.fn = do_action, .id = id, .what = action, .body = body,
		   .len = len};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_get(sv_supervisor_t *sv, const char *id,
			      const char *what, const char *query, char **json)
{
	cmd_t c = {.fn = do_get, .id = id, .what = what, .query = query};
	return call(sv, &c, json);
}

sv_error_t *sv_supervisor_delete(sv_supervisor_t *sv, const char *id,
				 char **json)
{
	cmd_t c = {.fn = do_delete, .id = id};
	return call(sv, &c, json);
}

static bool dev_default(sv_supervisor_t *sv)
{
	const sv_cluster_t *d = sv_svconf_cluster(&sv->conf, "default");
	return d && d->dev_embedded;
}

char *sv_supervisor_info(sv_supervisor_t *sv)
{
	char *cov = sv_coverage_json(dev_default(sv));
	json_t *clusters = json_array();
	for (size_t i = 0; i < sv->conf.nclusters; i++)
		json_array_append_new(clusters, json_pack("{s:s, s:b}", "name",
			sv->conf.clusters[i].name, "development",
			sv->conf.clusters[i].dev_embedded));
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}",
		"backend_kind", "streamvisor",
		"backend_version", SV_VERSION_STRING,
		"supervisor_identity", sv->conf.identity,
		"started_at", iso_time(sv->started_ms),
		"clusters", clusters,
		"capabilities", json_loads(cov, 0, NULL));
	free(cov);
	return dump(o);
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

static void job_labels(sv_buf_t *l, const sv_job_t *job)
{
	sv_buf_reset(l);
	sv_prom_label(l, "job", job->id);
	sv_prom_label(l, "name", job->spec->msg->name);
}

static sv_error_t *do_metrics(sv_supervisor_t *sv, cmd_t *c)
{
	sv_buf_t b, l;
	sv_buf_init(&b);
	sv_buf_init(&l);

	sv_prom_family(&b, "streamvisor_up", "gauge",
		       "1 while the supervisor serves");
	sv_prom_sample(&b, "streamvisor_up", NULL, 1);
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
			sv_prom_label(&l, "state", sv_jobstate_name((sv_jobstate_t)s));
			sv_prom_sample(&b, "streamvisor_job_state", l.data,
				       sv->jobs[i]->state == (sv_jobstate_t)s);
		}
	}
	struct {
		const char *name, *type, *help;
	} fams[] = {
		{"streamvisor_job_attempt", "gauge", "current attempt number"},
		{"streamvisor_job_restarts_total", "counter", "restarts of the job"},
		{"streamvisor_records_in_total", "counter", "records read"},
		{"streamvisor_records_out_total", "counter", "records written"},
		{"streamvisor_records_invalid_total", "counter",
		 "input records that could not be decoded"},
		{"streamvisor_records_late_total", "counter",
		 "records behind the watermark (dropped or side output)"},
		{"streamvisor_state_bytes", "gauge", "operator state size"},
	};
	for (size_t f = 0; f < SV_ARRAY_LEN(fams); f++) {
		sv_prom_family(&b, fams[f].name, fams[f].type, fams[f].help);
		for (size_t i = 0; i < sv->njobs; i++) {
			sv_job_t *job = sv->jobs[i];
			uint64_t v[7] = {(uint64_t)job->attempt, (uint64_t)job->restarts,
					 job->done_in, job->done_out,
					 job->done_invalid, job->done_late, 0};
			if (job->worker) {
				const sv_worker_stats_t *st = sv_worker_stats(job->worker);
				v[2] += atomic_load(&st->records_in);
				v[3] += atomic_load(&st->records_out);
				v[4] += atomic_load(&st->records_invalid);
				v[5] += atomic_load(&st->records_late);
				v[6] = atomic_load(&st->state_bytes);
			}
			job_labels(&l, job);
			sv_prom_sample(&b, fams[f].name, l.data, (double)v[f]);
		}
	}
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
			int64_t lag = pos[p].end_offset - pos[p].next_offset;
			job_labels(&l, job);
			const char *topic = job->spec->msg->source->topic;
			sv_prom_label(&l, "topic", topic && *topic ? topic : "-");
			char part[16];
			snprintf(part, sizeof(part), "%d", pos[p].partition);
			sv_prom_label(&l, "partition", part);
			sv_prom_sample(&b, "streamvisor_source_lag_records", l.data,
				       (double)(lag < 0 ? 0 : lag));
		}
		free(pos);
	}
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

char *sv_supervisor_metrics(sv_supervisor_t *sv)
{
	cmd_t c = {.fn = do_metrics};
	char *text = NULL;
	sv_error_t *err = call(sv, &c, &text);
	if (err) {
		sv_error_destroy(err);
		return sv_strdup("");
	}
	return text;
}
