/* statemap.h — an open-addressing hash table keyed by a tuple of values.
 *
 * Used by the stateful operators (window, dedup) for their keyed state.
 * Each entry owns a copy of its key tuple (string bytes included) and a
 * fixed-size user payload, in one allocation, so payload pointers stay valid
 * while the table grows. Lookups of an existing key never allocate. Null key
 * values are ordinary values: all nulls of a column compare equal (GROUP BY
 * semantics, sv_value_equal).
 *
 * The table is not thread-safe: one operator instance owns it. */
#ifndef SV_STATEMAP_H
#define SV_STATEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/record.h"

typedef struct sv_statemap sv_statemap_t;

/* A table of nkeys-value keys and payload_size-byte payloads (payloads are
 * 16-byte aligned; the key tuple after one is 8-byte aligned). */
sv_statemap_t *sv_statemap_new(size_t nkeys, size_t payload_size);
/* Free the table and every entry. Payload-owned resources are the caller's:
 * release them (iterate) first. NULL is a no-op. */
void sv_statemap_destroy(sv_statemap_t *map);
/* Remove every entry (same caveat as destroy); keeps the slot array. */
void sv_statemap_clear(sv_statemap_t *map);

/* Hash of a key tuple (nkeys values), consistent with lookups. */
uint64_t sv_statemap_hash(const sv_statemap_t *map, const sv_value_t *key);

/* The payload of key (borrowed, read only for the call), or NULL. hash must
 * be sv_statemap_hash(map, key). */
void *sv_statemap_find(sv_statemap_t *map, const sv_value_t *key,
		       uint64_t hash);
/* Find key, or insert it (key copied) with a zeroed payload; *created tells
 * which. Returns the payload, valid until the entry is removed. May grow the
 * table: do not insert while iterating. */
void *sv_statemap_upsert(sv_statemap_t *map, const sv_value_t *key,
			 uint64_t hash, bool *created);
/* Remove the entry owning payload (from find/upsert/next). Allowed while
 * iterating. */
void sv_statemap_remove(sv_statemap_t *map, void *payload);

/* The key tuple (nkeys values, owned by the entry) and hash of an entry,
 * from its payload pointer. */
const sv_value_t *sv_statemap_key(const sv_statemap_t *map,
				  const void *payload);
uint64_t sv_statemap_entry_hash(const void *payload);

/* Iteration: start with *it = 0; returns the next payload or NULL at the
 * end. Order is the slot order (not meaningful). */
void *sv_statemap_next(const sv_statemap_t *map, size_t *it);

/* A hint that find(hash) comes soon, for probes of a batch: stage 0
 * prefetches the hash's first slot, stage 1 (once that slot is cached) the
 * entry it holds. Changes nothing; a wrong guess only costs the load. */
void sv_statemap_prefetch(const sv_statemap_t *map, uint64_t hash, int stage);

/* Grow the slot array at once for n entries in all (a restore inserting
 * a snapshot's keys in the order of another table's slots would otherwise
 * fill a small table in long runs before it grows). */
void sv_statemap_reserve(sv_statemap_t *map, size_t n);
/* Number of entries. */
size_t sv_statemap_count(const sv_statemap_t *map);
/* Number of slots (a power of two; grows past 3/4 full, 7/8 from 8,192). */
size_t sv_statemap_capacity(const sv_statemap_t *map);
/* Bytes held: slot array, entries (payload, key copy, string bytes), the
 * dirty array. */
uint64_t sv_statemap_bytes(const sv_statemap_t *map);

/* ---- change tracking (incremental checkpoints) ----
 * When on, entries created by upsert and entries passed to touch since the
 * last dirty_clear are listed, each once, in the dirty list (order: first
 * change). A removed entry leaves the list; removals themselves are not
 * recorded (the owner records its deletes). Turning tracking off clears
 * the list. */
void sv_statemap_track(sv_statemap_t *map, bool on);
bool sv_statemap_tracking(const sv_statemap_t *map);
/* Note that payload's entry changed (no-op when not tracking). */
void sv_statemap_touch(sv_statemap_t *map, void *payload);
/* The dirty list: its length and its i-th payload (borrowed; NULL past the
 * end). Do not insert or remove while walking it. */
size_t sv_statemap_dirty_count(const sv_statemap_t *map);
void *sv_statemap_dirty_at(const sv_statemap_t *map, size_t i);
/* Every entry is clean again (after a checkpoint holds the changes). */
void sv_statemap_dirty_clear(sv_statemap_t *map);

#endif
