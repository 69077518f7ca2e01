/* test_window.c — keyed tumbling, sliding and session windows: firing rule
 * (watermark >= end - 1 + allowed_lateness), out-of-order and late input
 * under both late policies, empty windows, nulls, session merging, sliding
 * panes, processing time, finish, state accounting, snapshot/restore,
 * incremental checkpoints (a full snapshot plus deltas restores exactly the
 * state a full snapshot holds, randomized, with deletes) and the errors for
 * bad window specs. Calls the operator vtable directly and
 * compares the output rows, formatted as text, exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/window_int.h"

#define NUL INT64_MIN /* "null" for an int64 cell in rec() */

typedef struct fx {
	sv_schema_t *in; /* k string, v int64, x float64, s string */
	sv_op_t *op;
	sv_batch_t b, out, late;
	sv_opstats_t st;
	sv_op_ctx_t ctx;
	char text[16384];
} fx_t;

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	f->in = sv_schema_new();
	sv_schema_add(f->in, "k", SV_T_STRING, true);
	sv_schema_add(f->in, "v", SV_T_INT64, true);
	sv_schema_add(f->in, "x", SV_T_FLOAT64, true);
	sv_schema_add(f->in, "s", SV_T_STRING, true);
	sv_batch_init(&f->b, f->in);
	sv_batch_init(&f->late, f->in);
	f->ctx.watermark_ms = SV_WATERMARK_NONE;
	f->ctx.stats = &f->st;
	f->ctx.late = &f->late;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	if (f->op) {
		sv_batch_release(&f->out);
		sv_op_destroy(f->op);
	}
	sv_batch_release(&f->b);
	sv_batch_release(&f->late);
	sv_schema_destroy(f->in);
	free(f);
	return 0;
}

/* Parse "name:fn(expr);name:fn(expr)" into a spec (strings leaked into
 * the static pool for the call). */
typedef struct aggs {
	char buf[512];
	const char *names[16], *exprs[16];
	size_t n;
} aggs_t;

static void parse_aggs(aggs_t *a, const char *list)
{
	snprintf(a->buf, sizeof(a->buf), "%s", list);
	a->n = 0;
	for (char *save = NULL, *tok = strtok_r(a->buf, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save)) {
		char *colon = strchr(tok, ':');
		*colon = '\0';
		a->names[a->n] = tok;
		a->exprs[a->n++] = colon + 1;
	}
}

static sv_error_t *try_win(fx_t *f, sv_window_spec_t *spec, const char *list,
			   sv_op_t **op)
{
	static const char *const keys[] = {"k"};
	aggs_t a;
	parse_aggs(&a, list);
	if (!spec->keys) {
		spec->keys = keys;
		spec->nkeys = 1;
	}
	spec->naggs = a.n;
	spec->agg_names = a.names;
	spec->agg_exprs = a.exprs;
	return sv_op_window_new(f->in, spec, op);
}

static void win(fx_t *f, sv_window_spec_t spec, const char *list)
{
	sv_error_t *err = try_win(f, &spec, list, &f->op);
	if (err)
		fail_msg("window: %s", err->message);
	sv_batch_init(&f->out, f->op->out_schema);
}

/* Append an input row: k (NULL: null), v (NUL: null), x = v / 2 (null
 * with v), s = "s<v>", event time t. */
static void rec(fx_t *f, const char *k, int64_t v, int64_t t)
{
	sv_rowmeta_t *m;
	sv_value_t *row = sv_batch_add_row(&f->b, &m);
	m->event_ms = t;
	if (k)
		row[0] = sv_str(sv_batch_strdup(&f->b, k, strlen(k)),
				(uint32_t)strlen(k));
	if (v != NUL) {
		char tmp[32];
		int n = snprintf(tmp, sizeof(tmp), "s%lld", (long long)v);
		row[1] = sv_int(v);
		row[2] = sv_float((double)v / 2);
		row[3] = sv_str(sv_batch_strdup(&f->b, tmp, (size_t)n),
				(uint32_t)n);
	}
}

static void fmt_value(char **p, char *end, const sv_value_t *v)
{
	size_t room = (size_t)(end - *p);
	int n = 0;
	switch (v->type) {
	case SV_T_NULL:
		n = snprintf(*p, room, "~");
		break;
	case SV_T_BOOL:
		n = snprintf(*p, room, "%s", v->v.b ? "t" : "f");
		break;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		n = snprintf(*p, room, "%lld", (long long)v->v.i);
		break;
	case SV_T_FLOAT64:
		n = snprintf(*p, room, "%g", v->v.f);
		break;
	case SV_T_STRING:
		n = snprintf(*p, room, "%.*s", (int)v->len, v->v.s);
		break;
	}
	*p += n;
}

/* Rows of b as "c1|c2|...;" and reset b. */
static const char *fmt_rows(fx_t *f, sv_batch_t *b)
{
	char *p = f->text, *end = f->text + sizeof(f->text);
	*p = '\0';
	for (size_t r = 0; r < b->nrows; r++) {
		const sv_value_t *row = sv_batch_row(b, r);
		for (size_t c = 0; c < b->ncols; c++) {
			if (c)
				*p++ = '|';
			fmt_value(&p, end, &row[c]);
		}
		*p++ = ';';
		*p = '\0';
	}
	sv_batch_reset(b);
	return f->text;
}

/* Process the pending input rows; process never emits. */
static void push(fx_t *f)
{
	assert_null(f->op->ops->process(f->op, &f->ctx, &f->b, &f->out));
	assert_int_equal(f->out.nrows, 0);
	sv_batch_reset(&f->b);
}

static const char *adv(fx_t *f, int64_t wm)
{
	f->ctx.watermark_ms = wm;
	assert_null(f->op->ops->advance(f->op, &f->ctx, &f->out));
	return fmt_rows(f, &f->out);
}

static const char *fin(fx_t *f)
{
	assert_null(f->op->ops->finish(f->op, &f->ctx, &f->out));
	return fmt_rows(f, &f->out);
}

static uint64_t nkeys(fx_t *f)
{
	uint64_t bytes, keys;
	f->op->ops->state_size(f->op, &bytes, &keys);
	return keys;
}

