/* test_codec.c — record formats (core/codec.h): the strict JSON decoder,
 * the CSV decoder and the JSON encoder.
 *
 * Every decode goes through an exact-size heap copy of the input (no NUL
 * after it), so an ASan build catches any read past the payload. The fuzz
 * test mutates seed records 100k times with a fixed seed: every input must
 * decode or be rejected with a reason, never crash; and the validating
 * decoder (empty schema) must agree with jansson on what is valid JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "tests/unit/codec_ref.h"

/* The fixture: a schema like our Kafka records, a JSON and a CSV decoder
 * and a batch, all owned by the test state and freed in teardown. */
typedef struct fx {
	sv_schema_t *schema;
	sv_decoder_t *json;
	sv_decoder_t *csv;
	sv_batch_t b;
	char reason[256];
} fx_t;

enum {
	F_ID,
	F_REGION,
	F_AMOUNT,
	F_STATUS,
	F_TS,
	F_OK,
	F_URL,
	F_NF
};

static int setup(void **state)
{
	fx_t *fx = calloc(1, sizeof(*fx));
	fx->schema = sv_schema_new();
	sv_schema_add(fx->schema, "id", SV_T_INT64, false);
	sv_schema_add(fx->schema, "region", SV_T_STRING, true);
	sv_schema_add(fx->schema, "amount", SV_T_FLOAT64, true);
	sv_schema_add(fx->schema, "status", SV_T_STRING, true);
	sv_schema_add(fx->schema, "ts", SV_T_TIMESTAMP, true);
	sv_schema_add(fx->schema, "ok", SV_T_BOOL, true);
	sv_schema_add(fx->schema, "url", SV_T_STRING, true);
	fx->json = sv_decoder_new(SV_FMT_JSON, fx->schema);
	fx->csv = sv_decoder_new(SV_FMT_CSV, fx->schema);
	sv_batch_init(&fx->b, fx->schema);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fx_t *fx = *state;
	sv_batch_release(&fx->b);
	sv_decoder_destroy(fx->json);
	sv_decoder_destroy(fx->csv);
	sv_schema_destroy(fx->schema);
	free(fx);
	return 0;
}

/* Decode an exact-size copy of s[0..n); returns rc and checks the batch
 * bookkeeping for both outcomes. */
static int decode_n(fx_t *fx, sv_decoder_t *dec, const char *s, size_t n)
{
	char *copy = malloc(n ? n : 1);
	memcpy(copy, s, n);
	size_t before = fx->b.nrows;
	sv_rowmeta_t *meta = NULL;
	fx->reason[0] = '\0';
	int rc = sv_decoder_decode(dec, copy, n, &fx->b, &meta, fx->reason,
				   sizeof(fx->reason));
	/* scribble over the input: decoded strings must not point into it */
	memset(copy, '#', n);
	free(copy);
	if (rc == 0) {
		assert_int_equal(fx->b.nrows, before + 1);
		assert_non_null(meta);
		assert_ptr_equal(meta, &fx->b.meta[fx->b.nrows - 1]);
	} else {
		assert_int_equal(rc, -1);
		assert_int_equal(fx->b.nrows, before);
		assert_true(fx->reason[0] != '\0');
	}
	return rc;
}

static const sv_value_t *ok_json(fx_t *fx, const char *s)
{
	int rc = decode_n(fx, fx->json, s, strlen(s));
	if (rc)
		fail_msg("rejected %s: %s", s, fx->reason);
	return sv_batch_row(&fx->b, fx->b.nrows - 1);
}

static void bad_json(fx_t *fx, const char *s, const char *want)
{
	int rc = decode_n(fx, fx->json, s, strlen(s));
	if (rc == 0)
		fail_msg("accepted %s", s);
	if (want && !strstr(fx->reason, want))
		fail_msg("input %s: reason '%s' lacks '%s'", s, fx->reason,
			 want);
}

static const sv_value_t *ok_csv(fx_t *fx, const char *s)
{
	int rc = decode_n(fx, fx->csv, s, strlen(s));
	if (rc)
		fail_msg("rejected csv %s: %s", s, fx->reason);
	return sv_batch_row(&fx->b, fx->b.nrows - 1);
}

static void bad_csv(fx_t *fx, const char *s, const char *want)
{
	int rc = decode_n(fx, fx->csv, s, strlen(s));
	if (rc == 0)
		fail_msg("accepted csv %s", s);
	if (want && !strstr(fx->reason, want))
		fail_msg("csv %s: reason '%s' lacks '%s'", s, fx->reason, want);
}

static void assert_str(const sv_value_t *v, const char *want, size_t n)
{
	assert_int_equal(v->type, SV_T_STRING);
	assert_int_equal(v->len, n);
	assert_memory_equal(v->v.s, want, n);
}

static void assert_f64_bits(double got, double want)
{
	uint64_t a, b;
	memcpy(&a, &got, 8);
	memcpy(&b, &want, 8);
	if (a != b)
		fail_msg("float %.17g (%016llx) != %.17g (%016llx)", got,
			 (unsigned long long)a, want, (unsigned long long)b);
}

/* ---- format names ---- */

static void test_format_names(void **state)
{
	(void)state;
	sv_format_t f;
	assert_true(sv_format_parse("json", &f));
	assert_int_equal(f, SV_FMT_JSON);
	assert_true(sv_format_parse("csv", &f));
	assert_int_equal(f, SV_FMT_CSV);
	assert_false(sv_format_parse("JSON", &f));
	assert_false(sv_format_parse("avro", &f));
	assert_string_equal(sv_format_name(SV_FMT_JSON), "json");
	assert_string_equal(sv_format_name(SV_FMT_CSV), "csv");
}

/* ---- JSON: types ---- */

static void test_json_all_types(void **state)
{
	fx_t *fx = *state;
	const sv_value_t *r = ok_json(
		fx,
		"{\"id\":123,\"region\":\"EU-West\",\"amount\":12.5,"
		"\"status\":\"completed\",\"ts\":1700000000000,\"ok\":true,"
		"\"url\":\"http://example.com/a?b=c\"}");
	assert_int_equal(r[F_ID].type, SV_T_INT64);
	assert_int_equal(r[F_ID].v.i, 123);
	assert_str(&r[F_REGION], "EU-West", 7);
	assert_int_equal(r[F_AMOUNT].type, SV_T_FLOAT64);
	assert_f64_bits(r[F_AMOUNT].v.f, 12.5);
	assert_str(&r[F_STATUS], "completed", 9);
	assert_int_equal(r[F_TS].type, SV_T_TIMESTAMP);
	assert_int_equal(r[F_TS].v.i, 1700000000000LL);
	assert_int_equal(r[F_OK].type, SV_T_BOOL);
	assert_true(r[F_OK].v.b);
	assert_str(&r[F_URL], "http://example.com/a?b=c", 24);

	/* keys in any order, whitespace everywhere it is allowed */
	r = ok_json(fx,
		    " \t\r\n{ \"ok\" : false ,\n\"amount\":-3 , \"id\" :"
		    " -9223372036854775808 }\n ");
	assert_false(r[F_OK].v.b);
	assert_int_equal(r[F_OK].type, SV_T_BOOL);
	assert_int_equal(r[F_AMOUNT].type, SV_T_FLOAT64); /* int → float64 */
	assert_f64_bits(r[F_AMOUNT].v.f, -3.0);
	assert_int_equal(r[F_ID].v.i, INT64_MIN);
	assert_int_equal(r[F_REGION].type, SV_T_NULL);

	r = ok_json(fx, "{\"id\":9223372036854775807,\"region\":\"\"}");
	assert_int_equal(r[F_ID].v.i, INT64_MAX);
	assert_str(&r[F_REGION], "", 0);
}

