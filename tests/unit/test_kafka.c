/* test_kafka.c — the Kafka source and sink drivers against the embedded
 * development cluster (librdkafka's in-process mock cluster; no network,
 * no real broker).
 *
 * The group fixture starts one 3-broker development cluster; every test
 * creates its own topics, so tests are independent. Records are produced
 * with our sink (JSON, keyed) and read back with our source, and each test
 * checks exact output: every id exactly once with its field values, the
 * partition/offset metadata, and positions that agree with what was read.
 * Waiting is on conditions with deadlines, never sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "core/codec.h"
#include "core/partition.h"
#include "core/util.h"
#include "sinks/sink.h"
#include "kafka/devcluster.h"
#include "sources/source.h"

#define DEADLINE_MS 8000
#define NPARTS 4

enum {
	F_ID,
	F_REGION,
	F_AMOUNT,
	F_TS
};

typedef struct fx {
	sv_devcluster_t *dc;
	char *bootstrap;
	sv_cluster_t cluster;
	sv_schema_t *schema;
} fx_t;

static const char *const regions[] = {"eu", "us", "apac", "latam", "mea"};

static int group_setup(void **state)
{
	fx_t *fx = calloc(1, sizeof(*fx));
	sv_error_t *err = sv_devcluster_start(3, &fx->bootstrap, &fx->dc);
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
	sv_schema_add(fx->schema, "region", SV_T_STRING, true);
	sv_schema_add(fx->schema, "amount", SV_T_FLOAT64, true);
	sv_schema_add(fx->schema, "ts", SV_T_TIMESTAMP, true);
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	fx_t *fx = *state;
	sv_devcluster_stop(fx->dc);
	free(fx->bootstrap);
	sv_schema_destroy(fx->schema);
	free(fx);
	return 0;
}

static void ok(sv_error_t *err)
{
	if (err) {
		fail_msg("unexpected error [%s]: %s (cause: %s)",
			 sv_errcat_name(err->category), err->message,
			 err->cause ? err->cause : "-");
	}
}

static void new_topic(fx_t *fx, const char *topic, int partitions)
{
	ok(sv_devcluster_create_topic(fx->dc, topic, partitions));
}

static sv_sink_conf_t sink_conf(fx_t *fx, const char *topic, int key_column)
{
	sv_sink_conf_t c = {
		.kind = "kafka",
		.job_id = "job-test",
		.attempt = 1,
		.cluster = &fx->cluster,
		.topic = topic,
		.format = SV_FMT_JSON,
		.schema = fx->schema,
		.key_column = key_column,
	};
	return c;
}

static sv_source_conf_t source_conf(fx_t *fx, const char *topic,
				    const char *group, bool bounded)
{
	sv_source_conf_t c = {
		.kind = "kafka",
		.job_id = "job-test",
		.attempt = 1,
		.cluster = &fx->cluster,
		.topic = topic,
		.group_id = group,
		.start = SV_START_EARLIEST,
		.bounded = bounded,
		.format = SV_FMT_JSON,
		.schema = fx->schema,
	};
	return c;
}

static double amount_of(int64_t id)
{
	return (double)id * 1.25 + 0.1;
}

/* Produce rows with ids [first, first+n) through our sink, keyed by
 * region, and wait until all are acknowledged. */
static void produce(fx_t *fx, const char *topic, int64_t first, int64_t n)
{
	sv_sink_conf_t c = sink_conf(fx, topic, F_REGION);
	sv_sink_t *snk;
	sv_batch_t b;

	ok(sv_sink_open(&c, &snk));
	sv_batch_init(&b, fx->schema);
	for (int64_t id = first; id < first + n; id++) {
		sv_rowmeta_t *m;
		sv_value_t *row = sv_batch_add_row(&b, &m);
		const char *r = regions[id % 5];
		row[F_ID] = sv_int(id);
		row[F_REGION] = sv_str(r, (uint32_t)strlen(r));
		row[F_AMOUNT] = id % 7 == 0 ? sv_null()
					    : sv_float(amount_of(id));
		row[F_TS] = sv_ts(1700000000000 + id);
	}
	ok(sv_sink_write(snk, &b));
	ok(sv_sink_flush(snk, DEADLINE_MS));
	assert_int_equal(snk->records_out, (uint64_t)n);
	sv_batch_release(&b);
	sv_sink_close(snk);
}

/* Check a consumed row against what produce() wrote. */
static void check_row(const sv_value_t *row)
{
	int64_t id = row[F_ID].v.i;
	const char *r = regions[id % 5];

	assert_int_equal(row[F_ID].type, SV_T_INT64);
	assert_int_equal(row[F_REGION].type, SV_T_STRING);
	assert_int_equal(row[F_REGION].len, strlen(r));
	assert_memory_equal(row[F_REGION].v.s, r, strlen(r));
	if (id % 7 == 0) {
		assert_int_equal(row[F_AMOUNT].type, SV_T_NULL);
	} else {
		assert_int_equal(row[F_AMOUNT].type, SV_T_FLOAT64);
		assert_true(row[F_AMOUNT].v.f == amount_of(id));
	}
	assert_int_equal(row[F_TS].type, SV_T_TIMESTAMP);
	assert_int_equal(row[F_TS].v.i, 1700000000000 + id);
}

