/* join_input.h — a join's second input for one member of a job attempt
 * (docs/joins.md, "How the worker runs a join").
 *
 * A member whose plan has a join step opens one of these next to its main
 * source: a second source (the join step's `source`, decoded with the
 * join's `schema`; a Kafka table's null values become tombstones), one
 * right watermark tracker per task, and the routing of right rows to the
 * task of their partition (parallelism > 1: task p owns left partition p
 * and right partition p). The worker polls it, and this module pushes
 * the rows through sv_pipeline_push_right and hands the output to the
 * worker's emit callback; the worker's advance reads each task's right
 * watermark from here. The checkpoint (ckpt.c) borrows its source and
 * trackers for the right input's offsets and watermarks.
 *
 * thread: the member's. */
#ifndef SV_JOIN_INPUT_H
#define SV_JOIN_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/operator.h"
#include "core/watermark.h"
#include "ingress/plan.h"
#include "ingress/spec.h"
#include "sources/source.h"

typedef struct sv_join_input sv_join_input_t;

typedef struct sv_join_input_conf {
	const sv_jobspec_t *spec; /* borrowed */
	const sv_plan_t *plan; /* the member's (right schema), borrowed */
	const char *job_id;
	int attempt;
	const sv_cluster_t *cluster; /* the join source's, borrowed */
	const char *group_id;
	int member, members;
	/* the left topic's partition count (0: not a partitioned source);
	 * at parallelism > 1 the right topic must have as many */
	int32_t left_partitions;
	/* its consumer's share of resources.memory_mb (budget.h), 0: none */
	int64_t memory_budget;
} sv_join_input_conf_t;

/* The join step of a spec, or NULL. */
const Streamvisor__Join *sv_join_of(const sv_jobspec_t *spec);

/* Open the right source. Errors: those of sv_source_open; a `config`
 * error (not retried) naming pipeline[i].join.source.topic when, at
 * parallelism > 1, the two topics' partition counts differ. */
sv_error_t *sv_join_input_open(const sv_join_input_conf_t *conf,
			       sv_join_input_t **out);

/* The member's tasks: task i runs pipeline pls[i] with context ctxs[i]
 * (both borrowed for the life of ji) over left partition partitions[i],
 * or every partition when ntasks is 1 and partitions[0] is -1. Makes one
 * right watermark tracker per task. */
void sv_join_input_bind(sv_join_input_t *ji, size_t ntasks,
			const int32_t *partitions, sv_pipeline_t *const *pls,
			sv_op_ctx_t *const *ctxs);

/* The worker's output path: write out (the pipeline's output). */
typedef sv_error_t *(sv_join_emit_fn)(void *opaque, sv_batch_t *out);

typedef struct sv_join_poll {
	size_t rows; /* right rows read (decoded) */
	size_t invalid; /* right inputs that did not decode (skipped) */
	bool eof; /* bounded: the right input is read to its end */
} sv_join_poll_t;

/* Poll at most max_rows right rows, waiting at most timeout_ms; give each
 * its event time (the join's event_time field; a tombstone: its message
 * timestamp; else now_ms) and its task's tracker, push them into the
 * tasks' pipelines and emit the output. An invalid right record fails
 * the attempt when on_invalid is "fail", else it is skipped and counted
 * (right inputs are not dead-lettered). */
sv_error_t *sv_join_input_poll(sv_join_input_t *ji, size_t max_rows,
			       int timeout_ms, int64_t now_ms, int64_t mono_ms,
			       sv_join_emit_fn *emit, void *opaque,
			       sv_join_poll_t *res);

/* Task i's right watermark at mono_ms (NONE until the right input has
 * one). */
int64_t sv_join_input_watermark(sv_join_input_t *ji, size_t i, int64_t mono_ms);
/* Task i's right tracker (for the checkpoint). */
sv_watermarks_t *sv_join_input_task_wm(sv_join_input_t *ji, size_t i);
sv_source_t *sv_join_input_source(sv_join_input_t *ji);
const char *sv_join_input_topic(const sv_join_input_t *ji);
/* Largest right event time seen, or NONE. */
int64_t sv_join_input_max_event(const sv_join_input_t *ji);
/* Whether the right source's positions may be committed without a
 * checkpoint store: not for a lookup table, which is read from the start
 * when its state is not in a checkpoint. */
bool sv_join_input_commits(const sv_join_input_t *ji);

void sv_join_input_close(sv_join_input_t *ji); /* the source only */
void sv_join_input_destroy(sv_join_input_t *ji);

#endif
