/* test_expr.c — the expression language (core/expr.c, core/func.c): literals,
 * column references, arithmetic (int and float, overflow and division by
 * zero are null), comparisons, three-valued && || !, IS [NOT] NULL,
 * [NOT] IN, string concatenation, every function of the registry with null
 * arguments, casts, precedence, type errors at parse time with their exact
 * messages (expression, 1-based position, reason), unknown functions as
 * coverage errors, and the limits (nesting, chain length, stack).
 *
 * Then three seeded random loops: random bytes and random token sequences
 * must give either an expression or an error (never a crash, never both,
 * never neither), and typed random expression trees are evaluated twice —
 * over columns at run time and with the row's values written in as
 * literals, which the parser folds to constants — and must agree, and every
 * result must have the declared type (null only when declared nullable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "core/expr_int.h"

/* ---- fixture: one schema with every type, one row ---- */

enum {
	C_I,
	C_N,
	C_F,
	C_S,
	C_B,
	C_T,
	C_LONG,
	C_NB,
	C_NCOLS
};

static sv_schema_t *S;
static sv_value_t ROW[C_NCOLS];
static sv_arena_t A; /* strings of results, kept for the whole run */

static const int64_t T0 = 1709251200000; /* 2024-03-01T00:00:00Z */

static void default_row(void)
{
	ROW[C_I] = sv_int(7);
	ROW[C_N] = sv_null();
	ROW[C_F] = sv_float(2.5);
	ROW[C_S] = sv_str("Hello", 5);
	ROW[C_B] = sv_bool(true);
	ROW[C_T] = sv_ts(T0);
	ROW[C_LONG] = sv_str("x y", 3);
	ROW[C_NB] = sv_null();
}

static int group_setup(void **state)
{
	(void)state;
	S = sv_schema_new();
	sv_schema_add(S, "i", SV_T_INT64, false);
	sv_schema_add(S, "n", SV_T_INT64, true);
	sv_schema_add(S, "f", SV_T_FLOAT64, true);
	sv_schema_add(S, "s", SV_T_STRING, true);
	sv_schema_add(S, "b", SV_T_BOOL, true);
	sv_schema_add(S, "t", SV_T_TIMESTAMP, true);
	sv_schema_add(S, "long name", SV_T_STRING, true);
	sv_schema_add(S, "nb", SV_T_BOOL, true);
	sv_arena_init(&A);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	sv_schema_destroy(S);
	sv_arena_release(&A);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	default_row();
	return 0;
}

/* ---- helpers ---- */

static sv_expr_t *parse_ok(const char *text)
{
	sv_expr_t *e = NULL;
	sv_error_t *err = sv_expr_parse(text, S, &e);
	if (err)
		fail_msg("'%s' refused: %s", text, err->message);
	assert_non_null(e);
	return e;
}

/* A result must have the declared type; null only when declared nullable. */
static void check_result_type(const sv_expr_t *e, const sv_value_t *v)
{
	if (v->type == SV_T_NULL) {
		if (!sv_expr_nullable(e))
			fail_msg("'%s' declared not nullable gave null",
				 sv_expr_text(e));
		return;
	}
	if (v->type != sv_expr_type(e))
		fail_msg("'%s' declared %s gave a %s", sv_expr_text(e),
			 sv_type_name(sv_expr_type(e)),
			 sv_type_name((sv_type_t)v->type));
}

/* Evaluate text on ROW; strings are copied into A so they outlive the
 * expression. */
static sv_value_t ev(const char *text)
{
	sv_expr_t *e = parse_ok(text);
	sv_arena_t arena;
	sv_arena_init(&arena);
	sv_value_t v;
	sv_expr_eval(e, ROW, &arena, &v);
	check_result_type(e, &v);
	if (v.type == SV_T_STRING)
		v.v.s = sv_arena_memdup(&A, v.len ? v.v.s : "", v.len);
	sv_arena_release(&arena);
	sv_expr_destroy(e);
	return v;
}

static const char *show(const sv_value_t *v)
{
	static char buf[256];
	switch (v->type) {
	case SV_T_NULL:
		return "null";
	case SV_T_BOOL:
		return v->v.b ? "true" : "false";
	case SV_T_INT64:
		snprintf(buf, sizeof(buf), "int %lld", (long long)v->v.i);
		return buf;
	case SV_T_TIMESTAMP:
		snprintf(buf, sizeof(buf), "ts %lld", (long long)v->v.i);
		return buf;
	case SV_T_FLOAT64:
		snprintf(buf, sizeof(buf), "float %.17g", v->v.f);
		return buf;
	default:
		snprintf(buf, sizeof(buf), "string '%.*s'", (int)v->len,
			 v->v.s);
		return buf;
	}
}

#define EXPECT_INT(text, want)                                                \
	do {                                                                  \
		sv_value_t v_ = ev(text);                                     \
		if (v_.type != SV_T_INT64 || v_.v.i != (int64_t)(want))       \
			fail_msg("%s: '%s' gave %s, want int %lld", __func__, \
				 text, show(&v_), (long long)(want));         \
	} while (0)
#define EXPECT_TS(text, want)                                                \
	do {                                                                 \
		sv_value_t v_ = ev(text);                                    \
		if (v_.type != SV_T_TIMESTAMP || v_.v.i != (int64_t)(want))  \
			fail_msg("%s: '%s' gave %s, want ts %lld", __func__, \
				 text, show(&v_), (long long)(want));        \
	} while (0)
#define EXPECT_FLOAT(text, want)                                       \
	do {                                                           \
		sv_value_t v_ = ev(text);                              \
		double w_ = (want);                                    \
		if (v_.type != SV_T_FLOAT64 ||                         \
		    !(v_.v.f == w_ || (isnan(v_.v.f) && isnan(w_))) || \
		    signbit(v_.v.f) != signbit(w_))                    \
			fail_msg("%s: '%s' gave %s, want float %.17g", \
				 __func__, text, show(&v_), w_);       \
	} while (0)
#define EXPECT_STR(text, want)                                            \
	do {                                                              \
		sv_value_t v_ = ev(text);                                 \
		const char *w_ = (want);                                  \
		if (v_.type != SV_T_STRING || v_.len != strlen(w_) ||     \
		    memcmp(v_.v.s, w_, v_.len))                           \
			fail_msg("%s: '%s' gave %s, want '%s'", __func__, \
				 text, show(&v_), w_);                    \
	} while (0)
#define EXPECT_BOOL(text, want)                                               \
	do {                                                                  \
		sv_value_t v_ = ev(text);                                     \
		if (v_.type != SV_T_BOOL || v_.v.b != (want))                 \
			fail_msg("%s: '%s' gave %s, want %s", __func__, text, \
				 show(&v_), (want) ? "true" : "false");       \
	} while (0)
#define EXPECT_NULL(text)                                                 \
	do {                                                              \
		sv_value_t v_ = ev(text);                                 \
		if (v_.type != SV_T_NULL)                                 \
			fail_msg("%s: '%s' gave %s, want null", __func__, \
				 text, show(&v_));                        \
	} while (0)

static void expect_type(const char *text, sv_type_t type, bool nullable)
{
	sv_expr_t *e = parse_ok(text);
	if (sv_expr_type(e) != type || sv_expr_nullable(e) != nullable)
		fail_msg("'%s' is %s%s, want %s%s", text,
			 sv_type_name(sv_expr_type(e)),
			 sv_expr_nullable(e) ? " nullable" : "",
			 sv_type_name(type), nullable ? " nullable" : "");
	sv_expr_destroy(e);
}

/* The whole message is checked: it names the expression, the 1-based
 * position and the reason. */
static void expect_err(const char *text, sv_errcat_t cat, int pos,
		       const char *reason)
{
	sv_expr_t *e = (sv_expr_t *)1;
	sv_error_t *err = sv_expr_parse(text, S, &e);
	if (!err)
		fail_msg("'%s' accepted, want error '%s'", text, reason);
	assert_null(e);
	char want[1024];
	snprintf(want, sizeof(want), "expression '%s' at position %d: %s", text,
		 pos, reason);
	if (strcmp(err->message, want))
		fail_msg("'%s':\n got  %s\n want %s", text, err->message, want);
	if (err->category != cat)
		fail_msg("'%s': category %s, want %s", text,
			 sv_errcat_name(err->category), sv_errcat_name(cat));
	assert_int_equal(err->position, pos);
	sv_error_destroy(err);
}

/* ---- literals and columns ---- */

static void test_literals(void **state)
{
	(void)state;
	EXPECT_INT("42", 42);
	EXPECT_INT("0", 0);
	EXPECT_INT("9223372036854775807", INT64_MAX);
	EXPECT_INT("-9223372036854775808", INT64_MIN);
	EXPECT_INT("- 3", -3);
	EXPECT_FLOAT("1.5", 1.5);
	EXPECT_FLOAT(".5", 0.5);
	EXPECT_FLOAT("2.", 2.0);
	EXPECT_FLOAT("1e3", 1000.0);
	EXPECT_FLOAT("2.5E-1", 0.25);
	EXPECT_FLOAT("-0.0", -0.0);
	EXPECT_STR("'text'", "text");
	EXPECT_STR("\"double\"", "double");
	EXPECT_STR("'it''s'", "it's");
	EXPECT_STR("\"say \"\"hi\"\"\"", "say \"hi\"");
	EXPECT_STR("''", "");
	EXPECT_STR("'h\xc3\xa9'", "h\xc3\xa9");
	EXPECT_BOOL("true", true);
	EXPECT_BOOL("FALSE", false);
	EXPECT_BOOL("True", true);
	EXPECT_NULL("null");
	EXPECT_NULL("NULL");
	expect_type("42", SV_T_INT64, false);
	expect_type("1.5", SV_T_FLOAT64, false);
	expect_type("'a'", SV_T_STRING, false);
	expect_type("true", SV_T_BOOL, false);
	expect_type("null", SV_T_NULL, true);
	/* whitespace of every kind between tokens */
	EXPECT_INT(" \t1\n+\r2 ", 3);
}