/* What a test read: every row and reject copied out of the poll batch. */
typedef struct got {
	sv_batch_t rows;
	size_t nrejects;
	char rejects[8][128];
	char reasons[8][256];
	int64_t reject_offsets[8];
	bool eof;
} got_t;

static void got_init(got_t *g, fx_t *fx)
{
	memset(g, 0, sizeof(*g));
	sv_batch_init(&g->rows, fx->schema);
}

/* Poll until want rows+rejects arrived (want < 0: until eof), at most
 * max_rows per poll, within the deadline. */
static void poll_until(fx_t *fx, sv_source_t *src, got_t *g, int64_t want,
		       size_t max_rows)
{
	sv_batch_t b;
	int64_t deadline = sv_mono_ms() + DEADLINE_MS;

	sv_batch_init(&b, fx->schema);
	while (want < 0 ? !g->eof
			: (int64_t)(g->rows.nrows + g->nrejects) < want) {
		size_t cap = max_rows;
		if (want >= 0 &&
		    (int64_t)cap >
			    want - (int64_t)(g->rows.nrows + g->nrejects))
			cap = (size_t)(want -
				       (int64_t)(g->rows.nrows + g->nrejects));
		sv_batch_reset(&b);
		ok(sv_source_poll(src, &b, cap, 100, &g->eof));
		assert_true(b.nrows + b.nrejects <= cap);
		for (size_t r = 0; r < b.nrows; r++)
			sv_batch_copy_row(&g->rows, &b, r);
		for (size_t k = 0; k < b.nrejects; k++) {
			size_t i = g->nrejects++;
			assert_true(i < 8);
			snprintf(g->rejects[i], sizeof(g->rejects[i]), "%.*s",
				 (int)b.rejects[k].len, b.rejects[k].payload);
			snprintf(g->reasons[i], sizeof(g->reasons[i]), "%s",
				 b.rejects[k].reason);
			g->reject_offsets[i] = b.rejects[k].offset;
		}
		if (sv_mono_ms() > deadline)
			fail_msg("timed out: %zu rows, %zu rejects, want %lld",
				 g->rows.nrows, g->nrejects, (long long)want);
	}
	sv_batch_release(&b);
}

/* Every id in [first, first+n) exactly once, rows exact, offsets
 * consecutive per partition from start_off[p]; returns rows per partition
 * in counts. */
static void check_exact(const got_t *g, int64_t first, int64_t n,
			const int64_t *start_off, int64_t *counts)
{
	uint8_t *seen = calloc((size_t)n, 1);
	int64_t next[NPARTS];

	assert_int_equal(g->rows.nrows, (size_t)n);
	for (int p = 0; p < NPARTS; p++) {
		next[p] = start_off ? start_off[p] : 0;
		counts[p] = 0;
	}
	for (size_t r = 0; r < g->rows.nrows; r++) {
		const sv_value_t *row = sv_batch_row(&g->rows, r);
		const sv_rowmeta_t *m = &g->rows.meta[r];
		int64_t id = row[F_ID].v.i;

		check_row(row);
		assert_true(id >= first && id < first + n);
		assert_int_equal(seen[id - first], 0);
		seen[id - first] = 1;
		assert_true(m->partition >= 0 && m->partition < NPARTS);
		/* in order within a partition, no gaps */
		assert_int_equal(m->offset, next[m->partition]);
		next[m->partition]++;
		counts[m->partition]++;
		assert_true(m->source_ts_ms > 0);
	}
	free(seen);
}

/* ---- tests ---- */

static void test_registry(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "x", "g", false);
	sv_source_t *src = (sv_source_t *)1;
	sv_sink_t *snk = (sv_sink_t *)1;
	sv_sink_conf_t sc = sink_conf(fx, "x", -1);
	sv_error_t *err;

	assert_non_null(sv_source_find("kafka"));
	assert_non_null(sv_sink_find("kafka"));
	assert_null(sv_source_find("nope"));
	assert_null(sv_sink_find("nope"));
	c.kind = "nope";
	err = sv_source_open(&c, &src);
	assert_non_null(err);
	assert_null(src);
	assert_int_equal(err->category, SV_ERR_BINDING);
	assert_string_equal(err->message, "unknown source kind 'nope'");
	sv_error_destroy(err);
	sc.kind = "nope";
	err = sv_sink_open(&sc, &snk);
	assert_non_null(err);
	assert_null(snk);
	assert_int_equal(err->category, SV_ERR_BINDING);
	sv_error_destroy(err);
}

/* Stream mode: everything produced is read exactly once, keys route a
 * region to one partition, positions and end offsets match. */
