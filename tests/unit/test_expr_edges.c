/* test_expr_edges.c — expression-language regressions found beside the
 * main suite (test_expr.c):
 *
 * - an IN list whose comparison is widened to float64 only after a
 *   timestamp_ms item was accepted as int64-compatible (n IN (t, 1.5))
 *   used to be accepted, then compared the timestamp's integer bits read
 *   as a double; it is a type error at parse time now;
 * - an empty string may carry no bytes at all (pointer NULL, length 0):
 *   starts_with, ends_with, contains, replace and nullif passed that
 *   pointer to memcmp/memmem/memcpy, which are declared nonnull (UBSan
 *   stops there);
 * - a seeded loop of random grammar trees and byte mutations of them:
 *   every text gives an expression or an error naming the expression and a
 *   position inside it, and every accepted expression is evaluated on
 *   random rows (byte-less empty strings, NaN, infinities, INT64 limits)
 *   and checked against its declared type and nullability;
 * - round(x, d) on int64 for d <= -20 was null for |x| >= 5 * 10^18: only
 *   d = -19 can round past int64; from d = -20 on every int64 rounds to 0. */
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
#include "core/util.h"

/* the columns of the test schema */
enum {
	C_I,
	C_F,
	C_S,
	C_B,
	C_T,
	C_N,
	C_U,
	C_TW,
	C_C,
	C_E,
	NCOLS
};

/* 2024-03-01T00:00:00Z */
#define TS_0301 INT64_C(1709251200000)

typedef struct fx {
	sv_schema_t *schema;
	sv_value_t row[NCOLS];
	sv_arena_t arena;
	sv_expr_t *expr; /* the last expression parsed */
	sv_error_t *err; /* the last error */
	char buf[512];
} fx_t;

static void default_row(fx_t *f)
{
	f->row[C_I] = sv_int(7);
	f->row[C_F] = sv_float(2.5);
	f->row[C_S] = sv_str("Hello", 5);
	f->row[C_B] = sv_bool(true);
	f->row[C_T] = sv_ts(TS_0301);
	f->row[C_N] = sv_int(3);
	f->row[C_U] = sv_str("  pad  ", 7);
	f->row[C_TW] = sv_str("x", 1);
	f->row[C_C] = sv_bool(false);
	f->row[C_E] = sv_str(NULL, 0); /* an empty string with no bytes */
}

static int setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	f->schema = sv_schema_new();
	sv_schema_add(f->schema, "i", SV_T_INT64, true);
	sv_schema_add(f->schema, "f", SV_T_FLOAT64, true);
	sv_schema_add(f->schema, "s", SV_T_STRING, true);
	sv_schema_add(f->schema, "b", SV_T_BOOL, true);
	sv_schema_add(f->schema, "t", SV_T_TIMESTAMP, true);
	sv_schema_add(f->schema, "n", SV_T_INT64, false);
	sv_schema_add(f->schema, "u", SV_T_STRING, true);
	sv_schema_add(f->schema, "two words", SV_T_STRING, true);
	sv_schema_add(f->schema, "c", SV_T_BOOL, true);
	sv_schema_add(f->schema, "e", SV_T_STRING, false);
	sv_arena_init(&f->arena);
	default_row(f);
	*state = f;
	return 0;
}

static void clear(fx_t *f)
{
	sv_expr_destroy(f->expr);
	f->expr = NULL;
	sv_error_destroy(f->err);
	f->err = NULL;
}

static int teardown(void **state)
{
	fx_t *f = *state;
	clear(f);
	sv_arena_release(&f->arena);
	sv_schema_destroy(f->schema);
	free(f);
	return 0;
}

static const char *show(fx_t *f, const sv_value_t *v)
{
	switch (v->type) {
	case SV_T_NULL:
		return "null";
	case SV_T_BOOL:
		snprintf(f->buf, sizeof(f->buf), "bool %s",
			 v->v.b ? "true" : "false");
		break;
	case SV_T_INT64:
		snprintf(f->buf, sizeof(f->buf), "int64 %lld",
			 (long long)v->v.i);
		break;
	case SV_T_TIMESTAMP:
		snprintf(f->buf, sizeof(f->buf), "timestamp_ms %lld",
			 (long long)v->v.i);
		break;
	case SV_T_FLOAT64:
		snprintf(f->buf, sizeof(f->buf), "float64 %.17g", v->v.f);
		break;
	case SV_T_STRING:
		snprintf(f->buf, sizeof(f->buf), "string '%.*s'", (int)v->len,
			 v->v.s ? v->v.s : "");
		break;
	default:
		snprintf(f->buf, sizeof(f->buf), "type %d", v->type);
	}
	return f->buf;
}