static void test_columns(void **state)
{
	(void)state;
	EXPECT_INT("i", 7);
	EXPECT_NULL("n");
	EXPECT_FLOAT("f", 2.5);
	EXPECT_STR("s", "Hello");
	EXPECT_BOOL("b", true);
	EXPECT_TS("t", T0);
	EXPECT_STR("`long name`", "x y");
	EXPECT_STR("`s`", "Hello");
	expect_type("i", SV_T_INT64, false);
	expect_type("n", SV_T_INT64, true);
	expect_type("t", SV_T_TIMESTAMP, true);
	/* a bare column is recognised as such (select copies it) */
	sv_expr_t *e = parse_ok("s");
	assert_int_equal(sv_expr_column(e), C_S);
	assert_string_equal(sv_expr_text(e), "s");
	sv_expr_destroy(e);
	e = parse_ok("(`long name`)");
	assert_int_equal(sv_expr_column(e), C_LONG);
	sv_expr_destroy(e);
	e = parse_ok("s + ''");
	assert_int_equal(sv_expr_column(e), -1);
	sv_expr_destroy(e);
	/* a string column's result points at the row's bytes (no copy) */
	e = parse_ok("s");
	sv_value_t v;
	sv_expr_eval(e, ROW, NULL, &v);
	assert_ptr_equal(v.v.s, ROW[C_S].v.s);
	sv_expr_destroy(e);
	/* names are case-sensitive; keywords are not */
	expect_err("S", SV_ERR_SUBMISSION, 1, "unknown column 'S'");
	expect_err("`no such`", SV_ERR_SUBMISSION, 1,
		   "unknown column 'no such'");
}

/* ---- arithmetic ---- */

static void test_int_arith(void **state)
{
	(void)state;
	EXPECT_INT("i + 3", 10);
	EXPECT_INT("i - 10", -3);
	EXPECT_INT("i * -2", -14);
	EXPECT_INT("i / 2", 3);
	EXPECT_INT("-i / 2", -3); /* truncates toward zero */
	EXPECT_INT("i % 3", 1);
	EXPECT_INT("-i % 3", -1); /* sign of the dividend */
	EXPECT_INT("i % -3", 1);
	EXPECT_INT("--i", 7);
	/* division by zero, overflow: null (never a trap) */
	EXPECT_NULL("i / 0");
	EXPECT_NULL("i % 0");
	EXPECT_NULL("i / (i - 7)");
	EXPECT_NULL("9223372036854775807 + i");
	EXPECT_NULL("-9223372036854775807 - i");
	EXPECT_NULL("i * 2000000000000000000");
	EXPECT_NULL("(-9223372036854775808 + i - 7) / -1");
	EXPECT_INT("(-9223372036854775808 + i - 7) % -1", 0);
	EXPECT_NULL("-(-9223372036854775808 + i - 7)");
	EXPECT_NULL("-(-9223372036854775808)");
	/* null operands */
	EXPECT_NULL("n + 1");
	EXPECT_NULL("1 - n");
	EXPECT_NULL("n * n");
	EXPECT_NULL("null + 1");
	EXPECT_NULL("-n");
	EXPECT_NULL("-null");
	/* int arithmetic can overflow, so its result is nullable */
	expect_type("i + 1", SV_T_INT64, true);
	expect_type("i - 1", SV_T_INT64, true);
	expect_type("null + 1", SV_T_INT64, true);
}

static void test_float_arith(void **state)
{
	(void)state;
	EXPECT_FLOAT("f + 1", 3.5);
	EXPECT_FLOAT("1 + f", 3.5);
	EXPECT_FLOAT("f - 0.5", 2.0);
	EXPECT_FLOAT("f * 2", 5.0);
	EXPECT_FLOAT("f / 2", 1.25);
	EXPECT_FLOAT("i / 2.0", 3.5); /* int promoted to float */
	EXPECT_FLOAT("f % 1", 0.5);
	EXPECT_FLOAT("-f % 1", -0.5);
	EXPECT_FLOAT("-f", -2.5);
	EXPECT_FLOAT("1e308 * 10", INFINITY);
	/* division and modulo by zero are null for floats too */
	EXPECT_NULL("f / 0");
	EXPECT_NULL("f / 0.0");
	EXPECT_NULL("f % 0");
	EXPECT_NULL("f / -0.0");
	EXPECT_NULL("f + n");
	expect_type("f + i", SV_T_FLOAT64, true); /* f is nullable */
	expect_type("1.5 + i", SV_T_FLOAT64, false);
	expect_type("1.5 / i", SV_T_FLOAT64, true);
	expect_type("1.5 % i", SV_T_FLOAT64, true);
	expect_type("1.5 * i", SV_T_FLOAT64, false);
}

static void test_timestamp_arith(void **state)
{
	(void)state;
	EXPECT_TS("t + 1000", T0 + 1000);
	EXPECT_TS("1000 + t", T0 + 1000);
	EXPECT_TS("t - 1000", T0 - 1000);
	EXPECT_INT("t - cast(0 as timestamp)", T0);
	EXPECT_INT("(t + 5) - t", 5);
	EXPECT_NULL("t + n");
	EXPECT_NULL("t + null");
	expect_err(
		"t + t", SV_ERR_SUBMISSION, 3,
		"operator '+' cannot apply to timestamp_ms and timestamp_ms");
	expect_err("t * 2", SV_ERR_SUBMISSION, 3,
		   "operator '*' cannot apply to timestamp_ms and int64");
	expect_err("1 - t", SV_ERR_SUBMISSION, 3,
		   "operator '-' cannot apply to int64 and timestamp_ms");
	expect_err("t + 1.5", SV_ERR_SUBMISSION, 3,
		   "operator '+' cannot apply to timestamp_ms and float64");
}

static void test_string_concat(void **state)
{
	(void)state;
	EXPECT_STR("s + ' world'", "Hello world");
	EXPECT_STR("'a' + 'b' + 'c'", "abc");
	EXPECT_STR("s + ''", "Hello");
	EXPECT_STR("'' + ''", "");
	EXPECT_NULL("s + null");
	EXPECT_NULL("null + s");
	EXPECT_STR("concat(s, '-', i, '-', f, '-', b)", "Hello-7-2.5-true");
	expect_type("s + 'x'", SV_T_STRING, true);
	expect_type("'a' + 'x'", SV_T_STRING, false);
	expect_err("s + 1", SV_ERR_SUBMISSION, 3,
		   "operator '+' cannot apply to string and int64");
	expect_err("s - 'a'", SV_ERR_SUBMISSION, 3,
		   "operator '-' cannot apply to string and string");
	expect_err("s * null", SV_ERR_SUBMISSION, 3,
		   "operator '*' cannot apply to string and null");
	/* '||' is logical or, not concatenation */
	expect_err("s || 'x'", SV_ERR_SUBMISSION, 3,
		   "operator '||' cannot apply to string and string");
	/* a concatenation that must allocate and gets no arena is null */
	sv_expr_t *e = parse_ok("s + '!'");
	sv_value_t v;
	sv_expr_eval(e, ROW, NULL, &v);
	assert_int_equal(v.type, SV_T_NULL);
	sv_expr_destroy(e);
}

/* ---- comparisons ---- */

static void test_comparisons(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		bool want;
	} cases[] = {
		{"i == 7", true},
		{"i = 7", true},
		{"i != 7", false},
		{"i <> 7", false},
		{"i < 8", true},
		{"i <= 7", true},
		{"i > 7", false},
		{"i >= 8", false},
		{"f == 2.5", true},
		{"f < 3", true},
		{"i > f", true},
		{"i == 7.0", true},
		{"7.5 > i", true},
		{"s == 'Hello'", true},
		{"s != 'hello'", true},
		{"s < 'Hellp'", true},
		{"s < 'Hello!'", true},
		{"'' < s", true},
		{"s >= 'Hello'", true},
		{"'B' < 'a'", true}, /* byte order */
		{"b == true", true},
		{"false < true", true},
		{"true <= false", false},
		{"t == '2024-03-01'", true},
		{"t == '2024-03-01T00:00:00Z'", true},
		{"t == '2024-03-01T02:00:00+02:00'", true},
		{"'2024-02-29 23:59:59.999' < t", true},
		{"t > '2024-03-01T00:00:00.001Z'", false},
		{"t == 1709251200000", true},
		{"t > 0", true},
		{"t == t + 0", true},
	};
	for (size_t k = 0; k < SV_ARRAY_LEN(cases); k++)
		EXPECT_BOOL(cases[k].text, cases[k].want);
	/* null on either side: null (also null == null) */
	EXPECT_NULL("n == 1");
	EXPECT_NULL("1 < n");
	EXPECT_NULL("n == n");
	EXPECT_NULL("null == null");
	EXPECT_NULL("i != null");
	EXPECT_NULL("s == null");
	/* NaN is unordered and unequal to itself */
	EXPECT_BOOL("cast('NaN' as float64) == cast('NaN' as float64)", false);
	EXPECT_BOOL("cast('NaN' as float64) != cast('NaN' as float64)", true);
	EXPECT_BOOL("cast('NaN' as float64) < 1", false);
	EXPECT_BOOL("cast('NaN' as float64) >= 1", false);
	expect_type("i == 1", SV_T_BOOL, false);
	expect_type("n == 1", SV_T_BOOL, true);
	/* incompatible operand types, and chained comparisons */
	expect_err("s == 1", SV_ERR_SUBMISSION, 3,
		   "operator '==' cannot apply to string and int64");
	expect_err("b < 1", SV_ERR_SUBMISSION, 3,
		   "operator '<' cannot apply to bool and int64");
	expect_err("t == 1.5", SV_ERR_SUBMISSION, 3,
		   "operator '==' cannot apply to timestamp_ms and float64");
	expect_err("t == s", SV_ERR_SUBMISSION, 3,
		   "operator '==' cannot apply to timestamp_ms and string");
	expect_err("t == 'yesterday'", SV_ERR_SUBMISSION, 6,
		   "cannot read 'yesterday' as timestamp_ms");
	expect_err("t < '2024-02-30'", SV_ERR_SUBMISSION, 5,
		   "cannot read '2024-02-30' as timestamp_ms");
	expect_err("1 < i < 3", SV_ERR_SUBMISSION, 7, "unexpected '<'");
}

