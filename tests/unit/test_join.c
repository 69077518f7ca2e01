/* test_join.c — the join operators on small fixed inputs: the worked
 * examples of docs/joins.md with their exact output, the state cap, the
 * snapshot checks, and the pipeline around a join (the second input's
 * entry, the output watermark seen by a window after it). The randomized
 * comparison with references is test_join_random.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/join_int.h"

#define NONE SV_WATERMARK_NONE

typedef struct fix {
	sv_schema_t *ls, *rs; /* orders (id, cust, ts); right (cust, x, rts) */
	sv_op_t *op;
	sv_batch_t b, rb, out;
	sv_opstats_t st;
	sv_op_ctx_t ctx;
	char got[2048];
} fix_t;

static int setup(void **state)
{
	fix_t *f = calloc(1, sizeof(*f));
	f->ls = sv_schema_new();
	sv_schema_add(f->ls, "id", SV_T_STRING, true);
	sv_schema_add(f->ls, "cust", SV_T_STRING, true);
	sv_schema_add(f->ls, "ts", SV_T_TIMESTAMP, true);
	f->rs = sv_schema_new();
	sv_schema_add(f->rs, "cust", SV_T_STRING, true);
	sv_schema_add(f->rs, "x", SV_T_STRING, true);
	sv_schema_add(f->rs, "rts", SV_T_TIMESTAMP, true);
	sv_batch_init(&f->b, f->ls);
	sv_batch_init(&f->rb, f->rs);
	f->ctx.watermark_ms = NONE;
	f->ctx.right_watermark_ms = NONE;
	f->ctx.stats = &f->st;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fix_t *f = *state;
	sv_batch_release(&f->b);
	sv_batch_release(&f->rb);
	if (f->op)
		sv_batch_release(&f->out);
	sv_op_destroy(f->op);
	sv_schema_destroy(f->ls);
	sv_schema_destroy(f->rs);
	free(f);
	return 0;
}

static sv_error_t *make(fix_t *f, sv_join_spec_t *spec)
{
	static const char *const keys[] = {"cust"};
	static const char *const take[] = {"x"};
	if (!spec->nkeys) {
		spec->nkeys = 1;
		spec->left_keys = keys;
		spec->right_keys = keys;
	}
	if (!spec->ntake && !spec->take_names) {
		spec->ntake = 1;
		spec->take_names = take;
		spec->take_cols = take;
	}
	sv_error_t *err = sv_op_join_new(f->ls, f->rs, spec, &f->op);
	if (!err)
		sv_batch_init(&f->out, f->op->out_schema);
	return err;
}

static void row3(sv_batch_t *b, const char *a, const char *c, int64_t t,
		 uint32_t flags)
{
	sv_rowmeta_t *m;
	sv_value_t *r = sv_batch_add_row(b, &m);
	m->event_ms = t;
	m->flags = flags;
	if (a)
		r[0] = sv_str(a, (uint32_t)strlen(a));
	if (c)
		r[1] = sv_str(c, (uint32_t)strlen(c));
	r[2] = sv_ts(t);
}

/* Left row: id, cust at t. */
static sv_error_t *left(fix_t *f, const char *id, const char *cust, int64_t t)
{
	sv_batch_reset(&f->b);
	row3(&f->b, id, cust, t, 0);
	return f->op->ops->process(f->op, &f->ctx, &f->b, &f->out);
}

/* Right row: cust, x at t (x NULL and del: a tombstone). */
static sv_error_t *right(fix_t *f, const char *cust, const char *x, int64_t t,
			 bool del)
{
	sv_batch_reset(&f->rb);
	row3(&f->rb, cust, x, t, del ? SV_ROW_DELETE : 0);
	return f->op->ops->process_right(f->op, &f->ctx, &f->rb, &f->out);
}

static void advance(fix_t *f, int64_t wl, int64_t wr)
{
	f->ctx.watermark_ms = wl;
	f->ctx.right_watermark_ms = wr;
	assert_null(f->op->ops->advance(f->op, &f->ctx, &f->out));
}

