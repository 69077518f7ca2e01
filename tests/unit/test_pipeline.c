/* test_pipeline.c — the stateless operators (core/op_basic.c) and the
 * pipeline that chains operators (core/pipeline.c).
 *
 * filter keeps exactly the rows whose predicate is true (false and null
 * are dropped), copies their cells and meta; select computes its columns
 * in the order given, with the declared types and nullability, carries the
 * meta over and puts computed strings in its output batch. The pipeline
 * runs a batch through filter → select (→ filter), reuses its stage
 * batches across pushes (a stage that took a burst gives its memory back), and is a no-op for advance/finish when every
 * operator is stateless. Errors from building operators name the
 * expression, the position and the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/expr.h"
#include "core/operator.h"

typedef struct fx {
	sv_schema_t *in; /* id int64 not null, region string, amount float64,
			  * status string, ts timestamp_ms */
	sv_batch_t b, out;
	sv_opstats_t st;
	sv_op_ctx_t ctx;
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	f->in = sv_schema_new();
	sv_schema_add(f->in, "id", SV_T_INT64, false);
	sv_schema_add(f->in, "region", SV_T_STRING, true);
	sv_schema_add(f->in, "amount", SV_T_FLOAT64, true);
	sv_schema_add(f->in, "status", SV_T_STRING, true);
	sv_schema_add(f->in, "ts", SV_T_TIMESTAMP, true);
	sv_batch_init(&f->b, f->in);
	f->ctx.watermark_ms = SV_WATERMARK_NONE;
	f->ctx.stats = &f->st;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	sv_batch_release(&f->b);
	sv_schema_destroy(f->in);
	free(f);
	return 0;
}

/* Append a row; NULL strings and NaN-free negative amounts stand for null
 * where asked (amount_null). Meta is derived from id so it can be checked
 * on the output. */
static void rec(fx_t *f, int64_t id, const char *region, double amount,
		bool amount_null, const char *status)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(&f->b, &m);
	m->partition = (int32_t)(id % 4);
	m->offset = 1000 + id;
	m->source_ts_ms = 5000 + id;
	m->event_ms = 9000 + id;
	row[0] = sv_int(id);
	if (region)
		row[1] = sv_str(sv_batch_strdup(&f->b, region, strlen(region)),
				(uint32_t)strlen(region));
	if (!amount_null)
		row[2] = sv_float(amount);
	if (status)
		row[3] = sv_str(sv_batch_strdup(&f->b, status, strlen(status)),
				(uint32_t)strlen(status));
	row[4] = sv_ts(9000 + id);
}

/* The standard input: 8 rows with nulls in every nullable column. */
static void fill(fx_t *f)
{
	rec(f, 1, "EU", 10.0, false, "completed");
	rec(f, 2, "US", 0.0, false, "completed"); /* amount 0 */
	rec(f, 3, "eu", 5.5, false, "pending");
	rec(f, 4, NULL, 7.0, false, "completed"); /* region null */
	rec(f, 5, "APAC", 0.0, true, "completed"); /* amount null */
	rec(f, 6, "US", 3.0, false, NULL); /* status null */
	rec(f, 7, "Eu", 1.25, false, "completed");
	rec(f, 8, "", -2.0, false, "completed");
}

static void check_meta(const sv_batch_t *out, size_t r, int64_t id)
{
	const sv_rowmeta_t *m = &out->meta[r];
	assert_int_equal(m->partition, id % 4);
	assert_int_equal(m->offset, 1000 + id);
	assert_int_equal(m->source_ts_ms, 5000 + id);
	assert_int_equal(m->event_ms, 9000 + id);
}

/* Ids in column col of out, in order, as "1,3,7". */
static const char *ids(const sv_batch_t *out, size_t col)
{
	static char buf[256];
	size_t w = 0;
	buf[0] = '\0';
	for (size_t r = 0; r < out->nrows; r++) {
		const sv_value_t *v = &sv_batch_row(out, r)[col];
		w += (size_t)snprintf(buf + w, sizeof(buf) - w, "%s%lld",
				      r ? "," : "",
				      v->type ? (long long)v->v.i : -1LL);
	}
	return buf;
}

static void expect_str(const sv_value_t *v, const char *want)
{
	if (!want) {
		assert_int_equal(v->type, SV_T_NULL);
		return;
	}
	assert_int_equal(v->type, SV_T_STRING);
	assert_int_equal(v->len, strlen(want));
	assert_memory_equal(v->v.s, want, v->len);
}

