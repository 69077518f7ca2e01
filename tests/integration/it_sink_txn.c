/* it_sink_txn.c — the exactly-once Kafka sink and the source's
 * committed_checkpoint() against the real broker (a mock cluster cannot
 * show this: it writes no transaction markers).
 *
 *  - visibility: txn 1 committed, txn 2 aborted, txn 3 committed with the
 *    input offsets (metadata streamvisor:ck=3), txn 4 with offsets for
 *    ck=4 aborted. A read_committed reader sees exactly txn 1 and txn 3; a
 *    read_uncommitted reader (negative control) also sees txn 2 and 4. A
 *    Kafka source on the input with the job's group reports
 *    committed_checkpoint() == 3 and starts exactly at txn 3's offsets; a
 *    source of another group reports -1.
 *  - zombie fencing: sink A writes in an open transaction; sink B opens
 *    with the same transactional id (init_transactions fences A and aborts
 *    its transaction) and commits its own. A's commit fails fatally; a
 *    read_committed reader sees only B's rows, read_uncommitted both.
 *  - queue full inside a transaction: with queue.buffering.max.messages
 *    at 32, one write of 2,000 rows (the sink's batched produce hands the
 *    refused tail in again as deliveries drain the queue) commits all of
 *    them, in order on a one-partition topic; a second transaction whose
 *    write also meets the full queue is aborted and stays invisible. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "sinks/sink.h"
#include "sources/source.h"
#include "tests/integration/testkit.h"

#define IN_PARTS 4
#define IN_RECORDS 40

typedef struct fixture {
	sv_cluster_t cluster;
	sv_schema_t *schema; /* {id int64, v string}: input and output */
	char *in_topic;
	sv_batch_t b;
} fixture_t;

static int setup(void **state)
{
	fixture_t *f = calloc(1, sizeof(*f));
	f->cluster.name = "default";
	f->cluster.bootstrap = (char *)tk_bootstrap();
	f->schema = sv_schema_new();
	sv_schema_add(f->schema, "id", SV_T_INT64, true);
	sv_schema_add(f->schema, "v", SV_T_STRING, true);
	sv_batch_init(&f->b, f->schema);
	f->in_topic = tk_unique("it-txn-in");
	tk_create_topic(f->in_topic, IN_PARTS);
	char *payloads[IN_RECORDS];
	for (int i = 0; i < IN_RECORDS; i++)
		if (asprintf(&payloads[i], "{\"id\":%d,\"v\":\"in\"}", i) < 0)
			abort();
	tk_produce(f->in_topic, (const char *const *)payloads, IN_RECORDS);
	for (int i = 0; i < IN_RECORDS; i++)
		free(payloads[i]);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture_t *f = *state;
	sv_batch_release(&f->b);
	sv_schema_destroy(f->schema);
	free(f->in_topic);
	free(f);
	return 0;
}

static void ok(sv_error_t *err, const char *what)
{
	if (err)
		fail_msg("%s: %s (%s)", what, err->message,
			 err->cause ? err->cause : "-");
}

/* cluster: NULL for the fixture's */
static sv_sink_t *open_txn_sink_on(fixture_t *f, const sv_cluster_t *cluster,
				   const char *topic, const char *txn_id,
				   const char *group)
{
	sv_sink_conf_t c = {
		.kind = "kafka",
		.job_id = "it-sink-txn",
		.attempt = 1,
		.cluster = cluster ? cluster : &f->cluster,
		.topic = topic,
		.format = SV_FMT_JSON,
		.schema = f->schema,
		.key_column = -1,
		.transactional = true,
		.transactional_id = txn_id,
		.transaction_timeout_ms = 60000,
		.group_id = group,
	};
	sv_sink_t *snk = NULL;
	ok(sv_sink_open(&c, &snk), "open transactional sink");
	assert_true(sv_sink_transactional(snk));
	return snk;
}

