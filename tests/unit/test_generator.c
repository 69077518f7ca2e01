/* test_generator.c — the generator source: sequence field rules,
 * determinism, bounded eof, positions and seek/resume, nexmark proportions,
 * ids and event time, rate limiting. Calls the driver's ops directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sources/generator.h"
#include "sources/nexmark.h"

/* ---- fixtures ---- */

typedef struct fx {
	sv_schema_t *schema;
	sv_source_conf_t conf;
	sv_source_t *src;
	sv_batch_t b;
} fx_t;

static sv_schema_t *seq_schema(void)
{
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "id", SV_T_INT64, true);
	sv_schema_add(s, "key", SV_T_INT64, true);
	sv_schema_add(s, "ts", SV_T_TIMESTAMP, true);
	sv_schema_add(s, "amount", SV_T_FLOAT64, true);
	sv_schema_add(s, "region", SV_T_STRING, true);
	sv_schema_add(s, "flag", SV_T_BOOL, true);
	sv_schema_add(s, "partition", SV_T_INT64, true);
	return s;
}

static const char *nexmark_fields[] = {
	"event_type",  "id",      "name",      "email",     "credit_card",
	"city",        "state",   "auction",   "bidder",    "price",
	"channel",     "url",     "date_time", "seller",    "category",
	"initial_bid", "reserve", "expires",   "item_name", "description",
	"extra"};

static sv_schema_t *nexmark_schema(void)
{
	sv_schema_t *s = sv_schema_new();
	for (size_t i = 0; i < SV_ARRAY_LEN(nexmark_fields); i++) {
		const char *n = nexmark_fields[i];
		sv_type_t t = SV_T_INT64;
		if (!strcmp(n, "date_time") || !strcmp(n, "expires"))
			t = SV_T_TIMESTAMP;
		else if (!strcmp(n, "name") || !strcmp(n, "email") ||
			 !strcmp(n, "credit_card") || !strcmp(n, "city") ||
			 !strcmp(n, "state") || !strcmp(n, "channel") ||
			 !strcmp(n, "url") || !strcmp(n, "item_name") ||
			 !strcmp(n, "description") || !strcmp(n, "extra"))
			t = SV_T_STRING;
		sv_schema_add(s, n, t, true);
	}
	return s;
}

static void conf_init(fx_t *f, const char *gen, int64_t count, uint64_t seed)
{
	memset(&f->conf, 0, sizeof(f->conf));
	f->conf.kind = "generator";
	f->conf.job_id = "job-test";
	f->conf.generator = gen;
	f->conf.count = count;
	f->conf.seed = seed;
	f->conf.schema = f->schema;
	f->conf.bounded = count >= 0;
}

static int setup_seq(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	f->schema = seq_schema();
	conf_init(f, "sequence", 1000, 42);
	sv_batch_init(&f->b, f->schema);
	*state = f;
	return 0;
}

static int setup_nexmark(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	f->schema = nexmark_schema();
	conf_init(f, "nexmark", 5000, 7);
	sv_batch_init(&f->b, f->schema);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	if (f->src)
		sv_source_generator_ops.close(f->src);
	sv_batch_release(&f->b);
	sv_schema_destroy(f->schema);
	free(f);
	return 0;
}

static void open_src(fx_t *f)
{
	sv_error_t *err = sv_source_generator_ops.open(&f->conf, &f->src);
	if (err)
		fail_msg("open: %s", err->message);
	assert_non_null(f->src);
}

/* Poll until eof or max_total rows; returns rows in f->b (not reset). */
static size_t drain(fx_t *f, size_t max_rows, size_t max_total, bool *eof)
{
	*eof = false;
	size_t guard = 0;
	while (!*eof && f->b.nrows < max_total) {
		size_t want = max_total - f->b.nrows;
		if (want > max_rows)
			want = max_rows;
		sv_error_t *err = sv_source_generator_ops.poll(f->src, &f->b,
							       want, 100, eof);
		assert_null(err);
		assert_true(++guard < 1000000);
	}
	return f->b.nrows;
}

static const sv_value_t *cell(const sv_batch_t *b, size_t r, const char *name)
{
	int c = sv_schema_find(b->schema, name);
	assert_true(c >= 0);
	return &sv_batch_row(b, r)[c];
}