static void test_json_floats(void **state)
{
	fx_t *fx = *state;
	static const char *const cases[] = {
		"0",
		"-0",
		"0.0",
		"1e3",
		"1E+3",
		"1e-3",
		"12.5",
		"-0.000001",
		"3.141592653589793",
		"0.1",
		"0.30000000000000004",
		"1.7976931348623157e308",
		"4.9e-324",
		"2.2250738585072014e-308",
		"123456789012345678901234567890",
		"9007199254740993",
		"1.00000000000000011102230246251565404236316680908203125",
		"0.000000000000000000000000000001",
		"1e-400",
		"-1e-400",
		"12345.678901234567890123",
		"1e22",
		"1e23",
		"9.999999999999999e22",
		"0e999",
		"100000000000000000000000e-5",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[160];
		snprintf(buf, sizeof(buf), "{\"id\":1,\"amount\":%s}",
			 cases[i]);
		const sv_value_t *r = ok_json(fx, buf);
		assert_int_equal(r[F_AMOUNT].type, SV_T_FLOAT64);
		assert_f64_bits(r[F_AMOUNT].v.f, strtod(cases[i], NULL));
	}
	bad_json(fx, "{\"id\":1,\"amount\":1e400}",
		 "field 'amount': number out of float64 range");
	bad_json(fx, "{\"id\":1,\"amount\":-1e309}", "out of float64 range");

	/* the Clinger fast path agrees with strtod on many random values */
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		char num[64], buf[128];
		int e = (int)(x % 61) - 30;
		snprintf(num, sizeof(num), "%s%llu.%llue%d", (x & 1) ? "-" : "",
			 (unsigned long long)(x >> 45),
			 (unsigned long long)((x >> 20) % 100000), e);
		snprintf(buf, sizeof(buf), "{\"id\":1,\"amount\":%s}", num);
		const sv_value_t *r = ok_json(fx, buf);
		assert_f64_bits(r[F_AMOUNT].v.f, strtod(num, NULL));
		sv_batch_reset(&fx->b);
	}
}

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void test_json_int64(void **state)
{
	fx_t *fx = *state;
	const sv_value_t *r = ok_json(fx, "{\"id\":0}");
	assert_int_equal(r[F_ID].v.i, 0);
	r = ok_json(fx, "{\"id\":-0}");
	assert_int_equal(r[F_ID].v.i, 0);
	r = ok_json(fx, "{\"id\":1000000000000000000}");
	assert_int_equal(r[F_ID].v.i, 1000000000000000000LL);
	bad_json(fx, "{\"id\":9223372036854775808}",
		 "field 'id': integer out of int64 range");
	bad_json(fx, "{\"id\":-9223372036854775809}", "out of int64 range");
	bad_json(fx, "{\"id\":18446744073709551616}", "out of int64 range");
	bad_json(fx, "{\"id\":123456789012345678901234}", "out of int64 range");
	/* strict: a float literal is not an int64, even with zero fraction */
	bad_json(fx, "{\"id\":1.0}", "field 'id': expected int64, got float");
	bad_json(fx, "{\"id\":1e3}", "field 'id': expected int64, got float");
	bad_json(fx, "{\"id\":1,\"ts\":1.5}",
		 "field 'ts': expected timestamp_ms, got float");

	/* integers of 1..20 digits, +-, followed by every kind of byte, with
	 * and without room after them for the 8-byte digit loads: the value
	 * is strtoll's, or the old reasons */
	static const char *const after[] = {"}",   ",\"ok\":true}", " }",
					    ".5}", "e3}",           "E3}",
					    "x}",  "\x80}",         "/}"};
	uint64_t st = 99;
	char num[32], buf[96];
	for (int len = 1; len <= 20; len++)
		for (int k = 0; k < 40; k++) {
			int t = 0;
			if (k % 2)
				num[t++] = '-';
			for (int i = 0; i < len; i++)
				num[t++] =
					(char)('0' +
					       (i == 0 ? 1 + rng_next(&st) % 9
						       : rng_next(&st) % 10));
			num[t] = 0;
			const char *a =
				after[(size_t)k %
				      (sizeof(after) / sizeof(after[0]))];
			snprintf(buf, sizeof(buf), "{\"id\":%s%s", num, a);
			errno = 0;
			long long want = strtoll(num, NULL, 10);
			bool range = errno != ERANGE;
			if (a[0] == '.' || a[0] == 'e' || a[0] == 'E') {
				bad_json(fx, buf,
					 "field 'id': expected int64, got "
					 "float");
			} else if (!range) {
				bad_json(fx, buf,
					 "field 'id': integer out of int64 "
					 "range");
			} else if (a[0] == 'x' || a[0] == '/' ||
				   (unsigned char)a[0] == 0x80) {
				bad_json(fx, buf, "malformed JSON at byte");
			} else {
				r = ok_json(fx, buf);
				assert_int_equal(r[F_ID].v.i, want);
			}
		}
}

static void test_json_wrong_types(void **state)
{
	fx_t *fx = *state;
	bad_json(fx, "{\"id\":1,\"amount\":\"12.5\"}",
		 "field 'amount': expected float64, got string");
	bad_json(fx, "{\"id\":\"1\"}",
		 "field 'id': expected int64, got string");
	bad_json(fx, "{\"id\":1,\"region\":5}",
		 "field 'region': expected string, got integer");
	bad_json(fx, "{\"id\":1,\"region\":5.5}",
		 "field 'region': expected string, got float");
	bad_json(fx, "{\"id\":1,\"region\":true}",
		 "field 'region': expected string, got bool");
	bad_json(fx, "{\"id\":1,\"ok\":1}",
		 "field 'ok': expected bool, got integer");
	bad_json(fx, "{\"id\":1,\"ok\":\"true\"}",
		 "field 'ok': expected bool, got string");
	bad_json(fx, "{\"id\":1,\"amount\":{}}",
		 "field 'amount': expected float64, got object");
	bad_json(fx, "{\"id\":1,\"url\":[\"a\"]}",
		 "field 'url': expected string, got array");
	bad_json(fx, "{\"id\":true}", "field 'id': expected int64, got bool");
	bad_json(fx, "{\"id\":1,\"ts\":false}",
		 "field 'ts': expected timestamp_ms, got bool");
}

/* ---- JSON: the null rule ---- */

