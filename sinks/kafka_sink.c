/* kafka_sink.c — the Kafka sink driver (sink.h, kind "kafka").
 *
 * One idempotent librdkafka producer per sink (acks=all,
 * enable.idempotence=true: no duplicates or reordering from internal
 * retries). write() encodes each row as JSON into one reused buffer and
 * hands it to rd_kafka_producev with RD_KAFKA_MSG_F_COPY, so the only
 * per-record copy is librdkafka's own; the key is the key column rendered
 * as text. When librdkafka's queue is full we serve delivery reports and
 * retry. Delivery reports run on the calling thread (inside write, flush):
 * acknowledged records are counted into records_out, and the first failure
 * is kept and returned by every later write/flush — the sink is broken from
 * then on and the job goes through recovery.
 *
 * write_raw() produces a dead letter as it came, with the reason in the
 * header "streamvisor.error".
 *
 * Exactly-once will wrap the same producer in transactions (begin at
 * checkpoint n, send offsets + commit at n+1); `transactional` marks where
 * that state lives. librdkafka's log lines go to sv_log with the job id;
 * client properties of the cluster profile are never logged. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "core/util.h"
#include "sinks/sink.h"

#define KSNK_META_TIMEOUT_MS 10000
#define KSNK_DLQ_HEADER "streamvisor.error"

typedef struct kafka_sink {
	sv_sink_t base;
	sv_logctx_t logctx;
	char *job_id;
	int attempt;
	char *cluster_name;
	char *topic;
	const sv_schema_t *schema; /* borrowed */
	int key_column;            /* -1: no key */
	bool raw;
	/* Exactly-once (later): a transactional.id per job and worker, a
	 * transaction open between checkpoints. Unused while false. */
	bool transactional;

	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;
	sv_buf_t buf;              /* encoded value, reused */
	sv_error_t *err;           /* first delivery failure (sticky) */
} kafka_sink_t;

extern const sv_sink_ops_t sv_sink_kafka_ops;

/* ---- logging and errors ---- */

static sv_loglevel_t syslog_to_sv(int level)
{
	if (level <= 3)
		return SV_LOG_ERROR;
	if (level == 4)
		return SV_LOG_WARN;
	if (level <= 6)
		return SV_LOG_INFO;
	return SV_LOG_DEBUG;
}

/* thread: librdkafka internal threads */
static void ksnk_log_cb(const rd_kafka_t *rk, int level, const char *fac,
			const char *buf)
{
	kafka_sink_t *ks = rd_kafka_opaque(rk);
	sv_log(ks ? &ks->logctx : NULL, syslog_to_sv(level), "kafka",
	       "rdkafka %s: %s", fac, buf);
}

static sv_error_t *ksnk_error(kafka_sink_t *ks, sv_errcat_t cat,
			      rd_kafka_resp_err_t code, const char *cause,
			      const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static sv_error_t *ksnk_error(kafka_sink_t *ks, sv_errcat_t cat,
			      rd_kafka_resp_err_t code, const char *cause,
			      const char *fmt, ...)
{
	va_list ap;
	sv_error_t *err;

	va_start(ap, fmt);
	err = sv_error_newv(cat, fmt, ap);
	va_end(ap);
	if (ks->job_id)
		sv_error_set_job(err, ks->job_id, ks->attempt);
	if (code || cause)
		sv_error_set_cause(err, code,
				   cause ? cause : rd_kafka_err2str(code));
	return err;
}

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
			   ks->topic, ks->cluster_name),
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
				     ks->topic, ks->cluster_name);
	err->fatal = true;
	return err;
}

/* An error for a failed produce or delivery. */
static sv_error_t *ksnk_delivery_error(kafka_sink_t *ks,
				       rd_kafka_resp_err_t e)
{
	if (is_topic_missing(e))
		return ksnk_topic_missing(ks, e);
	if (e == RD_KAFKA_RESP_ERR__FATAL)
		return ksnk_fatal(ks);
	return ksnk_error(ks, SV_ERR_SINK_COMMIT, e, NULL,
			  "delivery to topic '%s' on cluster '%s' failed",
			  ks->topic, ks->cluster_name);
}