/* The output so far as "id/x@t ..." (x ~ when null), then cleared. */
static const char *drain(fix_t *f)
{
	char *p = f->got;
	*p = '\0';
	for (size_t r = 0; r < f->out.nrows; r++) {
		const sv_value_t *v = sv_batch_row(&f->out, r);
		const sv_value_t *x = &v[f->out.ncols - 1];
		p += sprintf(p, "%s%.*s/%.*s@%lld", r ? " " : "", (int)v[0].len,
			     v[0].v.s, x->type ? (int)x->len : 1,
			     x->type ? x->v.s : "~",
			     (long long)f->out.meta[r].event_ms);
	}
	sv_batch_reset(&f->out);
	return f->got;
}

/* docs/joins.md, interval: orders with their payment within a second. */
static void test_example_interval(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_INTERVAL,
			       .kind = SV_JOIN_LEFT,
			       .lower_ms = 0,
			       .upper_ms = 1000};
	assert_null(make(f, &spec));
	assert_null(left(f, "o1", "c1", 1000));
	assert_null(left(f, "o2", "c2", 2000));
	assert_null(right(f, "c1", "p1", 1400, false));
	assert_string_equal(drain(f), "o1/p1@1400");
	assert_null(left(f, "o3", "c3", 2500));
	assert_null(right(f, "c3", "p3a", 2400, false)); /* before o3 */
	advance(f, 2400, 2900);
	/* the right watermark passed o1's 1000 + 1000: o1 leaves (matched) */
	assert_string_equal(drain(f), "");
	assert_null(right(f, "c3", "p3b", 3000, false));
	assert_string_equal(drain(f), "o3/p3b@3000");
	assert_null(right(f, "c2", "p2", 3500, false)); /* too late for o2 */
	advance(f, 2600, 3000);
	/* o2's interval [2000, 3000] closed unmatched */
	assert_string_equal(drain(f), "o2/~@2000");
	sv_op_side_state_t s[2];
	f->op->ops->state_sides(f->op, s);
	assert_int_equal(s[0].rows, 1); /* o3, until the right wm is 3500 */
	/* right rows wait for the left watermark to pass time - lower */
	assert_int_equal(s[1].rows, 2);
	assert_int_equal(f->op->ops->out_watermark(f->op), 2000);
	assert_null(f->op->ops->finish(f->op, &f->ctx, &f->out));
	assert_string_equal(drain(f), "");
	/* a row at or behind its own watermark is late */
	assert_null(left(f, "o9", "c1", 5000));
	assert_int_equal(f->st.records_late, 1);
}

/* docs/joins.md, lookup: orders with their customer's name as of the
 * order's time. */
static void test_example_lookup(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP, .kind = SV_JOIN_LEFT};
	assert_null(make(f, &spec));
	assert_null(right(f, "c1", "Ada", 0, false));
	assert_null(right(f, "c2", "Bob", 0, false));
	assert_null(left(f, "o1", "c1", 3000));
	assert_null(left(f, "o3", "c2", 3500));
	assert_string_equal(drain(f), ""); /* waiting for the table */
	assert_null(right(f, "c2", NULL, 4000, true));
	assert_null(right(f, "c1", "Ada L.", 5000, false));
	assert_null(left(f, "o4", "c2", 4500));
	assert_null(left(f, "o2", "c1", 6000));
	advance(f, 3999, 4999);
	assert_string_equal(drain(f), "o1/Ada@3000 o3/Bob@3500 o4/~@4500");
	/* the horizon is 3999: Ada and Bob are still needed (c1 until the
	 * horizon passes 5000, c2's tombstone goes at 4000) */
	sv_op_side_state_t s[2];
	f->op->ops->state_sides(f->op, s);
	assert_int_equal(s[0].rows, 1); /* o2 */
	assert_int_equal(s[1].rows, 4);
	advance(f, 6000, 6000);
	assert_string_equal(drain(f), "o2/Ada L.@6000");
	f->op->ops->state_sides(f->op, s);
	assert_int_equal(s[1].rows, 1); /* Ada L. */
	assert_int_equal(s[1].keys, 1);
	/* a late table row is applied from the table's watermark + 1 */
	assert_null(right(f, "c2", "Cy", 100, false));
	assert_null(left(f, "o5", "c2", 6001));
	advance(f, 6000, 7000);
	assert_string_equal(drain(f), "o5/Cy@6001");
	/* a left row at or behind the left watermark is late */
	assert_null(left(f, "o6", "c1", 6000));
	assert_int_equal(f->st.records_late, 1);
}

