/* job.h — a job as the supervisor thread holds it, and its lifecycle states
 * (DESIGN.md §3). Only the supervisor thread reads or writes a job. */
#ifndef SV_JOB_H
#define SV_JOB_H

#include <stdint.h>

#include "core/error.h"
#include "supervisor/observe.h"
#include "ingress/spec.h"
#include "supervisor/worker.h"

typedef enum sv_jobstate {
	SV_JOB_PENDING = 0,
	SV_JOB_RUNNING,
	SV_JOB_LAGGING,
	SV_JOB_DRAINING,
	SV_JOB_CHECKPOINTED,
	SV_JOB_RESTARTING,
	SV_JOB_FAILED,
	SV_JOB_CANCELLED,
	SV_JOB_COMPLETED,
	SV_JOB__COUNT
} sv_jobstate_t;

const char *sv_jobstate_name(sv_jobstate_t st);
static inline bool sv_jobstate_terminal(sv_jobstate_t st)
{
	return st == SV_JOB_FAILED || st == SV_JOB_CANCELLED ||
		st == SV_JOB_COMPLETED;
}

/* Counters summed over a job's attempts. */
typedef struct sv_counts {
	uint64_t in, out, invalid, late;
	uint64_t checkpoints, ck_failures, ck_sum_us;
	uint64_t ck_hist[SV_CK_BUCKETS + 1]; /* cumulative, see worker.h */
} sv_counts_t;

/* A job's progress as the views show it: the counters of every attempt
 * including the running one, and the running attempt's state size,
 * watermark and newest event time (INT64_MIN: none yet). */
typedef struct sv_progress {
	sv_counts_t n;
	uint64_t state_bytes, state_keys;
	uint64_t kafka_bytes; /* the Kafka clients' queues (worker.h) */
	uint64_t result_bytes; /* a bounded job's kept result (worker.h) */
	int64_t watermark_ms;
	int64_t last_event_ms;
} sv_progress_t;

typedef struct sv_evidence sv_evidence_t; /* supervisor/evidence.c */

typedef struct sv_job {
	char id[40];
	sv_jobspec_t *spec; /* owned */
	sv_jobstate_t state;
	int attempt; /* 0 before the first attempt */
	int restarts;
	int64_t created_at_ms;
	int64_t state_since_ms;
	int64_t next_attempt_at_ms; /* while restarting */
	int64_t attempt_started_ms;
	int64_t backoff_ms; /* the last backoff waited */
	int64_t window_start_ms; /* restart policy window */
	int attempts_in_window;
	sv_error_t *error; /* last error; owned */
	sv_worker_t *worker; /* current attempt, or NULL */
	sv_counts_t done; /* counters of attempts that ended */
	int64_t last_watermark_ms; /* of the last attempt that ended, or 0 */
	bool cancel_requested;
	bool pending_start; /* start a new attempt once the worker ended
				   * (restart, drain timeout) */
	int64_t restart_from; /* next attempt restores this checkpoint, or
				   * -1: the recovery rule */
	bool restart_ignore_state;
	int64_t drain_deadline_ms; /* while draining */
	sv_obslog_t *obs; /* observations; owned */
	int64_t last_sample_ms; /* last watermark/lag sample */
	int64_t lag_since_ms; /* lag above the thresholds since, or 0 */
	/* the last committed checkpoint known (id -1: none) */
	struct {
		int64_t id, completed_ms, duration_ms, bytes;
	} last_ck;
	/* bounded jobs, once completed: the output as JSON lines (owned) */
	char *result;
	size_t result_rows;
	bool result_truncated;
	struct sv_history *history; /* samples for the dashboard; owned */
	sv_evidence_t *ev; /* IncQL evidence; owned, NULL until needed */
	/* distributed bounded jobs (docs/cluster.md): the end offsets fixed
	 * when the job was first written to the registry, end_offsets[p] for
	 * partition p of the source topic; owned, NULL otherwise */
	int64_t *end_offsets;
	size_t nend_offsets;
} sv_job_t;

#endif