static void test_stream_roundtrip(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_stream", "g_stream", false);
	sv_source_t *src;
	const sv_partpos_t *pos;
	int64_t counts[NPARTS], total = 0;
	int region_part[5] = {-1, -1, -1, -1, -1};
	got_t g;

	new_topic(fx, "t_stream", NPARTS);
	produce(fx, "t_stream", 0, 1000);
	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, 1000, 256);
	check_exact(&g, 0, 1000, NULL, counts);

	/* same key, same partition */
	for (size_t r = 0; r < g.rows.nrows; r++) {
		const sv_value_t *row = sv_batch_row(&g.rows, r);
		int ri = (int)(row[F_ID].v.i % 5);
		if (region_part[ri] < 0)
			region_part[ri] = g.rows.meta[r].partition;
		assert_int_equal(region_part[ri], g.rows.meta[r].partition);
	}

	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++) {
		assert_int_equal(pos[p].partition, p);
		assert_int_equal(pos[p].next_offset, counts[p]);
		assert_int_equal(pos[p].end_offset, counts[p]);
		total += pos[p].next_offset;
	}
	assert_int_equal(total, 1000);

	/* Caught up: a stream has nothing more and no eof. */
	bool eof = true;
	sv_batch_t b;
	sv_batch_init(&b, fx->schema);
	ok(sv_source_poll(src, &b, 100, 50, &eof));
	assert_false(eof);
	assert_int_equal(b.nrows, 0);

	/* New records arrive while open, and end offsets follow. */
	produce(fx, "t_stream", 1000, 200);
	sv_batch_release(&g.rows);
	got_init(&g, fx);
	poll_until(fx, src, &g, 200, 1000);
	for (size_t r = 0; r < g.rows.nrows; r++) {
		const sv_value_t *row = sv_batch_row(&g.rows, r);
		check_row(row);
		assert_true(row[F_ID].v.i >= 1000 && row[F_ID].v.i < 1200);
		counts[g.rows.meta[r].partition]++;
	}
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++) {
		assert_int_equal(pos[p].next_offset, counts[p]);
		assert_true(pos[p].end_offset >= pos[p].next_offset);
	}
	sv_batch_release(&b);
	sv_batch_release(&g.rows);
	sv_source_close(src);
}

/* Bounded mode stops at the end offsets taken at open, even when more
 * arrives afterwards, and reports eof only after the last rows. */
static void test_bounded_stops_at_end(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_bounded", "g_bounded", true);
	sv_source_t *src;
	const sv_partpos_t *pos;
	int64_t counts[NPARTS], ends[NPARTS];
	got_t g;

	new_topic(fx, "t_bounded", NPARTS);
	produce(fx, "t_bounded", 0, 500);
	ok(sv_source_open(&c, &src));
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++) {
		assert_int_equal(pos[p].next_offset, 0);
		ends[p] = pos[p].end_offset;
	}
	/* after open: must not be read */
	produce(fx, "t_bounded", 500, 300);

	got_init(&g, fx);
	poll_until(fx, src, &g, -1, 128);
	check_exact(&g, 0, 500, NULL, counts);
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++) {
		assert_int_equal(counts[p], ends[p]);
		assert_int_equal(pos[p].next_offset, ends[p]);
	}
	/* eof is sticky */
	sv_batch_t b;
	bool eof = false;
	sv_batch_init(&b, fx->schema);
	ok(sv_source_poll(src, &b, 100, 10, &eof));
	assert_true(eof);
	assert_int_equal(b.nrows, 0);
	sv_batch_release(&b);
	sv_batch_release(&g.rows);
	sv_source_close(src);
}

/* Bounded read of an empty topic: every partition is done at open. */
static void test_bounded_empty_topic(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_empty", "g_empty", true);
	sv_source_t *src;
	sv_batch_t b;
	bool eof = false;
	int64_t t0;

	new_topic(fx, "t_empty", NPARTS);
	ok(sv_source_open(&c, &src));
	sv_batch_init(&b, fx->schema);
	t0 = sv_mono_ms();
	ok(sv_source_poll(src, &b, 100, 5000, &eof));
	assert_true(eof);
	assert_true(sv_mono_ms() - t0 < 1000); /* did not wait */
	assert_int_equal(b.nrows, 0);
	sv_batch_release(&b);
	sv_source_close(src);
}

/* Undecodable payloads become rejects with payload, offset and reason;
 * good rows around them still decode. Dead letters come from write_raw. */
static void test_rejects(void **state)
{
	fx_t *fx = *state;
	sv_sink_conf_t sc = sink_conf(fx, "t_rejects", -1);
	sv_source_conf_t c = source_conf(fx, "t_rejects", "g_rejects", true);
	sv_sink_t *snk;
	sv_source_t *src;
	got_t g;
	static const char *const payloads[] = {
		"{\"id\":1,\"region\":\"eu\",\"amount\":1.35,\"ts\":"
		"1700000000001}",
		"not json at all",
		"{\"id\":\"two\"}",
		"{\"id\":3,\"region\":\"apac\",\"amount\":3.85,\"ts\":"
		"1700000000003}",
	};

	new_topic(fx, "t_rejects", 1);
	sc.raw = true;
	ok(sv_sink_open(&sc, &snk));
	for (size_t i = 0; i < SV_ARRAY_LEN(payloads); i++)
		ok(sv_sink_write_raw(snk, payloads[i], strlen(payloads[i]),
				     "test"));
	ok(sv_sink_flush(snk, DEADLINE_MS));
	assert_int_equal(snk->records_out, SV_ARRAY_LEN(payloads));
	sv_sink_close(snk);

	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, -1, 100);
	assert_int_equal(g.rows.nrows, 2);
	assert_int_equal(sv_batch_row(&g.rows, 0)[F_ID].v.i, 1);
	assert_int_equal(g.rows.meta[0].offset, 0);
	assert_int_equal(sv_batch_row(&g.rows, 1)[F_ID].v.i, 3);
	assert_int_equal(g.rows.meta[1].offset, 3);
	assert_int_equal(g.nrejects, 2);
	assert_string_equal(g.rejects[0], "not json at all");
	assert_int_equal(g.reject_offsets[0], 1);
	assert_string_equal(g.rejects[1], "{\"id\":\"two\"}");
	assert_int_equal(g.reject_offsets[1], 2);
	assert_true(strlen(g.reasons[0]) > 0);
	assert_non_null(strstr(g.reasons[1], "id"));

	const sv_partpos_t *pos;
	assert_int_equal(sv_source_positions(src, &pos), 1);
	assert_int_equal(pos[0].next_offset, 4);
	sv_batch_release(&g.rows);
	sv_source_close(src);
}

