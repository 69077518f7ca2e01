/* worker.h — one job attempt running on its own thread(s): poll a batch
 * from the source, run it through the plan's operators, hand output to the
 * sink, commit progress, until the input ends (bounded), it is told to stop,
 * or it fails. With parallelism N the attempt runs N member threads, each
 * over its own partitions (docs/parallelism.md).
 *
 * The supervisor thread starts and stops workers and reads their counters;
 * a worker never touches the job table. When it ends, and when it
 * committed a checkpoint that was asked for, it calls the done callback
 * (from the worker thread) so the supervisor can post itself an event. */
#ifndef SV_WORKER_H
#define SV_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>

#include <jansson.h>

#include "checkpoint/store.h"
#include "core/cluster.h"
#include "core/error.h"
#include "sinks/confine.h"
#include "sources/source.h"
#include "supervisor/observe.h"
#include "ingress/plan.h"
#include "ingress/spec.h"

typedef enum sv_worker_end {
	SV_WORKER_RUNNING = 0,
	SV_WORKER_COMPLETED, /* bounded input fully processed and committed */
	SV_WORKER_STOPPED, /* told to stop */
	SV_WORKER_FAILED, /* error set */
	SV_WORKER_DRAINED, /* drain: final checkpoint committed */
} sv_worker_end_t;

/* Where a distributed task's state came from (stats.state_restores). */
enum {
	SV_RESTORE_CACHE,
	SV_RESTORE_TOPIC,
	SV_RESTORE_MEMORY
};

/* Upper bounds (seconds) of the checkpoint duration histogram. */
#define SV_CK_BUCKETS 11
extern const double sv_ck_buckets_s[SV_CK_BUCKETS];

/* Counters, updated by the worker, read by anyone. */
typedef struct sv_worker_stats {
	/* distributed mode: revokes acknowledged after a commit, assignments
	 * lost, and commits the group refused (stale generation) */
	_Atomic uint64_t rebalances;
	_Atomic uint64_t partitions_lost;
	_Atomic uint64_t commits_fenced;
	/* distributed mode: task state restored on assign, by where from
	 * (SV_RESTORE_*), bytes and milliseconds (summed), and the state
	 * volume of the last checkpoint (bytes per second of interval) */
	_Atomic uint64_t state_restores[3];
	_Atomic uint64_t state_restore_bytes;
	_Atomic uint64_t state_restore_ms;
	_Atomic uint64_t state_bytes_per_s;
	_Atomic uint64_t records_in;
	_Atomic uint64_t records_out;
	_Atomic uint64_t records_invalid;
	_Atomic uint64_t records_late;
	_Atomic uint64_t records_dead_letter;
	_Atomic int64_t watermark_ms;
	_Atomic int64_t last_event_ms; /* largest event time read, or MIN */
	_Atomic uint64_t state_bytes;
	_Atomic uint64_t state_keys;
	/* bytes held in the Kafka clients' queues (prefetched input, output
	 * not yet acknowledged), an estimate (docs/performance.md) */
	_Atomic uint64_t kafka_bytes;
	/* bytes of a bounded job's kept result (JSON lines) */
	_Atomic uint64_t result_bytes;
	_Atomic int64_t last_commit_ms;
	/* records_out at the last commit point (a checkpoint, or flushed
	 * output with positions committed): what the attempt wrote beyond it
	 * is not committed yet */
	_Atomic uint64_t records_out_committed;
	/* checkpoints */
	_Atomic int64_t restored_checkpoint; /* id restored at start, or -1 */
	_Atomic int64_t last_checkpoint; /* last committed id, or -1 */
	_Atomic int64_t last_checkpoint_ms; /* when it completed */
	_Atomic int64_t last_checkpoint_duration_ms;
	_Atomic int64_t last_checkpoint_bytes;
	_Atomic uint64_t checkpoints; /* committed by this attempt */
	_Atomic uint64_t checkpoint_failures;
	_Atomic uint64_t checkpoint_requests; /* on demand: asked */
	_Atomic uint64_t checkpoint_served; /* on demand: taken after ask */
	/* checkpoint durations: counts per bucket of sv_ck_buckets_s (the
	 * last, +Inf, is the total count) and the sum */
	_Atomic uint64_t ck_hist[SV_CK_BUCKETS + 1];
	_Atomic uint64_t ck_sum_us;
	/* a join's second input (docs/joins.md): records read and skipped
	 * as invalid, its watermark (the minimum over the members' tasks,
	 * MIN until every task has one), the largest event time read, and
	 * the join's state per input ([0] left, [1] right) summed over the
	 * tasks */
	_Atomic uint64_t join_records_in;
	_Atomic uint64_t join_records_invalid;
	_Atomic int64_t join_watermark_ms;
	_Atomic int64_t join_last_event_ms;
	_Atomic uint64_t join_state_bytes[2];
	_Atomic uint64_t join_state_keys[2];
	_Atomic uint64_t join_state_rows[2];
	/* repartition (docs/repartition.md): rows stage 0 wrote to the
	 * internal topic */
	_Atomic uint64_t records_repartitioned;
} sv_worker_stats_t;

