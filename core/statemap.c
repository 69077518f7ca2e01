/* statemap.c — open-addressing hash table keyed by value tuples.
 *
 * Slots hold (hash, entry pointer); the capacity is a power of two and the
 * probe is linear. An entry is one allocation: a small header (hash, size),
 * the payload, then the key tuple and its string bytes, so the payload
 * pointer is stable and the key can be found from it. Removal leaves a
 * tombstone (iteration stays valid while removing); tombstones are swept
 * when the table is rebuilt, which happens when live entries plus
 * tombstones pass 3/4 of the capacity, 7/8 from 8,192 slots on (doubling
 * only if live entries alone pass half of it). The payload is rounded up
 * to 8 bytes, the key tuple's alignment.
 *
 * Change tracking (incremental checkpoints): when on, every entry created
 * or touched since the last sv_statemap_dirty_clear is listed once in a
 * dirty array; the entry keeps its index there (upper half of the header's
 * size word, 0 = clean) so removing a dirty entry swap-removes it in O(1).
 * Removals are not listed: the owner records what it deletes (the window
 * operator deletes whole pane starts, one range tombstone). */
#include "core/statemap.h"

#include <stdlib.h>
#include <string.h>

#define TOMBSTONE ((entry_t *)(uintptr_t)1)
#define MIN_CAP 16

typedef struct entry {
	uint64_t hash;
	uint64_t size; /* low 32 bits: bytes of this allocation; high 32:
			  index + 1 in the dirty array, 0 when clean */
	/* payload, then key values, then string bytes */
} entry_t;

typedef struct slot {
	uint64_t hash;
	entry_t *e; /* NULL empty, TOMBSTONE removed */
} slot_t;

struct sv_statemap {
	size_t nkeys;
	size_t payload_size; /* rounded up to 8 (the key tuple's alignment) */
	size_t cap, mask;
	size_t used, tombs;
	uint64_t entry_bytes;
	slot_t *slots;
	bool track;
	entry_t **dirty;
	size_t ndirty, dcap;
};

#define SIZE_MASK 0xffffffffu

static inline uint64_t entry_size(const entry_t *e)
{
	return e->size & SIZE_MASK;
}

static inline char *entry_payload(const entry_t *e)
{
	return (char *)e + sizeof(entry_t);
}

static inline entry_t *payload_entry(const void *payload)
{
	return (entry_t *)((char *)payload - sizeof(entry_t));
}

sv_statemap_t *sv_statemap_new(size_t nkeys, size_t payload_size)
{
	sv_statemap_t *map = sv_calloc(1, sizeof(*map));
	map->nkeys = nkeys;
	map->payload_size = (payload_size + 7) & ~(size_t)7;
	map->cap = MIN_CAP;
	map->mask = MIN_CAP - 1;
	map->slots = sv_calloc(MIN_CAP, sizeof(slot_t));
	return map;
}

void sv_statemap_clear(sv_statemap_t *map)
{
	for (size_t i = 0; i < map->cap; i++) {
		if (map->slots[i].e && map->slots[i].e != TOMBSTONE)
			free(map->slots[i].e);
		map->slots[i].e = NULL;
	}
	map->used = map->tombs = 0;
	map->entry_bytes = 0;
	map->ndirty = 0;
}

void sv_statemap_destroy(sv_statemap_t *map)
{
	if (!map)
		return;
	sv_statemap_clear(map);
	free(map->dirty);
	free(map->slots);
	free(map);
}

uint64_t sv_statemap_hash(const sv_statemap_t *map, const sv_value_t *key)
{
	uint64_t h = 0x51ed27a1u;
	for (size_t i = 0; i < map->nkeys; i++)
		h = sv_value_hash(&key[i], h);
	return h;
}

const sv_value_t *sv_statemap_key(const sv_statemap_t *map, const void *payload)
{
	return (const sv_value_t *)((const char *)payload + map->payload_size);
}

uint64_t sv_statemap_entry_hash(const void *payload)
{
	return payload_entry(payload)->hash;
}

