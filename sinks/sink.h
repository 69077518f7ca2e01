/* sink.h — the sink interface. Drivers are vtables listed in one static
 * registry (sinks/registry.c); callers use only the inline wrappers.
 *
 * A sink encodes rows of its schema (core/codec.h) and delivers them. write
 * may buffer; flush returns once everything written so far is acknowledged
 * (at-least-once: offsets are committed only after flush).
 *
 * Exactly-once (conf->transactional; docs/exactly-once.md): the worker runs
 * one transaction per checkpoint n:
 *
 *   txn_begin → write … → txn_prepare (*state: what recovery needs) →
 *   [store: checkpoint n PREPARED, sync] → txn_offsets(n, positions) →
 *   txn_commit → [store: n COMMITTED] → txn_begin …
 *
 * (a sink with txn_offsets, whose prepare leaves no state: the store's
 * write runs beside txn_prepare and txn_offsets, and txn_commit waits for
 * it; docs/exactly-once.md)
 *
 * and on recovery, for the latest checkpoint n still PREPARED, either
 * txn_recover(n's sink_state) completes its commit (file sink: the staged
 * files are durable, rename them into place) or n is abandoned (Kafka: the
 * broker's outcome stands; init_transactions at open aborted an open one).
 * An error from txn_offsets/txn_commit leaves the outcome unknown: the
 * worker fails the attempt and recovery decides; a driver never retries a
 * commit on its own. */
#ifndef SV_SINK_H
#define SV_SINK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/codec.h"
#include "core/driver.h"
#include "core/error.h"
#include "core/record.h"
#include "core/util.h"
#include "sinks/confine.h"

typedef struct sv_sink_conf {
	const char *kind; /* a registered driver's kind */
	const char *job_id;
	int attempt;
	const sv_cluster_t *cluster; /* kafka: resolved profile (borrowed) */
	const char *topic;
	sv_format_t format; /* output format (json) */
	const sv_schema_t *schema; /* borrowed; outlives the sink */
	int key_column; /* column used as the message key, or -1 */
	bool raw; /* dead-letter sink: write_raw only */
	/* exactly-once */
	bool transactional;
	const char *transactional_id; /* kafka: stable per job and worker,
				       * "streamvisor-<job id>-0" */
	int transaction_timeout_ms; /* kafka: transaction.timeout.ms */
	const char *group_id; /* kafka: the job's consumer group, for
				       * txn_offsets */
	const char *path; /* file: output directory */
	/* kafka: bytes the producer's queue may hold (a share of the job's
	 * resources.memory_mb; kafka/client.h sv_kafka_budget), 0: the
	 * driver's fixed maxima */
	int64_t memory_budget;
	/* file: where path may lead (sinks/confine.h); borrowed, NULL =
	 * unconfined */
	const sv_fileroots_t *roots;
} sv_sink_conf_t;

typedef struct sv_sink sv_sink_t;

/* The next offsets of some partitions of one topic (borrowed arrays). */
typedef struct sv_topic_offsets {
	const char *topic;
	const int32_t *partitions;
	const int64_t *next_offsets;
	size_t n;
} sv_topic_offsets_t;

