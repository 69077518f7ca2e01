/* kafka_sink.c — the Kafka sink driver (sink.h, kind "kafka").
 *
 * One idempotent librdkafka producer per sink (acks=all,
 * enable.idempotence=true: no duplicates or reordering from internal
 * retries). write() encodes a batch's rows as JSON, one after the other,
 * into one reused buffer (each row's key, the key column rendered as text,
 * just before its value) and hands them to librdkafka in one
 * rd_kafka_produce_batch call per ~1 MB of encoded rows, with
 * RD_KAFKA_MSG_F_COPY, so the only per-record copy is librdkafka's own, and
 * its clock reads, topic lock and transaction check are paid once per call
 * instead of once per record (the records' CreateTime is the call's time).
 * Partitioning is unchanged: the call takes RD_KAFKA_PARTITION_UA, so every
 * message goes through the topic's partitioner (murmur2_random on the key)
 * exactly as rd_kafka_producev sends it. When librdkafka's queue is full
 * the call refuses that message and every one after it (librdkafka stops
 * enqueueing at the first QUEUE_FULL), so the accepted ones are a prefix;
 * we serve delivery reports and hand in the rest, in order. Any other
 * refusal of a message is the sink's sticky error (below); messages after
 * it in the batch may already be queued, which the job's recovery covers as
 * it covers any failed write. Delivery reports run on the calling thread
 * (inside write, flush):
 * acknowledged records are counted into records_out, and the first failure
 * is kept and returned by every later write/flush — the sink is broken from
 * then on and the job goes through recovery.
 *
 * write_raw() produces a dead letter as it came, with the reason in the
 * header "streamvisor.error". write_to() produces one payload into one
 * partition (a repartition topic's watermark records); a sink of format
 * sv-row encodes rows with core/rowcodec.h instead of JSON
 * (docs/repartition.md).
 *
 * Exactly-once (conf->transactional; docs/exactly-once.md, docs/kafka.md):
 * the same producer with transactional.id = conf->transactional_id, which is
 * stable per job and worker. open() calls init_transactions, which fences
 * any older producer with that id (a zombie attempt) and aborts its open
 * transaction. Then one transaction per checkpoint: txn_begin →
 * begin_transaction; txn_prepare → flush, so every record of the
 * transaction is acknowledged and the sticky delivery error is checked;
 * txn_offsets → send_offsets_to_transaction for the job's group, each
 * partition's offset carrying the metadata "streamvisor:ck=<n>" that the
 * source reads back at recovery; txn_commit → commit_transaction;
 * txn_abort → abort_transaction. Such a sink uses sv_sink_kafka_txn_ops, so
 * sv_sink_transactional() is true only for it.
 *
 * Distributed mode (docs/cluster.md): txn_group hands in the consumer's
 * own group metadata (generation, member id, instance id; KIP-447) as
 * bytes, and txn_offsets sends that instead of group-id-only metadata, so
 * the broker fences a member of a stale generation. Those refusals
 * (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) are errors of
 * category `rebalance`: abortable, and not a failure of the job. txn_tag
 * replaces the checkpoint id in the offsets' metadata by the member's tag
 * ("streamvisor:ck=<node>-t0:<n>"), and write_keyed puts a task snapshot's
 * keyed records on the job's state topic in the same transaction (not
 * counted as output).
 *
 * librdkafka's transaction errors come in three classes (NOTES): retriable
 * (init_transactions and send_offsets are retried here within a deadline;
 * a commit never is: its error means an unknown outcome and is returned,
 * retriable), abortable (returned retriable; the transaction must be
 * aborted — txn_abort or close does it) and fatal (fenced by a newer
 * producer, or anything unclassified: returned with err->fatal; the
 * producer is unusable). In transactional mode records_out counts records
 * of committed transactions only.
 *
 * With conf->memory_budget the producer's queue sizes come from it
 * (kafka/client.h sv_kafka_budget) instead of the deep fixed queue below;
 * memory_bytes() reports the queue at the average message size.
 *
 * librdkafka's log lines go to sv_log with the job id; client properties
 * of the cluster profile are never logged. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "core/partition.h"
#include "core/rowcodec.h"
#include "core/util.h"
#include "kafka/admin.h"
#include "kafka/client.h"
#include "kafka/ident.h"
#include "sinks/sink.h"

#define KSNK_META_TIMEOUT_MS 10000
#define KSNK_DLQ_HEADER "streamvisor.error"
#define KSNK_TXN_TIMEOUT_DEFAULT_MS 60000
/* init_transactions and send_offsets: one call waits at most this long,
 * retriable errors are retried until KSNK_TXN_RETRY_DEADLINE_MS passed. */
#define KSNK_TXN_CALL_TIMEOUT_MS 30000
#define KSNK_TXN_RETRY_DEADLINE_MS 60000
/* close(): how long an abort of the open transaction may take. */
#define KSNK_CLOSE_ABORT_TIMEOUT_MS 5000
/* init_transactions: the first call waits this long, each retry twice as
 * long as the one before, up to KSNK_TXN_CALL_TIMEOUT_MS */
#define KSNK_TXN_FIRST_CALL_MS 20
#define KSNK_CK_META_PREFIX "streamvisor:ck="
/* write(): rows are encoded and produced in runs of about this many bytes
 * (a whole batch of W1's ~100-byte rows is one run) */
#define KSNK_BATCH_BYTES (1024 * 1024)

typedef enum ksnk_txn_state {
	KTXN_IDLE = 0, /* no transaction open (or not transactional) */
	KTXN_OPEN, /* begin_transaction done */
	KTXN_ABORTABLE, /* an abortable error: only abort is allowed */
	KTXN_BROKEN, /* fatal error or unknown commit outcome */
} ksnk_txn_state_t;

