/* codec_json.c — the JSON record decoder: a schema-directed, single-pass,
 * strict RFC 8259 scanner that writes each value straight into the typed
 * row. No document tree, no allocation per record: string bytes go into the
 * batch arena, everything else into the row's cells.
 *
 * Why hand-written: bench/bench_json_decode.c measured jansson (tree),
 * json-c (tree) and simdjson on-demand (C++ shim) against this scanner on
 * our ~200-byte records; the numbers and the decision are in
 * docs/records.md. The scanner is strict and fuzz-tested
 * (tests/unit/test_codec.c): any input that is not exactly one JSON object
 * (optionally surrounded by whitespace) is rejected with a reason, including
 * invalid UTF-8, lone surrogates in \u escapes, control characters in
 * strings, leading zeros, trailing commas and trailing garbage.
 *
 * How: keys are matched against the schema with a "next expected field"
 * hint (producers usually keep key order) and then a small hash table.
 * Values of unknown keys are validated and skipped iteratively (depth limit
 * SV_JSON_MAX_DEPTH). Numbers are scanned once; float64 values take the
 * exact Clinger fast path (≤ 2^53 mantissa, |exp| ≤ 22) or fall back to
 * C-locale strtod. Duplicate keys: the last one wins. */
#define _GNU_SOURCE
#include "core/codec.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- codec-internal (defined in codec.c) ---- */
void sv_codec_reason(char *reason, size_t reason_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sv_codec_strtod(const char *p, size_t n, double *out);
int sv_codec_rfc3339(const char *p, size_t n, int64_t *ms_out);
void *sv_codec_json_new(const sv_schema_t *schema);
void sv_codec_json_destroy(void *impl);
int sv_codec_json_decode(void *impl, const char *p, size_t len, sv_batch_t *b,
			 sv_rowmeta_t **meta_out, char *reason,
			 size_t reason_len);
/* ---- end codec-internal ---- */

#define SV_JSON_MAX_DEPTH 128

typedef struct sv_json_dec {
	const sv_schema_t *schema; /* borrowed */
	size_t nf;
	uint32_t *name_len; /* per field */
	bool *plain; /* name needs no JSON escaping (fast key match) */
	uint64_t *kword; /* plain names < 8 bytes: name + '"', zero-padded */
	uint64_t *kmask; /* ... and the mask of its bytes; 0 = longer */
	uint32_t *slots; /* hash table: field index + 1, 0 = empty */
	uint32_t mask;
	uint32_t *seen; /* per field: gen of the record that set it */
	uint32_t gen;
	uint32_t *required; /* indices of non-nullable fields */
	size_t nrequired;
	size_t hint; /* field expected next */
	sv_buf_t scratch; /* unescaped keys and timestamp strings */
} sv_json_dec_t;

typedef struct jctx {
	const char *start, *end;
	sv_json_dec_t *dec;
	sv_batch_t *b;
	sv_value_t *row;
	char *reason;
	size_t reason_len;
} jctx_t;

static uint32_t key_hash(const char *p, size_t n)
{
	uint32_t h = (uint32_t)n;
	if (n) {
		h = h * 31 + (unsigned char)p[0];
		h = h * 31 + (unsigned char)p[n - 1];
		h = h * 31 + (unsigned char)p[n / 2];
	}
	h *= 0x9E3779B1u;
	return h ^ (h >> 15);
}

void *sv_codec_json_new(const sv_schema_t *schema)
{
	sv_json_dec_t *dec = sv_calloc(1, sizeof(*dec));
	dec->schema = schema;
	dec->nf = schema->nfields;
	size_t n = dec->nf ? dec->nf : 1;
	dec->name_len = sv_calloc(n, sizeof(uint32_t));
	dec->plain = sv_calloc(n, sizeof(bool));
	dec->kword = sv_calloc(n, sizeof(uint64_t));
	dec->kmask = sv_calloc(n, sizeof(uint64_t));
	dec->seen = sv_calloc(n, sizeof(uint32_t));
	dec->required = sv_calloc(n, sizeof(uint32_t));
	uint32_t size = 8;
	while (size < 2 * dec->nf)
		size *= 2;
	dec->mask = size - 1;
	dec->slots = sv_calloc(size, sizeof(uint32_t));
	for (size_t i = 0; i < dec->nf; i++) {
		const char *name = schema->fields[i].name;
		dec->name_len[i] = (uint32_t)strlen(name);
		dec->plain[i] = true;
		for (const char *q = name; *q; q++)
			if ((unsigned char)*q < 0x20 ||
			    (unsigned char)*q > 0x7e || *q == '"' || *q == '\\')
				dec->plain[i] = false;
		if (dec->plain[i] && dec->name_len[i] < 8) {
			unsigned char w[8] = {0}, m[8] = {0};
			memcpy(w, name, dec->name_len[i]);
			w[dec->name_len[i]] = '"';
			memset(m, 0xff, dec->name_len[i] + 1);
			memcpy(&dec->kword[i], w, 8);
			memcpy(&dec->kmask[i], m, 8);
		}
		uint32_t h = key_hash(name, dec->name_len[i]) & dec->mask;
		while (dec->slots[h])
			h = (h + 1) & dec->mask;
		dec->slots[h] = (uint32_t)i + 1;
		if (!schema->fields[i].nullable)
			dec->required[dec->nrequired++] = (uint32_t)i;
	}
	sv_buf_init(&dec->scratch);
	return dec;
}

void sv_codec_json_destroy(void *impl)
{
	sv_json_dec_t *dec = impl;
	if (!dec)
		return;
	free(dec->name_len);
	free(dec->plain);
	free(dec->kword);
	free(dec->kmask);
	free(dec->slots);
	free(dec->seen);
	free(dec->required);
	sv_buf_release(&dec->scratch);
	free(dec);
}

/* Field names are short: an inline loop beats a call to memcmp. */
static inline bool key_eq(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* Field index of key, or -1. */
static inline int lookup(sv_json_dec_t *dec, const char *k, size_t n)
{
	uint32_t s = key_hash(k, n) & dec->mask;
	for (;;) {
		uint32_t v = dec->slots[s];
		if (!v)
			return -1;
		v--;
		if (dec->name_len[v] == n &&
		    key_eq(dec->schema->fields[v].name, k, n))
			return (int)v;
		s = (s + 1) & dec->mask;
	}
}

/* ---- errors ---- */

static int syntax(jctx_t *c, const char *at, const char *what)
{
	sv_codec_reason(c->reason, c->reason_len,
			"malformed JSON at byte %zu: %s",
			(size_t)(at - c->start), what);
	return -1;
}

static int type_err(jctx_t *c, size_t idx, const char *got)
{
	const sv_field_t *f = &c->dec->schema->fields[idx];
	sv_codec_reason(c->reason, c->reason_len,
			"field '%s': expected %s, got %s", f->name,
			sv_type_name(f->type), got);
	return -1;
}

static int field_err(jctx_t *c, size_t idx, const char *what)
{
	sv_codec_reason(c->reason, c->reason_len, "field '%s': %s",
			c->dec->schema->fields[idx].name, what);
	return -1;
}

/* ---- lexical pieces ---- */

static inline const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

static inline int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* 4 hex digits at p (p + 4 <= end checked by caller) → code unit, or -1. */
static inline int32_t hex4(const char *p)
{
	int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]),
	    d = hexval(p[3]);
	if ((a | b | c | d) < 0)
		return -1;
	return (a << 12) | (b << 8) | (c << 4) | d;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Scan a string whose opening quote is at *pp. On success *pp points past
 * the closing quote, *s and *n give the raw content and *esc tells whether it
 * holds a backslash escape. Validates escapes (surrogates paired), UTF-8
 * and the absence of raw control characters. */
static int scan_string(jctx_t *c, const char **pp, const char **s, size_t *n,
		       bool *esc)
{
	const char *p = *pp + 1, *end = c->end;
	bool e = false;
	*s = p;
	for (;;) {
#if defined(__SSE2__)
		/* 16 bytes at a time, to the first quote, backslash, control
		 * or non-ASCII byte (a signed compare below 0x20 catches the
		 * last two at once). */
		while (end - p >= 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)p);
			__m128i m = _mm_or_si128(
				_mm_or_si128(
					_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
					_mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
				_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
			unsigned bits = (unsigned)_mm_movemask_epi8(m);
			if (bits) {
				p += __builtin_ctz(bits);
				goto special;
			}
			p += 16;
		}
#endif
		/* 8 plain ASCII bytes at a time: no quote, backslash, control
		 * or non-ASCII byte. The lowest flagged byte is exact (a
		 * borrow only flags bytes above a flagged one). */
		while (end - p >= 8) {
			uint64_t x;
			memcpy(&x, p, 8);
			uint64_t q = x ^ (ONES * '"');
			uint64_t bs = x ^ (ONES * '\\');
			uint64_t t = (((q - ONES) & ~q) | ((bs - ONES) & ~bs) |
				      ((x - ONES * 0x20) & ~x) | x) &
				HIGHS;
			if (t) {
				p += __builtin_ctzll(t) / 8;
				break;
			}
			p += 8;
		}
#if defined(__SSE2__)
	special:
#endif
		if (p >= end)
			return syntax(c, p, "unterminated string");
		unsigned char ch = (unsigned char)*p;
		if (ch == '"')
			break;
		if (ch == '\\') {
			e = true;
			if (end - p < 2)
				return syntax(c, p, "unterminated string");
			switch (p[1]) {
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				p += 2;
				continue;
			case 'u':
				break;
			default:
				return syntax(c, p, "invalid escape in string");
			}
			if (end - p < 6)
				return syntax(c, p, "truncated \\u escape");
			int32_t u = hex4(p + 2);
			if (u < 0)
				return syntax(c, p, "invalid \\u escape");
			if (u >= 0xDC00 && u <= 0xDFFF)
				return syntax(
					c, p,
					"lone low surrogate in \\u escape");
			if (u >= 0xD800 && u <= 0xDBFF) {
				if (end - p < 12 || p[6] != '\\' || p[7] != 'u')
					return syntax(c, p,
						      "lone high surrogate in "
						      "\\u escape");
				int32_t lo = hex4(p + 8);
				if (lo < 0xDC00 || lo > 0xDFFF)
					return syntax(c, p,
						      "lone high surrogate in "
						      "\\u escape");
				p += 12;
			} else {
				p += 6;
			}
			continue;
		}
		if (ch < 0x20)
			return syntax(c, p,
				      "unescaped control character in string");
		if (ch < 0x80) {
			p++;
			continue;
		}
		/* one UTF-8 sequence, strictly (RFC 3629) */
		size_t k;
		unsigned lo = 0x80, hi = 0xBF;
		if (ch >= 0xC2 && ch <= 0xDF) {
			k = 1;
		} else if (ch >= 0xE0 && ch <= 0xEF) {
			k = 2;
			if (ch == 0xE0)
				lo = 0xA0;
			else if (ch == 0xED)
				hi = 0x9F;
		} else if (ch >= 0xF0 && ch <= 0xF4) {
			k = 3;
			if (ch == 0xF0)
				lo = 0x90;
			else if (ch == 0xF4)
				hi = 0x8F;
		} else {
			return syntax(c, p, "invalid UTF-8 in string");
		}
		const unsigned char *u = (const unsigned char *)p;
		if ((size_t)(end - p) <= k || u[1] < lo || u[1] > hi ||
		    (k >= 2 && (u[2] & 0xC0) != 0x80) ||
		    (k == 3 && (u[3] & 0xC0) != 0x80))
			return syntax(c, p, "invalid UTF-8 in string");
		p += k + 1;
	}
	*n = (size_t)(p - *s);
	*esc = e;
	*pp = p + 1;
	return 0;
}

static inline char *put_utf8(char *d, uint32_t cp)
{
	if (cp < 0x80) {
		*d++ = (char)cp;
	} else if (cp < 0x800) {
		*d++ = (char)(0xC0 | (cp >> 6));
		*d++ = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*d++ = (char)(0xE0 | (cp >> 12));
		*d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*d++ = (char)(0x80 | (cp & 0x3F));
	} else {
		*d++ = (char)(0xF0 | (cp >> 18));
		*d++ = (char)(0x80 | ((cp >> 12) & 0x3F));
		*d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*d++ = (char)(0x80 | (cp & 0x3F));
	}
	return d;
}

/* Unescape raw content s[0..n) that scan_string accepted into d (at least
 * n bytes: unescaping never grows). Returns the unescaped length. */
static size_t unescape(const char *s, size_t n, char *d)
{
	const char *e = s + n;
	char *d0 = d;
	while (s < e) {
		if (*s != '\\') {
			*d++ = *s++;
			continue;
		}
		char ch = s[1];
		s += 2;
		switch (ch) {
		case 'b':
			*d++ = '\b';
			break;
		case 'f':
			*d++ = '\f';
			break;
		case 'n':
			*d++ = '\n';
			break;
		case 'r':
			*d++ = '\r';
			break;
		case 't':
			*d++ = '\t';
			break;
		case 'u': {
			uint32_t cp = (uint32_t)hex4(s);
			s += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				uint32_t lo = (uint32_t)hex4(s + 2);
				s += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) +
					(lo - 0xDC00);
			}
			d = put_utf8(d, cp);
			break;
		}
		default:
			*d++ = ch;
			break; /* " \ / */
		}
	}
	return (size_t)(d - d0);
}