/* Check the invariants every evaluation must keep. */
static void check_result(const sv_expr_t *e, const sv_value_t *v,
			 const char *text)
{
	if (v->type == SV_T_NULL) {
		if (!sv_expr_nullable(e))
			fail_msg("'%s' is declared not nullable but gave null",
				 text);
		return;
	}
	if (v->type != sv_expr_type(e))
		fail_msg("'%s' is declared %s but gave %s", text,
			 sv_type_name(sv_expr_type(e)), sv_type_name(v->type));
}

/* Parse text (must succeed) and evaluate it on f->row. */
static sv_value_t ev(fx_t *f, const char *text)
{
	clear(f);
	f->err = sv_expr_parse(text, f->schema, &f->expr);
	if (f->err)
		fail_msg("'%s' did not parse: %s", text, f->err->message);
	assert_non_null(f->expr);
	assert_string_equal(sv_expr_text(f->expr), text);
	sv_value_t v;
	sv_expr_eval(f->expr, f->row, &f->arena, &v);
	check_result(f->expr, &v, text);
	return v;
}

static void want_int(fx_t *f, const char *text, int64_t x)
{
	sv_value_t v = ev(f, text);
	if (v.type != SV_T_INT64 || v.v.i != x)
		fail_msg("'%s' gave %s, want int64 %lld", text, show(f, &v),
			 (long long)x);
}

static void want_bool(fx_t *f, const char *text, bool x)
{
	sv_value_t v = ev(f, text);
	if (v.type != SV_T_BOOL || v.v.b != x)
		fail_msg("'%s' gave %s, want bool %s", text, show(f, &v),
			 x ? "true" : "false");
}

static void want_str(fx_t *f, const char *text, const char *x)
{
	sv_value_t v = ev(f, text);
	if (v.type != SV_T_STRING || v.len != strlen(x) ||
	    (v.len && memcmp(v.v.s, x, v.len)))
		fail_msg("'%s' gave %s, want string '%s'", text, show(f, &v),
			 x);
}

static void want_null(fx_t *f, const char *text)
{
	sv_value_t v = ev(f, text);
	if (v.type != SV_T_NULL)
		fail_msg("'%s' gave %s, want null", text, show(f, &v));
}

/* Parse text (must fail) with this category and exact message. */
static void want_error(fx_t *f, const char *text, sv_errcat_t cat, int pos,
		       const char *reason)
{
	clear(f);
	f->err = sv_expr_parse(text, f->schema, &f->expr);
	if (!f->err)
		fail_msg("'%s' parsed, want error '%s'", text, reason);
	assert_null(f->expr);
	char want[1024];
	snprintf(want, sizeof(want), "expression '%s' at position %d: %s", text,
		 pos, reason);
	if (strcmp(f->err->message, want))
		fail_msg("'%s': message\n  got  %s\n  want %s", text,
			 f->err->message, want);
	if (f->err->category != cat)
		fail_msg("'%s': category %s, want %s", text,
			 sv_errcat_name(f->err->category), sv_errcat_name(cat));
	assert_int_equal(f->err->position, pos);
}

static void want_syntax(fx_t *f, const char *text, int pos, const char *reason)
{
	want_error(f, text, SV_ERR_SUBMISSION, pos, reason);
}

/* An int64 IN list with both a timestamp and a float64 item: the float
 * forces float64 comparison, which a timestamp cannot take part in. This
 * used to be accepted and compared the timestamp's integer bits as a
 * double. */
static void test_in_mixed_types(void **state)
{
	fx_t *f = *state;
	want_syntax(f, "n in (t, 1.5)", 7,
		    "operator 'in' cannot apply to float64 and timestamp_ms");
	want_syntax(f, "n in (1.5, t)", 12,
		    "operator 'in' cannot apply to float64 and timestamp_ms");
	want_syntax(f, "t in (1, 2.5)", 10,
		    "operator 'in' cannot apply to timestamp_ms and float64");
	/* int64 and timestamp items mix: both compare as milliseconds */
	f->row[C_N] = sv_int(TS_0301);
	want_bool(f, "n in (t, 1)", true);
	want_bool(f, "t in (n, 1)", true);
	/* int64 and float64 items mix as float64 */
	f->row[C_N] = sv_int(3);
	want_bool(f, "n in (1, 2.5, 3)", true);
	want_bool(f, "n in (i, 3.0)", true);
	want_bool(f, "2.5 in (1, 2.5)", true);
}