typedef struct kafka_sink {
	sv_sink_t base;
	sv_kafka_ident_t id; /* job, attempt, cluster name, topic */
	const sv_schema_t *schema; /* borrowed */
	int key_column; /* -1: no key */
	bool raw;
	bool row_format; /* sv-row (repartition topics), else JSON */
	/* exactly-once */
	bool transactional;
	char *txn_id; /* transactional.id */
	char *group_id; /* for txn_offsets */
	sv_buf_t cgmd; /* txn_group: the consumer's metadata, or empty */
	char *ck_tag; /* txn_tag: the offsets' tag, or NULL: the id */
	int txn_timeout_ms; /* transaction.timeout.ms */
	ksnk_txn_state_t txn;
	uint64_t txn_acked; /* records acknowledged in the open txn */

	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;
	sv_buf_t buf; /* encoded value, reused; write(): a batch's keys+values */
	rd_kafka_message_t *msgs; /* write(): one per row, reused */
	size_t msgs_cap;
	sv_error_t *err; /* first delivery failure (sticky) */
	uint64_t produced, produced_bytes; /* for the average message size */
} kafka_sink_t;

extern const sv_sink_ops_t sv_sink_kafka_ops;
extern const sv_sink_ops_t sv_sink_kafka_txn_ops;

/* ---- logging and errors ---- */

/* An error with the job's context and a scrubbed cause (kafka/client.h). */
#define ksnk_error(ks, cat, code, cause, ...)                        \
	sv_kafka_error((ks)->rk, &(ks)->id.logctx, cat, code, cause, \
		       __VA_ARGS__)

static bool is_topic_missing(rd_kafka_resp_err_t e)
{
	return e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
		e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
}

static sv_error_t *ksnk_topic_missing(kafka_sink_t *ks,
				      rd_kafka_resp_err_t code)
{
	return sv_error_set_field(
		ksnk_error(ks, SV_ERR_BINDING, code, NULL,
			   "topic '%s' does not exist on cluster '%s'",
			   ks->id.topic, ks->id.cluster_name),
		"sink.topic");
}

static sv_error_t *ksnk_fatal(kafka_sink_t *ks)
{
	char buf[512];
	rd_kafka_resp_err_t orig = rd_kafka_fatal_error(ks->rk, buf,
							sizeof(buf));
	sv_error_t *err = ksnk_error(ks, SV_ERR_SINK_COMMIT, orig, buf,
				     "kafka producer of topic '%s' on cluster "
				     "'%s' failed",
				     ks->id.topic, ks->id.cluster_name);
	err->fatal = true;
	return err;
}

/* An error for a failed produce or delivery. */
static sv_error_t *ksnk_delivery_error(kafka_sink_t *ks, rd_kafka_resp_err_t e)
{
	if (is_topic_missing(e))
		return ksnk_topic_missing(ks, e);
	if (e == RD_KAFKA_RESP_ERR__FATAL)
		return ksnk_fatal(ks);
	return ksnk_error(ks, SV_ERR_SINK_COMMIT, e, NULL,
			  "delivery to topic '%s' on cluster '%s' failed",
			  ks->id.topic, ks->id.cluster_name);
}

/* The member's group generation is stale: it missed a rebalance, was
 * kicked out, or its static instance id was taken over. */
static bool is_rebalance(rd_kafka_resp_err_t e)
{
	return e == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
		e == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID ||
		e == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID ||
		e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS;
}

