/* worker.c — the attempt loop (see worker.h).
 *
 * An attempt has `parallelism` N members (docs/parallelism.md): member k is
 * a thread with its own consumer of the partitions p mod N == k, its own
 * producer (transactional id streamvisor-<job>-<k>) and its tasks: one per
 * partition at N > 1, each with its own pipeline instance and watermark
 * tracker, or one over every partition at N = 1 (the job as it always ran).
 * The attempt thread initialises the transactional ids of members the job
 * no longer has (scale-in), then starts the member threads, which open
 * their clients at once; once all are open it reports the binding and lets
 * them read, then joins them. The first member error is the attempt's, and
 * stops the rest.
 *
 * A member loops:
 *   poll ≤ BATCH rows from its source (decoded into typed rows)
 *   check source.partitioned_by per record (Kafka's murmur2 of the key)
 *   assign each row its event time (event_time.field, else now), feed it
 *   to its task's watermarks and, at N > 1, copy it to the task's batch
 *   count rejects; dead-letter or fail per the spec's on_invalid
 *   push each task's rows through its pipeline; write the output
 *   when a task's watermark moved (scope job: the minimum every member
 *   published; scope partition: its own) or, for processing-time windows,
 *   on every pass, advance the pipeline and write what fired
 *   every checkpoint interval: checkpoint (ckpt.c) over its own tasks, or
 *   without a store flush the sink and commit the positions
 * end: bounded input done → finish the pipelines (all windows fire), write,
 *   take a final checkpoint → COMPLETED once every member is done.
 *
 * A join step's second input (join_input.c) is polled in the same loop
 * before the source; its rows go to sv_pipeline_push_right of their
 * task, its trackers give each task's ctx.right_watermark_ms, and a
 * bounded job ends once both inputs are read to their end.
 *
 * Distributed mode (conf->node_id, docs/cluster.md): each member of the
 * node (parallelism members per node) reads as the static member
 * <node>-t<k> of the job's group and holds one task per partition the
 * group assigns (gm_* below): made on assign and restored as the
 * committed offset's tag names (a suspended task, the local store's task
 * record, or the job's state topic), kept suspended after a revoke,
 * dropped when lost or fenced. Positions are the group's committed
 * offsets. After each poll group_step() serves the group: a revoke is
 * acknowledged only after a checkpoint committed what was read, a lost
 * assignment after the open transaction was aborted. Each checkpoint
 * writes every task's snapshot to the state topic in its transaction,
 * tags the offsets with the same tag and sends the consumer's own group
 * metadata; a refusal of category rebalance aborts, goes back to the
 * committed offsets and carries on (never an attempt failure). A bounded
 * job's member stays in the group until the group committed the end
 * offsets of every partition (bounded_step).
 *
 * Counters are atomics read by the supervisor (the job's, summed or
 * maxed by the members, and each member's own); positions and the preview
 * ring are behind a mutex taken once per batch. */
#define _GNU_SOURCE
#include "supervisor/worker.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/codec.h"
#include "core/log.h"
#include "core/partition.h"
#include "core/util.h"
#include "core/watermark.h"
#include "sinks/sink.h"
#include "ingress/stages.h"
#include "cluster/state.h"
#include "supervisor/budget.h"
#include "supervisor/ckpt.h"
#include "supervisor/join_input.h"
#include "supervisor/killpoint.h"
#include "supervisor/stage.h"

#define BATCH_ROWS 2048
#define POLL_TIMEOUT_MS 100
#define PREVIEW_ROWS 100
#define RESULT_MAX_ROWS 100000
#define FLUSH_TIMEOUT_MS 30000

const double sv_ck_buckets_s[SV_CK_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

/* One row of the preview ring: the output row's cells as they were, its
 * strings copied into bytes (both reused: no allocation once warm). It is
 * encoded only when someone asks for the preview. */
typedef struct preview_row {
	sv_value_t *cells; /* ncols cells, or NULL while unused */
	size_t ncols;
	sv_buf_t bytes;
} preview_row_t;

/* One source partition with its own pipeline instance, watermark tracker
 * and operator state (at parallelism 1: one task over every partition). */
typedef struct task {
	int32_t partition; /* -1: every partition of the member */
	sv_plan_t *plan;
	sv_watermarks_t *wm;
	sv_op_ctx_t ctx;
	sv_opstats_t opstats;
	sv_batch_t in; /* this task's rows of a polled batch (ntasks > 1) */
	/* distributed mode: the tag of the committed checkpoint whose
	 * snapshot the task's state is ("" none: fresh), what its state
	 * partition holds (the committed chain), and what it holds once the
	 * open transaction commits (written: this checkpoint wrote one) */
	char tag[SV_STATE_TAG_MAX];
	sv_state_chain_t *chain, *chain_next;
	bool written;
} task_t;

/* One worker thread: its own consumer (the partitions p with p mod N ==
 * index), its own transactional producer streamvisor-<job>-<index> and its
 * tasks. Members share no state; they read each other's published
 * watermarks only (scope job). */
typedef struct member {
	struct sv_worker *w;
	int index; /* within its stage */
	/* repartition (docs/repartition.md): the member's stage, its spec
	 * (the job's, or the stage's), the name its transactional id,
	 * group and checkpoints take (the job id, or <job>-s1), and at
	 * stage 1 the upstream watermarks of its tasks */
	int stage;
	const sv_jobspec_t *spec;
	const char *name;
	sv_stage_in_t *rp_in;
	sv_stage_purge_t *purge; /* stage 1 with checkpoints */
	bool rp_end; /* stage 0: its bounded input ended */
	pthread_t thread;
	bool thread_started;
	sv_logctx_t log;
	sv_source_t *src;
	sv_sink_t *snk;
	sv_sink_t *dlq;
	sv_sink_t *late;
	task_t *tasks;
	size_t ntasks;
	int32_t *task_of; /* partition id -> task index, or -1 */
	int32_t ntask_of;
	sv_ckpt_task_t *cktasks;
	sv_plan_t *plan; /* the member's own: its schemas outlive the clients */
	sv_batch_t in;
	sv_batch_t late_rows;
	sv_ckpt_conf_t ck;
	sv_ckpt_incr_t incr; /* incremental checkpoint chain (ck.incr) */
	sv_ckpt_tail_t cktail; /* the last checkpoint's mark (ck.tail) */
	int64_t wm; /* the watermark its windows see (scope job), clamped */
	int key_col; /* source.partitioned_by column, or -1 */
	int32_t topic_nparts;
	sv_error_t *error;
	bool drained;
	sv_partpos_t *pos; /* under w->lock */
	size_t npos;
	sv_member_stats_t stats;
	sv_join_input_t *join; /* a join's second input, or NULL */
	bool join_eof; /* bounded: the join input is read to its end */
	/* the catch-up cadence applies: this attempt restored a checkpoint
	 * and STREAMVISOR_NO_CATCHUP_CADENCE is not set (read once here, not
	 * at every round of the loop) */
	bool catchup_cadence;
	/* interval checkpoints on this member's own phase (next_checkpoint_at;
	 * STREAMVISOR_NO_STAGGER=1 unsets it, read once in run) */
	bool stagger;
	int held; /* hold_stream: rounds held with an empty join poll */
	sv_partpos_t *jpos; /* its positions, under w->lock */
	size_t njpos;
	/* distributed bounded jobs (bounded_step) */
	bool bounded_group;
	bool held_was_done; /* what it holds was read out and committed */
	int64_t next_end_check; /* monotonic ms */
	bool group_complete; /* the group committed every end offset */
	/* distributed mode (gm_* below): tasks follow the group's
	 * assignment; revoked ones wait suspended in case they come back
	 * with the same tag */
	bool grouped;
	bool stateful; /* the plan has operator state */
	task_t *susp;
	size_t nsusp;
	char state_topic[300];
	char pending_tag[SV_STATE_TAG_MAX];
	sv_buf_t st_buf;
} member_t;

struct sv_worker {
	sv_worker_conf_t conf;
	char *job_id;
	sv_logctx_t log;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool failing; /* a member failed: the others stop */
	atomic_int drain; /* 0 no, 1 drain, 2 drain with final watermark */
	atomic_bool final_ck; /* shutdown: a final checkpoint, then stop */
	bool drained;
	_Atomic int end; /* sv_worker_end_t */
	sv_error_t *error;
	sv_worker_stats_t stats;

	int nmembers; /* per stage: the spec's parallelism */
	member_t *members; /* nall: stage 0's first, then stage 1's */
	int nall;
	int nstages; /* 2 when the job is repartitioned */
	sv_jobspec_t *stage_spec[2]; /* owned, repartition only */
	char *stage1_name; /* <job>-s1 */
	char *rp_topic;
	int32_t rp_parts;
	bool checkpointing; /* a store is configured */
	bool transactional;
	bool wm_per_partition;

	pthread_mutex_t lock; /* guards members' pos, preview, result */
	pthread_cond_t ended; /* signalled (under lock) when end is set */
	/* the members open their clients on their own threads, at once;
	 * they start reading when the attempt thread says go (under lock) */
	pthread_cond_t opened;
	int nopened;
	bool go;
	preview_row_t preview[PREVIEW_ROWS];
	size_t preview_next;
	const sv_schema_t *preview_schema; /* the pipeline's output */
	sv_buf_t result; /* bounded jobs: collected output, JSON lines */
	size_t result_rows;
	bool result_truncated;
	size_t result_max; /* its bytes with a memory budget, or 0 */
	atomic_bool over_budget; /* the estimate went over it (warned) */
};

static void max64(_Atomic int64_t *a, int64_t v)
{
	int64_t cur = atomic_load(a);
	while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

/* Raise *a to v; whether this call raised it. */
static bool maxu64(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load(a);
	while (cur < v)
		if (atomic_compare_exchange_weak(a, &cur, v))
			return true;
	return false;
}

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void set_error(member_t *m, sv_error_t *err)
{
	if (!m->error)
		m->error = sv_error_set_job(err, m->w->job_id,
					    m->w->conf.attempt);
	else
		sv_error_destroy(err);
}

static void publish_positions(member_t *m)
{
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(m->src, &pos);
	pthread_mutex_lock(&m->w->lock);
	if (n != m->npos) {
		m->pos = sv_realloc(m->pos, (n ? n : 1) * sizeof(*pos));
		m->npos = n;
	}
	if (n)
		memcpy(m->pos, pos, n * sizeof(*pos));
	if (m->join) {
		n = sv_source_positions(sv_join_input_source(m->join), &pos);
		if (n != m->njpos) {
			m->jpos = sv_realloc(m->jpos,
					     (n ? n : 1) * sizeof(*pos));
			m->njpos = n;
		}
		if (n)
			memcpy(m->jpos, pos, n * sizeof(*pos));
	}
	pthread_mutex_unlock(&m->w->lock);
}

/* Copy row into the preview slot: a memcpy of the cells and of the string
 * bytes, no encoding (that waits for sv_worker_preview). */
static void preview_keep(preview_row_t *p, const sv_value_t *row, size_t ncols)
{
	if (p->ncols != ncols) {
		p->cells = sv_realloc(p->cells,
				      (ncols ? ncols : 1) * sizeof(*p->cells));
		p->ncols = ncols;
	}
	memcpy(p->cells, row, ncols * sizeof(*row));
	sv_buf_reset(&p->bytes);
	for (size_t c = 0; c < ncols; c++)
		if (row[c].type == SV_T_STRING)
			sv_buf_append(&p->bytes, row[c].v.s, row[c].len);
	/* point the strings into bytes once it no longer moves */
	size_t off = 0;
	for (size_t c = 0; c < ncols; c++)
		if (row[c].type == SV_T_STRING) {
			p->cells[c].v.s = p->bytes.data ? p->bytes.data + off
							: "";
			off += row[c].len;
		}
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
			if (w->result_rows >= RESULT_MAX_ROWS ||
			    (w->result_max && w->result.len >= w->result_max)) {
				w->result_truncated = true;
				break;
			}
			sv_json_encode_row(schema, sv_batch_row(out, r),
					   &w->result);
			sv_buf_putc(&w->result, '\n');
			w->result_rows++;
		}
		atomic_store(&w->stats.result_bytes, w->result.len);
	}
	w->preview_schema = schema;
	for (size_t r = first; r < out->nrows; r++) {
		preview_keep(&w->preview[w->preview_next], sv_batch_row(out, r),
			     out->ncols);
		w->preview_next = (w->preview_next + 1) % PREVIEW_ROWS;
	}
	pthread_mutex_unlock(&w->lock);
}

static sv_error_t *emit(member_t *m, sv_batch_t *out)
{
	sv_worker_t *w = m->w;
	if (out->nrows) {
		sv_error_t *err = sv_sink_write(m->snk, out);
		if (err)
			return err;
		atomic_fetch_add(&m->stats.records_out, out->nrows);
		if (m->stage == w->nstages - 1) {
			atomic_fetch_add(&w->stats.records_out, out->nrows);
			remember_output(w, out);
		} else {
			atomic_fetch_add(&w->stats.records_repartitioned,
					 out->nrows);
			atomic_store(&m->stats.bytes_out, m->snk->bytes_out);
		}
	}
	if (m->late_rows.nrows) {
		if (m->late) {
			sv_error_t *err = sv_sink_write(m->late, &m->late_rows);
			if (err)
				return err;
		}
		sv_batch_reset(&m->late_rows);
	}
	return NULL;
}

static sv_error_t *handle_rejects(member_t *m)
{
	sv_worker_t *w = m->w;
	sv_batch_t *b = &m->in;
	if (!b->nrejects)
		return NULL;
	atomic_fetch_add(&w->stats.records_invalid, b->nrejects);
	const char *policy = m->spec->msg->on_invalid;
	if (!strcmp(policy, "fail")) {
		const sv_reject_t *rj = &b->rejects[0];
		return sv_error_new(
			SV_ERR_RUNTIME,
			"invalid record at partition %d offset %lld: %s",
			rj->partition, (long long)rj->offset, rj->reason);
	}
	for (size_t i = 0; i < b->nrejects; i++) {
		const sv_reject_t *rj = &b->rejects[i];
		if (m->dlq) {
			sv_error_t *err = sv_sink_write_raw(
				m->dlq, rj->payload, rj->len, rj->reason);
			if (err)
				return err;
			atomic_fetch_add(&w->stats.records_dead_letter, 1);
		} else if (i < 5) {
			sv_log(&m->log, SV_LOG_WARN, "worker",
			       "skipped invalid record at partition %d offset "
			       "%lld: %s",
			       rj->partition, (long long)rj->offset,
			       rj->reason);
		}
	}
	return NULL;
}

/* source.partitioned_by, checked record by record: Kafka's default
 * partitioner must put the record's key where the record is. A record
 * elsewhere would land in another task than its key's other records, so
 * its window or dedup state would be split: fail loudly instead. */
