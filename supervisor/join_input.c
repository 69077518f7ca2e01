/* join_input.c — a join's second input for one member (see join_input.h).
 *
 * Why a second consumer, not the member's one consumer assigned both
 * topics: a source driver decodes into one schema and keeps per-topic
 * positions, end offsets, bounded stops and the committed-checkpoint tags
 * of one topic; a second instance of the same driver gets all of that
 * unchanged and cannot mix the two inputs' rows in one batch. Its own
 * fetch queue also keeps a lookup table's backlog (read from the start)
 * from queueing behind the stream, or the other way round. Both
 * consumers use the job's group (only as the store of committed offsets,
 * no membership), so one transaction commits both inputs' offsets. The
 * cost is one more set of broker connections per member.
 *
 * Rows of partition p go to the task of partition p (parallelism > 1:
 * the topics are co-partitioned, checked at open), or to the one task.
 * Each task has its own right tracker: the join's event_time bound and
 * idle timeout over the right partitions it reads. */
#define _GNU_SOURCE
#include "supervisor/join_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/partition.h"
#include "core/util.h"

typedef struct jtask {
	int32_t partition; /* -1: every right partition */
	sv_pipeline_t *pl;
	sv_op_ctx_t *ctx;
	sv_watermarks_t *wm;
	sv_batch_t in; /* this task's rows of a polled batch (ntasks > 1) */
} jtask_t;

struct sv_join_input {
	const Streamvisor__Join *j;
	size_t step; /* the join's index in the pipeline */
	const sv_jobspec_t *spec;
	sv_logctx_t log;
	sv_source_t *src;
	const sv_schema_t *schema;
	int et_col; /* the join's event_time column, or -1 */
	int key_col; /* join.source.partitioned_by column, or -1 */
	int32_t topic_nparts;
	sv_batch_t in;
	jtask_t *tasks;
	size_t ntasks;
	int32_t *task_of; /* right partition -> task, or -1 */
	int32_t ntask_of;
	int member;
	bool lookup;
	int64_t max_event;
};

const Streamvisor__Join *sv_join_of(const sv_jobspec_t *spec)
{
	const Streamvisor__JobSpec *js = spec->msg;
	for (size_t i = 0; i < js->n_pipeline; i++)
		if (js->pipeline[i]->step_case == STREAMVISOR__STEP__STEP_JOIN)
			return js->pipeline[i]->join;
	return NULL;
}

static sv_error_t *check_copartitioned(sv_join_input_t *ji,
				       const sv_join_input_conf_t *conf)
{
	if (conf->members <= 1 || conf->left_partitions <= 0 ||
	    ji->topic_nparts == conf->left_partitions)
		return NULL;
	char field[96];
	snprintf(field, sizeof(field), "pipeline[%zu].join.source.topic",
		 ji->step);
	sv_error_t *err = sv_error_set_field(
		sv_error_new(SV_ERR_CONFIG,
			     "join input topic '%s' has %d partitions and the "
			     "job's source topic '%s' %d: at parallelism %d "
			     "the two inputs must be co-partitioned (same "
			     "partition count, keyed by the join key)",
			     ji->j->source->topic, (int)ji->topic_nparts,
			     conf->spec->msg->source->topic,
			     (int)conf->left_partitions, conf->members),
		field);
	err->retriable = false;
	err->fatal = true;
	return err;
}

sv_error_t *sv_join_input_open(const sv_join_input_conf_t *conf,
			       sv_join_input_t **out)
{
	*out = NULL;
	const Streamvisor__JobSpec *js = conf->spec->msg;
	const Streamvisor__Join *j = sv_join_of(conf->spec);
	if (!j || !conf->plan->right_schema)
		return NULL;
	sv_join_input_t *ji = sv_calloc(1, sizeof(*ji));
	ji->j = j;
	ji->step = (size_t)conf->plan->join_step;
	ji->spec = conf->spec;
	ji->log.job_id = conf->job_id;
	ji->log.attempt = conf->attempt;
	ji->schema = conf->plan->right_schema;
	ji->et_col = conf->plan->right_event_time_col;
	ji->member = conf->member;
	ji->lookup = !strcmp(j->type, "lookup");
	ji->max_event = SV_WATERMARK_NONE;
	ji->key_col = -1;
	const Streamvisor__Source *s = j->source;
	if (s->n_partitioned_by)
		ji->key_col = sv_schema_find(ji->schema, s->partitioned_by[0]);
	int tomb_col = j->n_on_right == 1
		? sv_schema_find(ji->schema, j->on_right[0])
		: -1;
	sv_format_t fmt = SV_FMT_JSON;
	sv_format_parse(s->format, &fmt);
	sv_source_conf_t sc = {
		.kind = s->kind,
		.job_id = conf->job_id,
		.attempt = conf->attempt,
		.cluster = conf->cluster,
		.topic = s->topic,
		.group_id = conf->group_id,
		.start = s->start && !strcmp(s->start, "latest")
			? SV_START_LATEST
			: SV_START_EARLIEST,
		.bounded = sv_jobspec_bounded(conf->spec),
		.format = fmt,
		.schema = ji->schema,
		.member = conf->member,
		.members = conf->members,
		.generator = s->generator,
		.count = s->count,
		.rate_per_s = s->rate_per_s > 0
			? (s->rate_per_s + conf->members - 1) / conf->members
			: 0,
		.seed = s->seed,
		.tombstones = ji->lookup,
		.tombstone_key_col = tomb_col,
		.memory_budget = conf->memory_budget,
	};
	(void)js;
	sv_batch_init(&ji->in, ji->schema);
	sv_error_t *err = sv_source_open(&sc, &ji->src);
	if (!err) {
		ji->topic_nparts = sv_source_topic_partitions(ji->src);
		err = check_copartitioned(ji, conf);
	}
	if (err) {
		sv_join_input_destroy(ji);
		return err;
	}
	*out = ji;
	return NULL;
}