static bool rows_equal(const sv_batch_t *a, size_t ra, const sv_batch_t *b,
		       size_t rb)
{
	for (size_t c = 0; c < a->ncols; c++)
		if (!sv_value_equal(&sv_batch_row(a, ra)[c],
				    &sv_batch_row(b, rb)[c]) ||
		    sv_batch_row(a, ra)[c].type != sv_batch_row(b, rb)[c].type)
			return false;
	return a->meta[ra].partition == b->meta[rb].partition &&
		a->meta[ra].offset == b->meta[rb].offset &&
		a->meta[ra].event_ms == b->meta[rb].event_ms;
}

/* ---- sequence ---- */

static void test_sequence_field_rules(void **state)
{
	fx_t *f = *state;
	open_src(f);
	bool eof;
	assert_int_equal(drain(f, 256, 1000, &eof), 1000);
	const int64_t base = 1704067200000LL;
	for (size_t r = 0; r < f->b.nrows; r++) {
		int64_t n = (int64_t)r;
		assert_int_equal(cell(&f->b, r, "id")->type, SV_T_INT64);
		assert_int_equal(cell(&f->b, r, "id")->v.i, n);
		assert_int_equal(cell(&f->b, r, "key")->v.i, n % 10000);
		assert_int_equal(cell(&f->b, r, "ts")->type, SV_T_TIMESTAMP);
		assert_int_equal(cell(&f->b, r, "ts")->v.i, base + n);
		assert_true(cell(&f->b, r, "amount")->v.f ==
			    (double)(n % 1000) / 10.0);
		char want[32];
		int wl = snprintf(want, sizeof(want), "k%lld",
				  (long long)(n % 10000));
		const sv_value_t *s = cell(&f->b, r, "region");
		assert_int_equal(s->type, SV_T_STRING);
		assert_int_equal(s->len, wl);
		assert_memory_equal(s->v.s, want, (size_t)wl);
		assert_int_equal(cell(&f->b, r, "flag")->v.b, n % 2 == 0);
		assert_int_equal(cell(&f->b, r, "partition")->v.i, n % 4);
		assert_int_equal(f->b.meta[r].partition, n % 4);
		assert_int_equal(f->b.meta[r].offset, n / 4);
		assert_int_equal(f->b.meta[r].event_ms, base + n);
	}
}

static void test_sequence_options(void **state)
{
	fx_t *f = *state;
	f->conf.count = 300;
	open_src(f);
	sv_generator_options_t opt;
	sv_generator_options_default(&opt);
	opt.base_ts_ms = 1000;
	opt.step_ms = 10;
	opt.keys = 7;
	opt.partitions = 3;
	assert_null(sv_generator_set_options(f->src, &opt));
	bool eof;
	assert_int_equal(drain(f, 64, 1000, &eof), 300);
	for (size_t r = 0; r < 300; r++) {
		int64_t n = (int64_t)r;
		assert_int_equal(cell(&f->b, r, "ts")->v.i, 1000 + n * 10);
		assert_int_equal(cell(&f->b, r, "key")->v.i, n % 7);
		assert_int_equal(f->b.meta[r].partition, n % 3);
	}
	/* out of range options are refused */
	opt.partitions = 0;
	sv_error_t *err = sv_generator_set_options(f->src, &opt);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	assert_non_null(strstr(err->message, "partitions"));
	sv_error_destroy(err);
}

static void test_sequence_jitter(void **state)
{
	fx_t *f = *state;
	f->conf.count = 5000;
	open_src(f);
	sv_generator_options_t opt;
	sv_generator_options_default(&opt);
	opt.base_ts_ms = 0;
	opt.step_ms = 1;
	opt.jitter_ms = 50;
	assert_null(sv_generator_set_options(f->src, &opt));
	bool eof;
	drain(f, 1000, 5000, &eof);
	int64_t max_seen = INT64_MIN;
	size_t out_of_order = 0, jittered = 0;
	for (size_t r = 0; r < f->b.nrows; r++) {
		int64_t t = cell(&f->b, r, "ts")->v.i;
		int64_t n = (int64_t)r;
		assert_true(t <= n && t >= n - 50);
		if (t != n)
			jittered++;
		if (t < max_seen)
			out_of_order++;
		if (t > max_seen)
			max_seen = t;
	}
	/* the jitter really reorders (negative control for the range check) */
	assert_true(jittered > 4000);
	assert_true(out_of_order > 1000);

	/* another seed gives other jitter; the same seed the same */
	fx_t g = {0};
	g.schema = f->schema;
	conf_init(&g, "sequence", 5000, 43);
	sv_batch_init(&g.b, g.schema);
	open_src(&g);
	assert_null(sv_generator_set_options(g.src, &opt));
	drain(&g, 1000, 5000, &eof);
	size_t differ = 0;
	for (size_t r = 0; r < 5000; r++)
		differ += cell(&g.b, r, "ts")->v.i != cell(&f->b, r, "ts")->v.i;
	assert_true(differ > 4000);
	sv_source_generator_ops.close(g.src);
	sv_batch_release(&g.b);
}