static sv_error_t *check_partitioning(member_t *m)
{
	if (m->key_col < 0 || m->topic_nparts <= 0)
		return NULL;
	const Streamvisor__Source *s = m->spec->msg->source;
	char tmp[64];
	for (size_t r = 0; r < m->in.nrows; r++) {
		const sv_rowmeta_t *meta = &m->in.meta[r];
		size_t len;
		const char *key = sv_key_text(
			&sv_batch_row(&m->in, r)[m->key_col], tmp, sizeof(tmp),
			&len);
		int32_t want = key ? sv_partition_of(key, len, m->topic_nparts)
				   : -1;
		if (want == meta->partition)
			continue;
		sv_error_t *err = sv_error_new(
			SV_ERR_RUNTIME,
			"record at partition %d offset %lld has %s %s%.*s%s, "
			"which Kafka's default partitioner puts in %s%d: topic "
			"'%s' is not partitioned by '%s' as "
			"source.partitioned_by declares",
			meta->partition, (long long)meta->offset,
			s->partitioned_by[0], key ? "'" : "",
			key ? (int)len : 4, key ? key : "null", key ? "'" : "",
			key ? "partition " : "no partition (null key) ",
			key ? want : 0, s->topic, s->partitioned_by[0]);
		err->retriable = false;
		err->fatal = true;
		return err;
	}
	return NULL;
}

/* Dead letters and late records are at-least-once: flushed before any
 * commit of the positions. */
static sv_error_t *flush_side_sinks(member_t *m)
{
	sv_error_t *err;
	if (m->dlq && (err = sv_sink_flush(m->dlq, FLUSH_TIMEOUT_MS)))
		return err;
	if (m->late && (err = sv_sink_flush(m->late, FLUSH_TIMEOUT_MS)))
		return err;
	return NULL;
}

/* The member's output so far is committed (checkpoint or offset commit):
 * the job's committed count is the sum over members, since each commits
 * only its own output. */
static void publish_committed(member_t *m)
{
	sv_worker_t *w = m->w;
	atomic_store(&m->stats.records_out_committed,
		     atomic_load(&m->stats.records_out));
	uint64_t sum = 0;
	for (int k = 0; k < w->nall; k++)
		if (w->members[k].stage == w->nstages - 1)
			sum += atomic_load(
				&w->members[k].stats.records_out_committed);
	atomic_store(&w->stats.records_out_committed, sum);
}

static sv_error_t *write_watermarks(member_t *m);

/* No store: flush everything downstream, then commit the source
 * positions (stage 0 of a repartitioned job: its watermark records
 * first). */
static sv_error_t *commit(member_t *m)
{
	sv_error_t *err;
	if (m->stage == 0 && m->w->nstages > 1 && (err = write_watermarks(m)))
		return err;
	if ((err = sv_sink_flush(m->snk, FLUSH_TIMEOUT_MS)))
		return err;
	if ((err = flush_side_sinks(m)))
		return err;
	if ((err = sv_source_commit(m->src)))
		return err;
	if (m->join && sv_join_input_commits(m->join) &&
	    (err = sv_source_commit(sv_join_input_source(m->join))))
		return err;
	atomic_store(&m->w->stats.last_commit_ms, sv_now_ms());
	publish_committed(m);
	return NULL;
}

/* The join's state per input (its operator's state_sides), summed over
 * the member's tasks, then over the members. */
static void update_join_state(member_t *m)
{
	uint64_t mine[2][3] = {{0}};
	for (size_t i = 0; i < m->ntasks; i++) {
		sv_op_t *op = sv_pipeline_join(m->tasks[i].plan->pipeline);
		sv_op_side_state_t sides[2] = {{0}};
		if (op && op->ops->state_sides)
			op->ops->state_sides(op, sides);
		for (int k = 0; k < 2; k++) {
			mine[k][0] += sides[k].bytes;
			mine[k][1] += sides[k].keys;
			mine[k][2] += sides[k].rows;
		}
	}
	for (int k = 0; k < 2; k++)
		for (int f = 0; f < 3; f++)
			atomic_store(&m->stats.join_state[k][f], mine[k][f]);
	sv_worker_t *w = m->w;
	for (int k = 0; k < 2; k++) {
		uint64_t sum[3] = {0};
		for (int j = 0; j < w->nmembers; j++)
			for (int f = 0; f < 3; f++)
				sum[f] += atomic_load(
					&w->members[j].stats.join_state[k][f]);
		atomic_store(&w->stats.join_state_bytes[k], sum[0]);
		atomic_store(&w->stats.join_state_keys[k], sum[1]);
		atomic_store(&w->stats.join_state_rows[k], sum[2]);
	}
}

/* Once per attempt, when the status estimate (operator state, the Kafka
 * clients' queues, a bounded job's kept result) first goes over resources.memory_mb: a warning
 * and the observation memory_over_budget. The budget sizes the buffers,
 * not the state, so a job whose state alone outgrows it goes on running
 * (docs/performance.md "Memory budget"), but not silently. */
static void warn_over_budget(member_t *m)
{
	sv_worker_t *w = m->w;
	int64_t budget = sv_jobspec_memory_budget(w->conf.spec);
	uint64_t state = atomic_load(&w->stats.state_bytes);
	uint64_t kafka = atomic_load(&w->stats.kafka_bytes);
	uint64_t est = state + kafka + atomic_load(&w->stats.result_bytes);
	if (budget <= 0 || est <= (uint64_t)budget ||
	    atomic_exchange(&w->over_budget, true))
		return;
	sv_log(&m->log, SV_LOG_WARN, "worker",
	       "memory estimate %.1f MiB is over resources.memory_mb %lld: "
	       "operator state %.1f MiB, Kafka queues %.1f MiB; the budget "
	       "bounds the Kafka clients' queues, not operator state: raise "
	       "the budget or keep less state",
	       (double)est / 1048576.0, (long long)(budget >> 20),
	       (double)state / 1048576.0, (double)kafka / 1048576.0);
	sv_obslog_add(w->conf.obs, w->conf.attempt, "memory_over_budget",
		      json_pack("{s:I, s:I, s:I}", "budget_bytes",
				(json_int_t)budget, "state_bytes",
				(json_int_t)state, "kafka_queued_bytes",
				(json_int_t)kafka));
}

/* What the member's Kafka clients hold now (their queues), summed over
 * the members into the job's figure (docs/performance.md "Memory
 * budget"). */
static void update_memory(member_t *m)
{
	uint64_t bytes = sv_source_memory_bytes(m->src) +
		sv_sink_memory_bytes(m->snk) + sv_sink_memory_bytes(m->dlq) +
		sv_sink_memory_bytes(m->late);
	if (m->join)
		bytes += sv_source_memory_bytes(sv_join_input_source(m->join));
	atomic_store(&m->stats.kafka_bytes, bytes);
	sv_worker_t *w = m->w;
	bytes = 0;
	for (int k = 0; k < w->nmembers; k++)
		bytes += atomic_load(&w->members[k].stats.kafka_bytes);
	atomic_store(&w->stats.kafka_bytes, bytes);
	warn_over_budget(m);
}

/* A member's share of resources.memory_mb for one part (budget.h: 1/4
 * for the consumer, or 3/16 for it and 3/16 for a join's input, 1/4 for
 * the main sink's producer, 1/32 for each side sink); the rest is left to
 * state and batches. 0: the job sets no budget. */
static int64_t part_budget(const sv_worker_t *w, sv_budget_part_t part)
{
	return sv_budget_share(sv_jobspec_memory_budget(w->conf.spec),
			       w->nmembers, sv_join_of(w->conf.spec) != NULL,
			       part);
}

/* What a Kafka client of part is sized for: its share of the budget, or
 * without one the default client sizing (budget.h sv_budget_client);
 * STREAMVISOR_DEEP_QUEUES=1 keeps librdkafka's deep fixed queues for an
 * unbudgeted job (the control of paired runs). Read when a client opens. */
static int64_t client_part_budget(const sv_worker_t *w, sv_budget_part_t part)
{
	const char *deep = getenv("STREAMVISOR_DEEP_QUEUES");
	return sv_budget_client(sv_jobspec_memory_budget(w->conf.spec),
				w->nmembers, sv_join_of(w->conf.spec) != NULL,
				part, deep && !strcmp(deep, "1"));
}

static int64_t client_budget(const sv_worker_t *w, bool consumer,
			     bool main_sink)
{
	return client_part_budget(w,
				  consumer            ? SV_BUDGET_CONSUMER
					  : main_sink ? SV_BUDGET_SINK
						      : SV_BUDGET_SIDE_SINK);
}

static void update_state_size(member_t *m)
{
	uint64_t bytes = 0, keys = 0;
	for (size_t i = 0; i < m->ntasks; i++) {
		uint64_t b = 0, k = 0;
		sv_pipeline_state_size(m->tasks[i].plan->pipeline, &b, &k);
		bytes += b;
		keys += k;
	}
	atomic_store(&m->stats.state_bytes, bytes);
	atomic_store(&m->stats.state_keys, keys);
	sv_worker_t *w = m->w;
	bytes = keys = 0;
	for (int k = 0; k < w->nall; k++) {
		bytes += atomic_load(&w->members[k].stats.state_bytes);
		keys += atomic_load(&w->members[k].stats.state_keys);
	}
	atomic_store(&w->stats.state_bytes, bytes);
	atomic_store(&w->stats.state_keys, keys);
	if (m->join)
		update_join_state(m);
	update_memory(m);
}

/* Whether make_tasks makes one task per partition the member reads
 * (parallelism > 1 standalone). In distributed mode the tasks follow the
 * group's assignment instead (gm_*, one per assigned partition at any
 * parallelism). */
static bool task_per_partition(const sv_worker_t *w)
{
	return w->nmembers > 1 && !w->conf.node_id;
}
static sv_error_t *gm_on_tasks(void *opaque, int64_t id,
			       const sv_ckrec_t *const *recs, size_t n);
static void gm_committed(member_t *m);
static void gm_drop_all(member_t *m, bool suspend);

static sv_ckpt_parts_t parts_of(member_t *m)
{
	sv_ckpt_parts_t parts = {
		.src = m->src,
		.snk = m->snk,
		.pl = m->ntasks ? m->tasks[0].plan->pipeline
				: m->plan->pipeline,
		.wm = m->ntasks ? m->tasks[0].wm : NULL,
		.member = m->index,
		.parallelism = m->w->nmembers,
	};
	if (task_per_partition(m->w) || m->grouped) {
		parts.tasks = m->cktasks;
		parts.ntasks = m->ntasks;
	}
	if (m->grouped) {
		parts.grouped = true;
		parts.on_tasks = gm_on_tasks;
		parts.tasks_opaque = m;
		parts.task_deltas_max = SV_STATE_CHAIN_MAX - 1;
	}
	if (m->join) {
		parts.src2 = sv_join_input_source(m->join);
		parts.topic2 = sv_join_input_topic(m->join);
		parts.wm2 = sv_join_input_task_wm(m->join, 0);
	}
	return parts;
}

/* The job's checkpoint requests are served once every member served them.
 * Returns whether this call moved the job's count. */
static bool publish_served(sv_worker_t *w)
{
	uint64_t lo = UINT64_MAX;
	for (int k = 0; k < w->nall; k++) {
		uint64_t s = atomic_load(
			&w->members[k].stats.checkpoint_served);
		if (s < lo)
			lo = s;
	}
	return maxu64(&w->stats.checkpoint_served, lo);
}

/* Distributed mode: the consumer's own group metadata, read fresh before
 * each checkpoint, into the sink's next txn_offsets (KIP-447 fencing).
 * STREAMVISOR_TEST_GROUPID_CGMD=1 keeps group-id-only metadata: the
 * negative control of the zombie tests (docs/cluster.md). */
static sv_error_t *group_metadata(member_t *m)
{
	static int groupid_only = -1;
	if (groupid_only < 0) {
		const char *v = getenv("STREAMVISOR_TEST_GROUPID_CGMD");
		groupid_only = v && *v && strcmp(v, "0");
	}
	const sv_partpos_t *pos;
	if (!sv_source_positions(m->src, &pos))
		return NULL; /* nothing held: no offsets to send */
	sv_error_t *err = NULL;
	if (!groupid_only) {
		sv_buf_t md;
		sv_buf_init(&md);
		err = m->src->ops->group_metadata(m->src, &md);
		if (!err)
			err = sv_sink_txn_group(m->snk, md.data, md.len);
		sv_buf_release(&md);
	}
	/* tests: a member stuck with its metadata read (SCALE-OUT.md T6) */
	sv_delaypoint("after_group_metadata");
	return err;
}

/* Stage 0 of a repartitioned job: a watermark record per task to every
 * partition of the internal topic, in the checkpoint's transaction
 * (docs/repartition.md). The value is the stage's job-wide watermark as
 * the member sees it (the minimum over the non-idle partitions of every
 * member), so an idle or empty partition does not hold stage 1 back and
 * stage 1 fires as parallelism 1 would. */
static sv_error_t *write_watermarks(member_t *m)
{
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		sv_error_t *err = sv_stage_write_watermark(
			m->snk, m->w->rp_parts, t->partition, m->topic_nparts,
			m->rp_end ? SV_STAGE_WM_END : m->wm);
		if (err)
			return err;
	}
	atomic_store(&m->stats.bytes_out, m->snk->bytes_out);
	return NULL;
}

/* Stage 1: the watermark records of the batch into the upstream tables,
 * and each task's minimum over its upstream tasks into its tracker (so
 * it is in the task's snapshot); rows do not move these watermarks. */
static void take_watermarks(member_t *m, int64_t mono)
{
	if (!sv_stage_in_take(m->rp_in, &m->in, m->task_of, m->ntask_of))
		return;
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		int64_t v = sv_stage_in_watermark(m->rp_in, i);
		int64_t have = sv_watermarks_partition(t->wm, t->partition);
		/* every upstream task ended: the member finishes (run) */
		if (v == SV_WATERMARK_NONE || v == SV_STAGE_WM_END ||
		    (have != SV_WATERMARK_NONE && v <= have))
			continue;
		sv_watermarks_set(t->wm, t->partition, v, mono);
		sv_watermarks_set_current(t->wm, v);
	}
}

/* Stage 1, after a committed checkpoint: what it consumed of the internal
 * topic is deleted (best effort: a failure is logged). */
static void purge_committed(member_t *m)
{
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(m->src, &pos);
	sv_error_t *err = sv_stage_purge(m->purge, pos, n, sv_mono_ms());
	if (err) {
		sv_log(&m->log, SV_LOG_WARN, "worker",
		       "repartition topic purge: %s", err->message);
		sv_error_destroy(err);
	}
}

/* With a memory budget, after each checkpoint: the allocator's free
 * pages back to the kernel. A checkpoint's snapshot and write batch and
 * a join's burst of answered rows are freed in the middle of the arenas,
 * whose pages glibc keeps until the top of the heap is free; trimmed,
 * the job's resident memory follows what it holds (docs/performance.md
 * "The allocator"). It takes 1-3 ms (up to 13 ms on a loaded machine,
 * bench/BASELINE.md) after the checkpoint's own time, once per checkpoint. */