/* ---- three-valued logic ---- */

static sv_value_t tv(int k)
{
	return k == 0 ? sv_bool(false) : k == 1 ? sv_bool(true) : sv_null();
}

static const char *tv_lit(int k)
{
	return k == 0 ? "false" : k == 1 ? "true" : "null";
}

static void test_three_valued_logic(void **state)
{
	(void)state;
	/* k: 0 false, 1 true, 2 null (unknown) */
	static const int and_tab[3][3] = {{0, 0, 0}, {0, 1, 2}, {0, 2, 2}};
	static const int or_tab[3][3] = {{0, 1, 2}, {1, 1, 1}, {2, 1, 2}};
	static const int not_tab[3] = {1, 0, 2};
	static const char *const ands[] = {"b && nb", "b AND nb", "b and nb"};
	static const char *const ors[] = {"b || nb", "b OR nb", "b or nb"};
	static const char *const nots[] = {"!b", "NOT b", "not b"};
	for (int x = 0; x < 3; x++) {
		for (int y = 0; y < 3; y++) {
			ROW[C_B] = tv(x);
			ROW[C_NB] = tv(y);
			char lit[64];
			for (int form = 0; form < 3; form++) {
				sv_value_t v = ev(ands[form]);
				sv_value_t w = tv(and_tab[x][y]);
				if (v.type != w.type ||
				    (v.type && v.v.b != w.v.b))
					fail_msg("%s with %s, %s gave %s",
						 ands[form], tv_lit(x),
						 tv_lit(y), show(&v));
				v = ev(ors[form]);
				w = tv(or_tab[x][y]);
				if (v.type != w.type ||
				    (v.type && v.v.b != w.v.b))
					fail_msg("%s with %s, %s gave %s",
						 ors[form], tv_lit(x),
						 tv_lit(y), show(&v));
			}
			/* the same tables when folded at parse time */
			snprintf(lit, sizeof(lit), "%s && %s", tv_lit(x),
				 tv_lit(y));
			sv_value_t v = ev(lit), w = tv(and_tab[x][y]);
			if (v.type != w.type || (v.type && v.v.b != w.v.b))
				fail_msg("folded %s gave %s", lit, show(&v));
			snprintf(lit, sizeof(lit), "%s || %s", tv_lit(x),
				 tv_lit(y));
			v = ev(lit);
			w = tv(or_tab[x][y]);
			if (v.type != w.type || (v.type && v.v.b != w.v.b))
				fail_msg("folded %s gave %s", lit, show(&v));
		}
		ROW[C_B] = tv(x);
		for (int form = 0; form < 3; form++) {
			sv_value_t v = ev(nots[form]), w = tv(not_tab[x]);
			if (v.type != w.type || (v.type && v.v.b != w.v.b))
				fail_msg("%s with %s gave %s", nots[form],
					 tv_lit(x), show(&v));
		}
	}
	default_row();
	/* short-circuit: the right side is not evaluated when the left one
	 * decides (i / 0 would be null, not false/true) */
	EXPECT_BOOL("false && i / 0 == 1", false);
	EXPECT_BOOL("i == 7 || i / 0 == 1", true);
	EXPECT_NULL("i == 7 && i / 0 == 1");
	/* precedence: NOT binds looser than comparison, AND tighter than OR */
	EXPECT_BOOL("not i == 8", true);
	EXPECT_BOOL("!i == 8", true);
	EXPECT_BOOL("true || false && false", true);
	EXPECT_BOOL("(true || false) && false", false);
	EXPECT_BOOL("not true or true", true);
	EXPECT_BOOL("not (true or true)", false);
	EXPECT_BOOL("!!b", true);
	expect_type("b && true", SV_T_BOOL, true);
	expect_type("i > 1 && i < 9", SV_T_BOOL, false);
	expect_type("null && false", SV_T_BOOL, false); /* folded to false */
	expect_err("i && true", SV_ERR_SUBMISSION, 3,
		   "operator '&&' cannot apply to int64 and bool");
	expect_err("b or s", SV_ERR_SUBMISSION, 3,
		   "operator 'or' cannot apply to bool and string");
	expect_err("!s", SV_ERR_SUBMISSION, 1,
		   "operator '!' cannot apply to string");
	expect_err("NOT 1", SV_ERR_SUBMISSION, 1,
		   "operator 'NOT' cannot apply to int64");
}

static void test_is_null(void **state)
{
	(void)state;
	EXPECT_BOOL("n IS NULL", true);
	EXPECT_BOOL("n is not null", false);
	EXPECT_BOOL("i IS NULL", false);
	EXPECT_BOOL("i IS NOT NULL", true);
	EXPECT_BOOL("s IS NULL", false);
	EXPECT_BOOL("null IS NULL", true);
	EXPECT_BOOL("i / 0 IS NULL", true);
	EXPECT_BOOL("(n + 1) IS NULL", true);
	EXPECT_BOOL("cast('x' as int64) IS NULL", true);
	EXPECT_BOOL("nb IS NULL AND b IS NOT NULL", true);
	ROW[C_N] = sv_int(3);
	EXPECT_BOOL("n IS NULL", false);
	EXPECT_BOOL("n IS NOT NULL", true);
	/* never null itself */
	expect_type("n IS NULL", SV_T_BOOL, false);
	expect_type("i IS NULL", SV_T_BOOL, false);
	expect_err("n IS 1", SV_ERR_SUBMISSION, 6, "expected NULL after IS");
	expect_err("n IS NOT", SV_ERR_SUBMISSION, 9,
		   "expected NULL after IS NOT");
}

static void test_in(void **state)
{
	(void)state;
	EXPECT_BOOL("i IN (1, 7, 9)", true);
	EXPECT_BOOL("i in (1, 2)", false);
	EXPECT_BOOL("i NOT IN (1, 2)", true);
	EXPECT_BOOL("i not in (7)", false);
	EXPECT_BOOL("i IN (7.0)", true);
	EXPECT_BOOL("i IN (6.5, 7.5)", false);
	EXPECT_BOOL("f IN (1, 2.5)", true);
	EXPECT_BOOL("s IN ('a', 'Hello')", true);
	EXPECT_BOOL("s IN ('hello')", false);
	EXPECT_BOOL("b IN (false)", false);
	EXPECT_BOOL("t IN ('2024-03-01', '2024-03-02')", true);
	/* non-constant items */
	EXPECT_BOOL("i IN (n, i + 1, i)", true);
	EXPECT_BOOL("7 IN (i)", true);
	/* SQL: x IN (..., null) is null unless x is found; x NOT IN (...,
	 * null) is never true; null IN (...) is null */
	EXPECT_BOOL("i IN (7, null)", true);
	EXPECT_NULL("i IN (1, null)");
	EXPECT_BOOL("i NOT IN (7, null)", false);
	EXPECT_NULL("i NOT IN (1, null)");
	EXPECT_NULL("n IN (1, 2)");
	EXPECT_NULL("n NOT IN (1, 2)");
	EXPECT_NULL("null IN (1, 2)");
	EXPECT_NULL("i IN (n)");
	EXPECT_BOOL("i IN (n, 7)", true);
	EXPECT_NULL("i IN (n, 8)");
	expect_type("i IN (1, 2)", SV_T_BOOL, false);
	expect_type("i IN (1, n)", SV_T_BOOL, true);
	expect_err("i IN ('a')", SV_ERR_SUBMISSION, 7,
		   "operator 'IN' cannot apply to int64 and string");
	expect_err("s NOT IN (1)", SV_ERR_SUBMISSION, 11,
		   "operator 'NOT' cannot apply to string and int64");
	expect_err("i IN 1", SV_ERR_SUBMISSION, 6, "expected '(' after IN");
	expect_err("i IN (1 2)", SV_ERR_SUBMISSION, 9, "expected ',' or ')'");
	expect_err("i IN ()", SV_ERR_SUBMISSION, 7, "expected an operand");
	/* 64 items are fine, 65 are not */
	char buf[1024];
	int w = snprintf(buf, sizeof(buf), "i IN (");
	for (int k = 0; k < 64; k++)
		w += snprintf(buf + w, sizeof(buf) - (size_t)w, "%s%d",
			      k ? "," : "", k);
	snprintf(buf + w, sizeof(buf) - (size_t)w, ")");
	EXPECT_BOOL(buf, true);
	snprintf(buf + w, sizeof(buf) - (size_t)w, ",99)");
	sv_expr_t *e;
	sv_error_t *err = sv_expr_parse(buf, S, &e);
	assert_non_null(err);
	assert_non_null(
		strstr(err->message, "too many items in IN (at most 64)"));
	sv_error_destroy(err);
}

static void test_precedence(void **state)
{
	(void)state;
	EXPECT_INT("1 + 2 * 3", 7);
	EXPECT_INT("(1 + 2) * 3", 9);
	EXPECT_INT("10 - 4 - 3", 3); /* left associative */
	EXPECT_INT("100 / 10 / 5", 2);
	EXPECT_INT("7 % 4 * 2", 6);
	EXPECT_INT("-2 * 3", -6);
	EXPECT_INT("2 * -3", -6);
	EXPECT_INT("i - -1", 8);
	EXPECT_INT("-(1 + 2)", -3);
	EXPECT_BOOL("1 + 1 == 2", true);
	EXPECT_BOOL("i == 7 && s == 'Hello' || false", true);
	EXPECT_BOOL("1 + 1 IN (2)", true);
	EXPECT_BOOL("i + 1 IS NULL", false);
	EXPECT_BOOL("NOT i IN (1)", true);
	EXPECT_BOOL("(((((i))))) == 7", true);
}

/* ---- functions ---- */

/* Every name tested below; the registry test fails when a function is added
 * to the registry without being added here (and tested). */
static const char *const TESTED[] = {
	"abs",       "cast",    "ceil",  "coalesce", "concat", "contains",
	"ends_with", "floor",   "if",    "length",   "lower",  "ltrim",
	"nullif",    "replace", "round", "rtrim",    "sqrt",   "starts_with",
	"substr",    "trim",    "upper",
};