static bool is_fenced(rd_kafka_resp_err_t e)
{
	return e == RD_KAFKA_RESP_ERR__FENCED ||
		e == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
		e == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

/* An sv_error_t for a failed transactional call `what`, classified as
 * NOTES-exactly-once.md says: fatal (and anything unclassified) → fatal,
 * the producer is unusable; abortable → retriable, the transaction must be
 * aborted; retriable → retriable. Updates ks->txn. Destroys e. */
static sv_error_t *ksnk_txn_error(kafka_sink_t *ks, rd_kafka_error_t *e,
				  const char *what)
{
	rd_kafka_resp_err_t code = rd_kafka_error_code(e);
	const char *cls;
	sv_errcat_t cat = SV_ERR_SINK_COMMIT;
	bool fatal = false;
	sv_error_t *err;

	if (rd_kafka_error_is_fatal(e)) {
		cls = is_fenced(code) ? "fenced by a newer producer with the "
					"same transactional id"
				      : "fatal";
		fatal = true;
	} else if (rd_kafka_error_txn_requires_abort(e)) {
		cls = "the transaction must be aborted";
	} else if (rd_kafka_error_is_retriable(e)) {
		cls = "retriable";
	} else {
		cls = is_fenced(code) ? "fenced by a newer producer with the "
					"same transactional id"
				      : "unclassified, treated as fatal";
		fatal = true;
	}
	if (code == RD_KAFKA_RESP_ERR_INVALID_TRANSACTION_TIMEOUT)
		cat = SV_ERR_CONFIG;
	else if (is_rebalance(code) && !rd_kafka_error_is_fatal(e))
		cat = SV_ERR_REBALANCE;
	err = ksnk_error(ks, cat, code, rd_kafka_error_string(e),
			 "%s of transactional id '%s' on cluster '%s' failed "
			 "(%s)",
			 what, ks->txn_id, ks->id.cluster_name, cls);
	err->fatal = fatal;
	err->retriable = !fatal;
	if (fatal)
		ks->txn = KTXN_BROKEN;
	else if (rd_kafka_error_txn_requires_abort(e))
		ks->txn = KTXN_ABORTABLE;
	rd_kafka_error_destroy(e);
	return err;
}

/* The opaque of write_keyed's records (not counted as output). */
#define KSNK_STATE_RECORD ((void *)&ksnk_state_record_tag)
static const char ksnk_state_record_tag = 's';

/* thread: the thread calling write/flush (served by rd_kafka_poll) */
static void ksnk_on_delivery(void *opaque, const rd_kafka_message_t *m)
{
	kafka_sink_t *ks = opaque;
	if (!m->err) {
		if (m->_private == KSNK_STATE_RECORD)
			return; /* write_keyed: not output */
		/* Transactional: counted once the transaction commits. */
		if (ks->transactional)
			ks->txn_acked++;
		else
			ks->base.records_out++;
		return;
	}
	/* Records purged by our own abort_transaction are not failures: the
	 * transaction they belonged to was dropped on purpose. */
	if (ks->transactional &&
	    (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
	     m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT))
		return;
	if (!ks->err) {
		ks->err = ksnk_delivery_error(ks, m->err);
		sv_log(&ks->id.logctx, SV_LOG_ERROR, "kafka",
		       "delivery to topic '%s' on cluster '%s' failed: %s",
		       ks->id.topic, ks->id.cluster_name,
		       rd_kafka_err2str(m->err));
	}
}

/* thread: the thread calling write/flush (served by rd_kafka_poll); the
 * event was logged (scrubbed) by kafka/client.c */
static void ksnk_on_error(void *opaque, rd_kafka_resp_err_t err,
			  const char *reason)
{
	kafka_sink_t *ks = opaque;
	SV_UNUSED(reason);
	if (err == RD_KAFKA_RESP_ERR__FATAL && !ks->err)
		ks->err = ksnk_fatal(ks);
}

/* ---- configuration ---- */

/* Throughput defaults, then (kafka/client.c) the profile's properties,
 * then what correctness depends on. Transactional settings come last so
 * nothing overrides them; message.timeout.ms must not exceed
 * transaction.timeout.ms (librdkafka refuses it) — librdkafka lowers its
 * default to fit, but a profile may set it explicitly. */
static sv_error_t *ksnk_client(kafka_sink_t *ks, const sv_sink_conf_t *conf)
{
	static const sv_kafka_prop_t tuning[] = {
		/* Wait up to 5 ms to fill batches: big produce requests at
		 * high rates, little latency at low ones. */
		{"linger.ms", "5"},
		{"batch.num.messages", "10000"},
		{"batch.size", "1048576"},
		/* Deep local queue so write() rarely meets QUEUE_FULL. */
		{"queue.buffering.max.messages", "1000000"},
		{"queue.buffering.max.kbytes", "1048576"},
		{"compression.type", "none"},
		/* Same key → same partition as the Java client. */
		{"partitioner", "murmur2_random"},
		{"socket.nagle.disable", "true"},
	};
	char timeout[32];
	snprintf(timeout, sizeof(timeout), "%d", ks->txn_timeout_ms);
	const sv_kafka_prop_t fixed[] = {
		{"acks", "all"},
		{"enable.idempotence", "true"},
		{"allow.auto.create.topics", "false"},
		{"transactional.id", ks->txn_id},
		{"transaction.timeout.ms", timeout},
	};
	if (ks->transactional) {
		for (size_t i = 0; i < conf->cluster->nprops; i++) {
			const sv_kv_t *kv = &conf->cluster->props[i];
			if (!strcmp(kv->key, "message.timeout.ms") &&
			    atoll(kv->value) > ks->txn_timeout_ms)
				return ksnk_error(
					ks, SV_ERR_CONFIG, 0, NULL,
					"property 'message.timeout.ms' of "
					"cluster '%s' exceeds the transaction "
					"timeout (%d ms)",
					ks->id.cluster_name,
					ks->txn_timeout_ms);
		}
	}
	char client_id[256], role[512];
	snprintf(client_id, sizeof(client_id), "streamvisor-%s",
		 ks->id.job_id ? ks->id.job_id : "sink");
	snprintf(role, sizeof(role), "producer of topic '%s' on cluster '%s'",
		 ks->id.topic, ks->id.cluster_name);
	sv_kafka_client_conf_t kc = {
		.type = RD_KAFKA_PRODUCER,
		.cluster = conf->cluster,
		.client_id = client_id,
		.role = role,
		.log = &ks->id.logctx,
		.tuning = tuning,
		.ntuning = SV_ARRAY_LEN(tuning),
		.fixed = fixed,
		.nfixed = ks->transactional ? SV_ARRAY_LEN(fixed)
					    : SV_ARRAY_LEN(fixed) - 2,
		.memory_budget = conf->memory_budget,
		.opaque = ks,
		.on_error = ksnk_on_error,
		.on_delivery = ksnk_on_delivery,
	};
	sv_error_t *err = sv_kafka_client_new(&kc, &ks->rk);
	return err && ks->id.job_id
		? sv_error_set_job(err, ks->id.job_id, ks->id.attempt)
		: err;
}

/* The topic must exist: producing to a missing topic would only fail
 * message by message after message.timeout.ms. */
static sv_error_t *ksnk_check_topic(kafka_sink_t *ks)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e;
	sv_error_t *err = NULL;

	e = rd_kafka_metadata(ks->rk, 0, ks->rkt, &md, KSNK_META_TIMEOUT_MS);
	if (e)
		return ksnk_error(ks, SV_ERR_BINDING, e, NULL,
				  "cannot read metadata of topic '%s' from "
				  "cluster '%s'",
				  ks->id.topic, ks->id.cluster_name);
	e = md->topic_cnt == 1 ? md->topics[0].err
			       : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
	if (is_topic_missing(e))
		err = ksnk_topic_missing(ks, e);
	else if (e && e != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
		err = ksnk_error(ks, SV_ERR_BINDING, e, NULL,
				 "topic '%s' on cluster '%s' is not usable",
				 ks->id.topic, ks->id.cluster_name);
	rd_kafka_metadata_destroy(md);
	return err;
}

/* init_transactions: fences every older producer with our transactional
 * id and settles (aborts) its open transaction. Retriable errors (the
 * coordinator is loading or moving, a previous transaction is still
 * completing) are retried until the deadline: the call is resumable.
 *
 * The first call is short (docs/performance.md "Exactly-once recovery"):
 * when the attempt before was killed inside a transaction, the first
 * InitProducerId makes the coordinator abort it and answers
 * CONCURRENT_TRANSACTIONS; librdkafka 2.0 then asks again only after a
 * fixed 500 ms (rdkafka_idempotence.c), while the abort takes a few
 * milliseconds. A call that returns (its timeout, with that error) and is
 * made again asks at once. So the calls wait 20 ms, then twice as long
 * each time, up to KSNK_TXN_CALL_TIMEOUT_MS. */
static sv_error_t *ksnk_init_transactions(kafka_sink_t *ks)
{
	int64_t t0 = sv_mono_ms();
	int64_t deadline = t0 + KSNK_TXN_RETRY_DEADLINE_MS;
	int call_ms = KSNK_TXN_FIRST_CALL_MS;
	rd_kafka_error_t *e;

	for (;; call_ms = call_ms * 2 < KSNK_TXN_CALL_TIMEOUT_MS
		     ? call_ms * 2
		     : KSNK_TXN_CALL_TIMEOUT_MS) {
		e = rd_kafka_init_transactions(ks->rk, call_ms);
		if (!e) {
			sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
			       "transactional id '%s' initialised in %lld ms",
			       ks->txn_id, (long long)(sv_mono_ms() - t0));
			return NULL;
		}
		if (rd_kafka_error_is_retriable(e) &&
		    !rd_kafka_error_is_fatal(e) && sv_mono_ms() < deadline) {
			char text[512];
			sv_kafka_client_scrub(ks->rk, rd_kafka_error_string(e),
					      text, sizeof(text));
			/* a short call's timeout or the abort of a killed
			 * attempt's transaction is expected: info, not a
			 * warning */
			bool expected = call_ms < KSNK_TXN_CALL_TIMEOUT_MS &&
				(rd_kafka_error_code(e) ==
					 RD_KAFKA_RESP_ERR__TIMED_OUT ||
				 rd_kafka_error_code(e) ==
					 RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS);
			sv_log(&ks->id.logctx,
			       expected ? SV_LOG_INFO : SV_LOG_WARN, "kafka",
			       "init_transactions of transactional id '%s' on "
			       "cluster '%s' (%d ms call): %s; retrying",
			       ks->txn_id, ks->id.cluster_name, call_ms, text);
			rd_kafka_error_destroy(e);
			continue;
		}
		return ksnk_txn_error(ks, e, "init_transactions");
	}
}