static void trim_after_checkpoint(member_t *m)
{
	if (sv_jobspec_memory_budget(m->w->conf.spec) > 0)
		sv_alloc_trim();
}

/* Flush the side sinks (dead letters, late records: at-least-once), then
 * take the member's checkpoint through its main sink. */
static sv_error_t *checkpoint(member_t *m, int64_t wm)
{
	sv_worker_t *w = m->w;
	sv_error_t *err;
	if ((err = flush_side_sinks(m)))
		return err;
	uint64_t asked = atomic_load(&w->stats.checkpoint_requests);
	if (m->stage == 0 && w->nstages > 1 && (err = write_watermarks(m)))
		return err;
	update_state_size(m);
	if (m->ck.transactional && sv_source_grouped(m->src) &&
	    (err = group_metadata(m)))
		return err;
	sv_ckpt_parts_t parts = parts_of(m);
	sv_ckpt_info_t info;
	/* an asked checkpoint is answered as committed: its mark written */
	if ((err = sv_ckpt_take(&m->ck, &parts, wm, &info)) ||
	    (asked != atomic_load(&m->stats.checkpoint_served) &&
	     (err = sv_ckpt_settle(&m->ck)))) {
		atomic_fetch_add(&w->stats.checkpoint_failures, 1);
		return err;
	}
	if (m->grouped)
		gm_committed(m);
	int64_t now = sv_now_ms();
	sv_member_stats_t *ms = &m->stats;
	atomic_store(&ms->last_checkpoint, info.id);
	atomic_store(&ms->last_checkpoint_ms, now);
	atomic_store(&ms->last_checkpoint_duration_ms, info.duration_ms);
	atomic_store(&ms->last_checkpoint_bytes, info.bytes);
	atomic_fetch_add(&ms->checkpoints, 1);
	atomic_fetch_add(&ms->ck_sum_us, (uint64_t)info.duration_ms * 1000);
	max64(&w->stats.last_checkpoint, info.id);
	atomic_store(&w->stats.last_checkpoint_ms, now);
	atomic_store(&w->stats.last_checkpoint_duration_ms, info.duration_ms);
	atomic_store(&w->stats.last_checkpoint_bytes, info.bytes);
	atomic_store(&w->stats.last_commit_ms, now);
	publish_committed(m);
	atomic_fetch_add(&w->stats.checkpoints, 1);
	atomic_store(&ms->checkpoint_served, asked);
	/* the job's request is served once every member served it; then
	 * the supervisor hears of it (its parked checkpoint command) */
	if (publish_served(w) && w->conf.done)
		w->conf.done(w->conf.opaque, w);
	if (m->purge)
		purge_committed(m);
	trim_after_checkpoint(m);
	if (m->stage == 0 && w->nstages > 1)
		sv_killpoint("stage0_committed");
	double secs = (double)info.duration_ms / 1000.0;
	for (int b = 0; b < SV_CK_BUCKETS; b++)
		if (secs <= sv_ck_buckets_s[b])
			atomic_fetch_add(&w->stats.ck_hist[b], 1);
	atomic_fetch_add(&w->stats.ck_hist[SV_CK_BUCKETS], 1);
	atomic_fetch_add(&w->stats.ck_sum_us,
			 (uint64_t)info.duration_ms * 1000);
	return NULL;
}

/* Restore the member's checkpointed state (if any) and open its first
 * transaction. */
static sv_error_t *recover(member_t *m)
{
	sv_worker_t *w = m->w;
	if (sv_source_grouped(m->src)) /* the group keeps the positions */
		return m->ck.transactional ? sv_sink_txn_begin(m->snk) : NULL;
	sv_ckpt_parts_t parts = parts_of(m);
	int64_t restored, wm;
	sv_error_t *err = sv_ckpt_recover(&m->ck, &parts, &restored, &wm);
	if (err)
		return err;
	max64(&w->stats.restored_checkpoint, restored);
	if (restored >= 0) {
		m->catchup_cadence = !getenv("STREAMVISOR_NO_CATCHUP_CADENCE");
		max64(&w->stats.last_checkpoint, restored);
		atomic_store(&m->stats.last_checkpoint, restored);
		if (wm != SV_WATERMARK_NONE) {
			m->tasks[0].ctx.watermark_ms = wm;
			m->wm = wm;
			max64(&w->stats.watermark_ms, wm);
		}
		publish_positions(m);
		update_state_size(m);
	}
	if (m->ck.transactional)
		return sv_sink_txn_begin(m->snk);
	return NULL;
}

/* The watermark the member's windows see. Parallelism 1: the one tracker's
 * combined watermark, as always. Otherwise each task's own (scope
 * partition), or the minimum over every member's non-idle tasks (scope
 * job: each member publishes its own minimum and whether all its tasks are
 * idle; a value read late is only lower, so firing is never early), never
 * going back. */
static int64_t combine(member_t *m, int64_t mono)
{
	sv_worker_t *w = m->w;
	if ((w->nmembers == 1 || !task_per_partition(w)) && m->ntasks == 1)
		return sv_watermarks_current(m->tasks[0].wm, mono);
	int64_t own = INT64_MAX;
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		int64_t cur = sv_watermarks_current(t->wm, mono);
		if (!sv_watermarks_idle(t->wm, t->partition, mono) && cur < own)
			own = cur;
	}
	if (own != INT64_MAX) {
		atomic_store(&m->stats.watermark_ms, own);
		atomic_store(&m->stats.idle, false);
	} else {
		atomic_store(&m->stats.idle, true);
	}
	int64_t lo = INT64_MAX;
	int first = m->stage * w->nmembers; /* the members of its stage */
	for (int k = first; k < first + w->nmembers; k++) {
		const sv_member_stats_t *ms = &w->members[k].stats;
		if (atomic_load(&ms->idle))
			continue;
		int64_t v = atomic_load(&ms->watermark_ms);
		if (v < lo)
			lo = v;
	}
	if (lo == INT64_MAX || lo < m->wm)
		return m->wm; /* all idle, or behind: stays */
	return lo;
}

/* The join input's watermark: the member's minimum over its tasks, then
 * the job's over the members (MIN while one has none). */
static void publish_join_watermark(member_t *m)
{
	int64_t lo = INT64_MAX;
	for (size_t i = 0; i < m->ntasks; i++)
		if (m->tasks[i].ctx.right_watermark_ms < lo)
			lo = m->tasks[i].ctx.right_watermark_ms;
	atomic_store(&m->stats.join_watermark_ms,
		     lo == INT64_MAX ? SV_WATERMARK_NONE : lo);
	sv_worker_t *w = m->w;
	lo = INT64_MAX;
	for (int k = 0; k < w->nmembers; k++) {
		int64_t v = atomic_load(&w->members[k].stats.join_watermark_ms);
		if (v < lo)
			lo = v;
	}
	atomic_store(&w->stats.join_watermark_ms, lo);
	max64(&w->stats.join_last_event_ms, sv_join_input_max_event(m->join));
}

static sv_error_t *emit_cb(void *opaque, sv_batch_t *out);

/* One task's advance, its output written in pieces of a batch's rows (a
 * lookup join's answered burst never whole in one batch, its encoding or
 * the producer; docs/performance.md "Checkpoints and the store's
 * memory"). */
static sv_error_t *advance_task(member_t *m, task_t *t)
{
	return sv_pipeline_advance_each(t->plan->pipeline, &t->ctx, BATCH_ROWS,
					emit_cb, m);
}

/* Move the watermarks and let the windows fire. Processing-time windows
 * read ctx->now_ms, so they are advanced on every pass. */
static sv_error_t *advance(member_t *m, int64_t mono)
{
	sv_worker_t *w = m->w;
	int64_t wm = combine(m, mono);
	m->wm = wm;
	if (m->stage == w->nstages - 1)
		max64(&w->stats.watermark_ms, wm);
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		/* distributed: each task its own partition's (scope job
		 * across nodes is not built) */
		int64_t twm = (w->wm_per_partition && w->nmembers > 1) ||
				m->grouped
			? sv_watermarks_current(t->wm, mono)
			: wm;
		bool moved = twm != t->ctx.watermark_ms;
		t->ctx.watermark_ms = twm;
		if (m->join) {
			int64_t rwm = sv_join_input_watermark(m->join, i, mono);
			moved = moved || rwm != t->ctx.right_watermark_ms;
			t->ctx.right_watermark_ms = rwm;
		}
		if (!t->plan->has_windows ||
		    (!moved && !t->plan->has_proc_windows))
			continue;
		sv_error_t *err = advance_task(m, t);
		if (err)
			return err;
	}
	if (m->join)
		publish_join_watermark(m);
	update_state_size(m);
	return NULL;
}

static void count_late(member_t *m)
{
	uint64_t late = 0;
	for (size_t i = 0; i < m->ntasks; i++)
		late += m->tasks[i].opstats.records_late;
	atomic_store(&m->stats.records_late, late);
	sv_worker_t *w = m->w;
	late = 0;
	for (int k = 0; k < w->nall; k++)
		late += atomic_load(&w->members[k].stats.records_late);
	atomic_store(&w->stats.records_late, late);
}

static bool keep_running(const sv_worker_t *w)
{
	return !atomic_load(&w->stop) && !atomic_load(&w->drain) &&
		!atomic_load(&w->failing) && !atomic_load(&w->final_ck);
}

/* Event time and watermarks per record, then the rows to their tasks. */
static sv_error_t *process(member_t *m, int64_t now, int64_t mono)
{
	sv_worker_t *w = m->w;
	size_t n = m->in.nrows;
	int et = m->plan->event_time_col;
	bool routed = m->ntasks > 1 || m->grouped;
	for (size_t r = 0; r < n; r++) {
		sv_rowmeta_t *meta = &m->in.meta[r];
		const sv_value_t *v = et >= 0 ? &sv_batch_row(&m->in, r)[et]
					      : NULL;
		meta->event_ms = v && v->type != SV_T_NULL ? v->v.i : now;
		task_t *t = &m->tasks[0];
		if (routed) {
			int32_t p = meta->partition;
			int32_t ti = p >= 0 && p < m->ntask_of ? m->task_of[p]
							       : -1;
			if (ti < 0)
				return sv_error_new(SV_ERR_RUNTIME,
						    "record of partition %d, "
						    "which member %d does not "
						    "own",
						    p, m->index);
			t = &m->tasks[ti];
			sv_batch_copy_row(&t->in, &m->in, r);
		}
		if (!m->rp_in)
			sv_watermarks_observe(t->wm, meta->partition,
					      meta->event_ms, mono);
	}
	if (n) {
		int64_t hi = SV_WATERMARK_NONE;
		for (size_t i = 0; i < m->ntasks; i++) {
			int64_t e = sv_watermarks_max_event(m->tasks[i].wm);
			if (e > hi)
				hi = e;
		}
		max64(&w->stats.last_event_ms, hi);
	}
	if (m->stage == 0)
		atomic_fetch_add(&w->stats.records_in, n);
	atomic_fetch_add(&m->stats.records_in, n);
	sv_error_t *err;
	if (m->rp_in)
		take_watermarks(m, mono);
	if ((err = handle_rejects(m)))
		return err;
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		sv_batch_t *in = routed ? &t->in : &m->in;
		if (!in->nrows)
			continue;
		t->ctx.now_ms = now;
		sv_batch_t *out;
		if ((err = sv_pipeline_push(t->plan->pipeline, &t->ctx, in,
					    &out)))
			return err;
		if ((err = emit(m, out)))
			return err;
		if (routed)
			sv_batch_reset(&t->in);
	}
	return NULL;
}

static sv_error_t *emit_cb(void *opaque, sv_batch_t *out)
{
	return emit(opaque, out);
}

/* One poll of the join's second input: its rows into the tasks'
 * pipelines, their output written. */
static sv_error_t *poll_join(member_t *m, int timeout_ms, size_t *rows)
{
	sv_join_poll_t res;
	sv_error_t *err = sv_join_input_poll(m->join, BATCH_ROWS, timeout_ms,
					     sv_now_ms(), sv_mono_ms(), emit_cb,
					     m, &res);
	*rows = res.rows;
	atomic_fetch_add(&m->w->stats.join_records_in, res.rows);
	if (res.invalid) {
		atomic_fetch_add(&m->w->stats.join_records_invalid,
				 res.invalid);
		atomic_fetch_add(&m->w->stats.records_invalid, res.invalid);
	}
	if (res.eof)
		m->join_eof = true;
	return err;
}

/* After a commit the group refused (category rebalance: the member's
 * generation is stale): abort what the transaction holds, go back to the
 * committed offsets, open the next transaction; the revoke or the lost
 * assignment comes at a following poll. */
static sv_error_t *fenced(member_t *m, sv_error_t *cause)
{
	sv_worker_t *w = m->w;
	atomic_fetch_add(&w->stats.commits_fenced, 1);
	sv_log(&m->log, SV_LOG_WARN, "worker",
	       "commit refused by the group (%s); aborting and going back to "
	       "the committed offsets",
	       cause->message);
	sv_obslog_add(w->conf.obs, w->conf.attempt, "commit_fenced",
		      json_pack("{s:i, s:s}", "member", m->index, "message",
				cause->message));
	sv_error_destroy(cause);
	sv_error_t *err = NULL;
	if (m->ck.transactional) {
		sv_error_t *ae = sv_sink_txn_abort(m->snk);
		sv_error_destroy(ae);
	}
	if ((err = sv_source_rewind(m->src))) {
		/* lost meanwhile: the revoke will drop the partitions */
		sv_error_destroy(err);
		err = NULL;
	}
	/* the tasks' state holds the aborted interval: restored again from
	 * what the offsets name (gm_sync) */
	if (m->grouped)
		gm_drop_all(m, false);
	if (m->ck.transactional)
		err = sv_sink_txn_begin(m->snk);
	publish_positions(m);
	return err;
}

/* Distributed mode: serve what the group asked at the last poll. A revoke
 * is given back only after a checkpoint committed what was read (the
 * group waits meanwhile); a lost assignment after the open transaction
 * was aborted. */
