/* test_kafka_rebalance.c — distributed mode's error class on the
 * librdkafka mock cluster (SCALE-OUT.md T12, docs/cluster.md): a
 * TxnOffsetCommit refused with ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or
 * FENCED_INSTANCE_ID comes out of the Kafka sink's txn_offsets as category
 * `rebalance`, retriable, not fatal; the transaction aborts and the same
 * producer goes on (no new init_transactions). The offsets are sent with
 * metadata handed in by txn_group (generation, member, instance), as the
 * worker does in distributed mode. The real broker's refusals are in
 * tests/integration/it_kafka_contract.c and it_cluster.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "kafka/devcluster.h"
#include "sinks/sink.h"

typedef struct fx {
	sv_devcluster_t *dc;
	char *bootstrap;
	sv_cluster_t cluster;
	sv_schema_t *schema;
	sv_sink_t *snk;
} fx_t;

static void ok(sv_error_t *err)
{
	if (err)
		fail_msg("unexpected error [%s]: %s (cause: %s)",
			 sv_errcat_name(err->category), err->message,
			 err->cause ? err->cause : "-");
}

static int setup(void **state)
{
	fx_t *fx = calloc(1, sizeof(*fx));
	sv_error_t *err = sv_devcluster_start(1, &fx->bootstrap, &fx->dc);
	if (err) {
		fprintf(stderr, "devcluster: %s\n", err->message);
		sv_error_destroy(err);
		free(fx);
		return -1;
	}
	fx->cluster.name = "default";
	fx->cluster.bootstrap = fx->bootstrap;
	fx->cluster.dev_embedded = true;
	fx->schema = sv_schema_new();
	sv_schema_add(fx->schema, "id", SV_T_INT64, false);
	ok(sv_devcluster_create_topic(fx->dc, "out", 1));
	sv_sink_conf_t c = {
		.kind = "kafka",
		.job_id = "job-rb",
		.attempt = 1,
		.cluster = &fx->cluster,
		.topic = "out",
		.format = SV_FMT_JSON,
		.schema = fx->schema,
		.key_column = -1,
		.transactional = true,
		.transactional_id = "streamvisor-job-rb-n1-t0",
		.transaction_timeout_ms = 10000,
		.group_id = "streamvisor-job-rb",
	};
	ok(sv_sink_open(&c, &fx->snk));
	/* the member's metadata, as the source's group_metadata writes it */
	rd_kafka_consumer_group_metadata_t *md =
		rd_kafka_consumer_group_metadata_new_with_genid(
			"streamvisor-job-rb", 7, "member-1", "n1-t0");
	void *bytes = NULL;
	size_t len = 0;
	rd_kafka_error_t *e = rd_kafka_consumer_group_metadata_write(md, &bytes,
								     &len);
	assert_null(e);
	ok(sv_sink_txn_group(fx->snk, bytes, len));
	free(bytes);
	rd_kafka_consumer_group_metadata_destroy(md);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fx_t *fx = *state;
	sv_sink_close(fx->snk);
	sv_devcluster_stop(fx->dc);
	free(fx->bootstrap);
	sv_schema_destroy(fx->schema);
	free(fx);
	return 0;
}

static sv_error_t *send_offsets(fx_t *fx, int64_t ck, int64_t offset)
{
	int32_t part = 0;
	ok(sv_sink_txn_begin(fx->snk));
	sv_buf_t st;
	sv_buf_init(&st);
	ok(sv_sink_txn_prepare(fx->snk, ck, &st));
	sv_buf_release(&st);
	return sv_sink_txn_offsets(fx->snk, ck, "in", &part, &offset, 1);
}

static void test_stale_generation_is_rebalance(void **state)
{
	fx_t *fx = *state;
	static const struct {
		int code;
		const char *name;
	} codes[] = {
		{22, "ILLEGAL_GENERATION"},
		{25, "UNKNOWN_MEMBER_ID"},
		{82, "FENCED_INSTANCE_ID"},
	};
	int64_t ck = 1;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		ok(sv_devcluster_push_errors(fx->dc, "txn_offset_commit",
					     codes[i].code, 1));
		sv_error_t *err = send_offsets(fx, ck++, 10 * (int64_t)(i + 1));
		if (!err)
			fail_msg("%s: offsets accepted", codes[i].name);
		if (err->category != SV_ERR_REBALANCE)
			fail_msg("%s: category %s (%s)", codes[i].name,
				 sv_errcat_name(err->category), err->message);
		assert_true(err->retriable);
		assert_false(err->fatal);
		assert_int_equal(err->cause_code, codes[i].code);
		sv_error_destroy(err);
		/* abort and carry on with the same producer */
		ok(sv_sink_txn_abort(fx->snk));
	}
	/* nothing pushed: the next transaction commits */
	ok(send_offsets(fx, ck, 100));
	ok(sv_sink_txn_commit(fx->snk));
}

/* A refusal of another kind keeps its category: the class is only the
 * group's word that the member is stale. */
static void test_other_errors_keep_their_class(void **state)
{
	fx_t *fx = *state;
	/* 16 NOT_COORDINATOR: retriable, retried inside txn_offsets */
	ok(sv_devcluster_push_errors(fx->dc, "txn_offset_commit", 16, 1));
	ok(send_offsets(fx, 50, 5));
	ok(sv_sink_txn_commit(fx->snk));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_stale_generation_is_rebalance, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_other_errors_keep_their_class, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