/* A missing topic is a binding error naming the topic and the profile —
 * and is not created behind our back by asking for it. */
static void test_missing_topic(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_missing", "g_missing", false);
	sv_sink_conf_t sc = sink_conf(fx, "t_missing", -1);
	sv_source_t *src = NULL;
	sv_sink_t *snk = NULL;
	sv_error_t *err;

	for (int round = 0; round < 2; round++) {
		err = sv_sink_open(&sc, &snk);
		assert_non_null(err);
		assert_null(snk);
		assert_int_equal(err->category, SV_ERR_BINDING);
		assert_string_equal(err->message,
				    "topic 't_missing' does not exist on "
				    "cluster 'default'");
		assert_string_equal(err->job_id, "job-test");
		assert_null(strstr(err->message, fx->bootstrap));
		sv_error_destroy(err);

		err = sv_source_open(&c, &src);
		assert_non_null(err);
		assert_null(src);
		assert_int_equal(err->category, SV_ERR_BINDING);
		assert_string_equal(err->message,
				    "topic 't_missing' does not exist on "
				    "cluster 'default'");
		sv_error_destroy(err);
	}
}

/* Commit after reading part of the topic, close, reopen with the same
 * group: the rest, exactly, starting at the committed offsets. A different
 * group (negative control) reads everything again. */
static void test_commit_resume(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_commit", "g_commit", false);
	sv_source_t *src;
	const sv_partpos_t *pos;
	int64_t committed[NPARTS], counts[NPARTS];
	uint8_t seen[300] = {0};
	got_t g;

	new_topic(fx, "t_commit", NPARTS);
	produce(fx, "t_commit", 0, 300);

	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, 120, 7);
	assert_int_equal(g.rows.nrows, 120);
	for (size_t r = 0; r < g.rows.nrows; r++)
		seen[sv_batch_row(&g.rows, r)[F_ID].v.i] = 1;
	ok(sv_source_commit(src));
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++)
		committed[p] = pos[p].next_offset;
	sv_source_close(src);
	sv_batch_release(&g.rows);

	ok(sv_source_open(&c, &src));
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++)
		assert_int_equal(pos[p].next_offset, committed[p]);
	got_init(&g, fx);
	poll_until(fx, src, &g, 180, 64);
	for (size_t r = 0; r < g.rows.nrows; r++) {
		const sv_value_t *row = sv_batch_row(&g.rows, r);
		const sv_rowmeta_t *m = &g.rows.meta[r];
		check_row(row);
		assert_int_equal(seen[row[F_ID].v.i], 0); /* no duplicate */
		seen[row[F_ID].v.i] = 1;
		assert_true(m->offset >= committed[m->partition]);
	}
	for (int i = 0; i < 300; i++)
		assert_int_equal(seen[i], 1);
	/* nothing more */
	sv_batch_t b;
	bool eof;
	sv_batch_init(&b, fx->schema);
	ok(sv_source_poll(src, &b, 100, 200, &eof));
	assert_int_equal(b.nrows, 0);
	sv_batch_release(&b);
	sv_batch_release(&g.rows);
	sv_source_close(src);

	/* negative control: another group starts from the beginning */
	c.group_id = "g_commit_other";
	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, 300, 1000);
	check_exact(&g, 0, 300, NULL, counts);
	sv_batch_release(&g.rows);
	sv_source_close(src);
}

/* before_committed (the worker's fence runs beside the source's open):
 * called once per open, after the end offsets of an unbounded source are
 * known and before the group's committed offsets are read, so offsets
 * the hook commits are the ones the source starts at; its error fails the
 * open with it. */
typedef struct hook {
	fx_t *fx;
	int calls;
	bool fail;
	int64_t committed[NPARTS]; /* what the hook's own source committed */
} hook_t;

static sv_error_t *hook_commit(void *opaque)
{
	hook_t *h = opaque;
	h->calls++;
	if (h->fail)
		return sv_error_new(SV_ERR_BINDING, "the fence failed");
	/* another reader of the group commits 40 records meanwhile */
	sv_source_conf_t c = source_conf(h->fx, "t_hook", "g_hook", false);
	sv_source_t *src;
	const sv_partpos_t *pos;
	got_t g;
	ok(sv_source_open(&c, &src));
	got_init(&g, h->fx);
	poll_until(h->fx, src, &g, 40, 5);
	ok(sv_source_commit(src));
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++)
		h->committed[p] = pos[p].next_offset;
	sv_batch_release(&g.rows);
	sv_source_close(src);
	return NULL;
}