static sv_error_t *group_step(member_t *m)
{
	sv_worker_t *w = m->w;
	int rb = sv_source_rebalance(m->src);
	if (rb == SV_REBALANCE_NONE)
		return NULL;
	int64_t t0 = sv_mono_ms();
	sv_error_t *err = NULL;
	if (rb == SV_REBALANCE_REVOKE) {
		err = w->checkpointing ? checkpoint(m, m->wm) : commit(m);
		if (err && err->category == SV_ERR_REBALANCE) {
			err = fenced(m, err);
			rb = SV_REBALANCE_LOST;
		}
		if (err)
			return err;
	} else {
		atomic_fetch_add(&w->stats.partitions_lost, 1);
		if (m->ck.transactional) {
			sv_error_t *ae = sv_sink_txn_abort(m->snk);
			sv_error_destroy(ae);
			if ((err = sv_sink_txn_begin(m->snk)))
				return err;
		}
	}
	if ((err = sv_source_rebalance_ack(m->src)))
		return err;
	/* revoked after a checkpoint: the tasks are what their tag names,
	 * kept suspended; lost: their state is beyond what committed */
	gm_drop_all(m, rb == SV_REBALANCE_REVOKE);
	atomic_fetch_add(&w->stats.rebalances, 1);
	sv_obslog_add(
		w->conf.obs, w->conf.attempt,
		rb == SV_REBALANCE_REVOKE ? "revoke_acked" : "assignment_lost",
		json_pack("{s:i, s:I}", "member", m->index, "revoke_ack_ms",
			  (json_int_t)(sv_mono_ms() - t0)));
	publish_positions(m);
	return NULL;
}

/* Exactly-once output becomes visible when its checkpoint commits, so
 * after a (re)start nothing shows for a whole checkpoint interval. Until
 * the attempt's first checkpoint, one is due as soon as the member caught
 * up with its input, whichever comes first of: every partition read past
 * the end it had when the member first read rows (the backlog that
 * waited while the job was down is through: with input flowing fast a
 * poll may never come back short), or a poll that returned rows but fewer
 * than a full batch with every partition read to the end it knows; at the
 * latest after the interval (docs/performance.md "Exactly-once
 * recovery"). A checkpoint taken for another reason (the interval, a
 * request) while the backlog is still being read does not end the rule:
 * what was written after the kill becomes visible once the backlog is
 * through, not an interval later. Each member decides for itself, at any
 * parallelism. */
#define CATCHUP_MAX_PARTS 256
typedef struct catchup {
	bool taken; /* the ends are noted (n = 0: unknown, not used) */
	size_t n;
	int32_t part[CATCHUP_MAX_PARTS];
	int64_t end[CATCHUP_MAX_PARTS];
} catchup_t;

static bool backlog_read(const catchup_t *c, const sv_partpos_t *pos, size_t n)
{
	if (!c->n || n != c->n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (pos[i].partition != c->part[i] ||
		    pos[i].next_offset < c->end[i])
			return false;
	return true;
}

/* The backlog noted at the first poll is still being read: ends known and
 * some partition not yet past its end. */
static bool backlog_pending(member_t *m, const catchup_t *c)
{
	if (!c->taken || !c->n)
		return false;
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(m->src, &pos);
	return !backlog_read(c, pos, n);
}

/* Records still to read up to the ends noted at the first poll (-1: not
 * noted), for the recovery timeline in the log. */
static int64_t backlog_left(member_t *m, const catchup_t *c)
{
	if (!c->taken || !c->n)
		return -1;
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(m->src, &pos);
	int64_t left = 0;
	for (size_t i = 0; i < n && i < c->n; i++)
		if (pos[i].partition == c->part[i] &&
		    pos[i].next_offset < c->end[i])
			left += c->end[i] - pos[i].next_offset;
	return left;
}

static bool first_checkpoint_due(member_t *m, bool first_pending, size_t polled,
				 catchup_t *c)
{
	if (!first_pending || !m->w->transactional || !polled)
		return false;
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(m->src, &pos);
	if (!c->taken) {
		c->taken = true;
		c->n = n <= CATCHUP_MAX_PARTS ? n : 0;
		for (size_t i = 0; i < c->n; i++) {
			c->part[i] = pos[i].partition;
			c->end[i] = pos[i].end_offset;
			if (pos[i].end_offset < 0)
				c->n = 0; /* an end unknown: the rule below */
		}
		sv_log(&m->log, SV_LOG_INFO, "worker",
		       "member %d: first rows read; backlog %lld records",
		       m->index, (long long)backlog_left(m, c));
		return false;
	}
	if (backlog_read(c, pos, n))
		return true;
	if (polled >= BATCH_ROWS)
		return false;
	for (size_t i = 0; i < n; i++)
		if (sv_partpos_lag(&pos[i]) > 0)
			return false;
	return true;
}

/* While the backlog noted at the first poll is read, exactly-once output
 * that was written after the kill waits behind it and then for the next
 * checkpoint. So during the catch-up of an attempt that recovered from a
 * checkpoint (a new job reading a topic's history keeps the interval) a
 * checkpoint is due every
 * CATCHUP_CADENCE_MS (Kafka Streams' commit interval under exactly-once),
 * but not before CATCHUP_COST_FACTOR times what the shorter of the last
 * two checkpoints took has passed (at most a fifth of the catch-up goes
 * to checkpoints, so a large state, whose checkpoints are all long, does
 * not spend it checkpointing; the shorter of two, so that one slow
 * commit, e.g. a flush that waited on a loaded broker, does not stretch
 * the next wait fourfold); the interval still applies. Records that were read before
 * the kill become readable in steps of the cadence rather than all at the
 * end of the backlog. STREAMVISOR_NO_CATCHUP_CADENCE=1 turns the cadence
 * off (for paired measurements). */
#define CATCHUP_CADENCE_MS 100
#define CATCHUP_COST_FACTOR 4
static bool catchup_checkpoint_due(member_t *m, bool first_pending,
				   const catchup_t *c, int64_t last_ck_ms,
				   int64_t ck_cost_ms)
{
	if (!first_pending || !m->w->transactional || !m->catchup_cadence)
		return false;
	int64_t cadence = CATCHUP_CADENCE_MS;
	if (cadence < CATCHUP_COST_FACTOR * ck_cost_ms)
		cadence = CATCHUP_COST_FACTOR * ck_cost_ms;
	return sv_mono_ms() - last_ck_ms >= cadence && backlog_pending(m, c);
}

/* The cost the cadence is held to: the shorter of the last two
 * checkpoints' times (took[0] the last, took[1] the one before; -1: none
 * yet). */
static int64_t catchup_cost(const int64_t took[2])
{
	if (took[1] < 0 || (took[0] >= 0 && took[0] < took[1]))
		return took[0] > 0 ? took[0] : 0;
	return took[1];
}

/* Distributed bounded jobs (docs/cluster.md): a member stays in the group
 * until the job's input is read and committed on every partition,
 * whichever member read it, so the partitions of a node that dies are
 * taken over and finished. Once every partition the member holds is read
 * to its end offset it commits them at once (its final checkpoint for
 * them, taken again whenever a new assignment is read out); from then on,
 * every END_CHECK_MS, it asks the group's committed offsets, and once they
 * reached the end offsets on every partition the input is done
 * cluster-wide: *eof, and the attempt ends completed. Every node learns it
 * the same way, from the group's offsets (read_committed: a pending
 * checkpoint is waited out), so no node has to tell the others. */
#define END_CHECK_MS 500
#define END_ASK_TIMEOUT_MS 2000
static sv_error_t *bounded_step(member_t *m, bool *eof)
{
	if (!m->bounded_group)
		return NULL;
	if (!sv_source_held_done(m->src)) {
		m->held_was_done = false;
		return NULL;
	}
	sv_error_t *err;
	if (!m->held_was_done) {
		err = m->w->checkpointing ? checkpoint(m, m->wm) : commit(m);
		if (err && err->category == SV_ERR_REBALANCE)
			return fenced(m, err); /* read again, commit again */
		if (err)
			return err;
		m->held_was_done = true;
	}
	int64_t now = sv_mono_ms();
	if (now < m->next_end_check)
		return NULL;
	m->next_end_check = now + END_CHECK_MS;
	if (sv_source_group_complete(m->src, END_ASK_TIMEOUT_MS)) {
		sv_log(&m->log, SV_LOG_INFO, "worker",
		       "member %d: the group committed the end offsets of "
		       "every "
		       "partition: the bounded input is done",
		       m->index);
		m->group_complete = true;
		*eof = true;
	}
	return NULL;
}

/* ---- distributed mode: tasks follow the group (docs/cluster.md) ----
 *
 * The member holds one task per partition the group assigned, each with
 * its own pipeline instance and watermark tracker. gm_sync runs after
 * every poll (the group's callbacks run inside it): tasks of partitions no
 * longer held are suspended (after a revoke, whose checkpoint committed
 * them) or dropped (lost, fenced); partitions without a task get one,
 * restored to what the committed offset's tag names: a suspended task
 * with that tag as it is, else the local store's task record when the tag
 * is this member's, else the state topic's snapshot; no tag: fresh. Each
 * checkpoint writes every task's snapshot to the state topic inside its
 * transaction (gm_on_tasks) and tags the offsets with the same tag. */

static void gm_task_free(task_t *t)
{
	free(t->chain);
	free(t->chain_next);
	sv_batch_release(&t->in);
	sv_watermarks_destroy(t->wm);
	sv_plan_destroy(t->plan);
	memset(t, 0, sizeof(*t));
}

static sv_error_t *gm_task_init(member_t *m, task_t *t, int32_t partition)
{
	const Streamvisor__EventTime *evt = m->spec->msg->event_time;
	memset(t, 0, sizeof(*t));
	sv_error_t *err = sv_plan_build(m->spec, &t->plan);
	if (err)
		return err;
	t->partition = partition;
	t->wm = sv_watermarks_new(evt ? evt->max_out_of_orderness_ms : 0,
				  evt ? evt->idle_timeout_ms : 0);
	t->ctx = (sv_op_ctx_t){.watermark_ms = SV_WATERMARK_NONE,
			       .stats = &t->opstats,
			       .late = m->late ? &m->late_rows : NULL};
	sv_batch_init(&t->in, t->plan->schema);
	sv_watermarks_add_partition(t->wm, partition, sv_mono_ms());
	t->chain = sv_malloc(sizeof(*t->chain));
	t->chain_next = sv_malloc(sizeof(*t->chain_next));
	sv_state_chain_unknown(t->chain);
	return NULL;
}

/* task_of and the checkpoint's view of the tasks, after a change. */
static void gm_index(member_t *m)
{
	for (int32_t p = 0; p < m->ntask_of; p++)
		m->task_of[p] = -1;
	free(m->cktasks);
	m->cktasks = sv_calloc(m->ntasks ? m->ntasks : 1, sizeof(*m->cktasks));
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		if (t->partition >= m->ntask_of) {
			m->task_of = sv_realloc(m->task_of,
						(size_t)(t->partition + 1) *
							sizeof(*m->task_of));
			for (int32_t p = m->ntask_of; p <= t->partition; p++)
				m->task_of[p] = -1;
			m->ntask_of = t->partition + 1;
		}
		m->task_of[t->partition] = (int32_t)i;
		m->cktasks[i] = (sv_ckpt_task_t){t->partition,
						 t->plan->pipeline, t->wm};
	}
}

/* Every task out: suspended (kept for a return with the same tag; only
 * the newest per partition) or freed. */
static void gm_drop_all(member_t *m, bool suspend)
{
	if (!m->grouped)
		return;
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		if (!suspend || !t->tag[0] || !m->stateful) {
			gm_task_free(t);
			continue;
		}
		for (size_t k = 0; k < m->nsusp; k++)
			if (m->susp[k].partition == t->partition) {
				gm_task_free(&m->susp[k]);
				m->susp[k] = m->susp[--m->nsusp];
				break;
			}
		m->susp = sv_realloc(m->susp,
				     (m->nsusp + 1) * sizeof(*m->susp));
		m->susp[m->nsusp++] = *t;
	}
	m->ntasks = 0;
	gm_index(m);
}

static void gm_free_suspended(member_t *m)
{
	for (size_t k = 0; k < m->nsusp; k++)
		gm_task_free(&m->susp[k]);
	free(m->susp);
	m->susp = NULL;
	m->nsusp = 0;
}

static void gm_tick(void *opaque)
{
	sv_source_group_serve(((member_t *)opaque)->src);
}

/* This member's tag of checkpoint id: "<node>-t<k>:<id>". */
static void gm_tag(const member_t *m, int64_t id, char *out, size_t n)
{
	snprintf(out, n, "%s-t%d:%lld", m->w->conf.node_id, m->index,
		 (long long)id);
}

/* The checkpoint id of tag when the tag is this member's, else -1. */
static int64_t gm_own_id(const member_t *m, const char *tag)
{
	char mine[SV_STATE_TAG_MAX];
	int n = snprintf(mine, sizeof(mine), "%s-t%d:", m->w->conf.node_id,
			 m->index);
	if (n <= 0 || strncmp(tag, mine, (size_t)n))
		return -1;
	char *end = NULL;
	long long id = strtoll(tag + n, &end, 10);
	return end && !*end && id > 0 ? id : -1;
}