static void test_registry(void **state)
{
	(void)state;
	assert_true(sv_func_count() >= 13);
	for (size_t k = 0; k < sv_func_count(); k++) {
		const char *name = sv_func_name(k);
		bool found = false;
		for (size_t j = 0; j < SV_ARRAY_LEN(TESTED); j++)
			found |= !strcmp(TESTED[j], name);
		if (!found)
			fail_msg("function '%s' has no test", name);
		assert_true(sv_func_exists(name));
	}
	assert_null(sv_func_name(sv_func_count()));
	static const char *const required[] = {
		"lower", "upper", "length", "substr",   "concat", "trim", "abs",
		"round", "floor", "ceil",   "coalesce", "if",     "cast",
	};
	for (size_t k = 0; k < SV_ARRAY_LEN(required); k++)
		assert_true(sv_func_exists(required[k]));
	assert_true(sv_func_exists("LOWER"));
	assert_false(sv_func_exists("frobnicate"));
	assert_false(sv_func_exists(NULL));
	assert_false(sv_func_exists(""));
	/* names are case-insensitive in expressions too */
	EXPECT_STR("UPPER(s)", "HELLO");
	EXPECT_STR("Lower(s)", "hello");
}

static void test_fn_strings(void **state)
{
	(void)state;
	EXPECT_STR("lower(s)", "hello");
	EXPECT_STR("upper(s)", "HELLO");
	EXPECT_STR("lower('ABC def 123')", "abc def 123");
	EXPECT_STR("upper('h\xc3\xa9llo')", "H\xc3\xa9LLO"); /* ASCII only */
	EXPECT_STR("lower('')", "");
	EXPECT_NULL("lower(null)");
	EXPECT_NULL("upper(cast(n as string))");
	EXPECT_INT("length(s)", 5);
	EXPECT_INT("length('')", 0);
	EXPECT_INT("length('h\xc3\xa9llo')", 5); /* code points */
	EXPECT_NULL("length(null)");
	EXPECT_STR("substr(s, 2)", "ello");
	EXPECT_STR("substr(s, 2, 3)", "ell");
	EXPECT_STR("substr(s, 1, 100)", "Hello");
	EXPECT_STR("substr(s, 0, 3)", "He"); /* positions 0..2 */
	EXPECT_STR("substr(s, -1)", "Hello");
	EXPECT_STR("substr(s, 6)", "");
	EXPECT_STR("substr(s, 2, 0)", "");
	EXPECT_STR("substr('h\xc3\xa9llo', 2, 2)", "\xc3\xa9l");
	EXPECT_NULL("substr(s, 2, -1)"); /* negative length */
	EXPECT_NULL("substr(null, 1)");
	EXPECT_NULL("substr(s, n)");
	EXPECT_NULL("substr(s, 1, n)");
	EXPECT_STR("substr(s, 9223372036854775807, 9223372036854775807)", "");
	EXPECT_STR("trim('  a b \t\n')", "a b");
	EXPECT_STR("ltrim('  a ')", "a ");
	EXPECT_STR("rtrim('  a ')", "  a");
	EXPECT_STR("trim('   ')", "");
	EXPECT_NULL("trim(null)");
	EXPECT_NULL("ltrim(null)");
	EXPECT_NULL("rtrim(null)");
	EXPECT_STR("concat('a')", "a");
	EXPECT_STR("concat('a', 'b', 'c')", "abc");
	EXPECT_STR("concat(1, 2.0, true, t)",
		   "12.0true2024-03-01T00:00:00.000Z");
	EXPECT_NULL("concat('a', null)");
	EXPECT_NULL("concat(s, n)");
	EXPECT_STR("replace(s, 'l', 'L')", "HeLLo");
	EXPECT_STR("replace('aaa', 'a', 'bb')", "bbbbbb");
	EXPECT_STR("replace(s, 'x', 'y')", "Hello");
	EXPECT_STR("replace(s, '', 'y')", "Hello");
	EXPECT_STR("replace(s, 'Hello', '')", "");
	EXPECT_NULL("replace(s, null, 'y')");
	EXPECT_NULL("replace(null, 'a', 'y')");
	EXPECT_BOOL("starts_with(s, 'He')", true);
	EXPECT_BOOL("starts_with(s, 'he')", false);
	EXPECT_BOOL("starts_with(s, '')", true);
	EXPECT_BOOL("starts_with('a', 'ab')", false);
	EXPECT_NULL("starts_with(s, null)");
	EXPECT_BOOL("ends_with(s, 'llo')", true);
	EXPECT_BOOL("ends_with(s, 'xllo')", false);
	EXPECT_BOOL("ends_with('o', 'llo')", false);
	EXPECT_NULL("ends_with(null, 'o')");
	EXPECT_BOOL("contains(s, 'ell')", true);
	EXPECT_BOOL("contains(s, 'elo')", false);
	EXPECT_BOOL("contains(s, '')", true);
	EXPECT_NULL("contains(s, null)");
	expect_type("lower(s)", SV_T_STRING, true);
	expect_type("lower('a')", SV_T_STRING, false);
	expect_type("length(`long name`)", SV_T_INT64, true);
	expect_type("substr('abc', 1)", SV_T_STRING, false);
	expect_type("substr('abc', 1, i)", SV_T_STRING, true);
	expect_type("concat('a', i)", SV_T_STRING, false);
	expect_type("contains('a', s)", SV_T_BOOL, true);
	expect_err("lower(1)", SV_ERR_SUBMISSION, 1,
		   "argument 1 of 'lower' must be string, got int64");
	expect_err("i + length(b)", SV_ERR_SUBMISSION, 5,
		   "argument 1 of 'length' must be string, got bool");
	expect_err("substr(s, 1.5)", SV_ERR_SUBMISSION, 1,
		   "argument 2 of 'substr' must be int64, got float64");
	expect_err("substr(s)", SV_ERR_SUBMISSION, 1,
		   "function 'substr' takes 2 to 3 arguments, got 1");
	expect_err("trim(s, s)", SV_ERR_SUBMISSION, 1,
		   "function 'trim' takes 1 argument, got 2");
	expect_err("replace(s, 'a')", SV_ERR_SUBMISSION, 1,
		   "function 'replace' takes 3 arguments, got 2");
	expect_err("concat()", SV_ERR_SUBMISSION, 1,
		   "function 'concat' takes at least 1 argument, got 0");
	expect_err("starts_with(s, 1)", SV_ERR_SUBMISSION, 1,
		   "argument 2 of 'starts_with' must be string, got int64");
}

static void test_fn_numbers(void **state)
{
	(void)state;
	EXPECT_INT("abs(-5)", 5);
	EXPECT_INT("abs(i)", 7);
	EXPECT_FLOAT("abs(-2.5)", 2.5);
	EXPECT_FLOAT("abs(-0.0)", 0.0);
	EXPECT_NULL("abs(-9223372036854775807 - i + 6)"); /* |INT64_MIN| */
	EXPECT_NULL("abs(n)");
	EXPECT_NULL("abs(null)");
	EXPECT_INT("floor(i)", 7);
	EXPECT_FLOAT("floor(f)", 2.0);
	EXPECT_FLOAT("floor(-f)", -3.0);
	EXPECT_INT("ceil(i)", 7);
	EXPECT_FLOAT("ceil(f)", 3.0);
	EXPECT_FLOAT("ceil(-f)", -2.0);
	EXPECT_NULL("floor(n)");
	EXPECT_NULL("ceil(null)");
	/* round: half away from zero; digits may be negative */
	EXPECT_FLOAT("round(f)", 3.0);
	EXPECT_FLOAT("round(-f)", -3.0);
	EXPECT_FLOAT("round(2.4)", 2.0);
	EXPECT_FLOAT("round(1.25, 1)", 1.3);
	EXPECT_FLOAT("round(3.14159, 2)", 3.14);
	EXPECT_FLOAT("round(1234.5, -2)", 1200.0);
	EXPECT_FLOAT("round(-1250.0, -2)", -1300.0);
	EXPECT_FLOAT("round(1e300, -300)", 1e300);
	EXPECT_FLOAT("round(f, 400)", 2.5);
	EXPECT_FLOAT("round(f, -400)", 0.0);
	EXPECT_FLOAT("round(1e308, 2)", 1e308); /* x * 100 overflows: kept */
	EXPECT_INT("round(i)", 7);
	EXPECT_INT("round(i, 2)", 7);
	EXPECT_INT("round(15, -1)", 20);
	EXPECT_INT("round(-15, -1)", -20);
	EXPECT_INT("round(14, -1)", 10);
	EXPECT_INT("round(-14, -1)", -10);
	EXPECT_INT("round(i, -1)", 10);
	EXPECT_INT("round(9223372036854775807, -18)", 9000000000000000000);
	EXPECT_NULL("round(9223372036854775807, -1)"); /* to 2^63 + 3 */
	EXPECT_INT("round(4999999999999999999, -19)", 0);
	EXPECT_NULL("round(5000000000000000000, -19)"); /* 10^19: overflow */
	EXPECT_NULL("round(-5000000000000000000, -19)");
	/* half of 10^20 is past int64: everything rounds to 0 */
	EXPECT_INT("round(-5000000000000000000, -20)", 0);
	EXPECT_NULL("round(n)");
	EXPECT_NULL("round(f, n)");
	EXPECT_NULL("round(null, 1)");
	EXPECT_FLOAT("sqrt(16)", 4.0);
	EXPECT_FLOAT("sqrt(f * 10 - 9)", 4.0);
	EXPECT_NULL("sqrt(-1)");
	EXPECT_NULL("sqrt(n)");
	expect_type("abs(i)", SV_T_INT64, true); /* abs(INT64_MIN) */
	expect_type("abs(1.5)", SV_T_FLOAT64, false);
	expect_type("floor(i)", SV_T_INT64, false);
	expect_type("ceil(1.5)", SV_T_FLOAT64, false);
	expect_type("round(i)", SV_T_INT64, false);
	expect_type("round(i, -1)", SV_T_INT64, true);
	expect_type("round(1.5, 1)", SV_T_FLOAT64, false);
	expect_type("sqrt(i)", SV_T_FLOAT64, true);
	expect_type("sqrt(4)", SV_T_FLOAT64, false); /* folded */
	expect_type("abs(null)", SV_T_INT64, true);
	expect_err("abs(s)", SV_ERR_SUBMISSION, 1,
		   "argument 1 of 'abs' must be numeric, got string");
	expect_err("floor(t)", SV_ERR_SUBMISSION, 1,
		   "argument 1 of 'floor' must be numeric, got timestamp_ms");
	expect_err("round(f, 0.5)", SV_ERR_SUBMISSION, 1,
		   "argument 2 of 'round' must be int64, got float64");
	expect_err("sqrt('4')", SV_ERR_SUBMISSION, 1,
		   "argument 1 of 'sqrt' must be float64, got string");
}