/* round(int64, d) with 10^-d past int64. */
static void test_round_int_far_left(void **state)
{
	fx_t *f = *state;
	want_null(f, "round(9223372036854775807, -19)");
	want_null(f, "round(5000000000000000000, -19)");
	want_null(f, "round(-5000000000000000000, -19)");
	want_int(f, "round(4999999999999999999, -19)", 0);
	want_int(f, "round(-4999999999999999999, -19)", 0);
	want_int(f, "round(9223372036854775807, -20)", 0);
	want_int(f, "round(-9223372036854775807 - 1, -20)", 0);
	want_int(f, "round(5000000000000000000, -30)", 0);
	want_int(f, "round(n, -9223372036854775807 - 1)", 0);
	/* at run time as well as folded */
	f->row[C_I] = sv_int(INT64_MAX);
	want_int(f, "round(i, -20)", 0);
	want_null(f, "round(i, -19)");
	want_int(f, "round(i, -18)", INT64_C(9000000000000000000));
	want_null(f, "round(i, -1)");
}

/* Every string function and operator on an empty string with no bytes. */
static void test_empty_strings_without_bytes(void **state)
{
	fx_t *f = *state;
	assert_null(f->row[C_E].v.s);
	want_bool(f, "starts_with(e, '')", true);
	want_bool(f, "starts_with(e, e)", true);
	want_bool(f, "starts_with(s, e)", true);
	want_bool(f, "starts_with(e, 'a')", false);
	want_bool(f, "ends_with(e, '')", true);
	want_bool(f, "ends_with(s, e)", true);
	want_bool(f, "ends_with(e, 'a')", false);
	want_bool(f, "contains(e, '')", true);
	want_bool(f, "contains(e, 'a')", false);
	want_bool(f, "contains(s, e)", true);
	want_str(f, "replace(e, 'a', 'b')", "");
	want_str(f, "replace(s, 'l', e)", "Heo");
	want_str(f, "replace(s, 'Hello', e)", "");
	want_str(f, "replace(s, e, 'x')", "Hello");
	want_null(f, "nullif(e, '')");
	want_null(f, "nullif(e, e)");
	want_str(f, "nullif(e, 'a')", "");
	want_str(f, "nullif(s, e)", "Hello");
	want_str(f, "lower(e)", "");
	want_str(f, "upper(e)", "");
	want_int(f, "length(e)", 0);
	want_str(f, "substr(e, 1, 2)", "");
	want_str(f, "substr(e, 2)", "");
	want_str(f, "trim(e)", "");
	want_str(f, "ltrim(e)", "");
	want_str(f, "rtrim(e)", "");
	want_str(f, "concat(e, e)", "");
	want_str(f, "concat(e, s, e)", "Hello");
	want_str(f, "e + e", "");
	want_str(f, "coalesce(e, 'x')", "");
	want_bool(f, "e = ''", true);
	want_bool(f, "e < s", true);
	want_bool(f, "e in ('a', '')", true);
	want_bool(f, "e in (s, u)", false);
	want_null(f, "cast(e as int64)");
	want_null(f, "cast(e as float64)");
	want_null(f, "cast(e as bool)");
	want_null(f, "cast(e as timestamp)");
	want_str(f, "cast(e as string)", "");
}

