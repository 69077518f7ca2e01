/* test_dedup.c — dedup keeps the first record of each key (arrival order)
 * and drops later records of that key whose event time is before
 * first + within_ms; the key is forgotten when the watermark reaches
 * first + within_ms - 1, so the state is bounded by the watermark. Also
 * nulls, pass-through of rows and meta, finish, snapshot/restore,
 * incremental checkpoints (randomized, with expiry as the deletes) and the
 * errors for bad specs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/window_int.h"
#include "tests/unit/dedup_text.h"

typedef struct fx {
	sv_schema_t *in; /* k string, v int64 */
	sv_op_t *op;
	sv_batch_t b, out;
	sv_opstats_t st;
	sv_op_ctx_t ctx;
	char text[4096];
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	f->in = sv_schema_new();
	sv_schema_add(f->in, "k", SV_T_STRING, true);
	sv_schema_add(f->in, "v", SV_T_INT64, true);
	sv_batch_init(&f->b, f->in);
	sv_batch_init(&f->out, f->in);
	f->ctx.watermark_ms = SV_WATERMARK_NONE;
	f->ctx.stats = &f->st;
	static const char *const keys[] = {"k"};
	assert_null(sv_op_dedup_new(f->in, 1, keys, 10, &f->op));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	sv_op_destroy(f->op);
	sv_batch_release(&f->b);
	sv_batch_release(&f->out);
	sv_schema_destroy(f->in);
	free(f);
	return 0;
}

static void rec(fx_t *f, const char *k, int64_t v, int64_t t)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(&f->b, &m);
	m->event_ms = t;
	m->partition = 3;
	m->offset = v;
	if (k)
		row[0] = sv_str(sv_batch_strdup(&f->b, k, strlen(k)),
				(uint32_t)strlen(k));
	row[1] = sv_int(v);
}

/* Process pending rows through op; the passed rows as "k:v;" */
static const char *run(fx_t *f, sv_op_t *op)
{
	sv_batch_reset(&f->out);
	assert_null(op->ops->process(op, &f->ctx, &f->b, &f->out));
	char *p = f->text;
	*p = '\0';
	for (size_t r = 0; r < f->out.nrows; r++) {
		const sv_value_t *row = sv_batch_row(&f->out, r);
		/* rows and meta pass unchanged */
		assert_int_equal(f->out.meta[r].offset, row[1].v.i);
		assert_int_equal(f->out.meta[r].partition, 3);
		p += sprintf(p, "%.*s:%lld;", row[0].type ? (int)row[0].len : 1,
			     row[0].type ? row[0].v.s : "~",
			     (long long)row[1].v.i);
	}
	sv_batch_reset(&f->b);
	return f->text;
}

static void adv(fx_t *f, int64_t wm)
{
	f->ctx.watermark_ms = wm;
	sv_batch_reset(&f->out);
	assert_null(f->op->ops->advance(f->op, &f->ctx, &f->out));
	assert_int_equal(f->out.nrows, 0); /* dedup never emits on advance */
}

static uint64_t nkeys(fx_t *f)
{
	uint64_t keys;
	f->op->ops->state_size(f->op, NULL, &keys);
	return keys;
}

static void test_first_of_key_within(void **state)
{
	fx_t *f = *state;
	assert_string_equal(f->op->ops->name, "dedup");
	rec(f, "a", 1, 100);
	rec(f, "b", 2, 101);
	rec(f, "a", 3, 105); /* within [100, 110): dropped */
	rec(f, "a", 4, 109); /* last ms of the bound: dropped */
	rec(f, "a", 5, 110); /* first + within: passes, new first */
	rec(f, "b", 6, 111);
	rec(f, "a", 7, 119);
	assert_string_equal(run(f, f->op), "a:1;b:2;a:5;b:6;");
	assert_int_equal(f->st.records_dropped, 3);
	assert_int_equal(nkeys(f), 2);
}

static void test_out_of_order_arrival(void **state)
{
	fx_t *f = *state;
	/* the first to arrive wins, also over an earlier event time */
	rec(f, "a", 1, 100);
	rec(f, "a", 2, 95);
	rec(f, "a", 3, 103);
	assert_string_equal(run(f, f->op), "a:1;");
	assert_int_equal(f->st.records_dropped, 2);
}

