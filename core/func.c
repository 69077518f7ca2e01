/* func.c — the function registry of the expression language, and casts.
 *
 * One static table lists every function: name, arity, a type rule and an
 * eval function. The type rule runs once at parse time against the
 * argument types: it rejects bad arguments with a reason, asks the parser
 * to coerce arguments (int64 → float64, anything → string for concat) so
 * eval sees exactly the types it expects, and says whether the result can
 * be null. Eval functions run per row: no allocation except string results
 * into the caller's arena, and they return slices of their input where
 * they can (trim, substr, lower of an already lower-case string).
 *
 * Strings are UTF-8 bytes: length and substr count code points, lower and
 * upper change ASCII letters only. Semantics are documented in
 * docs/expressions.md; keep the two in step. */
#define _GNU_SOURCE
#include "core/codec.h"
#include "core/expr_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- type helpers ---- */

static bool is_numeric(sv_type_t t)
{
	return t == SV_T_INT64 || t == SV_T_FLOAT64;
}

bool sv_type_unify(sv_type_t a, sv_type_t b, sv_type_t *out)
{
	if (a == SV_T_NULL) {
		*out = b;
		return true;
	}
	if (b == SV_T_NULL || a == b) {
		*out = a;
		return true;
	}
	if (is_numeric(a) && is_numeric(b)) {
		*out = SV_T_FLOAT64;
		return true;
	}
	if ((a == SV_T_TIMESTAMP && b == SV_T_INT64) ||
	    (a == SV_T_INT64 && b == SV_T_TIMESTAMP)) {
		*out = SV_T_TIMESTAMP;
		return true;
	}
	return false;
}

static bool fail(sv_fcheck_t *fc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool fail(sv_fcheck_t *fc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fc->why, sizeof(fc->why), fmt, ap);
	va_end(ap);
	return false;
}

/* Argument i must be of type t (or the literal null). */
static bool want_type(const sv_func_t *fn, sv_fcheck_t *fc, int i, sv_type_t t)
{
	sv_type_t a = fc->arg[i];
	if (a == t || a == SV_T_NULL) {
		fc->want[i] = t;
		return true;
	}
	if (t == SV_T_FLOAT64 && a == SV_T_INT64) {
		fc->want[i] = SV_T_FLOAT64;
		return true;
	}
	return fail(fc, "argument %d of '%s' must be %s, got %s", i + 1,
		    fn->name, sv_type_name(t), sv_type_name(a));
}

static bool want_numeric(const sv_func_t *fn, sv_fcheck_t *fc, int i)
{
	sv_type_t a = fc->arg[i];
	if (is_numeric(a) || a == SV_T_NULL)
		return true;
	return fail(fc, "argument %d of '%s' must be numeric, got %s", i + 1,
		    fn->name, sv_type_name(a));
}

/* ---- UTF-8 and string helpers ---- */

static bool is_cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

static int64_t utf8_len(const char *s, uint32_t n)
{
	int64_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		k += !is_cont((unsigned char)s[i]);
	return k;
}

/* Byte offset of code point number cp (0-based), or n when past the end. */
static uint32_t utf8_skip(const char *s, uint32_t n, int64_t cp)
{
	uint32_t i = 0;
	while (i < n && cp > 0) {
		i++;
		while (i < n && is_cont((unsigned char)s[i]))
			i++;
		cp--;
	}
	return i;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
		c == '\v';
}

static char *str_alloc(sv_arena_t *arena, size_t n)
{
	return arena ? sv_arena_alloc(arena, n ? n : 1) : NULL;
}

/* ---- casts ---- */

static const int64_t days_before[] = {0,   31,  59,  90,  120, 151,
				      181, 212, 243, 273, 304, 334};

static int digits(const char *s, size_t n, size_t *i, int count, int *out)
{
	int v = 0;
	for (int k = 0; k < count; k++) {
		if (*i >= n || s[*i] < '0' || s[*i] > '9')
			return -1;
		v = v * 10 + (s[(*i)++] - '0');
	}
	*out = v;
	return 0;
}

static bool parse_int(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	if (i == n)
		return false;
	uint64_t v = 0;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return false;
		*out = (int64_t)(0 - v);
	} else {
		if (v > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)v;
	}
	return true;
}