/* One member (worker thread) of a job with parallelism N; member k reads
 * the partitions p with p mod N == k. Updated by the member, read by
 * anyone. */
typedef struct sv_member_stats {
	_Atomic uint64_t records_in;
	_Atomic uint64_t records_late;
	_Atomic uint64_t records_out;
	_Atomic uint64_t records_out_committed; /* at its last commit */
	_Atomic int64_t watermark_ms; /* min over its non-idle tasks */
	_Atomic bool idle; /* every task idle (or the member ended) */
	_Atomic uint64_t state_bytes;
	_Atomic uint64_t state_keys;
	_Atomic uint64_t kafka_bytes; /* its clients' queues, see above */
	_Atomic int64_t last_checkpoint; /* id, or -1 */
	_Atomic int64_t last_checkpoint_ms;
	_Atomic int64_t last_checkpoint_duration_ms;
	_Atomic int64_t last_checkpoint_bytes;
	_Atomic uint64_t checkpoints;
	_Atomic uint64_t ck_sum_us;
	_Atomic uint64_t checkpoint_served;
	/* time in the loop: waiting for input (a poll that returned nothing)
	 * vs everything else (Flink's idle and busy time) */
	_Atomic uint64_t busy_us;
	_Atomic uint64_t idle_us;
	/* a join: the member's right watermark (min over its tasks) and its
	 * tasks' join state per input */
	_Atomic int64_t join_watermark_ms;
	_Atomic uint64_t join_state[2][3]; /* [input][bytes, keys, rows] */
	/* repartition, stage 0: bytes written to the internal topic */
	_Atomic uint64_t bytes_out;
} sv_member_stats_t;

typedef struct sv_worker sv_worker_t;

typedef void(sv_worker_done_cb)(void *opaque, sv_worker_t *w);

typedef struct sv_worker_conf {
	const char *job_id;
	int attempt;
	const sv_jobspec_t *spec; /* borrowed; outlives the worker */
	const sv_cluster_t *source_cluster; /* borrowed, may be NULL */
	const sv_cluster_t *sink_cluster;
	const sv_cluster_t *dlq_cluster;
	const sv_cluster_t *late_cluster;
	const sv_cluster_t *join_cluster; /* a join step's source */
	const sv_fileroots_t *file_roots; /* where file sinks may write */
	sv_obslog_t *obs; /* the job's observations */
	sv_ckstore_t *store; /* checkpoints; NULL: none (offsets
					    * committed every second) */
	int64_t restore_from; /* checkpoint id to restore, or -1:
					    * the recovery rule */
	bool ignore_state; /* restore positions only */
	sv_worker_done_cb *done; /* the attempt ended, or served a
				  * checkpoint request */
	void *opaque;
	/* distributed mode (docs/cluster.md): this node's id; the members
	 * join the job's group as static members <node>-t<k> and their
	 * transactional ids are streamvisor-<job>-<node>-t<k>. NULL:
	 * standalone */
	const char *node_id;
	int session_timeout_ms; /* group mode: session.timeout.ms */
	int max_poll_interval_ms; /* group mode: max.poll.interval.ms */
	/* group mode, bounded: the job's end offsets (end_offsets[p] for
	 * source partition p, fixed in the job's registry record; borrowed) */
	const int64_t *end_offsets;
	size_t nend_offsets;
	/* group mode: the streamvisor cluster's name (the state topic
	 * _streamvisor.<name>.<job>.state), its replication factor, and
	 * distributed.state_budget_bytes_per_s (0: none) */
	const char *dist_name;
	int replication_factor;
	int64_t state_budget_bytes_per_s;
} sv_worker_conf_t;

