/* status.h — distributed mode's status topic (docs/cluster.md "Status"):
 * every node's view of every node and member, on a compacted topic.
 *
 * `_streamvisor.<c>.status` (one partition, compacted) holds `node/<id>`
 * → {url, at_ms, leader, jobs, members} heartbeats and
 * `member/<job>/<node>-t<k>` → {state, partitions, positions, lag,
 * last_checkpoint, draining, checkpointed, at_ms} records. Each node
 * writes its own records with an idempotent, non-transactional producer
 * (what it says is about itself only, so no fencing is needed), every
 * interval, and reads the whole topic into its view. A record's age is now
 * minus its at_ms (the writer's wall clock): a node is alive while its
 * heartbeat is younger than SV_STATUS_ALIVE_MS. */
#ifndef SV_CLUSTER_STATUS_H
#define SV_CLUSTER_STATUS_H

#include <jansson.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"

#define SV_STATUS_INTERVAL_MS 1000
#define SV_STATUS_ALIVE_MS 4000

typedef struct sv_status sv_status_t;

typedef struct sv_status_conf {
	const char *name; /* the streamvisor cluster */
	const char *node_id;
	const sv_cluster_t *kafka;
	int replication_factor;
	/* This node's records now: a new object key → value (values get
	 * "at_ms"); NULL: nothing this time. thread: the status thread */
	json_t *(*collect)(void *opaque);
	void *opaque;
} sv_status_conf_t;

/* Create the topic if missing and start the thread that writes this
 * node's records and reads everyone's. conf's strings are copied.
 * Errors: SV_ERR_BINDING. */
sv_error_t *sv_status_start(const sv_status_conf_t *conf, sv_status_t **out);

/* The view: a new object of every record whose key starts with prefix
 * (key → value, each value with "age_ms"). thread: any */
json_t *sv_status_view(sv_status_t *s, const char *prefix);

/* The partition count of topic on the cluster (cached; -1: unknown).
 * thread: any */
int sv_status_partitions(sv_status_t *s, const char *topic);

/* Write this node's records at the next turn of the status thread (at
 * most ~100 ms) instead of at the interval: a count the other nodes must
 * see soon. NULL is fine. thread: any */
void sv_status_kick(sv_status_t *s);

/* Stop the thread, close the clients. NULL is fine. */
void sv_status_stop(sv_status_t *s);

#endif