static void test_fn_conditional(void **state)
{
	(void)state;
	EXPECT_INT("coalesce(n, i)", 7);
	EXPECT_INT("coalesce(n, n, 3)", 3);
	EXPECT_INT("coalesce(i, n)", 7);
	EXPECT_NULL("coalesce(n)");
	EXPECT_NULL("coalesce(n, null)");
	EXPECT_NULL("coalesce(null)");
	EXPECT_FLOAT("coalesce(n, f)", 2.5); /* int and float unify to float */
	EXPECT_STR("coalesce(cast(n as string), s)", "Hello");
	EXPECT_TS("coalesce(t, 0)", T0);
	expect_type("coalesce(n, 0)", SV_T_INT64, false);
	expect_type("coalesce(n, null)", SV_T_INT64, true);
	expect_type("coalesce(n, f)", SV_T_FLOAT64, true);
	expect_type("coalesce(null, 'x')", SV_T_STRING, false);
	EXPECT_STR("if(i > 5, 'big', 'small')", "big");
	EXPECT_STR("if(i > 9, 'big', 'small')", "small");
	EXPECT_STR("if(n > 1, 'big', 'small')", "small"); /* null: else */
	EXPECT_STR("if(null, 'a', 'b')", "b");
	EXPECT_FLOAT("if(b, 1, 2.5)", 1.0);
	EXPECT_NULL("if(b, null, 1)");
	EXPECT_INT("if(b, 1, null)", 1);
	EXPECT_NULL("if(b, n, 1)");
	EXPECT_INT("if(b, 1, i / 0)", 1);
	expect_type("if(b, 1, 2)", SV_T_INT64, false);
	expect_type("if(b, 1, n)", SV_T_INT64, true);
	expect_type("if(b, null, 's')", SV_T_STRING, true);
	EXPECT_NULL("nullif(i, 7)");
	EXPECT_INT("nullif(i, 8)", 7);
	EXPECT_NULL("nullif(n, 1)");
	EXPECT_INT("nullif(i, n)", 7);
	EXPECT_STR("nullif(s, '')", "Hello");
	EXPECT_NULL("nullif(f, 2.5)");
	EXPECT_NULL("nullif(i, 7.0)"); /* compared as float */
	expect_type("nullif(i, 8)", SV_T_INT64, true);
	expect_err("coalesce(s, 1)", SV_ERR_SUBMISSION, 1,
		   "arguments of 'coalesce' must have one type, got string and "
		   "int64");
	expect_err("if(i, 1, 2)", SV_ERR_SUBMISSION, 1,
		   "argument 1 of 'if' must be bool, got int64");
	expect_err(
		"if(b, 1, 'x')", SV_ERR_SUBMISSION, 1,
		"arguments of 'if' must have one type, got int64 and string");
	expect_err("if(b, 1)", SV_ERR_SUBMISSION, 1,
		   "function 'if' takes 3 arguments, got 2");
	expect_err(
		"nullif(b, 1)", SV_ERR_SUBMISSION, 1,
		"arguments of 'nullif' must have one type, got bool and int64");
}

static void test_cast(void **state)
{
	(void)state;
	/* to string */
	EXPECT_STR("cast(i as string)", "7");
	EXPECT_STR("cast(-9223372036854775808 as string)",
		   "-9223372036854775808");
	EXPECT_STR("cast(f as string)", "2.5");
	EXPECT_STR("cast(2.0 as string)", "2.0");
	EXPECT_STR("cast(0.1 as string)", "0.1");
	EXPECT_STR("cast(1e20 as string)", "1e+20");
	EXPECT_STR("cast(1.0 / 3 as string)", "0.3333333333333333");
	EXPECT_STR("cast(b as varchar)", "true");
	EXPECT_STR("cast(t as text)", "2024-03-01T00:00:00.000Z");
	EXPECT_STR("cast(cast(-1 as timestamp) as string)",
		   "1969-12-31T23:59:59.999Z");
	EXPECT_STR("cast(cast('nan' as double) as string)", "NaN");
	EXPECT_STR("cast(-1e308 * 10 as string)", "-Infinity");
	EXPECT_STR("cast(s as string)", "Hello");
	/* from string: trimmed, null when it does not parse */
	EXPECT_INT("cast(' 42 ' as int64)", 42);
	EXPECT_INT("cast('-9223372036854775808' as bigint)", INT64_MIN);
	EXPECT_NULL("cast('9223372036854775808' as int)");
	EXPECT_NULL("cast('4x' as integer)");
	EXPECT_NULL("cast('' as int)");
	EXPECT_NULL("cast('1.5' as int)");
	EXPECT_FLOAT("cast('1.5' as float64)", 1.5);
	EXPECT_FLOAT("cast('-1e3' as float)", -1000.0);
	EXPECT_NULL("cast('1.5x' as double)");
	EXPECT_BOOL("cast('TRUE' as bool)", true);
	EXPECT_BOOL("cast('0' as boolean)", false);
	EXPECT_NULL("cast('yes' as bool)");
	EXPECT_TS("cast('2024-03-01' as timestamp_ms)", T0);
	EXPECT_TS("cast('2024-03-01T12:30:15.250Z' as timestamp)",
		  T0 + 45015250);
	EXPECT_TS("cast('2024-03-01 01:00:00+01:00' as timestamp)", T0);
	EXPECT_TS("cast('1709251200000' as timestamp)", T0);
	EXPECT_NULL("cast('2023-02-29' as timestamp)");
	EXPECT_NULL("cast('2024-03-01T24:00:00Z' as timestamp)");
	/* numbers and bools */
	EXPECT_FLOAT("cast(i as float64)", 7.0);
	EXPECT_INT("cast(f as int64)", 2); /* truncates */
	EXPECT_INT("cast(-f as int64)", -2);
	EXPECT_NULL("cast(1e19 as int64)"); /* out of range */
	EXPECT_NULL("cast(cast('nan' as float) as int)");
	EXPECT_BOOL("cast(i as bool)", true);
	EXPECT_BOOL("cast(0 as bool)", false);
	EXPECT_BOOL("cast(0.0 as bool)", false);
	EXPECT_INT("cast(b as int)", 1);
	EXPECT_FLOAT("cast(false as float)", 0.0);
	EXPECT_TS("cast(i as timestamp)", 7);
	EXPECT_TS("cast(1.9 as timestamp)", 1);
	EXPECT_INT("cast(t as int64)", T0);
	EXPECT_FLOAT("cast(t as float64)", (double)T0);
	/* null */
	EXPECT_NULL("cast(null as int)");
	EXPECT_NULL("cast(n as string)");
	expect_type("cast(null as string)", SV_T_STRING, true);
	expect_type("cast(i as string)", SV_T_STRING, false);
	expect_type("cast(i as float)", SV_T_FLOAT64, false);
	expect_type("cast(f as int)", SV_T_INT64, true);
	expect_type("cast(s as bool)", SV_T_BOOL, true);
	expect_type("cast('12' as int)", SV_T_INT64, false); /* folded */
	expect_type("CAST(i AS TIMESTAMP)", SV_T_TIMESTAMP, false);
	expect_err("cast(b as timestamp)", SV_ERR_SUBMISSION, 1,
		   "cannot cast bool to timestamp_ms");
	expect_err("cast(t as bool)", SV_ERR_SUBMISSION, 1,
		   "cannot cast timestamp_ms to bool");
	expect_err("cast(i as money)", SV_ERR_SUBMISSION, 11,
		   "unknown type 'money'");
	expect_err("cast(i)", SV_ERR_SUBMISSION, 7, "expected AS in cast");
	expect_err("cast(i as)", SV_ERR_SUBMISSION, 10, "expected a type name");
	expect_err("cast(i as int", SV_ERR_SUBMISSION, 14, "expected ')'");
}