static void test_lookup_processing_time(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP, .processing_time = true};
	assert_null(make(f, &spec));
	assert_null(right(f, "c1", "Ada", 9000, false));
	assert_null(left(f, "o1", "c1", 1)); /* the latest value, at once */
	assert_null(right(f, "c1", "Ada L.", 1, false));
	assert_null(left(f, "o2", "c1", 2));
	assert_null(right(f, "c1", NULL, 0, true));
	assert_null(left(f, "o3", "c1", 3)); /* deleted: inner drops it */
	assert_string_equal(drain(f), "o1/Ada@1 o2/Ada L.@2");
	sv_op_side_state_t s[2];
	f->op->ops->state_sides(f->op, s);
	assert_int_equal(s[1].keys, 0);
}

static void test_lookup_retention(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP,
			       .kind = SV_JOIN_LEFT,
			       .retention_ms = 500};
	assert_null(make(f, &spec));
	assert_null(right(f, "c1", "Ada", 0, false));
	assert_null(left(f, "o1", "c1", 1000));
	advance(f, 1400, 10); /* the table is behind: o1 waits */
	assert_string_equal(drain(f), "");
	advance(f, 1500, 10); /* 500 ms of left time: o1 goes anyway */
	assert_string_equal(drain(f), "o1/Ada@1000");
	/* after the end of input every row is late, table rows too */
	assert_null(f->op->ops->finish(f->op, &f->ctx, &f->out));
	assert_null(right(f, "c1", "Ada L.", 2000, false));
	assert_null(left(f, "o2", "c1", 3000));
	assert_int_equal(f->st.records_late, 2);
	assert_string_equal(drain(f), "");
}

/* docs/joins.md, hash: a bounded inner join is the relational one. */
static void test_example_hash(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_HASH};
	assert_null(make(f, &spec));
	assert_null(left(f, "o1", "c1", 5));
	assert_null(left(f, "o2", "c1", 6));
	assert_null(left(f, "o3", NULL, 7)); /* a null key matches nothing */
	assert_null(right(f, "c1", "x1", 1, false));
	assert_null(right(f, "c1", "x2", 9, false));
	assert_null(left(f, "o4", "c2", 8));
	assert_string_equal(drain(f), "o1/x1@5 o2/x1@6 o1/x2@9 o2/x2@9");
	assert_null(f->op->ops->finish(f->op, &f->ctx, &f->out));
	assert_string_equal(drain(f), "");
}

static void test_hash_left_finish(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_HASH, .kind = SV_JOIN_LEFT};
	assert_null(make(f, &spec));
	assert_null(left(f, "o1", "c1", 5));
	assert_null(left(f, "o3", NULL, 7));
	assert_null(left(f, "o4", "c2", 8));
	assert_null(right(f, "c1", "x1", 1, false));
	assert_string_equal(drain(f), "o3/~@7 o1/x1@5");
	assert_null(f->op->ops->finish(f->op, &f->ctx, &f->out));
	assert_string_equal(drain(f), "o4/~@8");
}

static void test_state_cap(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_INTERVAL,
			       .lower_ms = -10,
			       .upper_ms = 10,
			       .max_state_rows = 3};
	assert_null(make(f, &spec));
	assert_null(left(f, "o1", "c1", 1));
	assert_null(left(f, "o2", "c2", 2));
	assert_null(right(f, "c9", "x", 3, false));
	sv_error_t *err = left(f, "o4", "c4", 4);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_RUNTIME);
	assert_false(err->retriable);
	assert_string_equal(err->message,
			    "interval join state cap exceeded: 4 rows held "
			    "(left 3, right 1), max_state_rows is 3");
	sv_error_destroy(err);
}

static void test_state_cap_bytes(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP, .max_state_bytes = 2000};
	assert_null(make(f, &spec));
	sv_error_t *err = NULL;
	char k[16];
	for (int i = 0; i < 100 && !err; i++) {
		snprintf(k, sizeof(k), "c%d", i);
		err = right(f, k, "some customer name", i, false);
	}
	assert_non_null(err);
	assert_false(err->retriable);
	assert_non_null(strstr(err->message, "max_state_bytes is 2000"));
	sv_error_destroy(err);
}

