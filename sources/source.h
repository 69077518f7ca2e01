/* source.h — the source interface. Drivers are vtables listed in one static
 * registry (sources/registry.c); callers use only the inline wrappers.
 *
 * A source reads input, decodes it into typed rows of the job's schema
 * (core/codec.h) and appends them to a batch; inputs that do not decode are
 * recorded as batch rejects. It tracks, per partition, the next offset to
 * read and (for Kafka) the end offset, so the supervisor can report lag and
 * commit positions. */
#ifndef SV_SOURCE_H
#define SV_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/codec.h"
#include "core/driver.h"
#include "core/error.h"
#include "core/record.h"
#include "core/util.h"

typedef enum sv_start {
	SV_START_EARLIEST = 0,
	SV_START_LATEST,
} sv_start_t;

typedef struct sv_source_conf {
	const char *kind; /* a registered driver's kind */
	const char *job_id;
	int attempt;
	const sv_cluster_t *cluster; /* kafka: resolved profile (borrowed) */
	const char *topic;
	const char *group_id; /* kafka: the job's consumer group */
	sv_start_t start;
	bool bounded; /* read each partition to the end offsets
				   * taken at open, then report eof */
	sv_format_t format;
	const sv_schema_t *schema; /* borrowed; outlives the source */
	/* kafka: read only the partitions p with p mod members == member
	 * (a member of a job with parallelism members; members <= 1: all) */
	int member;
	int members;
	/* kafka, distributed mode (docs/cluster.md): join group_id as the
	 * static member group_instance_id and take the partitions the group
	 * assigns (eager range), instead of assigning them by hand; NULL:
	 * standalone, no membership */
	const char *group_instance_id;
	int session_timeout_ms; /* group mode: session.timeout.ms (0: 10000) */
	int max_poll_interval_ms; /* group mode: (0: librdkafka's 300000) */
	/* group mode, bounded: where each partition ends, the same on every
	 * node (end_offsets[p] for partition p, fixed when the job was
	 * submitted; a partition past nend_offsets ends at 0); borrowed,
	 * copied at open. Bounded group mode needs them. */
	const int64_t *end_offsets;
	size_t nend_offsets;
	/* kafka: bytes the consumer's queues may hold (a share of the job's
	 * resources.memory_mb; kafka/client.h sv_kafka_budget), 0: the
	 * driver's fixed maxima */
	int64_t memory_budget;
	/* generator */
	const char *generator; /* "sequence" | "nexmark" */
	int64_t count; /* rows to generate (bounded), or -1 */
	int64_t rate_per_s; /* 0 = as fast as possible */
	uint64_t seed;
	/* kafka, a join's table input (docs/joins.md): a message with a null
	 * value is a tombstone, a row flagged SV_ROW_DELETE with every cell
	 * null but column tombstone_key_col, parsed from the message key's
	 * text. tombstone_key_col < 0: a table keyed on several columns,
	 * whose tombstones are rejected as invalid records. Without
	 * tombstones a null value is an invalid record like any other. */
	bool tombstones;
	int tombstone_key_col;
	/* kafka, standalone: called once at open, after the client, the
	 * metadata and (unbounded) the end offsets, right before the group's
	 * committed offsets are read; an error fails the open with it. The
	 * worker opens the sink meanwhile and waits for it here: a
	 * transactional sink's init_transactions fences a killed attempt,
	 * whose open transaction keeps the offsets unreadable
	 * (require_stable) until then. NULL: none. */
	sv_error_t *(*before_committed)(void *opaque);
	void *before_committed_opaque;
} sv_source_conf_t;

/* Position of one input partition. */
typedef struct sv_partpos {
	int32_t partition;
	int64_t next_offset; /* next offset to read (what we have consumed) */
	int64_t end_offset; /* high watermark last seen, or -1 */
} sv_partpos_t;

/* Records behind the end of one partition (0 when either end is unknown). */
static inline int64_t sv_partpos_lag(const sv_partpos_t *p)
{
	return p->end_offset >= 0 && p->next_offset >= 0 &&
			p->end_offset > p->next_offset
		? p->end_offset - p->next_offset
		: 0;
}

typedef struct sv_source sv_source_t;