static void test_json_nulls(void **state)
{
	fx_t *fx = *state;
	const sv_value_t *r = ok_json(fx, "{\"id\":7}");
	for (int i = F_REGION; i < F_NF; i++)
		assert_int_equal(r[i].type, SV_T_NULL);
	r = ok_json(fx,
		    "{\"id\":7,\"region\":null,\"amount\":null,\"status\":null,"
		    "\"ts\":null,\"ok\":null,\"url\":null}");
	for (int i = F_REGION; i < F_NF; i++)
		assert_int_equal(r[i].type, SV_T_NULL);
	/* exact reasons, and the negative control: nullable null passes */
	bad_json(fx, "{\"id\":null}", NULL);
	assert_string_equal(fx->reason, "field 'id' is null but not nullable");
	bad_json(fx, "{\"region\":\"x\"}", NULL);
	assert_string_equal(fx->reason,
			    "field 'id' is missing but not nullable");
	bad_json(fx, "{}", "field 'id' is missing but not nullable");
	/* duplicate keys: the last one wins */
	r = ok_json(fx,
		    "{\"id\":null,\"id\":5,\"region\":\"a\",\"region\":\"b\"}");
	assert_int_equal(r[F_ID].v.i, 5);
	assert_str(&r[F_REGION], "b", 1);
	bad_json(fx, "{\"id\":5,\"id\":null}",
		 "field 'id' is null but not nullable");
	r = ok_json(fx, "{\"id\":5,\"amount\":1.5,\"amount\":null}");
	assert_int_equal(r[F_AMOUNT].type, SV_T_NULL);
}

static void test_json_unknown_fields(void **state)
{
	fx_t *fx = *state;
	const sv_value_t *r = ok_json(
		fx,
		"{\"x\":{\"a\":[1,2,{\"b\":null,\"id\":99}],\"c\":\"d\"},"
		"\"id\":3,\"y\":[[],{},[[[\"\\u00e9\"]]]],\"z\":-1.5e-3,"
		"\"t\":true,\"f\":false,\"n\":null,\"s\":\"\\\"}\","
		"\"region\":\"r\",\"e\":{},\"ea\":[]}");
	assert_int_equal(r[F_ID].v.i, 3); /* nested "id" did not leak */
	assert_str(&r[F_REGION], "r", 1);
	/* unknown values are validated, not just skipped */
	bad_json(fx, "{\"id\":1,\"x\":[1,2,]}", "malformed JSON");
	bad_json(fx, "{\"id\":1,\"x\":{\"a\":1,}}", "malformed JSON");
	bad_json(fx, "{\"id\":1,\"x\":{\"a\" 1}}", "':' expected");
	bad_json(fx, "{\"id\":1,\"x\":[1 2]}", "',' or ']' expected");
	bad_json(fx, "{\"id\":1,\"x\":{\"a\":1]}", "',' or '}' expected");
	bad_json(fx, "{\"id\":1,\"x\":{1:2}}", "string key expected");
	bad_json(fx, "{\"id\":1,\"x\":tru}", "invalid literal");
	bad_json(fx, "{\"id\":1,\"x\":01}", "leading zero");
	bad_json(fx, "{\"id\":1,\"x\":\"\\x\"}", "invalid escape");
	bad_json(fx, "{\"id\":1,\"x\":[[[", "malformed JSON");
	/* depth: 128 nested arrays are fine, 129 are not */
	char deep[600];
	int n = snprintf(deep, sizeof(deep), "{\"id\":1,\"x\":");
	for (int i = 0; i < 128; i++)
		deep[n++] = '[';
	for (int i = 0; i < 128; i++)
		deep[n++] = ']';
	deep[n++] = '}';
	deep[n] = '\0';
	ok_json(fx, deep);
	n = snprintf(deep, sizeof(deep), "{\"id\":1,\"x\":");
	for (int i = 0; i < 129; i++)
		deep[n++] = '[';
	for (int i = 0; i < 129; i++)
		deep[n++] = ']';
	deep[n++] = '}';
	deep[n] = '\0';
	bad_json(fx, deep, "nesting too deep");
}

/* ---- JSON: strings ---- */

static void test_json_escapes_unicode(void **state)
{
	fx_t *fx = *state;
	const sv_value_t *r = ok_json(fx,
				      "{\"id\":1,\"region\":\"a\\\"b\\\\c\\/"
				      "d\\be\\ff\\ng\\rh\\ti\"}");
	assert_str(&r[F_REGION], "a\"b\\c/d\be\ff\ng\rh\ti", 17);
	/* \u escapes: 1, 2, 3 and 4 byte UTF-8, NUL, and raw UTF-8 kept */
	r = ok_json(fx,
		    "{\"id\":1,\"region\":\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00"
		    "\\u0000z\",\"status\":"
		    "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}");
	assert_str(&r[F_REGION], "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\0z",
		   12);
	assert_str(&r[F_STATUS], "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
	/* an escaped key matches the schema name */
	r = ok_json(fx, "{\"\\u0069d\":42,\"re\\u0067ion\":\"k\"}");
	assert_int_equal(r[F_ID].v.i, 42);
	assert_str(&r[F_REGION], "k", 1);
	/* long strings cross the 8-byte fast path in every alignment */
	char buf[512], want[300];
	for (int len = 0; len < 40; len++) {
		for (int i = 0; i < len; i++)
			want[i] = (char)('a' + i % 26);
		want[len] = '\0';
		snprintf(buf, sizeof(buf), "{\"id\":1,\"url\":\"%s\\n\"}",
			 want);
		r = ok_json(fx, buf);
		want[len] = '\n';
		assert_str(&r[F_URL], want, (size_t)len + 1);
	}

	bad_json(fx, "{\"id\":1,\"region\":\"\\ud800\"}",
		 "lone high surrogate");
	bad_json(fx, "{\"id\":1,\"region\":\"\\ud800\\u0041\"}",
		 "lone high surrogate");
	bad_json(fx, "{\"id\":1,\"region\":\"\\udc00\"}", "lone low surrogate");
	bad_json(fx, "{\"id\":1,\"region\":\"\\u12\"}", "\\u escape");
	bad_json(fx, "{\"id\":1,\"region\":\"\\u12g4\"}", "invalid \\u escape");
	bad_json(fx, "{\"id\":1,\"region\":\"\\U0041\"}", "invalid escape");
	bad_json(fx, "{\"id\":1,\"region\":\"a\tb\"}",
		 "unescaped control character");
	bad_json(fx, "{\"id\":1,\"region\":\"a\nb\"}",
		 "unescaped control character");
	/* invalid UTF-8: bare continuation, overlong, surrogate, > U+10FFFF,
	 * truncated sequence, 0xFF */
	static const char *const bad_utf8[] = {
		"\x80",
		"\xc0\xaf",
		"\xc1\xbf",
		"\xe0\x80\xaf",
		"\xed\xa0\x80",
		"\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80",
		"\xc3",
		"\xe2\x82",
		"\xff",
		"\xc3(",
	};
	for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++) {
		snprintf(buf, sizeof(buf), "{\"id\":1,\"region\":\"%s\"}",
			 bad_utf8[i]);
		bad_json(fx, buf, "invalid UTF-8");
		snprintf(buf, sizeof(buf), "{\"id\":1,\"k%s\":1}", bad_utf8[i]);
		bad_json(fx, buf, "invalid UTF-8");
	}
	/* NUL byte inside the payload */
	assert_int_equal(
		decode_n(fx, fx->json, "{\"id\":1,\"region\":\"a\0b\"}", 23),
		-1);
	assert_non_null(strstr(fx->reason, "control character"));
}