static uint64_t nbytes(fx_t *f)
{
	uint64_t bytes, keys;
	f->op->ops->state_size(f->op, &bytes, &keys);
	return bytes;
}

#define TUMBLING(sz) \
	((sv_window_spec_t){.type = SV_WIN_TUMBLING, .size_ms = (sz)})
#define SLIDING(sz, sl)      \
	((sv_window_spec_t){ \
		.type = SV_WIN_SLIDING, .size_ms = (sz), .slide_ms = (sl)})
#define SESSION(g) ((sv_window_spec_t){.type = SV_WIN_SESSION, .gap_ms = (g)})

/* ---- firing, out of order, empty windows ---- */

static void test_output_schema(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count();total:sum(v);m:min(s);a:avg(v)");
	const sv_schema_t *os = f->op->out_schema;
	assert_int_equal(os->nfields, 7);
	const char *names[] = {
		"k", "window_start", "window_end", "n", "total", "m", "a"};
	sv_type_t types[] = {SV_T_STRING, SV_T_TIMESTAMP, SV_T_TIMESTAMP,
			     SV_T_INT64,  SV_T_INT64,     SV_T_STRING,
			     SV_T_FLOAT64};
	bool nullable[] = {true, false, false, false, true, true, true};
	for (size_t i = 0; i < 7; i++) {
		assert_string_equal(os->fields[i].name, names[i]);
		assert_int_equal(os->fields[i].type, types[i]);
		assert_int_equal(os->fields[i].nullable, nullable[i]);
	}
	assert_string_equal(f->op->ops->name, "window");
}

static void test_tumbling_out_of_order(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10),
	    "n:count();sum:sum(v);min:min(v);max:max(v);avg:avg(v);"
	    "first:first(v);last:last(v);d:count_distinct(v)");
	/* event times out of order, across windows and keys */
	rec(f, "a", 4, 7);
	rec(f, "b", 1, 12);
	rec(f, "a", 2, 3);
	rec(f, "a", 9, 9);
	rec(f, "a", 2, 0);
	rec(f, "b", 5, 11);
	push(f);
	/* no watermark yet, then one short of end - 1 */
	assert_string_equal(adv(f, SV_WATERMARK_NONE), "");
	assert_string_equal(adv(f, 8), "");
	/* Flink's rule: [0, 10) fires when the watermark reaches 9 */
	assert_string_equal(adv(f, 9), "a|0|10|4|17|2|9|4.25|2|9|3;");
	/* the output row's event time is window_end - 1 */
	rec(f, "a", 1, 19);
	push(f);
	assert_string_equal(adv(f, 19),
			    "b|10|20|2|6|1|5|3|5|1|2;a|10|20|1|1|1|1|1|1|1|1;");
	assert_int_equal(f->st.records_late, 0);
	assert_int_equal(nkeys(f), 0);
}

static void test_event_time_of_output(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count()");
	rec(f, "a", 1, 5);
	push(f);
	f->ctx.watermark_ms = 100;
	assert_null(f->op->ops->advance(f->op, &f->ctx, &f->out));
	assert_int_equal(f->out.nrows, 1);
	assert_int_equal(f->out.meta[0].event_ms, 9);
	assert_int_equal(f->out.meta[0].partition, -1);
	sv_batch_reset(&f->out);
}

static void test_empty_windows_emit_nothing(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count()");
	rec(f, "a", 1, 5);
	rec(f, "a", 1, 35);
	push(f);
	/* [10, 20) and [20, 30) had no record: no row for them */
	assert_string_equal(adv(f, 100), "a|0|10|1;a|30|40|1;");
	/* a watermark with nothing behind it emits nothing */
	assert_string_equal(adv(f, 1000), "");
	assert_string_equal(fin(f), "");
}

static void test_negative_times_floor(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count()");
	rec(f, "a", 1, -1);
	rec(f, "a", 1, -10);
	rec(f, "a", 1, -11);
	rec(f, "a", 1, 0);
	push(f);
	assert_string_equal(adv(f, 0), "a|-20|-10|1;a|-10|0|2;");
	assert_string_equal(fin(f), "a|0|10|1;");
}

/* Regression: a watermark near INT64_MIN made the next firing compute
 * window bounds with signed overflow (UBSan). */
static void test_extreme_low_watermark(void **state)
{
	fx_t *f = *state;
	win(f, SLIDING(10, 5), "n:count()");
	rec(f, "a", 1, 3);
	push(f);
	assert_string_equal(adv(f, INT64_MIN + 1), "");
	assert_string_equal(adv(f, -((int64_t)1 << 62) - 7), "");
	assert_string_equal(adv(f, 100), "a|-5|5|1;a|0|10|1;");
}

/* Regression: with a lateness near 2^61 the firing loop took its own
 * watermark for "everything emitted" and freed later windows unemitted. */
static void test_huge_lateness(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = TUMBLING(10);
	spec.allowed_lateness_ms = ((int64_t)1 << 61) - 5;
	win(f, spec, "n:count()");
	rec(f, "a", 1, 5);
	rec(f, "a", 1, 15);
	push(f);
	assert_string_equal(adv(f, 19 + spec.allowed_lateness_ms),
			    "a|0|10|1;a|10|20|1;");
}

/* ---- late data ---- */

static void test_late_drop(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count()");
	rec(f, "a", 1, 5);
	push(f);
	assert_string_equal(adv(f, 9), "a|0|10|1;");
	rec(f, "a", 2, 9); /* late: [0, 10) was emitted */
	rec(f, "a", 3, 0); /* late */
	rec(f, "a", 4, 10); /* on time: [10, 20) is open */
	push(f);
	assert_int_equal(f->st.records_late, 2);
	/* drop policy: nothing goes to the side output even if the job has
	 * a late batch */
	assert_int_equal(f->late.nrows, 0);
	assert_string_equal(fin(f), "a|10|20|1;");
}

