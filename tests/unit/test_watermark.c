/* test_watermark.c — per-partition watermarks: max event time minus the
 * out-of-orderness minus 1, combined as the minimum over partitions that
 * are not idle, idle partitions excluded after idle_timeout_ms, a known
 * partition without data holding back, all idle holding, never going back,
 * and restore from checkpoint values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/watermark.h"

#define NONE SV_WATERMARK_NONE

static int setup(void **state)
{
	*state = sv_watermarks_new(100, 1000);
	return 0;
}

static int teardown(void **state)
{
	sv_watermarks_destroy(*state);
	return 0;
}

static void test_single_partition(void **state)
{
	sv_watermarks_t *wm = *state;
	assert_int_equal(sv_watermarks_current(wm, 0), NONE);
	sv_watermarks_observe(wm, 0, 5000, 0);
	/* Flink's BoundedOutOfOrdernessWatermarks: max - ooo - 1 */
	assert_int_equal(sv_watermarks_partition(wm, 0), 4899);
	assert_int_equal(sv_watermarks_current(wm, 0), 4899);
	sv_watermarks_observe(wm, 0, 4000, 1); /* out of order: no effect */
	assert_int_equal(sv_watermarks_current(wm, 1), 4899);
	sv_watermarks_observe(wm, 0, 6000, 2);
	assert_int_equal(sv_watermarks_current(wm, 2), 5899);
}

static void test_min_over_partitions(void **state)
{
	sv_watermarks_t *wm = *state;
	sv_watermarks_observe(wm, 0, 5000, 0);
	sv_watermarks_observe(wm, 1, 3000, 0);
	sv_watermarks_observe(wm, 2, 9000, 0);
	assert_int_equal(sv_watermarks_current(wm, 0), 2899);
	sv_watermarks_observe(wm, 1, 7000, 10);
	assert_int_equal(sv_watermarks_current(wm, 10), 4899);
	assert_int_equal(sv_watermarks_partition(wm, 2), 8899);
	assert_int_equal(sv_watermarks_partition(wm, 7), NONE);
}

static void test_known_partition_without_data_holds(void **state)
{
	sv_watermarks_t *wm = *state;
	sv_watermarks_add_partition(wm, 0, 0);
	sv_watermarks_add_partition(wm, 1, 0);
	sv_watermarks_observe(wm, 0, 5000, 10);
	/* partition 1 has no data and is not idle yet: held */
	assert_int_equal(sv_watermarks_current(wm, 10), NONE);
	assert_false(sv_watermarks_idle(wm, 1, 999));
	assert_int_equal(sv_watermarks_current(wm, 999), NONE);
	/* idle after idle_timeout_ms without a record: excluded */
	assert_true(sv_watermarks_idle(wm, 1, 1000));
	assert_int_equal(sv_watermarks_current(wm, 1000), 4899);
}

static void test_idle_excluded_and_back(void **state)
{
	sv_watermarks_t *wm = *state;
	sv_watermarks_observe(wm, 0, 1000, 0);
	sv_watermarks_observe(wm, 1, 5000, 0);
	assert_int_equal(sv_watermarks_current(wm, 0), 899);
	/* partition 1 keeps receiving, partition 0 goes quiet */
	sv_watermarks_observe(wm, 1, 8000, 900);
	assert_int_equal(sv_watermarks_current(wm, 999), 899);
	assert_false(sv_watermarks_idle(wm, 0, 999));
	assert_true(sv_watermarks_idle(wm, 0, 1000));
	assert_int_equal(sv_watermarks_current(wm, 1000), 7899);
	/* 0 comes back behind: the combined watermark never goes back */
	sv_watermarks_observe(wm, 0, 2000, 1100);
	assert_false(sv_watermarks_idle(wm, 0, 1100));
	assert_int_equal(sv_watermarks_current(wm, 1100), 7899);
	/* ... and holds it until it catches up */
	sv_watermarks_observe(wm, 1, 12000, 1200);
	assert_int_equal(sv_watermarks_current(wm, 1200), 7899);
	sv_watermarks_observe(wm, 0, 10000, 1300);
	assert_int_equal(sv_watermarks_current(wm, 1300), 9899);
}

static void test_all_idle_holds(void **state)
{
	sv_watermarks_t *wm = *state;
	sv_watermarks_observe(wm, 0, 1000, 0);
	sv_watermarks_observe(wm, 1, 2000, 0);
	assert_int_equal(sv_watermarks_current(wm, 0), 899);
	/* every partition idle: stays where it was (not max, not NONE) */
	assert_int_equal(sv_watermarks_current(wm, 5000), 899);
	assert_int_equal(sv_watermarks_current(wm, 50000), 899);
	sv_watermarks_observe(wm, 1, 3000, 50001);
	assert_int_equal(sv_watermarks_current(wm, 50001), 2899);
}