/* ---- driver ---- */

static void ksnk_close(sv_sink_t *snk);

static sv_error_t *ksnk_open(const sv_sink_conf_t *conf, sv_sink_t **out)
{
	kafka_sink_t *ks;
	sv_error_t *err;

	*out = NULL;
	ks = sv_calloc(1, sizeof(*ks));
	ks->base.ops = &sv_sink_kafka_ops;
	sv_kafka_ident_init(&ks->id, conf->job_id, conf->attempt, conf->cluster,
			    conf->topic);
	ks->schema = conf->schema;
	ks->key_column = conf->key_column;
	ks->raw = conf->raw;
	ks->row_format = conf->format == SV_FMT_ROW;
	ks->transactional = conf->transactional;
	if (ks->transactional) {
		ks->base.ops = &sv_sink_kafka_txn_ops;
		ks->txn_id = sv_strdup(
			conf->transactional_id ? conf->transactional_id : "");
		ks->group_id = conf->group_id ? sv_strdup(conf->group_id)
					      : NULL;
		ks->txn_timeout_ms = conf->transaction_timeout_ms > 0
			? conf->transaction_timeout_ms
			: KSNK_TXN_TIMEOUT_DEFAULT_MS;
	}
	sv_buf_init(&ks->buf);

	if (!conf->cluster || !conf->cluster->bootstrap ||
	    !*conf->cluster->bootstrap) {
		err = ksnk_error(ks, SV_ERR_BINDING, 0, NULL,
				 "kafka sink needs a cluster with bootstrap "
				 "servers (cluster '%s')",
				 ks->id.cluster_name);
		goto fail;
	}
	if (!conf->topic || !*conf->topic) {
		err = sv_error_set_field(ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
						    "kafka sink needs a topic"),
					 "sink.topic");
		goto fail;
	}
	if (ks->transactional && !*ks->txn_id) {
		err = ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
				 "transactional kafka sink of topic '%s' needs "
				 "a transactional id",
				 ks->id.topic);
		goto fail;
	}
	if (!ks->raw && !ks->schema) {
		err = ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
				 "kafka sink of topic '%s' needs a schema",
				 ks->id.topic);
		goto fail;
	}
	if (!ks->raw && conf->format != SV_FMT_JSON &&
	    conf->format != SV_FMT_ROW) {
		err = sv_error_set_field(
			ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
				   "kafka sink cannot write format '%s' "
				   "(json only)",
				   sv_format_name(conf->format)),
			"sink.format");
		goto fail;
	}
	if (ks->key_column >= 0 &&
	    (!ks->schema || (size_t)ks->key_column >= ks->schema->nfields)) {
		err = sv_error_set_field(
			ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
				   "kafka sink key column %d is not in the "
				   "schema",
				   ks->key_column),
			"sink.key");
		goto fail;
	}

	if ((err = ksnk_client(ks, conf)))
		goto fail;
	ks->rkt = rd_kafka_topic_new(ks->rk, ks->id.topic, NULL);
	if (!ks->rkt) {
		err = ksnk_error(ks, SV_ERR_BINDING, rd_kafka_last_error(),
				 NULL, "invalid topic name '%s'", ks->id.topic);
		goto fail;
	}
	if (conf->cluster->dev_embedded)
		sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
		       "cluster '%s' is the embedded development cluster: "
		       "no transactional isolation there",
		       ks->id.cluster_name);
	if ((err = ksnk_check_topic(ks)))
		goto fail;
	if (ks->transactional && (err = ksnk_init_transactions(ks)))
		goto fail;
	sv_log(&ks->id.logctx, SV_LOG_INFO, "kafka",
	       "writing topic '%s' on cluster '%s'%s%s%s", ks->id.topic,
	       ks->id.cluster_name, ks->raw ? " (dead letters)" : "",
	       ks->transactional ? ", transactional id " : "",
	       ks->transactional ? ks->txn_id : "");
	*out = &ks->base;
	return NULL;
fail:
	ksnk_close(&ks->base);
	return err;
}

/* The key column's value as text (core/partition.h: the same rendering
 * the partitioned_by check hashes). NULL when the row has no key (no key
 * column, or a null value). */
static const char *ksnk_key(const kafka_sink_t *ks, const sv_value_t *row,
			    char *tmp, size_t tmplen, size_t *len)
{
	*len = 0;
	if (ks->key_column < 0)
		return NULL;
	return sv_key_text(&row[ks->key_column], tmp, tmplen, len);
}

