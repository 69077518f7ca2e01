/* test_partition.c — core/partition.c: our murmur2 partitioning agrees
 * with librdkafka's murmur2 partitioner (the Java client's default) for
 * keys of every tail length, and keys render as the Kafka sink sends them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "core/partition.h"

static void test_same_as_librdkafka(void **state)
{
	(void)state;
	static const int32_t counts[] = {1, 2, 3, 4, 7, 8, 12, 100};
	char key[64];
	for (int i = 0; i < 2000; i++) {
		/* lengths 0..(many), so every tail case of the hash is hit */
		int n = snprintf(key, sizeof(key), "%.*s%d", i % 9, "kkkkkkkkk",
				 i * 7919);
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]);
		     c++) {
			int32_t want = rd_kafka_msg_partitioner_murmur2(
				NULL, key, (size_t)n, counts[c], NULL, NULL);
			assert_int_equal(
				sv_partition_of(key, (size_t)n, counts[c]),
				want);
		}
	}
	/* the empty key is hashed too (only a NULL key is random) */
	assert_int_equal(
		sv_partition_of("", 0, 8),
		rd_kafka_msg_partitioner_murmur2(NULL, "", 0, 8, NULL, NULL));
}

static void test_key_text(void **state)
{
	(void)state;
	char tmp[64];
	size_t len;
	sv_value_t v = {.type = SV_T_INT64, .v.i = -42};
	const char *k = sv_key_text(&v, tmp, sizeof(tmp), &len);
	assert_int_equal(len, 3);
	assert_memory_equal(k, "-42", 3);
	v = (sv_value_t){.type = SV_T_BOOL, .v.b = true};
	k = sv_key_text(&v, tmp, sizeof(tmp), &len);
	assert_memory_equal(k, "true", 4);
	v = (sv_value_t){.type = SV_T_FLOAT64, .v.f = 0.1};
	k = sv_key_text(&v, tmp, sizeof(tmp), &len);
	assert_int_equal(len, 3);
	assert_memory_equal(k, "0.1", 3);
	v = (sv_value_t){.type = SV_T_STRING, .v.s = "user-7", .len = 6};
	k = sv_key_text(&v, tmp, sizeof(tmp), &len);
	assert_ptr_equal(k, v.v.s);
	assert_int_equal(len, 6);
	v = (sv_value_t){.type = SV_T_NULL};
	assert_null(sv_key_text(&v, tmp, sizeof(tmp), &len));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_librdkafka),
		cmocka_unit_test(test_key_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