static void test_sequence_deterministic(void **state)
{
	fx_t *f = *state;
	open_src(f);
	bool eof;
	drain(f, 97, 1000, &eof);
	fx_t g = {0};
	g.schema = f->schema;
	conf_init(&g, "sequence", 1000, 42);
	sv_batch_init(&g.b, g.schema);
	open_src(&g);
	drain(&g, 1000, 1000, &eof); /* other batch sizes, same rows */
	assert_int_equal(g.b.nrows, f->b.nrows);
	for (size_t r = 0; r < f->b.nrows; r++)
		assert_true(rows_equal(&f->b, r, &g.b, r));
	sv_source_generator_ops.close(g.src);
	sv_batch_release(&g.b);
}

static void test_bounded_eof_exact(void **state)
{
	fx_t *f = *state;
	f->conf.count = 1003; /* not a multiple of the batch or partitions */
	open_src(f);
	bool eof = false;
	size_t total = 0;
	int polls = 0;
	while (!eof) {
		sv_batch_reset(&f->b);
		assert_null(sv_source_generator_ops.poll(f->src, &f->b, 100, 0,
							 &eof));
		total += f->b.nrows;
		polls++;
		if (!eof)
			assert_int_equal(f->b.nrows, 100);
	}
	assert_int_equal(total, 1003);
	assert_int_equal(polls, 11); /* eof came with the last rows */
	/* polls after eof: no rows, still eof */
	sv_batch_reset(&f->b);
	assert_null(sv_source_generator_ops.poll(f->src, &f->b, 100, 0, &eof));
	assert_true(eof);
	assert_int_equal(f->b.nrows, 0);

	const sv_partpos_t *pos;
	size_t n = sv_source_generator_ops.positions(f->src, &pos);
	assert_int_equal(n, 4);
	/* 1003 rows over 4 partitions: 251, 251, 251, 250 */
	int64_t want[4] = {251, 251, 251, 250};
	for (size_t p = 0; p < 4; p++) {
		assert_int_equal(pos[p].partition, (int32_t)p);
		assert_int_equal(pos[p].next_offset, want[p]);
		assert_int_equal(pos[p].end_offset, want[p]);
	}
}

static void test_count_zero_and_unbounded(void **state)
{
	fx_t *f = *state;
	f->conf.count = 0;
	open_src(f);
	bool eof = false;
	assert_null(sv_source_generator_ops.poll(f->src, &f->b, 100, 0, &eof));
	assert_true(eof);
	assert_int_equal(f->b.nrows, 0);
	sv_source_generator_ops.close(f->src);

	f->conf.count = -1;
	f->conf.bounded = false;
	open_src(f);
	for (int i = 0; i < 50; i++) {
		assert_null(sv_source_generator_ops.poll(f->src, &f->b, 1000, 0,
							 &eof));
		assert_false(eof);
	}
	assert_int_equal(f->b.nrows, 50000);
	const sv_partpos_t *pos;
	size_t n = sv_source_generator_ops.positions(f->src, &pos);
	for (size_t p = 0; p < n; p++) {
		assert_int_equal(pos[p].end_offset, -1);
		assert_int_equal(pos[p].next_offset, 12500);
	}
}

static void test_open_errors(void **state)
{
	fx_t *f = *state;
	sv_source_t *src = NULL;
	f->conf.generator = "fibonacci";
	sv_error_t *err = sv_source_generator_ops.open(&f->conf, &src);
	assert_non_null(err);
	assert_null(src);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	assert_non_null(strstr(err->message, "'fibonacci'"));
	sv_error_destroy(err);

	f->conf.generator = "sequence";
	f->conf.count = -1;
	f->conf.bounded = true;
	err = sv_source_generator_ops.open(&f->conf, &src);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	sv_error_destroy(err);
}