bool sv_parse_timestamp(const char *s, size_t n, int64_t *ms)
{
	while (n && is_space(*s))
		s++, n--;
	while (n && is_space(s[n - 1]))
		n--;
	if (parse_int(s, n, ms))
		return true;
	size_t i = 0;
	int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
	if (digits(s, n, &i, 4, &y) || i >= n || s[i++] != '-' ||
	    digits(s, n, &i, 2, &mo) || i >= n || s[i++] != '-' ||
	    digits(s, n, &i, 2, &d))
		return false;
	if (mo < 1 || mo > 12 || d < 1)
		return false;
	int mdays = mo == 12 ? 31
			     : (int)(days_before[mo] - days_before[mo - 1]);
	if (mo == 2 && sv_is_leap_year(y))
		mdays = 29;
	if (d > mdays)
		return false;
	int64_t off_ms = 0;
	if (i < n && (s[i] == 'T' || s[i] == 't' || s[i] == ' ')) {
		i++;
		if (digits(s, n, &i, 2, &h) || i >= n || s[i++] != ':' ||
		    digits(s, n, &i, 2, &mi))
			return false;
		if (i < n && s[i] == ':') {
			i++;
			if (digits(s, n, &i, 2, &sec))
				return false;
			if (i < n && s[i] == '.') {
				i++;
				int nd = 0;
				while (i < n && s[i] >= '0' && s[i] <= '9') {
					if (nd < 3)
						frac = frac * 10 + (s[i] - '0');
					nd++, i++;
				}
				if (!nd)
					return false;
				for (; nd < 3; nd++)
					frac *= 10;
			}
		}
		if (h > 23 || mi > 59 || sec > 59)
			return false;
		if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
			i++;
		} else if (i < n && (s[i] == '+' || s[i] == '-')) {
			int sign = s[i++] == '-' ? -1 : 1, oh, om = 0;
			if (digits(s, n, &i, 2, &oh))
				return false;
			if (i < n && s[i] == ':')
				i++;
			if (i < n && digits(s, n, &i, 2, &om))
				return false;
			if (oh > 23 || om > 59)
				return false;
			off_ms = sign * ((int64_t)oh * 3600000 + om * 60000);
		}
	}
	if (i != n)
		return false;
	int64_t days = sv_days_from_civil(y, mo, d);
	*ms = days * 86400000 + (int64_t)h * 3600000 + (int64_t)mi * 60000 +
		(int64_t)sec * 1000 + frac - off_ms;
	return true;
}

static char *put2(char *p, int v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
	return p + 2;
}

/* Format v (not null, not a string) as text into buf (64 bytes); returns
 * the length. Per row on cast paths, so the common cases skip printf
 * (bench/README.md, bench_hot "cast"); each prints what printf would. */
