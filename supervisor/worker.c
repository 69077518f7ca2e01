/* worker.c — the attempt loop (see worker.h).
 *
 *   loop: poll ≤ BATCH rows from the source (decoded into typed rows)
 *         assign each row its event time (event_time.field, else now)
 *         and feed it to the per-partition watermarks (core/watermark.h)
 *         count rejects; dead-letter or fail per the spec's on_invalid
 *         push the batch through the pipeline; write the output to the sink
 *         when the combined watermark moved (or, for processing-time
 *         windows, on every pass) advance the pipeline and write what fired
 *         every commit interval: flush the sink, then commit the source
 *         positions (at-least-once: nothing is committed before it is out)
 *   end:  bounded input done → finish the pipeline (all windows fire),
 *         write, flush, commit → COMPLETED.
 *
 * Counters are atomics read by the supervisor; positions and the preview
 * ring are behind a mutex taken once per batch. */
#define _GNU_SOURCE
#include "supervisor/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "core/log.h"
#include "core/util.h"
#include "core/watermark.h"
#include "sinks/sink.h"
#include "supervisor/ckpt.h"

#define BATCH_ROWS 2048
#define POLL_TIMEOUT_MS 100
#define PREVIEW_ROWS 100
#define RESULT_MAX_ROWS 100000
#define FLUSH_TIMEOUT_MS 30000