static void test_before_committed(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_hook", "g_hook", false);
	hook_t h = {.fx = fx};
	sv_source_t *src;
	const sv_partpos_t *pos;
	int64_t sum = 0;

	new_topic(fx, "t_hook", NPARTS);
	produce(fx, "t_hook", 0, 100);
	c.before_committed = hook_commit;
	c.before_committed_opaque = &h;
	ok(sv_source_open(&c, &src));
	assert_int_equal(h.calls, 1);
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++) {
		/* read after the hook: its commit, not the start */
		assert_int_equal(pos[p].next_offset, h.committed[p]);
		sum += h.committed[p];
		assert_true(pos[p].end_offset >= pos[p].next_offset);
	}
	assert_int_equal(sum, 40);
	sv_source_close(src);

	/* the hook's error is the open's (bounded: called too) */
	c.bounded = true;
	h.fail = true;
	h.calls = 0;
	src = (sv_source_t *)1;
	sv_error_t *err = sv_source_open(&c, &src);
	assert_non_null(err);
	assert_null(src);
	assert_int_equal(h.calls, 1);
	assert_string_equal(err->message, "the fence failed");
	sv_error_destroy(err);
}

/* Start latest: nothing old is read, only what arrives after open. */
static void test_start_latest(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_latest", "g_latest", false);
	sv_source_t *src;
	const sv_partpos_t *pos;
	int64_t ends[NPARTS];
	got_t g;

	new_topic(fx, "t_latest", NPARTS);
	produce(fx, "t_latest", 0, 100);
	c.start = SV_START_LATEST;
	ok(sv_source_open(&c, &src));
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++) {
		assert_int_equal(pos[p].next_offset, pos[p].end_offset);
		ends[p] = pos[p].end_offset;
	}
	produce(fx, "t_latest", 100, 50);
	got_init(&g, fx);
	poll_until(fx, src, &g, 50, 1000);
	int64_t counts[NPARTS];
	check_exact(&g, 100, 50, ends, counts);
	sv_batch_release(&g.rows);
	sv_source_close(src);
}

/* Seek back: one partition a few records, one to the start; exactly those
 * records are read again, and bounded eof comes back after them. */
static void test_seek(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_seek", "g_seek", true);
	sv_source_t *src;
	const sv_partpos_t *pos;
	int64_t counts[NPARTS], ends[NPARTS];
	int a = -1, z = -1;
	got_t g;

	new_topic(fx, "t_seek", NPARTS);
	produce(fx, "t_seek", 0, 400);
	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, -1, 1000);
	check_exact(&g, 0, 400, NULL, counts);
	sv_batch_release(&g.rows);
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++) {
		ends[p] = pos[p].next_offset;
		if (ends[p] >= 5 && a < 0)
			a = p;
		else if (ends[p] > 0 && z < 0)
			z = p;
	}
	assert_true(a >= 0 && z >= 0);

	sv_partpos_t to[2] = {
		{.partition = a, .next_offset = ends[a] - 5},
		{.partition = z, .next_offset = 0},
	};
	ok(sv_source_seek(src, to, 2));
	got_init(&g, fx);
	poll_until(fx, src, &g, -1, 1000);
	assert_int_equal(g.rows.nrows, (size_t)(5 + ends[z]));
	int64_t na = 0, nz = 0;
	for (size_t r = 0; r < g.rows.nrows; r++) {
		const sv_rowmeta_t *m = &g.rows.meta[r];
		check_row(sv_batch_row(&g.rows, r));
		if (m->partition == a) {
			assert_int_equal(m->offset, ends[a] - 5 + na);
			na++;
		} else {
			assert_int_equal(m->partition, z);
			assert_int_equal(m->offset, nz);
			nz++;
		}
	}
	assert_int_equal(na, 5);
	assert_int_equal(nz, ends[z]);
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	for (int p = 0; p < NPARTS; p++)
		assert_int_equal(pos[p].next_offset, ends[p]);

	/* a partition the topic does not have */
	sv_partpos_t bad = {.partition = 99, .next_offset = 0};
	sv_error_t *err = sv_source_seek(src, &bad, 1);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_OFFSET);
	sv_error_destroy(err);

	sv_batch_release(&g.rows);
	sv_source_close(src);
}

/* A key column outside the schema is refused at open. */
static void test_sink_bad_key_column(void **state)
{
	fx_t *fx = *state;
	sv_sink_conf_t sc = sink_conf(fx, "t_badkey", 9);
	sv_sink_t *snk = NULL;
	sv_error_t *err;

	new_topic(fx, "t_badkey", 1);
	err = sv_sink_open(&sc, &snk); /* key column out of range */
	assert_non_null(err);
	assert_null(snk);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	sv_error_destroy(err);
}

/* A failed delivery is remembered: flush and every later write return it
 * (category sink_commit, with librdkafka's cause). A new sink works. */
