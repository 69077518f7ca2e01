/* kafka_source.c — the Kafka source driver (source.h, kind "kafka").
 *
 * One librdkafka consumer per source, with the job's group id but NO group
 * membership: we fetch the topic's partitions from metadata and assign them
 * all manually (rd_kafka_assign), so there is no rebalancing and positions
 * are ours to decide. The group is only the store of committed offsets:
 * at open a partition starts at the group's committed offset when there is
 * one, else at the low or high watermark (conf->start). Offsets are never
 * stored or committed automatically; commit() commits the positions we
 * track (at-least-once, after the sink flushed), and exactly-once commits
 * offsets through the sink's transaction instead, with the metadata
 * "streamvisor:ck=<id>"; committed_checkpoint() reports that id as read at
 * open, so recovery can tell whether a prepared checkpoint committed.
 *
 * A member of a job with parallelism N (conf->members) reads only the
 * partitions p with p mod N == member (docs/parallelism.md); it still
 * learns the topic's partition count, for the partitioned_by check, and
 * keeps each partition's committed checkpoint tag, since at parallelism > 1
 * every member's transaction commits its own partitions and recovery
 * decides per partition.
 *
 * Reading is batched: poll() drains the consumer queue with
 * rd_kafka_consume_batch_queue into a reused message array and decodes each
 * payload straight into the caller's batch (no allocation per record on our
 * side). We track per partition the next offset to read and the high
 * watermark, refreshed about once a second from librdkafka's cache (fed by
 * fetch responses), never per record.
 *
 * Bounded mode takes the end offsets at open (ListOffsets; under
 * read_committed that is the last stable offset) and reads each partition
 * up to its end: a partition is done when it consumed end-1 or reached EOF
 * at or past its end (transaction markers can occupy the last offsets), and
 * is then paused. poll() reports eof once every partition is done and
 * everything before has been returned.
 *
 * Group mode (distributed; conf->group_instance_id set, docs/cluster.md):
 * the consumer subscribes to the topic as a static member of the job's
 * group with the eager range assignor, and takes what the group assigns.
 * An assignment is taken at once, at the group's committed offsets, which
 * the callback reads itself (rd_kafka_committed, require_stable under
 * read_committed, so a previous owner's pending transaction is waited
 * out) together with their tags (committed_tag(): the state the worker
 * restores); group_hold()/group_serve() pause the partitions while it
 * restores and keep the member polled meanwhile. A revoke is NOT
 * acknowledged in the callback: rebalance() reports it, the worker
 * commits what it read (its checkpoint), then rebalance_ack() unassigns;
 * meanwhile librdkafka pauses the partitions and the group waits. A lost
 * assignment is reported as such (nothing may commit). group_metadata()
 * gives the consumer's own metadata for the sink's transaction, after a
 * local guard: a member id, and the assignment not lost.
 *
 * With conf->memory_budget the prefetch queue and fetch sizes come from it
 * (kafka/client.h sv_kafka_budget) instead of the deep fixed queue of the
 * tuning; memory_bytes() reports the queue at the average message size.
 *
 * The client is made by kafka/client.c (profile properties, log routing,
 * scrubbing); client properties of the profile are never logged. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "core/util.h"
#include "kafka/admin.h"
#include "kafka/client.h"
#include "kafka/ident.h"
#include "sources/ratelimit.h"
#include "sources/source.h"

#define KSRC_META_TIMEOUT_MS 10000
#define KSRC_WM_REFRESH_MS 1000
#define KSRC_COMMIT_TIMEOUT_MS 10000
#define KSRC_COMMITTED_TIMEOUT_MS 30000

typedef struct kafka_source {
	sv_source_t base;
	sv_kafka_ident_t id; /* job, attempt, cluster name, topic */
	char *group_id;
	bool bounded;
	sv_ratelimit_t rl; /* source.rate_per_s */

	rd_kafka_t *rk;
	rd_kafka_queue_t *q; /* the consumer queue (main queue forwarded) */
	sv_decoder_t *dec;

	size_t nparts;
	sv_partpos_t *pos; /* by index; pos[i].partition is the id */
	int64_t *stop; /* bounded: end offset taken at open */
	bool *done; /* bounded: partition fully read */
	size_t ndone;
	bool eof_pending; /* bounded: all done, eof not yet reported */

	rd_kafka_message_t **msgs; /* reused consume array */
	size_t msgcap;
	int64_t committed_ck; /* checkpoint id in the committed offsets'
				  * metadata at open, or -1 */
	int64_t *part_ck; /* by index: that partition's tag, or -1 */
	int32_t topic_nparts; /* all partitions of the topic */
	int member, members;
	/* group mode */
	char *instance_id; /* group.instance.id, or NULL: standalone */
	int64_t *gend; /* bounded: end offset by partition id (topic_nparts) */
	int rebalance; /* SV_REBALANCE_*, until acknowledged */
	/* by partition id (topic_nparts): the tag of its committed offset
	 * ("streamvisor:ck=<tag>"), read when it was assigned or rewound,
	 * or NULL */
	char **part_tag;
	int64_t *part_committed; /* by partition id: that offset, or -1 */
	bool held; /* group_hold: every partition paused */
	bool held_dropped; /* group_serve dropped messages meanwhile */
	bool closing; /* close: a revoke is given back at once */
	sv_start_t start;
	int64_t wm_next_ms; /* next watermark refresh (monotonic) */
	bool tombstones; /* a join's table: null values delete a key */
	int tombstone_key_col;
	const sv_schema_t *schema;
	sv_error_t *err; /* sticky: the source is broken */
	uint64_t consumed, consumed_bytes; /* for the average message size */
	/* the prefetch queue's thresholds in effect (queued.min.messages,
	 * queued.max.messages.kbytes in bytes) and whether the queue reached
	 * them since the fetcher was last woken (ksrc_wake_fetcher) */
	uint64_t q_max_msgs, q_max_bytes;
	bool q_full;
	uint64_t fetcher_wakes;
	/* standalone at-least-once commits go out asynchronously (ksrc_commit):
	 * their results come back on commitq; commits_out are still out, and
	 * the first failure seen is returned by the next commit */
	rd_kafka_queue_t *commitq;
	int commits_out;
	rd_kafka_resp_err_t commit_failed;
} kafka_source_t;

extern const sv_source_ops_t sv_source_kafka_ops;
static const sv_source_ops_t kafka_group_ops;
static int cmp_partition(const void *a, const void *b);
static ssize_t ksrc_index(const kafka_source_t *ks, int32_t partition);

/* ---- logging and errors ---- */

/* An error with the job's context and a scrubbed cause (kafka/client.h). */
#define ksrc_error(ks, cat, code, cause, ...)                        \
	sv_kafka_error((ks)->rk, &(ks)->id.logctx, cat, code, cause, \
		       __VA_ARGS__)

static sv_error_t *ksrc_topic_missing(kafka_source_t *ks,
				      rd_kafka_resp_err_t code)
{
	sv_error_t *err = ksrc_error(
		ks, SV_ERR_BINDING, code, NULL,
		"topic '%s' does not exist on cluster '%s'", ks->id.topic,
		ks->id.cluster_name);
	sv_error_set_field(err, "source.topic");
	return err;
}

static bool is_topic_missing(rd_kafka_resp_err_t e)
{
	return e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
		e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
}

/* ---- group mode ---- */

static void ksrc_log_parts(kafka_source_t *ks, const char *what,
			   const rd_kafka_topic_partition_list_t *parts)
{
	char list[512];
	size_t off = 0;
	list[0] = 0;
	for (int i = 0; i < parts->cnt && off + 16 < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d",
					i ? "," : "",
					(int)parts->elems[i].partition);
	sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
	       "group '%s' member '%s': %s partitions [%s] of topic '%s'",
	       ks->group_id, ks->instance_id, what, list, ks->id.topic);
}

/* Bounded group mode: each partition just assigned ends at the job's
 * end offset for it; none is done until a message or EOF at its end
 * shows it (a partition committed at its end is done at the first fetch
 * answer: a message past the end, or EOF at it). */
static void ksrc_bound_assigned(kafka_source_t *ks)
{
	if (!ks->bounded || !ks->gend)
		return;
	for (size_t i = 0; i < ks->nparts; i++) {
		int32_t p = ks->pos[i].partition;
		/* a partition added since the submit has nothing of the job */
		ks->stop[i] = p < ks->topic_nparts ? ks->gend[p] : 0;
		ks->done[i] = false;
	}
	ks->ndone = 0;
}