/* The member (index within stage 0) that holds source partition
 * partition now, or -1 (distributed mode: the group decides; standalone
 * it is partition mod parallelism). thread: any */
int sv_worker_member_of(sv_worker_t *w, int32_t partition);

/* Build the plan and start the thread. conf is copied (pointers borrowed). */
sv_error_t *sv_worker_start(const sv_worker_conf_t *conf, sv_worker_t **out);
/* Ask for a checkpoint at the next batch boundary; returns the request
 * number: the checkpoint that serves it is committed once
 * stats->checkpoint_served >= it (then stats->last_checkpoint is its id),
 * unless the attempt ends first. thread: any */
uint64_t sv_worker_request_checkpoint(sv_worker_t *w);
/* Drain: stop reading at the next batch boundary, fire every open window
 * first when final_watermark, take a final checkpoint, end DRAINED. Only
 * for workers with a store (the supervisor refuses drain without one).
 * thread: any */
void sv_worker_drain(sv_worker_t *w, bool final_watermark);
/* Stop with a final checkpoint (shutdown): stop reading at the next batch
 * boundary, take a checkpoint (window state kept, as a drain without final
 * watermark) and end STOPPED, so the job resumes from it. A stop asked
 * later wins (the open transaction is aborted instead). Without a store,
 * the same as stop. thread: any */
void sv_worker_stop_checkpoint(sv_worker_t *w);
/* Ask the worker to stop at the next batch boundary. thread: any */
void sv_worker_stop(sv_worker_t *w);
/* Block until the worker ended (a condition variable, not polling).
 * thread: any but the worker's */
void sv_worker_wait(sv_worker_t *w);
/* Join the thread and free. thread: supervisor (never from the worker). */
void sv_worker_destroy(sv_worker_t *w);

const sv_worker_stats_t *sv_worker_stats(const sv_worker_t *w);
/* How the worker ended (RUNNING while it runs). thread: any */
sv_worker_end_t sv_worker_end(const sv_worker_t *w);
/* The failure, once ended FAILED (owned by the worker). */
const sv_error_t *sv_worker_error(const sv_worker_t *w);
/* Copy of the source positions as last published; caller frees. thread: any */
size_t sv_worker_positions(sv_worker_t *w, sv_partpos_t **pos);
/* The same for a join's second input (0 without one). thread: any */
size_t sv_worker_join_positions(sv_worker_t *w, sv_partpos_t **pos);
/* The number of members (worker threads): the spec's parallelism. */
int sv_worker_parallelism(const sv_worker_t *w);
/* Member k's counters (0 <= k < parallelism), or NULL. thread: any */
const sv_member_stats_t *sv_worker_member_stats(const sv_worker_t *w, int k);
/* The collected output of a bounded job, at most limit JSON lines; *rows
 * says how many, *truncated whether there is more. Caller frees. */
char *sv_worker_result(sv_worker_t *w, size_t limit, size_t *rows,
		       bool *truncated);
/* A repartitioned job's stages (docs/repartition.md) as a JSON array:
 * for each its topic, members and counters, and stage 1's lag on the
 * internal topic; NULL when the job runs in one stage. *rp_topic (may be
 * NULL) is borrowed from the worker. thread: any */
json_t *sv_worker_stages_json(sv_worker_t *w, const char **rp_topic,
			      uint64_t *rp_lag);
/* The last n output rows as JSON lines (newest last); caller frees. */
char *sv_worker_preview(sv_worker_t *w, size_t limit);

#endif