/* Produce one dead letter (write_raw: no key, the reason in a header),
 * serving delivery reports while the local queue is full. Returns NULL, or
 * an error (also kept as the sticky error). */
static sv_error_t *ksnk_produce_dlq(kafka_sink_t *ks, const char *val,
				    size_t len, const char *reason)
{
	rd_kafka_resp_err_t e;

	for (;;) {
		e = rd_kafka_producev(
			ks->rk, RD_KAFKA_V_RKT(ks->rkt),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_VALUE((void *)val, len),
			RD_KAFKA_V_HEADER(KSNK_DLQ_HEADER, reason,
					  (ssize_t)strlen(reason)),
			RD_KAFKA_V_END);
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		/* Let the brokers drain the queue; delivery reports (and a
		 * failure that would never let it drain) arrive here. */
		rd_kafka_poll(ks->rk, 10);
		if (ks->err)
			return sv_error_copy(ks->err);
	}
	if (e) {
		if (!ks->err)
			ks->err = ksnk_delivery_error(ks, e);
		return sv_error_copy(ks->err);
	}
	ks->produced++;
	ks->produced_bytes += len;
	return NULL;
}

/* The producer's queue (rd_kafka_outq_len: messages not yet acknowledged,
 * and requests) at the average message size plus librdkafka's per-message
 * struct. */
static uint64_t ksnk_memory_bytes(sv_sink_t *snk)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	int q = ks->rk ? rd_kafka_outq_len(ks->rk) : 0;
	if (q <= 0)
		return 0;
	uint64_t avg = ks->produced ? ks->produced_bytes / ks->produced : 0;
	return (uint64_t)q * (avg + SV_KAFKA_MSG_OVERHEAD);
}

/* Transactional: records may be produced only inside an open
 * transaction. NULL when not transactional. */
static sv_error_t *ksnk_txn_check_open(kafka_sink_t *ks, const char *what)
{
	if (!ks->transactional || ks->txn == KTXN_OPEN)
		return NULL;
	return ksnk_error(ks, SV_ERR_RUNTIME, 0, NULL,
			  "%s to topic '%s' outside an open transaction "
			  "(transactional id '%s'%s)",
			  what, ks->id.topic, ks->txn_id,
			  ks->txn == KTXN_IDLE ? "" : ", transaction failed");
}

/* A key's bytes are in ks->buf (write's encode step); the pointer is set
 * once the whole batch is encoded (the buffer may move until then). */
#define KSNK_KEY_PENDING ((void *)&ksnk_key_pending_tag)
static const char ksnk_key_pending_tag = 'k';

/* Encode rows first.. of b into ks->buf and ks->msgs[0..): each row's key
 * text (when it has one), then its value; stops after the row that takes
 * the buffer to KSNK_BATCH_BYTES (so a batch of large rows does not hold
 * all of them at once beside librdkafka's copies). Returns the row after
 * the last one encoded. */
static size_t ksnk_encode_batch(kafka_sink_t *ks, const sv_batch_t *b,
				size_t first)
{
	char keytmp[64];
	size_t r, n = 0;

	if (ks->msgs_cap < b->nrows - first) {
		ks->msgs_cap = b->nrows - first;
		ks->msgs = sv_realloc(ks->msgs,
				      ks->msgs_cap * sizeof(*ks->msgs));
	}
	sv_buf_reset(&ks->buf);
	for (r = first; r < b->nrows && ks->buf.len < KSNK_BATCH_BYTES; r++) {
		const sv_value_t *row = sv_batch_row(b, r);
		rd_kafka_message_t *m = &ks->msgs[n++];
		size_t keylen;
		const char *key = ksnk_key(ks, row, keytmp, sizeof(keytmp),
					   &keylen);
		memset(m, 0, sizeof(*m));
		/* offset: where the row's bytes start in ks->buf */
		m->offset = (int64_t)ks->buf.len;
		if (key) {
			sv_buf_append(&ks->buf, key, keylen);
			m->key = KSNK_KEY_PENDING; /* non-NULL: has a key */
			m->key_len = keylen;
		}
		size_t start = ks->buf.len;
		if (ks->row_format)
			sv_rowcodec_encode(ks->schema, row, &ks->buf);
		else
			sv_json_encode_row(ks->schema, row, &ks->buf);
		m->len = ks->buf.len - start;
	}
	for (size_t i = 0; i < n; i++) {
		rd_kafka_message_t *m = &ks->msgs[i];
		char *at = ks->buf.data + m->offset;
		if (m->key)
			m->key = at;
		m->payload = at + m->key_len;
	}
	return r;
}

/* Produce ks->msgs[0..n) in order with rd_kafka_produce_batch. librdkafka
 * refuses a message with QUEUE_FULL and then every later one of the call,
 * so what it accepted before is a prefix of the rest: serve delivery
 * reports (the queue drains only as they are served) and hand in the rest
 * again. Any other refusal becomes the sticky error. Returns NULL, or the
 * error (a copy of the sticky one). */