/* The tag in a committed offset's metadata ("streamvisor:ck=<tag>"), or
 * NULL. */
static char *ksrc_tag_of(const rd_kafka_topic_partition_t *tp)
{
	const size_t plen = sizeof("streamvisor:ck=") - 1;
	if (tp->err || tp->offset < 0 || !tp->metadata ||
	    tp->metadata_size <= plen ||
	    memcmp(tp->metadata, "streamvisor:ck=", plen))
		return NULL;
	return sv_strndup((const char *)tp->metadata + plen,
			  tp->metadata_size - plen);
}

static void ksrc_set_tag(kafka_source_t *ks, int32_t partition, char *tag,
			 int64_t offset)
{
	if (partition < 0 || partition >= ks->topic_nparts) {
		free(tag);
		return;
	}
	free(ks->part_tag[partition]);
	ks->part_tag[partition] = tag;
	ks->part_committed[partition] = offset >= 0 ? offset : -1;
}

/* Group mode, in the assign callback: each partition's committed offset
 * into parts (INVALID when none: auto.offset.reset) and its tag into
 * part_tag. A failure is sticky (the attempt fails and starts again):
 * without the tag the task's state cannot be told. */
static void ksrc_committed_tags(kafka_source_t *ks,
				rd_kafka_topic_partition_list_t *parts)
{
	for (int i = 0; i < parts->cnt; i++)
		parts->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
	rd_kafka_topic_partition_list_t *list =
		rd_kafka_topic_partition_list_copy(parts);
	rd_kafka_resp_err_t e = rd_kafka_committed(ks->rk, list,
						   KSRC_COMMITTED_TIMEOUT_MS);
	for (int i = 0; !e && i < list->cnt; i++)
		if (list->elems[i].err)
			e = list->elems[i].err;
	if (e) {
		if (!ks->err)
			ks->err = ksrc_error(
				ks, SV_ERR_BINDING, e, NULL,
				"cannot read the committed offsets of the "
				"partitions group '%s' assigned",
				ks->group_id);
		rd_kafka_topic_partition_list_destroy(list);
		return;
	}
	for (int i = 0; i < list->cnt && i < parts->cnt; i++) {
		const rd_kafka_topic_partition_t *tp = &list->elems[i];
		parts->elems[i].offset = tp->offset >= 0
			? tp->offset
			: RD_KAFKA_OFFSET_INVALID;
		if (!strcmp(tp->topic, ks->id.topic))
			ksrc_set_tag(ks, tp->partition, ksrc_tag_of(tp),
				     tp->offset);
	}
	rd_kafka_topic_partition_list_destroy(list);
}

/* The group's answer, served inside our poll (librdkafka calls it from
 * rd_kafka_consume_batch_queue). Assign at once; defer a revoke. */
static void ksrc_on_rebalance(void *opaque, rd_kafka_t *rk,
			      rd_kafka_resp_err_t err,
			      rd_kafka_topic_partition_list_t *parts)
{
	kafka_source_t *ks = opaque;
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		ks->nparts = 0;
		/* the committed offsets and their tags, stable (read_committed
		 * asks with require_stable: a previous owner's pending
		 * transaction is waited out), before anything is fetched */
		ksrc_committed_tags(ks, parts);
		for (int i = 0; i < parts->cnt; i++) {
			if (strcmp(parts->elems[i].topic, ks->id.topic) ||
			    ks->nparts >= (size_t)ks->topic_nparts)
				continue;
			/* none committed: auto.offset.reset */
			sv_partpos_t *p = &ks->pos[ks->nparts++];
			p->partition = parts->elems[i].partition;
			p->next_offset = parts->elems[i].offset >= 0
				? parts->elems[i].offset
				: -1;
			p->end_offset = -1;
		}
		qsort(ks->pos, ks->nparts, sizeof(*ks->pos), cmp_partition);
		ksrc_bound_assigned(ks);
		ksrc_log_parts(ks, "assigned", parts);
		rd_kafka_resp_err_t e = rd_kafka_assign(rk, parts);
		/* a bounded partition paused when it was read out keeps that
		 * pause across a revoke in librdkafka 2.0: fetch again */
		if (!e && ks->bounded && parts->cnt > 0)
			e = rd_kafka_resume_partitions(rk, parts);
		if (e && !ks->err)
			ks->err = ksrc_error(ks, SV_ERR_RUNTIME, e, NULL,
					     "cannot take the partitions the "
					     "group assigned");
		ks->rebalance = SV_REBALANCE_NONE;
		return;
	}
	if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS && !ks->closing) {
		bool lost = rd_kafka_assignment_lost(rk);
		ksrc_log_parts(ks,
			       lost ? "lost (not committing)"
				    : "asked to give back (after a commit)",
			       parts);
		ks->rebalance = lost ? SV_REBALANCE_LOST : SV_REBALANCE_REVOKE;
		return;
	}
	rd_kafka_assign(rk, NULL);
	ks->nparts = 0;
	ks->ndone = 0;
	ks->rebalance = SV_REBALANCE_NONE;
}

static bool is_stale_member(rd_kafka_resp_err_t e)
{
	return e == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
		e == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID ||
		e == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID ||
		e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS;
}

static int ksrc_rebalance(sv_source_t *src)
{
	return ((kafka_source_t *)src)->rebalance;
}

static sv_error_t *ksrc_rebalance_ack(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	if (ks->rebalance == SV_REBALANCE_NONE)
		return NULL;
	rd_kafka_resp_err_t e = rd_kafka_assign(ks->rk, NULL);
	ks->nparts = 0;
	ks->ndone = 0;
	ks->rebalance = SV_REBALANCE_NONE;
	sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
	       "group '%s' member '%s': partitions given back", ks->group_id,
	       ks->instance_id);
	if (e)
		return ksrc_error(ks, SV_ERR_RUNTIME, e, NULL,
				  "cannot give back the partitions of topic "
				  "'%s'",
				  ks->id.topic);
	return NULL;
}

/* Back to the committed offsets of what we hold: the transaction that
 * would have moved them was aborted. */
static sv_error_t *ksrc_rewind(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	if (!ks->nparts)
		return NULL;
	rd_kafka_topic_partition_list_t *list =
		rd_kafka_topic_partition_list_new((int)ks->nparts);
	for (size_t i = 0; i < ks->nparts; i++)
		rd_kafka_topic_partition_list_add(list, ks->id.topic,
						  ks->pos[i].partition);
	rd_kafka_resp_err_t e = rd_kafka_committed(ks->rk, list,
						   KSRC_META_TIMEOUT_MS);
	for (int i = 0; !e && i < list->cnt; i++) {
		rd_kafka_topic_partition_t *tp = &list->elems[i];
		if (tp->err) {
			e = tp->err;
			break;
		}
		if (tp->offset < 0)
			tp->offset = ks->start == SV_START_LATEST
				? RD_KAFKA_OFFSET_END
				: RD_KAFKA_OFFSET_BEGINNING;
		ksrc_set_tag(ks, tp->partition, ksrc_tag_of(tp), tp->offset);
		ssize_t k = ksrc_index(ks, tp->partition);
		if (k >= 0)
			ks->pos[k].next_offset = tp->offset >= 0 ? tp->offset
								 : -1;
	}
	if (!e) {
		rd_kafka_error_t *se = rd_kafka_seek_partitions(
			ks->rk, list, KSRC_META_TIMEOUT_MS);
		if (se) {
			e = rd_kafka_error_code(se);
			rd_kafka_error_destroy(se);
		}
	}
	if (!e && ks->bounded) {
		/* what was read to the end was aborted: read it again */
		ksrc_bound_assigned(ks);
		e = rd_kafka_resume_partitions(ks->rk, list);
	}
	rd_kafka_topic_partition_list_destroy(list);
	if (e)
		return ksrc_error(ks, SV_ERR_REBALANCE, e, NULL,
				  "cannot go back to the committed offsets of "
				  "group '%s'",
				  ks->group_id);
	return NULL;
}

static bool ksrc_held_done(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	return ks->bounded && ks->ndone == ks->nparts;
}