static void test_late_side_output(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = TUMBLING(10);
	spec.late_side_output = true;
	win(f, spec, "n:count()");
	rec(f, "a", 1, 5);
	push(f);
	assert_string_equal(adv(f, 12), "a|0|10|1;");
	rec(f, "b", 7, 3);
	rec(f, NULL, NUL, 8);
	rec(f, "c", 1, 11);
	push(f);
	assert_int_equal(f->st.records_late, 2);
	/* the late rows, unchanged, in the input schema, with their meta */
	assert_int_equal(f->late.nrows, 2);
	assert_int_equal(f->late.meta[0].event_ms, 3);
	assert_int_equal(f->late.meta[1].event_ms, 8);
	assert_string_equal(fmt_rows(f, &f->late), "b|7|3.5|s7;~|~|~|~;");
	assert_string_equal(fin(f), "c|10|20|1;");
}

static void test_allowed_lateness(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = TUMBLING(10);
	spec.allowed_lateness_ms = 5;
	win(f, spec, "n:count();s:sum(v)");
	rec(f, "a", 1, 5);
	push(f);
	/* emitted at end - 1 + lateness = 14, once */
	assert_string_equal(adv(f, 13), "");
	rec(f, "a", 10, 2); /* behind the watermark but within lateness */
	push(f);
	assert_int_equal(f->st.records_late, 0);
	assert_string_equal(adv(f, 14), "a|0|10|2|11;");
	rec(f, "a", 100, 9); /* now late */
	push(f);
	assert_int_equal(f->st.records_late, 1);
	assert_string_equal(fin(f), "");
}

static void test_late_only_when_all_windows_emitted(void **state)
{
	fx_t *f = *state;
	/* windows [-10, 10), [0, 20), [10, 30), ... */
	win(f, SLIDING(20, 10), "n:count()");
	rec(f, "a", 1, 5);
	push(f);
	assert_string_equal(adv(f, 9), "a|-10|10|1;");
	/* t = 8 belongs to [-10, 10) (emitted) and [0, 20) (open): not late,
	 * counted in the open window only */
	rec(f, "a", 1, 8);
	push(f);
	assert_int_equal(f->st.records_late, 0);
	assert_string_equal(adv(f, 19), "a|0|20|2;");
	rec(f, "a", 1, 9); /* every window of t = 9 is emitted */
	push(f);
	assert_int_equal(f->st.records_late, 1);
	assert_string_equal(fin(f), "");
}

/* ---- nulls ---- */

static void test_nulls(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10),
	    "rows:count();n:count(v);sum:sum(v);min:min(v);max:max(v);"
	    "avg:avg(x);first:first(s);last:last(s);d:count_distinct(v)");
	rec(f, NULL, 3, 1); /* null key: its own group */
	rec(f, NULL, NUL, 2); /* null argument: ignored, counted by count() */
	rec(f, "a", NUL, 3);
	rec(f, NULL, 5, 4);
	rec(f, "a", NUL, 5);
	rec(f, NULL, 3, 6);
	push(f);
	assert_string_equal(adv(f, 9),
			    "~|0|10|4|3|11|3|5|1.83333|s3|s3|2;"
			    /* all arguments null: SQL's nulls, counts 0 */
			    "a|0|10|2|0|~|~|~|~|~|~|0;");
}

static void test_null_and_empty_string_keys_differ(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count()");
	rec(f, NULL, 1, 1);
	rec(f, "", 1, 2);
	rec(f, NULL, 1, 3);
	push(f);
	assert_string_equal(adv(f, 9), "~|0|10|2;|0|10|1;");
}

static void test_string_aggregates_survive_input_reuse(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(100),
	    "min:min(s);max:max(s);first:first(s);"
	    "last:last(s);u:first(upper(s))");
	rec(f, "a", 5, 50);
	rec(f, "a", 12, 40);
	push(f); /* the input batch is reset: the state must own its copies */
	rec(f, "a", 300, 60);
	rec(f, "a", 7, 40); /* same time as 12: arrival order breaks ties */
	push(f);
	assert_string_equal(adv(f, 99), "a|0|100|s12|s7|s12|s300|S12;");
}

static void test_first_last_by_event_time(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "first:first(v);last:last(v)");
	rec(f, "a", 1, 5);
	rec(f, "a", 2, 2); /* earliest event time: first */
	rec(f, "a", 3, 8); /* latest: last */
	rec(f, "a", 4, 6);
	push(f);
	assert_string_equal(adv(f, 9), "a|0|10|2|3;");
}

static void test_no_keys_global_window(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = TUMBLING(10);
	static const char *const none[] = {NULL};
	spec.keys = none;
	spec.nkeys = 0;
	win(f, spec, "n:count();s:sum(v)");
	rec(f, "a", 1, 1);
	rec(f, "b", 2, 2);
	rec(f, NULL, 3, 12);
	push(f);
	assert_string_equal(adv(f, 100), "0|10|2|3;10|20|1|3;");
}

/* ---- sessions ---- */

static void test_session_merging(void **state)
{
	fx_t *f = *state;
	win(f, SESSION(10), "n:count();s:sum(v);first:first(v);last:last(v)");
	rec(f, "a", 1, 0);
	rec(f, "a", 2, 5); /* [0, 15) */
	rec(f, "a", 3, 25); /* [25, 35): separate */
	rec(f, "b", 100, 7); /* another key */
	push(f);
	assert_int_equal(nkeys(f), 3); /* sessions held */
	/* [15, 25) touches both neighbours (Flink merges touching windows):
	 * one session [0, 35) */
	rec(f, "a", 4, 15);
	push(f);
	assert_int_equal(nkeys(f), 2);
	/* b's session [7, 17) fires at 16; a's [0, 35) at 34 */
	assert_string_equal(adv(f, 16), "b|7|17|1|100|100|100;");
	assert_string_equal(adv(f, 33), "");
	assert_string_equal(adv(f, 34), "a|0|35|4|10|1|3;");
	assert_int_equal(nkeys(f), 0);
}