/* A number token, scanned once. */
typedef struct jnum {
	const char *s;
	size_t n;
	uint64_t mant; /* first ≤ 19 significant digits */
	int64_t exp10; /* value = mant * 10^exp10 (when !trunc) */
	bool neg, is_int, trunc;
	int int_digits; /* digits before '.', for the int64 range check */
} jnum_t;

static int scan_number(jctx_t *c, const char **pp, jnum_t *num)
{
	const char *p = *pp, *end = c->end;
	num->s = p;
	num->neg = false;
	num->is_int = true;
	num->trunc = false;
	uint64_t m = 0;
	int sig = 0;
	int64_t ex = 0;
	if (*p == '-') {
		num->neg = true;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		return syntax(c, p, "invalid number");
	const char *ip = p;
	if (*p == '0') {
		p++;
		if (p < end && *p >= '0' && *p <= '9')
			return syntax(c, p, "leading zero in number");
	} else {
		while (p < end && *p >= '0' && *p <= '9') {
			if (sig < 19) {
				m = m * 10 + (uint64_t)(*p - '0');
				sig++;
			} else {
				ex++;
				num->trunc = true;
			}
			p++;
		}
	}
	num->int_digits = (int)(p - ip);
	if (p < end && *p == '.') {
		num->is_int = false;
		p++;
		if (p >= end || *p < '0' || *p > '9')
			return syntax(c, p, "digit expected after '.'");
		while (p < end && *p >= '0' && *p <= '9') {
			if (m == 0 && *p == '0') {
				ex--;
			} else if (sig < 19) {
				m = m * 10 + (uint64_t)(*p - '0');
				sig++;
				ex--;
			} else if (*p != '0') {
				num->trunc = true;
			}
			p++;
		}
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		num->is_int = false;
		p++;
		bool eneg = false;
		if (p < end && (*p == '+' || *p == '-')) {
			eneg = *p == '-';
			p++;
		}
		if (p >= end || *p < '0' || *p > '9')
			return syntax(c, p, "digit expected in exponent");
		int64_t e = 0;
		while (p < end && *p >= '0' && *p <= '9') {
			if (e < 100000)
				e = e * 10 + (*p - '0');
			p++;
		}
		ex += eneg ? -e : e;
	}
	num->mant = m;
	num->exp10 = ex;
	num->n = (size_t)(p - num->s);
	*pp = p;
	return 0;
}

static const double pow10_tab[23] = {
	1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static int num_to_double(const jnum_t *num, double *out)
{
	if (!num->trunc && num->mant <= (1ULL << 53) && num->exp10 >= -22 &&
	    num->exp10 <= 22) {
		/* Clinger: both operands exact, one correctly rounded op */
		double d = (double)num->mant;
		if (num->exp10 >= 0)
			d *= pow10_tab[num->exp10];
		else
			d /= pow10_tab[-num->exp10];
		*out = num->neg ? -d : d;
		return 0;
	}
	if (num->mant == 0 && !num->trunc) {
		*out = num->neg ? -0.0 : 0.0;
		return 0;
	}
	return sv_codec_strtod(num->s, num->n, out);
}

/* int64 from an integer literal; -1 when out of range. */
static int num_to_i64(const jnum_t *num, int64_t *out)
{
	if (num->int_digits > 19 || num->trunc)
		return -1;
	uint64_t m = num->mant;
	if (num->neg) {
		if (m > (uint64_t)INT64_MAX + 1)
			return -1;
		*out = (int64_t)(0 - m);
	} else {
		if (m > (uint64_t)INT64_MAX)
			return -1;
		*out = (int64_t)m;
	}
	return 0;
}

static inline bool lit(const char *p, const char *end, const char *w, size_t n)
{
	return (size_t)(end - p) >= n && !memcmp(p, w, n);
}

/* Validate and skip any value at *pp (already past whitespace). */
static int skip_value(jctx_t *c, const char **pp)
{
	uint8_t stack[SV_JSON_MAX_DEPTH]; /* '{' or '[' */
	int depth = 0;
	const char *p = *pp, *end = c->end, *s;
	size_t n;
	bool esc;
	jnum_t num;

value:
	p = skip_ws(p, end);
	if (p >= end)
		return syntax(c, p, "value expected");
	switch (*p) {
	case '{':
	case '[':
		if (depth == SV_JSON_MAX_DEPTH)
			return syntax(c, p, "nesting too deep");
		stack[depth++] = (uint8_t)*p;
		p = skip_ws(p + 1, end);
		if (p < end && *p == (stack[depth - 1] == '{' ? '}' : ']')) {
			depth--;
			p++;
			goto after;
		}
		if (stack[depth - 1] == '{')
			goto key;
		goto value;
	case '"':
		if (scan_string(c, &p, &s, &n, &esc))
			return -1;
		goto after;
	case 't':
		if (!lit(p, end, "true", 4))
			return syntax(c, p, "invalid literal");
		p += 4;
		goto after;
	case 'f':
		if (!lit(p, end, "false", 5))
			return syntax(c, p, "invalid literal");
		p += 5;
		goto after;
	case 'n':
		if (!lit(p, end, "null", 4))
			return syntax(c, p, "invalid literal");
		p += 4;
		goto after;
	default:
		if (*p == '-' || (*p >= '0' && *p <= '9')) {
			if (scan_number(c, &p, &num))
				return -1;
			goto after;
		}
		return syntax(c, p, "value expected");
	}

key:
	if (p >= end || *p != '"')
		return syntax(c, p, "string key expected");
	if (scan_string(c, &p, &s, &n, &esc))
		return -1;
	p = skip_ws(p, end);
	if (p >= end || *p != ':')
		return syntax(c, p, "':' expected");
	p++;
	goto value;

after:
	if (!depth) {
		*pp = p;
		return 0;
	}
	p = skip_ws(p, end);
	if (p >= end)
		return syntax(c, p, "unterminated object or array");
	if (*p == ',') {
		p = skip_ws(p + 1, end);
		if (stack[depth - 1] == '{')
			goto key;
		goto value;
	}
	if (*p == (stack[depth - 1] == '{' ? '}' : ']')) {
		depth--;
		p++;
		goto after;
	}
	return syntax(c, p,
		      stack[depth - 1] == '{' ? "',' or '}' expected"
					      : "',' or ']' expected");
}

/* Text of a string value for parsing (timestamps): raw bytes, or unescaped
 * into the decoder's scratch buffer. */
static const char *string_text(jctx_t *c, const char *s, size_t *n, bool esc)
{
	if (!esc)
		return s;
	sv_buf_t *sb = &c->dec->scratch;
	sv_buf_reset(sb);
	sv_buf_reserve(sb, *n + 1);
	*n = unescape(s, *n, sb->data);
	return sb->data;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The leading decimal digits among the 8 bytes at p: their count (0..8)
 * into *len and their value. A byte is a digit when, less '0', it is at
 * most 9: its high nibble is 0 and adding 6 keeps it 0 (a carry out of a
 * byte only happens past a non-digit, above the run). */
static inline uint64_t digits8(const char *p, int *len)
{
	uint64_t x;
	memcpy(&x, p, 8);
	uint64_t a = x ^ 0x3030303030303030ULL;
	uint64_t bad = ((a + 0x0606060606060606ULL) | a) &
		0xF0F0F0F0F0F0F0F0ULL;
	int n = bad ? __builtin_ctzll(bad) / 8 : 8;
	*len = n;
	if (!n)
		return 0;
	/* the run to the top bytes, zeros (leading zero digits) below */
	uint64_t y = a << (64 - 8 * n);
	y = (y * 10 + (y >> 8)) & 0x00FF00FF00FF00FFULL;
	y = (y * 100 + (y >> 16)) & 0x0000FFFF0000FFFFULL;
	return (y * 10000 + (y >> 32)) & 0xFFFFFFFFULL;
}
#endif

/* The common integer, for an int64 or timestamp field: an optional '-',
 * 1 to 17 digits without a leading zero, then a byte that cannot continue
 * a number. Scans it in one pass and returns true with *v set; anything
 * else (0, more digits, a fraction or exponent, the payload's end right
 * after the digits) returns false with nothing consumed, for scan_number
 * to read, or reject, with its messages. */
static inline bool read_plain_int(jctx_t *c, const char **pp, sv_type_t t,
				  sv_value_t *v)
{
	const char *q = *pp, *end = c->end;
	bool neg = *q == '-';
	q += neg;
	if (q >= end || *q < '1' || *q > '9')
		return false;
	const char *d0 = q;
	uint64_t m = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Up to 16 digits 8 bytes at a time, without a branch per digit
	 * (numbers of varying length mispredict a digit loop's exit). */
	static const uint64_t p10[9] = {
		1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
	for (int k = 0; k < 2 && end - q >= 8; k++) {
		int len;
		uint64_t val = digits8(q, &len);
		m = m * p10[len] + val;
		q += len;
		if (len < 8)
			goto digits_done;
	}
#endif
	while (q < end && (unsigned char)(*q - '0') < 10 && q - d0 < 17)
		m = m * 10 + (uint64_t)(*q++ - '0');
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
digits_done:
#endif
	if (q >= end || (unsigned char)(*q - '0') < 10 || *q == '.' ||
	    *q == 'e' || *q == 'E')
		return false;
	int64_t i = neg ? -(int64_t)m : (int64_t)m;
	*v = t == SV_T_INT64 ? sv_int(i) : sv_ts(i);
	*pp = q;
	return true;
}

/* Read the value at *pp (past whitespace) into field idx of the row. */
static int read_field(jctx_t *c, const char **pp, size_t idx)
{
	const char *p = *pp, *end = c->end, *s;
	size_t n;
	bool esc;
	sv_type_t t = c->dec->schema->fields[idx].type;
	sv_value_t *v = &c->row[idx];

	if (p >= end)
		return syntax(c, p, "value expected");
	switch (*p) {
	case '"':
		if (scan_string(c, &p, &s, &n, &esc))
			return -1;
		if (t == SV_T_STRING) {
			if (n > UINT32_MAX)
				return field_err(c, idx, "string too long");
			const char *d;
			if (!esc) {
				d = sv_batch_strdup(c->b, s, n);
			} else {
				char *w = sv_arena_alloc(&c->b->arena, n);
				n = unescape(s, n, w);
				d = w;
			}
			*v = sv_str(d, (uint32_t)n);
		} else if (t == SV_T_TIMESTAMP) {
			const char *txt = string_text(c, s, &n, esc);
			int64_t ms;
			if (sv_codec_rfc3339(txt, n, &ms))
				return field_err(c, idx,
						 "invalid RFC 3339 timestamp");
			*v = sv_ts(ms);
		} else {
			return type_err(c, idx, "string");
		}
		break;
	case 't':
	case 'f': {
		bool val = *p == 't';
		size_t len = val ? 4 : 5;
		if (!lit(p, end, val ? "true" : "false", len))
			return syntax(c, p, "invalid literal");
		if (t != SV_T_BOOL)
			return type_err(c, idx, "bool");
		p += len;
		*v = sv_bool(val);
		break;
	}
	case 'n':
		if (!lit(p, end, "null", 4))
			return syntax(c, p, "invalid literal");
		p += 4;
		*v = sv_null();
		break;
	case '{':
		return type_err(c, idx, "object");
	case '[':
		return type_err(c, idx, "array");
	default: {
		if (*p != '-' && (*p < '0' || *p > '9'))
			return syntax(c, p, "value expected");
		if ((t == SV_T_INT64 || t == SV_T_TIMESTAMP) &&
		    read_plain_int(c, &p, t, v))
			break;
		jnum_t num;
		if (scan_number(c, &p, &num))
			return -1;
		if (t == SV_T_FLOAT64) {
			double d;
			if (num_to_double(&num, &d))
				return field_err(c, idx,
						 "number out of float64 range");
			*v = sv_float(d);
		} else if (t == SV_T_INT64 || t == SV_T_TIMESTAMP) {
			if (!num.is_int)
				return type_err(c, idx, "float");
			int64_t i;
			if (num_to_i64(&num, &i))
				return field_err(c, idx,
						 "integer out of int64 range");
			*v = t == SV_T_INT64 ? sv_int(i) : sv_ts(i);
		} else {
			return type_err(c, idx,
					num.is_int ? "integer" : "float");
		}
		break;
	}
	}
	*pp = p;
	return 0;
}

static int decode_object(jctx_t *c)
{
	sv_json_dec_t *dec = c->dec;
	const char *p = skip_ws(c->start, c->end), *end = c->end, *s;
	size_t n;
	bool esc;

	if (p >= end)
		return syntax(c, p, "empty payload");
	if (*p != '{')
		return syntax(c, p, "top-level value must be an object");
	p = skip_ws(p + 1, end);
	dec->hint = 0;
	if (p < end && *p == '}') {
		p++;
		goto done;
	}
	for (;;) {
		if (p >= end || *p != '"')
			return syntax(c, p, "string key expected");
		/* Fast path: the key is exactly the expected field's name. A
		 * plain name followed by '"' is a complete, valid key. */
		int idx = -1;
		size_t h = dec->hint;
		if (h < dec->nf && dec->plain[h]) {
			size_t hl = dec->name_len[h];
			uint64_t w;
			if (dec->kmask[h] && end - p > 8) {
				/* name and closing quote in one compare */
				memcpy(&w, p + 1, 8);
				if (!((w ^ dec->kword[h]) & dec->kmask[h])) {
					idx = (int)h;
					p += hl + 2;
				}
			} else if ((size_t)(end - p) > hl + 1 &&
				   p[hl + 1] == '"' &&
				   key_eq(p + 1, dec->schema->fields[h].name,
					  hl)) {
				idx = (int)h;
				p += hl + 2;
			}
		}
		if (idx < 0) {
			if (scan_string(c, &p, &s, &n, &esc))
				return -1;
			if (esc) {
				sv_buf_t *sb = &dec->scratch;
				sv_buf_reset(sb);
				sv_buf_reserve(sb, n + 1);
				n = unescape(s, n, sb->data);
				s = sb->data;
			}
			idx = lookup(dec, s, n);
		}
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return syntax(c, p, "':' expected");
		p = skip_ws(p + 1, end);
		if (idx < 0) {
			if (skip_value(c, &p))
				return -1;
		} else {
			if (read_field(c, &p, (size_t)idx))
				return -1;
			dec->seen[idx] = dec->gen;
			dec->hint = (size_t)idx + 1;
		}
		p = skip_ws(p, end);
		if (p >= end)
			return syntax(c, p, "unterminated object");
		if (*p == ',') {
			p = skip_ws(p + 1, end);
			continue;
		}
		if (*p == '}') {
			p++;
			break;
		}
		return syntax(c, p, "',' or '}' expected");
	}
done:
	p = skip_ws(p, end);
	if (p != end)
		return syntax(c, p, "trailing characters after the object");
	for (size_t k = 0; k < dec->nrequired; k++) {
		uint32_t i = dec->required[k];
		if (!sv_is_null(&c->row[i]))
			continue;
		sv_codec_reason(
			c->reason, c->reason_len,
			dec->seen[i] == dec->gen
				? "field '%s' is null but not nullable"
				: "field '%s' is missing but not nullable",
			dec->schema->fields[i].name);
		return -1;
	}
	return 0;
}

int sv_codec_json_decode(void *impl, const char *payload, size_t len,
			 sv_batch_t *b, sv_rowmeta_t **meta_out, char *reason,
			 size_t reason_len)
{
	sv_json_dec_t *dec = impl;
	if (++dec->gen == 0) {
		memset(dec->seen, 0,
		       (dec->nf ? dec->nf : 1) * sizeof(uint32_t));
		dec->gen = 1;
	}
	sv_rowmeta_t *meta;
	jctx_t c = {
		.start = payload,
		.end = payload + len,
		.dec = dec,
		.b = b,
		.row = sv_batch_add_row(b, &meta),
		.reason = reason,
		.reason_len = reason_len,
	};
	if (!payload)
		c.start = c.end = "";
	if (decode_object(&c)) {
		sv_batch_pop_row(b);
		return -1;
	}
	if (meta_out)
		*meta_out = meta;
	return 0;
}