static void test_snapshot_checks(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_INTERVAL, .upper_ms = 5};
	assert_null(make(f, &spec));
	assert_null(left(f, "o1", "c1", 1));
	assert_null(right(f, "c1", "x", 3, false));
	sv_buf_t snap;
	sv_buf_init(&snap);
	assert_null(f->op->ops->snapshot(f->op, &snap));
	/* truncated: refused, the operator left empty */
	sv_error_t *err = f->op->ops->restore(f->op, snap.data, snap.len - 1);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	uint64_t keys;
	f->op->ops->state_size(f->op, NULL, &keys);
	assert_int_equal(keys, 0);
	/* another join type's snapshot */
	sv_op_t *other = NULL;
	sv_join_spec_t ls = {.type = SV_JOIN_LOOKUP,
			     .nkeys = spec.nkeys,
			     .left_keys = spec.left_keys,
			     .right_keys = spec.right_keys,
			     .ntake = spec.ntake,
			     .take_names = spec.take_names,
			     .take_cols = spec.take_cols};
	assert_null(sv_op_join_new(f->ls, f->rs, &ls, &other));
	err = other->ops->restore(other, snap.data, snap.len);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "does not match"));
	sv_error_destroy(err);
	sv_op_destroy(other);
	/* the whole snapshot restores */
	assert_null(f->op->ops->restore(f->op, snap.data, snap.len));
	f->op->ops->state_size(f->op, NULL, &keys);
	assert_int_equal(keys, 2);
	sv_buf_release(&snap);
}

/* A right row of the earlier lookup snapshot format: cust, x, rts. */
static void ser_right3(sv_buf_t *b, const char *cust, const char *x, int64_t t)
{
	sv_value_t v = sv_str(cust, (uint32_t)strlen(cust));
	sv_ser_value(b, &v);
	v = sv_str(x, (uint32_t)strlen(x));
	sv_ser_value(b, &v);
	v = sv_ts(t);
	sv_ser_value(b, &v);
}

static void ser_str(sv_buf_t *b, const char *s)
{
	sv_value_t v = sv_str(s, (uint32_t)strlen(s));
	sv_ser_value(b, &v);
}

/* The lookup table keeps only the take columns; a snapshot and a delta of
 * the earlier format (kinds 'L'/'l', every right column) restore to the
 * same answers, and the next snapshot is of the cut format ('T'). */
static void test_lookup_earlier_format(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP, .kind = SV_JOIN_LEFT};
	assert_null(make(f, &spec));
	const sv_joinbase_t *jb = (const sv_joinbase_t *)f->op;
	sv_buf_t b;
	sv_buf_init(&b);
	sv_join_ser_header(jb, &b, 'L');
	sv_ser_u8(&b, 0); /* event time */
	sv_ser_i64(&b, NONE);
	sv_ser_i64(&b, 5000);
	sv_ser_u64(&b, 8);
	sv_ser_u64(&b, 2);
	ser_str(&b, "c1"); /* Ada from 0 */
	sv_ser_u32(&b, 1);
	sv_ser_i64(&b, 0);
	sv_ser_u8(&b, 1);
	ser_right3(&b, "c1", "Ada", 0);
	ser_str(&b, "c2"); /* Bob from 0, deleted at 4000 */
	sv_ser_u32(&b, 2);
	sv_ser_i64(&b, 0);
	sv_ser_u8(&b, 1);
	ser_right3(&b, "c2", "Bob", 0);
	sv_ser_i64(&b, 4000);
	sv_ser_u8(&b, 0);
	sv_ser_u64(&b, 1); /* o1 waiting */
	sv_ser_i64(&b, 3000);
	sv_ser_u64(&b, 7);
	sv_value_t o1[3] = {sv_str("o1", 2), sv_str("c1", 2), sv_ts(3000)};
	for (int c = 0; c < 3; c++)
		sv_ser_value(&b, &o1[c]);
	assert_null(f->op->ops->restore(f->op, b.data, b.len));
	sv_buf_release(&b);
	advance(f, 3000, 5000);
	assert_string_equal(drain(f), "o1/Ada@3000");
	assert_null(left(f, "o3", "c2", 3500));
	assert_null(left(f, "o4", "c2", 4500));
	assert_string_equal(drain(f), "o3/Bob@3500 o4/~@4500");

	/* an earlier-format delta on it: c2 removed, c1 is Ada L. from 6000 */
	sv_buf_init(&b);
	sv_join_ser_header(jb, &b, 'l');
	sv_ser_u8(&b, 0);
	sv_ser_i64(&b, 3000);
	sv_ser_i64(&b, 7000);
	sv_ser_u64(&b, 9);
	sv_ser_u64(&b, 1);
	ser_str(&b, "c2");
	sv_ser_u64(&b, 1);
	ser_str(&b, "c1");
	sv_ser_u32(&b, 1);
	sv_ser_i64(&b, 6000);
	sv_ser_u8(&b, 1);
	ser_right3(&b, "c1", "Ada L.", 6000);
	sv_ser_u64(&b, 0);
	assert_null(f->op->ops->restore_delta(f->op, b.data, b.len));
	sv_buf_release(&b);
	assert_null(left(f, "o5", "c1", 6500));
	assert_null(left(f, "o6", "c2", 6600));
	assert_string_equal(drain(f), "o5/Ada L.@6500 o6/~@6600");

	/* the next snapshot has the take columns only, and restores */
	sv_buf_init(&b);
	assert_null(f->op->ops->snapshot(f->op, &b));
	assert_int_equal(b.data[1], 'T');
	assert_null(f->op->ops->restore(f->op, b.data, b.len));
	sv_buf_release(&b);
	assert_null(left(f, "o7", "c1", 6700));
	assert_string_equal(drain(f), "o7/Ada L.@6700");
}