static void test_session_gap_not_touching(void **state)
{
	fx_t *f = *state;
	win(f, SESSION(10), "n:count()");
	rec(f, "a", 1, 0);
	rec(f, "a", 1, 11); /* [0, 10) and [11, 21): a 1 ms hole */
	rec(f, "a", 1, 31); /* [31, 41) */
	push(f);
	assert_string_equal(adv(f, 9), "a|0|10|1;");
	/* 10 touches [11, 21) but [0, 10) is gone: new and merged */
	rec(f, "a", 1, 10);
	push(f);
	assert_int_equal(f->st.records_late, 0);
	assert_string_equal(fin(f), "a|10|21|2;a|31|41|1;");
}

static void test_session_extended_reschedules(void **state)
{
	fx_t *f = *state;
	win(f, SESSION(10), "n:count()");
	rec(f, "a", 1, 0);
	push(f);
	assert_string_equal(adv(f, 5), "");
	rec(f, "a", 1, 8); /* grows to [0, 18): not due at 9 any more */
	push(f);
	assert_string_equal(adv(f, 9), "");
	assert_string_equal(adv(f, 16), "");
	assert_string_equal(adv(f, 17), "a|0|18|2;");
}

static void test_session_late(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = SESSION(10);
	spec.late_side_output = true;
	win(f, spec, "n:count()");
	rec(f, "a", 1, 50);
	push(f);
	assert_string_equal(adv(f, 30), "");
	/* its own window [15, 25) is behind the watermark: late */
	rec(f, "b", 1, 15);
	/* [22, 32) ends after the watermark: a new session */
	rec(f, "b", 1, 22);
	/* [45, 55) merges into a's open session: never late */
	rec(f, "a", 1, 45);
	push(f);
	assert_int_equal(f->st.records_late, 1);
	assert_int_equal(f->late.nrows, 1);
	assert_int_equal(f->late.meta[0].event_ms, 15);
	sv_batch_reset(&f->late);
	assert_string_equal(fin(f), "b|22|32|1;a|45|60|2;");
}

/* ---- sliding ---- */

static void test_sliding_panes(void **state)
{
	fx_t *f = *state;
	win(f, SLIDING(30, 10), "n:count();s:sum(v);min:min(v);max:max(v)");
	rec(f, "a", 1, 5);
	push(f);
	/* one pane entry per (key, pane), not one per window (3 here) */
	assert_int_equal(nkeys(f), 1);
	rec(f, "a", 2, 15);
	rec(f, "a", 4, 25);
	rec(f, "a", 8, 27); /* same pane as 25 */
	rec(f, "b", 16, 16);
	push(f);
	assert_int_equal(nkeys(f), 4);
	assert_string_equal(adv(f, 9), "a|-20|10|1|1|1|1;");
	assert_string_equal(adv(f, 29),
			    "a|-10|20|2|3|1|2;"
			    "b|-10|20|1|16|16|16;"
			    "a|0|30|4|15|1|8;"
			    "b|0|30|1|16|16|16;");
	/* pane [0, 10) is in no open window any more: freed */
	assert_int_equal(nkeys(f), 3);
	assert_string_equal(fin(f),
			    "a|10|40|3|14|2|8;"
			    "b|10|40|1|16|16|16;"
			    "a|20|50|2|12|4|8;");
	assert_int_equal(nkeys(f), 0);
}

static void test_sliding_uneven_slide(void **state)
{
	fx_t *f = *state;
	/* size 25, slide 10: panes of gcd = 5 ms */
	win(f, SLIDING(25, 10), "n:count()");
	rec(f, "a", 1, 3);
	rec(f, "a", 1, 7);
	rec(f, "a", 1, 14);
	push(f);
	assert_int_equal(nkeys(f), 3); /* panes 0, 5, 10 */
	/* windows [-20, 5), [-10, 15), [0, 25), [10, 35) */
	assert_string_equal(fin(f),
			    "a|-20|5|1;a|-10|15|3;a|0|25|3;"
			    "a|10|35|1;");
}

static void test_sliding_equal_size_is_tumbling(void **state)
{
	fx_t *f = *state;
	win(f, SLIDING(10, 10), "n:count()");
	rec(f, "a", 1, 3);
	rec(f, "a", 1, 13);
	push(f);
	assert_string_equal(fin(f), "a|0|10|1;a|10|20|1;");
}

/* ---- processing time ---- */

static void test_processing_time(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = TUMBLING(10);
	spec.processing_time = true;
	spec.allowed_lateness_ms = 1000; /* ignored for processing time */
	win(f, spec, "n:count();s:sum(v)");
	f->ctx.now_ms = 1005;
	rec(f, "a", 1, 1); /* event time ignored: the record is at 1005 */
	rec(f, "a", 2, 99999);
	push(f);
	f->ctx.now_ms = 1009;
	assert_string_equal(adv(f, SV_WATERMARK_NONE), "");
	rec(f, "a", 4, 0);
	push(f);
	/* the clock reaching the end closes [1000, 1010) */
	f->ctx.now_ms = 1010;
	assert_string_equal(adv(f, SV_WATERMARK_NONE), "a|1000|1010|3|7;");
	/* a clock going back is ignored */
	f->ctx.now_ms = 900;
	rec(f, "a", 8, 0);
	push(f);
	f->ctx.now_ms = 1019;
	assert_string_equal(adv(f, 5000), ""); /* the watermark is ignored */
	f->ctx.now_ms = 1020;
	assert_string_equal(adv(f, SV_WATERMARK_NONE), "a|1010|1020|1|8;");
	assert_int_equal(f->st.records_late, 0);
}

/* ---- finish, state ---- */

static void test_finish_fires_all(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count()");
	rec(f, "a", 1, 5);
	rec(f, "b", 1, 1000000);
	rec(f, "a", 1, 15);
	push(f);
	assert_string_equal(adv(f, 9), "a|0|10|1;");
	assert_string_equal(fin(f), "a|10|20|1;b|1000000|1000010|1;");
	assert_int_equal(nkeys(f), 0);
	/* after the end of input everything is late */
	rec(f, "a", 1, 2000000);
	push(f);
	assert_int_equal(f->st.records_late, 1);
	assert_string_equal(fin(f), "");
}

