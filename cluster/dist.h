/* dist.h — distributed mode (docs/cluster.md): the node's identity and
 * the cluster's shared job registry, on Kafka only.
 *
 * A node is one `streamvisor serve` with a `distributed:` section. Its id
 * is stable: configured, or made on first start and kept in the data dir
 * (<data_dir>/node_id), as Kafka Streams keeps its process id in the state
 * dir. The job registry is a one-partition compacted topic
 * `_streamvisor.<name>.jobs`: a job submitted to any node is written there
 * (`job/<id>` → the job's id, spec and target state) before the node
 * creates it, and every node reads the topic from the start and creates
 * each job it does not know with the same id, so the members of all nodes
 * join the same consumer group `streamvisor-<id>`. A cancel is written the
 * same way (target "cancelled") and every node cancels its copy. `node/<id>` records say which nodes
 * started with which URL. */
#ifndef SV_CLUSTER_DIST_H
#define SV_CLUSTER_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"

/* The node id for data_dir: the one kept there, else configured (may be
 * NULL), else a new "node-<8 hex>", kept there from now on (the directory
 * is made when missing). *out is the caller's (free). Errors (SV_ERR_CONFIG,
 * field distributed.node_id): the data dir belongs to another node id, or
 * cannot be written. */
sv_error_t *sv_dist_node_id(const char *data_dir, const char *configured,
			    char **out);

/* The registry topic of cluster name: "_streamvisor.<name>.jobs". */
void sv_dist_jobs_topic(const char *name, char *out, size_t n);

typedef struct sv_dist sv_dist_t;

typedef struct sv_dist_conf {
	const char *name; /* the streamvisor cluster */
	const char *node_id;
	const char *url; /* this node's advertised URL */
	const sv_cluster_t *kafka; /* the profile of the internal topics */
	int replication_factor;
	/* A job record: make the job as the record says — create it when
	 * target is "running" and this node does not have it (spec is the
	 * job spec JSON), cancel it when target is "cancelled". A bounded
	 * job's record carries its end offsets (ends[p] for partition p of
	 * the source topic; NULL and 0 for other jobs). Errors are logged.
	 * thread: the registry's */
	sv_error_t *(*apply)(void *opaque, const char *job_id,
			     const char *spec_json, const char *target,
			     const int64_t *ends, size_t nends);
	void *opaque;
} sv_dist_conf_t;

/* Create the registry topic if missing, write this node's record, and
 * start the thread that reads the registry (from its start) and adopts
 * jobs. conf's strings are copied. Errors: SV_ERR_BINDING (the cluster
 * cannot be reached, the topic cannot be made). */
sv_error_t *sv_dist_start(const sv_dist_conf_t *conf, sv_dist_t **out);

/* Write job/<job_id> → {id, spec, node, target} to the registry and wait
 * until the broker acknowledged it (at most 10 s). target: "running" or
 * "cancelled". Errors: SV_ERR_BINDING. thread: any */
sv_error_t *sv_dist_publish_job(sv_dist_t *d, const char *job_id,
				const char *spec_json, const char *target);

/* The same with a bounded job's end offsets (ends[p] for partition p;
 * nends 0: none), written as the record's `end_offsets`. thread: any */
sv_error_t *sv_dist_publish_job_ends(sv_dist_t *d, const char *job_id,
				     const char *spec_json, const char *target,
				     const int64_t *ends, size_t nends);

/* A bounded job's end offsets, fixed once when the job is first written
 * to the registry so that every member agrees where the input ends: the
 * last stable offset (read_committed ListOffsets) of every partition of
 * topic on cluster kafka, *ends[p] for partition p (*nends the partition
 * count); *ends is the caller's (free). The leader's duty in SCALE-OUT.md
 * §5.2; any node that accepts the submit calls it today. Errors:
 * SV_ERR_BINDING (the topic is missing or the cluster cannot answer).
 * thread: any */
sv_error_t *sv_dist_end_offsets(const sv_cluster_t *kafka, const char *topic,
				int64_t **ends, size_t *nends);

/* The restart policy across members (docs/cluster.md "Restart policy"):
 * each node writes its own failed-attempt count of a job,
 * `attempts/<job>/<node>` → {job, node, window_start_ms, attempts}, after
 * each failed attempt, and every node's reader keeps the latest of every
 * node. One writer per key (the node itself). thread: any */
sv_error_t *sv_dist_publish_attempts(sv_dist_t *d, const char *job_id,
				     int64_t window_start_ms, int attempts);
/* The failed attempts of job_id that the other nodes counted in windows
 * that started within window_ms before now. thread: any */
int sv_dist_attempts_elsewhere(sv_dist_t *d, const char *job_id, int64_t now,
			       int64_t window_ms);

/* The registry's read position (records applied up to this offset) and
 * the jobs seen; for GET /v1/cluster. thread: any */
int64_t sv_dist_applied_offset(const sv_dist_t *d);

/* Stop the thread and close the clients. NULL is fine. */
void sv_dist_stop(sv_dist_t *d);

#endif
