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
 * same way (target "cancelled") and every node cancels its copy. Only the
 * leader (leader.h) writes the registry: `leader` → {node, url, epoch}
 * names it, and every job record carries the epoch of the leader that
 * wrote it. */
#ifndef SV_CLUSTER_DIST_H
#define SV_CLUSTER_DIST_H

#include <jansson.h>
#include <stdbool.h>
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
	 * job spec JSON), cancel it when target is "cancelled". Errors are
	 * logged. thread: the registry's */
	sv_error_t *(*apply)(void *opaque, const char *job_id,
			     const char *spec_json, const char *target);
	/* Optional, replaces apply: the whole record (borrowed: id, spec,
	 * target, epoch and what the writer added). thread: the registry's */
	sv_error_t *(*apply_record)(void *opaque, const json_t *rec);
	void *opaque;
	int session_timeout_ms; /* the lead group's */
} sv_dist_conf_t;

/* Create the registry topic if missing, write this node's record, and
 * start the thread that reads the registry (from its start) and adopts
 * jobs. conf's strings are copied. Errors: SV_ERR_BINDING (the cluster
 * cannot be reached, the topic cannot be made). */
sv_error_t *sv_dist_start(const sv_dist_conf_t *conf, sv_dist_t **out);

/* Write job/<job_id> → {id, spec, node, target, epoch, leader} to the
 * registry as the leader (one transaction, committed before it returns,
 * at most 10 s). target: "running", "draining", "cancelled" or
 * "deleted". Errors: SV_ERR_UNAVAILABLE (this node does not lead, or
 * stopped leading during the write). thread: any */
sv_error_t *sv_dist_publish_job(sv_dist_t *d, const char *job_id,
				const char *spec_json, const char *target);

/* The same with extra (borrowed, may be NULL) merged into the record.
 * Written by the leader only: SV_ERR_UNAVAILABLE when this node does not
 * lead (or stopped leading during the write). thread: any */
sv_error_t *sv_dist_publish_record(sv_dist_t *d, const char *job_id,
				   const char *spec_json, const char *target,
				   const json_t *extra);

/* A bounded job's end offsets, fixed once when the job is first written
 * to the registry so that every member agrees where the input ends: the
 * last stable offset (read_committed ListOffsets) of every partition of
 * topic on cluster kafka, *ends[p] for partition p (*nends the partition
 * count); *ends is the caller's (free). The leader takes them when it
 * writes the job's first record (SCALE-OUT.md §5.2). Errors:
 * SV_ERR_BINDING (the topic is missing or the cluster cannot answer).
 * thread: any */
sv_error_t *sv_dist_end_offsets(const sv_cluster_t *kafka, const char *topic,
				int64_t **ends, size_t *nends);

/* The registry's read position (records applied up to this offset; 0
 * until it was read to its end once): what the GETs answer as of.
 * thread: any */
int64_t sv_dist_applied_offset(const sv_dist_t *d);

/* The latest record of job_id (a copy, the caller's), or NULL. */
json_t *sv_dist_job_record(sv_dist_t *d, const char *job_id);

/* Every job's latest record: job id → record (a copy, the caller's). */
json_t *sv_dist_records(sv_dist_t *d);

/* The newest leader record's node, url (copies, the caller's, NULL when
 * there is none) and epoch; returns whether this node leads now. */
bool sv_dist_leader(sv_dist_t *d, char **node, char **url, int64_t *epoch);

/* The registry and leadership as JSON (GET /v1/cluster's "registry"). */
json_t *sv_dist_registry_json(sv_dist_t *d);

/* Stop the thread and close the clients. NULL is fine. */
void sv_dist_stop(sv_dist_t *d);

#endif
