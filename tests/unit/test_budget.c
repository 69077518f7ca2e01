/* test_budget.c — the split of a job's memory budget (supervisor/budget.c):
 * no budget is no limit, the shares of a 64 MiB job at parallelism 1 and
 * 2 with and without a join, and for every budget and parallelism the
 * Kafka clients of a member leave a sixth of its share to state (of
 * which the join's waiting rows may take a third), a join's two consumers
 * together get at most half again what one consumer gets without a join,
 * and the kept result
 * is a sixteenth of the job's budget whatever the parallelism. Without a
 * budget the Kafka clients are sized as a member with 96 MiB of its own
 * (at any parallelism), nothing else is, and the deep-queue switch leaves
 * them unsized; with a budget the client sizing is the budget's share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/util.h"
#include "supervisor/budget.h"

#define MIB (1LL << 20)

static void test_no_budget(void **state)
{
	SV_UNUSED(state);
	for (int p = SV_BUDGET_CONSUMER; p <= SV_BUDGET_RESULT; p++) {
		assert_int_equal(sv_budget_share(0, 1, false, p), 0);
		assert_int_equal(sv_budget_share(-1, 2, true, p), 0);
	}
}

static void test_64_mib(void **state)
{
	SV_UNUSED(state);
	int64_t b = 64 * MIB;
	assert_int_equal(sv_budget_share(b, 1, false, SV_BUDGET_CONSUMER),
			 16 * MIB);
	assert_int_equal(sv_budget_share(b, 1, false, SV_BUDGET_JOIN_CONSUMER),
			 0);
	assert_int_equal(sv_budget_share(b, 1, false, SV_BUDGET_SINK),
			 16 * MIB);
	assert_int_equal(sv_budget_share(b, 1, false, SV_BUDGET_SIDE_SINK),
			 2 * MIB);
	assert_int_equal(sv_budget_share(b, 1, true, SV_BUDGET_CONSUMER),
			 12 * MIB);
	assert_int_equal(sv_budget_share(b, 1, true, SV_BUDGET_JOIN_CONSUMER),
			 12 * MIB);
	assert_int_equal(sv_budget_share(b, 1, true, SV_BUDGET_JOIN_WAITING),
			 4 * MIB);
	assert_int_equal(sv_budget_share(b, 1, true, SV_BUDGET_RESULT),
			 4 * MIB);
	/* parallelism 2: each member half, the result still the job's */
	assert_int_equal(sv_budget_share(b, 2, true, SV_BUDGET_CONSUMER),
			 6 * MIB);
	assert_int_equal(sv_budget_share(b, 2, false, SV_BUDGET_SINK), 8 * MIB);
	assert_int_equal(sv_budget_share(b, 2, true, SV_BUDGET_JOIN_WAITING),
			 2 * MIB);
	assert_int_equal(sv_budget_share(b, 2, false, SV_BUDGET_RESULT),
			 4 * MIB);
}

static void test_parts_within_share(void **state)
{
	SV_UNUSED(state);
	for (int64_t mb = 16; mb <= 1048576; mb = mb * 3 + 1)
		for (int n = 1; n <= 16 && mb >= 16 * n; n++) {
			int64_t b = mb * MIB, per = b / n;
			for (int j = 0; j <= 1; j++) {
				bool join = j;
				int64_t sum = sv_budget_share(
						      b, n, join,
						      SV_BUDGET_CONSUMER) +
					sv_budget_share(
						      b, n, join,
						      SV_BUDGET_JOIN_CONSUMER) +
					sv_budget_share(b, n, join,
							SV_BUDGET_SINK) +
					2 *
						sv_budget_share(
							b, n, join,
							SV_BUDGET_SIDE_SINK);
				/* the clients leave state at least a sixth,
				 * of which the join's waiting rows (state)
				 * may take a third */
				assert_true(sum <= per);
				assert_true(per - sum >= per / 6);
				assert_true(sv_budget_share(
						    b, n, join,
						    SV_BUDGET_JOIN_WAITING) <=
					    (per - sum) / 3);
				assert_int_equal(
					sv_budget_share(b, n, join,
							SV_BUDGET_RESULT),
					b / 16);
			}
			int64_t alone = sv_budget_share(b, n, false,
							SV_BUDGET_CONSUMER);
			int64_t both = sv_budget_share(b, n, true,
						       SV_BUDGET_CONSUMER) +
				sv_budget_share(b, n, true,
						SV_BUDGET_JOIN_CONSUMER);
			/* a join's table needs a prefetch of its own:
			 * 3/16 each, 3/8 together against 1/4 alone */
			assert_true(both <= alone * 3 / 2 + 16);
			assert_true(both >= alone);
		}
}

static void test_client_default(void **state)
{
	SV_UNUSED(state);
	for (int n = 1; n <= 8; n *= 2) {
		assert_int_equal(sv_budget_client(0, n, false,
						  SV_BUDGET_CONSUMER, false),
				 24 * MIB);
		assert_int_equal(
			sv_budget_client(0, n, false, SV_BUDGET_SINK, false),
			24 * MIB);
		assert_int_equal(sv_budget_client(0, n, false,
						  SV_BUDGET_SIDE_SINK, false),
				 3 * MIB);
		assert_int_equal(
			sv_budget_client(0, n, true, SV_BUDGET_CONSUMER, false),
			18 * MIB);
		assert_int_equal(sv_budget_client(0, n, true,
						  SV_BUDGET_JOIN_CONSUMER,
						  false),
				 18 * MIB);
		/* no budget bounds nothing but the clients */
		assert_int_equal(sv_budget_client(0, n, true,
						  SV_BUDGET_JOIN_WAITING,
						  false),
				 0);
		assert_int_equal(
			sv_budget_client(0, n, false, SV_BUDGET_RESULT, false),
			0);
		/* STREAMVISOR_DEEP_QUEUES: librdkafka's own maxima */
		for (int p = SV_BUDGET_CONSUMER; p <= SV_BUDGET_RESULT; p++)
			assert_int_equal(sv_budget_client(0, n, true, p, true),
					 0);
	}
	/* a budget decides, whatever the switch */
	for (int p = SV_BUDGET_CONSUMER; p <= SV_BUDGET_RESULT; p++)
		for (int d = 0; d <= 1; d++)
			assert_int_equal(
				sv_budget_client(256 * MIB, 2, true, p, d),
				sv_budget_share(256 * MIB, 2, true, p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_budget),
		cmocka_unit_test(test_64_mib),
		cmocka_unit_test(test_parts_within_share),
		cmocka_unit_test(test_client_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