static bool ksrc_group_complete(sv_source_t *src, int timeout_ms)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	if (!ks->bounded || !ks->gend || ks->topic_nparts < 1)
		return false;
	rd_kafka_topic_partition_list_t *list =
		rd_kafka_topic_partition_list_new(ks->topic_nparts);
	for (int32_t p = 0; p < ks->topic_nparts; p++)
		rd_kafka_topic_partition_list_add(list, ks->id.topic, p);
	rd_kafka_resp_err_t e = rd_kafka_committed(ks->rk, list, timeout_ms);
	bool complete = !e;
	for (int i = 0; complete && i < list->cnt; i++) {
		const rd_kafka_topic_partition_t *tp = &list->elems[i];
		int64_t end = ks->gend[tp->partition];
		complete = end == 0 || (!tp->err && tp->offset >= end);
	}
	rd_kafka_topic_partition_list_destroy(list);
	return complete;
}

static sv_error_t *ksrc_group_metadata(sv_source_t *src, sv_buf_t *out)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	char *member = rd_kafka_memberid(ks->rk);
	bool no_member = !member || !*member;
	rd_kafka_mem_free(ks->rk, member);
	if (no_member || rd_kafka_assignment_lost(ks->rk) ||
	    ks->rebalance == SV_REBALANCE_LOST)
		return ksrc_error(ks, SV_ERR_REBALANCE, 0, NULL,
				  "member '%s' of group '%s' is not in the "
				  "group's current generation: not committing",
				  ks->instance_id, ks->group_id);
	rd_kafka_consumer_group_metadata_t *cgmd =
		rd_kafka_consumer_group_metadata(ks->rk);
	void *bytes = NULL;
	size_t len = 0;
	rd_kafka_error_t *e = cgmd
		? rd_kafka_consumer_group_metadata_write(cgmd, &bytes, &len)
		: NULL;
	if (cgmd)
		rd_kafka_consumer_group_metadata_destroy(cgmd);
	if (!cgmd || e) {
		sv_error_t *err = ksrc_error(
			ks, SV_ERR_REBALANCE, e ? rd_kafka_error_code(e) : 0,
			e ? rd_kafka_error_string(e) : NULL,
			"no group metadata for member '%s' of group '%s'",
			ks->instance_id, ks->group_id);
		if (e)
			rd_kafka_error_destroy(e);
		return err;
	}
	sv_buf_append(out, bytes, len);
	rd_kafka_mem_free(ks->rk, bytes);
	return NULL;
}

/* ---- configuration ---- */

/* Defaults that favour throughput, then (kafka/client.c) the profile's
 * properties, which may override the tuning, then the settings correctness
 * depends on, which nothing may override. */
static sv_error_t *ksrc_client(kafka_source_t *ks, const sv_source_conf_t *conf)
{
	static const sv_kafka_prop_t tuning[] = {
		/* Fetch responses wait at most 100 ms for fetch.min.bytes:
		 * low latency at low rates, full fetches at high rates. */
		{"fetch.wait.max.ms", "100"},
		/* Keep a deep prefetch queue so a batch poll rarely waits
		 * for the network. */
		{"queued.min.messages", "200000"},
		{"queued.max.messages.kbytes", "131072"},
		{"fetch.message.max.bytes", "4194304"},
		{"fetch.max.bytes", "67108864"},
		{"check.crcs", "false"},
		{"socket.nagle.disable", "true"},
	};
	const sv_kafka_prop_t fixed[] = {
		{"group.id", conf->group_id},
		{"auto.offset.reset",
		 conf->start == SV_START_LATEST ? "latest" : "earliest"},
		{"enable.auto.commit", "false"},
		{"enable.auto.offset.store", "false"},
		{"isolation.level", "read_committed"},
		{"enable.partition.eof", "true"},
		{"allow.auto.create.topics", "false"},
	};
	char session[32];
	snprintf(session, sizeof(session), "%d",
		 conf->session_timeout_ms > 0 ? conf->session_timeout_ms
					      : 10000);
	char maxpoll[32];
	snprintf(maxpoll, sizeof(maxpoll), "%d",
		 conf->max_poll_interval_ms > 0 ? conf->max_poll_interval_ms
						: 300000);
	const sv_kafka_prop_t group_fixed[] = {
		{"group.instance.id", ks->instance_id},
		{"max.poll.interval.ms", maxpoll},
		{"partition.assignment.strategy", "range"},
		{"session.timeout.ms", session},
		{"heartbeat.interval.ms", "1000"},
	};
	sv_kafka_prop_t
		fixed_all[SV_ARRAY_LEN(fixed) + SV_ARRAY_LEN(group_fixed)];
	size_t nfixed = 0;
	for (size_t i = 0; i < SV_ARRAY_LEN(fixed); i++)
		fixed_all[nfixed++] = fixed[i];
	for (size_t i = 0; ks->instance_id && i < SV_ARRAY_LEN(group_fixed);
	     i++)
		fixed_all[nfixed++] = group_fixed[i];
	char client_id[256], role[512];
	snprintf(client_id, sizeof(client_id), "streamvisor-%s",
		 ks->id.job_id ? ks->id.job_id : "source");
	snprintf(role, sizeof(role), "consumer of topic '%s' on cluster '%s'",
		 ks->id.topic, ks->id.cluster_name);
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = conf->cluster,
		.client_id = client_id,
		.role = role,
		.log = &ks->id.logctx,
		.tuning = tuning,
		.ntuning = SV_ARRAY_LEN(tuning),
		.fixed = fixed_all,
		.nfixed = nfixed,
		.opaque = ks,
		.on_rebalance = ks->instance_id ? ksrc_on_rebalance : NULL,
		.memory_budget = conf->memory_budget,
	};
	sv_error_t *err = sv_kafka_client_new(&kc, &ks->rk);
	return err && ks->id.job_id
		? sv_error_set_job(err, ks->id.job_id, ks->id.attempt)
		: err;
}

/* ---- partitions ---- */

static int cmp_partition(const void *a, const void *b)
{
	int32_t x = ((const sv_partpos_t *)a)->partition;
	int32_t y = ((const sv_partpos_t *)b)->partition;
	return (x > y) - (x < y);
}

