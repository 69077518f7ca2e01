/* admin.h — checks against a Kafka cluster that belong at submit time,
 * before a job runs. Clients come from kafka/client.h. */
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

/* Create topic with partitions partitions, cleanup.policy=delete and
 * retention.ms=-1 (a repartition topic, docs/repartition.md), unless it
 * exists; *created says whether this call made it. Errors: SV_ERR_CONFIG
 * when it exists with another partition count (or the cluster is the
 * embedded development cluster); SV_ERR_BINDING when the broker refuses
 * or does not answer within a few seconds. */
sv_error_t *sv_kafka_topic_ensure(const sv_cluster_t *cluster,
				  const char *topic, int partitions,
				  bool *created);

/* Delete topic (a missing topic is no error). Errors: SV_ERR_BINDING. */
sv_error_t *sv_kafka_topic_delete(const sv_cluster_t *cluster,
				  const char *topic);

#endif