static sv_error_t *gm_restore_error(member_t *m, int32_t p, const char *tag,
				    const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static sv_error_t *gm_restore_error(member_t *m, int32_t p, const char *tag,
				    const char *fmt, ...)
{
	char what[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	sv_error_t *err = sv_error_new(SV_ERR_CHECKPOINT,
				       "partition %d: the snapshot tagged '%s' "
				       "%s",
				       p, tag, what);
	sv_log(&m->log, SV_LOG_ERROR, "checkpoint", "%s", err->message);
	return err;
}

/* Task t from the local cache: the store's task record of this member's
 * checkpoint own (a delta restored on its chain in the store). Whether it
 * did; a cache that cannot be read or restored is a warning (the caller
 * reads the state topic into a fresh task). */
static sv_error_t *gm_restore_cache(member_t *m, task_t *t, int64_t own,
				    int64_t o, size_t *bytes, int *deltas,
				    bool *restored)
{
	*restored = false;
	sv_worker_t *w = m->w;
	sv_ckrec_t *rec = NULL;
	sv_error_t *err = sv_ckstore_get_task(w->conf.store, m->name,
					      t->partition, own, &rec);
	if (!err && !rec)
		return NULL;
	if (!err && (rec->n_offsets < 1 || rec->offsets[0]->next_offset != o))
		err = sv_error_new(
			SV_ERR_CHECKPOINT,
			"its record is at offset %lld, the group "
			"committed %lld",
			rec->n_offsets ? (long long)rec->offsets[0]->next_offset
				       : -1LL,
			(long long)o);
	sv_ckpt_task_t ct = {t->partition, t->plan->pipeline, t->wm};
	if (!err)
		err = sv_ckpt_restore_task(&m->ck, &ct, rec, deltas);
	if (!err)
		*bytes = streamvisor__checkpoint_record__get_packed_size(rec);
	sv_ckstore_free_record(rec);
	*restored = !err;
	if (!err)
		return NULL;
	sv_log(&m->log, SV_LOG_WARN, "checkpoint",
	       "partition %d: the local cache cannot be restored (%s); "
	       "reading the state topic",
	       t->partition, err->message);
	sv_error_destroy(err);
	/* what the failed restore did to the task goes */
	int32_t p = t->partition;
	gm_task_free(t);
	return gm_task_init(m, t, p);
}

/* Task t from the state topic: the chain the manifest tagged tag names,
 * the full snapshot then each delta. */
static sv_error_t *gm_restore_topic(member_t *m, task_t *t, const char *tag,
				    int64_t o, size_t *bytes, int *deltas)
{
	sv_worker_t *w = m->w;
	char cid[300];
	snprintf(cid, sizeof(cid), "streamvisor-%s-%s-t%d-state", m->name,
		 w->conf.node_id, m->index);
	sv_state_read_t q = {
		.kafka = w->conf.sink_cluster,
		.topic = m->state_topic,
		.partition = t->partition,
		.tag = tag,
		.timeout_ms = 30000,
		.client_id = cid,
		.tick = gm_tick,
		.opaque = m,
	};
	sv_state_snap_t *snap = sv_malloc(sizeof(*snap));
	sv_state_snap_init(snap);
	sv_ckrec_t *recs[SV_STATE_CHAIN_MAX] = {0};
	sv_error_t *err = sv_state_read(&q, snap);
	if (err)
		sv_log(&m->log, SV_LOG_ERROR, "checkpoint", "partition %d: %s",
		       t->partition, err->message);
	else if (snap->m.next_offset != o)
		err = gm_restore_error(m, t->partition, tag,
				       "says next offset %lld, the group "
				       "committed %lld",
				       (long long)snap->m.next_offset,
				       (long long)o);
	int32_t n = err ? 0 : snap->m.nchain;
	for (int32_t i = 0; i < n && !err; i++) {
		recs[i] = streamvisor__checkpoint_record__unpack(
			NULL, snap->link[i].len,
			(const uint8_t *)snap->link[i].data);
		if (!recs[i])
			err = gm_restore_error(m, t->partition, tag,
					       "has a link %d (tag '%s') that "
					       "cannot be decoded (%zu bytes)",
					       (int)i, snap->m.chain[i].tag,
					       snap->link[i].len);
	}
	if (!err &&
	    (recs[n - 1]->n_offsets < 1 ||
	     recs[n - 1]->offsets[0]->next_offset != o))
		err = gm_restore_error(m, t->partition, tag,
				       "is at an offset other than the "
				       "committed %lld",
				       (long long)o);
	sv_ckpt_task_t ct = {t->partition, t->plan->pipeline, t->wm};
	if (!err)
		err = sv_ckpt_restore_task_chain(
			&m->ck, &ct, (const sv_ckrec_t *const *)recs,
			(size_t)n);
	if (!err) {
		*bytes = snap->bytes;
		*deltas = n - 1;
		sv_state_chain_from(t->chain, &snap->m);
	}
	for (int32_t i = 0; i < n; i++)
		if (recs[i])
			streamvisor__checkpoint_record__free_unpacked(recs[i],
								      NULL);
	sv_state_snap_release(snap);
	free(snap);
	return err;
}

/* Restore task t of partition p to the snapshot tag names, whose offset
 * the group committed as o: from the local store (this member's tag) or
 * the state topic. */
static sv_error_t *gm_restore(member_t *m, task_t *t, const char *tag,
			      int64_t o)
{
	sv_worker_t *w = m->w;
	int64_t t0 = sv_mono_ms();
	int from = SV_RESTORE_TOPIC;
	size_t bytes = 0;
	int deltas = 0;
	sv_error_t *err = NULL;
	int64_t own = gm_own_id(m, tag);
	bool cached = false;
	if (own > 0 && !getenv("STREAMVISOR_TEST_NO_STATE_CACHE") &&
	    (err = gm_restore_cache(m, t, own, o, &bytes, &deltas, &cached)))
		return err;
	if (cached)
		from = SV_RESTORE_CACHE;
	else if ((err = gm_restore_topic(m, t, tag, o, &bytes, &deltas)))
		return err;
	int64_t ms = sv_mono_ms() - t0;
	atomic_fetch_add(&w->stats.state_restores[from], 1);
	atomic_fetch_add(&w->stats.state_restore_bytes, bytes);
	atomic_fetch_add(&w->stats.state_restore_ms, (uint64_t)ms);
	const char *fname = from == SV_RESTORE_CACHE ? "cache" : "topic";
	sv_log(&m->log, SV_LOG_INFO, "checkpoint",
	       "partition %d: restored the snapshot tagged '%s' from the %s "
	       "(%zu bytes, %lld ms, next offset %lld, %d deltas applied)",
	       t->partition, tag,
	       from == SV_RESTORE_CACHE ? "local cache" : "state topic", bytes,
	       (long long)ms, (long long)o, deltas);
	sv_obslog_add(w->conf.obs, w->conf.attempt, "state_restored",
		      json_pack("{s:i, s:i, s:s, s:s, s:I, s:f, s:I, s:i}",
				"member", m->index, "partition", t->partition,
				"from", fname, "tag", tag, "bytes",
				(json_int_t)bytes, "seconds",
				(double)ms / 1000.0, "next_offset",
				(json_int_t)o, "deltas", deltas));
	snprintf(t->tag, sizeof(t->tag), "%s", tag);
	return NULL;
}

/* A task for partition p at committed offset o with tag (NULL: none). */
static sv_error_t *gm_add(member_t *m, int32_t p, int64_t o, const char *tag,
			  bool *held)
{
	for (size_t k = 0; k < m->nsusp; k++) {
		task_t *s = &m->susp[k];
		if (s->partition != p)
			continue;
		task_t t = *s;
		m->susp[k] = m->susp[--m->nsusp];
		if (tag && !strcmp(t.tag, tag)) { /* back as it left */
			m->tasks[m->ntasks++] = t;
			atomic_fetch_add(
				&m->w->stats.state_restores[SV_RESTORE_MEMORY],
				1);
			sv_log(&m->log, SV_LOG_INFO, "checkpoint",
			       "partition %d: resumed the suspended task "
			       "tagged '%s' (no restore, next offset %lld)",
			       p, tag, (long long)o);
			sv_obslog_add(m->w->conf.obs, m->w->conf.attempt,
				      "state_restored",
				      json_pack("{s:i, s:i, s:s, s:s, s:I, "
						"s:f, s:I, s:i}",
						"member", m->index, "partition",
						p, "from", "memory", "tag", tag,
						"bytes", (json_int_t)0,
						"seconds", 0.0, "next_offset",
						(json_int_t)o, "deltas", 0));
			return NULL;
		}
		gm_task_free(&t);
		break;
	}
	task_t *t = &m->tasks[m->ntasks];
	sv_error_t *err = gm_task_init(m, t, p);
	if (err)
		return err;
	m->ntasks++;
	if (!tag || !m->stateful)
		return NULL; /* fresh (source.start), or nothing to restore */
	if (!*held) {
		/* pause reading while restoring; group_serve keeps the
		 * member alive meanwhile */
		if ((err = sv_source_group_hold(m->src, true)))
			return err;
		*held = true;
	}
	return gm_restore(m, t, tag, o);
}

/* The observation `partitions_assigned`: the member took an assignment
 * (the group's callback ran in the poll before), with each partition's
 * committed offset and tag, before any restore. Borrows want and tags. */
static void gm_observe_assigned(member_t *m, const sv_partpos_t *want,
				char *const *tags, size_t n)
{
	if (!n)
		return;
	json_t *parts = json_array(), *at = json_array();
	for (size_t k = 0; k < n; k++) {
		json_array_append_new(parts, json_integer(want[k].partition));
		json_array_append_new(at,
				      json_pack("{s:i, s:I, s:s?}", "partition",
						want[k].partition,
						"next_offset",
						(json_int_t)want[k].next_offset,
						"tag", tags[k]));
	}
	sv_obslog_add(m->w->conf.obs, m->w->conf.attempt, "partitions_assigned",
		      json_pack("{s:i, s:o, s:o}", "member", m->index,
				"partitions", parts, "committed", at));
}

/* After a poll: the tasks follow the partitions the source holds. */
static sv_error_t *gm_sync(member_t *m)
{
	const sv_partpos_t *pos;
	size_t npos = sv_source_positions(m->src, &pos);
	bool same = npos == m->ntasks;
	for (size_t i = 0; same && i < npos; i++)
		same = pos[i].partition < m->ntask_of &&
			m->task_of[pos[i].partition] >= 0;
	if (same)
		return NULL;
	/* tasks no longer held (not expected outside a revoke, which
	 * gm_drop_all handled): freed */
	size_t keep = 0;
	for (size_t i = 0; i < m->ntasks; i++) {
		bool held = false;
		for (size_t k = 0; k < npos && !held; k++)
			held = pos[k].partition == m->tasks[i].partition;
		if (held)
			m->tasks[keep++] = m->tasks[i];
		else
			gm_task_free(&m->tasks[i]);
	}
	m->ntasks = keep;
	m->tasks = sv_realloc(m->tasks, (npos ? npos : 1) * sizeof(*m->tasks));
	/* copy positions first: a restore serves the group in between */
	sv_partpos_t *want = sv_calloc(npos ? npos : 1, sizeof(*want));
	memcpy(want, pos, npos * sizeof(*pos));
	char **tags = sv_calloc(npos ? npos : 1, sizeof(*tags));
	for (size_t k = 0; k < npos; k++) {
		/* the committed offset, not the position: the poll that
		 * brought the assignment may have read beyond it already
		 * (those rows go to the restored task next) */
		int64_t o;
		const char *tg = sv_source_committed_tag(m->src,
							 want[k].partition, &o);
		tags[k] = tg ? sv_strdup(tg) : NULL;
		want[k].next_offset = o;
	}
	gm_observe_assigned(m, want, tags, npos);
	bool held = false;
	sv_error_t *err = NULL;
	for (size_t k = 0; k < npos && !err; k++) {
		bool have = false;
		for (size_t i = 0; i < m->ntasks && !have; i++)
			have = m->tasks[i].partition == want[k].partition;
		if (!have)
			err = gm_add(m, want[k].partition, want[k].next_offset,
				     tags[k], &held);
	}
	if (held) {
		sv_error_t *herr = sv_source_group_hold(m->src, false);
		if (!err)
			err = herr;
		else
			sv_error_destroy(herr);
	}
	for (size_t k = 0; k < npos; k++)
		free(tags[k]);
	free(tags);
	free(want);
	gm_index(m);
	publish_positions(m);
	return err;
}

/* The budget of distributed.state_budget_bytes_per_s: bytes of task
 * state per checkpoint, at the spec's interval. */
static sv_error_t *gm_budget(member_t *m, int64_t id, uint64_t bytes)
{
	sv_worker_t *w = m->w;
	int64_t interval = m->spec->msg->checkpoint->interval_ms;
	if (interval <= 0)
		interval = 1000;
	uint64_t per_s = bytes * 1000 / (uint64_t)interval;
	atomic_store(&w->stats.state_bytes_per_s, per_s);
	int64_t budget = w->conf.state_budget_bytes_per_s;
	if (budget <= 0 || per_s <= (uint64_t)budget)
		return NULL;
	sv_error_t *err = sv_error_new(
		SV_ERR_COVERAGE,
		"distributed.state_budget_bytes_per_s: checkpoint %lld would "
		"write %llu bytes of task state to the state topic '%s' every "
		"%lld ms (checkpoint.interval_ms), %llu bytes/s, over the "
		"budget of %lld bytes/s: raise checkpoint.interval_ms, keep "
		"less state, or raise the budget",
		(long long)id, (unsigned long long)bytes, m->state_topic,
		(long long)interval, (unsigned long long)per_s,
		(long long)budget);
	err->retriable = false;
	err->fatal = true;
	return sv_error_set_field(err, "distributed.state_budget_bytes_per_s");
}

/* sv_state_write's records into the open transaction. */
typedef struct gm_emit {
	member_t *m;
	int32_t partition;
} gm_emit_t;

static sv_error_t *gm_emit(void *opaque, const char *key, size_t klen,
			   const char *val, size_t vlen)
{
	gm_emit_t *e = opaque;
	return sv_sink_write_keyed(e->m->snk, e->m->state_topic, e->partition,
				   key, klen, val, vlen);
}

/* ckpt.c's hook, inside checkpoint id's transaction: each task's snapshot
 * (its packed task record, a full one or a delta on the task's previous
 * checkpoint) as the next link of its chain on its state partition
 * (sv_state_write: chunks, tombstones, manifest); the offsets' tag. The
 * budget counts the task records' bytes, so deltas count as what they
 * are. */
static sv_error_t *gm_on_tasks(void *opaque, int64_t id,
			       const sv_ckrec_t *const *recs, size_t n)
{
	member_t *m = opaque;
	gm_tag(m, id, m->pending_tag, sizeof(m->pending_tag));
	sv_error_t *err = sv_sink_txn_tag(m->snk, m->pending_tag);
	for (size_t i = 0; i < m->ntasks; i++)
		m->tasks[i].written = false;
	if (err || !m->stateful || !m->ck.transactional)
		return err;
	if (!sv_sink_keyed(m->snk))
		return sv_error_new(SV_ERR_COVERAGE,
				    "the sink cannot write the state topic");
	size_t total = 0;
	for (size_t i = 0; i < n && i < m->ntasks; i++)
		if (recs[i]->n_offsets >= 1 &&
		    recs[i]->offsets[0]->next_offset >= 0)
			total += streamvisor__checkpoint_record__get_packed_size(
				recs[i]);
	if ((err = gm_budget(m, id, total)))
		return err;
	for (size_t i = 0; i < n && i < m->ntasks && !err; i++) {
		task_t *t = &m->tasks[i];
		const sv_ckrec_t *r = recs[i];
		if (r->n_offsets < 1 || r->offsets[0]->next_offset < 0)
			continue; /* no position: no offset, no snapshot */
		size_t len = streamvisor__checkpoint_record__get_packed_size(r);
		sv_buf_reset(&m->st_buf);
		sv_buf_reserve(&m->st_buf, len);
		streamvisor__checkpoint_record__pack(r,
						     (uint8_t *)m->st_buf.data);
		m->st_buf.len = len;
		gm_emit_t e = {m, t->partition};
		sv_state_put_t put = {
			.partition = t->partition,
			.tag = m->pending_tag,
			.checkpoint = id,
			.next_offset = r->offsets[0]->next_offset,
			.delta_of = r->delta_of,
			.rec = m->st_buf.data,
			.len = len,
			.emit = gm_emit,
			.opaque = &e,
		};
		err = sv_state_write(t->chain, &put, t->chain_next);
		t->written = !err;
	}
	return err;
}

/* The checkpoint committed: every task with a position is now what the
 * pending tag names, and its state partition holds the chain written. A
 * task whose snapshot did not go to the topic (no position) takes a full
 * one next: the topic does not hold the base a delta would need. */
static void gm_committed(member_t *m)
{
	const sv_partpos_t *pos;
	size_t npos = sv_source_positions(m->src, &pos);
	bool topic = m->stateful && m->ck.transactional;
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		if (t->written) {
			sv_state_chain_t *c = t->chain;
			t->chain = t->chain_next;
			t->chain_next = c;
		} else if (topic && i < m->ntasks) {
			m->cktasks[i].incr.prev = 0;
		}
		t->written = false;
		bool placed = false;
		for (size_t k = 0; k < npos && !placed; k++)
			placed = pos[k].partition == t->partition &&
				pos[k].next_offset >= 0;
		if (placed)
			snprintf(t->tag, sizeof(t->tag), "%s", m->pending_tag);
	}
}

/* With a memory budget: whether this round leaves the stream unread
 * because the join input is behind (it has more to read: a lookup table
 * still being read from the start) and the stream's rows waiting in the
 * join for it already fill their share of the budget (budget.h
 * SV_BUDGET_JOIN_WAITING). Reading on would only queue more rows behind
 * the table's watermark, all answered at once later into one big output
 * batch; held, they wait in Kafka, and the next join poll waits a little
 * (m->held). A join input that returns nothing for HOLD_EMPTY_ROUNDS
 * rounds in a row (its end may be out of reach: a transaction marker
 * after its last record) no longer holds the stream until it returns
 * rows again (docs/performance.md "Memory budget"). */
#define HOLD_EMPTY_ROUNDS 20
static bool hold_stream(member_t *m, size_t jrows)
{
	if (jrows)
		m->held = 0;
	if (!m->join || m->held >= HOLD_EMPTY_ROUNDS)
		return false;
	int64_t max = part_budget(m->w, SV_BUDGET_JOIN_WAITING);
	if (max <= 0)
		return false;
	const sv_partpos_t *pos;
	size_t n = sv_source_positions(sv_join_input_source(m->join), &pos);
	int64_t lag = 0;
	for (size_t i = 0; i < n; i++)
		lag += sv_partpos_lag(&pos[i]);
	if (!lag) {
		m->held = 0;
		return false;
	}
	uint64_t bytes = 0, rows = 0;
	for (size_t i = 0; i < m->ntasks; i++) {
		sv_op_t *op = sv_pipeline_join(m->tasks[i].plan->pipeline);
		sv_op_side_state_t sides[2] = {{0}};
		if (op && op->ops->state_sides)
			op->ops->state_sides(op, sides);
		bytes += sides[0].bytes;
		rows += sides[0].rows;
	}
	if (!rows || bytes < (uint64_t)max)
		return false;
	if (!jrows)
		m->held++;
	return true;
}

/* When the member's next interval checkpoint is due after one that ended
 * at t (monotonic ms). Alone, interval after it. A standalone job's
 * members (all stages) each keep a phase of their own on a grid common to
 * the process: member k of n checkpoints at the slots k * interval / n
 * past each multiple of interval, the slot nearest t + interval but not
 * sooner than half an interval after t. Members that start together
 * otherwise checkpoint at the same moment, and their synced writes, WAL
 * fsyncs and transaction round trips queue behind each other (W2 at
 * parallelism 2: checkpoint p99 28-126 ms against 6-19 alone,
 * bench/BASELINE.md). Distributed members keep the plain interval. */
static int64_t next_checkpoint_at(const member_t *m, int64_t t,
				  int64_t interval)
{
	const sv_worker_t *w = m->w;
	int n = w->nmembers * (w->nstages > 1 ? w->nstages : 1);
	if (n <= 1 || !m->stagger || m->grouped || interval < 2)
		return t + interval;
	int k = m->stage * w->nmembers + m->index;
	int64_t phase = interval * k / n;
	int64_t slot = (t + interval - phase + interval / 2) / interval *
			interval +
		phase;
	if (slot < t + interval / 2)
		slot += interval;
	return slot;
}

static sv_error_t *run(member_t *m)
{
	sv_worker_t *w = m->w;
	const Streamvisor__JobSpec *js = m->spec->msg;
	int64_t interval = js->checkpoint->interval_ms;
	if (!w->checkpointing && (interval > 1000 || interval <= 0))
		interval = 1000; /* no store: commit offsets every second */
	sv_error_t *err;
	if (w->checkpointing && (err = recover(m)))
		return err;
	m->stagger = !getenv("STREAMVISOR_NO_STAGGER");
	int64_t next_commit = next_checkpoint_at(m, sv_mono_ms(), interval);
	/* the catch-up checkpoint of this attempt is still to come (an
	 * interval checkpoint during the backlog does not count) */
	bool first_pending = true;
	bool first_logged = false; /* the attempt's first checkpoint */
	catchup_t catchup = {0};
	int64_t t_started = sv_mono_ms();
	int64_t last_ck = t_started, ck_took[2] = {-1, -1};
	bool eof = false;
	int64_t t_loop = mono_us();

	while (keep_running(w)) {
		sv_batch_reset(&m->in);
		int64_t t_poll = mono_us();
		size_t jrows = 0;
		int timeout = POLL_TIMEOUT_MS;
		if (m->join && !m->join_eof) {
			/* the join input first, without waiting unless the
			 * source has ended; the wait is split between both */
			if ((err = poll_join(m,
					     eof ? POLL_TIMEOUT_MS
						     : m->held
						     ? POLL_TIMEOUT_MS / 10
						     : 0,
					     &jrows)))
				return err;
			timeout = jrows ? 0 : POLL_TIMEOUT_MS / 2;
		}
		if (!hold_stream(m, jrows) &&
		    (err = sv_source_poll(m->src, &m->in, BATCH_ROWS, timeout,
					  &eof)))
			return err;
		if (m->grouped && (err = gm_sync(m)))
			return err;
		int64_t t_polled = mono_us();
		bool grouped = sv_source_grouped(m->src);
		size_t polled = m->in.nrows;
		if (!m->in.nrows && !jrows)
			atomic_fetch_add(&m->stats.idle_us,
					 (uint64_t)(t_polled - t_poll));
		int64_t now = sv_now_ms();
		int64_t mono = sv_mono_ms();
		for (size_t i = 0; i < m->ntasks; i++)
			m->tasks[i].ctx.now_ms = now;
		if ((err = check_partitioning(m)))
			return err;
		if ((err = process(m, now, mono)))
			return err;
		if ((err = advance(m, mono)))
			return err;
		count_late(m);
		publish_positions(m);
		int64_t t_end = mono_us();
		int64_t busy = (t_end - t_loop) -
			(m->in.nrows || jrows ? 0 : (t_polled - t_poll));
		if (busy > 0)
			atomic_fetch_add(&m->stats.busy_us, (uint64_t)busy);
		t_loop = t_end;
		/* a bounded job's stage 1 ends once every upstream task has */
		if (m->rp_in && sv_stage_in_ended(m->rp_in))
			eof = true;
		if (grouped && (err = bounded_step(m, &eof)))
			return err;
		if (eof && (!m->join || m->join_eof))
			break;
		bool asked = atomic_load(&w->stats.checkpoint_requests) >
			atomic_load(&m->stats.checkpoint_served);
		if (grouped && (err = group_step(m)))
			return err;
		bool first_due = first_checkpoint_due(m, first_pending, polled,
						      &catchup);
		bool catchup_due = !first_due &&
			catchup_checkpoint_due(m, first_pending, &catchup,
					       last_ck, catchup_cost(ck_took));
		if (sv_mono_ms() >= next_commit || asked || first_due ||
		    catchup_due) {
			int64_t t_ck = sv_mono_ms();
			err = w->checkpointing ? checkpoint(m, m->wm)
					       : commit(m);
			/* standalone there is no group to go back to: the
			 * attempt fails and recovery decides, as always */
			if (err && grouped && err->category == SV_ERR_REBALANCE)
				err = fenced(m, err);
			if (err)
				return err;
			if (first_pending && w->transactional)
				sv_log(&m->log, SV_LOG_INFO, "worker",
				       "member %d: %s checkpoint %lld ms "
				       "after reading started (%s), committed "
				       "in %lld ms; backlog left %lld",
				       m->index,
				       first_logged ? "catch-up" : "first",
				       (long long)(t_ck - t_started),
				       first_due ? "caught up"
					       : catchup_due
					       ? "catch-up cadence"
					       : "interval",
				       (long long)(sv_mono_ms() - t_ck),
				       (long long)backlog_left(m, &catchup));
			update_state_size(m);
			first_logged = true;
			if (first_due || !backlog_pending(m, &catchup))
				first_pending = false;
			last_ck = sv_mono_ms();
			ck_took[1] = ck_took[0];
			ck_took[0] = last_ck - t_ck;
			next_commit = next_checkpoint_at(m, last_ck, interval);
			t_loop = mono_us(); /* checkpoint time is its own */
		}
	}
	if (atomic_load(&w->failing) || (m->join && !m->join_eof))
		eof = false; /* stopped before both inputs ended */
	int drain = atomic_load(&w->drain);
	if (eof || drain == 2) {
		for (size_t i = 0; i < m->ntasks; i++) {
			task_t *t = &m->tasks[i];
			sv_batch_t *out;
			t->ctx.now_ms = sv_now_ms();
			if ((err = sv_pipeline_finish(t->plan->pipeline,
						      &t->ctx, &out)))
				return err;
			if ((err = emit(m, out)))
				return err;
		}
		count_late(m);
	}
	/* a bounded stage 0: its last watermark records say it ended */
	m->rp_end = eof && m->stage == 0 && w->nstages > 1;
	bool final_ck = atomic_load(&w->final_ck) && !atomic_load(&w->stop);
	if (m->group_complete && eof) {
		/* distributed bounded: committed cluster-wide; the open
		 * transaction holds nothing of the job's (what the member
		 * held was committed at its end): give it up */
		if (m->ck.transactional)
			sv_error_destroy(sv_sink_txn_abort(m->snk));
	} else if (w->checkpointing && !atomic_load(&w->failing) &&
		   (eof || drain || final_ck)) {
		/* bounded end, drain or shutdown: a final checkpoint commits
		 * the last output (and, drained or shut down, is where the
		 * job continues), marked before the attempt ends */
		if ((err = checkpoint(m, m->wm)) ||
		    (err = sv_ckpt_settle(&m->ck)))
			return err;
		m->drained = drain && !eof;
	} else if (w->checkpointing) {
		/* stopped (cancel, or another member failed): the open
		 * transaction is aborted; the last checkpoint stays */
		if (m->ck.transactional && (err = sv_sink_txn_abort(m->snk)))
			return err;
	} else if ((err = commit(m))) {
		return err;
	}
	publish_positions(m);
	update_state_size(m);
	return NULL;
}

/* Member k's transactional id: streamvisor-<name>-<k> (name: the job id,
 * or stage 1's "<job>-s1"), or in distributed mode
 * streamvisor-<job>-<node>-t<k> (one per node and thread). */
static void txn_id_of(const sv_worker_t *w, const char *name, int k, char *out,
		      size_t n)
{
	if (w->conf.node_id)
		snprintf(out, n, "streamvisor-%s-%s-t%d", name, w->conf.node_id,
			 k);
	else
		snprintf(out, n, "streamvisor-%s-%d", name, k);
}

static sv_error_t *open_sink(member_t *m, const Streamvisor__Sink *s,
			     const sv_cluster_t *cluster,
			     const sv_schema_t *schema, int key_col, bool raw,
			     bool txn, int txn_member, sv_sink_t **out)
{
	sv_worker_t *w = m->w;
	char txn_id[200], group[160];
	const char *name = m->name ? m->name : w->job_id;
	txn_id_of(w, name, txn_member, txn_id, sizeof(txn_id));
	snprintf(group, sizeof(group), "streamvisor-%s", name);
	sv_sink_conf_t sc = {
		.kind = s->kind,
		.job_id = w->job_id,
		.attempt = w->conf.attempt,
		.cluster = cluster,
		.topic = s->topic,
		.format = s->format && !strcmp(s->format, SV_STAGES_FORMAT)
			? SV_FMT_ROW
			: SV_FMT_JSON,
		.schema = schema,
		.key_column = key_col,
		.raw = raw,
		.transactional = txn,
		.transactional_id = txn_id,
		.transaction_timeout_ms = (int)sv_sink_txn_timeout_ms(s),
		.group_id = group,
		.path = s->path,
		.roots = w->conf.file_roots,
		.memory_budget = client_budget(w, false,
					       s == w->conf.spec->msg->sink),
	};
	return sv_sink_open(&sc, out);
}

/* The physical plan as bound: the source partitions this attempt reads,
 * and which member reads them. */
static void observe_bound(sv_worker_t *w)
{
	json_t *parts = json_array();
	json_t *members = json_array();
	for (int k = 0; k < w->nall; k++) {
		member_t *m = &w->members[k];
		const sv_partpos_t *pos;
		size_t n = sv_source_positions(m->src, &pos);
		json_t *mine = json_array();
		for (size_t i = 0; i < n && m->stage == 0; i++) {
			json_array_append_new(
				parts,
				json_pack("{s:i, s:I, s:i}", "partition",
					  pos[i].partition, "next_offset",
					  (json_int_t)pos[i].next_offset,
					  "member", k));
		}
		for (size_t i = 0; i < n; i++)
			json_array_append_new(mine,
					      json_integer(pos[i].partition));
		char txn_id[200];
		txn_id_of(w, m->name, m->index, txn_id, sizeof(txn_id));
		json_t *mo = json_pack("{s:i, s:o, s:o}", "member", m->index,
				       "transactional_id",
				       w->transactional ? json_string(txn_id)
							: json_null(),
				       "partitions", mine);
		if (w->nstages > 1)
			json_object_set_new(mo, "stage",
					    json_integer(m->stage));
		json_array_append_new(members, mo);
	}
	const Streamvisor__JobSpec *js = w->conf.spec->msg;
	json_t *o = json_pack("{s:s, s:s, s:i, s:o, s:o}", "source_kind",
			      js->source->kind, "topic",
			      js->source->topic ? js->source->topic : "",
			      "parallelism", w->nmembers, "partitions", parts,
			      "members", members);
	if (w->nstages > 1)
		json_object_set_new(o, "stages",
				    json_pack("[{s:i, s:s}, {s:i, s:s}]",
					      "stage", 0, "topic",
					      js->source->topic, "stage", 1,
					      "topic", w->rp_topic));
	sv_obslog_add(w->conf.obs, w->conf.attempt, "source_bound", o);
}

/* Distributed mode: the member's tasks follow the group; a stateful
 * exactly-once job's state topic exists before the first checkpoint. */
static sv_error_t *gm_open(member_t *m)
{
	sv_worker_t *w = m->w;
	m->grouped = w->conf.node_id && sv_source_grouped(m->src);
	if (!m->grouped)
		return NULL;
	sv_buf_init(&m->st_buf);
	for (size_t i = 0; i < sv_pipeline_len(m->plan->pipeline); i++)
		if (sv_pipeline_op(m->plan->pipeline, i)->ops->snapshot)
			m->stateful = true;
	sv_state_topic(w->conf.dist_name ? w->conf.dist_name : "default",
		       m->name, m->state_topic, sizeof(m->state_topic));
	if (!m->stateful || !w->transactional)
		return NULL;
	int64_t t0 = sv_mono_ms();
	sv_error_t *err = sv_state_topic_ensure(
		w->conf.sink_cluster, m->state_topic,
		m->topic_nparts > 0 ? m->topic_nparts : 1,
		w->conf.replication_factor);
	if (!err)
		sv_log(&m->log, SV_LOG_INFO, "worker",
		       "task state goes to topic '%s' (ready in %lld ms)",
		       m->state_topic, (long long)(sv_mono_ms() - t0));
	return err;
}

/* One task per partition the member reads (parallelism > 1), or one over
 * all of them: each with its own plan instance and watermark tracker. */
static sv_error_t *make_tasks(member_t *m)
{
	sv_worker_t *w = m->w;
	const Streamvisor__EventTime *evt = m->spec->msg->event_time;
	const sv_partpos_t *pos;
	size_t npos = sv_source_positions(m->src, &pos);
	bool per_part = task_per_partition(w);
	m->ntasks = m->grouped ? 0 : per_part ? npos : 1;
	if (!m->ntasks && !w->conf.node_id)
		return sv_error_new(SV_ERR_RUNTIME,
				    "member %d has no partition to read",
				    m->index);
	m->tasks = sv_calloc(m->ntasks, sizeof(*m->tasks));
	m->cktasks = sv_calloc(m->ntasks, sizeof(*m->cktasks));
	m->ntask_of = m->topic_nparts > 0 ? m->topic_nparts : 1;
	for (size_t i = 0; i < npos; i++)
		if (pos[i].partition >= m->ntask_of)
			m->ntask_of = pos[i].partition + 1;
	m->task_of = sv_calloc((size_t)m->ntask_of, sizeof(*m->task_of));
	for (int32_t p = 0; p < m->ntask_of; p++)
		m->task_of[p] = -1;
	int64_t mono = sv_mono_ms();
	for (size_t i = 0; i < m->ntasks; i++) {
		task_t *t = &m->tasks[i];
		sv_error_t *err = sv_plan_build(m->spec, &t->plan);
		if (err)
			return err;
		t->partition = per_part ? pos[i].partition : -1;
		t->wm = sv_watermarks_new(evt ? evt->max_out_of_orderness_ms
					      : 0,
					  evt ? evt->idle_timeout_ms : 0);
		t->ctx = (sv_op_ctx_t){.watermark_ms = SV_WATERMARK_NONE,
				       .stats = &t->opstats,
				       .late = NULL};
		sv_batch_init(&t->in, t->plan->schema);
		if (per_part) {
			sv_watermarks_add_partition(t->wm, t->partition, mono);
			m->task_of[t->partition] = (int32_t)i;
		} else {
			for (size_t j = 0; j < npos; j++)
				sv_watermarks_add_partition(
					t->wm, pos[j].partition, mono);
		}
		m->cktasks[i] = (sv_ckpt_task_t){t->partition,
						 t->plan->pipeline, t->wm};
	}
	if (m->stage == 1)
		m->rp_in = sv_stage_in_new(m->ntasks);
	return NULL;
}

/* A join step's second input: its source, and the trackers and routing
 * of the member's tasks. */
static sv_error_t *open_join(member_t *m, const char *group)
{
	sv_worker_t *w = m->w;
	sv_join_input_conf_t jc = {
		.spec = w->conf.spec,
		.plan = m->plan,
		.job_id = w->job_id,
		.attempt = w->conf.attempt,
		.cluster = w->conf.join_cluster,
		.group_id = group,
		.member = m->index,
		.members = w->nmembers,
		.left_partitions = m->topic_nparts,
		.memory_budget = client_part_budget(w, SV_BUDGET_JOIN_CONSUMER),
	};
	sv_error_t *err = sv_join_input_open(&jc, &m->join);
	if (err || !m->join)
		return err;
	int32_t *parts = sv_calloc(m->ntasks, sizeof(*parts));
	sv_pipeline_t **pls = sv_calloc(m->ntasks, sizeof(*pls));
	sv_op_ctx_t **ctxs = sv_calloc(m->ntasks, sizeof(*ctxs));
	for (size_t i = 0; i < m->ntasks; i++) {
		parts[i] = m->tasks[i].partition;
		pls[i] = m->tasks[i].plan->pipeline;
		ctxs[i] = &m->tasks[i].ctx;
	}
	sv_join_input_bind(m->join, m->ntasks, parts, pls, ctxs);
	for (size_t i = 0; i < m->ntasks; i++)
		m->cktasks[i].wm2 = sv_join_input_task_wm(m->join, i);
	free(parts);
	free(pls);
	free(ctxs);
	return NULL;
}

/* The member's sink opens on a thread of its own beside the source's
 * open (client, metadata, end offsets), and the source waits for it only
 * right before it reads the group's committed offsets
 * (sv_source_conf_t.before_committed): a transactional sink's
 * init_transactions aborts a crashed attempt's open transaction, which
 * otherwise keeps those offsets unreadable (require_stable) until it
 * times out, so they are still read after the fence, but the steps that
 * do not depend on it no longer wait for it (docs/performance.md
 * "Exactly-once recovery"). */
typedef struct sink_open {
	member_t *m;
	pthread_t thread;
	bool started, joined;
	sv_error_t *err;
} sink_open_t;

static sv_error_t *open_main_sink(member_t *m)
{
	sv_worker_t *w = m->w;
	const Streamvisor__JobSpec *js = m->spec->msg;
	/* stage 0 writes the internal topic, on the source's cluster */
	sv_error_t *err = open_sink(m, js->sink,
				    m->stage == 0 && w->nstages > 1
					    ? w->conf.source_cluster
					    : w->conf.sink_cluster,
				    sv_pipeline_out_schema(m->plan->pipeline),
				    m->plan->sink_key_col, false,
				    w->transactional, m->index, &m->snk);
	if (!err && w->transactional && !sv_sink_transactional(m->snk))
		err = sv_error_new(SV_ERR_COVERAGE,
				   "sink kind '%s' has no "
				   "transactions: exactly_once is not "
				   "available with it",
				   js->sink->kind);
	return err;
}

static void *sink_open_main(void *arg)
{
	sink_open_t *so = arg;
	so->err = open_main_sink(so->m);
	return NULL;
}

static void sink_open_start(sink_open_t *so, member_t *m)
{
	*so = (sink_open_t){.m = m};
	so->started = pthread_create(&so->thread, NULL, sink_open_main, so) ==
		0;
	if (!so->started) { /* no thread: open it here, as before */
		so->err = open_main_sink(m);
		so->joined = true;
	}
}

/* Waits for the sink's open; its error once (NULL after). */
static sv_error_t *sink_open_wait(void *opaque)
{
	sink_open_t *so = opaque;
	if (!so->joined) {
		pthread_join(so->thread, NULL);
		so->joined = true;
	}
	sv_error_t *err = so->err;
	so->err = NULL;
	return err;
}

static sv_error_t *open_member(member_t *m)
{
	sv_worker_t *w = m->w;
	const Streamvisor__JobSpec *js = m->spec->msg;
	/* a plan of our own for the columns and the schemas the clients
	 * borrow; the tasks build theirs once the partitions are known */
	sv_error_t *err = sv_plan_build(m->spec, &m->plan);
	if (err)
		return err;
	const sv_plan_t *plan = m->plan;
	m->ck = (sv_ckpt_conf_t){
		.store = w->conf.store,
		.job_id = m->name,
		.plan_id = m->spec->plan_id,
		.topic = js->source->topic ? js->source->topic : "",
		.attempt = w->conf.attempt,
		.retain = js->checkpoint->retain,
		.transactional = w->transactional,
		.obs = w->conf.obs,
		.restore_from = w->conf.restore_from,
		.ignore_state = w->conf.ignore_state,
		.tail = &m->cktail,
	};
	/* incremental checkpoints: the parallelism-1 record's operators, and
	 * the rule each task's own chain follows at parallelism > 1
	 * standalone (distributed mode's task records stay whole) */
	m->incr = (sv_ckpt_incr_t){
		.full_every = js->checkpoint->full_every
			? js->checkpoint->full_every
			: SV_SPEC_FULL_EVERY_DEFAULT,
	};
	if (m->incr.full_every > 1)
		m->ck.incr = &m->incr;
	m->key_col = -1;
	for (size_t i = 0;
	     js->source->n_partitioned_by && i < plan->schema->nfields; i++)
		if (!strcmp(plan->schema->fields[i].name,
			    js->source->partitioned_by[0]))
			m->key_col = (int)i;
	char group[160];
	snprintf(group, sizeof(group), "streamvisor-%s", m->name);
	sv_format_t fmt = SV_FMT_JSON;
	if (!strcmp(js->source->format, SV_STAGES_FORMAT))
		fmt = SV_FMT_ROW; /* stage 1 reads the internal topic */
	else
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
		.bounded = sv_jobspec_bounded(m->spec),
		.format = fmt,
		.schema = plan->schema,
		.member = m->index,
		.members = w->nmembers,
		.generator = js->source->generator,
		.count = js->source->count,
		/* source.rate_per_s is the job's: each member takes its share */
		.rate_per_s = js->source->rate_per_s > 0
			? (js->source->rate_per_s + w->nmembers - 1) /
				w->nmembers
			: 0,
		.seed = js->source->seed,
		.memory_budget = client_budget(w, true, false),
	};
	char instance[200];
	if (w->conf.node_id) {
		snprintf(instance, sizeof(instance), "%s-t%d", w->conf.node_id,
			 m->index);
		sc.group_instance_id = instance;
		sc.session_timeout_ms = w->conf.session_timeout_ms;
		sc.max_poll_interval_ms = w->conf.max_poll_interval_ms;
		sc.end_offsets = w->conf.end_offsets;
		sc.nend_offsets = w->conf.nend_offsets;
		m->bounded_group = sc.bounded;
	}
	/* The sink beside the source, which reads the group's offsets only
	 * once the sink (its fence) is open (sink_open_t above). */
	sink_open_t so;
	sink_open_start(&so, m);
	sc.before_committed = sink_open_wait;
	sc.before_committed_opaque = &so;
	err = sv_source_open(&sc, &m->src);
	sv_error_t *serr = sink_open_wait(&so);
	if (serr) { /* the sink's error first, as when it opened first */
		sv_error_destroy(err);
		err = serr;
	}
	if (!err) {
		m->topic_nparts = sv_source_topic_partitions(m->src);
		err = gm_open(m);
	}
	if (!err)
		err = make_tasks(m);
	if (!err && plan->join_step >= 0)
		err = open_join(m, group);
	if (!err && m->stage == 1 && w->checkpointing) {
		sv_stage_purge_t *pg;
		err = sv_stage_purge_new(w->conf.source_cluster, w->rp_topic,
					 w->rp_parts, &pg);
		pthread_mutex_lock(&w->lock);
		m->purge = err ? NULL : pg;
		pthread_mutex_unlock(&w->lock);
	}
	if (err)
		return err;
	const sv_plan_t *p0 = m->plan;
	sv_batch_init(&m->in, p0->schema);
	sv_batch_init(&m->late_rows,
		      p0->late_schema ? p0->late_schema : p0->schema);
	if (js->late_sink && p0->late_schema &&
	    (err = open_sink(m, js->late_sink, w->conf.late_cluster,
			     p0->late_schema, -1, false, false, 0, &m->late)))
		return err;
	if (m->late)
		for (size_t i = 0; i < m->ntasks; i++)
			m->tasks[i].ctx.late = &m->late_rows;
	if (js->dead_letter && !strcmp(js->on_invalid, "dead_letter") &&
	    (err = open_sink(m, js->dead_letter, w->conf.dlq_cluster,
			     p0->schema, -1, true, false, 0, &m->dlq)))
		return err;
	return NULL;
}