static ssize_t ksrc_index(const kafka_source_t *ks, int32_t partition)
{
	/* Kafka numbers partitions 0..n-1, so the id is the index. */
	if (partition >= 0 && (size_t)partition < ks->nparts &&
	    ks->pos[partition].partition == partition)
		return partition;
	for (size_t i = 0; i < ks->nparts; i++)
		if (ks->pos[i].partition == partition)
			return (ssize_t)i;
	return -1;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Read the topic's partitions from metadata. A topic just created may
 * briefly report no leader; retry that until the deadline. */
static sv_error_t *ksrc_metadata(kafka_source_t *ks)
{
	int64_t deadline = sv_mono_ms() + KSRC_META_TIMEOUT_MS;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(ks->rk, ks->id.topic, NULL);
	sv_error_t *err = NULL;

	if (!rkt)
		return ksrc_error(ks, SV_ERR_BINDING, rd_kafka_last_error(),
				  NULL, "invalid topic name '%s'",
				  ks->id.topic);
	for (;;) {
		const struct rd_kafka_metadata *md = NULL;
		int left = (int)(deadline - sv_mono_ms());
		rd_kafka_resp_err_t e;

		if (left < 1)
			left = 1;
		e = rd_kafka_metadata(ks->rk, 0, rkt, &md, left);
		if (e) {
			err = ksrc_error(ks, SV_ERR_BINDING, e, NULL,
					 "cannot read metadata of topic '%s' "
					 "from cluster '%s'",
					 ks->id.topic, ks->id.cluster_name);
			break;
		}
		const rd_kafka_metadata_topic_t *mt = md->topic_cnt == 1
			? &md->topics[0]
			: NULL;
		e = mt ? mt->err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
		if (is_topic_missing(e)) {
			rd_kafka_metadata_destroy(md);
			err = ksrc_topic_missing(ks, e);
			break;
		}
		if (!e && mt->partition_cnt > 0) {
			ks->topic_nparts = mt->partition_cnt;
			ks->pos = sv_calloc((size_t)mt->partition_cnt,
					    sizeof(*ks->pos));
			ks->nparts = 0;
			for (int i = 0; i < mt->partition_cnt; i++) {
				int32_t id = mt->partitions[i].id;
				if (ks->members > 1 &&
				    id % ks->members != ks->member)
					continue;
				sv_partpos_t *p = &ks->pos[ks->nparts++];
				p->partition = id;
				p->next_offset = -1;
				p->end_offset = -1;
			}
			qsort(ks->pos, ks->nparts, sizeof(*ks->pos),
			      cmp_partition);
			rd_kafka_metadata_destroy(md);
			break;
		}
		rd_kafka_metadata_destroy(md);
		if (sv_mono_ms() >= deadline) {
			err = ksrc_error(ks, SV_ERR_BINDING, e, NULL,
					 "topic '%s' on cluster '%s' has no "
					 "available partitions",
					 ks->id.topic, ks->id.cluster_name);
			break;
		}
		sleep_ms(100);
	}
	rd_kafka_topic_destroy(rkt);
	return err;
}

#define KSRC_CK_META_PREFIX "streamvisor:ck="

/* The checkpoint id in a committed offset's metadata
 * ("streamvisor:ck=<id>", written by the exactly-once Kafka sink), or -1. */
static int64_t parse_ck_meta(const void *meta, size_t len)
{
	const size_t plen = sizeof(KSRC_CK_META_PREFIX) - 1;
	const char *p = meta;
	int64_t id = 0;

	if (!p || len <= plen || memcmp(p, KSRC_CK_META_PREFIX, plen))
		return -1;
	for (size_t i = plen; i < len; i++) {
		if (p[i] < '0' || p[i] > '9' || id > (INT64_MAX - 9) / 10)
			return -1;
		id = id * 10 + (p[i] - '0');
	}
	return id;
}

/* The checkpoint id the committed offsets carry. Partitions without a
 * committed offset (e.g. added to the topic since) do not count; one with
 * an offset but no checkpoint metadata (committed at-least-once) counts as
 * -1. One transaction commits all partitions' offsets together, so they
 * agree unless something else committed in between: then the minimum (the
 * checkpoint all of them have passed), with a warning. */
static void ksrc_read_committed_ck(kafka_source_t *ks,
				   const rd_kafka_topic_partition_list_t *list)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	for (int i = 0; i < list->cnt; i++) {
		const rd_kafka_topic_partition_t *tp = &list->elems[i];
		int64_t ck;
		if (tp->err || tp->offset < 0)
			continue;
		ck = parse_ck_meta(tp->metadata, tp->metadata_size);
		if (ck < lo)
			lo = ck;
		if (ck > hi)
			hi = ck;
	}
	ks->committed_ck = lo == INT64_MAX ? -1 : lo;
	for (int i = 0; i < list->cnt && (size_t)i < ks->nparts; i++) {
		const rd_kafka_topic_partition_t *tp = &list->elems[i];
		ks->part_ck[i] = tp->err || tp->offset < 0
			? -1
			: parse_ck_meta(tp->metadata, tp->metadata_size);
	}
	/* members commit their own partitions in their own transactions:
	 * the tags differ by design there */
	if (lo != INT64_MAX && lo != hi && ks->members <= 1)
		sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
		       "committed offsets of group '%s' for topic '%s' carry "
		       "different checkpoints (%lld to %lld; -1: none); using "
		       "%lld",
		       ks->group_id, ks->id.topic, (long long)lo, (long long)hi,
		       (long long)lo);
}

/* Starting positions: the group's committed offset, else the low/high
 * watermark per conf->start. Also takes the end offsets (bounded stops) and
 * the checkpoint id of the committed offsets. The consumer reads with
 * isolation.level=read_committed, so librdkafka asks for stable offsets
 * (KIP-447 require_stable): while a transaction that commits offsets for
 * the group is pending, the broker makes us wait instead of answering with
 * the offsets from before it. */
/* Each partition's low and high watermark (lo[i], pos[i].end_offset;
 * under read_committed the high one is the last stable offset). */
static sv_error_t *ksrc_end_offsets(kafka_source_t *ks, int64_t *lo)
{
	for (size_t i = 0; i < ks->nparts; i++) {
		sv_partpos_t *p = &ks->pos[i];
		int64_t hi = -1;
		lo[i] = -1;
		rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
			ks->rk, ks->id.topic, p->partition, &lo[i], &hi,
			KSRC_META_TIMEOUT_MS);
		if (is_topic_missing(e))
			return ksrc_topic_missing(ks, e);
		if (e)
			return ksrc_error(ks, SV_ERR_BINDING, e, NULL,
					  "cannot read end offsets of topic "
					  "'%s' partition %d on cluster '%s'",
					  ks->id.topic, p->partition,
					  ks->id.cluster_name);
		p->end_offset = hi;
	}
	return NULL;
}

/* The positions at open: the group's committed offsets, else the start.
 * An unbounded source's end offsets only say where it stands (lag, the
 * worker's catch-up rule), so they are asked before conf->before_committed
 * (beside the worker's fence); a bounded source stops at them, so they
 * are asked after it (a killed attempt's open transaction holds an
 * internal topic's last stable offset until the fence). */
static sv_error_t *ksrc_positions_at_open(kafka_source_t *ks,
					  const sv_source_conf_t *conf)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t e;
	sv_error_t *err = NULL;
	int64_t *lo = sv_calloc(ks->nparts ? ks->nparts : 1, sizeof(*lo));

	if (!ks->bounded && (err = ksrc_end_offsets(ks, lo))) {
		free(lo);
		return err;
	}
	if (conf->before_committed &&
	    (err = conf->before_committed(conf->before_committed_opaque))) {
		free(lo);
		return err;
	}
	if (ks->bounded && (err = ksrc_end_offsets(ks, lo))) {
		free(lo);
		return err;
	}
	list = rd_kafka_topic_partition_list_new((int)ks->nparts);
	for (size_t i = 0; i < ks->nparts; i++)
		rd_kafka_topic_partition_list_add(list, ks->id.topic,
						  ks->pos[i].partition);
	e = rd_kafka_committed(ks->rk, list, KSRC_META_TIMEOUT_MS);
	if (e) {
		err = ksrc_error(ks, SV_ERR_BINDING, e, NULL,
				 "cannot read committed offsets of group '%s' "
				 "on cluster '%s'",
				 ks->group_id, ks->id.cluster_name);
		goto out;
	}
	ksrc_read_committed_ck(ks, list);
	for (size_t i = 0; i < ks->nparts; i++) {
		sv_partpos_t *p = &ks->pos[i];
		rd_kafka_topic_partition_t *tp = &list->elems[i];
		int64_t hi = p->end_offset;

		if (tp->err) {
			err = ksrc_error(
				ks, SV_ERR_BINDING, tp->err, NULL,
				"cannot read committed offset of group "
				"'%s' for topic '%s' partition %d",
				ks->group_id, ks->id.topic, p->partition);
			goto out;
		}
		if (tp->offset >= 0)
			p->next_offset = tp->offset;
		else
			p->next_offset = conf->start == SV_START_LATEST ? hi
									: lo[i];
		if (ks->bounded) {
			ks->stop[i] = hi;
			if (p->next_offset >= hi) {
				ks->done[i] = true;
				ks->ndone++;
			}
		}
	}
out:
	rd_kafka_topic_partition_list_destroy(list);
	free(lo);
	return err;
}

/* Assign every partition that still has something to read, at our
 * positions. Replaces the previous assignment: messages fetched for it are
 * discarded by librdkafka (op versions), so a seek is exact. */
static sv_error_t *ksrc_assign(kafka_source_t *ks)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t e;

	list = rd_kafka_topic_partition_list_new((int)ks->nparts);
	for (size_t i = 0; i < ks->nparts; i++) {
		if (ks->bounded && ks->done[i])
			continue;
		rd_kafka_topic_partition_list_add(list, ks->id.topic,
						  ks->pos[i].partition)
			->offset = ks->pos[i].next_offset;
	}
	e = rd_kafka_assign(ks->rk, list);
	/* A partition paused when it finished and later re-assigned by a
	 * seek must fetch again. */
	if (!e && list->cnt > 0)
		e = rd_kafka_resume_partitions(ks->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (e)
		return ksrc_error(ks, SV_ERR_RUNTIME, e, NULL,
				  "cannot assign partitions of topic '%s'",
				  ks->id.topic);
	return NULL;
}