/* Read k rows, take positions, read the rest; a fresh source seeked to the
 * positions gives exactly the rest. */
static void check_resume(fx_t *f, size_t k)
{
	bool eof;
	open_src(f);
	drain(f, 33, k, &eof);
	const sv_partpos_t *pos;
	size_t n = sv_source_generator_ops.positions(f->src, &pos);
	sv_partpos_t saved[16];
	assert_true(n <= 16);
	memcpy(saved, pos, n * sizeof(*pos));
	size_t first = f->b.nrows;
	drain(f, 50, (size_t)-1, &eof);
	assert_true(eof);

	fx_t g = {0};
	g.schema = f->schema;
	g.conf = f->conf;
	g.conf.schema = g.schema;
	sv_batch_init(&g.b, g.schema);
	open_src(&g);
	assert_null(sv_source_generator_ops.seek(g.src, saved, n));
	drain(&g, 41, (size_t)-1, &eof);
	assert_true(eof);
	assert_int_equal(g.b.nrows, f->b.nrows - first);
	for (size_t r = 0; r < g.b.nrows; r++)
		assert_true(rows_equal(&f->b, first + r, &g.b, r));
	sv_source_generator_ops.close(g.src);
	sv_batch_release(&g.b);
	sv_source_generator_ops.close(f->src);
	f->src = NULL;
	sv_batch_reset(&f->b);
}

static void test_seek_resume_sequence(void **state)
{
	fx_t *f = *state;
	check_resume(f, 0);
	check_resume(f, 1);
	check_resume(f, 417);
	check_resume(f, 999);
}

static void test_seek_resume_nexmark(void **state)
{
	fx_t *f = *state;
	f->conf.count = 700;
	check_resume(f, 0);
	check_resume(f, 123);
	check_resume(f, 650);
}

/* Positions that are not a prefix of the row order (say a checkpoint taken
 * by workers reading partitions at different speeds): each partition
 * continues from its own offset, and every remaining row comes exactly once. */
static void test_seek_uneven_partitions(void **state)
{
	fx_t *f = *state;
	f->conf.count = 103;
	open_src(f);
	sv_partpos_t pos[4] = {
		{.partition = 0, .next_offset = 0},
		{.partition = 1, .next_offset = 10},
		{.partition = 2, .next_offset = 26}, /* 26 rows: at its end */
		{.partition = 3, .next_offset = 3},
	};
	assert_null(sv_source_generator_ops.seek(f->src, pos, 4));
	bool eof;
	drain(f, 7, (size_t)-1, &eof);
	assert_true(eof);
	/* partition p from offset o: rows o*4+p .. <103 */
	size_t want = 26 + (26 - 10) + 0 + (25 - 3); /* p3 has 25 rows */
	assert_int_equal(f->b.nrows, want);
	int64_t last = -1;
	uint8_t seen[103] = {0};
	for (size_t r = 0; r < f->b.nrows; r++) {
		int64_t id = cell(&f->b, r, "id")->v.i;
		assert_true(id > last); /* still in row order */
		last = id;
		assert_false(seen[id]);
		seen[id] = 1;
		assert_int_equal(f->b.meta[r].partition, id % 4);
		assert_true(f->b.meta[r].offset >= pos[id % 4].next_offset);
	}
	/* a bad partition is refused */
	sv_partpos_t bad = {.partition = 9, .next_offset = 0};
	sv_error_t *err = sv_source_generator_ops.seek(f->src, &bad, 1);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_OFFSET);
	sv_error_destroy(err);
}

/* ---- nexmark ---- */

static void test_nexmark_proportions(void **state)
{
	fx_t *f = *state;
	open_src(f);
	bool eof;
	assert_int_equal(drain(f, 500, 5000, &eof), 5000);
	assert_true(eof);
	for (size_t period = 0; period < 5000 / 50; period++) {
		int counts[3] = {0};
		for (size_t i = 0; i < 50; i++) {
			size_t r = period * 50 + i;
			int64_t t = cell(&f->b, r, "event_type")->v.i;
			assert_true(t >= 0 && t <= 2);
			counts[t]++;
			int want = i < 1 ? 0 : i < 4 ? 1 : 2;
			assert_int_equal(t, want);
		}
		assert_int_equal(counts[0], 1);
		assert_int_equal(counts[1], 3);
		assert_int_equal(counts[2], 46);
	}
}