/* Run one operator over f->b into a fresh out batch. */
static void run(fx_t *f, sv_op_t *op)
{
	sv_batch_init(&f->out, op->out_schema);
	assert_null(op->ops->process(op, &f->ctx, &f->b, &f->out));
}

/* ---- filter ---- */

static void test_filter_keeps_true_rows(void **state)
{
	fx_t *f = *state;
	fill(f);
	sv_op_t *op;
	assert_null(sv_op_filter_new(
		f->in, "status == 'completed' && amount > 0", &op));
	assert_string_equal(op->ops->name, "filter");
	assert_null(op->ops->advance);
	assert_null(op->ops->finish);
	run(f, op);
	/* 2: amount 0; 3: pending; 5: amount null; 6: status null; 8: < 0 */
	assert_string_equal(ids(&f->out, 0), "1,4,7");
	/* cells and meta carried over unchanged */
	for (size_t r = 0; r < f->out.nrows; r++) {
		const sv_value_t *o = sv_batch_row(&f->out, r);
		int64_t id = o[0].v.i;
		const sv_value_t *i = sv_batch_row(&f->b, (size_t)id - 1);
		assert_memory_equal(o, i, f->in->nfields * sizeof(sv_value_t));
		check_meta(&f->out, r, id);
	}
	/* strings still point at the input batch (no copy) */
	assert_ptr_equal(sv_batch_row(&f->out, 0)[1].v.s,
			 sv_batch_row(&f->b, 0)[1].v.s);
	expect_str(&sv_batch_row(&f->out, 1)[1], NULL);
	/* same output schema as the input */
	const sv_schema_t *os = op->out_schema;
	assert_int_equal(os->nfields, f->in->nfields);
	for (size_t c = 0; c < os->nfields; c++) {
		assert_string_equal(os->fields[c].name, f->in->fields[c].name);
		assert_int_equal(os->fields[c].type, f->in->fields[c].type);
		assert_int_equal(os->fields[c].nullable,
				 f->in->fields[c].nullable);
	}
	sv_batch_release(&f->out);
	sv_op_destroy(op);
}

static void test_filter_nulls(void **state)
{
	fx_t *f = *state;
	fill(f);
	static const struct {
		const char *expr;
		const char *ids;
	} cases[] = {
		/* a null predicate drops the row, and so does its negation */
		{"amount > 1", "1,3,4,6,7"},
		{"NOT (amount > 1)", "2,8"},
		{"amount IS NULL", "5"},
		{"region IS NULL OR status IS NULL", "4,6"},
		{"coalesce(status, 'none') == 'none'", "6"},
		{"status != 'completed'", "3"},
		{"status NOT IN ('pending')", "1,2,4,5,7,8"},
		{"status NOT IN ('pending', null)", ""},
		{"region IN ('US', null)", "2,6"},
		{"amount > 1 OR true", "1,2,3,4,5,6,7,8"},
		{"amount > 1 AND false", ""},
		{"length(region) == 0", "8"},
		{"null",
		 ""}, /* the literal null is a boolean that is never true */
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		sv_op_t *op;
		sv_error_t *err = sv_op_filter_new(f->in, cases[k].expr, &op);
		if (err)
			fail_msg("'%s': %s", cases[k].expr, err->message);
		run(f, op);
		if (strcmp(ids(&f->out, 0), cases[k].ids))
			fail_msg("'%s' kept %s, want %s", cases[k].expr,
				 ids(&f->out, 0), cases[k].ids);
		sv_batch_release(&f->out);
		sv_op_destroy(op);
	}
}

static void test_filter_computed_strings(void **state)
{
	fx_t *f = *state;
	fill(f);
	sv_op_t *op;
	/* the predicate allocates strings (scratch arena, reset per batch) */
	assert_null(sv_op_filter_new(f->in,
				     "lower(region) + '/' + upper(status) == "
				     "'eu/COMPLETED'",
				     &op));
	run(f, op);
	assert_string_equal(ids(&f->out, 0), "1,7");
	/* the same operator on a second batch */
	sv_batch_reset(&f->out);
	sv_batch_reset(&f->b);
	rec(f, 11, "eU", 1, false, "Completed");
	rec(f, 12, "us", 1, false, "completed");
	assert_null(op->ops->process(op, &f->ctx, &f->b, &f->out));
	assert_string_equal(ids(&f->out, 0), "11");
	check_meta(&f->out, 0, 11);
	/* an empty batch gives an empty batch */
	sv_batch_reset(&f->out);
	sv_batch_reset(&f->b);
	assert_null(op->ops->process(op, &f->ctx, &f->b, &f->out));
	assert_int_equal(f->out.nrows, 0);
	sv_batch_release(&f->out);
	sv_op_destroy(op);
}

