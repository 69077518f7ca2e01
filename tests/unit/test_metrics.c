/* test_metrics.c — the Prometheus text exposition writer
 * (supervisor/metrics.c): exact output for families, samples, label
 * escaping and value formatting. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/util.h"
#include "supervisor/metrics.h"

static int setup(void **state)
{
	sv_buf_t *b = sv_calloc(1, sizeof(*b));
	sv_buf_init(b);
	*state = b;
	return 0;
}

static int teardown(void **state)
{
	sv_buf_release(*state);
	free(*state);
	return 0;
}

static void test_family_and_samples(void **state)
{
	sv_buf_t *b = *state;
	sv_buf_t labels;
	sv_buf_init(&labels);
	sv_prom_label(&labels, "job", "j-1");
	sv_prom_label(&labels, "topic", "orders");
	sv_prom_family(b, "streamvisor_lag_records", "gauge",
		       "Records behind the end of the partition.");
	sv_prom_sample(b, "streamvisor_lag_records", labels.data, 42);
	sv_prom_sample(b, "streamvisor_lag_records", NULL, 0);
	sv_prom_sample(b, "streamvisor_lag_records", "", 1.5);
	assert_string_equal(
		b->data,
		"# HELP streamvisor_lag_records Records behind the end of the "
		"partition.\n"
		"# TYPE streamvisor_lag_records gauge\n"
		"streamvisor_lag_records{job=\"j-1\",topic=\"orders\"} 42\n"
		"streamvisor_lag_records 0\n"
		"streamvisor_lag_records 1.5\n");
	sv_buf_release(&labels);
}

static void test_help_escaping(void **state)
{
	sv_buf_t *b = *state;
	sv_prom_family(b, "m", "counter", "a \\ b\nc \"q\"");
	/* HELP escapes backslash and newline, not quotes */
	assert_string_equal(b->data,
			    "# HELP m a \\\\ b\\nc \"q\"\n"
			    "# TYPE m counter\n");
}

static void test_label_escaping(void **state)
{
	sv_buf_t *b = *state;
	sv_prom_label(b, "path", "C:\\tmp\n\"x\"");
	sv_prom_label(b, "empty", "");
	sv_prom_label(b, "null", NULL);
	assert_string_equal(b->data,
			    "path=\"C:\\\\tmp\\n\\\"x\\\"\","
			    "empty=\"\",null=\"\"");
}

static void test_values(void **state)
{
	sv_buf_t *b = *state;
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{0, "0"},
		{-0.0, "0"},
		{1, "1"},
		{-7, "-7"},
		{1e15, "1000000000000000"},
		{9007199254740992.0, "9007199254740992"},
		{1e20, "1e+20"},
		{0.1, "0.1"},
		{2.5e-7, "2.5e-07"},
		{1.0 / 3.0, "0.3333333333333333"},
		{NAN, "NaN"},
		{INFINITY, "+Inf"},
		{-INFINITY, "-Inf"},
	};
	for (size_t i = 0; i < SV_ARRAY_LEN(cases); i++) {
		sv_buf_reset(b);
		sv_prom_value(b, cases[i].v);
		assert_string_equal(b->data, cases[i].want);
		/* what is printed reads back as the same value */
		if (!isnan(cases[i].v))
			assert_true(strtod(b->data, NULL) == cases[i].v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_family_and_samples, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_help_escaping, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_label_escaping, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
