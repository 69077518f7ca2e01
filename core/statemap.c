/* statemap.c — open-addressing hash table keyed by value tuples.
 *
 * Slots hold (hash, entry pointer); the capacity is a power of two and the
 * probe is linear. An entry is one allocation: a small header (hash, size),
 * the payload, then the key tuple and its string bytes, so the payload
 * pointer is stable and the key can be found from it. Removal leaves a
 * tombstone (iteration stays valid while removing); tombstones are swept
 * when the table is rebuilt, which happens when live entries plus
 * tombstones pass 3/4 of the capacity (doubling only if live entries alone
 * pass half of it). */
#include "core/statemap.h"

#include <stdlib.h>
#include <string.h>

#define TOMBSTONE ((entry_t *)(uintptr_t)1)
#define MIN_CAP 16

typedef struct entry {
	uint64_t hash;
	uint64_t size; /* bytes of this allocation */
	/* payload, then key values, then string bytes */
} entry_t;

typedef struct slot {
	uint64_t hash;
	entry_t *e; /* NULL empty, TOMBSTONE removed */
} slot_t;

struct sv_statemap {
	size_t nkeys;
	size_t payload_size; /* rounded up to 16 */
	size_t cap, mask;
	size_t used, tombs;
	uint64_t entry_bytes;
	slot_t *slots;
};

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
	map->payload_size = (payload_size + 15) & ~(size_t)15;
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
}

void sv_statemap_destroy(sv_statemap_t *map)
{
	if (!map)
		return;
	sv_statemap_clear(map);
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
	map->entry_bytes += e->size;
	if (tomb != SIZE_MAX) {
		i = tomb;
		map->tombs--;
	}
	map->slots[i].hash = hash;
	map->slots[i].e = e;
	map->used++;
	if ((map->used + map->tombs) * 4 > map->cap * 3)
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
			map->entry_bytes -= e->size;
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

uint64_t sv_statemap_bytes(const sv_statemap_t *map)
{
	return sizeof(*map) + map->cap * sizeof(slot_t) + map->entry_bytes;
}