/* When the job ran with more members before, their transactional ids
 * (k >= now) may hold a killed run's open transaction, which keeps the
 * output's last stable offset (read_committed readers) and the group's
 * offsets (require_stable) blocked until transaction.timeout.ms. One
 * init_transactions on each such id aborts it (Flink's KafkaSink does
 * the same after scale-in). */
static sv_error_t *abort_unused_ids(sv_worker_t *w)
{
	int before = 0;
	sv_error_t *err = sv_ckstore_max_parallelism(w->conf.store, w->job_id,
						     w->nmembers, &before);
	if (err || before <= w->nmembers || !w->transactional)
		return err;
	if (getenv("STREAMVISOR_TEST_NO_ABORT_UNUSED")) {
		sv_log(&w->log, SV_LOG_WARN, "worker",
		       "STREAMVISOR_TEST_NO_ABORT_UNUSED: transactional ids "
		       "%d..%d of the job are left as they are",
		       w->nmembers, before - 1);
		return NULL;
	}
	/* repartitioned: stage 0's ids, which write the internal topic */
	const sv_jobspec_t *spec = w->members[0].spec;
	const Streamvisor__JobSpec *js = spec->msg;
	sv_plan_t *plan;
	if ((err = sv_plan_build(spec, &plan)))
		return err;
	json_t *ids = json_array();
	member_t tmp = {.w = w, .name = w->job_id};
	for (int k = w->nmembers; k < before && !err; k++) {
		sv_sink_t *snk = NULL;
		err = open_sink(&tmp, js->sink,
				w->nstages > 1 ? w->conf.source_cluster
					       : w->conf.sink_cluster,
				sv_pipeline_out_schema(plan->pipeline), -1,
				false, true, k, &snk);
		sv_sink_close(snk);
		char id[200];
		txn_id_of(w, w->job_id, k, id, sizeof(id));
		json_array_append_new(ids, json_string(id));
	}
	sv_plan_destroy(plan);
	if (!err) {
		sv_log(&w->log, SV_LOG_INFO, "worker",
		       "parallelism %d, was up to %d: initialised the unused "
		       "transactional ids %d..%d (aborts their open "
		       "transactions)",
		       w->nmembers, before, w->nmembers, before - 1);
		sv_obslog_add(w->conf.obs, w->conf.attempt,
			      "unused_transactional_ids_initialised",
			      json_pack("{s:i, s:i, s:O}", "parallelism",
					w->nmembers, "max_parallelism", before,
					"transactional_ids", ids));
	}
	json_decref(ids);
	return err;
}