static bool key_equal(const sv_statemap_t *map, const entry_t *e,
		      const sv_value_t *key)
{
	const sv_value_t *k = sv_statemap_key(map, entry_payload(e));
	for (size_t i = 0; i < map->nkeys; i++)
		if (k[i].type != key[i].type || !sv_value_equal(&k[i], &key[i]))
			return false;
	return true;
}

void *sv_statemap_find(sv_statemap_t *map, const sv_value_t *key, uint64_t hash)
{
	for (size_t i = hash & map->mask;; i = (i + 1) & map->mask) {
		slot_t *s = &map->slots[i];
		if (!s->e)
			return NULL;
		if (s->e != TOMBSTONE && s->hash == hash &&
		    key_equal(map, s->e, key))
			return entry_payload(s->e);
	}
}

static void rebuild(sv_statemap_t *map, size_t cap)
{
	slot_t *old = map->slots;
	size_t oldcap = map->cap;
	map->slots = sv_calloc(cap, sizeof(slot_t));
	map->cap = cap;
	map->mask = cap - 1;
	map->tombs = 0;
	for (size_t i = 0; i < oldcap; i++) {
		if (!old[i].e || old[i].e == TOMBSTONE)
			continue;
		size_t j = old[i].hash & map->mask;
		while (map->slots[j].e)
			j = (j + 1) & map->mask;
		map->slots[j] = old[i];
	}
	free(old);
}

/* Live entries plus tombstones past 3/4 of the capacity, or 7/8 once it
 * is LARGE_CAP: a large table's slot array is most of its fixed cost
 * (W4's 100,008 persons: 38% full at 262,144 slots, 4 MB; 76% at 131,072
 * with 7/8), and its lookups, hits mostly, stay within a probe or two. */
#define LARGE_CAP 8192

static bool over_load(const sv_statemap_t *map)
{
	size_t n = map->used + map->tombs;
	return map->cap >= LARGE_CAP ? n * 8 > map->cap * 7
				     : n * 4 > map->cap * 3;
}

/* Room for n entries in all: at most n more live entries than now
 * cause no rebuild. */
void sv_statemap_reserve(sv_statemap_t *map, size_t n)
{
	size_t cap = map->cap;
	while (cap >= LARGE_CAP ? n * 8 > cap * 7 : n * 4 > cap * 3)
		cap *= 2;
	if (cap > map->cap)
		rebuild(map, cap);
}

static entry_t *entry_new(const sv_statemap_t *map, const sv_value_t *key,
			  uint64_t hash)
{
	size_t strbytes = 0;
	for (size_t i = 0; i < map->nkeys; i++)
		if (key[i].type == SV_T_STRING)
			strbytes += key[i].len;
	size_t size = sizeof(entry_t) + map->payload_size +
		map->nkeys * sizeof(sv_value_t) + strbytes;
	entry_t *e = sv_malloc(size);
	e->hash = hash;
	e->size = size;
	char *payload = entry_payload(e);
	memset(payload, 0, map->payload_size);
	sv_value_t *k = (sv_value_t *)(payload + map->payload_size);
	char *str = (char *)(k + map->nkeys);
	for (size_t i = 0; i < map->nkeys; i++) {
		k[i] = key[i];
		if (key[i].type == SV_T_STRING) {
			if (key[i].len)
				memcpy(str, key[i].v.s, key[i].len);
			k[i].v.s = str;
			str += key[i].len;
		}
	}
	return e;
}

void *sv_statemap_upsert(sv_statemap_t *map, const sv_value_t *key,
			 uint64_t hash, bool *created)
{
	size_t tomb = SIZE_MAX;
	size_t i = hash & map->mask;
	for (;; i = (i + 1) & map->mask) {
		slot_t *s = &map->slots[i];
		if (!s->e)
			break;
		if (s->e == TOMBSTONE) {
			if (tomb == SIZE_MAX)
				tomb = i;
			continue;
		}
		if (s->hash == hash && key_equal(map, s->e, key)) {
			if (created)
				*created = false;
			return entry_payload(s->e);
		}
	}
	entry_t *e = entry_new(map, key, hash);
	map->entry_bytes += entry_size(e);
	if (map->track)
		sv_statemap_touch(map, entry_payload(e));
	if (tomb != SIZE_MAX) {
		i = tomb;
		map->tombs--;
	}
	map->slots[i].hash = hash;
	map->slots[i].e = e;
	map->used++;
	if (over_load(map))
		rebuild(map,
			map->used * 2 > map->cap ? map->cap * 2 : map->cap);
	if (created)
		*created = true;
	return entry_payload(e);
}

