/* test_observe.c — the observation ring: sequence numbers, pages with
 * ?after=, bounded size with the oldest dropped, fields merged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "supervisor/observe.h"

static void test_pages_and_fields(void **state)
{
	(void)state;
	sv_obslog_t *log = sv_obslog_new("job1", 10);
	assert_int_equal(sv_obslog_add(log, 0, "job_submitted",
				       json_pack("{s:s}", "plan_id", "abc")),
			 1);
	for (int i = 0; i < 4; i++)
		sv_obslog_add(log, 1, "lag_sample",
			      json_pack("{s:i}", "records", i));
	json_t *p = sv_obslog_page(log, 0, 100);
	json_t *a = json_object_get(p, "observations");
	assert_int_equal(json_array_size(a), 5);
	json_t *first = json_array_get(a, 0);
	assert_string_equal(json_string_value(json_object_get(first, "kind")),
			    "job_submitted");
	assert_string_equal(json_string_value(json_object_get(first, "job_id")),
			    "job1");
	assert_string_equal(
		json_string_value(json_object_get(first, "plan_id")), "abc");
	assert_int_equal(json_integer_value(json_object_get(first, "seq")), 1);
	assert_int_equal(json_integer_value(json_object_get(first, "attempt")),
			 0);
	assert_non_null(json_object_get(first, "time"));
	assert_int_equal(json_integer_value(json_object_get(p, "next_after")),
			 5);
	json_decref(p);
	/* after=2, limit 2: seq 3 and 4 */
	p = sv_obslog_page(log, 2, 2);
	a = json_object_get(p, "observations");
	assert_int_equal(json_array_size(a), 2);
	assert_int_equal(json_integer_value(
				 json_object_get(json_array_get(a, 0), "seq")),
			 3);
	assert_int_equal(json_integer_value(json_object_get(p, "next_after")),
			 4);
	json_decref(p);
	/* nothing new: empty page, next_after stays */
	p = sv_obslog_page(log, 5, 10);
	assert_int_equal(json_array_size(json_object_get(p, "observations")),
			 0);
	assert_int_equal(json_integer_value(json_object_get(p, "next_after")),
			 5);
	json_decref(p);
	sv_obslog_destroy(log);
}

static void test_bounded_drops_oldest(void **state)
{
	(void)state;
	sv_obslog_t *log = sv_obslog_new("j", 8);
	for (int i = 0; i < 30; i++)
		sv_obslog_add(log, 1, "x", NULL);
	json_t *p = sv_obslog_page(log, 0, 100);
	json_t *a = json_object_get(p, "observations");
	assert_int_equal(json_array_size(a), 8);
	assert_int_equal(json_integer_value(
				 json_object_get(json_array_get(a, 0), "seq")),
			 23);
	assert_int_equal(json_integer_value(json_object_get(p, "first_seq")),
			 23);
	assert_int_equal(json_integer_value(json_object_get(p, "dropped")), 22);
	json_decref(p);
	sv_obslog_destroy(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages_and_fields),
		cmocka_unit_test(test_bounded_drops_oldest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