static void test_nexmark_ids_and_values(void **state)
{
	fx_t *f = *state;
	open_src(f);
	bool eof;
	drain(f, 500, 5000, &eof);
	int64_t next_person = 1000, next_auction = 1000;
	int64_t prev_time = INT64_MIN;
	size_t hot_auction = 0, bids = 0;
	const int64_t base = 1704067200000LL;
	for (size_t r = 0; r < f->b.nrows; r++) {
		int64_t n = (int64_t)r;
		int64_t type = cell(&f->b, r, "event_type")->v.i;
		int64_t t = cell(&f->b, r, "date_time")->v.i;
		assert_int_equal(cell(&f->b, r, "date_time")->type,
				 SV_T_TIMESTAMP);
		/* 10000 events/s of event time: 10 per ms */
		assert_int_equal(t, base + n / 10);
		assert_true(t >= prev_time);
		prev_time = t;
		assert_int_equal(f->b.meta[r].event_ms, t);
		const sv_value_t *extra = cell(&f->b, r, "extra");
		assert_int_equal(extra->type, SV_T_STRING);
		if (type == SV_NEXMARK_PERSON) {
			assert_int_equal(cell(&f->b, r, "id")->v.i,
					 next_person++);
			assert_int_equal(cell(&f->b, r, "name")->type,
					 SV_T_STRING);
			const sv_value_t *email = cell(&f->b, r, "email");
			assert_non_null(memchr(email->v.s, '@', email->len));
			assert_int_equal(cell(&f->b, r, "credit_card")->len,
					 19);
			const sv_value_t *st = cell(&f->b, r, "state");
			assert_int_equal(st->len, 2);
			assert_true(sv_is_null(cell(&f->b, r, "auction")));
			assert_true(sv_is_null(cell(&f->b, r, "price")));
			assert_true(sv_is_null(cell(&f->b, r, "seller")));
		} else if (type == SV_NEXMARK_AUCTION) {
			assert_int_equal(cell(&f->b, r, "id")->v.i,
					 next_auction++);
			int64_t seller = cell(&f->b, r, "seller")->v.i;
			/* a created person, or one of the next few */
			assert_true(seller >= 1000 &&
				    seller < next_person +
						    SV_NEXMARK_PERSON_ID_LEAD);
			int64_t cat = cell(&f->b, r, "category")->v.i;
			assert_true(cat >= 10 && cat <= 14);
			int64_t ib = cell(&f->b, r, "initial_bid")->v.i;
			assert_true(ib >= 100 && ib <= 100000000);
			assert_true(cell(&f->b, r, "reserve")->v.i > ib);
			assert_true(cell(&f->b, r, "expires")->v.i > t);
			assert_true(cell(&f->b, r, "item_name")->len < 20);
			assert_true(cell(&f->b, r, "description")->len < 100);
			assert_true(sv_is_null(cell(&f->b, r, "name")));
			assert_true(sv_is_null(cell(&f->b, r, "bidder")));
		} else {
			bids++;
			assert_true(sv_is_null(cell(&f->b, r, "id")));
			assert_true(sv_is_null(cell(&f->b, r, "seller")));
			int64_t a = cell(&f->b, r, "auction")->v.i;
			assert_true(a >= 1000 &&
				    a < next_auction +
						    SV_NEXMARK_AUCTION_ID_LEAD);
			if (a ==
			    1000 + (sv_nexmark_last_auction(n) / 100) * 100)
				hot_auction++;
			int64_t bidder = cell(&f->b, r, "bidder")->v.i;
			assert_true(bidder >= 1000 &&
				    bidder < next_person +
						    SV_NEXMARK_PERSON_ID_LEAD);
			int64_t p = cell(&f->b, r, "price")->v.i;
			assert_true(p >= 100 && p <= 100000000);
			const sv_value_t *url = cell(&f->b, r, "url");
			assert_true(url->len > 24);
			assert_memory_equal(url->v.s,
					    "https://www.nexmark.com/", 24);
			assert_int_equal(cell(&f->b, r, "channel")->type,
					 SV_T_STRING);
			/* bids average 100 bytes: 32 + extra in 54..81 */
			assert_true(extra->len >= 54 && extra->len <= 81);
		}
	}
	assert_int_equal(next_person, 1000 + 100);
	assert_int_equal(next_auction, 1000 + 300);
	/* hot auction ratio 2: about half the bids go to the hot auction */
	assert_true(hot_auction > bids * 4 / 10 && hot_auction < bids * 7 / 10);
}