static void test_no_idle_timeout(void **state)
{
	(void)state;
	sv_watermarks_t *wm = sv_watermarks_new(0, 0);
	sv_watermarks_observe(wm, 0, 1000, 0);
	sv_watermarks_add_partition(wm, 1, 0);
	assert_false(sv_watermarks_idle(wm, 1, INT64_MAX));
	assert_int_equal(sv_watermarks_current(wm, INT64_MAX), NONE);
	sv_watermarks_observe(wm, 1, 500, 1);
	assert_int_equal(sv_watermarks_current(wm, 1), 499);
	sv_watermarks_destroy(wm);
	/* negative arguments are 0 */
	wm = sv_watermarks_new(-5, -1);
	sv_watermarks_observe(wm, 0, 1000, 0);
	assert_int_equal(sv_watermarks_current(wm, 1 << 30), 999);
	sv_watermarks_destroy(wm);
}

static void test_remove_partition(void **state)
{
	sv_watermarks_t *wm = *state;
	sv_watermarks_observe(wm, 0, 1000, 0);
	sv_watermarks_observe(wm, 3, 5000, 0);
	assert_int_equal(sv_watermarks_current(wm, 0), 899);
	sv_watermarks_remove_partition(wm, 0);
	assert_int_equal(sv_watermarks_partition(wm, 0), NONE);
	assert_int_equal(sv_watermarks_current(wm, 1), 4899);
	assert_int_equal(sv_watermarks_next_partition(wm, -1), 3);
	assert_int_equal(sv_watermarks_next_partition(wm, 3), -1);
}

static void test_iterate_and_unpartitioned(void **state)
{
	sv_watermarks_t *wm = *state;
	sv_watermarks_add_partition(wm, 5, 0);
	sv_watermarks_observe(wm, 17, 1000, 0); /* grows the table */
	sv_watermarks_observe(wm, -1, 2000, 0); /* unpartitioned: 0 */
	assert_int_equal(sv_watermarks_next_partition(wm, -1), 0);
	assert_int_equal(sv_watermarks_next_partition(wm, 0), 5);
	assert_int_equal(sv_watermarks_next_partition(wm, 5), 17);
	assert_int_equal(sv_watermarks_next_partition(wm, 17), -1);
	assert_int_equal(sv_watermarks_partition(wm, -1), 1899);
}

static void test_restore(void **state)
{
	sv_watermarks_t *wm = *state;
	sv_watermarks_set(wm, 0, 4899, 0);
	sv_watermarks_set(wm, 1, NONE, 0);
	sv_watermarks_set_current(wm, 3000);
	assert_int_equal(sv_watermarks_partition(wm, 0), 4899);
	assert_int_equal(sv_watermarks_partition(wm, 1), NONE);
	/* 1 has no data: the combined one is the restored value */
	assert_int_equal(sv_watermarks_current(wm, 10), 3000);
	/* an older record does not lower a restored partition */
	sv_watermarks_observe(wm, 0, 100, 20);
	assert_int_equal(sv_watermarks_partition(wm, 0), 4899);
	sv_watermarks_observe(wm, 1, 2000, 20);
	/* min is 1899 < 3000: never below the restored watermark */
	assert_int_equal(sv_watermarks_current(wm, 20), 3000);
	sv_watermarks_observe(wm, 1, 9000, 30);
	assert_int_equal(sv_watermarks_current(wm, 30), 4899);
}

static void test_extreme_values(void **state)
{
	sv_watermarks_t *wm = *state;
	/* no overflow near the ends of int64 */
	sv_watermarks_observe(wm, 0, INT64_MIN + 5, 0);
	assert_int_equal(sv_watermarks_partition(wm, 0), NONE);
	assert_int_equal(sv_watermarks_current(wm, 0), NONE);
	sv_watermarks_observe(wm, 0, INT64_MAX, 0);
	assert_int_equal(sv_watermarks_current(wm, 0), INT64_MAX - 101);
	/* idle clocks far apart: no overflow (UBSan), idle */
	sv_watermarks_add_partition(wm, 2, INT64_MIN);
	assert_true(sv_watermarks_idle(wm, 2, INT64_MAX));
	assert_false(sv_watermarks_idle(wm, 2, INT64_MIN));
	assert_int_equal(sv_watermarks_current(wm, INT64_MAX), INT64_MAX - 101);
	sv_watermarks_set(wm, 1, INT64_MAX, 0);
	assert_int_equal(sv_watermarks_partition(wm, 1), NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_single_partition),
		T(test_min_over_partitions),
		T(test_known_partition_without_data_holds),
		T(test_idle_excluded_and_back),
		T(test_all_idle_holds),
		T(test_no_idle_timeout),
		T(test_remove_partition),
		T(test_iterate_and_unpartitioned),
		T(test_restore),
		T(test_extreme_values),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