/* ---- JSON: malformed documents ---- */

static void test_json_malformed(void **state)
{
	fx_t *fx = *state;
	static const char *const cases[] = {
		"",
		" ",
		"not json",
		"123",
		"\"id\"",
		"[1]",
		"null",
		"true",
		"{",
		"{\"id\"",
		"{\"id\":",
		"{\"id\":1",
		"{\"id\":1,",
		"{\"id\":1,}",
		"{,\"id\":1}",
		"{\"id\":1}}",
		"{\"id\":1} x",
		"{\"id\":1}{}",
		"{\"id\" 1}",
		"{\"id\":1 \"x\":2}",
		"{id:1}",
		"{'id':1}",
		"{\"id\":01}",
		"{\"id\":1.}",
		"{\"id\":.5}",
		"{\"id\":-}",
		"{\"id\":+1}",
		"{\"id\":1e}",
		"{\"id\":1e+}",
		"{\"id\":0x10}",
		"{\"id\":NaN}",
		"{\"id\":Infinity}",
		"{\"id\":1,\"amount\":1.5.5}",
		"{\"id\":1,\"amount\":--1}",
		"{\"id\":1,\"amount\":-01.5}",
		"{\"id\":1,\"ok\":True}",
		"{\"id\":1,\"ok\":nul}",
		"{\"id\":1,\"region\":\"abc}",
		"{\"id\":1,\"region\":\"abc\\\"}",
		"{\"id\":1,\"region\":\"\\",
		"{\"id\":1\x0b}",
		"\xef\xbb\xbf{\"id\":1}",
		"{\"id\":1,\"x\":[}",
		"{\"id\":1,\"x\":{]}",
		"{\"id\":1,\"x\":}",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bad_json(fx, cases[i], "malformed JSON");
	assert_int_equal(decode_n(fx, fx->json, "{\"id\":1}\0", 9), -1);
	assert_string_equal(fx->reason,
			    "malformed JSON at byte 8: trailing characters "
			    "after the object");
	bad_json(fx, "[1]", NULL);
	assert_string_equal(
		fx->reason,
		"malformed JSON at byte 0: top-level value must be an object");
	/* NULL payload, and a reason buffer too small is truncated safely */
	char tiny[8];
	assert_int_equal(sv_decoder_decode(fx->json, NULL, 0, &fx->b, NULL,
					   tiny, sizeof(tiny)),
			 -1);
	assert_string_equal(tiny, "malform");
	assert_int_equal(
		sv_decoder_decode(fx->json, "x", 1, &fx->b, NULL, NULL, 0), -1);
	assert_int_equal(fx->b.nrows, 0);
	/* negative control: the same fixture does accept a good record */
	ok_json(fx, "{\"id\":1}");
}

/* ---- JSON: timestamps ---- */

static void test_json_timestamps(void **state)
{
	fx_t *fx = *state;
	static const struct {
		const char *in;
		int64_t ms;
	} good[] = {
		{"\"1970-01-01T00:00:00Z\"", 0},
		{"\"2026-11-29T20:00:00.123Z\"", 1795982400123LL},
		{"\"2026-11-29T21:00:00.123+01:00\"", 1795982400123LL},
		{"\"2026-11-29T15:30:00.123-04:30\"", 1795982400123LL},
		{"\"2026-11-29t20:00:00.1z\"", 1795982400100LL},
		{"\"2026-11-29 20:00:00.123456789Z\"", 1795982400123LL},
		{"\"2024-02-29T00:00:00Z\"", 1709164800000LL},
		{"\"2000-02-29T23:59:59.999Z\"", 951868799999LL},
		{"\"1969-12-31T23:59:59Z\"", -1000},
		{"\"1900-01-01T00:00:00Z\"", -2208988800000LL},
		{"\"2026\\u002d11-29T20:00:00Z\"", 1795982400000LL},
		{"1700000000000", 1700000000000LL},
		{"-1", -1},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char buf[128];
		snprintf(buf, sizeof(buf), "{\"id\":1,\"ts\":%s}", good[i].in);
		const sv_value_t *r = ok_json(fx, buf);
		assert_int_equal(r[F_TS].type, SV_T_TIMESTAMP);
		if (r[F_TS].v.i != good[i].ms)
			fail_msg("%s: got %lld want %lld", good[i].in,
				 (long long)r[F_TS].v.i, (long long)good[i].ms);
	}
	static const char *const bad[] = {
		"2026-11-29",
		"2026-11-29T20:00:00",
		"2026-11-29T20:00Z",
		"2026-13-01T00:00:00Z",
		"2026-00-01T00:00:00Z",
		"2026-02-29T00:00:00Z",
		"2026-04-31T00:00:00Z",
		"2026-11-29T24:00:00Z",
		"2026-11-29T20:60:00Z",
		"2026-11-29T20:00:60Z",
		"2026-11-29T20:00:00.Z",
		"2026-11-29T20:00:00+0100",
		"2026-11-29T20:00:00+24:00",
		"2026-11-29X20:00:00Z",
		"2026-11-29T20:00:00Zjunk",
		"26-11-29T20:00:00Z",
		"2026/11/29T20:00:00Z",
		"",
		"yesterday",
		"2026-11-29T20:00:00 Z",
		"+2026-11-29T20:00:00Z",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[128];
		snprintf(buf, sizeof(buf), "{\"id\":1,\"ts\":\"%s\"}", bad[i]);
		bad_json(fx, buf, "field 'ts': invalid RFC 3339 timestamp");
	}
}

static void test_json_strings_outlive_payload(void **state)
{
	fx_t *fx = *state;
	/* many rows: row storage reallocates, string bytes stay in the arena */
	for (int i = 0; i < 2000; i++) {
		char buf[128];
		snprintf(buf, sizeof(buf),
			 "{\"id\":%d,\"region\":\"region-%d\",\"url\":\"u\\n%"
			 "d\"}",
			 i, i, i);
		ok_json(fx, buf);
	}
	for (int i = 0; i < 2000; i++) {
		const sv_value_t *r = sv_batch_row(&fx->b, (size_t)i);
		char want[64];
		int n = snprintf(want, sizeof(want), "region-%d", i);
		assert_int_equal(r[F_ID].v.i, i);
		assert_str(&r[F_REGION], want, (size_t)n);
		n = snprintf(want, sizeof(want), "u\n%d", i);
		assert_str(&r[F_URL], want, (size_t)n);
	}
}

/* ---- CSV ---- */

static void test_csv_basic(void **state)
{
	fx_t *fx = *state;
	const sv_value_t *r = ok_csv(
		fx, "123,EU-West,12.5,completed,1700000000000,true,http://x/y");
	assert_int_equal(r[F_ID].v.i, 123);
	assert_str(&r[F_REGION], "EU-West", 7);
	assert_f64_bits(r[F_AMOUNT].v.f, 12.5);
	assert_str(&r[F_STATUS], "completed", 9);
	assert_int_equal(r[F_TS].type, SV_T_TIMESTAMP);
	assert_int_equal(r[F_TS].v.i, 1700000000000LL);
	assert_true(r[F_OK].v.b);
	assert_str(&r[F_URL], "http://x/y", 10);
	/* nulls: empty unquoted cells; trailing line break dropped */
	r = ok_csv(fx, "-5,,,,,,\r\n");
	assert_int_equal(r[F_ID].v.i, -5);
	for (int i = F_REGION; i < F_NF; i++)
		assert_int_equal(r[i].type, SV_T_NULL);
	r = ok_csv(fx, "0,,-1e-3,,2026-11-29T20:00:00.123Z,false,\n");
	assert_f64_bits(r[F_AMOUNT].v.f, -1e-3);
	assert_int_equal(r[F_TS].v.i, 1795982400123LL);
	assert_false(r[F_OK].v.b);
	assert_int_equal(r[F_URL].type, SV_T_NULL);
	/* quoting: commas, "" escapes, line breaks, empty quoted string */
	r = ok_csv(fx, "\"7\",\"a,b\",\"3\",\"say \"\"hi\"\"\",,,\"l1\nl2\"");
	assert_int_equal(r[F_ID].v.i, 7);
	assert_str(&r[F_REGION], "a,b", 3);
	assert_f64_bits(r[F_AMOUNT].v.f, 3.0);
	assert_str(&r[F_STATUS], "say \"hi\"", 8);
	assert_str(&r[F_URL], "l1\nl2", 5);
	r = ok_csv(fx, "1,\"\",,\"\xc3\xa9\",,,\"\"");
	assert_str(&r[F_REGION], "", 0);
	assert_str(&r[F_STATUS], "\xc3\xa9", 2);
	assert_str(&r[F_URL], "", 0);
}

static void test_csv_errors(void **state)
{
	fx_t *fx = *state;
	bad_csv(fx, "1,a,2.5", "expected 7 columns, got 3");
	bad_csv(fx, "1,a,2.5,s,1,true,u,extra", "expected 7 columns, got more");
	bad_csv(fx, "", "field 'id' is null but not nullable");
	bad_csv(fx, ",a,,,,,", "field 'id' is null but not nullable");
	bad_csv(fx, "x,,,,,,", "column 1 ('id'): expected int64, got 'x'");
	bad_csv(fx, "1.0,,,,,,", "expected int64");
	bad_csv(fx, " 1,,,,,,", "expected int64");
	bad_csv(fx, "+1,,,,,,", "expected int64");
	bad_csv(fx, "01,,,,,,", "expected int64");
	bad_csv(fx, "9223372036854775808,,,,,,", "expected int64");
	bad_csv(fx, "99999999999999999999999,,,,,,", "expected int64");
	bad_csv(fx, "1,,abc,,,,",
		"column 3 ('amount'): expected float64, got 'abc'");
	bad_csv(fx, "1,,1.5x,,,,", "expected float64");
	bad_csv(fx, "1,,inf,,,,", "expected float64");
	bad_csv(fx, "1,,nan,,,,", "expected float64");
	bad_csv(fx, "1,,0x10,,,,", "expected float64");
	bad_csv(fx, "1,,1e999,,,,", "expected float64");
	bad_csv(fx, "1,,\"\",,,,", "expected float64");
	bad_csv(fx, "1,,,,,TRUE,", "column 6 ('ok'): expected bool");
	bad_csv(fx, "1,,,,,1,", "expected bool");
	bad_csv(fx, "1,,,,2026-13-01T00:00:00Z,,", "expected timestamp_ms");
	bad_csv(fx, "1,ab\"c,,,,,", "quote inside unquoted cell");
	bad_csv(fx, "1,\"abc\"d,,,,,", "characters after closing quote");
	bad_csv(fx, "1,\"abc,,,,,", "unterminated quoted cell");
	bad_csv(fx, "1,a\nb,,,,,", "line break inside unquoted cell");
	bad_csv(fx, "1,\xff,,,,,", "invalid UTF-8");
	/* negative control */
	ok_csv(fx, "1,,,,,,");
}

/* Every kind of special byte at every offset of a string, with as many
 * plain bytes after it, so that it lands in the 16-byte (SSE2) and 8-byte
 * scans and the byte-wise tail alike: escapes and UTF-8 are decoded,
 * control characters and bad UTF-8 rejected with the same reasons, the byte
 * the error names is the special one, and keys of every length match the
 * schema by the fast compare. */
static void test_json_string_offsets(void **state)
{
	fx_t *fx = *state;
	static const struct {
		const char *in, *out, *err;
	} kinds[] = {
		{"\\n", "\n", NULL},
		{"\\\"", "\"", NULL},
		{"\\u20ac", "\xe2\x82\xac", NULL},
		{"\xc3\xa9", "\xc3\xa9", NULL},
		{"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80", NULL},
		{"\x01", NULL, "unescaped control character in string"},
		{"\x1f", NULL, "unescaped control character in string"},
		{"\xc3(", NULL, "invalid UTF-8 in string"},
		{"\xff", NULL, "invalid UTF-8 in string"},
		{"\x7f", "\x7f", NULL}, /* DEL is a plain byte */
	};
	char buf[256], want[128], reason[160];
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (int off = 0; off < 40; off++)
			for (int tail = 0; tail < 20; tail += 19) {
				char pre[64], post[32];
				for (int i = 0; i < off; i++)
					pre[i] = (char)('a' + i % 26);
				pre[off] = 0;
				memset(post, 'z', (size_t)tail);
				post[tail] = 0;
				int n = snprintf(
					buf, sizeof(buf),
					"{\"id\":1,\"url\":\"%s%s%s\"}", pre,
					kinds[k].in, post);
				if (kinds[k].err) {
					snprintf(
						reason, sizeof(reason),
						"malformed JSON at byte %d: %s",
						15 + off, kinds[k].err);
					int rc = decode_n(fx, fx->json, buf,
							  (size_t)n);
					assert_int_equal(rc, -1);
					assert_string_equal(fx->reason, reason);
					continue;
				}
				int w = snprintf(want, sizeof(want), "%s%s%s",
						 pre, kinds[k].out, post);
				const sv_value_t *r = ok_json(fx, buf);
				assert_str(&r[F_URL], want, (size_t)w);
			}
	/* keys of 0..12 bytes, each right before the end of the payload */
	sv_schema_t *s = sv_schema_new();
	char names[13][16];
	for (int len = 0; len <= 12; len++) {
		memset(names[len], 'k', (size_t)len);
		names[len][len] = 0;
		sv_schema_add(s, names[len], SV_T_INT64, true);
	}
	sv_decoder_t *dec = sv_decoder_new(SV_FMT_JSON, s);
	sv_batch_t b;
	sv_batch_init(&b, s);
	for (int len = 0; len <= 12; len++) {
		int n = snprintf(buf, sizeof(buf), "{\"%s\":%d}", names[len],
				 len + 100);
		char *copy = malloc((size_t)n);
		memcpy(copy, buf, (size_t)n);
		assert_int_equal(sv_decoder_decode(dec, copy, (size_t)n, &b,
						   NULL, reason,
						   sizeof(reason)),
				 0);
		const sv_value_t *r = sv_batch_row(&b, b.nrows - 1);
		for (int c = 0; c <= 12; c++)
			if (c == len)
				assert_int_equal(r[c].v.i, len + 100);
			else
				assert_true(sv_is_null(&r[c]));
		free(copy);
	}
	/* after "kk" the expected key is "kkk": "kkkx" is not it */
	const char *in = "{\"kk\":1,\"kkkx\":2,\"kkk\":3}";
	assert_int_equal(sv_decoder_decode(dec, in, strlen(in), &b, NULL,
					   reason, sizeof(reason)),
			 0);
	const sv_value_t *r = sv_batch_row(&b, b.nrows - 1);
	assert_int_equal(r[2].v.i, 1);
	assert_int_equal(r[3].v.i, 3);
	assert_true(sv_is_null(&r[4]));
	sv_batch_release(&b);
	sv_decoder_destroy(dec);
	sv_schema_destroy(s);
}

/* ---- encoder ---- */

static void test_encode_exact(void **state)
{
	fx_t *fx = *state;
	sv_value_t row[F_NF] = {
		sv_int(-9223372036854775807LL - 1),
		sv_str("EU \"W\"\n", 7),
		sv_float(12.5),
		sv_null(),
		sv_ts(1700000000000LL),
		sv_bool(false),
		sv_str("", 0),
	};
	sv_buf_t out;
	sv_buf_init(&out);
	sv_json_encode_row(fx->schema, row, &out);
	assert_string_equal(
		out.data,
		"{\"id\":-9223372036854775808,\"region\":\"EU \\\"W\\\"\\n\","
		"\"amount\":12.5,\"status\":null,\"ts\":1700000000000,"
		"\"ok\":false,\"url\":\"\"}");
	/* appends, does not reset */
	row[F_ID] = sv_int(0);
	row[F_OK] = sv_bool(true);
	row[F_AMOUNT] = sv_float(NAN);
	sv_json_encode_row(fx->schema, row, &out);
	assert_non_null(strstr(out.data, "}{\"id\":0,"));
	assert_non_null(strstr(out.data, "\"amount\":null,"));
	assert_non_null(strstr(out.data, "\"ok\":true,"));
	sv_buf_release(&out);
}

static void test_encode_floats(void **state)
{
	(void)state;
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "f", SV_T_FLOAT64, true);
	static const struct {
		double f;
		const char *want;
	} cases[] = {
		{0.1, "{\"f\":0.1}"},
		{1.0 / 3, "{\"f\":0.3333333333333333}"},
		{0.1 + 0.2, "{\"f\":0.30000000000000004}"},
		{1e300, "{\"f\":1e+300}"},
		{-2.5e-7, "{\"f\":-2.5e-07}"},
		/* the old %.15g search printed 4.94065645841247e-324 */
		{5e-324, "{\"f\":5e-324}"},
		{0.00005, "{\"f\":0.00005}"},
		{-0.000123, "{\"f\":-0.000123}"},
		{0.0001234567, "{\"f\":0.0001234567}"},
		{1.5e16, "{\"f\":1.5e+16}"},
		{9007199254740992.0, "{\"f\":9007199254740992}"},
		{1e23, "{\"f\":1e+23}"},
		{1.7976931348623157e308, "{\"f\":1.7976931348623157e+308}"},
		{907.9999999999999, "{\"f\":907.9999999999999}"},
		{3.0, "{\"f\":3}"},
		{-0.0, "{\"f\":-0}"},
		{123456789.125, "{\"f\":123456789.125}"},
		{INFINITY, "{\"f\":null}"},
		{-INFINITY, "{\"f\":null}"},
	};
	sv_buf_t out;
	sv_buf_init(&out);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sv_value_t v = sv_float(cases[i].f);
		sv_buf_reset(&out);
		sv_json_encode_row(s, &v, &out);
		assert_string_equal(out.data, cases[i].want);
	}
	sv_buf_release(&out);
	sv_schema_destroy(s);
}