static void test_nexmark_deterministic(void **state)
{
	fx_t *f = *state;
	open_src(f);
	bool eof;
	drain(f, 128, 2000, &eof);
	fx_t g = {0};
	g.schema = f->schema;
	conf_init(&g, "nexmark", 5000, 7);
	sv_batch_init(&g.b, g.schema);
	open_src(&g);
	drain(&g, 2000, 2000, &eof);
	for (size_t r = 0; r < 2000; r++)
		assert_true(rows_equal(&f->b, r, &g.b, r));
	sv_source_generator_ops.close(g.src);
	sv_batch_release(&g.b);

	/* another seed: same ids and times, other random attributes */
	fx_t h = {0};
	h.schema = f->schema;
	conf_init(&h, "nexmark", 5000, 8);
	sv_batch_init(&h.b, h.schema);
	open_src(&h);
	drain(&h, 2000, 2000, &eof);
	size_t differ = 0;
	for (size_t r = 0; r < 2000; r++) {
		assert_true(sv_value_equal(cell(&f->b, r, "date_time"),
					   cell(&h.b, r, "date_time")));
		assert_true(sv_value_equal(cell(&f->b, r, "id"),
					   cell(&h.b, r, "id")));
		differ += !sv_value_equal(cell(&f->b, r, "extra"),
					  cell(&h.b, r, "extra"));
	}
	assert_true(differ > 1900);
	sv_source_generator_ops.close(h.src);
	sv_batch_release(&h.b);
}

/* The values of a field do not depend on which other fields are asked for. */
static void test_nexmark_subset_schema(void **state)
{
	fx_t *f = *state;
	open_src(f);
	bool eof;
	drain(f, 1000, 1000, &eof);

	fx_t g = {0};
	g.schema = sv_schema_new();
	sv_schema_add(g.schema, "price", SV_T_INT64, true);
	sv_schema_add(g.schema, "event_type", SV_T_STRING, true);
	sv_schema_add(g.schema, "date_time", SV_T_INT64, true);
	sv_schema_add(g.schema, "unknown", SV_T_STRING, true);
	conf_init(&g, "nexmark", 1000, 7);
	sv_batch_init(&g.b, g.schema);
	open_src(&g);
	drain(&g, 1000, 1000, &eof);
	static const char *names[] = {"person", "auction", "bid"};
	for (size_t r = 0; r < 1000; r++) {
		assert_true(sv_value_equal(cell(&f->b, r, "price"),
					   cell(&g.b, r, "price")));
		const sv_value_t *et = cell(&g.b, r, "event_type");
		const char *want = names[cell(&f->b, r, "event_type")->v.i];
		assert_int_equal(et->len, strlen(want));
		assert_memory_equal(et->v.s, want, et->len);
		assert_int_equal(cell(&g.b, r, "date_time")->type, SV_T_INT64);
		assert_int_equal(cell(&g.b, r, "date_time")->v.i,
				 cell(&f->b, r, "date_time")->v.i);
		assert_true(sv_is_null(cell(&g.b, r, "unknown")));
	}
	sv_source_generator_ops.close(g.src);
	sv_batch_release(&g.b);
	sv_schema_destroy(g.schema);
}

static void test_nexmark_schema_errors(void **state)
{
	fx_t *f = *state;
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "price", SV_T_STRING, true);
	f->conf.schema = s;
	sv_source_t *src = NULL;
	sv_error_t *err = sv_source_generator_ops.open(&f->conf, &src);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CONFIG);
	assert_non_null(strstr(err->message, "'price'"));
	sv_error_destroy(err);
	sv_schema_destroy(s);

	/* bids have no seller: a non-nullable seller cannot be filled */
	s = sv_schema_new();
	sv_schema_add(s, "seller", SV_T_INT64, false);
	f->conf.schema = s;
	err = sv_source_generator_ops.open(&f->conf, &src);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "'seller'"));
	sv_error_destroy(err);
	sv_schema_destroy(s);
	f->conf.schema = f->schema;
}

