/* ckpt.h — the checkpoint protocol of one job attempt, on the worker's
 * thread (docs/exactly-once.md): take checkpoint n at a batch boundary, and
 * recover the right checkpoint before the first poll.
 *
 * The worker owns the parts (source, sink, pipeline, watermarks) and lends
 * them for each call; this module owns the order of the steps, the kill
 * points, the checkpoint records and the observations they produce. */
#ifndef SV_CKPT_H
#define SV_CKPT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "checkpoint/store.h"
#include "core/error.h"
#include "core/operator.h"
#include "core/watermark.h"
#include "sinks/sink.h"
#include "sources/source.h"
#include "supervisor/observe.h"

/* Incremental checkpoints (docs/checkpoints.md): operators that support it
 * write only what changed since the previous checkpoint. A full snapshot
 * is written first (after a start or a restore), then whenever the deltas
 * since the last full one add up to more bytes than it (so a restore reads
 * at most about twice the state) or full_every checkpoints have passed.
 * Owned by the worker, updated by sv_ckpt_take. */
typedef struct sv_ckpt_incr {
	int full_every; /* at most n - 1 deltas in a row; <= 1: off */
	int64_t prev; /* the last checkpoint written, 0: none yet */
	int chain; /* deltas written since the last full snapshot */
	int64_t full_bytes; /* operator state bytes of that full snapshot */
	int64_t delta_bytes; /* operator state bytes of the deltas since */
	int64_t fulls, deltas; /* checkpoints written each way (counters) */
} sv_ckpt_incr_t;

/* The COMMITTED mark and retention of a committed checkpoint, written on
 * a thread of its own while the worker reads on (docs/exactly-once.md,
 * step 9): recovery never needs the mark (a PREPARED record is resolved
 * from the sink, or restored as complete at at-least-once), so it need not
 * be on the pause. Owned by the worker, zeroed at the start; the next
 * checkpoint waits for it first, and sv_ckpt_settle at the end. */
typedef struct sv_ckpt_tail {
	pthread_t th;
	bool running; /* a mark to settle */
	bool threaded; /* on th; false: written at the settle */
	sv_ckstore_t *store;
	const char *job_id;
	int64_t id;
	int64_t duration_ms;
	int retain;
	int32_t *tasks; /* owned copy; NULL: the parallelism-1 record */
	size_t ntasks;
	sv_error_t *err;
} sv_ckpt_tail_t;

typedef struct sv_ckpt_conf {
	sv_ckstore_t *store; /* shared, thread-safe */
	const char *job_id;
	const char *plan_id;
	const char *topic; /* source topic ("" for generators) */
	int attempt;
	int retain;
	bool transactional; /* the sink runs one transaction per ck */
	sv_obslog_t *obs;
	int64_t restore_from; /* restart: this checkpoint, or -1: the
				  * recovery rule */
	bool ignore_state; /* restart: positions only, empty state */
	sv_ckpt_incr_t *incr; /* borrowed, NULL: every checkpoint is full */
	sv_ckpt_tail_t *tail; /* borrowed, NULL: the mark on the pause */
} sv_ckpt_conf_t;

/* One task of a member at parallelism > 1: one source partition with its
 * own pipeline instance and watermark. */
typedef struct sv_ckpt_task {
	int32_t partition;
	sv_pipeline_t *pl;
	sv_watermarks_t *wm;
	sv_watermarks_t *wm2; /* a join's second input: its tracker, or NULL */
	/* the task's own delta chain (standalone parallelism > 1): kept by
	 * sv_ckpt_take, zero at the start of an attempt; the rule
	 * (full_every) is conf->incr's */
	sv_ckpt_incr_t incr;
} sv_ckpt_task_t;

typedef struct sv_ckpt_parts {
	sv_source_t *src;
	sv_sink_t *snk;
	/* parallelism 1: one pipeline and watermark tracker over every
	 * partition, snapshotted into the checkpoint record */
	sv_pipeline_t *pl;
	sv_watermarks_t *wm;
	/* parallelism > 1 (ntasks > 0): member `member` of `parallelism`,
	 * one snapshot per task under ts/ (docs/checkpoints.md), and
	 * recovery decides per partition */
	sv_ckpt_task_t *tasks;
	size_t ntasks;
	int member;
	int parallelism;
	/* a join's second input (docs/joins.md), or NULL: its source, topic
	 * and (parallelism 1) tracker. Its offsets are in the same record
	 * (PartitionOffset.input 1) and in the same transaction; at
	 * parallelism > 1 task p's snapshot holds right partition p too. */
	sv_source_t *src2;
	const char *topic2;
	sv_watermarks_t *wm2;
	/* distributed mode (docs/cluster.md): per-task snapshots even with
	 * no task, and on_tasks(tasks_opaque, id, records, n) called with
	 * the task records of checkpoint id after they were written to the
	 * local store and before the offsets go into the transaction (the
	 * state topic's records join that transaction there); an error
	 * fails the checkpoint. */
	bool grouped;
	sv_error_t *(*on_tasks)(void *opaque, int64_t id,
				const sv_ckrec_t *const *recs, size_t n);
	void *tasks_opaque;
	/* > 0: at most this many task deltas in a row (distributed mode:
	 * what the state topic's manifest can name) */
	int task_deltas_max;
} sv_ckpt_parts_t;