/* ---- the fuzz loop ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static size_t rndn(size_t n)
{
	return (size_t)(rnd() % n);
}

static const char *const fnames[] = {
	"lower",       "upper",     "length", "substr",  "concat", "trim",
	"ltrim",       "rtrim",     "abs",    "round",   "floor",  "ceil",
	"coalesce",    "if",        "nullif", "replace", "sqrt",   "contains",
	"starts_with", "ends_with", "nosuch",
};

static const char *const binops[] = {
	"+",  "-", "*",  "/",   "%",  "=",  "!=", "<",
	"<=", ">", ">=", "and", "or", "&&", "||",
};

static const char *const atoms[] = {
	"i",           "f",     "s",
	"b",           "t",     "n",
	"u",           "c",     "e",
	"`two words`", "0",     "1",
	"-3",          "7",     "2.5",
	"-0.5",        "1e300", "9223372036854775807",
	"'abc'",       "''",    "'2024-03-01'",
	"'7'",         "null",  "true",
	"false",
};

static const char *const types[] = {
	"bool", "int64", "float64", "string", "timestamp", "double",
};

typedef struct sbuf {
	char *p;
	size_t len, cap;
} sbuf_t;

static void sput(sbuf_t *b, const char *s)
{
	size_t n = strlen(s);
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

/* A random expression from the grammar, not necessarily well typed. */
static void gen(sbuf_t *b, int depth)
{
	size_t pick = depth <= 0 ? 0 : rndn(10);
	switch (pick) {
	case 0:
	case 1:
		sput(b, atoms[rndn(sizeof(atoms) / sizeof(atoms[0]))]);
		break;
	case 2:
	case 3:
		gen(b, depth - 1);
		sput(b, " ");
		sput(b, binops[rndn(sizeof(binops) / sizeof(binops[0]))]);
		sput(b, " ");
		gen(b, depth - 1);
		break;
	case 4: {
		sput(b, fnames[rndn(sizeof(fnames) / sizeof(fnames[0]))]);
		sput(b, "(");
		size_t n = rndn(4);
		for (size_t k = 0; k < n; k++) {
			if (k)
				sput(b, ", ");
			gen(b, depth - 1);
		}
		sput(b, ")");
		break;
	}
	case 5:
		sput(b, "(");
		gen(b, depth - 1);
		sput(b, ")");
		break;
	case 6:
		sput(b, rndn(2) ? "not " : "-");
		gen(b, depth - 1);
		break;
	case 7:
		gen(b, depth - 1);
		sput(b, rndn(2) ? " is null" : " is not null");
		break;
	case 8: {
		gen(b, depth - 1);
		sput(b, rndn(2) ? " in (" : " not in (");
		size_t n = 1 + rndn(3);
		for (size_t k = 0; k < n; k++) {
			if (k)
				sput(b, ", ");
			gen(b, depth - 1);
		}
		sput(b, ")");
		break;
	}
	default:
		sput(b, "cast(");
		gen(b, depth - 1);
		sput(b, " as ");
		sput(b, types[rndn(sizeof(types) / sizeof(types[0]))]);
		sput(b, ")");
		break;
	}
}

static const char *const str_pool[] = {
	"",    "abc",        "Hello", "  x ", "7",
	"-12", "2024-03-01", "é日",   "true", "1e3",
};

static sv_value_t random_value(sv_type_t t, bool nullable)
{
	if (nullable && rndn(4) == 0)
		return sv_null();
	static const int64_t ints[] = {
		0, 1, -1, 3, 7, 10, INT64_MAX, INT64_MIN, TS_0301, -86400000};
	static const double floats[] = {0.0,   -0.0,   0.5, -2.5,
					1e300, -1e300, 3.0};
	switch (t) {
	case SV_T_BOOL:
		return sv_bool(rndn(2));
	case SV_T_INT64:
		return sv_int(ints[rndn(10)]);
	case SV_T_TIMESTAMP:
		return sv_ts(ints[rndn(10)]);
	case SV_T_FLOAT64:
		if (rndn(10) == 0)
			return sv_float(rndn(2) ? NAN : INFINITY);
		return sv_float(floats[rndn(7)]);
	case SV_T_STRING: {
		const char *s = str_pool[rndn(10)];
		return sv_str(*s ? s : NULL, (uint32_t)strlen(s));
	}
	default:
		return sv_null();
	}
}

typedef struct fuzz_stats {
	size_t parsed, errors, coverage, evals;
} fuzz_stats_t;

/* Parse text; check the error-or-expression contract; evaluate what
 * parsed on random rows. */
