/* store.h — the checkpoint store: one RocksDB per supervisor data dir
 * holding job definitions and checkpoint records (DESIGN.md §4,
 * docs/checkpoints.md). The only module that includes rocksdb/c.h.
 *
 * Durability: WAL always on, every write synced (sync=true), paranoid
 * checks, WAL recovery mode "tolerate corrupted tail records" — a torn tail
 * left by kill -9 recovers silently; corruption anywhere else makes open or
 * a read fail with an SV_ERR_CHECKPOINT error naming what is wrong. A record
 * that does not unpack is an error too: the store never skips silently to
 * an older checkpoint.
 *
 * Records are Streamvisor__CheckpointRecord (proto/checkpoint.proto); a
 * record returned by the store is the caller's, freed with
 * sv_ckstore_free_record. thread: any (RocksDB is thread-safe; id
 * allocation takes a mutex). */
#ifndef SV_CKSTORE_H
#define SV_CKSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "proto/checkpoint.pb-c.h"

typedef struct sv_ckstore sv_ckstore_t;
typedef Streamvisor__CheckpointRecord sv_ckrec_t;

/* Open (creating the directory and the database if missing). */
sv_error_t *sv_ckstore_open(const char *dir, sv_ckstore_t **out);
void sv_ckstore_close(sv_ckstore_t *st);

/* ---- job definitions (opaque bytes, keyed by job id) ---- */
sv_error_t *sv_ckstore_put_job(sv_ckstore_t *st, const char *job_id,
			       const char *data, size_t len);
/* Delete the job definition in one batch; with checkpoints also its
 * checkpoints and its id sequence (DESIGN.md §5: checkpoints are removed
 * only when asked). */
sv_error_t *sv_ckstore_delete_job(sv_ckstore_t *st, const char *job_id,
				  bool checkpoints);
/* Call fn for every stored job, in id order; stops at fn's first error. */
typedef sv_error_t *(sv_ckstore_job_fn)(void *opaque, const char *job_id,
					const char *data, size_t len);
sv_error_t *sv_ckstore_each_job(sv_ckstore_t *st, sv_ckstore_job_fn *fn,
				void *opaque);

/* ---- checkpoints ---- */
/* The next checkpoint id of the job (1, 2, ...; never reused, also across
 * restarts and after retention). */
sv_error_t *sv_ckstore_next_id(sv_ckstore_t *st, const char *job_id,
			       int64_t *id);
/* The same, but the sequence's write is not synced: it survives kill -9
 * at once (the WAL is written, not synced), and a power loss once the
 * store's next synced write returned (RocksDB syncs the whole WAL, earlier
 * writes included). For a caller whose first durable use of the id is
 * such a write (the checkpoint's PREPARED record, docs/checkpoints.md):
 * an id lost to a power loss before it was never referred to by anything
 * that outlived the loss. */
sv_error_t *sv_ckstore_next_id_lazy(sv_ckstore_t *st, const char *job_id,
				    int64_t *id);
/* Write rec (its job_id and id name it) in one synced WriteBatch. */
sv_error_t *sv_ckstore_put(sv_ckstore_t *st, const sv_ckrec_t *rec);
/* Called by the _dropping writes once the state bytes of operator op of
 * record r (sv_ckstore_put: 0; sv_ckstore_put_tasks: the task's index)
 * are copied into the write batch, before the write itself: the caller
 * may free them there, so a large state is held twice during the write
 * (batch and memtable), not three times (docs/performance.md
 * "Checkpoints and the store's memory"). The record's state.len must
 * stay as it was; its state.data is not read again. */
typedef void(sv_ckstore_drop_fn)(void *opaque, size_t r, size_t op);
/* sv_ckstore_put, calling drop (when not NULL) as above. */
sv_error_t *sv_ckstore_put_dropping(sv_ckstore_t *st, const sv_ckrec_t *rec,
				    sv_ckstore_drop_fn *drop, void *opaque);
/* Set the status of a stored record (and its duration when >= 0). */
sv_error_t *sv_ckstore_mark(sv_ckstore_t *st, const char *job_id, int64_t id,
			    Streamvisor__CheckpointRecord__Status status,
			    int64_t duration_ms);