static void test_filter_errors(void **state)
{
	fx_t *f = *state;
	static const struct {
		const char *expr;
		sv_errcat_t cat;
		int pos;
		const char *message;
	} cases[] = {
		{"amount", SV_ERR_SUBMISSION, 1,
		 "expression 'amount' at position 1: a filter must be boolean, "
		 "got float64"},
		{"lower(region)", SV_ERR_SUBMISSION, 1,
		 "expression 'lower(region)' at position 1: a filter must be "
		 "boolean, got string"},
		{"amount >", SV_ERR_SUBMISSION, 9,
		 "expression 'amount >' at position 9: expected an operand"},
		{"amont > 1", SV_ERR_SUBMISSION,
		 1, "expression 'amont > 1' at position 1: unknown column 'amont'"},
		{"status == 1", SV_ERR_SUBMISSION, 8,
		 "expression 'status == 1' at position 8: operator '==' cannot "
		 "apply to string and int64"},
		{"id > 1 && geo(region) == 'x'", SV_ERR_COVERAGE, 11,
		 "expression 'id > 1 && geo(region) == 'x'' at position 11: "
		 "function 'geo' is not in the registry"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		sv_op_t *op = (sv_op_t *)1;
		sv_error_t *err = sv_op_filter_new(f->in, cases[k].expr, &op);
		if (!err)
			fail_msg("'%s' accepted", cases[k].expr);
		assert_null(op);
		assert_string_equal(err->message, cases[k].message);
		assert_int_equal(err->category, cases[k].cat);
		assert_int_equal(err->position, cases[k].pos);
		sv_error_destroy(err);
	}
}

/* ---- select ---- */

static void test_select_columns(void **state)
{
	fx_t *f = *state;
	fill(f);
	static const char *const names[] = {"region", "big",  "id",  "label",
					    "cents",  "when", "note"};
	static const char *const exprs[] = {
		"lower(region)",
		"amount > 5",
		"id",
		"concat(region, '#', id)",
		"cast(round(amount * 100) as int64)",
		"ts + 1",
		"'const'"};
	sv_op_t *op;
	assert_null(sv_op_select_new(f->in, 7, names, exprs, &op));
	assert_string_equal(op->ops->name, "select");
	/* output schema: the order written, types and nullability */
	const sv_schema_t *os = op->out_schema;
	static const struct {
		sv_type_t type;
		bool nullable;
	} want[] = {
		{SV_T_STRING, true},  {SV_T_BOOL, true},
		{SV_T_INT64, false},  {SV_T_STRING, true},
		{SV_T_INT64, true},   {SV_T_TIMESTAMP, true},
		{SV_T_STRING, false},
	};
	assert_int_equal(os->nfields, 7);
	for (size_t c = 0; c < 7; c++) {
		assert_string_equal(os->fields[c].name, names[c]);
		assert_int_equal(os->fields[c].type, want[c].type);
		assert_int_equal(os->fields[c].nullable, want[c].nullable);
	}
	run(f, op);
	assert_int_equal(f->out.nrows, 8);
	assert_string_equal(ids(&f->out, 2), "1,2,3,4,5,6,7,8");
	static const char *const lower[] = {"eu",   "us", "eu", NULL,
					    "apac", "us", "eu", ""};
	static const char *const label[] = {"EU#1",   "US#2", "eu#3", NULL,
					    "APAC#5", "US#6", "Eu#7", "#8"};
	static const int64_t cents[] = {1000, 0, 550, 700, -1, 300, 125, -200};
	for (size_t r = 0; r < 8; r++) {
		const sv_value_t *o = sv_batch_row(&f->out, r);
		expect_str(&o[0], lower[r]);
		expect_str(&o[3], label[r]);
		if (r == 4) {
			assert_int_equal(o[1].type,
					 SV_T_NULL); /* null amount */
			assert_int_equal(o[4].type, SV_T_NULL);
		} else {
			assert_int_equal(o[1].type, SV_T_BOOL);
			assert_int_equal(o[4].type, SV_T_INT64);
			assert_int_equal(o[4].v.i, cents[r]);
		}
		assert_int_equal(o[5].type, SV_T_TIMESTAMP);
		assert_int_equal(o[5].v.i, 9000 + (int64_t)r + 2);
		expect_str(&o[6], "const");
		check_meta(&f->out, r, (int64_t)r + 1);
	}
	/* a bare column is copied (same bytes); a computed string lives in
	 * the output batch's arena */
	assert_ptr_equal(sv_batch_row(&f->out, 0)[2].v.i,
			 sv_batch_row(&f->b, 0)[0].v.i);
	/* lower('us') is unchanged and may point at the input; "EU#1" was
	 * built: it must survive the input batch being reset */
	sv_batch_reset(&f->b);
	rec(f, 99, "XXXXXXXXXXXX", 1, false, "XXXXXXXXXXXX");
	expect_str(&sv_batch_row(&f->out, 0)[3], "EU#1");
	expect_str(&sv_batch_row(&f->out, 0)[0], "eu");
	sv_batch_release(&f->out);
	sv_op_destroy(op);
}

static void test_select_passthrough_and_nulls(void **state)
{
	fx_t *f = *state;
	fill(f);
	static const char *const names[] = {"status", "region", "amount"};
	static const char *const exprs[] = {"status", "`region`", "(amount)"};
	sv_op_t *op;
	assert_null(sv_op_select_new(f->in, 3, names, exprs, &op));
	run(f, op);
	assert_int_equal(f->out.nrows, 8);
	for (size_t r = 0; r < 8; r++) {
		const sv_value_t *o = sv_batch_row(&f->out, r);
		const sv_value_t *i = sv_batch_row(&f->b, r);
		assert_memory_equal(&o[0], &i[3], sizeof(sv_value_t));
		assert_memory_equal(&o[1], &i[1], sizeof(sv_value_t));
		assert_memory_equal(&o[2], &i[2], sizeof(sv_value_t));
		check_meta(&f->out, r, (int64_t)r + 1);
	}
	assert_int_equal(sv_batch_row(&f->out, 5)[0].type, SV_T_NULL);
	assert_int_equal(sv_batch_row(&f->out, 3)[1].type, SV_T_NULL);
	assert_int_equal(sv_batch_row(&f->out, 4)[2].type, SV_T_NULL);
	sv_batch_release(&f->out);
	sv_op_destroy(op);
	/* typed nulls and null-producing expressions */
	static const char *const n2[] = {"nothing", "ratio", "first"};
	static const char *const e2[] = {"cast(null as string)", "10 / amount",
					 "coalesce(status, region, 'none')"};
	assert_null(sv_op_select_new(f->in, 3, n2, e2, &op));
	assert_true(op->out_schema->fields[0].nullable);
	assert_true(op->out_schema->fields[1].nullable);
	assert_false(op->out_schema->fields[2].nullable);
	run(f, op);
	const sv_value_t *o = sv_batch_row(&f->out, 1); /* amount 0 */
	assert_int_equal(o[0].type, SV_T_NULL);
	assert_int_equal(o[1].type, SV_T_NULL);
	expect_str(&o[2], "completed");
	o = sv_batch_row(&f->out, 5); /* status null */
	expect_str(&o[2], "US");
	o = sv_batch_row(&f->out, 0);
	assert_int_equal(o[1].type, SV_T_FLOAT64);
	assert_true(o[1].v.f == 1.0);
	sv_batch_release(&f->out);
	sv_op_destroy(op);
}

static void test_select_errors(void **state)
{
	fx_t *f = *state;
	static const struct {
		size_t n;
		const char *names[3];
		const char *exprs[3];
		sv_errcat_t cat;
		const char *message;
	} cases[] = {
		{0,
		 {NULL},
		 {NULL},
		 SV_ERR_SUBMISSION,
		 "select needs at least one column"},
		{2,
		 {"a", "a"},
		 {"id", "region"},
		 SV_ERR_SUBMISSION,
		 "duplicate output column 'a' in select"},
		{2,
		 {"a", ""},
		 {"id", "region"},
		 SV_ERR_SUBMISSION,
		 "select column 2 has an empty name"},
		{1,
		 {"x"},
		 {"null"},
		 SV_ERR_SUBMISSION,
		 "select column 'x' has no type: write cast(null as <type>)"},
		{3,
		 {"a", "b", "c"},
		 {"id", "region + 1", "status"},
		 SV_ERR_SUBMISSION,
		 "expression 'region + 1' at position 8: operator '+' cannot "
		 "apply to string and int64"},
		{2,
		 {"a", "b"},
		 {"id", "upper(regoin)"},
		 SV_ERR_SUBMISSION,
		 "expression 'upper(regoin)' at position 7: unknown column "
		 "'regoin'"},
		{2,
		 {"a", "b"},
		 {"id", "soundex(region)"},
		 SV_ERR_COVERAGE,
		 "expression 'soundex(region)' at position 1: function "
		 "'soundex' is not in the registry"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		sv_op_t *op = (sv_op_t *)1;
		sv_error_t *err = sv_op_select_new(
			f->in, cases[k].n, cases[k].names, cases[k].exprs, &op);
		if (!err)
			fail_msg("case %zu accepted", k);
		assert_null(op);
		assert_string_equal(err->message, cases[k].message);
		assert_int_equal(err->category, cases[k].cat);
		sv_error_destroy(err);
	}
}

/* ---- pipeline ---- */

static sv_pipeline_t *build_chain(fx_t *f, bool second_filter)
{
	sv_pipeline_t *pl = sv_pipeline_new(f->in);
	assert_int_equal(sv_pipeline_len(pl), 0);
	assert_ptr_equal(sv_pipeline_out_schema(pl), f->in);
	sv_op_t *op;
	assert_null(sv_op_filter_new(
		f->in, "status == 'completed' && amount > 0", &op));
	sv_pipeline_add(pl, op);
	static const char *const names[] = {"region", "amount", "id"};
	static const char *const exprs[] = {"upper(coalesce(region, '?'))",
					    "amount * 2", "id"};
	assert_null(sv_op_select_new(sv_pipeline_out_schema(pl), 3, names,
				     exprs, &op));
	sv_pipeline_add(pl, op);
	if (second_filter) {
		/* a filter over the select's output columns */
		assert_null(sv_op_filter_new(sv_pipeline_out_schema(pl),
					     "region != 'EU'", &op));
		sv_pipeline_add(pl, op);
	}
	return pl;
}

/* n rows that pass build_chain's filter into f->b (reset first). */
static void passing_rows(fx_t *f, int n)
{
	sv_batch_reset(&f->b);
	for (int i = 0; i < n; i++)
		rec(f, i, "eu", 1.0, false, "completed");
}

/* A stage that took a burst gives its memory back at the next call; one
 * of a steady size keeps it (reused, no allocation). */
static void test_pipeline_burst_released(void **state)
{
	fx_t *f = *state;
	sv_pipeline_t *pl = build_chain(f, false);
	sv_batch_t *out;
	passing_rows(f, 20000);
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_int_equal(out->nrows, 20000);
	assert_true(out->cap > 16384);
	passing_rows(f, 1);
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_int_equal(out->nrows, 1);
	expect_str(&sv_batch_row(out, 0)[0], "EU");
	assert_true(out->cap <= 256); /* released, grown anew */
	passing_rows(f, 10000);
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	size_t cap = out->cap;
	assert_true(cap <= 16384);
	passing_rows(f, 1);
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_int_equal(out->nrows, 1);
	assert_int_equal(out->cap, cap); /* kept */
	/* advance resets the stages the same way */
	passing_rows(f, 20000);
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_null(sv_pipeline_advance(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 0);
	assert_true(out->cap <= 256);
	sv_pipeline_destroy(pl);
}

static void test_pipeline_filter_select(void **state)
{
	fx_t *f = *state;
	fill(f);
	sv_pipeline_t *pl = build_chain(f, false);
	assert_int_equal(sv_pipeline_len(pl), 2);
	assert_string_equal(sv_pipeline_op(pl, 0)->ops->name, "filter");
	assert_string_equal(sv_pipeline_op(pl, 1)->ops->name, "select");
	assert_null(sv_pipeline_op(pl, 2));
	const sv_schema_t *os = sv_pipeline_out_schema(pl);
	assert_int_equal(os->nfields, 3);
	assert_string_equal(os->fields[0].name, "region");
	assert_int_equal(os->fields[1].type, SV_T_FLOAT64);
	sv_batch_t *out;
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_ptr_equal(out->schema, os);
	assert_string_equal(ids(out, 2), "1,4,7");
	static const char *const region[] = {"EU", "?", "EU"};
	static const double amount[] = {20.0, 14.0, 2.5};
	for (size_t r = 0; r < out->nrows; r++) {
		const sv_value_t *o = sv_batch_row(out, r);
		expect_str(&o[0], region[r]);
		assert_true(o[1].v.f == amount[r]);
		check_meta(out, r, o[2].v.i);
	}
	/* a second push reuses the stages: only the new rows come out */
	sv_batch_reset(&f->b);
	rec(f, 21, "us", 1.0, false, "completed");
	rec(f, 22, "us", 1.0, false, "pending");
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_string_equal(ids(out, 2), "21");
	expect_str(&sv_batch_row(out, 0)[0], "US");
	check_meta(out, 0, 21);
	/* an input where nothing passes the filter */
	sv_batch_reset(&f->b);
	rec(f, 31, "us", 1.0, false, "pending");
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_int_equal(out->nrows, 0);
	/* stateless operators: advance and finish emit nothing, no state */
	assert_null(sv_pipeline_advance(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 0);
	f->ctx.watermark_ms = 123456;
	assert_null(sv_pipeline_advance(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 0);
	assert_null(sv_pipeline_finish(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 0);
	uint64_t bytes = 1, keys = 1;
	sv_pipeline_state_size(pl, &bytes, &keys);
	assert_int_equal(bytes, 0);
	assert_int_equal(keys, 0);
	sv_pipeline_destroy(pl);
}

static void test_pipeline_three_stages(void **state)
{
	fx_t *f = *state;
	sv_pipeline_t *pl = build_chain(f, true);
	/* many pushes of many rows: exact output each time */
	for (int round = 0; round < 20; round++) {
		sv_batch_reset(&f->b);
		int64_t want = 0;
		char wantids[4096];
		size_t w = 0;
		wantids[0] = '\0';
		for (int k = 0; k < 100; k++) {
			int64_t id = round * 1000 + k;
			const char *region = k % 3 == 0 ? "eu"
				: k % 3 == 1            ? "us"
							: NULL;
			bool completed = k % 2 == 0;
			double amount = (k % 5) - 1.0;
			rec(f, id, region, amount, k % 7 == 0,
			    completed ? "completed" : "open");
			if (completed && amount > 0 && k % 7 != 0 &&
			    k % 3 != 0) {
				want++;
				w += (size_t)snprintf(
					wantids + w, sizeof(wantids) - w,
					"%s%lld", w ? "," : "", (long long)id);
			}
		}
		sv_batch_t *out;
		assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
		assert_int_equal(out->nrows, want);
		/* ids() has a small buffer: compare id by id */
		char got[4096];
		w = 0;
		got[0] = '\0';
		for (size_t r = 0; r < out->nrows; r++) {
			const sv_value_t *o = sv_batch_row(out, r);
			w += (size_t)snprintf(got + w, sizeof(got) - w,
					      "%s%lld", r ? "," : "",
					      (long long)o[2].v.i);
			check_meta(out, r, o[2].v.i);
			assert_true(o[0].len == 1 ? o[0].v.s[0] == '?'
						  : !memcmp(o[0].v.s, "US", 2));
		}
		assert_string_equal(got, wantids);
	}
	sv_pipeline_destroy(pl);
}

static void test_pipeline_empty(void **state)
{
	fx_t *f = *state;
	fill(f);
	sv_pipeline_t *pl = sv_pipeline_new(f->in);
	sv_batch_t *out;
	/* no operators: the input is the output */
	assert_null(sv_pipeline_push(pl, &f->ctx, &f->b, &out));
	assert_ptr_equal(out, &f->b);
	assert_null(sv_pipeline_advance(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 0);
	assert_null(sv_pipeline_finish(pl, &f->ctx, &out));
	assert_int_equal(out->nrows, 0);
	uint64_t bytes, keys;
	sv_pipeline_state_size(pl, &bytes, &keys);
	assert_int_equal(bytes + keys, 0);
	sv_pipeline_destroy(pl);
	sv_pipeline_destroy(NULL);
	sv_op_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_filter_keeps_true_rows,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_filter_nulls, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_filter_computed_strings,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_filter_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_select_columns, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_select_passthrough_and_nulls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_burst_released,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_filter_select,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_three_stages,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_empty, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