static void *member_main(void *arg)
{
	member_t *m = arg;
	sv_worker_t *w = m->w;
	int64_t t_open = sv_mono_ms();
	sv_error_t *err = open_member(m);
	if (!err)
		sv_log(&m->log, SV_LOG_INFO, "worker",
		       "member %d: clients open in %lld ms", m->index,
		       (long long)(sv_mono_ms() - t_open));
	if (err) {
		set_error(m, err);
		atomic_store(&w->failing, true);
	}
	pthread_mutex_lock(&w->lock);
	w->nopened++;
	pthread_cond_broadcast(&w->opened);
	while (!w->go)
		pthread_cond_wait(&w->opened, &w->lock);
	pthread_mutex_unlock(&w->lock);
	if (!m->error && !atomic_load(&w->failing) && (err = run(m))) {
		set_error(m, err);
		atomic_store(&w->failing, true);
	}
	/* done reading: the others' watermark no longer waits for ours */
	atomic_store(&m->stats.idle, true);
	return NULL;
}

static void close_member(member_t *m)
{
	sv_error_t *err = sv_ckpt_settle(&m->ck); /* the last mark */
	if (err) {
		sv_log(&m->log, SV_LOG_WARN, "worker", "%s", err->message);
		sv_error_destroy(err);
	}
	/* the status reads the purge's offsets under the lock */
	pthread_mutex_lock(&m->w->lock);
	sv_stage_purge_t *pg = m->purge;
	m->purge = NULL;
	pthread_mutex_unlock(&m->w->lock);
	sv_stage_purge_destroy(pg);
	sv_sink_close(m->snk);
	sv_sink_close(m->dlq);
	sv_sink_close(m->late);
	sv_source_close(m->src);
	sv_join_input_close(m->join);
	m->snk = m->dlq = m->late = NULL;
	m->src = NULL;
}

