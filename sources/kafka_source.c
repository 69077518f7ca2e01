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
#include "kafka/client.h"
#include "sources/ratelimit.h"
#include "sources/source.h"

#define KSRC_META_TIMEOUT_MS 10000
#define KSRC_WM_REFRESH_MS 1000
#define KSRC_COMMIT_TIMEOUT_MS 10000

typedef struct kafka_source {
	sv_source_t base;
	sv_logctx_t logctx;
	char *job_id;
	int attempt;
	char *cluster_name;
	char *topic;
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
	int64_t wm_next_ms; /* next watermark refresh (monotonic) */
	sv_error_t *err; /* sticky: the source is broken */
	uint64_t consumed, consumed_bytes; /* for the average message size */
	/* the prefetch queue's thresholds in effect (queued.min.messages,
	 * queued.max.messages.kbytes in bytes) and whether the queue reached
	 * them since the fetcher was last woken (ksrc_wake_fetcher) */
	uint64_t q_max_msgs, q_max_bytes;
	bool q_full;
	uint64_t fetcher_wakes;
} kafka_source_t;

extern const sv_source_ops_t sv_source_kafka_ops;

/* ---- logging and errors ---- */

/* An error with the job's context and a scrubbed cause (kafka/client.h). */
#define ksrc_error(ks, cat, code, cause, ...) \
	sv_kafka_error((ks)->rk, &(ks)->logctx, cat, code, cause, __VA_ARGS__)

static sv_error_t *ksrc_topic_missing(kafka_source_t *ks,
				      rd_kafka_resp_err_t code)
{
	sv_error_t *err = ksrc_error(
		ks, SV_ERR_BINDING, code, NULL,
		"topic '%s' does not exist on cluster '%s'", ks->topic,
		ks->cluster_name);
	sv_error_set_field(err, "source.topic");
	return err;
}

static bool is_topic_missing(rd_kafka_resp_err_t e)
{
	return e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
		e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
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
	char client_id[256], role[512];
	snprintf(client_id, sizeof(client_id), "streamvisor-%s",
		 ks->job_id ? ks->job_id : "source");
	snprintf(role, sizeof(role), "consumer of topic '%s' on cluster '%s'",
		 ks->topic, ks->cluster_name);
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_CONSUMER,
		.cluster = conf->cluster,
		.client_id = client_id,
		.role = role,
		.log = &ks->logctx,
		.tuning = tuning,
		.ntuning = SV_ARRAY_LEN(tuning),
		.fixed = fixed,
		.nfixed = SV_ARRAY_LEN(fixed),
		.opaque = ks,
		.memory_budget = conf->memory_budget,
	};
	sv_error_t *err = sv_kafka_client_new(&kc, &ks->rk);
	return err && ks->job_id
		? sv_error_set_job(err, ks->job_id, ks->attempt)
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
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(ks->rk, ks->topic, NULL);
	sv_error_t *err = NULL;

	if (!rkt)
		return ksrc_error(ks, SV_ERR_BINDING, rd_kafka_last_error(),
				  NULL, "invalid topic name '%s'", ks->topic);
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
					 ks->topic, ks->cluster_name);
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
					 ks->topic, ks->cluster_name);
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
		sv_log(&ks->logctx, SV_LOG_WARN, "kafka",
		       "committed offsets of group '%s' for topic '%s' carry "
		       "different checkpoints (%lld to %lld; -1: none); using "
		       "%lld",
		       ks->group_id, ks->topic, (long long)lo, (long long)hi,
		       (long long)lo);
}

/* Starting positions: the group's committed offset, else the low/high
 * watermark per conf->start. Also takes the end offsets (bounded stops) and
 * the checkpoint id of the committed offsets. The consumer reads with
 * isolation.level=read_committed, so librdkafka asks for stable offsets
 * (KIP-447 require_stable): while a transaction that commits offsets for
 * the group is pending, the broker makes us wait instead of answering with
 * the offsets from before it. */