static void test_finish_sessions(void **state)
{
	fx_t *f = *state;
	win(f, SESSION(5), "n:count()");
	rec(f, "a", 1, 10);
	rec(f, "b", 1, 1);
	rec(f, "a", 1, 12);
	push(f);
	assert_string_equal(fin(f), "b|1|6|1;a|10|17|2;");
	assert_int_equal(nkeys(f), 0);
}

static void test_state_freed_behind_watermark(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count();m:max(s);d:count_distinct(v)");
	uint64_t empty = nbytes(f);
	for (int w = 0; w < 20; w++)
		for (int i = 0; i < 50; i++) {
			char k[16];
			snprintf(k, sizeof(k), "key%d", i);
			rec(f, k, i, w * 10 + i % 10);
		}
	push(f);
	assert_int_equal(nkeys(f), 1000);
	uint64_t full = nbytes(f);
	assert_true(full > empty);
	adv(f, 99); /* half the windows */
	assert_int_equal(nkeys(f), 500);
	uint64_t half = nbytes(f);
	assert_true(half < full);
	adv(f, 199);
	assert_int_equal(nkeys(f), 0);
	assert_true(nbytes(f) < half);
	/* what remains is the tables' fixed part, not per-record state */
	assert_true(nbytes(f) < empty + 64 * 1024);
}

static void test_state_freed_sessions(void **state)
{
	fx_t *f = *state;
	win(f, SESSION(10), "n:count();m:min(s)");
	uint64_t empty = nbytes(f);
	for (int i = 0; i < 200; i++) {
		char k[16];
		snprintf(k, sizeof(k), "key%d", i);
		rec(f, k, i, i * 100);
		rec(f, k, i, i * 100 + 5);
	}
	push(f);
	assert_int_equal(nkeys(f), 200);
	uint64_t full = nbytes(f);
	adv(f, 10000);
	assert_int_equal(nkeys(f), 100);
	assert_true(nbytes(f) < full);
	adv(f, 20000);
	assert_int_equal(nkeys(f), 0);
	assert_true(nbytes(f) < empty + 64 * 1024);
}

/* ---- snapshot / restore ---- */

static void feed_tail(fx_t *f, sv_op_t *op, sv_batch_t *out, int from)
{
	f->ctx.watermark_ms = SV_WATERMARK_NONE;
	for (int i = from; i < 60; i++) {
		char k[8];
		snprintf(k, sizeof(k), "k%d", i % 3);
		rec(f, i % 7 ? k : NULL, i % 5 ? i : NUL, (i * 37) % 200);
		if (i % 6 == 5) {
			assert_null(op->ops->process(op, &f->ctx, &f->b, out));
			sv_batch_reset(&f->b);
			f->ctx.watermark_ms = i * 3;
			assert_null(op->ops->advance(op, &f->ctx, out));
		}
	}
	assert_null(op->ops->process(op, &f->ctx, &f->b, out));
	sv_batch_reset(&f->b);
	assert_null(op->ops->finish(op, &f->ctx, out));
}

static void roundtrip(fx_t *f, sv_window_spec_t spec)
{
	const char *aggs = "n:count();c:count(v);s:sum(v);min:min(s);"
			   "max:max(x);a:avg(v);first:first(s);last:last(v);"
			   "d:count_distinct(s)";
	win(f, spec, aggs);
	sv_op_t *b = NULL;
	assert_null(try_win(f, &spec, aggs, &b));
	sv_batch_t bout;
	sv_batch_init(&bout, b->out_schema);
	/* run the first part on op only, snapshot into b */
	for (int i = 0; i < 30; i++) {
		char k[8];
		snprintf(k, sizeof(k), "k%d", i % 3);
		rec(f, i % 7 ? k : NULL, i % 5 ? i : NUL, (i * 37) % 200);
	}
	push(f);
	f->ctx.watermark_ms = 60;
	assert_null(f->op->ops->advance(f->op, &f->ctx, &f->out));
	sv_batch_reset(&f->out);
	sv_buf_t snap;
	sv_buf_init(&snap);
	assert_null(f->op->ops->snapshot(f->op, &snap));
	assert_null(b->ops->restore(b, snap.data, snap.len));
	uint64_t ka, kb;
	f->op->ops->state_size(f->op, NULL, &ka);
	b->ops->state_size(b, NULL, &kb);
	assert_int_equal(ka, kb);
	assert_true(ka > 0);
	/* a snapshot of the restored operator is the same state */
	sv_buf_t snap2;
	sv_buf_init(&snap2);
	assert_null(b->ops->snapshot(b, &snap2));
	assert_int_equal(snap.len, snap2.len);
	/* the same tail through both gives identical output */
	uint64_t late0 = f->st.records_late;
	feed_tail(f, f->op, &f->out, 30);
	uint64_t late_a = f->st.records_late - late0;
	char expect[sizeof(f->text)];
	snprintf(expect, sizeof(expect), "%s", fmt_rows(f, &f->out));
	assert_true(strlen(expect) > 0);
	feed_tail(f, b, &bout, 30);
	assert_int_equal(f->st.records_late - late0 - late_a, late_a);
	assert_string_equal(fmt_rows(f, &bout), expect);

	/* truncated and foreign snapshots are refused and leave no state */
	sv_error_t *err = b->ops->restore(b, snap.data, snap.len - 1);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	b->ops->state_size(b, NULL, &kb);
	assert_int_equal(kb, 0);
	err = b->ops->restore(b, "Dxxxxxxxxxxxxxxxxxxxxx", 22);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	sv_buf_release(&snap);
	sv_buf_release(&snap2);
	sv_batch_release(&bout);
	sv_op_destroy(b);
}

static void test_snapshot_tumbling(void **state)
{
	roundtrip(*state, TUMBLING(20));
}

static void test_snapshot_sliding(void **state)
{
	roundtrip(*state, SLIDING(50, 20));
}

static void test_snapshot_session(void **state)
{
	roundtrip(*state, SESSION(15));
}

/* ---- incremental checkpoints ---- */

static void buf_equal(const sv_buf_t *a, const sv_buf_t *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data, a->len);
}