static sv_sink_t *open_txn_sink(fixture_t *f, const char *topic,
				const char *txn_id, const char *group)
{
	return open_txn_sink_on(f, NULL, topic, txn_id, group);
}

static sv_source_t *open_source(fixture_t *f, const char *group)
{
	sv_source_conf_t c = {
		.kind = "kafka",
		.job_id = "it-sink-txn",
		.attempt = 1,
		.cluster = &f->cluster,
		.topic = f->in_topic,
		.group_id = group,
		.start = SV_START_EARLIEST,
		.format = SV_FMT_JSON,
		.schema = f->schema,
	};
	sv_source_t *src = NULL;
	ok(sv_source_open(&c, &src), "open source");
	return src;
}

/* Write rows id = from..to-1 (v = tag). */
static void write_rows(fixture_t *f, sv_sink_t *snk, int from, int to,
		       const char *tag)
{
	sv_batch_reset(&f->b);
	for (int i = from; i < to; i++) {
		sv_value_t *row = sv_batch_add_row(&f->b, NULL);
		row[0] = sv_int(i);
		row[1] = sv_str(tag, (uint32_t)strlen(tag));
	}
	ok(sv_sink_write(snk, &f->b), "write");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The expected payloads for ranges [r[0], r[1]), [r[2], r[3]) … with tags. */
static void expect_exact(char **got, size_t ngot, const int *ranges,
			 const char *const *tags, size_t nranges)
{
	size_t n = 0;
	for (size_t k = 0; k < nranges; k++)
		n += (size_t)(ranges[2 * k + 1] - ranges[2 * k]);
	char **want = calloc(n ? n : 1, sizeof(char *));
	size_t w = 0;
	for (size_t k = 0; k < nranges; k++)
		for (int i = ranges[2 * k]; i < ranges[2 * k + 1]; i++)
			if (asprintf(&want[w++], "{\"id\":%d,\"v\":\"%s\"}", i,
				     tags[k]) < 0)
				abort();
	qsort(want, n, sizeof(char *), cmp_str);
	qsort(got, ngot, sizeof(char *), cmp_str);
	if (ngot != n)
		fail_msg("expected %zu records, read %zu", n, ngot);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(got[i], want[i]);
	for (size_t i = 0; i < n; i++)
		free(want[i]);
	free(want);
}

static void test_commit_abort_offsets(void **state)
{
	fixture_t *f = *state;
	char *out = tk_unique("it-txn-out");
	char *txn_id = tk_unique("streamvisor-it");
	char *group = tk_unique("streamvisor-it-group");
	const int32_t parts[IN_PARTS] = {0, 1, 2, 3};
	const int64_t offs3[IN_PARTS] = {3, 5, 7, 10};
	const int64_t offs4[IN_PARTS] = {4, 6, 8, 10};
	sv_buf_t st;

	tk_create_topic(out, 2);
	sv_buf_init(&st);
	sv_sink_t *snk = open_txn_sink(f, out, txn_id, group);

	/* writing outside a transaction is refused */
	write_rows(f, snk, 0, 0, "none"); /* no rows: nothing produced */
	sv_batch_reset(&f->b);
	sv_value_t *row = sv_batch_add_row(&f->b, NULL);
	row[0] = sv_int(-1);
	sv_error_t *err = sv_sink_write(snk, &f->b);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_RUNTIME);
	sv_error_destroy(err);

	/* txn 1: committed */
	ok(sv_sink_txn_begin(snk), "begin 1");
	write_rows(f, snk, 0, 10, "t1");
	ok(sv_sink_txn_prepare(snk, 1, &st), "prepare 1");
	assert_int_equal(st.len, 0); /* kafka keeps nothing in the record */
	ok(sv_sink_txn_commit(snk), "commit 1");
	assert_int_equal(snk->records_out, 10);

	/* txn 2: aborted after prepare */
	ok(sv_sink_txn_begin(snk), "begin 2");
	write_rows(f, snk, 100, 110, "t2");
	ok(sv_sink_txn_prepare(snk, 2, &st), "prepare 2");
	ok(sv_sink_txn_abort(snk), "abort 2");
	assert_int_equal(snk->records_out, 10);

	/* txn 3: committed with the input offsets of checkpoint 3 */
	ok(sv_sink_txn_begin(snk), "begin 3");
	write_rows(f, snk, 200, 210, "t3");
	ok(sv_sink_txn_prepare(snk, 3, &st), "prepare 3");
	ok(sv_sink_txn_offsets(snk, 3, f->in_topic, parts, offs3, IN_PARTS),
	   "offsets 3");
	ok(sv_sink_txn_commit(snk), "commit 3");
	assert_int_equal(snk->records_out, 20);

	/* txn 4: offsets of checkpoint 4 sent, then aborted */
	ok(sv_sink_txn_begin(snk), "begin 4");
	write_rows(f, snk, 300, 310, "t4");
	ok(sv_sink_txn_prepare(snk, 4, &st), "prepare 4");
	ok(sv_sink_txn_offsets(snk, 4, f->in_topic, parts, offs4, IN_PARTS),
	   "offsets 4");
	ok(sv_sink_txn_abort(snk), "abort 4");
	assert_int_equal(snk->records_out, 20);
	sv_sink_close(snk);

	static const int committed[] = {0, 10, 200, 210};
	static const char *const ctags[] = {"t1", "t3"};
	static const int all[] = {0, 10, 100, 110, 200, 210, 300, 310};
	static const char *const atags[] = {"t1", "t2", "t3", "t4"};
	char **lines;
	size_t n = tk_consume(out, 20, 30000, true, &lines);
	expect_exact(lines, n, committed, ctags, 2);
	tk_free_lines(lines, n);
	/* negative control: the reader can see aborted records */
	n = tk_consume(out, 40, 30000, false, &lines);
	expect_exact(lines, n, all, atags, 4);
	tk_free_lines(lines, n);

	/* recovery's view: the group's offsets carry checkpoint 3 */
	sv_source_t *src = open_source(f, group);
	assert_int_equal(sv_source_committed_checkpoint(src), 3);
	const sv_partpos_t *pos;
	size_t npos = sv_source_positions(src, &pos);
	assert_int_equal(npos, IN_PARTS);
	for (size_t i = 0; i < npos; i++) {
		assert_int_equal(pos[i].partition, parts[i]);
		assert_int_equal(pos[i].next_offset, offs3[i]);
	}
	/* and it reads from there: 40 - (3+5+7+10) = 15 records */
	size_t got = 0;
	bool eof = false;
	int64_t deadline = sv_mono_ms() + 20000;
	while (got < 15 && sv_mono_ms() < deadline) {
		sv_batch_reset(&f->b);
		ok(sv_source_poll(src, &f->b, 100, 200, &eof), "poll");
		got += f->b.nrows;
	}
	assert_int_equal(got, 15);
	sv_source_close(src);

	/* control: a group nobody committed for */
	char *other = tk_unique("streamvisor-it-other");
	src = open_source(f, other);
	assert_int_equal(sv_source_committed_checkpoint(src), -1);
	sv_source_close(src);

	free(other);
	sv_buf_release(&st);
	free(group);
	free(txn_id);
	free(out);
}