static sv_error_t *ksrc_positions_at_open(kafka_source_t *ks, sv_start_t start)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t e;
	sv_error_t *err = NULL;

	list = rd_kafka_topic_partition_list_new((int)ks->nparts);
	for (size_t i = 0; i < ks->nparts; i++)
		rd_kafka_topic_partition_list_add(list, ks->topic,
						  ks->pos[i].partition);
	e = rd_kafka_committed(ks->rk, list, KSRC_META_TIMEOUT_MS);
	if (e) {
		err = ksrc_error(ks, SV_ERR_BINDING, e, NULL,
				 "cannot read committed offsets of group '%s' "
				 "on cluster '%s'",
				 ks->group_id, ks->cluster_name);
		goto out;
	}
	ksrc_read_committed_ck(ks, list);
	for (size_t i = 0; i < ks->nparts; i++) {
		sv_partpos_t *p = &ks->pos[i];
		rd_kafka_topic_partition_t *tp = &list->elems[i];
		int64_t lo = -1, hi = -1;

		if (tp->err) {
			err = ksrc_error(
				ks, SV_ERR_BINDING, tp->err, NULL,
				"cannot read committed offset of group "
				"'%s' for topic '%s' partition %d",
				ks->group_id, ks->topic, p->partition);
			goto out;
		}
		e = rd_kafka_query_watermark_offsets(ks->rk, ks->topic,
						     p->partition, &lo, &hi,
						     KSRC_META_TIMEOUT_MS);
		if (is_topic_missing(e)) {
			err = ksrc_topic_missing(ks, e);
			goto out;
		}
		if (e) {
			err = ksrc_error(
				ks, SV_ERR_BINDING, e, NULL,
				"cannot read end offsets of topic '%s' "
				"partition %d on cluster '%s'",
				ks->topic, p->partition, ks->cluster_name);
			goto out;
		}
		p->end_offset = hi;
		if (tp->offset >= 0)
			p->next_offset = tp->offset;
		else
			p->next_offset = start == SV_START_LATEST ? hi : lo;
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
		rd_kafka_topic_partition_list_add(list, ks->topic,
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
				  ks->topic);
	return NULL;
}