/* Random records, watermark advances (windows fire: their panes are
 * deleted) and checkpoints on A, a full snapshot every full_every of them,
 * deltas in between. After each checkpoint B restores the newest full
 * snapshot and applies the deltas since: its full snapshot must equal A's,
 * byte for byte; then both finish with the same output. Negative control:
 * leaving out a delta that carried changes gives a different state. */
static void incremental(fx_t *f, sv_window_spec_t spec, unsigned seed,
			int full_every)
{
	const char *aggs = "n:count();c:count(v);s:sum(v);min:min(s);"
			   "max:max(x);a:avg(v);first:first(s);last:last(v)";
	win(f, spec, aggs);
	sv_op_t *a = f->op, *b = NULL;
	assert_null(try_win(f, &spec, aggs, &b));
	sv_batch_t bout;
	sv_batch_init(&bout, b->out_schema);
	srandom(seed);
	sv_buf_t base, deltas[64];
	size_t nd = 0;
	sv_buf_init(&base);
	int nck = 0, controls = 0, purging = 0;
	int64_t wm = 0;
	for (int step = 0; step < 300; step++) {
		int n = (int)(random() % 20);
		for (int i = 0; i < n; i++) {
			char k[8];
			snprintf(k, sizeof(k), "k%ld", random() % 40);
			int64_t t = wm - 30 + random() % 200; /* some late */
			rec(f, random() % 11 ? k : NULL,
			    random() % 9 ? random() % 1000 : NUL, t);
		}
		assert_null(a->ops->process(a, &f->ctx, &f->b, &f->out));
		sv_batch_reset(&f->b);
		if (random() % 3 == 0) {
			uint64_t k0;
			a->ops->state_size(a, NULL, &k0);
			wm += random() % 60;
			f->ctx.watermark_ms = wm;
			assert_null(a->ops->advance(a, &f->ctx, &f->out));
			uint64_t k1;
			a->ops->state_size(a, NULL, &k1);
			purging += k1 < k0;
			sv_batch_reset(&f->out);
		}
		if (random() % 4)
			continue;
		/* a checkpoint */
		if (nck++ % full_every == 0) {
			sv_buf_release(&base);
			sv_buf_init(&base);
			for (size_t i = 0; i < nd; i++)
				sv_buf_release(&deltas[i]);
			nd = 0;
			assert_null(a->ops->snapshot(a, &base));
		} else {
			bool written = false;
			sv_buf_init(&deltas[nd]);
			assert_null(a->ops->snapshot_delta(a, &deltas[nd],
							   &written));
			assert_true(written);
			nd++;
		}
		a->ops->checkpointed(a);
		sv_buf_t sa, sb;
		sv_buf_init(&sa);
		sv_buf_init(&sb);
		assert_null(a->ops->snapshot(a, &sa));
		assert_null(b->ops->restore(b, base.data, base.len));
		/* no confirmed base after a restore: a full snapshot is due */
		bool written = true;
		sv_buf_t none;
		sv_buf_init(&none);
		assert_null(b->ops->snapshot_delta(b, &none, &written));
		assert_false(written);
		assert_int_equal(none.len, 0);
		for (size_t i = 0; i < nd; i++)
			assert_null(b->ops->restore_delta(b, deltas[i].data,
							  deltas[i].len));
		assert_null(b->ops->snapshot(b, &sb));
		buf_equal(&sa, &sb);
		if (nd >= 2) { /* negative control: skip the first delta */
			sv_buf_t sc;
			sv_buf_init(&sc);
			assert_null(b->ops->restore(b, base.data, base.len));
			for (size_t i = 1; i < nd; i++)
				assert_null(b->ops->restore_delta(
					b, deltas[i].data, deltas[i].len));
			assert_null(b->ops->snapshot(b, &sc));
			if (sc.len != sa.len ||
			    memcmp(sc.data, sa.data, sa.len))
				controls++;
			sv_buf_release(&sc);
		}
		sv_buf_release(&sa);
		sv_buf_release(&sb);
		sv_buf_release(&none);
	}
	assert_true(nck > 20);
	assert_true(controls > 0);
	assert_true(purging > 0);
	/* B from the chain of the last checkpoint and A, after the records
	 * since, diverge; so bring A back to its last checkpoint's state first
	 * by restoring the same chain into it, then finish both */
	assert_null(a->ops->restore(a, base.data, base.len));
	assert_null(b->ops->restore(b, base.data, base.len));
	for (size_t i = 0; i < nd; i++) {
		assert_null(a->ops->restore_delta(a, deltas[i].data,
						  deltas[i].len));
		assert_null(b->ops->restore_delta(b, deltas[i].data,
						  deltas[i].len));
	}
	assert_null(a->ops->finish(a, &f->ctx, &f->out));
	char expect[sizeof(f->text)];
	snprintf(expect, sizeof(expect), "%s", fmt_rows(f, &f->out));
	assert_null(b->ops->finish(b, &f->ctx, &bout));
	assert_string_equal(fmt_rows(f, &bout), expect);
	/* a truncated delta is refused */
	if (nd) {
		sv_error_t *err = b->ops->restore_delta(b, deltas[0].data,
							deltas[0].len - 1);
		assert_non_null(err);
		assert_int_equal(err->category, SV_ERR_CHECKPOINT);
		sv_error_destroy(err);
	}
	sv_buf_release(&base);
	for (size_t i = 0; i < nd; i++)
		sv_buf_release(&deltas[i]);
	sv_batch_release(&bout);
	sv_op_destroy(b);
}

static void test_incremental_tumbling(void **state)
{
	for (unsigned seed = 1; seed <= 3; seed++) {
		fx_t *f = *state;
		incremental(f, TUMBLING(20), seed, 8);
		sv_batch_release(&f->out);
		sv_op_destroy(f->op);
		f->op = NULL;
	}
}

static void test_incremental_sliding(void **state)
{
	for (unsigned seed = 11; seed <= 13; seed++) {
		fx_t *f = *state;
		incremental(f, SLIDING(50, 20), seed, 6);
		sv_batch_release(&f->out);
		sv_op_destroy(f->op);
		f->op = NULL;
	}
}