static void test_state_bounded_by_watermark(void **state)
{
	fx_t *f = *state;
	for (int i = 0; i < 100; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		rec(f, k, i, i * 5);
	}
	run(f, f->op);
	assert_int_equal(nkeys(f), 100);
	uint64_t full;
	f->op->ops->state_size(f->op, &full, NULL);
	/* key i expires at i*5 + 9 */
	adv(f, 9);
	assert_int_equal(nkeys(f), 99);
	adv(f, 8); /* going back does nothing */
	assert_int_equal(nkeys(f), 99);
	adv(f, 254); /* keys 0..49 */
	assert_int_equal(nkeys(f), 50);
	uint64_t half;
	f->op->ops->state_size(f->op, &half, NULL);
	assert_true(half < full);
	adv(f, 10000);
	assert_int_equal(nkeys(f), 0);
}

static void test_forgotten_key_passes_again(void **state)
{
	fx_t *f = *state;
	rec(f, "a", 1, 100);
	assert_string_equal(run(f, f->op), "a:1;");
	adv(f, 108);
	rec(f, "a", 2, 105); /* still remembered */
	assert_string_equal(run(f, f->op), "");
	adv(f, 109); /* 100 + 10 - 1: forgotten */
	assert_int_equal(nkeys(f), 0);
	rec(f, "a", 3, 99);
	/* passes, but is not remembered: it would expire at once */
	assert_string_equal(run(f, f->op), "a:3;");
	assert_int_equal(nkeys(f), 0);
	rec(f, "a", 4, 105); /* passes, remembered until 114 */
	rec(f, "a", 5, 106);
	rec(f, "a", 6, 200);
	rec(f, "a", 7, 201);
	assert_string_equal(run(f, f->op), "a:4;a:6;");
	assert_int_equal(nkeys(f), 1);
}

static void test_renewed_key_expires_at_newest(void **state)
{
	fx_t *f = *state;
	rec(f, "a", 1, 100);
	rec(f, "a", 2, 115); /* new first 115: expires at 124 */
	assert_string_equal(run(f, f->op), "a:1;a:2;");
	adv(f, 110); /* the first item (109) pops, the key stays */
	assert_int_equal(nkeys(f), 1);
	rec(f, "a", 3, 120);
	assert_string_equal(run(f, f->op), "");
	adv(f, 124);
	assert_int_equal(nkeys(f), 0);
}

static void test_null_keys(void **state)
{
	fx_t *f = *state;
	rec(f, NULL, 1, 1);
	rec(f, "", 2, 2);
	rec(f, NULL, 3, 3); /* nulls are one key (GROUP BY semantics) */
	rec(f, "", 4, 4);
	assert_string_equal(run(f, f->op), "~:1;:2;");
}

static void test_composite_key(void **state)
{
	fx_t *f = *state;
	static const char *const keys[] = {"k", "v"};
	sv_op_t *op;
	assert_null(sv_op_dedup_new(f->in, 2, keys, 100, &op));
	rec(f, "a", 1, 1);
	rec(f, "a", 2, 2);
	rec(f, "a", 1, 3);
	rec(f, "b", 1, 4);
	assert_string_equal(run(f, op), "a:1;a:2;b:1;");
	sv_op_destroy(op);
}

static void test_finish_forgets_everything(void **state)
{
	fx_t *f = *state;
	rec(f, "a", 1, 1);
	rec(f, "b", 1, 1);
	run(f, f->op);
	sv_batch_reset(&f->out);
	assert_null(f->op->ops->finish(f->op, &f->ctx, &f->out));
	assert_int_equal(f->out.nrows, 0);
	assert_int_equal(nkeys(f), 0);
}