typedef struct sv_sink_ops {
	/* What the driver is and takes (core/driver.h): its kind, its
	 * capabilities, its spec fields. */
	const sv_driver_t *driver;
	sv_error_t *(*open)(const sv_sink_conf_t *conf, sv_sink_t **out);
	/* Encode and enqueue every row of b. */
	sv_error_t *(*write)(sv_sink_t *snk, const sv_batch_t *b);
	/* Enqueue one raw payload (dead letters: the undecodable input as it
	 * came, with the reason as a header when the driver has headers). */
	sv_error_t *(*write_raw)(sv_sink_t *snk, const char *payload,
				 size_t len, const char *reason);
	/* Enqueue one payload, without key, into partition (a repartition
	 * topic's watermark records); NULL when the driver has no
	 * partitions. */
	sv_error_t *(*write_to)(sv_sink_t *snk, int32_t partition,
				const char *payload, size_t len);
	/* Wait until everything written is acknowledged, at most timeout_ms. */
	sv_error_t *(*flush)(sv_sink_t *snk, int timeout_ms);
	void (*close)(sv_sink_t *snk);

	/* ---- transactions (NULL when the driver has none) ---- */
	/* Start the transaction of the next checkpoint. */
	sv_error_t *(*txn_begin)(sv_sink_t *snk);
	/* Make everything written durable but not yet visible; append to
	 * *state what txn_recover needs (file: the staged and final names;
	 * kafka: nothing). */
	sv_error_t *(*txn_prepare)(sv_sink_t *snk, int64_t checkpoint_id,
				   sv_buf_t *state);
	/* kafka: send the source positions (next offsets of topic) to the
	 * transaction for group_id, each with metadata
	 * "streamvisor:ck=<checkpoint_id>" so recovery can tell whether the
	 * commit happened. NULL for drivers that do not commit offsets. */
	sv_error_t *(*txn_offsets)(sv_sink_t *snk, int64_t checkpoint_id,
				   const char *topic, const int32_t *partitions,
				   const int64_t *next_offsets, size_t n);
	/* The same for the positions of several topics (a join's two
	 * inputs) in one send_offsets_to_transaction. NULL: txn_offsets is
	 * called once per topic, in the same transaction. */
	sv_error_t *(*txn_offsets_topics)(sv_sink_t *snk, int64_t checkpoint_id,
					  const sv_topic_offsets_t *t,
					  size_t ntopics);
	/* Make the transaction visible (kafka: commit_transaction; file:
	 * rename staged files into place and fsync the directory). */
	sv_error_t *(*txn_commit)(sv_sink_t *snk);
	/* Drop the open transaction (file: delete its staging files). */
	sv_error_t *(*txn_abort)(sv_sink_t *snk);
	/* Complete the commit of a prepared checkpoint from its state
	 * (idempotent: a file already renamed is skipped). NULL: nothing to
	 * complete (kafka). */
	sv_error_t *(*txn_recover)(sv_sink_t *snk, const char *state,
				   size_t len);
	/* At submit of an exactly_once job: whether the target allows
	 * transactions of transaction_timeout_ms (kafka: the broker's
	 * transaction.max.timeout.ms), so a job is refused now rather than
	 * at its first transaction; field (borrowed) is the spec field that
	 * set the timeout, for the error. NULL: nothing to check. */
	/* kafka, distributed mode: the group metadata (bytes from the
	 * source's group_metadata) the next txn_offsets sends, so a member of
	 * a stale generation is fenced (KIP-447); copied. NULL: the sink
	 * sends group-id-only metadata (standalone). */
	sv_error_t *(*txn_group)(sv_sink_t *snk, const void *md, size_t len);
	/* kafka, distributed mode: the tag the next txn_offsets puts in
	 * each offset's metadata ("streamvisor:ck=<tag>") instead of the
	 * checkpoint id; copied; NULL or "": the id. */
	sv_error_t *(*txn_tag)(sv_sink_t *snk, const char *tag);
	/* kafka: one record with key into partition of another topic, in
	 * the open transaction (a task's snapshot on the job's state topic,
	 * docs/cluster.md); value NULL: a tombstone. NULL: not offered. */
	sv_error_t *(*write_keyed)(sv_sink_t *snk, const char *topic,
				   int32_t partition, const char *key,
				   size_t klen, const char *value, size_t vlen);
	sv_error_t *(*check_txn)(const sv_cluster_t *cluster,
				 int64_t transaction_timeout_ms,
				 const char *field);
	/* Bytes the driver holds now (output queued in its client, not yet
	 * acknowledged), an estimate. NULL: 0. thread: the one writing. */
	uint64_t (*memory_bytes)(sv_sink_t *snk);
} sv_sink_ops_t;

struct sv_sink {
	const sv_sink_ops_t *ops;
	uint64_t records_out; /* rows acknowledged (or enqueued, see driver) */
	uint64_t bytes_out; /* kafka: value bytes enqueued (thread: the
			     * sink's) */
};

const sv_sink_ops_t *sv_sink_find(const char *kind);
/* The i-th driver's descriptor, NULL past the last: the sink half of an
 * sv_drivers_t catalog. */
const sv_driver_t *sv_sink_driver(size_t i);
/* Add a driver beyond the static table (a test's, an out-of-tree one);
 * borrowed for the life of the process. Returns 0, or -1 when its kind is
 * taken or the table is full. thread: main, before any spec is parsed or
 * sink opened. */