static int format_value(const sv_value_t *v, char *buf, size_t cap)
{
	switch (v->type) {
	case SV_T_BOOL:
		memcpy(buf, v->v.b ? "true" : "false", v->v.b ? 4 : 5);
		return v->v.b ? 4 : 5;
	case SV_T_INT64:
		return (int)sv_fmt_i64(buf, v->v.i);
	case SV_T_FLOAT64: {
		double f = v->v.f;
		if (isnan(f))
			return snprintf(buf, cap, "NaN");
		if (isinf(f))
			return snprintf(buf, cap, "%s",
					f < 0 ? "-Infinity" : "Infinity");
		int len = (int)sv_fmt_f64_decimal(buf, f);
		if (len)
			return len;
		/* an integer below 1e15: %.15g prints every digit, no
		 * exponent; then ".0" (below) */
		if (f == trunc(f) && fabs(f) < 1e15 &&
		    !(f == 0 && signbit(f))) {
			len = (int)sv_fmt_i64(buf, (int64_t)f);
			memcpy(buf + len, ".0", 2);
			return len + 2;
		}
		/* shortest of 15..17 significant digits that reads back */
		for (int prec = 15; prec <= 17; prec++) {
			len = snprintf(buf, cap, "%.*g", prec, f);
			if (strtod(buf, NULL) == f)
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
		int h = (int)(rem / 3600000), mi = (int)(rem / 60000 % 60),
		    s = (int)(rem / 1000 % 60), frac = (int)(rem % 1000);
		if (y < 0 || y > 9999)
			return snprintf(buf, cap,
					"%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ",
					(long long)y, m, d, h, mi, s, frac);
		/* YYYY-MM-DDTHH:MM:SS.mmmZ */
		char *p = put2(buf, (int)(y / 100));
		p = put2(p, (int)(y % 100));
		*p++ = '-';
		p = put2(p, m);
		*p++ = '-';
		p = put2(p, d);
		*p++ = 'T';
		p = put2(p, h);
		*p++ = ':';
		p = put2(p, mi);
		*p++ = ':';
		p = put2(p, s);
		*p++ = '.';
		*p++ = (char)('0' + frac / 100);
		p = put2(p, frac % 100);
		*p++ = 'Z';
		return (int)(p - buf);
	}
	default:
		memcpy(buf, "null", 4);
		return 4;
	}
}

bool sv_cast_allowed(sv_type_t from, sv_type_t to)
{
	if (from == SV_T_NULL || from == to || to == SV_T_STRING ||
	    from == SV_T_STRING)
		return to != SV_T_NULL;
	if ((from == SV_T_BOOL && to == SV_T_TIMESTAMP) ||
	    (from == SV_T_TIMESTAMP && to == SV_T_BOOL))
		return false;
	return to != SV_T_NULL;
}

bool sv_cast_may_fail(sv_type_t from, sv_type_t to)
{
	if (from == to)
		return false;
	if (from == SV_T_STRING)
		return true;
	return from == SV_T_FLOAT64 &&
		(to == SV_T_INT64 || to == SV_T_TIMESTAMP);
}

static bool float_to_int(double f, int64_t *out)
{
	if (isnan(f))
		return false;
	f = trunc(f);
	/* -2^63 and 2^63 are exact doubles; [-2^63, 2^63) fits */
	if (f < -9223372036854775808.0 || f >= 9223372036854775808.0)
		return false;
	*out = (int64_t)f;
	return true;
}

void sv_cast_value(const sv_value_t *in, sv_type_t to, sv_arena_t *arena,
		   sv_value_t *out)
{
	sv_value_t v = *in, r = sv_null();
	if (v.type == SV_T_NULL || v.type == to) {
		*out = v;
		return;
	}
	if (to == SV_T_STRING) {
		char buf[64];
		int len = format_value(&v, buf, sizeof(buf));
		char *p = str_alloc(arena, (size_t)len);
		if (p) {
			memcpy(p, buf, (size_t)len);
			r = sv_str(p, (uint32_t)len);
		}
		*out = r;
		return;
	}
	if (v.type == SV_T_STRING) {
		const char *s = v.v.s;
		size_t n = v.len;
		while (n && is_space(*s))
			s++, n--;
		while (n && is_space(s[n - 1]))
			n--;
		int64_t i;
		switch (to) {
		case SV_T_BOOL:
			if ((n == 4 && !strncasecmp(s, "true", 4)) ||
			    (n == 1 && *s == '1'))
				r = sv_bool(true);
			else if ((n == 5 && !strncasecmp(s, "false", 5)) ||
				 (n == 1 && *s == '0'))
				r = sv_bool(false);
			break;
		case SV_T_INT64:
			if (parse_int(s, n, &i))
				r = sv_int(i);
			break;
		case SV_T_FLOAT64: {
			char buf[64];
			if (n && n < sizeof(buf)) {
				memcpy(buf, s, n);
				buf[n] = '\0';
				char *end;
				double f = strtod(buf, &end);
				if (end == buf + n)
					r = sv_float(f);
			}
			break;
		}
		case SV_T_TIMESTAMP:
			if (sv_parse_timestamp(s, n, &i))
				r = sv_ts(i);
			break;
		default:
			break;
		}
		*out = r;
		return;
	}
	/* numbers and bools */
	int64_t i;
	switch (to) {
	case SV_T_BOOL:
		r = sv_bool(v.type == SV_T_FLOAT64        ? v.v.f != 0
				    : v.type == SV_T_BOOL ? v.v.b
							  : v.v.i != 0);
		break;
	case SV_T_INT64:
	case SV_T_TIMESTAMP:
		if (v.type == SV_T_FLOAT64) {
			if (!float_to_int(v.v.f, &i))
				break;
		} else {
			i = v.type == SV_T_BOOL ? v.v.b : v.v.i;
		}
		r = to == SV_T_INT64 ? sv_int(i) : sv_ts(i);
		break;
	case SV_T_FLOAT64:
		r = sv_float(v.type == SV_T_BOOL ? (double)v.v.b
						 : (double)v.v.i);
		break;
	default:
		break;
	}
	*out = r;
}

/* ---- type rules ---- */

static bool chk_str_to(const sv_func_t *fn, sv_fcheck_t *fc, sv_type_t ret)
{
	for (int i = 0; i < fc->nargs; i++)
		if (!want_type(fn, fc, i, SV_T_STRING))
			return false;
	fc->ret = ret;
	return true;
}

static bool chk_str_str(const sv_func_t *fn, sv_fcheck_t *fc)
{
	return chk_str_to(fn, fc, SV_T_STRING);
}

static bool chk_str_int(const sv_func_t *fn, sv_fcheck_t *fc)
{
	return chk_str_to(fn, fc, SV_T_INT64);
}

static bool chk_str_bool(const sv_func_t *fn, sv_fcheck_t *fc)
{
	return chk_str_to(fn, fc, SV_T_BOOL);
}

static bool chk_substr(const sv_func_t *fn, sv_fcheck_t *fc)
{
	if (!want_type(fn, fc, 0, SV_T_STRING))
		return false;
	for (int i = 1; i < fc->nargs; i++)
		if (!want_type(fn, fc, i, SV_T_INT64))
			return false;
	fc->ret = SV_T_STRING;
	if (fc->nargs == 3)
		fc->ret_nullable = true; /* negative length */
	return true;
}

static bool chk_concat(const sv_func_t *fn, sv_fcheck_t *fc)
{
	/* any type; non-strings are cast to their text form */
	for (int i = 0; i < fc->nargs; i++)
		fc->want[i] = SV_T_STRING;
	fc->ret = SV_T_STRING;
	return true;
}

/* abs, floor, ceil: int64 → int64, float64 → float64 */
static bool chk_num_same(const sv_func_t *fn, sv_fcheck_t *fc)
{
	if (!want_numeric(fn, fc, 0))
		return false;
	fc->ret = fc->arg[0] == SV_T_NULL ? SV_T_INT64 : fc->arg[0];
	fc->want[0] = fc->ret;
	if (fc->ret == SV_T_INT64 && !strcmp(fn->name, "abs"))
		fc->ret_nullable = true; /* abs(-2^63) */
	return true;
}

static bool chk_round(const sv_func_t *fn, sv_fcheck_t *fc)
{
	if (!chk_num_same(fn, fc))
		return false;
	if (fc->nargs == 2) {
		if (!want_type(fn, fc, 1, SV_T_INT64))
			return false;
		if (fc->ret == SV_T_INT64)
			fc->ret_nullable = true; /* overflow */
	}
	return true;
}

static bool chk_sqrt(const sv_func_t *fn, sv_fcheck_t *fc)
{
	if (!want_type(fn, fc, 0, SV_T_FLOAT64))
		return false;
	fc->ret = SV_T_FLOAT64;
	fc->ret_nullable = true; /* negative argument */
	return true;
}

/* All arguments from first on unify into one type. */
static bool unify_args(const sv_func_t *fn, sv_fcheck_t *fc, int first,
		       sv_type_t *out)
{
	sv_type_t t = SV_T_NULL;
	for (int i = first; i < fc->nargs; i++) {
		sv_type_t u;
		if (!sv_type_unify(t, fc->arg[i], &u))
			return fail(fc,
				    "arguments of '%s' must have one type, "
				    "got %s and %s",
				    fn->name, sv_type_name(t),
				    sv_type_name(fc->arg[i]));
		t = u;
	}
	for (int i = first; i < fc->nargs; i++)
		fc->want[i] = t;
	*out = t;
	return true;
}

static bool chk_coalesce(const sv_func_t *fn, sv_fcheck_t *fc)
{
	if (!unify_args(fn, fc, 0, &fc->ret))
		return false;
	fc->ret_nullable = true;
	for (int i = 0; i < fc->nargs; i++)
		if (fc->arg[i] != SV_T_NULL && !fc->nullable[i])
			fc->ret_nullable = false;
	return true;
}

static bool chk_nullif(const sv_func_t *fn, sv_fcheck_t *fc)
{
	if (!unify_args(fn, fc, 0, &fc->ret))
		return false;
	fc->ret_nullable = true;
	return true;
}

static bool chk_if(const sv_func_t *fn, sv_fcheck_t *fc)
{
	if (!want_type(fn, fc, 0, SV_T_BOOL))
		return false;
	if (!unify_args(fn, fc, 1, &fc->ret))
		return false;
	fc->ret_nullable = fc->nullable[1] || fc->nullable[2] ||
		fc->arg[1] == SV_T_NULL || fc->arg[2] == SV_T_NULL;
	return true;
}

static bool chk_replace(const sv_func_t *fn, sv_fcheck_t *fc)
{
	return chk_str_to(fn, fc, SV_T_STRING);
}

/* ---- eval functions (strict ones never see a null argument) ---- */

static void fn_lower_upper(const sv_value_t *a, sv_arena_t *arena,
			   sv_value_t *out, bool upper)
{
	const char *s = a->v.s;
	uint32_t n = a->len, i = 0;
	char lo = upper ? 'a' : 'A', hi = upper ? 'z' : 'Z';
	while (i < n && !(s[i] >= lo && s[i] <= hi))
		i++;
	if (i == n) { /* nothing to change: keep pointing at the input */
		*out = *a;
		return;
	}
	char *p = str_alloc(arena, n);
	if (!p) {
		*out = sv_null();
		return;
	}
	memcpy(p, s, i);
	for (; i < n; i++) {
		char c = s[i];
		p[i] = (c >= lo && c <= hi) ? (char)(c ^ 0x20) : c;
	}
	*out = sv_str(p, n);
}

static void fn_lower(const sv_value_t *a, int n, sv_arena_t *arena,
		     sv_value_t *out)
{
	fn_lower_upper(&a[0], arena, out, false);
}

static void fn_upper(const sv_value_t *a, int n, sv_arena_t *arena,
		     sv_value_t *out)
{
	fn_lower_upper(&a[0], arena, out, true);
}

static void fn_length(const sv_value_t *a, int n, sv_arena_t *arena,
		      sv_value_t *out)
{
	*out = sv_int(utf8_len(a[0].v.s, a[0].len));
}

static void fn_substr(const sv_value_t *a, int n, sv_arena_t *arena,
		      sv_value_t *out)
{
	/* SQL: the code points at positions [start, start + len) that exist */
	const char *s = a[0].v.s;
	uint32_t slen = a[0].len;
	int64_t from = a[1].v.i, to = INT64_MAX; /* 1-based, exclusive end */
	if (n == 3) {
		if (a[2].v.i < 0) {
			*out = sv_null();
			return;
		}
		if (__builtin_add_overflow(from, a[2].v.i, &to))
			to = INT64_MAX;
	}
	if (from < 1)
		from = 1;
	if (to <= from) {
		*out = sv_str(s, 0);
		return;
	}
	uint32_t b0 = utf8_skip(s, slen, from - 1);
	uint32_t b1 = to == INT64_MAX
		? slen
		: b0 + utf8_skip(s + b0, slen - b0, to - from);
	*out = sv_str(s + b0, b1 - b0);
}

static void fn_concat(const sv_value_t *a, int n, sv_arena_t *arena,
		      sv_value_t *out)
{
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += a[i].len;
	if (n == 1) {
		*out = a[0];
		return;
	}
	char *p = total <= UINT32_MAX ? str_alloc(arena, (size_t)total) : NULL;
	if (!p) {
		*out = sv_null();
		return;
	}
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		if (a[i].len)
			memcpy(p + off, a[i].v.s, a[i].len);
		off += a[i].len;
	}
	*out = sv_str(p, (uint32_t)total);
}