static void test_spec_errors(void **state)
{
	fix_t *f = *state;
	static const char *const nk[] = {"nope"};
	static const char *const ts[] = {"ts"};
	static const char *const ck[] = {"cust"};
	sv_join_spec_t bad_key = {
		.nkeys = 1, .left_keys = nk, .right_keys = ck};
	sv_error_t *err = make(f, &bad_key);
	assert_string_equal(err->field, "on.left");
	sv_error_destroy(err);
	sv_join_spec_t bad_type = {
		.nkeys = 1, .left_keys = ts, .right_keys = ck};
	err = make(f, &bad_type);
	assert_string_equal(err->message,
			    "join key 'ts' is timestamp_ms on the left but "
			    "'cust' is string on the right");
	sv_error_destroy(err);
	sv_join_spec_t all = {.type = SV_JOIN_HASH, .take_names = NULL};
	static const char *const none[] = {NULL};
	all.take_names = none; /* ntake 0: every right column */
	err = make(f, &all);
	/* cust is paired with the left key of its name; x and rts come */
	assert_null(err);
	assert_int_equal(f->op->out_schema->nfields, 5);
	assert_string_equal(f->op->out_schema->fields[4].name, "rts");
}

/* The pipeline [join of spec, tumbling 100 ms count() by cust]. */
static sv_pipeline_t *join_then_window(fix_t *f, sv_join_spec_t *spec)
{
	assert_null(make(f, spec));
	sv_pipeline_t *pl = sv_pipeline_new(f->ls);
	sv_pipeline_add(pl, f->op);
	static const char *const key[] = {"cust"};
	static const char *const an[] = {"n"};
	static const char *const ae[] = {"count()"};
	sv_window_spec_t ws = {.type = SV_WIN_TUMBLING,
			       .size_ms = 100,
			       .nkeys = 1,
			       .keys = key,
			       .naggs = 1,
			       .agg_names = an,
			       .agg_exprs = ae};
	sv_op_t *win = NULL;
	assert_null(sv_op_window_new(f->op->out_schema, &ws, &win));
	sv_pipeline_add(pl, win);
	return pl;
}

/* A window after a join closes on the join's output watermark. */
static void test_pipeline_window_after_join(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_INTERVAL, .upper_ms = 10};
	sv_pipeline_t *pl = join_then_window(f, &spec);
	assert_ptr_equal(sv_pipeline_join(pl), f->op);
	sv_batch_t *out;
	row3(&f->b, "o1", "c1", 10, 0);
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	row3(&f->rb, "c1", "p", 15, 0);
	assert_null(sv_pipeline_push_right(pl, &f->ctx, &f->rb, &out));
	assert_int_equal(out->nrows, 0); /* the window holds the match */
	f->ctx.watermark_ms = 500; /* the right input has no watermark */
	assert_null(sv_pipeline_advance(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 0);
	f->ctx.right_watermark_ms = 200;
	assert_null(sv_pipeline_advance(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 1); /* [0, 100): one match */
	assert_int_equal(sv_batch_row(out, 0)[3].v.i, 1);
	sv_pipeline_destroy(pl); /* owns the join now */
	f->op = NULL;
	sv_batch_release(&f->out);
	/* a pipeline without a join has no second input */
	pl = sv_pipeline_new(f->ls);
	assert_null(sv_pipeline_join(pl));
	sv_error_t *err = sv_pipeline_push_right(pl, &f->ctx, &f->rb, &out);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_PLANNING);
	sv_error_destroy(err);
	sv_pipeline_destroy(pl);
}