/* thread: the thread calling write/flush (served by rd_kafka_poll) */
static void ksnk_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
		       void *opaque)
{
	kafka_sink_t *ks = opaque;
	SV_UNUSED(rk);
	if (!m->err) {
		ks->base.records_out++;
		return;
	}
	if (!ks->err) {
		ks->err = ksnk_delivery_error(ks, m->err);
		sv_log(&ks->logctx, SV_LOG_ERROR, "kafka",
		       "delivery to topic '%s' on cluster '%s' failed: %s",
		       ks->topic, ks->cluster_name, rd_kafka_err2str(m->err));
	}
}

/* thread: the thread calling write/flush (served by rd_kafka_poll) */
static void ksnk_error_cb(rd_kafka_t *rk, int err, const char *reason,
			  void *opaque)
{
	kafka_sink_t *ks = opaque;
	SV_UNUSED(rk);
	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		if (!ks->err)
			ks->err = ksnk_fatal(ks);
		sv_log(&ks->logctx, SV_LOG_ERROR, "kafka",
		       "producer of topic '%s' on cluster '%s': fatal: %s",
		       ks->topic, ks->cluster_name, reason);
		return;
	}
	sv_log(&ks->logctx, SV_LOG_WARN, "kafka",
	       "producer of topic '%s' on cluster '%s': %s: %s", ks->topic,
	       ks->cluster_name, rd_kafka_err2name(err), reason);
}

/* ---- configuration ---- */

static sv_error_t *ksnk_set(kafka_sink_t *ks, rd_kafka_conf_t *conf,
			    const char *key, const char *value)
{
	char errstr[512];
	if (rd_kafka_conf_set(conf, key, value, errstr, sizeof(errstr)) ==
	    RD_KAFKA_CONF_OK)
		return NULL;
	/* Name the key only: librdkafka's text may quote a secret value. */
	return ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
			  "invalid kafka client property '%s' for cluster '%s'",
			  key, ks->cluster_name);
}