static void test_sink_delivery_error(void **state)
{
	fx_t *fx = *state;
	sv_sink_conf_t sc = sink_conf(fx, "t_deliv", F_ID);
	sv_sink_t *snk;
	sv_batch_t b;
	sv_error_t *err;

	new_topic(fx, "t_deliv", 1);
	ok(sv_sink_open(&sc, &snk));
	sv_batch_init(&b, fx->schema);
	for (int64_t id = 0; id < 10; id++) {
		sv_rowmeta_t *m;
		sv_value_t *row = sv_batch_add_row(&b, &m);
		row[F_ID] = sv_int(id);
	}
	/* TOPIC_AUTHORIZATION_FAILED: permanent, not retried */
	ok(sv_devcluster_push_errors(fx->dc, "produce", 29, 1));
	sv_error_t *werr = sv_sink_write(snk, &b);
	err = sv_sink_flush(snk, DEADLINE_MS);
	sv_error_destroy(werr);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_SINK_COMMIT);
	assert_string_equal(err->message,
			    "delivery to topic 't_deliv' on cluster 'default' "
			    "failed");
	assert_int_equal(err->cause_code, 29);
	assert_non_null(err->cause);
	sv_error_destroy(err);
	assert_true(snk->records_out < 10);
	err = sv_sink_write(snk, &b); /* sticky */
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_SINK_COMMIT);
	sv_error_destroy(err);
	sv_sink_close(snk);

	ok(sv_sink_open(&sc, &snk));
	ok(sv_sink_write(snk, &b));
	ok(sv_sink_flush(snk, DEADLINE_MS));
	assert_int_equal(snk->records_out, 10);
	sv_sink_close(snk);
	sv_batch_release(&b);
}

/* ---- the sink's batched produce, read back message by message ---- */

/* One message as the broker has it. */
typedef struct rawmsg {
	int32_t partition;
	int64_t offset;
	int64_t id; /* the payload's "id" */
	bool has_key;
	char key[32];
	size_t keylen;
	size_t len; /* of the payload */
} rawmsg_t;

/* Read n messages of topic (NPARTS partitions, from the start) with a
 * plain librdkafka consumer: partition, offset, key bytes and the id. */
static void read_raw(fx_t *fx, const char *topic, rawmsg_t *out, size_t n)
{
	char errstr[256];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers",
					   fx->bootstrap, errstr,
					   sizeof(errstr)),
			 RD_KAFKA_CONF_OK);
	assert_int_equal(rd_kafka_conf_set(conf, "group.id", "raw-reader",
					   errstr, sizeof(errstr)),
			 RD_KAFKA_CONF_OK);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr,
				      sizeof(errstr));
	assert_non_null(rk);
	rd_kafka_topic_partition_list_t *parts =
		rd_kafka_topic_partition_list_new(NPARTS);
	for (int p = 0; p < NPARTS; p++)
		rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
	assert_int_equal(rd_kafka_assign(rk, parts), 0);
	rd_kafka_topic_partition_list_destroy(parts);
	int64_t deadline = sv_mono_ms() + DEADLINE_MS;
	size_t got = 0;
	while (got < n) {
		if (sv_mono_ms() > deadline)
			fail_msg("timed out: %zu of %zu messages", got, n);
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		if (!m)
			continue;
		if (!m->err) {
			rawmsg_t *r = &out[got++];
			long long id = -1;
			char text[64]; /* {"id":N, ... */
			size_t n = m->len < sizeof(text) - 1 ? m->len
							     : sizeof(text) - 1;
			memcpy(text, m->payload, n);
			text[n] = 0;
			assert_int_equal(sscanf(text, "{\"id\":%lld", &id), 1);
			r->len = m->len;
			r->partition = m->partition;
			r->offset = m->offset;
			r->id = id;
			r->has_key = m->key != NULL;
			assert_true(m->key_len < sizeof(r->key));
			r->keylen = m->key_len;
			if (m->key_len)
				memcpy(r->key, m->key, m->key_len);
		}
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
}

/* Every id of [0, n) once; within each partition the ids come in the order
 * they were written (offsets consecutive); a keyed message sits in the
 * partition Kafka's murmur2 gives its key (core/partition.h), so the
 * partitioning is that of the Java client, as with one producev per row. */
static void check_raw(const rawmsg_t *msgs, size_t n)
{
	uint8_t *seen = calloc(n, 1);
	int64_t last_id[NPARTS], next_off[NPARTS];
	for (int p = 0; p < NPARTS; p++) {
		last_id[p] = -1;
		next_off[p] = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const rawmsg_t *m = &msgs[i];
		assert_true(m->id >= 0 && (size_t)m->id < n);
		assert_int_equal(seen[m->id], 0);
		seen[m->id] = 1;
		assert_true(m->partition >= 0 && m->partition < NPARTS);
		assert_int_equal(m->offset, next_off[m->partition]++);
		assert_true(m->id > last_id[m->partition]);
		last_id[m->partition] = m->id;
		if (m->has_key)
			assert_int_equal(
				m->partition,
				sv_partition_of(m->key, m->keylen, NPARTS));
	}
	free(seen);
}

