/* test_statemap.c — core/statemap.c's growth and layout: a table grows
 * past 3/4 full while small and past 7/8 from 8,192 slots on (W4's
 * 100,008-key lookup table at 131,072 slots, not 262,144), every key is
 * found after growth, removals and reinsertions, and a payload of a size
 * that is no multiple of 16 keeps the payload 16-byte and the key tuple
 * 8-byte aligned; reserve sizes the slot array once. The operators on
 * top are tested through their own tests (windows, dedup, joins). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/statemap.h"

typedef struct payload {
	int64_t a, b, c, d;
	int64_t id; /* 40 bytes: a multiple of 8, not 16 */
} payload_t;

static payload_t *put(sv_statemap_t *map, int64_t k, bool *created)
{
	char s[32];
	int n = snprintf(s, sizeof(s), "key-%lld", (long long)k);
	sv_value_t key[2] = {sv_int(k), sv_str(s, (uint32_t)n)};
	payload_t *p = sv_statemap_upsert(map, key, sv_statemap_hash(map, key),
					  created);
	return p;
}

static payload_t *get(sv_statemap_t *map, int64_t k)
{
	char s[32];
	int n = snprintf(s, sizeof(s), "key-%lld", (long long)k);
	sv_value_t key[2] = {sv_int(k), sv_str(s, (uint32_t)n)};
	return sv_statemap_find(map, key, sv_statemap_hash(map, key));
}

static void test_growth(void **state)
{
	(void)state;
	sv_statemap_t *map = sv_statemap_new(2, sizeof(payload_t));
	bool created;
	/* small: past 3/4 of 16 (the 13th key) it doubles */
	for (int64_t k = 0; k < 12; k++)
		put(map, k, &created)->id = k;
	assert_int_equal(sv_statemap_capacity(map), 16);
	put(map, 12, &created)->id = 12;
	assert_int_equal(sv_statemap_capacity(map), 32);
	/* large: 16,384 slots hold up to 7/8, 14,336 keys */
	for (int64_t k = 13; k < 14336; k++) {
		payload_t *p = put(map, k, &created);
		assert_true(created);
		p->id = k;
	}
	assert_int_equal(sv_statemap_capacity(map), 16384);
	put(map, 14336, &created)->id = 14336;
	assert_int_equal(sv_statemap_capacity(map), 32768);
	assert_int_equal(sv_statemap_count(map), 14337);
	for (int64_t k = 0; k <= 14336; k++) {
		payload_t *p = get(map, k);
		assert_non_null(p);
		assert_int_equal(p->id, k);
		/* payload 16-byte, key tuple 8-byte aligned, key intact */
		assert_int_equal((uintptr_t)p % 16, 0);
		const sv_value_t *key = sv_statemap_key(map, p);
		assert_int_equal((uintptr_t)key % 8, 0);
		assert_int_equal(key[0].v.i, k);
		char s[32];
		int n = snprintf(s, sizeof(s), "key-%lld", (long long)k);
		assert_int_equal(key[1].len, n);
		assert_memory_equal(key[1].v.s, s, (size_t)n);
	}
	assert_null(get(map, 14337));
	/* removals leave tombstones; reinsertions and the rebuilds they
	 * cause keep every key */
	for (int64_t k = 0; k <= 14336; k += 2)
		sv_statemap_remove(map, get(map, k));
	for (int64_t k = 20000; k < 30000; k++)
		put(map, k, &created)->id = k;
	for (int64_t k = 0; k <= 14336; k++) {
		payload_t *p = get(map, k);
		if (k % 2) {
			assert_non_null(p);
			assert_int_equal(p->id, k);
		} else {
			assert_null(p);
		}
	}
	for (int64_t k = 20000; k < 30000; k++)
		assert_int_equal(get(map, k)->id, k);
	assert_int_equal(sv_statemap_count(map), 7168 + 10000);
	sv_statemap_destroy(map);
}

/* reserve grows the slot array once, to what n entries need, so the
 * inserts after it rebuild nothing */
static void test_reserve(void **state)
{
	(void)state;
	sv_statemap_t *map = sv_statemap_new(2, sizeof(payload_t));
	sv_statemap_reserve(map, 12);
	assert_int_equal(sv_statemap_capacity(map), 16);
	sv_statemap_reserve(map, 14336);
	assert_int_equal(sv_statemap_capacity(map), 16384);
	bool created;
	for (int64_t k = 0; k < 14336; k++)
		put(map, k, &created)->id = k;
	assert_int_equal(sv_statemap_capacity(map), 16384);
	for (int64_t k = 0; k < 14336; k++)
		assert_int_equal(get(map, k)->id, k);
	sv_statemap_reserve(map, 100); /* never shrinks */
	assert_int_equal(sv_statemap_capacity(map), 16384);
	sv_statemap_reserve(map, 14337);
	assert_int_equal(sv_statemap_capacity(map), 32768);
	for (int64_t k = 0; k < 14336; k++)
		assert_int_equal(get(map, k)->id, k);
	sv_statemap_destroy(map);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_reserve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