static sv_error_t *ksnk_conf(kafka_sink_t *ks, const sv_sink_conf_t *conf,
			     rd_kafka_conf_t *kc)
{
	static const char *const tuning[][2] = {
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
	static const char *const fixed[][2] = {
		{"acks", "all"},
		{"enable.idempotence", "true"},
		{"allow.auto.create.topics", "false"},
	};
	char client_id[256];
	sv_error_t *err;

	for (size_t i = 0; i < SV_ARRAY_LEN(tuning); i++)
		if ((err = ksnk_set(ks, kc, tuning[i][0], tuning[i][1])))
			return err;
	snprintf(client_id, sizeof(client_id), "streamvisor-%s",
		 ks->job_id ? ks->job_id : "sink");
	if ((err = ksnk_set(ks, kc, "client.id", client_id)))
		return err;
	for (size_t i = 0; i < conf->cluster->nprops; i++)
		if ((err = ksnk_set(ks, kc, conf->cluster->props[i].key,
				    conf->cluster->props[i].value)))
			return err;
	if ((err = ksnk_set(ks, kc, "bootstrap.servers",
			    conf->cluster->bootstrap)))
		return err;
	for (size_t i = 0; i < SV_ARRAY_LEN(fixed); i++)
		if ((err = ksnk_set(ks, kc, fixed[i][0], fixed[i][1])))
			return err;
	rd_kafka_conf_set_opaque(kc, ks);
	rd_kafka_conf_set_log_cb(kc, ksnk_log_cb);
	rd_kafka_conf_set_error_cb(kc, ksnk_error_cb);
	rd_kafka_conf_set_dr_msg_cb(kc, ksnk_dr_cb);
	return NULL;
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
				  ks->topic, ks->cluster_name);
	e = md->topic_cnt == 1 ? md->topics[0].err
			       : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
	if (is_topic_missing(e))
		err = ksnk_topic_missing(ks, e);
	else if (e && e != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
		err = ksnk_error(ks, SV_ERR_BINDING, e, NULL,
				 "topic '%s' on cluster '%s' is not usable",
				 ks->topic, ks->cluster_name);
	rd_kafka_metadata_destroy(md);
	return err;
}

/* ---- driver ---- */

static void ksnk_close(sv_sink_t *snk);

static sv_error_t *ksnk_open(const sv_sink_conf_t *conf, sv_sink_t **out)
{
	kafka_sink_t *ks;
	rd_kafka_conf_t *kc;
	char errstr[512];
	sv_error_t *err;

	*out = NULL;
	ks = sv_calloc(1, sizeof(*ks));
	ks->base.ops = &sv_sink_kafka_ops;
	ks->job_id = conf->job_id ? sv_strdup(conf->job_id) : NULL;
	ks->attempt = conf->attempt;
	ks->logctx.job_id = ks->job_id;
	ks->logctx.attempt = conf->attempt;
	ks->cluster_name = sv_strdup(conf->cluster && conf->cluster->name
					     ? conf->cluster->name
					     : "(none)");
	ks->topic = sv_strdup(conf->topic ? conf->topic : "");
	ks->schema = conf->schema;
	ks->key_column = conf->key_column;
	ks->raw = conf->raw;
	sv_buf_init(&ks->buf);

	if (!conf->cluster || !conf->cluster->bootstrap ||
	    !*conf->cluster->bootstrap) {
		err = ksnk_error(ks, SV_ERR_BINDING, 0, NULL,
				 "kafka sink needs a cluster with bootstrap "
				 "servers (cluster '%s')",
				 ks->cluster_name);
		goto fail;
	}
	if (!conf->topic || !*conf->topic) {
		err = sv_error_set_field(
			ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
				   "kafka sink needs a topic"),
			"sink.topic");
		goto fail;
	}
	if (!ks->raw && !ks->schema) {
		err = ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
				 "kafka sink of topic '%s' needs a schema",
				 ks->topic);
		goto fail;
	}
	if (!ks->raw && conf->format != SV_FMT_JSON) {
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

	kc = rd_kafka_conf_new();
	if ((err = ksnk_conf(ks, conf, kc))) {
		rd_kafka_conf_destroy(kc);
		goto fail;
	}
	ks->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, sizeof(errstr));
	if (!ks->rk) {
		rd_kafka_conf_destroy(kc);
		err = ksnk_error(ks, SV_ERR_CONFIG, 0, NULL,
				 "cannot create kafka producer for cluster '%s'",
				 ks->cluster_name);
		goto fail;
	}
	ks->rkt = rd_kafka_topic_new(ks->rk, ks->topic, NULL);
	if (!ks->rkt) {
		err = ksnk_error(ks, SV_ERR_BINDING, rd_kafka_last_error(),
				 NULL, "invalid topic name '%s'", ks->topic);
		goto fail;
	}
	if (conf->cluster->dev_embedded)
		sv_log(&ks->logctx, SV_LOG_WARN, "kafka",
		       "cluster '%s' is the embedded development cluster: "
		       "no transactional isolation there",
		       ks->cluster_name);
	if ((err = ksnk_check_topic(ks)))
		goto fail;
	sv_log(&ks->logctx, SV_LOG_INFO, "kafka",
	       "writing topic '%s' on cluster '%s'%s", ks->topic,
	       ks->cluster_name, ks->raw ? " (dead letters)" : "");
	*out = &ks->base;
	return NULL;
fail:
	ksnk_close(&ks->base);
	return err;
}