void sv_join_input_bind(sv_join_input_t *ji, size_t ntasks,
			const int32_t *partitions, sv_pipeline_t *const *pls,
			sv_op_ctx_t *const *ctxs)
{
	const Streamvisor__EventTime *evt = ji->j->event_time;
	const sv_partpos_t *pos;
	size_t npos = sv_source_positions(ji->src, &pos);
	int64_t mono = sv_mono_ms();
	ji->ntasks = ntasks;
	ji->tasks = sv_calloc(ntasks ? ntasks : 1, sizeof(*ji->tasks));
	ji->ntask_of = ji->topic_nparts > 0 ? ji->topic_nparts : 1;
	for (size_t i = 0; i < npos; i++)
		if (pos[i].partition >= ji->ntask_of)
			ji->ntask_of = pos[i].partition + 1;
	for (size_t i = 0; i < ntasks; i++)
		if (partitions[i] >= ji->ntask_of)
			ji->ntask_of = partitions[i] + 1;
	ji->task_of = sv_calloc((size_t)ji->ntask_of, sizeof(*ji->task_of));
	for (int32_t p = 0; p < ji->ntask_of; p++)
		ji->task_of[p] = ntasks == 1 && partitions[0] < 0 ? 0 : -1;
	for (size_t i = 0; i < ntasks; i++) {
		jtask_t *t = &ji->tasks[i];
		t->partition = partitions[i];
		t->pl = pls[i];
		t->ctx = ctxs[i];
		t->ctx->right_watermark_ms = SV_WATERMARK_NONE;
		t->wm = sv_watermarks_new(evt ? evt->max_out_of_orderness_ms
					      : 0,
					  evt ? evt->idle_timeout_ms : 0);
		sv_batch_init(&t->in, ji->schema);
		if (t->partition >= 0) {
			ji->task_of[t->partition] = (int32_t)i;
			sv_watermarks_add_partition(t->wm, t->partition, mono);
		} else {
			for (size_t k = 0; k < npos; k++)
				sv_watermarks_add_partition(
					t->wm, pos[k].partition, mono);
		}
	}
}

/* join.source.partitioned_by, checked record by record as the job's
 * source's (worker.c check_partitioning). */
static sv_error_t *check_partitioning(sv_join_input_t *ji)
{
	if (ji->key_col < 0 || ji->topic_nparts <= 0)
		return NULL;
	char tmp[64];
	for (size_t r = 0; r < ji->in.nrows; r++) {
		const sv_rowmeta_t *meta = &ji->in.meta[r];
		size_t len;
		const char *key = sv_key_text(
			&sv_batch_row(&ji->in, r)[ji->key_col], tmp,
			sizeof(tmp), &len);
		int32_t want = key ? sv_partition_of(key, len, ji->topic_nparts)
				   : -1;
		if (want == meta->partition)
			continue;
		sv_error_t *err = sv_error_new(
			SV_ERR_RUNTIME,
			"join input record at partition %d offset %lld has "
			"%s %s%.*s%s, which Kafka's default partitioner puts "
			"elsewhere: topic '%s' is not partitioned by '%s' as "
			"pipeline[%zu].join.source.partitioned_by declares",
			meta->partition, (long long)meta->offset,
			ji->j->source->partitioned_by[0], key ? "'" : "",
			key ? (int)len : 4, key ? key : "null", key ? "'" : "",
			ji->j->source->topic, ji->j->source->partitioned_by[0],
			ji->step);
		err->retriable = false;
		err->fatal = true;
		return err;
	}
	return NULL;
}