static sv_error_t *ksnk_produce_batch(kafka_sink_t *ks, size_t n)
{
	size_t next = 0;

	while (next < n) {
		size_t i;
		rd_kafka_produce_batch(ks->rkt, RD_KAFKA_PARTITION_UA,
				       RD_KAFKA_MSG_F_COPY, ks->msgs + next,
				       (int)(n - next));
		for (i = next; i < n; i++) {
			const rd_kafka_message_t *m = &ks->msgs[i];
			if (m->err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
				break; /* this one and the rest: not queued */
			if (m->err) {
				if (!ks->err)
					ks->err = ksnk_delivery_error(ks,
								      m->err);
				continue;
			}
			ks->produced++;
			ks->produced_bytes += m->len + m->key_len;
			ks->base.bytes_out += m->len;
		}
		if (ks->err)
			return sv_error_copy(ks->err);
		next = i;
		if (next < n) {
			/* Let the brokers drain the queue; delivery reports
			 * (and a failure that would never let it drain)
			 * arrive here. */
			rd_kafka_poll(ks->rk, 10);
			if (ks->err)
				return sv_error_copy(ks->err);
		}
	}
	return NULL;
}

static sv_error_t *ksnk_write(sv_sink_t *snk, const sv_batch_t *b)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	sv_error_t *err;

	if (ks->err)
		return sv_error_copy(ks->err);
	if (b->nrows > 0 && (err = ksnk_txn_check_open(ks, "write")))
		return err;
	if (ks->raw)
		return ksnk_error(ks, SV_ERR_RUNTIME, 0, NULL,
				  "dead-letter sink of topic '%s' takes raw "
				  "payloads only",
				  ks->id.topic);
	for (size_t r = 0; r < b->nrows;) {
		size_t end = ksnk_encode_batch(ks, b, r);
		if ((err = ksnk_produce_batch(ks, end - r)))
			return err;
		r = end;
	}
	/* Serve delivery reports of earlier batches without waiting. */
	rd_kafka_poll(ks->rk, 0);
	return ks->err ? sv_error_copy(ks->err) : NULL;
}

static sv_error_t *ksnk_write_raw(sv_sink_t *snk, const char *payload,
				  size_t len, const char *reason)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	sv_error_t *err;

	if (ks->err)
		return sv_error_copy(ks->err);
	if ((err = ksnk_txn_check_open(ks, "write")))
		return err;
	if ((err = ksnk_produce_dlq(ks, payload ? payload : "", len,
				    reason ? reason : "")))
		return err;
	rd_kafka_poll(ks->rk, 0);
	return ks->err ? sv_error_copy(ks->err) : NULL;
}

/* One payload into one partition, no key (a repartition topic's
 * watermark records, docs/repartition.md). */
static sv_error_t *ksnk_write_to(sv_sink_t *snk, int32_t partition,
				 const char *payload, size_t len)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	sv_error_t *err;

	if (ks->err)
		return sv_error_copy(ks->err);
	if ((err = ksnk_txn_check_open(ks, "write")))
		return err;
	for (;;) {
		rd_kafka_resp_err_t e = rd_kafka_producev(
			ks->rk, RD_KAFKA_V_RKT(ks->rkt),
			RD_KAFKA_V_PARTITION(partition),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_VALUE((void *)payload, len), RD_KAFKA_V_END);
		if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
			rd_kafka_poll(ks->rk, 10);
			if (ks->err)
				return sv_error_copy(ks->err);
			continue;
		}
		if (e && !ks->err)
			ks->err = ksnk_delivery_error(ks, e);
		if (!e)
			ks->base.bytes_out += len;
		break;
	}
	return ks->err ? sv_error_copy(ks->err) : NULL;
}

static sv_error_t *ksnk_flush(sv_sink_t *snk, int timeout_ms)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	rd_kafka_resp_err_t e;

	if (ks->err)
		return sv_error_copy(ks->err);
	e = rd_kafka_flush(ks->rk, timeout_ms);
	if (ks->err)
		return sv_error_copy(ks->err);
	if (e == RD_KAFKA_RESP_ERR__TIMED_OUT)
		return ksnk_error(ks, SV_ERR_SINK_COMMIT, e, NULL,
				  "flush of topic '%s' on cluster '%s' timed "
				  "out after %d ms with %d records outstanding",
				  ks->id.topic, ks->id.cluster_name, timeout_ms,
				  rd_kafka_outq_len(ks->rk));
	if (e)
		return ksnk_delivery_error(ks, e);
	return NULL;
}

/* ---- transactions (sink.h, docs/exactly-once.md) ---- */

/* The transaction must be open (and not failed) for `what`. */
static sv_error_t *ksnk_txn_expect_open(kafka_sink_t *ks, const char *what)
{
	if (ks->txn == KTXN_OPEN)
		return NULL;
	return ksnk_error(ks, SV_ERR_RUNTIME, 0, NULL,
			  "%s of transactional id '%s': %s", what, ks->txn_id,
			  ks->txn == KTXN_IDLE ? "no transaction is open"
				  : ks->txn == KTXN_ABORTABLE
				  ? "the transaction failed and must be aborted"
				  : "the producer failed; a new one must be "
				    "opened");
}

static sv_error_t *ksnk_txn_begin(sv_sink_t *snk)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	rd_kafka_error_t *e;

	if (ks->err)
		return sv_error_copy(ks->err);
	if (ks->txn != KTXN_IDLE)
		return ksnk_error(ks, SV_ERR_RUNTIME, 0, NULL,
				  "begin_transaction of transactional id '%s': "
				  "%s",
				  ks->txn_id,
				  ks->txn == KTXN_OPEN
					  ? "a transaction is already open"
					  : "the previous transaction failed");
	if ((e = rd_kafka_begin_transaction(ks->rk)))
		return ksnk_txn_error(ks, e, "begin_transaction");
	ks->txn = KTXN_OPEN;
	ks->txn_acked = 0;
	return NULL;
}

/* Every record of the transaction acknowledged by the brokers (durable,
 * invisible to read_committed readers until the commit). Kafka needs
 * nothing in *state: the broker keeps the transaction. */
static sv_error_t *ksnk_txn_prepare(sv_sink_t *snk, int64_t checkpoint_id,
				    sv_buf_t *state)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	sv_error_t *err;

	SV_UNUSED(checkpoint_id);
	SV_UNUSED(state);
	if ((err = ksnk_txn_expect_open(ks, "prepare")))
		return err;
	if ((err = ksnk_flush(snk, ks->txn_timeout_ms))) {
		/* A record that failed for good leaves librdkafka's
		 * transaction in the abortable state. */
		if (ks->err)
			ks->txn = err->fatal ? KTXN_BROKEN : KTXN_ABORTABLE;
		return err;
	}
	return NULL;
}