/* The record, or *out = NULL when there is none. */
sv_error_t *sv_ckstore_get(sv_ckstore_t *st, const char *job_id, int64_t id,
			   sv_ckrec_t **out);
/* The newest record of any status, or NULL. */
sv_error_t *sv_ckstore_latest(sv_ckstore_t *st, const char *job_id,
			      sv_ckrec_t **out);
/* The newest COMMITTED record with id < before, or NULL. */
sv_error_t *sv_ckstore_latest_committed(sv_ckstore_t *st, const char *job_id,
					int64_t before, sv_ckrec_t **out);
/* Up to limit records, newest first; *recs is an array the caller frees
 * (and each record with sv_ckstore_free_record). */
sv_error_t *sv_ckstore_list(sv_ckstore_t *st, const char *job_id, size_t limit,
			    sv_ckrec_t ***recs, size_t *n);
/* Keep the newest `retain` COMMITTED records and every record newer than
 * the oldest of them (pending ones), and, below them, the chain of records
 * the oldest kept delta builds on (delta_of), down to a full one; delete
 * the older ones in one batch. Not synced (nor are sv_ckstore_retain_tasks'
 * deletes): a kill -9 keeps them; a power loss before the store's next
 * synced write may bring the deleted records back, which the next
 * retention deletes again. */
sv_error_t *sv_ckstore_retain(sv_ckstore_t *st, const char *job_id, int retain);
/* ---- per-task snapshots (parallelism > 1, docs/checkpoints.md) ----
 * A member's checkpoint is its record under ck/ (offsets of its
 * partitions, no operators) plus one task record per partition it owns
 * under ts/<job>/<partition>/<id>, its operators' state apart under tv/
 * (sv_ckstore_get_task returns it whole). A task record may hold deltas
 * (delta_of, docs/checkpoints.md): retention keeps the chain below the
 * kept ones.
 * Task records are keyed by partition, so a restart with another
 * parallelism regroups them. */
/* Write the member record rec and its ntasks task records (each names its
 * one partition in offsets[0]) in one synced WriteBatch. */
sv_error_t *sv_ckstore_put_tasks(sv_ckstore_t *st, const sv_ckrec_t *rec,
				 const sv_ckrec_t *const *tasks, size_t ntasks);
/* sv_ckstore_put_tasks, calling drop (when not NULL) for each task's
 * operator states as sv_ckstore_put_dropping does. */
sv_error_t *sv_ckstore_put_tasks_dropping(
	sv_ckstore_t *st, const sv_ckrec_t *rec, const sv_ckrec_t *const *tasks,
	size_t ntasks, sv_ckstore_drop_fn *drop, void *opaque);
/* Ids of the task records of partition p, newest first; *ids is the
 * caller's to free. */
sv_error_t *sv_ckstore_task_ids(sv_ckstore_t *st, const char *job_id, int32_t p,
				int64_t **ids, size_t *n);
/* The task record of partition p at checkpoint id, or *out = NULL. */
sv_error_t *sv_ckstore_get_task(sv_ckstore_t *st, const char *job_id, int32_t p,
				int64_t id, sv_ckrec_t **out);
/* Per partition of parts: keep the task records of the newest `retain`
 * checkpoints whose member record is COMMITTED and every newer one, and
 * the chain the oldest kept delta builds on down to its full record;
 * delete the older ones, and a member record once no partition has a task
 * record of it any more. */
sv_error_t *sv_ckstore_retain_tasks(sv_ckstore_t *st, const char *job_id,
				    const int32_t *parts, size_t nparts,
				    int retain);
/* The largest parallelism the job ever ran with before this call (0: none
 * recorded), and record max(that, now). The ids of members >= now up to
 * it may hold lingering transactions. */
sv_error_t *sv_ckstore_max_parallelism(sv_ckstore_t *st, const char *job_id,
				       int now, int *before);

void sv_ckstore_free_record(sv_ckrec_t *rec);

#endif