/* decode(encode(row)) == row, bit for bit, over random rows. */
static void test_roundtrip(void **state)
{
	fx_t *fx = *state;
	uint64_t x = 0x5eed1234abcdULL;
	sv_buf_t out;
	sv_buf_init(&out);
	static const char *const pieces[] = {
		"a",    "\"",   "\\",       "\n",           "\x01",
		"\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
		"/",    " ",    "\0",
	};
	for (int it = 0; it < 5000; it++) {
		sv_value_t row[F_NF];
		char strs[3][64];
		uint32_t lens[3];
		for (int k = 0; k < 3; k++) {
			size_t n = 0, parts = rng_next(&x) % 12;
			for (size_t j = 0; j < parts; j++) {
				const char *pc = pieces[rng_next(&x) % 13];
				size_t pl = *pc ? strlen(pc) : 1;
				memcpy(strs[k] + n, pc, pl);
				n += pl;
			}
			lens[k] = (uint32_t)n;
		}
		uint64_t bits = rng_next(&x);
		double f;
		memcpy(&f, &bits, 8);
		if (!isfinite(f))
			f = (double)(int64_t)bits / 1000.0;
		if (it % 3 == 0)
			f = (double)(int64_t)(bits % 2000000) / 100.0;
		row[F_ID] = sv_int(it % 7 == 0 ? INT64_MIN
					       : (int64_t)rng_next(&x));
		row[F_REGION] = sv_str(strs[0], lens[0]);
		row[F_AMOUNT] = it % 11 == 0 ? sv_null() : sv_float(f);
		row[F_STATUS] = sv_str(strs[1], lens[1]);
		row[F_TS] = sv_ts((int64_t)(rng_next(&x) >> 20));
		row[F_OK] = it % 5 == 0 ? sv_null() : sv_bool(rng_next(&x) & 1);
		row[F_URL] = it % 4 == 0 ? sv_null() : sv_str(strs[2], lens[2]);
		sv_buf_reset(&out);
		sv_json_encode_row(fx->schema, row, &out);
		const sv_value_t *r = ok_json(fx, out.data);
		for (int c = 0; c < F_NF; c++) {
			assert_int_equal(r[c].type, row[c].type);
			if (row[c].type == SV_T_FLOAT64)
				assert_f64_bits(r[c].v.f, row[c].v.f);
			else if (!sv_value_equal(&r[c], &row[c]))
				fail_msg("column %d differs after round trip: "
					 "%s",
					 c, out.data);
		}
		sv_batch_reset(&fx->b);
	}
	sv_buf_release(&out);
}