/* Shortest %g form that reads back to the same double. */
static int fmt_double(char *out, size_t n, double d)
{
	int len = 0;
	for (int prec = 15; prec <= 17; prec++) {
		len = snprintf(out, n, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	return len;
}

/* The key column's value as text: string bytes, or the number. NULL when
 * the row has no key (no key column, or a null value). */
static const char *ksnk_key(const kafka_sink_t *ks, const sv_value_t *row,
			    char *tmp, size_t tmplen, size_t *len)
{
	const sv_value_t *v;
	int n;

	*len = 0;
	if (ks->key_column < 0)
		return NULL;
	v = &row[ks->key_column];
	switch ((sv_type_t)v->type) {
	case SV_T_STRING:
		*len = v->len;
		return v->v.s;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		n = snprintf(tmp, tmplen, "%lld", (long long)v->v.i);
		break;
	case SV_T_FLOAT64:
		n = fmt_double(tmp, tmplen, v->v.f);
		break;
	case SV_T_BOOL:
		n = snprintf(tmp, tmplen, "%s", v->v.b ? "true" : "false");
		break;
	default:
		return NULL;
	}
	*len = n > 0 ? (size_t)n : 0;
	return tmp;
}

/* Produce one message, serving delivery reports while the local queue is
 * full. Returns NULL, or an error (also kept as the sticky error). */
static sv_error_t *ksnk_produce(kafka_sink_t *ks, const char *val, size_t len,
				const char *key, size_t keylen,
				const char *reason)
{
	rd_kafka_resp_err_t e;

	for (;;) {
		if (reason)
			e = rd_kafka_producev(
				ks->rk, RD_KAFKA_V_RKT(ks->rkt),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_VALUE((void *)val, len),
				RD_KAFKA_V_KEY(key, keylen),
				RD_KAFKA_V_HEADER(KSNK_DLQ_HEADER, reason,
						  (ssize_t)strlen(reason)),
				RD_KAFKA_V_END);
		else
			e = rd_kafka_producev(
				ks->rk, RD_KAFKA_V_RKT(ks->rkt),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_VALUE((void *)val, len),
				RD_KAFKA_V_KEY(key, keylen), RD_KAFKA_V_END);
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
	return NULL;
}

static sv_error_t *ksnk_write(sv_sink_t *snk, const sv_batch_t *b)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;
	char keytmp[64];
	sv_error_t *err;

	if (ks->err)
		return sv_error_copy(ks->err);
	if (ks->raw)
		return ksnk_error(ks, SV_ERR_RUNTIME, 0, NULL,
				  "dead-letter sink of topic '%s' takes raw "
				  "payloads only",
				  ks->topic);
	for (size_t r = 0; r < b->nrows; r++) {
		const sv_value_t *row = sv_batch_row(b, r);
		size_t keylen;
		const char *key = ksnk_key(ks, row, keytmp, sizeof(keytmp),
					   &keylen);

		sv_buf_reset(&ks->buf);
		sv_json_encode_row(ks->schema, row, &ks->buf);
		if ((err = ksnk_produce(ks, ks->buf.data, ks->buf.len, key,
					keylen, NULL)))
			return err;
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
	if ((err = ksnk_produce(ks, payload ? payload : "", len, NULL, 0,
				reason ? reason : "")))
		return err;
	rd_kafka_poll(ks->rk, 0);
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
				  ks->topic, ks->cluster_name, timeout_ms,
				  rd_kafka_outq_len(ks->rk));
	if (e)
		return ksnk_delivery_error(ks, e);
	return NULL;
}

static void ksnk_close(sv_sink_t *snk)
{
	kafka_sink_t *ks = (kafka_sink_t *)snk;

	if (!ks)
		return;
	if (ks->rk) {
		int left = rd_kafka_outq_len(ks->rk);
		if (left > 0 && !ks->err)
			sv_log(&ks->logctx, SV_LOG_WARN, "kafka",
			       "closing sink of topic '%s' with %d "
			       "unflushed records (dropped)",
			       ks->topic, left);
		/* Do not wait for unflushed records: offsets are committed
		 * only after a flush, so they will be read again. */
		rd_kafka_purge(ks->rk,
			       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
	}
	if (ks->rkt)
		rd_kafka_topic_destroy(ks->rkt);
	if (ks->rk)
		rd_kafka_destroy(ks->rk);
	sv_error_destroy(ks->err);
	sv_buf_release(&ks->buf);
	free(ks->topic);
	free(ks->cluster_name);
	free(ks->job_id);
	free(ks);
}

const sv_sink_ops_t sv_sink_kafka_ops = {
	.name = "kafka",
	.open = ksnk_open,
	.write = ksnk_write,
	.write_raw = ksnk_write_raw,
	.flush = ksnk_flush,
	.close = ksnk_close,
};