static void test_nexmark_id_helpers(void **state)
{
	/* event 0: person 0, no auction yet; 1..3 auctions 0..2; bids see the
	 * last ones; event 50 is person 1 */
	assert_int_equal(sv_nexmark_last_person(0), 0);
	assert_int_equal(sv_nexmark_last_auction(0), -1);
	assert_int_equal(sv_nexmark_last_auction(1), 0);
	assert_int_equal(sv_nexmark_last_auction(3), 2);
	assert_int_equal(sv_nexmark_last_auction(4), 2);
	assert_int_equal(sv_nexmark_last_auction(49), 2);
	assert_int_equal(sv_nexmark_last_person(49), 0);
	assert_int_equal(sv_nexmark_last_person(50), 1);
	assert_int_equal(sv_nexmark_last_auction(50), 2);
	assert_int_equal(sv_nexmark_last_auction(51), 3);
	assert_int_equal(sv_nexmark_event_type(50), SV_NEXMARK_PERSON);
	assert_int_equal(sv_nexmark_event_type(53), SV_NEXMARK_AUCTION);
	assert_int_equal(sv_nexmark_event_type(54), SV_NEXMARK_BID);
}

/* ---- rate ---- */

static void test_rate_limit(void **state)
{
	fx_t *f = *state;
	f->conf.count = -1;
	f->conf.bounded = false;
	f->conf.rate_per_s = 2000;
	open_src(f);
	int64_t t0 = sv_mono_ns();
	bool eof;
	size_t rows = 0;
	/* poll for about 300 ms */
	while (sv_mono_ns() - t0 < 300000000LL) {
		sv_batch_reset(&f->b);
		assert_null(sv_source_generator_ops.poll(f->src, &f->b, 100000,
							 20, &eof));
		rows += f->b.nrows;
		assert_false(eof);
	}
	double secs = (double)(sv_mono_ns() - t0) / 1e9;
	/* never above the rate (the bucket starts empty) ... */
	assert_true((double)rows <= 2000.0 * secs + 1);
	/* ... and it does produce (negative control) */
	assert_true(rows > 0);

	/* a zero timeout never sleeps and may return nothing */
	sv_batch_reset(&f->b);
	int64_t t1 = sv_mono_ns();
	assert_null(
		sv_source_generator_ops.poll(f->src, &f->b, 100000, 0, &eof));
	assert_true(sv_mono_ns() - t1 < 50000000LL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sequence_field_rules,
						setup_seq, teardown),
		cmocka_unit_test_setup_teardown(test_sequence_options,
						setup_seq, teardown),
		cmocka_unit_test_setup_teardown(test_sequence_jitter, setup_seq,
						teardown),
		cmocka_unit_test_setup_teardown(test_sequence_deterministic,
						setup_seq, teardown),
		cmocka_unit_test_setup_teardown(test_bounded_eof_exact,
						setup_seq, teardown),
		cmocka_unit_test_setup_teardown(test_count_zero_and_unbounded,
						setup_seq, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup_seq,
						teardown),
		cmocka_unit_test_setup_teardown(test_seek_resume_sequence,
						setup_seq, teardown),
		cmocka_unit_test_setup_teardown(test_seek_resume_nexmark,
						setup_nexmark, teardown),
		cmocka_unit_test_setup_teardown(test_seek_uneven_partitions,
						setup_seq, teardown),
		cmocka_unit_test_setup_teardown(test_nexmark_proportions,
						setup_nexmark, teardown),
		cmocka_unit_test_setup_teardown(test_nexmark_ids_and_values,
						setup_nexmark, teardown),
		cmocka_unit_test_setup_teardown(test_nexmark_deterministic,
						setup_nexmark, teardown),
		cmocka_unit_test_setup_teardown(test_nexmark_subset_schema,
						setup_nexmark, teardown),
		cmocka_unit_test_setup_teardown(test_nexmark_schema_errors,
						setup_nexmark, teardown),
		cmocka_unit_test(test_nexmark_id_helpers),
		cmocka_unit_test_setup_teardown(test_rate_limit, setup_seq,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