typedef struct sv_source_ops {
	/* What the driver is and takes (core/driver.h): its kind, its
	 * capabilities, its spec fields. */
	const sv_driver_t *driver;
	sv_error_t *(*open)(const sv_source_conf_t *conf, sv_source_t **out);
	/* Append up to max_rows rows (and rejects) to b, waiting at most
	 * timeout_ms for the first. Sets *eof when a bounded source has
	 * delivered everything. */
	sv_error_t *(*poll)(sv_source_t *src, sv_batch_t *b, size_t max_rows,
			    int timeout_ms, bool *eof);
	/* Restart reading at the given positions (next_offset of each). */
	sv_error_t *(*seek)(sv_source_t *src, const sv_partpos_t *pos,
			    size_t n);
	/* Current positions; *pos is owned by the source, valid until the next
	 * call into it. */
	size_t (*positions)(sv_source_t *src, const sv_partpos_t **pos);
	/* Commit the current positions to the job's consumer group
	 * (at-least-once, after the sink flushed). */
	sv_error_t *(*commit)(sv_source_t *src);
	void (*close)(sv_source_t *src);
	/* The checkpoint id the group's committed offsets carry in their
	 * metadata ("streamvisor:ck=<id>", written by an exactly-once sink's
	 * txn_offsets), as read at open (read_committed, so require_stable);
	 * -1 when none. NULL: the driver has no group (-1). */
	int64_t (*committed_checkpoint)(sv_source_t *src);
	/* The same, for one partition this source reads: the tag of its
	 * own committed offset (-1: none or not a checkpoint). At parallelism
	 * > 1 recovery decides per partition. NULL: -1. */
	int64_t (*committed_checkpoint_of)(sv_source_t *src, int32_t partition);
	/* The topic's partition count (all of them, not only the ones read),
	 * or 0 when the driver has no partitions. NULL: 0. */
	int32_t (*topic_partitions)(sv_source_t *src);
	/* At submit, before any source is open: the partition count of the
	 * input named by topic on cluster (both borrowed; cluster is NULL
	 * for a driver without SV_DRIVER_CLUSTER), so a parallelism beyond it
	 * is refused now. 0 when the input does not exist yet or cannot be
	 * asked (the job's start checks again). NULL: 0, nothing to check. */
	int (*partition_count)(const sv_cluster_t *cluster, const char *topic);

	/* ---- group mode (distributed; NULL for drivers without it) ---- */
	/* What the group asked at the last poll and the caller has not yet
	 * acknowledged: SV_REBALANCE_NONE, _REVOKE (commit, then ack) or
	 * _LOST (the partitions are gone: abort, then ack). */
	int (*rebalance)(sv_source_t *src);
	/* Acknowledge a revoke: give the partitions back to the group; the
	 * source has none until the next assignment. */
	sv_error_t *(*rebalance_ack)(sv_source_t *src);
	/* Go back to the group's committed offsets of the partitions held
	 * (after a transaction was aborted). */
	sv_error_t *(*rewind)(sv_source_t *src);
	/* The consumer's group metadata (generation, member and instance
	 * id) as bytes for the sink's transaction, appended to out. Errors
	 * (SV_ERR_REBALANCE) when the member has no member id or lost its
	 * assignment: then it must not commit. */
	sv_error_t *(*group_metadata)(sv_source_t *src, sv_buf_t *out);
	/* Bounded group mode (distributed bounded jobs, docs/cluster.md):
	 * whether every partition the member holds is read to its end
	 * offset (true when it holds none); poll() never reports eof in
	 * group mode, since the group may hand the member more. */
	bool (*held_done)(sv_source_t *src);
	/* Whether the group's committed offsets (read_committed, so a
	 * pending transaction's are waited out, up to timeout_ms) reached
	 * the end offsets on every partition of the topic: then the job's
	 * input is read and committed cluster-wide. A partition whose end is
	 * 0 needs no commit. Errors: none; an unanswered ask is false. */
	bool (*group_complete)(sv_source_t *src, int timeout_ms);
	/* The tag of partition's committed offset (the text after
	 * "streamvisor:ck=" in its metadata) and that offset (*offset, -1:
	 * none), read when the partition was assigned (stable: a pending
	 * transaction is waited out) or rewound; NULL when no tag. Borrowed
	 * until the next call into the source. */
	const char *(*committed_tag)(sv_source_t *src, int32_t partition,
				     int64_t *offset);
	/* Pause (hold) or resume every partition held, while task state is
	 * restored; group_serve polls meanwhile without waiting, so the
	 * member stays in the group (max.poll.interval.ms) and callbacks
	 * run; what it fetched is read again after the release. */
	sv_error_t *(*group_hold)(sv_source_t *src, bool hold);
	void (*group_serve)(sv_source_t *src);
	/* Bytes the driver holds now beyond the caller's batch (prefetched
	 * input in its client's queues), an estimate. NULL: 0. thread: the
	 * one polling. */
	uint64_t (*memory_bytes)(sv_source_t *src);
} sv_source_ops_t;