const double sv_ck_buckets_s[SV_CK_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

struct sv_worker {
	sv_worker_conf_t conf;
	char *job_id;
	sv_logctx_t log;
	pthread_t thread;
	atomic_bool stop;
	atomic_int drain; /* 0 no, 1 drain, 2 drain with final watermark */
	bool drained;
	_Atomic int end; /* sv_worker_end_t */
	sv_error_t *error;
	sv_worker_stats_t stats;

	sv_plan_t *plan;
	sv_source_t *src;
	sv_sink_t *snk;
	sv_sink_t *dlq;
	sv_sink_t *late;
	sv_batch_t in;
	sv_batch_t late_rows;
	sv_watermarks_t *wm;
	sv_ckpt_conf_t ck;
	sv_ckpt_incr_t incr; /* incremental checkpoint chain (ck.incr) */
	bool checkpointing; /* a store is configured */

	pthread_mutex_t lock; /* guards pos, preview, result */
	pthread_cond_t ended; /* signalled (under lock) when end is set */
	sv_partpos_t *pos;
	size_t npos;
	char *preview[PREVIEW_ROWS];
	size_t preview_next;
	sv_buf_t result; /* bounded jobs: collected output, JSON lines */
	size_t result_rows;
	bool result_truncated;
	sv_buf_t enc;
};

static void set_error(sv_worker_t *w, sv_error_t *err)
{
	if (!w->error)
		w->error = sv_error_set_job(err, w->job_id, w->conf.attempt);
	else
		sv_error_destroy(err);
}

static void publish_positions(sv_worker_t *w)
{
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(w->src, &pos);
	pthread_mutex_lock(&w->lock);
	if (n != w->npos) {
		w->pos = sv_realloc(w->pos, (n ? n : 1) * sizeof(*pos));
		w->npos = n;
	}
	if (n)
		memcpy(w->pos, pos, n * sizeof(*pos));
	pthread_mutex_unlock(&w->lock);
}

/* Keep a sample of the output for preview, and everything for the result
 * of a bounded job (up to RESULT_MAX_ROWS). */
static void remember_output(sv_worker_t *w, const sv_batch_t *out)
{
	const sv_schema_t *schema = out->schema;
	bool bounded = sv_jobspec_bounded(w->conf.spec);
	size_t first = out->nrows > PREVIEW_ROWS ? out->nrows - PREVIEW_ROWS
						 : 0;
	pthread_mutex_lock(&w->lock);
	if (bounded) {
		for (size_t r = 0; r < out->nrows; r++) {
			if (w->result_rows >= RESULT_MAX_ROWS) {
				w->result_truncated = true;
				break;
			}
			sv_json_encode_row(schema, sv_batch_row(out, r),
					   &w->result);
			sv_buf_putc(&w->result, '\n');
			w->result_rows++;
		}
	}
	for (size_t r = first; r < out->nrows; r++) {
		sv_buf_reset(&w->enc);
		sv_json_encode_row(schema, sv_batch_row(out, r), &w->enc);
		free(w->preview[w->preview_next]);
		w->preview[w->preview_next] = sv_strdup(w->enc.data);
		w->preview_next = (w->preview_next + 1) % PREVIEW_ROWS;
	}
	pthread_mutex_unlock(&w->lock);
}

static sv_error_t *emit(sv_worker_t *w, sv_batch_t *out)
{
	if (out->nrows) {
		sv_error_t *err = sv_sink_write(w->snk, out);
		if (err)
			return err;
		atomic_fetch_add(&w->stats.records_out, out->nrows);
		remember_output(w, out);
	}
	if (w->late_rows.nrows) {
		if (w->late) {
			sv_error_t *err = sv_sink_write(w->late, &w->late_rows);
			if (err)
				return err;
		}
		sv_batch_reset(&w->late_rows);
	}
	return NULL;
}

static sv_error_t *handle_rejects(sv_worker_t *w)
{
	sv_batch_t *b = &w->in;
	if (!b->nrejects)
		return NULL;
	atomic_fetch_add(&w->stats.records_invalid, b->nrejects);
	const char *policy = w->conf.spec->msg->on_invalid;
	if (!strcmp(policy, "fail")) {
		const sv_reject_t *rj = &b->rejects[0];
		return sv_error_new(
			SV_ERR_RUNTIME,
			"invalid record at partition %d offset %lld: %s",
			rj->partition, (long long)rj->offset, rj->reason);
	}
	for (size_t i = 0; i < b->nrejects; i++) {
		const sv_reject_t *rj = &b->rejects[i];
		if (w->dlq) {
			sv_error_t *err = sv_sink_write_raw(
				w->dlq, rj->payload, rj->len, rj->reason);
			if (err)
				return err;
			atomic_fetch_add(&w->stats.records_dead_letter, 1);
		} else if (i < 5) {
			sv_log(&w->log, SV_LOG_WARN, "worker",
			       "skipped invalid record at partition %d offset "
			       "%lld: %s",
			       rj->partition, (long long)rj->offset,
			       rj->reason);
		}
	}
	return NULL;
}

/* Flush everything downstream, then commit the source positions. */
/* Dead letters and late records are at-least-once: flushed before any
 * commit of the positions. */
static sv_error_t *flush_side_sinks(sv_worker_t *w)
{
	sv_error_t *err;
	if (w->dlq && (err = sv_sink_flush(w->dlq, FLUSH_TIMEOUT_MS)))
		return err;
	if (w->late && (err = sv_sink_flush(w->late, FLUSH_TIMEOUT_MS)))
		return err;
	return NULL;
}

static sv_error_t *commit(sv_worker_t *w)
{
	sv_error_t *err;
	if ((err = sv_sink_flush(w->snk, FLUSH_TIMEOUT_MS)))
		return err;
	if ((err = flush_side_sinks(w)))
		return err;
	if ((err = sv_source_commit(w->src)))
		return err;
	atomic_store(&w->stats.last_commit_ms, sv_now_ms());
	atomic_store(&w->stats.records_out_committed,
		     atomic_load(&w->stats.records_out));
	return NULL;
}

static void update_state_size(sv_worker_t *w)
{
	uint64_t bytes = 0, keys = 0;
	sv_pipeline_state_size(w->plan->pipeline, &bytes, &keys);
	atomic_store(&w->stats.state_bytes, bytes);
	atomic_store(&w->stats.state_keys, keys);
}

/* Flush the side sinks (dead letters, late records: at-least-once), then
 * take checkpoint n through the main sink. */
static sv_error_t *checkpoint(sv_worker_t *w, int64_t wm)
{
	sv_error_t *err;
	if ((err = flush_side_sinks(w)))
		return err;
	uint64_t asked = atomic_load(&w->stats.checkpoint_requests);
	update_state_size(w);
	sv_ckpt_parts_t parts = {w->src, w->snk, w->plan->pipeline, w->wm};
	sv_ckpt_info_t info;
	if ((err = sv_ckpt_take(&w->ck, &parts, wm, &info))) {
		atomic_fetch_add(&w->stats.checkpoint_failures, 1);
		return err;
	}
	atomic_store(&w->stats.last_checkpoint, info.id);
	atomic_store(&w->stats.last_checkpoint_ms, sv_now_ms());
	atomic_store(&w->stats.last_checkpoint_duration_ms, info.duration_ms);
	atomic_store(&w->stats.last_checkpoint_bytes, info.bytes);
	atomic_store(&w->stats.last_commit_ms, sv_now_ms());
	atomic_store(&w->stats.records_out_committed,
		     atomic_load(&w->stats.records_out));
	atomic_fetch_add(&w->stats.checkpoints, 1);
	bool served = asked > atomic_load(&w->stats.checkpoint_served);
	atomic_store(&w->stats.checkpoint_served, asked);
	if (served && w->conf.done)
		w->conf.done(w->conf.opaque, w);
	double secs = (double)info.duration_ms / 1000.0;
	for (int b = 0; b < SV_CK_BUCKETS; b++)
		if (secs <= sv_ck_buckets_s[b])
			atomic_fetch_add(&w->stats.ck_hist[b], 1);
	atomic_fetch_add(&w->stats.ck_hist[SV_CK_BUCKETS], 1);
	atomic_fetch_add(&w->stats.ck_sum_us,
			 (uint64_t)info.duration_ms * 1000);
	return NULL;
}

/* Restore the job's checkpoint (if any) and open the first transaction. */
static sv_error_t *recover(sv_worker_t *w, sv_op_ctx_t *ctx)
{
	sv_ckpt_parts_t parts = {w->src, w->snk, w->plan->pipeline, w->wm};
	int64_t restored, wm;
	sv_error_t *err = sv_ckpt_recover(&w->ck, &parts, &restored, &wm);
	if (err)
		return err;
	atomic_store(&w->stats.restored_checkpoint, restored);
	if (restored >= 0) {
		atomic_store(&w->stats.last_checkpoint, restored);
		if (wm != SV_WATERMARK_NONE) {
			ctx->watermark_ms = wm;
			atomic_store(&w->stats.watermark_ms, wm);
		}
		publish_positions(w);
		update_state_size(w);
	}
	if (w->ck.transactional)
		return sv_sink_txn_begin(w->snk);
	return NULL;
}

/* Move the combined watermark and let the windows fire. Processing-time
 * windows read ctx->now_ms, so they are advanced on every pass. */
static sv_error_t *advance(sv_worker_t *w, sv_op_ctx_t *ctx, int64_t mono)
{
	int64_t wm = sv_watermarks_current(w->wm, mono);
	bool moved = wm != ctx->watermark_ms;
	if (moved) {
		ctx->watermark_ms = wm;
		atomic_store(&w->stats.watermark_ms, wm);
	}
	if (!w->plan->has_windows || (!moved && !w->plan->has_proc_windows))
		return NULL;
	sv_batch_t *out;
	sv_error_t *err = sv_pipeline_advance(w->plan->pipeline, ctx, &out);
	if (!err)
		err = emit(w, out);
	if (!err)
		update_state_size(w);
	return err;
}

static sv_error_t *run(sv_worker_t *w)
{
	const Streamvisor__JobSpec *js = w->conf.spec->msg;
	sv_opstats_t opstats = {0};
	sv_op_ctx_t ctx = {.watermark_ms = SV_WATERMARK_NONE,
			   .stats = &opstats,
			   .late = NULL};
	const sv_schema_t *in_schema = w->plan->schema;
	sv_batch_init(&w->in, in_schema);
	sv_batch_init(&w->late_rows,
		      w->plan->late_schema ? w->plan->late_schema : in_schema);
	if (w->late)
		ctx.late = &w->late_rows;
	const Streamvisor__EventTime *evt = js->event_time;
	w->wm = sv_watermarks_new(evt ? evt->max_out_of_orderness_ms : 0,
				  evt ? evt->idle_timeout_ms : 0);
	const sv_partpos_t *pos0;
	size_t npos0 = sv_source_positions(w->src, &pos0);
	for (size_t i = 0; i < npos0; i++)
		sv_watermarks_add_partition(w->wm, pos0[i].partition,
					    sv_mono_ms());
	int64_t interval = js->checkpoint->interval_ms;
	if (!w->checkpointing && (interval > 1000 || interval <= 0))
		interval = 1000; /* no store: commit offsets every second */
	sv_error_t *err;
	if (w->checkpointing && (err = recover(w, &ctx)))
		return err;
	int64_t next_commit = sv_mono_ms() + interval;
	int et = w->plan->event_time_col;
	bool eof = false;

	while (!atomic_load(&w->stop) && !atomic_load(&w->drain)) {
		sv_batch_reset(&w->in);
		if ((err = sv_source_poll(w->src, &w->in, BATCH_ROWS,
					  POLL_TIMEOUT_MS, &eof)))
			return err;
		int64_t now = sv_now_ms();
		ctx.now_ms = now;
		size_t n = w->in.nrows;
		int64_t mono = sv_mono_ms();
		for (size_t r = 0; r < n; r++) {
			sv_rowmeta_t *m = &w->in.meta[r];
			const sv_value_t *v = et >= 0
				? &sv_batch_row(&w->in, r)[et]
				: NULL;
			m->event_ms = v && v->type != SV_T_NULL ? v->v.i : now;
			sv_watermarks_observe(w->wm, m->partition, m->event_ms,
					      mono);
		}
		if (n)
			atomic_store(&w->stats.last_event_ms,
				     sv_watermarks_max_event(w->wm));
		atomic_fetch_add(&w->stats.records_in, n);
		if ((err = handle_rejects(w)))
			return err;
		if (n) {
			sv_batch_t *out;
			if ((err = sv_pipeline_push(w->plan->pipeline, &ctx,
						    &w->in, &out)))
				return err;
			if ((err = emit(w, out)))
				return err;
		}
		if ((err = advance(w, &ctx, mono)))
			return err;
		atomic_store(&w->stats.records_late, opstats.records_late);
		publish_positions(w);
		if (eof)
			break;
		bool asked = atomic_load(&w->stats.checkpoint_requests) >
			atomic_load(&w->stats.checkpoint_served);
		if (sv_mono_ms() >= next_commit || asked) {
			if ((err = w->checkpointing
				     ? checkpoint(w, ctx.watermark_ms)
				     : commit(w)))
				return err;
			update_state_size(w);
			next_commit = sv_mono_ms() + interval;
		}
	}
	int drain = atomic_load(&w->drain);
	if (eof || drain == 2) {
		sv_batch_t *out;
		ctx.now_ms = sv_now_ms();
		if ((err = sv_pipeline_finish(w->plan->pipeline, &ctx, &out)))
			return err;
		if ((err = emit(w, out)))
			return err;
		atomic_store(&w->stats.records_late, opstats.records_late);
	}
	if (w->checkpointing && (eof || drain)) {
		/* bounded end or drain: a final checkpoint commits the last
		 * output (and, drained, is where resume continues) */
		if ((err = checkpoint(w, ctx.watermark_ms)))
			return err;
		w->drained = drain && !eof;
	} else if (w->checkpointing) {
		/* stopped (cancel): the open transaction is aborted; the last
		 * checkpoint stays */
		if (w->ck.transactional && (err = sv_sink_txn_abort(w->snk)))
			return err;
	} else if ((err = commit(w))) {
		return err;
	}
	publish_positions(w);
	update_state_size(w);
	return NULL;
}

static sv_error_t *open_sink(sv_worker_t *w, const Streamvisor__Sink *s,
			     const sv_cluster_t *cluster,
			     const sv_schema_t *schema, int key_col, bool raw,
			     bool txn, sv_sink_t **out)
{
	char txn_id[160], group[160];
	snprintf(txn_id, sizeof(txn_id), "streamvisor-%s-0", w->job_id);
	snprintf(group, sizeof(group), "streamvisor-%s", w->job_id);
	sv_sink_conf_t sc = {
		.kind = s->kind,
		.job_id = w->job_id,
		.attempt = w->conf.attempt,
		.cluster = cluster,
		.topic = s->topic,
		.format = SV_FMT_JSON,
		.schema = schema,
		.key_column = key_col,
		.raw = raw,
		.transactional = txn,
		.transactional_id = txn_id,
		.transaction_timeout_ms = (int)sv_sink_txn_timeout_ms(s),
		.group_id = group,
		.path = s->path,
	};
	return sv_sink_open(&sc, out);
}

/* The physical plan as bound: the source partitions this attempt reads. */
static void observe_bound(sv_worker_t *w)
{
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(w->src, &pos);
	json_t *parts = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(
			parts,
			json_pack("{s:i, s:I}", "partition", pos[i].partition,
				  "next_offset",
				  (json_int_t)pos[i].next_offset));
	const Streamvisor__JobSpec *js = w->conf.spec->msg;
	sv_obslog_add(w->conf.obs, w->conf.attempt, "source_bound",
		      json_pack("{s:s, s:s, s:i, s:o}", "source_kind",
				js->source->kind, "topic",
				js->source->topic ? js->source->topic : "",
				"parallelism", 1, "partitions", parts));
}

static sv_error_t *open_all(sv_worker_t *w)
{
	const Streamvisor__JobSpec *js = w->conf.spec->msg;
	sv_error_t *err = sv_plan_build(w->conf.spec, &w->plan);
	if (err)
		return err;
	w->checkpointing = w->conf.store != NULL;
	w->ck = (sv_ckpt_conf_t){
		.store = w->conf.store,
		.job_id = w->job_id,
		.plan_id = w->conf.spec->plan_id,
		.topic = js->source->topic ? js->source->topic : "",
		.attempt = w->conf.attempt,
		.retain = js->checkpoint->retain,
		.transactional = w->checkpointing &&
			!strcmp(js->delivery, "exactly_once"),
		.obs = w->conf.obs,
		.restore_from = w->conf.restore_from,
		.ignore_state = w->conf.ignore_state,
	};
	w->incr = (sv_ckpt_incr_t){
		.full_every = js->checkpoint->full_every
			? js->checkpoint->full_every
			: SV_SPEC_FULL_EVERY_DEFAULT,
	};
	if (w->incr.full_every > 1)
		w->ck.incr = &w->incr;
	char group[160];
	snprintf(group, sizeof(group), "streamvisor-%s", w->job_id);
	sv_format_t fmt = SV_FMT_JSON;
	sv_format_parse(js->source->format, &fmt);
	sv_source_conf_t sc = {
		.kind = js->source->kind,
		.job_id = w->job_id,
		.attempt = w->conf.attempt,
		.cluster = w->conf.source_cluster,
		.topic = js->source->topic,
		.group_id = group,
		.start = !strcmp(js->source->start, "latest")
			? SV_START_LATEST
			: SV_START_EARLIEST,
		.bounded = sv_jobspec_bounded(w->conf.spec),
		.format = fmt,
		.schema = w->plan->schema,
		.generator = js->source->generator,
		.count = js->source->count,
		.rate_per_s = js->source->rate_per_s,
		.seed = js->source->seed,
	};
	/* The sink first: a transactional sink's init_transactions aborts a
	 * crashed attempt's open transaction, which otherwise keeps the
	 * group's offsets unreadable (require_stable) until it times out. */
	if ((err = open_sink(w, js->sink, w->conf.sink_cluster,
			     sv_pipeline_out_schema(w->plan->pipeline),
			     w->plan->sink_key_col, false, w->ck.transactional,
			     &w->snk)))
		return err;
	if (w->ck.transactional && !sv_sink_transactional(w->snk))
		return sv_error_new(
			SV_ERR_COVERAGE,
			"sink kind '%s' has no "
			"transactions: exactly_once is not available "
			"with it",
			js->sink->kind);
	if ((err = sv_source_open(&sc, &w->src)))
		return err;
	observe_bound(w);
	if (js->late_sink && w->plan->late_schema &&
	    (err = open_sink(w, js->late_sink, w->conf.late_cluster,
			     w->plan->late_schema, -1, false, false, &w->late)))
		return err;
	if (js->dead_letter && !strcmp(js->on_invalid, "dead_letter") &&
	    (err = open_sink(w, js->dead_letter, w->conf.dlq_cluster,
			     w->plan->schema, -1, true, false, &w->dlq)))
		return err;
	return NULL;
}

static void *worker_main(void *arg)
{
	sv_worker_t *w = arg;
	sv_log(&w->log, SV_LOG_INFO, "worker", "attempt started");
	sv_error_t *err = open_all(w);
	if (!err)
		err = run(w);
	sv_worker_end_t end;
	if (err) {
		set_error(w, err);
		sv_log(&w->log, SV_LOG_ERROR, "worker",
		       "attempt failed: %s: %s",
		       sv_errcat_name(w->error->category), w->error->message);
		end = SV_WORKER_FAILED;
	} else if (w->drained) {
		end = SV_WORKER_DRAINED;
	} else if (atomic_load(&w->stop)) {
		end = SV_WORKER_STOPPED;
	} else {
		end = SV_WORKER_COMPLETED;
	}
	/* Close the clients here, on the worker thread, so a slow close does not
	 * hold up the supervisor. */
	sv_sink_close(w->snk);
	sv_sink_close(w->dlq);
	sv_sink_close(w->late);
	sv_source_close(w->src);
	w->snk = w->dlq = w->late = NULL;
	w->src = NULL;
	sv_log(&w->log, SV_LOG_INFO, "worker", "attempt ended: %s",
	       end == SV_WORKER_COMPLETED         ? "completed"
		       : end == SV_WORKER_STOPPED ? "stopped"
						  : "failed");
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->end, end);
	pthread_cond_broadcast(&w->ended);
	pthread_mutex_unlock(&w->lock);
	if (w->conf.done)
		w->conf.done(w->conf.opaque, w);
	return NULL;
}