static void trim_impl(const sv_value_t *a, sv_value_t *out, bool left,
		      bool right)
{
	const char *s = a->v.s;
	uint32_t n = a->len;
	while (left && n && is_space(*s))
		s++, n--;
	while (right && n && is_space(s[n - 1]))
		n--;
	*out = sv_str(s, n);
}

static void fn_trim(const sv_value_t *a, int n, sv_arena_t *arena,
		    sv_value_t *out)
{
	trim_impl(&a[0], out, true, true);
}

static void fn_ltrim(const sv_value_t *a, int n, sv_arena_t *arena,
		     sv_value_t *out)
{
	trim_impl(&a[0], out, true, false);
}

static void fn_rtrim(const sv_value_t *a, int n, sv_arena_t *arena,
		     sv_value_t *out)
{
	trim_impl(&a[0], out, false, true);
}

/* An empty string may have no bytes at all (s == NULL): the C library's
 * memcmp/memmem/memcpy must not see that pointer, even with a zero length
 * (they are declared nonnull; UBSan stops on it). */
static bool bytes_eq(const char *x, const char *y, size_t n)
{
	return !n || !memcmp(x, y, n);
}

static const char *find_bytes(const char *s, size_t n, const char *f, size_t fl)
{
	return n >= fl && fl ? memmem(s, n, f, fl) : NULL;
}