/* ---- errors ---- */

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_err("", SV_ERR_SUBMISSION, 1, "expected an operand");
	expect_err("   ", SV_ERR_SUBMISSION, 4, "expected an operand");
	expect_err("amount >", SV_ERR_SUBMISSION, 1, "unknown column 'amount'");
	expect_err("i >", SV_ERR_SUBMISSION, 4, "expected an operand");
	expect_err("i > 1 &&", SV_ERR_SUBMISSION, 9, "expected an operand");
	expect_err("(i > 1", SV_ERR_SUBMISSION, 7, "expected ')'");
	expect_err("i > 1)", SV_ERR_SUBMISSION, 6, "unexpected ')'");
	expect_err("i i", SV_ERR_SUBMISSION, 3, "unexpected 'i'");
	expect_err("i 'x'", SV_ERR_SUBMISSION, 3, "unexpected ''x''");
	expect_err("1abc", SV_ERR_SUBMISSION, 2, "unexpected 'abc'");
	expect_err("i & 1", SV_ERR_SUBMISSION, 3, "unexpected character '&'");
	expect_err("i | 1", SV_ERR_SUBMISSION, 3, "unexpected character '|'");
	expect_err("i # 1", SV_ERR_SUBMISSION, 3, "unexpected character '#'");
	expect_err("s == \xc3\xa9", SV_ERR_SUBMISSION, 6,
		   "unexpected character '\xc3\xa9'");
	expect_err("s == 'abc", SV_ERR_SUBMISSION, 6, "unterminated string");
	expect_err("s == \"abc", SV_ERR_SUBMISSION, 6, "unterminated string");
	expect_err("`abc", SV_ERR_SUBMISSION, 1, "unterminated quoted name");
	expect_err("99999999999999999999", SV_ERR_SUBMISSION, 1,
		   "integer literal '99999999999999999999' is out of range");
	expect_err("1 + 9223372036854775808", SV_ERR_SUBMISSION, 5,
		   "integer literal '9223372036854775808' is out of range");
	expect_err("-9223372036854775809", SV_ERR_SUBMISSION, 2,
		   "integer literal '9223372036854775809' is out of range");
	expect_err("lower(s", SV_ERR_SUBMISSION, 8, "expected ',' or ')'");
	expect_err("lower(s,)", SV_ERR_SUBMISSION, 9, "expected an operand");
	expect_err("- 'a'", SV_ERR_SUBMISSION, 1,
		   "operator '-' cannot apply to string");
	expect_err("-b", SV_ERR_SUBMISSION, 1,
		   "operator '-' cannot apply to bool");
	/* keywords are not operands and never function names */
	expect_err("i + in (2)", SV_ERR_SUBMISSION, 5, "expected an operand");
	expect_err("and(1)", SV_ERR_SUBMISSION, 1, "expected an operand");
	expect_err("i == as", SV_ERR_SUBMISSION, 6, "expected an operand");
	expect_err("is", SV_ERR_SUBMISSION, 1, "expected an operand");
	/* a null argument: sv_expr_parse of NULL text is the empty text */
	sv_expr_t *e = (sv_expr_t *)1;
	sv_error_t *err = sv_expr_parse(NULL, S, &e);
	assert_non_null(err);
	assert_null(e);
	assert_string_equal(err->message,
			    "expression '' at position 1: expected an operand");
	sv_error_destroy(err);
}

static void test_unknown_function_is_coverage(void **state)
{
	(void)state;
	expect_err("frobnicate(s)", SV_ERR_COVERAGE, 1,
		   "function 'frobnicate' is not in the registry");
	expect_err("i > 1 && zap(null) IS NULL", SV_ERR_COVERAGE, 10,
		   "function 'zap' is not in the registry");
	expect_err("lower(md5(s))", SV_ERR_COVERAGE, 7,
		   "function 'md5' is not in the registry");
	expect_err("sum(i)", SV_ERR_COVERAGE, 1,
		   "function 'sum' is not in the registry");
	/* reported even when its arguments are bad too */
	expect_err("nope(no_col)", SV_ERR_COVERAGE, 1,
		   "function 'nope' is not in the registry");
	expect_err("nope(1 +)", SV_ERR_COVERAGE, 1,
		   "function 'nope' is not in the registry");
	/* a column of that name is no function */
	expect_err("s(1)", SV_ERR_COVERAGE, 1,
		   "function 's' is not in the registry");
}

static void test_limits(void **state)
{
	(void)state;
	/* nesting deeper than the parser allows is an error, not a crash */
	char *buf = malloc(4 << 20);
	int k, w = 0;
	for (k = 0; k < 200; k++)
		buf[w++] = '(';
	buf[w++] = 'i';
	for (k = 0; k < 200; k++)
		buf[w++] = ')';
	buf[w] = '\0';
	sv_expr_t *e;
	sv_error_t *err = sv_expr_parse(buf, S, &e);
	assert_non_null(err);
	assert_non_null(
		strstr(err->message, "expression is nested too deeply"));
	assert_int_equal(err->category, SV_ERR_SUBMISSION);
	sv_error_destroy(err);
	w = 0;
	for (k = 0; k < 5000; k++)
		buf[w++] = '-';
	buf[w++] = 'i';
	buf[w] = '\0';
	assert_non_null(err = sv_expr_parse(buf, S, &e));
	assert_non_null(strstr(err->message, "nested too deeply"));
	sv_error_destroy(err);
	/* regression: a long chain a+a+...+a builds a left-deep tree that
	 * overflowed the C stack when compiled; now a clean error */
	w = 0;
	for (k = 0; k < 100000; k++)
		w += sprintf(buf + w, "%si", k ? "+" : "");
	assert_non_null(err = sv_expr_parse(buf, S, &e));
	assert_int_equal(err->category, SV_ERR_SUBMISSION);
	assert_non_null(strstr(err->message, "expression is too complex"));
	sv_error_destroy(err);
	w = 0;
	for (k = 0; k < 100000; k++)
		w += sprintf(buf + w, "%si == %d", k ? " || " : "", k);
	assert_non_null(err = sv_expr_parse(buf, S, &e));
	assert_non_null(strstr(err->message, "expression is too complex"));
	sv_error_destroy(err);
	/* ... the same chain wrapped in parentheses piece by piece too */
	w = 0;
	for (k = 0; k < 60; k++)
		buf[w++] = '(';
	for (k = 0; k < 60; k++) {
		for (int j = 0; j < 30; j++)
			w += sprintf(buf + w, "%si", j ? "+" : "");
		w += sprintf(buf + w, ")+");
	}
	w += sprintf(buf + w, "i");
	assert_non_null(err = sv_expr_parse(buf, S, &e));
	assert_non_null(strstr(err->message, "expression is too complex"));
	sv_error_destroy(err);
	/* a chain of 500 is fine, and right */
	w = 0;
	for (k = 0; k < 500; k++)
		w += sprintf(buf + w, "%si", k ? "+" : "");
	EXPECT_INT(buf, 3500);
	w = 0;
	for (k = 0; k < 500; k++)
		w += sprintf(buf + w, "%si == %d", k ? " or " : "", k);
	EXPECT_BOOL(buf, true);
	/* a constant chain folds as it goes and has no limit */
	w = 0;
	for (k = 0; k < 20000; k++)
		w += sprintf(buf + w, "%s1", k ? "+" : "");
	EXPECT_INT(buf, 20000);
	/* operand stack: nested calls of 60 arguments need more than the
	 * evaluator's 128 slots */
	w = sprintf(buf, "concat(");
	for (k = 0; k < 60; k++)
		w += sprintf(buf + w, "s,");
	w += sprintf(buf + w, "concat(");
	for (k = 0; k < 60; k++)
		w += sprintf(buf + w, "s,");
	w += sprintf(buf + w, "concat(");
	for (k = 0; k < 60; k++)
		w += sprintf(buf + w, "s,");
	w += sprintf(buf + w, "s)))");
	assert_non_null(err = sv_expr_parse(buf, S, &e));
	assert_string_equal(strstr(err->message, "position 1:"),
			    "position 1: expression is too complex");
	sv_error_destroy(err);
	/* 64 arguments are allowed, 65 are not */
	w = sprintf(buf, "concat(");
	for (k = 0; k < 64; k++)
		w += sprintf(buf + w, "%s'x'", k ? "," : "");
	sprintf(buf + w, ")");
	sv_value_t v = ev(buf);
	assert_int_equal(v.len, 64);
	sprintf(buf + w, ",'x')");
	assert_non_null(err = sv_expr_parse(buf, S, &e));
	assert_non_null(
		strstr(err->message, "too many arguments (at most 64)"));
	sv_error_destroy(err);
	free(buf);
}

/* Expressions are immutable after parse: one may be evaluated from many
 * threads; here at least many times on changing rows with one arena that
 * is reset, as the operators do. */
static void test_reuse(void **state)
{
	(void)state;
	sv_expr_t *e = parse_ok("if(n IS NULL, 'none', concat(s, '#', n))");
	sv_arena_t arena;
	sv_arena_init(&arena);
	char want[64];
	for (int k = 0; k < 1000; k++) {
		sv_arena_reset(&arena);
		ROW[C_N] = k % 3 ? sv_int(k) : sv_null();
		sv_value_t v;
		sv_expr_eval(e, ROW, &arena, &v);
		if (k % 3)
			snprintf(want, sizeof(want), "Hello#%d", k);
		else
			snprintf(want, sizeof(want), "none");
		assert_int_equal(v.type, SV_T_STRING);
		assert_int_equal(v.len, strlen(want));
		assert_memory_equal(v.v.s, want, v.len);
	}
	/* sv_expr_test: only true keeps */
	sv_expr_t *p = parse_ok("n > 1");
	ROW[C_N] = sv_int(2);
	assert_true(sv_expr_test(p, ROW, &arena));
	ROW[C_N] = sv_int(0);
	assert_false(sv_expr_test(p, ROW, &arena));
	ROW[C_N] = sv_null();
	assert_false(sv_expr_test(p, ROW, &arena));
	sv_expr_destroy(p);
	sv_arena_release(&arena);
	sv_expr_destroy(e);
	sv_expr_destroy(NULL);
}

/* ---- randomized ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: small, seeded, the same everywhere */
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int rn(int n)
{
	return (int)(rnd() % (uint64_t)n);
}

static void random_row(sv_value_t *row)
{
	static const int64_t ints[] = {
		0, 1, -1, 7, 42, -1000, INT64_MAX, INT64_MIN, 1709251200000, 3};
	static const double flts[] = {0.0,   -0.0,   2.5, -1.5,
				      1e300, 1e-300, 0.1, 3.0};
	static const char *const strs[] = {
		"",           "Hello", " x ", "h\xc3\xa9llo", "12",
		"2024-03-01", "true",  "a'b", "ABC",          "-7"};
	row[C_I] = sv_int(ints[rn(SV_ARRAY_LEN(ints))]);
	row[C_N] = rn(3) ? sv_int(ints[rn(SV_ARRAY_LEN(ints))]) : sv_null();
	switch (rn(8)) {
	case 0:
		row[C_F] = sv_null();
		break;
	case 1:
		row[C_F] = sv_float(NAN);
		break;
	case 2:
		row[C_F] = sv_float(rn(2) ? INFINITY : -INFINITY);
		break;
	default:
		row[C_F] = sv_float(flts[rn(SV_ARRAY_LEN(flts))]);
		break;
	}
	const char *s = strs[rn(SV_ARRAY_LEN(strs))];
	row[C_S] = rn(4) ? sv_str(s, (uint32_t)strlen(s)) : sv_null();
	s = strs[rn(SV_ARRAY_LEN(strs))];
	row[C_LONG] = rn(4) ? sv_str(s, (uint32_t)strlen(s)) : sv_null();
	row[C_B] = rn(3) ? sv_bool(rn(2)) : sv_null();
	row[C_NB] = rn(3) ? sv_bool(rn(2)) : sv_null();
	row[C_T] = rn(4) ? sv_ts(T0 + rn(100000) - 50000) : sv_null();
}