/* One write of more rows than librdkafka's queue holds
 * (queue.buffering.max.messages from the cluster's properties): the batch's
 * refused tail is handed in again as delivery reports drain the queue,
 * until every row is queued; all arrive once, in order per partition,
 * keyed by the int64 id rendered as text (the key buffer path). Then rows
 * keyed by a nullable string column: a null key stays null (the
 * partitioner's choice), an empty string stays an empty key. Then one
 * write of 1,200 rows of 2 KB, which the sink produces in ~1 MB runs: all
 * arrive once, in order per partition, whole. */
static void test_sink_batch_queue_full(void **state)
{
	fx_t *fx = *state;
	enum {
		N = 3000,
		N2 = 200
	};
	sv_kv_t props[] = {
		{"queue.buffering.max.messages", "64"},
		{"linger.ms", "0"},
	};
	sv_cluster_t small = fx->cluster;
	small.props = props;
	small.nprops = SV_ARRAY_LEN(props);
	sv_sink_conf_t sc = sink_conf(fx, "t_qfull", F_ID);
	sc.cluster = &small;
	sv_sink_t *snk;
	sv_batch_t b;

	new_topic(fx, "t_qfull", NPARTS);
	ok(sv_sink_open(&sc, &snk));
	sv_batch_init(&b, fx->schema);
	for (int64_t id = 0; id < N; id++) {
		sv_rowmeta_t *m;
		sv_value_t *row = sv_batch_add_row(&b, &m);
		const char *r = regions[id % 5];
		row[F_ID] = sv_int(id);
		row[F_REGION] = sv_str(r, (uint32_t)strlen(r));
		row[F_AMOUNT] = sv_float(amount_of(id));
		row[F_TS] = sv_ts(1700000000000 + id);
	}
	ok(sv_sink_write(snk, &b)); /* 3000 rows through a 64-message queue */
	ok(sv_sink_flush(snk, DEADLINE_MS));
	assert_int_equal(snk->records_out, N);
	sv_sink_close(snk);

	rawmsg_t *msgs = calloc(N, sizeof(*msgs));
	read_raw(fx, "t_qfull", msgs, N);
	check_raw(msgs, N);
	for (size_t i = 0; i < N; i++) {
		char want[24];
		int len = snprintf(want, sizeof(want), "%lld",
				   (long long)msgs[i].id);
		assert_true(msgs[i].has_key);
		assert_int_equal(msgs[i].keylen, (size_t)len);
		assert_memory_equal(msgs[i].key, want, (size_t)len);
	}

	/* string keys: "", null, and region names */
	sc = sink_conf(fx, "t_qfull_keys", F_REGION);
	sc.cluster = &small;
	new_topic(fx, "t_qfull_keys", NPARTS);
	ok(sv_sink_open(&sc, &snk));
	sv_batch_reset(&b);
	for (int64_t id = 0; id < N2; id++) {
		sv_rowmeta_t *m;
		sv_value_t *row = sv_batch_add_row(&b, &m);
		const char *r = regions[id % 5];
		row[F_ID] = sv_int(id);
		row[F_REGION] = id % 3 == 1 ? sv_null()
			: id % 3 == 2       ? sv_str("", 0)
					    : sv_str(r, (uint32_t)strlen(r));
		row[F_AMOUNT] = sv_null();
		row[F_TS] = sv_ts(1700000000000 + id);
	}
	ok(sv_sink_write(snk, &b));
	ok(sv_sink_flush(snk, DEADLINE_MS));
	assert_int_equal(snk->records_out, N2);
	sv_sink_close(snk);
	read_raw(fx, "t_qfull_keys", msgs, N2);
	check_raw(msgs, N2);
	for (size_t i = 0; i < N2; i++) {
		int64_t id = msgs[i].id;
		const char *r = regions[id % 5];
		if (id % 3 == 1) {
			assert_false(msgs[i].has_key);
		} else if (id % 3 == 2) {
			assert_true(msgs[i].has_key);
			assert_int_equal(msgs[i].keylen, 0);
		} else {
			assert_true(msgs[i].has_key);
			assert_int_equal(msgs[i].keylen, strlen(r));
			assert_memory_equal(msgs[i].key, r, strlen(r));
		}
	}

	/* large rows: one write of ~2.4 MB is produced in ~1 MB runs */
	enum {
		N3 = 1200,
		BIG = 2000
	};
	char *big = malloc(BIG);
	memset(big, 'x', BIG);
	sc = sink_conf(fx, "t_qfull_big", F_ID);
	sc.cluster = &small;
	new_topic(fx, "t_qfull_big", NPARTS);
	ok(sv_sink_open(&sc, &snk));
	sv_batch_reset(&b);
	for (int64_t id = 0; id < N3; id++) {
		sv_rowmeta_t *m;
		sv_value_t *row = sv_batch_add_row(&b, &m);
		row[F_ID] = sv_int(id);
		row[F_REGION] = sv_str(big, BIG);
		row[F_AMOUNT] = sv_null();
		row[F_TS] = sv_null();
	}
	ok(sv_sink_write(snk, &b));
	ok(sv_sink_flush(snk, DEADLINE_MS));
	assert_int_equal(snk->records_out, N3);
	sv_sink_close(snk);
	read_raw(fx, "t_qfull_big", msgs, N3);
	check_raw(msgs, N3);
	for (size_t i = 0; i < N3; i++)
		assert_true(msgs[i].len > BIG);
	free(big);
	free(msgs);
	sv_batch_release(&b);
}