static void ksrc_mark_done(kafka_source_t *ks, size_t i)
{
	rd_kafka_topic_partition_list_t *list;

	if (ks->done[i])
		return;
	ks->done[i] = true;
	ks->ndone++;
	if (ks->instance_id)
		sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
		       "member '%s': partition %d of topic '%s' read to its "
		       "end "
		       "offset %lld (%zu of %zu held done)",
		       ks->instance_id, (int)ks->pos[i].partition, ks->id.topic,
		       (long long)ks->stop[i], ks->ndone, ks->nparts);
	/* group mode: the group may hand us more; the worker asks the
	 * group's offsets (group_complete) */
	if (ks->ndone == ks->nparts && !ks->instance_id)
		ks->eof_pending = true;
	/* Stop fetching what we would drop anyway. */
	list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(list, ks->id.topic,
					  ks->pos[i].partition);
	rd_kafka_pause_partitions(ks->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
}

static void ksrc_refresh_watermarks(kafka_source_t *ks)
{
	for (size_t i = 0; i < ks->nparts; i++) {
		int64_t lo = -1, hi = -1;
		sv_partpos_t *p = &ks->pos[i];

		if (rd_kafka_get_watermark_offsets(ks->rk, ks->id.topic,
						   p->partition, &lo, &hi) ||
		    hi < 0)
			continue;
		/* The cache lags fetches; what we consumed proves more. */
		p->end_offset = hi > p->next_offset ? hi : p->next_offset;
	}
}

/* ---- the fetcher's wake-up ---- */

static uint64_t conf_u64(rd_kafka_t *rk, const char *key)
{
	char v[32];
	size_t n = sizeof(v);
	if (rd_kafka_conf_get(rd_kafka_conf(rk), key, v, &n) !=
	    RD_KAFKA_CONF_OK)
		return 0;
	return strtoull(v, NULL, 10);
}

static void ksrc_queue_limits(kafka_source_t *ks)
{
	ks->q_max_msgs = conf_u64(ks->rk, "queued.min.messages");
	ks->q_max_bytes = conf_u64(ks->rk, "queued.max.messages.kbytes") * 1024;
}

/* librdkafka 2.0 stops fetching a partition whose prefetch queue holds
 * queued.min.messages or queued.max.messages.kbytes, and looks at it again
 * only when its broker thread wakes up: on a fetch response of another
 * partition, an op, or after rd_kafka_max_block_ms (1 s). Every partition
 * of a source shares our one queue, so all of them stop at once and
 * nothing wakes the thread: once the queue is drained the job waits out
 * the rest of that second (2.2 made it fetch.queue.backoff.ms). A queue
 * that holds less than a second of input (a memory budget; the message
 * cap at high rates) starves the job. So once the queue reached a
 * threshold and was drained below half of it, a ListOffsets request to
 * the first partition's leader (rd_kafka_query_watermark_offsets: an op
 * on that broker's thread, a round trip, no effect on the fetch position)
 * wakes the fetcher at once. One request per fill of the queue, and none
 * while it never fills. */
static void ksrc_wake_fetcher(kafka_source_t *ks)
{
	if (!ks->nparts || (!ks->q_max_msgs && !ks->q_max_bytes))
		return;
	uint64_t q = rd_kafka_queue_length(ks->q);
	uint64_t avg = ks->consumed ? ks->consumed_bytes / ks->consumed : 0;
	uint64_t bytes = q * avg;
	if ((ks->q_max_msgs && q * 4 >= ks->q_max_msgs * 3) ||
	    (ks->q_max_bytes && bytes * 4 >= ks->q_max_bytes * 3)) {
		ks->q_full = true;
		return;
	}
	if (!ks->q_full || q * 2 >= ks->q_max_msgs ||
	    bytes * 2 >= ks->q_max_bytes)
		return;
	ks->q_full = false;
	ks->fetcher_wakes++;
	int64_t lo, hi;
	rd_kafka_query_watermark_offsets(ks->rk, ks->id.topic,
					 ks->pos[0].partition, &lo, &hi, 200);
}

/* ---- driver ---- */

static void ksrc_close(sv_source_t *src);

static sv_error_t *ksrc_open(const sv_source_conf_t *conf, sv_source_t **out)
{
	kafka_source_t *ks;
	sv_error_t *err;

	*out = NULL;
	ks = sv_calloc(1, sizeof(*ks));
	ks->base.ops = &sv_source_kafka_ops;
	sv_kafka_ident_init(&ks->id, conf->job_id, conf->attempt, conf->cluster,
			    conf->topic);
	ks->group_id = sv_strdup(conf->group_id ? conf->group_id : "");
	ks->bounded = conf->bounded;
	sv_ratelimit_init(&ks->rl, conf->rate_per_s);
	ks->committed_ck = -1;
	ks->member = conf->member;
	ks->members = conf->members;
	ks->tombstones = conf->tombstones;
	ks->tombstone_key_col = conf->tombstone_key_col;
	ks->schema = conf->schema;
	ks->start = conf->start;
	if (conf->group_instance_id && *conf->group_instance_id) {
		ks->instance_id = sv_strdup(conf->group_instance_id);
		ks->base.ops = &kafka_group_ops;
		ks->members = 1; /* the group assigns */
		if (conf->bounded && !conf->nend_offsets) {
			err = ksrc_error(ks, SV_ERR_CONFIG, 0, NULL,
					 "a bounded kafka source reads as a "
					 "group member only up to end offsets "
					 "fixed for the job");
			goto fail;
		}
	}

	if (!conf->cluster || !conf->cluster->bootstrap ||
	    !*conf->cluster->bootstrap) {
		err = ksrc_error(ks, SV_ERR_BINDING, 0, NULL,
				 "kafka source needs a cluster with bootstrap "
				 "servers (cluster '%s')",
				 ks->id.cluster_name);
		goto fail;
	}
	if (!conf->topic || !*conf->topic) {
		err = sv_error_set_field(
			ksrc_error(ks, SV_ERR_CONFIG, 0, NULL,
				   "kafka source needs a topic"),
			"source.topic");
		goto fail;
	}
	if (!conf->group_id || !*conf->group_id) {
		err = ksrc_error(ks, SV_ERR_CONFIG, 0, NULL,
				 "kafka source of topic '%s' needs a group id",
				 ks->id.topic);
		goto fail;
	}
	if (!conf->schema) {
		err = ksrc_error(ks, SV_ERR_CONFIG, 0, NULL,
				 "kafka source of topic '%s' needs a schema",
				 ks->id.topic);
		goto fail;
	}
	ks->dec = sv_decoder_new(conf->format, conf->schema);
	if (!ks->dec) {
		err = sv_error_set_field(
			ksrc_error(ks, SV_ERR_CONFIG, 0, NULL,
				   "unsupported source format '%s'",
				   sv_format_name(conf->format)),
			"source.format");
		goto fail;
	}

	if ((err = ksrc_client(ks, conf)))
		goto fail;
	ksrc_queue_limits(ks);
	/* Everything (errors, logs if queued, rebalance-less events) comes
	 * through the one queue we poll. */
	rd_kafka_poll_set_consumer(ks->rk);
	ks->q = rd_kafka_queue_get_consumer(ks->rk);
	if (conf->cluster->dev_embedded)
		sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
		       "cluster '%s' is the embedded development cluster: "
		       "read_committed is not enforced there",
		       ks->id.cluster_name);

	int64_t t_open = sv_mono_ms();
	if ((err = ksrc_metadata(ks)))
		goto fail;
	int64_t t_meta = sv_mono_ms();
	if (ks->members > ks->topic_nparts) {
		err = sv_error_set_field(
			ksrc_error(ks, SV_ERR_CONFIG, 0, NULL,
				   "parallelism %d is more than the %d "
				   "partitions of topic '%s'",
				   ks->members, (int)ks->topic_nparts,
				   ks->id.topic),
			"parallelism");
		err->retriable = false;
		err->fatal = true;
		goto fail;
	}
	ks->part_tag = sv_calloc(ks->topic_nparts > 0 ? (size_t)ks->topic_nparts
						      : 1,
				 sizeof(*ks->part_tag));
	ks->part_committed = sv_calloc(
		ks->topic_nparts > 0 ? (size_t)ks->topic_nparts : 1,
		sizeof(*ks->part_committed));
	ks->part_ck = sv_calloc(ks->nparts ? ks->nparts : 1,
				sizeof(*ks->part_ck));
	for (size_t i = 0; i < ks->nparts; i++)
		ks->part_ck[i] = -1;
	if (ks->instance_id) {
		/* group mode: the group assigns, at a later poll */
		ks->nparts = 0;
		if (ks->bounded) {
			size_t np = (size_t)ks->topic_nparts;
			ks->stop = sv_calloc(np, sizeof(*ks->stop));
			ks->done = sv_calloc(np, sizeof(*ks->done));
			ks->gend = sv_calloc(np, sizeof(*ks->gend));
			for (size_t p = 0; p < np && p < conf->nend_offsets;
			     p++)
				ks->gend[p] = conf->end_offsets[p];
		}
		rd_kafka_topic_partition_list_t *sub =
			rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(sub, ks->id.topic,
						  RD_KAFKA_PARTITION_UA);
		rd_kafka_resp_err_t e = rd_kafka_subscribe(ks->rk, sub);
		rd_kafka_topic_partition_list_destroy(sub);
		if (e) {
			err = ksrc_error(ks, SV_ERR_BINDING, e, NULL,
					 "cannot subscribe to topic '%s' as "
					 "member '%s' of group '%s'",
					 ks->id.topic, ks->instance_id,
					 ks->group_id);
			goto fail;
		}
		ks->wm_next_ms = sv_mono_ms() + KSRC_WM_REFRESH_MS;
		sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
		       "reading topic '%s' on cluster '%s' as static member "
		       "'%s' of group '%s' (eager range)",
		       ks->id.topic, ks->id.cluster_name, ks->instance_id,
		       ks->group_id);
		*out = &ks->base;
		return NULL;
	}
	if (ks->bounded) {
		ks->stop = sv_calloc(ks->nparts, sizeof(*ks->stop));
		ks->done = sv_calloc(ks->nparts, sizeof(*ks->done));
	}
	if ((err = ksrc_positions_at_open(ks, conf)))
		goto fail;
	if (ks->bounded && ks->ndone == ks->nparts)
		ks->eof_pending = true;
	if ((err = ksrc_assign(ks)))
		goto fail;
	ks->wm_next_ms = sv_mono_ms() + KSRC_WM_REFRESH_MS;

	sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
	       "reading topic '%s' (%zu partitions) on cluster '%s' as group "
	       "'%s'%s; committed checkpoint %lld (metadata %lld ms, "
	       "positions %lld ms)",
	       ks->id.topic, ks->nparts, ks->id.cluster_name, ks->group_id,
	       ks->bounded ? ", bounded to the end offsets at open" : "",
	       (long long)ks->committed_ck, (long long)(t_meta - t_open),
	       (long long)(sv_mono_ms() - t_meta));
	*out = &ks->base;
	return NULL;
