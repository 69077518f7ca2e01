/* stage.h — the run-time side of a repartitioned job (docs/repartition.md):
 * the internal topic made ready at the attempt's start, the watermark
 * records a stage-0 task writes to every partition of it at each
 * checkpoint, and the minimum over upstream tasks a stage-1 task keeps.
 * The stages themselves are members of the one worker (worker.c). */
#ifndef SV_STAGE_H
#define SV_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/record.h"
#include "sinks/sink.h"
#include "sources/source.h"
#include "supervisor/observe.h"

/* Create the internal topic (partitions = the source topic's) unless it
 * exists, and observe repartition_topic_ready. Errors: SV_ERR_CONFIG (the
 * topic exists with another count, no source partitions known),
 * SV_ERR_BINDING. thread: the attempt's. */
sv_error_t *sv_stage_topic_ready(const sv_cluster_t *cluster,
				 const char *source_topic, const char *topic,
				 sv_obslog_t *obs, int attempt,
				 int32_t *partitions);

/* The watermark of an upstream task whose bounded input ended: every row
 * it will ever write is before it. */
#define SV_STAGE_WM_END INT64_MAX

/* Delete the internal topic (DELETE ?purge=true; a missing topic is no
 * error). thread: the supervisor's. */
sv_error_t *sv_stage_delete_topic(const sv_cluster_t *cluster,
				  const char *topic);

/* Stage 0: task src_task of n_tasks is at watermark_ms; one watermark
 * record into each of the topic's rp_parts partitions through snk (inside
 * its open transaction). */
sv_error_t *sv_stage_write_watermark(sv_sink_t *snk, int32_t rp_parts,
				     int32_t src_task, int32_t n_tasks,
				     int64_t watermark_ms);

/* Stage 1: the latest watermark of every upstream task, per task. */
typedef struct sv_stage_in sv_stage_in_t;

sv_stage_in_t *sv_stage_in_new(size_t ntasks);
void sv_stage_in_destroy(sv_stage_in_t *si);
/* Take the watermark records out of b's rejects (the sv-row decoder
 * rejects them as rows) into the table of the task that reads their
 * partition (task_of: partition -> task index, or -1); the other rejects
 * stay, in order. Returns how many were taken. */
size_t sv_stage_in_take(sv_stage_in_t *si, sv_batch_t *b,
			const int32_t *task_of, int32_t ntask_of);
/* Task i's watermark: the minimum over its upstream tasks, or
 * SV_WATERMARK_NONE until every one of them reported (SV_STAGE_WM_END
 * once every one of them ended). */
int64_t sv_stage_in_watermark(const sv_stage_in_t *si, size_t task);
/* Whether every upstream task of every task ended (a bounded job's stage
 * 1 has read all it will get). */
bool sv_stage_in_ended(const sv_stage_in_t *si);

/* Stage 1: the purge of what its committed checkpoints consumed
 * (Kafka Streams' purge of repartition topics with DeleteRecords). */
#define SV_STAGE_PURGE_INTERVAL_MS 1000
typedef struct sv_stage_purge sv_stage_purge_t;

/* For topic (borrowed, outlives it) with partitions partitions, on
 * cluster. Errors: the admin client's. thread: the member's. */
sv_error_t *sv_stage_purge_new(const sv_cluster_t *cluster, const char *topic,
			       int32_t partitions, sv_stage_purge_t **out);
/* Waits briefly for the requests still out. */
void sv_stage_purge_destroy(sv_stage_purge_t *pg);
/* After a committed checkpoint, pos (n) being the member's committed
 * positions: at most every SV_STAGE_PURGE_INTERVAL_MS of now_mono, ask
 * the broker to delete the records before them, where they moved. Best
 * effort: returns the failure of an earlier request for the caller to
 * log. */
sv_error_t *sv_stage_purge(sv_stage_purge_t *pg, const sv_partpos_t *pos,
			   size_t n, int64_t now_mono);
/* The offset partition was last purged below, or -1. thread: any */
int64_t sv_stage_purged_before(const sv_stage_purge_t *pg, int32_t partition);

#endif