/* err: the refused commit (GROUP_AUTHORIZATION_FAILED) of group on topic,
 * a commit error that names both; destroyed. */
static void expect_refused(sv_error_t *err, const char *group,
			   const char *topic)
{
	char want[200];
	snprintf(want, sizeof(want),
		 "cannot commit offsets of group '%s' for topic '%s' on "
		 "cluster 'default'",
		 group, topic);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_COMMIT);
	assert_string_equal(err->message, want);
	assert_int_equal(err->cause_code, 30);
	sv_error_destroy(err);
}

/* A source reopened with conf starts at committed offsets summing to n. */
static void expect_resumes_at(const sv_source_conf_t *c, int64_t n)
{
	sv_source_t *src;
	const sv_partpos_t *pos;
	ok(sv_source_open(c, &src));
	assert_int_equal(sv_source_positions(src, &pos), NPARTS);
	int64_t total = 0;
	for (int p = 0; p < NPARTS; p++)
		total += pos[p].next_offset;
	assert_int_equal(total, n);
	sv_source_close(src);
}

/* A refused offset commit is a commit error; the next commit succeeds and
 * a reopened source resumes there. Synchronous commits (group mode, or
 * STREAMVISOR_SYNC_OFFSET_COMMIT): the refusal is the commit's own error. */
static void test_source_commit_error(void **state)
{
	fx_t *fx = *state;
	setenv("STREAMVISOR_SYNC_OFFSET_COMMIT", "1", 1);
	sv_source_conf_t c = source_conf(fx, "t_cerr", "g_cerr", false);
	sv_source_t *src;
	got_t g;

	new_topic(fx, "t_cerr", NPARTS);
	produce(fx, "t_cerr", 0, 40);
	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, 40, 100);
	/* GROUP_AUTHORIZATION_FAILED: permanent */
	ok(sv_devcluster_push_errors(fx->dc, "offset_commit", 30, 1));
	expect_refused(sv_source_commit(src), "g_cerr", "t_cerr");
	ok(sv_source_commit(src));
	sv_source_close(src);
	sv_batch_release(&g.rows);
	expect_resumes_at(&c, 40);
	unsetenv("STREAMVISOR_SYNC_OFFSET_COMMIT");
}

/* Standalone, commits are asynchronous: a refused one is returned by a
 * later commit (as a commit error naming the group), the one after that
 * succeeds, and close waits for the commits still out, so a reopened
 * source resumes at the last positions committed right before close. */
static void test_source_commit_async(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_casync", "g_casync", false);
	sv_source_t *src;
	sv_error_t *err = NULL;
	got_t g;

	new_topic(fx, "t_casync", NPARTS);
	produce(fx, "t_casync", 0, 40);
	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, 20, 100);
	ok(sv_devcluster_push_errors(fx->dc, "offset_commit", 30, 1));
	ok(sv_source_commit(src)); /* sent; its refusal comes back later */
	int64_t deadline = sv_mono_ms() + 10000;
	while (!err && sv_mono_ms() < deadline) {
		usleep(20000);
		err = sv_source_commit(src);
	}
	expect_refused(err, "g_casync", "t_casync");
	poll_until(fx, src, &g, 40, 100);
	ok(sv_source_commit(src));
	sv_source_close(src); /* waits for that commit */
	sv_batch_release(&g.rows);
	expect_resumes_at(&c, 40);
}

/* Transient fetch errors (leader moved) are retried inside the client:
 * the source still reads everything exactly once. */
static void test_fetch_transient_errors(void **state)
{
	fx_t *fx = *state;
	sv_source_conf_t c = source_conf(fx, "t_flaky", "g_flaky", true);
	sv_source_t *src;
	int64_t counts[NPARTS];
	got_t g;

	new_topic(fx, "t_flaky", NPARTS);
	produce(fx, "t_flaky", 0, 300);
	/* NOT_LEADER_OR_FOLLOWER on the first fetches */
	ok(sv_devcluster_push_errors(fx->dc, "fetch", 6, 3));
	ok(sv_source_open(&c, &src));
	got_init(&g, fx);
	poll_until(fx, src, &g, -1, 64);
	check_exact(&g, 0, 300, NULL, counts);
	sv_batch_release(&g.rows);
	sv_source_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_stream_roundtrip),
		cmocka_unit_test(test_bounded_stops_at_end),
		cmocka_unit_test(test_bounded_empty_topic),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_missing_topic),
		cmocka_unit_test(test_commit_resume),
		cmocka_unit_test(test_before_committed),
		cmocka_unit_test(test_start_latest),
		cmocka_unit_test(test_seek),
		cmocka_unit_test(test_sink_bad_key_column),
		cmocka_unit_test(test_sink_delivery_error),
		cmocka_unit_test(test_sink_batch_queue_full),
		cmocka_unit_test(test_source_commit_error),
		cmocka_unit_test(test_source_commit_async),
		cmocka_unit_test(test_fetch_transient_errors),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