fail:
	ksrc_close(&ks->base);
	return err;
}

static void ksrc_reserve(kafka_source_t *ks, size_t n)
{
	if (n <= ks->msgcap)
		return;
	free(ks->msgs);
	ks->msgcap = n < 1024 ? 1024 : n;
	ks->msgs = sv_malloc(ks->msgcap * sizeof(*ks->msgs));
}

/* A null-valued message of a table (conf->tombstones): a row with every
 * cell null but the key column, parsed from the message key's text as the
 * Kafka sink renders keys (sv_key_text), flagged SV_ROW_DELETE. Returns 0,
 * or -1 with a reason when the key does not parse. */
static int ksrc_tombstone(kafka_source_t *ks, const rd_kafka_message_t *m,
			  sv_batch_t *b, sv_rowmeta_t **meta, char *reason,
			  size_t rlen)
{
	int col = ks->tombstone_key_col;
	if (col < 0 || (size_t)col >= ks->schema->nfields) {
		snprintf(reason, rlen,
			 "a tombstone (null value) of a table keyed on "
			 "several columns: the key cannot be read from the "
			 "message key");
		return -1;
	}
	if (!m->key) {
		snprintf(reason, rlen,
			 "a tombstone (null value) without a key");
		return -1;
	}
	char text[256];
	size_t n = m->key_len < sizeof(text) - 1 ? m->key_len
						 : sizeof(text) - 1;
	memcpy(text, m->key, n);
	text[n] = '\0';
	const sv_field_t *f = &ks->schema->fields[col];
	sv_value_t v = {.type = (uint8_t)f->type};
	char *end = text;
	switch (f->type) {
	case SV_T_STRING:
		break;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		v.v.i = strtoll(text, &end, 10);
		break;
	case SV_T_FLOAT64:
		v.v.f = strtod(text, &end);
		break;
	case SV_T_BOOL:
		v.v.b = !strcmp(text, "true");
		end = v.v.b || !strcmp(text, "false") ? text + n : text;
		break;
	default:
		end = text;
		break;
	}
	if (f->type != SV_T_STRING && (end == text || *end)) {
		snprintf(reason, rlen,
			 "a tombstone (null value) whose key '%.64s' is not a "
			 "%s "
			 "(column '%s')",
			 text, sv_type_name(f->type), f->name);
		return -1;
	}
	sv_value_t *row = sv_batch_add_row(b, meta);
	if (f->type == SV_T_STRING) {
		v.v.s = sv_batch_strdup(b, m->key, m->key_len);
		v.len = (uint32_t)m->key_len;
	}
	row[col] = v;
	(*meta)->flags = SV_ROW_DELETE;
	return 0;
}

/* Handle one consumed message or event. Returns an error that breaks the
 * source (sticky), or NULL. */
static sv_error_t *ksrc_handle(kafka_source_t *ks, rd_kafka_message_t *m,
			       sv_batch_t *b, int64_t now_ms)
{
	ssize_t i;

	if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
		sv_rowmeta_t *meta;
		char reason[256];
		const char *payload = m->payload ? m->payload : "";
		int64_t ts;

		i = ksrc_index(ks, m->partition);
		if (i < 0)
			return NULL;
		if (ks->bounded) {
			if (ks->done[i])
				return NULL;
			if (m->offset >= ks->stop[i]) {
				/* what lies between is not data (markers,
				 * aborted): group mode commits the end itself,
				 * which group_complete compares */
				if (ks->instance_id &&
				    ks->pos[i].next_offset < ks->stop[i])
					ks->pos[i].next_offset = ks->stop[i];
				ksrc_mark_done(ks, (size_t)i);
				return NULL;
			}
		}
		int rc = !m->payload && ks->tombstones
			? ksrc_tombstone(ks, m, b, &meta, reason,
					 sizeof(reason))
			: sv_decoder_decode(ks->dec, payload, m->len, b, &meta,
					    reason, sizeof(reason));
		if (rc == 0) {
			ts = rd_kafka_message_timestamp(m, NULL);
			meta->partition = m->partition;
			meta->offset = m->offset;
			meta->source_ts_ms = ts;
			/* Processing time; the runner replaces it with the
			 * spec's event_time.field when there is one. */
			meta->event_ms = now_ms;
		} else {
			sv_batch_reject(b, m->partition, m->offset, payload,
					m->len, reason);
		}
		ks->pos[i].next_offset = m->offset + 1;
		/* What we consumed proves the high watermark is past it. */
		if (ks->pos[i].end_offset < m->offset + 1)
			ks->pos[i].end_offset = m->offset + 1;
		if (ks->bounded && m->offset + 1 >= ks->stop[i])
			ksrc_mark_done(ks, (size_t)i);
		return NULL;
	}

	if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
		i = ksrc_index(ks, m->partition);
		if (i < 0)
			return NULL;
		/* At EOF the fetch position is past any transaction markers
		 * at the end of the log: that is our position too. */
		int64_t at = m->offset;
		if (ks->bounded && at > ks->stop[i])
			at = ks->stop[i];
		if (at > ks->pos[i].next_offset)
			ks->pos[i].next_offset = at;
		if (ks->pos[i].end_offset < m->offset)
			ks->pos[i].end_offset = m->offset;
		if (ks->bounded && m->offset >= ks->stop[i])
			ksrc_mark_done(ks, (size_t)i);
		return NULL;
	}

	if (is_topic_missing(m->err) ||
	    m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION)
		return ksrc_topic_missing(ks, m->err);

	if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
		char buf[512];
		rd_kafka_resp_err_t orig = rd_kafka_fatal_error(ks->rk, buf,
								sizeof(buf));
		sv_error_t *err = ksrc_error(ks, SV_ERR_RUNTIME, orig, buf,
					     "kafka consumer of topic '%s' on "
					     "cluster '%s' failed",
					     ks->id.topic, ks->id.cluster_name);
		err->fatal = true;
		return err;
	}

	/* Transient: broker down, transport errors, offset reset notices.
	 * librdkafka retries on its own. */
	char text[512];
	sv_kafka_client_scrub(ks->rk, rd_kafka_message_errstr(m), text,
			      sizeof(text));
	sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
	       "consumer of topic '%s' partition %d on cluster '%s': %s: %s",
	       ks->id.topic, (int)m->partition, ks->id.cluster_name,
	       rd_kafka_err2name(m->err), text);
	return NULL;
}