/* The parser returns exactly one of an expression and an error; an error
 * names the expression and a position within it (or just past its end). */
static int check_parse(const char *text, const sv_value_t *rows, int nrows)
{
	sv_expr_t *e = (sv_expr_t *)1;
	sv_error_t *err = sv_expr_parse(text, S, &e);
	if (err) {
		if (e)
			fail_msg("'%s': both an error and an expression", text);
		if (err->category != SV_ERR_SUBMISSION &&
		    err->category != SV_ERR_COVERAGE)
			fail_msg("'%s': category %s", text,
				 sv_errcat_name(err->category));
		char head[64];
		snprintf(head, sizeof(head), "expression '");
		if (strncmp(err->message, head, strlen(head)) ||
		    strncmp(err->message + strlen(head), text, strlen(text)))
			fail_msg("'%s': message '%s'", text, err->message);
		if (err->position < 1 ||
		    (size_t)err->position > strlen(text) + 1)
			fail_msg("'%s': position %d", text, err->position);
		sv_error_destroy(err);
		return 0;
	}
	if (!e)
		fail_msg("'%s': neither an error nor an expression", text);
	sv_arena_t arena;
	sv_arena_init(&arena);
	for (int r = 0; r < nrows; r++) {
		sv_value_t v;
		sv_expr_eval(e, rows + r * C_NCOLS, &arena, &v);
		check_result_type(e, &v);
	}
	sv_arena_release(&arena);
	sv_expr_destroy(e);
	return 1;
}

static void test_fuzz_bytes(void **state)
{
	(void)state;
	rng_state = 20240301;
	sv_value_t rows[4 * C_NCOLS];
	for (int r = 0; r < 4; r++)
		random_row(rows + r * C_NCOLS);
	/* bytes that matter to the lexer, and everything else */
	static const char alpha[] = "()'\"`,+-*/%=!<>&|.eE0123456789 \t\n"
				    "insbtfNulaorIS_xyz";
	char text[80];
	int ok = 0;
	for (int k = 0; k < 30000; k++) {
		int len = rn(sizeof(text) - 1);
		for (int j = 0; j < len; j++)
			text[j] = rn(3) ? alpha[rn(sizeof(alpha) - 1)]
					: (char)(1 + rn(255));
		text[len] = '\0';
		ok += check_parse(text, rows, 4);
	}
	/* some random texts happen to parse: the success path ran too */
	if (ok < 30)
		fail_msg("only %d random byte strings parsed", ok);
	print_message("random bytes: %d of 30000 parsed\n", ok);
}

static void test_fuzz_tokens(void **state)
{
	(void)state;
	static const char *const toks[] = {
		"i",
		"n",
		"f",
		"s",
		"b",
		"t",
		"nb",
		"`long name`",
		"zz",
		"0",
		"1",
		"7",
		"-1",
		"2.5",
		"1e3",
		"9223372036854775807",
		"'x'",
		"''",
		"'2024-03-01'",
		"\"y\"",
		"true",
		"false",
		"null",
		"+",
		"-",
		"*",
		"/",
		"%",
		"==",
		"=",
		"!=",
		"<>",
		"<",
		"<=",
		">",
		">=",
		"&&",
		"||",
		"!",
		"AND",
		"OR",
		"NOT",
		"IS",
		"IN",
		"AS",
		"(",
		"(",
		")",
		")",
		",",
		"lower",
		"upper",
		"length",
		"substr",
		"concat",
		"trim",
		"abs",
		"round",
		"floor",
		"ceil",
		"coalesce",
		"if",
		"cast",
		"nullif",
		"sqrt",
		"replace",
		"int64",
		"string",
		"nosuch",
		"sum",
	};
	sv_value_t rows[4 * C_NCOLS];
	rng_state = 4242;
	for (int r = 0; r < 4; r++)
		random_row(rows + r * C_NCOLS);
	char text[1024];
	int ok = 0;
	for (int k = 0; k < 30000; k++) {
		int n = 1 + rn(24), w = 0;
		for (int j = 0; j < n; j++)
			w += snprintf(text + w, sizeof(text) - (size_t)w,
				      "%s%s", j ? " " : "",
				      toks[rn(SV_ARRAY_LEN(toks))]);
		ok += check_parse(text, rows, 4);
	}
	if (ok < 300)
		fail_msg("only %d random token sequences parsed", ok);
	print_message("random tokens: %d of 30000 parsed\n", ok);
}

/* Typed random expressions. Column leaves are written either as the
 * column's name or as a literal of the row's value (then the parser folds
 * the whole subtree); both texts come from the same random choices. */
typedef struct gen {
	char *buf;
	size_t w, cap;
	const sv_value_t *row; /* NULL: write column names */
} gen_t;