static void test_zombie_fenced(void **state)
{
	fixture_t *f = *state;
	char *out = tk_unique("it-txn-zombie");
	char *txn_id = tk_unique("streamvisor-it-z");
	char *group = tk_unique("streamvisor-it-zgroup");
	sv_buf_t st;

	tk_create_topic(out, 2);
	sv_buf_init(&st);

	/* A: an open transaction with acknowledged records */
	sv_sink_t *a = open_txn_sink(f, out, txn_id, group);
	ok(sv_sink_txn_begin(a), "A begin");
	write_rows(f, a, 0, 5, "zombie");
	ok(sv_sink_txn_prepare(a, 1, &st), "A prepare");

	/* B: same transactional id — fences A, aborts A's transaction */
	sv_sink_t *b = open_txn_sink(f, out, txn_id, group);
	ok(sv_sink_txn_begin(b), "B begin");
	write_rows(f, b, 10, 15, "new");
	ok(sv_sink_txn_prepare(b, 2, &st), "B prepare");
	ok(sv_sink_txn_commit(b), "B commit");

	/* A's commit fails: fenced, fatal, not retriable */
	sv_error_t *err = sv_sink_txn_commit(a);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_SINK_COMMIT);
	assert_true(err->fatal);
	assert_false(err->retriable);
	assert_non_null(strstr(err->message, txn_id));
	print_message("A commit: %s (cause %d: %s)\n", err->message,
		      err->cause_code, err->cause ? err->cause : "-");
	sv_error_destroy(err);
	/* the producer is done: nothing more is accepted */
	err = sv_sink_txn_begin(a);
	assert_non_null(err);
	sv_error_destroy(err);
	assert_int_equal(a->records_out, 0);
	assert_int_equal(b->records_out, 5);
	sv_sink_close(a);
	sv_sink_close(b);

	static const int committed[] = {10, 15};
	static const char *const ctags[] = {"new"};
	static const int all[] = {0, 5, 10, 15};
	static const char *const atags[] = {"zombie", "new"};
	char **lines;
	size_t n = tk_consume(out, 5, 30000, true, &lines);
	expect_exact(lines, n, committed, ctags, 1);
	tk_free_lines(lines, n);
	n = tk_consume(out, 10, 30000, false, &lines);
	expect_exact(lines, n, all, atags, 2);
	tk_free_lines(lines, n);

	sv_buf_release(&st);
	free(group);
	free(txn_id);
	free(out);
}