static sv_error_t *ksnk_txn_offsets_topics(sv_sink_t *snk,
					   int64_t checkpoint_id,
					   const sv_topic_offsets_t *t,
					   size_t ntopics)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_consumer_group_metadata_t *cgmd;
	int64_t deadline = sv_mono_ms() + KSNK_TXN_RETRY_DEADLINE_MS;
	char meta[160];
	int metalen;
	rd_kafka_error_t *e;
	sv_error_t *err = NULL;

	if (ks->err)
		return sv_error_copy(ks->err);
	if ((err = ksnk_txn_expect_open(ks, "send_offsets_to_transaction")))
		return err;
	for (size_t k = 0; k < ntopics; k++)
		if (!ks->group_id || !*ks->group_id || !t[k].topic ||
		    !*t[k].topic)
			return ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
					  "transactional id '%s' cannot send "
					  "offsets: no consumer group or topic",
					  ks->txn_id);
	metalen = ks->ck_tag
		? snprintf(meta, sizeof(meta), KSNK_CK_META_PREFIX "%s",
			   ks->ck_tag)
		: snprintf(meta, sizeof(meta), KSNK_CK_META_PREFIX "%lld",
			   (long long)checkpoint_id);
	if (metalen >= (int)sizeof(meta))
		metalen = (int)sizeof(meta) - 1;
	size_t n = 0;
	for (size_t k = 0; k < ntopics; k++)
		n += t[k].n;
	list = rd_kafka_topic_partition_list_new(n ? (int)n : 1);
	for (size_t k = 0; k < ntopics; k++)
		for (size_t i = 0; i < t[k].n; i++) {
			rd_kafka_topic_partition_t *tp;
			if (t[k].next_offsets[i] < 0)
				continue; /* no position: nothing to commit */
			tp = rd_kafka_topic_partition_list_add(
				list, t[k].topic, t[k].partitions[i]);
			tp->offset = t[k].next_offsets[i];
			tp->metadata = sv_strndup(meta, (size_t)metalen);
			tp->metadata_size = (size_t)metalen;
		}
	if (list->cnt == 0) {
		rd_kafka_topic_partition_list_destroy(list);
		return NULL;
	}
	cgmd = NULL;
	if (ks->cgmd.len) {
		rd_kafka_error_t *re = rd_kafka_consumer_group_metadata_read(
			&cgmd, ks->cgmd.data, ks->cgmd.len);
		if (re) {
			err = ksnk_error(ks, SV_ERR_RUNTIME,
					 rd_kafka_error_code(re),
					 rd_kafka_error_string(re),
					 "transactional id '%s': cannot read "
					 "the consumer's group metadata",
					 ks->txn_id);
			rd_kafka_error_destroy(re);
			rd_kafka_topic_partition_list_destroy(list);
			return err;
		}
	} else {
		cgmd = rd_kafka_consumer_group_metadata_new(ks->group_id);
	}
	for (;;) {
		/* Retried with identical offsets and group metadata, as
		 * librdkafka asks. Not a commit: nothing is visible yet. */
		e = rd_kafka_send_offsets_to_transaction(
			ks->rk, list, cgmd, KSNK_TXN_CALL_TIMEOUT_MS);
		if (!e)
			break;
		if (rd_kafka_error_is_retriable(e) &&
		    !rd_kafka_error_is_fatal(e) &&
		    !rd_kafka_error_txn_requires_abort(e) &&
		    sv_mono_ms() < deadline) {
			sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
			       "send_offsets_to_transaction of transactional "
			       "id '%s' (group '%s'): %s; retrying",
			       ks->txn_id, ks->group_id,
			       rd_kafka_error_string(e));
			rd_kafka_error_destroy(e);
			continue;
		}
		err = ksnk_txn_error(ks, e, "send_offsets_to_transaction");
		break;
	}
	rd_kafka_consumer_group_metadata_destroy(cgmd);
	rd_kafka_topic_partition_list_destroy(list);
	return err;
}

static sv_error_t *ksnk_txn_offsets(sv_sink_t *snk, int64_t checkpoint_id,
				    const char *topic,
				    const int32_t *partitions,
				    const int64_t *next_offsets, size_t n)
{
	sv_topic_offsets_t t = {topic, partitions, next_offsets, n};
	return ksnk_txn_offsets_topics(snk, checkpoint_id, &t, 1);
}

/* The commit point. Never retried here: an error leaves the outcome
 * unknown (unless librdkafka says the transaction must be aborted, which
 * means it did not commit); the worker fails the attempt and recovery
 * reads the outcome from the group's committed offsets. */
static sv_error_t *ksnk_txn_commit(sv_sink_t *snk)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	rd_kafka_error_t *e;
	sv_error_t *err;

	if ((err = ksnk_txn_expect_open(ks, "commit_transaction")))
		return err;
	if (ks->err) {
		ks->txn = ks->err->fatal ? KTXN_BROKEN : KTXN_ABORTABLE;
		return sv_error_copy(ks->err);
	}
	/* -1: the remaining transaction time, as librdkafka recommends. */
	if ((e = rd_kafka_commit_transaction(ks->rk, -1))) {
		bool unknown = !rd_kafka_error_is_fatal(e) &&
			!rd_kafka_error_txn_requires_abort(e);
		err = ksnk_txn_error(ks, e, "commit_transaction");
		if (unknown) {
			/* Retriable for librdkafka, but we do not retry: the
			 * producer is done, the attempt fails, recovery
			 * decides. */
			ks->txn = KTXN_BROKEN;
			sv_error_prefix(err, "outcome unknown");
		}
		return err;
	}
	ks->base.records_out += ks->txn_acked;
	ks->txn_acked = 0;
	ks->txn = KTXN_IDLE;
	return NULL;
}

static sv_error_t *ksnk_txn_abort(sv_sink_t *snk)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	rd_kafka_error_t *e;

	if (ks->txn == KTXN_IDLE)
		return NULL;
	if (ks->txn == KTXN_BROKEN) {
		/* A fenced or failed producer cannot abort; the broker aborts
		 * at transaction.timeout.ms, or the next init_transactions
		 * with our id does. */
		sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
		       "transaction of transactional id '%s' not aborted: "
		       "the producer failed; the next producer with this id "
		       "settles it",
		       ks->txn_id);
		return NULL;
	}
	if ((e = rd_kafka_abort_transaction(ks->rk, -1)))
		return ksnk_txn_error(ks, e, "abort_transaction");
	ks->txn = KTXN_IDLE;
	ks->txn_acked = 0;
	/* A delivery failure belonged to the aborted transaction; a fatal
	 * error stays. */
	if (ks->err && !ks->err->fatal) {
		sv_error_destroy(ks->err);
		ks->err = NULL;
	}
	return NULL;
}

