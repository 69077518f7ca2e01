/* test_order.c — the order operator (core/order.c) and the global window:
 * rows come out only at the end of input, sorted by the keys (asc/desc,
 * nulls first/last, ties in arrival order), after offset and within limit;
 * the buffered rows survive snapshot/restore; a global window emits one row
 * per key at the end of input only, whatever the watermark did before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/window.h"
#include "core/window_int.h"

typedef struct fx {
	sv_schema_t *in; /* k string, v int64 */
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

static void rec(fx_t *f, const char *k, const int64_t *v, int64_t t)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(&f->b, &m);
	m->event_ms = t;
	if (k)
		row[0] = sv_str(sv_batch_strdup(&f->b, k, strlen(k)),
				(uint32_t)strlen(k));
	if (v)
		row[1] = sv_int(*v);
}

/* Rows of out as "k:v;" (null as -) */
static const char *text(fx_t *f, const sv_batch_t *out)
{
	char *p = f->text;
	*p = '\0';
	for (size_t r = 0; r < out->nrows; r++) {
		const sv_value_t *row = sv_batch_row(out, r);
		p += sprintf(p, "%.*s:", row[0].type ? (int)row[0].len : 1,
			     row[0].type ? row[0].v.s : "-");
		size_t nc = out->ncols;
		const sv_value_t *v = &row[nc - 1];
		if (v->type)
			p += sprintf(p, "%lld;", (long long)v->v.i);
		else
			p += sprintf(p, "-;");
	}
	return f->text;
}

static void load(fx_t *f)
{
	static const int64_t vs[] = {3, 1, 2, 1, 5};
	sv_batch_reset(&f->b);
	rec(f, "a", &vs[0], 10);
	rec(f, "b", &vs[1], 11);
	rec(f, NULL, &vs[2], 12);
	rec(f, "c", &vs[3], 13);
	rec(f, "d", NULL, 14);
	rec(f, "e", &vs[4], 15);
}

static const char *order(fx_t *f, const char *key, bool desc, bool nf,
			 int64_t limit, int64_t offset, bool via_snapshot)
{
	const char *keys[] = {key};
	sv_op_t *op = NULL;
	assert_null(sv_op_order_new(f->in, 1, keys, &desc, &nf, limit, offset,
				    &op));
	sv_batch_t out;
	sv_batch_init(&out, op->out_schema);
	load(f);
	assert_null(op->ops->process(op, &f->ctx, &f->b, &out));
	assert_int_equal(out.nrows, 0); /* nothing before the end */
	if (via_snapshot) {
		sv_buf_t s;
		sv_buf_init(&s);
		assert_null(op->ops->snapshot(op, &s));
		sv_op_t *op2 = NULL;
		assert_null(sv_op_order_new(f->in, 1, keys, &desc, &nf, limit,
					    offset, &op2));
		assert_null(op2->ops->restore(op2, s.data, s.len));
		sv_buf_release(&s);
		sv_op_destroy(op);
		op = op2;
	}
	assert_null(op->ops->finish(op, &f->ctx, &out));
	const char *t = text(f, &out);
	sv_batch_release(&out);
	sv_op_destroy(op);
	return t;
}

static void test_order_keys(void **state)
{
	fx_t *f = *state;
	assert_string_equal(order(f, "v", false, false, -1, 0, false),
			    "b:1;c:1;-:2;a:3;e:5;d:-;");
	assert_string_equal(order(f, "v", false, true, -1, 0, false),
			    "d:-;b:1;c:1;-:2;a:3;e:5;");
	assert_string_equal(order(f, "v", true, true, -1, 0, false),
			    "d:-;e:5;a:3;-:2;b:1;c:1;");
	assert_string_equal(order(f, "v", true, false, -1, 0, false),
			    "e:5;a:3;-:2;b:1;c:1;d:-;");
	/* an expression key */
	assert_string_equal(order(f, "-v", false, false, 2, 0, false),
			    "e:5;a:3;");
	/* offset and limit; a limit past the end */
	assert_string_equal(order(f, "v", false, false, 2, 1, false),
			    "c:1;-:2;");
	assert_string_equal(order(f, "v", false, false, 10, 4, false),
			    "e:5;d:-;");
	assert_string_equal(order(f, "v", false, false, 0, 0, false), "");
	/* the buffered rows are its checkpointed state */
	assert_string_equal(order(f, "k", false, true, -1, 0, true),
			    "-:2;a:3;b:1;c:1;d:-;e:5;");
}

static void test_global_window(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t ws = {0};
	ws.type = SV_WIN_GLOBAL;
	static const char *const names[] = {"n"};
	static const char *const exprs[] = {"count()"};
	ws.naggs = 1;
	ws.agg_names = names;
	ws.agg_exprs = exprs;
	sv_op_t *op = NULL;
	assert_null(sv_op_window_new(f->in, &ws, &op));
	sv_batch_t out;
	sv_batch_init(&out, op->out_schema);
	load(f);
	assert_null(op->ops->process(op, &f->ctx, &f->b, &out));
	f->ctx.watermark_ms = (int64_t)1 << 60; /* far ahead: nothing fires */
	assert_null(op->ops->advance(op, &f->ctx, &out));
	assert_int_equal(out.nrows, 0);
	assert_null(op->ops->finish(op, &f->ctx, &out));
	assert_int_equal(out.nrows, 1);
	assert_int_equal(sv_batch_row(&out, 0)[2].v.i, 6); /* count() */
	sv_batch_release(&out);
	sv_op_destroy(op);
	f->ctx.watermark_ms = SV_WATERMARK_NONE;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_keys, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_global_window, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
