/* state.h — distributed mode's task state topic (docs/cluster.md "State
 * between nodes"): `_streamvisor.<cluster>.<job>.state`, compacted, one
 * partition per source partition. Task p's snapshot lives on state
 * partition p as a manifest and chunks, written by the partition's owner
 * inside the checkpoint's transaction (through its sink's producer) and
 * tagged T = "<node>-t<k>:<checkpoint>"; the same tag goes with the
 * partition's committed offset, so a new owner reads exactly the snapshot
 * its offsets name.
 *
 * A snapshot is a chain (docs/checkpoints.md "Incremental checkpoints"):
 * the newest full task record, then the deltas taken on it, each on the
 * one before. Link 0 (the full) lives in slot 0, delta i in slot i; each
 * link is its packed task record in chunks. Records of partition p (keys;
 * values below):
 *   p<p>/manifest → JSON {"v":2, "tag", "checkpoint", "partition",
 *                   "next_offset", "chain": [{"tag", "checkpoint",
 *                   "chunks", "bytes", "fnv"}, ...]} (oldest link first;
 *                   the last link is the manifest's own checkpoint). A
 *                   chain of one link is written as version 1: {"v":1,
 *                   "tag", "checkpoint", "partition", "next_offset",
 *                   "chunks", "bytes", "fnv"}, as before deltas.
 *   p<p>/c<j>     → chunk j of slot 0 (the full snapshot)
 *   p<p>/d<s>/c<j> → chunk j of slot s >= 1 (delta s of the chain)
 * A chunk is "SVST" tag-length(2, big endian) tag chunk-index(4) payload
 * (<= SV_STATE_CHUNK bytes of its link), the tag its link's. A full
 * snapshot rewrites slot 0 and tombstones the delta slots the writer
 * knows of and the chunks of an earlier, larger full beyond its count; a
 * delta writes its slot only. The manifest is written last, in the same
 * transaction, so the newest committed manifest's links are the newest
 * committed values of their keys: compaction keeps them. */
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
/* links of a chain: a full snapshot and at most SV_STATE_CHAIN_MAX - 1
 * deltas (ckpt.c's task_deltas_max in distributed mode) */
#define SV_STATE_CHAIN_MAX 64

/* "_streamvisor.<cluster>.<job>.state" */
void sv_state_topic(const char *cluster, const char *job, char *out, size_t n);

/* One link of a chain: a packed task record (full or delta). */
typedef struct sv_state_link {
	char tag[SV_STATE_TAG_MAX]; /* the tag of the checkpoint it is of */
	int64_t checkpoint;
	int32_t chunks;
	int64_t bytes;
	uint64_t fnv; /* FNV-1a 64 of the record */
} sv_state_link_t;

typedef struct sv_state_manifest {
	char tag[SV_STATE_TAG_MAX]; /* chain[nchain - 1].tag */
	int64_t checkpoint;
	int32_t partition;
	int64_t next_offset;
	int32_t nchain; /* 1 (a full snapshot) .. SV_STATE_CHAIN_MAX */
	sv_state_link_t chain[SV_STATE_CHAIN_MAX];
} sv_state_manifest_t;

/* ---- codec (no Kafka) ---- */
uint64_t sv_state_fnv(const void *data, size_t len);
/* Number of chunks for a snapshot of len bytes (at least 1). */
int32_t sv_state_nchunks(size_t len);
void sv_state_manifest_key(int32_t partition, char *out, size_t n);
/* The key of chunk j of slot s (0: the full snapshot, "p<p>/c<j>"; s >= 1:
 * delta s, "p<p>/d<s>/c<j>"). */
void sv_state_chunk_key(int32_t partition, int32_t slot, int32_t j, char *out,
			size_t n);
/* Which record a key names: 'm' manifest, 'c' chunk (*slot, *j), 0
 * neither. */
int sv_state_parse_key(const char *key, size_t len, int32_t *partition,
		       int32_t *slot, int32_t *j);
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

/* ---- writer (no Kafka) ----
 * What the writer of partition p knows of its part of the log: the chain
 * the newest committed manifest names (nchain 0: none known) and, per
 * slot, how many chunks the log may hold there (a full snapshot
 * tombstones them). */