static void fn_starts_with(const sv_value_t *a, int n, sv_arena_t *arena,
			   sv_value_t *out)
{
	*out = sv_bool(a[1].len <= a[0].len &&
		       bytes_eq(a[0].v.s, a[1].v.s, a[1].len));
}

static void fn_ends_with(const sv_value_t *a, int n, sv_arena_t *arena,
			 sv_value_t *out)
{
	*out = sv_bool(
		a[1].len <= a[0].len &&
		(!a[1].len ||
		 !memcmp(a[0].v.s + a[0].len - a[1].len, a[1].v.s, a[1].len)));
}

static void fn_contains(const sv_value_t *a, int n, sv_arena_t *arena,
			sv_value_t *out)
{
	*out = sv_bool(!a[1].len ||
		       find_bytes(a[0].v.s, a[0].len, a[1].v.s, a[1].len));
}

static void fn_replace(const sv_value_t *a, int n, sv_arena_t *arena,
		       sv_value_t *out)
{
	const char *s = a[0].v.s, *f = a[1].v.s, *t = a[2].v.s;
	size_t sl = a[0].len, fl = a[1].len, tl = a[2].len, count = 0;
	if (!fl) {
		*out = a[0];
		return;
	}
	for (const char *p = s;
	     (p = find_bytes(p, sl - (size_t)(p - s), f, fl)); p += fl)
		count++;
	if (!count) {
		*out = a[0];
		return;
	}
	uint64_t total = sl - count * fl + count * tl;
	char *d = total <= UINT32_MAX ? str_alloc(arena, (size_t)total) : NULL;
	if (!d) {
		*out = sv_null();
		return;
	}
	size_t w = 0;
	const char *p = s, *q;
	while ((q = find_bytes(p, sl - (size_t)(p - s), f, fl))) {
		memcpy(d + w, p, (size_t)(q - p));
		w += (size_t)(q - p);
		if (tl)
			memcpy(d + w, t, tl);
		w += tl;
		p = q + fl;
	}
	if (sl - (size_t)(p - s))
		memcpy(d + w, p, sl - (size_t)(p - s));
	*out = sv_str(d, (uint32_t)total);
}