sv_error_t *sv_worker_start(const sv_worker_conf_t *conf, sv_worker_t **out)
{
	sv_worker_t *w = sv_calloc(1, sizeof(*w));
	w->conf = *conf;
	w->job_id = sv_strdup(conf->job_id);
	w->conf.job_id = w->job_id;
	w->log.job_id = w->job_id;
	w->log.attempt = conf->attempt;
	atomic_store(&w->stats.watermark_ms, INT64_MIN);
	atomic_store(&w->stats.restored_checkpoint, -1);
	atomic_store(&w->stats.last_event_ms, INT64_MIN);
	atomic_store(&w->stats.last_checkpoint, -1);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->ended, NULL);
	sv_buf_init(&w->result);
	sv_buf_init(&w->enc);
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->ended);
		free(w->job_id);
		free(w);
		return sv_error_new(SV_ERR_RUNTIME,
				    "cannot start worker thread");
	}
	*out = w;
	return NULL;
}

uint64_t sv_worker_request_checkpoint(sv_worker_t *w)
{
	return atomic_fetch_add(&w->stats.checkpoint_requests, 1) + 1;
}

void sv_worker_drain(sv_worker_t *w, bool final_watermark)
{
	atomic_store(&w->drain, final_watermark ? 2 : 1);
}