static void fuzz_one(fx_t *f, const char *text, fuzz_stats_t *st)
{
	sv_expr_t *e = (sv_expr_t *)0x1;
	sv_error_t *err = sv_expr_parse(text, f->schema, &e);
	if (!err == !e)
		fail_msg("'%s': error %p and expression %p", text, (void *)err,
			 (void *)e);
	if (err) {
		st->errors++;
		char head[64];
		snprintf(head, sizeof(head), "expression '");
		if (strncmp(err->message, head, strlen(head)))
			fail_msg("'%s': message '%s'", text, err->message);
		size_t tl = strlen(text);
		if (err->position < 1 || (size_t)err->position > tl + 1)
			fail_msg("'%s': position %d outside 1..%zu", text,
				 err->position, tl + 1);
		char at[32];
		snprintf(at, sizeof(at), "' at position %d: ", err->position);
		if (!strstr(err->message, at))
			fail_msg("'%s': message '%s' lacks '%s'", text,
				 err->message, at);
		if (err->category == SV_ERR_COVERAGE) {
			st->coverage++;
			if (!strstr(err->message, "is not in the registry"))
				fail_msg("'%s': coverage error '%s'", text,
					 err->message);
		} else if (err->category != SV_ERR_SUBMISSION) {
			fail_msg("'%s': category %s", text,
				 sv_errcat_name(err->category));
		}
		sv_error_destroy(err);
		return;
	}
	st->parsed++;
	assert_string_equal(sv_expr_text(e), text);
	sv_value_t row[NCOLS];
	for (int r = 0; r < 4; r++) {
		for (int c = 0; c < NCOLS; c++)
			row[c] = random_value(f->schema->fields[c].type,
					      f->schema->fields[c].nullable);
		sv_value_t v, w;
		sv_expr_eval(e, row, &f->arena, &v);
		check_result(e, &v, text);
		/* deterministic, and sv_expr_test agrees */
		sv_expr_eval(e, row, &f->arena, &w);
		assert_int_equal(v.type, w.type);
		bool t = sv_expr_test(e, row, &f->arena);
		assert_true(t == (v.type == SV_T_BOOL && v.v.b));
		st->evals++;
	}
	sv_arena_reset(&f->arena);
	sv_expr_destroy(e);
}

static void test_fuzz_grammar(void **state)
{
	fx_t *f = *state;
	fuzz_stats_t st = {0};
	sbuf_t b = {0};
	rng_state = 20240301;
	/* random grammar trees, and byte mutations of them */
	for (int k = 0; k < 8000; k++) {
		b.len = 0;
		sput(&b, "");
		gen(&b, 1 + (int)rndn(5));
		fuzz_one(f, b.p, &st);
		for (int m = 0; m < 2 && b.len; m++) {
			size_t at = rndn(b.len);
			switch (rndn(3)) {
			case 0: /* replace a byte */
				b.p[at] = (char)(1 + rndn(255));
				break;
			case 1: /* delete a byte */
				memmove(b.p + at, b.p + at + 1, b.len - at);
				b.len--;
				break;
			default: /* cut */
				b.p[at] = '\0';
				b.len = at;
				break;
			}
			fuzz_one(f, b.p, &st);
		}
	}
	free(b.p);
	print_message("fuzz: %zu parsed (%zu evaluations), %zu errors "
		      "(%zu coverage)\n",
		      st.parsed, st.evals, st.errors, st.coverage);
	/* the loop exercised both outcomes in quantity */
	assert_true(st.parsed > 3000);
	assert_true(st.errors > 5000);
	assert_true(st.coverage > 100);
}

/* What cast(x as string) printed with snprintf before the printf-free
 * paths (core/func.c format_value); the casts must print the same. */
static int ref_format(const sv_value_t *v, char *buf, size_t cap)
{
	switch (v->type) {
	case SV_T_BOOL:
		return snprintf(buf, cap, "%s", v->v.b ? "true" : "false");
	case SV_T_INT64:
		return snprintf(buf, cap, "%lld", (long long)v->v.i);
	case SV_T_FLOAT64: {
		double x = v->v.f;
		if (isnan(x))
			return snprintf(buf, cap, "NaN");
		if (isinf(x))
			return snprintf(buf, cap, "%s",
					x < 0 ? "-Infinity" : "Infinity");
		int len = 0;
		for (int prec = 15; prec <= 17; prec++) {
			len = snprintf(buf, cap, "%.*g", prec, x);
			if (strtod(buf, NULL) == x)
				break;
		}
		if (!strpbrk(buf, ".e") && (size_t)len + 2 < cap) {
			memcpy(buf + len, ".0", 3);
			len += 2;
		}
		return len;
	}
	case SV_T_TIMESTAMP: {
		int64_t ms = v->v.i, days = ms / 86400000, rem = ms % 86400000;
		if (rem < 0)
			rem += 86400000, days--;
		int64_t y;
		int m, d;
		sv_civil_from_days(days, &y, &m, &d);
		return snprintf(buf, cap,
				"%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ",
				(long long)y, m, d, (int)(rem / 3600000),
				(int)(rem / 60000 % 60), (int)(rem / 1000 % 60),
				(int)(rem % 1000));
	}
	default:
		return 0;
	}
}