enum {
	SV_REBALANCE_NONE = 0,
	SV_REBALANCE_REVOKE,
	SV_REBALANCE_LOST,
};

struct sv_source {
	const sv_source_ops_t *ops;
};

/* Find a driver by kind; NULL when there is none. */
const sv_source_ops_t *sv_source_find(const char *kind);
/* The i-th driver's descriptor, NULL past the last: the source half of an
 * sv_drivers_t catalog. */
const sv_driver_t *sv_source_driver(size_t i);
/* Add a driver beyond the static table (a test's, an out-of-tree one);
 * borrowed for the life of the process. Returns 0, or -1 when its kind is
 * taken or the table is full. thread: main, before any spec is parsed or
 * source opened. */
int sv_source_register(const sv_source_ops_t *ops);

/* Open a source of conf->kind. Errors: SV_ERR_BINDING (unknown kind, cluster
 * unreachable, topic missing), SV_ERR_CONFIG. */
sv_error_t *sv_source_open(const sv_source_conf_t *conf, sv_source_t **out);

static inline sv_error_t *sv_source_poll(sv_source_t *src, sv_batch_t *b,
					 size_t max_rows, int timeout_ms,
					 bool *eof)
{
	return src->ops->poll(src, b, max_rows, timeout_ms, eof);
}
static inline sv_error_t *sv_source_seek(sv_source_t *src,
					 const sv_partpos_t *pos, size_t n)
{
	return src->ops->seek(src, pos, n);
}
static inline size_t sv_source_positions(sv_source_t *src,
					 const sv_partpos_t **pos)
{
	return src->ops->positions(src, pos);
}
static inline sv_error_t *sv_source_commit(sv_source_t *src)
{
	return src->ops->commit ? src->ops->commit(src) : NULL;
}
static inline int64_t sv_source_committed_checkpoint(sv_source_t *src)
{
	return src->ops->committed_checkpoint
		? src->ops->committed_checkpoint(src)
		: -1;
}
static inline int64_t sv_source_committed_checkpoint_of(sv_source_t *src,
							int32_t partition)
{
	return src->ops->committed_checkpoint_of
		? src->ops->committed_checkpoint_of(src, partition)
		: -1;
}
static inline int32_t sv_source_topic_partitions(sv_source_t *src)
{
	return src->ops->topic_partitions ? src->ops->topic_partitions(src) : 0;
}
static inline bool sv_source_grouped(const sv_source_t *src)
{
	return src->ops->group_metadata != NULL;
}
static inline int sv_source_rebalance(sv_source_t *src)
{
	return src->ops->rebalance ? src->ops->rebalance(src)
				   : SV_REBALANCE_NONE;
}
static inline sv_error_t *sv_source_rebalance_ack(sv_source_t *src)
{
	return src->ops->rebalance_ack ? src->ops->rebalance_ack(src) : NULL;
}
static inline sv_error_t *sv_source_rewind(sv_source_t *src)
{
	return src->ops->rewind ? src->ops->rewind(src) : NULL;
}
static inline bool sv_source_held_done(sv_source_t *src)
{
	return src->ops->held_done && src->ops->held_done(src);
}
static inline bool sv_source_group_complete(sv_source_t *src, int timeout_ms)
{
	return src->ops->group_complete &&
		src->ops->group_complete(src, timeout_ms);
}
static inline const char *sv_source_committed_tag(sv_source_t *src,
						  int32_t partition,
						  int64_t *offset)
{
	*offset = -1;
	return src->ops->committed_tag
		? src->ops->committed_tag(src, partition, offset)
		: NULL;
}
static inline sv_error_t *sv_source_group_hold(sv_source_t *src, bool hold)
{
	return src->ops->group_hold ? src->ops->group_hold(src, hold) : NULL;
}
static inline void sv_source_group_serve(sv_source_t *src)
{
	if (src->ops->group_serve)
		src->ops->group_serve(src);
}
static inline uint64_t sv_source_memory_bytes(sv_source_t *src)
{
	return src && src->ops->memory_bytes ? src->ops->memory_bytes(src) : 0;
}
static inline void sv_source_close(sv_source_t *src)
{
	if (src)
		src->ops->close(src);
}

#endif