typedef struct pieces {
	size_t n, rows, windows;
	int64_t count;
} pieces_t;

static sv_error_t *piece(void *opaque, sv_batch_t *out)
{
	pieces_t *p = opaque;
	p->n++;
	p->windows += out->nrows;
	for (size_t r = 0; r < out->nrows; r++)
		p->count += sv_batch_row(out, r)[3].v.i;
	return NULL;
}

/* A lookup join's answered rows come out in pieces (advance_each): 6,000
 * rows that waited for the table, pieces of 1,000 through a window after
 * the join, which fires as the join's output watermark follows the
 * pieces and drops nothing as late; the emptied heap of waiting rows is
 * freed. */
static void test_lookup_pieces(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP};
	sv_pipeline_t *pl = join_then_window(f, &spec);
	f->op = NULL; /* the pipeline's */
	sv_batch_release(&f->out);
	sv_batch_t *out;
	static const char *const cust[] = {"c0", "c1", "c2"};
	for (int c = 0; c < 3; c++)
		row3(&f->rb, cust[c], "x", 0, 0);
	assert_null(sv_pipeline_push_right(pl, &f->ctx, &f->rb, &out));
	for (int64_t t = 0; t < 6000; t++)
		row3(&f->b, "o", cust[t % 3], t, 0);
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_int_equal(out->nrows, 0); /* waiting for the table */
	f->ctx.watermark_ms = 7000;
	f->ctx.right_watermark_ms = 7000;
	pieces_t p = {0};
	assert_null(sv_pipeline_advance_each(pl, &f->ctx, 1000, piece, &p));
	assert_int_equal(p.n, 6);
	assert_int_equal(p.count, 6000);
	assert_int_equal(p.windows, 60 * 3); /* [0, 100) .. [5900, 6000) */
	assert_int_equal(f->st.records_late, 0);
	assert_int_equal(f->ctx.advance_rows, 0); /* ctx itself unchanged */
	sv_op_side_state_t s[2];
	sv_op_t *j = sv_pipeline_join(pl);
	j->ops->state_sides(j, s);
	assert_int_equal(s[0].rows, 0);
	assert_int_equal(s[0].bytes, 0);
	assert_int_equal(j->ops->out_watermark(j), 7000);
	/* nothing left: one empty piece */
	p = (pieces_t){0};
	assert_null(sv_pipeline_advance_each(pl, &f->ctx, 1000, piece, &p));
	assert_int_equal(p.n, 1);
	assert_int_equal(p.windows, 0);
	sv_pipeline_destroy(pl);
}

/* A row added to a reused batch is no tombstone (a stale flag once made
 * the table lose keys at random). */
static void test_reused_row_has_no_flags(void **state)
{
	fix_t *f = *state;
	sv_join_spec_t spec = {.type = SV_JOIN_LOOKUP, .processing_time = true};
	assert_null(make(f, &spec));
	row3(&f->rb, "c1", NULL, 0, SV_ROW_DELETE);
	sv_batch_reset(&f->rb);
	sv_rowmeta_t *m;
	sv_value_t *r = sv_batch_add_row(&f->rb, &m);
	assert_int_equal(m->flags, 0);
	r[0] = sv_str("c1", 2);
	r[1] = sv_str("Ada", 3);
	assert_null(f->op->ops->process_right(f->op, &f->ctx, &f->rb, &f->out));
	assert_null(left(f, "o1", "c1", 1));
	assert_string_equal(drain(f), "o1/Ada@1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_example_interval, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_example_lookup, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lookup_processing_time,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_lookup_retention, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_example_hash, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hash_left_finish, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_state_cap, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_state_cap_bytes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lookup_earlier_format,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_checks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_spec_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lookup_pieces, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_window_after_join,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_row_has_no_flags,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