static void *worker_main(void *arg)
{
	sv_worker_t *w = arg;
	sv_log(&w->log, SV_LOG_INFO, "worker",
	       "attempt started (parallelism %d)", w->nmembers);
	sv_error_t *err = NULL;
	if (w->nstages > 1)
		err = sv_stage_topic_ready(w->conf.source_cluster,
					   w->conf.spec->msg->source->topic,
					   w->rp_topic, w->conf.obs,
					   w->conf.attempt, &w->rp_parts);
	if (!err && w->checkpointing)
		err = abort_unused_ids(w);
	int started = 0;
	for (int k = 0; k < w->nall && !err; k++) {
		member_t *m = &w->members[k];
		if (pthread_create(&m->thread, NULL, member_main, m) != 0) {
			err = sv_error_new(SV_ERR_RUNTIME,
					   "cannot start the thread of member "
					   "%d",
					   k);
			atomic_store(&w->failing, true);
		} else {
			m->thread_started = true;
			started++;
		}
	}
	/* every member opened (or failed to): bind, then go */
	pthread_mutex_lock(&w->lock);
	while (w->nopened < started)
		pthread_cond_wait(&w->opened, &w->lock);
	pthread_mutex_unlock(&w->lock);
	if (!err && !atomic_load(&w->failing))
		observe_bound(w);
	pthread_mutex_lock(&w->lock);
	w->go = true;
	pthread_cond_broadcast(&w->opened);
	pthread_mutex_unlock(&w->lock);
	for (int k = 0; k < w->nall; k++)
		if (w->members[k].thread_started)
			pthread_join(w->members[k].thread, NULL);
	/* the first member error is the attempt's */
	for (int k = 0; k < w->nall && !err; k++)
		if (w->members[k].error) {
			err = w->members[k].error;
			w->members[k].error = NULL;
		}
	if (err)
		w->error = sv_error_set_job(err, w->job_id, w->conf.attempt);
	bool drained = w->nall > 0;
	for (int k = 0; k < w->nall; k++)
		drained = drained && w->members[k].drained;
	sv_worker_end_t end;
	if (w->error) {
		sv_log(&w->log, SV_LOG_ERROR, "worker",
		       "attempt failed: %s: %s",
		       sv_errcat_name(w->error->category), w->error->message);
		end = SV_WORKER_FAILED;
	} else if (drained) {
		w->drained = true;
		end = SV_WORKER_DRAINED;
	} else if (atomic_load(&w->stop) || atomic_load(&w->final_ck)) {
		end = SV_WORKER_STOPPED;
	} else {
		end = SV_WORKER_COMPLETED;
	}
	/* Close the clients here, on the worker thread, so a slow close does not
	 * hold up the supervisor. */
	for (int k = 0; k < w->nall; k++)
		close_member(&w->members[k]);
	sv_log(&w->log, SV_LOG_INFO, "worker", "attempt ended: %s",
	       end == SV_WORKER_COMPLETED         ? "completed"
		       : end == SV_WORKER_STOPPED ? "stopped"
		       : end == SV_WORKER_DRAINED ? "drained"
						  : "failed");
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->end, end);
	pthread_cond_broadcast(&w->ended);
	pthread_mutex_unlock(&w->lock);
	if (w->conf.done)
		w->conf.done(w->conf.opaque, w);
	return NULL;
}

/* A job with a keyed step off its source partitioning runs as two
 * stages through an internal topic (docs/repartition.md). */
static sv_error_t *split_stages(sv_worker_t *w)
{
	const char *key;
	if (sv_stages_split_at(w->conf.spec->msg, &key) < 0)
		return NULL;
	sv_error_t *err = sv_stages_derive(
		w->conf.spec, w->job_id, &w->stage_spec[0], &w->stage_spec[1]);
	if (err)
		return err;
	w->nstages = 2;
	w->rp_topic = sv_stages_topic(w->job_id);
	if (asprintf(&w->stage1_name, "%s-s1", w->job_id) < 0)
		abort();
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
	atomic_store(&w->stats.join_watermark_ms, INT64_MIN);
	atomic_store(&w->stats.join_last_event_ms, INT64_MIN);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->ended, NULL);
	pthread_cond_init(&w->opened, NULL);
	sv_buf_init(&w->result);
	w->checkpointing = conf->store != NULL;
	w->transactional = w->checkpointing &&
		!strcmp(conf->spec->msg->delivery, "exactly_once");
	w->wm_per_partition = sv_jobspec_wm_per_partition(conf->spec);
	w->nmembers = sv_jobspec_parallelism(conf->spec);
	if (sv_jobspec_memory_budget(conf->spec) > 0)
		sv_alloc_compact();
	w->result_max = (size_t)part_budget(w, SV_BUDGET_RESULT);
	w->nstages = 1;
	sv_error_t *serr = split_stages(w);
	if (serr) {
		free(w->job_id);
		free(w);
		return serr;
	}
	w->nall = w->nmembers * w->nstages;
	w->members = sv_calloc((size_t)w->nall, sizeof(*w->members));
	for (int k = 0; k < w->nall; k++) {
		member_t *m = &w->members[k];
		m->w = w;
		m->stage = k / w->nmembers;
		m->index = k % w->nmembers;
		m->spec = w->nstages > 1 ? w->stage_spec[m->stage] : conf->spec;
		m->name = m->stage ? w->stage1_name : w->job_id;
		m->log = w->log;
		m->wm = SV_WATERMARK_NONE;
		atomic_store(&m->stats.watermark_ms, SV_WATERMARK_NONE);
		atomic_store(&m->stats.last_checkpoint, -1);
		atomic_store(&m->stats.join_watermark_ms, SV_WATERMARK_NONE);
	}
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->ended);
		pthread_cond_destroy(&w->opened);
		free(w->members);
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

void sv_worker_stop_checkpoint(sv_worker_t *w)
{
	atomic_store(&w->final_ck, true);
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
	for (int k = 0; k < w->nall; k++) {
		member_t *m = &w->members[k];
		sv_stage_in_destroy(m->rp_in);
		for (size_t i = 0; i < m->ntasks; i++) {
			sv_plan_destroy(m->tasks[i].plan);
			sv_watermarks_destroy(m->tasks[i].wm);
			sv_batch_release(&m->tasks[i].in);
			free(m->tasks[i].chain);
			free(m->tasks[i].chain_next);
		}
		free(m->tasks);
		free(m->cktasks);
		gm_free_suspended(m);
		sv_buf_release(&m->st_buf);
		sv_plan_destroy(m->plan);
		free(m->task_of);
		sv_batch_release(&m->in);
		sv_batch_release(&m->late_rows);
		sv_error_destroy(m->error);
		free(m->pos);
		sv_join_input_destroy(m->join);
		free(m->jpos);
	}
	free(w->members);
	sv_jobspec_destroy(w->stage_spec[0]);
	sv_jobspec_destroy(w->stage_spec[1]);
	free(w->stage1_name);
	free(w->rp_topic);
	sv_error_destroy(w->error);
	for (size_t i = 0; i < PREVIEW_ROWS; i++) {
		free(w->preview[i].cells);
		sv_buf_release(&w->preview[i].bytes);
	}
	sv_buf_release(&w->result);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->ended);
	pthread_cond_destroy(&w->opened);
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

int sv_worker_member_of(sv_worker_t *w, int32_t partition)
{
	int found = -1;
	pthread_mutex_lock(&w->lock);
	for (int k = 0; k < w->nmembers && found < 0; k++)
		for (size_t i = 0; i < w->members[k].npos; i++)
			if (w->members[k].pos[i].partition == partition) {
				found = k;
				break;
			}
	pthread_mutex_unlock(&w->lock);
	return found;
}

static int cmp_pos(const void *a, const void *b)
{
	int32_t x = ((const sv_partpos_t *)a)->partition;
	int32_t y = ((const sv_partpos_t *)b)->partition;
	return (x > y) - (x < y);
}

size_t sv_worker_positions(sv_worker_t *w, sv_partpos_t **pos)
{
	pthread_mutex_lock(&w->lock);
	size_t n = 0;
	for (int k = 0; k < w->nmembers; k++)
		n += w->members[k].npos;
	*pos = sv_malloc((n ? n : 1) * sizeof(**pos));
	size_t at = 0;
	for (int k = 0; k < w->nmembers; k++) {
		const member_t *m = &w->members[k];
		if (m->npos)
			memcpy(*pos + at, m->pos, m->npos * sizeof(**pos));
		at += m->npos;
	}
	pthread_mutex_unlock(&w->lock);
	if (w->nmembers > 1)
		qsort(*pos, n, sizeof(**pos), cmp_pos);
	return n;
}

size_t sv_worker_join_positions(sv_worker_t *w, sv_partpos_t **pos)
{
	pthread_mutex_lock(&w->lock);
	size_t n = 0;
	for (int k = 0; k < w->nmembers; k++)
		n += w->members[k].njpos;
	*pos = sv_malloc((n ? n : 1) * sizeof(**pos));
	size_t at = 0;
	for (int k = 0; k < w->nmembers; k++) {
		const member_t *m = &w->members[k];
		if (m->njpos)
			memcpy(*pos + at, m->jpos, m->njpos * sizeof(**pos));
		at += m->njpos;
	}
	pthread_mutex_unlock(&w->lock);
	if (w->nmembers > 1)
		qsort(*pos, n, sizeof(**pos), cmp_pos);
	return n;
}

int sv_worker_parallelism(const sv_worker_t *w)
{
	return w->nmembers;
}

const sv_member_stats_t *sv_worker_member_stats(const sv_worker_t *w, int k)
{
	return k >= 0 && k < w->nmembers ? &w->members[k].stats : NULL;
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
		if (w->preview[i].cells)
			have++;
	if (limit > have)
		limit = have;
	for (size_t k = 0; k < limit; k++) {
		size_t i = (w->preview_next + PREVIEW_ROWS - limit + k) %
			PREVIEW_ROWS;
		sv_json_encode_row(w->preview_schema, w->preview[i].cells, &b);
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

/* The members of one stage as JSON, with their records and lag (the
 * records of their partitions not read yet). */
static json_t *stage_members(sv_worker_t *w, int stage, uint64_t *in,
			     uint64_t *out, uint64_t *lag, uint64_t *retained,
			     uint64_t *bytes)
{
	json_t *a = json_array();
	*in = *out = *lag = *retained = *bytes = 0;
	for (int k = stage * w->nmembers; k < (stage + 1) * w->nmembers; k++) {
		const member_t *m = &w->members[k];
		uint64_t mlag = 0;
		json_t *parts = json_array();
		for (size_t i = 0; i < m->npos; i++) {
			const sv_partpos_t *p = &m->pos[i];
			if (p->end_offset > p->next_offset)
				mlag += (uint64_t)(p->end_offset -
						   p->next_offset);
			int64_t low = sv_stage_purged_before(m->purge,
							     p->partition);
			if (stage == 1 && p->end_offset > (low > 0 ? low : 0))
				*retained += (uint64_t)(p->end_offset -
							(low > 0 ? low : 0));
			json_array_append_new(parts,
					      json_integer(p->partition));
		}
		*bytes += atomic_load(&m->stats.bytes_out);
		uint64_t mi = atomic_load(&m->stats.records_in);
		uint64_t mo = atomic_load(&m->stats.records_out);
		*in += mi;
		*out += mo;
		*lag += mlag;
		char txn_id[200];
		txn_id_of(w, m->name, m->index, txn_id, sizeof(txn_id));
		json_array_append_new(
			a,
			json_pack("{s:i, s:s, s:o, s:I, s:I, s:I, s:I}",
				  "member", m->index, "transactional_id",
				  txn_id, "partitions", parts, "records_in",
				  (json_int_t)mi, "records_out", (json_int_t)mo,
				  "lag", (json_int_t)mlag, "last_checkpoint",
				  (json_int_t)atomic_load(
					  &m->stats.last_checkpoint)));
	}
	return a;
}

json_t *sv_worker_stages_json(sv_worker_t *w, const char **rp_topic,
			      uint64_t *rp_lag)
{
	if (rp_topic)
		*rp_topic = w->rp_topic;
	if (rp_lag)
		*rp_lag = 0;
	if (w->nstages < 2)
		return NULL;
	json_t *stages = json_array();
	pthread_mutex_lock(&w->lock);
	for (int st = 0; st < w->nstages; st++) {
		uint64_t in, out, lag, retained, bytes;
		json_t *members = stage_members(w, st, &in, &out, &lag,
						&retained, &bytes);
		const Streamvisor__JobSpec *js = w->stage_spec[st]->msg;
		json_t *o = json_pack("{s:i, s:s, s:o, s:I, s:I, s:I}", "stage",
				      st, "topic", js->source->topic, "members",
				      members, "records_in", (json_int_t)in,
				      "records_out", (json_int_t)out, "lag",
				      (json_int_t)lag);
		char group[200];
		snprintf(group, sizeof(group), "streamvisor-%s",
			 st ? w->stage1_name : w->job_id);
		json_object_set_new(o, "group", json_string(group));
		if (st == 0) {
			json_object_set_new(o, "repartition_topic",
					    json_string(w->rp_topic));
			/* sv-row values and watermark records written */
			json_object_set_new(o, "bytes_out",
					    json_integer((json_int_t)bytes));
		} else if (rp_lag)
			*rp_lag = lag;
		if (st == 1)
			/* what the topic still holds (below: purged) */
			json_object_set_new(o, "retained_records",
					    json_integer((json_int_t)retained));
		if (st == w->nstages - 1)
			json_object_set_new(o, "watermark_ms",
					    json_integer(atomic_load(
						    &w->stats.watermark_ms)));
		json_array_append_new(stages, o);
	}
	pthread_mutex_unlock(&w->lock);
	return stages;
}