sv_error_t *sv_join_input_poll(sv_join_input_t *ji, size_t max_rows,
			       int timeout_ms, int64_t now_ms, int64_t mono_ms,
			       sv_join_emit_fn *emit, void *opaque,
			       sv_join_poll_t *res)
{
	memset(res, 0, sizeof(*res));
	sv_batch_reset(&ji->in);
	sv_error_t *err = sv_source_poll(ji->src, &ji->in, max_rows, timeout_ms,
					 &res->eof);
	if (err)
		return err;
	res->rows = ji->in.nrows;
	res->invalid = ji->in.nrejects;
	if (ji->in.nrejects) {
		const sv_reject_t *rj = &ji->in.rejects[0];
		if (!strcmp(ji->spec->msg->on_invalid, "fail"))
			return sv_error_new(
				SV_ERR_RUNTIME,
				"invalid join input record at "
				"partition %d offset %lld of "
				"topic '%s': %s",
				rj->partition, (long long)rj->offset,
				ji->j->source->topic ? ji->j->source->topic
						     : "",
				rj->reason);
		sv_log(&ji->log, SV_LOG_WARN, "worker",
		       "skipped %zu invalid join input record(s), the first "
		       "at partition %d offset %lld: %s",
		       ji->in.nrejects, rj->partition, (long long)rj->offset,
		       rj->reason);
	}
	if (!ji->in.nrows)
		return NULL;
	if ((err = check_partitioning(ji)))
		return err;
	for (size_t r = 0; r < ji->in.nrows; r++) {
		sv_rowmeta_t *meta = &ji->in.meta[r];
		const sv_value_t *v = ji->et_col >= 0
			? &sv_batch_row(&ji->in, r)[ji->et_col]
			: NULL;
		if (v && v->type != SV_T_NULL)
			meta->event_ms = v->v.i;
		else if ((meta->flags & SV_ROW_DELETE) &&
			 meta->source_ts_ms >= 0)
			meta->event_ms = meta->source_ts_ms;
		else
			meta->event_ms = now_ms;
		if (meta->event_ms > ji->max_event)
			ji->max_event = meta->event_ms;
		int32_t p = meta->partition;
		int32_t ti = p >= 0 && p < ji->ntask_of
			? ji->task_of[p]
			: (ji->ntasks == 1 ? 0 : -1);
		if (ti < 0)
			return sv_error_new(SV_ERR_RUNTIME,
					    "join input record of partition "
					    "%d, which member %d does not own",
					    p, ji->member);
		jtask_t *t = &ji->tasks[ti];
		if (ji->ntasks > 1)
			sv_batch_copy_row(&t->in, &ji->in, r);
		sv_watermarks_observe(t->wm, p, meta->event_ms, mono_ms);
	}
	for (size_t i = 0; i < ji->ntasks; i++) {
		jtask_t *t = &ji->tasks[i];
		sv_batch_t *in = ji->ntasks > 1 ? &t->in : &ji->in;
		if (!in->nrows)
			continue;
		t->ctx->now_ms = now_ms;
		sv_batch_t *out;
		if ((err = sv_pipeline_push_right(t->pl, t->ctx, in, &out)))
			return err;
		if ((err = emit(opaque, out)))
			return err;
		if (ji->ntasks > 1)
			sv_batch_reset(&t->in);
	}
	return NULL;
}

int64_t sv_join_input_watermark(sv_join_input_t *ji, size_t i, int64_t mono_ms)
{
	return i < ji->ntasks ? sv_watermarks_current(ji->tasks[i].wm, mono_ms)
			      : SV_WATERMARK_NONE;
}

sv_watermarks_t *sv_join_input_task_wm(sv_join_input_t *ji, size_t i)
{
	return i < ji->ntasks ? ji->tasks[i].wm : NULL;
}

sv_source_t *sv_join_input_source(sv_join_input_t *ji)
{
	return ji->src;
}

const char *sv_join_input_topic(const sv_join_input_t *ji)
{
	return ji->j->source->topic ? ji->j->source->topic : "";
}

int64_t sv_join_input_max_event(const sv_join_input_t *ji)
{
	return ji->max_event;
}

bool sv_join_input_commits(const sv_join_input_t *ji)
{
	return !ji->lookup;
}

void sv_join_input_close(sv_join_input_t *ji)
{
	if (!ji)
		return;
	sv_source_close(ji->src);
	ji->src = NULL;
}

void sv_join_input_destroy(sv_join_input_t *ji)
{
	if (!ji)
		return;
	sv_join_input_close(ji);
	for (size_t i = 0; i < ji->ntasks; i++) {
		sv_watermarks_destroy(ji->tasks[i].wm);
		sv_batch_release(&ji->tasks[i].in);
	}
	free(ji->tasks);
	free(ji->task_of);
	sv_batch_release(&ji->in);
	free(ji);
}
