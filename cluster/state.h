/* state.h — distributed mode's task state topic (docs/cluster.md "State
 * between nodes"): `_streamvisor.<cluster>.<job>.state`, compacted, one
 * partition per source partition. Task p's snapshot lives on state
 * partition p as a manifest and chunks, written by the partition's owner
 * inside the checkpoint's transaction (through its sink's producer) and
 * tagged T = "<node>-t<k>:<checkpoint>"; the same tag goes with the
 * partition's committed offset, so a new owner reads exactly the snapshot
 * its offsets name.
 *
 * Records of partition p (keys; values below):
 *   p<p>/manifest → JSON {"v":1, "tag", "checkpoint", "partition",
 *                   "next_offset", "chunks", "bytes", "fnv"}
 *   p<p>/c<j>     → "SVST" tag-length(2, big endian) tag chunk-index(4)
 *                   payload (≤ SV_STATE_CHUNK bytes of the snapshot)
 * The snapshot is the task's packed checkpoint record (the same bytes the
 * local store keeps under ts/). Chunks of an earlier, larger snapshot
 * beyond the new count are tombstoned in the same transaction. */
#ifndef SV_CLUSTER_STATE_H
#define SV_CLUSTER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/util.h"

#define SV_STATE_CHUNK (512 * 1024)
#define SV_STATE_TAG_MAX 160

/* "_streamvisor.<cluster>.<job>.state" */
void sv_state_topic(const char *cluster, const char *job, char *out, size_t n);

typedef struct sv_state_manifest {
	char tag[SV_STATE_TAG_MAX];
	int64_t checkpoint;
	int32_t partition;
	int64_t next_offset;
	int32_t chunks;
	int64_t bytes;
	uint64_t fnv; /* FNV-1a 64 of the snapshot */
} sv_state_manifest_t;

/* ---- codec (no Kafka) ---- */
uint64_t sv_state_fnv(const void *data, size_t len);
/* Number of chunks for a snapshot of len bytes (at least 1). */
int32_t sv_state_nchunks(size_t len);
void sv_state_manifest_key(int32_t partition, char *out, size_t n);
void sv_state_chunk_key(int32_t partition, int32_t j, char *out, size_t n);
/* Which record a key names: 'm' manifest, 'c' chunk (*j), 0 neither. */
int sv_state_parse_key(const char *key, size_t len, int32_t *partition,
		       int32_t *j);
void sv_state_encode_manifest(const sv_state_manifest_t *m, sv_buf_t *out);
sv_error_t *sv_state_decode_manifest(const char *data, size_t len,
				     sv_state_manifest_t *m);
/* Chunk j of a snapshot: header and payload appended to out. */
void sv_state_encode_chunk(const char *tag, int32_t j, const char *payload,
			   size_t len, sv_buf_t *out);
/* A chunk's tag (copied into tag), index and payload (pointing into
 * data). */
sv_error_t *sv_state_decode_chunk(const char *data, size_t len, char *tag,
				  size_t tagcap, int32_t *j,
				  const char **payload, size_t *plen);

/* ---- topic ---- */
/* Create the state topic (cleanup.policy=compact, partitions, rf) unless
 * it exists; an existing one with fewer partitions is an error
 * (SV_ERR_CONFIG). Errors: SV_ERR_BINDING. */
sv_error_t *sv_state_topic_ensure(const sv_cluster_t *kafka, const char *topic,
				  int partitions, int replication_factor);

/* Read state partition `partition` of topic read_committed from its start
 * until the manifest tagged tag and all its chunks were seen, then put the
 * snapshot into *out and its manifest into *m. Waits for them up to
 * timeout_ms (commit markers can land after the offsets are stable),
 * calling tick(opaque) at least every 500 ms meanwhile. Errors:
 * SV_ERR_CHECKPOINT (not found in time, a chunk missing or corrupt),
 * SV_ERR_BINDING. */
typedef struct sv_state_read {
	const sv_cluster_t *kafka;
	const char *topic;
	int32_t partition;
	const char *tag;
	int timeout_ms;
	const char *client_id;
	void (*tick)(void *opaque);
	void *opaque;
} sv_state_read_t;
sv_error_t *sv_state_read(const sv_state_read_t *r, sv_buf_t *out,
			  sv_state_manifest_t *m);

#endif
