/* test_history.c — the history ring (supervisor/history.c): samples once
 * an interval (the first at once), the oldest dropped past capacity, rates
 * over the one-second points, the lag's drain rate, and the columns of the
 * JSON document with since and limit. Time is passed in, so nothing
 * sleeps. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "supervisor/history.h"

static sv_hist_input_t at(uint64_t in, uint64_t out, int64_t lag)
{
	sv_hist_input_t i = {0};
	i.records_in = in;
	i.records_out = out;
	i.lag_records = lag;
	i.lag_s = NAN;
	i.event_lag_s = 0.5;
	return i;
}

static void test_interval_and_capacity(void **state)
{
	(void)state;
	sv_history_t *h = sv_history_new(3, 5000);
	int64_t t0 = 1000000;
	for (int64_t t = 0; t <= 30000; t += 100) {
		sv_hist_input_t in = at((uint64_t)t, (uint64_t)t / 2, 0);
		sv_history_observe(h, t0 + t, &in);
	}
	/* samples at 0, 5, ..., 30 s: 7 taken, the last 3 kept */
	assert_int_equal(sv_history_len(h), 3);
	assert_int_equal(sv_history_at(h, 0)->t_ms, t0 + 20000);
	assert_int_equal(sv_history_at(h, 2)->t_ms, t0 + 30000);
	assert_null(sv_history_at(h, 3));
	/* 1000 records in per 1000 ms */
	assert_true(fabs(sv_history_at(h, 2)->in_per_s - 1000.0) < 1e-9);
	assert_true(fabs(sv_history_at(h, 2)->out_per_s - 500.0) < 1e-9);
	sv_history_destroy(h);
}

static void test_rates(void **state)
{
	(void)state;
	sv_history_t *h = sv_history_new(10, 5000);
	double in, out, drain;
	assert_false(sv_history_rates(h, &in, &out, &drain));
	assert_true(isnan(in));
	/* 20 s: in at 300/s, lag shrinking 100/s; the window is 10 s */
	for (int64_t t = 0; t <= 20000; t += 100) {
		sv_hist_input_t i = at((uint64_t)(t * 3 / 10), 0,
				       5000 - t / 10);
		sv_history_observe(h, t, &i);
	}
	assert_true(sv_history_rates(h, &in, &out, &drain));
	assert_true(fabs(in - 300.0) < 1e-9);
	assert_true(fabs(out) < 1e-9);
	assert_true(fabs(drain - 100.0) < 1e-9);
	/* the lag grows: a negative drain rate */
	for (int64_t t = 20100; t <= 40000; t += 100) {
		sv_hist_input_t i = at(6000, 0, 3000 + (t - 20000) / 100);
		sv_history_observe(h, t, &i);
	}
	assert_true(sv_history_rates(h, &in, &out, &drain));
	assert_true(fabs(in) < 1e-9);
	assert_true(drain < 0);
	sv_history_destroy(h);
}

static void test_json(void **state)
{
	(void)state;
	sv_history_t *h = sv_history_new(10, 5000);
	for (int64_t t = 0; t < 20000; t += 500) {
		sv_hist_input_t i = at((uint64_t)t, 0, -1);
		sv_history_observe(h, 1000000 + t, &i);
	}
	json_t *o = sv_history_json(h, 0, 100);
	assert_int_equal(json_integer_value(json_object_get(o, "count")), 4);
	json_t *s = json_object_get(o, "series");
	json_t *t = json_object_get(s, "t");
	assert_int_equal(json_array_size(t), 4);
	assert_true(fabs(json_real_value(json_array_get(t, 0)) - 1000.0) <
		    1e-9);
	/* unknown lag and watermark lag are null, the first rate too */
	assert_true(json_is_null(
		json_array_get(json_object_get(s, "lag_records"), 0)));
	assert_true(json_is_null(
		json_array_get(json_object_get(s, "lag_seconds"), 1)));
	assert_true(json_is_null(
		json_array_get(json_object_get(s, "records_in_per_s"), 0)));
	assert_true(fabs(json_real_value(json_array_get(
				 json_object_get(s, "records_in_per_s"), 1)) -
			 1000.0) < 1e-9);
	json_decref(o);
	/* since drops samples at or before it; limit keeps the newest */
	o = sv_history_json(h, 1005000, 100);
	assert_int_equal(json_integer_value(json_object_get(o, "count")), 2);
	json_decref(o);
	o = sv_history_json(h, 0, 1);
	t = json_object_get(json_object_get(o, "series"), "t");
	assert_true(fabs(json_real_value(json_array_get(t, 0)) - 1015.0) <
		    1e-9);
	json_decref(o);
	/* no history yet: an empty document */
	o = sv_history_json(NULL, 0, 10);
	assert_int_equal(json_integer_value(json_object_get(o, "count")), 0);
	json_decref(o);
	sv_history_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_and_capacity),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