static void test_snapshot_restore(void **state)
{
	fx_t *f = *state;
	static const char *const keys[] = {"k"};
	for (int i = 0; i < 40; i++) {
		char k[8];
		snprintf(k, sizeof(k), "k%d", i % 7);
		rec(f, i % 9 ? k : NULL, i, i * 3);
	}
	run(f, f->op);
	adv(f, 60);
	sv_buf_t snap;
	sv_buf_init(&snap);
	assert_null(f->op->ops->snapshot(f->op, &snap));
	sv_op_t *b;
	assert_null(sv_op_dedup_new(f->in, 1, keys, 10, &b));
	assert_null(b->ops->restore(b, snap.data, snap.len));
	uint64_t ka, kb;
	f->op->ops->state_size(f->op, NULL, &ka);
	b->ops->state_size(b, NULL, &kb);
	assert_int_equal(ka, kb);
	assert_true(ka > 0);
	/* the same tail through both: same rows, same drops */
	char expect[4096];
	for (int pass = 0; pass < 2; pass++) {
		sv_op_t *op = pass ? b : f->op;
		uint64_t d0 = f->st.records_dropped;
		f->ctx.watermark_ms = 60;
		char got[4096] = "";
		for (int i = 40; i < 90; i++) {
			char k[8];
			snprintf(k, sizeof(k), "k%d", i % 7);
			rec(f, i % 9 ? k : NULL, i, (i * 29) % 300);
			if (i % 10 == 9) {
				strcat(got, run(f, op));
				f->ctx.watermark_ms = i * 3;
				assert_null(
					op->ops->advance(op, &f->ctx, &f->out));
			}
		}
		snprintf(got + strlen(got), 32, "/%llu",
			 (unsigned long long)(f->st.records_dropped - d0));
		if (!pass)
			snprintf(expect, sizeof(expect), "%s", got);
		else
			assert_string_equal(got, expect);
	}
	/* a window's snapshot or a truncated one is refused */
	sv_error_t *err = b->ops->restore(b, snap.data, snap.len - 3);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	b->ops->state_size(b, NULL, &kb);
	assert_int_equal(kb, 0); /* a failed restore leaves no state */
	err = b->ops->restore(b, "\x01W\x00", 3);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	assert_non_null(strstr(err->message, "does not match"));
	sv_error_destroy(err);
	sv_buf_release(&snap);
	sv_op_destroy(b);
}

/* The operator's snapshot as text independent of its state map's order
 * (dedup_text.h). */
static void canonical(sv_op_t *op, char *txt, size_t cap)
{
	sv_buf_t snap;
	sv_buf_init(&snap);
	assert_null(op->ops->snapshot(op, &snap));
	dedup_text(snap.data, snap.len, txt, cap);
	sv_buf_release(&snap);
}

/* Incremental checkpoints: random records (renewals, duplicates, nulls),
 * watermark advances that expire keys (the deletes), and checkpoints, a
 * full one every 7 and deltas between; after each, an operator restored
 * from the full snapshot plus the deltas holds exactly the state of the
 * first, and both then pass and drop the same records. Leaving out a
 * delta must give a different state (negative control). */