static void fn_abs(const sv_value_t *a, int n, sv_arena_t *arena,
		   sv_value_t *out)
{
	if (a[0].type == SV_T_FLOAT64)
		*out = sv_float(fabs(a[0].v.f));
	else if (a[0].v.i == INT64_MIN)
		*out = sv_null();
	else
		*out = sv_int(a[0].v.i < 0 ? -a[0].v.i : a[0].v.i);
}

static void fn_round(const sv_value_t *a, int n, sv_arena_t *arena,
		     sv_value_t *out)
{
	int64_t d = n == 2 ? a[1].v.i : 0;
	if (a[0].type == SV_T_FLOAT64) {
		double x = a[0].v.f;
		if (d == 0) {
			*out = sv_float(round(x));
		} else if (d > 308 || d < -308) {
			*out = sv_float(d > 0 ? x : 0.0 * x);
		} else if (d > 0) {
			double p = pow(10.0, (double)d), y = x * p;
			*out = sv_float(isfinite(y) ? round(y) / p : x);
		} else {
			/* divide by 10^-d (exact up to 10^22) rather than
			 * multiply by the inexact 10^d: round(1e300, -300) is
			 * 1e300, not 9.999999999999999e+299 */
			double p = pow(10.0, (double)-d);
			*out = sv_float(round(x / p) * p);
		}
		return;
	}
	int64_t x = a[0].v.i;
	if (d >= 0) {
		*out = sv_int(x);
		return;
	}
	if (d < -18) {
		/* 10^-d > INT64_MAX. At d = -19, |x| >= 5 * 10^18 rounds to
		 * +-10^19, past int64: null. From d = -20 on, half a unit is
		 * 5 * 10^19 > |x|: every x rounds to 0. */
		*out = d == -19 &&
				(x >= 5000000000000000000 ||
				 x <= -5000000000000000000)
			? sv_null()
			: sv_int(0);
		return;
	}
	int64_t p = 1;
	for (int64_t k = 0; k < -d; k++)
		p *= 10;
	int64_t q = x / p, rem = x % p, r;
	/* half away from zero */
	if (rem >= p - rem)
		q++;
	else if (rem < 0 && -rem >= p + rem)
		q--;
	if (__builtin_mul_overflow(q, p, &r))
		*out = sv_null();
	else
		*out = sv_int(r);
}