void sv_statemap_remove(sv_statemap_t *map, void *payload)
{
	entry_t *e = payload_entry(payload);
	for (size_t i = e->hash & map->mask;; i = (i + 1) & map->mask) {
		slot_t *s = &map->slots[i];
		if (!s->e)
			abort(); /* not ours: a caller bug */
		if (s->e == e) {
			map->entry_bytes -= entry_size(e);
			size_t di = (size_t)(e->size >> 32);
			if (di) { /* swap-remove from the dirty array */
				entry_t *last = map->dirty[--map->ndirty];
				map->dirty[di - 1] = last;
				last->size = entry_size(last) |
					((uint64_t)di << 32);
			}
			free(e);
			/* A tombstone is only needed when a chain continues. */
			if (!map->slots[(i + 1) & map->mask].e) {
				s->e = NULL;
			} else {
				s->e = TOMBSTONE;
				map->tombs++;
			}
			map->used--;
			return;
		}
	}
}

void *sv_statemap_next(const sv_statemap_t *map, size_t *it)
{
	while (*it < map->cap) {
		slot_t *s = &map->slots[(*it)++];
		if (s->e && s->e != TOMBSTONE)
			return entry_payload(s->e);
	}
	return NULL;
}

void sv_statemap_prefetch(const sv_statemap_t *map, uint64_t hash, int stage)
{
	const slot_t *s = &map->slots[hash & map->mask];
	if (stage == 0) {
		__builtin_prefetch(s);
		return;
	}
	const entry_t *e = s->e;
	if (e && e != TOMBSTONE && s->hash == hash) {
		/* the header and payload, then the key tuple after them */
		__builtin_prefetch(e);
		__builtin_prefetch((const char *)e + 64);
	}
}

size_t sv_statemap_count(const sv_statemap_t *map)
{
	return map->used;
}

size_t sv_statemap_capacity(const sv_statemap_t *map)
{
	return map->cap;
}

uint64_t sv_statemap_bytes(const sv_statemap_t *map)
{
	return sizeof(*map) + map->cap * sizeof(slot_t) + map->entry_bytes +
		map->dcap * sizeof(entry_t *);
}

void sv_statemap_track(sv_statemap_t *map, bool on)
{
	map->track = on;
	if (!on)
		sv_statemap_dirty_clear(map);
}

bool sv_statemap_tracking(const sv_statemap_t *map)
{
	return map->track;
}

void sv_statemap_touch(sv_statemap_t *map, void *payload)
{
	entry_t *e = payload_entry(payload);
	if (!map->track || (e->size >> 32))
		return;
	if (map->ndirty == map->dcap) {
		map->dcap = map->dcap ? map->dcap * 2 : 64;
		map->dirty = sv_realloc(map->dirty,
					map->dcap * sizeof(entry_t *));
	}
	map->dirty[map->ndirty++] = e;
	e->size = entry_size(e) | ((uint64_t)map->ndirty << 32);
}

size_t sv_statemap_dirty_count(const sv_statemap_t *map)
{
	return map->ndirty;
}

void *sv_statemap_dirty_at(const sv_statemap_t *map, size_t i)
{
	return i < map->ndirty ? entry_payload(map->dirty[i]) : NULL;
}

void sv_statemap_dirty_clear(sv_statemap_t *map)
{
	for (size_t i = 0; i < map->ndirty; i++)
		map->dirty[i]->size = entry_size(map->dirty[i]);
	map->ndirty = 0;
}