void sv_worker_stop(sv_worker_t *w)
{
	atomic_store(&w->stop, true);
}

void sv_worker_wait(sv_worker_t *w)
{
	pthread_mutex_lock(&w->lock);
	while (atomic_load(&w->end) == SV_WORKER_RUNNING)
		pthread_cond_wait(&w->ended, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void sv_worker_destroy(sv_worker_t *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	sv_plan_destroy(w->plan);
	sv_batch_release(&w->in);
	sv_batch_release(&w->late_rows);
	sv_watermarks_destroy(w->wm);
	sv_error_destroy(w->error);
	for (size_t i = 0; i < PREVIEW_ROWS; i++)
		free(w->preview[i]);
	free(w->pos);
	sv_buf_release(&w->result);
	sv_buf_release(&w->enc);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->ended);
	free(w->job_id);
	free(w);
}

const sv_worker_stats_t *sv_worker_stats(const sv_worker_t *w)
{
	return &w->stats;
}

sv_worker_end_t sv_worker_end(const sv_worker_t *w)
{
	return (sv_worker_end_t)atomic_load(&w->end);
}

const sv_error_t *sv_worker_error(const sv_worker_t *w)
{
	return w->error;
}

size_t sv_worker_positions(sv_worker_t *w, sv_partpos_t **pos)
{
	pthread_mutex_lock(&w->lock);
	size_t n = w->npos;
	*pos = sv_malloc((n ? n : 1) * sizeof(**pos));
	if (n)
		memcpy(*pos, w->pos, n * sizeof(**pos));
	pthread_mutex_unlock(&w->lock);
	return n;
}

char *sv_worker_preview(sv_worker_t *w, size_t limit)
{
	sv_buf_t b;
	sv_buf_init(&b);
	pthread_mutex_lock(&w->lock);
	if (limit > PREVIEW_ROWS)
		limit = PREVIEW_ROWS;
	size_t have = 0;
	for (size_t i = 0; i < PREVIEW_ROWS; i++)
		if (w->preview[i])
			have++;
	if (limit > have)
		limit = have;
	for (size_t k = 0; k < limit; k++) {
		size_t i = (w->preview_next + PREVIEW_ROWS - limit + k) %
			PREVIEW_ROWS;
		sv_buf_puts(&b, w->preview[i]);
		sv_buf_putc(&b, '\n');
	}
	pthread_mutex_unlock(&w->lock);
	return sv_buf_detach(&b);
}

char *sv_worker_result(sv_worker_t *w, size_t limit, size_t *rows,
		       bool *truncated)
{
	pthread_mutex_lock(&w->lock);
	const char *p = w->result.data ? w->result.data : "";
	size_t n = 0, len = 0;
	while (n < limit && p[len]) {
		const char *nl = strchr(p + len, '\n');
		if (!nl)
			break;
		len = (size_t)(nl - p) + 1;
		n++;
	}
	char *copy = sv_strndup(p, len);
	*rows = n;
	*truncated = w->result_truncated || n < w->result_rows;
	pthread_mutex_unlock(&w->lock);
	return copy;
}
