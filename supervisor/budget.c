/* budget.c — the split of a job's memory budget (see budget.h).
 *
 * The Kafka clients get most of a member's share because without a
 * budget they are most of a busy job's memory (librdkafka's deep default
 * queues, docs/kafka.md). A join's second input takes half of the
 * consumer's share rather than a share of its own, so a job with a join
 * holds no more queued input than one without. What is left of a member's
 * share after the clients (about 3/16) is for operator state, batches and
 * encode buffers, which the budget does not cap: it caps only what the
 * job may buffer beyond its state. The two buffers that grew with the
 * input instead of the state, a lookup join's left rows waiting for its
 * table and a bounded job's kept result, get a sixteenth each.
 *
 * Without a budget the clients are still sized, as if each member had 64
 * MiB of its own: librdkafka's fixed maxima (128 MiB of prefetch, 1 GiB
 * of output queue) made a busy job's RSS 180-470 MB and cost CPU in page
 * faults on fresh queue buffers, while a member with 64 MiB runs as fast
 * (the source wakes the fetcher of a small queue: docs/performance.md).
 * Nothing else is bounded then: no waiting-row hold, no result cap. */
#include "supervisor/budget.h"

int64_t sv_budget_share(int64_t job_bytes, int members, bool join,
			sv_budget_part_t part)
{
	if (job_bytes <= 0)
		return 0;
	int64_t per = job_bytes / (members > 0 ? members : 1);
	switch (part) {
	case SV_BUDGET_CONSUMER:
		return join ? per / 16 * 3 : per / 8 * 3;
	case SV_BUDGET_JOIN_CONSUMER:
		return join ? per / 16 * 3 : 0;
	case SV_BUDGET_SINK:
		return per / 8 * 3;
	case SV_BUDGET_SIDE_SINK:
		return per / 32;
	case SV_BUDGET_JOIN_WAITING:
		return per / 16;
	case SV_BUDGET_RESULT:
		return job_bytes / 16;
	}
	return 0;
}

int64_t sv_budget_client(int64_t job_bytes, int members, bool join,
			 sv_budget_part_t part, bool deep)
{
	if (job_bytes > 0)
		return sv_budget_share(job_bytes, members, join, part);
	if (deep)
		return 0;
	switch (part) {
	case SV_BUDGET_CONSUMER:
	case SV_BUDGET_JOIN_CONSUMER:
	case SV_BUDGET_SINK:
	case SV_BUDGET_SIDE_SINK:
		return sv_budget_share(SV_BUDGET_CLIENT_DEFAULT_BYTES, 1, join,
				       part);
	case SV_BUDGET_JOIN_WAITING:
	case SV_BUDGET_RESULT:
		break;
	}
	return 0;
}