static void ksnk_close(sv_sink_t *snk)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;

	if (!ks)
		return;
	if (ks->rk && ks->transactional &&
	    (ks->txn == KTXN_OPEN || ks->txn == KTXN_ABORTABLE)) {
		/* Abort now rather than leave the transaction to time out:
		 * until it ends, read_committed readers of the output stop
		 * at its first record. */
		rd_kafka_error_t *e = rd_kafka_abort_transaction(
			ks->rk, KSNK_CLOSE_ABORT_TIMEOUT_MS);
		if (e) {
			char text[512];
			sv_kafka_client_scrub(ks->rk, rd_kafka_error_string(e),
					      text, sizeof(text));
			sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
			       "closing: abort of the open transaction of "
			       "transactional id '%s' failed: %s",
			       ks->txn_id, text);
			rd_kafka_error_destroy(e);
		}
	}
	if (ks->rk) {
		int left = rd_kafka_outq_len(ks->rk);
		/* (Transactional: an open transaction was aborted above, a
		 * failed one is settled by the next producer.) */
		if (left > 0 && !ks->err && !ks->transactional)
			sv_log(&ks->id.logctx, SV_LOG_WARN, "kafka",
			       "closing sink of topic '%s' with %d "
			       "unflushed records (dropped)",
			       ks->id.topic, left);
		/* Do not wait for unflushed records: offsets are committed
		 * only after a flush, so they will be read again. */
		rd_kafka_purge(ks->rk,
			       RD_KAFKA_PURGE_F_QUEUE |
				       RD_KAFKA_PURGE_F_INFLIGHT);
	}
	if (ks->rkt)
		rd_kafka_topic_destroy(ks->rkt);
	if (ks->rk)
		sv_kafka_client_destroy(ks->rk);
	sv_error_destroy(ks->err);
	sv_buf_release(&ks->buf);
	free(ks->msgs);
	sv_kafka_ident_release(&ks->id);
	free(ks->txn_id);
	free(ks->group_id);
	sv_buf_release(&ks->cgmd);
	free(ks->ck_tag);
	free(ks);
}

static sv_error_t *ksnk_txn_group(sv_sink_t *snk, const void *md, size_t len)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	sv_buf_reset(&ks->cgmd);
	sv_buf_append(&ks->cgmd, md, len);
	return NULL;
}

static sv_error_t *ksnk_txn_tag(sv_sink_t *snk, const char *tag)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	free(ks->ck_tag);
	ks->ck_tag = tag && *tag ? sv_strdup(tag) : NULL;
	return NULL;
}

/* One keyed record (or a tombstone) into partition of topic, in the open
 * transaction: a task snapshot's manifest or chunk on the state topic. */
static sv_error_t *ksnk_write_keyed(sv_sink_t *snk, const char *topic,
				    int32_t partition, const char *key,
				    size_t klen, const char *value, size_t vlen)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	sv_error_t *err;

	if (ks->err)
		return sv_error_copy(ks->err);
	if ((err = ksnk_txn_check_open(ks, "write")))
		return err;
	for (;;) {
		rd_kafka_resp_err_t e = rd_kafka_producev(
			ks->rk, RD_KAFKA_V_TOPIC(topic),
			RD_KAFKA_V_PARTITION(partition),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_KEY(key, klen),
			RD_KAFKA_V_VALUE((void *)value, value ? vlen : 0),
			RD_KAFKA_V_OPAQUE(KSNK_STATE_RECORD), RD_KAFKA_V_END);
		if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
			rd_kafka_poll(ks->rk, 10);
			if (ks->err)
				return sv_error_copy(ks->err);
			continue;
		}
		if (e && !ks->err)
			ks->err = ksnk_delivery_error(ks, e);
		break;
	}
	return ks->err ? sv_error_copy(ks->err) : NULL;
}

static const sv_driver_t kafka_driver = {
	.kind = "kafka",
	.caps = SV_DRIVER_CLUSTER | SV_DRIVER_TRANSACTIONAL |
		SV_DRIVER_TXN_OFFSETS | SV_DRIVER_RAW,
	.fields =
		(const sv_driver_field_t[]){
			{.name = "cluster", .def = "default"},
			{.name = "topic", .flags = SV_DRIVER_FIELD_REQUIRED},
			{.name = "transaction_timeout_ms"},
			{NULL},
		},
};

const sv_sink_ops_t sv_sink_kafka_ops = {
	.driver = &kafka_driver,
	.open = ksnk_open,
	.write = ksnk_write,
	.write_raw = ksnk_write_raw,
	.write_to = ksnk_write_to,
	.flush = ksnk_flush,
	.close = ksnk_close,
	.check_txn = sv_kafka_check_txn_timeout,
	.memory_bytes = ksnk_memory_bytes,
};

/* A sink opened with conf->transactional gets this table (open() switches
 * to it), so sv_sink_transactional() tells the two apart. */
const sv_sink_ops_t sv_sink_kafka_txn_ops = {
	.driver = &kafka_driver,
	.open = ksnk_open,
	.write = ksnk_write,
	.write_raw = ksnk_write_raw,
	.write_to = ksnk_write_to,
	.flush = ksnk_flush,
	.close = ksnk_close,
	.txn_begin = ksnk_txn_begin,
	.txn_prepare = ksnk_txn_prepare,
	.txn_offsets = ksnk_txn_offsets,
	.txn_offsets_topics = ksnk_txn_offsets_topics,
	.txn_commit = ksnk_txn_commit,
	.txn_abort = ksnk_txn_abort,
	.txn_group = ksnk_txn_group,
	.txn_tag = ksnk_txn_tag,
	.write_keyed = ksnk_write_keyed,
	.memory_bytes = ksnk_memory_bytes,
};