/* The steps of a checkpoint, timed (docs/exactly-once.md numbers them):
 * the checkpoint id's allocation (a synced write of the job's sequence),
 * the sink's flush or prepare (2), the operators' snapshot and the synced
 * PREPARED write (3; the write with a distributed member's state-topic
 * records), the offsets (5), the commit point (7), the COMMITTED mark and
 * retention (9). When the PREPARED write runs on its own thread beside the
 * flush and the offsets (Kafka exactly-once, docs/exactly-once.md; at
 * parallelism 1 the snapshot before it there too), WRITE (and SNAPSHOT)
 * are their own times and WRITE_WAIT what the worker still waited for
 * after the offsets were sent (0 otherwise). SETTLE: the wait
 * for the previous checkpoint's mark (conf->tail) before this one starts;
 * MARK: the mark's time on the pause (only starting its thread when
 * conf->tail). */
enum {
	SV_CKPT_STEP_SETTLE,
	SV_CKPT_STEP_ID,
	SV_CKPT_STEP_FLUSH,
	SV_CKPT_STEP_SNAPSHOT,
	SV_CKPT_STEP_WRITE,
	SV_CKPT_STEP_WRITE_WAIT,
	SV_CKPT_STEP_OFFSETS,
	SV_CKPT_STEP_COMMIT,
	SV_CKPT_STEP_MARK,
	SV_CKPT_STEPS
};

typedef struct sv_ckpt_info {
	int64_t id;
	int64_t started_ms;
	int64_t duration_ms;
	int64_t bytes;
	int64_t step_us[SV_CKPT_STEPS]; /* microseconds per step */
} sv_ckpt_info_t;

/* Restore the newest usable checkpoint into the parts (operators,
 * watermarks, source positions). *restored is its id, or -1 when the job
 * starts fresh. Errors are SV_ERR_CHECKPOINT and fail the job loudly. */
sv_error_t *sv_ckpt_recover(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
			    int64_t *restored, int64_t *watermark_ms);

/* Distributed mode: restore one task from its snapshot rec of the local
 * store (a task record: offsets[0] its partition's position and
 * watermark, operators inline): operator state and the watermark. A delta
 * record is restored on its chain of the partition's task records in the
 * store, each of a committed checkpoint; *deltas (may be NULL) is how
 * many deltas were applied. Borrows rec. Errors: SV_ERR_CHECKPOINT. */
sv_error_t *sv_ckpt_restore_task(const sv_ckpt_conf_t *conf, sv_ckpt_task_t *t,
				 const sv_ckrec_t *rec, int *deltas);

/* Distributed mode's state topic: restore one task from a chain of n task
 * records read from elsewhere than the store: recs[0] a full snapshot,
 * recs[i] a delta on recs[i - 1] (its delta_of that record's id), applied
 * oldest first; an operator state with delta false in a delta record
 * replaces that operator's state. The watermark is recs[n - 1]'s.
 * Borrows recs. Errors: SV_ERR_CHECKPOINT (a link that is not the next of
 * the chain, of another partition or plan). */
sv_error_t *sv_ckpt_restore_task_chain(const sv_ckpt_conf_t *conf,
				       sv_ckpt_task_t *t,
				       const sv_ckrec_t *const *recs, size_t n);

/* Take and commit one checkpoint: everything written to the sink so far
 * becomes part of it. On error the outcome may be unknown: the caller fails
 * the attempt and recovery decides. For transactional sinks the next
 * transaction is open again on success. */
sv_error_t *sv_ckpt_take(const sv_ckpt_conf_t *conf, sv_ckpt_parts_t *p,
			 int64_t watermark_ms, sv_ckpt_info_t *info);

/* Wait until the last checkpoint's COMMITTED mark and retention are
 * written (conf->tail; nothing to do without one): before an answer that
 * says "committed" (an asked checkpoint, the final one) and at the end of
 * the attempt. Its error, if the mark failed (a checkpoint error). */
sv_error_t *sv_ckpt_settle(const sv_ckpt_conf_t *conf);

#endif