static void test_incremental(void **state)
{
	fx_t *f = *state;
	static const char *const keys[] = {"k"};
	static char sa[65536], sb[65536];
	for (unsigned seed = 1; seed <= 3; seed++) {
		sv_op_t *a, *b;
		assert_null(sv_op_dedup_new(f->in, 1, keys, 40, &a));
		assert_null(sv_op_dedup_new(f->in, 1, keys, 40, &b));
		srandom(seed);
		sv_buf_t base, deltas[64];
		size_t nd = 0;
		sv_buf_init(&base);
		int nck = 0, controls = 0, expired = 0;
		int64_t wm = 0;
		f->ctx.watermark_ms = SV_WATERMARK_NONE;
		for (int step = 0; step < 300; step++) {
			int n = (int)(random() % 15);
			for (int i = 0; i < n; i++) {
				char k[8];
				snprintf(k, sizeof(k), "k%ld", random() % 30);
				rec(f, random() % 11 ? k : NULL, step,
				    wm - 10 + random() % 80);
			}
			run(f, a);
			sv_batch_reset(&f->b);
			if (random() % 3 == 0) {
				uint64_t k0, k1;
				a->ops->state_size(a, NULL, &k0);
				wm += random() % 25;
				f->ctx.watermark_ms = wm;
				assert_null(
					a->ops->advance(a, &f->ctx, &f->out));
				a->ops->state_size(a, NULL, &k1);
				expired += k1 < k0;
			}
			if (random() % 4)
				continue;
			if (nck++ % 7 == 0) {
				sv_buf_release(&base);
				sv_buf_init(&base);
				for (size_t i = 0; i < nd; i++)
					sv_buf_release(&deltas[i]);
				nd = 0;
				assert_null(a->ops->snapshot(a, &base));
			} else {
				bool written = false;
				sv_buf_init(&deltas[nd]);
				assert_null(a->ops->snapshot_delta(
					a, &deltas[nd], &written));
				assert_true(written);
				nd++;
			}
			a->ops->checkpointed(a);
			canonical(a, sa, sizeof(sa));
			assert_null(b->ops->restore(b, base.data, base.len));
			bool written = true;
			sv_buf_t none;
			sv_buf_init(&none);
			assert_null(b->ops->snapshot_delta(b, &none, &written));
			assert_false(written); /* after a restore: full */
			sv_buf_release(&none);
			for (size_t i = 0; i < nd; i++)
				assert_null(b->ops->restore_delta(
					b, deltas[i].data, deltas[i].len));
			canonical(b, sb, sizeof(sb));
			assert_string_equal(sb, sa);
			if (nd >= 2) {
				assert_null(b->ops->restore(b, base.data,
							    base.len));
				for (size_t i = 1; i < nd; i++)
					assert_null(b->ops->restore_delta(
						b, deltas[i].data,
						deltas[i].len));
				canonical(b, sb, sizeof(sb));
				controls += strcmp(sa, sb) != 0;
			}
		}
		assert_true(nck > 20);
		assert_true(controls > 0);
		assert_true(expired > 0);
		/* both from the last chain: the same records pass and drop */
		assert_null(a->ops->restore(a, base.data, base.len));
		assert_null(b->ops->restore(b, base.data, base.len));
		for (size_t i = 0; i < nd; i++) {
			assert_null(a->ops->restore_delta(a, deltas[i].data,
							  deltas[i].len));
			assert_null(b->ops->restore_delta(b, deltas[i].data,
							  deltas[i].len));
		}
		char expect[4096];
		for (int pass = 0; pass < 2; pass++) {
			sv_op_t *op = pass ? b : a;
			uint64_t d0 = f->st.records_dropped;
			f->ctx.watermark_ms = wm;
			char got[4096] = "";
			for (int i = 0; i < 40; i++) {
				char k[8];
				snprintf(k, sizeof(k), "k%d", i % 30);
				rec(f, k, i, wm - 10 + (i * 7) % 60);
			}
			strcat(got, run(f, op));
			sv_batch_reset(&f->b);
			snprintf(got + strlen(got), 32, "/%llu",
				 (unsigned long long)(f->st.records_dropped -
						      d0));
			if (!pass)
				snprintf(expect, sizeof(expect), "%s", got);
			else
				assert_string_equal(got, expect);
		}
		if (nd) { /* a truncated delta is refused */
			sv_error_t *err = b->ops->restore_delta(
				b, deltas[0].data, deltas[0].len - 1);
			assert_non_null(err);
			assert_int_equal(err->category, SV_ERR_CHECKPOINT);
			sv_error_destroy(err);
		}
		sv_buf_release(&base);
		for (size_t i = 0; i < nd; i++)
			sv_buf_release(&deltas[i]);
		sv_op_destroy(a);
		sv_op_destroy(b);
	}
}

static void test_bad_specs(void **state)
{
	fx_t *f = *state;
	static const char *const keys[] = {"k"};
	static const char *const nokey[] = {"id"};
	sv_op_t *op = (sv_op_t *)1;
	sv_error_t *err = sv_op_dedup_new(f->in, 1, keys, 0, &op);
	assert_non_null(err);
	assert_null(op);
	assert_int_equal(err->category, SV_ERR_SUBMISSION);
	assert_string_equal(err->message,
			    "dedup 'within_ms' must be > 0 and below 2^61, "
			    "got 0");
	assert_string_equal(err->field, "within_ms");
	sv_error_destroy(err);
	err = sv_op_dedup_new(f->in, 1, nokey, 10, &op);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_SUBMISSION);
	assert_string_equal(err->message,
			    "dedup key 'id' is not a column of the input");
	assert_string_equal(err->field, "key");
	sv_error_destroy(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_first_of_key_within),
		T(test_out_of_order_arrival),
		T(test_state_bounded_by_watermark),
		T(test_forgotten_key_passes_again),
		T(test_renewed_key_expires_at_newest),
		T(test_null_keys),
		T(test_composite_key),
		T(test_finish_forgets_everything),
		T(test_snapshot_restore),
		T(test_incremental),
		T(test_bad_specs),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
