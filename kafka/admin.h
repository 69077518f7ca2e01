/* admin.h — checks against a Kafka cluster that belong at submit time,
 * before a job runs, and the admin calls of repartition topics (create,
 * delete, purge with DeleteRecords; docs/repartition.md). Clients come
 * from kafka/client.h. */
#ifndef SV_KAFKA_ADMIN_H
#define SV_KAFKA_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"

/* The broker's transaction.max.timeout.ms must allow timeout_ms, or
 * init_transactions fails at run time with INVALID_TRANSACTION_TIMEOUT.
 * Errors: SV_ERR_CONFIG naming both values, with field (the spec field
 * that set timeout_ms, borrowed); SV_ERR_CONFIG naming a refused client
 * property of the profile; SV_ERR_BINDING when the cluster cannot be asked
 * within a few seconds. The embedded development cluster is not asked
 * (NULL). */
sv_error_t *sv_kafka_check_txn_timeout(const sv_cluster_t *cluster,
				       int64_t timeout_ms, const char *field);

/* The partition count of topic, or 0 when the topic does not exist (yet)
 * or the cluster cannot be asked within a few seconds: the job's start
 * checks again. The embedded development cluster: 0. */
int sv_kafka_topic_partitions(const sv_cluster_t *cluster, const char *topic);

/* What sv_kafka_topic_ensure_spec makes: partitions partitions (an
 * existing topic must have exactly that many, or at least that many with
 * at_least), replication_factor copies (0: the broker's default), and
 * cleanup.policy=compact (the cluster's internal topics) or delete with
 * retention.ms=-1 (a repartition topic). */
typedef struct sv_kafka_topic_spec {
	int partitions;
	int replication_factor;
	bool compact;
	bool at_least;
} sv_kafka_topic_spec_t;

/* Create topic as spec says unless it exists; *created (may be NULL) says
 * whether this call made it. Errors: SV_ERR_CONFIG when it exists with
 * another partition count (or the cluster is the embedded development
 * cluster); SV_ERR_BINDING when the broker refuses or does not answer
 * within a few seconds. */
sv_error_t *sv_kafka_topic_ensure_spec(const sv_cluster_t *cluster,
				       const char *topic,
				       const sv_kafka_topic_spec_t *spec,
				       bool *created);

/* A repartition topic (docs/repartition.md): partitions partitions,
 * delete policy, retention.ms=-1, the broker's replication. */
sv_error_t *sv_kafka_topic_ensure(const sv_cluster_t *cluster,
				  const char *topic, int partitions,
				  bool *created);

/* Delete topic (a missing topic is no error). Errors: SV_ERR_BINDING. */
sv_error_t *sv_kafka_topic_delete(const sv_cluster_t *cluster,
				  const char *topic);

/* A long-lived admin client for repeated requests (a repartition topic's
 * purge). thread: one owner. Errors: SV_ERR_CONFIG (a refused client
 * property, the embedded development cluster). */
typedef struct sv_kafka_admin sv_kafka_admin_t;
sv_error_t *sv_kafka_admin_new(const sv_cluster_t *cluster,
			       sv_kafka_admin_t **out);
void sv_kafka_admin_destroy(sv_kafka_admin_t *adm);

/* DeleteRecords: delete the records of topic's partitions[i] before
 * before[i] (n partitions). Asynchronous: the request is sent and this
 * returns at once; the outcome of earlier requests that has arrived is
 * returned (SV_ERR_BINDING naming the partition), the first failure
 * only. */
sv_error_t *sv_kafka_delete_records(sv_kafka_admin_t *adm, const char *topic,
				    const int32_t *partitions,
				    const int64_t *before, size_t n);
/* Wait up to timeout_ms for the outcome of the requests still out. */
sv_error_t *sv_kafka_admin_drain(sv_kafka_admin_t *adm, int timeout_ms);

#endif