static void out(gen_t *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void out(gen_t *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(g->buf + g->w, g->cap - g->w, fmt, ap);
	va_end(ap);
	if (n > 0 && g->w + (size_t)n < g->cap)
		g->w += (size_t)n;
	else
		g->w = g->cap - 1; /* truncated: the text will not parse */
}

static const char *type_kw(sv_type_t t)
{
	switch (t) {
	case SV_T_BOOL:
		return "bool";
	case SV_T_INT64:
		return "int64";
	case SV_T_FLOAT64:
		return "float64";
	case SV_T_STRING:
		return "string";
	default:
		return "timestamp_ms";
	}
}

static void out_literal(gen_t *g, const sv_value_t *v, sv_type_t type)
{
	switch (v->type) {
	case SV_T_NULL:
		out(g, "cast(null as %s)", type_kw(type));
		break;
	case SV_T_BOOL:
		out(g, "%s", v->v.b ? "true" : "false");
		break;
	case SV_T_INT64:
		out(g, "(%lld)", (long long)v->v.i);
		break;
	case SV_T_TIMESTAMP:
		out(g, "cast(%lld as timestamp)", (long long)v->v.i);
		break;
	case SV_T_FLOAT64: {
		double f = v->v.f;
		if (isnan(f))
			out(g, "cast('NaN' as float64)");
		else if (isinf(f))
			out(g, "cast('%sInfinity' as float64)",
			    f < 0 ? "-" : "");
		else {
			char tmp[64];
			snprintf(tmp, sizeof(tmp), "%.17g", f);
			out(g, "(%s%s)", tmp, strpbrk(tmp, ".e") ? "" : ".0");
		}
		break;
	}
	default:
		out(g, "'");
		for (uint32_t k = 0; k < v->len; k++)
			out(g, v->v.s[k] == '\'' ? "''" : "%c", v->v.s[k]);
		out(g, "'");
		break;
	}
}

static void out_col(gen_t *g, int c)
{
	if (!g->row)
		out(g, "%s",
		    S->fields[c].name[0] == 'l' ? "`long name`"
						: S->fields[c].name);
	else
		out_literal(g, &g->row[c], S->fields[c].type);
}

static void gen_expr(gen_t *g, sv_type_t t, int depth);

static sv_type_t any_type(void)
{
	static const sv_type_t ts[] = {SV_T_BOOL, SV_T_INT64, SV_T_FLOAT64,
				       SV_T_STRING, SV_T_TIMESTAMP};
	return ts[rn(5)];
}

static void gen_leaf(gen_t *g, sv_type_t t)
{
	if (rn(2)) { /* a column of the type */
		static const int cols[SV_T__COUNT][3] = {
			[SV_T_BOOL] = {C_B, C_NB, C_B},
			[SV_T_INT64] = {C_I, C_N, C_I},
			[SV_T_FLOAT64] = {C_F, C_F, C_F},
			[SV_T_STRING] = {C_S, C_LONG, C_S},
			[SV_T_TIMESTAMP] = {C_T, C_T, C_T},
		};
		out_col(g, cols[t][rn(3)]);
		return;
	}
	switch (t) {
	case SV_T_BOOL:
		out(g, rn(5) ? (rn(2) ? "true" : "false") : "null");
		break;
	case SV_T_INT64: {
		static const char *const v[] = {"0",
						"1",
						"3",
						"-2",
						"100",
						"9223372036854775807",
						"-9223372036854775808",
						"null"};
		out(g, "%s", v[rn(SV_ARRAY_LEN(v))]);
		break;
	}
	case SV_T_FLOAT64: {
		static const char *const v[] = {"0.0",   "0.5", "-2.5",
						"1e300", "3.0", "null"};
		out(g, "%s", v[rn(SV_ARRAY_LEN(v))]);
		break;
	}
	case SV_T_STRING: {
		static const char *const v[] = {
			"''",      "'ab'",         "' x '", "'12'",
			"'Hello'", "'2024-03-01'", "null"};
		out(g, "%s", v[rn(SV_ARRAY_LEN(v))]);
		break;
	}
	default:
		out(g,
		    rn(2) ? "'2024-03-01T00:00:10Z'" : "cast(%d as timestamp)",
		    rn(1000));
		break;
	}
}

static void gen_expr(gen_t *g, sv_type_t t, int depth)
{
	if (depth <= 0 || !rn(4)) {
		gen_leaf(g, t);
		return;
	}
	int d = depth - 1;
	static const char *const arith[] = {"+", "-", "*", "/", "%"};
	static const char *const cmps[] = {
		"==", "!=", "<", "<=", ">", ">=", "=", "<>"};
	/* shared forms for any type */
	switch (rn(12)) {
	case 0:
		out(g, "coalesce(");
		gen_expr(g, t, d);
		out(g, ", ");
		gen_expr(g, t, d);
		out(g, ")");
		return;
	case 1:
		out(g, "if(");
		gen_expr(g, SV_T_BOOL, d);
		out(g, ", ");
		gen_expr(g, t, d);
		out(g, ", ");
		gen_expr(g, t, d);
		out(g, ")");
		return;
	case 2:
		if (t != SV_T_BOOL && t != SV_T_TIMESTAMP) {
			out(g, "nullif(");
			gen_expr(g, t, d);
			out(g, ", ");
			gen_expr(g, t, d);
			out(g, ")");
			return;
		}
		break;
	case 3: {
		sv_type_t from = any_type();
		if (sv_cast_allowed(from, t)) {
			out(g, "cast(");
			gen_expr(g, from, d);
			out(g, " as %s)", type_kw(t));
			return;
		}
		break;
	}
	case 4:
		out(g, "(");
		gen_expr(g, t, d);
		out(g, ")");
		return;
	default:
		break;
	}
	switch (t) {
	case SV_T_BOOL:
		switch (rn(7)) {
		case 0:
		case 1: {
			sv_type_t a = any_type();
			out(g, "(");
			gen_expr(g, a, d);
			out(g, " %s ", cmps[rn(SV_ARRAY_LEN(cmps))]);
			gen_expr(g, a == SV_T_INT64 && rn(2) ? SV_T_FLOAT64 : a,
				 d);
			out(g, ")");
			break;
		}
		case 2:
			out(g, "(");
			gen_expr(g, SV_T_BOOL, d);
			out(g, " %s ",
			    rn(2) ? (rn(2) ? "&&" : "AND")
				  : (rn(2) ? "||" : "or"));
			gen_expr(g, SV_T_BOOL, d);
			out(g, ")");
			break;
		case 3:
			out(g, "%s(", rn(2) ? "!" : "NOT ");
			gen_expr(g, SV_T_BOOL, d);
			out(g, ")");
			break;
		case 4:
			out(g, "(");
			gen_expr(g, any_type(), d);
			out(g, " IS %sNULL)", rn(2) ? "NOT " : "");
			break;
		case 5: {
			sv_type_t a = any_type();
			out(g, "(");
			gen_expr(g, a, d);
			out(g, " %sIN (", rn(2) ? "NOT " : "");
			int n = 1 + rn(4);
			for (int k = 0; k < n; k++) {
				out(g, "%s", k ? ", " : "");
				gen_expr(g, a, d);
			}
			out(g, "))");
			break;
		}
		default: {
			static const char *const fs[] = {
				"starts_with", "ends_with", "contains"};
			out(g, "%s(", fs[rn(3)]);
			gen_expr(g, SV_T_STRING, d);
			out(g, ", ");
			gen_expr(g, SV_T_STRING, d);
			out(g, ")");
			break;
		}
		}
		return;
	case SV_T_INT64:
	case SV_T_FLOAT64:
		switch (rn(6)) {
		case 0:
		case 1:
		case 2:
			out(g, "(");
			gen_expr(g, t == SV_T_FLOAT64 && rn(2) ? SV_T_INT64 : t,
				 d);
			out(g, " %s ", arith[rn(5)]);
			gen_expr(g, t, d);
			out(g, ")");
			break;
		case 3:
			out(g, "-(");
			gen_expr(g, t, d);
			out(g, ")");
			break;
		case 4: {
			static const char *const fs[] = {"abs", "floor", "ceil",
							 "round"};
			const char *fn = fs[rn(4)];
			out(g, "%s(", fn);
			gen_expr(g, t, d);
			if (fn[0] == 'r' && rn(2)) {
				out(g, ", ");
				gen_expr(g, SV_T_INT64, d);
			}
			out(g, ")");
			break;
		}
		default:
			if (t == SV_T_INT64) {
				if (rn(2)) {
					out(g, "length(");
					gen_expr(g, SV_T_STRING, d);
				} else {
					out(g, "(");
					gen_expr(g, SV_T_TIMESTAMP, d);
					out(g, " - ");
					gen_expr(g, SV_T_TIMESTAMP, d);
				}
			} else {
				out(g, "sqrt(");
				gen_expr(g, t, d);
			}
			out(g, ")");
			break;
		}
		return;
	case SV_T_STRING:
		switch (rn(6)) {
		case 0:
			out(g, "(");
			gen_expr(g, t, d);
			out(g, " + ");
			gen_expr(g, t, d);
			out(g, ")");
			break;
		case 1: {
			int n = 1 + rn(4);
			out(g, "concat(");
			for (int k = 0; k < n; k++) {
				out(g, "%s", k ? ", " : "");
				gen_expr(g, any_type(), d);
			}
			out(g, ")");
			break;
		}
		case 2: {
			static const char *const fs[] = {
				"lower", "upper", "trim", "ltrim", "rtrim"};
			out(g, "%s(", fs[rn(5)]);
			gen_expr(g, t, d);
			out(g, ")");
			break;
		}
		case 3:
			out(g, "substr(");
			gen_expr(g, t, d);
			out(g, ", ");
			gen_expr(g, SV_T_INT64, d);
			if (rn(2)) {
				out(g, ", ");
				gen_expr(g, SV_T_INT64, d);
			}
			out(g, ")");
			break;
		case 4:
			out(g, "replace(");
			gen_expr(g, t, d);
			out(g, ", ");
			gen_expr(g, t, d);
			out(g, ", ");
			gen_expr(g, t, d);
			out(g, ")");
			break;
		default:
			gen_leaf(g, t);
			break;
		}
		return;
	default:
		out(g, "(");
		gen_expr(g, t, d);
		out(g, " %s ", rn(2) ? "+" : "-");
		gen_expr(g, SV_T_INT64, d);
		out(g, ")");
		return;
	}
}

static bool same_value(const sv_value_t *a, const sv_value_t *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case SV_T_NULL:
		return true;
	case SV_T_BOOL:
		return a->v.b == b->v.b;
	case SV_T_FLOAT64:
		if (isnan(a->v.f) || isnan(b->v.f))
			return isnan(a->v.f) && isnan(b->v.f);
		return a->v.f == b->v.f && signbit(a->v.f) == signbit(b->v.f);
	case SV_T_STRING:
		return a->len == b->len &&
			(!a->len || !memcmp(a->v.s, b->v.s, a->len));
	default:
		return a->v.i == b->v.i;
	}
}

static void test_fuzz_fold_vs_eval(void **state)
{
	(void)state;
	rng_state = 77;
	char *ta = malloc(8192), *tb = malloc(16384);
	int parsed = 0, errors = 0;
	for (int k = 0; k < 6000; k++) {
		sv_value_t row[C_NCOLS];
		random_row(row);
		sv_type_t t = any_type();
		uint64_t seed = rng_state;
		gen_t ga = {ta, 0, 8192, NULL};
		gen_expr(&ga, t, 1 + rn(5));
		ta[ga.w] = '\0';
		rng_state = seed;
		gen_t gb = {tb, 0, 16384, row};
		gen_expr(&gb, t, 1 + rn(5));
		tb[gb.w] = '\0';
		/* the same choices were made (rn(5) included) */
		sv_expr_t *ea = NULL, *eb = NULL;
		sv_error_t *err = sv_expr_parse(ta, S, &ea);
		if (err) {
			/* column-free literal texts may parse where columns
			 * do not (a string value read as a timestamp) */
			errors++;
			sv_error_destroy(err);
			continue;
		}
		err = sv_expr_parse(tb, S, &eb);
		if (err)
			fail_msg("'%s' parsed but its folded form '%s' did "
				 "not: %s",
				 ta, tb, err->message);
		if (sv_expr_type(ea) != sv_expr_type(eb))
			fail_msg("'%s' is %s, folded '%s' is %s", ta,
				 sv_type_name(sv_expr_type(ea)), tb,
				 sv_type_name(sv_expr_type(eb)));
		sv_arena_t arena;
		sv_arena_init(&arena);
		sv_value_t va, vb;
		sv_expr_eval(ea, row, &arena, &va);
		sv_expr_eval(eb, row, &arena, &vb);
		check_result_type(ea, &va);
		check_result_type(eb, &vb);
		if (!same_value(&va, &vb)) {
			char sa[300];
			snprintf(sa, sizeof(sa), "%s", show(&va));
			fail_msg(
				"'%s' gave %s at run time but %s folded ('%s')",
				ta, sa, show(&vb), tb);
		}
		parsed++;
		sv_arena_release(&arena);
		sv_expr_destroy(ea);
		sv_expr_destroy(eb);
	}
	if (parsed < 3000)
		fail_msg("only %d of 6000 typed random expressions parsed",
			 parsed);
	print_message("typed random expressions: %d compared, %d refused\n",
		      parsed, errors);
	free(ta);
	free(tb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_literals, setup),
		cmocka_unit_test_setup(test_columns, setup),
		cmocka_unit_test_setup(test_int_arith, setup),
		cmocka_unit_test_setup(test_float_arith, setup),
		cmocka_unit_test_setup(test_timestamp_arith, setup),
		cmocka_unit_test_setup(test_string_concat, setup),
		cmocka_unit_test_setup(test_comparisons, setup),
		cmocka_unit_test_setup(test_three_valued_logic, setup),
		cmocka_unit_test_setup(test_is_null, setup),
		cmocka_unit_test_setup(test_in, setup),
		cmocka_unit_test_setup(test_precedence, setup),
		cmocka_unit_test_setup(test_registry, setup),
		cmocka_unit_test_setup(test_fn_strings, setup),
		cmocka_unit_test_setup(test_fn_numbers, setup),
		cmocka_unit_test_setup(test_fn_conditional, setup),
		cmocka_unit_test_setup(test_cast, setup),
		cmocka_unit_test_setup(test_syntax_errors, setup),
		cmocka_unit_test_setup(test_unknown_function_is_coverage,
				       setup),
		cmocka_unit_test_setup(test_limits, setup),
		cmocka_unit_test_setup(test_reuse, setup),
		cmocka_unit_test_setup(test_fuzz_bytes, setup),
		cmocka_unit_test_setup(test_fuzz_tokens, setup),
		cmocka_unit_test_setup(test_fuzz_fold_vs_eval, setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