/* ---- fuzz ---- */

static const char *const seeds[] = {
	"{\"id\":123,\"region\":\"EU-West\",\"amount\":12.5,\"status\":"
	"\"completed\","
	"\"ts\":1700000000000,\"bidder\":42,\"url\":\"http://example.com/x\"}",
	"{\"id\":-1,\"ts\":\"2026-11-29T20:00:00.123+01:00\",\"ok\":true}",
	"{\"x\":{\"a\":[1,2.5e-3,{\"b\":null}],\"c\":\"\\u00e9\\ud83d\\ude00\"}"
	",\"id\":0}",
	"{\"id\":9223372036854775807,\"region\":\"\\\"\\\\\\/"
	"\\b\\f\\n\\r\\t\"}",
	"{\"id\":1,\"region\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",\"e\":[]"
	",\"o\":{}}",
	"{\"id\":1,\"amount\":-0.0e+0,\"ok\":false,\"url\":null}",
	"[1,2,3]",
	"7,EU,1.5,\"q\"\"x\",1700000000000,true,\"a,b\"",
};

static const unsigned char alphabet[] =
	"{}[]\":,\\ 0123456789eE.-+tfnulraxu\x00\x1f\x7f"
	"\x80\xbf\xc3\xe0\xed\xf0\xf4\xff\t\n";