/* Sessions write deltas: created and extended sessions whole, and one
 * tombstone per checkpointed session deleted since (merged away, given a
 * new id by a merge, fired). Base: a [1,16) id 1, a [30,45) id 2, b [5,20)
 * id 3; then a@16 merges a's two into id 4 [1,45) (tombstones 1 and 2) and
 * the watermark 25 fires b (tombstone 3). Restoring base + delta gives the
 * same snapshot; the base alone does not; the delta applied twice is
 * refused (its tombstones name sessions the state no longer holds). The
 * randomized check is in test_window_random.c. */
static void test_incremental_session(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = SESSION(15);
	win(f, spec, "n:count();s:sum(v)");
	sv_op_t *b = NULL;
	assert_null(try_win(f, &spec, "n:count();s:sum(v)", &b));
	rec(f, "a", 1, 1);
	rec(f, "a", 2, 30);
	rec(f, "b", 3, 5);
	push(f);
	sv_buf_t base, delta, sa, sb;
	sv_buf_init(&base);
	sv_buf_init(&delta);
	sv_buf_init(&sa);
	sv_buf_init(&sb);
	bool written = true;
	/* no confirmed base yet: a full snapshot is due */
	assert_null(f->op->ops->snapshot_delta(f->op, &delta, &written));
	assert_false(written);
	assert_null(f->op->ops->snapshot(f->op, &base));
	f->op->ops->checkpointed(f->op);
	rec(f, "a", 4, 16);
	push(f);
	assert_string_equal(adv(f, 25), "b|5|20|1|3;");
	assert_null(f->op->ops->snapshot_delta(f->op, &delta, &written));
	assert_true(written);
	/* header: 3 u8, 2 u32, 5 i64/u64; then the tombstone count */
	uint64_t ntombs = 0;
	for (int i = 0; i < 8; i++)
		ntombs |= (uint64_t)(uint8_t)delta.data[51 + i] << (8 * i);
	assert_int_equal(ntombs, 3);
	f->op->ops->checkpointed(f->op);
	assert_null(f->op->ops->snapshot(f->op, &sa));
	assert_null(b->ops->restore(b, base.data, base.len));
	assert_null(b->ops->restore_delta(b, delta.data, delta.len));
	assert_null(b->ops->snapshot(b, &sb));
	buf_equal(&sa, &sb);
	uint64_t keys;
	b->ops->state_size(b, NULL, &keys);
	assert_int_equal(keys, 1);
	/* negative control: the base alone is another state */
	sv_buf_t sc;
	sv_buf_init(&sc);
	assert_null(b->ops->restore(b, base.data, base.len));
	assert_null(b->ops->snapshot(b, &sc));
	assert_true(sc.len != sa.len || memcmp(sc.data, sa.data, sa.len));
	/* twice: the tombstones miss, refused */
	assert_null(b->ops->restore_delta(b, delta.data, delta.len));
	sv_error_t *err = b->ops->restore_delta(b, delta.data, delta.len);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	sv_error_destroy(err);
	/* the restored operator fires what the first one fires */
	assert_null(b->ops->restore(b, base.data, base.len));
	assert_null(b->ops->restore_delta(b, delta.data, delta.len));
	sv_batch_t bout;
	sv_batch_init(&bout, b->out_schema);
	assert_null(b->ops->finish(b, &f->ctx, &bout));
	assert_string_equal(fmt_rows(f, &bout), "a|1|45|3|7;");
	assert_string_equal(fin(f), "a|1|45|3|7;");
	sv_batch_release(&bout);
	sv_op_destroy(b);
	sv_buf_release(&base);
	sv_buf_release(&delta);
	sv_buf_release(&sa);
	sv_buf_release(&sb);
	sv_buf_release(&sc);
}

/* A global window (a bounded plan's GROUP BY) writes deltas too: a record
 * that updates a group held by the base must be in the delta. */
static void test_incremental_global(void **state)
{
	fx_t *f = *state;
	sv_window_spec_t spec = {.type = SV_WIN_GLOBAL};
	win(f, spec, "n:count();s:sum(v)");
	sv_op_t *b = NULL;
	assert_null(try_win(f, &spec, "n:count();s:sum(v)", &b));
	rec(f, "a", 1, 1);
	push(f);
	sv_buf_t base, delta, sa, sb;
	sv_buf_init(&base);
	sv_buf_init(&delta);
	sv_buf_init(&sa);
	sv_buf_init(&sb);
	assert_null(f->op->ops->snapshot(f->op, &base));
	f->op->ops->checkpointed(f->op);
	rec(f, "a", 2, 2);
	push(f);
	bool written = false;
	assert_null(f->op->ops->snapshot_delta(f->op, &delta, &written));
	assert_true(written);
	f->op->ops->checkpointed(f->op);
	assert_null(f->op->ops->snapshot(f->op, &sa));
	assert_null(b->ops->restore(b, base.data, base.len));
	assert_null(b->ops->restore_delta(b, delta.data, delta.len));
	assert_null(b->ops->snapshot(b, &sb));
	buf_equal(&sa, &sb);
	sv_op_destroy(b);
	sv_buf_release(&base);
	sv_buf_release(&delta);
	sv_buf_release(&sa);
	sv_buf_release(&sb);
}

static void test_snapshot_other_type_refused(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "n:count()");
	rec(f, "a", 1, 1);
	push(f);
	sv_buf_t snap;
	sv_buf_init(&snap);
	assert_null(f->op->ops->snapshot(f->op, &snap));
	sv_window_spec_t spec = SESSION(10);
	sv_op_t *s = NULL;
	assert_null(try_win(f, &spec, "n:count()", &s));
	sv_error_t *err = s->ops->restore(s, snap.data, snap.len);
	assert_non_null(err);
	assert_int_equal(err->category, SV_ERR_CHECKPOINT);
	assert_non_null(strstr(err->message, "does not match"));
	sv_error_destroy(err);
	sv_op_destroy(s);
	sv_buf_release(&snap);
}

/* ---- bad specs ---- */