static void ksrc_mark_done(kafka_source_t *ks, size_t i)
{
	rd_kafka_topic_partition_list_t *list;

	if (ks->done[i])
		return;
	ks->done[i] = true;
	ks->ndone++;
	if (ks->ndone == ks->nparts)
		ks->eof_pending = true;
	/* Stop fetching what we would drop anyway. */
	list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(list, ks->topic,
					  ks->pos[i].partition);
	rd_kafka_pause_partitions(ks->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
}

static void ksrc_refresh_watermarks(kafka_source_t *ks)
{
	for (size_t i = 0; i < ks->nparts; i++) {
		int64_t lo = -1, hi = -1;
		sv_partpos_t *p = &ks->pos[i];

		if (rd_kafka_get_watermark_offsets(ks->rk, ks->topic,
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
	rd_kafka_query_watermark_offsets(ks->rk, ks->topic,
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
	ks->job_id = conf->job_id ? sv_strdup(conf->job_id) : NULL;
	ks->attempt = conf->attempt;
	ks->logctx.job_id = ks->job_id;
	ks->logctx.attempt = conf->attempt;
	ks->cluster_name = sv_strdup(conf->cluster && conf->cluster->name
					     ? conf->cluster->name
					     : "(none)");
	ks->topic = sv_strdup(conf->topic ? conf->topic : "");
	ks->group_id = sv_strdup(conf->group_id ? conf->group_id : "");
	ks->bounded = conf->bounded;
	sv_ratelimit_init(&ks->rl, conf->rate_per_s);
	ks->committed_ck = -1;
	ks->member = conf->member;
	ks->members = conf->members;

	if (!conf->cluster || !conf->cluster->bootstrap ||
	    !*conf->cluster->bootstrap) {
		err = ksrc_error(ks, SV_ERR_BINDING, 0, NULL,
				 "kafka source needs a cluster with bootstrap "
				 "servers (cluster '%s')",
				 ks->cluster_name);
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
				 ks->topic);
		goto fail;
	}
	if (!conf->schema) {
		err = ksrc_error(ks, SV_ERR_CONFIG, 0, NULL,
				 "kafka source of topic '%s' needs a schema",
				 ks->topic);
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
		sv_log(&ks->logctx, SV_LOG_WARN, "kafka",
		       "cluster '%s' is the embedded development cluster: "
		       "read_committed is not enforced there",
		       ks->cluster_name);

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
				   ks->topic),
			"parallelism");
		err->retriable = false;
		err->fatal = true;
		goto fail;
	}
	ks->part_ck = sv_calloc(ks->nparts ? ks->nparts : 1,
				sizeof(*ks->part_ck));
	for (size_t i = 0; i < ks->nparts; i++)
		ks->part_ck[i] = -1;
	if (ks->bounded) {
		ks->stop = sv_calloc(ks->nparts, sizeof(*ks->stop));
		ks->done = sv_calloc(ks->nparts, sizeof(*ks->done));
	}
	if ((err = ksrc_positions_at_open(ks, conf->start)))
		goto fail;
	if (ks->bounded && ks->ndone == ks->nparts)
		ks->eof_pending = true;
	if ((err = ksrc_assign(ks)))
		goto fail;
	ks->wm_next_ms = sv_mono_ms() + KSRC_WM_REFRESH_MS;

	sv_log(&ks->logctx, SV_LOG_INFO, "kafka",
	       "reading topic '%s' (%zu partitions) on cluster '%s' as group "
	       "'%s'%s; committed checkpoint %lld (metadata %lld ms, "
	       "positions %lld ms)",
	       ks->topic, ks->nparts, ks->cluster_name, ks->group_id,
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
				ksrc_mark_done(ks, (size_t)i);
				return NULL;
			}
		}
		if (sv_decoder_decode(ks->dec, payload, m->len, b, &meta,
				      reason, sizeof(reason)) == 0) {
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
					     ks->topic, ks->cluster_name);
		err->fatal = true;
		return err;
	}

	/* Transient: broker down, transport errors, offset reset notices.
	 * librdkafka retries on its own. */
	char text[512];
	sv_kafka_client_scrub(ks->rk, rd_kafka_message_errstr(m), text,
			      sizeof(text));
	sv_log(&ks->logctx, SV_LOG_WARN, "kafka",
	       "consumer of topic '%s' partition %d on cluster '%s': %s: %s",
	       ks->topic, (int)m->partition, ks->cluster_name,
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
				  ks->topic);
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
					  ks->topic, (int)pos[k].partition);
		if (pos[k].next_offset < 0)
			return ksrc_error(ks, SV_ERR_OFFSET, 0, NULL,
					  "cannot seek topic '%s' partition %d "
					  "to offset %lld",
					  ks->topic, (int)pos[k].partition,
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

static sv_error_t *ksrc_commit(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t e;
	sv_error_t *err = NULL;

	if (ks->err)
		return sv_error_copy(ks->err);
	list = rd_kafka_topic_partition_list_new((int)ks->nparts);
	for (size_t i = 0; i < ks->nparts; i++)
		if (ks->pos[i].next_offset >= 0)
			rd_kafka_topic_partition_list_add(list, ks->topic,
							  ks->pos[i].partition)
				->offset = ks->pos[i].next_offset;
	if (list->cnt == 0)
		goto out;
	e = rd_kafka_commit(ks->rk, list, 0 /* sync */);
	for (int k = 0; !e && k < list->cnt; k++)
		e = list->elems[k].err;
	if (e)
		err = ksrc_error(ks, SV_ERR_COMMIT, e, NULL,
				 "cannot commit offsets of group '%s' for "
				 "topic '%s' on cluster '%s'",
				 ks->group_id, ks->topic, ks->cluster_name);
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

static void ksrc_close(sv_source_t *src)
{
	kafka_source_t *ks = (kafka_source_t *)src;

	if (!ks)
		return;
	if (ks->fetcher_wakes)
		sv_log(&ks->logctx, SV_LOG_INFO, "kafka",
		       "consumer of topic '%s': fetcher woken %llu times after "
		       "a full prefetch queue",
		       ks->topic, (unsigned long long)ks->fetcher_wakes);
	if (ks->q)
		rd_kafka_queue_destroy(ks->q);
	if (ks->rk) {
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
	free(ks->part_ck);
	free(ks->topic);
	free(ks->group_id);
	free(ks->cluster_name);
	free(ks->job_id);
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
	.memory_bytes = ksrc_memory_bytes,
};