/* A crash after send_offsets (kill point after_send_offsets): the dead
 * producer's transaction, holding offsets for checkpoint 2, stays pending.
 * The group's offsets are then unstable: a read_committed source cannot
 * read them (KIP-447) until a new producer with the same transactional id
 * has fenced the old one and aborted its transaction — so in exactly-once
 * mode the sink must be opened before the source. Afterwards the source
 * sees checkpoint 1 and its offsets. */
static void test_pending_offsets_need_fencing(void **state)
{
	fixture_t *f = *state;
	char *out = tk_unique("it-txn-pending");
	char *txn_id = tk_unique("streamvisor-it-p");
	char *group = tk_unique("streamvisor-it-pgroup");
	const int32_t parts[IN_PARTS] = {0, 1, 2, 3};
	const int64_t offs1[IN_PARTS] = {1, 2, 3, 4};
	const int64_t offs2[IN_PARTS] = {5, 6, 7, 8};
	sv_buf_t st;

	tk_create_topic(out, 1);
	sv_buf_init(&st);
	sv_sink_t *a = open_txn_sink(f, out, txn_id, group);
	ok(sv_sink_txn_begin(a), "begin 1");
	write_rows(f, a, 0, 3, "c1");
	ok(sv_sink_txn_prepare(a, 1, &st), "prepare 1");
	ok(sv_sink_txn_offsets(a, 1, f->in_topic, parts, offs1, IN_PARTS),
	   "offsets 1");
	ok(sv_sink_txn_commit(a), "commit 1");
	ok(sv_sink_txn_begin(a), "begin 2");
	write_rows(f, a, 10, 13, "c2");
	ok(sv_sink_txn_prepare(a, 2, &st), "prepare 2");
	ok(sv_sink_txn_offsets(a, 2, f->in_topic, parts, offs2, IN_PARTS),
	   "offsets 2");
	/* "killed" here: A is neither committed nor closed (close aborts) */

	sv_source_conf_t c = {
		.kind = "kafka",
		.job_id = "it-sink-txn",
		.attempt = 2,
		.cluster = &f->cluster,
		.topic = f->in_topic,
		.group_id = group,
		.format = SV_FMT_JSON,
		.schema = f->schema,
	};
	sv_source_t *src = NULL;
	int64_t t0 = sv_mono_ms();
	sv_error_t *err = sv_source_open(&c, &src);
	print_message("source open with a pending offset commit: %s after "
		      "%lld ms\n",
		      err ? err->message : "succeeded",
		      (long long)(sv_mono_ms() - t0));
	if (!err) {
		/* must never report the uncommitted checkpoint 2 */
		assert_int_equal(sv_source_committed_checkpoint(src), 1);
		sv_source_close(src);
		fail_msg("read_committed source read unstable offsets");
	}
	assert_int_equal(err->category, SV_ERR_BINDING);
	assert_true(err->retriable);
	sv_error_destroy(err);

	/* the new attempt's sink fences A and aborts its transaction */
	sv_sink_t *b = open_txn_sink(f, out, txn_id, group);
	src = open_source(f, group);
	assert_int_equal(sv_source_committed_checkpoint(src), 1);
	const sv_partpos_t *pos;
	size_t npos = sv_source_positions(src, &pos);
	assert_int_equal(npos, IN_PARTS);
	for (size_t i = 0; i < npos; i++)
		assert_int_equal(pos[i].next_offset, offs1[i]);
	sv_source_close(src);
	sv_sink_close(b);
	sv_sink_close(a);

	static const int committed[] = {0, 3};
	static const char *const ctags[] = {"c1"};
	char **lines;
	size_t n = tk_consume(out, 3, 30000, true, &lines);
	expect_exact(lines, n, committed, ctags, 1);
	tk_free_lines(lines, n);

	sv_buf_release(&st);
	free(group);
	free(txn_id);
	free(out);
}

