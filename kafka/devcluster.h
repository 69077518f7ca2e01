/* devcluster.h — the embedded development cluster: an in-process Kafka
 * cluster (librdkafka's mock cluster) for `make run`, demos and unit tests.
 *
 * It speaks the Kafka protocol on loopback ports, so the ordinary Kafka
 * source and sink talk to it through its bootstrap string. It is NOT a real
 * broker: it writes no transaction markers and does not filter aborted
 * records for read_committed readers, so it cannot prove exactly-once
 * (DESIGN.md §4). Partition logs are capped (about 5 MiB each). */
#ifndef SV_DEVCLUSTER_H
#define SV_DEVCLUSTER_H

#include "core/error.h"

typedef struct sv_devcluster sv_devcluster_t;

/* Start a cluster of nbrokers (>= 1) brokers. On success *out is the cluster
 * (destroy with sv_devcluster_stop) and, when bootstrap_out is not NULL,
 * *bootstrap_out is a heap copy of its bootstrap string ("127.0.0.1:port,..."),
 * owned by the caller (free()). Errors: SV_ERR_BINDING. thread: any */
sv_error_t *sv_devcluster_start(int nbrokers, char **bootstrap_out,
				sv_devcluster_t **out);

/* The bootstrap string; borrowed, valid until sv_devcluster_stop. */
const char *sv_devcluster_bootstrap(const sv_devcluster_t *dc);

/* Create topic with the given number of partitions (replication factor 1).
 * Errors: SV_ERR_BINDING (invalid name or count, topic exists). */
sv_error_t *sv_devcluster_create_topic(sv_devcluster_t *dc, const char *topic,
				       int partitions);

/* Fault injection for tests: the next count requests of kind api ("produce",
 * "fetch", "list_offsets", "metadata", "offset_commit", "offset_fetch",
 * "find_coordinator", "init_producer_id", "txn_offset_commit") on any
 * broker fail with the Kafka
 * protocol error code kafka_err (e.g. 6 NOT_LEADER_OR_FOLLOWER, retriable;
 * 29 TOPIC_AUTHORIZATION_FAILED, permanent). Errors: SV_ERR_CONFIG for an
 * unknown api name. */
sv_error_t *sv_devcluster_push_errors(sv_devcluster_t *dc, const char *api,
				      int kafka_err, int count);

/* Stop the cluster and free it; clients still connected see it go down.
 * NULL is a no-op. */
void sv_devcluster_stop(sv_devcluster_t *dc);

#endif