typedef struct sv_state_chain {
	sv_state_manifest_t m;
	int32_t on_log[SV_STATE_CHAIN_MAX];
} sv_state_chain_t;

/* Nothing known: a fresh task, or one restored from elsewhere than the
 * topic. Its first full snapshot tombstones chunk 0 of every delta slot
 * (what an older chain may have left). */
void sv_state_chain_unknown(sv_state_chain_t *c);
/* Known exactly: the chain of manifest m, read from the log. */
void sv_state_chain_from(sv_state_chain_t *c, const sv_state_manifest_t *m);

/* Receives each record to write in order (val NULL: a tombstone); an error
 * stops the write. */
typedef sv_error_t *(*sv_state_emit_fn)(void *opaque, const char *key,
					size_t klen, const char *val,
					size_t vlen);

/* The snapshot of one checkpoint of state partition `partition`, whose
 * writer knows the log as cur: rec (len bytes, the packed task record of
 * checkpoint `checkpoint`, tagged tag, at next_offset), a full snapshot when
 * delta_of is 0, else a delta on checkpoint delta_of, which must be the
 * newest link of cur (else SV_ERR_CHECKPOINT: the chain on the log is not
 * its base). Emits its chunks, the tombstones and the manifest; *next is
 * what the log holds once the transaction commits (cur until then).
 * Borrows everything. */
typedef struct sv_state_put {
	int32_t partition;
	const char *tag;
	int64_t checkpoint;
	int64_t next_offset;
	int64_t delta_of;
	const char *rec;
	size_t len;
	sv_state_emit_fn emit;
	void *opaque;
} sv_state_put_t;
sv_error_t *sv_state_write(const sv_state_chain_t *cur,
			   const sv_state_put_t *put, sv_state_chain_t *next);

/* ---- reader (no Kafka) ----
 * Takes the records of one state partition in log order, keeping the
 * newest value of each key, until the manifest tagged tag came; then the
 * links it names must all be there with that link's tag (a missing chunk
 * or one of another tag is SV_ERR_CHECKPOINT at once: everything the
 * manifest names precedes it on the log). */
typedef struct sv_state_reader sv_state_reader_t;
sv_state_reader_t *sv_state_reader_new(int32_t partition, const char *tag);
void sv_state_reader_destroy(sv_state_reader_t *r);
/* One record (val NULL: a tombstone); *done once the chain is complete.
 * Records of other partitions or keys are skipped. */
sv_error_t *sv_state_reader_take(sv_state_reader_t *r, const char *key,
				 size_t klen, const char *val, size_t vlen,
				 bool *done);
bool sv_state_reader_has_manifest(const sv_state_reader_t *r);

/* A read chain: its manifest and each link's record bytes. */
typedef struct sv_state_snap {
	sv_state_manifest_t m;
	sv_buf_t link[SV_STATE_CHAIN_MAX];
	size_t bytes; /* of every link */
} sv_state_snap_t;
void sv_state_snap_init(sv_state_snap_t *s);
void sv_state_snap_release(sv_state_snap_t *s);
/* After done: the chain into *out, each link checked against its size and
 * checksum (SV_ERR_CHECKPOINT). */
sv_error_t *sv_state_reader_finish(sv_state_reader_t *r, sv_state_snap_t *out);

/* ---- topic ---- */
/* Create the state topic (cleanup.policy=compact, partitions, rf) unless
 * it exists; an existing one with fewer partitions is an error
 * (SV_ERR_CONFIG). Errors: SV_ERR_BINDING. */
sv_error_t *sv_state_topic_ensure(const sv_cluster_t *kafka, const char *topic,
				  int partitions, int replication_factor);

/* Read state partition `partition` of topic read_committed from its start
 * until the manifest tagged tag and all its chunks were seen (the
 * reader above), then put the chain into *out (initialised by the
 * caller). Waits for them up to
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
sv_error_t *sv_state_read(const sv_state_read_t *r, sv_state_snap_t *out);

#endif