static void cast_same(fx_t *f, const sv_expr_t *e, int col, sv_value_t x)
{
	char want[128];
	f->row[col] = x;
	int n = ref_format(&x, want, sizeof(want));
	sv_value_t v;
	sv_expr_eval(e, f->row, &f->arena, &v);
	if (v.type != SV_T_STRING || v.len != (uint32_t)n ||
	    memcmp(v.v.s, want, (size_t)n))
		fail_msg("cast of %s gave '%.*s', printf gives '%s'",
			 show(f, &x), (int)v.len, v.v.s ? v.v.s : "", want);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* cast(x as string) prints what printf printed, over edges and random
 * values of every castable type. */
static void test_cast_to_string_as_printf(void **state)
{
	fx_t *f = *state;
	sv_expr_t *ei, *ef, *et, *eb;
	assert_null(sv_expr_parse("cast(i as string)", f->schema, &ei));
	assert_null(sv_expr_parse("cast(f as string)", f->schema, &ef));
	assert_null(sv_expr_parse("cast(t as string)", f->schema, &et));
	assert_null(sv_expr_parse("cast(b as string)", f->schema, &eb));
	cast_same(f, eb, C_B, sv_bool(true));
	cast_same(f, eb, C_B, sv_bool(false));
	static const int64_t ints[] = {
		0,   1,    -1,       9,         10,        -10,          99,
		100, -100, 12345678, INT64_MAX, INT64_MIN, INT64_MIN + 1};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		cast_same(f, ei, C_I, sv_int(ints[i]));
		cast_same(f, et, C_T, sv_ts(ints[i] / 1000 * 1000));
	}
	static const double floats[] = {
		0.0,       -0.0,      0.5,
		-0.5,      0.1,       0.0001,
		-0.0001,   0.00011,   0.00009,
		1e-5,      123456.5,  999999999.5,
		1e9 + .5,  1e15 - 1,  1e15,
		1e15 + 1,  -1e15,     1e16,
		1e21,      2.5e-300,  1.0,
		-3.0,      1.0 / 3.0, 0.1 + 0.2,
		12.345678, 1e300,     NAN,
		INFINITY,  -INFINITY, 9007199254740993.0};
	for (size_t i = 0; i < sizeof(floats) / sizeof(floats[0]); i++)
		cast_same(f, ef, C_F, sv_float(floats[i]));
	/* timestamps around the epoch, far past and future, year 10000 */
	static const int64_t ts[] = {0,
				     -1,
				     1,
				     999,
				     -86400000,
				     TS_0301,
				     253402300799999LL, /* 9999-12-31 */
				     253402300800000LL, /* 10000-01-01 */
				     -62135596800000LL, /* 0001-01-01 */
				     -62167219200001LL}; /* year -1 */
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		cast_same(f, et, C_T, sv_ts(ts[i]));
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	for (int i = 0; i < 20000; i++) {
		uint64_t r = xorshift(&s);
		cast_same(f, ei, C_I, sv_int((int64_t)r >> (r % 60)));
		cast_same(f, et, C_T,
			  sv_ts((int64_t)(r % 400000000000000ULL) -
				100000000000000LL));
		/* decimals with 0..8 places, below and above 1e9 */
		int k = (int)(r % 9);
		double x = (double)((int64_t)(xorshift(&s) % 2000000000000ULL) -
				    1000000000000LL) /
			pow(10, k);
		cast_same(f, ef, C_F, sv_float(x));
		/* any bit pattern */
		double y;
		uint64_t bits = xorshift(&s);
		memcpy(&y, &bits, sizeof(y));
		cast_same(f, ef, C_F, sv_float(y));
	}
	sv_expr_destroy(ei);
	sv_expr_destroy(ef);
	sv_expr_destroy(et);
	sv_expr_destroy(eb);
	default_row(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_in_mixed_types),
		T(test_empty_strings_without_bytes),
		T(test_round_int_far_left),
		T(test_fuzz_grammar),
		T(test_cast_to_string_as_printf),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