int sv_sink_register(const sv_sink_ops_t *ops);
/* Errors: SV_ERR_BINDING (unknown kind, cluster, missing topic). */
sv_error_t *sv_sink_open(const sv_sink_conf_t *conf, sv_sink_t **out);

static inline sv_error_t *sv_sink_write(sv_sink_t *snk, const sv_batch_t *b)
{
	return snk->ops->write(snk, b);
}
static inline sv_error_t *sv_sink_write_raw(sv_sink_t *snk, const char *p,
					    size_t len, const char *reason)
{
	return snk->ops->write_raw(snk, p, len, reason);
}
static inline sv_error_t *sv_sink_write_to(sv_sink_t *snk, int32_t partition,
					   const char *p, size_t len)
{
	return snk->ops->write_to(snk, partition, p, len);
}
static inline sv_error_t *sv_sink_flush(sv_sink_t *snk, int timeout_ms)
{
	return snk->ops->flush ? snk->ops->flush(snk, timeout_ms) : NULL;
}
static inline bool sv_sink_transactional(const sv_sink_t *snk)
{
	return snk->ops->txn_commit != NULL;
}
static inline sv_error_t *sv_sink_txn_begin(sv_sink_t *snk)
{
	return snk->ops->txn_begin(snk);
}
static inline sv_error_t *sv_sink_txn_prepare(sv_sink_t *snk, int64_t ck,
					      sv_buf_t *state)
{
	return snk->ops->txn_prepare(snk, ck, state);
}
static inline sv_error_t *sv_sink_txn_offsets(sv_sink_t *snk, int64_t ck,
					      const char *topic,
					      const int32_t *partitions,
					      const int64_t *next_offsets,
					      size_t n)
{
	return snk->ops->txn_offsets
		? snk->ops->txn_offsets(snk, ck, topic, partitions,
					next_offsets, n)
		: NULL;
}
static inline sv_error_t *sv_sink_txn_offsets_topics(
	sv_sink_t *snk, int64_t ck, const sv_topic_offsets_t *t, size_t ntopics)
{
	if (snk->ops->txn_offsets_topics)
		return snk->ops->txn_offsets_topics(snk, ck, t, ntopics);
	for (size_t i = 0; i < ntopics; i++) {
		sv_error_t *err = sv_sink_txn_offsets(
			snk, ck, t[i].topic, t[i].partitions, t[i].next_offsets,
			t[i].n);
		if (err)
			return err;
	}
	return NULL;
}
static inline sv_error_t *sv_sink_txn_commit(sv_sink_t *snk)
{
	return snk->ops->txn_commit(snk);
}
static inline sv_error_t *sv_sink_txn_abort(sv_sink_t *snk)
{
	return snk->ops->txn_abort(snk);
}
static inline sv_error_t *sv_sink_txn_group(sv_sink_t *snk, const void *md,
					    size_t len)
{
	return snk->ops->txn_group ? snk->ops->txn_group(snk, md, len) : NULL;
}
static inline sv_error_t *sv_sink_txn_tag(sv_sink_t *snk, const char *tag)
{
	return snk->ops->txn_tag ? snk->ops->txn_tag(snk, tag) : NULL;
}
static inline bool sv_sink_keyed(const sv_sink_t *snk)
{
	return snk->ops->write_keyed != NULL;
}
static inline sv_error_t *sv_sink_write_keyed(sv_sink_t *snk, const char *topic,
					      int32_t partition,
					      const char *key, size_t klen,
					      const char *value, size_t vlen)
{
	return snk->ops->write_keyed(snk, topic, partition, key, klen, value,
				     vlen);
}
static inline sv_error_t *sv_sink_txn_recover(sv_sink_t *snk, const char *state,
					      size_t len)
{
	return snk->ops->txn_recover ? snk->ops->txn_recover(snk, state, len)
				     : NULL;
}
static inline uint64_t sv_sink_memory_bytes(sv_sink_t *snk)
{
	return snk && snk->ops->memory_bytes ? snk->ops->memory_bytes(snk) : 0;
}
static inline void sv_sink_close(sv_sink_t *snk)
{
	if (snk)
		snk->ops->close(snk);
}

#endif