static size_t mutate(uint64_t *x, char *buf, size_t n, size_t cap)
{
	int ops = 1 + (int)(rng_next(x) % 4);
	for (int o = 0; o < ops; o++) {
		uint64_t r = rng_next(x);
		size_t pos = n ? (size_t)(r >> 16) % n : 0;
		unsigned char ch = (r & 1)
			? alphabet[(r >> 8) % (sizeof(alphabet) - 1)]
			: (unsigned char)(r >> 40);
		switch (r % 6) {
		case 0: /* replace */
			if (n)
				buf[pos] = (char)ch;
			break;
		case 1: /* insert */
			if (n < cap) {
				memmove(buf + pos + 1, buf + pos, n - pos);
				buf[pos] = (char)ch;
				n++;
			}
			break;
		case 2: /* delete */
			if (n) {
				memmove(buf + pos, buf + pos + 1, n - pos - 1);
				n--;
			}
			break;
		case 3: /* truncate */
			n = pos;
			break;
		case 4: { /* duplicate a span */
			size_t len = (size_t)(r >> 50) % 16;
			if (pos + len <= n && n + len <= cap) {
				memmove(buf + pos + len, buf + pos, n - pos);
				n += len;
			}
			break;
		}
		default: /* swap two bytes */
			if (n) {
				size_t q = (size_t)(r >> 32) % n;
				char t = buf[pos];
				buf[pos] = buf[q];
				buf[q] = t;
			}
			break;
		}
	}
	return n;
}

/* jansson's verdicts we do not share: numbers it cannot store (we only
 * validate the grammar of unknown values) and its depth limit. Also,
 * jansson 2.14 accepts a raw NUL byte right after a number ("{\"a\":0\0}");
 * RFC 8259 does not, and neither do we: such inputs are not compared. */
static bool jansson_quirk(const json_error_t *err)
{
	return strstr(err->text, "too big") || strstr(err->text, "overflow") ||
		strstr(err->text, "maximum parsing depth");
}

static void test_fuzz(void **state)
{
	fx_t *fx = *state;
	sv_schema_t *empty = sv_schema_new();
	sv_decoder_t *validator = sv_decoder_new(SV_FMT_JSON, empty);
	sv_batch_t vb;
	sv_batch_init(&vb, empty);
	uint64_t x = 0xC0DEC0DE12345ULL;
	char buf[512];
	long accepted = 0, rejected = 0, agreed = 0;
	for (int it = 0; it < 100000; it++) {
		const char *seed =
			seeds[rng_next(&x) % (sizeof(seeds) / sizeof(seeds[0]))];
		size_t n = strlen(seed);
		memcpy(buf, seed, n);
		n = mutate(&x, buf, n, sizeof(buf));
		if (decode_n(fx, fx->json, buf, n) == 0)
			accepted++;
		else
			rejected++;
		decode_n(fx, fx->csv, buf, n);

		/* differential: validity of JSON against jansson */
		char *copy = malloc(n ? n : 1);
		memcpy(copy, buf, n);
		char reason[128];
		int ours = sv_decoder_decode(validator, copy, n, &vb, NULL,
					     reason, sizeof(reason));
		json_error_t err;
		json_t *j = json_loadb(copy, n, JSON_ALLOW_NUL, &err);
		bool theirs = j && json_is_object(j);
		if (j ? !memchr(copy, 0, n) : !jansson_quirk(&err)) {
			if ((ours == 0) != theirs)
				fail_msg("disagree with jansson (ours %s, "
					 "jansson %s) on "
					 "%zu bytes: '%.*s'",
					 ours == 0 ? "ok" : reason,
					 j ? "ok" : err.text, n, (int)n, copy);
			agreed++;
		}
		json_decref(j);
		free(copy);
		if (fx->b.nrows > 4096)
			sv_batch_reset(&fx->b);
		if (vb.nrows > 4096)
			sv_batch_reset(&vb);
	}
	print_message("fuzz: %ld accepted, %ld rejected, %ld checked against "
		      "jansson\n",
		      accepted, rejected, agreed);
	assert_true(accepted >
		    1000); /* the mutator does not only make garbage */
	assert_true(rejected > 1000);
	assert_true(agreed > 90000);
	sv_batch_release(&vb);
	sv_decoder_destroy(validator);
	sv_schema_destroy(empty);
}

/* Floats round-trip exactly and are as short as the shortest %g that
 * round-trips (the decimal fast path and the %g path alike): prices with
 * cents, micro-units, arbitrary bit patterns, wide magnitudes. */
static void test_encode_floats_random(void **state)
{
	(void)state;
	sv_schema_t *s = sv_schema_new();
	sv_schema_add(s, "x", SV_T_FLOAT64, true);
	sv_buf_t b;
	sv_buf_init(&b);
	uint64_t st = 88172645463325252ULL;
	for (int i = 0; i < 200000; i++) {
		st ^= st << 13;
		st ^= st >> 7;
		st ^= st << 17;
		double f;
		switch (i % 4) {
		case 0:
			f = (double)(int64_t)(st % 2000000000ULL) / 100.0 - 1e7;
			break;
		case 1:
			f = (double)(int64_t)(st % 1000000000ULL) / 1e6;
			break;
		case 2:
			memcpy(&f, &st, sizeof(f));
			break;
		default:
			f = (double)(st >> 11) / 9007199254740992.0 *
				pow(10, (int)(st % 20) - 8);
		}
		if (!isfinite(f))
			continue;
		sv_value_t v = {0};
		v.type = SV_T_FLOAT64;
		v.v.f = f;
		sv_buf_reset(&b);
		sv_json_encode_row(s, &v, &b);
		const char *p = strchr(b.data, ':') + 1;
		size_t len = strlen(p) - 1; /* without the closing brace */
		if (strtod(p, NULL) != f)
			fail_msg("%.17g encoded as %s", f, p);
		char g[40];
		for (int pr = 1; pr <= 17; pr++) {
			snprintf(g, sizeof(g), "%.*g", pr, f);
			if (strtod(g, NULL) == f)
				break;
		}
		if (!strchr(g, 'e') && len > strlen(g) + 1)
			fail_msg("%.17g encoded as %s, shortest is %s", f, p,
				 g);
	}
	sv_buf_release(&b);
	sv_schema_destroy(s);
}

/* sv_json_encode_row writes what the piecewise encoder wrote, over random
 * schemas (names with and without bytes to escape, up to 40 fields) and
 * rows of every type, appended to a buffer that already holds text and
 * grows as it goes; floats are kept to values the old printer printed
 * shortest (no subnormals). */