static sv_error_t *bad(fx_t *f, sv_window_spec_t spec, const char *aggs)
{
	sv_op_t *op = (sv_op_t *)1;
	sv_error_t *err = try_win(f, &spec, aggs, &op);
	assert_non_null(err);
	assert_null(op);
	return err;
}

static void expect_err(sv_error_t *err, sv_errcat_t cat, const char *msg,
		       const char *field)
{
	if (!strstr(err->message, msg))
		fail_msg("message '%s' lacks '%s'", err->message, msg);
	assert_int_equal(err->category, cat);
	if (field)
		assert_string_equal(err->field, field);
	sv_error_destroy(err);
}

static void test_bad_specs(void **state)
{
	fx_t *f = *state;
	expect_err(bad(f, TUMBLING(10), "m:median(v)"), SV_ERR_COVERAGE,
		   "aggregate 'median' is not supported", NULL);
	expect_err(bad(f, TUMBLING(10), "n:count();s:sum(s)"),
		   SV_ERR_SUBMISSION,
		   "aggregate 's' = 'sum(s)': 'sum' needs a numeric argument, "
		   "not string",
		   "aggregates.s");
	expect_err(bad(f, TUMBLING(10), "s:sum(nope)"), SV_ERR_SUBMISSION,
		   "nope", "aggregates.s");
	expect_err(bad(f, TUMBLING(10), "s:sum v"), SV_ERR_SUBMISSION,
		   "expected fn(expr)", "aggregates.s");
	expect_err(bad(f, TUMBLING(10), "s:sum(v) + 1"), SV_ERR_SUBMISSION,
		   "expected a single call", "aggregates.s");
	expect_err(bad(f, TUMBLING(10), "s:min()"), SV_ERR_SUBMISSION,
		   "'min' needs an argument", "aggregates.s");
	expect_err(bad(f, TUMBLING(10), "s:max(null)"), SV_ERR_SUBMISSION,
		   "null literal", "aggregates.s");
	expect_err(bad(f, TUMBLING(10), "k:count()"), SV_ERR_SUBMISSION,
		   "aggregate 'k' collides", "aggregates.k");
	expect_err(bad(f, TUMBLING(10), "window_end:count()"),
		   SV_ERR_SUBMISSION, "collides", NULL);
	expect_err(bad(f, TUMBLING(0), "n:count()"), SV_ERR_SUBMISSION,
		   "window 'size_ms' must be > 0 and below 2^61, got 0",
		   "size_ms");
	expect_err(bad(f, TUMBLING(-5), "n:count()"), SV_ERR_SUBMISSION,
		   "got -5", "size_ms");
	expect_err(bad(f, TUMBLING((int64_t)1 << 62), "n:count()"),
		   SV_ERR_SUBMISSION, "below 2^61", "size_ms");
	expect_err(bad(f, SLIDING(10, 0), "n:count()"), SV_ERR_SUBMISSION,
		   "window 'slide_ms' must be > 0", "slide_ms");
	expect_err(bad(f, SLIDING(10, 20), "n:count()"), SV_ERR_SUBMISSION,
		   "window 'slide_ms' (20) must not exceed 'size_ms' (10)",
		   "slide_ms");
	expect_err(bad(f, SESSION(0), "n:count()"), SV_ERR_SUBMISSION,
		   "window 'gap_ms' must be > 0", "gap_ms");
	sv_window_spec_t spec = TUMBLING(10);
	spec.allowed_lateness_ms = -1;
	expect_err(bad(f, spec, "n:count()"), SV_ERR_SUBMISSION,
		   "window 'allowed_lateness_ms' must be >= 0",
		   "allowed_lateness_ms");
	spec = TUMBLING(10);
	spec.type = (sv_wintype_t)7;
	expect_err(bad(f, spec, "n:count()"), SV_ERR_SUBMISSION,
		   "window 'type' must be tumbling, sliding or session",
		   "type");
	static const char *const nokey[] = {"region"};
	spec = TUMBLING(10);
	spec.keys = nokey;
	spec.nkeys = 1;
	expect_err(bad(f, spec, "n:count()"), SV_ERR_SUBMISSION,
		   "window key 'region' is not a column of the input", "key");
	static const char *const twice[] = {"k", "k"};
	spec.keys = twice;
	spec.nkeys = 2;
	expect_err(bad(f, spec, "n:count()"), SV_ERR_SUBMISSION,
		   "window key 'k' is listed twice", "key");
}

static void test_count_star_and_case(void **state)
{
	fx_t *f = *state;
	win(f, TUMBLING(10), "a:count(*);b:COUNT( );c:Sum( v )");
	rec(f, "a", 2, 1);
	rec(f, "a", NUL, 2);
	push(f);
	assert_string_equal(fin(f), "a|0|10|2|2|2;");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_output_schema),
		T(test_tumbling_out_of_order),
		T(test_event_time_of_output),
		T(test_empty_windows_emit_nothing),
		T(test_negative_times_floor),
		T(test_extreme_low_watermark),
		T(test_huge_lateness),
		T(test_late_drop),
		T(test_late_side_output),
		T(test_allowed_lateness),
		T(test_late_only_when_all_windows_emitted),
		T(test_nulls),
		T(test_null_and_empty_string_keys_differ),
		T(test_string_aggregates_survive_input_reuse),
		T(test_first_last_by_event_time),
		T(test_no_keys_global_window),
		T(test_session_merging),
		T(test_session_gap_not_touching),
		T(test_session_extended_reschedules),
		T(test_session_late),
		T(test_sliding_panes),
		T(test_sliding_uneven_slide),
		T(test_sliding_equal_size_is_tumbling),
		T(test_processing_time),
		T(test_finish_fires_all),
		T(test_finish_sessions),
		T(test_state_freed_behind_watermark),
		T(test_state_freed_sessions),
		T(test_snapshot_tumbling),
		T(test_snapshot_sliding),
		T(test_snapshot_session),
		T(test_snapshot_other_type_refused),
		T(test_incremental_tumbling),
		T(test_incremental_sliding),
		T(test_incremental_session),
		T(test_incremental_global),
		T(test_bad_specs),
		T(test_count_star_and_case),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