static void fn_floor(const sv_value_t *a, int n, sv_arena_t *arena,
		     sv_value_t *out)
{
	*out = a[0].type == SV_T_FLOAT64 ? sv_float(floor(a[0].v.f)) : a[0];
}

static void fn_ceil(const sv_value_t *a, int n, sv_arena_t *arena,
		    sv_value_t *out)
{
	*out = a[0].type == SV_T_FLOAT64 ? sv_float(ceil(a[0].v.f)) : a[0];
}

static void fn_sqrt(const sv_value_t *a, int n, sv_arena_t *arena,
		    sv_value_t *out)
{
	*out = a[0].v.f < 0 ? sv_null() : sv_float(sqrt(a[0].v.f));
}

static void fn_coalesce(const sv_value_t *a, int n, sv_arena_t *arena,
			sv_value_t *out)
{
	for (int i = 0; i < n; i++) {
		if (a[i].type != SV_T_NULL) {
			*out = a[i];
			return;
		}
	}
	*out = sv_null();
}

static void fn_nullif(const sv_value_t *a, int n, sv_arena_t *arena,
		      sv_value_t *out)
{
	bool eq = a[0].type == SV_T_STRING && a[1].type == SV_T_STRING
		? a[0].len == a[1].len && bytes_eq(a[0].v.s, a[1].v.s, a[0].len)
		: sv_value_equal(&a[0], &a[1]);
	if (a[0].type != SV_T_NULL && a[1].type != SV_T_NULL && eq)
		*out = sv_null();
	else
		*out = a[0];
}

static void fn_if(const sv_value_t *a, int n, sv_arena_t *arena,
		  sv_value_t *out)
{
	*out = (a[0].type == SV_T_BOOL && a[0].v.b) ? a[1] : a[2];
}

/* ---- the registry ---- */

#define V SV_FUNC_VARIADIC
#define S SV_FN_STRICT

const sv_func_t sv_funcs[] = {
	{"abs", 1, 1, S, chk_num_same, fn_abs},
	{"cast", 1, 1, SV_FN_SPECIAL, NULL, NULL},
	{"ceil", 1, 1, S, chk_num_same, fn_ceil},
	{"coalesce", 1, V, 0, chk_coalesce, fn_coalesce},
	{"concat", 1, V, S, chk_concat, fn_concat},
	{"contains", 2, 2, S, chk_str_bool, fn_contains},
	{"ends_with", 2, 2, S, chk_str_bool, fn_ends_with},
	{"floor", 1, 1, S, chk_num_same, fn_floor},
	{"if", 3, 3, 0, chk_if, fn_if},
	{"length", 1, 1, S, chk_str_int, fn_length},
	{"lower", 1, 1, S, chk_str_str, fn_lower},
	{"ltrim", 1, 1, S, chk_str_str, fn_ltrim},
	{"nullif", 2, 2, 0, chk_nullif, fn_nullif},
	{"replace", 3, 3, S, chk_replace, fn_replace},
	{"round", 1, 2, S, chk_round, fn_round},
	{"rtrim", 1, 1, S, chk_str_str, fn_rtrim},
	{"sqrt", 1, 1, S, chk_sqrt, fn_sqrt},
	{"starts_with", 2, 2, S, chk_str_bool, fn_starts_with},
	{"substr", 2, 3, S, chk_substr, fn_substr},
	{"trim", 1, 1, S, chk_str_str, fn_trim},
	{"upper", 1, 1, S, chk_str_str, fn_upper},
};

#undef V
#undef S

const size_t sv_nfuncs = SV_ARRAY_LEN(sv_funcs);

int sv_func_find(const char *name, size_t len)
{
	for (size_t i = 0; i < sv_nfuncs; i++)
		if (strlen(sv_funcs[i].name) == len &&
		    !strncasecmp(sv_funcs[i].name, name, len))
			return (int)i;
	return -1;
}

size_t sv_func_count(void)
{
	return sv_nfuncs;
}

const char *sv_func_name(size_t i)
{
	return i < sv_nfuncs ? sv_funcs[i].name : NULL;
}

bool sv_func_exists(const char *name)
{
	return name && sv_func_find(name, strlen(name)) >= 0;
}