static sv_error_t *ksrc_poll(sv_source_t *src, sv_batch_t *b, size_t max_rows,
			     int timeout_ms, bool *eof)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	ssize_t n, more;
	int64_t now_ms;
	sv_error_t *err = NULL;

	*eof = false;
	if (ks->err)
		return sv_error_copy(ks->err);
	if (ks->eof_pending) {
		/* Rows delivered by the previous call came with eof=false;
		 * only now is everything delivered. */
		*eof = true;
		return NULL;
	}
	max_rows = sv_ratelimit_allow(&ks->rl, max_rows, timeout_ms);
	if (max_rows == 0)
		return NULL;
	if (sv_mono_ms() >= ks->wm_next_ms) {
		ksrc_refresh_watermarks(ks);
		ks->wm_next_ms = sv_mono_ms() + KSRC_WM_REFRESH_MS;
	}
	ksrc_reserve(ks, max_rows);
	ksrc_wake_fetcher(ks);

	/* Drain what is queued; if nothing is, wait for the first message
	 * only (a batch call with a timeout would wait for a full batch). */
	n = rd_kafka_consume_batch_queue(ks->q, 0, ks->msgs, max_rows);
	if (n == 0 && timeout_ms > 0) {
		n = rd_kafka_consume_batch_queue(ks->q, timeout_ms, ks->msgs,
						 1);
		if (n == 1 && max_rows > 1) {
			more = rd_kafka_consume_batch_queue(
				ks->q, 0, ks->msgs + 1, max_rows - 1);
			if (more > 0)
				n += more;
		}
	}
	if (n < 0)
		return ksrc_error(ks, SV_ERR_RUNTIME, rd_kafka_last_error(),
				  NULL, "cannot consume from topic '%s'",
				  ks->id.topic);
	sv_ratelimit_take(&ks->rl, (size_t)n);

	now_ms = sv_now_ms();
	for (ssize_t k = 0; k < n; k++) {
		if (!err)
			err = ksrc_handle(ks, ks->msgs[k], b, now_ms);
		ks->consumed_bytes += ks->msgs[k]->len;
		rd_kafka_message_destroy(ks->msgs[k]);
	}
	ks->consumed += (uint64_t)(n > 0 ? n : 0);
	if (err) {
		ks->err = err;
		return sv_error_copy(err);
	}
	return NULL;
}

/* The prefetch queue (messages fetched, not yet polled) at the average
 * message size plus librdkafka's per-message op. */
static uint64_t ksrc_memory_bytes(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	size_t q = ks->q ? rd_kafka_queue_length(ks->q) : 0;
	if (!q)
		return 0;
	uint64_t avg = ks->consumed ? ks->consumed_bytes / ks->consumed : 0;
	return (uint64_t)q * (avg + SV_KAFKA_MSG_OVERHEAD);
}

static sv_error_t *ksrc_seek(sv_source_t *src, const sv_partpos_t *pos,
			     size_t n)
{
	kafka_source_t *ks = (kafka_source_t *)src;

	if (ks->err)
		return sv_error_copy(ks->err);
	for (size_t k = 0; k < n; k++) {
		ssize_t i = ksrc_index(ks, pos[k].partition);
		if (i < 0)
			return ksrc_error(ks, SV_ERR_OFFSET, 0, NULL,
					  "cannot seek: topic '%s' has no "
					  "partition %d",
					  ks->id.topic, (int)pos[k].partition);
		if (pos[k].next_offset < 0)
			return ksrc_error(ks, SV_ERR_OFFSET, 0, NULL,
					  "cannot seek topic '%s' partition %d "
					  "to offset %lld",
					  ks->id.topic, (int)pos[k].partition,
					  (long long)pos[k].next_offset);
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = (size_t)ksrc_index(ks, pos[k].partition);
		ks->pos[i].next_offset = pos[k].next_offset;
	}
	if (ks->bounded) {
		ks->ndone = 0;
		for (size_t i = 0; i < ks->nparts; i++) {
			ks->done[i] = ks->pos[i].next_offset >= ks->stop[i];
			ks->ndone += ks->done[i];
		}
		ks->eof_pending = ks->ndone == ks->nparts;
	}
	return ksrc_assign(ks);
}

static size_t ksrc_positions(sv_source_t *src, const sv_partpos_t **pos)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	*pos = ks->pos;
	return ks->nparts;
}

/* The result of an asynchronous commit (served from commitq). */
static void ksrc_commit_done(rd_kafka_t *rk, rd_kafka_resp_err_t e,
			     rd_kafka_topic_partition_list_t *offsets,
			     void *opaque)
{
	kafka_source_t *ks = opaque;
	SV_UNUSED(rk);
	ks->commits_out--;
	for (int k = 0; !e && offsets && k < offsets->cnt; k++)
		e = offsets->elems[k].err;
	if (e && !ks->commit_failed)
		ks->commit_failed = e;
}

/* Serve the results of the asynchronous commits still out, waiting at
 * most timeout_ms for all of them. */
static void ksrc_commits_serve(kafka_source_t *ks, int timeout_ms)
{
	int64_t until = sv_mono_ms() + timeout_ms;
	while (ks->commitq && ks->commits_out > 0) {
		int64_t left = until - sv_mono_ms();
		rd_kafka_event_t *ev = rd_kafka_queue_poll(
			ks->commitq,
			left > 0 ? (int)(left < 100 ? left : 100) : 0);
		if (ev) {
			ksrc_commit_done(
				ks->rk, rd_kafka_event_error(ev),
				(rd_kafka_topic_partition_list_t *)
					rd_kafka_event_topic_partition_list(ev),
				ks);
			rd_kafka_event_destroy(ev);
		} else if (left <= 0) {
			break;
		}
	}
}

/* At-least-once: the positions to the group, after the sink flushed.
 * Standalone the commit is asynchronous (as Flink's Kafka source commits
 * on a completed checkpoint): recovery reads the positions from the
 * checkpoint store, so the group's offsets are for lag tooling, and
 * waiting a round trip for them was the largest step of an at-least-once
 * checkpoint (bench/BASELINE.md); a failure is returned by the next
 * commit, and close waits for what is still out. In group mode it stays
 * synchronous: its error is how a stale member learns it was fenced, and
 * a revoke is acknowledged only after the commit. */
static sv_error_t *ksrc_commit(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t e;
	sv_error_t *err = NULL;

	if (ks->err)
		return sv_error_copy(ks->err);
	bool async = !ks->instance_id &&
		!getenv("STREAMVISOR_SYNC_OFFSET_COMMIT");
	if (async) {
		ksrc_commits_serve(ks, 0);
		if ((e = ks->commit_failed)) {
			ks->commit_failed = RD_KAFKA_RESP_ERR_NO_ERROR;
			return ksrc_error(ks, SV_ERR_COMMIT, e, NULL,
					  "cannot commit offsets of group '%s' "
					  "for topic '%s' on cluster '%s'",
					  ks->group_id, ks->id.topic,
					  ks->id.cluster_name);
		}
		if (!ks->commitq)
			ks->commitq = rd_kafka_queue_new(ks->rk);
	}
	list = rd_kafka_topic_partition_list_new((int)ks->nparts);
	for (size_t i = 0; i < ks->nparts; i++)
		if (ks->pos[i].next_offset >= 0)
			rd_kafka_topic_partition_list_add(list, ks->id.topic,
							  ks->pos[i].partition)
				->offset = ks->pos[i].next_offset;
	if (list->cnt == 0)
		goto out;
	if (async) {
		e = rd_kafka_commit_queue(ks->rk, list, ks->commitq, NULL,
					  NULL);
		if (!e) {
			ks->commits_out++;
			goto out;
		}
	}
	e = rd_kafka_commit(ks->rk, list, 0 /* sync */);
	for (int k = 0; !e && k < list->cnt; k++)
		e = list->elems[k].err;
	if (e)
		err = ksrc_error(
			ks,
			ks->instance_id && is_stale_member(e) ? SV_ERR_REBALANCE
							      : SV_ERR_COMMIT,
			e, NULL,
			"cannot commit offsets of group '%s' for "
			"topic '%s' on cluster '%s'",
			ks->group_id, ks->id.topic, ks->id.cluster_name);
out:
	rd_kafka_topic_partition_list_destroy(list);
	return err;
}

