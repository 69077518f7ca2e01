/* budget.c — the split of a job's memory budget (see budget.h).
 *
 * The Kafka clients get most of a member's share because without a
 * budget they are most of a busy job's memory (librdkafka's deep default
 * queues, docs/kafka.md): a quarter of the member's share for its
 * consumer and a quarter for its sink (3/8 each until the full run at
 * 944004c: W2 and W3 went over a 64 MB budget with librdkafka's queues the
 * largest part of their peak, 31 MB of W3's heap; at a quarter they stay
 * under it at the same speed, bench/BASELINE.md). A join's two inputs
 * get 3/16 each: at 1/8 each (half of a consumer's quarter) W4 at
 * parallelism 2 ran at a quarter of its speed, its table's consumer
 * starved with a 1.3 MB queue. What is left of a member's share after the
 * clients (7/16, with a join 5/16) is for operator state, batches and
 * encode buffers, which the budget does not cap: it caps only what the
 * job may buffer beyond its state. The two buffers that grew with the
 * input instead of the state, a lookup join's left rows waiting for its
 * table and a bounded job's kept result, get a sixteenth each.
 *
 * Without a budget the clients are still sized, as if each member had 96
 * MiB of its own (24 MiB for the consumer and for the sink): librdkafka's
 * fixed maxima (128 MiB of prefetch, 1 GiB of output queue) made a busy
 * job's RSS 180-470 MB and cost CPU in page faults on fresh queue
 * buffers, while the sized clients run as fast (the source wakes the
 * fetcher of a small queue: docs/performance.md).
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
		return join ? per / 16 * 3 : per / 4;
	case SV_BUDGET_JOIN_CONSUMER:
		return join ? per / 16 * 3 : 0;
	case SV_BUDGET_SINK:
		return per / 4;
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
	/* only the clients are sized without a budget */
	if (deep || part == SV_BUDGET_JOIN_WAITING || part == SV_BUDGET_RESULT)
		return 0;
	return sv_budget_share(SV_BUDGET_CLIENT_DEFAULT_BYTES, 1, join, part);
}