static void test_encode_vs_reference(void **state)
{
	(void)state;
	static const char *const names[] = {
		"id",
		"a\"b",
		"tab\there",
		"x",
		"",
		"\x01ctl",
		"back\\slash",
		"auction",
		"a_rather_long_field_name_of_forty_bytes__",
		"\xc3\xa9t\xc3\xa9"};
	static const char *const strs[] = {"",      "plain", "q\"uote",
					   "nl\nx", "\x1f",  "\xe2\x82\xac"};
	uint64_t st = 12345;
	sv_buf_t got, want;
	sv_buf_init(&got);
	sv_buf_init(&want);
	for (int it = 0; it < 3000; it++) {
		sv_schema_t *s = sv_schema_new();
		size_t nf = 1 + rng_next(&st) % 40;
		sv_value_t row[40];
		char fname[40][64];
		for (size_t i = 0; i < nf; i++) {
			uint64_t r = rng_next(&st);
			snprintf(fname[i], sizeof(fname[i]), "%s%zu",
				 names[r % (sizeof(names) / sizeof(names[0]))],
				 i);
			double f;
			uint64_t bits = rng_next(&st);
			memcpy(&f, &bits, sizeof(f));
			if (fpclassify(f) == FP_SUBNORMAL)
				f = 0.5;
			switch ((r >> 8) % 7) {
			case 0:
				row[i] = sv_bool(r & 1024);
				break;
			case 1:
				row[i] = sv_int((int64_t)rng_next(&st));
				break;
			case 2:
				row[i] = sv_ts((int64_t)(r >> 20));
				break;
			case 3:
				row[i] = sv_float(
					r & 4096
						? f
						: (double)(r % 100000) * 0.908);
				break;
			case 4: {
				const char *t = strs[(r >> 16) % 6];
				row[i] = sv_str(t, (uint32_t)strlen(t));
				break;
			}
			case 5:
				row[i] = sv_float(r & 2048 ? NAN : -INFINITY);
				break;
			default:
				row[i] = sv_null();
			}
			sv_schema_add(s, fname[i],
				      row[i].type == SV_T_NULL ? SV_T_STRING
							       : row[i].type,
				      true);
		}
		if (it % 50 == 0) {
			sv_buf_reset(&got);
			sv_buf_reset(&want);
			sv_buf_puts(&got, "prefix ");
			sv_buf_puts(&want, "prefix ");
		}
		sv_json_encode_row(s, row, &got);
		ref_json_encode_row(s, row, &want);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.data, want.data, got.len + 1);
		sv_schema_destroy(s);
	}
	sv_buf_release(&got);
	sv_buf_release(&want);
}

/* Significant digits of a number's text ("-0.00120" → 2, "1.5e+16" → 2). */
static int sig_digits(const char *p)
{
	const char *first = NULL, *last = NULL;
	for (; *p && *p != 'e'; p++)
		if (*p >= '1' && *p <= '9') {
			if (!first)
				first = p;
			last = p;
		}
	if (!first)
		return 1; /* "0", "-0" */
	int n = 0;
	for (const char *q = first; q <= last; q++)
		n += *q >= '0' && *q <= '9';
	return n;
}

/* sv_fmt_f64 (shortest digits from double-conversion) against the old
 * printer (tests/unit/codec_ref.h) over random doubles of every kind:
 * raw bit patterns, subnormals, +-0, huge and tiny exponents, integers
 * around 2^53 and beyond, W1's price * 0.908, cents, micro-units. Each
 * output reads back (strtod) to the same bits; where the old printer's
 * text was already the shortest (as many significant digits) the new one
 * is byte-identical; elsewhere it has fewer digits. */
static void test_encode_floats_vs_printf(void **state)
{
	(void)state;
	uint64_t st = 0x9E3779B97F4A7C15ULL;
	long same = 0, shorter = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t r = rng_next(&st), bits;
		double f;
		switch (i % 10) {
		case 0: /* any bit pattern */
			memcpy(&f, &r, sizeof(f));
			break;
		case 1: /* subnormal */
			bits = (r & 0x800FFFFFFFFFFFFFULL);
			memcpy(&f, &bits, sizeof(f));
			break;
		case 2: /* W1: price * 0.908 */
			f = (double)(int64_t)(r % 100000000ULL) * 0.908;
			break;
		case 3: /* cents */
			f = (double)(int64_t)(r % 2000000000ULL) / 100.0 - 1e7;
			break;
		case 4: /* micro-units and below 1e-4 */
			f = (double)(int64_t)(r % 100000ULL) /
				pow(10, 6 + (int)(r >> 60) % 4);
			break;
		case 5: /* integers of 2^53 and beyond */
			f = ldexp((double)(r >> 11), 1 + (int)(r % 40));
			break;
		case 6: /* a 53-bit mantissa at a wide decimal scale */
			f = (double)(r >> 11) / 9007199254740992.0 *
				pow(10, (int)(r % 80) - 40);
			break;
		case 7: /* huge and tiny exponents */
			bits = (r & 0x800FFFFFFFFFFFFFULL) |
				((uint64_t)(r % 2 ? 1 + (r >> 52) % 40
						  : 2006 + (r >> 52) % 40)
				 << 52);
			memcpy(&f, &bits, sizeof(f));
			break;
		case 8: { /* neighbours of powers of 10 and 2 */
			double base = r % 2 ? pow(10, (int)(r % 600) - 300)
					    : ldexp(1, (int)(r % 2000) - 1000);
			f = (r >> 8) % 3 == 0       ? base
				: (r >> 8) % 3 == 1 ? nextafter(base, 0)
						    : nextafter(base, INFINITY);
			break;
		}
		default: { /* specials */
			static const double sp[] = {0.0,
						    -0.0,
						    5e-324,
						    -5e-324,
						    2.2250738585072014e-308,
						    2.2250738585072009e-308,
						    1.7976931348623157e308,
						    -1.7976931348623157e308,
						    1e23,
						    9007199254740993.0,
						    0.1,
						    0.5,
						    1e-5,
						    1e21};
			f = sp[r % (sizeof(sp) / sizeof(sp[0]))];
		}
		}
		if (!isfinite(f))
			continue;
		char got[SV_FMT_F64_MAX + 1], old[40];
		size_t n = sv_fmt_f64(got, f);
		assert_true(n <= SV_FMT_F64_MAX);
		got[n] = 0;
		double back = strtod(got, NULL);
		if (memcmp(&back, &f, sizeof(f)))
			fail_msg("%.17g (%016llx) printed as %s, reads back as "
				 "%.17g",
				 f, (unsigned long long)r, got, back);
		ref_fmt_f64_printf(old, f);
		if (!strcmp(got, old)) {
			same++;
			continue;
		}
		if (sig_digits(got) >= sig_digits(old))
			fail_msg("%.17g printed as %s, the old printer's %s is "
				 "as short",
				 f, got, old);
		shorter++;
	}
	print_message("floats: %ld as before, %ld shorter than before\n", same,
		      shorter);
	assert_true(same > 150000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_names),
		cmocka_unit_test_setup_teardown(test_json_all_types, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_floats, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_int64, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_wrong_types, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_nulls, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_unknown_fields, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_escapes_unicode,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_string_offsets, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_json_timestamps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_json_strings_outlive_payload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_csv_basic, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_csv_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_encode_exact, setup,
						teardown),
		cmocka_unit_test(test_encode_floats),
		cmocka_unit_test(test_encode_floats_random),
		cmocka_unit_test(test_encode_floats_vs_printf),
		cmocka_unit_test(test_encode_vs_reference),
		cmocka_unit_test_setup_teardown(test_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fuzz, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
