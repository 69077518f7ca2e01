/* client.h — the one way streamvisor makes a librdkafka client from a
 * cluster profile (core/cluster.h). Every Kafka-facing module (the Kafka
 * source and sink, the submit-time admin checks, distributed mode) builds
 * its consumer, producer or admin client here, so the rules live once:
 *
 *   1. this module's defaults (reconnect backoff), the caller's tuning
 *      defaults, then the client.id,
 *   2. the profile's properties (which may override the tuning and may hold
 *      credentials), then its bootstrap servers,
 *   3. the caller's fixed settings, which nothing may override (what
 *      correctness depends on: isolation level, idempotence, offsets),
 *   4. librdkafka's log lines and error events routed to sv_log with the
 *      job's context, with every profile property value scrubbed out.
 *
 * Errors never carry librdkafka's own configuration text: it may quote a
 * property value, which can be a secret. They name the key and the
 * profile only.
 *
 * The client's opaque (rd_kafka_opaque) belongs to this module; the caller
 * gets its own back through the callbacks and sv_kafka_client_opaque(). */
#ifndef SV_KAFKA_CLIENT_H
#define SV_KAFKA_CLIENT_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/log.h"

/* A property to set: key and value, both borrowed for the call. */
typedef struct sv_kafka_prop {
	const char *key;
	const char *value;
} sv_kafka_prop_t;

typedef struct sv_kafka_client_conf {
	rd_kafka_type_t type; /* RD_KAFKA_CONSUMER or _PRODUCER */
	const sv_cluster_t *cluster; /* borrowed for the call; NULL: a client
				      * of no profile (the development
				      * cluster's owner) */
	const char *client_id; /* client.id */
	const char *role; /* for messages: "consumer of topic 'x'" */
	const sv_logctx_t *log; /* borrowed; must outlive the client */
	const sv_kafka_prop_t *tuning; /* before the profile's properties */
	size_t ntuning;
	const sv_kafka_prop_t *fixed; /* after them: nothing overrides these */
	size_t nfixed;
	/* > 0: the bytes this client's queues may hold (a share of the job's
	 * resources.memory_mb): the queue sizes of sv_kafka_budget go after
	 * the tuning and before the profile's properties. 0: the tuning's. */
	int64_t memory_budget;
	void *opaque; /* the caller's, handed to the callbacks */
	/* Optional: an error event, after it was logged (scrubbed). thread:
	 * the thread serving the client's queue (rd_kafka_poll or the
	 * consumer's poll). */
	void (*on_error)(void *opaque, rd_kafka_resp_err_t err,
			 const char *reason);
	/* Optional (producers): a delivery report. thread: as on_error. */
	void (*on_delivery)(void *opaque, const rd_kafka_message_t *m);
	/* Optional (consumers of a group, distributed mode): the rebalance
	 * callback (rd_kafka_conf_set_rebalance_cb). With it set, librdkafka
	 * leaves the assign and unassign to the caller, which may defer the
	 * unassign of a revoke until it has committed (docs/cluster.md).
	 * parts is borrowed for the call. thread: the thread polling the
	 * consumer. */
	void (*on_rebalance)(void *opaque, rd_kafka_t *rk,
			     rd_kafka_resp_err_t err,
			     rd_kafka_topic_partition_list_t *parts);
} sv_kafka_client_conf_t;

/* Make the client. Errors (SV_ERR_CONFIG) name the property key or the
 * profile, never a value or librdkafka's text. Nothing is leaked on
 * failure. */
sv_error_t *sv_kafka_client_new(const sv_kafka_client_conf_t *conf,
				rd_kafka_t **out);

/* Destroy a client made by sv_kafka_client_new (a consumer must have been
 * closed with rd_kafka_consumer_close first). NULL is fine. */
void sv_kafka_client_destroy(rd_kafka_t *rk);

/* The caller's opaque given at creation. */
void *sv_kafka_client_opaque(const rd_kafka_t *rk);

/* Copy text into out (always terminated), every value of the client's
 * profile properties replaced by "***": for librdkafka text that is about
 * to reach a log line or an error message. Returns out. thread: any */
char *sv_kafka_client_scrub(const rd_kafka_t *rk, const char *text, char *out,
			    size_t n);

/* An error of a Kafka-facing module: category, message, the job and
 * attempt of log (when it has a job id), and the third-party cause —
 * cause, or librdkafka's text for code when cause is NULL — scrubbed as
 * above. rk may be NULL (before the client exists). */
sv_error_t *sv_kafka_error(const rd_kafka_t *rk, const sv_logctx_t *log,
			   sv_errcat_t cat, rd_kafka_resp_err_t code,
			   const char *cause, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Queue sizes of a client that may hold budget bytes (docs/performance.md
 * "Memory budget"). A consumer: queued.max.messages.kbytes (a third),
 * queued.min.messages (the same bytes at 256 a message: a cap on the
 * per-message overhead too), fetch.max.bytes (a sixth, 1..64 MiB) and
 * fetch.message.max.bytes (at most 1 MiB). A producer:
 * queue.buffering.max.kbytes (a third), queue.buffering.max.messages (256
 * bytes a message) and batch.size (a sixteenth, 64 KiB..1 MiB).
 * reserved_bytes: what librdkafka may hold with these sizes, message
 * overhead included (an estimate, at most budget). */
#define SV_KAFKA_BUDGET_PROPS 4
typedef struct sv_kafka_budget {
	sv_kafka_prop_t props[SV_KAFKA_BUDGET_PROPS];
	size_t nprops;
	char values[SV_KAFKA_BUDGET_PROPS][24];
	int64_t reserved_bytes;
} sv_kafka_budget_t;

void sv_kafka_budget(rd_kafka_type_t type, int64_t budget,
		     sv_kafka_budget_t *out);

/* Bytes librdkafka keeps per queued message beyond its payload (the
 * message or op struct): what the status' memory estimate adds per
 * message counted in a queue. */
#define SV_KAFKA_MSG_OVERHEAD 256

/* The level of a librdkafka (syslog) log level. */
sv_loglevel_t sv_kafka_log_level(int syslog_level);

#endif