static int64_t ksrc_committed_checkpoint(sv_source_t *src)
{
	return ((kafka_source_t *)src)->committed_ck;
}

static int64_t ksrc_committed_checkpoint_of(sv_source_t *src, int32_t partition)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	ssize_t i = ksrc_index(ks, partition);
	return i >= 0 && ks->part_ck ? ks->part_ck[i] : -1;
}

static int32_t ksrc_topic_partitions(sv_source_t *src)
{
	return ((kafka_source_t *)src)->topic_nparts;
}

static const char *ksrc_committed_tag(sv_source_t *src, int32_t partition,
				      int64_t *offset)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	bool in = partition >= 0 && partition < ks->topic_nparts &&
		ks->part_tag;
	*offset = in ? ks->part_committed[partition] : -1;
	return in ? ks->part_tag[partition] : NULL;
}

static rd_kafka_topic_partition_list_t *ksrc_held_list(kafka_source_t *ks)
{
	rd_kafka_topic_partition_list_t *list =
		rd_kafka_topic_partition_list_new(ks->nparts ? (int)ks->nparts
							     : 1);
	for (size_t i = 0; i < ks->nparts; i++)
		rd_kafka_topic_partition_list_add(list, ks->id.topic,
						  ks->pos[i].partition)
			->offset = ks->pos[i].next_offset;
	return list;
}

/* Hold: pause every partition held (a restore runs); release: resume
 * them, and where group_serve dropped fetched messages meanwhile, seek
 * back to the positions, so nothing is skipped. */
static sv_error_t *ksrc_group_hold(sv_source_t *src, bool hold)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	if (hold == ks->held || !ks->nparts) {
		ks->held = hold && ks->nparts;
		return NULL;
	}
	rd_kafka_topic_partition_list_t *list = ksrc_held_list(ks);
	rd_kafka_resp_err_t e = hold ? rd_kafka_pause_partitions(ks->rk, list)
				     : rd_kafka_resume_partitions(ks->rk, list);
	if (!e && !hold && ks->held_dropped) {
		for (int i = list->cnt - 1; i >= 0; i--)
			if (list->elems[i].offset < 0)
				rd_kafka_topic_partition_list_del_by_idx(list,
									 i);
		rd_kafka_error_t *se = list->cnt
			? rd_kafka_seek_partitions(ks->rk, list,
						   KSRC_META_TIMEOUT_MS)
			: NULL;
		if (se) {
			e = rd_kafka_error_code(se);
			rd_kafka_error_destroy(se);
		}
	}
	rd_kafka_topic_partition_list_destroy(list);
	ks->held = hold;
	if (!hold)
		ks->held_dropped = false;
	if (e)
		return ksrc_error(ks, SV_ERR_RUNTIME, e, NULL,
				  "cannot %s the partitions of topic '%s'",
				  hold ? "pause" : "resume", ks->id.topic);
	return NULL;
}

/* While held: one poll without waiting, so librdkafka sees the member
 * alive (max.poll.interval.ms) and serves the group's callbacks; fetched
 * messages are dropped (group_hold's release seeks back). */
static void ksrc_group_serve(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	rd_kafka_message_t *msgs[64];
	ssize_t n = rd_kafka_consume_batch_queue(ks->q, 0, msgs,
						 SV_ARRAY_LEN(msgs));
	for (ssize_t k = 0; k < n; k++) {
		if (!msgs[k]->err)
			ks->held_dropped = true;
		rd_kafka_message_destroy(msgs[k]);
	}
}

static void ksrc_close(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;

	if (!ks)
		return;
	if (ks->fetcher_wakes)
		sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
		       "consumer of topic '%s': fetcher woken %llu times after "
		       "a full prefetch queue",
		       ks->id.topic, (unsigned long long)ks->fetcher_wakes);
	ksrc_commits_serve(ks, 10000);
	if (ks->commits_out > 0 || ks->commit_failed)
		sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
		       "consumer of topic '%s': %d offset commit(s) of group "
		       "'%s' unanswered at close%s%s (recovery reads the "
		       "checkpoint store; only lag tooling sees older offsets)",
		       ks->id.topic, ks->commits_out, ks->group_id,
		       ks->commit_failed ? ", one failed: " : "",
		       ks->commit_failed ? rd_kafka_err2str(ks->commit_failed)
					 : "");
	if (ks->commitq)
		rd_kafka_queue_destroy(ks->commitq);
	if (ks->q)
		rd_kafka_queue_destroy(ks->q);
	if (ks->rk) {
		ks->closing = true;
		rd_kafka_consumer_close(ks->rk);
		sv_kafka_client_destroy(ks->rk);
	}
	if (ks->dec)
		sv_decoder_destroy(ks->dec);
	sv_error_destroy(ks->err);
	free(ks->msgs);
	free(ks->pos);
	free(ks->stop);
	free(ks->done);
	free(ks->gend);
	free(ks->part_ck);
	for (int32_t p = 0; ks->part_tag && p < ks->topic_nparts; p++)
		free(ks->part_tag[p]);
	free(ks->part_tag);
	free(ks->part_committed);
	sv_kafka_ident_release(&ks->id);
	free(ks->group_id);
	free(ks->instance_id);
	free(ks);
}

static const char *const starts[] = {"earliest", "latest", NULL};
static const sv_driver_t kafka_driver = {
	.kind = "kafka",
	.caps = SV_DRIVER_CLUSTER | SV_DRIVER_GROUP | SV_DRIVER_BOUNDED,
	.fields =
		(const sv_driver_field_t[]){
			{.name = "cluster", .def = "default"},
			{.name = "topic", .flags = SV_DRIVER_FIELD_REQUIRED},
			{.name = "start", .def = "earliest", .values = starts},
			{.name = "rate_per_s"},
			{NULL},
		},
};

/* A source opened as a group member gets this table (open() switches to
 * it), so sv_source_grouped() tells the two apart. */
static const sv_source_ops_t kafka_group_ops = {
	.driver = &kafka_driver,
	.open = ksrc_open,
	.poll = ksrc_poll,
	.seek = ksrc_seek,
	.positions = ksrc_positions,
	.commit = ksrc_commit,
	.close = ksrc_close,
	.committed_checkpoint = ksrc_committed_checkpoint,
	.committed_checkpoint_of = ksrc_committed_checkpoint_of,
	.topic_partitions = ksrc_topic_partitions,
	.partition_count = sv_kafka_topic_partitions,
	.memory_bytes = ksrc_memory_bytes,
	.rebalance = ksrc_rebalance,
	.rebalance_ack = ksrc_rebalance_ack,
	.rewind = ksrc_rewind,
	.group_metadata = ksrc_group_metadata,
	.held_done = ksrc_held_done,
	.group_complete = ksrc_group_complete,
	.committed_tag = ksrc_committed_tag,
	.group_hold = ksrc_group_hold,
	.group_serve = ksrc_group_serve,
};

const sv_source_ops_t sv_source_kafka_ops = {
	.driver = &kafka_driver,
	.open = ksrc_open,
	.poll = ksrc_poll,
	.seek = ksrc_seek,
	.positions = ksrc_positions,
	.commit = ksrc_commit,
	.close = ksrc_close,
	.committed_checkpoint = ksrc_committed_checkpoint,
	.committed_checkpoint_of = ksrc_committed_checkpoint_of,
	.topic_partitions = ksrc_topic_partitions,
	.partition_count = sv_kafka_topic_partitions,
	.memory_bytes = ksrc_memory_bytes,
};