/* Queue full inside a transaction (see the file comment). */
static void test_txn_queue_full(void **state)
{
	fixture_t *f = *state;
	enum {
		N = 2000,
		N_ABORTED = 300
	};
	char *out = tk_unique("it-txn-qfull");
	char *txn_id = tk_unique("streamvisor-it-q");
	char *group = tk_unique("streamvisor-it-qgroup");
	sv_kv_t props[] = {
		{"queue.buffering.max.messages", "32"},
		{"linger.ms", "0"},
	};
	sv_cluster_t small = f->cluster;
	small.props = props;
	small.nprops = sizeof(props) / sizeof(props[0]);
	sv_buf_t st;

	tk_create_topic(out, 1);
	sv_buf_init(&st);
	sv_sink_t *snk = open_txn_sink_on(f, &small, out, txn_id, group);
	ok(sv_sink_txn_begin(snk), "begin 1");
	write_rows(f, snk, 0, N, "q"); /* 2,000 rows, a 32-message queue */
	ok(sv_sink_txn_prepare(snk, 1, &st), "prepare 1");
	ok(sv_sink_txn_commit(snk), "commit 1");
	assert_int_equal(snk->records_out, N);
	ok(sv_sink_txn_begin(snk), "begin 2");
	write_rows(f, snk, N, N + N_ABORTED, "aborted");
	ok(sv_sink_txn_abort(snk), "abort 2");
	assert_int_equal(snk->records_out, N);
	sv_sink_close(snk);
	char **lines;
	size_t n = tk_consume(out, N, 30000, true, &lines);

	assert_int_equal(n, N);
	for (size_t i = 0; i < n; i++) { /* one partition: in write order */
		char want[64];
		snprintf(want, sizeof(want), "{\"id\":%zu,\"v\":\"q\"}", i);
		assert_string_equal(lines[i], want);
	}
	tk_free_lines(lines, n);
	sv_buf_release(&st);
	free(group);
	free(txn_id);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_abort_offsets),
		cmocka_unit_test(test_zombie_fenced),
		cmocka_unit_test(test_pending_offsets_need_fencing),
		cmocka_unit_test(test_txn_queue_full),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
