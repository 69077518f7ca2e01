/* budget.h — how a job's memory budget (resources.memory_mb) is split
 * over what a job attempt holds (docs/performance.md "Memory budget").
 *
 * Pure arithmetic, no state: the worker asks for each part's bytes when
 * it opens a client or sizes a buffer.
 *
 * thread: any. */
#ifndef SV_BUDGET_H
#define SV_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

typedef enum sv_budget_part {
	SV_BUDGET_CONSUMER, /* a member's main source's Kafka consumer */
	SV_BUDGET_JOIN_CONSUMER, /* a member's join input's consumer */
	SV_BUDGET_SINK, /* a member's main sink's producer */
	SV_BUDGET_SIDE_SINK, /* each side sink (dead letters, late) */
	/* a member's join rows waiting for the other input (a lookup join's
	 * left rows behind the table's watermark) before the member stops
	 * reading the stream while the table is still behind */
	SV_BUDGET_JOIN_WAITING,
	/* the whole job's kept result of a bounded job (GET .../result) */
	SV_BUDGET_RESULT,
} sv_budget_part_t;

/* The bytes of part out of a job's budget of job_bytes shared by members
 * members (>= 1); join: the job has a join step with its own input. A
 * member's share is job_bytes / members: its consumer 1/4 (with a join
 * the stream and the join input 3/16 each), its sink 1/4, each side sink
 * 1/32, its waiting join rows 1/16; the result 1/16 of the job's budget.
 * Returns 0 when job_bytes <= 0 (no budget: no limit). */
int64_t sv_budget_share(int64_t job_bytes, int members, bool join,
			sv_budget_part_t part);

/* What a member's Kafka client of part (CONSUMER, JOIN_CONSUMER, SINK,
 * SIDE_SINK) is sized for: its share of the job's budget, or without one
 * (job_bytes <= 0) its share of SV_BUDGET_CLIENT_DEFAULT_BYTES as if that
 * were the member's own budget, so an unbudgeted job's queues grow with
 * its parallelism but not with librdkafka's maxima (docs/performance.md
 * "Without a budget"). deep: the caller asked for librdkafka's deep fixed
 * queues (STREAMVISOR_DEEP_QUEUES=1): 0 without a budget. Other parts: 0
 * without a budget. */
#define SV_BUDGET_CLIENT_DEFAULT_BYTES ((int64_t)96 << 20)
int64_t sv_budget_client(int64_t job_bytes, int members, bool join,
			 sv_budget_part_t part, bool deep);

#endif
